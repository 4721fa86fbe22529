// `attnsim compare` end to end: every schedule runs on one machine, values are checked, and the table's
// relations are the ones the schedules' structure implies.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

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

// --block-times: one record per thread block of the grid (query block fastest, then head), each on a core
// of the chip, ending after it starts; the CSV says which schedule and kernel.
TEST(Compare, BlockTimesRecordEveryBlockOfTheGrid) {
  CompareOptions o;
  o.config_path = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  o.n = 256;
  o.d = 64;
  o.heads = 3;
  o.block = 64;
  o.schedules = {"flash2"};
  o.values = CompareOptions::Values::Off;
  o.record_blocks = true;
  auto rows = run_compare(o);
  ASSERT_EQ(rows.size(), 1u);
  const auto& blocks = rows[0].blocks;
  ASSERT_EQ(blocks.size(), 12u);  // 256 / 64 query blocks x 3 heads
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const BlockRecord& b : blocks) {
    EXPECT_GE(b.core, 0);
    EXPECT_LT(b.core, 132);
    EXPECT_GT(b.end_cycle, b.start_cycle);
    EXPECT_EQ(b.index[2], 0);
    seen.insert({b.index[0], b.index[1]});
  }
  EXPECT_EQ(seen.size(), 12u);
  const std::string csv = block_times_csv(rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  EXPECT_EQ(csv.rfind("schedule,launch,kernel,block_x,block_y,block_z,core,start_cycle,end_cycle,", 0), 0u);
  EXPECT_NE(csv.find("\nflash2,0,"), std::string::npos);
}

}  // namespace
}  // namespace attnsim
