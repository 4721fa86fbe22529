// The forward schedules of traces/attention_forward.h on the h100 preset: every schedule passes its
// check (causal or not, f32/f16/bf16, ragged shapes, several heads); results do not depend on the block
// size; seed 004's BREAK IT experiments; and each schedule's HBM ledger, per tensor, against closed forms
// derived here from the loop structure in docs/schedules.md (never from numbers the simulator printed).
// SystemC elaborates once per process: each TEST builds at most one Machine and may run several programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/machine.h"
#include "sim/reference.h"
#include "sim/run.h"
#include "traces/attention_forward.h"
#include "traces/stream.h"
#include "traces/tile.h"

namespace attnsim {
namespace {

using traces::ForwardSchedule;
using traces::ForwardShape;

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

ForwardShape shape(int64_t n, int64_t d, int64_t br, int64_t bc, bool causal, Dtype dtype,
                   int64_t heads = 1) {
  ForwardShape s;
  s.n = n;
  s.d = d;
  s.block_q = br;
  s.block_k = bc;
  s.causal = causal;
  s.dtype = dtype;
  s.heads = heads;
  return s;
}

int64_t bytes_of(Dtype t) {
  return t == Dtype::F32 ? 4 : 2;
}

struct Outcome {
  CheckResult check;
  std::vector<double> o;
  uint64_t cycles = 0;
  std::array<uint64_t, isa::kOpcodeCount> opcodes{};
  std::map<std::string, uint64_t> read, written;  // HBM bytes per tensor name
};

// The h100 preset; f32 programs run with machine dtype f32 so their checks use the f32 tolerance.
class Sim {
 public:
  explicit Sim(Dtype machine_dtype = Dtype::F16)
      : machine_(load_config(kConfigs + "h100-sm.yaml", machine_dtype == Dtype::F32
                                                            ? std::vector<std::string>{"dtype=f32"}
                                                            : std::vector<std::string>{})) {}

  Outcome run(const isa::Program& p, bool timing_only = false) {
    machine_.load(p, false, timing_only);
    std::vector<std::vector<double>> initial, final;
    for (size_t t = 0; t < p.tensors.size(); ++t)
      initial.push_back(machine_.sequencer().tensor_values(int(t)));
    machine_.run();
    Outcome r;
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      final.push_back(machine_.sequencer().tensor_values(int(t)));
      r.read[p.tensors[t].name] = machine_.hbm()->bytes_read_per_tensor[t];
      r.written[p.tensors[t].name] = machine_.hbm()->bytes_written_per_tensor[t];
    }
    r.cycles = machine_.sequencer().cycles();
    r.opcodes = machine_.sequencer().per_opcode();
    if (!timing_only) {
      EXPECT_EQ(p.checks.size(), 1u);
      r.check = evaluate_check(p, p.checks.at(0), initial, final, machine_.dtype());
      r.o = final.at(p.find_tensor("O"));
    }
    return r;
  }

