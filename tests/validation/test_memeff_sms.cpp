// PyTorch's memory-efficient backward on 16 to 132 SMs of an H200 (validation/data/h200_memeff_sms_cases.csv:
// validation/run_memeff_sms.sh runs the same call in CUDA green contexts of fewer SMs, so that fewer heads
// run at a time while the tensors, their addresses and the grid stay the same). Each row is simulated on as
// many cores, attached to the L2 partitions as the presets attach them (core % 2: a 16-SM green context's L2
// probe reads as if half its SMs were on each partition, docs/chip.md, "Sixteen SMs of a green context").
// Up to 64 SMs the model reads what the GPU reads (within 3%; on 16 SMs the longest row 0.85); from 96 SMs
// on the GPU reads more and more than the model does (docs/validation.md, "The memory-efficient backward on
// fewer SMs"). One row runs in the default suite, the others (minutes) under the label `long`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/validate.h"
#include "tests/validation/l2_ratios.h"

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
// once the program took each dQ tile's lock (2026-11-30; 0.98-1.01 before): its band starts at 0.96. Since O,
// dO and the gradients lie (b, n, h, d) as on the GPU (thirty-first session, "The memory-efficient kernels'
// own layouts"), 1 x 16 x 8,192 (not causal) reads 0.969 on 128 SMs (0.729 before) and 0.918 on 132 (0.799):
// bands 0.94-1.03 and 0.85-0.98. Since a store takes room in the writer's L2 partition (l2.store_copies,
// thirty-third session, docs/chip.md) the rows from 128 SMs read more: 1 x 16 x 8,192 1.106 and 1.052 (the
// GPU's 132-SM row here read 14% less than the same shape in h200_sdpa_cases.csv, where the model reads
// 0.923), causal 0.755 and 0.760 (0.667, 0.651), 8 x 32 x 2,048 0.803 and 0.868 (0.762, 0.849). Since D's
// prologue runs in registers as the kernel's does (thirty-sixth session), causal 0.883 and 0.887, 8 x 32 x
// 2,048 0.859 and 0.908, 1 x 16 x 8,192 1.135 and 1.076 on 128 and 132 SMs; the rows on 16 and 64 SMs
// within 0.015 of 1.0. Since P is computed with expf as the kernel's is (thirty-eighth session), causal 0.930
// and 0.967 on 128 and 132 SMs: the 132-SM row is 0.033 under the GPU, its band moves from 0.80-0.95 to
// 0.92-1.03 (narrower, around the new figure).
std::vector<SmsRow> sms_rows() {
  std::vector<SmsRow> rows = {{8, 32, 2048, 128, false, 64, 0.97, 1.03}};
#ifdef ATTNSIM_MEMEFF_SMS_LONG
  rows = {{1, 16, 8192, 128, false, 16, 0.97, 1.03},  {1, 16, 8192, 128, false, 64, 0.97, 1.03},
          {1, 16, 8192, 128, false, 128, 1.03, 1.18}, {1, 16, 8192, 128, false, 132, 0.98, 1.12},
          {1, 16, 8192, 128, true, 64, 0.97, 1.03},   {1, 16, 8192, 128, true, 128, 0.80, 0.95},
          {1, 16, 8192, 128, true, 132, 0.92, 1.03},  {8, 32, 2048, 128, false, 16, 0.97, 1.03},
          {8, 32, 2048, 128, false, 128, 0.78, 0.93}, {8, 32, 2048, 128, false, 132, 0.83, 0.98},
          {1, 16, 16384, 64, false, 16, 0.97, 1.03}};
#endif
  // Three and a half minutes and three of one core (label `slow`, scripts/slow-bounds.sh, not in CI, whose
  // 90 minutes they would crowd): the d = 64 row on all 132 SMs (the same shape on 132 SMs in
  // h200_sdpa_cases.csv is SdpaRowOnTheH200's) and 1 x 8 x 32,768 on 16 SMs.
#ifdef ATTNSIM_MEMEFF_SMS_SLOW
  rows = {{1, 16, 16384, 64, false, 132, 0.96, 1.03}, {1, 8, 32768, 128, false, 16, 0.77, 0.93}};
#endif
  return rows;
}

