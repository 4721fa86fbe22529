// The seed 002 labs end to end: every number here is the seed's (or seed 001's), not the simulator's.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "models/common/symbolic.h"
#include "sim/run.h"
#include "traces/scalar.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

RunOptions on(const std::string& config, bool table = false, bool symbolic = false) {
  RunOptions o;
  o.config_path = kRoot + "/configs/" + config + ".yaml";
  o.table = table;
  o.symbolic = symbolic;
  return o;
}

uint64_t count(const RunResult& r, const std::string& opcode) {
  auto it = r.per_opcode.find(opcode);
  return it == r.per_opcode.end() ? 0 : it->second;
}

// The seed writes MAC_Z and MAC together as "MACs".
uint64_t macs(const RunResult& r) {
  return count(r, "MAC_Z") + count(r, "MAC");
}

void expect_register_row(const RunResult& r, size_t step, const std::vector<std::string>& registers) {
  ASSERT_LT(step, r.table.size()) << "table has no step " << step;
  const auto& row = r.table[step];
  const auto& header = r.table[0];
  const auto r0 = std::find(header.begin(), header.end(), "R0") - header.begin();
  ASSERT_EQ(row.size(), registers.size() + r0);
  for (size_t i = 0; i < registers.size(); ++i)
    EXPECT_EQ(row[i + r0], registers[i]) << "step " << step << " R" << i << " (" << row[1] << ")";
}

// Seed 002, "Full trace for c00": 4 LOADs + 2 MACs + 1 STORE = 7 cycles, and its register table.
TEST(Lab1C00, SevenCyclesAndTheSeedsRegisterTable) {
  RunResult r = run_trace_file(kRoot + "/labs/01-c00/c00.trace", on("toy-3reg", true, true));
  EXPECT_EQ(r.cycles, 7u);
  EXPECT_EQ(count(r, "LOAD"), 4u);
  EXPECT_EQ(macs(r), 2u);
  EXPECT_EQ(count(r, "STORE"), 1u);
  const std::vector<std::vector<std::string>> seed_table = {
      {"a00", "", ""},           {"a00", "b00", ""},    {"a00", "b00", "a00·b00"}, {"a01", "b00", "a00·b00"},
      {"a01", "b10", "a00·b00"}, {"a01", "b10", "c00"}, {"a01", "b10", "c00"},
  };
  ASSERT_EQ(r.table.size(), seed_table.size() + 1);  // plus the header
  for (size_t step = 0; step < seed_table.size(); ++step) expect_register_row(r, step + 1, seed_table[step]);
}

TEST(Lab1C00, ComputesTheNumber) {
  RunResult r = run_trace_file(kRoot + "/labs/01-c00/c00.trace", on("toy-3reg"));
  // a = [[1, 2], [3, 4]], b = [[5, 6], [7, 8]] in the trace: c00 = 1*5 + 2*7.
  EXPECT_EQ(r.final_values.at("c")[0], 1.0 * 5.0 + 2.0 * 7.0);
  EXPECT_EQ(r.dram_reads.at("a"), 2u);
  EXPECT_EQ(r.dram_reads.at("b"), 2u);
  EXPECT_EQ(r.dram_writes.at("c"), 1u);
}

// Seed 002 table "Inner product | Outer product": 3 registers, 25 cycles, 13 LOADs.
TEST(Lab2InnerProduct, TwentyFiveCyclesThirteenLoads) {
  RunResult r = run_trace_file(kRoot + "/labs/02-matmul-inner/matmul_inner.trace", on("toy-3reg"));
  EXPECT_EQ(r.cycles, 25u);
  EXPECT_EQ(count(r, "LOAD"), 13u);
  EXPECT_EQ(count(r, "STORE"), 4u);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed);
  EXPECT_EQ(r.checks[0].max_abs_error, 0.0);  // small integers are exact in f32
}

