// Lab 7: attention in the inner-product (FA2) and outer-product (FA1) loop orders, rows as 1 x d tiles.
// traces/loop_order.h gives the structure and the HBM traffic each order produces.
#include "traces/loop_order.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "traces/builder.h"

namespace attnsim::traces {

namespace {

const Dtype kState = Dtype::F32;  // m, l and the 1 x 1 scalars, as FlashAttention keeps its statistics

// Tensors and the buffers both orders share.
struct Common {
  int q, k, v, o, m, l;                        // HBM tensors
  int qi, kj, vj, s, p, m_new, alpha;          // SRAM buffers
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

// Where one query's running state (o, m, l) sits on chip: a 1-row buffer, or row `row` of a resident one.
struct State {
  int o, m, l;
  int64_t row = -1;  // -1: the whole 1-row buffer
};

// Row `row` of a buffer (resident outputs). Added per use, not shared: cheap at lab sizes and safe when
// the program is streamed in chunks.
Operand buffer_row(Builder& b, int buffer, int64_t row) {
  isa::TileRef t = b.p.buffer_tile(buffer);
  t.row0 = row;
  t.rows = 1;
  return Operand::tile(b.p.add_tile(t));
}

Operand view(Builder& b, int buffer, int64_t row) { return row < 0 ? b.buf(buffer) : buffer_row(b, buffer, row); }

void load_state(Builder& b, const Common& c, const State& st, int64_t i) {
  b.emit(Opcode::Load, {b.rows_of(c.o, i, 1), view(b, st.o, st.row)});
  b.emit(Opcode::Load, {b.rows_of(c.m, i, 1), view(b, st.m, st.row)});
  b.emit(Opcode::Load, {b.rows_of(c.l, i, 1), view(b, st.l, st.row)});
}

// The online-softmax step of query row i (in Qi) against key/value row j (in Kj, Vj): 11 instructions.
void step(Builder& b, const Common& c, const State& st) {
  const Operand o = view(b, st.o, st.row), m = view(b, st.m, st.row), l = view(b, st.l, st.row);
  const Operand s = b.buf(c.s), p = b.buf(c.p), m_new = b.buf(c.m_new), alpha = b.buf(c.alpha);
  b.emit(Opcode::MacZ, {b.buf(c.qi), b.buf(c.kj, -1, -1, true), s});  // s = q_i k_j^T
  b.emit(Opcode::Max, {m, s, m_new});                                  // m' = max(m, s)
  b.emit(Opcode::Sub, {s, m_new, s});
  b.emit(Opcode::Exp, {s, p});                                         // p = e^(s - m')
  b.emit(Opcode::Sub, {m, m_new, alpha});
  b.emit(Opcode::Exp, {alpha, alpha});                                 // a = e^(m - m')
  b.emit(Opcode::Mul, {l, alpha, l});
  b.emit(Opcode::Add, {l, p, l});                                      // l = l a + p
  b.emit(Opcode::Mul, {o, alpha, o});
  b.emit(Opcode::Mac, {p, b.buf(c.vj), o, o});                         // o = o a + p v_j
  b.emit(Opcode::Mov, {m_new, m});                                     // m = m'
}

void finish(Builder& b, const Common& c, const State& st, int64_t i) {
  const Operand o = view(b, st.o, st.row);
  b.emit(Opcode::Div, {o, view(b, st.l, st.row), o});  // o / l
  b.emit(Opcode::Store, {o, b.rows_of(c.o, i, 1)});
}

std::string title(const char* order, int64_t n, int64_t d, int64_t r = 0) {
  return std::string(order) + "(n=" + std::to_string(n) + ", d=" + std::to_string(d) +
         (r ? ", outputs_on_chip=" + std::to_string(r) : "") + ")";
}

}  // namespace

isa::Program inner_product_attention(int64_t n, int64_t d, const LoopOrderOptions& opt) {
  Builder b(title("inner-product-attention", n, d));
  const Common c = declare_common(b, n, d, opt);
  const State st{b.buffer("Oi", 1, d, opt.dtype), b.buffer("mi", 1, 1, kState), b.buffer("li", 1, 1, kState)};
  for (int64_t i = 0; i < n; ++i) {
    b.emit(Opcode::Load, {b.rows_of(c.q, i, 1), b.buf(c.qi)});  // q_i: once
    load_state(b, c, st, i);                                     // o_i, m_i, l_i: once (initial values)
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
  // Streaming slot for queries r..n-1 (reloaded and stored for every key row) and resident rows for 0..r-1.
  State streamed{-1, -1, -1};
  if (r < n) streamed = {b.buffer("Oi", 1, d, opt.dtype), b.buffer("mi", 1, 1, kState), b.buffer("li", 1, 1, kState)};
  int o_res = -1, m_res = -1, l_res = -1;
  if (r > 0) {
    o_res = b.buffer("O_res", r, d, opt.dtype);
    m_res = b.buffer("m_res", r, 1, kState);
    l_res = b.buffer("l_res", r, 1, kState);
  }
  auto state_of = [&](int64_t i) { return i < r ? State{o_res, m_res, l_res, i} : streamed; };

  for (int64_t i = 0; i < r; ++i) load_state(b, c, state_of(i), i);  // resident outputs: loaded once
  for (int64_t j = 0; j < n; ++j) {
    b.emit(Opcode::Load, {b.rows_of(c.k, j, 1), b.buf(c.kj)});  // k_j, v_j: once
    b.emit(Opcode::Load, {b.rows_of(c.v, j, 1), b.buf(c.vj)});
    const bool last = j == n - 1;
    for (int64_t i = 0; i < n; ++i) {
      const State st = state_of(i);
      b.emit(Opcode::Load, {b.rows_of(c.q, i, 1), b.buf(c.qi)});  // q_i: once per key row
      if (i >= r) load_state(b, c, st, i);                         // o_i, m_i, l_i: once per key row
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