std::string sms_row_name(const ::testing::TestParamInfo<SmsRow>& info) {
  const SmsRow& r = info.param;
  return std::to_string(r.batch) + "x" + std::to_string(r.heads) + "x" + std::to_string(r.n) + "x" +
         std::to_string(r.d) + (r.causal ? "_causal" : "") + "_on_" + std::to_string(r.sms);
}

// The row of the case on `want.sms` SMs (its main_sm_count, which the measurement reader keeps); with each
// block's start and end when asked.
ValidationRow simulate(const SmsRow& want, bool record_blocks = false) {
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(kData))
    if (m.label ==
            "EFFICIENT_ATTENTION bwd " + std::to_string(want.batch) + "x" + std::to_string(want.heads) &&
        m.n == want.n && m.d == want.d && m.causal == want.causal && m.sm_count == want.sms)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", kData, rows,
                                       {"chip.cores=" + std::to_string(want.sms)}, record_blocks);
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

#ifndef ATTNSIM_MEMEFF_SMS_SLOW  // the slow binary has only its two rows above
// One wave on 128 SMs (validation/data/h200_memeff_sms_onewave_cases.csv: 32 to 128 blocks of one to eight
// heads, every block starting together on a flushed L2) simulated on the SMs' own attachment, the pair
// probe's partition of each SM the launch ran on, in the order CUDA handed them blocks (column
// core_partitions): long runs of one partition, so a dQ tile passes mostly between SMs of one partition.
// There the model's L2 traffic between the partitions is the GPU's (thirty-fourth session, 2026-11-30):
// sectors that missed the partition asked 0.74-1.07 of the measured, sectors across the fabric 0.85-0.93.
// On the presets' core % 2, where consecutive blocks alternate partitions and every load of a tile under its
// lock finds a stale copy, 2.4-7.9 and 1.27-1.38. DRAM reads on the SMs' attachment: the compulsory bytes
// up to 36 MiB of data (within 2%), short at the L2's knee (48.5 MiB: 0.80, 0.91, 0.94; docs/validation.md,
// "The partitions' traffic on the SMs' own attachment"). One row in the default suite, the other eleven under
// `long`.
struct OneWaveRow {
  int64_t heads, n;
};

void PrintTo(const OneWaveRow& r, std::ostream* os) {
  *os << "1x" << r.heads << "x" << r.n << "x128";
}

// The long binary leaves out the default suite's row: a test of the same name in both would share the label.
std::vector<OneWaveRow> one_wave_rows() {
#ifdef ATTNSIM_MEMEFF_SMS_LONG
  return {{1, 4096}, {1, 8192}, {1, 10240}, {1, 12288}, {1, 14336}, {1, 16384},
          {2, 4096}, {3, 4096}, {4, 4096},  {4, 2048},  {6, 2048}};
#else
  return {{8, 2048}};
#endif
}

struct PartitionTraffic : L2Ratios {
  double data_mib = 0;
};

PartitionTraffic one_wave(const OneWaveRow& want, bool own_attachment) {
  const std::string file = kRoot + "/validation/data/h200_memeff_sms_onewave_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(file))
    if (m.label == "EFFICIENT_ATTENTION bwd 1x" + std::to_string(want.heads) && m.n == want.n && m.d == 128 &&
        !m.causal)
      rows.push_back(m);
  EXPECT_EQ(rows.size(), 1u);
  if (rows.size() != 1) return {};
  EXPECT_EQ(rows[0].core_partitions.size(), 128u);
  std::vector<std::string> params = {"chip.cores=128"};
  if (own_attachment) params.push_back("l2.core_partitions=" + rows[0].core_partitions);
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", file, rows, params);
  EXPECT_EQ(s.rows.size(), 1u);
  if (s.rows.empty()) return {};
  const ValidationRow& r = s.rows[0];
  // Q, K, V, O, dO and the three gradients (f16) and the f32 workspace, a row of each a head, and the frames
  // of one block per 128 keys (69,632 bytes each).
  const double data = static_cast<double>(want.heads * want.n) * (8 * 128 * 2 + 4 * 128) +
                      static_cast<double>(want.heads * want.n / 128) * 69632;
  return {l2_ratios(r), data / (1 << 20)};
}

