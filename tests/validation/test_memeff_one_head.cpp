// PyTorch's memory-efficient backward at one head of 8,192 to 49,152 x 128 on a whole H200
// (validation/data/h200_memeff_bwd_1head_nsweep_cases.csv, validation/run_dram_sweep.sh part B with
// SDPA_SHAPES), each row simulated twice: on the presets' attachment of SMs to L2 partitions (core % 2,
// consecutive blocks alternating) and on the SMs' own (the pair probe's partition of each SM in the order
// CUDA hands a 132-SM launch its blocks, the 132-SM row of h200_memeff_sms_cases.csv: runs of 32, 48, 16, 18
// and 18 SMs; measured on another H200 of the same kind). On core % 2 nearly every locked load of a dQ tile
// finds the copy a store of the other partition made stale and fetches it again: the lookup misses are 3.7
// to 7.3 times the GPU's where everything fits, and from 20,480 on the model reads up to 2.2 times the
// GPU's DRAM bytes. On the SMs' own attachment the lookups are the GPU's and every row past the L2 reads
// less than the GPU (0.51-0.93): the shortfall of the 8-head rows, not an excess (docs/validation.md, "One
// head over lengths"). The 8,192 row runs in the default suite, the others (minutes) under the label `slow`.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "sim/validate.h"
#include "tests/validation/l2_ratios.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kData = kRoot + "/validation/data/h200_memeff_bwd_1head_nsweep_cases.csv";
const std::string kSms = kRoot + "/validation/data/h200_memeff_sms_cases.csv";

struct Band {
  double low, high;
};

struct OneHeadRow {
  int64_t n;
  bool causal;
  Band presets, own;  // the predicted / measured DRAM reads held here, on core % 2 and on the SMs' own
};

void expect_in(double value, Band band, const char* what) {
  EXPECT_GT(value, band.low) << what;
  EXPECT_LT(value, band.high) << what;
}

void PrintTo(const OneHeadRow& r, std::ostream* os) {
  *os << "1x1x" << r.n << "x128" << (r.causal ? " causal" : "");
}

// Bands around what the model reads as of 2026-12-02 (a regression guard while the shortfall is
// unexplained: a change that moves a row out of its band must say why). Presets: 1.56 and 1.51 at 20,480,
// 1.94 and 2.19 at 28,672, 1.38 and 2.23 at 36,864, 0.89 and 1.69 at 49,152; own attachment: 0.75 and 0.85,
// 0.91 and 0.87, 0.89 and 0.77, 0.51 and 0.59.
std::vector<OneHeadRow> one_head_rows() {
#ifdef ATTNSIM_MEMEFF_ONE_HEAD_SLOW
  return {{20480, false, {1.40, 1.70}, {0.65, 0.85}}, {20480, true, {1.35, 1.65}, {0.75, 0.95}},
          {28672, false, {1.75, 2.10}, {0.80, 0.98}}, {28672, true, {2.00, 2.40}, {0.77, 0.97}},
          {36864, false, {1.25, 1.50}, {0.79, 0.99}}, {36864, true, {2.00, 2.45}, {0.67, 0.87}},
          {49152, false, {0.80, 1.00}, {0.41, 0.61}}, {49152, true, {1.50, 1.85}, {0.49, 0.69}}};
#else
  return {{8192, false, {0.98, 1.02}, {0.98, 1.02}}};
#endif
}

std::string one_head_name(const ::testing::TestParamInfo<OneHeadRow>& info) {
  return "1x1x" + std::to_string(info.param.n) + (info.param.causal ? "_causal" : "");
}

// The attachment of a 132-SM launch: the pair probe's partition of each SM in the order CUDA handed blocks.
std::string own_attachment() {
  for (const Measurement& m : read_measurements(kSms))
    if (m.core_partitions.size() == 132) return m.core_partitions;
  ADD_FAILURE() << "no 132-SM row in " << kSms;
  return {};
}

L2Ratios simulate(const OneHeadRow& want, bool own) {
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(kData))
    if (m.label == "EFFICIENT_ATTENTION bwd 1x1" && m.n == want.n && m.d == 128 && m.causal == want.causal)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  std::vector<std::string> params;
  if (own) params.push_back("l2.core_partitions=" + own_attachment());
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", kData, rows, params);
  EXPECT_EQ(s.rows.size(), 1u);
  if (s.rows.empty()) return {};
  const ValidationRow& r = s.rows[0];
  EXPECT_NEAR(r.predicted_read / r.measured.l1_read_bytes, 1.0, 0.015);
  const L2Ratios t = l2_ratios(r);
  std::printf("%s: DRAM reads %.3f, lookups %.3f, fabric %.3f\n", own ? "own attachment" : "core % 2", t.dram,
              t.lookups, t.fabric);
  return t;
}

class MemEfficientOneHead : public ::testing::TestWithParam<OneHeadRow> {};

// One simulation per test: SystemC runs one elaboration per process (ctest runs each test on its own).
TEST_P(MemEfficientOneHead, OnThePresetsAttachmentStaleCopiesAreFetchedAgain) {
  const L2Ratios t = simulate(GetParam(), false);
  expect_in(t.dram, GetParam().presets, "DRAM reads");
  // Above the GPU's fabric sectors on every row (1.04-1.43; the own attachment's 0.82-0.93), most where
  // everything fits, and the lookup misses several times the GPU's there.
  EXPECT_GT(t.fabric, 1.0);
  if (GetParam().n <= 12288) {
    EXPECT_GT(t.lookups, 3.0);
    EXPECT_GT(t.fabric, 1.25);
  }
}

TEST_P(MemEfficientOneHead, OnTheSmsOwnAttachmentThePartitionsTrafficIsTheGpus) {
  const L2Ratios t = simulate(GetParam(), true);
  expect_in(t.dram, GetParam().own, "DRAM reads");
  expect_in(t.lookups, {0.55, 1.10}, "L2 lookup read misses");
  expect_in(t.fabric, {0.80, 0.95}, "sectors across the fabric");
}

INSTANTIATE_TEST_SUITE_P(H200, MemEfficientOneHead, ::testing::ValuesIn(one_head_rows()), one_head_name);

}  // namespace
}  // namespace attnsim
