// `.kernel` and `.block` (docs/trace-format.md, "Kernels and thread blocks"): thread-block grids in the
// trace text. Generated multi-kernel programs must read back with the same kernels and BlockStarts, and each
// rule of the directives must fail at the offending token. Expected values come from the syntax rules.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/program.h"
#include "tests/isa/expect_error.h"
#include "traces/attention_forward.h"

namespace attnsim::isa {
namespace {

using ::testing::AssertionFailure;
using ::testing::AssertionResult;
using ::testing::AssertionSuccess;

using Index = std::array<int64_t, 3>;

AssertionResult same_grids(const Program& want, const Program& got) {
  if (want.kernels.size() != got.kernels.size())
    return AssertionFailure() << "kernel count " << want.kernels.size() << " vs " << got.kernels.size();
  for (size_t k = 0; k < want.kernels.size(); ++k)
    if (want.kernels[k].name != got.kernels[k].name || want.kernels[k].grid != got.kernels[k].grid)
      return AssertionFailure() << "kernel " << k << " (" << want.kernels[k].name << ") differs";
  if (want.blocks.size() != got.blocks.size())
    return AssertionFailure() << "block count " << want.blocks.size() << " vs " << got.blocks.size();
  for (size_t b = 0; b < want.blocks.size(); ++b) {
    const BlockStart& x = want.blocks[b];
    const BlockStart& y = got.blocks[b];
    if (x.instruction != y.instruction || x.kernel != y.kernel || x.index != y.index)
      return AssertionFailure() << "block " << b << ": instruction " << x.instruction << " vs "
                                << y.instruction << ", kernel " << x.kernel << " vs " << y.kernel;
  }
  return AssertionSuccess();
}

AssertionResult same_instructions(const Program& want, const Program& got) {
  if (want.instructions.size() != got.instructions.size())
    return AssertionFailure() << "instruction count " << want.instructions.size() << " vs "
                              << got.instructions.size();
  for (size_t i = 0; i < want.instructions.size(); ++i) {
    const Instruction& a = want.instructions[i];
    const Instruction& b = got.instructions[i];
    if (a.op != b.op || a.operand_count != b.operand_count || a.group != b.group)
      return AssertionFailure() << "instruction " << i << " (" << format_instruction(want, a) << ")";
    for (size_t k = 0; k < a.operand_count; ++k) {
      const Operand& x = a.operand(k);
      const Operand& y = b.operand(k);
      bool same = x.kind == y.kind;
      if (same && x.kind == Operand::Kind::Tile) same = want.tiles[x.tensor] == got.tiles[y.tensor];
      if (same && x.kind == Operand::Kind::Register) same = x.reg == y.reg;
      if (same && (x.kind == Operand::Kind::Memory || x.kind == Operand::Kind::Immediate))
        same = x.tensor == y.tensor && x.flat == y.flat;
      if (!same)
        return AssertionFailure() << "instruction " << i << " (" << format_instruction(want, a)
                                  << ") operand " << k;
    }
  }
  return AssertionSuccess();
}

// ---- round trips ----

class GeneratedGrids : public ::testing::TestWithParam<traces::ForwardSchedule> {};

// Every forward schedule with two heads: several kernels, grids of (query block, head).
TEST_P(GeneratedGrids, DisassembleThenAssembleKeepsKernelsAndBlocks) {
  traces::ForwardShape shape;
  shape.heads = 2;
  shape.n = 128;
  shape.d = 16;
  shape.block_q = 64;
  shape.block_k = 64;
  const Program p = traces::forward_program(GetParam(), shape);
  ASSERT_FALSE(p.kernels.empty());
  ASSERT_FALSE(p.blocks.empty());
  const std::string text = disassemble(p);
  Program back;
  try {
    back = assemble(text, "roundtrip.trace");
  } catch (const InputError& e) {
    FAIL() << e.what() << "\n--- text (first 2000 chars) ---\n" << text.substr(0, 2000);
  }
  EXPECT_TRUE(same_grids(p, back));
  EXPECT_TRUE(same_instructions(p, back));
  EXPECT_EQ(disassemble(back), text) << "disassembly is not a fixed point";
}

INSTANTIATE_TEST_SUITE_P(Schedules, GeneratedGrids, ::testing::ValuesIn(traces::all_forward_schedules()),
                         [](const auto& info) {
                           std::string name(traces::schedule_name(info.param));
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

// naive-safe, heads=2, n=128, block 64: three kernels of grid (2 query blocks, 2 heads), launched kernel by
// kernel, head-major within each.
TEST(GeneratedGrids, NaiveSafeHasThreeTwoByTwoKernels) {
  traces::ForwardShape shape;
  shape.heads = 2;
  shape.n = 128;
  shape.d = 16;
  shape.block_q = 64;
  shape.block_k = 64;
  const Program p = traces::forward_program(traces::ForwardSchedule::NaiveSafe, shape);
  const Program back = assemble(disassemble(p), "roundtrip.trace");
  ASSERT_EQ(back.kernels.size(), 3u);
  for (const auto& k : back.kernels) EXPECT_EQ(k.grid, (Index{2, 2, 1})) << k.name;
  ASSERT_EQ(back.blocks.size(), 12u);
  const std::vector<Index> order = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
  for (size_t b = 0; b < 12; ++b) {
    EXPECT_EQ(back.blocks[b].kernel, static_cast<int32_t>(b / 4)) << b;
    EXPECT_EQ(back.blocks[b].index, order[b % 4]) << b;
  }
  EXPECT_EQ(back.blocks[0].instruction, 0u);
  EXPECT_TRUE(same_grids(p, back));
}

TEST(KernelSyntax, TwoByOneGridGivesBlockStarts) {
  const std::string text =
      ".tensor a[4]\n"
      ".kernel k grid(2)\n"
      ".block k(0)\n"
      "LOAD a[0], R0\n"
      "STORE R0, a[1]\n"
      ".block k(1)\n"
      "LOAD a[2], R0\n"
      "STORE R0, a[3]\n";
  const Program p = asm_text(text);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].name, "k");
  EXPECT_EQ(p.kernels[0].grid, (Index{2, 1, 1}));
  EXPECT_EQ(p.kernels[0].blocks(), 2);
  ASSERT_EQ(p.instructions.size(), 4u);
  ASSERT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.blocks[0].instruction, 0u);
  EXPECT_EQ(p.blocks[0].kernel, 0);
  EXPECT_EQ(p.blocks[0].index, (Index{0, 0, 0}));
  EXPECT_EQ(p.blocks[1].instruction, 2u);
  EXPECT_EQ(p.blocks[1].kernel, 0);
  EXPECT_EQ(p.blocks[1].index, (Index{1, 0, 0}));
  // Canonical text is this very text: `.kernel` after the declarations, `.block` before its instructions.
  EXPECT_EQ(disassemble(p), text);
}

// A kernel's options: `k_loops(rolled)` (how its code steps through k) and `warps(W, R)` (how its warps
// share a product) are kept and printed, in either order; `k_loops(unrolled)` and no `warps` are the defaults
// and print as nothing.
TEST(KernelSyntax, KernelOptionsRoundTrip) {
  const std::string text =
      ".tensor a[2]\n"
      ".kernel k grid(2) k_loops(rolled) warps(8, 32)\n"
      ".kernel u grid(1)\n"
      ".block k(0)\n"
      "LOAD a[0], R0\n"
      ".block k(1)\n"
      ".block u(0)\n";
  const Program p = asm_text(text);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_TRUE(p.kernels[0].rolled_k_loops);
  EXPECT_EQ(p.kernels[0].warps, 8);
  EXPECT_EQ(p.kernels[0].warp_rows, 32);
  EXPECT_FALSE(p.kernels[1].rolled_k_loops);
  EXPECT_EQ(p.kernels[1].warps, 0);
  EXPECT_EQ(disassemble(p), text);
  const Program u = asm_text(".kernel k grid(1, 1) k_loops(unrolled)\n.block k(0)\n");
  EXPECT_FALSE(u.kernels[0].rolled_k_loops);
  const Program swapped = asm_text(".kernel k grid(1) warps(4, 16) k_loops(rolled)\n.block k(0)\n");
  EXPECT_TRUE(swapped.kernels[0].rolled_k_loops);
  EXPECT_EQ(swapped.kernels[0].warps, 4);
}

// `mma(M, N, K)` (the kernel's mma instruction shape) and `softmax(iterative)` (CUTLASS's softmax code) are
// kept and printed; without them the machine's shape and no softmax cost.
TEST(KernelSyntax, MmaShapeAndIterativeSoftmaxRoundTrip) {
  const std::string text =
      ".kernel k grid(2) warps(4, 32) mma(16, 8, 8) softmax(iterative)\n"
      ".kernel u grid(1)\n"
      ".block k(0)\n"
      ".block k(1)\n"
      ".block u(0)\n";
  const Program p = asm_text(text);
  EXPECT_EQ(p.kernels[0].mma, (std::array<int64_t, 3>{16, 8, 8}));
  EXPECT_TRUE(p.kernels[0].iterative_softmax);
  EXPECT_EQ(p.kernels[1].mma, (std::array<int64_t, 3>{0, 0, 0}));
  EXPECT_FALSE(p.kernels[1].iterative_softmax);
  EXPECT_EQ(disassemble(p), text);
  const Program swapped = asm_text(".kernel k grid(1) softmax(iterative) mma(16, 8, 16)\n.block k(0)\n");
  EXPECT_EQ(swapped.kernels[0].mma, (std::array<int64_t, 3>{16, 8, 16}));
  EXPECT_TRUE(swapped.kernels[0].iterative_softmax);
}

// `exp(accurate)` (the kernel's exponential is expf) is kept and printed, in any place among the options.
TEST(KernelSyntax, AccurateExpRoundTrips) {
  const std::string text =
      ".kernel k grid(2) mma(16, 8, 8) exp(accurate)\n"
      ".kernel u grid(1)\n"
      ".block k(0)\n"
      ".block k(1)\n"
      ".block u(0)\n";
  const Program p = asm_text(text);
  EXPECT_TRUE(p.kernels[0].accurate_exp);
  EXPECT_FALSE(p.kernels[1].accurate_exp);
  EXPECT_EQ(disassemble(p), text);
  const Program first = asm_text(".kernel k grid(1) exp(accurate) k_loops(rolled)\n.block k(0)\n");
  EXPECT_TRUE(first.kernels[0].accurate_exp);
  EXPECT_TRUE(first.kernels[0].rolled_k_loops);
}

// `overhead(...)` (what the kernel's code spends beside its tile instructions, isa::CodeOverhead) keeps
// the fields it names, in any order, leaves the others the machine's (negative) and prints them in one order.
TEST(KernelSyntax, OverheadRoundTrips) {
  const std::string text =
      ".kernel k grid(2) warps(4, 16) overhead(fixed=1.7, ldmatrix_address=0.37, copy_address=0.37)\n"
      ".kernel u grid(1) overhead(copy_address=0, red_bytes=128)\n"
      ".kernel v grid(1)\n"
      ".block k(0)\n"
      ".block k(1)\n"
      ".block u(0)\n"
      ".block v(0)\n";
  const Program p = asm_text(text);
  EXPECT_EQ(p.kernels[0].overhead, (CodeOverhead{1.7, 0.37, 0.37}));
  EXPECT_EQ(p.kernels[1].overhead, (CodeOverhead{-1, -1, 0, 128}));
  EXPECT_FALSE(p.kernels[2].overhead.any());
  EXPECT_EQ(disassemble(p), text);
  const Program swapped =
      asm_text(".kernel k grid(1) overhead(copy_address=2, fixed=0) exp(accurate)\n.block k(0)\n");
  EXPECT_EQ(swapped.kernels[0].overhead, (CodeOverhead{0, -1, 2}));
  EXPECT_TRUE(swapped.kernels[0].accurate_exp);
}

TEST(KernelSyntax, GridExtentsAndIndicesDefault) {
  // Missing Y/Z extents are 1 and missing y/z indices are 0; blocks may come in any order within a kernel,
  // and several kernels run one after another.
  const Program p = asm_text(
      ".tensor a[2]\n"
      ".kernel first grid(1, 2)\n"
      ".kernel second grid(1, 1, 2)\n"
      ".block first(0, 1)\nLOAD a[0], R0\n"
      ".block first(0)\nLOAD a[1], R0\n"
      ".block second(0, 0, 1)\n"
      ".block second(0, 0, 0)\nSTORE R0, a[0]\n");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].grid, (Index{1, 2, 1}));
  EXPECT_EQ(p.kernels[1].grid, (Index{1, 1, 2}));
  ASSERT_EQ(p.blocks.size(), 4u);
  EXPECT_EQ(p.blocks[0].index, (Index{0, 1, 0}));
  EXPECT_EQ(p.blocks[1].index, (Index{0, 0, 0}));
  EXPECT_EQ(p.blocks[2].index, (Index{0, 0, 1}));
  EXPECT_EQ(p.blocks[3].index, (Index{0, 0, 0}));
  const std::vector<size_t> starts = {0, 1, 2, 2};
  const std::vector<int32_t> kernels = {0, 0, 1, 1};
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(p.blocks[b].instruction, starts[b]) << b;
    EXPECT_EQ(p.blocks[b].kernel, kernels[b]) << b;
  }
  const Program back = asm_text(disassemble(p));
  EXPECT_TRUE(same_grids(p, back));
  EXPECT_TRUE(same_instructions(p, back));
}