class MemEfficientOneWave : public ::testing::TestWithParam<OneWaveRow> {};

TEST_P(MemEfficientOneWave, CrossesThePartitionsAsTheGpuOnItsOwnAttachment) {
  const PartitionTraffic own = one_wave(GetParam(), true);
  std::printf("%.1f MiB of data: lookups %.3f, fabric %.3f, DRAM reads %.3f\n", own.data_mib, own.lookups,
              own.fabric, own.dram);
  EXPECT_GT(own.lookups, 0.70);
  EXPECT_LT(own.lookups, 1.15);
  EXPECT_GT(own.fabric, 0.82);
  EXPECT_LT(own.fabric, 0.96);
  if (own.data_mib < 40) {
    EXPECT_NEAR(own.dram, 1.0, 0.02);
  }
  EXPECT_GT(own.dram, 0.78);  // short at the knee: the open part of issue 7
  EXPECT_LT(own.dram, 1.02);
}

TEST_P(MemEfficientOneWave, AlternatingPartitionsRefetchEveryTile) {
  const PartitionTraffic alternating = one_wave(GetParam(), false);
  std::printf("core %% 2: lookups %.3f, fabric %.3f\n", alternating.lookups, alternating.fabric);
  EXPECT_GT(alternating.lookups, 2.0);
  EXPECT_GT(alternating.fabric, 1.2);
}

INSTANTIATE_TEST_SUITE_P(H200, MemEfficientOneWave, ::testing::ValuesIn(one_wave_rows()),
                         [](const auto& info) {
                           return "1x" + std::to_string(info.param.heads) + "x" +
                                  std::to_string(info.param.n);
                         });
#endif

#ifdef ATTNSIM_MEMEFF_SMS_LONG
// How clean a launch's waves are, from its blocks' end times in launch order (any unit): the first `slots`
// blocks start together, block b >= slots when the (b - slots)-th block to end has ended, as the GPU hands
// blocks out (validation/summarize_block_ends.py computes the same for the GPU's and the model's files).
struct Waves {
  double p10 = 0, p90 = 0;  // block durations after the first wave over their median
  double first_spread = 0;  // the first wave's ends, 5th to 95th percentile, over the median duration
  double heads = 0;         // heads with a block running, averaged over the launch
};

Waves waves(const std::vector<double>& ends, const std::vector<int64_t>& heads, size_t slots) {
  std::vector<double> sorted = ends;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> later;
  for (size_t b = slots; b < ends.size(); ++b) later.push_back(ends[b] - sorted[b - slots]);
  std::sort(later.begin(), later.end());
  std::vector<double> first(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(slots));
  std::sort(first.begin(), first.end());
  const auto at = [](const std::vector<double>& v, double q) { return v[static_cast<size_t>(q * v.size())]; };
  const double median = at(later, 0.5), t0 = at(first, 0.5) - median;
  std::vector<std::pair<double, int64_t>> events;  // (time, +head + 1 starting or -(head + 1) ending)
  for (size_t b = 0; b < ends.size(); ++b) {
    events.emplace_back(b < slots ? t0 : sorted[b - slots], heads[b] + 1);
    events.emplace_back(ends[b], -(heads[b] + 1));
  }
  std::sort(events.begin(), events.end());
  std::map<int64_t, int> running;
  double weighted = 0, last = t0;
  for (const auto& [t, head] : events) {
    weighted += static_cast<double>(running.size()) * (t - last);
    last = t;
    if (head > 0)
      ++running[head];
    else if (--running[-head] == 0)
      running.erase(-head);
  }
  return {at(later, 0.1) / median, at(later, 0.9) / median, (at(first, 0.95) - at(first, 0.05)) / median,
          weighted / (sorted.back() - t0)};
}

