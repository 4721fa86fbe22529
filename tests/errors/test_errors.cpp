// The CLI's error contract (sim/cli/main.cpp): an input error prints one line `file:line:col: error: ...`
// (or the YAML key path / the `-p key=value` it came from) on stderr, nothing on stdout, writes no output
// file and exits 2; a failed value check exits 1. Each test runs the real binary on scratch inputs it writes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/run_cli.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

const std::string kToy3 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-3reg.yaml";

using Outcome = attnsim::testing::CliOutcome;
using attnsim::testing::read_whole_file;

// Per-test scratch directory. Inputs go in work/, captured output in cap/, so "no file was written" is
// simply "work/ holds only what the test put there".
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("attnsim-errors-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(work());
    fs::create_directories(root_ / "cap");
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(root_, ignored);  // keep the evidence when something failed
  }

  fs::path work() const { return root_ / "work"; }
  std::string stats_path() const { return (work() / "stats.json").string(); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = work() / name;
    std::ofstream(path, std::ios::binary) << text;
    inputs_.insert(name);
    return path.string();
  }

  Outcome run(const std::vector<std::string>& args) { return attnsim::testing::run_cli(args, root_ / "cap"); }

  // `attnsim run -c CONFIG TRACE --stats-json work/stats.json [extra...]`
  Outcome run_trace(const std::string& config, const std::string& trace,
                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", "-c", config, trace, "--stats-json", stats_path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }

  // The whole input-error contract: status 2, one stderr line starting with `prefix` and containing every
  // piece, empty stdout, and nothing new in work/ (no stats.json, no stats.json.tmpNNN).
  void expect_input_error(const Outcome& o, const std::string& prefix,
                          const std::vector<std::string>& pieces) {
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(o.err.rfind(prefix, 0), 0u) << "stderr: " << o.err << "\nwanted prefix: " << prefix;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "expected one line: " << o.err;
    for (const auto& piece : pieces)
      EXPECT_NE(o.err.find(piece), std::string::npos) << "missing '" << piece << "' in: " << o.err;
    EXPECT_EQ(o.out, "");
    std::set<std::string> present;
    for (const auto& entry : fs::directory_iterator(work())) present.insert(entry.path().filename().string());
    EXPECT_EQ(present, inputs_) << "an output file was (partly) written";
  }

  static std::string at(const std::string& file, int line, int col) {
    return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: ";
  }

  fs::path root_;
  std::set<std::string> inputs_;
};

// A valid trace for the config tests: two words through one register.
const char* kGoodTrace = ".tensor a[2] = {1, 2}\nLOAD a[0], R0\nSTORE R0, a[1]\n";

// ---- positive controls: the same harness sees success, output and the stats file ----

TEST_F(Cli, ValidRunWritesStatsAndExitsZero) {
  std::string trace = write("ok.trace", kGoodTrace);
  Outcome o = run_trace(kToy3, trace);
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("cycles"), std::string::npos);
  EXPECT_TRUE(fs::exists(stats_path()));
}

TEST_F(Cli, HelpExitsZeroForEveryCommand) {
  for (std::string cmd : {"run", "gen", "disasm", "config"}) {
    SCOPED_TRACE(cmd);
    Outcome o = run({cmd, "--help"});
    EXPECT_EQ(o.status, 0);
    EXPECT_EQ(o.out.rfind("usage: attnsim " + cmd, 0), 0u) << o.out;
    EXPECT_EQ(o.err, "");
  }
}

// ---- trace errors: file:line:col of the offending token ----

TEST_F(Cli, UnknownOpcode) {
  std::string trace = write("op.trace", "# comment line still counts\n.tensor a[2]\n  FOO a[0], R0\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 3), {"unknown opcode 'FOO'"});
}

// Instruction groups are for tile programs; the scalar machine's one stream refuses them at the line.
TEST_F(Cli, GroupInAScalarTrace) {
  std::string trace =
      write("group.trace", ".tensor a[2] = {1, 2}\nLOAD a[0], R0\n.group 1\nSTORE R0, a[1]\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 4, 1), {".group is for tile programs"});
}

TEST_F(Cli, WrongOperandCount) {
  std::string trace = write("count.trace", ".tensor a[2]\nLOAD a[0], R0\n    MOV R0, R1, R2\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 5), {"MOV", "takes 2 operands", "3 given"});
}

TEST_F(Cli, RegisterWhereMemoryExpected) {
  std::string trace = write("kind.trace", ".tensor a[2]\nLOAD R0, R1\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 2, 6), {"LOAD", "operand 1", "memory reference"});
}

TEST_F(Cli, MemoryWhereRegisterExpected) {
  std::string trace = write("kind.trace", ".tensor a[2]\nLOAD a[0], R0\nSTORE a[0], a[1]\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 7), {"STORE", "operand 1", "register"});
}

TEST_F(Cli, RegisterBeyondMachineCount) {
  // toy-3reg.yaml has regfile.count: 3, so the message must say 3.
  std::string trace = write("r5.trace", ".tensor a[2]\nLOAD a[0], R0\nLOAD a[1], R5\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 12), {"R5", "3 registers"});
}

TEST_F(Cli, RegisterCountFollowsOverride) {
  std::string trace = write("r5.trace", ".tensor a[2]\nLOAD a[0], R0\nLOAD a[1], R5\n");
  expect_input_error(run_trace(kToy3, trace, {"-p", "regfile.count=4"}), at(trace, 3, 12),
                     {"R5", "4 registers"});
  // With six registers R5 exists: the same trace runs.
  Outcome ok = run({"run", "-c", kToy3, trace, "-p", "regfile.count=6"});
  EXPECT_EQ(ok.status, 0) << ok.err;
}

TEST_F(Cli, TensorIndexOutOfRange) {
  std::string trace = write("idx.trace", ".tensor a[2][3]\nLOAD a[1][3], R0\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 2, 11), {"index 3", "out of range", "'a'", "size 3"});
}

TEST_F(Cli, TensorIndexOutOfRangeCommaForm) {
  std::string trace = write("idx.trace", ".tensor a[2][3]\nLOAD a[0, 0], R0\nLOAD a[2, 0], R1\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 8), {"index 2", "out of range", "size 2"});
}

TEST_F(Cli, UndeclaredTensorInInstruction) {
  std::string trace = write("und.trace", ".tensor a[2]\nLOAD b[0], R0\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 2, 6), {"undeclared tensor 'b'"});
}

TEST_F(Cli, UndeclaredTensorInCheck) {
  std::string trace = write("und.trace", ".tensor out[2]\n.check out = softmax(x)\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 2, 22), {"undeclared tensor 'x'"});
}

TEST_F(Cli, BlockIndexOutsideTheGrid) {
  std::string trace =
      write("grid.trace", ".tensor a[2]\n.kernel k grid(2)\n.block k(0)\nLOAD a[0], R0\n.block k(2)\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 5, 10),
                     {"block index 2 out of range", "kernel 'k'", "grid 2x1x1"});
}

TEST_F(Cli, KernelMissingBlocks) {
  std::string trace = write("grid.trace", ".tensor a[2]\n.kernel k grid(2)\n.block k(1)\nLOAD a[0], R0\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 2, 9),
                     {"kernel 'k' is missing 1 of its 2 blocks", "k(0, 0, 0)"});
}

TEST_F(Cli, ProbeNeedsAWholeChipConfig) {
  expect_input_error(run({"probe", "-c", kToy3, "--mode", "single", "--mib", "1"}),
                     kToy3 + ": error: ", {"probe needs a whole-chip config"});
}

TEST_F(Cli, ProbeRejectsAnUnknownModeAndAnEmptyBuffer) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  expect_input_error(
      run({"probe", "-c", h100, "--mode", "sharde"}), "attnsim probe: error: ",
      {"--mode must be single, shared, rfence, rfenceother, rfenceasync, rfenceweak, rfenceotherasync, "
       "rfenceotherweak, spread, private, wprivate, wsingle, rmw, "
       "rmwspread, rmwhalf, rmwlock, rmwfence, wthenread, rthenread, scatter, retouch, heads, "
       "copies, stale, wbetween or rbetween"});
  expect_input_error(run({"probe", "-c", h100, "--mib", "0"}), "attnsim probe: error: ", {"--mib"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "rmwhalf", "--groups", "5"}),
                     "attnsim probe: error: ", {"rmwhalf's groups must divide its blocks"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "single", "--mib", "1", "--in-flight", "9"}),
                     "attnsim probe: error: ", {"in_flight must be 1..8"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "heads", "--in-flight", "2"}),
                     "attnsim probe: error: ", {"in_flight applies to single, shared, spread, private"});
}

// attnsim probe --measured: a probe file's every row against the model; a row the model's probe cannot run
// is refused before any runs, naming the file's line.
TEST_F(Cli, MeasuredProbeFileRejectsWhatCannotBeRun) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string header = "mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes\n";
  const std::string no_writes = write("no_writes.csv", "mode,bytes,passes,blocks,dram_read_bytes\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", no_writes}), at(no_writes, 1, 1),
                     {"missing column 'dram_write_bytes'"});
  const std::string pair =
      write("pair.csv", header + "spread,8388608,1,132,8400128,0\npair:128:0,20971520,3,2,1,0\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", pair}), at(pair, 3, 1),
                     {"column mode: 'pair' is not a probe attnsim probe runs"});
  const std::string heads = write("heads.csv", header + "heads,8388608,1,1,8400128,0\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", heads}), at(heads, 2, 1),
                     {"heads needs its second shape, heads:COUNT:SPAN"});
  const std::string groups =
      write("groups.csv",
            "mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,groups\n"
            "rmwhalf,16777216,1,132,16843776,1223936,1\nrmwhalf,16777216,1,132,16843776,0,5\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", groups}), at(groups, 3, 1),
                     {"column groups: 5 groups do not divide the row's 132 blocks"});
  const std::string blocks = write("blocks.csv", header + "spread,8388608,1,0,8400128,0\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", blocks}), at(blocks, 2, 1),
                     {"column blocks: must be a whole number from 1 to 10^9"});
  const std::string green = write("green.csv",
                                  "mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,sms\n"
                                  "shared,4194304,3,16,4244224,0,16\n");
  expect_input_error(run({"probe", "-c", h100, "--measured", green}), at(green, 2, 1),
                     {"ran on 16 SMs", "-p chip.cores=16"});
  expect_input_error(run({"probe", "-c", h100, "--measured", blocks, "--bracket-mib", "8"}),
                     "attnsim probe: error: ", {"--measured takes no --bracket-mib or --samples"});
}