TEST(KernelSyntax, EmptyBlocksRoundTrip) {
  // Empty blocks, including trailing ones after the last instruction, print as `.block` lines in a row.
  const std::string text =
      ".tensor a[2]\n"
      ".kernel k grid(2, 2)\n"
      ".block k(0, 0)\n"
      ".block k(1, 0)\n"
      "LOAD a[0], R0\n"
      ".block k(0, 1)\n"
      ".block k(1, 1)\n";
  const Program p = asm_text(text);
  ASSERT_EQ(p.blocks.size(), 4u);
  EXPECT_EQ(p.blocks[0].instruction, 0u);
  EXPECT_EQ(p.blocks[1].instruction, 0u);
  EXPECT_EQ(p.blocks[2].instruction, 1u);
  EXPECT_EQ(p.blocks[3].instruction, 1u);
  EXPECT_EQ(disassemble(p), text);
}

TEST(KernelSyntax, DirectivesMayBeSpacedAndCommented) {
  const Program p =
      asm_text(".kernel k grid( 3 , 1 ,1 )  # three blocks\n.block k ( 2 )\n.block k(0)\n.block k(1,0,0)\n");
  ASSERT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(p.blocks[0].index, (Index{2, 0, 0}));
  EXPECT_EQ(p.kernels[0].grid, (Index{3, 1, 1}));
}

