// The trace syntax of seed 002 and the directives of docs/trace-format.md, read by the assembler alone (no
// machine). Expected values come from the syntax rules (row-major indexing, operand order sources-then-
// destination), never from running the assembler first.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/program.h"
#include "isa/suggest.h"
#include "tests/isa/expect_error.h"

namespace attnsim::isa {
namespace {

using Kind = Operand::Kind;

// The register numbers of an all-register instruction, in written order.
std::vector<int> regs_of(const Instruction& inst) {
  std::vector<int> out;
  for (const auto& o : inst.operands()) {
    EXPECT_EQ(o.kind, Kind::Register);
    out.push_back(o.reg);
  }
  return out;
}

// ---- seed 002 scalar syntax ----

TEST(ScalarSyntax, LoadIsMemoryThenRegister) {
  Program p = asm_text(".tensor a[2][2]\nLOAD a[0][0], R0\n");
  ASSERT_EQ(p.instructions.size(), 1u);
  const Instruction& i = p.instructions[0];
  EXPECT_EQ(i.op, Opcode::Load);
  ASSERT_EQ(i.operand_count, 2);
  EXPECT_EQ(i.operand(0).kind, Kind::Memory);
  EXPECT_EQ(i.operand(0).tensor, 0);
  EXPECT_EQ(i.operand(0).flat, 0);
  EXPECT_EQ(i.operand(1).kind, Kind::Register);
  EXPECT_EQ(i.operand(1).reg, 0);
}

TEST(ScalarSyntax, StoreIsRegisterThenMemory) {
  // c is the second tensor, so its index is 1; c[1][0] of a 2x2 is row-major offset 1*2+0.
  Program p = asm_text(".tensor a[2][2]\n.tensor c[2][2]\nSTORE R2, c[0][0]\nSTORE R1, c[1][0]\n");
  ASSERT_EQ(p.instructions.size(), 2u);
  const Instruction& s = p.instructions[0];
  EXPECT_EQ(s.op, Opcode::Store);
  ASSERT_EQ(s.operand_count, 2);
  EXPECT_EQ(s.operand(0).kind, Kind::Register);
  EXPECT_EQ(s.operand(0).reg, 2);
  EXPECT_EQ(s.operand(1).kind, Kind::Memory);
  EXPECT_EQ(s.operand(1).tensor, 1);
  EXPECT_EQ(s.operand(1).flat, 0);
  EXPECT_EQ(p.instructions[1].operand(1).flat, 2);
}

// Distinct register numbers in every position, so a swapped pair would show.
TEST(ScalarSyntax, MacIsRaRbRcRd) {
  Program p = asm_text("MAC R3, R1, R2, R0\n");
  EXPECT_EQ(p.instructions[0].op, Opcode::Mac);
  EXPECT_EQ(regs_of(p.instructions[0]), (std::vector<int>{3, 1, 2, 0}));
}

TEST(ScalarSyntax, MacZIsRaRbRd) {
  Program p = asm_text("MAC_Z R2, R0, R1\n");
  EXPECT_EQ(p.instructions[0].op, Opcode::MacZ);
  EXPECT_EQ(regs_of(p.instructions[0]), (std::vector<int>{2, 0, 1}));
}

TEST(ScalarSyntax, SubDivAreRaRbRd) {
  Program p = asm_text("SUB R2, R0, R1\nDIV R1, R2, R0\n");
  EXPECT_EQ(p.instructions[0].op, Opcode::Sub);
  EXPECT_EQ(regs_of(p.instructions[0]), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(p.instructions[1].op, Opcode::Div);
  EXPECT_EQ(regs_of(p.instructions[1]), (std::vector<int>{1, 2, 0}));
}

TEST(ScalarSyntax, MovIsRsRd) {
  Program p = asm_text("MOV R2, R0\n");
  EXPECT_EQ(p.instructions[0].op, Opcode::Mov);
  EXPECT_EQ(regs_of(p.instructions[0]), (std::vector<int>{2, 0}));
}

TEST(ScalarSyntax, MaxExpAddMul) {
  Program p = asm_text("MAX R0, R1, R2\nEXP R1, R0\nADD R2, R1, R0\nMUL R0, R2, R1\n");
  ASSERT_EQ(p.instructions.size(), 4u);
  EXPECT_EQ(p.instructions[0].op, Opcode::Max);
  EXPECT_EQ(regs_of(p.instructions[0]), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.instructions[1].op, Opcode::Exp);
  EXPECT_EQ(regs_of(p.instructions[1]), (std::vector<int>{1, 0}));
  EXPECT_EQ(p.instructions[2].op, Opcode::Add);
  EXPECT_EQ(regs_of(p.instructions[2]), (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(p.instructions[3].op, Opcode::Mul);
  EXPECT_EQ(regs_of(p.instructions[3]), (std::vector<int>{0, 2, 1}));
}

// Operand counts from the seed 002 instruction table; one fewer or one more is an error.
TEST(ScalarSyntax, OperandCountsPerOpcode) {
  struct Row {
    const char* mnemonic;
    bool first_is_memory;
    bool last_is_memory;
    int count;
  };
  const std::vector<Row> rows = {
      {"LOAD", true, false, 2}, {"STORE", false, true, 2}, {"MAC_Z", false, false, 3},
      {"MAC", false, false, 4}, {"MAX", false, false, 3},  {"SUB", false, false, 3},
      {"EXP", false, false, 2}, {"ADD", false, false, 3},  {"MUL", false, false, 3},
      {"DIV", false, false, 3}, {"MOV", false, false, 2}};
  for (const auto& row : rows) {
    auto line = [&](int n) {
      std::string text = std::string(".tensor a[4]\n") + row.mnemonic;
      for (int i = 0; i < n; ++i) {
        bool memory = (i == 0 && row.first_is_memory) || (i == n - 1 && row.last_is_memory);
        text += i ? ", " : " ";
        text += memory ? fmt::format("a[{}]", i) : fmt::format("R{}", i);
      }
      return text + "\n";
    };
    SCOPED_TRACE(row.mnemonic);
    Program p = asm_text(line(row.count));
    ASSERT_EQ(p.instructions.size(), 1u);
    EXPECT_EQ(p.instructions[0].operand_count, row.count);
    expect_error(line(row.count - 1), 2, 1,
                 {row.mnemonic, "takes " + std::to_string(row.count) + " operands"});
    expect_error(line(row.count + 1), 2, 1,
                 {row.mnemonic, "takes " + std::to_string(row.count) + " operands"});
  }
}

TEST(ScalarSyntax, RegistersAndOpcodesAreCaseInsensitive) {
  Program upper = asm_text(".tensor a[2]\nLOAD a[1], R1\nMAC_Z R1, R1, R2\n");
  Program lower = asm_text(".tensor a[2]\nload a[1], r1\nmac_z r1, R1, r2\n");
  ASSERT_EQ(lower.instructions.size(), 2u);
  EXPECT_EQ(lower.instructions[0].op, Opcode::Load);
  EXPECT_EQ(lower.instructions[0].operand(1).reg, 1);
  EXPECT_EQ(lower.instructions[1].op, Opcode::MacZ);
  EXPECT_EQ(regs_of(lower.instructions[1]), regs_of(upper.instructions[1]));
}

TEST(ScalarSyntax, CommentsAndBlankLinesAreIgnoredButCounted) {
  Program p = asm_text(
      "# whole-line comment\n"
      "\n"
      ".tensor a[2] = {1, 2}   # trailing comment on a directive\n"
      "   # indented comment\n"
      "LOAD a[0], R0  # LOAD a[1], R1 is commented out\n");
  ASSERT_EQ(p.instructions.size(), 1u);
  EXPECT_EQ(p.instructions[0].operand(0).flat, 0);
  EXPECT_EQ(p.tensors.size(), 1u);
  // Comment lines still count, so later diagnostics point at the right line.
  EXPECT_EQ(p.instructions[0].loc.line, 5);
  EXPECT_EQ(p.instructions[0].loc.col, 1);
  expect_error("# one\n# two\n  BOGUS R0\n", 3, 3, {"unknown opcode 'BOGUS'"});
}

TEST(ScalarSyntax, CrlfLineEndings) {
  Program p = asm_text(".tensor a[2]\r\nLOAD a[1], R0\r\nSTORE R0, a[0]\r\n");
  ASSERT_EQ(p.instructions.size(), 2u);
  EXPECT_EQ(p.instructions[1].operand(1).flat, 0);
}

TEST(ScalarSyntax, BracketAndCommaIndexFormsAgree) {
  // Row-major: t[i][j][k] of a [2][3][4] tensor is i*12 + j*4 + k.
  Program p = asm_text(
      ".tensor a[2][2]\n.tensor t[2][3][4]\n"
      "LOAD a[0][1], R0\nLOAD a[0, 1], R0\nLOAD a[1,0], R0\nLOAD t[1][2][3], R0\nLOAD t[1, 2, 3], R0\n");
  ASSERT_EQ(p.instructions.size(), 5u);
  EXPECT_EQ(p.instructions[0].operand(0).flat, 1);
  EXPECT_EQ(p.instructions[1].operand(0).flat, 1);
  EXPECT_EQ(p.instructions[2].operand(0).flat, 2);
  EXPECT_EQ(p.instructions[3].operand(0).flat, 23);
  EXPECT_EQ(p.instructions[4].operand(0).flat, 23);
  EXPECT_EQ(p.instructions[4].operand(0).tensor, 1);
}

TEST(ScalarSyntax, OperandLocationsPointAtEachOperand) {
  Program p = asm_text(".tensor a[2]\n  LOAD  a[1],   R2\n");
  const Instruction& i = p.instructions[0];
  EXPECT_EQ(i.loc.line, 2);
  EXPECT_EQ(i.loc.col, 3);
  EXPECT_EQ(i.operand(0).loc().col, 9);
  EXPECT_EQ(i.operand(1).loc().col, 17);
}

// An operand keeps its column in 16 bits (instructions stay small); one further right reports the last.
TEST(ScalarSyntax, OperandColumnsPastTheLimitReportTheLast) {
  Program p = asm_text(".tensor a[2]\nLOAD a[1]," + std::string(70000, ' ') + "R2\n");
  const Instruction& i = p.instructions[0];
  EXPECT_EQ(i.operand(0).loc().col, 6);
  EXPECT_EQ(i.operand(1).loc().col, 65535);
  EXPECT_EQ(i.operand(1).loc().line, 2);
}

// ---- .tensor ----

TEST(TensorDirective, ValuesAreRowMajor) {
  Program p = asm_text(".tensor a[2][3] = {1, 2, 3, 4, 5, 6}\n");
  ASSERT_EQ(p.tensors.size(), 1u);
  const TensorDecl& a = p.tensors[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.elements(), 6);
  EXPECT_FALSE(a.dtype.has_value());  // unset means "the machine's dtype"
  EXPECT_EQ(a.init.kind, TensorInit::Kind::Values);
  EXPECT_EQ(a.init.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.loc.line, 1);
}

TEST(TensorDirective, NumberForms) {
  Program p = asm_text(".tensor v[6] = {-1.5, +0.25, 2e3, 1E-2, .5, -0}\n");
  const auto& v = p.tensors[0].init.values;
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0], -1.5);
  EXPECT_EQ(v[1], 0.25);
  EXPECT_EQ(v[2], 2000.0);
  EXPECT_EQ(v[3], 0.01);
  EXPECT_EQ(v[4], 0.5);
  EXPECT_TRUE(std::signbit(v[5]));
}

TEST(TensorDirective, DtypeWithValues) {
  Program p = asm_text(".tensor h[2] f16 = {1, 2}\n.tensor b[1] bf16 = {3}\n.tensor d[1] f64 = {4}\n");
  EXPECT_EQ(p.tensors[0].dtype, Dtype::F16);
  EXPECT_EQ(p.tensors[0].init.values, (std::vector<double>{1, 2}));
  EXPECT_EQ(p.tensors[1].dtype, Dtype::BF16);
  EXPECT_EQ(p.tensors[2].dtype, Dtype::F64);
}

TEST(TensorDirective, DtypeAliases) {
  Program p = asm_text(".tensor a[1] fp32\n.tensor b[1] float32\n.tensor c[1] bfloat16\n.tensor d[1] fp16\n");
  EXPECT_EQ(p.tensors[0].dtype, Dtype::F32);
  EXPECT_EQ(p.tensors[1].dtype, Dtype::F32);
  EXPECT_EQ(p.tensors[2].dtype, Dtype::BF16);
  EXPECT_EQ(p.tensors[3].dtype, Dtype::F16);
}

TEST(TensorDirective, Random) {
  Program p = asm_text(".tensor x[8] random(seed=7, lo=-2, hi=2)\n");
  const TensorDecl& x = p.tensors[0];
  EXPECT_EQ(x.shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(x.init.kind, TensorInit::Kind::Random);
  EXPECT_EQ(x.init.seed, 7u);
  EXPECT_EQ(x.init.lo, -2.0);
  EXPECT_EQ(x.init.hi, 2.0);
  EXPECT_TRUE(x.init.values.empty());
}

TEST(TensorDirective, RandomArgumentsInAnyOrderWithDefaults) {
  // Unnamed arguments keep the documented defaults: seed 0, range [-1, 1).
  Program p = asm_text(".tensor x[2] random(hi=3, seed=5)\n.tensor y[2] random()\n");
  EXPECT_EQ(p.tensors[0].init.seed, 5u);
  EXPECT_EQ(p.tensors[0].init.lo, -1.0);
  EXPECT_EQ(p.tensors[0].init.hi, 3.0);
  EXPECT_EQ(p.tensors[1].init.kind, TensorInit::Kind::Random);
  EXPECT_EQ(p.tensors[1].init.seed, 0u);
  EXPECT_EQ(p.tensors[1].init.lo, -1.0);
  EXPECT_EQ(p.tensors[1].init.hi, 1.0);
}

TEST(TensorDirective, DtypeWithRandom) {
  Program p = asm_text(".tensor y[4] bf16 random(seed=3, lo=0, hi=1)\n");
  EXPECT_EQ(p.tensors[0].dtype, Dtype::BF16);
  EXPECT_EQ(p.tensors[0].init.kind, TensorInit::Kind::Random);
  EXPECT_EQ(p.tensors[0].init.seed, 3u);
}

TEST(TensorDirective, Zeros) {
  Program p = asm_text(".tensor c[2][2]\n.tensor d[3] f64\n");
  EXPECT_EQ(p.tensors[0].init.kind, TensorInit::Kind::Zeros);
  EXPECT_TRUE(p.tensors[0].init.values.empty());
  EXPECT_FALSE(p.tensors[0].dtype.has_value());
  EXPECT_EQ(p.tensors[1].init.kind, TensorInit::Kind::Zeros);
  EXPECT_EQ(p.tensors[1].dtype, Dtype::F64);
}

// `coherent` ends a declaration, after any dtype and initialiser; the disassembler writes it back.
TEST(TensorDirective, Coherent) {
  Program p = asm_text(
      ".tensor w[2][2] f32 coherent\n.tensor x[2] coherent\n.tensor y[2] = {1, 2} coherent\n"
      ".tensor z[2] fill(3) coherent\n.tensor u[2] f16\n");
  for (size_t t = 0; t < 4; ++t) EXPECT_TRUE(p.tensors[t].coherent) << t;
  EXPECT_FALSE(p.tensors[4].coherent);
  EXPECT_EQ(p.tensors[0].dtype, Dtype::F32);
  EXPECT_EQ(p.tensors[2].init.values, (std::vector<double>{1, 2}));
  EXPECT_EQ(p.tensors[3].init.kind, TensorInit::Kind::Fill);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find(".tensor w[2][2] f32 coherent\n"), std::string::npos) << text;
  EXPECT_NE(text.find(".tensor u[2] f16\n"), std::string::npos) << text;
  EXPECT_EQ(disassemble(asm_text(text)), text);
  expect_error(".tensor x[2] f32 coherant\n", 1, 18, {"found 'coherant'", "'coherent'"});
  expect_error(".tensor x[2] coherent f32\n", 1, 23, {"unexpected text"});
  expect_error(".tensor x[2] = {1, 2} coherent coherent\n", 1, 32, {"'coherent' given twice"});
}

// `heads_inner` lays a [heads][n][cols] tensor out as [n][heads][cols] (`heads_inner(H)`: [heads / H][n][H]
// [cols], PyTorch's (batch, n, heads, d)); indices and slices stay [heads][n][cols].
TEST(TensorDirective, HeadsInner) {
  Program p = asm_text(
      ".tensor O[4][3][8] f16 heads_inner(2) coherent\n.tensor P[2][3][8] heads_inner\n.buffer B[2][8]\n"
      "LOAD O[3, 1:3, :], B\nLOAD P[1, 0:2, 0:8], B\n");
  EXPECT_EQ(p.tensors[0].heads_inner, 2);
  EXPECT_TRUE(p.tensors[0].coherent);
  EXPECT_EQ(p.tensors[1].heads_inner, 2);
  // O[3] is head 1 of batch 1: row r at ((1 x 3 + r) x 2 + 1) x 8.
  const TileRef& o = p.tiles[p.instructions[0].operand(0).tensor];
  EXPECT_EQ(o.offset, (1 * 3 * 2 + 1) * 8);
  EXPECT_EQ(o.row_stride, 2 * 8);
  const TileRef& q = p.tiles[p.instructions[1].operand(0).tensor];
  EXPECT_EQ(q.offset, 8);
  EXPECT_EQ(q.row_stride, 16);
  const Program scalar = asm_text(".tensor O[4][3][8] heads_inner(2)\nLOAD O[2, 1, 5], R0\n");
  EXPECT_EQ(scalar.instructions[0].operand(0).flat, ((1 * 3 + 1) * 2 + 0) * 8 + 5);
  EXPECT_EQ(scalar.indices(scalar.instructions[0].operand(0)), (std::vector<int64_t>{2, 1, 5}));
  EXPECT_NE(disassemble(scalar).find("LOAD O[2][1][5], R0"), std::string::npos) << disassemble(scalar);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find(".tensor O[4][3][8] f16 coherent heads_inner(2)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(".tensor P[2][3][8] heads_inner\n"), std::string::npos) << text;
  EXPECT_NE(text.find("LOAD O[3, 1:3, 0:8], B"), std::string::npos) << text;
  EXPECT_EQ(disassemble(asm_text(text)), text);
  expect_error(".tensor x[4][2] heads_inner\n", 1, 17, {"3 dimensions"});
  expect_error(".tensor x[4][2][2] heads_inner(3)\n", 1, 32, {"divisor of the 4 heads"});
  expect_error(".tensor x[4][2][2] heads_inner heads_inner\n", 1, 32, {"given twice"});
}

TEST(TensorDirective, Errors) {
  expect_error(".tensor a[2]\n.tensor a[3]\n", 2, 9, {"'a'", "already declared as a tensor"});
  expect_error(".tensor a[2] f8\n", 1, 14, {"unknown dtype 'f8'"});
  expect_error(".tensor a[2][2] = {1, 2, 3}\n", 1, 19, {"4 elements", "3 values"});
  expect_error(".tensor a[0]\n", 1, 11, {"positive integer"});
  expect_error(".tensor a\n", 1, 10, {"shape"});
  expect_error(".tensor R1[2]\n", 1, 9, {"register name"});
  expect_error(".tensor x[2] random(seed=1, mu=0)\n", 1, 29, {"unknown random() argument 'mu'"});
  expect_error(".tensor x[2] random(seed=1.5)\n", 1, 26, {"seed"});
  expect_error(".tensor x[2] random(lo=1, hi=1)\n", 1, 9, {"lo must be less than hi"});
  expect_error(".tensor x[2] = {1, 2} extra\n", 1, 23, {"unexpected text"});
  expect_error(".tensr x[2]\n", 1, 1, {"unknown directive '.tensr'"});
}

// A declaration has one initialiser; a second one must not silently replace the first.
TEST(TensorDirective, RandomThenValuesIsRejected) {
  try {
    Program p = asm_text(".tensor x[2] random(seed=1) = {1, 2}\n");
    ADD_FAILURE() << "accepted two initialisers; kept kind " << static_cast<int>(p.tensors[0].init.kind);
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().line, 1);
  }
}

// ---- .check ----

TEST(CheckDirective, TargetFunctionAndArguments) {
  Program p = asm_text(
      ".tensor a[2][2]\n.tensor b[2][2]\n.tensor c[2][2]\n.tensor x[4]\n.tensor s[4]\n.tensor v[4]\n"
      ".tensor o[1]\n"
      ".check c = matmul(a, b)\n.check s = softmax(x)\n.check o = attend(x, v)\n");
  ASSERT_EQ(p.checks.size(), 3u);
  EXPECT_EQ(p.checks[0].function, "matmul");
  EXPECT_EQ(p.checks[0].target, 2);
  EXPECT_EQ(p.checks[0].args, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.checks[0].loc.line, 8);
  EXPECT_EQ(p.checks[1].function, "softmax");
  EXPECT_EQ(p.checks[1].target, 4);
  EXPECT_EQ(p.checks[1].args, (std::vector<int>{3}));
  EXPECT_EQ(p.checks[2].function, "attend");
  EXPECT_EQ(p.checks[2].target, 6);
  EXPECT_EQ(p.checks[2].args, (std::vector<int>{3, 5}));
}

TEST(CheckDirective, Errors) {
  expect_error(".tensor a[2]\n.tensor c[2]\n.check c = softmax(q)\n", 3, 20, {"undeclared tensor 'q'"});
  expect_error(".tensor a[2]\n.check c = softmax(a)\n", 2, 8, {"undeclared tensor 'c'"});
  expect_error(".tensor a[2]\n.tensor c[2]\n.check c = mean(a)\n", 3, 12, {"unknown check function 'mean'"});
  expect_error(".tensor a[2]\n.tensor c[2]\n.check c = matmul(a)\n", 3, 12, {"takes 2 argument", "1 given"});
}

// ---- operand errors, with the column of the offending operand ----

TEST(OperandErrors, Locations) {
  const std::string decl = ".tensor a[2][3]\n";
  expect_error(decl + "FOO R0\n", 2, 1, {"unknown opcode 'FOO'"});
  expect_error(decl + "LOAD R0, R1\n", 2, 6, {"operand 1", "memory reference"});
  expect_error(decl + "LOAD a[0][0], a[0][1]\n", 2, 15, {"operand 2", "register"});
  expect_error(decl + "ADD a[0][0], R0, R1\n", 2, 5, {"operand 1", "register"});
  expect_error(decl + "LOAD a[1][3], R0\n", 2, 11, {"index 3 out of range", "size 3"});
  expect_error(decl + "LOAD a[2, 0], R0\n", 2, 8, {"index 2 out of range", "size 2"});
  expect_error(decl + "LOAD a[-1][0], R0\n", 2, 8, {"index -1 out of range"});
  expect_error(decl + "LOAD a[0], R0\n", 2, 6, {"2 dimension(s)", "1 index(es)"});
  expect_error(decl + "LOAD a[0][0][0], R0\n", 2, 14, {"2 dimension(s)"});
  expect_error(decl + "LOAD b[0], R0\n", 2, 6, {"undeclared tensor 'b'"});
  expect_error(decl + "MOV a, R0\n", 2, 5, {"'a' needs indices"});
  expect_error(decl + "MOV Rx, R0\n", 2, 5, {"'Rx' is not a register"});
  expect_error(decl + "LOAD a[0][0] R0\n", 2, 14, {"expected ','"});
}

// ---- STORE_ADD: a buffer added into a tensor slice (tile form only) ----

TEST(StoreAdd, IsABufferThenATensorSlice) {
  Program p = asm_text(".tensor x[2][4][8] f32\n.buffer t[2][8] f32\nstore_add t, x[1, 2:4, 0:8]\n");
  ASSERT_EQ(p.instructions.size(), 1u);
  const Instruction& i = p.instructions[0];
  EXPECT_EQ(i.op, Opcode::StoreAdd);
  EXPECT_EQ(mnemonic(i.op), "STORE_ADD");
  EXPECT_TRUE(info(i.op).tile_only);
  ASSERT_EQ(i.operand_count, 2);
  ASSERT_EQ(i.operand(0).kind, Kind::Tile);
  ASSERT_EQ(i.operand(1).kind, Kind::Tile);
  const TileRef& from = p.tiles[i.operand(0).tensor];
  EXPECT_TRUE(from.is_buffer);
  EXPECT_EQ(from.rows, 2);
  EXPECT_EQ(from.cols, 8);
  const TileRef& to = p.tiles[i.operand(1).tensor];
  EXPECT_FALSE(to.is_buffer);
  EXPECT_EQ(to.index, 0);
  EXPECT_EQ(to.offset, 32);  // head 1 of [4][8] planes
  EXPECT_EQ(to.row0, 2);
  EXPECT_EQ(to.rows, 2);
  EXPECT_EQ(to.cols, 8);
  EXPECT_EQ(to.row_stride, 8);
  // Disassembled in canonical form, and that text assembles back to the same program.
  EXPECT_EQ(format_instruction(p, i), "STORE_ADD t, x[1, 2:4, 0:8]");
  const std::string text = disassemble(p);
  const Program back = asm_text(text);
  EXPECT_EQ(disassemble(back), text);
  ASSERT_EQ(back.instructions.size(), 1u);
  EXPECT_EQ(back.instructions[0].op, Opcode::StoreAdd);
  EXPECT_EQ(back.tiles[back.instructions[0].operand(1).tensor], to);
}

// The operand rules of the tile STORE: an untransposed SRAM buffer, then an untransposed tensor slice of the
// same shape; no scalar form.
TEST(StoreAdd, OperandErrors) {
  const std::string decl = ".tensor x[8][8] f32\n.tensor a[4]\n.buffer t[2][8]\n.buffer u[2][8]\n";
  expect_error(decl + "STORE_ADD R0, a[0]\n", 5, 1, {"STORE_ADD works on tiles"});
  expect_error(decl + "STORE_ADD t\n", 5, 1, {"STORE_ADD takes 2 operands, 1 given"});
  expect_error(decl + "STORE_ADD t, x[0:2, 0:8], x[2:4, 0:8]\n", 5, 1, {"takes 2 operands, 3 given"});
  expect_error(decl + "STORE_ADD x[0:2, 0:8], x[2:4, 0:8]\n", 5, 11, {"operand 1", "on-chip buffer"});
  expect_error(decl + "STORE_ADD t^T, x[0:8, 0:2]\n", 5, 11, {"STORE_ADD cannot transpose this operand"});
  expect_error(decl + "STORE_ADD t, u\n", 5, 14, {"STORE_ADD writes a tensor slice in memory, not a buffer"});
  expect_error(decl + "STORE_ADD t, x[0:8, 0:2]^T\n", 5, 14, {"STORE_ADD cannot transpose its destination"});
  expect_error(decl + "STORE_ADD t, x[0:1, 0:8]\n", 5, 14, {"STORE_ADD: shapes differ (2x8 and 1x8)"});
}

// ---- LOCK, UNLOCK, FENCE: a spin lock in memory and a memory barrier (tile form only) ----

TEST(Locks, LockTakesARowAndABackoffUnlockTheRowFenceNothing) {
  Program p = asm_text(
      ".tensor l[2][4][8] f32\n.buffer t[1][8] f32\nLOCK l[1, 2, 0:8], 55\nFENCE\n"
      "unlock l[1, 2, 0:8]\n");
  ASSERT_EQ(p.instructions.size(), 3u);
  EXPECT_EQ(p.instructions[0].op, Opcode::Lock);
  EXPECT_EQ(p.instructions[1].op, Opcode::Fence);
  EXPECT_EQ(p.instructions[2].op, Opcode::Unlock);
  EXPECT_EQ(p.instructions[1].operand_count, 0);
  const TileRef& word = p.tiles[p.instructions[0].operand(0).tensor];
  EXPECT_EQ(word.offset, 32);  // plane 1 of [4][8]
  EXPECT_EQ(word.row0, 2);
  EXPECT_EQ(word.rows, 1);
  EXPECT_EQ(word.cols, 8);
  EXPECT_EQ(p.instructions[0].operand(1).flat, 55);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("LOCK l[1, 2:3, 0:8], 55"), std::string::npos) << text;
  EXPECT_NE(text.find("\nFENCE\n"), std::string::npos) << text;
  EXPECT_EQ(disassemble(asm_text(text)), text);
}

TEST(Locks, OperandErrors) {
  const std::string decl = ".tensor l[4][8] f32\n.tensor a[4]\n.buffer t[1][8]\n";
  expect_error(decl + "LOCK t, 1\n", 4, 6, {"LOCK takes a lock in memory, not a buffer"});
  expect_error(decl + "LOCK l[0:2, 0:8], 1\n", 4, 6, {"the lock is one row", "2x8"});
  expect_error(decl + "LOCK l[0, 0:8]\n", 4, 1, {"LOCK takes 2 operands, 1 given"});
  expect_error(decl + "LOCK l[0, 0:8], -1\n", 4, 17, {"backoff: 0 to 2^32 cycles"});
  expect_error(decl + "LOCK l[0, 0:8], t\n", 4, 17, {"an integer (cycles between attempts"});
  expect_error(decl + "UNLOCK l[0:2, 0:8]\n", 4, 8, {"UNLOCK: the lock is one row"});
  expect_error(decl + "FENCE t\n", 4, 1, {"FENCE takes 0 operands, 1 given"});
  // Without a buffer the program is in the scalar form, which has no memory barrier.
  expect_error(".tensor a[4]\nFENCE\n", 2, 1, {"FENCE works on tiles"});
}

}  // namespace
// "Did you mean": the closest name by edit distance, separators and case forgiven, nothing for a far word.
TEST(DidYouMean, OpcodesRegistersTensorsAndChecks) {
  expect_error(".tensor a[2]\nLOAD a[0], R0\nMACZ R0, R0, R1\n", 3, 1,
               {"unknown opcode 'MACZ'; did you mean 'MAC_Z'?"});
  expect_error(".tensor a[2]\nlaod a[0], R0\n", 2, 1, {"did you mean 'LOAD'?"});
  expect_error(".tensor a[2]\nLOAD a[0], RO\n", 2, 12, {"'RO' is not a register", "did you mean 'R0'?"});
  expect_error(".tensor score[2]\nLOAD scroe[0], R0\n", 2, 6,
               {"undeclared tensor 'scroe'; did you mean 'score'?"});
  expect_error(".tensor a[2]\n.tensor c[1]\n.check c = atend(a, a)\n", 3, 12, {"did you mean 'attend'?"});
}

TEST(DidYouMean, NoSuggestionForAFarWord) {
  try {
    asm_text(".tensor a[2]\nFROBNICATE a[0], R0\n");
    ADD_FAILURE() << "assembled";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "unknown opcode 'FROBNICATE'");
  }
  EXPECT_EQ(closest_name("x", {"y", "xy"}), "y");  // one edit allowed for short words; ties: first
  EXPECT_EQ(closest_name("count", {"cout"}), "cout");
  EXPECT_EQ(closest_name("latency", {"store"}), "");
  EXPECT_EQ(edit_distance("MACZ", "mac_z"), 1u);
}

}  // namespace attnsim::isa
