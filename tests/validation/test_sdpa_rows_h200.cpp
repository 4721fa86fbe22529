// PyTorch's 72 SDPA rows measured on an H200 (validation/data/h200_sdpa_cases.csv) on configs/h200.yaml,
// whose L2 set index was measured on that chip: issue 7's DRAM bounds, asserted. Every row but the
// memory-efficient backward at d = 128 (six rows at 0.78-1.10 of the measured DRAM reads since its D
// prologue runs in registers, 0.54-0.92 before: docs/validation.md, "The memory-efficient backward's
// prologue runs in registers"; NRMSE 0.256, r 0.987 over all 72) reads within 10% of the GPU's DRAM bytes,
// but the two named below; over those 66 rows the DRAM reads' NRMSE is at most 0.10 and Pearson r at least
// 0.98 (0.043 and 0.999 as of 2026-11-30; 0.082 and 0.998 before l2.store_copies). Built twice from this
// file: the rows, one ctest each (side by side, each leaving its predicted and measured DRAM reads in
// ATTNSIM_SDPA_H200_DIR), and with ATTNSIM_SDPA_H200_TOTALS the test over all of them, which ctest runs after
// (fixture sdpa_h200). Label `long`: about six minutes of one core in all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/validate.h"
#include "tests/validation/sdpa_rows.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kData = kRoot + "/validation/data/h200_sdpa_cases.csv";

bool memeff_backward_d128(const SdpaRow& r) {
  return r.backend == "EFFICIENT_ATTENTION" && r.pass == "bwd" && r.d == 128;
}

std::vector<SdpaRow> h200_rows() {
  std::vector<SdpaRow> out;
  for (const SdpaRow& row : all_sdpa_rows())
    if (!memeff_backward_d128(row)) out.push_back(row);
  return out;
}

#ifndef ATTNSIM_SDPA_H200_TOTALS
// The rows outside 10% on the H200, each held in a band around its figure as of 2026-11-30:
// FlashAttention-2's causal forward at 1 x 8 x 32,768 x 128 (0.899: 0.805 until stores took room in the
// writer's L2 partition, l2.store_copies; on the H100 its three causal d = 128 rows miss too) and the
// memory-efficient forward there without the mask (1.136: 1.080 before store_copies, its stores of O now
// taking room beside K and V). FlashAttention-2's and cuDNN's backward there without the mask (0.898, 0.888
// before) came to 0.963 and 0.959 with store_copies and are held to 10% as the others.
bool in_band(const SdpaRow& r, double dram, bool& known) {
  const bool flash_causal_forward = r.backend == "FLASH_ATTENTION" && r.pass == "fwd" && r.causal;
  const bool efficient_forward = r.backend == "EFFICIENT_ATTENTION" && r.pass == "fwd" && !r.causal;
  known = r.n == 32768 && r.d == 128 && (flash_causal_forward || efficient_forward);
  if (!known) return std::abs(dram - 1.0) <= 0.10;
  return flash_causal_forward ? dram > 0.85 && dram < 1.10 : dram > 1.0 && dram < 1.20;
}

// FlashAttention-2's causal forward at 1 x 8 x 32,768 x 128 measured 24 times (six processes, four launches
// each: validation/data/h200_fa2_causal_repeat.csv, another H200, 2026-11-30): its DRAM reads move from
// launch to launch on the same tensors (492-640 MB, median 561, sd 40; without the mask 311-315). The model's
// figure lies inside that spread: {lowest, highest} of the causal launches.
std::pair<double, double> flash_causal_forward_spread() {
  std::ifstream in(kRoot + "/validation/data/h200_fa2_causal_repeat.csv");
  std::string line;
  std::getline(in, line);  // process,call,causal,dram_read_bytes,dram_write_bytes,time_ns
  double low = 1e300, high = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (cells.size() < 4 || cells[2] != "1") continue;
    low = std::min(low, std::stod(cells[3])), high = std::max(high, std::stod(cells[3]));
  }
  return {low, high};
}

class SdpaRowOnTheH200 : public ::testing::TestWithParam<SdpaRow> {};

TEST_P(SdpaRowOnTheH200, DramReadsWithinTenPercent) {
  const SdpaRow& want = GetParam();
  const std::string label = want.label();
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(kData))
    if (m.label == label && m.n == want.n && m.d == want.d && m.causal == want.causal) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u) << label;
  ASSERT_EQ(rows[0].not_simulated, "") << label;
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", kData, rows);
  ASSERT_EQ(s.rows.size(), 1u);
  const ValidationRow& row = s.rows[0];
  ASSERT_GT(row.measured.dram_read_bytes, 0);
  const double dram = row.predicted_dram_read / row.measured.dram_read_bytes;
  bool known = false;
  EXPECT_TRUE(in_band(want, dram, known))
      << "DRAM reads " << dram << " of the measured" << (known ? " (a known miss, out of its band)" : "");
  std::printf("DRAM read %.3f%s\n", dram, known ? " (known miss)" : "");
  if (want.backend == "FLASH_ATTENTION" && want.pass == "fwd" && want.causal && want.n == 32768) {
    const auto [low, high] = flash_causal_forward_spread();
    std::printf("DRAM read %.0f B, the GPU's 24 launches %.0f-%.0f B\n", row.predicted_dram_read, low, high);
    EXPECT_GT(row.predicted_dram_read, low);
    EXPECT_LT(row.predicted_dram_read, high);
  }
  write_row_result(ATTNSIM_SDPA_H200_DIR, want, row.predicted_dram_read, row.measured.dram_read_bytes);
}

INSTANTIATE_TEST_SUITE_P(H200, SdpaRowOnTheH200, ::testing::ValuesIn(h200_rows()), sdpa_test_name);
#else
// Over the 66 rows, from the files this build's row tests left (older ones refused: a stale run cannot pass).
TEST(SdpaH200, DramReadsNrmseAtMostATenthAndPearsonAtLeast098) {
  std::vector<double> predicted, measured;
  read_row_results(ATTNSIM_SDPA_H200_DIR, ATTNSIM_SDPA_H200_ROW_TESTS, h200_rows(), predicted, measured);
  if (HasFatalFailure()) return;
  ASSERT_EQ(predicted.size(), 66u);
  const double error = nrmse(predicted, measured), r = pearson(predicted, measured);
  std::printf("DRAM reads over %zu H200 rows: NRMSE %.4f, Pearson r %.5f\n", predicted.size(), error, r);
  EXPECT_LE(error, 0.10);
  EXPECT_GE(r, 0.98);
}
#endif

}  // namespace
}  // namespace attnsim
