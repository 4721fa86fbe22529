// How an SM shares itself between an older and a younger block: the GPU against the model's two rules,
// keep-to-the-end (the presets) and chip.older_preempts. GPU: validation/data/h200_block_ends_solo.csv
// (CASES="memeff_fwd,1,1,8192,128,0 memeff_fwd,1,2,8192,128,0 fa2_fwd,1,1,16384,128,0
// fa2_fwd,1,2,16384,128,0 ..." TAG=_solo REPS=3 bash validation/run_block_ends.sh, 2026-12-03, an H200 with
// UUID GPU-5551582b, 128-SM green context): one block an SM (one head: 128 blocks) and two (two heads: the
// second head's blocks land beside the first's), every block's end. The model runs the same rows
// (validation/data/h200_block_ends_solo_rows.csv: the 1 x 8 x 32,768 rows of h200_sdpa_cases.csv with
// heads and n changed) on 128 cores through the CLI, one process per rule (docs/chip.md, "Which resident
// block a core serves first").
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  return out;
}

// A launch's blocks' ends in launch order; older: the first 128 (the first wave, one an SM), younger:
// the rest.
struct Ends {
  double older = 0, younger = 0;  // medians
  double latest = 0;              // the last block's end
};
Ends split_ends(const std::vector<double>& in_launch_order) {
  const size_t first = std::min<size_t>(128, in_launch_order.size());
  const std::vector<double> older(in_launch_order.begin(), in_launch_order.begin() + first);
  const std::vector<double> younger(in_launch_order.begin() + first, in_launch_order.end());
  const double latest =
      in_launch_order.empty() ? 0 : *std::max_element(in_launch_order.begin(), in_launch_order.end());
  return {median(older), younger.empty() ? 0 : median(younger), latest};
}

// The GPU's, by case: medians over the launches after the first (the first of a case starts cold).
std::map<std::string, Ends> gpu_ends(const std::string& file = "h200_block_ends_solo.csv") {
  std::ifstream in(kRoot + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "case,rep,block,x,y,z,end_ns");
  std::map<std::pair<std::string, int>, std::map<int, double>> launches;
  while (std::getline(in, line)) {
    const auto c = split(line);
    if (c.size() == 7 && std::stoi(c[1]) > 0)
      launches[{c[0], std::stoi(c[1])}][std::stoi(c[2])] = std::stod(c[6]);
  }
  std::map<std::string, std::vector<Ends>> by_case;
  for (const auto& [key, blocks] : launches) {
    std::vector<double> ends;
    for (const auto& [block, end] : blocks) ends.push_back(end);
    by_case[key.first].push_back(split_ends(ends));
  }
  std::map<std::string, Ends> out;
  for (const auto& [name, reps] : by_case) {
    std::vector<double> older, younger;
    for (const Ends& e : reps) older.push_back(e.older), younger.push_back(e.younger);
    out[name] = {median(older), median(younger)};
  }
  return out;
}

// The model's, by row of the rows file (2: memory-efficient one head, 3: two heads, 4 and 5:
// FlashAttention-2).
std::map<int, Ends> model_ends(bool older_preempts,
                               const std::string& rows_file = "h200_block_ends_solo_rows.csv") {
  const std::string out =
      ::testing::TempDir() + "older_first_" + (older_preempts ? "on_" : "off_") + rows_file;
  const std::string command = std::string(ATTNSIM_CLI) + " validate -c " + kRoot + "/configs/h200.yaml " +
                              kRoot + "/validation/data/" + rows_file + " -p chip.cores=128 -p " +
                              "chip.older_preempts=" + (older_preempts ? "true" : "false") +
                              " --block-times " + out + " > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("file,line,label,launch,kernel,block_x,block_y,block_z,core,start_cycle,end_cycle", 0),
            0u);
  std::map<int, std::map<std::array<int64_t, 3>, double>> rows;  // (z, y, x): launch order
  while (std::getline(in, line)) {
    const auto c = split(line);
    rows[std::stoi(c[1])][{std::stoll(c[7]), std::stoll(c[6]), std::stoll(c[5])}] = std::stod(c[10]);
  }
  std::map<int, Ends> ends;
  for (const auto& [row, blocks] : rows) {
    std::vector<double> v;
    for (const auto& [index, end] : blocks) v.push_back(end);
    ends[row] = split_ends(v);
  }
  return ends;
}