 private:
  Machine machine_;
};

// The second program computes what the first does, to the bit, and moves the same HBM bytes.
void expect_same_values_and_bytes(const Outcome& changed, const Outcome& reference) {
  EXPECT_TRUE(changed.check.passed);
  EXPECT_EQ(changed.o, reference.o);
  EXPECT_EQ(changed.read, reference.read);
  EXPECT_EQ(changed.written, reference.written);
}

std::string name_of(ForwardSchedule s) {
  std::string n(traces::schedule_name(s));
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

std::string name_of(Dtype t) {
  return t == Dtype::F32 ? "f32" : t == Dtype::F16 ? "f16" : "bf16";
}

int64_t non_finite(const std::vector<double>& v) {
  int64_t count = 0;
  for (double x : v) count += !std::isfinite(x);
  return count;
}

// ---------------------------------------------------------------------------------------------------
// (1) Every schedule x causal x dtype passes its check. The shape depends on (causal, dtype), so every
// schedule meets all six: ragged n and blocks, d from 16 to 64, 1 to 3 heads, double buffering.

struct CaseShape {
  int64_t n, d, br, bc, heads;
  bool double_buffer;
};

const CaseShape kCaseShapes[] = {
    {96, 64, 32, 32, 1, false},  {130, 32, 48, 40, 2, true}, {200, 16, 64, 24, 1, true},
    {161, 48, 40, 64, 3, false}, {97, 24, 16, 32, 2, false}, {150, 64, 64, 48, 1, true},
};

using CheckParam = std::tuple<ForwardSchedule, bool, Dtype>;
class EverySchedule : public ::testing::TestWithParam<CheckParam> {};

TEST_P(EverySchedule, PassesItsCheck) {
  const auto [schedule, causal, dtype] = GetParam();
  const int dtype_index = dtype == Dtype::F32 ? 0 : dtype == Dtype::F16 ? 1 : 2;
  const CaseShape& c = kCaseShapes[dtype_index * 2 + (causal ? 1 : 0)];
  ForwardShape s = shape(c.n, c.d, c.br, c.bc, causal, dtype, c.heads);
  s.double_buffer = c.double_buffer;
  Sim sim(dtype);
  const Outcome r = sim.run(traces::forward_program(schedule, s));
  EXPECT_TRUE(r.check.passed) << r.check.description << ": max rel error " << r.check.max_rel_error
                              << " > tolerance " << r.check.tolerance;
  EXPECT_EQ(r.o.size(), static_cast<size_t>(c.heads * c.n * c.d));
  EXPECT_EQ(non_finite(r.o), 0);
}

INSTANTIATE_TEST_SUITE_P(All, EverySchedule,
                         ::testing::Combine(::testing::ValuesIn(traces::all_forward_schedules()),
                                            ::testing::Bool(),
                                            ::testing::Values(Dtype::F32, Dtype::F16, Dtype::BF16)),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_causal_" : "_full_") +
                                  name_of(std::get<2>(info.param));
                         });

// ---------------------------------------------------------------------------------------------------
// (2) Results do not depend on the block size: in f32 every tiling meets the f32 tolerance, and the
// tilings agree with each other to a few f32 roundings (only the summation order differs).

class BlockSizes : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(BlockSizes, SameResultForEveryTilingInF32) {
  const std::pair<int64_t, int64_t> tilings[] = {{16, 16}, {40, 24}, {64, 64}, {130, 130}, {32, 96}};
  Sim sim(Dtype::F32);
  std::vector<double> first;
  for (const auto& [br, bc] : tilings) {
    ForwardShape s = shape(130, 32, br, bc, true, Dtype::F32);
    const Outcome r = sim.run(traces::forward_program(GetParam(), s));
    EXPECT_LE(r.check.max_rel_error, 1e-5) << "Br=" << br << " Bc=" << bc;
    if (first.empty()) {
      first = r.o;
      continue;
    }
    double scale = 0, diff = 0;
    for (size_t i = 0; i < first.size(); ++i) {
      scale = std::max(scale, std::abs(first[i]));
      diff = std::max(diff, std::abs(first[i] - r.o[i]));
    }
    EXPECT_LE(diff / scale, 1e-6) << "Br=" << br << " Bc=" << bc;
  }
}

INSTANTIATE_TEST_SUITE_P(All, BlockSizes, ::testing::ValuesIn(traces::all_forward_schedules()),
                         [](const auto& info) { return name_of(info.param); });

// ---------------------------------------------------------------------------------------------------
// (3) BREAK IT (seed 004). Q, K uniform in [-4, 4) at d = 64: scores have a standard deviation of
// sqrt(64) x 16/3 ~ 43, so exp(S) overflows f16 (65504 = e^11.1) and even f32 (e^88.7) at n = 96.

std::vector<ForwardSchedule> online_schedules() {
  std::vector<ForwardSchedule> out;
  for (ForwardSchedule s : traces::all_forward_schedules())
    if (traces::breakable(s)) out.push_back(s);
  return out;
}

ForwardShape break_shape(int64_t block = 32) {
  ForwardShape s = shape(96, 64, block, block, false, Dtype::F16);
  s.qk_range = 4.0;
  return s;
}

class BreakIt : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(BreakIt, NoMaxSubtractionOverflowsInF16AtShortN) {
  Sim sim;
  ForwardShape s = break_shape();
  const Outcome intact = sim.run(traces::forward_program(GetParam(), s));
  EXPECT_TRUE(intact.check.passed) << intact.check.max_rel_error;
  EXPECT_EQ(non_finite(intact.o), 0);
  s.breaks.no_max_subtraction = true;
  const Outcome broken = sim.run(traces::forward_program(GetParam(), s));
  EXPECT_GT(non_finite(broken.o), 0) << "exp(S) of scores near 100 must overflow";
  EXPECT_FALSE(broken.check.passed);
  std::printf("%s no-max-subtraction: %lld of %zu outputs inf/NaN\n",
              std::string(traces::schedule_name(GetParam())).c_str(),
              static_cast<long long>(non_finite(broken.o)), broken.o.size());
}

TEST_P(BreakIt, NoRescalingIsFiniteButWrong) {
  Sim sim;
  ForwardShape s = break_shape();
  s.breaks.no_rescaling = true;
  const Outcome broken = sim.run(traces::forward_program(GetParam(), s));
  EXPECT_EQ(non_finite(broken.o), 0);
  EXPECT_GE(broken.check.max_rel_error, 0.1);
  std::printf("%s no-rescaling: max rel error %.3f\n", std::string(traces::schedule_name(GetParam())).c_str(),
              broken.check.max_rel_error);
}

INSTANTIATE_TEST_SUITE_P(Online, BreakIt, ::testing::ValuesIn(online_schedules()),
                         [](const auto& info) { return name_of(info.param); });

// The intact kernels keep exp(S - m) <= 1 whatever the scale of the scores: the same large inputs pass
// in f16 for every tiling.
class IntactLargeScores : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(IntactLargeScores, WithinToleranceForSeveralBlockSizes) {
  Sim sim;
  for (int64_t block : {16, 32, 40, 96}) {
    ForwardShape s = break_shape(block);
    s.causal = block == 40;  // one causal, ragged tiling too
    const Outcome r = sim.run(traces::forward_program(GetParam(), s));
    EXPECT_TRUE(r.check.passed) << "block " << block << ": " << r.check.max_rel_error;
    EXPECT_EQ(non_finite(r.o), 0) << "block " << block;
  }
}

INSTANTIATE_TEST_SUITE_P(All, IntactLargeScores, ::testing::ValuesIn(traces::all_forward_schedules()),
                         [](const auto& info) { return name_of(info.param); });

TEST(BreakItScope, NaiveSafeRejectsBreaksOthersAcceptThem) {
  ForwardShape s = break_shape();
  s.breaks.no_max_subtraction = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::NaiveSafe, s), std::invalid_argument);
  s.breaks = {.no_rescaling = true};
  EXPECT_THROW(traces::forward_program(ForwardSchedule::NaiveSafe, s), std::invalid_argument);
  for (ForwardSchedule schedule : online_schedules()) EXPECT_NO_THROW(traces::forward_program(schedule, s));
  EXPECT_EQ(online_schedules().size(), traces::all_forward_schedules().size() - 1);
}

