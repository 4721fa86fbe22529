#include "traces/scalar.h"

#include <stdexcept>

namespace attnsim::traces {

using isa::Opcode;
using isa::Operand;

namespace {

Operand R(int r) {
  return Operand::r(r);
}

int declare(isa::Program& p, const std::string& name, int64_t n,
            const std::optional<std::vector<double>>& values, const ScalarInputs& in, uint64_t seed_offset) {
  isa::TensorDecl t;
  t.name = name;
  t.shape = {n};
  if (values) {
    if (static_cast<int64_t>(values->size()) != n)
      throw std::invalid_argument(name + " has " + std::to_string(values->size()) + " values, n is " +
                                  std::to_string(n));
    t.init.kind = isa::TensorInit::Kind::Values;
    t.init.values = *values;
  } else {
    t.init.kind = isa::TensorInit::Kind::Random;
    t.init.seed = in.seed + seed_offset;
    t.init.lo = in.lo;
    t.init.hi = in.hi;
  }
  return p.add_tensor(std::move(t));
}

int declare_output(isa::Program& p, const std::string& name, int64_t n) {
  isa::TensorDecl t;
  t.name = name;
  t.shape = {n};
  return p.add_tensor(std::move(t));
}

void add_check(isa::Program& p, const std::string& fn, int target, std::vector<int> args) {
  isa::Check c;
  c.function = fn;
  c.target = target;
  c.args = std::move(args);
  p.checks.push_back(std::move(c));
}

void require_n(const ScalarInputs& in) {
  if (in.n < 1) throw std::invalid_argument("n must be at least 1");
}

// Pass 3 of safe softmax and pass 2 of online softmax: out[i] = e^(x[i] - m) / s with m in R1, s in R2.
void normalize_pass(isa::Program& p, int x, int out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    p.emit(Opcode::Load, {Operand::m(x, i), R(0)});
    p.emit(Opcode::Sub, {R(0), R(1), R(0)});
    p.emit(Opcode::Exp, {R(0), R(0)});
    p.emit(Opcode::Div, {R(0), R(2), R(0)});
    p.emit(Opcode::Store, {R(0), Operand::m(out, i)});
  }
}

}  // namespace

isa::Program softmax_safe(const ScalarInputs& in) {
  require_n(in);
  isa::Program p;
  p.file = "softmax-safe(n=" + std::to_string(in.n) + ")";
  int x = declare(p, "x", in.n, in.x, in, 0);
  int out = declare_output(p, "out", in.n);
  add_check(p, "softmax", out, {x});
  p.instructions.reserve(static_cast<size_t>(11 * in.n));
  // Pass 1: m = max x (seed 002 keeps the running max in r1).
  p.emit(Opcode::Load, {Operand::m(x, 0), R(1)});
  for (int64_t i = 1; i < in.n; ++i) {
    p.emit(Opcode::Load, {Operand::m(x, i), R(0)});
    p.emit(Opcode::Max, {R(0), R(1), R(1)});
  }
  // Pass 2: s = sum e^(x_i - m) in r2; the exponent is consumed at once, never stored.
  for (int64_t i = 0; i < in.n; ++i) {
    p.emit(Opcode::Load, {Operand::m(x, i), R(0)});
    p.emit(Opcode::Sub, {R(0), R(1), R(0)});
    p.emit(Opcode::Exp, {R(0), R(0)});
    if (i == 0)
      p.emit(Opcode::Mov, {R(0), R(2)});
    else
      p.emit(Opcode::Add, {R(2), R(0), R(2)});
  }
  normalize_pass(p, x, out, in.n);
  return p;
}

