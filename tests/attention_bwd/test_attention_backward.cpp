// The backward attention schedules (traces/attention_backward.h): dQ, dK, dV against the float64
// references, the references against finite differences, and each schedule's HBM ledger, per tensor,
// against closed forms derived here from the schedule's description (not from its generator loops).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <systemc>
#include <tuple>
#include <vector>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/reference.h"
#include "sim/run.h"
#include "tests/common/backward_accumulators.h"
#include "traces/attention_backward.h"
#include "traces/stream.h"

namespace attnsim {

// Readable parameters in test names' GetParam() lines.
namespace traces {
void PrintTo(BackwardSchedule s, std::ostream* os) {
  *os << schedule_name(s);
}
}  // namespace traces
void PrintTo(Dtype t, std::ostream* os) {
  *os << dtype_name(t);
}

namespace {

using traces::BackwardSchedule;
using traces::BackwardShape;

const std::string kConfigs = std::string(ATTNSIM_SOURCE_DIR) + "/configs/";

RunOptions on(const std::string& config, std::vector<std::string> overrides = {}) {
  RunOptions o;
  o.config_path = kConfigs + config + ".yaml";
  o.overrides = std::move(overrides);
  return o;
}

BackwardShape shape(int64_t n, int64_t d, int64_t br, int64_t bc, bool causal, Dtype dtype,
                    int64_t heads = 1) {
  BackwardShape s;
  s.n = n;
  s.d = d;
  s.block_q = br;
  s.block_k = bc;
  s.causal = causal;
  s.dtype = dtype;
  s.heads = heads;
  return s;
}

const char* name_of(BackwardSchedule s) {
  switch (s) {
    case BackwardSchedule::Flash2:
      return "Flash2";
    case BackwardSchedule::Flash2NoD:
      return "Flash2NoD";
    case BackwardSchedule::Naive:
      return "Naive";
  }
  return "?";
}

const auto kSchedules =
    ::testing::Values(BackwardSchedule::Flash2, BackwardSchedule::Flash2NoD, BackwardSchedule::Naive);

TEST(ScheduleName, NamesForTheCli) {
  EXPECT_EQ(traces::schedule_name(BackwardSchedule::Flash2), "flash2-bwd");
  EXPECT_EQ(traces::schedule_name(BackwardSchedule::Flash2NoD), "flash2-bwd-no-d");
  EXPECT_EQ(traces::schedule_name(BackwardSchedule::Naive), "naive-bwd");
}

// ---- The float64 references against central differences of L = sum(dO * attention(Q, K, V)) ----

// Forward attention of one head, written independently of sim/reference.cpp.
std::vector<double> forward(const std::vector<double>& q, const std::vector<double>& k,
                            const std::vector<double>& v, int64_t n, int64_t d, bool causal) {
  std::vector<double> o(static_cast<size_t>(n * d), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> w;
    for (int64_t j = 0; j < (causal ? i + 1 : n); ++j) {
      double s = 0;
      for (int64_t c = 0; c < d; ++c) s += q[i * d + c] * k[j * d + c];
      w.push_back(s);
    }
    double total = 0;
    for (double& x : w) total += (x = std::exp(x));
    for (size_t j = 0; j < w.size(); ++j)
      for (int64_t c = 0; c < d; ++c) o[i * d + c] += w[j] / total * v[j * d + c];
  }
  return o;
}

class ReferenceGradients : public ::testing::TestWithParam<bool> {};

TEST_P(ReferenceGradients, MatchFiniteDifferences) {
  const bool causal = GetParam();
  const int64_t heads = 2, n = 5, d = 3;  // seed 001's worked example is n = 5, d = 3
  isa::Program p;
  p.file = "fd";
  std::vector<std::vector<double>> values;
  for (const char* name : {"Q", "K", "V", "dO", "dQ", "dK", "dV"}) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = {heads, n, d};
    t.dtype = Dtype::F64;
    p.add_tensor(t);
    std::vector<double> x(static_cast<size_t>(heads * n * d));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.7 * static_cast<double>(i + 7 * values.size()));
    values.push_back(x);
  }
  // Numeric gradient of sum(dO * O) with respect to input `which` (0 Q, 1 K, 2 V), head by head.
  auto numeric = [&](int which) {
    std::vector<double> grad(values[which].size());
    const double h = 1e-6;
    for (int64_t head = 0; head < heads; ++head) {
      auto part = [&](int t) {
        const auto begin = values[t].begin() + head * n * d;
        return std::vector<double>(begin, begin + n * d);
      };
      std::vector<double> in[3] = {part(0), part(1), part(2)};
      const std::vector<double> dout = part(3);
      for (int64_t e = 0; e < n * d; ++e) {
        auto loss = [&](double delta) {
          std::vector<double> x[3] = {in[0], in[1], in[2]};
          x[which][e] += delta;
          const auto o = forward(x[0], x[1], x[2], n, d, causal);
          double sum = 0;
          for (int64_t i = 0; i < n * d; ++i) sum += dout[i] * o[i];
          return sum;
        };
        grad[head * n * d + e] = (loss(h) - loss(-h)) / (2 * h);
      }
    }
    return grad;
  };
  std::vector<std::vector<double>> final = values;
  final[4] = numeric(0);
  final[5] = numeric(1);
  final[6] = numeric(2);
  const std::string prefix = causal ? "attention_causal_grad_" : "attention_grad_";
  for (auto [target, which] : {std::pair{4, "q"}, std::pair{5, "k"}, std::pair{6, "v"}}) {
    isa::Check c;
    c.function = prefix + which;
    c.target = target;
    c.args = {0, 1, 2, 3};
    const CheckResult r = evaluate_check(p, c, values, final, Dtype::F64);
    EXPECT_LT(r.max_rel_error, 1e-8) << c.function;
    // The same numbers checked as the wrong gradient must fail, or this test proves nothing.
    c.target = target == 4 ? 5 : 4;
    EXPECT_GT(evaluate_check(p, c, values, final, Dtype::F64).max_rel_error, 0.1) << c.function;
  }
}

INSTANTIATE_TEST_SUITE_P(Mask, ReferenceGradients, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

TEST(ReferenceGradients, RejectsMismatchedShapes) {
  isa::Program p;
  for (const char* name : {"Q", "K", "V", "dO", "dQ"}) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = {4, std::string(name) == "dO" ? 3 : 2};  // dO must match V's columns (2)
    p.add_tensor(t);
  }
  isa::Check c;
  c.function = "attention_grad_q";
  c.target = 4;
  c.args = {0, 1, 2, 3};
  std::vector<std::vector<double>> v = {std::vector<double>(8), std::vector<double>(8),
                                        std::vector<double>(8), std::vector<double>(12),
                                        std::vector<double>(8)};
  EXPECT_THROW(evaluate_check(p, c, v, v, Dtype::F64), InputError);
}

// ---- Values: every schedule passes its three checks ----

using ValueCase = std::tuple<BackwardSchedule, bool, std::tuple<int64_t, int64_t, int64_t, int64_t>>;

