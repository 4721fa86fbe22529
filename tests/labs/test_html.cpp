// `attnsim run --html`: the step-through page, written by the CLI and loaded in a real browser. Expected
// values are the lab handouts' numbers (docs/labs/*.md), not taken from the code under test.
//
// The browser is Debian's headless Chromium, driven from the command line rather than over the DevTools
// protocol: `--dump-dom` prints the DOM after the page's script has run and `--screenshot` writes a PNG.
// The page opens the step named in its `#step=N` fragment, and its test hook `#keys=right,left,...`
// dispatches keydown events to the very listener that real keys reach (`#slider=N` fires the slider's
// input event). That needs no DevTools client, no npm and no second process to coordinate, at the price of
// not testing how the browser turns a physical key press into that event. Without Chromium these tests are
// skipped with a message; the ones that need no browser always run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ATTNSIM_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One directory per test (ctest runs each test in its own process, maybe in parallel).
fs::path scratch() {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attnsim-html-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  fs::create_directories(dir);
  return dir;
}

// Runs a shell command from the repository root; returns its exit status, its output in `out`.
int shell(const std::string& command, std::string* out = nullptr) {
  const fs::path log = scratch() / "log";
  const std::string line = "cd '" + kRoot.string() + "' && " + command + " > '" + log.string() + "' 2>&1";
  const int status = std::system(line.c_str());
  if (out) *out = read(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `attnsim run ARGS --html PAGE`; the page's path.
fs::path page(const std::string& name, const std::string& args) {
  const fs::path path = scratch() / (name + ".html");
  std::string out;
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run " + args + " --html '" + path.string() + "'", &out), 0)
      << out;
  return path;
}

std::string chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(path)) return path;
  return "";
}

#define SKIP_WITHOUT_CHROMIUM()                                                                             \
  if (chromium().empty())                                                                                   \
  GTEST_SKIP() << "Chromium is not installed (Debian package `chromium`; scripts/deps.sh --tests installs " \
                  "it): the page is not checked in a browser"

std::string chromium_flags() {
  return chromium() + " --headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir='" +
         (scratch() / "profile").string() + "' --virtual-time-budget=2000";
}

// The DOM after the page's script ran, opened at `fragment` (step=3&keys=left...).
std::string dom(const fs::path& html, const std::string& fragment) {
  std::string out;  // the DOM; Chromium's own messages on stderr are dropped
  shell(
      "{ " + chromium_flags() + " --dump-dom 'file://" + html.string() + "#" + fragment + "' 2>/dev/null; }",
      &out);
  return out;
}

// The opening tag of the element with this id, and its text when it holds no other element.
std::string tag_of(const std::string& dom, const std::string& id) {
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<[a-z]+[^>]* id=\"" + id + "\"[^>]*>"))) return "";
  return m[0];
}
std::string text_of(const std::string& dom, const std::string& id) {
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<[a-z]+[^>]* id=\"" + id + "\"[^>]*>([^<]*)<"))) return "<none>";
  return m[1];
}
std::string number_of(const std::string& dom, const std::string& id) {
  std::string text = text_of(dom, id);
  std::erase(text, ',');  // 2,368 -> 2368
  return text;
}
bool highlighted(const std::string& dom, const std::string& id) {
  return tag_of(dom, id).find("current") != std::string::npos;
}

const std::string kLab1 = "-c configs/toy-3reg.yaml labs/01-c00/c00.trace";

// ---- without a browser ----

// No network and no external files: one file that opens from anywhere.
TEST(HtmlPage, IsSelfContained) {
  const std::string text = read(page("lab1", kLab1));
  EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* outside : {"http:", "https:", "src=", "<link", "@import", "url("})
    EXPECT_EQ(text.find(outside), std::string::npos) << outside;
  EXPECT_NE(text.find("<script type=\"application/json\" id=\"run-data\">"), std::string::npos);
  EXPECT_NE(text.find("MAC_Z R0, R1, R2"), std::string::npos);
}

// Bad input: a clear error, exit 2, and no page (nor the other outputs of the same run).
TEST(HtmlPage, BadInputWritesNothing) {
  const fs::path dir = scratch();
  const fs::path bad = dir / "bad.trace";
  std::ofstream(bad) << ".tensor a[1] = {1}\nLOAD a[0], R0\nMACZ R0, R0, R1\n";
  std::string out;
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run -c configs/toy-3reg.yaml '" + bad.string() + "' --html '" +
                      (dir / "bad.html").string() + "'",
                  &out),
            2);
  EXPECT_NE(out.find("did you mean 'MAC_Z'"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "bad.html"));
  // An unwritable page path: the stats JSON of the same run is not left behind either.
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run " + kLab1 + " --stats-json '" + (dir / "s.json").string() +
                      "' --html '" + (dir / "missing/x.html").string() + "'",
                  &out),
            2);
  EXPECT_NE(out.find("cannot write output file"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "s.json"));
}

