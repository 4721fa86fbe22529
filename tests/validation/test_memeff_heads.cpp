// PyTorch's memory-efficient backward (CUTLASS's fmha_cutlassB_..._128x128_k128) at d = 128 over heads and
// sequence lengths (validation/data/h100_memeff_bwd_heads_cases.csv, validation/run_dram_sweep.sh part B
// with SDPA_SHAPES): where its DRAM reads part from the model's. One head of n = 8,192 (64 blocks, one
// wave, everything fits the L2) reads its compulsory bytes, in the model too; from four heads on the GPU
// reads 1.4-2.5 times what the model reads (docs/validation.md, "The memory-efficient backward over heads").
// The one-head rows at n = 8,192 and the one-wave 1 x 8 x 2,048 rows run in the default suite, the others
// (minutes) under the label `long`.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kData = kRoot + "/validation/data/h100_memeff_bwd_heads_cases.csv";
// The rows at n = 2,048 (over heads and batches) come from their own sweep.
const std::string kData2048 = kRoot + "/validation/data/h100_memeff_bwd_heads2048_cases.csv";

struct HeadsRow {
  int64_t heads, n;
  bool causal;
  double dram_low, dram_high;  // the predicted / measured DRAM reads held in this band
  int64_t batch = 1;
};

const std::string& data_file(const HeadsRow& r) {
  return r.n == 2048 ? kData2048 : kData;
}

void PrintTo(const HeadsRow& r, std::ostream* os) {
  *os << r.batch << " x " << r.heads << " heads n=" << r.n << (r.causal ? " causal" : "");
}

