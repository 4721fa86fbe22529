// The simulator against the GPU: validation/data/h200_measurements.csv holds Nsight Compute counters of
// CUDA kernels that run the same schedules (validation/run_on_device.sh). The simulator's off-chip bytes
// (it has no L2) must equal the bytes the SMs moved to and from L2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <algorithm>
#include <map>

#include "sim/compare.h"
#include "sim/reference.h"
#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

TEST(Validation, PredictedBytesEqualMeasuredSmToL2Traffic) {
  auto measurements = read_measurements(kRoot + "/validation/data/h200_measurements.csv");
  ASSERT_GE(measurements.size(), 10u);
  ValidationSummary s = validate(kRoot + "/configs/h200-sm.yaml",
                                 kRoot + "/validation/data/h200_measurements.csv", measurements);
  // Accel-Sim's convention: NRMSE and Pearson r over all configurations.
  EXPECT_LT(s.read_nrmse, 0.01);
  EXPECT_LT(s.write_nrmse, 0.01);
  EXPECT_GT(s.read_pearson, 0.999);
  EXPECT_GT(s.write_pearson, 0.999);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.01)
        << m.schedule << " n=" << m.n << " causal=" << m.causal;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.01) << m.schedule << " n=" << m.n;
  }
}

// The whole H100 against validation/data/h100_dram_sweep.csv (28 configurations of the project's kernels,
// Nsight Compute, caches flushed before each kernel, each launch's measured occupancy): the bounds.
// The two rows at N = 131,072 take a minute each to simulate: they are 0.966 (497 MB measured; the next
// test holds it) and 1.79 (causal, 84 MB measured) of the measured DRAM reads; over all 28 rows DRAM reads
// have NRMSE 0.074 (2026-12-07, a DRAM calendar per channel; 0.086 with one; docs/chip.md).
TEST(Validation, WholeChipDramBytesMatchTheH100Sweep) {
  const std::string data = kRoot + "/validation/data/h100_dram_sweep.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.n < 131072) rows.push_back(m);
  ASSERT_EQ(rows.size(), 26u);
  ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_TRUE(s.chip);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what = m.schedule + " n=" + std::to_string(m.n) + " d=" + std::to_string(m.d) +
                             " heads=" + std::to_string(m.heads) + (m.causal ? " causal" : "");
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.005) << what;
    if (m.schedule == "flash2" || m.schedule == "flash1") {
      EXPECT_NEAR(row.predicted_dram_read / m.dram_read_bytes, 1.0, 0.10) << what;
    }
  }
  EXPECT_LE(s.dram_read_nrmse, 0.10);
  EXPECT_GE(s.dram_read_pearson, 0.98);
  std::printf("DRAM read NRMSE %.4f, Pearson r %.5f; DRAM write NRMSE %.4f, Pearson r %.5f\n",
              s.dram_read_nrmse, s.dram_read_pearson, s.dram_write_nrmse, s.dram_write_pearson);
}

// The longest FlashAttention row, N = 131,072 without a mask (K and V 33.5 MB, three blocks per SM): the GPU
// reads K and V about 15 times (497 MB), once per group of co-resident blocks at its own phase, and the
// model about 14 times (0.966 with the presets' DRAM calendar per channel; 0.951 with one). Within the
// issue's 10% for every FlashAttention row, and below 1 as long as the model's blocks drift apart less than
// the GPU's. It depends on how far a core's blocks drift apart, which the FFMA kernel's measured block times
// fix without the tensor-core code's result latencies (the next test); simulated with them (as validate did
// for these rows from 051bd3d, which gave the presets those latencies, to 2026-11-26), the row came out at
// 0.43. About a minute.
TEST(Validation, TheLongestFlashRowReadsKAndVOncePerGroupOfResidentBlocks) {
  const std::string data = kRoot + "/validation/data/h100_dram_sweep.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.n == 131072 && !m.causal) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].kernel, "ffma");
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 1u);
  const double ratio = s.rows[0].predicted_dram_read / rows[0].dram_read_bytes;
  EXPECT_GT(ratio, 0.90);
  EXPECT_LT(ratio, 1.0);
  std::printf("N = 131,072: DRAM reads %.3f of the measured\n", ratio);
}

// The tensor-core flash2 at d = 128, 128 x 64 tiles, causal, walking its key blocks up (its own order) or
// down from the diagonal (FlashAttention-2's, harness --keys-descending;
// validation/data/h100_tc_key_order.csv, validation/run_tc_key_order.sh). Going up it reads Q, K and V once
// from DRAM at every shape, and so does the model (within 1%). Going down at N = 32,768 the GPU reads 11-13%
// more (2.7-3.3 MB more per head, at 2, 4 and 8 heads; nothing more at N = 8,192 or 2,048) and the model
// 1-4% more: 0.90-0.94 of the measured, a known miss held here so that a change to it shows
// (docs/validation.md). The non-causal row of the file (0.992) takes as long as the others together and is
// left to `attnsim validate`.
TEST(Validation, TensorCoreFlash2KeyOrder) {
  const std::string data = kRoot + "/validation/data/h100_tc_key_order.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.causal) rows.push_back(m);
  ASSERT_EQ(rows.size(), 10u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 10u);
  int descending_long = 0;
  std::map<std::pair<int64_t, int64_t>, std::array<double, 2>> predicted;  // (n, heads) -> up, down
  for (const auto& row : s.rows) {
    predicted[{row.measured.n, row.measured.heads}][row.measured.keys_descending] = row.predicted_dram_read;
    const auto& m = row.measured;
    const std::string what =
        fmt::format("n={} heads={}{}", m.n, m.heads, m.keys_descending ? " down" : " up");
    EXPECT_EQ(m.kernel, "tc") << what;
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.005) << what;
    const double ratio = row.predicted_dram_read / m.dram_read_bytes;
    if (m.keys_descending && m.n == 32768) {
      EXPECT_GT(ratio, 0.85) << what;
      EXPECT_LT(ratio, 0.96) << what;
      ++descending_long;
    } else {
      EXPECT_NEAR(ratio, 1.0, 0.01) << what;
    }
  }
  EXPECT_EQ(descending_long, 3);
  // The model's own re-reads going down (the column keys_descending reaches the trace): 1-4% at N = 32,768.
  for (const auto& [shape, up_down] : predicted) {
    if (shape.first == 32768) {
      EXPECT_GT(up_down[1], 1.005 * up_down[0]) << shape.second << " heads";
    }
  }
}

// The same kernel with 64 x 64 tiles at d = 128 (128 threads, 215 registers, 80 KiB: two blocks per SM, as
// FlashAttention-2's kernel runs), causal, N = 32,768, 2, 4 and 8 heads
// (validation/data/h100_tc_key_order_64x64.csv): up, Q, K and V once (within 1%); down, the GPU reads 3-8%
// more and the model 2-7% less than the GPU (0.983, 0.975, 0.934): within the 10%.
TEST(Validation, TensorCoreFlash2KeyOrderAtTwoBlocksPerSm) {
  const std::string data = kRoot + "/validation/data/h100_tc_key_order_64x64.csv";
  const std::vector<Measurement> rows = read_measurements(data);
  ASSERT_EQ(rows.size(), 6u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 6u);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what = fmt::format("heads={}{}", m.heads, m.keys_descending ? " down" : " up");
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_dram_read / m.dram_read_bytes, 1.0, m.keys_descending ? 0.10 : 0.01) << what;
  }
}

// Per block index (x + 256 y), its %globaltimer start and end (validation/run_block_times.sh's CSV).
std::map<int64_t, std::array<double, 2>> measured_block_times(const std::string& path, double& end) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns
  std::map<int64_t, std::array<double, 2>> measured;
  end = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream stream(line);
    for (std::string cell; std::getline(stream, cell, ',');) cells.push_back(cell);
    if (cells.size() != 7u) {
      ADD_FAILURE() << path << ": " << line;
      continue;
    }
    measured[std::stoll(cells[0])] = {std::stod(cells[2]), std::stod(cells[6])};
    end = std::max(end, std::stod(cells[6]));
  }
  return measured;
}