// A GPU's waves from a file of block ends (causal,block,end_ns: one launch of each case, blocks in launch
// order), `per_head` blocks a head and `slots` resident at a time; `blocks` expected of each case.
Waves gpu_waves_from(const std::string& file, bool causal, int64_t per_head, size_t slots, size_t blocks) {
  std::ifstream in(kRoot + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);  // causal,block,end_ns
  std::vector<double> ends;
  std::vector<int64_t> heads;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string c, block, end;
    std::getline(cells, c, ','), std::getline(cells, block, ','), std::getline(cells, end, ',');
    if ((c == "1") != causal) continue;
    ends.push_back(std::stod(end));
    heads.push_back(std::stoll(block) / per_head);
  }
  EXPECT_EQ(ends.size(), blocks);
  return ends.size() == blocks ? waves(ends, heads, slots) : Waves{};
}

// The GPU's: validation/data/h200_block_ends_memeff_1x16x8192x128.csv (the second launch of each case in
// h200_block_ends.csv.gz: bash validation/run_block_ends.sh, 128 SMs, one block per SM, 64 a head).
Waves gpu_waves(bool causal) {
  return gpu_waves_from("h200_block_ends_memeff_1x16x8192x128.csv", causal, 64, 128, 1024);
}

class MemEfficientWaves : public ::testing::TestWithParam<bool> {};

// The GPU's blocks stay in waves as clean as the model's (docs/validation.md, "When each block ends"): the
// shortfall of DRAM reads on 128 SMs is not blocks drifting out of their waves. Measured: without the mask
// blocks within 1-2% of each other (p10-p90), the first wave ending within 1.5% of a block, 2.06 heads
// running; causal p10-p90 0.27-1.72, 3.44 heads. The model: 0.98-1.02, 5.6%, 2.16; 0.31-1.67, 3.36
// (0.99-1.01, 2.6%, 2.08; 0.36-1.63, 3.27 while D's prologue went through shared memory; why the first
// wave's ends spread more now is not looked into). The first wave's spread is held under 7% of a block.
TEST_P(MemEfficientWaves, AsCleanAsTheGpus) {
  const bool causal = GetParam();
  const ValidationRow row = simulate({1, 16, 8192, 128, causal, 128, 0, 0}, true);
  ASSERT_EQ(row.blocks.size(), 1024u);
  std::vector<BlockRecord> blocks = row.blocks;
  std::sort(blocks.begin(), blocks.end(), [](const BlockRecord& a, const BlockRecord& b) {
    return std::make_pair(a.index[1], a.index[0]) < std::make_pair(b.index[1], b.index[0]);
  });
  std::vector<double> ends;
  std::vector<int64_t> heads;
  for (const BlockRecord& b : blocks)
    ends.push_back(static_cast<double>(b.end_cycle)), heads.push_back(b.index[1]);
  const Waves model = waves(ends, heads, 128), gpu = gpu_waves(causal);
  std::printf("GPU: p10 %.3f p90 %.3f first wave %.3f heads %.2f; model: %.3f %.3f %.3f %.2f\n", gpu.p10,
              gpu.p90, gpu.first_spread, gpu.heads, model.p10, model.p90, model.first_spread, model.heads);
  EXPECT_NEAR(model.heads, gpu.heads, 0.25);
  if (!causal) {
    for (const Waves& w : {model, gpu}) {
      EXPECT_GT(w.p10, 0.97);
      EXPECT_LT(w.p90, 1.03);
      EXPECT_LT(w.first_spread, 0.07);
    }
  } else {
    EXPECT_NEAR(model.p10, gpu.p10, 0.12);
    EXPECT_NEAR(model.p90, gpu.p90, 0.12);
  }
}

