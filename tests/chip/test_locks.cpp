// Spin locks between thread blocks (LOCK, UNLOCK) and memory barriers (FENCE) on the chip: a lock held by
// one block holds up another that wants it, each failed attempt is an atomic at L2, a block may not end
// holding a lock, blocks that wait on each other are reported, and a FENCE waits for the block's stores.
#include <gtest/gtest.h>

#include "isa/diagnostics.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "traces/builder.h"

namespace attnsim {
namespace {

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";
constexpr int64_t kFloats = 16384;  // a 64 KiB tile: its store takes thousands of cycles

// `blocks` blocks, each storing a 64 KiB tile between LOCK and UNLOCK of lock `lock_of(block)`, with a FENCE
// after the lock (as the memory-efficient backward does) and before the release.
isa::Program critical_sections(int64_t blocks, int64_t (*lock_of)(int64_t)) {
  traces::Builder b("<critical sections>");
  const int out = b.tensor("X", blocks, kFloats, Dtype::F32, false, 0);
  const int locks = b.tensor("locks", blocks, 8, Dtype::F32, false, 0);
  const int tile = b.buffer("B", 1, kFloats, Dtype::F32);
  const int kernel = b.kernel("sections", {blocks, 1, 1});
  for (int64_t block = 0; block < blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    b.emit(isa::Opcode::Lock, {b.rows_of(locks, lock_of(block), 1), isa::Operand::imm(55)});
    b.emit(isa::Opcode::Fence, {});
    b.emit(isa::Opcode::Store, {b.buf(tile), b.rows_of(out, block, 1)});
    b.emit(isa::Opcode::Fence, {});
    b.emit(isa::Opcode::Unlock, {b.rows_of(locks, lock_of(block), 1)});
  }
  return b.take();
}

struct LockRun {
  uint64_t cycles = 0, acquisitions = 0, attempts = 0, wait_cycles = 0, fences = 0;
  uint64_t locks_written = 0;  // SM -> L2 bytes of the lock tensor
};

// SystemC elaborates once a process: one machine a test, its programs run one after another.
MachineConfig h200_with(int64_t cores) {
  return load_config(kConfigs + "h200.yaml", {"chip.cores=" + std::to_string(cores)});
}

LockRun run(Machine& machine, const isa::Program& program) {
  machine.load(program, false, true);
  machine.run();
  LockRun r;
  r.cycles = machine.chip()->cycles();
  for (auto& core : machine.chip()->cores()) {
    r.acquisitions += core->dma().lock_acquisitions;
    r.attempts += core->dma().lock_attempts;
    r.wait_cycles += core->dma().lock_wait_cycles;
    r.fences += core->dma().fences;
  }
  const ChipSummary s = summarize_chip(*machine.chip(), program, machine.clock_ghz());
  r.locks_written = s.sm_l2_written.count("locks") ? s.sm_l2_written.at("locks") : 0;
  return r;
}

TEST(Locks, BlocksWantingOneLockTakeItInTurn) {
  const isa::Program shared = critical_sections(4, [](int64_t) -> int64_t { return 0; });
  const isa::Program own = critical_sections(4, [](int64_t block) { return block; });
  Machine machine(h200_with(4));
  const LockRun one = run(machine, shared), four = run(machine, own);
  EXPECT_EQ(one.acquisitions, 4u);
  EXPECT_EQ(four.acquisitions, 4u);
  EXPECT_EQ(one.fences, 8u);
  // Each on its own core from the start: with a lock each nobody waits; with one lock the sections run one
  // after another (each faster alone: its store has L2 to itself), more than twice as long in all.
  EXPECT_EQ(four.wait_cycles, 0u);
  EXPECT_EQ(four.attempts, 4u);
  EXPECT_GT(one.wait_cycles, 0u);
  EXPECT_GT(one.cycles, 2 * four.cycles) << one.cycles << " against " << four.cycles;
  // The waiting blocks kept trying: more compare-and-swaps than locks taken, and every attempt's 32 bytes
  // went to L2 (plus the four releases).
  EXPECT_GT(one.attempts, one.acquisitions);
  EXPECT_EQ(one.locks_written, 32 * (one.attempts + 4));
  EXPECT_EQ(four.locks_written, 32u * 8);
}

TEST(Locks, ABlockMayNotEndHoldingALock) {
  traces::Builder b("<forgets to unlock>");
  const int locks = b.tensor("locks", 1, 8, Dtype::F32, false, 0);
  b.begin_block(b.kernel("k", {1, 1, 1}), {0, 0, 0});
  b.emit(isa::Opcode::Lock, {b.rows_of(locks, 0, 1), isa::Operand::imm(0)});
  Machine machine(h200_with(2));
  try {
    run(machine, b.take());
    ADD_FAILURE() << "ran without error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ended holding 1 LOCK"), std::string::npos) << e.what();
  }
}

// Block 0 takes lock 0 then wants lock 1; block 1 takes lock 1 then wants lock 0; each stores a tile in
// between, so both hold their first lock before either asks for its second.
TEST(Locks, BlocksWaitingOnEachOtherAreADeadlock) {
  traces::Builder b("<deadlock>");
  const int out = b.tensor("X", 2, kFloats, Dtype::F32, false, 0);
  const int locks = b.tensor("locks", 2, 8, Dtype::F32, false, 0);
  const int tile = b.buffer("B", 1, kFloats, Dtype::F32);
  const int kernel = b.kernel("k", {2, 1, 1});
  for (int64_t block = 0; block < 2; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    b.emit(isa::Opcode::Lock, {b.rows_of(locks, block, 1), isa::Operand::imm(0)});
    b.emit(isa::Opcode::Store, {b.buf(tile), b.rows_of(out, block, 1)});
    b.emit(isa::Opcode::Fence, {});
    b.emit(isa::Opcode::Lock, {b.rows_of(locks, 1 - block, 1), isa::Operand::imm(0)});
    b.emit(isa::Opcode::Unlock, {b.rows_of(locks, 1 - block, 1)});
    b.emit(isa::Opcode::Unlock, {b.rows_of(locks, block, 1)});
  }
  Machine machine(h200_with(2));
  try {
    run(machine, b.take());
    ADD_FAILURE() << "ran without error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock: all 2 resident thread blocks wait at LOCK"),
              std::string::npos)
        << e.what();
  }
}

// A FENCE waits until the tile's store has arrived, then its own round trip (the config's fence_cycles):
// a store followed by a FENCE ends fence_cycles after the store alone does.
TEST(Locks, AFenceWaitsForTheStoresThenItsRoundTrip) {
  auto program = [](bool fence) {
    traces::Builder b("<fence>");
    const int out = b.tensor("X", 1, kFloats, Dtype::F32, false, 0);
    const int tile = b.buffer("B", 1, kFloats, Dtype::F32);
    b.begin_block(b.kernel("k", {1, 1, 1}), {0, 0, 0});
    b.emit(isa::Opcode::Store, {b.buf(tile), b.rows_of(out, 0, 1)});
    if (fence) b.emit(isa::Opcode::Fence, {});
    return b.take();
  };
  Machine machine(load_config(kConfigs + "h200.yaml", {}));
  const auto fence_cycles =
      static_cast<uint64_t>(machine.chip()->cores().front()->dma().params().fence_cycles);
  ASSERT_EQ(fence_cycles, 600u);
  const isa::Program with = program(true), without = program(false);
  EXPECT_EQ(run(machine, with).cycles, run(machine, without).cycles + fence_cycles);
}

}  // namespace
}  // namespace attnsim
