// Lab 7, loop order: the HBM ledger of attention in the inner-product (FA2) and outer-product (FA1) orders,
// in rows, against seed 002's "Cost Comparison" table (inner: Q n, KV n^2, O loads n, O stores n; outer:
// Q n^2, KV n, O loads n^2, O stores n^2), plus the running state (m, l) that traces/loop_order.h documents,
// the spectrum of outputs kept on chip, and the committed lab traces. Every TEST runs in its own process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "isa/assembler.h"
#include "isa/diagnostics.h"
#include "isa/disassembler.h"
#include "sim/run.h"
#include "traces/loop_order.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;
const std::string kLabDir = kRoot + "/labs/07-loop-order/";
constexpr int64_t kD = 4;      // the lab's head dimension: a row is 16 bytes of f32 on configs/toy-tile.yaml
constexpr uint64_t kElem = 4;  // f32

RunOptions toy_tile(std::vector<std::string> overrides = {}) {
  RunOptions o;
  o.config_path = kRoot + "/configs/toy-tile.yaml";
  o.overrides = std::move(overrides);
  return o;
}

// HBM traffic of one tensor in rows: d elements for Q, K, V, O; one element for m and l.
struct Rows {
  const RunResult& r;
  uint64_t width(const std::string& t) const { return (t == "m" || t == "l") ? kElem : kD * kElem; }
  uint64_t read(const std::string& t) const {
    const uint64_t bytes = r.hbm_bytes_read.at(t);
    EXPECT_EQ(bytes % width(t), 0u) << t;
    return bytes / width(t);
  }
  uint64_t written(const std::string& t) const {
    const uint64_t bytes = r.hbm_bytes_written.at(t);
    EXPECT_EQ(bytes % width(t), 0u) << t;
    return bytes / width(t);
  }
};

uint64_t count(const RunResult& r, const std::string& opcode) {
  auto it = r.per_opcode.find(opcode);
  return it == r.per_opcode.end() ? 0 : it->second;
}

// Every LOAD and STORE moves exactly one row, so the opcode counts equal the ledger's row totals.
void expect_one_row_per_transfer(const RunResult& r) {
  const Rows rows{r};
  uint64_t loads = 0, stores = 0;
  for (const char* t : {"Q", "K", "V", "O", "m", "l"}) loads += rows.read(t), stores += rows.written(t);
  EXPECT_EQ(count(r, "LOAD"), loads);
  EXPECT_EQ(count(r, "STORE"), stores);
}

void expect_check_passed(const RunResult& r) {
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << "max rel err " << r.checks[0].max_rel_error;
}

class Lab7SeedTable : public ::testing::TestWithParam<int64_t> {};

// Seed 002, inner product: Q loads n (once per query), KV loads n^2 (all KV reloaded per query),
// O loads n (initialize once per query), O stores n (once per query).
TEST_P(Lab7SeedTable, InnerProduct) {
  const int64_t n = GetParam();
  const uint64_t nn = static_cast<uint64_t>(n);
  RunResult r = run_program(traces::inner_product_attention(n, kD), toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), nn);
  EXPECT_EQ(rows.read("K"), nn * nn);
  EXPECT_EQ(rows.read("V"), nn * nn);
  EXPECT_EQ(rows.read("O"), nn);
  EXPECT_EQ(rows.written("O"), nn);
  EXPECT_EQ(rows.written("Q") + rows.written("K") + rows.written("V"), 0u);
  // Running state: loaded with its O row (once per query), never stored (it dies on chip).
  EXPECT_EQ(rows.read("m"), nn);
  EXPECT_EQ(rows.read("l"), nn);
  EXPECT_EQ(rows.written("m"), 0u);
  EXPECT_EQ(rows.written("l"), 0u);
  expect_one_row_per_transfer(r);
  expect_check_passed(r);
}

// Seed 002, outer product: Q loads n^2 (every query reloaded per KV), KV loads n (once per KV),
// O loads n^2 (reloaded per KV), O stores n^2 (stored per KV).
TEST_P(Lab7SeedTable, OuterProduct) {
  const int64_t n = GetParam();
  const uint64_t nn = static_cast<uint64_t>(n);
  RunResult r = run_program(traces::outer_product_attention(n, kD), toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), nn * nn);
  EXPECT_EQ(rows.read("K"), nn);
  EXPECT_EQ(rows.read("V"), nn);
  EXPECT_EQ(rows.read("O"), nn * nn);
  EXPECT_EQ(rows.written("O"), nn * nn);
  EXPECT_EQ(rows.written("Q") + rows.written("K") + rows.written("V"), 0u);
  // Running state: loaded with its O row every time; stored with it except after the last KV row (dead).
  EXPECT_EQ(rows.read("m"), nn * nn);
  EXPECT_EQ(rows.read("l"), nn * nn);
  EXPECT_EQ(rows.written("m"), nn * (nn - 1));
  EXPECT_EQ(rows.written("l"), nn * (nn - 1));
  expect_one_row_per_transfer(r);
  expect_check_passed(r);
}

