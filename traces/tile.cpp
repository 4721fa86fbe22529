#include "traces/tile.h"

#include "traces/builder.h"

#include <algorithm>
#include <stdexcept>

namespace attnsim::traces {

using isa::Opcode;
using isa::Operand;

namespace {

void check_shape(const AttentionShape& s) {
  if (s.n < 1 || s.d < 1 || s.block_q < 1 || s.block_k < 1)
    throw std::invalid_argument("n, d and the block sizes must be positive");
}

}  // namespace

isa::Program flash2_forward(const AttentionShape& s) {
  check_shape(s);
  Builder b("flash2-forward(n=" + std::to_string(s.n) + ", d=" + std::to_string(s.d) +
            ", Br=" + std::to_string(s.block_q) + ", Bc=" + std::to_string(s.block_k) +
            (s.causal ? ", causal" : "") + ")");
  const Dtype acc = Dtype::F32;  // statistics and the output accumulator stay in fp32, as FlashAttention does
  const int q = b.tensor("Q", s.n, s.d, s.dtype, true, s.seed);
  const int k = b.tensor("K", s.n, s.d, s.dtype, true, s.seed + 1);
  const int v = b.tensor("V", s.n, s.d, s.dtype, true, s.seed + 2);
  const int o = b.tensor("O", s.n, s.d, s.dtype, false, 0);
  isa::Check check;
  check.function = s.causal ? "attention_causal" : "attention";
  check.target = o;
  check.args = {q, k, v};
  b.p.checks.push_back(check);

  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  const int qi = b.buffer("Qi", br, d, s.dtype);
  const int slots = s.double_buffer ? 2 : 1;
  int kj[2], vj[2];
  for (int slot = 0; slot < slots; ++slot) {
    kj[slot] = b.buffer(slots == 1 ? "Kj" : "Kj" + std::to_string(slot), bc, d, s.dtype);
    vj[slot] = b.buffer(slots == 1 ? "Vj" : "Vj" + std::to_string(slot), bc, d, s.dtype);
  }
  const int sc = b.buffer("S", br, bc, acc);
  const int pb = b.buffer("P", br, bc, s.dtype);
  const int m = b.buffer("m", br, 1, acc);
  const int m_tile = b.buffer("m_tile", br, 1, acc);
  const int m_new = b.buffer("m_new", br, 1, acc);
  const int alpha = b.buffer("alpha", br, 1, acc);
  const int l = b.buffer("l", br, 1, acc);
  const int l_tile = b.buffer("l_tile", br, 1, acc);
  const int oi = b.buffer("Oi", br, d, acc);

  for (int64_t q0 = 0; q0 < s.n; q0 += br) {
    const int64_t rows = std::min(br, s.n - q0);
    // Key blocks this query block sees: all, or (causal) those starting at or before its last row.
    const int64_t k_end = s.causal ? std::min(s.n, q0 + rows) : s.n;
    std::vector<int64_t> k_starts;
    for (int64_t k0 = 0; k0 < k_end; k0 += bc) k_starts.push_back(k0);
    b.emit(Opcode::Load, {b.rows_of(q, q0, rows), b.buf(qi, rows)});
    auto load_kv = [&](size_t j) {
      const int64_t k0 = k_starts[j];
      const int64_t cols = std::min(bc, s.n - k0);
      const int slot = static_cast<int>(j % slots);
      b.emit(Opcode::Load, {b.rows_of(k, k0, cols), b.buf(kj[slot], cols)});
      b.emit(Opcode::Load, {b.rows_of(v, k0, cols), b.buf(vj[slot], cols)});
    };
    load_kv(0);
    for (size_t j = 0; j < k_starts.size(); ++j) {
      if (s.double_buffer && j + 1 < k_starts.size()) load_kv(j + 1);  // prefetch into the other slot
      const int64_t k0 = k_starts[j];
      const int64_t cols = std::min(bc, s.n - k0);
      const int slot = static_cast<int>(j % slots);
      b.emit(Opcode::MacZ, {b.buf(qi, rows), b.buf(kj[slot], cols, -1, true), b.buf(sc, rows, cols)});
      if (s.causal && k0 + cols - 1 > q0)
        b.emit(Opcode::Mask, {b.buf(sc, rows, cols), Operand::imm(q0), Operand::imm(k0)});
      if (j == 0) {
        b.emit(Opcode::RowMax, {b.buf(sc, rows, cols), b.buf(m, rows)});
        b.emit(Opcode::Sub, {b.buf(sc, rows, cols), b.buf(m, rows), b.buf(sc, rows, cols)});
        b.emit(Opcode::Exp, {b.buf(sc, rows, cols), b.buf(pb, rows, cols)});
        b.emit(Opcode::RowSum, {b.buf(pb, rows, cols), b.buf(l, rows)});
        b.emit(Opcode::MacZ, {b.buf(pb, rows, cols), b.buf(vj[slot], cols), b.buf(oi, rows)});
      } else {
        // Online softmax update (seed 002's running max and rescale, on tiles).
        b.emit(Opcode::RowMax, {b.buf(sc, rows, cols), b.buf(m_tile, rows)});
        b.emit(Opcode::Max, {b.buf(m, rows), b.buf(m_tile, rows), b.buf(m_new, rows)});
        b.emit(Opcode::Sub, {b.buf(sc, rows, cols), b.buf(m_new, rows), b.buf(sc, rows, cols)});
        b.emit(Opcode::Exp, {b.buf(sc, rows, cols), b.buf(pb, rows, cols)});
        b.emit(Opcode::Sub, {b.buf(m, rows), b.buf(m_new, rows), b.buf(alpha, rows)});
        b.emit(Opcode::Exp, {b.buf(alpha, rows), b.buf(alpha, rows)});
        b.emit(Opcode::RowSum, {b.buf(pb, rows, cols), b.buf(l_tile, rows)});
        b.emit(Opcode::Mul, {b.buf(l, rows), b.buf(alpha, rows), b.buf(l, rows)});
        b.emit(Opcode::Add, {b.buf(l, rows), b.buf(l_tile, rows), b.buf(l, rows)});
        b.emit(Opcode::Mul, {b.buf(oi, rows), b.buf(alpha, rows), b.buf(oi, rows)});
        b.emit(Opcode::Mac, {b.buf(pb, rows, cols), b.buf(vj[slot], cols), b.buf(oi, rows), b.buf(oi, rows)});
        b.emit(Opcode::Mov, {b.buf(m_new, rows), b.buf(m, rows)});
      }
      if (!s.double_buffer && j + 1 < k_starts.size()) load_kv(j + 1);
    }
    b.emit(Opcode::Div, {b.buf(oi, rows), b.buf(l, rows), b.buf(oi, rows)});
    b.emit(Opcode::Store, {b.buf(oi, rows), b.rows_of(o, q0, rows)});
  }
  return b.take();
}

isa::Program standard_attention_on_chip(const AttentionShape& s) {
  check_shape(s);
  Builder b("standard-attention(n=" + std::to_string(s.n) + ", d=" + std::to_string(s.d) +
            (s.causal ? ", causal" : "") + ")");
  const Dtype acc = Dtype::F32;
  const int q = b.tensor("Q", s.n, s.d, s.dtype, true, s.seed);
  const int k = b.tensor("K", s.n, s.d, s.dtype, true, s.seed + 1);
  const int v = b.tensor("V", s.n, s.d, s.dtype, true, s.seed + 2);
  const int o = b.tensor("O", s.n, s.d, s.dtype, false, 0);
  isa::Check check;
  check.function = s.causal ? "attention_causal" : "attention";
  check.target = o;
  check.args = {q, k, v};
  b.p.checks.push_back(check);
  const int qb = b.buffer("Qall", s.n, s.d, s.dtype);
  const int kb = b.buffer("Kall", s.n, s.d, s.dtype);
  const int vb = b.buffer("Vall", s.n, s.d, s.dtype);
  const int sb = b.buffer("S", s.n, s.n, acc);
  const int pb = b.buffer("P", s.n, s.n, s.dtype);
  const int m = b.buffer("m", s.n, 1, acc);
  const int l = b.buffer("l", s.n, 1, acc);
  const int ob = b.buffer("Oall", s.n, s.d, acc);
  b.emit(Opcode::Load, {b.rows_of(q, 0, s.n), b.buf(qb)});
  b.emit(Opcode::Load, {b.rows_of(k, 0, s.n), b.buf(kb)});
  b.emit(Opcode::Load, {b.rows_of(v, 0, s.n), b.buf(vb)});
  b.emit(Opcode::MacZ, {b.buf(qb), b.buf(kb, -1, -1, true), b.buf(sb)});
  if (s.causal) b.emit(Opcode::Mask, {b.buf(sb), Operand::imm(0), Operand::imm(0)});
  b.emit(Opcode::RowMax, {b.buf(sb), b.buf(m)});
  b.emit(Opcode::Sub, {b.buf(sb), b.buf(m), b.buf(sb)});
  b.emit(Opcode::Exp, {b.buf(sb), b.buf(pb)});
  b.emit(Opcode::RowSum, {b.buf(pb), b.buf(l)});
  b.emit(Opcode::MacZ, {b.buf(pb), b.buf(vb), b.buf(ob)});
  b.emit(Opcode::Div, {b.buf(ob), b.buf(l), b.buf(ob)});
  b.emit(Opcode::Store, {b.buf(ob), b.rows_of(o, 0, s.n)});
  return b.take();
}

}  // namespace attnsim::traces