// Each row simulated as `--mode` would run it, predicted against measured: a buffer that fits, read out of
// step by every SM, costs its footprint on both (h100_l2_probe_rmwcap.csv's 12 MiB row: 12.66 MB).
TEST_F(Cli, MeasuredProbeFilePrintsEachRowAgainstTheModel) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string rows = write("rows.csv",
                                 "mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,l2_read_sectors,"
                                 "lts_tex_hit_sectors,lts_tex_miss_sectors,lts_fabric_sectors\n"
                                 "spread,12582912,1,132,12656384,256,50951200,50350092,589824,424864\n");
  const Outcome o = run({"probe", "-c", h100, "--measured", rows});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("spread 12 MiB x1 132b"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("12.7  0.994"), std::string::npos) << o.out;  // 12,582,912 over 12,656,384 bytes
}

TEST_F(Cli, HotBufferOptionsRejectWhatCannotBeRead) {
  const std::string h200 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h200.yaml";
  const std::string rows =
      std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h200_memeff_sms_onewave_cases.csv";
  expect_input_error(run({"validate", "-c", h200, rows, "--hot-mib", "0.01"}),
                     "attnsim validate: error: ", {"--hot-mib must be a multiple of 1/64 from 0 to 2^20"});
  expect_input_error(run({"probe", "-c", h200, "--mode", "private", "--mib", "8", "--bracket-mib", "1"}),
                     "attnsim probe: error: ", {"hot part: at least one chunk", "per block"});
  expect_input_error(run({"probe", "-c", h200, "--bracket-mib", "8", "--bracket-blocks", "500"}),
                     "attnsim probe: error: ", {"--bracket-blocks must be 0 to 132 (the cores)"});
  expect_input_error(run({"probe", "-c", h200, "--bracket-mib", "8", "--bracket-reread", "middle"}),
                     "attnsim probe: error: ", {"--bracket-reread must be all, first or second"});
  for (const char* cores : {"66", "70-60", "0-132", "a-b"})
    expect_input_error(run({"probe", "-c", h200, "--bracket-mib", "8", "--bracket-cores", cores}),
                       "attnsim probe: error: ", {"--bracket-cores must be LO-HI with 0 <= LO <= HI < 132"});
  expect_input_error(run({"probe", "-c", h200, "--bracket-cores", "0-65"}),
                     "attnsim probe: error: ", {"--bracket-cores needs --bracket-mib"});
}

TEST_F(Cli, PlacementsRejectWhatCannotBeRun) {
  const std::string h200 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h200.yaml";
  const std::string rows =
      std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h200_memeff_sms_onewave_cases.csv";
  expect_input_error(run({"validate", "-c", h200, rows, "--placements", "0"}),
                     "attnsim validate: error: ", {"--placements must be from 1 to 64, not 0"});
  expect_input_error(run({"validate", "-c", h200, rows, "--placements", "2", "--placement-step-mib", "0"}),
                     "attnsim validate: error: ", {"--placement-step-mib must be from 1 to 2^20, not 0"});
  const std::string one_core = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  expect_input_error(run({"validate", "-c", one_core, rows, "--placements", "2"}),
                     one_core + ": error: ", {"--placements moves the tensors under a whole chip's L2"});
}

TEST_F(Cli, GpuMedianNeedsTwoFiles) {
  const std::string h200 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h200.yaml";
  const std::string rows = std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h200_sdpa_onepass_pad0.csv";
  expect_input_error(run({"validate", "-c", h200, rows, "--gpu-median"}), "attnsim validate: error: ",
                     {"--gpu-median takes the median over two or more DATA files"});
}

TEST_F(Cli, ProbeSamplesOnlyWhereBlocksStreamTheirData) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string out = (work() / "samples.csv").string();
  expect_input_error(run({"probe", "-c", h100, "--mode", "heads", "--samples", out}),
                     "attnsim probe: error: ", {"--samples takes --mode single, shared, spread or private"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "spread", "--mib", "1", "--samples", out,
                          "--samples-per-pass", "65"}),
                     "attnsim probe: error: ", {"--samples-per-pass must be 1 to 64"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "spread", "--samples", out, "--bracket-mib", "8"}),
                     "attnsim probe: error: ", {"--samples and --bracket-mib do not go together"});
}