// When each block of the tensor-core flash2 (128 x 64, d = 128, causal, keys down, 2 x 32,768: 512 blocks of
// 1 to 256 key blocks, one per SM) starts and ends, as fractions of the kernel's duration: the GPU's
// %globaltimer (h100_tc_block_times_n32768_h2_causal_down.csv, free-running clocks) and the model's block
// records (`attnsim validate --block-times`) agree within 0.25% on every block (8 heads: 0.07%). So the
// rows' DRAM miss above is not when blocks run but what the L2 keeps.
TEST(Validation, TensorCoreFlash2BlocksStartAndEndAsOnTheH100) {
  double measured_end = 0;
  const auto measured = measured_block_times(
      kRoot + "/validation/data/h100_tc_block_times_n32768_h2_causal_down.csv", measured_end);
  ASSERT_EQ(measured.size(), 512u);
  const std::string data = kRoot + "/validation/data/h100_tc_key_order.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.causal && m.keys_descending && m.n == 32768 && m.heads == 2) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows, {}, true);
  ASSERT_EQ(s.rows.size(), 1u);
  const std::vector<BlockRecord>& blocks = s.rows[0].blocks;
  ASSERT_EQ(blocks.size(), 512u);
  double simulated_end = 0;
  for (const BlockRecord& b : blocks) simulated_end = std::max(simulated_end, double(b.end_cycle));
  for (const BlockRecord& b : blocks) {
    const int64_t index = b.index[0] + 256 * b.index[1];  // the grid is (n / 128, heads)
    const auto& gpu = measured.at(index);
    EXPECT_NEAR(double(b.start_cycle) / simulated_end, gpu[0] / measured_end, 0.005) << "block " << index;
    EXPECT_NEAR(double(b.end_cycle) / simulated_end, gpu[1] / measured_end, 0.005) << "block " << index;
  }
}

// The same 128 x 64 kernel at d = 128 compiled for two blocks per SM, FlashAttention-2's occupancy (harness
// --tc-min-blocks 2: Q_i read from shared memory at every key block instead of held in registers;
// validation/data/h100_tc_two_blocks.csv). Going down at N = 32,768 it reads 1.31 / 2.95 / 4.74 times Q, K
// and V from DRAM at 2 / 4 / 8 heads, near PyTorch's FlashAttention-2 kernel (1.37 / 3.73 / 5.97) and unlike
// the one-block build (1.13 / 1.11 / 1.11): the re-reads come from two 128-row blocks per SM walking their
// keys down, not from anything else of PyTorch's kernel. Going up it reads them once, and so does the model.
// The model going down: 1.194 / 1.182 / 0.942 of the GPU's (16 x 8,192: 0.924; without the mask 0.957), held
// as known misses: the L2 keeps less than the GPU's at 2 and 4 heads, the blocks' times agreeing (mean |end|
// under 1% of the kernel at 8 heads). The hashed set index gave 1.062 / 1.162 / 0.821 and 0.807. SM -> L2
// writes: O and 16 bytes of spill per thread, each block storing its spill once (the build spills 16 bytes at
// 128 registers), exact.
TEST(Validation, TensorCoreFlash2TwoBlocksPerSmReReadAsFlashAttention2) {
  const std::string data = kRoot + "/validation/data/h100_tc_two_blocks.csv";
  const std::vector<Measurement> rows = read_measurements(data);
  ASSERT_EQ(rows.size(), 8u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows, {}, true);
  ASSERT_EQ(s.rows.size(), 8u);
  // (n, heads, causal) of the rows going down -> the model's DRAM reads over the GPU's, low and high bound.
  const std::map<std::array<int64_t, 3>, std::array<double, 2>> down = {{{32768, 2, 1}, {1.15, 1.24}},
                                                                        {{32768, 4, 1}, {1.13, 1.23}},
                                                                        {{32768, 8, 1}, {0.90, 0.99}},
                                                                        {{8192, 16, 1}, {0.88, 0.97}},
                                                                        {{32768, 8, 0}, {0.90, 1.10}}};
  int compared_down = 0;
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what = fmt::format("n={} heads={} causal={}{}", m.n, m.heads, m.causal ? 1 : 0,
                                         m.keys_descending ? " down" : " up");
    EXPECT_EQ(m.blocks_per_sm, std::vector<int64_t>{2}) << what;
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    // O and the build's 16 bytes of spill a thread, stored once by every block (the CSV's local_bytes).
    EXPECT_EQ(m.spill_bytes_per_block, 16 * 256) << what;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.001) << what;
    EXPECT_GT(m.l1_write_bytes, 1.12 * m.n * m.heads * m.d * 2) << what;  // the spill is 12.5% beyond O
    const double ratio = row.predicted_dram_read / m.dram_read_bytes;
    if (!m.keys_descending) {
      EXPECT_NEAR(ratio, 1.0, 0.01) << what;
      // The L2's own counters agree too: sectors missing in the partition asked first, and sectors between
      // the partitions (copies filled from home and stores to far-homed lines, as ltcfabric counts them).
      EXPECT_NEAR(row.predicted_l2_lookup_read_miss_sectors / m.l2_lookup_miss_sectors, 1.0, 0.03) << what;
      EXPECT_NEAR(row.predicted_l2_fabric_sectors / m.l2_fabric_sectors, 1.0, 0.03) << what;
      continue;
    }
    const auto& band = down.at({m.n, m.heads, m.causal ? 1 : 0});
    EXPECT_GT(ratio, band[0]) << what;
    EXPECT_LT(ratio, band[1]) << what;
    ++compared_down;
    if (m.heads != 8 || !m.causal) continue;
    double measured_end = 0;
    const auto measured = measured_block_times(
        kRoot + "/validation/data/h100_tc_block_times_n32768_h8_causal_down_mb2.csv", measured_end);
    ASSERT_EQ(measured.size(), 2048u);
    ASSERT_EQ(row.blocks.size(), 2048u);
    double simulated_end = 0, end_error = 0;
    for (const BlockRecord& b : row.blocks) simulated_end = std::max(simulated_end, double(b.end_cycle));
    for (const BlockRecord& b : row.blocks) {
      const auto& gpu = measured.at(b.index[0] + 256 * b.index[1]);
      EXPECT_NEAR(double(b.start_cycle) / simulated_end, gpu[0] / measured_end, 0.015) << b.index[0];
      end_error += std::abs(double(b.end_cycle) / simulated_end - gpu[1] / measured_end);
    }
    EXPECT_LT(end_error / 2048, 0.01);
  }
  EXPECT_EQ(compared_down, 5);
}

// The same build, keys down, causal, over heads (validation/data/h100_tc_two_blocks_heads.csv): at N = 32,768
// the GPU reads 1.00, 2.76, 4.13, 5.02, 4.83 times Q, K and V at 1, 3, 6, 12, 16 heads, at N = 16,384 1.50,
// 1.79, 1.80 at 8, 16, 32. The model follows the curve's size but not its every step (0.74-1.12 of the GPU's
// per row: 16 x 16,384 0.744 the furthest; its own curve dips at 8 x 32,768, 0.821 above): over the 8 rows
// NRMSE 0.114, r 0.996. One head (everything fits) within 1%, the SM <-> L2 bytes exact.
TEST(Validation, TensorCoreFlash2TwoBlocksPerSmOverHeads) {
  const std::string data = kRoot + "/validation/data/h100_tc_two_blocks_heads.csv";
  const std::vector<Measurement> rows = read_measurements(data);
  ASSERT_EQ(rows.size(), 8u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 8u);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what = fmt::format("n={} heads={}", m.n, m.heads);
    EXPECT_TRUE(m.causal && m.keys_descending) << what;
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.005) << what;
    const double ratio = row.predicted_dram_read / m.dram_read_bytes;
    EXPECT_GT(ratio, m.heads == 1 ? 0.99 : 0.70) << what;
    EXPECT_LT(ratio, m.heads == 1 ? 1.01 : 1.15) << what;
  }
  EXPECT_LT(s.dram_read_nrmse, 0.13);
  EXPECT_GT(s.dram_read_pearson, 0.99);
}

