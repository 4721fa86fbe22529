// Energy from the simulation's counts times the config's per-access figures (docs/energy.md). Every
// expected value here is worked out by hand from counts known without the simulator (a four-instruction
// trace) and pJ values the test sets itself, or checked against another figure the run reports (bytes).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;
using attnsim::testing::run_cli;

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kToyTile = kRoot + "/configs/toy-tile.yaml";
const std::string kChip = kRoot + "/configs/h100.yaml";

class Energy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("attnsim_energy_{}_{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  nlohmann::json read_json(const std::string& name) {
    std::ifstream in(dir_ / name);
    return nlohmann::json::parse(in);
  }
  fs::path dir_;
};

// A 1x4 row times a 4x1 column on toy-tile (f32, 4-byte DRAM granularity, so nothing is rounded):
// DRAM moves A 16 + B 16 read, C 4 written = 36 bytes; the SRAM takes the same 36 through the DMA and
// 36 more as MAC_Z's operands (a 16 and b 16 read, c 4 written) = 72 bytes; 1 x 4 x 1 = 4 MACs; no VPU op.
const char* kDotTrace = R"(.tensor A[1][4] f32 random(seed=1)
.tensor B[1][4] f32 random(seed=2)
.tensor C[1][1] f32
.buffer a[1][4] f32
.buffer b[1][4] f32
.buffer c[1][1] f32
LOAD A[0:1, 0:4], a
LOAD B[0:1, 0:4], b
MAC_Z a, b^T, c
STORE c, C[0:1, 0:1]
)";

// Figures chosen so each level's share is told apart: 1 pJ/bit, 10 pJ/byte, 100 pJ/MAC, 1000 pJ/op.
const std::vector<std::string> kRoundFigures = {
    "-p", "energy.dram_pj_per_bit=1", "-p", "energy.sram_pj_per_byte=10",
    "-p", "energy.mac_pj=100",        "-p", "energy.vector_op_pj=1000"};

