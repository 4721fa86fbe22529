// Every `build/sim/attnsim ...` command quoted in the lab handouts (docs/labs/*.md) and in README.md's
// "Teaching labs" section runs, in the order written, from the repository root, with the exit status the
// text promises: 0, or 2 where the handout says the run is refused. /tmp paths go to a scratch directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ATTNSIM_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Commands in code blocks (indented or fenced) and in inline code spans; "..." marks a placeholder.
std::vector<std::string> commands_in(const std::string& text) {
  std::vector<std::string> commands;
  const std::regex command(R"((?:^\s*|`)(build/sim/attnsim [^`#\n]*?)\s*(?:`|#|$))", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), command); it != std::sregex_iterator();
       ++it) {
    const std::string found = (*it)[1];
    if (found.find("...") == std::string::npos && found.find('<') == std::string::npos)
      commands.push_back(found);
  }
  return commands;
}

std::string readme_lab_section() {
  const std::string readme = read(kRoot / "README.md");
  const size_t start = readme.find("## Teaching labs");
  EXPECT_NE(start, std::string::npos) << "README.md has no '## Teaching labs' section";
  if (start == std::string::npos) return "";
  return readme.substr(start, readme.find("\n## ", start + 1) - start);
}

// The status a handout promises for a command: 2 where it says the run is refused.
int promised_status(const std::string& command) {
  return std::regex_search(command, std::regex(R"(regfile\.count=2(\s|$))")) ? 2 : 0;
}

// Runs one command from the repository root; the student's own quiz trace is written by the quiz, not here.
void run_all(const std::string& name, const std::string& text) {
  const fs::path scratch = fs::temp_directory_path() / ("attnsim-docs-" + name);
  fs::create_directories(scratch);
  std::vector<std::string> commands = commands_in(text);
  EXPECT_FALSE(commands.empty()) << name << " quotes no attnsim command";
  for (std::string command : commands) {
    if (command.find("my_inner6") != std::string::npos) continue;
    const int promised = promised_status(command);
    command = std::regex_replace(command, std::regex("/tmp/"), scratch.string() + "/");
    command.replace(0, std::string("build/sim/attnsim").size(), ATTNSIM_CLI);
    const std::string shell =
        "cd '" + kRoot.string() + "' && " + command + " > '" + (scratch / "out").string() + "' 2>&1";
    const int status = std::system(shell.c_str());
    EXPECT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), promised) << name << ": " << command << "\n" << read(scratch / "out");
  }
}

class LabHandout : public ::testing::TestWithParam<std::string> {};

TEST_P(LabHandout, EveryQuotedCommandRuns) {
  run_all(fs::path(GetParam()).stem().string(), read(kRoot / "docs/labs" / GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Docs, LabHandout,
                         ::testing::Values("README.md", "01-c00.md", "02-matmul-inner.md",
                                           "03-matmul-outer.md", "04-softmax-safe.md", "05-softmax-online.md",
                                           "06-online-attention.md", "07-loop-order.md",
                                           "quiz-inner-6reg.md"),
                         [](const auto& info) {
                           std::string name = fs::path(info.param).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// Every handout in docs/labs/ is in the list above.
TEST(LabHandout, ListCoversEveryHandout) {
  size_t handouts = 0;
  for (const auto& entry : fs::directory_iterator(kRoot / "docs/labs"))
    handouts += entry.path().extension() == ".md";
  EXPECT_EQ(handouts, 9u);
}

TEST(ReadmeLabs, EveryQuotedCommandRuns) {
  run_all("readme", readme_lab_section());
}

// docs/trace-format.md: every fenced block whose first line is `# example: configs/X.yaml ...` runs on X
// and passes its checks.
TEST(TraceFormat, EveryExampleRuns) {
  const std::string text = read(kRoot / "docs/trace-format.md");
  const std::regex block(R"(```\n(# example: (configs/[\w.-]+)[^\n]*\n[\s\S]*?)```)");
  const fs::path scratch = fs::temp_directory_path() / "attnsim-docs-trace-format";
  fs::create_directories(scratch);
  int examples = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
    const fs::path trace = scratch / ("example" + std::to_string(++examples) + ".trace");
    std::ofstream(trace) << (*it)[1];
    const std::string shell = "cd '" + kRoot.string() + "' && " + ATTNSIM_CLI + " run -c " +
                              std::string((*it)[2]) + " '" + trace.string() + "' > '" +
                              (scratch / "out").string() + "' 2>&1";
    const int status = std::system(shell.c_str());
    EXPECT_EQ(WEXITSTATUS(status), 0) << "example " << examples << "\n" << read(scratch / "out");
    EXPECT_NE(read(scratch / "out").find("OK"), std::string::npos) << read(scratch / "out");
  }
  EXPECT_GE(examples, 2);  // the scalar example and the tile example
}

}  // namespace