// The same sweep on an H200 (validation/data/h200_tc_two_blocks_heads.csv, 60 MiB of L2): the GPU reads 1.00,
// 1.36, 2.22, 2.28, 2.17 times Q, K and V at 1, 3, 6, 12, 16 heads of 32,768 and 1.26, 1.34, 1.31 at 8, 16,
// 32 of 16,384, less than on the H100 at every shape. The model (all 8 rows: `attnsim validate -c
// configs/h200.yaml`) reads 0.999 at one head, then 0.936, 0.777, 0.790, 0.949 and 0.932, 0.968, 0.987 with
// the H200's own set index (paired regions: windows of K and V of several heads fill some sets first); with a
// hashed index, which fills them evenly, it kept far more: 0.835, 0.507, 0.529, 0.555 and 0.812, 0.771,
// 0.792. Held here on three rows (the rest take minutes): one head within 1%, 6 x 32,768 and 8 x 16,384 in
// bands around today's figures, and the 6 x 32,768 row's block times against the GPU's.
TEST(Validation, TensorCoreFlash2TwoBlocksPerSmOverHeadsOnTheH200) {
  const std::string data = kRoot + "/validation/data/h200_tc_two_blocks_heads.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if ((m.n == 32768 && (m.heads == 1 || m.heads == 6)) || (m.n == 16384 && m.heads == 8)) rows.push_back(m);
  ASSERT_EQ(rows.size(), 3u);
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", data, rows, {}, true);
  ASSERT_EQ(s.rows.size(), 3u);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what = fmt::format("n={} heads={}", m.n, m.heads);
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    const double ratio = row.predicted_dram_read / m.dram_read_bytes;
    const double low = m.heads == 1 ? 0.99 : m.heads == 6 ? 0.72 : 0.88;
    const double high = m.heads == 1 ? 1.01 : m.heads == 6 ? 0.84 : 0.98;
    EXPECT_GT(ratio, low) << what;
    EXPECT_LT(ratio, high) << what;
    if (m.heads != 6) continue;
    // When the blocks run is not what differs
    // (validation/data/h200_tc_block_times_n32768_h6_causal_down_mb2.csv, the GPU's %globaltimer per block):
    // starts within 0.6% of the kernel's duration on average, ends 1.0%.
    double measured_end = 0;
    const auto measured = measured_block_times(
        kRoot + "/validation/data/h200_tc_block_times_n32768_h6_causal_down_mb2.csv", measured_end);
    ASSERT_EQ(measured.size(), 1536u);
    ASSERT_EQ(row.blocks.size(), 1536u);
    double simulated_end = 0, start_error = 0, end_error = 0;
    for (const BlockRecord& b : row.blocks) simulated_end = std::max(simulated_end, double(b.end_cycle));
    for (const BlockRecord& b : row.blocks) {
      const auto& gpu = measured.at(b.index[0] + 256 * b.index[1]);
      start_error += std::abs(double(b.start_cycle) / simulated_end - gpu[0] / measured_end);
      end_error += std::abs(double(b.end_cycle) / simulated_end - gpu[1] / measured_end);
    }
    EXPECT_LT(start_error / 1536, 0.01);
    EXPECT_LT(end_error / 1536, 0.015);
  }
}

// When and where the flash2 kernel's blocks ran on the H100 (validation/data/h100_flash2_times_*.csv, each
// block's %globaltimer at start and end): at three blocks per SM, the three an SM starts at t = 0 end at
// 0.537 and 0.726 of the third's end on every SM, although they do the same work, because the SM's warp
// schedulers favour the oldest warps. The model serves a core's oldest resident block first and its first
// three blocks end at about 0.58 and 0.85 of the third; served first come first served, they would end
// together, stay in step and read K and V once per wave (0.45 of the measured DRAM reads at N = 131,072).
std::map<int64_t, std::vector<double>> first_wave_ends(const std::vector<BlockRecord>& blocks) {
  std::map<int64_t, std::vector<double>> ends;
  for (const BlockRecord& b : blocks)
    if (b.start_cycle == 0) ends[b.core].push_back(double(b.end_cycle));
  return ends;
}

std::map<int64_t, std::vector<double>> measured_first_three_ends(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // block,sm,start_ns,end_ns
  std::map<int64_t, std::vector<double>> ends;
  while (std::getline(in, line)) {
    long long block = 0, sm = 0, start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lld,%lld", &block, &sm, &start, &end) != 4) continue;
    if (start < 1000) ends[sm].push_back(double(end));
  }
  return ends;
}

// Each core's (or SM's) ends, sorted, for those that hold exactly `size` of them.
std::vector<std::vector<double>> sorted_groups(std::map<int64_t, std::vector<double>> ends, size_t size) {
  std::vector<std::vector<double>> out;
  for (auto& [core, e] : ends)
    if (e.size() == size) std::sort(e.begin(), e.end()), out.push_back(e);
  return out;
}

// The first and second blocks' ends over the third's, per core or SM.
std::vector<std::array<double, 2>> end_ratios(std::map<int64_t, std::vector<double>> ends) {
  std::vector<std::array<double, 2>> out;
  for (const auto& e : sorted_groups(std::move(ends), 3)) out.push_back({e[0] / e[2], e[1] / e[2]});
  return out;
}

std::vector<BlockRecord> simulated_flash2_blocks(const std::string& priority) {
  CompareOptions o;
  o.config_path = kRoot + "/configs/h100.yaml";
  // The measured kernel multiplies with FFMA on the CUDA cores, whose chains the warps' independent
  // accumulators keep full: none of the tensor-core code's result latencies (ldmatrix + mma.sync, the
  // softmax's shuffles) that the preset carries, and no issue limit (the costs describe mma.sync code), as
  // validate runs the FFMA rows.
  o.overrides = {"chip.blocks_per_core=3", "chip.issue_priority=" + priority, "mxu.result_latency=0",
                 "issue.limit=false"};
  for (const char* op : {"max", "sub", "exp", "add", "mul", "div", "mov", "rowmax", "rowsum", "mask_causal"})
    o.overrides.push_back(std::string("vpu.") + op + "_result_latency=0");
  o.overrides.push_back("vpu.reduction_result_latency_per_column=0");
  o.n = 32768;  // the same blocks as the measured N = 131,072, a quarter as long, 1.3 waves
  o.block = 64;
  o.values = CompareOptions::Values::Off;
  o.double_buffer = false;  // as the validation kernel
  o.schedules = {"flash2"};
  o.record_blocks = true;
  return run_compare(o).at(0).blocks;
}

TEST(Validation, CoResidentBlocksDriftApartAsOnTheH100) {
  const auto measured = end_ratios(
      measured_first_three_ends(kRoot + "/validation/data/h100_flash2_times_131072_d64_h1_b64_nc.csv"));
  ASSERT_EQ(measured.size(), 132u);
  for (const auto& r : measured) {
    EXPECT_NEAR(r[0], 0.537, 0.01);
    EXPECT_NEAR(r[1], 0.726, 0.01);
  }
  const auto oldest = end_ratios(first_wave_ends(simulated_flash2_blocks("oldest")));
  ASSERT_EQ(oldest.size(), 132u);
  for (const auto& r : oldest) {
    EXPECT_NEAR(r[0], 0.537, 0.08);
    EXPECT_NEAR(r[1], 0.726, 0.15);
  }
}

