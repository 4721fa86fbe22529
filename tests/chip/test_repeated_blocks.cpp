// Repeated blocks: streamed to a whole chip, a block whose instructions are its kernel's template block's
// with every tensor tile moved by a fixed offset per tensor travels as those offsets alone
// (traces::Builder, isa::BlockStart::repeats_template). The oracle is the same program streamed without
// repeats: every figure and every block's core, start and end must be the same, bit for bit.
#include <gtest/gtest.h>

#include "chip/chip.h"
#include "isa/program.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "traces/attention_backward.h"
#include "traces/attention_forward.h"
#include "traces/builder.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

struct Outcome {
  ChipSummary summary;
  std::vector<BlockRecord> blocks;
  std::vector<double> output;  // a checked tensor's values (values mode)
};

// One machine per process (SystemC elaborates once), loaded again for every run.
Machine& machine_for_test() {
  static Machine machine(load_config(kConfigs + "h100.yaml", {}));
  return machine;
}

Outcome simulate(const std::function<isa::Program()>& generate, bool repeats, bool values = false,
                 const std::string& output = "") {
  Machine& machine = machine_for_test();
  const isa::Program program = traces::stream_program(generate, 1 << 16, repeats);
  machine.load(program, false, !values);
  machine.chip()->record_blocks(true);
  machine.run();
  Outcome o{
      summarize_chip(*machine.chip(), program, machine.clock_ghz()), machine.chip()->block_records(), {}};
  if (!output.empty())
    for (size_t t = 0; t < program.tensors.size(); ++t)
      if (program.tensors[t].name == output) o.output = machine.chip()->tensor_values(static_cast<int>(t));
  return o;
}

// Blocks sent as repeats, and blocks in all, when `generate` streams with repeats.
std::pair<int, int> count_repeats(const std::function<isa::Program()>& generate) {
  const isa::Program program = traces::stream_program(generate, 1 << 16, true);
  isa::Chunk chunk;
  int repeats = 0, blocks = 0;
  while (program.stream->next(chunk))
    for (const isa::BlockStart& b : chunk.blocks) repeats += b.repeats_template, ++blocks;
  return {repeats, blocks};
}

void expect_same(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.summary.cycles, b.summary.cycles);
  EXPECT_EQ(a.summary.instructions, b.summary.instructions);
  EXPECT_EQ(a.summary.sm_l2_read, b.summary.sm_l2_read);
  EXPECT_EQ(a.summary.sm_l2_written, b.summary.sm_l2_written);
  EXPECT_EQ(a.summary.l2_read_hit, b.summary.l2_read_hit);
  EXPECT_EQ(a.summary.dram_read, b.summary.dram_read);
  EXPECT_EQ(a.summary.dram_written, b.summary.dram_written);
  EXPECT_EQ(a.summary.dirty_at_kernel_end, b.summary.dirty_at_kernel_end);
  EXPECT_EQ(a.summary.l2_lookup_read_miss_sectors, b.summary.l2_lookup_read_miss_sectors);
  EXPECT_EQ(a.summary.l2_fabric_sectors, b.summary.l2_fabric_sectors);
  EXPECT_EQ(a.summary.warp_instructions, b.summary.warp_instructions);
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t k = 0; k < a.blocks.size(); ++k) {
    EXPECT_EQ(a.blocks[k].index, b.blocks[k].index) << k;
    EXPECT_EQ(a.blocks[k].core, b.blocks[k].core) << k;
    EXPECT_EQ(a.blocks[k].start_cycle, b.blocks[k].start_cycle) << k;
    EXPECT_EQ(a.blocks[k].end_cycle, b.blocks[k].end_cycle) << k;
  }
  EXPECT_EQ(a.output, b.output);
}

traces::ForwardShape forward_shape(bool causal) {
  traces::ForwardShape s;
  s.n = 2048;
  s.d = 64;
  s.heads = 6;
  s.block_q = 128;
  s.block_k = 64;
  s.causal = causal;
  s.accumulators_in_registers = true;
  s.keys_descending = true;
  return s;
}

// Every block of FlashAttention-2's forward without a mask is the first one moved (Q_i, O_i and the row
// statistics by its query block and head, K and V by its head): 95 of 96 go as offsets.
TEST(RepeatedBlocks, Flash2ForwardRunsAsIfEveryBlockWereSent) {
  const traces::ForwardShape s = forward_shape(false);
  const auto generate = [s] { return traces::forward_program(traces::ForwardSchedule::Flash2, s); };
  EXPECT_EQ(count_repeats(generate), std::make_pair(95, 96));
  expect_same(simulate(generate, true), simulate(generate, false));
}

// Causal blocks differ in length and in their masks' positions: none repeats, and nothing changes.
TEST(RepeatedBlocks, CausalBlocksThatDifferAreSentWhole) {
  const traces::ForwardShape s = forward_shape(true);
  const auto generate = [s] { return traces::forward_program(traces::ForwardSchedule::Flash2, s); };
  const auto [repeats, blocks] = count_repeats(generate);
  EXPECT_EQ(blocks, 96);
  EXPECT_LT(repeats, 8);
  expect_same(simulate(generate, true), simulate(generate, false));
}

