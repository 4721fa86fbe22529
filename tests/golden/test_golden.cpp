// Golden regressions: a few reference runs per kind of machine (the toy machines, a single tile core, a
// TPU-like chip, whole GPUs) write their stats or results JSON, and each must equal its committed copy in
// tests/golden/data/ leaf for leaf (host_seconds aside, the one figure that is not deterministic). These
// files were written by the simulator itself, so they say nothing about correctness (the other suites
// check values against float64, closed forms and GPU measurements); they make every moved figure visible
// in review. After a deliberate model change: `scripts/refresh-golden.sh`, then read the diff.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ATTNSIM_SOURCE_DIR;

struct GoldenRun {
  std::string name;
  std::string args;  // attnsim arguments; OUTPUT stands for the JSON file the run writes
};

void PrintTo(const GoldenRun& run, std::ostream* os) {
  *os << run.name;
}

const std::vector<GoldenRun>& golden_runs() {
  static const std::vector<GoldenRun> runs = {
      {"toy3_lab1", "run -c configs/toy-3reg.yaml labs/01-c00/c00.trace --stats-json OUTPUT"},
      {"toy6_lab3_pipelined",
       "run -c configs/toy-6reg.yaml labs/03-matmul-outer/matmul_outer.trace -p dram.load_latency=4 "
       "-p sequencer.issue=pipelined --stats-json OUTPUT"},
      {"toytile_lab7",
       "run -c configs/toy-tile.yaml labs/07-loop-order/inner_product_n8.trace --stats-json OUTPUT"},
      {"h100sm_forward_causal",
       "compare -c configs/h100-sm.yaml --N 256 --d 64 --heads 2 --causal --json-file OUTPUT"},
      {"tpu_forward",
       "compare -c configs/tpu-v5e-like.yaml --N 256 --d 64 --heads 2 --schedule flash2 --schedule "
       "naive-safe "
       "--json-file OUTPUT"},
      {"h100_chip_flash2_values",
       "compare -c configs/h100.yaml --N 256 --d 64 --heads 2 --schedule flash2 --values on --json-file "
       "OUTPUT"},
      {"h100_chip_forward",
       "compare -c configs/h100.yaml --N 1024 --d 64 --heads 4 --values off --json-file OUTPUT"},
      {"h200_chip_backward",
       "compare -c configs/h200.yaml --N 512 --d 64 --heads 2 --backward --values off --json-file OUTPUT"},
      {"a100_chip_flash2_causal_d128",
       "compare -c configs/a100.yaml --N 1024 --d 128 --heads 4 --causal --schedule flash2 --values off "
       "--json-file OUTPUT"},
  };
  return runs;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Drops the wall time the simulation took (varies run to run) wherever it appears.
void drop_host_time(nlohmann::json& j) {
  if (j.is_object()) {
    j.erase("host_seconds");
    for (auto& [key, value] : j.items()) drop_host_time(value);
  } else if (j.is_array()) {
    for (auto& value : j) drop_host_time(value);
  }
}

// The JSON pointers whose values differ (or exist on one side only), at most `limit` of them.
void differences(const nlohmann::json& want, const nlohmann::json& got, std::vector<std::string>& out,
                 size_t limit = 20) {
  const nlohmann::json patch = nlohmann::json::diff(want, got);
  for (const auto& op : patch) {
    if (out.size() >= limit) return;
    const std::string path = op.at("path").get<std::string>();
    const nlohmann::json::json_pointer pointer(path);
    const std::string was = want.contains(pointer) ? want.at(pointer).dump() : "(absent)";
    const std::string now = got.contains(pointer) ? got.at(pointer).dump() : "(absent)";
    out.push_back(path + ": golden " + was + ", now " + now);
  }
}

class Golden : public ::testing::TestWithParam<GoldenRun> {};

TEST_P(Golden, StatsEqualTheCommittedCopy) {
  const GoldenRun& run = GetParam();
  const fs::path scratch = fs::temp_directory_path() / ("attnsim-golden-" + run.name);
  fs::create_directories(scratch);
  const fs::path output = scratch / "out.json";
  fs::remove(output);
  std::string args = run.args;
  args.replace(args.find("OUTPUT"), 6, "'" + output.string() + "'");
  const std::string shell = "cd '" + kRoot.string() + "' && '" + ATTNSIM_CLI + "' " + args + " > '" +
                            (scratch / "log").string() + "' 2>&1";
  const int status = std::system(shell.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "attnsim " << args;
  nlohmann::json got = read_json(output);
  drop_host_time(got);
  const fs::path golden = kRoot / "tests/golden/data" / (run.name + ".json");
  if (std::getenv("ATTNSIM_REFRESH_GOLDEN")) {
    std::ofstream(golden) << got.dump(2) << "\n";
    GTEST_SKIP() << "refreshed " << golden.string();
  }
  ASSERT_TRUE(fs::exists(golden)) << golden.string() << " is missing: scripts/refresh-golden.sh writes it";
  std::vector<std::string> diff;
  differences(read_json(golden), got, diff);
  std::string report;
  for (const auto& line : diff) report += "  " + line + "\n";
  EXPECT_TRUE(diff.empty()) << "attnsim " << args << "\nmoved from " << golden.string() << ":\n"
                            << report << "(on purpose? scripts/refresh-golden.sh, then review the diff)";
}

INSTANTIATE_TEST_SUITE_P(Reference, Golden, ::testing::ValuesIn(golden_runs()),
                         [](const ::testing::TestParamInfo<GoldenRun>& info) { return info.param.name; });

// The same run twice gives the same JSON, host time aside: what makes golden files possible at all.
TEST(Golden, ChipRunIsDeterministic) {
  const fs::path scratch = fs::temp_directory_path() / "attnsim-golden-twice";
  fs::create_directories(scratch);
  std::vector<nlohmann::json> results;
  for (const char* name : {"a.json", "b.json"}) {
    const std::string shell = "cd '" + kRoot.string() + "' && '" + ATTNSIM_CLI +
                              "' compare -c configs/h100.yaml --N 512 --d 64 --heads 3 --causal --values off "
                              "--json-file '" +
                              (scratch / name).string() + "' > /dev/null 2>&1";
    ASSERT_EQ(std::system(shell.c_str()), 0);
    results.push_back(read_json(scratch / name));
    drop_host_time(results.back());
  }
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
