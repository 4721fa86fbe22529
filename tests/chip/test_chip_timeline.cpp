// `--timeline` on a whole chip: a process per chosen core, a slice per thread block and per instruction,
// each instruction inside its block, no two slices of a track overlapping; the limit and the core list
// say what they left out; bad lists and several validate rows are refused with exit status 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/chip_timeline.h"
#include "sim/run.h"
#include "tests/common/run_cli.h"
#include "traces/attention_forward.h"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
const std::string kRoot = ATTNSIM_SOURCE_DIR;

struct Slice {
  int core, track;
  std::string name;
  uint64_t start, end;
};

std::vector<Slice> slices_of(const nlohmann::json& doc) {
  std::vector<Slice> out;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      out.push_back({e["pid"].get<int>(), e["tid"].get<int>(), e["name"].get<std::string>(),
                     e["ts"].get<uint64_t>(), e["ts"].get<uint64_t>() + e["dur"].get<uint64_t>()});
  return out;
}

bool is_block(const Slice& s) {
  return s.name.find('(') != std::string::npos;
}

// 8 blocks of flash2 (n = 512, 4 query blocks, 2 heads) on 4 cores: two each. Cores 0 and 2 shown.
TEST(ChipTimeline, EveryInstructionOfTheChosenCoresInsideItsBlock) {
  traces::ForwardShape s;
  s.n = 512, s.d = 64, s.heads = 2, s.block_q = s.block_k = 128, s.dtype = Dtype::F16;
  const isa::Program program = traces::forward_program(traces::ForwardSchedule::Flash2, s);
  RunOptions o;
  o.config_path = kRoot + "/configs/h200.yaml";
  o.overrides = {"chip.cores=4"};
  o.timing_only = true;
  o.timeline = (fs::path(::testing::TempDir()) / "chip_timeline.json").string();
  o.timeline_cores = "0,2";
  const RunResult r = run_program(program, o);
  ASSERT_TRUE(r.chip);
  ASSERT_EQ(r.chip->blocks, 8u);
  ASSERT_EQ(r.chip->min_blocks_per_core, 2u);
  ASSERT_EQ(r.chip->max_blocks_per_core, 2u);
  std::ifstream in(o.timeline);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["otherData"]["instructions_not_shown"], 0);
  const std::vector<Slice> all = slices_of(doc);
  std::vector<Slice> blocks, instructions;
  for (const Slice& x : all) (is_block(x) ? blocks : instructions).push_back(x);
  std::set<int> cores;
  for (const Slice& x : all) cores.insert(x.core);
  EXPECT_EQ(cores, (std::set<int>{0, 2}));
  EXPECT_EQ(blocks.size(), 4u);
  for (const Slice& b : blocks) EXPECT_EQ(b.name.rfind("flash2_fwd(", 0), 0u) << b.name;
  // Every block runs the same number of instructions (no mask): the chosen half of the blocks, half of them.
  EXPECT_EQ(instructions.size() * 2, r.instructions);
  std::map<std::string, uint64_t> per_opcode;
  for (const Slice& x : instructions) {
    ++per_opcode[x.name];
    int inside = 0;
    for (const Slice& b : blocks) inside += b.core == x.core && b.start <= x.start && x.end <= b.end;
    EXPECT_GE(inside, 1) << x.name << " at " << x.start << " on core " << x.core;
  }
  for (const auto& [op, count] : r.per_opcode) EXPECT_EQ(per_opcode[op] * 2, count) << op;
  std::map<std::pair<int, int>, std::vector<std::pair<uint64_t, uint64_t>>> tracks;
  for (const Slice& x : all) tracks[{x.core, x.track}].push_back({x.start, x.end});
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) EXPECT_LE(spans[k - 1].second, spans[k].first);
  }
  fs::remove(o.timeline);
}