isa::Program softmax_online(const ScalarInputs& in) {
  require_n(in);
  isa::Program p;
  p.file = "softmax-online(n=" + std::to_string(in.n) + ")";
  int x = declare(p, "x", in.n, in.x, in, 0);
  int out = declare_output(p, "out", in.n);
  add_check(p, "softmax", out, {x});
  p.instructions.reserve(static_cast<size_t>(14 * in.n));
  // Initialisation with x0: m = x0, s = e^(x0 - x0) = 1 (seed 002's five steps).
  p.emit(Opcode::Load, {Operand::m(x, 0), R(0)});
  p.emit(Opcode::Mov, {R(0), R(1)});
  p.emit(Opcode::Sub, {R(0), R(1), R(0)});
  p.emit(Opcode::Exp, {R(0), R(0)});
  p.emit(Opcode::Mov, {R(0), R(2)});
  // Steady state, seed 002's nine steps: r1 = m, r2 = s, r3 = old m then the rescale factor.
  for (int64_t i = 1; i < in.n; ++i) {
    p.emit(Opcode::Load, {Operand::m(x, i), R(0)});
    p.emit(Opcode::Mov, {R(1), R(3)});
    p.emit(Opcode::Max, {R(1), R(0), R(1)});
    p.emit(Opcode::Sub, {R(3), R(1), R(3)});
    p.emit(Opcode::Sub, {R(0), R(1), R(0)});
    p.emit(Opcode::Exp, {R(3), R(3)});
    p.emit(Opcode::Exp, {R(0), R(0)});
    p.emit(Opcode::Mul, {R(2), R(3), R(2)});
    p.emit(Opcode::Add, {R(2), R(0), R(2)});
  }
  normalize_pass(p, x, out, in.n);
  return p;
}

isa::Program online_attention(const ScalarInputs& in) {
  require_n(in);
  isa::Program p;
  p.file = "online-attention(n=" + std::to_string(in.n) + ")";
  int x = declare(p, "x", in.n, in.x, in, 0);
  int v = declare(p, "v", in.n, in.v, in, 1);
  int o = declare_output(p, "o", 1);
  add_check(p, "attend", o, {x, v});
  p.instructions.reserve(static_cast<size_t>(12 * in.n + 2));
  // R1 = m, R2 = denominator, R3 = numerator, R4 = old m then rescale factor, R5 = v_i.
  p.emit(Opcode::Load, {Operand::m(x, 0), R(0)});
  p.emit(Opcode::Mov, {R(0), R(1)});
  p.emit(Opcode::Sub, {R(0), R(1), R(0)});
  p.emit(Opcode::Exp, {R(0), R(0)});
  p.emit(Opcode::Mov, {R(0), R(2)});
  p.emit(Opcode::Load, {Operand::m(v, 0), R(5)});
  p.emit(Opcode::MacZ, {R(0), R(5), R(3)});
  for (int64_t i = 1; i < in.n; ++i) {
    p.emit(Opcode::Load, {Operand::m(x, i), R(0)});
    p.emit(Opcode::Mov, {R(1), R(4)});
    p.emit(Opcode::Max, {R(1), R(0), R(1)});
    p.emit(Opcode::Sub, {R(4), R(1), R(4)});
    p.emit(Opcode::Sub, {R(0), R(1), R(0)});
    p.emit(Opcode::Exp, {R(4), R(4)});
    p.emit(Opcode::Exp, {R(0), R(0)});
    p.emit(Opcode::Mul, {R(2), R(4), R(2)});
    p.emit(Opcode::Add, {R(2), R(0), R(2)});
    p.emit(Opcode::Load, {Operand::m(v, i), R(5)});
    p.emit(Opcode::Mul, {R(3), R(4), R(3)});
    p.emit(Opcode::Mac, {R(0), R(5), R(3), R(3)});
  }
  p.emit(Opcode::Div, {R(3), R(2), R(3)});
  p.emit(Opcode::Store, {R(3), Operand::m(o, 0)});
  return p;
}

const std::vector<GeneratorInfo>& scalar_generators() {
  static const std::vector<GeneratorInfo> generators = {
      {"softmax-safe", "3-pass safe softmax on 3 registers (seed 002 problem 4): 3n reads, n writes", 3},
      {"softmax-online",
       "online softmax then normalize on 4 registers (seed 002 problem 5): 2n reads, n writes", 4},
      {"online-attention", "one query, n scores x and scalar values v, one pass (seed 001 section 2)", 6},
  };
  return generators;
}

isa::Program generate_scalar(const std::string& name, const ScalarInputs& in) {
  if (name == "softmax-safe") return softmax_safe(in);
  if (name == "softmax-online") return softmax_online(in);
  if (name == "online-attention") return online_attention(in);
  std::string known;
  for (const auto& g : scalar_generators()) known += (known.empty() ? "" : ", ") + g.name;
  throw std::invalid_argument("unknown generator '" + name + "' (known: " + known + ")");
}

}  // namespace attnsim::traces