// The mechanism, by contrast (one SystemC simulation per process, so a test of its own).
TEST(Validation, FirstComeFirstServedBlocksStayInStep) {
  const auto fifo = end_ratios(first_wave_ends(simulated_flash2_blocks("fifo")));
  ASSERT_EQ(fifo.size(), 132u);
  for (const auto& r : fifo) EXPECT_GT(r[0], 0.99);
}

// The tensor-core flash2 at four blocks per SM (n = 4,096, d = 64, 8 heads, 64 x 64: one wave, profile 00)
// shares its SMs more evenly than the FFMA kernel does (validation/data/h100_tc_block_times_*.csv,
// validation/run_block_times.sh): the four blocks an SM starts at t = 0 end at 0.78, 0.85 and 0.93 of the
// last one's end (medians over the 116 such SMs). Its warps stall on ldmatrix, mma and shuffle latencies and
// the younger blocks' warps issue in those gaps. The model's two arbitrations bracket it: oldest first
// (the presets) ends the first block at about 0.57 and holds the fourth back until two others are done; ready
// first (first come first served at each unit) ends all four together, in step.
std::vector<BlockRecord> simulated_tc_flash2_blocks(const std::string& priority) {
  CompareOptions o;
  o.config_path = kRoot + "/configs/h100.yaml";
  // The measured occupancy (registers limit it to four) and the clock the profiled run had (1.42 GHz).
  o.overrides = {"chip.blocks_per_core=4", "chip.issue_priority=" + priority, "clock_ghz=1.42"};
  o.n = 4096;
  o.heads = 8;
  o.block = 64;
  o.registers = true;  // the kernel's form, as validate runs it (Q_i's fragments in registers too)
  o.values = CompareOptions::Values::Off;
  o.schedules = {"flash2"};
  o.record_blocks = true;
  return run_compare(o).at(0).blocks;
}

std::map<int64_t, std::vector<double>> measured_tc_ends(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns
  EXPECT_EQ(line, "block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns");
  std::map<int64_t, std::vector<double>> ends;
  while (std::getline(in, line)) {
    long long block = 0, sm = 0, start = 0, q1 = 0, q2 = 0, q3 = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &block, &sm, &start, &q1, &q2, &q3,
                    &end) == 7)
      ends[sm].push_back(double(end));
  }
  return ends;
}

TEST(Validation, TensorCoreBlocksShareAnSmBetweenTheTwoArbitrations) {
  const auto measured = sorted_groups(
      measured_tc_ends(kRoot + "/validation/data/h100_tc_block_times_n4096_d64_h8_64x64_nc.csv"), 4);
  ASSERT_EQ(measured.size(), 116u);  // 512 blocks: 116 SMs take four, 16 take three
  for (const auto& e : measured) {
    EXPECT_NEAR(e[0] / e[3], 0.78, 0.03);
    EXPECT_NEAR(e[1] / e[3], 0.85, 0.03);
    EXPECT_NEAR(e[2] / e[3], 0.93, 0.03);
  }
  const auto oldest = sorted_groups(first_wave_ends(simulated_tc_flash2_blocks("oldest")), 4);
  ASSERT_EQ(oldest.size(), 116u);
  for (const auto& e : oldest) EXPECT_LT(e[0] / e[3], 0.65);  // the measured 0.77-0.80 lies above
}

TEST(Validation, TensorCoreBlocksServedReadyFirstRunInStep) {
  const auto ready = sorted_groups(first_wave_ends(simulated_tc_flash2_blocks("ready")), 4);
  ASSERT_EQ(ready.size(), 116u);
  for (const auto& e : ready) EXPECT_GT(e[0] / e[3], 0.95);  // the measured 0.77-0.80 lies below
}

// PyTorch's FlashAttention-2 forward (validation/data/h100_sdpa_cases.csv) simulated as flash2 with the
// kernel's tiles, key order and measured occupancy, at the clock its kernels ran at. Two rows: every row's
// bytes and the time over all of them are in test_sdpa_rows.cpp and test_sdpa_times.cpp.
TEST(Validation, PyTorchFlashForwardOnTheWholeChip) {
  const std::string data = kRoot + "/validation/data/h100_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label == "FLASH_ATTENTION fwd 1x16" && m.n == 4096) rows.push_back(m);
  ASSERT_EQ(rows.size(), 2u);
  ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  // Predicted time: the chip's cycles at the SM clock each row's attention kernels ran at (GPC cycles over
  // their time, 1.43-1.48 GHz under ncu --clock-control base), and the error over the rows.
  ASSERT_EQ(s.timed_rows, 2u);
  EXPECT_EQ(s.measured_clock_rows, 2u);
  double error_sum = 0;
  for (const auto& row : s.rows) {
    EXPECT_EQ(row.measured.clock_control, "base");
    EXPECT_GT(row.clock_ghz, 1.40);
    EXPECT_LT(row.clock_ghz, 1.50);
    EXPECT_DOUBLE_EQ(row.clock_ghz, row.measured.sm_clock_ghz);
    EXPECT_DOUBLE_EQ(row.predicted_ns, static_cast<double>(row.predicted_cycles) / row.clock_ghz);
    EXPECT_GT(row.measured.time_ns, 0);
    error_sum += std::abs(row.predicted_ns / row.measured.time_ns - 1);
  }
  EXPECT_NEAR(s.time_mape, error_sum / 2, 1e-12);
  for (const auto& row : s.rows) {
    const auto& m = row.measured;
    const std::string what =
        m.label + " n=" + std::to_string(m.n) + " d=" + std::to_string(m.d) + (m.causal ? " causal" : "");
    EXPECT_NEAR(row.predicted_read / m.l1_read_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_write / m.l1_write_bytes, 1.0, 0.005) << what;
    EXPECT_NEAR(row.predicted_dram_read / m.dram_read_bytes, 1.0, 0.10) << what;
  }
}

// cuDNN's forward (a persistent wgmma kernel: a producer warp group loads, two consumer warp groups take
// turns at the tensor cores) simulated as flash2 with ping_pong: the halves of each 128-row tile in
// instruction groups of their own, K and V prefetched, its products fed as wgmma feeds the tensor cores
// (MxuUnit::Feed: rows dealt to the arrays, passes streamed). Bounds around the figures of 2026-11-26
// (docs/validation.md: 1.13-1.15 at d = 64, 1.08-1.10 at d = 128 on these rows; 2.0-2.7 in one stream):
// a regression guard.
TEST(Validation, CudnnForwardWithTwoConsumerWarpGroups) {
  const std::string data = kRoot + "/validation/data/h100_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label == "CUDNN_ATTENTION fwd 1x16" && (m.n == 4096 || m.n == 8192)) rows.push_back(m);
  ASSERT_EQ(rows.size(), 4u);
  for (const Measurement& m : rows) {
    EXPECT_TRUE(m.ping_pong);
    EXPECT_TRUE(m.double_buffer);
    EXPECT_TRUE(m.wgmma);
  }
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 4u);
  for (const auto& row : s.rows) {
    const double ratio = row.predicted_ns / row.measured.time_ns;
    const std::string what = "n=" + std::to_string(row.measured.n) + (row.measured.causal ? " causal" : "");
    EXPECT_GT(ratio, 1.05) << what;
    EXPECT_LT(ratio, 1.20) << what;
  }
}