TEST(KernelSyntax, NoKernelsMeansNoBlocks) {
  const Program p = asm_text(".tensor a[2]\nLOAD a[0], R0\n");
  EXPECT_TRUE(p.kernels.empty());
  EXPECT_TRUE(p.blocks.empty());
  EXPECT_EQ(disassemble(p), ".tensor a[2]\nLOAD a[0], R0\n");
}

TEST(KernelSyntax, LargestExtentIsAccepted) {
  // 2^31-1 is a valid extent and its last index a valid block; the error is only that the other blocks of
  // the grid are not given.
  expect_error(".kernel k grid(2147483647)\n.block k(2147483646)\n", 1, 9,
               {"missing 2147483646 of its 2147483647", "the first k(0, 0, 0)"});
  expect_error(".kernel k grid(2147483647)\n.block k(2147483647)\n", 2, 10,
               {"block index 2147483647 out of range"});
}

// `.group N` puts the instructions after it in group N of their block; each `.block` starts in group 0;
// the disassembler writes a `.group` line where the group changes, so the text reads back the same.
TEST(GroupSyntax, GroupsOfABlockRoundTrip) {
  const std::string text =
      ".tensor a[4][4]\n"
      ".buffer x[4][4]\n"
      ".buffer y[4][4]\n"
      ".kernel k grid(2)\n"
      ".block k(0)\n"
      "LOAD a[0:4, 0:4], x\n"
      ".group 1\n"
      "EXP x, y\n"
      ".group 2\n"
      "EXP x, x\n"
      ".block k(1)\n"
      "LOAD a[0:4, 0:4], x\n"
      ".group 3\n"
      "EXP x, y\n"
      "EXP y, y\n";
  const Program p = asm_text(text);
  ASSERT_EQ(p.instructions.size(), 6u);
  const std::vector<uint8_t> groups = {0, 1, 2, 0, 3, 3};
  for (size_t i = 0; i < groups.size(); ++i) EXPECT_EQ(p.instructions[i].group, groups[i]) << i;
  EXPECT_EQ(disassemble(p), text);
}