// On the GPU the memory-efficient forward's older block runs at 0.81 of its pace alone beside a younger one
// (ends at 1.23 of a lone block's time, the younger at 1.37); FlashAttention-2's pair shares evenly (1.53 and
// 1.54). Keeping a unit to an instruction's end, the model shares evenly in both (1.35 and 1.37: the
// memory-efficient pair's throughput as the GPU's within 10%, FlashAttention-2's within 15%: since its
// kernel's own overhead (isa::CodeOverhead) its lone block no longer runs instructions the kernel does not,
// and its pair, which the model overlaps better than the GPU, gained less: APairCostsTheGpuMoreThanTheModel);
// with older_preempts the older runs nearly as if alone in both (1.10, 1.07). The GPU lies between, by
// kernel.
TEST(OlderFirst, TheGpuSharesBetweenTheModelsTwoRules) {
  auto gpu = gpu_ends();
  const Ends g_memeff_solo = gpu["memeff_fwd_1x1x8192x128_c0"], g_memeff = gpu["memeff_fwd_1x2x8192x128_c0"];
  const Ends g_fa2_solo = gpu["fa2_fwd_1x1x16384x128_c0"], g_fa2 = gpu["fa2_fwd_1x2x16384x128_c0"];
  ASSERT_GT(g_memeff_solo.older, 0);
  ASSERT_GT(g_fa2_solo.older, 0);
  const double gm_older = g_memeff.older / g_memeff_solo.older,
               gm_younger = g_memeff.younger / g_memeff_solo.older;
  const double gf_older = g_fa2.older / g_fa2_solo.older, gf_younger = g_fa2.younger / g_fa2_solo.older;
  std::printf(
      "GPU, over one block alone: memory-efficient older %.3f younger %.3f; FlashAttention-2 %.3f %.3f\n",
      gm_older, gm_younger, gf_older, gf_younger);
  EXPECT_GT(gm_older, 1.15);  // 1.23
  EXPECT_LT(gm_older, 1.30);
  EXPECT_GT(gm_younger - gm_older, 0.08);         // 0.14
  EXPECT_NEAR(gf_older / gf_younger, 1.0, 0.03);  // 0.988
  EXPECT_GT(gf_older, 1.4);                       // 1.54

  for (const bool preempts : {false, true}) {
    const auto m = model_ends(preempts);
    ASSERT_EQ(m.size(), 4u);
    const double mm_older = m.at(3).older / m.at(2).older, mm_younger = m.at(3).younger / m.at(2).older;
    const double mf_older = m.at(5).older / m.at(4).older, mf_younger = m.at(5).younger / m.at(4).older;
    std::printf(
        "model, older_preempts %d: memory-efficient older %.3f younger %.3f; FlashAttention-2 %.3f %.3f\n",
        preempts, mm_older, mm_younger, mf_older, mf_younger);
    if (!preempts) {  // even shares, the GPU's pair throughput
      EXPECT_NEAR(mm_older / mm_younger, 1.0, 0.02);
      EXPECT_NEAR(mf_older / mf_younger, 1.0, 0.02);
      EXPECT_NEAR(mm_younger / gm_younger, 1.0, 0.10);
      EXPECT_NEAR(mf_younger / gf_younger, 1.0, 0.15);  // 0.89
    } else {  // the older nearly alone: below the GPU's in both kernels
      EXPECT_LT(mm_older, gm_older - 0.08);
      EXPECT_LT(mf_older, gf_older - 0.3);
      EXPECT_LT(mf_older / mf_younger, 0.8);
    }
  }
}