TEST_F(Cli, ProbeRejectsHeadsAndCopiesThatDoNotFit) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  expect_input_error(run({"probe", "-c", h100, "--mode", "heads", "--mib", "400", "--heads", "2"}),
                     "attnsim probe: error: ", {"heads needs 1 to head_bytes / 16 KiB chunks"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "heads", "--heads", "0"}),
                     "attnsim probe: error: ", {"heads must be 1..4096"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "copies", "--mib", "4", "--stride-mib", "1"}),
                     "attnsim probe: error: ", {"copies needs 16 KiB <= bytes <= stride"});
  expect_input_error(run({"probe", "-c", h100, "--mode", "heads", "--head-mib", "0"}),
                     "attnsim probe: error: ", {"--head-mib"});
}

TEST_F(Cli, DisasmReportsTheSameLocation) {
  std::string trace = write("op.trace", ".tensor a[2]\n\nLOAD a[0], R0, R1\n");
  expect_input_error(run({"disasm", trace}), at(trace, 3, 1), {"LOAD", "takes 2 operands", "3 given"});
}

// ---- config errors: the YAML position and key path, or the -p override ----

TEST_F(Cli, UnknownYamlKeyInFile) {
  std::string config = write("bad.yaml", "name: t\nregfile:\n  count: 3\n  cout: 4\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 4, 3), {"regfile.cout", "unknown key", "count"});
}

TEST_F(Cli, UnknownTopLevelYamlKey) {
  std::string config = write("bad.yaml", "name: t\ndtype: f32\nclok_ghz: 2\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 3, 1), {"clok_ghz", "unknown key", "clock_ghz"});
}

TEST_F(Cli, UnknownKeyViaOverride) {
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(kToy3, trace, {"-p", "regfile.cout=4"}),
                     "-p regfile.cout=4: error: ", {"regfile.cout", "unknown key"});
}

TEST_F(Cli, BadYamlValueNotAnInteger) {
  std::string config = write("bad.yaml", "name: t\nregfile:\n  count: three\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 3, 10), {"regfile.count", "integer", "'three'"});
}

TEST_F(Cli, BadYamlValueBelowMinimum) {
  std::string config = write("bad.yaml", "name: t\nregfile:\n  count: 0\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 3, 10), {"regfile.count", "at least 1"});
}

TEST_F(Cli, BadYamlValueNotAChoice) {
  std::string config = write("bad.yaml", "name: t\nsequencer:\n  issue:   sometimes\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 3, 12),
                     {"sequencer.issue", "'sometimes'", "blocking", "pipelined"});
}

TEST_F(Cli, BadValueViaOverride) {
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(kToy3, trace, {"-p", "regfile.count=three"}),
                     "-p regfile.count=three: error: ", {"regfile.count", "integer", "'three'"});
  expect_input_error(run_trace(kToy3, trace, {"-p", "sequencer.issue=sometimes"}),
                     "-p sequencer.issue=sometimes: error: ", {"sequencer.issue", "'sometimes'"});
}

TEST_F(Cli, ConfigCommandReportsOverrideToo) {
  expect_input_error(run({"config", "-c", kToy3, "-p", "regfile.cout=4"}),
                     "-p regfile.cout=4: error: ", {"regfile.cout", "unknown key"});
}

// l2.home_bits and l2.partner_bits name address bits; a partner must be homed in the other partition.
TEST_F(Cli, AddressBitsRejectWhatCannotPairALine) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  auto config_with = [&](const std::string& p) {
    return run(
        {"config", "-c", h100, "-p", "l2.home=address_parity", "-p", "l2.set_index=paired_regions", "-p", p});
  };
  expect_input_error(config_with("l2.home_bits=12 x"),
                     "-p l2.home_bits=12 x: error: ", {"l2.home_bits", "'x' is not an address bit"});
  expect_input_error(config_with("l2.home_bits=12 12"),
                     "-p l2.home_bits=12 12: error: ", {"address bit 12 named twice"});
  expect_input_error(config_with("l2.partner_bits=10 15"),
                     "-p l2.partner_bits=10 15: error: ", {"partner_bits", "odd number", "other partition"});
  expect_input_error(config_with("l2.partner_bits=5 13"),
                     "-p l2.partner_bits=5 13: error: ", {"partner_bits", "above its 128 bytes"});
}

// ---- missing files: the path as given, no line ----

TEST_F(Cli, MissingTraceFile) {
  std::string trace = (work() / "no-such.trace").string();
  expect_input_error(run_trace(kToy3, trace), trace + ": error: ", {"cannot open", "trace"});
}

TEST_F(Cli, MissingConfigFile) {
  std::string trace = write("ok.trace", kGoodTrace);
  std::string config = (work() / "no-such.yaml").string();
  expect_input_error(run_trace(config, trace), config + ": error: ", {"cannot open", "config"});
}

// ---- runtime: reading a register nothing wrote ----

TEST_F(Cli, UninitializedRegisterRead) {
  std::string trace = write("uninit.trace", ".tensor a[2]\nLOAD a[0], R0\nADD R0, R1, R2\nSTORE R2, a[1]\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 9),
                     {"R1", "before anything was written", "allow_uninitialized_read"});
}

TEST_F(Cli, UninitializedReadAllowedByOverride) {
  std::string trace = write("uninit.trace", ".tensor a[2]\nLOAD a[0], R0\nADD R0, R1, R2\nSTORE R2, a[1]\n");
  Outcome o = run_trace(kToy3, trace, {"-p", "regfile.allow_uninitialized_read=true"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("instructions      3"), std::string::npos) << o.out;
}

// ---- value checks: a wrong answer is not an input error ----

const char* kMatmulHeader =
    ".tensor a[2][2] = {1, 2, 3, 4}\n.tensor b[2][2] = {5, 6, 7, 8}\n.tensor c[2][2]\n.check c = matmul(a, "
    "b)\n";

TEST_F(Cli, FailingCheckExitsOneAndSaysFail) {
  // Only c00 is written, and with a00 alone: every element of c is wrong.
  std::string trace =
      write("wrong.trace", std::string(kMatmulHeader) + "LOAD a[0][0], R0\nSTORE R0, c[0][0]\n");
  Outcome o = run_trace(kToy3, trace);
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.out.find("FAIL"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("matmul"), std::string::npos) << o.out;
}

TEST_F(Cli, PassingCheckExitsZeroAndSaysOk) {
  // c = a x b by the seed's inner products: c[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j].
  std::string body;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      body += fmt::format("LOAD a[{0}][0], R0\nLOAD b[0][{1}], R1\nMAC_Z R0, R1, R2\n", i, j);
      body += fmt::format("LOAD a[{0}][1], R0\nLOAD b[1][{1}], R1\nMAC R0, R1, R2, R2\n", i, j);
      body += fmt::format("STORE R2, c[{}][{}]\n", i, j);
    }
  std::string trace = write("right.trace", std::string(kMatmulHeader) + body);
  Outcome o = run_trace(kToy3, trace);
  EXPECT_EQ(o.status, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("OK"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("FAIL"), std::string::npos) << o.out;
}

// ---- issue 11: input classes an outside campaign found accepted or ending in an internal error ----

// yaml-cpp keeps both entries of a key given twice and `node[key]` finds the first, so the second used to be
// ignored with exit 0. Now it is an error at the second key, naming the first's line, at any depth.
TEST_F(Cli, KeyGivenTwiceInAConfigIsAnErrorAtTheSecond) {
  const std::string trace = write("t.trace", kGoodTrace);
  const std::string text = read_whole_file(kToy3) + "dtype: f16\n";
  const std::string top = write("top.yaml", text);
  const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  expect_input_error(run_trace(top, trace), at(top, line, 1),
                     {"key 'dtype' is given twice", "first at line 5"});
  const std::string nested =
      write("nested.yaml", "name: n\ndram:\n  type: word\n  load_latency: 1\n  load_latency: 9\n");
  expect_input_error(run_trace(nested, trace), at(nested, 5, 3),
                     {"key 'load_latency' is given twice", "first at line 4"});
}

// A directory where a file is expected used to end in "internal error: basic_filebuf::underflow" (exit 3).
TEST_F(Cli, DirectoryWhereAnInputFileIsExpectedIsAnInputError) {
  const std::string trace = write("t.trace", kGoodTrace);
  const std::string dir = (work() / "adir").string();
  fs::create_directories(dir);
  inputs_.insert("adir");
  expect_input_error(run_trace(dir, trace), dir + ": error: ", {"config file is not a regular file"});
  expect_input_error(run({"validate", "-c", kToy3, dir}),
                     dir + ": error: ", {"measurements file is not a regular file"});
  expect_input_error(run({"plot", dir, "-o", (work() / "p.svg").string()}),
                     dir + ": error: ", {"CSV file is not a regular file"});
}

// A file name is bytes; one that is not UTF-8 used to fail in the JSON writer after the run (exit 3).
TEST_F(Cli, TraceNameThatIsNotUtf8StillGivesValidJson) {
  const std::string trace = write("bad\xff.trace", kGoodTrace);
  const Outcome o = run_trace(kToy3, trace);
  ASSERT_EQ(o.status, 0) << o.err;
  const auto stats = nlohmann::json::parse(read_whole_file(stats_path()));
  EXPECT_NE(stats["trace"].get<std::string>().find("bad\xef\xbf\xbd.trace"), std::string::npos)
      << "the bad byte is written as U+FFFD";
}

TEST_F(Cli, GenRefusesRandomInputsItCannotDraw) {
  expect_input_error(run({"gen", "softmax-safe", "--lo", "5", "--hi", "1"}),
                     "attnsim gen: error: ", {"--lo (5) must be below --hi (1)"});
  expect_input_error(run({"gen", "softmax-safe", "--lo", "2", "--hi", "2"}),
                     "attnsim gen: error: ", {"--lo"});
  expect_input_error(run({"gen", "softmax-safe", "--hi", "inf"}), "attnsim gen: error: ", {"both finite"});
  expect_input_error(run({"gen", "softmax-safe", "--seed", "-1"}),
                     "attnsim gen: error: ", {"--seed must be 0 or more, not -1"});
  expect_input_error(run({"gen", "flash2", "--qk-range", "0"}), "attnsim gen: error: ", {"--qk-range"});
  EXPECT_EQ(run({"gen", "softmax-safe", "--seed", "0", "--lo", "-1", "--hi", "1"}).status, 0);
}

// gen never writes a trace run would refuse. A shape far beyond the limit is refused at once (it used to
// generate for minutes and end in std::bad_alloc, exit 3), one just beyond it when the generator reaches it.
TEST_F(Cli, GenRefusesATraceLongerThanRunReads) {
  expect_input_error(run({"gen", "flash2", "--n", "100000000", "--heads", "1000"}), "attnsim gen: error: ",
                     {"at least 3.66e+16 instructions", "33554432", "--max-instructions N"});
  expect_input_error(run({"gen", "flash2", "--n", "9223372036854775807"}),
                     "attnsim gen: error: ", {"at most 2^48"});
  expect_input_error(run({"gen", "softmax-safe", "--n", "100000000000"}),
                     "attnsim gen: error: ", {"softmax-safe would have at least 1.1e+12 instructions"});
  // softmax-safe at n = 10 is 109 instructions: a limit of 108 refuses it before generating, 109 writes it,
  // and run reads it with a limit of 109 and refuses it at its 109th instruction with 108.
  expect_input_error(run({"gen", "softmax-safe", "--n", "10", "--max-instructions", "108"}),
                     "attnsim gen: error: ", {"at least 109 instructions, more than the 108"});
  const std::string trace = (work() / "s.trace").string();
  ASSERT_EQ(run({"gen", "softmax-safe", "--n", "10", "--max-instructions", "109", "-o", trace}).status, 0);
  inputs_.insert("s.trace");
  EXPECT_EQ(run_trace(kToy3, trace, {"--max-instructions", "109"}).status, 0);
  fs::remove(stats_path());
  const std::string text = read_whole_file(trace);
  const int last_line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  expect_input_error(run_trace(kToy3, trace, {"--max-instructions", "108"}), at(trace, last_line, 1),
                     {"more than 108 instructions", "--max-instructions N"});
  // flash2 at n = 191 is bounded by its count at n = 128 (52 instructions, the last multiple of the block)
  // but emits 123: the generator stops at the limit.
  expect_input_error(run({"gen", "flash2", "--n", "191", "--max-instructions", "100"}),
                     "attnsim gen: error: ", {"flash2: the program would have more than 100 instructions"});
}

TEST_F(Cli, RecordingLimitsAreBoundedAndNamedWhenReached) {
  const std::string trace = write("t.trace", kGoodTrace);
  for (const char* option : {"--timeline-limit", "--vcd-limit", "--html-limit", "--max-instructions"})
    expect_input_error(run_trace(kToy3, trace, {option, "0"}),
                       "attnsim run: error: ", {std::string(option) + " must be from 1 to"});
  const std::string timeline = (work() / "t.json").string();
  const Outcome o = run_trace(kToy3, trace, {"--timeline", timeline, "--timeline-limit", "1"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("--timeline stopped after 1 instructions (1 more not shown; --timeline-limit N"),
            std::string::npos)
      << o.out;
}

// Property (item 3): a scalar run's cycle count does not depend on the clock, whose only role is to turn
// cycles into seconds, and under blocking issue it is the sum of the instructions' latencies, so scaling
// every latency by k scales it by exactly k, up to 10^10 cycles at a 1 us period (10^16 ps: the integer
// conversion to SystemC time must neither round nor wrap there).
TEST_F(Cli, CyclesIgnoreTheClockAndScaleExactlyWithEveryLatency) {
  // Unequal per-opcode latencies, so a count that mixed them up would not scale by chance.
  const std::vector<std::pair<std::string, int64_t>> latencies = {
      {"dram.load_latency", 3}, {"dram.store_latency", 2}, {"mac.latency", 5},     {"alu.max_latency", 1},
      {"alu.sub_latency", 2},   {"alu.exp_latency", 11},   {"alu.add_latency", 1}, {"alu.mul_latency", 4},
      {"alu.div_latency", 13},  {"alu.mov_latency", 1}};
  auto cycles = [&](const std::string& trace, int64_t scale, double clock_ghz, const char* issue) {
    std::vector<std::string> o = {"-p", "regfile.count=6",
                                  "-p", fmt::format("clock_ghz={}", clock_ghz),
                                  "-p", fmt::format("sequencer.issue={}", issue)};
    for (const auto& [key, latency] : latencies) {
      o.push_back("-p");
      o.push_back(fmt::format("{}={}", key, latency * scale));
    }
    const Outcome outcome = run_trace(kToy3, trace, o);
    EXPECT_EQ(outcome.status, 0) << outcome.err;
    return nlohmann::json::parse(read_whole_file(stats_path()))["stats"]["sequencer"]["cycles"]["value"]
        .get<uint64_t>();
  };
  for (const char* kind : {"softmax-safe", "softmax-online", "online-attention"}) {
    const std::string trace = (work() / (std::string(kind) + ".trace")).string();
    ASSERT_EQ(run({"gen", kind, "--n", "29", "-o", trace}).status, 0);
    for (const char* issue : {"blocking", "pipelined"}) {
      const uint64_t base = cycles(trace, 1, 1.0, issue);
      ASSERT_GT(base, 100u);
      for (double clock_ghz : {1e-6, 0.001, 0.37, 1.7, 1000.0})
        EXPECT_EQ(cycles(trace, 1, clock_ghz, issue), base) << kind << " " << issue << " at " << clock_ghz;
      if (std::string(issue) != "blocking") continue;  // pipelined issue keeps one issue slot per cycle
      for (int64_t scale : {int64_t{2}, int64_t{1000}, int64_t{1} << 22})
        for (double clock_ghz : {0.001, 1.0})
          EXPECT_EQ(cycles(trace, scale, clock_ghz, issue), base * static_cast<uint64_t>(scale))
              << kind << " latencies x" << scale << " at " << clock_ghz << " GHz";
    }
  }
}

// Immediates and options without a bound reached overflow downstream (MASK's `col0 + j > row0 + i`) or
// ran without end (plan at any N).
TEST_F(Cli, BoundsOfMaskPositionsAndPlanShapes) {
  const std::string sm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  const std::string trace =
      write("m.trace",
            ".buffer S[4][4] f32\nMASK S, 281474976710656, -281474976710656\nMASK S, 0, "
            "9223372036854775807\n");
  expect_input_error(run_trace(sm, trace), at(trace, 3, 12), {"MASK operand 3 is a row or column position"});
  expect_input_error(run({"plan", "-c", sm, "--N", "9223372036854775807"}),
                     "attnsim plan: error: ", {"--N is at most 2^24"});
  expect_input_error(run({"plan", "-c", sm, "--jobs", "-1"}), "attnsim plan: error: ", {"--jobs must be 0"});
  expect_input_error(
      run({"sweep", "-c", sm, "--sweep", "N=64", "--jobs", "-1", "-o", (work() / "sw").string()}),
      "attnsim sweep: error: ", {"--jobs must be 0"});
}

// An error about a combination of L2 parameters names the -p override that set one (it blamed the file).
TEST_F(Cli, AnL2GeometryErrorNamesTheOverride) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string trace = write("t.trace", ".buffer S[4][4] f32\nMASK S, 0, 0\n");
  expect_input_error(
      run_trace(h100, trace, {"-p", "l2.capacity_bytes=1000"}),
      "-p l2.capacity_bytes=1000: error: l2: capacity_bytes (1000) must be a positive multiple", {});
}

// An L2 figure given both in time and in core cycles is refused, naming the override and the way out.
TEST_F(Cli, AnL2RateInTimeAndInCyclesIsRefused) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string trace = write("t.trace", ".buffer S[4][4] f32\nMASK S, 0, 0\n");
  expect_input_error(
      run_trace(h100, trace, {"-p", "l2.hit_latency_ns=100"}),
      "-p l2.hit_latency_ns=100: error: l2: give hit_latency_ns (in time) or hit_latency_cycles",
      {"hit_latency_ns=0 lets hit_latency_cycles count"});
}

// chip.share_units and chip.older_preempts are two ways of serving a unit: both at once is refused.
TEST_F(Cli, SharingAndPreemptingAUnitAreRefusedTogether) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string trace = write("t.trace", ".buffer S[4][4] f32\nMASK S, 0, 0\n");
  expect_input_error(
      run_trace(h100, trace, {"-p", "chip.share_units=true", "-p", "chip.older_preempts=true"}),
      "-p chip.share_units=true: error: chip.share_units: ", {"choose one"});
}

