// `attnsim compare` end to end: every schedule runs on one machine, values are checked, and the table's
// relations are the ones the schedules' structure implies.
#include <gtest/gtest.h>

#include "sim/compare.h"

namespace attnsim {
namespace {

CompareOptions small(bool backward) {
  CompareOptions o;
  o.config_path = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";
  o.n = 256;
  o.d = 32;
  o.heads = 2;
  o.causal = true;
  o.backward = backward;
  o.values = CompareOptions::Values::On;
  return o;
}

const CompareRow& row(const std::vector<CompareRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.schedule == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(Compare, ForwardSchedulesAllCheckAndFlashMovesLessThanNaive) {
  auto rows = run_compare(small(false));
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) {
    ASSERT_TRUE(r.passed.has_value()) << r.schedule;
    EXPECT_TRUE(*r.passed) << r.schedule << " " << *r.max_rel_error;
    EXPECT_LE(r.block_q, 256);  // capped at N
  }
  const auto& naive = row(rows, "naive-safe");
  const auto& flash2 = row(rows, "flash2");
  // naive writes O, S (f32) and P (f16): exactly heads x n^2 x (4 + 2) bytes more than flash2's O.
  EXPECT_EQ(naive.hbm_written, flash2.hbm_written + 2u * 256 * 256 * (4 + 2));
  EXPECT_EQ(flash2.bytes_written.at("O"), 2u * 256 * 32 * 2);  // O once: heads x n x d x f16
}

// Seed 002's D_i trick: without it K is read twice per query block, so the flash2-bwd-no-d schedule moves
// more bytes for the same FLOPs' worth of gradients.
TEST(Compare, BackwardWithoutDiReadsKTwiceAsOften) {
  auto rows = run_compare(small(true));
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) EXPECT_TRUE(r.passed.value_or(false)) << r.schedule;
  const auto& with_d = row(rows, "flash2-bwd");
  const auto& without_d = row(rows, "flash2-bwd-no-d");
  EXPECT_GT(without_d.bytes_read.at("K"), with_d.bytes_read.at("K"));
  EXPECT_GT(without_d.hbm_read + without_d.hbm_written, with_d.hbm_read + with_d.hbm_written);
}

}  // namespace
}  // namespace attnsim