std::string value_case_name(const ::testing::TestParamInfo<ValueCase>& info) {
  const auto& [schedule, causal, dims] = info.param;
  const auto& [n, d, br, bc] = dims;
  return std::string(name_of(schedule)) + (causal ? "Causal" : "Full") + "_n" + std::to_string(n) + "_d" +
         std::to_string(d) + "_Br" + std::to_string(br) + "_Bc" + std::to_string(bc);
}

class BackwardF32 : public ::testing::TestWithParam<ValueCase> {};

// In f32 every schedule matches float64 to the f32 tolerance, for even, ragged and oversized blocks.
TEST_P(BackwardF32, MatchesReference) {
  const auto& [schedule, causal, dims] = GetParam();
  const auto& [n, d, br, bc] = dims;
  RunResult r = run_program(traces::backward_program(schedule, shape(n, d, br, bc, causal, Dtype::F32)),
                            on("h100-sm", {"dtype=f32"}));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
    EXPECT_LE(c.max_rel_error, tolerance_for(Dtype::F32)) << c.description;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BackwardF32,
    ::testing::Combine(kSchedules, ::testing::Bool(),
                       ::testing::Values(std::tuple{64, 32, 32, 32},     // even
                                         std::tuple{100, 16, 32, 48},    // ragged n, Br != Bc
                                         std::tuple{160, 64, 64, 40},    // ragged key blocks
                                         std::tuple{72, 16, 128, 16})),  // Br > n
    value_case_name);

class BackwardLowPrecision : public ::testing::TestWithParam<std::tuple<BackwardSchedule, bool, Dtype>> {};