// l2.core_partitions names one partition per core: a digit past the partitions, or fewer or more digits
// than chip.cores, is refused with the key.
TEST_F(Cli, CorePartitionsMustNameEveryCoresPartition) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::string trace = write("t.trace", ".buffer S[4][4] f32\nMASK S, 0, 0\n");
  expect_input_error(run_trace(h100, trace, {"-p", "l2.core_partitions=0121"}),
                     "-p l2.core_partitions=0121: error: l2: core_partitions: '2' is not a partition", {});
  expect_input_error(run_trace(h100, trace, {"-p", "l2.core_partitions=0101"}),
                     h100 + ": error: ", {"l2.core_partitions: 4 cores named, chip.cores is 132"});
}

// A sweep spec's errors point at its line and column, those of the command line's own checks included.
TEST_F(Cli, SweepSpecErrorsAreAtTheirLine) {
  const std::string sm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  const std::string out = (work() / "sw").string();
  auto spec_error = [&](const std::string& name, const std::string& text, int line, int col,
                        const std::string& piece) {
    const std::string spec = write(name, text);
    expect_input_error(run({"sweep", "-c", sm, "--spec", spec, "-o", out}), at(spec, line, col), {piece});
  };
  spec_error("twice.yaml", "sweep:\n  N: [64]\nsweep:\n  d: [64]\n", 3, 1, "key 'sweep' is given twice");
  spec_error("jobs.yaml", "sweep:\n  N: [64]\njobs: -2\n", 3, 7, "jobs: must be 0");
  spec_error("notmap.yaml", "sweep: 5\n", 1, 8, "sweep: expected a map");
  spec_error("nested.yaml", "sweep:\n  N: [[1]]\n", 2, 7, "sweep.N: list items must be values");
  spec_error("key.yaml", "sweep:\n  nosuch: [1]\n", 2, 3, "unknown key 'nosuch'");
  spec_error("top.yaml", "sweep:\n  N: [64]\nsweeps: 1\n", 3, 1, "unknown key 'sweeps'");
  spec_error("config.yaml", "config: [a]\nsweep:\n  N: [64]\n", 1, 9, "config: expected a single value");
}

