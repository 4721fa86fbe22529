// The backward schedules on the whole chip (configs/h100.yaml): their grids spread over the cores, the
// blocks load and store exactly what the single-core program moves (configs/h100-sm.yaml's HBM ledger is
// the chip's SM <-> L2 ledger), and dQ, dK, dV check against float64.
//
// Values and concurrent accumulation: flash2-bwd adds into dQ, and flash2-bwd-no-d into dK and dV, from
// several blocks of a head at once, with STORE_ADD (atomically, as flash-attn's atomicAdd). The chip
// computes values in the order it executes instructions, and at the default quantum blocks overlap in time;
// STORE_ADD applies a whole tile's update when it executes, so no update is lost (a LOAD, ADD, STORE of the
// tile does lose them, tested below). The blocks' additions arrive in another order than on the single core,
// so the accumulated gradients match its values to f32 rounding, the others bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "isa/assembler.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/reference.h"
#include "tests/common/backward_accumulators.h"
#include "traces/attention_backward.h"

namespace attnsim {
namespace {

using traces::BackwardSchedule;

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

traces::BackwardShape shape(bool causal) {
  traces::BackwardShape s;
  s.n = 256;
  s.d = 64;
  s.heads = 4;
  s.block_q = s.block_k = 64;
  s.causal = causal;
  s.dtype = Dtype::F16;
  return s;
}

struct Outcome {
  TensorBytes read, written;
  std::vector<std::vector<double>> initial, final;  // every tensor's values
  Dtype compute = Dtype::F32;
};

Outcome run_on_core(Machine& machine, const isa::Program& p) {
  machine.load(p, false, false);
  EXPECT_FALSE(machine.chip_loaded());
  Outcome out;
  out.compute = compute_dtype_of(p, machine.dtype());
  for (size_t t = 0; t < p.tensors.size(); ++t)
    out.initial.push_back(machine.sequencer().tensor_values(static_cast<int>(t)));
  machine.run();
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    out.read[p.tensors[t].name] = machine.hbm()->bytes_read_per_tensor[t];
    out.written[p.tensors[t].name] = machine.hbm()->bytes_written_per_tensor[t];
    out.final.push_back(machine.sequencer().tensor_values(static_cast<int>(t)));
  }
  return out;
}

Outcome run_on_chip(Machine& machine, const isa::Program& p, ChipSummary& summary) {
  machine.load(p, false, false);
  EXPECT_TRUE(machine.chip_loaded());
  Outcome out;
  out.compute = compute_dtype_of(p, machine.dtype());
  for (size_t t = 0; t < p.tensors.size(); ++t)
    out.initial.push_back(machine.chip()->tensor_values(static_cast<int>(t)));
  machine.run();
  summary = summarize_chip(*machine.chip(), p, machine.clock_ghz());
  out.read = summary.sm_l2_read;
  out.written = summary.sm_l2_written;
  for (size_t t = 0; t < p.tensors.size(); ++t)
    out.final.push_back(machine.chip()->tensor_values(static_cast<int>(t)));
  return out;
}

size_t cores_used(Machine& machine) {
  size_t used = 0;
  for (auto& core : machine.chip()->cores()) used += core->blocks_run > 0;
  return used;
}

void expect_checks_pass(const isa::Program& p, const Outcome& o, const std::string& where) {
  ASSERT_EQ(p.checks.size(), 3u);
  for (const auto& check : p.checks) {
    const CheckResult r = evaluate_check(p, check, o.initial, o.final, o.compute);
    EXPECT_TRUE(r.passed) << where << ": " << r.description << ": " << r.max_rel_error;
  }
}

struct Case {
  BackwardSchedule schedule;
  bool causal;
};

// Readable parameters in the test names' GetParam() lines.
void PrintTo(const Case& c, std::ostream* os) {
  *os << traces::schedule_name(c.schedule) << (c.causal ? ", causal" : "");
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const char* names[] = {"Flash2", "Flash2NoD", "Naive"};
  return std::string(names[static_cast<int>(info.param.schedule)]) + (info.param.causal ? "Causal" : "Full");
}

const auto kCases =
    ::testing::Values(Case{BackwardSchedule::Flash2, false}, Case{BackwardSchedule::Flash2, true},
                      Case{BackwardSchedule::Flash2NoD, false}, Case{BackwardSchedule::Flash2NoD, true},
                      Case{BackwardSchedule::Naive, false}, Case{BackwardSchedule::Naive, true});

// Runs the case on configs/h100-sm.yaml and on configs/h100.yaml (with `overrides`); checks what holds at any
// quantum and returns both outcomes.
struct Both {
  isa::Program program;
  Outcome single, chip;
};

Both run_both(const Case& c, std::vector<std::string> overrides) {
  // Both machines are built before either runs (SystemC elaborates once per process); the second one's
  // units are renamed (hbm_0, ...), which SystemC reports as a warning that means nothing here.
  sc_core::sc_report_handler::set_actions("object already exists", sc_core::SC_DO_NOTHING);
  Machine core(load_config(kConfigs + "h100-sm.yaml", {}));
  Machine chip(load_config(kConfigs + "h100.yaml", overrides));
  Both out{traces::backward_program(c.schedule, shape(c.causal)), {}, {}};
  const isa::Program& p = out.program;
  out.single = run_on_core(core, p);
  ChipSummary s;
  out.chip = run_on_chip(chip, p, s);

  // What the blocks load and store is the single core's ledger, tensor by tensor.
  EXPECT_EQ(out.chip.read, out.single.read);
  EXPECT_EQ(out.chip.written, out.single.written);
  EXPECT_GT(total(out.chip.read), 0u);
  // The program's kernels, each its whole grid, spread over as many cores as the largest grid has blocks.
  EXPECT_EQ(s.kernels.size(), p.kernels.size());
  int64_t largest = 0;
  for (size_t k = 0; k < std::min(s.kernels.size(), p.kernels.size()); ++k) {
    EXPECT_EQ(s.kernels[k].name, p.kernels[k].name);
    EXPECT_EQ(s.kernels[k].blocks, p.kernels[k].blocks());
    largest = std::max(largest, s.kernels[k].blocks);
  }
  EXPECT_EQ(s.blocks, p.blocks.size());
  EXPECT_GT(cores_used(chip), 1u);
  EXPECT_EQ(cores_used(chip), static_cast<size_t>(std::min<int64_t>(s.cores, largest)));
  expect_checks_pass(p, out.single, "one core");
  // A gradient each block writes alone is the single core's, bit for bit; an accumulated one is the same
  // sum in another order: equal to f32 rounding (a lost tile update would be off by the whole update).
  const auto shared = accumulated_gradients(c.schedule);
  for (const char* name : {"dQ", "dK", "dV"}) {
    const size_t t = static_cast<size_t>(p.find_tensor(name));
    const auto& got = out.chip.final[t];
    const auto& want = out.single.final[t];
    if (std::find(shared.begin(), shared.end(), name) == shared.end()) {
      EXPECT_EQ(got, want) << name;
      continue;
    }
    EXPECT_EQ(got.size(), want.size()) << name;
    if (got.size() != want.size()) continue;
    double largest = 0, off = 0;
    for (size_t e = 0; e < want.size(); ++e) {
      largest = std::max(largest, std::abs(want[e]));
      off = std::max(off, std::abs(got[e] - want[e]));
    }
    EXPECT_GT(largest, 0.0) << name;
    EXPECT_LE(off, 1e-6 * largest) << name;
  }
  return out;
}

// At the default quantum blocks overlap in time: the bytes and the block-owned gradients are the single
// core's, and every schedule's dQ, dK, dV check, the gradients added into by several blocks at once too.
class BackwardOnChip : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardOnChip, MovesTheSingleCoreBytesAndChecks) {
  const Both r = run_both(GetParam(), {});
  expect_checks_pass(r.program, r.chip, "chip");
}