// The same kernel's d = 128 rows fed as the presets fed every product before 2026-11-26 (N dealt over the
// tensor cores, every 16 x 32 pass paying its skew; no issue cost): 1.5-1.7 times the measured time, which
// wgmma's feed above brings to 1.08-1.10. The MXU's feed alone makes the difference.
TEST(Validation, CudnnForwardAtD128IsMxuBoundUnderTheColumnDealtFeed) {
  const std::string data = kRoot + "/validation/data/h100_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (Measurement m : read_measurements(data)) {
    if (m.label != "CUDNN_ATTENTION fwd 1x16" || m.n != 8192) continue;
    m.wgmma = false;
    rows.push_back(m);
  }
  ASSERT_EQ(rows.size(), 2u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows,
                                       {"mxu.deal=n", "mxu.shared_operand=once", "issue.limit=false"});
  ASSERT_EQ(s.rows.size(), 2u);
  for (const auto& row : s.rows) {
    const double ratio = row.predicted_ns / row.measured.time_ns;
    EXPECT_GT(ratio, 1.45) << (row.measured.causal ? "causal" : "");
    EXPECT_LT(ratio, 1.75) << (row.measured.causal ? "causal" : "");
  }
}

// cuDNN's backward (persistent, wgmma, a producer warp group and two consumers) simulated as flash2-bwd with
// flash-attn's three kernels, 64 x 128 tiles and BackwardShape::warp_groups: each consumer half of the key
// block, so one's softmax and dS run while the MXU does the other's products. At 1 x 16 x 4,096 x 64 the
// pass comes out at 0.98 (no mask) and 0.92 (causal) of the measured time, 1.37 in one stream (2026-11-27):
// a regression guard. SM<-L2 reads exact: 128-key work tiles.
TEST(Validation, CudnnBackwardWithTwoConsumerWarpGroups) {
  const std::string data = kRoot + "/validation/data/h100_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label == "CUDNN_ATTENTION bwd 1x16" && m.n == 4096) rows.push_back(m);
  ASSERT_EQ(rows.size(), 2u);
  for (const Measurement& m : rows) {
    EXPECT_EQ(m.schedule, "flash2-bwd");
    EXPECT_EQ(m.block_k, 128);
    EXPECT_TRUE(m.ping_pong);
    EXPECT_TRUE(m.wgmma);
  }
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 2u);
  for (const auto& row : s.rows) {
    const std::string what = row.measured.causal ? "causal" : "no mask";
    EXPECT_NEAR(row.predicted_read / row.measured.l1_read_bytes, 1.0, 0.005) << what;
    const double ratio = row.predicted_ns / row.measured.time_ns;
    EXPECT_GT(ratio, 0.85) << what;
    EXPECT_LT(ratio, 1.10) << what;
  }
}

// A metric of the kernel named `kernel` with grid `grid` in an Nsight Compute raw CSV (every cell quoted, a
// units row under the header).
double ncu_metric(const std::string& path, const std::string& kernel, const std::string& grid,
                  const std::string& metric) {
  std::ifstream in(path);
  auto cells = [](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> out;
    size_t at = 1;  // past the first quote
    for (size_t end; (end = line.find("\",\"", at)) != std::string::npos; at = end + 3)
      out.push_back(line.substr(at, end - at));
    out.push_back(line.substr(at, line.size() - at - 1));
    return out;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = cells(line);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t name = column("Kernel Name"), grid_size = column("Grid Size"), value = column(metric);
  while (std::getline(in, line)) {
    const std::vector<std::string> row = cells(line);
    if (row.size() == header.size() && row[name].find(kernel) != std::string::npos && row[grid_size] == grid)
      return std::stod(row[value]);
  }
  ADD_FAILURE() << path << ": no " << kernel << " " << grid << " with " << metric;
  return -1;
}

// The ldmatrix PyTorch's FlashAttention-2 kernels execute follow from their templates' warp layouts
// (isa::KernelDecl::warps, read in sim/sdpa_cases.cpp): at 1 x 16 x 4,096 x 64 the simulated count is
// Nsight Compute's smsp__inst_executed_op_ldsm (validation/data/h100_sdpa_profile_raw.csv, _bwd_raw.csv) to
// the instruction. A warp per 16 rows loading all of B, as the project's kernels do, would make it 1.89
// times that in the forward and 1.33 times in the backward (the 8 warps of its 128 x 128 products split 4 x
// 2).
TEST(Validation, FlashAttentionLdmatrixFollowsTheKernelsWarpLayouts) {
  const std::string data = kRoot + "/validation/data/h100_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label.rfind("FLASH_ATTENTION", 0) == 0 && m.label.find(" 1x16") != std::string::npos &&
        m.n == 4096 && !m.causal)
      rows.push_back(m);
  ASSERT_EQ(rows.size(), 2u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 2u);
  const double forward = ncu_metric(kRoot + "/validation/data/h100_sdpa_profile_raw.csv", "flash_fwd_kernel",
                                    "(32, 1, 16)", "smsp__inst_executed_op_ldsm.sum");
  const double backward = ncu_metric(kRoot + "/validation/data/h100_sdpa_profile_bwd_raw.csv",
                                     "flash_bwd_dq_dk_dv", "(32, 1, 16)", "smsp__inst_executed_op_ldsm.sum");
  for (const ValidationRow& row : s.rows) {
    const bool fwd = row.measured.label.find(" fwd ") != std::string::npos;
    EXPECT_GT(row.measured.warps, 0) << row.measured.label;
    EXPECT_EQ(row.predicted_ldmatrix, fwd ? forward : backward) << row.measured.label;
  }
}

// Every measured PyTorch row is simulated now (the memory-efficient backward was the last kernel left out);
// a memory-efficient backward kernel whose name gives no tiles is left out with the reason.
TEST(Validation, UnsimulatedSdpaRowsSayWhy) {
  size_t left = 0;
  for (const Measurement& m : read_measurements(kRoot + "/validation/data/h100_sdpa_cases.csv"))
    if (!m.not_simulated.empty()) ++left;
  EXPECT_EQ(left, 0u);
  std::ifstream in(kRoot + "/validation/data/h100_sdpa_cases.csv");
  std::string header, line, row;
  std::getline(in, header);
  const std::string name = "fmha_cutlassB_f16_aligned_64x64_k64_seqaligned_sm80";
  while (std::getline(in, line))
    if (row.empty() && line.find(name) != std::string::npos) row = line;
  ASSERT_FALSE(row.empty());
  for (size_t at = row.find(name); at != std::string::npos; at = row.find(name))
    row.replace(at, name.size(), "fmha_cutlassB_f16_notaligned_sm80");
  const std::string path = ::testing::TempDir() + "/sdpa_unmapped_cutlassB.csv";
  std::ofstream(path) << header << "\n" << row << "\n";
  const std::vector<Measurement> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label.rfind("EFFICIENT_ATTENTION bwd", 0), 0u) << rows[0].label;
  EXPECT_NE(rows[0].not_simulated.find("gives no <queries>x<keys> tiles"), std::string::npos)
      << rows[0].not_simulated;
}

// PyTorch's memory-efficient backward rows take the tiles, warps and K_j reload of the kernel the name
// gives: fmha_cutlassB_f16_aligned_64x64_k64 (4 warps, K_j kept in SRAM: its two 32-column stages hold
// d = 64) and _128x128_k128 (16 warps; three stages hold 96 of 128 columns, so K_j is reloaded each step).
TEST(Validation, MemoryEfficientBackwardRowsTakeTheKernelsTiles) {
  size_t rows = 0;
  for (const Measurement& m : read_measurements(kRoot + "/validation/data/h100_sdpa_cases.csv")) {
    if (m.label.rfind("EFFICIENT_ATTENTION bwd", 0) != 0) continue;
    ++rows;
    const int64_t tile = m.d == 64 ? 64 : 128;
    EXPECT_EQ(m.schedule, "flash2-bwd");
    EXPECT_TRUE(m.as_mem_efficient);
    EXPECT_FALSE(m.as_flash_attn);
    EXPECT_EQ(m.block_q, tile);
    EXPECT_EQ(m.block_k, tile);
    EXPECT_EQ(m.warps, tile == 64 ? 4 : 16);
    EXPECT_EQ(m.warp_rows, 32);
    EXPECT_EQ(m.reload_k, tile == 128);
    EXPECT_EQ(m.blocks_per_sm, std::vector<int64_t>{tile == 64 ? 3 : 1});
    EXPECT_EQ(m.spill_bytes_per_step > 0, tile == 128);  // its 128 registers a thread spill
  }
  EXPECT_EQ(rows, 12u);
}

