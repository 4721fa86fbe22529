// chip.older_preempts: an older block's instruction takes the MXU, the VPU or the warp schedulers from a
// younger block's in the middle, and the younger one resumes after it (docs/chip.md, "Which resident block a
// core serves first"). Two identical blocks on one core of the H200 preset, each a chain of products and
// exponentials on its own buffers: no memory traffic, so what moves is the sharing of the core alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/config.h"
#include "sim/machine.h"
#include "traces/builder.h"

namespace attnsim {
namespace {

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

// `blocks` blocks, each S = A B, P = exp(S), O = P B eight times over 64 x 64 tiles in SRAM.
isa::Program product_chains(int64_t blocks) {
  traces::Builder b("<product chains>");
  const int a = b.buffer("A", 64, 64, Dtype::F16), w = b.buffer("B", 64, 64, Dtype::F16);
  const int s = b.buffer("S", 64, 64, Dtype::F32), p = b.buffer("P", 64, 64, Dtype::F16);
  const int o = b.buffer("O", 64, 64, Dtype::F32);
  const int kernel = b.kernel("chains", {blocks, 1, 1});
  for (int64_t block = 0; block < blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    for (int step = 0; step < 8; ++step) {
      b.emit(isa::Opcode::MacZ, {b.buf(a), b.buf(w), b.buf(s)});
      b.emit(isa::Opcode::Exp, {b.buf(s), b.buf(p)});
      b.emit(isa::Opcode::MacZ, {b.buf(p), b.buf(w), b.buf(o)});
    }
  }
  return b.take();
}

// Each block's end cycle, in launch order (the first is the older: placed first on the one core). One
// machine for the whole test binary's process (SystemC allows one), its flag set before each load.
std::vector<uint64_t> block_ends(int64_t blocks, bool older_preempts) {
  static Machine machine(load_config(kConfigs + "h200.yaml", {"chip.cores=1", "chip.blocks_per_core=2"}));
  machine.set_older_preempts(older_preempts);
  const isa::Program program = product_chains(blocks);  // the machine keeps a reference to it
  machine.load(program, false, true);
  machine.chip()->record_blocks(true);
  machine.run();
  std::vector<BlockRecord> records = machine.chip()->block_records();
  std::sort(records.begin(), records.end(),
            [](const BlockRecord& x, const BlockRecord& y) { return x.index[0] < y.index[0]; });
  std::vector<uint64_t> ends;
  for (const BlockRecord& r : records) ends.push_back(r.end_cycle);
  return ends;
}

// Without preemption a unit's instruction keeps it to its end: the older block waits behind the younger's
// products that started first (the chip's issue_priority, oldest, only breaks ties). With it the older runs
// as if alone and the younger takes what it leaves, the pair's work done in the same time.
TEST(OlderPreempts, TheOlderBlockRunsAsIfAloneTheYoungerTakesTheRest) {
  const std::vector<uint64_t> alone = block_ends(1, true);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(block_ends(1, false), alone);  // nothing to take from: the flag changes nothing
  const std::vector<uint64_t> shared = block_ends(2, false), taken = block_ends(2, true);
  ASSERT_EQ(shared.size(), 2u);
  ASSERT_EQ(taken.size(), 2u);
  const double solo = static_cast<double>(alone[0]);
  std::printf("one block alone %.0f cycles; two without preemption: %llu, %llu; with it: %llu, %llu\n", solo,
              static_cast<unsigned long long>(shared[0]), static_cast<unsigned long long>(shared[1]),
              static_cast<unsigned long long>(taken[0]), static_cast<unsigned long long>(taken[1]));
  EXPECT_GT(static_cast<double>(shared[0]) / solo, 1.1);  // 1.15 (2026-12-03)
  EXPECT_LT(static_cast<double>(taken[0]) / solo, 1.03);  // 1.015
  // The younger loses what the older took and nothing more: the pair's last end moves little.
  EXPECT_NEAR(static_cast<double>(taken[1]) / static_cast<double>(shared[1]), 1.0, 0.03);  // 1.019
}

// The same config twice gives the same ends, cycle for cycle.
TEST(OlderPreempts, IsDeterministic) {
  EXPECT_EQ(block_ends(2, true), block_ends(2, true));
}

}  // namespace
}  // namespace attnsim
