// `attnsim sweep` through the real binary: the files it writes, that a row equals a direct `attnsim compare`
// of the same point, resume after an interruption, a failing point recorded while the sweep goes on, and
// bad input leaving no file. Small N on configs/h100-sm.yaml keeps each point near 0.1 s.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/csv_cells.h"
#include "tests/common/run_cli.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

const std::string kSm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
const std::string kChip = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";

using Outcome = attnsim::testing::CliOutcome;
using attnsim::testing::read_whole_file;

std::string read_file(const fs::path& path) {
  return read_whole_file(path);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

using attnsim::testing::csv_cells;

// The CSV as maps from column name to cell, one per row.
std::vector<std::map<std::string, std::string>> csv(const fs::path& path) {
  const auto all = lines(read_file(path));
  std::vector<std::map<std::string, std::string>> rows;
  if (all.empty()) return rows;
  const auto header = csv_cells(all[0]);
  for (size_t i = 1; i < all.size(); ++i) {
    const auto cells = csv_cells(all[i]);
    EXPECT_EQ(cells.size(), header.size()) << all[i];
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < cells.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / fmt::format("attnsim-sweep-test-{}-{}", info->name(), ::getpid());
    fs::remove_all(root_);
    fs::create_directories(work());
    fs::create_directories(root_ / "cap");
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(root_, ignored);
  }
  fs::path work() const { return root_ / "work"; }
  std::string out() const { return (work() / "res").string(); }
  fs::path csv_path() const { return work() / "res.csv"; }
  fs::path jsonl_path() const { return work() / "res.jsonl"; }

  Outcome run(const std::vector<std::string>& args) { return attnsim::testing::run_cli(args, root_ / "cap"); }

  // 4 SRAM sizes x 2 schedules at N = 128: 8 points, one schedule each.
  std::vector<std::string> grid() const {
    return {"sweep",
            "-c",
            kSm,
            "--N",
            "128",
            "--sweep",
            "sram.capacity_bytes=32KiB..256KiB*2",
            "--sweep",
            "schedule=flash1,flash2",
            "-o",
            out(),
            "--jobs",
            "2"};
  }

  fs::path root_;
};

// The cycles cell of `schedule`'s row in compare's table: columns are right-aligned, so the value ends where
// the header's "cycles" ends.
std::string table_cycles(const std::string& table, const std::string& schedule) {
  size_t end = std::string::npos;
  for (const auto& line : lines(table)) {
    if (line.rfind("schedule ", 0) == 0) end = line.find(" cycles") + 7;
    if (end == std::string::npos || line.rfind(schedule + " ", 0) != 0 || line.size() < end) continue;
    const std::string head = line.substr(0, end);
    return head.substr(head.find_last_of(' ') + 1);
  }
  return "(no row for " + schedule + ")";
}

// A sweep's results do not depend on how many points run at once (issue 11, determinism): the same grid at
// --jobs 1 and --jobs 3 writes the same records, leaf for leaf, once the host's timings are left out (the
// lines come in the order points finish, so they are compared by point).
TEST_F(Sweep, JobsDoNotChangeAnyRecord) {
  auto records = [&](const std::string& jobs) {
    std::vector<std::string> args = grid();
    args[args.size() - 1] = jobs;
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 0) << o.err;
    std::map<std::string, nlohmann::json> by_point;
    for (const auto& line : lines(read_file(jsonl_path()))) {
      nlohmann::json record = nlohmann::json::parse(line);
      nlohmann::json flat = record.flatten();
      for (auto it = flat.begin(); it != flat.end();)
        it = it.key().find("host_seconds") != std::string::npos ? flat.erase(it) : std::next(it);
      by_point[record["point"].dump()] = flat.unflatten();
    }
    fs::remove(jsonl_path());
    fs::remove(csv_path());
    return by_point;
  };
  const auto one = records("1"), three = records("3");
  ASSERT_EQ(one.size(), 8u);
  for (const auto& [point, record] : one) {
    ASSERT_TRUE(three.count(point)) << point;
    EXPECT_EQ(three.at(point), record) << point;
  }
}