// A long scalar trace streams: it is assembled in chunks of 65,536 instructions while it runs, so memory
// does not grow with its length. --stream-bytes 1 streams any trace; everything a run reports must be the
// same as from the trace in memory.
TEST_F(Cli, StreamedScalarRunEqualsTheInMemoryRun) {
  const std::string toy6 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-6reg.yaml";
  const std::string generated = (work() / "so.trace").string();
  ASSERT_EQ(run({"gen", "softmax-online", "--n", "20000", "-o", generated}).status, 0);  // 5 chunks
  inputs_.insert("so.trace");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kToy3, std::string(ATTNSIM_SOURCE_DIR) + "/labs/01-c00/c00.trace"},
      {toy6, std::string(ATTNSIM_SOURCE_DIR) + "/labs/03-matmul-outer/matmul_outer.trace"},
      {toy6, generated}};
  for (const auto& [config, trace] : cases)
    for (const char* issue : {"blocking", "pipelined"}) {
      auto stats = [&](const std::vector<std::string>& extra) {
        std::vector<std::string> args = {"-p", std::string("sequencer.issue=") + issue};
        args.insert(args.end(), extra.begin(), extra.end());
        const Outcome o = run_trace(config, trace, args);
        EXPECT_EQ(o.status, 0) << o.err;
        auto json = nlohmann::json::parse(read_whole_file(stats_path()));
        json.erase("host_seconds");
        return std::make_pair(o.out, json);
      };
      const auto in_memory = stats({});
      const auto streamed = stats({"--stream-bytes", "1"});
      EXPECT_EQ(streamed.first, in_memory.first) << trace << " " << issue;
      EXPECT_EQ(streamed.second, in_memory.second) << trace << " " << issue;
      EXPECT_GT(in_memory.second["stats"]["sequencer"]["instructions"]["value"].get<uint64_t>(), 0u);
    }
}

