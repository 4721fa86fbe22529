// `attnsim plot` through the real binary: the SVG is well-formed XML, carries its title, axis labels with
// units and legend, places points where the data says (monotone data gives monotone pixels, equal ratios on
// a log axis give equal steps), and bad input names the CSV line, exits 2 and leaves no file. The named plots
// run on a small real sweep.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;
using Outcome = attnsim::testing::CliOutcome;
using attnsim::testing::read_whole_file;

const std::string kSm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";

// A small XML check: every tag closes in order, attributes are quoted, text has no bare '<' or '&'. Returns
// an empty string when well-formed, else what is wrong.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      const size_t semi = xml.find(';', i);
      const std::string entity = xml.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
      if (!std::regex_match(entity, std::regex("&(amp|lt|gt|quot|apos|#[0-9]+);")))
        return "bare & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool quoted = false;
    for (; end < xml.size() && (quoted || xml[end] != '>'); ++end) {
      if (xml[end] == '"') quoted = !quoted;
      if (!quoted && xml[end] == '<') return "'<' inside a tag at " + std::to_string(end);
    }
    if (end >= xml.size()) return "unclosed tag at " + std::to_string(i);
    const std::string tag = xml.substr(i + 1, end - i - 1);
    const std::string name =
        tag.substr(tag[0] == '/' ? 1 : 0, tag.find_first_of(" \t\n/", 1) - (tag[0] == '/'));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(name);
    }
    i = end + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

struct Point {
  double x, y;
};

// The pixel positions of the points of the series labelled `label`, in drawing order.
std::vector<Point> points_of(const std::string& svg, const std::string& label) {
  const size_t start = svg.find("<g class=\"series\" data-label=\"" + label + "\"");
  if (start == std::string::npos) return {};
  const size_t end = svg.find("</g>\n<g class=\"series\"", start + 1);
  const std::string part = svg.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::vector<Point> out;
  const std::regex point(R"(class="point" transform="translate\(([-0-9.]+),([-0-9.]+)\))");
  for (auto it = std::sregex_iterator(part.begin(), part.end(), point); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  return out;
}

std::vector<std::string> texts(const std::string& svg) {
  std::vector<std::string> out;
  const std::regex text(R"(<text[^>]*>([^<]*)</text>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

bool has_text(const std::string& svg, const std::string& wanted) {
  for (const auto& t : texts(svg))
    if (t == wanted) return true;
  return false;
}

class Plot : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / fmt::format("attnsim-plot-test-{}-{}", info->name(), ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ / "cap");
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(root_, ignored);
  }
  std::string at(const std::string& name) const { return (root_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(at(name)) << text;
    return at(name);
  }
  Outcome run(const std::vector<std::string>& args) { return attnsim::testing::run_cli(args, root_ / "cap"); }
  fs::path root_;
};

// Hand-written data, rows out of x order: each series rises with x; b is ten times a.
const char* kCsv =
    "sram.capacity_bytes,schedule,status,hbm_total_bytes,cycles\n"
    "4096,a,ok,4000,30\n"
    "1024,a,ok,1000,10\n"
    "2048,a,ok,2000,20\n"
    "1024,b,ok,10000,15\n"
    "4096,b,ok,1000000,35\n"
    "2048,b,ok,100000,25\n"
    "8192,b,failed,,\n";

TEST_F(Plot, LinesChartIsWellFormedLabelledAndMonotone) {
  const std::string csv = write("r.csv", kCsv);
  const Outcome o = run({"plot", csv, "--x", "sram.capacity_bytes", "--y", "hbm_total_bytes", "--series",
                         "schedule", "--log-x", "--log-y", "--title", "Bytes & sizes", "-o", at("p.svg")});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("1 rows of failed points left out"), std::string::npos) << o.err;
  const std::string svg = read_whole_file(at("p.svg"));
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_TRUE(has_text(svg, "Bytes &amp; sizes"));  // the title, escaped
  EXPECT_TRUE(has_text(svg, "SRAM capacity (bytes)"));
  EXPECT_TRUE(has_text(svg, "HBM read + written (bytes)"));
  EXPECT_TRUE(has_text(svg, "a"));  // legend
  EXPECT_TRUE(has_text(svg, "b"));
  // Decade ticks on the log y axis (1000 .. 1000000), powers-of-two sizes on the x axis.
  for (const char* tick : {"1k", "10k", "100k", "1M", "1 KiB", "2 KiB", "4 KiB"})
    EXPECT_TRUE(has_text(svg, tick)) << tick;
  const auto a = points_of(svg, "a"), b = points_of(svg, "b");
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_GT(a[i].x, a[i - 1].x);  // sorted by x
    EXPECT_LT(a[i].y, a[i - 1].y);  // higher value, higher on the page
    EXPECT_LT(b[i].y, b[i - 1].y);
  }
  // Log axes: each doubling of x is the same step; b's tenfold steps are equal too, and b at 1024 (10000) is
  // one decade above a at 1024 (1000), as far as b's step from 1024 to 2048 (10000 -> 100000).
  EXPECT_NEAR(a[1].x - a[0].x, a[2].x - a[1].x, 0.02);
  EXPECT_NEAR(b[1].y - b[0].y, b[2].y - b[1].y, 0.02);
  EXPECT_NEAR(a[0].y - b[0].y, b[0].y - b[1].y, 0.02);
}