// The tensor-core flash2 (validation/kernels_tc.cu, validation/data/h100_tc_flash2.csv) at n = 1,024:
// SM<->L2 bytes exact on every tile, its times counted in the kernel-time figures. With S, P and O in the
// tile register file, as the kernel keeps them, the 128 x 128 tile at d = 128 fits too (in SRAM they needed
// 265 KB of the 227 KB a block may have).
TEST(Validation, TensorCoreFlash2OnTheWholeChip) {
  const std::string data = kRoot + "/validation/data/h100_tc_flash2.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.n == 1024 && m.kernel == "tc") rows.push_back(m);
  ASSERT_EQ(rows.size(), 12u);
  for (const auto& m : rows) EXPECT_LE(m.max_rel_error, tolerance_for(Dtype::F16));
  for (const auto& m : rows) {
    EXPECT_TRUE(m.accumulators_in_registers);
    EXPECT_TRUE(m.double_buffer);
  }
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 12u);
  EXPECT_EQ(s.not_simulated.size(), 0u);
  EXPECT_EQ(s.timed_rows, 12u);
  for (const auto& row : s.rows) {
    EXPECT_EQ(row.measured.label, "flash2 tc");
    EXPECT_EQ(row.predicted_read, row.measured.l1_read_bytes) << row.measured.line;
    EXPECT_EQ(row.predicted_write, row.measured.l1_write_bytes) << row.measured.line;
  }
}

// A row that carries the SM clock Nsight Compute measured (sm_clock_ghz: under tensor-core load the H100
// ran at 1.38-1.45 GHz with its clock locked to the 1.605 GHz base) is simulated at that clock; a row
// without one at the config's clock_base_ghz, so one row's clock does not stick to the next.
TEST(Validation, RowsRunAtTheirMeasuredSmClock) {
  const std::string data = kRoot + "/validation/data/h100_tc_flash2.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.n == 4096 && m.kernel == "tc" && m.d == 64 && m.block_q == 64 && !m.causal) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].clock_control, "base");
  rows.push_back(rows[0]);
  rows[0].sm_clock_ghz = 1.2;
  rows[1].sm_clock_ghz = 0;
  rows.push_back(rows[0]);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].clock_ghz, 1.2);
  EXPECT_EQ(s.rows[1].clock_ghz, 1.605);  // configs/h100.yaml clock_base_ghz
  EXPECT_EQ(s.rows[2].clock_ghz, 1.2);
  EXPECT_EQ(s.measured_clock_rows, 2u);
  EXPECT_EQ(s.base_clock_rows, 1u);
  for (const auto& row : s.rows)
    EXPECT_DOUBLE_EQ(row.predicted_ns, static_cast<double>(row.predicted_cycles) / row.clock_ghz);
  // The same program at the same clock gives the same cycles: nothing of the first run is left over.
  EXPECT_EQ(s.rows[0].predicted_cycles, s.rows[2].predicted_cycles);
  // DRAM's timing is in ns: the new clock reaches it (a config with clock_ghz 1.2 gives these cycles too).
  EXPECT_NE(s.rows[0].predicted_cycles, s.rows[1].predicted_cycles);
}

// A row of several kernels (naive's S = QK^T, softmax, PV) reports each launch's cycles, in launch order,
// in the CSV: they follow one another, so they add up to the row's cycles, and none is empty.
TEST(Validation, EachKernelOfARowReportsItsCycles) {
  const std::string data = kRoot + "/validation/data/h100_tc_fwd.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.schedule == "naive-safe" && m.n == 512 && !m.causal) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 1u);
  const std::vector<int64_t>& kernels = s.rows[0].predicted_kernel_cycles;
  ASSERT_EQ(kernels.size(), 3u);
  int64_t sum = 0;
  for (int64_t k : kernels) {
    EXPECT_GT(k, 0);
    sum += k;
  }
  EXPECT_EQ(static_cast<uint64_t>(sum), s.rows[0].predicted_cycles);
  // The measured side: each launch's gpu__time_duration at its own SM clock.
  ASSERT_EQ(s.rows[0].measured.kernel_cycles().size(), 3u);
  const std::string csv = validation_csv(s);
  EXPECT_NE(csv.find(",kernel_cycles_pred,kernel_cycles_meas,"), std::string::npos);
  EXPECT_NE(csv.find(fmt::format(",{}/{}/{},", kernels[0], kernels[1], kernels[2])), std::string::npos);
  // The printed breakdown: one line per kernel of the schedule, by the program's kernel names.
  const std::string breakdown = kernel_breakdown(s);
  const std::vector<double> measured = s.rows[0].measured.kernel_cycles();
  for (size_t k = 0; k < 3; ++k) {
    const std::string name = s.rows[0].predicted_kernel_names[k];
    const double ratio = static_cast<double>(kernels[k]) / measured[k];
    EXPECT_NE(breakdown.find(fmt::format("{}{:24}    1 launches  {:.2f}-{:.2f}, median {:.2f}",
                                         std::string(19 - std::string("naive-safe").size(), ' '), name, ratio,
                                         ratio, ratio)),
              std::string::npos)
        << breakdown;
  }
  EXPECT_EQ(s.rows[0].predicted_kernel_names,
            (std::vector<std::string>{"naive_qk", "naive_softmax", "naive_pv"}));
}

// Kernel time on the other GPU kind, never used to set a parameter: the H200 rows of the schedules whose
// programs keep S, P and O where the kernels do (flash2, two-pass in registers; flash1), simulated at their
// measured SM clock on configs/h200.yaml with the H100's measured instruction latencies. Bounds as measured
// on 2026-11-23 (docs/validation.md: 0.85-1.23, MAPE 7.1% over these 14 rows): a regression guard; a change
// that moves a row out of the band must say why.
TEST(Validation, TensorCoreTimeOnTheH200) {
  const std::string data = kRoot + "/validation/data/h200_tc_subset.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if ((m.schedule == "flash2" || m.schedule == "flash1" || m.schedule == "two-pass") &&
        m.n * m.heads <= 2048 * 256 && m.n <= 4096)
      rows.push_back(m);
  ASSERT_EQ(rows.size(), 14u);
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", data, rows);
  ASSERT_EQ(s.timed_rows, 14u);
  EXPECT_EQ(s.measured_clock_rows, 14u);
  for (const auto& row : s.rows) {
    const double ratio = row.predicted_ns / row.measured.time_ns;
    EXPECT_GT(ratio, 0.82) << row.measured.schedule << " line " << row.measured.line;
    EXPECT_LT(ratio, 1.26) << row.measured.schedule << " line " << row.measured.line;
    EXPECT_EQ(row.predicted_read, row.measured.l1_read_bytes) << row.measured.line;
  }
  EXPECT_LT(s.time_mape, 0.10);  // the target, on these schedules
  EXPECT_GT(s.time_pearson, 0.98);
}

