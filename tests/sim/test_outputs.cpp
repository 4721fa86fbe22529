// All-or-nothing outputs (issue 11, item 4): a command's files are written to temporary names and renamed
// only when every one of them was written, so a failure leaves none behind, not even a file that did not
// exist before. The CLI checks its output folders before a run; this holds below that check too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "isa/diagnostics.h"
#include "sim/run.h"

namespace attnsim {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("attnsim-outputs-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Outputs, AFailedFileLeavesNoneOfTheOthers) {
  const fs::path dir = scratch("failed");
  const std::string first = (dir / "stats.json").string(), second = (dir / "missing" / "t.json").string();
  EXPECT_THROW(write_files_atomically({{first, "{}\n"}, {second, "{}\n"}}), InputError);
  EXPECT_TRUE(fs::is_empty(dir)) << "a file or a temporary was left in " << dir;
  fs::remove_all(dir);
}

TEST(Outputs, AnExistingFileIsReplacedWhole) {
  const fs::path dir = scratch("replace");
  const std::string path = (dir / "out.txt").string();
  std::ofstream(path) << "old contents, longer than the new\n";
  write_files_atomically({{path, "new\n"}});
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(Outputs, FoldersAreCheckedBeforeARun) {
  const fs::path dir = scratch("check");
  EXPECT_NO_THROW(check_output_paths({"", (dir / "a.json").string()}));
  EXPECT_THROW(check_output_paths({(dir / "no" / "a.json").string()}), InputError);
  EXPECT_THROW(check_output_paths({dir.string()}), InputError);  // a folder is not an output file
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnsim
