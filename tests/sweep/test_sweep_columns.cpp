// The sweep CSV's columns after `reason` (what attnsim plot needs): the shape, |Q|+|K|+|V|+|O|, the
// machine's peaks and, with --unit-cycles, each unit's busy cycles. Expected values come from the config
// file's numbers and from a direct `attnsim gen` + `attnsim run` of the same trace, not from the sweep.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;
using attnsim::testing::read_whole_file;

const std::string kSm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (std::istringstream in(line); std::getline(in, cell, ',');) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

TEST(SweepColumns, ShapePeaksAndUnitCycles) {
  const fs::path root = fs::temp_directory_path() / fmt::format("attnsim-sweep-columns-{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root);
  const auto run = [&](const std::vector<std::string>& args) {
    return attnsim::testing::run_cli(args, root);
  };
  const auto sweep = run({"sweep", "-c", kSm, "--N", "128", "--schedule", "flash2", "--sweep",
                          "sram.capacity_bytes=64KiB", "--unit-cycles", "-o", (root / "s").string()});
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  std::istringstream csv(read_whole_file(root / "s.csv"));
  std::string header_line, row_line;
  std::getline(csv, header_line);
  std::getline(csv, row_line);
  // The columns up to `reason` are the ones docs/sweep.md listed before these were added, in place.
  EXPECT_EQ(
      header_line.substr(0, header_line.find(",reason,") + 7),
      "sram.capacity_bytes,schedule,status,block_q,block_k,hbm_read_bytes,hbm_write_bytes,hbm_total_bytes,"
      "sram_peak_bytes,mxu_flops,cycles,flop_per_byte,max_rel_error,passed,bytes_per_base,cycles_per_base,"
      "reason");
  const auto header = cells(header_line), values = cells(row_line);
  ASSERT_EQ(header.size(), values.size()) << row_line;
  std::map<std::string, std::string> row;
  for (size_t i = 0; i < header.size(); ++i) row[header[i]] = values[i];
  EXPECT_EQ(row["N"], "128");
  EXPECT_EQ(row["d"], "64");
  EXPECT_EQ(row["dtype"], "f16");
  EXPECT_EQ(row["element_bytes"], "2");
  EXPECT_EQ(row["sram_bytes"], "65536");
  EXPECT_EQ(row["compulsory_bytes"], "65536");  // 4 tensors x 128 x 64 x 2 bytes
  // configs/h100-sm.yaml: 4 arrays of 16 x 32 MACs at 1.83 GHz, 2 FLOP each; 25.38 GB/s.
  EXPECT_DOUBLE_EQ(std::stod(row["peak_flop_per_s"]), 2.0 * 4 * 16 * 32 * 1.83e9);
  EXPECT_DOUBLE_EQ(std::stod(row["peak_bytes_per_s"]), 25.38e9);
  EXPECT_NEAR(std::stod(row["simulated_seconds"]), std::stod(row["cycles"]) / 1.83e9, 1e-12);

  // The same trace by hand: compare's blocks, double buffering, the point's SRAM.
  const std::string trace = (root / "t.trace").string();
  ASSERT_EQ(run({"gen", "flash2", "--n", "128", "--d", "64", "--block-q", row["block_q"], "--block-k",
                 row["block_k"], "--double-buffer", "-o", trace})
                .status,
            0);
  const auto direct = run({"run", "-c", kSm, trace, "--timing-only", "-p", "sram.capacity_bytes=65536"});
  ASSERT_EQ(direct.status, 0) << direct.err;
  const auto printed = [&](const std::string& unit) {
    std::smatch m;
    const std::regex busy("\n" + unit + " +busy ([0-9]+) cycles");
    return std::regex_search(direct.out, m, busy) ? m[1].str() : "(not printed)";
  };
  std::smatch cycles;
  ASSERT_TRUE(std::regex_search(direct.out, cycles, std::regex("\ncycles +([0-9]+)\n"))) << direct.out;
  EXPECT_EQ(row["cycles"], cycles[1].str());  // the second run is the compared one
  for (const std::string unit : {"dma", "mxu", "vpu"})
    EXPECT_EQ(row[unit + "_busy_cycles"], printed(unit)) << unit;
  fs::remove_all(root);
}

}  // namespace
