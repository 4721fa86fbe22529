// Sharded sweeps (--shard K/N), `attnsim sweep merge` and the Slurm scripts, through the real binary: the
// shards merged equal one unsharded run byte for byte, merge refuses missing, doubled and foreign points
// and writes nothing then, and the generated and hand-written sbatch scripts run the same shards. The last
// test submits to a real single-node Slurm (scripts/slurm/local-cluster.sh) and is skipped without one.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;

const std::string kSm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
using Outcome = attnsim::testing::CliOutcome;
using attnsim::testing::read_whole_file;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The record without its wall-clock times, the only fields two runs of one point may differ in: the sweep's
// host_seconds per point and compare's host_seconds per schedule. Everything else must match exactly.
nlohmann::json without_host_seconds(const std::string& line) {
  auto r = nlohmann::json::parse(line);
  EXPECT_TRUE(r.contains("host_seconds")) << line;  // so the comparison below knows what it leaves out
  r.erase("host_seconds");
  if (r.contains("compare"))
    for (auto& s : r["compare"]["schedules"]) s.erase("host_seconds");
  return r;
}

bool is_root() {
  return ::geteuid() == 0;
}

bool on_path(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

class Shards : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / fmt::format("attnsim-shards-test-{}-{}", info->name(), ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ / "cap");
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(root_, ignored);
  }
  std::string at(const std::string& name) const { return (root_ / name).string(); }
  Outcome run(const std::vector<std::string>& args) { return attnsim::testing::run_cli(args, root_ / "cap"); }

  // 3 SRAM sizes x 2 schedules at N = 128, the smallest SRAM too small for --block 64: 6 points, 2 failing
  // (merge must carry failures across as they are).
  std::vector<std::string> grid_args() const {
    return {"-c",      kSm,
            "--N",     "128",
            "--block", "64",
            "--sweep", "sram.capacity_bytes=16KiB,128KiB,256KiB",
            "--sweep", "schedule=flash1,flash2"};
  }
  Outcome sweep(const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"sweep"};
    for (const auto& a : grid_args()) args.push_back(a);
    args.insert(args.end(), {"-o", at(out)});
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  // The unsharded reference, --jobs 1 so that its rows are in point order, as merge writes them.
  void unsharded() {
    const Outcome o = sweep("full", {"--jobs", "1"});
    ASSERT_EQ(o.status, 1) << o.err;  // the two 16 KiB points fail
    ASSERT_EQ(lines(read_whole_file(at("full.jsonl"))).size(), 6u);
  }
  // Merged equals unsharded: the CSV byte for byte, the JSONL byte for byte but for host_seconds.
  void expect_same_as_unsharded(const std::string& merged) {
    EXPECT_EQ(read_whole_file(at(merged + ".csv")), read_whole_file(at("full.csv")));
    const auto a = lines(read_whole_file(at(merged + ".jsonl"))),
               b = lines(read_whole_file(at("full.jsonl")));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(without_host_seconds(a[i]), without_host_seconds(b[i])) << i;
  }

  fs::path root_;
};

TEST_F(Shards, ShardedAndMergedEqualsUnsharded) {
  ASSERT_NO_FATAL_FAILURE(unsharded());
  // Round robin over the 6 points in sweep order (16K/flash1, 16K/flash2, 128K/flash1, ...): shard 1 of 4
  // takes points 0 and 4, shard 2 points 1 and 5, shards 3 and 4 one point each.
  const std::vector<std::set<std::string>> expected = {
      {R"({"schedule":"flash1","sram.capacity_bytes":16384})",
       R"({"schedule":"flash1","sram.capacity_bytes":262144})"},
      {R"({"schedule":"flash2","sram.capacity_bytes":16384})",
       R"({"schedule":"flash2","sram.capacity_bytes":262144})"},
      {R"({"schedule":"flash1","sram.capacity_bytes":131072})"},
      {R"({"schedule":"flash2","sram.capacity_bytes":131072})"}};
  std::vector<std::string> shard_files;
  for (int k = 1; k <= 4; ++k) {
    const Outcome o = sweep("part", {"--shard", fmt::format("{}/4", k), "--jobs", "2"});
    EXPECT_EQ(o.status, k <= 2 ? 1 : 0) << o.err;  // shards 1 and 2 hold a failing point
    const std::string file = at(fmt::format("part.shard-{}-of-4.jsonl", k));
    std::set<std::string> points;
    for (const auto& line : lines(read_whole_file(file)))
      points.insert(nlohmann::json::parse(line)["point"].dump());
    EXPECT_EQ(points, expected[size_t(k - 1)]) << "shard " << k;
    shard_files.push_back(k == 3 ? at("part.shard-3-of-4.csv") : k == 4 ? at("part.shard-4-of-4") : file);
  }
  std::vector<std::string> args = {"sweep", "merge", at("merged")};
  args.insert(args.end(), shard_files.rbegin(), shard_files.rend());  // any order, any spelling of a shard
  const Outcome merged = run(args);
  EXPECT_EQ(merged.status, 1) << merged.err;  // complete, but two points failed
  EXPECT_NE(merged.err.find("6 points of 4 shards, 2 failed"), std::string::npos) << merged.err;
  expect_same_as_unsharded("merged");
}

