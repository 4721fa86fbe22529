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

}  // namespace
}  // namespace attnsim::traces