INSTANTIATE_TEST_SUITE_P(Schedules, BackwardOnChip, kCases, case_name);

// ---- STORE_ADD on the chip: many blocks add into one tile at once ----

// `blocks` thread blocks (264: two per core of the H100's 132) each add a 64 x 64 tile of ones into acc: with
// STORE_ADD, or with the LOAD, ADD, STORE the backward schedules used before it.
isa::Program concurrent_adds(int blocks, bool store_add) {
  std::string text =
      ".tensor one[64][64] f32 fill(1)\n.tensor acc[64][64] f32\n.buffer t[64][64] f32\n"
      ".buffer u[64][64] f32\n.kernel add grid(" +
      std::to_string(blocks) + ")\n";
  for (int b = 0; b < blocks; ++b) {
    text += ".block add(" + std::to_string(b) + ")\nLOAD one[0:64, 0:64], t\n";
    if (store_add)
      text += "STORE_ADD t, acc[0:64, 0:64]\n";
    else
      text += "LOAD acc[0:64, 0:64], u\nADD t, u, u\nSTORE u, acc[0:64, 0:64]\n";
  }
  return isa::assemble(text, store_add ? "store_add" : "load_add_store");
}

// Every block's update arrives with STORE_ADD (the blocks' sums are exact in f32); the read-modify-write
// spelled out loses updates: blocks on other cores load acc between one block's load and store. The SM <->
// L2 bytes are the same, tensor by tensor.
TEST(StoreAddOnChip, ConcurrentBlocksLoseNoUpdate) {
  constexpr int kBlocks = 264;
  // Both machines are built before either runs (see run_both).
  sc_core::sc_report_handler::set_actions("object already exists", sc_core::SC_DO_NOTHING);
  Machine atomic_chip(load_config(kConfigs + "h100.yaml", {}));
  Machine spelled_chip(load_config(kConfigs + "h100.yaml", {}));
  const isa::Program atomic_program = concurrent_adds(kBlocks, true);
  const isa::Program spelled_program = concurrent_adds(kBlocks, false);
  ChipSummary atomic_summary, spelled_summary;
  const Outcome atomic = run_on_chip(atomic_chip, atomic_program, atomic_summary);
  EXPECT_GT(cores_used(atomic_chip), 100u);
  const Outcome spelled = run_on_chip(spelled_chip, spelled_program, spelled_summary);
  const auto& sum = atomic.final[static_cast<size_t>(atomic_program.find_tensor("acc"))];
  const auto& lossy = spelled.final[static_cast<size_t>(spelled_program.find_tensor("acc"))];
  ASSERT_EQ(sum.size(), 64u * 64u);
  EXPECT_EQ(sum, std::vector<double>(sum.size(), double{kBlocks}));
  ASSERT_EQ(lossy.size(), sum.size());
  EXPECT_LT(*std::min_element(lossy.begin(), lossy.end()), double{kBlocks});
  EXPECT_EQ(atomic_summary.sm_l2_read, spelled_summary.sm_l2_read);
  EXPECT_EQ(atomic_summary.sm_l2_written, spelled_summary.sm_l2_written);
  EXPECT_EQ(atomic_summary.sm_l2_read.at("acc"), uint64_t{kBlocks} * 64 * 64 * 4);
  EXPECT_EQ(atomic_summary.sm_l2_written.at("acc"), uint64_t{kBlocks} * 64 * 64 * 4);
}

}  // namespace
}  // namespace attnsim