TEST_F(Plot, LinearAxisAndSeveralColumns) {
  const std::string csv = write("r.csv", kCsv);
  const Outcome o = run({"plot", csv, "--x", "sram.capacity_bytes", "--y", "cycles,hbm_total_bytes",
                         "--where", "schedule=a", "-o", at("p.svg")});
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string svg = read_whole_file(at("p.svg"));
  EXPECT_EQ(xml_problem(svg), "");
  const auto cycles = points_of(svg, "cycles"), bytes = points_of(svg, "HBM read + written");
  ASSERT_EQ(cycles.size(), 3u);
  ASSERT_EQ(bytes.size(), 3u);
  // Linear x: 1024 -> 2048 is half the step of 2048 -> 4096.
  EXPECT_NEAR(2 * (cycles[1].x - cycles[0].x), cycles[2].x - cycles[1].x, 0.02);
}

// --kind scatter on validate --csv's columns: points per series, no connecting line, the y = x line, and a
// point with predicted = measured on it (same pixel distance from both axes' ticks on equal log axes).
TEST_F(Plot, ScatterOfPredictedAgainstMeasured) {
  const std::string csv = write("v.csv",
                                "schedule,time_meas_ns,time_pred_ns\n"
                                "flash2,1000,1000\n"
                                "flash2,10000,5000\n"
                                "naive-safe,100000,200000\n");
  const Outcome o = run({"plot", csv, "--kind", "scatter", "--x", "time_meas_ns", "--y", "time_pred_ns",
                         "--series", "schedule", "--log-x", "--log-y", "-o", at("s.svg")});
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string svg = read_whole_file(at("s.svg"));
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_TRUE(has_text(svg, "y = x"));
  EXPECT_TRUE(has_text(svg, "measured kernel time (gpu__time_duration) (ns)"));
  EXPECT_TRUE(has_text(svg, "predicted kernel time (ns)"));
  EXPECT_EQ(points_of(svg, "flash2").size(), 2u);
  EXPECT_EQ(points_of(svg, "naive-safe").size(), 1u);
  EXPECT_NE(svg.find("one colour per schedule"), std::string::npos);
  const Outcome two = run({"plot", csv, "--kind", "scatter", "--x", "time_meas_ns", "--y",
                           "time_pred_ns,time_meas_ns", "-o", at("t.svg")});
  EXPECT_EQ(two.status, 2);
  EXPECT_FALSE(fs::exists(at("t.svg")));
}

TEST_F(Plot, BadInputNamesTheLineAndWritesNothing) {
  const std::string good = write("good.csv", kCsv);
  const std::string text =
      write("text.csv", "sram.capacity_bytes,schedule,hbm_total_bytes\n1024,a,100\n2048,a,lots\n");
  const std::string zero =
      write("zero.csv", "sram.capacity_bytes,schedule,hbm_total_bytes\n1024,a,100\n2048,a,50\n4096,a,0\n");
  const std::string ragged = write("ragged.csv", "x,y\n1,2\n3\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{good, "--x", "sram.capacity_bytes", "--y", "cycels"},
       "good.csv:1:1: error: no column 'cycels'; did you mean 'cycles'?"},
      {{text, "--x", "sram.capacity_bytes", "--y", "hbm_total_bytes"},
       "text.csv:3:8: error: hbm_total_bytes is 'lots', not a number"},
      {{zero, "--x", "sram.capacity_bytes", "--y", "hbm_total_bytes", "--log-y"},
       "zero.csv:4:8: error: --log-y: hbm_total_bytes is 0; a log axis needs values above 0"},
      {{zero, "--x", "hbm_total_bytes", "--y", "sram.capacity_bytes", "--log-x"},
       "zero.csv:4:8: error: --log-x: hbm_total_bytes is 0"},
      {{ragged, "--x", "x", "--y", "y"}, "ragged.csv:3:1: error: 1 cells, the header has 2"},
      {{good, "--x", "sram.capacity_bytes", "--y", "cycles", "--where", "schedule=c"}, "no rows to plot"},
      {{good, "--kind", "units"}, "dma_busy_cycles"},
      {{good, "--kind", "sram"}, "good.csv:1:1: error: --kind sram needs a column 'N'"},
      {{good, "--kind", "roofln"}, "did you mean 'roofline'"},
      {{at("absent.csv"), "--x", "a", "--y", "b"}, "absent.csv: error: cannot open"}};
  for (const auto& [args, message] : cases) {
    std::vector<std::string> full = {"plot"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"-o", at("out.svg")});
    const Outcome o = run(full);
    EXPECT_EQ(o.status, 2) << message << "\n" << o.err;
    EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(at("out.svg"))) << message;
  }
}