TEST_F(Shards, MergeRefusesMissingDoubledAndForeignPointsAndWritesNothing) {
  for (int k = 1; k <= 3; ++k)
    sweep("part", {"--shard", fmt::format("{}/3", k), "--jobs", "1"});  // lines in order
  sweep("other", {"--shard", "1/3", "--d", "32"});                      // another sweep: fixed d differs
  ASSERT_EQ(run({"sweep", "-c", kSm, "--N", "128", "--sweep", "schedule=flash2", "-o", at("plain")}).status,
            0);
  fs::copy_file(at("part.shard-2-of-3.jsonl"), at("copy.jsonl"));
  const std::string s1 = at("part.shard-1-of-3"), s2 = at("part.shard-2-of-3"), s3 = at("part.shard-3-of-3");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{s1, s3},
       "2 of 6 points missing, nothing written:\n  shard 2/3: 2 of its points missing (point 1, ...)"},
      {{s1, s2, s3, at("copy")}, "point 1 (schedule=flash2 sram.capacity_bytes=16384) is also at"},
      {{s1, s2, s3, s2 + ".csv"}, "given twice"},
      {{s1, s2, s3, at("other.shard-1-of-3")}, "belongs to another sweep"},
      {{at("plain")}, "not a shard's record"},
      {{s1, s2, at("nothing-here")}, "nothing-here.jsonl: error: no such file"}};
  for (const auto& [shards, message] : cases) {
    std::vector<std::string> args = {"sweep", "merge", at("merged")};
    args.insert(args.end(), shards.begin(), shards.end());
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(at("merged.csv")) || fs::exists(at("merged.jsonl"))) << message;
  }
  // A shard cut off mid-line (a killed task): the cut point is missing, the rest stands.
  const auto whole = read_whole_file(s2 + ".jsonl");
  std::ofstream(s2 + ".jsonl", std::ios::trunc) << whole.substr(0, whole.size() - 10);
  const Outcome cut = run({"sweep", "merge", at("merged"), s1, s2, s3});
  EXPECT_EQ(cut.status, 2) << cut.err;
  EXPECT_NE(cut.err.find("ignoring an unfinished last line"), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("1 of 6 points missing"), std::string::npos) << cut.err;
}