// ---------------------------------------------------------------------------------------------------
// (4) HBM ledgers. Every tensor the program declares is compared (a tensor the schedule should not touch
// must show 0 bytes, one it should not declare is absent).

struct Traffic {
  int64_t read = 0, written = 0;
};
using Ledger = std::map<std::string, Traffic>;

int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Query-outer orders (two-pass, flash2): query block [q0, q0 + rows) reads whole key blocks up to the one
// holding its last row (causal), the last one clipped at n; all n key rows otherwise.
int64_t key_rows_per_sweep(const ForwardShape& s) {
  int64_t total = 0;
  for (int64_t q0 = 0; q0 < s.n; q0 += s.block_q) {
    const int64_t rows = std::min(s.block_q, s.n - q0);
    total += s.causal ? std::min(s.n, cdiv(q0 + rows, s.block_k) * s.block_k) : s.n;
  }
  return total;
}

// flash1: key block starting at k0 visits the query blocks from the one holding row k0 to the end
// (causal); every query row otherwise.
int64_t query_rows_flash1(const ForwardShape& s) {
  int64_t total = 0;
  for (int64_t k0 = 0; k0 < s.n; k0 += s.block_k)
    total += s.causal ? s.n - (k0 / s.block_q) * s.block_q : s.n;
  return total;
}

Ledger expected_ledger(ForwardSchedule schedule, const ForwardShape& s) {
  const int64_t e = bytes_of(s.dtype), H = s.heads, n = s.n, d = s.d;
  const int64_t row_blocks = cdiv(n, s.block_q);
  const int64_t nd = H * n * d * e;  // one pass over Q, K, V or O
  Ledger x;
  switch (schedule) {
    case ForwardSchedule::NaiveSafe:
    case ForwardSchedule::NaiveOnline: {
      // S: written once (f32), read by each softmax pass; P written once, read once by PV.
      const int64_t s_reads = schedule == ForwardSchedule::NaiveSafe ? 3 : 2;
      x["Q"] = {nd, 0};
      x["K"] = {row_blocks * nd, 0};
      x["V"] = {row_blocks * nd, 0};
      x["S"] = {s_reads * H * n * n * 4, H * n * n * 4};
      x["P"] = {H * n * n * e, H * n * n * e};
      x["O"] = {0, nd};
      break;
    }
    case ForwardSchedule::TwoPassFused: {
      const int64_t keys = H * key_rows_per_sweep(s) * d * e;
      x["Q"] = {2 * nd, 0};
      x["K"] = {2 * keys, 0};
      x["V"] = {keys, 0};
      if (!s.breaks.no_max_subtraction) x["m"] = {H * n * 4, H * n * 4};
      x["l"] = {H * n * 4, H * n * 4};
      x["O"] = {0, nd};
      break;
    }
    case ForwardSchedule::Flash1: {
      const int64_t rows = H * query_rows_flash1(s);
      x["Q"] = {rows * d * e, 0};
      x["K"] = {nd, 0};
      x["V"] = {nd, 0};
      x["O"] = {rows * d * e, rows * d * e};
      if (!s.breaks.no_max_subtraction) x["m"] = {rows * 4, rows * 4};
      x["l"] = {rows * 4, rows * 4};
      break;
    }
    case ForwardSchedule::Flash2: {
      const int64_t keys = H * key_rows_per_sweep(s) * d * e;
      x["Q"] = {nd, 0};
      x["K"] = {keys, 0};
      x["V"] = {keys, 0};
      x["O"] = {0, nd};
      break;
    }
  }
  return x;
}