INSTANTIATE_TEST_SUITE_P(H200, MemEfficientWaves, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

// A causal block's time against its steps (key block j of a head visits T - j query blocks, T = n / 128),
// blocks after the first wave, starts inferred as in waves(): the least-squares line's intercept (the
// block's fixed part: D's prologue over the head's T query blocks, K_j, the epilogue) and slope (one step).
struct BlockLine {
  double fixed = 0, step = 0;
};

BlockLine block_line(const std::vector<double>& ends, int64_t query_blocks, size_t slots) {
  std::vector<double> sorted = ends;
  std::sort(sorted.begin(), sorted.end());
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (size_t b = slots; b < ends.size(); ++b) {
    const double steps = static_cast<double>(query_blocks - static_cast<int64_t>(b) % query_blocks);
    const double time = ends[b] - sorted[b - slots];
    sx += steps, sy += time, sxx += steps * steps, sxy += steps * time, n += 1;
  }
  const double step = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - step * sx) / n, step};
}

// The GPU's: the second launch of each case of validation/data/h200_block_ends_prologue_rep1.csv (bash
// validation/run_block_ends.sh with four causal CASES, T = 32 to 256, 128 SMs), %globaltimer ns times the
// spy's measured SM clock (1.79-1.81 GHz).
std::vector<double> gpu_causal_ends_in_cycles(int64_t heads, int64_t n) {
  std::ifstream in(kRoot + "/validation/data/h200_block_ends_prologue_rep1.csv");
  std::string line;
  std::getline(in, line);  // heads,n,block,end_ns,spy_clock_ghz
  std::vector<double> ends;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string h, len, block, end, clock;
    std::getline(cells, h, ','), std::getline(cells, len, ','), std::getline(cells, block, ',');
    std::getline(cells, end, ','), std::getline(cells, clock, ',');
    if (std::stoll(h) == heads && std::stoll(len) == n) ends.push_back(std::stod(end) * std::stod(clock));
  }
  return ends;
}

// The model's: the 128-SM causal row of 1 x 16 x 8,192 with its shape changed (the grid follows it), the
// shapes in one validation (one simulation kernel a process).
std::vector<std::vector<double>> model_causal_ends(const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(kData))
    if (m.label == "EFFICIENT_ATTENTION bwd 1x16" && m.n == 8192 && m.d == 128 && m.causal &&
        m.sm_count == 128)
      for (const auto& [heads, n] : shapes) {
        rows.push_back(m);
        rows.back().heads = heads, rows.back().n = n;
        rows.back().heads_inner_outputs = heads;  // batch 1: (b, n, h, d) rows of every head
      }
  EXPECT_EQ(rows.size(), shapes.size());
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", kData, rows, {"chip.cores=128"}, true);
  std::vector<std::vector<double>> out;
  for (const ValidationRow& row : s.rows) {
    std::vector<BlockRecord> blocks = row.blocks;
    std::sort(blocks.begin(), blocks.end(), [](const BlockRecord& a, const BlockRecord& b) {
      return std::make_pair(a.index[1], a.index[0]) < std::make_pair(b.index[1], b.index[0]);
    });
    out.emplace_back();
    for (const BlockRecord& b : blocks) out.back().push_back(static_cast<double>(b.end_cycle));
  }
  return out;
}