// bf16/f16 storage and MXU inputs, f32 statistics and accumulators: within the dtype's tolerance.
TEST_P(BackwardLowPrecision, WithinTolerance) {
  const auto& [schedule, causal, dtype] = GetParam();
  RunResult r = run_program(traces::backward_program(schedule, shape(144, 32, 64, 48, causal, dtype)),
                            on("h100-sm", {"dtype=" + std::string(dtype_name(dtype))}));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error << " > " << c.tolerance;
    EXPECT_EQ(c.tolerance, tolerance_for(dtype));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BackwardLowPrecision,
                         ::testing::Combine(kSchedules, ::testing::Bool(),
                                            ::testing::Values(Dtype::BF16, Dtype::F16)),
                         [](const auto& info) {
                           return std::string(name_of(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "Causal" : "Full") + "_" +
                                  std::string(dtype_name(std::get<2>(info.param)));
                         });

// ---- The checks can fail: break the forward's saved state ----

RunResult run_with_corrupted(BackwardSchedule schedule, const std::string& tensor, double shift,
                             double scale) {
  isa::Program p = traces::backward_program(schedule, shape(64, 16, 32, 32, false, Dtype::F32));
  auto& init = p.tensors[p.find_tensor(tensor)].init;
  EXPECT_EQ(init.kind, isa::TensorInit::Kind::Values);
  for (double& x : init.values) x = x * scale + shift;
  return run_program(p, on("h100-sm", {"dtype=f32"}));
}

// D_i = rowsum(dO_i * O_i) enters dS only: with O zeroed, dQ and dK go wrong and dV (= P^T dO) stays right.
TEST(BrokenForwardState, ZeroOBreaksDqAndDkOfFlash2) {
  RunResult r = run_with_corrupted(BackwardSchedule::Flash2, "O", 0.0, 0.0);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_FALSE(r.checks[0].passed) << r.checks[0].description;
  EXPECT_FALSE(r.checks[1].passed) << r.checks[1].description;
  EXPECT_TRUE(r.checks[2].passed) << r.checks[2].description;
}

// Without the D trick, O is never read: zeroing it changes nothing.
TEST(BrokenForwardState, ZeroODoesNotMatterWithoutD) {
  RunResult r = run_with_corrupted(BackwardSchedule::Flash2NoD, "O", 0.0, 0.0);
  EXPECT_TRUE(r.checks_passed());
  EXPECT_EQ(r.hbm_bytes_read.at("O"), 0u);
}

// A wrong logsumexp scales every P by e^-1: all three gradients go wrong.
TEST(BrokenForwardState, ShiftedLBreaksEveryGradient) {
  RunResult r = run_with_corrupted(BackwardSchedule::Flash2, "L", 1.0, 1.0);
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_FALSE(c.passed) << c.description;
}

// ---- Ledgers ----

using Bytes = std::map<std::string, uint64_t>;
struct Ledger {
  Bytes read, written;
  uint64_t matmuls = 0, exps = 0, masks = 0;
};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Closed forms for one head. e: storage bytes, f: 4 (f32 statistics and accumulators).
//   R: query rows that meet a key block, summed over key blocks. The query block holding row k0 is the first
//      one whose last row reaches k0, so key block [k0, ...) sees n - floor(k0 / Br) * Br rows; n if not
//      causal.
//   C: key rows that meet a query block, summed over query blocks: query block with last row l sees the key
//      blocks up to the one holding l, i.e. min(n, (floor(l / Bc) + 1) * Bc) rows; n if not causal.
//   T: visible tiles; M: tiles that cross the diagonal (key block [k0, k1] and query block q0 < k1).
Ledger expected(BackwardSchedule schedule, const BackwardShape& s) {
  const int64_t n = s.n, d = s.d, br = s.block_q, bc = s.block_k, e = dtype_bytes(s.dtype), f = 4;
  const int64_t tr = ceil_div(n, br), tc = ceil_div(n, bc);
  int64_t r_rows = 0, c_rows = 0, tiles = 0, masked = 0, naive_masked = 0;
  for (int64_t j = 0; j < tc; ++j) {
    const int64_t k0 = j * bc, k1 = std::min(n, k0 + bc) - 1;
    r_rows += s.causal ? n - k0 / br * br : n;
    tiles += s.causal ? tr - k0 / br : tr;
    masked += s.causal ? ceil_div(k1, br) - k0 / br : 0;
    naive_masked += s.causal ? ceil_div(k1, br) : 0;
  }
  for (int64_t i = 0; i < tr; ++i) {
    const int64_t last = std::min(n, (i + 1) * br) - 1;
    c_rows += s.causal ? std::min(n, (last / bc + 1) * bc) : n;
  }
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  Ledger l;
  switch (schedule) {
    case BackwardSchedule::Flash2:
      // D pass reads O and dO once; per (K/V block, visible query block): Q, dO, L, D, dQ in, dQ out.
      l.read = {{"Q", u(r_rows * d * e)},
                {"K", u(n * d * e)},
                {"V", u(n * d * e)},
                {"dO", u((n + r_rows) * d * e)},
                {"O", u(n * d * e)},
                {"L", u(r_rows * f)},
                {"D", u(r_rows * f)},
                {"dQ", u(r_rows * d * f)},
                {"dK", 0},
                {"dV", 0}};
      l.written = {{"Q", 0},
                   {"K", 0},
                   {"V", 0},
                   {"dO", 0},
                   {"O", 0},
                   {"L", 0},
                   {"D", u(n * f)},
                   {"dQ", u(r_rows * d * f)},
                   {"dK", u(n * d * e)},
                   {"dV", u(n * d * e)}};
      l.matmuls = u(5 * tiles);  // S, dV, dP, dK, dQ
      l.exps = u(tiles);
      l.masks = u(masked);
      break;
    case BackwardSchedule::Flash2NoD:
      // Per query block: Q, dO, L once; K, V in both sweeps; dK, dV (f32) in and out in the second.
      l.read = {{"Q", u(n * d * e)},
                {"K", u(2 * c_rows * d * e)},
                {"V", u(2 * c_rows * d * e)},
                {"dO", u(n * d * e)},
                {"O", 0},
                {"L", u(n * f)},
                {"dQ", 0},
                {"dK", u(c_rows * d * f)},
                {"dV", u(c_rows * d * f)}};
      l.written = {{"Q", 0},
                   {"K", 0},
                   {"V", 0},
                   {"dO", 0},
                   {"O", 0},
                   {"L", 0},
                   {"dQ", u(n * d * e)},
                   {"dK", u(c_rows * d * f)},
                   {"dV", u(c_rows * d * f)}};
      l.matmuls = u(7 * tiles);  // sweep 1: S, dP; sweep 2: S, dP, dV, dK, dQ
      l.exps = u(2 * tiles);
      l.masks = u(2 * masked);
      break;
    case BackwardSchedule::Naive:
      // Every tile, causal or not. P: read twice for D and dS, once for dV; dP: twice; dS: by dQ and dK.
      l.read = {{"Q", u((1 + tc) * n * d * e)},
                {"K", u(2 * tr * n * d * e)},
                {"V", u(tr * n * d * e)},
                {"dO", u((1 + tc) * n * d * e)},
                {"O", 0},
                {"L", u(n * f)},
                {"P", u(3 * n * n * e)},
                {"dP", u(2 * n * n * e)},
                {"dS", u(2 * n * n * e)},
                {"dQ", 0},
                {"dK", 0},
                {"dV", 0}};
      l.written = {{"Q", 0},
                   {"K", 0},
                   {"V", 0},
                   {"dO", 0},
                   {"O", 0},
                   {"L", 0},
                   {"P", u(n * n * e)},
                   {"dP", u(n * n * e)},
                   {"dS", u(n * n * e)},
                   {"dQ", u(n * d * e)},
                   {"dK", u(n * d * e)},
                   {"dV", u(n * d * e)}};
      l.matmuls = u(5 * tr * tc);  // S, dP, and one per tile in each of the three GEMMs
      l.exps = u(tr * tc);
      l.masks = u(naive_masked);
      break;
  }
  return l;
}

Bytes times(Bytes b, int64_t k) {
  for (auto& [name, bytes] : b) bytes *= static_cast<uint64_t>(k);
  return b;
}

uint64_t count(const RunResult& r, const std::string& op) {
  auto it = r.per_opcode.find(op);
  return it == r.per_opcode.end() ? 0 : it->second;
}

using LedgerCase =
    std::tuple<BackwardSchedule, bool, std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>;

std::string ledger_case_name(const ::testing::TestParamInfo<LedgerCase>& info) {
  const auto& [schedule, causal, dims] = info.param;
  const auto& [n, d, br, bc, heads] = dims;
  return std::string(name_of(schedule)) + (causal ? "Causal" : "Full") + "_n" + std::to_string(n) + "_Br" +
         std::to_string(br) + "_Bc" + std::to_string(bc) + "_h" + std::to_string(heads);
}

class BackwardLedger : public ::testing::TestWithParam<LedgerCase> {};

// Every tensor's bytes, read and written, equal the closed form (f16 storage); so do the matmul, EXP and
// MASK counts; and the values still check.
TEST_P(BackwardLedger, MatchesClosedForm) {
  const auto& [schedule, causal, dims] = GetParam();
  const auto& [n, d, br, bc, heads] = dims;
  const BackwardShape s = shape(n, d, br, bc, causal, Dtype::F16, heads);
  RunResult r = run_program(traces::backward_program(schedule, s), on("h100-sm"));
  const Ledger l = expected(schedule, shape(n, d, br, bc, causal, Dtype::F16));
  EXPECT_EQ(r.hbm_bytes_read, times(l.read, heads));
  EXPECT_EQ(r.hbm_bytes_written, times(l.written, heads));
  EXPECT_EQ(count(r, "MAC") + count(r, "MAC_Z"), l.matmuls * heads);
  EXPECT_EQ(count(r, "EXP"), l.exps * heads);
  EXPECT_EQ(count(r, "MASK"), l.masks * heads);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BackwardLedger,
    ::testing::Combine(kSchedules, ::testing::Bool(),
                       ::testing::Values(std::tuple{100, 16, 32, 48, 1},   // Br < Bc, ragged
                                         std::tuple{130, 16, 48, 20, 1},   // Br > Bc, ragged
                                         std::tuple{96, 16, 32, 32, 3})),  // three heads
    ledger_case_name);

// With the accumulators in the register file, as the project's tensor-core kernels keep them: the same
// closed-form bytes per tensor (the staging MOVs add no HBM traffic), the values still check.
class BackwardRegisters : public ::testing::TestWithParam<std::tuple<BackwardSchedule, bool>> {};

TEST_P(BackwardRegisters, ClosedFormBytesAndValues) {
  const auto& [schedule, causal] = GetParam();
  BackwardShape s = shape(130, 16, 48, 20, causal, Dtype::F16, 2);
  s.accumulators_in_registers = true;
  const isa::Program p = traces::backward_program(schedule, s);
  std::vector<std::string> in_regs;
  for (const auto& b : p.buffers)
    if (b.space == isa::BufferDecl::Space::Regs) in_regs.push_back(b.name);
  const std::vector<std::string> flash2{"S", "P", "dP", "dKj", "dVj"},
      no_d{"Di", "S", "P", "dP", "dQi", "Dpart"};
  EXPECT_EQ(in_regs, schedule == BackwardSchedule::Flash2 ? flash2 : no_d);
  RunResult r = run_program(p, on("h100-sm"));
  const Ledger l = expected(schedule, shape(130, 16, 48, 20, causal, Dtype::F16));
  EXPECT_EQ(r.hbm_bytes_read, times(l.read, 2));
  EXPECT_EQ(r.hbm_bytes_written, times(l.written, 2));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
}

INSTANTIATE_TEST_SUITE_P(Flash2Schedules, BackwardRegisters,
                         ::testing::Combine(::testing::Values(BackwardSchedule::Flash2,
                                                              BackwardSchedule::Flash2NoD),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(name_of(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "Causal" : "Full");
                         });

TEST(BackwardRegisters, NotANaiveOption) {
  BackwardShape s = shape(64, 16, 32, 32, false, Dtype::F16);
  s.accumulators_in_registers = true;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Naive, s), std::invalid_argument);
}