// A whole chip has no single step order to show: refused before it runs.
TEST(HtmlPage, WholeChipIsRefused) {
  const fs::path dir = scratch();
  std::string out;
  ASSERT_EQ(shell(std::string(ATTNSIM_CLI) + " gen flash2 --n 128 --d 64 --block 64 -o '" +
                  (dir / "chip.trace").string() + "'"),
            0);
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run -c configs/h100.yaml '" + (dir / "chip.trace").string() +
                      "' --html '" + (dir / "chip.html").string() + "'",
                  &out),
            2);
  EXPECT_NE(out.find("--html are for single-core machines"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "chip.html"));
}

// Bounded like --vcd: softmax-safe with n = 1000 runs more than 10,000 instructions (lab 4: 11n - 1 = 87
// cycles at n = 8, one instruction a cycle); the page keeps the first 10,000 and both the run and the page
// say so.
TEST(HtmlPage, LargeRunShowsTheFirstTenThousandAndSaysSo) {
  const fs::path dir = scratch();
  ASSERT_EQ(shell(std::string(ATTNSIM_CLI) + " gen softmax-safe --n 1000 -o '" +
                  (dir / "big.trace").string() + "'"),
            0);
  std::string out;
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run -c configs/toy-3reg.yaml '" +
                      (dir / "big.trace").string() + "' --html '" + (dir / "big.html").string() + "'",
                  &out),
            0);
  EXPECT_NE(out.find("--html shows the first 10000 instructions (999 more not shown"), std::string::npos)
      << out;
  EXPECT_NE(read(dir / "big.html").find("the page shows the first 10000"), std::string::npos);
  // Symbolic, its running sums would take tens of megabytes: later steps show numbers only, and say so.
  EXPECT_EQ(shell(std::string(ATTNSIM_CLI) + " run -c configs/toy-3reg.yaml '" +
                  (dir / "big.trace").string() + "' --symbolic --html '" + (dir / "big.html").string() + "'"),
            0);
  EXPECT_NE(read(dir / "big.html").find("registers show numbers only"), std::string::npos);
  EXPECT_LT(fs::file_size(dir / "big.html"), 8u << 20);
}

}  // namespace

namespace {

// ---- in the browser ----

// Lab 1 (docs/labs/01-c00.md): step n runs in cycle n; A = [[1,2],[3,4]], B = [[5,6],[7,8]], so R2 = 5 after
// step 3 (MAC_Z) and 19 after step 6; LOADs in steps 1, 2, 4, 5, one STORE in step 7.
TEST(HtmlBrowser, LabOneStepsAndCounters) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab1", kLab1);
  std::string d = dom(html, "step=3");
  EXPECT_EQ(text_of(d, "step-no"), "3");
  EXPECT_EQ(text_of(d, "current"), "MAC_Z R0, R1, R2");
  EXPECT_TRUE(highlighted(d, "line-3")) << tag_of(d, "line-3");
  EXPECT_FALSE(highlighted(d, "line-2"));
  EXPECT_EQ(text_of(d, "reg-R2-value"), "5");
  EXPECT_EQ(text_of(d, "mem-reads"), "2");
  EXPECT_EQ(text_of(d, "mem-writes"), "0");
  EXPECT_EQ(text_of(d, "cycle"), "3");
  d = dom(html, "step=6");
  EXPECT_EQ(text_of(d, "current"), "MAC R0, R1, R2, R2");
  EXPECT_EQ(text_of(d, "reg-R2-value"), "19");
  EXPECT_EQ(text_of(d, "mem-reads"), "4");
  EXPECT_EQ(text_of(d, "mem-r-0"), "2");  // a 2
  EXPECT_EQ(text_of(d, "mem-r-1"), "2");  // b 2
}

// Arrow keys, Home, End and the slider, each through the page's own handlers.
TEST(HtmlBrowser, KeysAndSliderStep) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab1", kLab1);
  std::string d = dom(html, "keys=right,right,right");
  EXPECT_EQ(text_of(d, "step-no"), "3");
  EXPECT_EQ(text_of(d, "reg-R2-value"), "5");
  d = dom(html, "step=6&keys=left,left");
  EXPECT_EQ(text_of(d, "step-no"), "4");
  EXPECT_EQ(text_of(d, "current"), "LOAD a[0][1], R0");
  EXPECT_EQ(text_of(d, "mem-reads"), "3");
  d = dom(html, "keys=end");
  EXPECT_EQ(text_of(d, "step-no"), "7");
  EXPECT_EQ(text_of(d, "current"), "STORE R2, c[0][0]");
  EXPECT_EQ(text_of(d, "cycle"), "7");
  EXPECT_EQ(text_of(d, "mem-writes"), "1");
  d = dom(html, "step=5&keys=home");
  EXPECT_EQ(text_of(d, "step-no"), "0");
  EXPECT_EQ(text_of(d, "reg-R2-value"), "—");
  EXPECT_EQ(text_of(d, "cycle"), "0");
  d = dom(html, "slider=6");
  EXPECT_EQ(text_of(d, "step-no"), "6");
  EXPECT_EQ(text_of(d, "reg-R2-value"), "19");
}

