// attnsim validate --gpu-median: sweeps of the same rows with the tensors elsewhere (one-pass DRAM sweeps
// at several placements, validation/run_sdpa_placements.sh) merged into one row per case, its measured
// DRAM bytes and time the median over the files; rows whose sweep left the SM <-> L2 columns empty are
// held against DRAM bytes and time alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kData = std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/";

Measurement row(const std::string& label, int64_t n, double dram_read, double time_ns, bool sm_l2) {
  Measurement m;
  m.label = label;
  m.schedule = "flash2";
  m.n = n;
  m.d = 64;
  m.heads = 16;
  m.dram_read_bytes = dram_read;
  m.dram_write_bytes = dram_read / 10;
  m.time_ns = time_ns;
  m.sm_l2_measured = sm_l2;
  m.l1_read_bytes = sm_l2 ? 4 * dram_read : 0;
  m.l2_lookup_miss_sectors = 7;
  return m;
}

TEST(MergeRepeats, EachCaseOnceWithTheMediansOverTheFiles) {
  Measurement skipped = row("B", 8192, 1, 1, true);
  skipped.not_simulated = "not measured (oom)";
  // Three files of cases A and B (one without B), as read one after another.
  const std::vector<Measurement> rows = {
      row("A", 4096, 100, 10, true), row("B", 4096, 50, 5, false), skipped,
      row("A", 4096, 300, 30, true), row("B", 4096, 70, 9, false), row("A", 4096, 200, 40, true)};
  const std::vector<Measurement> merged = merge_repeats(rows);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].label, "A");
  EXPECT_EQ(merged[0].repeats, 3);
  EXPECT_EQ(merged[0].dram_read_bytes, 200);
  EXPECT_EQ(merged[0].dram_write_bytes, 20);
  EXPECT_EQ(merged[0].time_ns, 30);
  EXPECT_TRUE(merged[0].sm_l2_measured);
  EXPECT_EQ(merged[0].l1_read_bytes, 800);
  EXPECT_EQ(merged[0].l2_lookup_miss_sectors, -1) << "one sweep's counter is no median";
  EXPECT_EQ(merged[1].label, "B");
  EXPECT_EQ(merged[1].repeats, 2);
  EXPECT_EQ(merged[1].dram_read_bytes, 60) << "an even count: the mean of the middle two";
  EXPECT_EQ(merged[1].time_ns, 7);
  EXPECT_FALSE(merged[1].sm_l2_measured);
  EXPECT_EQ(merged[2].not_simulated, "not measured (oom)");
  // Another n is another case.
  EXPECT_EQ(merge_repeats({row("A", 4096, 1, 1, true), row("A", 2048, 3, 1, true)}).size(), 2u);
}

// A one-pass sweep (DRAM bytes and time alone) reads with its SM <-> L2 bytes marked unmeasured.
TEST(MergeRepeats, DramOnlySweepsReadWithoutSmToL2Bytes) {
  const std::vector<Measurement> rows = read_measurements(kData + "h200_sdpa_onepass_pad0.csv");
  ASSERT_EQ(rows.size(), 72u);
  int simulated = 0;
  for (const Measurement& m : rows) {
    EXPECT_FALSE(m.sm_l2_measured) << m.label << " n=" << m.n;
    if (!m.not_simulated.empty()) continue;
    EXPECT_GT(m.dram_read_bytes, 1e6) << m.label << " n=" << m.n;
    EXPECT_GT(m.time_ns, 0) << m.label << " n=" << m.n;
    ++simulated;
  }
  EXPECT_EQ(simulated, 72);
  for (const Measurement& m : read_measurements(kData + "h200_sdpa_cases.csv"))
    EXPECT_TRUE(m.sm_l2_measured) << m.label << " n=" << m.n;
}

// The SM <-> L2 figures are over the rows that measured them; none: said so, no NRMSE printed.
TEST(MergeRepeats, SmToL2FiguresSayWhatWasMeasured) {
  ValidationSummary s;
  s.rows.resize(2);
  s.sm_l2_rows = 0;
  std::ostringstream none;
  print_validation(none, s);
  EXPECT_NE(none.str().find("SM<->L2 bytes:       not measured in these rows"), std::string::npos)
      << none.str();
  EXPECT_EQ(none.str().find("SM<->L2 read bytes:  NRMSE"), std::string::npos);
  s.sm_l2_rows = 1;
  std::ostringstream some;
  print_validation(some, s);
  EXPECT_NE(some.str().find("over the 1 rows that measured them"), std::string::npos) << some.str();
}

// The eight one-pass sweeps' rows (run_sdpa_placements.sh, PAD_MIB 0 to 259), those `keep` takes.
std::vector<Measurement> one_pass_sweeps(const std::vector<int>& pads, bool (*keep)(const Measurement&)) {
  std::vector<Measurement> rows;
  for (const int pad : pads)
    for (Measurement& m : read_measurements(kData + "h200_sdpa_onepass_pad" + std::to_string(pad) + ".csv"))
      if (keep(m)) rows.push_back(std::move(m));
  return rows;
}

bool every_row(const Measurement&) {
  return true;
}

// FlashAttention-2's forward at 1 x 16 x 4,096 x 64: a fraction of a second on the whole chip.
bool small_row(const Measurement& m) {
  return m.label == "FLASH_ATTENTION fwd 1x16" && m.n == 4096 && m.d == 64 && !m.causal;
}