// Seed 002: without D, K (and V) are loaded twice per query block, where flash2-bwd loads them once in
// all: exactly 2 * Tr times the bytes. Causal with square blocks dividing n: T(T+1)/2 tiles of b rows.
TEST(KReads, NoDReadsKTwicePerQueryBlock) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {}));
  auto k_bytes = [&](BackwardSchedule schedule, const BackwardShape& s) {
    isa::Program p = traces::backward_program(schedule, s);
    machine.load(p, false, true);
    machine.run();
    return machine.hbm()->bytes_read_per_tensor[p.find_tensor("K")];
  };
  const int64_t n = 200, d = 32, br = 48, bc = 64, tr = 5;
  const uint64_t once = k_bytes(BackwardSchedule::Flash2, shape(n, d, br, bc, false, Dtype::F16));
  EXPECT_EQ(once, static_cast<uint64_t>(n * d * 2));
  EXPECT_EQ(k_bytes(BackwardSchedule::Flash2NoD, shape(n, d, br, bc, false, Dtype::F16)), 2 * tr * once);

  const int64_t b = 32, t = 4;  // n = 128
  const uint64_t triangle = static_cast<uint64_t>(b * t * (t + 1) / 2 * d * 2);
  EXPECT_EQ(k_bytes(BackwardSchedule::Flash2, shape(b * t, d, b, b, true, Dtype::F16)),
            static_cast<uint64_t>(b * t * d * 2));
  EXPECT_EQ(k_bytes(BackwardSchedule::Flash2NoD, shape(b * t, d, b, b, true, Dtype::F16)), 2 * triangle);
}

// ---- Streamed in small chunks, each schedule runs exactly as from memory ----

class BackwardStreaming : public ::testing::TestWithParam<BackwardSchedule> {};

// Head slices (TileRef offsets) must follow the stream's chunk hand-offs like every other operand.
TEST_P(BackwardStreaming, SameResultsAsInMemory) {
  Machine machine(load_config(kConfigs + "h100-sm.yaml", {"dtype=f32"}));
  const BackwardShape s = shape(90, 16, 32, 24, true, Dtype::F32, 2);
  const isa::Program in_memory = traces::backward_program(GetParam(), s);
  machine.load(in_memory, false, false);
  machine.run();
  const uint64_t cycles = machine.sequencer().cycles();
  const auto read = machine.hbm()->bytes_read_per_tensor;
  std::vector<std::vector<double>> outputs;
  for (const char* name : {"dQ", "dK", "dV"})
    outputs.push_back(machine.sequencer().tensor_values(in_memory.find_tensor(name)));
  const size_t small_chunks = 5;  // far below the program's length: many hand-offs
  isa::Program streamed =
      traces::stream_program([&] { return traces::backward_program(GetParam(), s); }, small_chunks);
  EXPECT_TRUE(streamed.instructions.empty());
  machine.load(streamed, false, false);
  machine.run();
  EXPECT_EQ(machine.sequencer().cycles(), cycles);
  EXPECT_EQ(machine.hbm()->bytes_read_per_tensor, read);
  int i = 0;
  for (const char* name : {"dQ", "dK", "dV"})
    EXPECT_EQ(machine.sequencer().tensor_values(in_memory.find_tensor(name)), outputs[i++]) << name;
}

INSTANTIATE_TEST_SUITE_P(Schedules, BackwardStreaming, kSchedules,
                         [](const auto& info) { return std::string(name_of(info.param)); });

// ---- The generated programs print as traces that assemble back to the same program ----

class BackwardRoundTrip : public ::testing::TestWithParam<BackwardSchedule> {};

TEST_P(BackwardRoundTrip, DisassemblesAndReassembles) {
  const isa::Program p = traces::backward_program(GetParam(), shape(40, 8, 16, 24, true, Dtype::BF16, 2));
  const std::string text = isa::disassemble(p);
  const isa::Program back = isa::assemble(text, "roundtrip");
  EXPECT_EQ(isa::disassemble(back), text);
  ASSERT_EQ(back.instructions.size(), p.instructions.size());
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const auto& a = p.instructions[i];
    const auto& b = back.instructions[i];
    ASSERT_EQ(a.op, b.op) << i;
    ASSERT_EQ(a.operand_count, b.operand_count) << i;
    for (size_t k = 0; k < a.operand_count; ++k) {
      if (a.operand(k).kind != isa::Operand::Kind::Tile) continue;
      EXPECT_EQ(p.tiles[a.operand(k).tensor], back.tiles[b.operand(k).tensor])
          << "instruction " << i << ": " << isa::format_instruction(p, a);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, BackwardRoundTrip, kSchedules,
                         [](const auto& info) { return std::string(name_of(info.param)); });

// ---- Grids: the kernels flash-attn (and a standard backward) launch, blocks in launch order ----

struct KernelGrid {
  std::string name;
  std::array<int64_t, 3> grid;
};

// FlashAttention-2's preprocessing kernel (query blocks, heads) and its main kernel (key blocks, heads); the
// no-D schedule's one kernel over query blocks; the naive schedule's six phases.
std::vector<KernelGrid> expected_kernels(BackwardSchedule schedule, const BackwardShape& s) {
  const int64_t tr = ceil_div(s.n, s.block_q), tc = ceil_div(s.n, s.block_k), h = s.heads;
  switch (schedule) {
    case BackwardSchedule::Flash2:
      return {{"flash2_bwd_dot_do_o", {tr, h, 1}}, {"flash2_bwd_dkdv", {tc, h, 1}}};
    case BackwardSchedule::Flash2NoD:
      return {{"flash2_bwd_no_d", {tr, h, 1}}};
    case BackwardSchedule::Naive:
      return {{"naive_bwd_p", {tr, h, 1}},  {"naive_bwd_dp", {tr, h, 1}}, {"naive_bwd_ds", {tr, h, 1}},
              {"naive_bwd_dq", {tr, h, 1}}, {"naive_bwd_dk", {tc, h, 1}}, {"naive_bwd_dv", {tc, h, 1}}};
  }
  return {};
}

class BackwardGrid : public ::testing::TestWithParam<std::tuple<BackwardSchedule, bool>> {};

// The kernels and grids above; block count = the grids' product; blocks in CUDA launch order (kernel after
// kernel, x fastest, then y, then z), each non-empty, the first at instruction 0; streamed in small chunks,
// the same blocks at the same instructions.
TEST_P(BackwardGrid, KernelsGridsAndLaunchOrder) {
  const auto& [schedule, causal] = GetParam();
  const BackwardShape s = shape(100, 16, 32, 48, causal, Dtype::F16, 3);  // Tr = 4, Tc = 3 (ragged)
  const isa::Program p = traces::backward_program(schedule, s);
  const auto want = expected_kernels(schedule, s);
  ASSERT_EQ(p.kernels.size(), want.size());
  size_t total_blocks = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(p.kernels[k].name, want[k].name);
    EXPECT_EQ(p.kernels[k].grid, want[k].grid) << want[k].name;
    total_blocks += static_cast<size_t>(p.kernels[k].blocks());
  }
  ASSERT_EQ(p.blocks.size(), total_blocks);
  size_t b = 0;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const auto& g = p.kernels[k].grid;
    for (int64_t z = 0; z < g[2]; ++z)
      for (int64_t y = 0; y < g[1]; ++y)
        for (int64_t x = 0; x < g[0]; ++x, ++b) {
          EXPECT_EQ(p.blocks[b].kernel, static_cast<int32_t>(k)) << "block " << b;
          EXPECT_EQ(p.blocks[b].index, (std::array<int64_t, 3>{x, y, z})) << "block " << b;
        }
  }
  EXPECT_EQ(p.blocks.front().instruction, 0u);
  for (size_t i = 1; i < p.blocks.size(); ++i)
    EXPECT_LT(p.blocks[i - 1].instruction, p.blocks[i].instruction) << "block " << i - 1 << " is empty";
  EXPECT_LT(p.blocks.back().instruction, p.instructions.size());

  isa::Program streamed = traces::stream_program([&] { return traces::backward_program(schedule, s); }, 7);
  EXPECT_EQ(streamed.kernels.size(), p.kernels.size());
  isa::Chunk chunk;
  size_t base = 0, seen = 0;
  while (streamed.stream->next(chunk)) {
    for (const auto& start : chunk.blocks) {
      ASSERT_LT(seen, p.blocks.size());
      EXPECT_EQ(base + start.instruction, p.blocks[seen].instruction) << "block " << seen;
      EXPECT_EQ(start.kernel, p.blocks[seen].kernel);
      EXPECT_EQ(start.index, p.blocks[seen].index);
      ++seen;
    }
    base += chunk.instructions.size();
  }
  EXPECT_EQ(seen, p.blocks.size());
  EXPECT_EQ(base, p.instructions.size());
}

