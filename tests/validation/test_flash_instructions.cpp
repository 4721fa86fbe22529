// The warp instructions of PyTorch's FlashAttention-2 kernels, simulated with their code's own overhead
// (isa::CodeOverhead, kFlashAttention2Overhead in sim/sdpa_cases.cpp), against the counts Nsight Compute
// took: on the H200 from the forward's SASS alone and paired on an SM (validation/data/
// h200_fa2_fwd_instructions.csv, summarize_sdpa_instructions.py over h200_fa2_fwd_profile_pairs{,64}.tar.gz),
// on the H100 the profiled launches' totals (h100_sdpa_profile_raw.csv, h100_sdpa_profile_bwd_raw.csv).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/validate.h"
#include "tests/common/csv_cells.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

using attnsim::testing::csv_cells;

// Warp instructions of the H200's FlashAttention-2 forward at 1 x heads x 16,384 x d (128 SMs).
double h200_counted(int64_t heads, int64_t d) {
  std::ifstream in(kRoot + "/validation/data/h200_fa2_fwd_instructions.csv");
  std::string line;
  std::getline(in, line);
  const std::string prefix = "1," + std::to_string(heads) + ",16384," + std::to_string(d) + ",0,128,";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::stod(csv_cells(line).at(7));
  ADD_FAILURE() << "no row " << prefix;
  return 1;
}

// smsp__inst_executed.sum of the profiled launch of `kernel` over `grid` blocks in an H100 raw file.
double h100_counted(const std::string& file, const std::string& kernel, const std::string& grid) {
  std::ifstream in(kRoot + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = csv_cells(line);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    ADD_FAILURE() << "no column " << name << " in " << file;
    return size_t{0};
  };
  const size_t name = column("Kernel Name"), blocks = column("launch__grid_size"),
               count = column("smsp__inst_executed.sum");
  while (std::getline(in, line)) {
    const std::vector<std::string> row = csv_cells(line);
    if (row.size() > count && row[name].find(kernel) != std::string::npos && row[blocks] == grid)
      return std::stod(row[count]);
  }
  ADD_FAILURE() << "no launch of " << kernel << " over " << grid << " blocks in " << file;
  return 1;
}

// The rows of `file` whose label begins with `label_prefix`, in file order.
std::vector<Measurement> rows_of(const std::string& file, const std::string& label_prefix) {
  std::vector<Measurement> out;
  for (const Measurement& m : read_measurements(kRoot + "/validation/data/" + file))
    if (m.label.rfind(label_prefix, 0) == 0) out.push_back(m);
  return out;
}

// Each row's simulated warp instructions, of its main kernel where `main_kernel` (a backward row's second
// of three launches): one validate call (one machine) per test process.
std::vector<double> simulated_counts(const std::string& config, const std::vector<Measurement>& rows,
                                     bool main_kernel = false) {
  std::vector<double> out;
  const std::string data = rows.empty() ? std::string() : rows.front().path;
  for (const ValidationRow& r : validate(kRoot + "/configs/" + config, data, rows).rows)
    out.push_back(main_kernel && r.measured.schedule == "flash2-bwd"
                      ? static_cast<double>(r.predicted_kernel_warp_instructions.at(1))
                      : r.predicted_warp_instructions);
  return out;
}