// The named plots on a real sweep: 3 SRAM sizes x 2 schedules at N = 128 with each unit's busy cycles.
TEST_F(Plot, NamedPlotsOnASweep) {
  const Outcome sweep =
      run({"sweep", "-c", kSm, "--N", "128", "--sweep", "sram.capacity_bytes=32KiB..128KiB*2", "--sweep",
           "schedule=flash1,flash2", "--unit-cycles", "-o", at("s"), "--jobs", "2"});
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const Outcome sram = run({"plot", at("s.csv"), "--kind", "sram", "-o", at("sram.svg")});
  ASSERT_EQ(sram.status, 0) << sram.err;
  std::string svg = read_whole_file(at("sram.svg"));
  EXPECT_EQ(xml_problem(svg), "");
  for (const char* t :
       {"Off-chip bytes vs SRAM size", "SRAM capacity M (bytes)", "flash1: HBM", "flash2: HBM",
        "N²d²/M (Θ bound, constant 1)", "|Q|+|K|+|V|+|O| (compulsory)", "32 KiB", "128 KiB"})
    EXPECT_TRUE(has_text(svg, t)) << t;
  EXPECT_EQ(points_of(svg, "flash1: HBM").size(), 3u);
  // The compulsory traffic is one level line; N^2 d^2 / M falls as M grows.
  const std::regex polyline("data-label=\"([^\"]*)\"[^\n]*\n<polyline points=\"([^\"]*)\"");
  std::map<std::string, std::vector<Point>> lines;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), polyline); it != std::sregex_iterator(); ++it) {
    std::istringstream in((*it)[2].str());
    for (std::string pair; in >> pair;)
      lines[(*it)[1]].push_back(
          {std::stod(pair.substr(0, pair.find(','))), std::stod(pair.substr(pair.find(',') + 1))});
  }
  const auto& flat = lines["|Q|+|K|+|V|+|O| (compulsory)"];
  ASSERT_EQ(flat.size(), 2u);
  EXPECT_EQ(flat[0].y, flat[1].y);
  const auto& theta = lines["N²d²/M (Θ bound, constant 1)"];
  ASSERT_GT(theta.size(), 2u);
  for (size_t i = 1; i < theta.size(); ++i) EXPECT_GT(theta[i].y, theta[i - 1].y);  // lower on the page

  const Outcome roof = run({"plot", at("s.csv"), "--kind", "roofline", "--where", "sram.capacity_bytes=65536",
                            "--title", "h100-sm roofline", "-o", at("roof.svg")});
  ASSERT_EQ(roof.status, 0) << roof.err;
  svg = read_whole_file(at("roof.svg"));
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_TRUE(has_text(svg, "h100-sm roofline"));
  EXPECT_TRUE(has_text(svg, "achieved MXU throughput (FLOP/s)"));
  EXPECT_EQ(points_of(svg, "flash2").size(), 1u);

  const Outcome units = run({"plot", at("s.csv"), "--kind", "units", "--where", "sram.capacity_bytes=65536",
                             "-o", at("units.svg")});
  ASSERT_EQ(units.status, 0) << units.err;
  svg = read_whole_file(at("units.svg"));
  EXPECT_EQ(xml_problem(svg), "");
  for (const char* t : {"DMA busy", "MXU busy", "VPU busy", "total cycles of the run", "flash1", "flash2"})
    EXPECT_TRUE(has_text(svg, t)) << t;
  // Each stacked segment's height is proportional to its unit's busy cycles in the CSV.
  std::map<std::string, double> busy;  // unit -> cycles of flash2 at 64 KiB
  {
    std::istringstream in(read_whole_file(at("s.csv")));
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      for (std::istringstream c(line); std::getline(c, line, ',');) cells.push_back(line);
      cells.resize(header.size());
      std::map<std::string, std::string> row;
      for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
      if (row["sram.capacity_bytes"] == "65536" && row["schedule"] == "flash2")
        for (const char* u : {"dma", "mxu", "vpu"}) busy[u] = std::stod(row[std::string(u) + "_busy_cycles"]);
    }
  }
  ASSERT_EQ(busy.size(), 3u);
  std::map<std::string, double> height;
  const std::regex segment(R"re(class="segment"[^>]*height="([0-9.]+)"[^>]*><title>flash2 (\w+): )re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), segment); it != std::sregex_iterator(); ++it)
    height[(*it)[2]] = std::stod((*it)[1]);
  ASSERT_EQ(height.size(), 3u) << svg;
  EXPECT_NEAR(height["mxu"] / height["dma"], busy["mxu"] / busy["dma"], 0.01);
  EXPECT_NEAR(height["vpu"] / height["dma"], busy["vpu"] / busy["dma"], 0.01);
  // Without --where there are three points per schedule: the stacked bars need one.
  const Outcome several = run({"plot", at("s.csv"), "--kind", "units", "-o", at("units2.svg")});
  EXPECT_EQ(several.status, 2);
  // The sweep appends points as its two jobs finish them, so which schedule repeats first varies.
  EXPECT_TRUE(std::regex_search(several.err, std::regex("schedule flash[12] is also at line")))
      << several.err;
  EXPECT_FALSE(fs::exists(at("units2.svg")));
}

}  // namespace