INSTANTIATE_TEST_SUITE_P(N, Lab7SeedTable, ::testing::Values(1, 2, 5, 16));

// The spectrum (seed 002): each output slot kept on chip saves n - 1 stores (and n - 1 loads) of O.
class Lab7Spectrum : public ::testing::TestWithParam<int64_t> {};

TEST_P(Lab7Spectrum, EachOutputSlotOnChipSavesNMinusOneStores) {
  const int64_t n = 8, slots = GetParam();
  const uint64_t nn = n, rr = static_cast<uint64_t>(slots);
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = slots;
  // A bigger SRAM than the toy's (which holds 2 slots beside the working rows) to walk the whole spectrum.
  RunResult r =
      run_program(traces::outer_product_attention(n, kD, opt), toy_tile({"sram.capacity_bytes=1024"}));
  const Rows rows{r};
  EXPECT_EQ(rows.written("O"), nn * nn - rr * (nn - 1));
  EXPECT_EQ(rows.read("O"), nn * nn - rr * (nn - 1));
  EXPECT_EQ(rows.read("m"), nn * nn - rr * (nn - 1));
  EXPECT_EQ(rows.written("m"), (nn - rr) * (nn - 1));
  EXPECT_EQ(rows.read("Q"), nn * nn);  // Q is still reloaded per KV row
  EXPECT_EQ(rows.read("K"), nn);
  expect_one_row_per_transfer(r);
  expect_check_passed(r);
}

INSTANTIATE_TEST_SUITE_P(Slots, Lab7Spectrum, ::testing::Values(0, 1, 2, 4, 7));

// All n outputs on chip: each O row moves once, as in the inner order; it needs a bigger SRAM.
TEST(Lab7Spectrum, AllOutputsOnChipRecoverTheInnerOrdersOTraffic) {
  const int64_t n = 8;
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = n;
  RunResult r =
      run_program(traces::outer_product_attention(n, kD, opt), toy_tile({"sram.capacity_bytes=1024"}));
  const Rows rows{r};
  EXPECT_EQ(rows.read("O"), 8u);
  EXPECT_EQ(rows.written("O"), 8u);
  EXPECT_EQ(rows.written("m"), 0u);
  EXPECT_EQ(rows.read("K"), 8u);
  EXPECT_EQ(rows.read("Q"), 64u);
  expect_check_passed(r);
}

// The toy machine holds one query's state (the inner order) but not all n = 8 outputs.
TEST(Lab7ToyTile, SramCannotHoldAllEightOutputs) {
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = 8;
  EXPECT_THROW(run_program(traces::outer_product_attention(8, kD, opt), toy_tile()), InputError);
}

// Each slot costs three 16-byte-aligned buffers (o row, m, l): 2 fit beside the working rows, 3 do not.
TEST(Lab7ToyTile, SramHoldsTwoOutputSlots) {
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = 2;
  RunResult r = run_program(traces::outer_product_attention(8, kD, opt), toy_tile());
  expect_check_passed(r);
}

TEST(Lab7ToyTile, SramCannotHoldThreeOutputSlots) {
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = 3;
  EXPECT_THROW(run_program(traces::outer_product_attention(8, kD, opt), toy_tile()), InputError);
}

// The generators also run streamed (Builder hands chunks off between instructions, here every 7, so
// mid-step): the same ledger and values.
TEST(Lab7Stream, StreamedOuterOrderMatchesTheSeedTable) {
  traces::LoopOrderOptions opt;
  opt.outputs_on_chip = 1;
  RunResult r = run_program(
      traces::stream_program([opt] { return traces::outer_product_attention(5, kD, opt); }, 7), toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), 25u);
  EXPECT_EQ(rows.read("K"), 5u);
  EXPECT_EQ(rows.written("O"), 25u - 4u);
  expect_check_passed(r);
}

TEST(Lab7Stream, StreamedInnerOrderMatchesTheSeedTable) {
  RunResult r = run_program(traces::stream_program([] { return traces::inner_product_attention(5, kD); }, 7),
                            toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("K"), 25u);
  EXPECT_EQ(rows.written("O"), 5u);
  expect_check_passed(r);
}