// The kernel's computeDelta loads O_i and dO_i with ld.global and multiplies them in registers; the
// model's prologue went through shared memory until the thirty-sixth session. The GPU's fixed part: 49 k,
// 88 k, 176 k, 457 k cycles at T = 32, 64, 128, 256 (1,322 more a query block from 32 to 128); the model's
// 73 k, 127 k, 206 k, 537 k (1,387; 72 k and 128 k at T = 32 and 64 with the rolled k-loops), and 108 k,
// 198 k, 364 k, 812 k (2,664) through shared memory
// (docs/validation.md, "The memory-efficient backward's prologue runs in registers"). Held here at T = 32
// and 64 only (the larger shapes take minutes to simulate): the fixed part 1.45 of the GPU's (2.2-2.25
// before), its growth from 32 to 64 1.45 (2.3). The step is 0.86-0.87 of the GPU's, 28.7-29.0 k cycles
// against 33.3-33.5 k, since the program's products loop over k as CUTLASS's mainloops do (0.75-0.77
// before: docs/validation.md, "The memory-efficient backward's k-loops are rolled"). What is left: the
// model's fixed time beside the prologue, 21 k cycles more than the GPU's 8 k (most of it the spill
// reloads at the block's end, one round trip after another), and 4.5 k cycles of the step.
TEST(MemEfficientBlockTime, FixedPartGrowsWithTheHeadAsTheGpus) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{16, 4096}, {16, 8192}};
  const std::vector<std::vector<double>> model_ends = model_causal_ends(shapes);
  ASSERT_EQ(model_ends.size(), shapes.size());
  std::vector<BlockLine> model, gpu;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto [heads, n] = shapes[k];
    const std::vector<double> g = gpu_causal_ends_in_cycles(heads, n), &m = model_ends[k];
    ASSERT_EQ(g.size(), static_cast<size_t>(heads * n / 128));
    ASSERT_EQ(m.size(), g.size());
    gpu.push_back(block_line(g, n / 128, 128)), model.push_back(block_line(m, n / 128, 128));
    std::printf("T = %lld: fixed part, step (cycles): GPU %.0f, %.0f; model %.0f, %.0f\n",
                static_cast<long long>(n / 128), gpu.back().fixed, gpu.back().step, model.back().fixed,
                model.back().step);
    EXPECT_GT(model.back().fixed / gpu.back().fixed, 1.3);
    EXPECT_LT(model.back().fixed / gpu.back().fixed, 1.6);
    EXPECT_GT(model.back().step / gpu.back().step, 0.80);
    EXPECT_LT(model.back().step / gpu.back().step, 0.92);
  }
  const double gpu_growth = gpu[1].fixed - gpu[0].fixed, model_growth = model[1].fixed - model[0].fixed;
  std::printf("fixed part's growth from T = 32 to 64: GPU %.0f, model %.0f cycles\n", gpu_growth,
              model_growth);
  EXPECT_NEAR(gpu_growth, 38.9e3, 1e3);
  EXPECT_GT(model_growth / gpu_growth, 1.2);
  EXPECT_LT(model_growth / gpu_growth, 1.6);
}

// Runs of block ends no more than `gap` apart, in order: a wave whose blocks end together is one run.
std::vector<std::vector<double>> end_groups(std::vector<double> ends, double gap) {
  std::sort(ends.begin(), ends.end());
  std::vector<std::vector<double>> groups;
  for (const double e : ends) {
    if (groups.empty() || e - groups.back().back() > gap) groups.emplace_back();
    groups.back().push_back(e);
  }
  return groups;
}