// A streamed trace's errors are still at their line: in a later chunk, and for what cannot stream.
TEST_F(Cli, StreamedTraceErrorsAreAtTheirLine) {
  std::string text = ".tensor x[4] = {1, 2, 3, 4}\nLOAD x[0], R0\n";
  for (int i = 0; i < 70000; ++i) text += "ADD R0, R0, R0\n";  // past the first chunk
  const int tail = 2 + 70000;
  const std::string late = write("late.trace", text + ".tensor y[2]\n");
  expect_input_error(
      run_trace(kToy3, late, {"--stream-bytes", "1"}), at(late, tail + 1, 1),
      {".tensor after the first 65536 instructions", "declares its tensors and checks before"});
  const std::string unset = write("unset.trace", text + "ADD R1, R0, R0\n");
  expect_input_error(run_trace(kToy3, unset, {"--stream-bytes", "1"}), at(unset, tail + 1, 5),
                     {"R1 is read by 'ADD R1, R0, R0' before anything was written to it"});
  const std::string many = write("many.trace", text);
  expect_input_error(run_trace(kToy3, many, {"--stream-bytes", "1", "--max-instructions", "66000"}),
                     at(many, 66002, 1), {"more than 66000 instructions"});  // line 1 is .tensor
}

TEST_F(Cli, LongRunsSayHowFarTheyHaveGot) {
  std::string text = ".tensor x[1] = {1}\nLOAD x[0], R0\n";
  for (int i = 0; i < 140000; ++i) text += "MOV R0, R1\nMOV R1, R0\n";
  const std::string trace = write("long.trace", text);
  // Progress is reported when the sequencer meets the kernel, every quantum: here 65,536 cycles, one a cycle.
  const Outcome on = run_trace(kToy3, trace, {"--progress", "on", "-p", "sequencer.quantum_cycles=65536"});
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_NE(on.err.find(trace + ": 65537 instructions run, cycle 65536 ("), std::string::npos) << on.err;
  fs::remove(stats_path());
  const Outcome off = run_trace(kToy3, trace, {"--progress", "off"});
  EXPECT_EQ(off.err, "");
  fs::remove(stats_path());
  expect_input_error(run_trace(kToy3, trace, {"--progress", "sometimes"}),
                     "attnsim run: error: ", {"--progress must be auto, on or off"});
}

// gen's lower bound on a kind's instruction count must never pass the real count, or gen would refuse a
// trace run accepts: every kind, at shapes that are and are not multiples of the blocks, is written with
// --max-instructions at its exact count and refused one below it.
TEST_F(Cli, GenWritesATraceAtExactlyItsLimit) {
  std::vector<std::vector<std::string>> requests = {{"softmax-safe", "--n", "37"},
                                                    {"softmax-online", "--n", "37"},
                                                    {"online-attention", "--n", "37"},
                                                    {"inner-product", "--n", "7"},
                                                    {"outer-product", "--n", "7", "--slots", "3"}};
  for (const char* kind : {"flash2", "naive-safe", "naive-online", "two-pass", "flash1", "flash2-bwd",
                           "flash2-bwd-no-d", "naive-bwd"})
    for (const char* n : {"96", "191", "256"})
      for (bool causal : {false, true}) {
        std::vector<std::string> r = {kind, "--n", n, "--block-q", "64", "--block-k", "32", "--heads", "2"};
        if (causal) r.push_back("--causal");
        requests.push_back(r);
      }
  for (const auto& request : requests) {
    std::vector<std::string> args = {"gen"};
    args.insert(args.end(), request.begin(), request.end());
    const Outcome full = run(args);
    ASSERT_EQ(full.status, 0) << full.err;
    int64_t count = 0;
    std::istringstream lines(full.out);
    for (std::string line; std::getline(lines, line);)
      count += !line.empty() && line[0] != '.' && line[0] != '#';
    auto at_limit = [&](int64_t limit) {
      std::vector<std::string> limited = args;
      limited.insert(limited.end(), {"--max-instructions", std::to_string(limit)});
      return run(limited);
    };
    EXPECT_EQ(at_limit(count).status, 0) << fmt::format("{}", fmt::join(request, " "));
    const Outcome below = at_limit(count - 1);
    EXPECT_EQ(below.status, 2) << fmt::format("{}", fmt::join(request, " "));
    EXPECT_NE(below.err.find(std::to_string(count - 1)), std::string::npos) << below.err;
  }
}

}  // namespace

// ---- regressions from the code review ----

namespace {

TEST_F(Cli, HelpExitsZeroForTheOtherCommands) {
  for (std::string cmd : {"compare", "validate"}) {
    SCOPED_TRACE(cmd);
    Outcome o = run({cmd, "--help"});
    EXPECT_EQ(o.status, 0);
    EXPECT_EQ(o.out.rfind("usage: attnsim " + cmd, 0), 0u) << o.out;
  }
}

TEST_F(Cli, TensorTooLargeIsAnInputErrorNotACrash) {
  std::string trace = write("huge.trace", ".tensor x[4294967296][4294967296]\nLOAD x[5][5], R0\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 1, 23), {"2^48"});  // the second extent
}

TEST_F(Cli, DirectoryAsTraceIsRejected) {
  fs::create_directories(work() / "dir.trace");
  inputs_.insert("dir.trace");
  std::string trace = (work() / "dir.trace").string();
  expect_input_error(run_trace(kToy3, trace), trace + ": error: ", {"not a regular file"});
}

TEST_F(Cli, TimingOnlyIsRefusedForScalarTraces) {
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(kToy3, trace, {"--timing-only"}),
                     trace + ": error: ", {"--timing-only", "tile"});
}

TEST_F(Cli, EmptyOverrideValueIsAnErrorNotTheDefault) {
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(kToy3, trace, {"-p", "regfile.count="}),
                     "-p regfile.count=: error: ", {"regfile.count", "no value"});
}

// A leading zero is decimal: 010 registers are ten, so R9 exists.
TEST_F(Cli, IntegersAreDecimal) {
  std::string trace = write("r9.trace", ".tensor a[2] = {1, 2}\nLOAD a[0], R9\nSTORE R9, a[1]\n");
  Outcome o = run_trace(kToy3, trace, {"-p", "regfile.count=010"});
  EXPECT_EQ(o.status, 0) << o.err;
}

TEST_F(Cli, LatencyBeyondTheBoundIsRejected) {
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(kToy3, trace, {"-p", "alu.exp_latency=4294967296"}),
                     "-p alu.exp_latency=4294967296: error: ", {"alu.exp_latency", "at most"});
}

TEST_F(Cli, CompareRejectsNegativeBlockAndOversizedShapes) {
  const std::string h100 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  expect_input_error(run({"compare", "-c", h100, "--N", "64", "--block", "-3"}),
                     "attnsim compare: error: ", {"--block"});
  expect_input_error(run({"compare", "-c", h100, "--N", "64", "--heads", "4503599627370496"}),
                     "attnsim compare: error: ", {"--heads"});
}

TEST_F(Cli, BlockTimesNeedAWholeChip) {
  const std::string h100_sm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  expect_input_error(
      run({"compare", "-c", h100_sm, "--N", "64", "--block-times", (work() / "blocks.csv").string()}),
      h100_sm + ": error: ", {"--block-times needs a whole-chip config"});
}

// ---- gen: one list of kinds for --help and for the unknown-kind error ----

TEST_F(Cli, UnknownGenKindListsEveryKindThatHelpShows) {
  Outcome help = run({"gen", "--help"});
  ASSERT_EQ(help.status, 0);
  std::istringstream lines(help.out.substr(help.out.find("kinds:\n") + 7));
  std::vector<std::string> kinds;
  for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0;)
    kinds.push_back(line.substr(2, line.find(' ', 2) - 2));
  for (const char* lab7 : {"inner-product", "outer-product", "softmax-safe", "flash2-bwd"})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), lab7), kinds.end()) << lab7 << " not in --help";
  std::vector<std::string> pieces = {"unknown kind 'inner-produt'", "did you mean 'inner-product'?"};
  for (const auto& kind : kinds) pieces.push_back(" " + kind + (kind == kinds.back() ? ")" : ","));
  expect_input_error(run({"gen", "inner-produt"}), "attnsim gen: error: ", pieces);
}