// One head (a block an SM) and two at d = 128 and 64. The overhead was set from the lone d = 128 launch;
// the other three are held out. With the machine's costs (the project's kernels' code) the model counted
// 1.21 and 1.15 times the instructions.
TEST(FlashAttention2Instructions, TheForwardsCountFollowsItsCode) {
  std::vector<Measurement> rows = rows_of("h200_block_ends_solo_rows.csv", "FLASH_ATTENTION fwd");
  for (const Measurement& m : rows_of("h200_fwd_pairs64_rows.csv", "FLASH_ATTENTION fwd")) rows.push_back(m);
  ASSERT_EQ(rows.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {  // the same rows with the machine's costs
    rows.push_back(rows[i]);
    rows.back().overhead = {};
  }
  const std::vector<double> counts = simulated_counts("h200.yaml", rows);
  ASSERT_EQ(counts.size(), 8u);
  for (size_t i = 0; i < 4; ++i) {
    const double measured = h200_counted(rows[i].heads, rows[i].d);
    const double ratio = counts[i] / measured, machine = counts[i + 4] / measured;
    std::printf("d = %lld, %lld heads: simulated / counted %.4f (machine's costs %.4f)\n",
                static_cast<long long>(rows[i].d), static_cast<long long>(rows[i].heads), ratio, machine);
    EXPECT_NEAR(ratio, 1.0, rows[i].d == 128 ? 0.005 : 0.015);
    EXPECT_GT(machine, 1.10);
  }
}

// The H100's profiled launches, held out: the forward at 1 x 16 x 4,096 x 64 and 1 x 16 x 8,192 x 128
// within 1%. The backward's main kernel is the same CuTe code, its overhead not refit: 1.041 and 1.001 of
// the measured, with P read from the registers that computed it (BufferState::register_copy) and its dQ
// atomics one f32 a thread (red_bytes = 128); 1.087 and 1.016 without those, 1.30 with the machine's costs.
TEST(FlashAttention2Instructions, TheH100sProfiledLaunchesAreHeldOut) {
  std::vector<Measurement> rows;
  for (const char* pass : {"fwd", "bwd"})
    for (const Measurement& m :
         rows_of("h100_sdpa_cases.csv", std::string("FLASH_ATTENTION ") + pass + " 1x16"))
      if (!m.causal && ((m.n == 4096 && m.d == 64) || (m.n == 8192 && m.d == 128))) rows.push_back(m);
  ASSERT_EQ(rows.size(), 4u);  // forward 4,096 and 8,192, then the backward's
  const std::vector<double> counts = simulated_counts("h100.yaml", rows, true);
  ASSERT_EQ(counts.size(), 4u);
  const char* const grids[] = {"512", "1,024"};  // 16 heads x 32 and x 64 query blocks of 128 rows
  for (size_t i = 0; i < 2; ++i) {
    const double f = counts[i] / h100_counted("h100_sdpa_profile_raw.csv", "flash_fwd_kernel", grids[i]);
    const double b = counts[i + 2] / h100_counted("h100_sdpa_profile_bwd_raw.csv",
                                                  "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", grids[i]);
    std::printf("n = %lld, d = %lld: forward %.4f, backward %.4f\n", static_cast<long long>(rows[i].n),
                static_cast<long long>(rows[i].d), f, b);
    EXPECT_NEAR(f, 1.0, 0.01);
    EXPECT_NEAR(b, 1.0, rows[i].d == 128 ? 0.01 : 0.05);
  }
}

// A cell of the H200's backward profile (h200_fa2_bwd_instructions.csv: the main kernel alone, by kind)
// at 1 x 16 x n x d.
double h200_backward_counted(int64_t n, int64_t d, const std::string& column) {
  std::ifstream in(kRoot + "/validation/data/h200_fa2_bwd_instructions.csv");
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = csv_cells(line);
  const std::string prefix = "1,16," + std::to_string(n) + "," + std::to_string(d) + ",0,";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0)
      for (size_t i = 0; i < header.size(); ++i)
        if (header[i] == column) return std::stod(csv_cells(line).at(i));
  ADD_FAILURE() << "no " << column << " at " << prefix;
  return 1;
}

// The H200's backward main kernel (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel), held out as the H100's:
// its count within 5% (d = 64) and 1% (d = 128). Its dQ atomics are one f32 a thread (atomicAdd in
// FlashAttention-2's source: red_bytes = 128): every key block adds each query block's dQ_i, n x d x heads
// x (n / block_k) values, 32 a warp instruction with 0.37 address instructions each, all among the kernel's
// global-memory instructions (which also load the row statistics).
TEST(FlashAttention2Instructions, TheH200sBackwardMainKernelIsHeldOut) {
  std::vector<Measurement> rows;
  for (const Measurement& m : rows_of("h200_sdpa_cases.csv", "FLASH_ATTENTION bwd 1x16"))
    if (!m.causal && ((m.n == 4096 && m.d == 64) || (m.n == 8192 && m.d == 128))) rows.push_back(m);
  ASSERT_EQ(rows.size(), 2u);
  const ValidationSummary s = validate(kRoot + "/configs/h200.yaml", rows.front().path, rows);
  ASSERT_EQ(s.rows.size(), 2u);
  for (const ValidationRow& r : s.rows) {
    const Measurement& m = r.measured;
    const double ratio = static_cast<double>(r.predicted_kernel_warp_instructions.at(1)) /
                         h200_backward_counted(m.n, m.d, "warp_instructions");
    const double adds = static_cast<double>(m.n * m.d * m.heads * (m.n / m.block_k)) / 32;
    const double reductions = static_cast<double>(r.predicted_warp_instructions_by_op.at("STORE_ADD")) / 1.37;
    std::printf("n = %lld, d = %lld: main kernel %.4f of the counted; STORE_ADD %.4f of one per 32 adds\n",
                static_cast<long long>(m.n), static_cast<long long>(m.d), ratio, reductions / adds);
    EXPECT_NEAR(ratio, 1.0, m.d == 128 ? 0.01 : 0.05);
    EXPECT_NEAR(reductions / adds, 1.0, 0.002);
    EXPECT_GT(h200_backward_counted(m.n, m.d, "global"), adds);
  }
}

}  // namespace
}  // namespace attnsim