// The committed lab traces are the generators' output. ATTNSIM_WRITE_LAB7_TRACES=1 rewrites them.
struct LabTrace {
  const char* file;
  const char* call;
  isa::Program (*make)();
};

const LabTrace kLabTraces[] = {
    {"inner_product_n8.trace", "inner_product_attention(8, 4)",
     [] { return traces::inner_product_attention(8, 4); }},
    {"outer_product_n8.trace", "outer_product_attention(8, 4)",
     [] { return traces::outer_product_attention(8, 4); }},
    {"outer_product_n8_keep2.trace", "outer_product_attention(8, 4, {.outputs_on_chip = 2})",
     [] { return traces::outer_product_attention(8, 4, {.outputs_on_chip = 2}); }},
};

std::string lab_text(const LabTrace& t) {
  return std::string("# Lab 7 (docs/labs/07-loop-order.md). Generated by traces/loop_order.cpp: ") + t.call +
         ".\n# Do not edit: rewrite with ATTNSIM_WRITE_LAB7_TRACES=1 build/tests/lab7/lab7_tests "
         "--gtest_filter=Lab7Files.*\n" +
         isa::disassemble(t.make());
}

TEST(Lab7Files, CommittedTracesAreTheGeneratorsOutput) {
  const bool write = std::getenv("ATTNSIM_WRITE_LAB7_TRACES") != nullptr;
  for (const auto& t : kLabTraces) {
    const std::string path = kLabDir + t.file, expected = lab_text(t);
    if (write) write_file_atomically(path, expected);
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream got;
    got << in.rdbuf();
    EXPECT_EQ(got.str(), expected) << path << " is stale: rewrite it (see the comment at its top)";
    // And the text assembles back to the same program.
    EXPECT_EQ(isa::disassemble(isa::assemble_file(path)), isa::disassemble(t.make())) << path;
  }
}

// The files as students run them: n = 8 on the toy machine.
TEST(Lab7Files, InnerTraceOnToyTile) {
  RunResult r = run_trace_file(kLabDir + "inner_product_n8.trace", toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), 8u);
  EXPECT_EQ(rows.read("K"), 64u);
  EXPECT_EQ(rows.read("O"), 8u);
  EXPECT_EQ(rows.written("O"), 8u);
  expect_check_passed(r);
}

TEST(Lab7Files, OuterTraceOnToyTile) {
  RunResult r = run_trace_file(kLabDir + "outer_product_n8.trace", toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), 64u);
  EXPECT_EQ(rows.read("K"), 8u);
  EXPECT_EQ(rows.read("O"), 64u);
  EXPECT_EQ(rows.written("O"), 64u);
  expect_check_passed(r);
}

TEST(Lab7Files, KeepTwoTraceOnToyTile) {
  RunResult r = run_trace_file(kLabDir + "outer_product_n8_keep2.trace", toy_tile());
  const Rows rows{r};
  EXPECT_EQ(rows.written("O"), 64u - 2u * 7u);
  EXPECT_EQ(rows.read("O"), 64u - 2u * 7u);
  expect_check_passed(r);
}

// `attnsim gen inner-product / outer-product` (lab 7 from the command line): the generated trace, run on the
// toy tile machine, has the seed's row counts; outer with --slots r saves r(n - 1) O loads and stores.
RunResult run_generated(const std::string& arguments) {
  const std::string path =
      ::testing::TempDir() + "lab7_gen_" + std::to_string(std::hash<std::string>{}(arguments)) + ".trace";
  const std::string command = std::string(ATTNSIM_CLI) + " gen " + arguments + " -o " + path;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return run_trace_file(path, toy_tile({"sram.capacity_bytes=1024"}));
}

TEST(Lab7Gen, InnerProductFromTheCommandLine) {
  const uint64_t n = 16;
  RunResult r = run_generated("inner-product --n 16");
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), n);
  EXPECT_EQ(rows.read("K"), n * n);
  EXPECT_EQ(rows.read("O"), n);
  EXPECT_EQ(rows.written("O"), n);
  expect_check_passed(r);
}

TEST(Lab7Gen, OuterProductWithSlotsFromTheCommandLine) {
  const uint64_t n = 6, slots = 2;
  RunResult r = run_generated("outer-product --n 6 --slots 2");
  const Rows rows{r};
  EXPECT_EQ(rows.read("Q"), n * n);
  EXPECT_EQ(rows.read("K"), n);
  EXPECT_EQ(rows.read("O"), n * n - slots * (n - 1));
  EXPECT_EQ(rows.written("O"), n * n - slots * (n - 1));
  expect_check_passed(r);
}

}  // namespace
}  // namespace attnsim