void expect_ledger(const Outcome& r, const Ledger& want, const std::string& what) {
  std::map<std::string, bool> names;
  for (const auto& [name, bytes] : r.read) names[name] = true;
  for (const auto& [name, t] : want) names[name] = true;
  for (const auto& [name, unused] : names) {
    const Traffic w = want.count(name) ? want.at(name) : Traffic{};
    EXPECT_EQ(r.read.count(name) ? r.read.at(name) : 0u, static_cast<uint64_t>(w.read))
        << what << " " << name;
    EXPECT_EQ(r.written.count(name) ? r.written.at(name) : 0u, static_cast<uint64_t>(w.written))
        << what << " " << name;
  }
}

// Ragged non-causal, ragged causal with heads, another ragged tiling double buffered in bf16, and an
// even causal tiling in f32.
std::vector<ForwardShape> ledger_shapes() {
  std::vector<ForwardShape> out = {
      shape(200, 32, 64, 48, false, Dtype::F16), shape(200, 32, 64, 48, true, Dtype::F16, 2),
      shape(130, 16, 32, 40, true, Dtype::BF16, 3), shape(128, 16, 32, 32, true, Dtype::F32)};
  out[2].double_buffer = true;
  return out;
}

std::string label(const ForwardShape& s) {
  return "n=" + std::to_string(s.n) + " Br=" + std::to_string(s.block_q) +
         " Bc=" + std::to_string(s.block_k) + " heads=" + std::to_string(s.heads) +
         (s.causal ? " causal" : "");
}

class Ledgers : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(Ledgers, MatchClosedForms) {
  Sim sim;
  for (const ForwardShape& s : ledger_shapes()) {
    const Outcome r = sim.run(traces::forward_program(GetParam(), s), true);
    expect_ledger(r, expected_ledger(GetParam(), s), label(s));
  }
}

INSTANTIATE_TEST_SUITE_P(All, Ledgers, ::testing::ValuesIn(traces::all_forward_schedules()),
                         [](const auto& info) { return name_of(info.param); });