// Seed 002 problem 3: 10 LOADs + 8 MACs + 4 STOREs = 22 cycles with 6 registers.
TEST(Lab3OuterProduct, TwentyTwoCycles) {
  RunResult r = run_trace_file(kRoot + "/labs/03-matmul-outer/matmul_outer.trace", on("toy-6reg"));
  EXPECT_EQ(r.cycles, 22u);
  EXPECT_EQ(count(r, "LOAD"), 10u);
  EXPECT_EQ(macs(r), 8u);
  EXPECT_EQ(count(r, "STORE"), 4u);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed);
}

TEST(Lab3OuterProduct, RegisterTableMatchesTheSeed) {
  RunResult r =
      run_trace_file(kRoot + "/labs/03-matmul-outer/matmul_outer.trace", on("toy-6reg", true, true));
  // Cells of the seed's table ("" marks a register not yet written).
  expect_register_row(r, 3, {"a00", "b00", "a00·b00", "", "", ""});
  expect_register_row(r, 9, {"a10", "b00", "a00·b00", "a00·b01", "a10·b00", "a10·b01"});
  expect_register_row(r, 12, {"a01", "b10", "c00", "a00·b01", "a10·b00", "a10·b01"});
  expect_register_row(r, 18, {"a11", "b10", "c00", "c01", "c10", "c11"});
}

// The quiz has no seed answer; the example reaches the lower bound of one LOAD per input element
// (2x2 + 2x2 = 8), with 8 MACs and 4 STOREs: 20 cycles, below the outer product's 22.
TEST(LabQuiz, ExampleSolutionLoadsEachElementOnce) {
  RunResult r = run_trace_file(kRoot + "/labs/quiz-inner-6reg/inner_6reg_example.trace", on("toy-6reg"));
  const uint64_t elements_of_a_and_b = 2 * 2 + 2 * 2;
  EXPECT_EQ(count(r, "LOAD"), elements_of_a_and_b);
  EXPECT_EQ(macs(r), 8u);
  EXPECT_EQ(r.cycles, elements_of_a_and_b + 8u + 4u);
  EXPECT_TRUE(r.checks_passed());
}

class SoftmaxLab : public ::testing::TestWithParam<int64_t> {};

// Seed 002 problem 4: three passes, 3n reads and n writes, for any n; outputs equal softmax(x).
TEST_P(SoftmaxLab, SafeSoftmaxReads3nWritesN) {
  traces::ScalarInputs in;
  in.n = GetParam();
  RunResult r = run_program(traces::softmax_safe(in), on("toy-3reg"));
  EXPECT_EQ(r.dram_reads.at("x"), 3u * in.n);
  EXPECT_EQ(r.dram_writes.at("out"), static_cast<uint64_t>(in.n));
  EXPECT_EQ(r.total_dram_reads(), 3u * in.n);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << "max rel error " << r.checks[0].max_rel_error;
}

// Seed 002 problem 5: online (m, s) pass then normalize: 2n reads, n writes.
TEST_P(SoftmaxLab, OnlineSoftmaxReads2nWritesN) {
  traces::ScalarInputs in;
  in.n = GetParam();
  RunResult r = run_program(traces::softmax_online(in), on("toy-4reg"));
  EXPECT_EQ(r.dram_reads.at("x"), 2u * in.n);
  EXPECT_EQ(r.dram_writes.at("out"), static_cast<uint64_t>(in.n));
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << "max rel error " << r.checks[0].max_rel_error;
}

INSTANTIATE_TEST_SUITE_P(SeedSizes, SoftmaxLab, ::testing::Values(1, 2, 3, 8, 100, 1000));