TEST_F(Cli, GenSlotsAreForTheOuterProductOnly) {
  expect_input_error(run({"gen", "inner-product", "--slots", "2"}),
                     "attnsim gen: error: ", {"--slots is for outer-product"});
  expect_input_error(run({"gen", "outer-product", "--n", "4", "--slots", "5"}),
                     "attnsim gen: error: ", {"--slots must be from 0 to --n (4)"});
}

// ---- errors that teach: did you mean, the system's reason, the first wrong element, --version ----

TEST_F(Cli, TypoInAnOpcodeSuggestsTheOpcode) {
  std::string trace = write("typo.trace", ".tensor a[2]\nLOAD a[0], R0\nMACZ R0, R0, R1\n");
  expect_input_error(run_trace(kToy3, trace), at(trace, 3, 1),
                     {"unknown opcode 'MACZ'; did you mean 'MAC_Z'?"});
}

TEST_F(Cli, TypoInAConfigKeySuggestsTheKey) {
  std::string config = write("bad.yaml", "name: t\ndram:\n  load_latncy: 4\n");
  std::string trace = write("ok.trace", kGoodTrace);
  expect_input_error(run_trace(config, trace), at(config, 3, 3),
                     {"dram.load_latncy", "did you mean 'load_latency'?"});
  expect_input_error(run_trace(kToy3, trace, {"-p", "regfile.cont=4"}),
                     "-p regfile.cont=4: error: ", {"did you mean 'count'?"});
}

TEST_F(Cli, MissingFilesSayWhy) {
  std::string trace = (work() / "no-such.trace").string();
  expect_input_error(run_trace(kToy3, trace),
                     trace + ": error: ", {"cannot open trace file: No such file or directory"});
  std::string good = write("ok.trace", kGoodTrace);
  const std::string stats = (work() / "no-such-dir" / "stats.json").string();
  Outcome o = run({"run", "-c", kToy3, good, "--stats-json", stats});
  EXPECT_EQ(o.status, 2);
  // Checked before the run, so a missing folder costs no simulation time.
  EXPECT_EQ(o.err, stats + ": error: cannot write output file: no folder " +
                       (work() / "no-such-dir").string() + "\n");
}

TEST_F(Cli, FailedCheckNamesTheFirstWrongElement) {
  // c00 = a00*b00 + a01*b10 = 1*5 + 2*7 = 19, but the trace stores a00*b00 = 5 and leaves c01.. at 0.
  std::string trace =
      write("first.trace", std::string(kMatmulHeader) +
                               "LOAD a[0][0], R0\nLOAD b[0][0], R1\nMAC_Z R0, R1, R2\nSTORE R2, c[0][0]\n");
  Outcome o = run_trace(kToy3, trace);
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.out.find("FAIL: first wrong element c[0][0] = 5, expected 19"), std::string::npos) << o.out;
}

TEST_F(Cli, VersionPrintsTheVersion) {
  Outcome o = run({"--version"});
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.out.rfind("attnsim 0.", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("SystemC"), std::string::npos) << o.out;
}

TEST_F(Cli, BadVcdPathLeavesNoStatsFileEither) {
  std::string trace = write("ok.trace", kGoodTrace);
  const std::string vcd = (work() / "no-such-dir" / "run.vcd").string();
  expect_input_error(run_trace(kToy3, trace, {"--vcd", vcd}),
                     vcd + ": error: ", {"cannot write output file: no folder"});
}

// ---- simulated time and unit geometry: bounded, never a wrapped number (issue 11, item 3) ----

const std::string kToyTile = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-tile.yaml";
const std::string kInnerProduct =
    std::string(ATTNSIM_SOURCE_DIR) + "/labs/07-loop-order/inner_product_n8.trace";

// One LOAD, then `exps` EXPs on R0: with blocking issue the run lasts load_latency + exps * exp_latency.
std::string exp_chain(int exps) {
  std::string trace = ".tensor a[1] = {0}\nLOAD a[0], R0\n";
  for (int i = 0; i < exps; ++i) trace += "EXP R0, R0\n";
  return trace;
}

// At 0.001 GHz a cycle is 10^6 ps, so SystemC's last time, 2^64 - 1 ps, is cycle floor((2^64 - 1) / 10^6) =
// 18,446,744,073,709. 20,000 EXPs of 2^30 cycles need 20,000 * 2^30 + 1 = 21,474,836,480,001 cycles, past it;
// this run once printed 18,445,810,794,497 cycles with exit 0.
TEST_F(Cli, ScalarRunPastTheTimeHorizonIsAnError) {
  std::string trace = write("exp.trace", exp_chain(20000));
  expect_input_error(run_trace(kToy3, trace, {"-p", "clock_ghz=0.001", "-p", "alu.exp_latency=1073741824"}),
                     trace + ": error: ", {"time horizon of 18446744073709 cycles", "clock_ghz"});
}

// Just inside the horizon the count is exact: 17,000 * 2^30 + 1 (toy-3reg's LOAD takes one cycle) =
// 18,253,611,008,001 cycles, 1.8254e19 ps < 2^64 - 1 ps.
TEST_F(Cli, ScalarRunJustInsideTheTimeHorizonIsExact) {
  std::string trace = write("exp.trace", exp_chain(17000));
  Outcome o = run_trace(kToy3, trace, {"-p", "clock_ghz=0.001", "-p", "alu.exp_latency=1073741824"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("cycles            18253611008001\n"), std::string::npos) << o.out;
}

// The tile path syncs through the same conversion. At 10^-6 GHz a cycle is 10^9 ps: the horizon is
// floor((2^64 - 1) / 10^9) = 18,446,744,073 cycles, and the trace's 128 EXPs alone take 128 * 2^30 =
// 137,438,953,472 cycles.
TEST_F(Cli, TileRunPastTheTimeHorizonIsAnError) {
  expect_input_error(
      run_trace(kToyTile, kInnerProduct, {"-p", "clock_ghz=0.000001", "-p", "vpu.exp_latency=1073741824"}),
      kInnerProduct + ": error: ", {"time horizon of 18446744073 cycles", "clock_ghz"});
}

// A clock the DRAM model cannot time with, set by -p, is that override's error (issue 11: it named the YAML
// file), and so is a DRAM parameter set by -p that the combination rejects.
TEST_F(Cli, ADramTimingErrorNamesTheOverrideThatCausedIt) {
  const std::string h100_sm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  expect_input_error(run_trace(h100_sm, kInnerProduct, {"-p", "clock_ghz=1.23456789"}),
                     "-p clock_ghz=1.23456789: error: ", {"hbm: HbmTiming", "clock_ghz"});
  expect_input_error(run_trace(h100_sm, kInnerProduct, {"-p", "hbm.interleave_bytes=48"}),
                     "-p hbm.interleave_bytes=48: error: ", {"hbm: HbmTiming", "interleave_bytes"});
}

// An unbounded side overflowed extent + side - 1 in the timing model: issue 11 saw "mxu busy
// 9223372036854775935 cycles", and rows = cols = 2^63 - 1 on this trace printed "busy 0 cycles" (832 is
// right).
TEST_F(Cli, MxuGeometryBeyondItsBoundIsRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mxu.rows=9223372036854775807", "at most 65536"},
      {"mxu.cols=65537", "at most 65536"},
      {"mxu.arrays=4097", "at most 4096"},
  };
  for (const auto& [override_text, bound] : cases) {
    SCOPED_TRACE(override_text);
    expect_input_error(
        run_trace(kToyTile, kInnerProduct, {"-p", "mxu.accounting=array", "-p", override_text}),
        "-p " + override_text + ": error: ", {override_text.substr(0, override_text.find('=')), bound});
  }
}