// Without a max, the schedules that keep m in HBM (two-pass, flash1) no longer move it; the rest is as
// intact.
class BrokenLedgers : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(BrokenLedgers, NoMaxSubtractionDropsOnlyM) {
  Sim sim;
  ForwardShape s = ledger_shapes()[1];
  s.breaks.no_max_subtraction = true;
  const Outcome r = sim.run(traces::forward_program(GetParam(), s), true);
  expect_ledger(r, expected_ledger(GetParam(), s), label(s));
  EXPECT_EQ(r.read.count("m"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Online, BrokenLedgers, ::testing::ValuesIn(online_schedules()),
                         [](const auto& info) { return name_of(info.param); });

// Causal triangle with even blocks (Br = Bc = b, n = T b): the fused schedules touch T(T + 1)/2 tiles.
// flash2 reads K once per visible tile, two-pass twice; flash1 reads Q (and reads and writes O) once per
// visible tile; the naive schedules pay for all T^2 tiles.
TEST(CausalTriangle, TileCountsWithEvenBlocks) {
  const int64_t b = 32, T = 4, n = b * T, d = 16, e = 2;
  const int64_t triangle = T * (T + 1) / 2 * b * d * e;  // bytes of b x d blocks over the visible tiles
  Sim sim;
  ForwardShape s = shape(n, d, b, b, true, Dtype::F16);
  const Outcome f2 = sim.run(traces::forward_program(ForwardSchedule::Flash2, s), true);
  EXPECT_EQ(f2.read.at("K"), static_cast<uint64_t>(triangle));
  EXPECT_EQ(f2.read.at("V"), static_cast<uint64_t>(triangle));
  const Outcome two = sim.run(traces::forward_program(ForwardSchedule::TwoPassFused, s), true);
  EXPECT_EQ(two.read.at("K"), static_cast<uint64_t>(2 * triangle));
  const Outcome f1 = sim.run(traces::forward_program(ForwardSchedule::Flash1, s), true);
  EXPECT_EQ(f1.read.at("Q"), static_cast<uint64_t>(triangle));
  EXPECT_EQ(f1.read.at("O"), static_cast<uint64_t>(triangle));
  EXPECT_EQ(f1.written.at("O"), static_cast<uint64_t>(triangle));
  EXPECT_EQ(f1.written.at("l"), static_cast<uint64_t>(T * (T + 1) / 2 * b * 4));
  const Outcome naive = sim.run(traces::forward_program(ForwardSchedule::NaiveSafe, s), true);
  EXPECT_EQ(naive.read.at("K"), static_cast<uint64_t>(T * T * b * d * e));
  EXPECT_EQ(naive.written.at("S"), static_cast<uint64_t>(n * n * 4));
}

// FlashAttention's IO theorem (seed 000: Theta(N^2 d^2 / M)) for Algorithm 1. With SRAM of M elements the
// paper takes B_c = M / 4d and B_r = min(M / 4d, d); there are T_c = N / B_c = 4 N d / M key blocks and
// every one reads all of Q and reads and writes all of O: Q + O traffic = 3 T_c N d = 12 N^2 d^2 / M
// elements exactly (N a multiple of B_c), so doubling M halves it.
TEST(Flash1IoComplexity, QAndOTrafficIs12N2d2OverM) {
  const int64_t n = 512, d = 32, e = 2;
  Sim sim;
  uint64_t previous = 0;
  for (int64_t M : {4096, 8192, 16384}) {
    const int64_t bc = M / (4 * d), br = std::min(bc, d);
    ASSERT_EQ(n % bc, 0);
    const Outcome r = sim.run(
        traces::forward_program(ForwardSchedule::Flash1, shape(n, d, br, bc, false, Dtype::F16)), true);
    const uint64_t q_and_o = r.read.at("Q") + r.read.at("O") + r.written.at("O");
    EXPECT_EQ(q_and_o, static_cast<uint64_t>(12 * n * n * d * d / M * e)) << "M=" << M;
    if (previous != 0) {
      EXPECT_EQ(2 * q_and_o, previous) << "M=" << M;
    }
    previous = q_and_o;
  }
}

// ---------------------------------------------------------------------------------------------------
// Double buffering.

// Prefetching the next block (flash1: the next Q_i, O_i, l_i, m_i and K_j, V_j; two-pass and flash2: the
// next K/V block) overlaps transfers with compute: fewer cycles, the same bytes, the same values.
class DoubleBuffer : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(DoubleBuffer, FewerCyclesSameBytes) {
  Sim sim;
  ForwardShape s = shape(512, 64, 64, 64, true, Dtype::F16);
  const Outcome single = sim.run(traces::forward_program(GetParam(), s));
  s.double_buffer = true;
  const Outcome twice = sim.run(traces::forward_program(GetParam(), s));
  EXPECT_LT(twice.cycles, single.cycles);
  EXPECT_EQ(twice.read, single.read);
  EXPECT_EQ(twice.written, single.written);
  EXPECT_EQ(twice.o, single.o);
  EXPECT_TRUE(twice.check.passed);
}

INSTANTIATE_TEST_SUITE_P(Prefetching, DoubleBuffer,
                         ::testing::Values(ForwardSchedule::TwoPassFused, ForwardSchedule::Flash1,
                                           ForwardSchedule::Flash2),
                         [](const auto& info) { return name_of(info.param); });

// S, P, O_i and the row statistics in the tile register file (as GPU kernels keep them): the same values and
// HBM bytes, O_i staged through Q_i's SRAM for its store, and far fewer SRAM operand bytes, so a core whose
// SRAM port was the bottleneck (every S and P element read and written there) runs faster. two-pass keeps
// m_i and l_i in registers too, and passes them through SRAM, where the DMA reaches them, once per block
// (staged for the store, read after the load); flash1 keeps what each of its steps loads and stores in
// SRAM.
class AccumulatorsInRegisters
    : public ::testing::TestWithParam<std::pair<ForwardSchedule, std::vector<std::string>>> {};

TEST_P(AccumulatorsInRegisters, SameValuesAndBytesLessSramTraffic) {
  const auto& [schedule, expected_in_regs] = GetParam();
  Sim sim;
  ForwardShape s = shape(256, 64, 64, 64, true, Dtype::F16);
  const Outcome in_sram = sim.run(traces::forward_program(schedule, s));
  s.accumulators_in_registers = true;
  const isa::Program program = traces::forward_program(schedule, s);
  std::vector<std::string> in_regs;
  for (const auto& b : program.buffers)
    if (b.space == isa::BufferDecl::Space::Regs) in_regs.push_back(b.name);
  EXPECT_EQ(in_regs, expected_in_regs);
  const Outcome in_registers = sim.run(program);
  EXPECT_TRUE(in_registers.check.passed);
  EXPECT_EQ(in_registers.o, in_sram.o);
  EXPECT_EQ(in_registers.read, in_sram.read);
  EXPECT_EQ(in_registers.written, in_sram.written);
  EXPECT_LT(in_registers.cycles, in_sram.cycles);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, AccumulatorsInRegisters,
    ::testing::Values(
        std::pair{ForwardSchedule::Flash2,
                  std::vector<std::string>{"S", "P", "m", "m_tile", "m_new", "alpha", "l", "l_tile", "Oi"}},
        std::pair{ForwardSchedule::TwoPassFused,
                  std::vector<std::string>{"Sij", "Pij", "m_tile", "m_new", "alpha", "l_tile", "Oi",
                                           "mi_regs", "li_regs"}},
        // flash1 loads and stores O_i, l_i, m_i every step: those stay in SRAM (O_i in the storage dtype,
        // as its kernel lands it), and O_acc takes the update.
        std::pair{ForwardSchedule::Flash1,
                  std::vector<std::string>{"Sij", "Pij", "m_tile", "l_tile", "alpha", "scale", "O_acc"}}),
    [](const auto& info) { return name_of(info.param.first); });

// Q_i's fragments in registers (ForwardShape::q_in_registers, as the project's flash2 and two-pass kernels
// load them once per block): a MOV of Q_i's landed tile into Q_regs before the first product of each block,
// which every product then reads. The same values and HBM bytes; no other schedule or option takes it.
class QInRegisters : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(QInRegisters, SameValuesAndBytesTheProductsReadRegisters) {
  Sim sim;
  ForwardShape s = shape(256, 64, 64, 64, true, Dtype::F16);
  s.accumulators_in_registers = true;
  const Outcome from_sram = sim.run(traces::forward_program(GetParam(), s));
  s.q_in_registers = true;
  const isa::Program program = traces::forward_program(GetParam(), s);
  const Outcome from_registers = sim.run(program);
  expect_same_values_and_bytes(from_registers, from_sram);
  // One MOV per block (4 query blocks, two kernels for two-pass).
  const int kernels = GetParam() == ForwardSchedule::TwoPassFused ? 2 : 1;
  EXPECT_EQ(from_registers.opcodes[static_cast<size_t>(isa::Opcode::Mov)],
            from_sram.opcodes[static_cast<size_t>(isa::Opcode::Mov)] + 4u * kernels);
  s.ping_pong = GetParam() == ForwardSchedule::Flash2;
  if (s.ping_pong) {
    EXPECT_THROW(traces::forward_program(GetParam(), s), std::invalid_argument);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, QInRegisters,
                         ::testing::Values(ForwardSchedule::Flash2, ForwardSchedule::TwoPassFused),
                         [](const auto& info) { return name_of(info.param); });

TEST(QInRegistersElsewhere, IsRejected) {
  ForwardShape s = shape(256, 64, 64, 64, true, Dtype::F16);
  s.q_in_registers = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);  // no registers
  s.accumulators_in_registers = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash1, s), std::invalid_argument);
}