// The memory-efficient forward without the mask at 1 x 8 x 32,768 x 128 on 128 SMs, two blocks an SM
// (validation/data/h200_block_ends_memeff_fwd_1x8x32768x128.csv: the second launch of that case in
// h200_block_ends_fwd.csv.gz, bash validation/run_block_ends.sh, 2026-12-03). On the GPU an SM's older
// block is served first: the first wave ends in two groups of one block per SM, the younger 16% of a block
// after the older, and the two slots drift further apart wave by wave until they are half a block apart, so
// that a fresh group of blocks starts reading its head's K and V every half block. The model's two blocks
// share their SM evenly and end together wave after wave (docs/validation.md, "The older block first").
// This holds both, the model's side as the gap it is: it fails once the model serves the older block
// first, which should then be held as the GPU's.
TEST(MemEfficientForwardWaves, TheGpusSlotsDriftToHalfABlockTheModelsKeepStep) {
  std::ifstream in(kRoot + "/validation/data/h200_block_ends_memeff_fwd_1x8x32768x128.csv");
  std::string line;
  std::getline(in, line);  // block,end_ns
  std::vector<double> gpu_ends;
  while (std::getline(in, line)) gpu_ends.push_back(std::stod(line.substr(line.find(',') + 1)) / 1e3);
  ASSERT_EQ(gpu_ends.size(), 4096u);
  const auto gpu = end_groups(gpu_ends, 30);  // us
  ASSERT_EQ(gpu.size(), 32u);
  for (const auto& g : gpu) EXPECT_EQ(g.size(), 128u);
  // The second slot's ends after the first's, over the first slot's time from one end to its next.
  const auto offset = [&gpu](size_t wave) {
    const double first = gpu[2 * wave].front();
    return (gpu[2 * wave + 1].front() - first) / (gpu[2 * wave + 2].front() - first);
  };
  std::printf("GPU: slots %.3f of a block apart in the first wave, %.3f in the fifteenth\n", offset(0),
              offset(14));
  EXPECT_GT(offset(0), 0.12);  // 0.171
  EXPECT_LT(offset(0), 0.25);
  EXPECT_GT(offset(14), 0.45);  // 0.496

  std::vector<Measurement> rows;
  const std::string cases = kRoot + "/validation/data/h200_sdpa_cases.csv";
  for (const Measurement& m : read_measurements(cases))
    if (m.label == "EFFICIENT_ATTENTION fwd 1x8" && m.n == 32768 && m.d == 128 && !m.causal)
      rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", cases, rows, {"chip.cores=128"}, true);
  ASSERT_EQ(s.rows.size(), 1u);
  std::vector<double> model_ends;
  for (const BlockRecord& b : s.rows[0].blocks) model_ends.push_back(static_cast<double>(b.end_cycle));
  ASSERT_EQ(model_ends.size(), 4096u);
  const auto model = end_groups(model_ends, 30e-6 * 1.5e9);  // 30 us at the base clock
  std::printf("model: the first %zu blocks end together\n", model.front().size());
  EXPECT_EQ(model.front().size(), 256u);
}

class FlashForwardSms : public ::testing::TestWithParam<int> {};

// FlashAttention-2's forward without the mask at 1 x 8 x 32,768 x 128 on 64 to 132 SMs
// (validation/data/h200_memeff_sms_fa2_fwd_cases.csv: run_memeff_sms.sh PASS=sdpa_flash, 2026-12-03). Its
// two blocks an SM keep step on the GPU as in the model, and a wave is half a head on 128 SMs, a head's part
// and the next head's start elsewhere: the GPU reads Q, K and V once on 64 and 128 SMs and up to 1.6 times
// between. The model reads within 1% of it at every count (0.996-1.010 as of 2026-12-03).
TEST_P(FlashForwardSms, WithoutTheMaskAsTheGpuAtEveryCount) {
  const std::string cases = kRoot + "/validation/data/h200_memeff_sms_fa2_fwd_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(cases))
    if (!m.causal && m.sm_count == GetParam()) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s =
      validate(kRoot + "/configs/h200.yaml", cases, rows, {"chip.cores=" + std::to_string(GetParam())});
  ASSERT_EQ(s.rows.size(), 1u);
  const double ratio = s.rows[0].predicted_dram_read / rows[0].dram_read_bytes;
  std::printf("%d SMs: model %.1f MB, GPU %.1f MB: %.3f\n", GetParam(), s.rows[0].predicted_dram_read / 1e6,
              rows[0].dram_read_bytes / 1e6, ratio);
  EXPECT_NEAR(ratio, 1.0, 0.03);
}

INSTANTIATE_TEST_SUITE_P(H200, FlashForwardSms, ::testing::Values(64, 96, 120, 128, 132));

// The GPU's waves of 8 x 32 x 2,048 x 128 on 96 SMs of an H100: the second launch of each case in
// validation/data/h100_block_ends_s96.csv.gz (bash validation/run_block_ends.sh, 2026-12-07), one block per
// SM, 16 a head, %globaltimer ns.
Waves h100_gpu_waves_on_96(bool causal) {
  return gpu_waves_from("h100_block_ends_memeff_8x32x2048x128_s96.csv", causal, 16, 96, 4096);
}