TEST_F(Shards, BadShardOptionsAndAChangedSweep) {
  for (const std::string bad : {"0/3", "4/3", "3", "a/b", "1/0"}) {
    const Outcome o = sweep("part", {"--shard", bad});
    EXPECT_EQ(o.status, 2) << bad;
    EXPECT_NE(o.err.find("expected K/N with 1 <= K <= N"), std::string::npos) << o.err;
  }
  const Outcome both = sweep("part", {"--shard", "1/2", "--slurm", "2", "--no-submit"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("drop --shard"), std::string::npos) << both.err;
  for (const auto& entry : fs::directory_iterator(root_))
    EXPECT_EQ(entry.path().filename(), "cap") << "bad input wrote " << entry.path();
  // Another value on a swept key renumbers the points: a shard's files no longer fit it.
  ASSERT_EQ(sweep("part", {"--shard", "1/2"}).status, 1);
  auto args = std::vector<std::string>{"sweep",
                                       "-c",
                                       kSm,
                                       "--N",
                                       "128",
                                       "--block",
                                       "64",
                                       "--sweep",
                                       "sram.capacity_bytes=16KiB,64KiB,128KiB,256KiB",
                                       "--sweep",
                                       "schedule=flash1,flash2",
                                       "-o",
                                       at("part"),
                                       "--shard",
                                       "1/2"};
  const Outcome changed = run(args);
  EXPECT_EQ(changed.status, 2) << changed.err;
  EXPECT_NE(changed.err.find("the swept values or --shard changed"), std::string::npos) << changed.err;
}

// The scripts without a scheduler: each task's command run by bash with the variables Slurm would set.
TEST_F(Shards, SbatchScriptsRunTheShards) {
  ASSERT_NO_FATAL_FAILURE(unsharded());
  const Outcome o = sweep("gen", {"--slurm", "2", "--no-submit", "--sbatch=--partition=none"});
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string script = read_whole_file(at("gen.sbatch"));
  EXPECT_NE(script.find("#SBATCH --array=1-2\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--shard \"$SLURM_ARRAY_TASK_ID/2\""), std::string::npos) << script;
  EXPECT_EQ(script.find("--slurm"), script.find("--slurm 2`"));  // only in the comment, not the command
  EXPECT_EQ(script.find("--partition"), std::string::npos);      // sbatch options go to sbatch, not the job
  for (int k = 1; k <= 2; ++k)
    EXPECT_EQ(std::system(fmt::format("cd {} && SLURM_ARRAY_TASK_ID={} bash {} 2>/dev/null", root_.string(),
                                      k, at("gen.sbatch"))
                              .c_str()) >>
                  8,
              1);  // each shard holds one failing 16 KiB point
  EXPECT_EQ(
      std::system(fmt::format("bash {} 2>{}", at("gen.merge.sbatch"), at("cap/merge-err")).c_str()) >> 8, 1);
  expect_same_as_unsharded("gen");

  // The hand-written array script: N first, then the sweep's arguments.
  std::string args;
  for (const auto& a : grid_args()) args += " '" + a + "'";
  for (int k = 1; k <= 3; ++k)  // shards 1 and 2 hold a failing 16 KiB point (points 0, 3 and 1, 4)
    EXPECT_EQ(std::system(fmt::format("cd {} && SLURM_ARRAY_TASK_ID={} ATTNSIM={} bash "
                                      "{}/scripts/slurm/sweep-array.sbatch 3 {} -o hand 2>/dev/null",
                                      root_.string(), k, ATTNSIM_CLI, ATTNSIM_SOURCE_DIR, args)
                              .c_str()) >>
                  8,
              k <= 2 ? 1 : 0)
        << k;
  const Outcome merged = run({"sweep", "merge", at("hand"), at("hand.shard-1-of-3"), at("hand.shard-2-of-3"),
                              at("hand.shard-3-of-3")});
  EXPECT_EQ(merged.status, 1) << merged.err;
  expect_same_as_unsharded("hand");
}

// A real Slurm: scripts/slurm/local-cluster.sh starts munged, slurmctld and slurmd from Debian's packages on
// this machine (own ports, own state directory), `attnsim sweep --slurm 3` submits the array and the merge
// job, and the merged files must equal the unsharded run.
TEST_F(Shards, RealSlurmArrayAndMerge) {
  for (const std::string tool : {"sbatch", "squeue", "slurmctld", "slurmd", "munged"})
    if (!on_path(tool))
      GTEST_SKIP() << tool
                   << " not found: Slurm is not installed (scripts/deps.sh --slurm installs slurmctld, "
                   << "slurmd, munge and slurm-client); the Slurm test does not run";
  if (!is_root())
    GTEST_SKIP() << "not root: slurmd must run as root to start jobs; the Slurm test does not run";
  ASSERT_NO_FATAL_FAILURE(unsharded());
  const std::string cluster = at("cluster"),
                    script = std::string(ATTNSIM_SOURCE_DIR) + "/scripts/slurm/local-cluster.sh";
  const int port = 20000 + int(::getpid() % 20000) / 2 * 2;  // apart from a Slurm that may run here already
  const std::string env = fmt::format("SLURM_PORT={}", port);
  ASSERT_EQ(
      std::system(fmt::format("{} {} start {} >{}/start.out 2>&1", env, script, cluster, at("cap")).c_str()),
      0)
      << read_whole_file(at("cap/start.out"));
  struct Stop {  // the daemons stop however the test ends
    std::string command;
    ~Stop() { std::system(command.c_str()); }
  } stop{fmt::format("{} {} stop {} >/dev/null 2>&1", env, script, cluster)};
  ::setenv("SLURM_CONF", (cluster + "/slurm.conf").c_str(), 1);
  const Outcome submitted = sweep("slurm", {"--slurm", "3"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_NE(submitted.out.find("array job"), std::string::npos) << submitted.out;
  const auto start = std::chrono::steady_clock::now();
  const auto merged = [&] { return fs::exists(at("slurm.csv")) && fs::exists(at("slurm.jsonl")); };
  while (!merged() && std::chrono::steady_clock::now() - start < std::chrono::seconds(180))
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::unsetenv("SLURM_CONF");
  ASSERT_TRUE(merged()) << "the merge job did not write its output within 180 s; logs: "
                        << read_whole_file(at("slurm.slurm-merge.log"))
                        << read_whole_file(cluster + "/slurmctld.log");
  for (int k = 1; k <= 3; ++k)
    EXPECT_NE(read_whole_file(at(fmt::format("slurm.slurm-{}.log", k)))
                  .find(fmt::format("shard {}/3 of 6 points", k)),
              std::string::npos);
  expect_same_as_unsharded("slurm");
}

}  // namespace