// flash1 as its tensor-core kernel runs (and as validate simulates it): the next step's Q_i, O_i, l_i, m_i
// prefetched, S, P and O in registers. The same values and HBM bytes as the plain program.
TEST(AccumulatorsInRegistersFlash1, DoubleBufferedToo) {
  Sim sim;
  ForwardShape s = shape(256, 64, 64, 32, true, Dtype::F16);
  const Outcome plain = sim.run(traces::forward_program(ForwardSchedule::Flash1, s));
  s.double_buffer = true;
  s.accumulators_in_registers = true;
  expect_same_values_and_bytes(sim.run(traces::forward_program(ForwardSchedule::Flash1, s)), plain);
}

// flash2's ping-pong (ForwardShape::ping_pong): each query block's halves in instruction groups of their
// own. Every row's arithmetic is the one of the whole tile, so the same output to the bit and the same
// HBM bytes. Causal with B_c < B_r, the first half skips the key block above its rows; ragged last blocks
// (N = 300) too.
struct PingPongCase {
  bool double_buffer, registers, causal;
  int64_t n, block_q, block_k;
};

class PingPong : public ::testing::TestWithParam<PingPongCase> {};

TEST_P(PingPong, SameValuesAndBytes) {
  const PingPongCase& c = GetParam();
  Sim sim;
  ForwardShape s = shape(c.n, 64, c.block_q, c.block_k, c.causal, Dtype::F16);
  s.double_buffer = c.double_buffer;
  s.accumulators_in_registers = c.registers;
  const Outcome whole = sim.run(traces::forward_program(ForwardSchedule::Flash2, s));
  s.ping_pong = true;
  expect_same_values_and_bytes(sim.run(traces::forward_program(ForwardSchedule::Flash2, s)), whole);
}

// Where memory is not the bound (the single-SM config's HBM share made 10x wider), one half's softmax runs
// on the VPU while the other's products run on the MXU: double buffered, with the accumulators in
// registers, a 128 x 128 tile takes well under the cycles of the whole tile's one stream.
TEST(PingPong, OverlapsTheHalvesSoftmaxWithTheProducts) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {"hbm.peak_bandwidth_gbps=253.8"}));
  ForwardShape s = shape(1024, 64, 128, 128, false, Dtype::F16);
  s.double_buffer = true;
  s.accumulators_in_registers = true;
  auto cycles = [&](bool ping_pong) {
    s.ping_pong = ping_pong;
    const isa::Program program = traces::forward_program(ForwardSchedule::Flash2, s);
    machine.load(program, false, true);
    machine.run();
    return machine.sequencer().cycles();
  };
  const uint64_t whole = cycles(false);
  const uint64_t halves = cycles(true);
  EXPECT_LT(static_cast<double>(halves), 0.8 * static_cast<double>(whole)) << halves << " vs " << whole;
}

// Each instruction's start and completion, by its index in the program.
class StepTimes : public StepObserver {
 public:
  void after_step(size_t index, uint64_t start, uint64_t done) override {
    if (times.size() <= index) times.resize(index + 1);
    times[index] = {start, done};
  }
  std::vector<std::pair<uint64_t, uint64_t>> times;
};

