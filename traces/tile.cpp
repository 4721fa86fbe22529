#include "traces/tile.h"

#include "traces/attention_forward.h"
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

// The FlashAttention-2 forward is one of the forward schedules (traces/attention_forward.cpp); this entry
// point keeps the single-head form the tile-machine tests and the seed 003 reproduction use.
void AttentionShape::check_mma() const {
  for (int64_t extent : mma)
    if (extent < 0 || extent > 256 || (extent == 0) != (mma[0] == 0))
      throw std::invalid_argument("mma: all three of M, N, K from 1 to 256, or all 0 for the machine's");
}

isa::Program flash2_forward(const AttentionShape& s) {
  ForwardShape shape;
  static_cast<AttentionShape&>(shape) = s;
  return forward_program(ForwardSchedule::Flash2, shape);
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