// The same split for more kernels (validation/data/h200_block_ends_solo2.csv: the same script, CASES with
// d = 64 and the mask, 2026-12-03, an H200 with UUID GPU-ffe08a82). The memory-efficient forward at d = 64
// and FlashAttention-2's at d = 64 keep their pairs nearly in step; the memory-efficient causal forward at
// d = 128 splits less than without the mask: the older block's share is the kernel's.
TEST(OlderFirst, HowMuchTheOlderLeadsDependsOnTheKernel) {
  auto gpu = gpu_ends("h200_block_ends_solo2.csv");
  const Ends memeff64 = gpu["memeff_fwd_1x2x8192x64_c0"], fa2_64 = gpu["fa2_fwd_1x2x16384x64_c0"];
  const Ends causal = gpu["memeff_fwd_1x2x8192x128_c1"];
  ASSERT_GT(memeff64.younger, 0);
  ASSERT_GT(fa2_64.younger, 0);
  ASSERT_GT(causal.younger, 0);
  std::printf(
      "older's end over younger's: memory-efficient d = 64 %.3f, FlashAttention-2 d = 64 %.3f, "
      "memory-efficient causal d = 128 %.3f\n",
      memeff64.older / memeff64.younger, fa2_64.older / fa2_64.younger, causal.older / causal.younger);
  EXPECT_NEAR(memeff64.older / memeff64.younger, 1.0, 0.02);  // 0.995
  EXPECT_NEAR(fa2_64.older / fa2_64.younger, 0.98, 0.02);     // 0.978
  EXPECT_NEAR(causal.older / causal.younger, 0.93, 0.03);     // 0.927
  // Without the mask at d = 128 (the first test's file) the older ends at 0.90 of the younger's end.
  auto first = gpu_ends();
  const Ends plain = first["memeff_fwd_1x2x8192x128_c0"];
  EXPECT_LT(plain.older / plain.younger, 0.92);
}

