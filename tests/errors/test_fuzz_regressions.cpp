// Inputs found by the fuzz targets (fuzz/, scripts/fuzz.sh), each run through the real attnsim binary:
// the contract is an input error (exit 2, one located line on stderr). Some of the original defects were
// undefined behaviour that only the sanitizer build (scripts/sanitize.sh) turns into a failure; the
// ordinary build checks the message, the sanitizer build also checks that nothing undefined happens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;

class FuzzRegression : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("attnsim-fuzz-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(root_, ignored);
  }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = root_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  // Runs attnsim and expects exit 2 with one stderr line that starts with `prefix` and contains `piece`.
  void expect_input_error(const std::vector<std::string>& args, const std::string& prefix,
                          const std::string& piece) {
    const attnsim::testing::CliOutcome o = attnsim::testing::run_cli(args, root_);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(o.err.rfind(prefix, 0), 0u) << "stderr: " << o.err << "\nwanted prefix: " << prefix;
    EXPECT_NE(o.err.find(piece), std::string::npos) << "missing '" << piece << "' in: " << o.err;
    EXPECT_EQ(o.out, "");
  }

  fs::path root_;
};

const std::string kToy3 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-3reg.yaml";

// fuzz_assembler: `index + 1` was formed before the range check, a signed overflow at INT64_MAX.
TEST_F(FuzzRegression, IndexAtInt64MaxIsOutOfRange) {
  const std::string trace = write("max.trace", ".tensor x[4]\nLOAD x[9223372036854775807], R1\n");
  expect_input_error({"disasm", trace}, trace + ":2:8: error: ", "index 9223372036854775807 out of range");
  expect_input_error({"run", "-c", kToy3, trace},
                     trace + ":2:8: error: ", "index 9223372036854775807 out of range");
}

// fuzz_config: a config string that is not UTF-8 (here the machine's name) reached the stats JSON, whose
// writer threw: "internal error", exit 3, after the run. Now the config loader names the key.
TEST_F(FuzzRegression, ConfigStringThatIsNotUtf8IsAnInputError) {
  std::ifstream in(kToy3);
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t name = config.find("name: toy-3reg");
  ASSERT_NE(name, std::string::npos);
  config.replace(name, 14, "name: toy\xff");
  const std::string path = write("bad.yaml", config);
  const std::string trace = std::string(ATTNSIM_SOURCE_DIR) + "/labs/01-c00/c00.trace";
  const std::string stats = (root_ / "stats.json").string();
  expect_input_error({"run", "-c", path, trace, "--stats-json", stats}, path + ":", "not valid UTF-8");
  EXPECT_FALSE(fs::exists(stats));
}

}  // namespace