// The generated steady state is exactly the seed's nine-step trace (seed 002, "Hint: full instruction
// trace").
TEST(Lab5OnlineSoftmax, SteadyStateIsTheSeedsNineInstructions) {
  const std::string seed_steady_state =
      ".tensor x[4]\n"
      "LOAD x[2], R0\nMOV r1, r3\nMAX r1, R0, r1\nSUB r3, r1, r3\nSUB R0, r1, R0\n"
      "EXP r3, r3\nEXP R0, R0\nMUL r2, r3, r2\nADD r2, R0, r2\n";
  isa::Program seed = isa::assemble(seed_steady_state, "seed");
  traces::ScalarInputs in;
  in.n = 4;
  isa::Program generated = traces::softmax_online(in);
  const size_t init_length = 5;               // seed: LOAD, MOV, SUB, EXP, MOV
  const size_t step_of_x2 = init_length + 9;  // x[1]'s nine instructions come first
  ASSERT_GE(generated.instructions.size(), step_of_x2 + 9);
  for (size_t i = 0; i < 9; ++i) {
    const auto& want = seed.instructions[i];
    const auto& got = generated.instructions[step_of_x2 + i];
    EXPECT_EQ(got.op, want.op) << "step " << i + 1;
    ASSERT_EQ(got.operand_count, want.operand_count);
    for (size_t k = 0; k < want.operand_count; ++k) {
      EXPECT_EQ(got.operand(k).kind, want.operand(k).kind);
      EXPECT_EQ(got.operand(k).reg, want.operand(k).reg) << "step " << i + 1 << " operand " << k;
      EXPECT_EQ(got.operand(k).flat, want.operand(k).flat);
    }
  }
}

// Seed 002's initialization table: after five steps r1 = m = x0 and r2 = s = 1.
TEST(Lab5OnlineSoftmax, InitializationTableMatchesTheSeed) {
  traces::ScalarInputs in;
  in.n = 2;
  RunResult r = run_program(traces::softmax_online(in), on("toy-4reg", true, true));
  expect_register_row(r, 1, {"x0", "", "", ""});
  expect_register_row(r, 2, {"x0", "x0", "", ""});
  expect_register_row(r, 3, {"0", "x0", "", ""});
  expect_register_row(r, 4, {"1", "x0", "", ""});
  expect_register_row(r, 5, {"1", "x0", "1", ""});
  // Steady state step 2 saves the old max into r3; step 3 takes the new one.
  expect_register_row(r, 7, {"x1", "x0", "1", "x0"});
  expect_register_row(r, 8, {"x1", "max(x0, x1)", "1", "x0"});
}

// Seed 001, section 2: x = v = [1..6] gives o = 5.4329, in one pass over x and v.
TEST(Lab6OnlineAttention, SeedWorkedExample) {
  RunResult r = run_trace_file(kRoot + "/labs/06-online-attention/seed001_example.trace", on("toy-6reg"));
  const double seed_value = 5.4329;
  const double seed_precision = 0.5e-4;  // the seed prints four decimals
  EXPECT_NEAR(r.final_values.at("o")[0], seed_value, seed_precision);
  const uint64_t n = 6;
  EXPECT_EQ(r.dram_reads.at("x"), n);
  EXPECT_EQ(r.dram_reads.at("v"), n);
  EXPECT_EQ(r.dram_writes.at("o"), 1u);
  EXPECT_TRUE(r.checks_passed());
}

TEST(Lab6OnlineAttention, OnePassForRandomInputs) {
  traces::ScalarInputs in;
  in.n = 500;
  in.seed = 7;
  RunResult r = run_program(traces::online_attention(in), on("toy-6reg"));
  EXPECT_EQ(r.dram_reads.at("x"), static_cast<uint64_t>(in.n));
  EXPECT_EQ(r.dram_reads.at("v"), static_cast<uint64_t>(in.n));
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << r.checks[0].max_rel_error;
}

// --table's Issue and Done columns (cycles from 1; Done is the last cycle an instruction occupies). Lab 3
// starts LOAD a00, LOAD b00, MAC_Z; with dram.load_latency=4 a LOAD occupies 4 cycles.
std::vector<std::string> cycles_of(const RunResult& r, size_t step) {
  return {r.table[step][2], r.table[step][3]};
}