// The GPU's lone block and pair under ncu --set full, base clocks
// (validation/data/h200_fwd_pairs_profile.csv, summarize_pairs_profile.py of run_memeff_profile.sh
// TAG=_pairs, 2026-12-04, an H200 with UUID GPU-685b96c3): cycles per SM as the kernel's time x its measured
// clock, and the tensor pipe's share of them.
struct Profiled {
  double cycles = 0, tensor_cycles = 0;
};
std::map<std::string, Profiled> profiled() {
  std::ifstream in(kRoot + "/validation/data/h200_fwd_pairs_profile.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("kernel,case,grid,time_ns,sm_clock_hz,tensor_active_pct,", 0), 0u);
  std::map<std::string, Profiled> out;
  while (std::getline(in, line)) {
    const auto c = split(line);
    const double cycles = std::stod(c[3]) * 1e-9 * std::stod(c[4]);
    out[c[0] + " " + c[1]] = {cycles, cycles * std::stod(c[5]) / 100};
  }
  return out;
}

// A pair costs the GPU more than the model: the tensor work per block is the same alone and paired on the
// GPU (the pipe is neither full nor the limit), yet two blocks take 1.70 (FlashAttention-2) and 1.56 (the
// memory-efficient forward) times a lone block's time, where the model overlaps them to 1.37 and 1.36. Its
// lone FlashAttention-2 block is 1.20 times the GPU's, its pair 0.97 (1.28 and 1.07 before the kernel's own
// overhead took out the instructions it does not run): the two errors partly cancel on the grids of two
// blocks an SM that every FlashAttention-2 row runs (docs/validation.md, "A lone block and a pair under the
// profiler"). Held as a known miss: a model of co-resident blocks moves these bands.
TEST(OlderFirst, APairCostsTheGpuMoreThanTheModel) {
  const auto gpu = profiled();
  ASSERT_EQ(gpu.size(), 9u);
  const Profiled fa2 = gpu.at("h200_fa2_fwd 1x1x16384x128x0"),
                 fa2_pair = gpu.at("h200_fa2_fwd 1x2x16384x128x0");
  const Profiled me = gpu.at("h200_memeff_fwd 1x1x8192x128x0"),
                 me_pair = gpu.at("h200_memeff_fwd 1x2x8192x128x0");
  EXPECT_NEAR(fa2_pair.tensor_cycles / (2 * fa2.tensor_cycles), 1.0, 0.03);  // 1.001
  EXPECT_NEAR(me_pair.tensor_cycles / (2 * me.tensor_cycles), 1.0, 0.03);    // 0.996
  const double gpu_fa2 = fa2_pair.cycles / fa2.cycles, gpu_me = me_pair.cycles / me.cycles;
  const auto m = model_ends(false);
  ASSERT_EQ(m.size(), 4u);
  const double model_fa2 = m.at(5).younger / m.at(4).older, model_me = m.at(3).younger / m.at(2).older;
  std::printf(
      "pair over lone block: FlashAttention-2 GPU %.3f model %.3f; memory-efficient GPU %.3f model %.3f\n",
      gpu_fa2, model_fa2, gpu_me, model_me);
  std::printf("model over GPU, FlashAttention-2: lone block %.3f, pair %.3f\n", m.at(4).older / fa2.cycles,
              m.at(5).younger / fa2_pair.cycles);
  EXPECT_NEAR(gpu_fa2, 1.70, 0.05);
  EXPECT_NEAR(gpu_me, 1.56, 0.05);
  EXPECT_LT(model_fa2, gpu_fa2 - 0.15);  // 1.37
  EXPECT_LT(model_me, gpu_me - 0.15);    // 1.36
  EXPECT_NEAR(m.at(4).older / fa2.cycles, 1.20, 0.06);
  EXPECT_NEAR(m.at(5).younger / fa2_pair.cycles, 0.97, 0.06);
}

// The same at d = 64 (run_memeff_profile.sh TAG=_pairs64, 2026-12-04, an H200 with UUID GPU-be31e9ef; the
// model's rows: validation/data/h200_fwd_pairs64_rows.csv, the 1 x 16 x 16,384 x 64 rows of
// h200_sdpa_cases.csv with heads and n changed). FlashAttention-2's pair costs the GPU 1.63 of a lone block
// and the model 1.13: its lone block 1.24 of the GPU's, its pair 0.86 (1.30 and 0.95 before the kernel's own
// overhead, isa::CodeOverhead). The memory-efficient forward is fast
// in the model at one, two and four blocks an SM (0.73, 0.75, 0.91 of the GPU's cycles), its tensor work
// per block the same at every count on the GPU.
TEST(OlderFirst, AtDSixtyFourTheModelOverlapsFlashAttentionPairsStillFurther) {
  const auto gpu = profiled();
  const Profiled me1 = gpu.at("h200_memeff_fwd 1x1x8192x64x0"), me2 = gpu.at("h200_memeff_fwd 1x2x8192x64x0");
  const Profiled me4 = gpu.at("h200_memeff_fwd 1x4x8192x64x0");
  const Profiled fa1 = gpu.at("h200_fa2_fwd 1x1x16384x64x0"), fa2 = gpu.at("h200_fa2_fwd 1x2x16384x64x0");
  EXPECT_NEAR(me2.tensor_cycles / (2 * me1.tensor_cycles), 1.0, 0.03);
  EXPECT_NEAR(me4.tensor_cycles / (4 * me1.tensor_cycles), 1.0, 0.03);
  EXPECT_NEAR(fa2.tensor_cycles / (2 * fa1.tensor_cycles), 1.0, 0.03);
  const auto m = model_ends(false, "h200_fwd_pairs64_rows.csv");
  ASSERT_EQ(m.size(), 5u);  // lines 2-4: memory-efficient 1, 2, 4 heads; 5-6: FlashAttention-2 1, 2
  const auto last = [&](int line) { return m.at(line).latest; };
  const double gpu_fa = fa2.cycles / fa1.cycles, model_fa = last(6) / last(5);
  std::printf(
      "FlashAttention-2 d = 64, pair over lone block: GPU %.3f model %.3f; model over GPU %.3f, %.3f\n",
      gpu_fa, model_fa, last(5) / fa1.cycles, last(6) / fa2.cycles);
  std::printf("memory-efficient d = 64, model over GPU at 1, 2, 4 an SM: %.3f %.3f %.3f\n",
              last(2) / me1.cycles, last(3) / me2.cycles, last(4) / me4.cycles);
  EXPECT_NEAR(gpu_fa, 1.63, 0.05);
  EXPECT_LT(model_fa, gpu_fa - 0.3);  // 1.13
  EXPECT_NEAR(last(5) / fa1.cycles, 1.24, 0.06);
  EXPECT_LT(last(2) / me1.cycles, 0.85);
  EXPECT_LT(last(3) / me2.cycles, 0.85);
}

}  // namespace