// The flash2 ping-pong program: loads in group 0, the two halves in groups 1 and 2; it reads back the same.
TEST(GroupSyntax, PingPongProgramRoundTrips) {
  traces::ForwardShape s;
  s.n = 256, s.d = 32, s.block_q = 64, s.block_k = 64, s.heads = 2, s.causal = true;
  s.double_buffer = true;
  s.ping_pong = true;
  const Program p = traces::forward_program(traces::ForwardSchedule::Flash2, s);
  size_t per_group[kInstructionGroups] = {};
  for (const Instruction& inst : p.instructions) {
    ASSERT_LT(inst.group, kInstructionGroups);
    ++per_group[inst.group];
    if (inst.op == Opcode::Load) {
      EXPECT_EQ(inst.group, 0) << format_instruction(p, inst);
    }
    if (inst.op == Opcode::MacZ || inst.op == Opcode::Exp) {
      EXPECT_NE(inst.group, 0);
    }
  }
  EXPECT_GT(per_group[1], 0u);
  EXPECT_EQ(per_group[3], 0u);
  const Program back = asm_text(disassemble(p));
  EXPECT_TRUE(same_grids(p, back));
  EXPECT_TRUE(same_instructions(p, back));
}

// ---- errors ----

TEST(GroupErrors, GroupDirective) {
  expect_error(".group\n", 1, 7, {"expected a group number"});
  expect_error(".group 4\n", 1, 8, {"group 4 out of range", "0 to 3"});
  expect_error(".group -1\n", 1, 8, {"group -1 out of range"});
  expect_error(".group 1 EXP\n", 1, 10, {"unexpected text after the group"});
}

