// The block planner: the paper's rule with floor, seed 001's worked example, and the check against a
// schedule's real buffer inventory.
#include <gtest/gtest.h>

#include "traces/planner.h"

namespace attnsim::traces {
namespace {

// Seed 001: N = 5, d = 3, M = 59 -> B_c = 4, B_r = 3, and Q, K, V, S blocks fit in 59 elements.
TEST(Planner, Seed001WorkedExample) {
  const int64_t m = 59, d = 3;
  BlockPlan plan = plan_paper(m, d);
  EXPECT_EQ(plan.block_k, 4);
  EXPECT_EQ(plan.block_q, 3);
  EXPECT_TRUE(plan.fits);
  const int64_t q = plan.block_q * d, kv = 2 * plan.block_k * d, s = plan.block_q * plan.block_k;
  EXPECT_LE(q + kv + s, m);                 // seed 001's "Q, K, V and S"
  EXPECT_LE(q + kv + plan.block_q * d, m);  // the paper's four d-wide blocks Q_i, K_j, V_j, O_i
}

// The paper's ceil can overflow M; floor cannot: 4 * B_c * d <= M always.
TEST(Planner, FloorKeepsTheFourBlocksWithinM) {
  for (int64_t m : {12, 59, 100, 1000, 65536, 116224})
    for (int64_t d : {3, 16, 64, 128}) {
      if (m < 4 * d) continue;
      BlockPlan plan = plan_paper(m, d);
      EXPECT_LE(4 * plan.block_k * d, m) << "M=" << m << " d=" << d;
      EXPECT_LE(plan.block_q, d);
      EXPECT_TRUE(plan.fits);
    }
  // The counterexample in planner.h: ceil(100 / 12) = 9 would need 4 x 9 x 3 = 108 > 100 elements.
  const int64_t ceil_bc = (100 + 12 - 1) / 12;
  EXPECT_GT(4 * ceil_bc * 3, 100);
  EXPECT_EQ(plan_paper(100, 3).block_k, 100 / 12);
}

TEST(Planner, TooSmallMemoryDoesNotFit) {
  EXPECT_FALSE(plan_paper(10, 3).fits);
}

// Against an inventory that also holds a B_r x B_c f32 score tile, the planner halves until it fits.
TEST(Planner, ShrinksUntilTheRealBuffersFit) {
  const uint64_t sram = 64 * 1024;
  const int64_t d = 64;
  const int element = 2;
  auto inventory = [&](int64_t bq, int64_t bk) {
    return static_cast<uint64_t>((2 * bq * d + 2 * bk * d) * element + bq * bk * 4);
  };
  BlockPlan plan = plan_for_sram(sram, d, element, inventory);
  ASSERT_TRUE(plan.fits);
  EXPECT_LE(inventory(plan.block_q, plan.block_k), sram);
  // The paper's starting point did not fit, so the plan is smaller than it and says why.
  const int64_t paper_bc = static_cast<int64_t>(sram / element) / (4 * d);
  EXPECT_GT(inventory(std::min(paper_bc, d), paper_bc), sram);
  EXPECT_LT(plan.block_k, paper_bc);
  EXPECT_GT(plan.reasoning.size(), 3u);
}

// The hardware rule's ladders: powers of two from the MXU tile up to the first that covers N.
TEST(HardwarePlanner, BlockSizesArePowersOfTwoFromTheTileToN) {
  EXPECT_EQ(hardware_block_sizes(16, 4096),
            (std::vector<int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(hardware_block_sizes(32, 100), (std::vector<int64_t>{32, 64, 128}));  // 128 covers 100
  EXPECT_EQ(hardware_block_sizes(128, 64), (std::vector<int64_t>{128}));          // the tile, even past N
  EXPECT_EQ(hardware_block_sizes(48, 200), (std::vector<int64_t>{48, 96, 192, 384}));  // no power of two
}

// FlashAttention-2's buffers at d = 64, f16, K/V double-buffered, in closed form (no alignment): Q_i, two
// K_j and two V_j, S (f32) and P (f16), the f32 accumulator O_i, six f32 row statistics.
uint64_t flash2_buffers(int64_t bq, int64_t bk) {
  const int64_t d = 64;
  return uint64_t(bq * d * 2 + 4 * bk * d * 2 + bq * bk * (4 + 2) + bq * d * 4 + 6 * bq * 4);
}

// The H100's 227 KB (232,448 bytes) and its 16 x 32 MXU tile. By hand: 128 x 128 needs 216,064 bytes and
// fits; 128 x 256 needs 379,904; 256 x 64 needs 235,520 > 232,448; 256 x 32 fits (169,984) but is half
// the area; 64 x 256 needs 255,488. So B_r = B_c = 128, which is also FlashAttention-2's own choice at d
// = 64.
TEST(HardwarePlanner, H100Flash2IsOneTwentyEightSquare) {
  EXPECT_EQ(flash2_buffers(128, 128), 216064u);
  EXPECT_EQ(flash2_buffers(256, 64), 235520u);
  BlockPlan plan = plan_hardware(232448, 4096, 16, 32, flash2_buffers);
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.block_q, 128);
  EXPECT_EQ(plan.block_k, 128);
  // The largest: doubling either block no longer fits.
  EXPECT_GT(flash2_buffers(2 * plan.block_q, plan.block_k), 232448u);
  EXPECT_GT(flash2_buffers(plan.block_q, 2 * plan.block_k), 232448u);
  EXPECT_NE(plan.reasoning.back().find("216064 bytes <= 232448"), std::string::npos) << plan.reasoning.back();
}

// Ties: an inventory that only counts the area B_r x B_c, room for 8192: 16x512, 32x256, 64x128, 128x64
// and 256x32 all fill it; the squarest are 64x128 and 128x64, and the larger B_r wins.
TEST(HardwarePlanner, TiesGoToTheSquarerPairThenTheLargerBr) {
  auto area = [](int64_t bq, int64_t bk) { return uint64_t(bq * bk); };
  BlockPlan plan = plan_hardware(8192, 4096, 16, 32, area);
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.block_q, 128);
  EXPECT_EQ(plan.block_k, 64);
}

TEST(HardwarePlanner, NothingFits) {
  auto huge = [](int64_t, int64_t) { return uint64_t{1} << 40; };
  BlockPlan plan = plan_hardware(232448, 4096, 16, 32, huge);
  EXPECT_FALSE(plan.fits);
  EXPECT_NE(plan.reasoning.back().find("not even B_c = 32 fits"), std::string::npos) << plan.reasoning.back();
}

TEST(HardwarePlanner, RuleNames) {
  EXPECT_EQ(find_planner_rule("paper"), PlannerRule::Paper);
  EXPECT_EQ(find_planner_rule("hardware"), PlannerRule::Hardware);
  EXPECT_FALSE(find_planner_rule("Hardware").has_value());
  EXPECT_EQ(planner_rule_name(PlannerRule::Hardware), "hardware");
}

}  // namespace
}  // namespace attnsim::traces