// Bands: within 3% where the model reads what the GPU does (one head, n = 8,192: 0.991 and 0.994); the
// other rows around what the model reads as of 2026-11-27 (a regression guard while the shortfall is
// unexplained: a change that moves a row out of its band must say why). 1 x 32,768 causal went from 0.995 to
// 0.867 when the locked dQ loads began to fetch stale copies again (l2.acquire_refetches, 2026-11-28: its
// read lookup misses 1.20 -> 1.59 of the measured, the non-causal row 0.754 -> 0.810). It went from 1.008 to
// 1.158 when the program took each dQ tile's lock (LOCK, FENCE, UNLOCK; 2026-11-30, the non-causal row
// 0.858 -> 0.817): its band now reaches 1.20. 2 x 16,384 (not causal) read 0.749 once O, dO and the gradients
// lay (b, n, h, d) as on the GPU (thirty-first session, docs/validation.md, "The memory-efficient kernels'
// own layouts"): its band starts at 0.70. Since D's prologue runs in registers as the kernel's does
// (thirty-sixth session, docs/validation.md "The memory-efficient backward's prologue runs in registers")
// the one-head rows overshoot: 1 x 16,384 1.166, 1 x 32,768 causal 1.354 (the GPU's own launches of this
// shape vary by up to a quarter between processes, "over heads"); the others move within their bands
// (16 x 8,192 causal 0.495, 2 x 16,384 causal 1.017). Bands to 1.25 and 1.45. Since the program's
// products loop over k as CUTLASS's mainloops do (thirty-seventh session, its step 0.86 of the GPU's, was
// 0.75; the H200's 72 rows moved towards the GPU, docs/validation.md "The memory-efficient backward's
// k-loops are rolled") the causal rows of one and two heads at 16,384 and 32,768 overshoot more: 2 x 16,384
// causal 1.017 -> 1.178, 1 x 32,768 causal 1.354 -> 1.513, the others within their bands. Bands to 1.25
// and 1.60, said here rather than hidden: on these H100 rows the model reads more than the GPU, why is
// not known. Since the H100 preset took its measured set structure (paired regions, fifty-eighth session;
// docs/chip.md "The H100 preset takes paired regions") the rows of 4-16 heads came nearer (0.52-0.80 ->
// 0.71-1.04) and the one- and two-head rows of 2 x 8,192 and longer moved with where their 8-16 MiB
// tensors start in the 4 MiB regions: over four placements (validate --placements 4) 2 x 8,192 reads
// 0.68-1.29, 1 x 16,384 0.65-1.47, 2 x 16,384 causal 1.44-1.56, 1 x 32,768 1.22-1.86 and causal 2.09-2.51
// (hashed: 1.06, 1.20, 1.23, 0.88, 1.42 at the first). Bands to those figures at the first placement.
// Why they overshoot (fifty-ninth session, docs/chip.md "Where the H100's DRAM read error lives"): at 1 x
// 32,768 causal 308 MB of the model's 1,171 MB are O, which only the prologue reads (every block sweeps the
// head's O and dO, and the second wave's blocks start one step apart), and without the mask each block's
// query loop starts at its own key block: out-of-step readers of one buffer, the probe's `spread` mode,
// where the model reads 5 times the GPU's DRAM bytes. The bands stay until that mechanism is modelled.
// The same kernel at n = 2,048 over heads and batches (validation/data/h100_memeff_bwd_heads2048_cases.csv,
// fifty-ninth session): from one wave (1 x 8: 128 blocks) to 31 (8 x 32), and 256 heads laid out as 32 x 8
// besides 8 x 32 (a row of one batch 2 KiB instead of 8 KiB). The model reads less than the GPU on every row
// but one, 1 x 16 (docs/chip.md, "The memory-efficient backward at n = 2,048 over heads"); its lookup misses
// in the SM's own partition are 2.6 times the measured at one wave, its misses at home 0.93: where the GPU
// refetches more from DRAM the model fetches across the fabric. Bands around the figures as of that session:
// a regression guard while the shortfall is unexplained. With a DRAM calendar per channel (the preset since
// the sixty-eighth session) two rows without the mask read less still, 4 x 32 0.836 -> 0.776 and 32 x 8
// 0.972 -> 0.906 (the rest move by 1% or less): their bands moved with them.
std::vector<HeadsRow> heads_rows() {
  std::vector<HeadsRow> rows = {{1, 8192, false, 0.97, 1.03},
                                {1, 8192, true, 0.97, 1.03},
                                {8, 2048, false, 0.86, 0.93},
                                {8, 2048, true, 0.89, 0.96}};
#ifdef ATTNSIM_MEMEFF_HEADS_LONG
  rows = {{2, 8192, false, 0.60, 1.10},  {2, 8192, true, 0.75, 1.10},   {4, 8192, false, 0.60, 1.10},
          {4, 8192, true, 0.60, 1.10},   {8, 8192, false, 0.55, 1.10},  {8, 8192, true, 0.40, 1.10},
          {16, 8192, false, 0.50, 1.10}, {16, 8192, true, 0.30, 1.10},  {1, 16384, false, 0.60, 1.25},
          {1, 16384, true, 0.80, 1.10},  {2, 16384, false, 0.70, 1.10}, {2, 16384, true, 0.75, 1.55},
          {1, 32768, false, 0.70, 1.30}, {1, 32768, true, 0.80, 2.20}};
  // n = 2,048: {heads, n, causal, low, high, batch}.
  const std::vector<HeadsRow> n2048 = {
      {16, 2048, false, 0.98, 1.06},    {16, 2048, true, 0.88, 0.95},     {32, 2048, false, 0.88, 0.95},
      {32, 2048, true, 0.82, 0.89},     {32, 2048, false, 0.80, 0.87, 2}, {32, 2048, true, 0.73, 0.80, 2},
      {32, 2048, false, 0.74, 0.81, 4}, {32, 2048, true, 0.70, 0.77, 4},  {32, 2048, false, 0.80, 0.87, 8},
      {32, 2048, true, 0.74, 0.82, 8},  {8, 2048, false, 0.87, 0.94, 32}, {8, 2048, true, 0.76, 0.84, 32}};
  rows.insert(rows.end(), n2048.begin(), n2048.end());
#endif
  return rows;
}

std::string heads_row_name(const ::testing::TestParamInfo<HeadsRow>& info) {
  const HeadsRow& r = info.param;
  const std::string batch = r.batch == 1 ? "" : std::to_string(r.batch) + "x";
  return batch + std::to_string(r.heads) + "x" + std::to_string(r.n) + (r.causal ? "_causal" : "");
}

ValidationRow simulate(const HeadsRow& want) {
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data_file(want)))
    if (m.label == fmt::format("EFFICIENT_ATTENTION bwd {}x{}", want.batch, want.heads) && m.n == want.n &&
        m.d == 128 && m.causal == want.causal)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data_file(want), rows);
  EXPECT_EQ(s.rows.size(), 1u);
  return s.rows.empty() ? ValidationRow{} : s.rows[0];
}

class MemEfficientHeads : public ::testing::TestWithParam<HeadsRow> {};

