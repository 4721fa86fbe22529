// Lab 7: attention in the inner-product (FA2) and outer-product (FA1) loop orders, rows as 1 x d tiles.
// traces/loop_order.h gives the structure and the HBM traffic each order produces.
#include "traces/loop_order.h"

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/builder.h"

namespace attnsim::traces {

namespace {

const Dtype kState = Dtype::F32;  // m, l and the 1 x 1 scalars, as FlashAttention keeps its statistics

// Tensors and the buffers both orders share.
struct Common {
  int q, k, v, o, m, l;                // HBM tensors
  int qi, kj, vj, s, p, m_new, alpha;  // SRAM buffers
};

Common declare_common(Builder& b, int64_t n, int64_t d, const LoopOrderOptions& opt) {
  if (n < 1 || d < 1) throw std::invalid_argument("n and d must be positive");
  Common c{};
  c.q = b.tensor("Q", n, d, opt.dtype, true, opt.seed);
  c.k = b.tensor("K", n, d, opt.dtype, true, opt.seed + 1);
  c.v = b.tensor("V", n, d, opt.dtype, true, opt.seed + 2);
  c.o = b.tensor("O", n, d, opt.dtype, false, 0);  // zeros: the initial output rows
  c.m = b.vector_tensor("m", n, kState);
  b.p.tensors[c.m].init.kind = isa::TensorInit::Kind::Fill;  // fill(-inf): no key seen yet
  b.p.tensors[c.m].init.lo = -std::numeric_limits<double>::infinity();
  c.l = b.vector_tensor("l", n, kState);  // zeros
  b.check("attention", c.o, {c.q, c.k, c.v});
  c.qi = b.buffer("Qi", 1, d, opt.dtype);
  c.kj = b.buffer("Kj", 1, d, opt.dtype);
  c.vj = b.buffer("Vj", 1, d, opt.dtype);
  c.s = b.buffer("S", 1, 1, kState);
  c.p = b.buffer("P", 1, 1, kState);
  c.m_new = b.buffer("m_new", 1, 1, kState);
  c.alpha = b.buffer("alpha", 1, 1, kState);
  return c;
}

// Where one query's running state (o, m, l) sits on chip: three buffers (a 1 x d row and two 1 x 1).
struct State {
  int o = -1, m = -1, l = -1;
};

State declare_state(Builder& b, const std::string& suffix, int64_t d, Dtype dtype) {
  return {b.buffer("O" + suffix, 1, d, dtype), b.buffer("m" + suffix, 1, 1, kState),
          b.buffer("l" + suffix, 1, 1, kState)};
}

// Operands are made inline in each emit() (Builder may hand the program off in chunks between two
// instructions, and an operand must belong to its instruction's chunk).
void load_state(Builder& b, const Common& c, const State& st, int64_t i) {
  b.emit(Opcode::Load, {b.rows_of(c.o, i, 1), b.buf(st.o)});
  b.emit(Opcode::Load, {b.rows_of(c.m, i, 1), b.buf(st.m)});
  b.emit(Opcode::Load, {b.rows_of(c.l, i, 1), b.buf(st.l)});
}

// The online-softmax step of the query row in Qi against the key/value rows in Kj, Vj: 11 instructions.
void step(Builder& b, const Common& c, const State& st) {
  b.emit(Opcode::MacZ, {b.buf(c.qi), b.buf(c.kj, -1, -1, true), b.buf(c.s)});  // s = q_i k_j^T
  b.emit(Opcode::Max, {b.buf(st.m), b.buf(c.s), b.buf(c.m_new)});              // m' = max(m, s)
  b.emit(Opcode::Sub, {b.buf(c.s), b.buf(c.m_new), b.buf(c.s)});
  b.emit(Opcode::Exp, {b.buf(c.s), b.buf(c.p)});  // p = e^(s - m')
  b.emit(Opcode::Sub, {b.buf(st.m), b.buf(c.m_new), b.buf(c.alpha)});
  b.emit(Opcode::Exp, {b.buf(c.alpha), b.buf(c.alpha)});  // a = e^(m - m')
  b.emit(Opcode::Mul, {b.buf(st.l), b.buf(c.alpha), b.buf(st.l)});
  b.emit(Opcode::Add, {b.buf(st.l), b.buf(c.p), b.buf(st.l)});  // l = l a + p
  b.emit(Opcode::Mul, {b.buf(st.o), b.buf(c.alpha), b.buf(st.o)});
  b.emit(Opcode::Mac, {b.buf(c.p), b.buf(c.vj), b.buf(st.o), b.buf(st.o)});  // o = o a + p v_j
  b.emit(Opcode::Mov, {b.buf(c.m_new), b.buf(st.m)});                        // m = m'
}

void finish(Builder& b, const Common& c, const State& st, int64_t i) {
  b.emit(Opcode::Div, {b.buf(st.o), b.buf(st.l), b.buf(st.o)});  // o / l
  b.emit(Opcode::Store, {b.buf(st.o), b.rows_of(c.o, i, 1)});
}

std::string title(const char* order, int64_t n, int64_t d, int64_t r = 0) {
  return std::string(order) + "(n=" + std::to_string(n) + ", d=" + std::to_string(d) +
         (r ? ", outputs_on_chip=" + std::to_string(r) : "") + ")";
}

}  // namespace

isa::Program inner_product_attention(int64_t n, int64_t d, const LoopOrderOptions& opt) {
  Builder b(title("inner-product-attention", n, d));
  const Common c = declare_common(b, n, d, opt);
  const State st = declare_state(b, "i", d, opt.dtype);
  for (int64_t i = 0; i < n; ++i) {
    b.emit(Opcode::Load, {b.rows_of(c.q, i, 1), b.buf(c.qi)});  // q_i: once
    load_state(b, c, st, i);                                    // o_i, m_i, l_i: once (initial values)
    for (int64_t j = 0; j < n; ++j) {
      b.emit(Opcode::Load, {b.rows_of(c.k, j, 1), b.buf(c.kj)});  // every k_j, v_j for every query
      b.emit(Opcode::Load, {b.rows_of(c.v, j, 1), b.buf(c.vj)});
      step(b, c, st);
    }
    finish(b, c, st, i);  // o_i stored once; m_i, l_i die on chip
  }
  return b.take();
}

isa::Program outer_product_attention(int64_t n, int64_t d, const LoopOrderOptions& opt) {
  const int64_t r = opt.outputs_on_chip;
  if (r < 0 || r > n) throw std::invalid_argument("outputs_on_chip must be between 0 and n");
  Builder b(title("outer-product-attention", n, d, r));
  const Common c = declare_common(b, n, d, opt);
  // One slot for queries r..n-1 (reloaded and stored for every key row), and one kept slot per query 0..r-1.
  State streamed;
  if (r < n) streamed = declare_state(b, "i", d, opt.dtype);
  std::vector<State> kept;
  for (int64_t i = 0; i < r; ++i) kept.push_back(declare_state(b, "_slot" + std::to_string(i), d, opt.dtype));
  auto state_of = [&](int64_t i) { return i < r ? kept[static_cast<size_t>(i)] : streamed; };

  for (int64_t i = 0; i < r; ++i) load_state(b, c, state_of(i), i);  // resident outputs: loaded once
  for (int64_t j = 0; j < n; ++j) {
    b.emit(Opcode::Load, {b.rows_of(c.k, j, 1), b.buf(c.kj)});  // k_j, v_j: once
    b.emit(Opcode::Load, {b.rows_of(c.v, j, 1), b.buf(c.vj)});
    const bool last = j == n - 1;
    for (int64_t i = 0; i < n; ++i) {
      const State st = state_of(i);
      b.emit(Opcode::Load, {b.rows_of(c.q, i, 1), b.buf(c.qi)});  // q_i: once per key row
      if (i >= r) load_state(b, c, st, i);                        // o_i, m_i, l_i: once per key row
      step(b, c, st);
      if (i < r) continue;
      if (last) {
        finish(b, c, st, i);  // the final o_i / l_i; m_i, l_i are dead now
      } else {
        b.emit(Opcode::Store, {b.buf(st.o), b.rows_of(c.o, i, 1)});
        b.emit(Opcode::Store, {b.buf(st.m), b.rows_of(c.m, i, 1)});
        b.emit(Opcode::Store, {b.buf(st.l), b.rows_of(c.l, i, 1)});
      }
    }
  }
  for (int64_t i = 0; i < r; ++i) finish(b, c, state_of(i), i);  // resident outputs: stored once
  return b.take();
}

}  // namespace attnsim::traces