TEST(TableCycles, BlockingIssueWaitsForEachLoad) {
  RunOptions o = on("toy-6reg", true);
  o.overrides = {"dram.load_latency=4"};
  RunResult r = run_trace_file(kRoot + "/labs/03-matmul-outer/matmul_outer.trace", o);
  EXPECT_EQ(r.table[0][2], "Issue");
  EXPECT_EQ(r.table[0][3], "Done");
  EXPECT_EQ(cycles_of(r, 1), (std::vector<std::string>{"1", "4"}));
  EXPECT_EQ(cycles_of(r, 2), (std::vector<std::string>{"5", "8"}));
  EXPECT_EQ(cycles_of(r, 3), (std::vector<std::string>{"9", "9"}));
  EXPECT_EQ(r.table.back()[3], "52");  // lab 3's handout: 52 cycles
}

TEST(TableCycles, PipelinedIssueOverlapsTheLoads) {
  RunOptions o = on("toy-6reg", true);
  o.overrides = {"dram.load_latency=4", "sequencer.issue=pipelined"};
  RunResult r = run_trace_file(kRoot + "/labs/03-matmul-outer/matmul_outer.trace", o);
  EXPECT_EQ(cycles_of(r, 1), (std::vector<std::string>{"1", "4"}));
  EXPECT_EQ(cycles_of(r, 2), (std::vector<std::string>{"2", "5"}));  // issued the cycle after the first
  EXPECT_EQ(cycles_of(r, 3), (std::vector<std::string>{"6", "6"}));  // MAC_Z waits for b00 (done in 5)
  uint64_t last_done = 0;
  for (size_t s = 1; s < r.table.size(); ++s)
    last_done = std::max<uint64_t>(last_done, std::stoull(r.table[s][3]));
  EXPECT_EQ(last_done, 46u);  // lab 3's handout: 46 cycles
}

TEST(TableLayout, ElidesTheMiddleAndKeepsBothEnds) {
  EXPECT_EQ(elide_middle("abcdefghij", 10), "abcdefghij");
  EXPECT_EQ(elide_middle("abcdefghijkl", 7), "abc…jkl");
  EXPECT_EQ(elide_middle("a·b·c·d·e", 5), "a·…·e");        // widths count code points, not bytes
  EXPECT_EQ(elide_middle("e^(x0 − m) + …", 6), "e^(x0…");  // already cut at the end: keep the start
}

TEST(TableLayout, WrapsAtSpaces) {
  EXPECT_EQ(wrap_text("e^(x0) + e^(x1) + e^(x2)", 10),
            (std::vector<std::string>{"e^(x0) +", "e^(x1) +", "e^(x2)"}));
  EXPECT_EQ(wrap_text("abcdefghij", 4), (std::vector<std::string>{"abcd", "efgh", "ij"}));
}

TEST(TableLayout, NarrowColumnsKeepTheirWidthWideOnesShareTheRest) {
  // Fixed: 4 + 20; separators: 4 x 3 = 12; left for R0..R2: 60 - 36 = 24. R0 keeps 3, R1 and R2 share 21.
  EXPECT_EQ(fit_widths({4, 20, 3, 50, 80}, 2, 60), (std::vector<size_t>{4, 20, 3, 10, 10}));
  EXPECT_EQ(fit_widths({4, 20, 3, 5, 8}, 2, 160), (std::vector<size_t>{4, 20, 3, 5, 8}));
}

// Lab 6's symbolic table (6 registers of long expressions) fits a 160-column terminal, wrapped or not.
TEST(TableLayout, LabSixFitsOneHundredSixtyColumns) {
  traces::ScalarInputs in;
  in.n = 3;
  in.x = in.v = std::vector<double>{1, 2, 3};
  RunResult r = run_program(traces::online_attention(in), on("toy-6reg", true, true));
  for (bool wrap : {false, true}) {
    std::ostringstream out;
    print_table(out, r.table, {.width = 160, .wrap = wrap});
    std::istringstream lines(out.str());
    size_t count = 0;
    for (std::string line; std::getline(lines, line); ++count)
      EXPECT_LE(symbolic::display_width(line), 160u) << line;
    EXPECT_GT(count, r.table.size());  // header rule, and more lines when wrapped
  }
}

}  // namespace
}  // namespace attnsim