// Blocks of one kernel may run at once on different cores: each block touches its own head only, and no
// element one block stores is stored or loaded by another block of the same kernel, except the documented
// accumulators (which are indeed shared: dQ in flash2-bwd, dK and dV without D), and those only through
// STORE_ADD, which no concurrent block can interrupt.
TEST_P(BackwardGrid, BlocksOfAKernelShareOnlyTheAccumulators) {
  const auto& [schedule, causal] = GetParam();
  const BackwardShape s = shape(100, 16, 32, 48, causal, Dtype::F16, 3);
  const isa::Program p = traces::backward_program(schedule, s);
  ASSERT_FALSE(p.blocks.empty());
  std::set<std::string> shared;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    // Per tensor element: the block that stored it (-1 none, -2 several), and the blocks that loaded it.
    std::map<int, std::vector<int64_t>> writer;
    std::map<int, std::vector<std::set<size_t>>> readers;
    std::set<int> plain;  // tensors this kernel LOADs or STOREs (rather than STORE_ADDs into)
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      if (p.blocks[b].kernel != static_cast<int32_t>(k)) continue;
      const size_t end = b + 1 < p.blocks.size() ? p.blocks[b + 1].instruction : p.instructions.size();
      for (size_t i = p.blocks[b].instruction; i < end; ++i) {
        const isa::Instruction& inst = p.instructions[i];
        if (inst.op != isa::Opcode::Load && inst.op != isa::Opcode::Store && inst.op != isa::Opcode::StoreAdd)
          continue;
        const bool store = inst.op != isa::Opcode::Load;
        const isa::TileRef& t = p.tiles[inst.operand(store ? 1 : 0).tensor];
        if (inst.op != isa::Opcode::StoreAdd) plain.insert(t.index);
        ASSERT_FALSE(t.is_buffer);
        const auto& shape3 = p.tensors[t.index].shape;
        ASSERT_EQ(shape3.size(), 3u) << p.tensors[t.index].name;
        const int64_t per_head = shape3[1] * shape3[2];
        EXPECT_EQ(t.offset / per_head, p.blocks[b].index[1])
            << p.kernels[k].name << ": block reaches into another head's " << p.tensors[t.index].name;
        auto& w = writer[t.index];
        auto& r = readers[t.index];
        if (w.empty()) {
          w.assign(static_cast<size_t>(s.heads * per_head), -1);
          r.assign(static_cast<size_t>(s.heads * per_head), {});
        }
        for (int64_t row = 0; row < t.rows; ++row)
          for (int64_t col = 0; col < t.cols; ++col) {
            const auto e = static_cast<size_t>(t.offset + (t.row0 + row) * t.row_stride + t.col0 + col);
            if (!store)
              r[e].insert(b);
            else if (w[e] == -1)
              w[e] = static_cast<int64_t>(b);
            else if (w[e] != static_cast<int64_t>(b))
              w[e] = -2;
          }
      }
    }
    for (const auto& [tensor, w] : writer) {
      const std::string& name = p.tensors[tensor].name;
      bool several = false;
      for (size_t e = 0; e < w.size(); ++e) {
        several = several || w[e] == -2;
        for (size_t reader : readers[tensor][e]) several = several || (w[e] != -1 && w[e] != int64_t(reader));
      }
      if (!several) continue;
      shared.insert(name);
      EXPECT_FALSE(plain.contains(tensor))
          << p.kernels[k].name << ": blocks share " << name << " through LOAD or STORE, not STORE_ADD alone";
    }
  }
  EXPECT_EQ(shared, accumulated_gradients(schedule));
}

INSTANTIATE_TEST_SUITE_P(Schedules, BackwardGrid, ::testing::Combine(kSchedules, ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(name_of(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "Causal" : "Full");
                         });

// ---- flash2-bwd as flash-attn launches it (BackwardShape::as_flash_attn) ----

namespace flash_attn {

// n = 256, d = 64, 128 x 128 tiles, f16, two heads (Tr = Tc = 2): 3 visible tiles per head causal, 4 not.
BackwardShape launch_shape(bool causal) {
  BackwardShape s = shape(256, 64, 128, 128, causal, Dtype::F16, 2);
  s.as_flash_attn = true;
  s.spill_bytes_per_block = 1024;
  return s;
}

class Flash2AsFlashAttn : public ::testing::TestWithParam<bool> {};

// Three kernels; dQ converted from the f32 dQaccum the first kernel zeroes; every dK/dV block stores its
// spill bytes; the values check. Bytes per tensor on one core, where STORE_ADD reads and writes its tile:
// dQaccum is zeroed (|dQaccum| written), added into once per visible tile (read and written) and read
// once by the conversion.
TEST_P(Flash2AsFlashAttn, KernelsBytesAndValues) {
  const BackwardShape s = launch_shape(GetParam());
  const isa::Program p = traces::backward_program(BackwardSchedule::Flash2, s);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].name, "flash2_bwd_dot_do_o");
  EXPECT_EQ(p.kernels[1].name, "flash2_bwd_dkdv");
  EXPECT_EQ(p.kernels[2].name, "flash2_bwd_convert_dq");
  for (const auto& k : p.kernels) EXPECT_EQ(k.grid, (std::array<int64_t, 3>{2, 2, 1})) << k.name;
  RunResult r = run_program(p, on("h100-sm"));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
  const uint64_t heads = 2, tiles = GetParam() ? 3 : 4, acc = 256 * 64 * 4, tile = 128 * 64 * 4;
  EXPECT_EQ(r.hbm_bytes_written.at("dQaccum"), heads * (acc + tiles * tile));
  EXPECT_EQ(r.hbm_bytes_read.at("dQaccum"), heads * (acc + tiles * tile));
  EXPECT_EQ(r.hbm_bytes_written.at("dQ"), heads * 256 * 64 * 2);
  EXPECT_EQ(r.hbm_bytes_read.at("dQ"), 0u);
  EXPECT_EQ(r.hbm_bytes_written.at("local"), heads * 2 * 1024);
  EXPECT_EQ(r.hbm_bytes_read.at("Q"), heads * tiles * 128 * 64 * 2);
  EXPECT_EQ(r.hbm_bytes_read.at("K"), heads * 256 * 64 * 2);
}

