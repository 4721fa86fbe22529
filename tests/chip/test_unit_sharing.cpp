// chip.share_units: resident blocks' instructions that overlap share the MXU, the VPU and the warp
// schedulers (processor sharing among blocks, program order within one: models/core/shared_server.h).
// The server against closed forms of processor sharing; on the chip, a lone block runs cycle for cycle as
// without sharing, two identical blocks end together, and the results converge as the quantum shrinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "models/core/shared_server.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "tests/common/forward_shape.h"
#include "traces/attention_forward.h"

namespace attnsim {
namespace {

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";
const char kOwners[2] = {};  // two blocks: their addresses tell them apart
const void* const a_block = &kOwners[0];
const void* const b_block = &kOwners[1];

// A (100 cycles) from 0; B (40) from 10. From 10 each has half the unit: B's 40 take 80 cycles (ends at 90),
// A has 50 left then, alone (ends at 140): the work of both, 140 cycles, as first come first served.
TEST(SharedServer, TwoBlocksShareTheUnitHalfAndHalf) {
  SharedServer unit;
  EXPECT_EQ(unit.add(1, a_block, 0, 0, 100), 100u);
  EXPECT_TRUE(unit.moved().empty());
  EXPECT_EQ(unit.add(2, b_block, 1, 10, 40), 90u);
  ASSERT_EQ(unit.moved().size(), 1u);
  EXPECT_EQ(unit.moved()[0], std::make_pair(uint64_t{1}, uint64_t{140}));
  EXPECT_EQ(unit.busy_until(), 140u);
}

// With share_older_weight 3 the older has three quarters of the unit while both have work: A (older, 100)
// ends at 133.3, B (40) has done a quarter of that by then and ends alone at 140.
TEST(SharedServer, AnOlderBlockTakesItsWeightedShare) {
  SharedServer unit;
  unit.set_older_weight(3);
  EXPECT_EQ(unit.add(1, a_block, 0, 0, 100), 100u);
  EXPECT_EQ(unit.add(2, b_block, 1, 0, 40), 140u);
  ASSERT_EQ(unit.moved().size(), 1u);
  EXPECT_EQ(unit.moved()[0], std::make_pair(uint64_t{1}, uint64_t{133}));
}

// A block's own jobs keep their order: its second waits for its first, whoever else shares the unit.
TEST(SharedServer, ABlocksOwnJobsRunInProgramOrder) {
  SharedServer unit;
  EXPECT_EQ(unit.add(1, a_block, 0, 0, 100), 100u);
  EXPECT_EQ(unit.add(2, a_block, 0, 0, 30), 130u);  // alone: first come first served
  EXPECT_EQ(unit.owner_free(a_block), 130u);
  EXPECT_EQ(unit.add(3, b_block, 1, 10, 40), 90u);  // shares with A's first only
  ASSERT_EQ(unit.moved().size(), 2u);
  EXPECT_EQ(unit.moved()[0], std::make_pair(uint64_t{1}, uint64_t{140}));
  EXPECT_EQ(unit.moved()[1], std::make_pair(uint64_t{2}, uint64_t{170}));
}

// Continuity, what first come first served lacks: B arriving a cycle later moves each end by at most a
// cycle (first come first served hands A's whole 100 cycles to whoever came first: a jump of 100).
TEST(SharedServer, AnArrivalACycleLaterMovesEachEndByACycleAtMost) {
  uint64_t last_a = 0, last_b = 0;
  for (uint64_t arrival = 0; arrival < 160; ++arrival) {
    SharedServer unit;
    const uint64_t alone = unit.add(1, a_block, 0, 50, 100);
    const uint64_t b = unit.add(2, b_block, 1, arrival, 60);
    const uint64_t a = unit.moved().empty() ? alone : unit.moved()[0].second;
    if (arrival > 0) {
      EXPECT_LE(std::max(a, last_a) - std::min(a, last_a), 1u) << "arrival " << arrival;
      EXPECT_LE(std::max(b, last_b) - std::min(b, last_b), 1u) << "arrival " << arrival;
    }
    last_a = a, last_b = b;
  }
}

// Work appended (the cycles a product loses to other instructions) goes in equal parts behind each block's
// own jobs. A (100) and B (50) from 0: B ends at 100, A at 150. 20 more: B's 10 behind B share the unit with
// A until 120, so A ends at 160 and its 10 at 170.
TEST(SharedServer, AppendedWorkGoesBehindEachBlocksOwn) {
  SharedServer unit;
  unit.add(1, a_block, 0, 0, 100);
  unit.add(2, b_block, 1, 0, 50);
  EXPECT_TRUE(unit.append_behind(20));
  ASSERT_EQ(unit.moved().size(), 1u);
  EXPECT_EQ(unit.moved()[0], std::make_pair(uint64_t{1}, uint64_t{160}));
  EXPECT_EQ(unit.owner_free(a_block), 170u);
  EXPECT_EQ(unit.owner_free(b_block), 120u);
  EXPECT_DOUBLE_EQ(unit.work_left_at(60), 150.0 + 20.0 - 60.0);  // the unit works whenever it has work
  EXPECT_TRUE(unit.append_behind(20));  // B's 20 now share with A to 140: A ends at 170, its 20 at 190
  EXPECT_EQ(unit.owner_free(a_block), 190u);
  SharedServer idle;
  EXPECT_FALSE(idle.append_behind(20));
}

isa::Program flash2(int64_t n, int64_t heads, int64_t block) {
  return traces::forward_program(traces::ForwardSchedule::Flash2, testing::chip_shape(n, heads, block));
}

// Each block's end, in launch order, on one core of the H200 preset with two resident blocks.
std::vector<uint64_t> block_ends(Machine& machine, const isa::Program& program) {
  machine.load(program, false, true);
  machine.chip()->record_blocks(true);
  machine.run();
  std::vector<BlockRecord> records = machine.chip()->block_records();
  std::sort(records.begin(), records.end(), [](const BlockRecord& x, const BlockRecord& y) {
    return std::tie(x.index[2], x.index[1], x.index[0]) < std::tie(y.index[2], y.index[1], y.index[0]);
  });
  std::vector<uint64_t> ends;
  for (const BlockRecord& r : records) ends.push_back(r.end_cycle);
  return ends;
}

Machine& one_core() {
  static Machine machine(load_config(kConfigs + "h200.yaml", {"chip.cores=1", "chip.blocks_per_core=2"}));
  return machine;
}

// Alone a block has nothing to share with: every cycle as without sharing (FlashAttention-2's loads,
// products, softmax and stores through the DMA, MXU, VPU and the schedulers).
TEST(UnitSharing, ALoneBlockRunsCycleForCycleAsWithoutIt) {
  Machine& machine = one_core();
  const isa::Program one = flash2(128, 1, 128);
  machine.set_share_units(false);
  const std::vector<uint64_t> serial = block_ends(machine, one);
  machine.set_share_units(true);
  EXPECT_EQ(block_ends(machine, one), serial);
  ASSERT_EQ(serial.size(), 1u);
  EXPECT_GT(serial[0], 5000u);
}

// Two identical blocks placed together: served one at a time, the first to reach a unit keeps it and the
// pair ends far apart (9,612 and 11,866 cycles, 2026-12-04); shared, each progresses while the other does
// and they end close (12,273 and 13,027). Sharing is no faster here: in step, both wait for memory at once.
TEST(UnitSharing, TwoIdenticalBlocksEndCloserTogether) {
  Machine& machine = one_core();
  const isa::Program two = flash2(128, 2, 128);
  machine.set_share_units(false);
  const std::vector<uint64_t> serial = block_ends(machine, two);
  machine.set_share_units(true);
  const std::vector<uint64_t> shared = block_ends(machine, two);
  ASSERT_EQ(serial.size(), 2u);
  ASSERT_EQ(shared.size(), 2u);
  std::printf("two blocks, served one at a time: %llu, %llu cycles; shared: %llu, %llu\n",
              static_cast<unsigned long long>(serial[0]), static_cast<unsigned long long>(serial[1]),
              static_cast<unsigned long long>(shared[0]), static_cast<unsigned long long>(shared[1]));
  const auto gap = [](const std::vector<uint64_t>& ends) {
    return static_cast<double>(std::max(ends[0], ends[1]) - std::min(ends[0], ends[1]));
  };
  EXPECT_LT(gap(shared), gap(serial) / 2);
  EXPECT_EQ(block_ends(machine, two), shared);  // deterministic
}

// The point of sharing: an arrival a cycle later moves the ends by about a cycle, so the quantum's reordering
// of the L2's traffic moves the whole chip's time little. flash2 at N = 2,048, 40 heads, 64 x 64 on the
// H100 (three blocks an SM): 345.5-347.9 us from a 5-cycle to a 20,000-cycle quantum (2026-12-04); its
// first version, which appended the cycles a product yields behind one block's work, jumped between 327 and
// 337 us. Served one at a time, blocks in step under `ready` did too (docs/chip.md).
TEST(UnitSharing, TheWholeChipConvergesAsTheQuantumShrinks) {
  Machine machine(load_config(kConfigs + "h100.yaml", {"chip.share_units=true"}));
  const isa::Program p = flash2(2048, 40, 64);
  auto cycles_at = [&](int64_t quantum) {
    machine.chip()->set_quantum(quantum);
    machine.load(p, false, true);
    machine.run();
    return static_cast<double>(machine.chip()->cycles());
  };
  const double finest = cycles_at(5);
  for (int64_t quantum : {25, 200, 2000, 20000})
    EXPECT_NEAR(cycles_at(quantum) / finest, 1.0, 0.015) << "quantum " << quantum;
}

}  // namespace
}  // namespace attnsim