TEST_F(Sweep, GridWritesEveryPointAndMatchesCompare) {
  const Outcome o = run(grid());
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("point 8/8 done"), std::string::npos) << o.err;  // not a terminal: plain lines
  const auto rows = csv(csv_path());
  ASSERT_EQ(rows.size(), 8u);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : rows) {
    EXPECT_EQ(r.at("status"), "ok");
    seen.insert({r.at("sram.capacity_bytes"), r.at("schedule")});
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_TRUE(seen.count({"65536", "flash2"}));
  const auto records = lines(read_file(jsonl_path()));
  ASSERT_EQ(records.size(), 8u);
  for (const auto& line : records) {  // each record carries the effective config it ran
    const auto r = nlohmann::json::parse(line);
    EXPECT_EQ(r["config"]["sram"]["capacity_bytes"], r["point"]["sram.capacity_bytes"]) << line;
  }
  const Outcome direct =
      run({"compare", "-c", kSm, "--N", "128", "-p", "sram.capacity_bytes=65536", "--schedule", "flash2"});
  ASSERT_EQ(direct.status, 0) << direct.err;
  size_t matched = 0;
  for (const auto& r : rows) {
    if (r.at("sram.capacity_bytes") != "65536" || r.at("schedule") != "flash2") continue;
    EXPECT_EQ(r.at("cycles"), table_cycles(direct.out, "flash2")) << direct.out;
    ++matched;
  }
  EXPECT_EQ(matched, 1u);
}

TEST_F(Sweep, ResumeRunsOnlyWhatIsMissing) {
  ASSERT_EQ(run(grid()).status, 0);
  const std::string full_csv = read_file(csv_path());
  const auto full = lines(read_file(jsonl_path()));
  // A second run of the same command adds nothing.
  Outcome again = run(grid());
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("0 to run, 8 skipped"), std::string::npos) << again.err;
  EXPECT_EQ(read_file(csv_path()), full_csv);
  EXPECT_EQ(lines(read_file(jsonl_path())).size(), 8u);
  // Interrupted mid-way: three whole records and half of the fourth line survive.
  std::ofstream(jsonl_path(), std::ios::trunc)
      << full[0] + "\n" + full[1] + "\n" + full[2] + "\n" + full[3].substr(0, full[3].size() / 2);
  Outcome resumed = run(grid());
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("5 to run, 3 skipped"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("unfinished last line"), std::string::npos) << resumed.err;
  const auto after = lines(read_file(jsonl_path()));
  ASSERT_EQ(after.size(), 8u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(after[i], full[i]);  // the finished points were not run again
  std::set<std::string> points;
  for (const auto& line : after) points.insert(nlohmann::json::parse(line)["point"].dump());
  EXPECT_EQ(points.size(), 8u);
  EXPECT_EQ(csv(csv_path()).size(), 8u);
}

// A real interruption: SIGTERM to the sweep as soon as its first point is recorded (it passes the signal on
// to its children), then the same command finishes the rest and runs no recorded point again.
TEST_F(Sweep, InterruptedSweepResumes) {
  std::vector<std::string> args = {ATTNSIM_CLI, "sweep",
                                   "-c",        kSm,
                                   "--N",       "512",
                                   "--sweep",   "sram.capacity_bytes=32KiB..1MiB*2",
                                   "--sweep",   "schedule=flash1,flash2",
                                   "-o",        out(),
                                   "--jobs",    "1"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, (root_ / "cap" / "first").c_str(), O_WRONLY | O_CREAT, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, ATTNSIM_CLI, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  for (int waited = 0; waited < 2000 && lines(read_file(jsonl_path())).empty(); ++waited) ::usleep(10000);
  ::kill(pid, SIGTERM);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus)) << read_file(root_ / "cap" / "first");
  EXPECT_EQ(WEXITSTATUS(wstatus), 128 + SIGTERM) << read_file(root_ / "cap" / "first");
  const auto before = lines(read_file(jsonl_path()));
  ASSERT_GE(before.size(), 1u);
  ASSERT_LT(before.size(), 12u) << "the sweep ended before the signal";
  args.erase(args.begin());
  const Outcome resumed = run(args);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find(fmt::format("{} to run, {} skipped", 12 - before.size(), before.size())),
            std::string::npos)
      << resumed.err;
  const auto after = lines(read_file(jsonl_path()));
  ASSERT_EQ(after.size(), 12u);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i]);
  std::set<std::string> points;
  for (const auto& line : after) points.insert(nlohmann::json::parse(line)["point"].dump());
  EXPECT_EQ(points.size(), 12u);
}