// On the chip with noc.atomics=l2, STORE_ADD's read of the old tile stays in the L2: SM<-L2 reads of
// dQaccum are the conversion's alone; writes are unchanged. With the default (core) the read crosses.
TEST_P(Flash2AsFlashAttn, AtomicReadsStayInTheL2) {
  const BackwardShape s = launch_shape(GetParam());
  const isa::Program p = traces::backward_program(BackwardSchedule::Flash2, s);
  const uint64_t heads = 2, tiles = GetParam() ? 3 : 4, acc = 256 * 64 * 4, tile = 128 * 64 * 4;
  // SystemC runs one simulation per process: both machines are built before either runs.
  sc_core::sc_report_handler::set_actions("object already exists", sc_core::SC_DO_NOTHING);
  Machine in_l2(load_config(kConfigs + "h100.yaml", {"noc.atomics=l2"}));
  Machine at_core(load_config(kConfigs + "h100.yaml", {}));
  auto run = [&](Machine& machine) {
    machine.load(p, false, false);
    machine.run();
    return summarize_chip(*machine.chip(), p, machine.clock_ghz());
  };
  const ChipSummary l2 = run(in_l2), core = run(at_core);
  EXPECT_EQ(l2.sm_l2_read.at("dQaccum"), heads * acc);
  EXPECT_EQ(core.sm_l2_read.at("dQaccum"), heads * (acc + tiles * tile));
  EXPECT_EQ(l2.sm_l2_written.at("dQaccum"), heads * (acc + tiles * tile));
  EXPECT_EQ(core.sm_l2_written.at("dQaccum"), heads * (acc + tiles * tile));
  EXPECT_EQ(l2.sm_l2_read.at("Q"), core.sm_l2_read.at("Q"));
}