// A row clock the DRAM model cannot time with (to 0.1 kHz: too few factors shared with the bandwidth) is
// that row's input error, with its line, not an internal error.
TEST(Validation, AnSmClockTheDramModelCannotUseNamesTheRow) {
  const std::string data = kRoot + "/validation/data/h100_tc_flash2_grid.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (rows.empty() && m.n == 512) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  rows[0].sm_clock_ghz = 1.4393977;
  try {
    validate(kRoot + "/configs/h100.yaml", data, rows);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, rows[0].line);
    EXPECT_NE(std::string(e.what()).find("1.4393977 GHz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("round it to 1 MHz"), std::string::npos) << e.what();
  }
}

// h100_tc_two_blocks.csv with its first data row's `column` cell replaced by `value`, written to a file of
// its own; returns the path and, in `old`, the cell's former text.
std::string two_blocks_file_with(const std::string& column, const std::string& value, std::string& old) {
  std::ifstream in(kRoot + "/validation/data/h100_tc_two_blocks.csv");
  std::stringstream text;
  text << in.rdbuf();
  std::string file = text.str();
  const std::string header = file.substr(0, file.find('\n'));
  size_t index = 0;
  for (size_t at = 0; at < header.find("," + column + ","); at = header.find(',', at + 1)) ++index;
  size_t cell = file.find('\n') + 1;
  for (size_t c = 0; c < index; ++c) cell = file.find(',', cell) + 1;
  old = file.substr(cell, file.find(',', cell) - cell);
  file.replace(cell, old.size(), value);
  const std::string path = ::testing::TempDir() + column + "_" + value + ".csv";
  std::ofstream(path) << file;
  return path;
}

// Reading `path` fails on its line 2 with a message containing `expected`.
void expect_row_error(const std::string& path, const std::string& expected) {
  try {
    read_measurements(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// A tc_min_blocks the harness cannot build is the row's input error, with its line and the column's name.
TEST(Validation, AnUnknownTcBuildNamesTheRow) {
  std::string old;
  const std::string path = two_blocks_file_with("tc_min_blocks", "3", old);
  ASSERT_EQ(old, "2");
  expect_row_error(path, "column tc_min_blocks: 1 or 2, found 3");
}

// A local_bytes too large for a whole number of bytes (the fuzzer's 3.3e35) is the row's input error, not a
// conversion past int64_t's range.
TEST(Validation, AnOutOfRangeLocalBytesNamesTheRow) {
  std::string old;
  expect_row_error(two_blocks_file_with("local_bytes", "3.3e35", old),
                   "column local_bytes: a whole multiple of 4 bytes");
}

// A measurements file with CRLF line ends (a spreadsheet's export, Python's csv module) reads as the same
// rows: the last column, the SM clock, included (it used to be unknown, and its rows ran at the base clock).
TEST(Validation, ACrlfFileReadsAsTheSameRows) {
  const std::string path = ::testing::TempDir() + "crlf.csv";
  {
    std::ifstream in(kRoot + "/validation/data/h100_tc_flash2.csv");
    std::ofstream out(path, std::ios::binary);
    int lines = 0;
    for (std::string line; lines < 4 && std::getline(in, line); ++lines) out << line << "\r\n";
  }
  const std::vector<Measurement> crlf = read_measurements(path);
  const std::vector<Measurement> plain = read_measurements(kRoot + "/validation/data/h100_tc_flash2.csv");
  ASSERT_EQ(crlf.size(), 3u);
  for (size_t i = 0; i < crlf.size(); ++i) {
    EXPECT_GT(crlf[i].sm_clock_ghz, 1.0);
    EXPECT_EQ(crlf[i].sm_clock_ghz, plain[i].sm_clock_ghz);
    EXPECT_EQ(crlf[i].time_ns, plain[i].time_ns);
  }
}

TEST(Validation, AnSmClockOutOfRangeNamesFileAndLine) {
  const std::string path = ::testing::TempDir() + "bad_clock.csv";
  std::ifstream in(kRoot + "/validation/data/h100_tc_flash2.csv");
  std::string header, line;
  std::getline(in, header);
  while (std::getline(in, line) && line.find(",tc,flash2,") == std::string::npos) {
  }
  {
    std::ofstream out(path);
    out << header << ",sm_clock_ghz\n" << line << ",1.42\n" << line << ",0\n";
  }
  try {
    read_measurements(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("sm_clock_ghz: 0 GHz is not an SM clock"), std::string::npos)
        << e.what();
  }
}

// The backward's D_i kernel lasts a few microseconds, so its fixed cost decides its time: with the
// 3,700 cycles the empty-kernel probe measured (chip.kernel_launch_cycles, docs/calibration.md) each row's
// D_i launch comes out at 0.78-1.06 of its measured cycles, without it at 0.39-0.80 (docs/validation.md,
// "Kernel by kernel"). The presets leave the cost at 0 for the long kernels' sake; this holds the evidence.
TEST(Validation, TheShortDiKernelTakesTheMeasuredLaunchCost) {
  const std::string data = kRoot + "/validation/data/h100_tc_bwd.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.schedule == "flash2-bwd" && m.n == 1024) rows.push_back(m);
  ASSERT_EQ(rows.size(), 4u);
  // One simulation per process: the cost is added after the kernel's last block, so its blocks alone took
  // the launch's cycles less 3,700.
  const auto with = validate(kRoot + "/configs/h100.yaml", data, rows, {"chip.kernel_launch_cycles=3700"});
  ASSERT_EQ(with.rows.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    const std::vector<double> measured = rows[r].kernel_cycles();
    ASSERT_EQ(measured.size(), 2u);  // D_i, then dK/dV
    ASSERT_EQ(with.rows[r].predicted_kernel_cycles.size(), 2u);
    const double d_with = static_cast<double>(with.rows[r].predicted_kernel_cycles[0]) / measured[0];
    const double d_without =
        static_cast<double>(with.rows[r].predicted_kernel_cycles[0] - 3700) / measured[0];
    EXPECT_GT(d_with, 0.75) << "line " << rows[r].line;
    EXPECT_LT(d_with, 1.10) << "line " << rows[r].line;
    EXPECT_LT(d_without, 0.50) << "line " << rows[r].line;
  }
}

// Each launch's time and clock: read as '/'-separated lists, turned into cycles per launch; a bad cell or
// lists of different lengths name the file, the line and the columns.
TEST(Validation, PerKernelTimesAreReadAndCheckedPerLine) {
  std::ifstream in(kRoot + "/validation/data/h100_tc_flash2.csv");
  std::string header, line;
  std::getline(in, header);
  while (std::getline(in, line) && line.find(",tc,flash2,") == std::string::npos) {
  }
  auto write = [&](const std::string& name, const std::vector<std::string>& extra) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream out(path);
    out << header << ",kernel_times_ns,kernel_clocks_ghz\n";
    for (const auto& cells : extra) out << line << "," << cells << "\n";
    return path;
  };
  const auto rows = read_measurements(write("kernels_ok.csv", {"1000/500,1.5/2"}));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel_cycles(), (std::vector<double>{1500, 1000}));
  auto expect_error = [&](const std::string& path, const std::string& piece) {
    try {
      read_measurements(path);
      FAIL() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.loc().line, 3);
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  expect_error(write("kernels_bad.csv", {"1000/500,1.5/2", "1000/x5,1.5/2"}),
               "column kernel_times_ns: expected numbers separated by '/', found '1000/x5'");
  expect_error(write("kernels_count.csv", {"1000/500,1.5/2", "1000/500,1.5"}),
               "kernel_times_ns and kernel_clocks_ghz: 2 launches against 1");
}

// The FFMA kernels' times are not held against the MXU; the padded variant's bytes are not the schedule's.
TEST(Validation, FfmaTimesAndPaddedRowsAreLeftOut) {
  const std::string data = kRoot + "/validation/data/h100_tc_flash2.csv";
  std::vector<Measurement> rows;
  size_t padded = 0;
  for (const Measurement& m : read_measurements(data)) {
    if (m.kernel == "tc-padded") {
      ++padded;
      EXPECT_FALSE(m.not_simulated.empty());
    }
    if (m.kernel == "ffma" && m.d == 64 && !m.causal) rows.push_back(m);
  }
  EXPECT_EQ(padded, 2u);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].predicted_read, rows[0].l1_read_bytes);
  EXPECT_EQ(s.timed_rows, 0u);
}

// The GPU kernels were themselves checked against a float64 reference on the device.
TEST(Validation, KernelsWereCorrect) {
  for (const auto& m : read_measurements(kRoot + "/validation/data/h200_measurements.csv")) {
    ASSERT_EQ(m.dtype, "f16");
    EXPECT_LE(m.max_rel_error, tolerance_for(Dtype::F16)) << m.schedule << " n=" << m.n;
  }
}

TEST(Validation, MalformedMeasurementsNameFileAndLine) {
  const std::string path = ::testing::TempDir() + "bad_measurements.csv";
  {
    std::ofstream out(path);
    out << "gpu,schedule,n,d,heads,block_q,block_k,causal,dtype,time_ns,l1_read_bytes,l1_write_bytes,"
           "dram_read_bytes,dram_write_bytes,max_rel_error\n";
    out << "H,flash2,1024,64,8,64,64,0,f16,1,2,3,4,5,0\n";
    out << "H,flash2,lots,64,8,64,64,0,f16,1,2,3,4,5,0\n";
  }
  try {
    read_measurements(path);
    FAIL() << "a non-number in column n was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(e.message().find("'lots'"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
// fuzz_validate_csv: a tile size past what std::stoll holds in a backward kernel's template name threw
// std::out_of_range out of the reader (CI fuzz smoke, 2026-11-23). The tile fields take at most six digits
// now, so such a row is left unsimulated with the reason, like any kernel the simulator does not map.
TEST(Validation, SdpaTileTooLargeForAnIntegerIsAnUnmappedKernel) {
  std::ifstream in(kRoot + "/validation/data/h100_sdpa_cases.csv");
  std::string header, line, row;
  std::getline(in, header);
  while (std::getline(in, line))
    if (row.empty() && line.find("Flash_bwd_kernel_traits<64;128;") != std::string::npos) row = line;
  ASSERT_FALSE(row.empty());
  row.replace(row.find("Flash_bwd_kernel_traits<64;128;"), 31,
              "Flash_bwd_kernel_traits<64;99999999999999999999;");
  const std::string path = ::testing::TempDir() + "/sdpa_huge_tile.csv";
  std::ofstream(path) << header << "\n" << row << "\n";
  const std::vector<Measurement> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].not_simulated.find("has no schedule"), std::string::npos) << rows[0].not_simulated;
}

// A PyTorch row's SM clock is its attention kernels' GPC cycles over their time, to 1 MHz (the first row:
// 424,877 cycles in 295,168 ns, 1.4394 GHz); one that is no clock names the file and line.
TEST(Validation, SdpaRowsRunAtTheirGpcClock) {
  std::ifstream in(kRoot + "/validation/data/h100_sdpa_cases.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::string path = ::testing::TempDir() + "/sdpa_clock.csv";
  std::ofstream(path) << header << "\n" << row << "\n";
  std::vector<Measurement> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].sm_clock_ghz, 1.439);
  const std::string cycles = ",424877,";
  ASSERT_NE(row.find(cycles), std::string::npos);
  std::string slow = row;
  slow.replace(slow.rfind(cycles), cycles.size(), ",2,");  // attn_cycles_elapsed, after cycles_elapsed
  std::ofstream(path) << header << "\n" << row << "\n" << slow << "\n";
  try {
    read_measurements(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("is not an SM clock"), std::string::npos) << e.what();
  }
}