TEST(ChipTimeline, CoreListsAreReadOrRefused) {
  EXPECT_EQ(parse_timeline_cores("all", 3), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(parse_timeline_cores("0,2-3", 5), (std::vector<bool>{true, false, true, true, false}));
  for (const char* bad : {"", "1,", "3-1", "a", "-1", "1-x", "5"})
    EXPECT_THROW(parse_timeline_cores(bad, 5), std::invalid_argument) << bad;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("attnsim-chip-timeline-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One row of validate (a one-wave memory-efficient backward: 64 blocks on 128 SMs), cores 0 and 5, the
// first 500 instructions: the file holds them and the output says how many more there were.
TEST(ChipTimeline, ValidateWritesOneRowsRunAndSaysWhereItStopped) {
  const fs::path dir = scratch("validate");
  std::ifstream data(kRoot + "/validation/data/h200_memeff_sms_onewave_cases.csv");
  std::string header, first, second;
  std::getline(data, header), std::getline(data, first), std::getline(data, second);
  std::ofstream(dir / "one.csv") << header << "\n" << first << "\n";
  std::ofstream(dir / "two.csv") << header << "\n" << first << "\n" << second << "\n";
  const std::string config = kRoot + "/configs/h200.yaml";
  const std::string json = (dir / "t.json").string();
  const auto ok = testing::run_cli({"validate", "-c", config, (dir / "one.csv").string(), "--timeline", json,
                                    "--timeline-cores", "0,5", "--timeline-limit", "500"},
                                   dir);
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("t.json: --timeline stopped after 500 instructions ("), std::string::npos) << ok.out;
  std::ifstream in(json);
  const std::vector<Slice> slices = slices_of(nlohmann::json::parse(in));
  size_t instructions = 0;
  for (const Slice& x : slices) {
    EXPECT_TRUE(x.core == 0 || x.core == 5) << x.core;
    instructions += !is_block(x);
  }
  EXPECT_EQ(instructions, 500u);

  fs::remove(json);
  const auto two =
      testing::run_cli({"validate", "-c", config, (dir / "two.csv").string(), "--timeline", json}, dir);
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("--timeline shows one row's run: give one row, not 2"), std::string::npos)
      << two.err;
  const auto cores = testing::run_cli(
      {"validate", "-c", config, (dir / "one.csv").string(), "--timeline", json, "--timeline-cores", "9-3"},
      dir);
  EXPECT_EQ(cores.status, 2);
  EXPECT_NE(cores.err.find("--timeline-cores: range '9-3' runs backwards"), std::string::npos) << cores.err;
  EXPECT_FALSE(fs::exists(json));
}

// `probe --samples`: one line a block in validation/l2_probe.cu's SAMPLES layout (validation/convoys.py reads
// both), points that never go back, and the last point of the last block plus the kernel's fixed launch cost
// is the kernel time the probe prints.
TEST(ProbeSamples, EveryBlocksPointsInTheGpuFilesLayout) {
  const fs::path dir = fs::path(::testing::TempDir()) / "probe_samples";
  fs::create_directories(dir);
  const std::string csv = (dir / "spread.csv").string();
  const auto r =
      testing::run_cli({"probe", "-c", kRoot + "/configs/h100.yaml", "--mode", "spread", "--mib", "1",
                        "--blocks", "4", "--passes", "2", "--samples", csv, "--samples-per-pass", "4"},
                       dir);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(
      line,
      "block,sm,start_ns,pass0_1_of_4_ns,pass0_2_of_4_ns,pass0_3_of_4_ns,pass0_4_of_4_ns,pass1_1_of_4_ns,"
      "pass1_2_of_4_ns,pass1_3_of_4_ns,pass1_4_of_4_ns");
  double last = 0;
  int blocks = 0;
  while (std::getline(in, line)) {
    std::vector<double> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(std::stod(cell));
    ASSERT_EQ(cells.size(), 11u) << line;
    EXPECT_EQ(cells[0], blocks++);
    for (size_t k = 3; k < cells.size(); ++k) EXPECT_GT(cells[k], cells[k - 1]) << line;
    last = std::max(last, cells.back());
  }
  EXPECT_EQ(blocks, 4);
  // "time (whole chip) C cycles = ..." at the preset's 1.83 GHz, C including chip.kernel_launch_cycles
  // (3,700).
  const auto at = r.out.find("time (whole chip) ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double cycles = std::stod(r.out.substr(at + 18));
  EXPECT_NEAR(last, (cycles - 3700) / 1.83, 1.0);
}

}  // namespace
}  // namespace attnsim