// With sum_after_product flash2 computes what P V_j needs first (the new max, O rescaled, P;
// FlashAttention-2's softmax_rescale_o order) and the row sum after the product, as the kernel's compiled
// code interleaves the sum's adds with the product's mma instructions: every key block's P V_j starts
// before its row sum ends, the two running on the MXU and the VPU at once. (Without it the product waits
// for the sum and for the rescale after it: this test fails on that program.)
TEST(Flash2Order, TheRowSumRunsBesideTheProductOfItsKeyBlock) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  ForwardShape s = shape(512, 64, 128, 64, false, Dtype::F16);
  s.accumulators_in_registers = true;
  s.sum_after_product = true;
  const isa::Program program = traces::forward_program(ForwardSchedule::Flash2, s);
  StepTimes steps;
  machine.load(program, false, true);
  machine.sequencer().set_observer(&steps);
  machine.run();
  const int p_buffer = program.find_buffer("P");
  ASSERT_GE(p_buffer, 0);
  auto reads = [&](size_t k, isa::Opcode op, int buffer) {
    const isa::Instruction& inst = program.instructions[k];
    if (inst.op != op) return false;
    const isa::TileRef& t = program.tiles[static_cast<size_t>(inst.operand(0).tensor)];
    return t.is_buffer && t.index == buffer;
  };
  int checked = 0;
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    if (!reads(i, isa::Opcode::Mac, p_buffer) && !reads(i, isa::Opcode::MacZ, p_buffer)) continue;
    size_t sum = SIZE_MAX;  // the row sum of the same P: the nearest one in the program
    auto distance = [&](size_t k) { return k > i ? k - i : i - k; };
    for (size_t k = 0; k < program.instructions.size(); ++k)
      if (reads(k, isa::Opcode::RowSum, p_buffer) && (sum == SIZE_MAX || distance(k) < distance(sum)))
        sum = k;
    ASSERT_NE(sum, SIZE_MAX) << "product at instruction " << i;
    EXPECT_LT(steps.times[i].first, steps.times[sum].second) << "product at instruction " << i;
    ++checked;
  }
  EXPECT_EQ(checked, (512 / 128) * (512 / 64));  // one P V_j per query block and key block
}

INSTANTIATE_TEST_SUITE_P(Flash2, PingPong,
                         ::testing::Values(PingPongCase{true, true, false, 256, 64, 64},
                                           PingPongCase{true, true, true, 256, 128, 64},
                                           PingPongCase{false, false, true, 300, 64, 32},
                                           PingPongCase{true, false, false, 300, 64, 128}),
                         [](const auto& info) {
                           const PingPongCase& c = info.param;
                           return std::string(c.double_buffer ? "Double" : "Single") +
                                  (c.registers ? "Registers" : "Sram") + (c.causal ? "Causal" : "Full") +
                                  std::to_string(c.n) + "_" + std::to_string(c.block_q) + "x" +
                                  std::to_string(c.block_k);
                         });

// The memory-efficient kernel hands P to its second product through shared memory (CUTLASS's
// accumToSmem): with its loads and the accumulators in registers, P alone of flash2's buffers stays in SRAM.
TEST(AccumulatorsInRegistersMemoryEfficient, PStaysInSram) {
  ForwardShape s = shape(256, 64, 64, 64, false, Dtype::F16);
  s.as_mem_efficient = true;
  s.accumulators_in_registers = true;
  const isa::Program program = traces::forward_program(ForwardSchedule::Flash2, s);
  std::vector<std::string> in_sram;
  for (const auto& b : program.buffers)
    if (b.space != isa::BufferDecl::Space::Regs) in_sram.push_back(b.name);
  EXPECT_EQ(in_sram, (std::vector<std::string>{"Qi", "Kj", "Vj", "P"}));
}

// PyTorch's memory-efficient forward allocates O (batch, n, heads, d) (heads_inner_outputs: two batches of
// two heads here): the same O element for element once read back as [heads][n][d], a different memory
// order, and the same bytes per tensor.
TEST(HeadsInnerOutputs, MemoryEfficientForwardKeepsValuesAndBytes) {
  ForwardShape s = shape(128, 32, 32, 32, true, Dtype::F16, 4);
  s.as_mem_efficient = true;
  Sim sim;
  const Outcome plain = sim.run(traces::forward_program(ForwardSchedule::Flash2, s));
  s.heads_inner_outputs = 2;
  const isa::Program p = traces::forward_program(ForwardSchedule::Flash2, s);
  const isa::TensorDecl& o = p.tensors[static_cast<size_t>(p.find_tensor("O"))];
  EXPECT_EQ(o.heads_inner, 2);
  const Outcome inner = sim.run(p);
  EXPECT_TRUE(inner.check.passed) << inner.check.max_rel_error;
  EXPECT_NE(inner.o, plain.o);
  EXPECT_EQ(isa::logical_order(o, inner.o), plain.o);
  EXPECT_EQ(inner.read, plain.read);
  EXPECT_EQ(inner.written, plain.written);
  s.heads_inner_outputs = 3;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
}