// SM<-L2 reads as the 12 rows of h100_sdpa_cases.csv (within 1.5%: the spill loads' fit); DRAM reads in the
// row's band; the per-tensor DRAM reads add up to the total.
TEST_P(MemEfficientHeads, DramReadsInTheirBand) {
  const HeadsRow& want = GetParam();
  const ValidationRow row = simulate(want);
  ASSERT_GT(row.measured.dram_read_bytes, 0);
  EXPECT_NEAR(row.predicted_read / row.measured.l1_read_bytes, 1.0, 0.015);
  const double dram = row.predicted_dram_read / row.measured.dram_read_bytes;
  EXPECT_GT(dram, want.dram_low);
  EXPECT_LT(dram, want.dram_high);
  double by_tensor = 0;
  for (const auto& [name, bytes] : row.predicted_dram_read_by_tensor) by_tensor += static_cast<double>(bytes);
  EXPECT_EQ(by_tensor, row.predicted_dram_read);
  std::printf("DRAM read %.3f, DRAM write %.3f, L2 lookup read misses %.3f, time %.3f\n", dram,
              row.predicted_dram_written / row.measured.dram_write_bytes,
              row.predicted_l2_lookup_read_miss_sectors / row.measured.l2_lookup_miss_sectors,
              row.predicted_ns / row.measured.time_ns);
}

INSTANTIATE_TEST_SUITE_P(H100, MemEfficientHeads, ::testing::ValuesIn(heads_rows()), heads_row_name);

#ifndef ATTNSIM_MEMEFF_HEADS_LONG
// A spill is reloaded after it was stored: with everything in L2 (one head) no spill reaches DRAM, and the
// validate CSV names each tensor's DRAM reads and the L2's lookup misses beside the measured ones.
TEST(MemEfficientHeadsCsv, SpillReloadsHitAndTheCsvNamesEachTensor) {
  const ValidationRow row = simulate({1, 8192, false, 0, 0});
  ASSERT_GT(row.predicted_dram_read, 0);
  const auto& reads = row.predicted_dram_read_by_tensor;
  ASSERT_TRUE(reads.count("local"));
  EXPECT_EQ(reads.at("local"), 0u);
  EXPECT_GT(reads.at("dQaccum"), 0u);  // the zeroed f32 workspace, read once from DRAM
  EXPECT_GT(row.measured.l2_lookup_miss_sectors, 0);
  EXPECT_GT(row.predicted_l2_lookup_read_miss_sectors, 0);
  ValidationSummary s;
  s.rows.push_back(row);
  const std::string csv = validation_csv(s);
  EXPECT_NE(csv.find(",dram_read_pred_by_tensor,dram_write_pred_by_tensor,l2_lookup_read_miss_pred_sectors,"
                     "l2_lookup_miss_meas_sectors,l2_fabric_pred_sectors,l2_fabric_meas_sectors,"
                     "l2_resident_end_pred_by_tensor,l2_home_miss_pred_sectors,l2_home_miss_meas_sectors,"),
            std::string::npos);
  EXPECT_NE(csv.find(fmt::format("dQaccum={}", reads.at("dQaccum"))), std::string::npos) << csv;
  // Sectors between the partitions (copies filled, far stores), predicted and measured (ltcfabric).
  EXPECT_GT(row.predicted_l2_fabric_sectors, 0);
  EXPECT_GT(row.measured.l2_fabric_sectors, 0);
  EXPECT_NE(csv.find(fmt::format(",{:.0f},{:.0f},{:.0f},{:.0f},", row.predicted_l2_lookup_read_miss_sectors,
                                 row.measured.l2_lookup_miss_sectors, row.predicted_l2_fabric_sectors,
                                 row.measured.l2_fabric_sectors)),
            std::string::npos)
      << csv;
  // Then what each tensor had in L2 when the kernel ended: everything fits at one head.
  ASSERT_TRUE(row.predicted_l2_resident_by_tensor.count("dQaccum"));
  EXPECT_NE(csv.find(fmt::format("dQaccum={}", row.predicted_l2_resident_by_tensor.at("dQaccum"))),
            std::string::npos);
  // Last, the copies' fetches that missed at home too (measured: all lookup misses less the SMs' own),
  // which with the near-homed lookup misses make up the DRAM reads.
  EXPECT_GE(row.predicted_l2_home_miss_sectors, 0);
  EXPECT_LE(row.predicted_l2_home_miss_sectors, row.predicted_dram_read / 32);
  EXPECT_GT(row.measured.l2_home_miss_sectors, 0);
  // (then the placements: one, the run as configured: validate --placements, test_placements.cpp).
  EXPECT_NE(csv.find(fmt::format(",{:.0f},{:.0f},1,", row.predicted_l2_home_miss_sectors,
                                 row.measured.l2_home_miss_sectors)),
            std::string::npos)
      << csv;
}
#endif

}  // namespace
}  // namespace attnsim
