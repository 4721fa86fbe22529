// The warp instructions of PyTorch's memory-efficient kernels, simulated with their code's own mma shape
// (16 x 8 x 8) and, in the forward, CUTLASS's iterative softmax (docs/models/issue.md), against the counts
// Nsight Compute took from their SASS (validation/data/h200_memeff_{fwd,bwd}_instructions.csv, written by
// validation/summarize_sdpa_instructions.py from the committed profiles).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/validate.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

struct Counted {
  std::string kernel;
  double instructions = 0, mma = 0;
};

// The profiled launch of b x h x n x d (not causal, the whole chip) in one of those CSVs.
Counted counted(const std::string& file, const std::string& case_prefix) {
  std::ifstream in(kRoot + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.rfind(case_prefix + ",0,0,", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    return {cells.at(6), std::stod(cells.at(7)), std::stod(cells.at(8))};
  }
  ADD_FAILURE() << "no row " << case_prefix << " in " << file;
  return {};
}

// The non-causal rows of `label_prefix` at these (n, d), simulated together (one machine per process).
std::vector<ValidationRow> simulated(const std::string& label_prefix,
                                     const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  const std::string data = kRoot + "/validation/data/h200_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const auto& [n, d] : shapes)
    for (const Measurement& m : read_measurements(data))
      if (m.label.rfind(label_prefix, 0) == 0 && m.n == n && m.d == d && !m.causal) rows.push_back(m);
  if (rows.size() != shapes.size()) {
    ADD_FAILURE() << rows.size() << " rows of " << label_prefix << " for " << shapes.size() << " shapes";
    return {};
  }
  return validate(kRoot + "/configs/h200.yaml", data, rows).rows;
}

// Every one of the forward's products is HMMA.1688 in its SASS: the model's mma, at 16 x 8 x 8, are the
// same number, and 1 x 16 x 4,096 x 64's total is what issue.iterative_softmax_per_element was set from
// (327.41 M: within 0.1%). 1 x 16 x 8,192 x 128 is another kernel (64 x 128 tiles, 8 warps) held out:
// 1,513 M simulated against 1,594 M counted (0.95); without the softmax's cost it was 1,064 M (0.67), at
// 16 x 8 x 16 929.6 M (0.58).
TEST(MemEfficientInstructions, TheForwardsCountFollowsItsCode) {
  const Counted d64 = counted("h200_memeff_fwd_instructions.csv", "1,16,4096,64");
  const Counted d128 = counted("h200_memeff_fwd_instructions.csv", "1,16,8192,128");
  EXPECT_EQ(d64.kernel, "fmha_cutlassF_f16_aligned_64x64_rf_sm80");
  EXPECT_EQ(d64.mma, 33554432);  // 16 heads x 64 x 64 tiles x 2 products of 64^3 / (16 x 8 x 8)
  const std::vector<ValidationRow> rows =
      simulated("EFFICIENT_ATTENTION fwd 1x16", {{4096, 64}, {8192, 128}});
  ASSERT_EQ(rows.size(), 2u);
  const double calibrated = rows[0].predicted_warp_instructions / d64.instructions;
  const double ratio = rows[1].predicted_warp_instructions / d128.instructions;
  std::printf("warp instructions, simulated / counted: 1x16x4096x64 %.4f, 1x16x8192x128 %.4f\n", calibrated,
              ratio);
  EXPECT_NEAR(calibrated, 1.0, 0.001);
  EXPECT_GT(ratio, 0.93);
  EXPECT_LT(ratio, 1.02);
}

// The backward computes P with expf: in its SASS one MUFU.EX2 per score a thread holds (8.93 M MUFU at 1 x
// 16 x 4,096 x 64 for its 8.39 M, the rest MUFU.RCP), with expf's seven other instructions and the scale's
// multiply, which issue.accurate_exp_per_element charges (.kernel ... exp(accurate)): 9 a score. What the
// model still counts short is CUTLASS's straight-line code around the products (iterator set-up,
// accumulators zeroed, spilled indices reloaded: about 750 a warp and step at d = 128, docs/validation.md).
// Without expf's cost the ratio was 0.838; 0.91 until dS read P from the registers that stored it
// (BufferState::register_copy), now 0.888.
TEST(MemEfficientInstructions, TheBackwardsExpIsExpf) {
  const Counted d64 = counted("h200_memeff_bwd_instructions.csv", "1,16,4096,64");
  EXPECT_EQ(d64.kernel, "fmha_cutlassB_f16_aligned_64x64_k64_seqaligned_sm80");
  const std::string data = kRoot + "/validation/data/h200_sdpa_cases.csv";
  std::vector<Measurement> rows;
  for (const Measurement& m : read_measurements(data))
    if (m.label.rfind("EFFICIENT_ATTENTION bwd 1x16", 0) == 0 && m.n == 4096 && m.d == 64 && !m.causal)
      rows.push_back(m);
  ASSERT_EQ(rows.size(), 1u);
  const std::vector<ValidationRow> simulated = validate(kRoot + "/configs/h200.yaml", data, rows).rows;
  ASSERT_EQ(simulated.size(), 1u);
  const double ratio = simulated[0].predicted_warp_instructions / d64.instructions;
  std::printf("backward warp instructions, simulated / counted: 1x16x4096x64 %.4f\n", ratio);
  EXPECT_GT(ratio, 0.88);
  EXPECT_LT(ratio, 0.95);
}

}  // namespace
}  // namespace attnsim