TEST(KernelErrors, KernelDirective) {
  expect_error(".kernel k grid(2)\n.block k(0)\n.block k(1)\n.kernel k grid(1)\n", 4, 9,
               {"kernel 'k' is already declared"});
  expect_error(".kernel\n", 1, 8, {"expected a kernel name"});
  expect_error(".kernel k\n", 1, 10, {"expected grid("});
  expect_error(".kernel k blocks(2)\n", 1, 11, {"expected grid("});
  expect_error(".kernel k grid(0)\n", 1, 16, {"from 1 to 2^31-1"});
  expect_error(".kernel k grid(2, -1)\n", 1, 19, {"from 1 to 2^31-1"});
  expect_error(".kernel k grid(1, 1, 2147483648)\n", 1, 22, {"from 1 to 2^31-1"});
  expect_error(".kernel k grid(2, 2, 2, 2)\n", 1, 23, {"expected ')'", "grid(...)"});
  expect_error(".kernel k grid(2\n", 1, 17, {"expected ')'"});
  expect_error(".kernel k grid(2) extra\n", 1, 19,
               {"unexpected text", "k_loops(rolled | unrolled)", "warps(W, R)"});
  expect_error(".kernel k grid(2) warps(0, 32)\n", 1, 25, {"a block's warps: an integer from 1 to 64"});
  expect_error(".kernel k grid(2) warps(8, 0)\n", 1, 28, {"a warp's rows: an integer from 1 to 4096"});
  expect_error(".kernel k grid(2) warps(8 32)\n", 1, 27, {"expected ','", "warps(8, 32)"});
  expect_error(".kernel k grid(2) warps(8, 32) warps(8, 32)\n", 1, 32, {"warps(...) is given twice"});
  expect_error(".kernel k grid(2) k_loops(sideways)\n", 1, 27,
               {"expected k_loops(rolled) or k_loops(unrolled)"});
  expect_error(".kernel k grid(2) k_loops(rolled\n", 1, 33, {"expected ')'", "k_loops(...)"});
  expect_error(".kernel k grid(2) k_loops(rolled) x\n", 1, 35,
               {"unexpected text after the kernel declaration", "mma(M, N, K)", "softmax(iterative)",
                "exp(accurate)"});
  expect_error(".kernel k grid(2) mma(16, 8)\n", 1, 28, {"expected ','", "mma(16, 8, 8)"});
  expect_error(".kernel k grid(2) mma(16, 0, 8)\n", 1, 27, {"an mma extent: an integer from 1 to 256"});
  expect_error(".kernel k grid(2) mma(16, 8, 8) mma(16, 8, 8)\n", 1, 33, {"mma(...) is given twice"});
  expect_error(".kernel k grid(2) softmax(online)\n", 1, 27, {"expected softmax(iterative)"});
  expect_error(".kernel k grid(2) softmax(iterative\n", 1, 36, {"expected ')'", "softmax(...)"});
  expect_error(".kernel k grid(2) exp(fast)\n", 1, 23, {"expected exp(accurate)"});
  expect_error(".kernel k grid(2) exp(accurate) exp(accurate)\n", 1, 33, {"exp(...) is given twice"});
  expect_error(".kernel k grid(2) exp(accurate\n", 1, 31, {"expected ')'", "exp(...)"});
  expect_error(".kernel k grid(2147483647, 2147483647)\n", 1, 11, {"more than 2^48"});
  expect_error(".kernel k grid(2) overhead(speed=1)\n", 1, 28,
               {"expected fixed, ldmatrix_address, copy_address or red_bytes in overhead(...)"});
  expect_error(".kernel k grid(2) overhead(red_bytes=0)\n", 1, 38, {"red_bytes: bytes from 1 to 1000"});
  expect_error(".kernel k grid(2) overhead(fixed=1, fixed=2)\n", 1, 37,
               {"fixed is given twice in overhead(...)"});
  expect_error(".kernel k grid(2) overhead(fixed=-1)\n", 1, 34, {"fixed: instructions from 0 to 1000"});
  expect_error(".kernel k grid(2) overhead(fixed=nan)\n", 1, 34, {"fixed: instructions from 0 to 1000"});
  expect_error(".kernel k grid(2) overhead(fixed 1)\n", 1, 34, {"expected '='"});
  expect_error(".kernel k grid(2) overhead(fixed=1\n", 1, 35, {"expected ')'", "overhead(...)"});
  expect_error(".kernel k grid(2) overhead(fixed=1) overhead(fixed=1)\n", 1, 37,
               {"overhead(...) is given twice"});
}