// With --symbolic the registers show the handout's expressions: a00·b00 after step 3, c00 after step 6
// (c00 = a00·b00 + a01·b10, the lab's goal), the numbers beside them.
TEST(HtmlBrowser, LabOneSymbolic) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab1sym", kLab1 + " --symbolic");
  std::string d = dom(html, "step=3");
  EXPECT_EQ(text_of(d, "reg-R2-expr"), "a00·b00");
  EXPECT_EQ(text_of(d, "reg-R1-expr"), "b00");
  EXPECT_EQ(text_of(d, "reg-R2-value"), "5");
  d = dom(html, "step=6");
  EXPECT_EQ(text_of(d, "reg-R2-expr"), "c00");
  EXPECT_EQ(text_of(d, "reg-R2-expanded"), "= a00·b00 + a01·b10");
}

// Lab 3, try 2 (docs/labs/03-matmul-outer.md), pipelined with DRAM latency 4: the first two LOADs issue in
// cycles 1 and 2 (Done 4 and 5), MAC_Z R0, R1, R2 issues in cycle 6; the run takes 46 cycles.
TEST(HtmlBrowser, PipelinedIssueOverlaps) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab3",
                             "-c configs/toy-6reg.yaml labs/03-matmul-outer/matmul_outer.trace "
                             "-p dram.load_latency=4 -p sequencer.issue=pipelined");
  std::string d = dom(html, "step=2");
  EXPECT_EQ(text_of(d, "cycle"), "5");
  // The trace list's Issue–Done column, which the Gantt bars draw.
  EXPECT_NE(d.find("id=\"line-1\"><span class=\"ln\">1</span><code>LOAD a[0][0], R0</code><span "
                   "class=\"cyc\">1–4</span>"),
            std::string::npos);
  EXPECT_NE(d.find("<span class=\"cyc\">2–5</span>"), std::string::npos);
  EXPECT_NE(d.find("MAC_Z R0, R1, R2</code><span class=\"cyc\">6–6</span>"), std::string::npos);
  d = dom(html, "keys=end");
  EXPECT_EQ(text_of(d, "cycle"), "46");
  EXPECT_EQ(text_of(d, "mem-reads"), "10");
}

// Lab 7 on the tile machine (docs/labs/07-loop-order.md): a row load is 16 bytes and costs 1 cycle of
// bandwidth plus 10 of latency; the whole inner-order run reads 2368 B (K 1024), writes 128 B, takes 3088
// cycles and peaks at 148 B of SRAM.
TEST(HtmlBrowser, LabSevenTileMachine) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab7", "-c configs/toy-tile.yaml labs/07-loop-order/inner_product_n8.trace");
  std::string d = dom(html, "step=1");
  EXPECT_EQ(text_of(d, "current"), "LOAD Q[0:1, 0:4], Qi");
  EXPECT_EQ(number_of(d, "mem-reads"), "16");
  EXPECT_EQ(number_of(d, "cycle"), "11");
  EXPECT_EQ(number_of(d, "sram-used"), "16");
  d = dom(html, "keys=end");
  EXPECT_EQ(number_of(d, "step-no"), "880");
  EXPECT_EQ(number_of(d, "cycle"), "3088");
  EXPECT_EQ(number_of(d, "mem-reads"), "2368");
  EXPECT_EQ(number_of(d, "mem-writes"), "128");
  EXPECT_EQ(number_of(d, "mem-r-1"), "1024");  // K
  EXPECT_EQ(number_of(d, "sram-used"), "148");
}

// The screenshot: a PNG of the window's size.
TEST(HtmlBrowser, ScreenshotIsAPngOfTheWindowSize) {
  SKIP_WITHOUT_CHROMIUM();
  const fs::path html = page("lab1", kLab1);
  const fs::path png = scratch() / "lab1.png";
  fs::remove(png);
  shell(chromium_flags() + " --window-size=1200,900 --screenshot='" + png.string() + "' 'file://" +
        html.string() + "#step=3'");
  const std::string bytes = read(png);
  ASSERT_GT(bytes.size(), 24u) << "no screenshot at " << png;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(16), 1200u);       // width
  EXPECT_EQ(be32(20), 900u);        // height
  EXPECT_GT(bytes.size(), 20000u);  // a drawn page, not a blank one
}

}  // namespace