// The same values and bytes in either order; only flash2's own loop takes it.
TEST(Flash2Order, TheSameValuesAndBytesOnlyForFlash2) {
  Sim sim;
  ForwardShape s = shape(300, 64, 64, 32, true, Dtype::F16);
  const Outcome usual = sim.run(traces::forward_program(ForwardSchedule::Flash2, s));
  s.sum_after_product = true;
  expect_same_values_and_bytes(sim.run(traces::forward_program(ForwardSchedule::Flash2, s)), usual);
  EXPECT_THROW(traces::forward_program(ForwardSchedule::TwoPassFused, s), std::invalid_argument);
  s.as_mem_efficient = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
  s.as_mem_efficient = false;
  s.ping_pong = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
}

TEST(PingPong, OnlyFlash2WithoutTheMemoryEfficientLoads) {
  ForwardShape s = shape(256, 64, 64, 64, false, Dtype::F16);
  s.ping_pong = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash1, s), std::invalid_argument);
  s.as_mem_efficient = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
}

// Register spills (PyTorch's FlashAttention-2 forward at 255 registers a thread): bytes stored after every
// key block a query block visits and at its end, into rows of `local` that blocks share slot by slot
// (block b: row b mod spill_rows). n = 256 in 64-row blocks, two heads: 8 blocks, 4 key blocks each
// without the mask, 1 + 2 + 3 + 4 per head with it. Values are untouched.
class Spills : public ::testing::TestWithParam<bool> {};

TEST_P(Spills, AfterEveryKeyBlockAndAtTheEnd) {
  Sim sim;
  ForwardShape s = shape(256, 64, 64, 64, GetParam(), Dtype::F16, 2);
  s.spill_bytes_per_key_block = 512;
  s.spill_bytes_per_block = 1024;
  s.spill_rows = 3;
  const isa::Program program = traces::forward_program(ForwardSchedule::Flash2, s);
  const auto local = std::find_if(program.tensors.begin(), program.tensors.end(),
                                  [](const isa::TensorDecl& t) { return t.name == "local"; });
  ASSERT_NE(local, program.tensors.end());
  EXPECT_EQ(local->shape.front(), 3);        // one row per slot
  EXPECT_EQ(local->shape.back(), 1024 / 4);  // the larger of the two spills, in f32 words
  const uint64_t key_blocks = GetParam() ? 2 * (1 + 2 + 3 + 4) : 2 * 4 * 4;
  const Outcome r = sim.run(program);
  EXPECT_TRUE(r.check.passed) << r.check.max_rel_error;
  EXPECT_EQ(r.written.at("local"), key_blocks * 512 + 8 * 1024);
  EXPECT_EQ(r.written.at("O"), 2u * 256 * 64 * 2);
}

INSTANTIATE_TEST_SUITE_P(Mask, Spills, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

TEST(Spills, RejectsWhatTheyCannotStore) {
  ForwardShape s = shape(256, 64, 64, 64, false, Dtype::F16);
  s.spill_bytes_per_key_block = 6;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
  s.spill_bytes_per_key_block = 512;
  s.spill_rows = -1;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
  s.spill_rows = 0;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash1, s), std::invalid_argument);
  s.ping_pong = true;
  EXPECT_THROW(traces::forward_program(ForwardSchedule::Flash2, s), std::invalid_argument);
  s.ping_pong = false;
  EXPECT_NO_THROW(traces::forward_program(ForwardSchedule::Flash2, s));
}

// Streamed in chunks of 7 instructions (generated on a worker thread, as `attnsim` runs long programs),
// every schedule runs exactly as in memory: operands stay valid across chunk hand-offs.
class Streaming : public ::testing::TestWithParam<ForwardSchedule> {};

TEST_P(Streaming, SameRunAsInMemory) {
  Sim sim(Dtype::F32);
  ForwardShape s = shape(150, 16, 32, 48, true, Dtype::F32, 2);
  s.double_buffer = true;
  const Outcome in_memory = sim.run(traces::forward_program(GetParam(), s));
  const isa::Program streamed =
      traces::stream_program([&] { return traces::forward_program(GetParam(), s); }, 7);
  ASSERT_TRUE(streamed.instructions.empty());
  const Outcome r = sim.run(streamed);
  EXPECT_EQ(r.cycles, in_memory.cycles);
  EXPECT_EQ(r.opcodes, in_memory.opcodes);
  EXPECT_EQ(r.read, in_memory.read);
  EXPECT_EQ(r.written, in_memory.written);
  EXPECT_EQ(r.o, in_memory.o);
  EXPECT_TRUE(r.check.passed) << r.check.max_rel_error;
}

INSTANTIATE_TEST_SUITE_P(All, Streaming, ::testing::ValuesIn(traces::all_forward_schedules()),
                         [](const auto& info) { return name_of(info.param); });

TEST(ScheduleNames, RoundTrip) {
  const char* names[] = {"naive-safe", "naive-online", "two-pass", "flash1", "flash2"};
  ASSERT_EQ(traces::all_forward_schedules().size(), std::size(names));
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(traces::schedule_name(traces::all_forward_schedules()[i]), names[i]);
    EXPECT_EQ(traces::find_forward_schedule(names[i]), traces::all_forward_schedules()[i]);
  }
  EXPECT_FALSE(traces::find_forward_schedule("flash3").has_value());
}

}  // namespace
}  // namespace attnsim