// With values: the repeated blocks read and write their own tiles (O against the no-repeat run, element
// for element, and the float64 check of the run itself).
TEST(RepeatedBlocks, RepeatedBlocksComputeTheirOwnTiles) {
  traces::ForwardShape s = forward_shape(false);
  s.n = 512;
  const auto generate = [s] { return traces::forward_program(traces::ForwardSchedule::Flash2, s); };
  const Outcome with = simulate(generate, true, true, "O");
  ASSERT_FALSE(with.output.empty());
  expect_same(with, simulate(generate, false, true, "O"));
}

// Every schedule and the backward's kernels: the same figures with and without repeats.
TEST(RepeatedBlocks, EverySchedulesFiguresStayTheSame) {
  using F = traces::ForwardSchedule;
  for (F schedule : {F::NaiveSafe, F::NaiveOnline, F::TwoPassFused, F::Flash1}) {
    traces::ForwardShape s = forward_shape(false);
    s.n = 1024, s.accumulators_in_registers = false, s.keys_descending = false;
    const auto generate = [s, schedule] { return traces::forward_program(schedule, s); };
    SCOPED_TRACE(std::string(traces::schedule_name(schedule)));
    expect_same(simulate(generate, true), simulate(generate, false));
  }
  using B = traces::BackwardSchedule;
  for (B schedule : {B::Flash2, B::Flash2NoD, B::Naive}) {
    traces::BackwardShape s;
    s.n = 1024, s.d = 64, s.heads = 4, s.block_q = s.block_k = 64, s.skip_forward_values = true;
    const auto generate = [s, schedule] { return traces::backward_program(schedule, s); };
    SCOPED_TRACE(std::string(traces::schedule_name(schedule)));
    EXPECT_GT(count_repeats(generate).first, 0);
    expect_same(simulate(generate, true), simulate(generate, false));
  }
}

// The kernels validate runs for PyTorch's backward: FlashAttention-2's as flash-attn launches them, and
// the memory-efficient one, whose blocks start at their own query block (so they do not repeat) and
// spill, causal and not.
TEST(RepeatedBlocks, PyTorchsBackwardKernelsStayTheSame) {
  for (bool causal : {false, true})
    for (int kind = 0; kind < 2; ++kind) {
      traces::BackwardShape s;
      s.n = 1024, s.d = 64, s.heads = 4, s.block_q = s.block_k = 64, s.skip_forward_values = true;
      s.causal = causal;
      s.as_flash_attn = kind == 0;
      s.as_mem_efficient = kind == 1;
      s.accumulators_in_registers = kind == 0;
      if (kind == 1) s.spill_bytes_per_step = 4096, s.spill_load_bytes_per_step = 2048;
      const auto generate = [s] { return traces::backward_program(traces::BackwardSchedule::Flash2, s); };
      SCOPED_TRACE(testing::Message() << "causal " << causal << ", kind " << kind);
      expect_same(simulate(generate, true), simulate(generate, false));
    }
}

// A hand-built kernel: block 1 repeats block 0 moved by one row of T; block 2 differs in an immediate
// after two matching instructions, block 3 ends early, block 4 goes on past the template's end, block 5
// moves one tensor by two different offsets. Only block 1 repeats; all run as written.
isa::Program hand_built() {
  traces::Builder b("<repeats>");
  const int t = b.tensor("T", 16, 64, Dtype::F32, true, 7);
  const int u = b.tensor("U", 16, 64, Dtype::F32, false, 0);
  const int buf = b.buffer("B", 1, 64, Dtype::F32);
  const int kernel = b.kernel("k", {6, 1, 1});
  auto block = [&](int64_t x, int64_t row, int64_t scale, int64_t count, int64_t second_row) {
    b.begin_block(kernel, {x, 0, 0});
    b.emit(isa::Opcode::Load, {b.rows_of(t, row, 1), b.buf(buf)});
    b.emit(isa::Opcode::Load, {b.rows_of(t, second_row, 1), b.buf(buf)});
    b.emit(isa::Opcode::Mask, {b.buf(buf), isa::Operand::imm(scale), isa::Operand::imm(0)});
    for (int64_t k = 0; k < count; ++k) b.emit(isa::Opcode::Store, {b.buf(buf), b.rows_of(u, row, 1)});
  };
  block(0, 0, 0, 2, 0);
  block(1, 1, 0, 2, 1);
  block(2, 2, 5, 2, 2);
  block(3, 3, 0, 1, 3);
  block(4, 4, 0, 3, 4);
  block(5, 5, 0, 2, 9);
  return b.take();
}

TEST(RepeatedBlocks, OnlyAnExactMoveRepeats) {
  EXPECT_EQ(count_repeats(hand_built), std::make_pair(1, 6));
  expect_same(simulate(hand_built, true, true, "U"), simulate(hand_built, false, true, "U"));
}

}  // namespace
}  // namespace attnsim