TEST_F(Energy, HandCountedTraceOnToyTile) {
  const std::string trace = write("dot.trace", kDotTrace);
  std::vector<std::string> args = {"run", "-c", kToyTile, trace, "--stats-json", (dir_ / "s.json").string()};
  args.insert(args.end(), kRoundFigures.begin(), kRoundFigures.end());
  const auto r = run_cli(args, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json e = read_json("s.json")["energy"];
  EXPECT_EQ(e["scope"], "one core");
  EXPECT_EQ(e["unit"], "pJ");
  const auto& levels = e["levels"];
  EXPECT_DOUBLE_EQ(levels["hbm"]["pj"].get<double>(), 36 * 8 * 1.0);
  EXPECT_DOUBLE_EQ(levels["hbm"]["pj_per_tensor"]["A"].get<double>(), 16 * 8.0);
  EXPECT_DOUBLE_EQ(levels["hbm"]["pj_per_tensor"]["B"].get<double>(), 16 * 8.0);
  EXPECT_DOUBLE_EQ(levels["hbm"]["pj_per_tensor"]["C"].get<double>(), 4 * 8.0);
  EXPECT_DOUBLE_EQ(levels["sram"]["pj"].get<double>(), 72 * 10.0);
  EXPECT_DOUBLE_EQ(levels["sram"]["pj_per_tensor"]["A"].get<double>(), 16 * 10.0);
  EXPECT_DOUBLE_EQ(levels["sram"]["pj_per_tensor"]["C"].get<double>(), 4 * 10.0);
  EXPECT_DOUBLE_EQ(levels["sram"]["pj_not_by_tensor"].get<double>(), 36 * 10.0);  // the operands
  EXPECT_DOUBLE_EQ(levels["mxu"]["pj"].get<double>(), 4 * 100.0);
  EXPECT_DOUBLE_EQ(levels["vpu"]["pj"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(e["total_pj"].get<double>(), 288.0 + 720.0 + 400.0);
  // The summary prints the same total in microjoules.
  EXPECT_NE(r.out.find("energy (one core)  0.001408 uJ"), std::string::npos) << r.out;
}

TEST_F(Energy, UnknownKeyIsRejectedWithItsPath) {
  const std::string trace = write("dot.trace", kDotTrace);
  auto r = run_cli({"run", "-c", kToyTile, trace, "-p", "energy.dram_pj_per_byte=1"}, dir_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("energy.dram_pj_per_byte"), std::string::npos) << r.err;
  // In the file too: the key path and the file's line.
  std::ifstream in(kToyTile);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const size_t at = yaml.find("energy:\n");
  ASSERT_NE(at, std::string::npos);
  yaml.insert(at + 8, "  mac_pJ: 1\n");
  r = run_cli({"run", "-c", write("bad.yaml", yaml), trace}, dir_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("energy.mac_pJ"), std::string::npos) << r.err;
  // A negative energy is out of range.
  r = run_cli({"run", "-c", kToyTile, trace, "-p", "energy.mac_pj=-1"}, dir_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("energy.mac_pj"), std::string::npos) << r.err;
}

TEST_F(Energy, ConfigWithoutEnergySectionReportsNone) {
  std::ifstream in(kToyTile);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const size_t begin = yaml.find("energy:\n"), end = yaml.find("\nsequencer:");
  ASSERT_NE(begin, std::string::npos);
  yaml.erase(begin, end + 1 - begin);
  const std::string trace = write("dot.trace", kDotTrace);
  const auto r = run_cli(
      {"run", "-c", write("plain.yaml", yaml), trace, "--stats-json", (dir_ / "s.json").string()}, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(read_json("s.json").contains("energy"));
  EXPECT_NE(r.out.find("energy            not reported"), std::string::npos) << r.out;
}

// The whole chip: each memory level's energy is its own byte count (reported beside it) times the figure.
TEST_F(Energy, WholeChipLevelsFollowTheirByteCounts) {
  std::vector<std::string> args = {
      "compare",    "-c",     kChip,      "--N", "256",    "--d", "64",
      "--schedule", "flash2", "--values", "off", "--json", "-p",  "energy.noc_pj_per_bit=0.5"};
  const auto r = run_cli(args, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = nlohmann::json::parse(r.out)["schedules"][0];
  const auto& c = s["whole_chip"];
  const auto& e = c["energy"];
  EXPECT_EQ(e["scope"], "whole chip");
  const double dram_bytes = c["dram_bytes_read"].get<double>() + c["dram_bytes_written"].get<double>();
  EXPECT_GT(dram_bytes, 0);
  EXPECT_DOUBLE_EQ(e["levels"]["dram"]["pj"].get<double>(), dram_bytes * 8 * 3.9);  // h100.yaml: 3.9 pJ/bit
  const double link_bytes = s["sm_l2_bytes_read"].get<double>() + s["sm_l2_bytes_written"].get<double>();
  EXPECT_DOUBLE_EQ(e["levels"]["sm_l2"]["pj"].get<double>(), link_bytes * 8 * 0.5);
  EXPECT_DOUBLE_EQ(e["levels"]["mxu"]["pj"].get<double>(), s["mxu_flops"].get<double>() / 2 * 2.0);
  EXPECT_DOUBLE_EQ(e["levels"]["vpu"]["pj"].get<double>(), s["vpu_element_ops"].get<double>() * 0.9);
  // Per tensor, DRAM's energy is the tensor's DRAM bytes.
  for (const auto& [tensor, bytes] : c["dram_bytes_read_per_tensor"].items())
    EXPECT_DOUBLE_EQ(
        e["levels"]["dram"]["pj_per_tensor"][tensor].get<double>(),
        (bytes.get<double>() + c["dram_bytes_written_per_tensor"][tensor].get<double>()) * 8 * 3.9)
        << tensor;
  double sum = 0;
  for (const auto& [name, level] : e["levels"].items()) sum += level["pj"].get<double>();
  EXPECT_NEAR(e["total_pj"].get<double>(), sum, 1e-9 * sum);
}

// compare's table has the column, its unit in the header, and the value of its JSON.
TEST_F(Energy, CompareColumnPerTensorAndCsv) {
  const std::vector<std::string> base = {"compare", "-c",         kChip,    "--N",      "256", "--d",
                                         "64",      "--schedule", "flash2", "--values", "off"};
  auto args = base;
  args.push_back("--per-tensor");
  const auto table = run_cli(args, dir_);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("energy uJ"), std::string::npos) << table.out;
  args = base;
  args.push_back("--json");
  const auto json = run_cli(args, dir_);
  const double uj =
      nlohmann::json::parse(json.out)["schedules"][0]["whole_chip"]["energy"]["total_pj"].get<double>() *
      1e-6;
  // The flash2 row's last cell.
  const size_t row = table.out.find("\nflash2 ");
  ASSERT_NE(row, std::string::npos) << table.out;
  const std::string line = table.out.substr(row + 1, table.out.find('\n', row + 1) - row - 1);
  const double cell = std::stod(line.substr(line.find_last_of(' ') + 1));
  EXPECT_NEAR(cell, uj, 5e-4 * uj) << line;
  args = base;
  args.insert(args.end(), {"--csv", "--per-tensor"});
  const auto csv = run_cli(args, dir_);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "schedule,tensor,sm_l2_read_bytes,sm_l2_write_bytes,dram_read_bytes,dram_write_bytes,energy_pj");
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells(1);
  for (char ch : line)
    if (ch == ',')
      cells.emplace_back();
    else
      cells.back().push_back(ch);
  return cells;
}

// The sweep appends the energy columns after every earlier one; on one core they are empty.
TEST_F(Energy, SweepCsvEndsWithEnergyColumns) {
  const auto r = run_cli({"sweep", "-c", kChip, "--N", "256", "--d", "64", "--values", "off", "--sweep",
                          "schedule=flash2", "-o", (dir_ / "s").string(), "--jobs", "1"},
                         dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(dir_ / "s.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto names = split_csv(header), cells = split_csv(row);
  ASSERT_EQ(names.size(), cells.size());
  const std::vector<std::string> energy = {"energy_uj",       "dram_energy_uj", "l2_energy_uj",
                                           "sm_l2_energy_uj", "sram_energy_uj", "regfile_energy_uj",
                                           "mxu_energy_uj",   "vpu_energy_uj"};
  ASSERT_GE(names.size(), energy.size());
  EXPECT_EQ(std::vector<std::string>(names.end() - long(energy.size()), names.end()), energy);
  double levels = 0;
  for (size_t i = names.size() - energy.size() + 1; i < names.size(); ++i) levels += std::stod(cells[i]);
  const double total = std::stod(cells[names.size() - energy.size()]);
  EXPECT_GT(total, 0);
  EXPECT_NEAR(total, levels, 1e-6 * total);
  // The same figure as a direct compare of the point.
  const auto direct = run_cli({"compare", "-c", kChip, "--N", "256", "--d", "64", "--values", "off",
                               "--schedule", "flash2", "--json"},
                              dir_);
  const double pj =
      nlohmann::json::parse(direct.out)["schedules"][0]["whole_chip"]["energy"]["total_pj"].get<double>();
  EXPECT_NEAR(total, pj * 1e-6, 1e-9 * pj);
}

// plan --objective energy: the first candidate has the least energy of all, each re-simulated here by a
// direct compare of its blocks.
TEST_F(Energy, PlanObjectiveEnergyPicksTheLeast) {
  const auto r = run_cli({"plan", "-c", kChip, "--N", "128", "--d", "64", "--schedule", "flash2",
                          "--objective", "energy", "--top", "100", "-q", "--jobs", "2"},
                         dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("objective: least dynamic energy (whole chip)"), std::string::npos) << r.out;
  std::vector<std::pair<std::string, std::string>> blocks;  // in rank order
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::string rank, schedule, bq_bk;
    if (!(cells >> rank >> schedule >> bq_bk) || schedule != "flash2") continue;
    const size_t x = bq_bk.find('x');
    blocks.emplace_back(bq_bk.substr(0, x), bq_bk.substr(x + 1));
  }
  ASSERT_GE(blocks.size(), 3u) << r.out;
  std::vector<double> energy;
  for (const auto& [bq, bk] : blocks) {
    const auto c = run_cli({"compare", "-c", kChip, "--N", "128", "--d", "64", "--values", "off",
                            "--schedule", "flash2", "--block-q", bq, "--block-k", bk, "--json"},
                           dir_);
    ASSERT_EQ(c.status, 0) << c.err;
    energy.push_back(
        nlohmann::json::parse(c.out)["schedules"][0]["whole_chip"]["energy"]["total_pj"].get<double>());
  }
  for (size_t i = 1; i < energy.size(); ++i)
    EXPECT_LE(energy.front(), energy[i]) << blocks[i].first << "x" << blocks[i].second;
  EXPECT_LT(energy.front(), *std::max_element(energy.begin(), energy.end()));  // the choice mattered
}

TEST_F(Energy, PlanObjectiveEnergyNeedsAChip) {
  const auto r = run_cli(
      {"plan", "-c", kRoot + "/configs/h100-sm.yaml", "--N", "128", "--objective", "energy", "-q"}, dir_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--objective energy needs a whole-chip config"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// compare on one core: each schedule's energy is that core's, and its MXU level charges exactly the MACs
// the row reports (half its MXU FLOPs) at the config's figure, set here by -p.
TEST_F(Energy, CompareOnOneCoreChargesTheRowsOwnMacs) {
  const std::string sm = kRoot + "/configs/h100-sm.yaml";
  const auto r = run_cli({"compare", "-c", sm, "--N", "128", "--block", "64", "--schedule", "flash2",
                          "--values", "off", "--json", "-p", "energy.mac_pj=3"},
                         dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = nlohmann::json::parse(r.out)["schedules"][0];
  const auto& e = s["energy"];
  EXPECT_EQ(e["scope"], "one core");
  const double macs = s["mxu_flops"].get<double>() / 2;
  EXPECT_EQ(macs, 2.0 * 128 * 128 * 64);  // Q K^T and P V, 128 x 128 x 64 each
  EXPECT_EQ(e["levels"]["mxu"]["count"].get<double>(), macs);
  EXPECT_EQ(e["levels"]["mxu"]["pj"].get<double>(), 3 * macs);
  const auto table = run_cli({"compare", "-c", sm, "--N", "128", "--block", "64", "--schedule", "flash2",
                              "--values", "off", "-p", "energy.mac_pj=3"},
                             dir_);
  EXPECT_NE(table.out.find("one core's dynamic energy"), std::string::npos) << table.out;
}

}  // namespace