TEST_F(Sweep, FailingPointIsRecordedAndTheSweepGoesOn) {
  const Outcome o = run({"sweep", "-c", kSm, "--N", "128", "--block", "64", "--schedule", "flash2", "--sweep",
                         "sram.capacity_bytes=1KiB,256KiB", "-o", out(), "--jobs", "1"});
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.err.find("point 1/2 failed"), std::string::npos) << o.err;
  const auto rows = csv(csv_path());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("status"), "failed");
  EXPECT_NE(rows[0].at("reason").find("buffers need"), std::string::npos) << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("status"), "ok");
  EXPECT_NE(rows[1].at("cycles"), "");
  const auto records = lines(read_file(jsonl_path()));
  ASSERT_EQ(records.size(), 2u);
  const auto failed = nlohmann::json::parse(records[0]);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["exit_status"], 2);
  EXPECT_NE(failed["reason"].get<std::string>().find("sram.capacity_bytes is 1024"), std::string::npos);
  // A rerun skips the failed point and still reports the failure; --retry-failed runs it (and only it) again.
  const std::vector<std::string> args = {"sweep",
                                         "-c",
                                         kSm,
                                         "--N",
                                         "128",
                                         "--block",
                                         "64",
                                         "--schedule",
                                         "flash2",
                                         "--sweep",
                                         "sram.capacity_bytes=1KiB,256KiB",
                                         "-o",
                                         out()};
  const Outcome rerun = run(args);
  EXPECT_EQ(rerun.status, 1) << rerun.err;
  EXPECT_NE(rerun.err.find("0 to run, 2 skipped"), std::string::npos) << rerun.err;
  auto retry_args = args;
  retry_args.push_back("--retry-failed");
  const Outcome retry = run(retry_args);
  EXPECT_EQ(retry.status, 1) << retry.err;
  EXPECT_NE(retry.err.find("1 to run, 1 skipped"), std::string::npos) << retry.err;
  const auto after = lines(read_file(jsonl_path()));
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], records[1]);  // the ok point kept, the failed one recorded once, anew
  EXPECT_EQ(nlohmann::json::parse(after[1])["point"], failed["point"]);
  EXPECT_EQ(csv(csv_path()).size(), 2u);
}

TEST_F(Sweep, BadInputWritesNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sweep", "blok=64"}, "did you mean 'block'"},
      {{"--sweep", "sram.capacity_bytes=1KiB..4KiB"}, "needs a step"},
      {{"--sweep", "sram.capacty_bytes=1KiB"}, "did you mean 'capacity_bytes'"},
      {{"--sweep", "N=128", "--N", "256"}, "both swept and fixed"},
      {{"--sweep", "N=12x"}, "expected a whole number"}};
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"sweep", "-c", kSm, "-o", out()};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
    EXPECT_TRUE(fs::is_empty(work())) << "a file was written for " << extra[1];
  }
}

TEST_F(Sweep, SpecFileAndWholeChipLevels) {
  const std::string spec = (work() / "spec.yaml").string();
  std::ofstream(spec) << "config: " << kChip
                      << "\nsweep:\n  N: [128, 256]\nfixed:\n  schedule: flash2\n  values: off\noutput: "
                      << out() << "\n";
  const Outcome o = run({"sweep", "--spec", spec});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto rows = csv(csv_path());
  ASSERT_EQ(rows.size(), 2u);
  // Rows come in the order points finish: find N = 256's row and record.
  const auto row = rows[0].at("N") == "256" ? rows[0] : rows[1];
  EXPECT_EQ(row.at("N"), "256");
  nlohmann::json record;
  for (const auto& line : lines(read_file(jsonl_path())))
    if (nlohmann::json::parse(line)["point"]["N"] == 256) record = nlohmann::json::parse(line);
  ASSERT_TRUE(record.contains("compare")) << read_file(jsonl_path());
  const auto& schedule = record["compare"]["schedules"][0];
  EXPECT_EQ(row.at("dram_read_bytes"), schedule["whole_chip"]["dram_bytes_read"].dump());
  EXPECT_EQ(row.at("sm_l2_read_bytes"), schedule["sm_l2_bytes_read"].dump());
  EXPECT_NE(row.at("dram_read_bytes"), "0");
  EXPECT_EQ(row.count("hbm_read_bytes"), 0u);  // a chip names its levels
}

}  // namespace
