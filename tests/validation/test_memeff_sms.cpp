// PyTorch's memory-efficient backward on 16 to 132 SMs of an H200 (validation/data/h200_memeff_sms_cases.csv:
// validation/run_memeff_sms.sh runs the same call in CUDA green contexts of fewer SMs, so that fewer heads
// run at a time while the tensors, their addresses and the grid stay the same). Each row is simulated on as
// many cores, attached to the L2 partitions as the presets attach them (core % 2: a 16-SM green context's L2
// probe reads as if half its SMs were on each partition, docs/chip.md, "Sixteen SMs of a green context").
// Up to 64 SMs the model reads what the GPU reads (within 3%; on 16 SMs the longest row 0.85); from 96 SMs
// on the GPU reads more and more than the model does (docs/validation.md, "The memory-efficient backward on
// fewer SMs"). One row runs in the default suite, the others (minutes) under the label `long`.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kData = kRoot + "/validation/data/h200_memeff_sms_cases.csv";

struct SmsRow {
  int64_t batch, heads, n, d;
  bool causal;
  int sms;
  double dram_low, dram_high;  // the predicted / measured DRAM reads held in this band
};

void PrintTo(const SmsRow& r, std::ostream* os) {
  *os << r.batch << "x" << r.heads << "x" << r.n << "x" << r.d << (r.causal ? " causal" : "") << " on "
      << r.sms << " SMs";
}

// Within 3% where the model reads what the GPU does; the others in bands around what the model reads as of
// 2026-11-30 (0.729, 0.799, 0.667, 0.651, 0.762, 0.849, 0.849: a regression guard while the shortfall is
// unexplained; a change that moves a row out of its band must say why). The d = 64 row on 132 SMs read 0.968
// once the program took each dQ tile's lock (2026-11-30; 0.98-1.01 before): its band starts at 0.96.
std::vector<SmsRow> sms_rows() {
  std::vector<SmsRow> rows = {{8, 32, 2048, 128, false, 64, 0.97, 1.03}};
#ifdef ATTNSIM_MEMEFF_SMS_LONG
  rows = {{1, 16, 8192, 128, false, 16, 0.97, 1.03},  {1, 16, 8192, 128, false, 64, 0.97, 1.03},
          {1, 16, 8192, 128, false, 128, 0.66, 0.80}, {1, 16, 8192, 128, false, 132, 0.72, 0.88},
          {1, 16, 8192, 128, true, 64, 0.97, 1.03},   {1, 16, 8192, 128, true, 128, 0.60, 0.74},
          {1, 16, 8192, 128, true, 132, 0.58, 0.72},  {8, 32, 2048, 128, false, 16, 0.97, 1.03},
          {8, 32, 2048, 128, false, 128, 0.69, 0.84}, {8, 32, 2048, 128, false, 132, 0.77, 0.93},
          {1, 16, 16384, 64, false, 16, 0.97, 1.03},  {1, 16, 16384, 64, false, 132, 0.96, 1.03},
          {1, 8, 32768, 128, false, 16, 0.77, 0.93}};
#endif
  return rows;
}

std::string sms_row_name(const ::testing::TestParamInfo<SmsRow>& info) {
  const SmsRow& r = info.param;
  return std::to_string(r.batch) + "x" + std::to_string(r.heads) + "x" + std::to_string(r.n) + "x" +
         std::to_string(r.d) + (r.causal ? "_causal" : "") + "_on_" + std::to_string(r.sms);
}

// The row of the case on `want.sms` SMs (its main_sm_count, which the measurement reader keeps).
ValidationRow simulate(const SmsRow& want) {
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(kData))
    if (m.label ==
            "EFFICIENT_ATTENTION bwd " + std::to_string(want.batch) + "x" + std::to_string(want.heads) &&
        m.n == want.n && m.d == want.d && m.causal == want.causal && m.sm_count == want.sms)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  const ValidationSummary s =
      validate(kRoot + "/configs/h200.yaml", kData, rows, {"chip.cores=" + std::to_string(want.sms)});
  EXPECT_EQ(s.rows.size(), 1u);
  return s.rows.empty() ? ValidationRow{} : s.rows[0];
}

class MemEfficientSms : public ::testing::TestWithParam<SmsRow> {};

// SM<-L2 reads as on the whole chip (within 1.5%: the spill loads' fit); DRAM reads in the row's band.
TEST_P(MemEfficientSms, DramReadsInTheirBand) {
  const SmsRow& want = GetParam();
  const ValidationRow row = simulate(want);
  ASSERT_GT(row.measured.dram_read_bytes, 0);
  EXPECT_NEAR(row.predicted_read / row.measured.l1_read_bytes, 1.0, 0.015);
  const double dram = row.predicted_dram_read / row.measured.dram_read_bytes;
  EXPECT_GT(dram, want.dram_low);
  EXPECT_LT(dram, want.dram_high);
  std::printf("%d SMs: DRAM read %.3f, DRAM write %.3f, time %.3f\n", want.sms, dram,
              row.predicted_dram_written / row.measured.dram_write_bytes,
              row.predicted_ns / row.measured.time_ns);
}

INSTANTIATE_TEST_SUITE_P(H200, MemEfficientSms, ::testing::ValuesIn(sms_rows()), sms_row_name);

}  // namespace
}  // namespace attnsim