INSTANTIATE_TEST_SUITE_P(Mask, Flash2AsFlashAttn, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

TEST(Flash2AsFlashAttn, RejectsSpillsItCannotStore) {
  BackwardShape s = launch_shape(false);
  s.spill_bytes_per_block = 6;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
  s.spill_bytes_per_block = 1024;
  s.as_flash_attn = false;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
}

// ---- a producer and two consumer warp groups (BackwardShape::warp_groups, cuDNN's backward) ----

// Ragged on purpose: n = 100 in query blocks of 32 and key blocks of 48 (the last key block 4 rows, split
// 2 + 2), d = 15 split 8 + 7 columns, two heads.
BackwardShape warp_group_shape(bool causal) {
  BackwardShape s = shape(100, 15, 32, 48, causal, Dtype::F16, 2);
  s.as_flash_attn = true;
  s.warp_groups = true;
  return s;
}

class Flash2WarpGroups : public ::testing::TestWithParam<bool> {};

// The three groups are used and the gradients check in float64.
TEST_P(Flash2WarpGroups, ValuesCheck) {
  const isa::Program p = traces::backward_program(BackwardSchedule::Flash2, warp_group_shape(GetParam()));
  std::set<int> groups;
  for (const auto& inst : p.instructions) groups.insert(inst.group);
  EXPECT_EQ(groups, (std::set<int>{0, 1, 2}));
  RunResult r = run_program(p, on("h100-sm"));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
}

struct ChipRun {
  ChipSummary summary;
  uint64_t dkdv_cycles = 0;  // the dK/dV kernel's, from its start to its end
};

// The chip's runs of the warp-group program and of the one-stream program (timing only), each on its own
// machine: SystemC runs one simulation per process, so both are built before either runs.
std::array<ChipRun, 2> chip_runs(const BackwardShape& s, const std::vector<std::string>& overrides = {}) {
  BackwardShape one_stream = s;
  one_stream.warp_groups = false;
  const isa::Program programs[2] = {traces::backward_program(BackwardSchedule::Flash2, s),
                                    traces::backward_program(BackwardSchedule::Flash2, one_stream)};
  sc_core::sc_report_handler::set_actions("object already exists", sc_core::SC_DO_NOTHING);
  Machine groups(load_config(kConfigs + "h100.yaml", overrides));
  Machine single(load_config(kConfigs + "h100.yaml", overrides));
  std::array<ChipRun, 2> out;
  Machine* machines[2] = {&groups, &single};
  for (int k = 0; k < 2; ++k) {
    machines[k]->load(programs[k], false, true);
    machines[k]->run();
    out[k].summary = summarize_chip(*machines[k]->chip(), programs[k], machines[k]->clock_ghz());
    for (const KernelReport& kernel : machines[k]->chip()->kernels())
      if (kernel.name == "flash2_bwd_dkdv") out[k].dkdv_cycles = kernel.end_cycle - kernel.start_cycle;
  }
  return out;
}

// Splitting the key block between two consumers and dQ's columns between their additions moves no byte:
// every tensor's SM<->L2 reads and writes equal the one-stream program's.
TEST_P(Flash2WarpGroups, SameBytesAsOneStream) {
  const auto [groups, single] = chip_runs(warp_group_shape(GetParam()));
  EXPECT_EQ(groups.summary.sm_l2_read, single.summary.sm_l2_read);
  EXPECT_EQ(groups.summary.sm_l2_written, single.summary.sm_l2_written);
  EXPECT_FALSE(groups.summary.sm_l2_read.empty());
}

// One consumer's softmax runs while the MXU does the other's products: fewer cycles than one stream. With
// wgmma's feed and no issue limit, as `attnsim validate` runs cuDNN's backward (the issue slots the two
// consumers share are not what this is about).
TEST(Flash2WarpGroups, ConsumersOverlapTheirSoftmaxWithTheOthersProducts) {
  BackwardShape s = shape(1024, 64, 64, 128, false, Dtype::F16, 1);
  s.as_flash_attn = true;
  s.double_buffer = true;
  s.skip_forward_values = true;
  s.warp_groups = true;
  const auto [groups, single] =
      chip_runs(s, {"issue.limit=false", "mxu.hand_off=cell", "mxu.deal=m", "mxu.shared_operand=once"});
  ASSERT_GT(single.dkdv_cycles, 0u);
  EXPECT_LT(groups.dkdv_cycles, single.dkdv_cycles * 0.9)
      << groups.dkdv_cycles << " vs " << single.dkdv_cycles;
}

TEST(Flash2WarpGroups, RejectsShapesItCannotSplit) {
  BackwardShape s = warp_group_shape(false);
  s.as_flash_attn = false;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
  s = warp_group_shape(false);
  s.block_k = 1;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Mask, Flash2WarpGroups, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

}  // namespace flash_attn

// ---- PyTorch's memory-efficient backward (BackwardShape::as_mem_efficient) ----

namespace mem_efficient {

BackwardShape mem_efficient_shape(int64_t n, int64_t d, int64_t br, int64_t bc, bool causal, int64_t heads,
                                  bool reload_k) {
  BackwardShape s = shape(n, d, br, bc, causal, Dtype::F16, heads);
  s.as_mem_efficient = true;
  s.reload_k = reload_k;
  return s;
}

// n, d, Br, Bc, heads: ragged with Br < Bc and Br > Bc, the kernel's square tiles, and one key block (no
// workspace: the product is dQ).
using MemEffDims = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
using MemEffCase = std::tuple<MemEffDims, bool, bool>;  // dims, causal, reload_k

std::string mem_eff_case_name(const ::testing::TestParamInfo<MemEffCase>& info) {
  const auto& [dims, causal, reload_k] = info.param;
  const auto& [n, d, br, bc, heads] = dims;
  return std::string(causal ? "Causal" : "Full") + (reload_k ? "ReloadK" : "KeepK") + "_n" +
         std::to_string(n) + "_d" + std::to_string(d) + "_Br" + std::to_string(br) + "_Bc" +
         std::to_string(bc) + "_h" + std::to_string(heads);
}

// Bytes per tensor for one head, from the kernel's structure (not from the generator's loops). Key block j
// (first row k0, c rows) visits V_j query blocks holding R_j rows: all Tr blocks and n rows, or causal the
// ones from the block holding row k0 on, n - floor(k0 / Br) Br rows. Every block reads the head's O and
// dO and writes all n values of D (f32); per visit it reads L_i and D_i, Q_i twice (S, dK), dO_i twice (dV,
// dP), V_j and K_j once (dQ), K_j once more (S) with reload_k, else once per block; it reads the f32 dQ
// tile and writes it back, except that the last visit of each query row writes dQ (f16) instead, under the
// tile's lock: one compare-and-swap (its 32-byte sector read and written; one core never waits) and a
// release store per visit. With one key block there is no f32 tile and no lock. dK_j and dV_j are written
// once.
Ledger mem_efficient_expected(const BackwardShape& s) {
  const int64_t n = s.n, d = s.d, br = s.block_q, bc = s.block_k, e = 2, f = 4;
  const int64_t tr = ceil_div(n, br), tc = ceil_div(n, bc);
  int64_t visits = 0, rows = 0, k_rows = 0, v_rows = 0;
  for (int64_t j = 0; j < tc; ++j) {
    const int64_t k0 = j * bc, c = std::min(n, k0 + bc) - k0;
    const int64_t vj = s.causal ? tr - k0 / br : tr;
    visits += vj;
    rows += s.causal ? n - k0 / br * br : n;
    v_rows += vj * c;
    k_rows += s.reload_k ? 2 * vj * c : (vj + 1) * c;
  }
  const int64_t workspace_rows = tc > 1 ? rows : 0;
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  Ledger l;
  l.read = {{"Q", u(2 * rows * d * e)},
            {"K", u(k_rows * d * e)},
            {"V", u(v_rows * d * e)},
            {"dO", u((tc * n + 2 * rows) * d * e)},
            {"O", u(tc * n * d * e)},
            {"L", u(rows * f)},
            {"D", u(rows * f)},
            {"dQaccum", u(workspace_rows * d * f)},
            {"dQ", 0},
            {"dK", 0},
            {"dV", 0}};
  l.written = {{"Q", 0},
               {"K", 0},
               {"V", 0},
               {"dO", 0},
               {"O", 0},
               {"L", 0},
               {"D", u(tc * n * f)},
               {"dQaccum", u(tc > 1 ? (rows - n) * d * f : 0)},
               {"dQ", u(n * d * e)},
               {"dK", u(n * d * e)},
               {"dV", u(n * d * e)}};
  if (tc > 1) {
    l.read["dQlock"] = u(32 * visits);
    l.written["dQlock"] = u(64 * visits);
  }
  l.matmuls = u(5 * visits);  // S, dV, dP, dQ, dK
  l.exps = u(visits);
  return l;
}

class MemEfficientBackward : public ::testing::TestWithParam<MemEffCase> {};

// dQ, dK, dV check against float64 on one core (which runs the blocks in launch order, so the block that
// stores dQ_i in f16 runs after every other visit of query block i), and every tensor's bytes equal the
// closed form; so do the products and exponentials.
TEST_P(MemEfficientBackward, ValuesAndBytesPerTensor) {
  const auto& [dims, causal, reload_k] = GetParam();
  const auto& [n, d, br, bc, heads] = dims;
  const BackwardShape s = mem_efficient_shape(n, d, br, bc, causal, heads, reload_k);
  const isa::Program p = traces::backward_program(BackwardSchedule::Flash2, s);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].name, "mem_efficient_bwd");
  EXPECT_EQ(p.kernels[0].grid, (std::array<int64_t, 3>{ceil_div(n, bc), heads, 1}));
  RunResult r = run_program(p, on("h100-sm"));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
  const Ledger l = mem_efficient_expected(s);
  EXPECT_EQ(r.hbm_bytes_read, times(l.read, heads));
  EXPECT_EQ(r.hbm_bytes_written, times(l.written, heads));
  EXPECT_EQ(count(r, "MAC") + count(r, "MAC_Z"), l.matmuls * static_cast<uint64_t>(heads));
  EXPECT_EQ(count(r, "EXP"), l.exps * static_cast<uint64_t>(heads));
}

// PyTorch's layout for O, dO and the gradients ((batch, n, heads, d): heads_inner_outputs, two batches of
// two heads here): the same values against float64 and the same bytes per tensor; the tiles address memory
// so (head 3, batch 1's second head, at row r: ((1 x n + r) x 2 + 1) x d elements in).
TEST(MemEfficientBackwardLayout, HeadsInnerOutputsKeepValuesAndBytes) {
  BackwardShape s = mem_efficient_shape(96, 16, 32, 32, true, 4, false);
  s.heads_inner_outputs = 2;
  const isa::Program p = traces::backward_program(BackwardSchedule::Flash2, s);
  for (const char* name : {"O", "dO", "dQ", "dK", "dV"})
    EXPECT_EQ(p.tensors[static_cast<size_t>(p.find_tensor(name))].heads_inner, 2) << name;
  for (const char* name : {"Q", "K", "V", "L", "D", "dQaccum"})
    EXPECT_EQ(p.tensors[static_cast<size_t>(p.find_tensor(name))].heads_inner, 0) << name;
  const int dk = p.find_tensor("dK");
  int dk_stores = 0;
  for (const auto& i : p.instructions)
    if (i.op == isa::Opcode::Store && i.operand(1).kind == isa::Operand::Kind::Tile) {
      const isa::TileRef& t = p.tiles[static_cast<size_t>(i.operand(1).tensor)];
      if (t.index != dk) continue;
      EXPECT_EQ(t.row_stride, 2 * 16);
      if (t.offset == ((1 * 96 + 0) * 2 + 1) * 16) ++dk_stores;
    }
  EXPECT_EQ(dk_stores, 3);  // head 3's three key blocks
  RunResult r = run_program(p, on("h100-sm"));
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
  const Ledger l = mem_efficient_expected(s);
  EXPECT_EQ(r.hbm_bytes_read, times(l.read, 4));
  EXPECT_EQ(r.hbm_bytes_written, times(l.written, 4));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MemEfficientBackward,
    ::testing::Combine(::testing::Values(MemEffDims{100, 16, 32, 48, 2}, MemEffDims{130, 16, 48, 20, 1},
                                         MemEffDims{96, 16, 32, 32, 2}, MemEffDims{40, 16, 32, 48, 1}),
                       ::testing::Bool(), ::testing::Bool()),
    mem_eff_case_name);