Waves model_waves(std::vector<BlockRecord> blocks, size_t slots) {
  std::sort(blocks.begin(), blocks.end(), [](const BlockRecord& a, const BlockRecord& b) {
    return std::tie(a.index[2], a.index[1], a.index[0]) < std::tie(b.index[2], b.index[1], b.index[0]);
  });
  std::vector<double> ends;
  std::vector<int64_t> heads;
  for (const BlockRecord& b : blocks)
    ends.push_back(static_cast<double>(b.end_cycle)), heads.push_back(b.index[2] * 1000 + b.index[1]);
  return waves(ends, heads, slots);
}

// Where the causal row leaves the model, on 96 SMs of an H100 (docs/validation.md, "The causal row on 96
// SMs"): the GPU's blocks run as the model's (heads in flight 6.2 without the mask and 10.3 causal on both
// sides, the causal blocks' p10-p90 0.30-1.66 against 0.33-1.61), and over five placements of its tensors
// (validation/data/h100_memeff_sms_pads_cases.csv) the GPU's causal launch reads 1.006-1.060 of its
// unmasked one (DRAM, 1,141-1,169 MB against 1,103-1,148), the model's 0.980. A known miss held in place:
// the unmasked row 0.93-1.02 of every placement (0.945-0.984 as of 2026-12-07), the causal row 0.88-0.96,
// and the model's ratio under the GPU's lowest; a change that closes the gap fails here and must say why.
// (Another H100 read the causal row at 0.99-1.00 of the unmasked one: h100_memeff_sms_miss_cases.csv.)
TEST(MemEfficientSmsH100, CausalBlocksRunAsTheGpusButReadLessOn96Sms) {
  const std::string cases = kRoot + "/validation/data/h100_memeff_sms_pads_cases.csv";
  std::vector<Measurement> rows;
  std::map<bool, std::vector<double>> gpu_reads;
  for (const Measurement& m : read_measurements(cases)) {
    if (m.sm_count != 96) continue;
    gpu_reads[m.causal].push_back(m.dram_read_bytes);
    if (gpu_reads[m.causal].size() == 1) rows.push_back(m);  // the first placement's row stands for all
  }
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(gpu_reads[false].size(), 5u);
  ASSERT_EQ(gpu_reads[true].size(), 5u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", cases, rows, {"chip.cores=96"}, true);
  ASSERT_EQ(s.rows.size(), 2u);
  std::map<bool, double> model_reads;
  for (const ValidationRow& row : s.rows) {
    const bool causal = row.measured.causal;
    const Waves model = model_waves(row.blocks, 96), gpu = h100_gpu_waves_on_96(causal);
    std::printf("%s: GPU p10 %.3f p90 %.3f heads %.2f; model %.3f %.3f %.2f\n", causal ? "causal" : "full",
                gpu.p10, gpu.p90, gpu.heads, model.p10, model.p90, model.heads);
    EXPECT_NEAR(model.heads, gpu.heads, 0.3);
    EXPECT_NEAR(model.p10, gpu.p10, 0.06);
    EXPECT_NEAR(model.p90, gpu.p90, 0.06);
    model_reads[causal] = row.predicted_dram_read;
  }
  double lowest_gpu_ratio = 2;
  for (size_t p = 0; p < 5; ++p)
    lowest_gpu_ratio = std::min(lowest_gpu_ratio, gpu_reads[true][p] / gpu_reads[false][p]);
  const double model_ratio = model_reads[true] / model_reads[false];
  std::printf("causal over unmasked DRAM reads: model %.3f, GPU at least %.3f\n", model_ratio,
              lowest_gpu_ratio);
  for (const double measured : gpu_reads[false]) {
    EXPECT_GT(model_reads[false] / measured, 0.93);
    EXPECT_LT(model_reads[false] / measured, 1.02);
  }
  for (const double measured : gpu_reads[true]) {
    EXPECT_GT(model_reads[true] / measured, 0.88);
    EXPECT_LT(model_reads[true] / measured, 0.96);
  }
  EXPECT_LT(model_ratio, lowest_gpu_ratio);
}
#endif

}  // namespace
}  // namespace attnsim