// At the bound the model still answers, and exactly. An array at least as large as every extent runs each
// weight-stationary matmul as one fold: K cycles to load the weights, then M + K + N - 2 until the last
// output leaves (docs/models/mxu.md). The trace's 64 MAC_Z are 1x4 * 4x1 (4 + 1 + 4 + 1 - 2 = 8 cycles) and
// its 64 MAC are 1x1 * 1x4 (1 + 1 + 1 + 4 - 2 = 5 cycles): 64 * 8 + 64 * 5 = 832 busy cycles at 8x8 and at
// 65536x65536.
TEST_F(Cli, MxuGeometryAtItsBoundIsStillExact) {
  for (const std::string side : {"8", "65536"}) {
    SCOPED_TRACE(side);
    Outcome o = run({"run", "-c", kToyTile, kInnerProduct, "-p", "mxu.accounting=array", "-p",
                     "mxu.dataflow=ws", "-p", "mxu.rows=" + side, "-p", "mxu.cols=" + side});
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("\nmxu               busy 832 cycles,"), std::string::npos) << o.out;
  }
}

}  // namespace

namespace {

// `validate` takes several CSV files: all are read before anything is simulated, so a bad row in the second
// file stops the command at once with that file's name and line, and prints nothing.
TEST_F(Cli, ValidateReadsEveryFileBeforeSimulating) {
  const std::string good = std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h100_tc_bwd.csv";
  std::ifstream in(good);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  std::string broken = row;
  broken.replace(broken.find(",tc,"), 4, ",tx,");
  const std::string bad = write("bad.csv", header + "\n" + row + "\n" + broken + "\n");
  const std::string config = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const Outcome o = run({"validate", "-c", config, good, bad});
  expect_input_error(o, bad + ":3:1: error: ", {"column kernel"});
}

}  // namespace

namespace {

// `validate --csv FILE` writes one line per row (file, line, configuration, predicted and measured bytes and
// time, the clock used) after the table, for plots.
TEST_F(Cli, ValidateCsvHasARowPerMeasurement) {
  std::ifstream in(std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h100_tc_bwd.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::string data = write("one.csv", header + "\n" + row + "\n");
  const std::string out = (work() / "rows.csv").string();
  const Outcome o =
      run({"validate", "-c", std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml", data, "--csv", out});
  ASSERT_EQ(o.status, 0) << o.err;
  std::ifstream written(out);
  std::string first, second, third;
  std::getline(written, first);
  std::getline(written, second);
  EXPECT_FALSE(std::getline(written, third));
  EXPECT_EQ(first.rfind("file,line,label,schedule,kernel,n,d,heads,block_q,block_k,causal,", 0), 0u) << first;
  EXPECT_EQ(second.rfind(data + ",2,flash2-bwd tc,flash2-bwd,tc,1024,64,8,64,64,0,12/2,1,", 0), 0u) << second;
  // The SM clock Nsight Compute measured during the row's kernels (column sm_clock_ghz), not the base clock.
  auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
    return out;
  };
  const std::vector<std::string> names = cells(header), values = cells(row);
  const auto column = std::find(names.begin(), names.end(), "sm_clock_ghz");
  ASSERT_NE(column, names.end()) << header;
  const std::string clock = values.at(static_cast<size_t>(column - names.begin()));
  ASSERT_EQ(clock.rfind("1.4", 0), 0u) << row;
  EXPECT_NE(second.find("," + clock + ","), std::string::npos) << second;
}

}  // namespace

namespace {

// `validate` says which rows it fed to the tensor cores as wgmma does (cuDNN's forward), and says nothing of
// it where no row was.
TEST_F(Cli, ValidateSaysWhichRowsAreFedAsWgmma) {
  std::ifstream in(std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h100_sdpa_cases.csv");
  std::string header, line, cudnn, flash;
  std::getline(in, header);
  while (std::getline(in, line)) {
    const bool small = line.find(",CUDNN_ATTENTION,1,16,4096,64,1,") != std::string::npos ||
                       line.find(",FLASH_ATTENTION,1,16,4096,64,1,") != std::string::npos;
    if (!small || line.find(",fwd,") == std::string::npos) continue;
    (line.find(",CUDNN_ATTENTION,") != std::string::npos ? cudnn : flash) = line;
  }
  ASSERT_FALSE(cudnn.empty());
  ASSERT_FALSE(flash.empty());
  const std::string config = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const Outcome with = run({"validate", "-c", config, write("cudnn.csv", header + "\n" + cudnn + "\n")});
  ASSERT_EQ(with.status, 0) << with.err;
  EXPECT_NE(with.out.find("wgmma kernels (cuDNN's, by name)"), std::string::npos) << with.out;
  const Outcome without = run({"validate", "-c", config, write("flash.csv", header + "\n" + flash + "\n")});
  ASSERT_EQ(without.status, 0) << without.err;
  EXPECT_EQ(without.out.find("wgmma"), std::string::npos) << without.out;
}

// Value mode keeps tensors as float64 on the host: a program over the limit is refused before anything is
// allocated (a 60000 x 60000 tensor on the 80 GB h100-sm used to end in std::bad_alloc, exit 3), naming
// the limit and both ways out; timing-only runs keep no values and are not limited.
TEST_F(Cli, ValueMemoryBeyondItsLimitIsRefusedBeforeAllocation) {
  const std::string sm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  const std::string huge =
      write("huge.trace", ".tensor A[60000][60000]\n.buffer B[64][64]\nLOAD A[0:64, 0:64], B\n");
  expect_input_error(
      run_trace(sm, huge), huge + ": error: ",
      {"28800000000 bytes", "max_value_bytes is 17179869184", "-p max_value_bytes=N", "--values off"});
  // The limit is the config's: 1 KiB refuses a 16 x 16 tensor (2048 bytes of float64), 2 KiB runs it.
  const std::string small = write("small.trace", ".tensor A[16][16]\n.buffer B[4][4]\nLOAD A[0:4, 0:4], B\n");
  expect_input_error(run_trace(kToyTile, small, {"-p", "max_value_bytes=1024"}), small + ": error: ",
                     {"2048 bytes", "the largest, A, 2048 bytes", "max_value_bytes is 1024"});
  EXPECT_EQ(run_trace(kToyTile, small, {"-p", "max_value_bytes=2048"}).status, 0);
  EXPECT_EQ(run_trace(kToyTile, small, {"-p", "max_value_bytes=1024", "--timing-only"}).status, 0);
}

// A tensor larger than the machine's HBM is refused by HBM's capacity before its values are made (it used
// to allocate 3 GB and take 6 s first): 60000 x 60000 on the toy tile machine's 1 MiB.
TEST_F(Cli, TensorBeyondHbmIsRefusedBeforeItsValuesExist) {
  const std::string huge =
      write("huge.trace", ".tensor A[60000][60000]\n.buffer B[4][4]\nLOAD A[0:4, 0:4], B\n");
  expect_input_error(run_trace(kToyTile, huge, {"-p", "max_value_bytes=1125899906842624"}),
                     huge + ": error: ", {"tensors need", "hbm.capacity_bytes"});
}

}  // namespace