// The row of `cases` measuring the same case as `m` (cases.end() if none).
std::vector<Measurement>::const_iterator same_case(const std::vector<Measurement>& cases,
                                                   const Measurement& m) {
  return std::find_if(cases.begin(), cases.end(), [&m](const Measurement& c) {
    return c.label == m.label && c.n == m.n && c.d == m.d && c.causal == m.causal;
  });
}

// A merged case's SM clock is the median over the files that measured one; none measured it: 0 (the
// config's clock_base_ghz then).
TEST(MergeRepeats, TheClockIsTheMedianOverTheFilesThatMeasuredIt) {
  std::vector<Measurement> rows = {row("A", 4096, 1, 1, true), row("A", 4096, 2, 1, false),
                                   row("A", 4096, 3, 1, true), row("B", 4096, 1, 1, false)};
  rows[0].sm_clock_ghz = 1.30;
  rows[2].sm_clock_ghz = 1.40;
  const std::vector<Measurement> merged = merge_repeats(rows);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_DOUBLE_EQ(merged[0].sm_clock_ghz, 1.35);
  EXPECT_EQ(merged[1].sm_clock_ghz, 0);
}

// The one-pass sweeps measured no clock; the replayed sweep of the same 72 cases did (1.35 GHz on the
// H200's attention kernels under --clock-control base, where the config's base clock is 1.5), and every
// merged case takes its own case's.
TEST(TakeClocks, EveryOnePassCaseTakesItsCasesMeasuredClock) {
  std::vector<Measurement> merged =
      merge_repeats(one_pass_sweeps({0, 37, 74, 111, 148, 185, 222, 259}, every_row));
  ASSERT_EQ(merged.size(), 72u);
  for (const Measurement& m : merged) ASSERT_EQ(m.sm_clock_ghz, 0) << m.label << " n=" << m.n;
  const std::vector<Measurement> cases = read_measurements(kData + "h200_sdpa_cases.csv");
  EXPECT_EQ(take_clocks(merged, cases), 72u);
  for (const Measurement& m : merged) {
    const auto same = same_case(cases, m);
    ASSERT_NE(same, cases.end()) << m.label << " n=" << m.n;
    EXPECT_EQ(m.sm_clock_ghz, same->sm_clock_ghz) << m.label << " n=" << m.n;
    EXPECT_GT(m.sm_clock_ghz, 1.3) << m.label << " n=" << m.n;
    EXPECT_LT(m.sm_clock_ghz, 1.45) << m.label << " n=" << m.n;
  }
  // A row with its own clock keeps it.
  std::vector<Measurement> own = {cases.front()};
  own[0].sm_clock_ghz = 1.0;
  EXPECT_EQ(take_clocks(own, cases), 0u);
  EXPECT_EQ(own[0].sm_clock_ghz, 1.0);
}

// Is the replayed sweep's clock the one-pass launches' own? The one-pass sweep measures the GPC cycles too
// now (run_dram_sweep.sh METRICS_SET=dram, still one pass): 24 cases at two placements on another H200
// (h200_sdpa_clocks_pad{0,37}.csv, 2026-12-03) ran at 1.36-1.39 GHz, within 3% of the replayed sweep's
// clock for each case (1.35) and 8-10% under the config's clock_base_ghz (1.5).
TEST(TakeClocks, OnePassLaunchesRunAtTheReplayedSweepsClock) {
  const std::vector<Measurement> cases = read_measurements(kData + "h200_sdpa_cases.csv");
  size_t compared = 0;
  for (const char* file : {"h200_sdpa_clocks_pad0.csv", "h200_sdpa_clocks_pad37.csv"})
    for (const Measurement& m : read_measurements(kData + file)) {
      ASSERT_GT(m.sm_clock_ghz, 0) << file << ": " << m.label << " n=" << m.n;
      const auto same = same_case(cases, m);
      ASSERT_NE(same, cases.end()) << m.label << " n=" << m.n;
      EXPECT_NEAR(m.sm_clock_ghz / same->sm_clock_ghz, 1.0, 0.03) << m.label << " n=" << m.n;
      EXPECT_LT(m.sm_clock_ghz, 0.95 * 1.5) << m.label << " n=" << m.n;
      ++compared;
    }
  EXPECT_EQ(compared, 48u);
}

// The case merged over the one-pass sweeps, with its clock taken, is simulated as the replayed sweep's row
// of it is (the same launches, the same clock): the one command's rows are the slow test's.
TEST(TakeClocks, AMergedCaseRunsAsItsReplayedRow) {
  std::vector<Measurement> rows = merge_repeats(one_pass_sweeps({0, 37}, small_row));
  ASSERT_EQ(rows.size(), 1u);
  const std::vector<Measurement> cases = read_measurements(kData + "h200_sdpa_cases.csv");
  ASSERT_EQ(take_clocks(rows, cases), 1u);
  const auto replayed = same_case(cases, rows[0]);
  ASSERT_NE(replayed, cases.end());
  rows.push_back(*replayed);
  const ValidationSummary s = validate(ATTNSIM_SOURCE_DIR "/configs/h200.yaml", kData + "h200_sdpa_cases.csv",
                                       rows, ValidateOptions{});
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].predicted_dram_read, s.rows[1].predicted_dram_read);
  EXPECT_EQ(s.rows[0].predicted_ns, s.rows[1].predicted_ns);
  EXPECT_EQ(s.measured_clock_rows, 2u);
}

}  // namespace
}  // namespace attnsim