TEST(KernelErrors, BlockDirective) {
  const std::string k = ".kernel k grid(2, 3)\n";
  expect_error(k + ".block q(0)\n", 2, 8, {"undeclared kernel 'q'"});
  expect_error(".block k(0)\n.kernel k grid(1)\n", 1, 8, {"undeclared kernel 'k'"});
  expect_error(k + ".block\n", 2, 7, {"expected a kernel name"});
  expect_error(k + ".block k\n", 2, 9, {"expected '('"});
  expect_error(k + ".block k()\n", 2, 10, {"expected an integer block index"});
  expect_error(k + ".block k(2)\n", 2, 10,
               {"block index 2 out of range", "dimension x", "'k'", "grid 2x3x1"});
  expect_error(k + ".block k(1, 3)\n", 2, 13, {"block index 3 out of range", "dimension y"});
  expect_error(k + ".block k(1, 0, 1)\n", 2, 16, {"block index 1 out of range", "dimension z"});
  expect_error(k + ".block k(-1)\n", 2, 10, {"block index -1 out of range"});
  expect_error(k + ".block k(0) LOAD\n", 2, 13, {"unexpected text"});
}

TEST(KernelErrors, InstructionBeforeTheFirstBlock) {
  // The error points at the stray instruction and names the line of the first .block.
  expect_error(".tensor a[2]\n.kernel k grid(1)\n  LOAD a[0], R0\n.block k(0)\nSTORE R0, a[1]\n", 3, 3,
               {"instruction before the first .block (line 4)"});
  expect_error(".tensor a[2]\nLOAD a[0], R0\n.kernel k grid(1)\n.block k(0)\n", 2, 1,
               {"before the first .block"});
}