// The tensor-core kernels of every schedule (validation/kernels_tc_fwd.cu, kernels_tc_bwd.cu, kernels_tc.cu;
// `bash validation/run_tc.sh flash2_grid fwd bwd` on an H100, `subset` on an H200): every configuration
// passed its float64 check and was profiled, with the SM clock its kernels ran at (below the locked base
// clock: 1.605 GHz on the H100, 1.50 on the H200).
TEST(Validation, TensorCoreKernelsOfEverySchedulePassedTheirCheck) {
  size_t rows = 0;
  for (const char* file : {"h100_tc_flash2_grid", "h100_tc_fwd", "h100_tc_bwd", "h200_tc_subset"})
    for (const Measurement& m : read_measurements(kRoot + "/validation/data/" + file + ".csv")) {
      ++rows;
      EXPECT_EQ(m.kernel, "tc") << file << " line " << m.line;
      EXPECT_LE(m.max_rel_error, tolerance_for(Dtype::F16)) << file << " line " << m.line;
      EXPECT_EQ(m.not_simulated, "") << file << " line " << m.line;
      EXPECT_GT(m.sm_clock_ghz, 1.2) << file << " line " << m.line;
      EXPECT_LT(m.sm_clock_ghz, std::string(file).rfind("h100", 0) == 0 ? 1.65 : 1.55)
          << file << " line " << m.line;
    }
  EXPECT_EQ(rows, 126u + 29u);
}

struct TcRow {
  std::string set;
  int line = 0;
  std::string name;
  friend void PrintTo(const TcRow& row, std::ostream* out) {
    *out << "h100_tc_" << row.set << ".csv:" << row.line;
  }
};

// The small configurations (n <= 1024; flash2 over many heads at n = 512) of each set: a few seconds each.
std::vector<TcRow> small_tc_rows() {
  std::vector<TcRow> out;
  for (const auto& [set, largest] :
       {std::pair<std::string, int64_t>{"fwd", 1024}, {"bwd", 1024}, {"flash2_grid", 512}})
    for (const Measurement& m : read_measurements(kRoot + "/validation/data/h100_tc_" + set + ".csv")) {
      if (m.n > largest || !m.not_simulated.empty()) continue;
      std::string name = m.schedule + "_n" + std::to_string(m.n) + "_d" + std::to_string(m.d) + "_h" +
                         std::to_string(m.heads) + "_" + std::to_string(m.block_q) + "x" +
                         std::to_string(m.block_k) + (m.causal ? "_causal" : "");
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      out.push_back({set, m.line, name});
    }
  return out;
}

class TensorCoreRow : public ::testing::TestWithParam<TcRow> {};

// The simulator's whole-chip program of the row moves exactly the SM<->L2 bytes Nsight Compute measured
// (STORE_ADD's read stays in the L2 as red.global.add's does), and DRAM reads within 2%, except the naive
// schedules at n = 1,024, whose S and P (16-32 MB over 8 heads) half fit the L2 between kernels: the L2's
// dirty-line limit decides how much of them comes back from DRAM. Held as known misses there: the safe
// softmax reads 0.948-0.956 of the measured, the online one 0.878-0.886 (the hashed set index: 0.971-1.022
// and 0.885-0.893; its uneven sets lose more of S and P).
TEST_P(TensorCoreRow, SmToL2BytesExact) {
  const std::string data = kRoot + "/validation/data/h100_tc_" + GetParam().set + ".csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.line == GetParam().line) rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationSummary s = validate(kRoot + "/configs/h100.yaml", data, rows);
  ASSERT_EQ(s.rows.size(), 1u) << (s.not_simulated.empty() ? "" : s.not_simulated[0].not_simulated);
  const ValidationRow& row = s.rows[0];
  EXPECT_EQ(row.predicted_read, row.measured.l1_read_bytes);
  EXPECT_EQ(row.predicted_write, row.measured.l1_write_bytes);
  const double ratio = row.predicted_dram_read / row.measured.dram_read_bytes;
  if (row.measured.n < 1024 || row.measured.schedule.rfind("naive", 0) != 0)
    EXPECT_NEAR(ratio, 1.0, 0.02);
  else if (row.measured.schedule == "naive-online")
    EXPECT_NEAR(ratio, 0.882, 0.015);
  else
    EXPECT_NEAR(ratio, 0.952, 0.015);
  EXPECT_EQ(s.timed_rows, 1u);
}

INSTANTIATE_TEST_SUITE_P(H100, TensorCoreRow, ::testing::ValuesIn(small_tc_rows()),
                         [](const ::testing::TestParamInfo<TcRow>& info) {
                           return info.param.set + "_" + std::to_string(info.param.line) + "_" +
                                  info.param.name;
                         });

}  // namespace attnsim