// The kernel's figures in units of |Q| (n d 2 bytes per head) at its square tiles, N = n / 64 steps:
// at d = 64 (K_j kept) SM<-L2 reads 2N (D's O and dO in every block) + (8 + 1/16) per step (Q, dO twice,
// K, V once, the f32 dQ tile as 2; L and D) x N steps + 1 (K_j once per block) = 10.0625 N + 1, writes
// 2N - 1 (f32 tiles, the last of each f16) + N / 32 (D) + 2 (dK, dV); causal N (N + 1) / 2 steps over
// N blocks. At d = 128 (128 x 128, K_j reloaded) 9 + 1/32 per step and D N / 64. Each step's lock moves 32
// bytes to the core and 64 from it (a compare-and-swap and a release).
class MemEfficientSpills : public ::testing::TestWithParam<bool> {};

class MemEfficientFigures : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {};

TEST_P(MemEfficientFigures, KernelFiguresInUnitsOfQ) {
  const auto& [d, causal] = GetParam();
  const int64_t tile = d, n = 8 * tile;
  const double steps = causal ? 8 * 9 / 2.0 : 64.0, blocks = 8, per_step = d == 64 ? 8.0625 : 9.03125;
  const double reads = 2 * blocks + per_step * steps / blocks + (d == 64 ? 1 : 0);
  BackwardShape s = mem_efficient_shape(n, d, tile, tile, causal, 1, d == 128);
  const double q = static_cast<double>(n * d * 2);
  const double lock_reads = 32 * steps / q, lock_writes = 64 * steps / q;
  const double writes =
      (2 * steps - blocks) / blocks + blocks * 4.0 / (2 * static_cast<double>(d)) + 2 + lock_writes;
  s.skip_forward_values = true;
  RunOptions o = on("h100-sm");
  o.timing_only = true;
  RunResult r = run_program(traces::backward_program(BackwardSchedule::Flash2, s), o);
  uint64_t read = 0, written = 0;
  for (const auto& [name, bytes] : r.hbm_bytes_read) read += bytes;
  for (const auto& [name, bytes] : r.hbm_bytes_written) written += bytes;
  EXPECT_DOUBLE_EQ(static_cast<double>(read) / q, reads + lock_reads);
  EXPECT_DOUBLE_EQ(static_cast<double>(written) / q, writes);
}

INSTANTIATE_TEST_SUITE_P(Kernels, MemEfficientFigures,
                         ::testing::Combine(::testing::Values(64, 128), ::testing::Bool()),
                         [](const auto& info) {
                           return "d" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "Causal" : "Full");
                         });

// Block j's first step is query block j (its start shifted by j x Br), or causal the diagonal one, and its
// steps wrap round to the block before it; the last Q load of each step, for dK, names the same block.
TEST(MemEfficientBackward, EachBlockStartsAtItsOwnQueryBlock) {
  for (bool causal : {false, true}) {
    const isa::Program p = traces::backward_program(BackwardSchedule::Flash2,
                                                    mem_efficient_shape(128, 16, 32, 32, causal, 1, false));
    int q_tensor = -1;
    for (size_t t = 0; t < p.tensors.size(); ++t)
      if (p.tensors[t].name == "Q") q_tensor = static_cast<int>(t);
    ASSERT_EQ(p.blocks.size(), 4u);
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const size_t end = b + 1 < p.blocks.size() ? p.blocks[b + 1].instruction : p.instructions.size();
      std::vector<int64_t> starts;  // Q rows loaded, in order: two loads per step
      for (size_t i = p.blocks[b].instruction; i < end; ++i) {
        const isa::Instruction& inst = p.instructions[i];
        if (inst.op != isa::Opcode::Load) continue;
        const isa::TileRef& t = p.tiles[inst.operand(0).tensor];
        if (!t.is_buffer && t.index == q_tensor) starts.push_back(t.row0);
      }
      std::vector<int64_t> want;
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t i = causal ? k : (static_cast<int64_t>(b) + k) % 4;
        if (causal && i < static_cast<int64_t>(b)) continue;
        want.push_back(32 * i);
        want.push_back(32 * i);
      }
      EXPECT_EQ(starts, want) << "block " << b << (causal ? " causal" : "");
    }
  }
}

// The register spills (BackwardShape::spill_bytes_per_step and the like) reach `local` as many times as
// there are steps and blocks, through a 1 KB buffer, and move no other byte. n = 96 in 32-row blocks, two
// heads: 9 steps per head not causal, 6 causal; 3 blocks per head.
TEST_P(MemEfficientSpills, PerStepAndPerBlock) {
  const bool causal = GetParam();
  BackwardShape s = mem_efficient_shape(96, 16, 32, 32, causal, 2, true);
  s.spill_bytes_per_step = 2000;  // two chunks
  s.spill_bytes_per_block = 520;
  s.spill_load_bytes_per_step = 1028;
  s.spill_load_bytes_per_block = 4;
  RunResult r = run_program(traces::backward_program(BackwardSchedule::Flash2, s), on("h100-sm"));
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << c.description << ": " << c.max_rel_error;
  const uint64_t steps = 2 * (causal ? 6 : 9), blocks = 2 * 3;
  EXPECT_EQ(r.hbm_bytes_written.at("local"), steps * 2000 + blocks * 520);
  EXPECT_EQ(r.hbm_bytes_read.at("local"), steps * 1028 + blocks * 4);
  Bytes read = r.hbm_bytes_read, written = r.hbm_bytes_written;
  read.erase("local");
  written.erase("local");
  const Ledger l = mem_efficient_expected(s);
  EXPECT_EQ(read, times(l.read, 2));
  EXPECT_EQ(written, times(l.written, 2));
}

INSTANTIATE_TEST_SUITE_P(Mask, MemEfficientSpills, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

TEST(MemEfficientBackward, RejectsOptionsOfOtherKernels) {
  BackwardShape s = mem_efficient_shape(96, 16, 32, 32, false, 1, false);
  s.as_flash_attn = true;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
  s = mem_efficient_shape(96, 16, 32, 32, false, 1, false);
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2NoD, s), std::invalid_argument);
  s.as_mem_efficient = false;
  s.reload_k = true;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
  s = mem_efficient_shape(96, 16, 32, 32, false, 1, false);
  s.spill_bytes_per_step = 6;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
  s = mem_efficient_shape(96, 16, 32, 32, false, 1, false);
  s.as_mem_efficient = false;
  s.spill_load_bytes_per_step = 4;
  EXPECT_THROW(traces::backward_program(BackwardSchedule::Flash2, s), std::invalid_argument);
}

}  // namespace mem_efficient

}  // namespace
}  // namespace attnsim