TEST(KernelErrors, KernelsMustBeContiguousAndInOrder) {
  const std::string decl = ".kernel a grid(2)\n.kernel b grid(1)\n";
  expect_error(decl + ".block a(0)\n.block b(0)\n.block a(1)\n", 5, 8,
               {"kernel 'a' reappears after the blocks of kernel 'b'", "contiguous"});
  expect_error(decl + ".block b(0)\n.block a(0)\n.block a(1)\n", 4, 8,
               {"kernel 'a' is declared before kernel 'b'", "order they are declared"});
}

TEST(KernelErrors, EachBlockOnce) {
  expect_error(".kernel k grid(2, 2)\n.block k(1, 1)\n.block k(0)\n.block k(1, 1, 0)\n", 4, 10,
               {"block k(1, 1, 0) appears twice", "first at line 2"});
}

TEST(KernelErrors, EveryBlockOfTheGrid) {
  // The error points at the kernel's name in its declaration and names the first missing block in launch
  // order (x fastest).
  expect_error(".kernel k grid(2, 2)\n.block k(0, 0)\n.block k(0, 1)\n", 1, 9,
               {"kernel 'k' is missing 2 of its 4 blocks", "grid 2x2x1", "the first k(1, 0, 0)"});
  expect_error(".kernel a grid(1)\n.kernel b grid(3)\n.block a(0)\n.block b(0)\n.block b(2)\n", 2, 9,
               {"kernel 'b' is missing 1 of its 3 blocks", "the first b(1, 0, 0)"});
  // An incomplete kernel followed by another one: reported at the end, for the incomplete one.
  expect_error(".kernel a grid(2)\n.kernel b grid(1)\n.block a(1)\n.block b(0)\n", 1, 9,
               {"kernel 'a' is missing 1 of its 2 blocks", "the first a(0, 0, 0)"});
}

TEST(KernelErrors, KernelWithoutBlocks) {
  expect_error(".tensor a[2]\n.kernel k grid(2)\nLOAD a[0], R0\n", 2, 9,
               {"kernel 'k' has no .block", "2 blocks"});
  expect_error(".kernel a grid(1)\n.kernel b grid(1)\n.block a(0)\n", 2, 9, {"kernel 'b' has no .block"});
}

TEST(KernelErrors, UnknownDirectiveListsTheNewOnes) {
  expect_error(".kernal k grid(1)\n", 1, 1, {"unknown directive '.kernal'", ".kernel", ".block"});
}

}  // namespace
}  // namespace attnsim::isa
