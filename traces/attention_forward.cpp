#include "traces/attention_forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "traces/builder.h"

namespace attnsim::traces {

namespace {

using isa::Opcode;
using isa::Operand;

// Scores, row statistics and the output accumulator, as FlashAttention keeps them.
constexpr Dtype kAcc = Dtype::F32;

struct Block {
  int64_t start = 0;
  int64_t size = 0;
};

std::vector<Block> blocks(int64_t n, int64_t block) {
  std::vector<Block> out;
  for (int64_t start = 0; start < n; start += block) out.push_back({start, std::min(block, n - start)});
  return out;
}

// Key blocks a query block must see: all, or (causal) those starting at or before its last row.
std::vector<Block> visible_keys(const ForwardShape& s, const Block& q) {
  const int64_t end = s.causal ? std::min(s.n, q.start + q.size) : s.n;
  std::vector<Block> out;
  const int64_t last = s.as_mem_efficient ? end : s.n;  // where a key tile may end
  for (int64_t k0 = 0; k0 < end; k0 += s.block_k) out.push_back({k0, std::min(s.block_k, last - k0)});
  return out;
}

// A tile that reaches above the diagonal needs the causal mask; one wholly below it does not.
bool needs_mask(const ForwardShape& s, const Block& q, const Block& k) {
  return s.causal && k.start + k.size - 1 > q.start;
}

std::string describe(ForwardSchedule schedule, const ForwardShape& s) {
  std::string out = std::string(schedule_name(schedule)) + "(n=" + std::to_string(s.n) +
                    ", d=" + std::to_string(s.d) + ", Br=" + std::to_string(s.block_q) +
                    ", Bc=" + std::to_string(s.block_k);
  if (s.heads != 1) out += ", heads=" + std::to_string(s.heads);
  if (s.causal) out += ", causal";
  if (s.double_buffer) out += ", double-buffer";
  if (s.breaks.no_max_subtraction) out += ", no-max-subtraction";
  if (s.breaks.no_rescaling) out += ", no-rescaling";
  return out + ")";
}

// The Builder plus what every schedule shares: Q, K, V, O (3-D when heads > 1), head-aware tensor slices.
class Gen {
 public:
  Gen(ForwardSchedule schedule, const ForwardShape& shape) : s(shape), b(describe(schedule, shape)) {
    q = matrix("Q", s.n, s.d, s.dtype);
    k = matrix("K", s.n, s.d, s.dtype);
    v = matrix("V", s.n, s.d, s.dtype);
    o = matrix("O", s.n, s.d, s.dtype);
    if (s.heads_inner_outputs > 1) b.p.tensors[static_cast<size_t>(o)].heads_inner = s.heads_inner_outputs;
    random(q, s.seed, s.qk_range);
    random(k, s.seed + 1, s.qk_range);
    random(v, s.seed + 2, 1.0);
    b.check(s.causal ? "attention_causal" : "attention", o, {q, k, v});
  }

  // [n][cols], or [heads][n][cols].
  int matrix(const std::string& name, int64_t rows, int64_t cols, Dtype dtype) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = s.heads == 1 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{s.heads, rows, cols};
    t.dtype = dtype;
    return b.p.add_tensor(std::move(t));
  }
  // One f32 value per query row (m, l): [n], or [heads][n][1].
  int row_stat(const std::string& name) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = s.heads == 1 ? std::vector<int64_t>{s.n} : std::vector<int64_t>{s.heads, s.n, 1};
    t.dtype = kAcc;
    return b.p.add_tensor(std::move(t));
  }
  void random(int tensor, uint64_t seed, double range) {
    auto& init = b.p.tensors[tensor].init;
    init.kind = isa::TensorInit::Kind::Random;
    init.seed = seed;
    init.lo = -range;
    init.hi = range;
  }
  void fill(int tensor, double value) {
    auto& init = b.p.tensors[tensor].init;
    init.kind = isa::TensorInit::Kind::Fill;
    init.lo = value;
  }

  // Rows `r` (and columns [col0, col0 + cols), all by default) of head `head` of a tensor. Builder shares
  // repeated slices and keeps operands valid when the program is streamed in chunks.
  Operand at(int tensor, int64_t head, const Block& r, int64_t col0 = 0, int64_t cols = -1,
             bool transpose = false) {
    isa::TileRef t = b.p.tensor_rows(tensor, r.start, r.size, transpose, head);
    if (cols >= 0) {
      t.col0 = col0;
      t.cols = cols;
    }
    return b.tile(t);
  }
  // Operands are made where they are used, never kept across a loop: a streamed program is handed off in
  // chunks, and an operand made more than one chunk ago is refused (traces/builder.h).
  Operand buf(int buffer, int64_t rows = -1, int64_t cols = -1, bool transpose = false) {
    return b.buf(buffer, rows, cols, transpose);
  }
  void emit(Opcode op, std::initializer_list<Operand> operands) { b.emit(op, operands); }

  const ForwardShape& s;
  Builder b;
  int q = -1, k = -1, v = -1, o = -1;
};

// Walks `count` key blocks: load(j, slot) brings block j in, body(j, slot) uses it. Double buffered, block
// j + 1 is loaded into the other slot before block j is used, so the transfer overlaps the compute.
template <class Load, class Body>
void stream(size_t count, bool double_buffer, Load load, Body body) {
  const int slots = double_buffer ? 2 : 1;
  load(0, 0);
  for (size_t j = 0; j < count; ++j) {
    if (double_buffer && j + 1 < count) load(j + 1, static_cast<int>((j + 1) % 2));
    body(j, static_cast<int>(j % slots));
    if (!double_buffer && j + 1 < count) load(j + 1, 0);
  }
}

// The running-statistics buffers of a query block, for the schedules that keep (m, l) without O.
struct Stats {
  int m, m_tile, m_new, alpha, l, l_tile;
};

Stats stats_buffers(Gen& g, const std::string& m_name, const std::string& l_name) {
  const int64_t br = g.s.block_q;
  Stats st;
  st.m = g.b.buffer(m_name, br, 1, kAcc);
  st.m_tile = g.b.buffer("m_tile", br, 1, kAcc);
  st.m_new = g.b.buffer("m_new", br, 1, kAcc);
  st.alpha = g.b.buffer("alpha", br, 1, kAcc);
  st.l = g.b.buffer(l_name, br, 1, kAcc);
  st.l_tile = g.b.buffer("l_tile", br, 1, kAcc);
  return st;
}

// Online softmax statistics (seed 001 §1.3, on tiles) of the f32 score tile `sc`; `sc` is overwritten
// with its exponentials. With BREAK IT: no max at all (l = sum exp(S)), or the max kept but the old l
// not rescaled.
void online_stats(Gen& g, const Stats& st, int sc, int64_t rows, int64_t cols, bool first) {
  const BreakIt& br = g.s.breaks;
  auto S = [&] { return g.buf(sc, rows, cols); };
  if (br.no_max_subtraction) {
    g.emit(Opcode::Exp, {S(), S()});
    if (first) {
      g.emit(Opcode::RowSum, {S(), g.buf(st.l, rows)});
    } else {
      g.emit(Opcode::RowSum, {S(), g.buf(st.l_tile, rows)});
      g.emit(Opcode::Add, {g.buf(st.l, rows), g.buf(st.l_tile, rows), g.buf(st.l, rows)});
    }
    return;
  }
  if (first) {
    g.emit(Opcode::RowMax, {S(), g.buf(st.m, rows)});
    g.emit(Opcode::Sub, {S(), g.buf(st.m, rows), S()});
    g.emit(Opcode::Exp, {S(), S()});
    g.emit(Opcode::RowSum, {S(), g.buf(st.l, rows)});
    return;
  }
  g.emit(Opcode::RowMax, {S(), g.buf(st.m_tile, rows)});
  g.emit(Opcode::Max, {g.buf(st.m, rows), g.buf(st.m_tile, rows), g.buf(st.m_new, rows)});
  g.emit(Opcode::Sub, {S(), g.buf(st.m_new, rows), S()});
  g.emit(Opcode::Exp, {S(), S()});
  g.emit(Opcode::RowSum, {S(), g.buf(st.l_tile, rows)});
  if (!br.no_rescaling) {
    g.emit(Opcode::Sub, {g.buf(st.m, rows), g.buf(st.m_new, rows), g.buf(st.alpha, rows)});
    g.emit(Opcode::Exp, {g.buf(st.alpha, rows), g.buf(st.alpha, rows)});
    g.emit(Opcode::Mul, {g.buf(st.l, rows), g.buf(st.alpha, rows), g.buf(st.l, rows)});
  }
  g.emit(Opcode::Add, {g.buf(st.l, rows), g.buf(st.l_tile, rows), g.buf(st.l, rows)});
  g.emit(Opcode::Mov, {g.buf(st.m_new, rows), g.buf(st.m, rows)});
}

// naive-safe / naive-online: three kernels per head, each a sweep over tiles with HBM in between.
//   1. S = QK^T, every tile written to HBM (f32: the MXU's accumulator type, so the scores are the same
//      numbers the fused schedules keep on chip). Causal: diagonal tiles masked, tiles above the diagonal
//      still computed and written as all -inf: standard attention pays full price for masked entries.
//   2. softmax over the S tiles of each row block, the row statistics (m, l) kept on chip for the block:
//      safe = 3 passes (max, sum, normalise), online = 2 (running max and rescaled sum, normalise). The
//      last pass writes P (storage dtype, the MXU's input type) to HBM.
//   3. O = PV, reading every P tile (the masked zeros too) and V once per row block; O written once.
void naive(Gen& g, bool online) {
  const ForwardShape& s = g.s;
  const int S = g.matrix("S", s.n, s.n, kAcc);
  const int P = g.matrix("P", s.n, s.n, s.dtype);
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  const int qi = g.b.buffer("Qi", br, d, s.dtype);
  const int kj = g.b.buffer("Kj", bc, d, s.dtype);
  const int vj = g.b.buffer("Vj", bc, d, s.dtype);
  const int sc = g.b.buffer("Sij", br, bc, kAcc);
  const int pb = g.b.buffer("Pij", br, bc, s.dtype);
  const Stats st = stats_buffers(g, "mi", "li");
  const int oi = g.b.buffer("Oi", br, d, kAcc);
  const auto q_blocks = blocks(s.n, br);
  const auto k_blocks = blocks(s.n, bc);

  // Three kernels, each a grid of (query block, head) thread blocks, as the validation kernels launch them.
  const std::array<int64_t, 3> grid{static_cast<int64_t>(q_blocks.size()), s.heads, 1};
  const int k_scores = g.b.kernel("naive_qk", grid);
  const int k_softmax = g.b.kernel(online ? "naive_softmax_online" : "naive_softmax", grid);
  const int k_pv = g.b.kernel("naive_pv", grid);
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < q_blocks.size(); ++i) {
      const Block& qb = q_blocks[i];
      const int64_t rows = qb.size;
      g.b.begin_block(k_scores, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(qi, rows)});
      for (const Block& kb : k_blocks) {
        const int64_t cols = kb.size;
        g.emit(Opcode::Load, {g.at(g.k, h, kb), g.buf(kj, cols)});
        g.emit(Opcode::MacZ, {g.buf(qi, rows), g.buf(kj, cols, -1, true), g.buf(sc, rows, cols)});
        if (needs_mask(s, qb, kb))
          g.emit(Opcode::Mask, {g.buf(sc, rows, cols), Operand::imm(qb.start), Operand::imm(kb.start)});
        g.emit(Opcode::Store, {g.buf(sc, rows, cols), g.at(S, h, qb, kb.start, cols)});
      }
    }

  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < q_blocks.size(); ++i) {
      const Block& qb = q_blocks[i];
      const int64_t rows = qb.size;
      g.b.begin_block(k_softmax, {static_cast<int64_t>(i), h, 0});
      auto load_s = [&](const Block& kb) {
        g.emit(Opcode::Load, {g.at(S, h, qb, kb.start, kb.size), g.buf(sc, rows, kb.size)});
      };
      auto m = [&] { return g.buf(st.m, rows); };
      auto l = [&] { return g.buf(st.l, rows); };
      if (!online) {
        for (size_t j = 0; j < k_blocks.size(); ++j) {  // pass 1: row max
          load_s(k_blocks[j]);
          auto S_ij = [&] { return g.buf(sc, rows, k_blocks[j].size); };
          if (j == 0) {
            g.emit(Opcode::RowMax, {S_ij(), m()});
          } else {
            g.emit(Opcode::RowMax, {S_ij(), g.buf(st.m_tile, rows)});
            g.emit(Opcode::Max, {m(), g.buf(st.m_tile, rows), m()});
          }
        }
        for (size_t j = 0; j < k_blocks.size(); ++j) {  // pass 2: sum of exp(S - m)
          load_s(k_blocks[j]);
          auto S_ij = [&] { return g.buf(sc, rows, k_blocks[j].size); };
          g.emit(Opcode::Sub, {S_ij(), m(), S_ij()});
          g.emit(Opcode::Exp, {S_ij(), S_ij()});
          if (j == 0) {
            g.emit(Opcode::RowSum, {S_ij(), l()});
          } else {
            g.emit(Opcode::RowSum, {S_ij(), g.buf(st.l_tile, rows)});
            g.emit(Opcode::Add, {l(), g.buf(st.l_tile, rows), l()});
          }
        }
      } else {
        for (size_t j = 0; j < k_blocks.size(); ++j) {  // pass 1: running max and rescaled sum
          load_s(k_blocks[j]);
          online_stats(g, st, sc, rows, k_blocks[j].size, j == 0);
        }
      }
      for (const Block& kb : k_blocks) {  // last pass: P = exp(S - m) / l, to HBM
        load_s(kb);
        auto S_ij = [&] { return g.buf(sc, rows, kb.size); };
        if (!s.breaks.no_max_subtraction) g.emit(Opcode::Sub, {S_ij(), m(), S_ij()});
        g.emit(Opcode::Exp, {S_ij(), S_ij()});
        g.emit(Opcode::Div, {S_ij(), l(), g.buf(pb, rows, kb.size)});
        g.emit(Opcode::Store, {g.buf(pb, rows, kb.size), g.at(P, h, qb, kb.start, kb.size)});
      }
    }

  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < q_blocks.size(); ++i) {
      const Block& qb = q_blocks[i];
      const int64_t rows = qb.size;
      g.b.begin_block(k_pv, {static_cast<int64_t>(i), h, 0});
      for (size_t j = 0; j < k_blocks.size(); ++j) {
        const Block& kb = k_blocks[j];
        g.emit(Opcode::Load, {g.at(P, h, qb, kb.start, kb.size), g.buf(pb, rows, kb.size)});
        g.emit(Opcode::Load, {g.at(g.v, h, kb), g.buf(vj, kb.size)});
        if (j == 0)
          g.emit(Opcode::MacZ, {g.buf(pb, rows, kb.size), g.buf(vj, kb.size), g.buf(oi, rows)});
        else
          g.emit(Opcode::Mac,
                 {g.buf(pb, rows, kb.size), g.buf(vj, kb.size), g.buf(oi, rows), g.buf(oi, rows)});
      }
      g.emit(Opcode::Store, {g.buf(oi, rows), g.at(g.o, h, qb)});
    }
}

// With q_in_registers (q_regs >= 0): Q_i's fragments from its landed tile into registers, where the
// products read them, emitted before a block's first product, after its first K/V loads are issued (the
// kernels wait for all of them together).
void q_fragments(Gen& g, int landed, int q_regs, int64_t rows) {
  if (q_regs >= 0) g.emit(Opcode::Mov, {g.buf(landed, rows), g.buf(q_regs, rows)});
}

// two-pass (seed 001 §2.1 on tiles): two kernels per head, S never in HBM.
//   pass 1, per query block: stream the visible K blocks, S on chip, running (m, l); write m, l.
//   pass 2, per query block: reload Q, m, l; stream K and V, recompute S, P = exp(S - m) / l, O += PV;
//   write O once. Causal: tiles wholly above the diagonal skipped in both passes, diagonal ones masked.
void two_pass(Gen& g) {
  const ForwardShape& s = g.s;
  const bool has_max = !s.breaks.no_max_subtraction;  // no max: m is never computed, so never stored
  const int m = has_max ? g.row_stat("m") : -1;
  const int l = g.row_stat("l");
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  const int slots = s.double_buffer ? 2 : 1;
  const int qi = g.b.buffer("Qi", br, d, s.dtype);
  int kj[2], vj[2];
  for (int slot = 0; slot < slots; ++slot) {
    const std::string suffix = slots == 1 ? "" : std::to_string(slot);
    kj[slot] = g.b.buffer("Kj" + suffix, bc, d, s.dtype);
    vj[slot] = g.b.buffer("Vj" + suffix, bc, d, s.dtype);
  }
  const int sc = g.b.buffer("Sij", br, bc, kAcc);
  const int pb = g.b.buffer("Pij", br, bc, s.dtype);
  const Stats landed = stats_buffers(g, "mi", "li");
  const int oi = g.b.buffer("Oi", br, d, kAcc);
  // With registers, m_i and l_i live in registers as the kernels keep them, and pass through their SRAM
  // buffers (which the DMA reaches) once per block: staged for the store, read once after the load.
  Stats st = landed;
  const bool regs = s.accumulators_in_registers;
  if (regs) {
    st.m = g.b.buffer("mi_regs", br, 1, kAcc);
    st.l = g.b.buffer("li_regs", br, 1, kAcc);
    g.b.in_registers({sc, pb, st.m_tile, st.m_new, st.alpha, st.l_tile, oi, st.m, st.l});
  }
  const int q_regs = s.q_in_registers ? g.b.buffer("Q_regs", br, d, s.dtype) : -1;
  if (q_regs >= 0) g.b.in_registers({q_regs});
  const int q_operand = q_regs >= 0 ? q_regs : qi;  // what the products read
  const auto q_blocks = blocks(s.n, br);
  // Two kernels, each a grid of (query block, head) thread blocks.
  const std::array<int64_t, 3> grid{static_cast<int64_t>(q_blocks.size()), s.heads, 1};
  const int k_stats = g.b.kernel("two_pass_stats", grid);
  const int k_output = g.b.kernel("two_pass_output", grid);
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < q_blocks.size(); ++i) {
      const Block& qb = q_blocks[i];
      const int64_t rows = qb.size;
      const auto keys = visible_keys(s, qb);
      g.b.begin_block(k_stats, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(qi, rows)});
      stream(
          keys.size(), s.double_buffer,
          [&](size_t j, int slot) {
            g.emit(Opcode::Load, {g.at(g.k, h, keys[j]), g.buf(kj[slot], keys[j].size)});
          },
          [&](size_t j, int slot) {
            const int64_t cols = keys[j].size;
            if (j == 0) q_fragments(g, qi, q_regs, rows);
            g.emit(Opcode::MacZ,
                   {g.buf(q_operand, rows), g.buf(kj[slot], cols, -1, true), g.buf(sc, rows, cols)});
            if (needs_mask(s, qb, keys[j]))
              g.emit(Opcode::Mask,
                     {g.buf(sc, rows, cols), Operand::imm(qb.start), Operand::imm(keys[j].start)});
            online_stats(g, st, sc, rows, cols, j == 0);
          });
      if (regs && has_max) g.emit(Opcode::Mov, {g.buf(st.m, rows), g.buf(landed.m, rows)});
      if (regs) g.emit(Opcode::Mov, {g.buf(st.l, rows), g.buf(landed.l, rows)});
      if (has_max) g.emit(Opcode::Store, {g.buf(landed.m, rows), g.at(m, h, qb)});
      g.emit(Opcode::Store, {g.buf(landed.l, rows), g.at(l, h, qb)});
    }

  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < q_blocks.size(); ++i) {
      const Block& qb = q_blocks[i];
      const int64_t rows = qb.size;
      const auto keys = visible_keys(s, qb);
      g.b.begin_block(k_output, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(qi, rows)});
      if (has_max) g.emit(Opcode::Load, {g.at(m, h, qb), g.buf(landed.m, rows)});
      g.emit(Opcode::Load, {g.at(l, h, qb), g.buf(landed.l, rows)});
      if (regs && has_max) g.emit(Opcode::Mov, {g.buf(landed.m, rows), g.buf(st.m, rows)});
      if (regs) g.emit(Opcode::Mov, {g.buf(landed.l, rows), g.buf(st.l, rows)});
      stream(
          keys.size(), s.double_buffer,
          [&](size_t j, int slot) {
            g.emit(Opcode::Load, {g.at(g.k, h, keys[j]), g.buf(kj[slot], keys[j].size)});
            g.emit(Opcode::Load, {g.at(g.v, h, keys[j]), g.buf(vj[slot], keys[j].size)});
          },
          [&](size_t j, int slot) {
            const int64_t cols = keys[j].size;
            auto S_ij = [&] { return g.buf(sc, rows, cols); };
            auto P_ij = [&] { return g.buf(pb, rows, cols); };
            if (j == 0) q_fragments(g, qi, q_regs, rows);
            g.emit(Opcode::MacZ, {g.buf(q_operand, rows), g.buf(kj[slot], cols, -1, true), S_ij()});
            if (needs_mask(s, qb, keys[j]))
              g.emit(Opcode::Mask, {S_ij(), Operand::imm(qb.start), Operand::imm(keys[j].start)});
            if (has_max) g.emit(Opcode::Sub, {S_ij(), g.buf(st.m, rows), S_ij()});
            g.emit(Opcode::Exp, {S_ij(), S_ij()});
            g.emit(Opcode::Div, {S_ij(), g.buf(st.l, rows), P_ij()});
            if (j == 0)
              g.emit(Opcode::MacZ, {P_ij(), g.buf(vj[slot], cols), g.buf(oi, rows)});
            else
              g.emit(Opcode::Mac, {P_ij(), g.buf(vj[slot], cols), g.buf(oi, rows), g.buf(oi, rows)});
          });
      int stored = oi;
      if (s.accumulators_in_registers) {  // staged through Q_i's SRAM, in the storage dtype
        g.emit(Opcode::Mov, {g.buf(oi, rows), g.buf(qi, rows)});
        stored = qi;
      }
      g.emit(Opcode::Store, {g.buf(stored, rows), g.at(g.o, h, qb)});
    }
}

// flash1: FlashAttention Algorithm 1 (seed 000). O = 0, l = 0, m = -inf in HBM; outer loop over K/V
// blocks j, inner over query blocks i; each step loads Q_i, O_i, l_i, m_i, updates them and writes O_i,
// l_i, m_i back, O_i kept normalised (divided by l_new) after every step as in the paper.
// P~ = exp(S - m_new) instead of the paper's e^(m~ - m_new) exp(S - m~): the same numbers, and no
// exp(-inf - -inf) for a row the causal mask hides entirely in this tile.
// Causal: tiles wholly above the diagonal are skipped, diagonal ones masked.
// Double buffered: the next step's Q_i, O_i, l_i, m_i (and, at a new j, K_j, V_j) load during this step,
// except when the next step revisits the rows this step writes (it must read them after the store).
void flash1(Gen& g) {
  const ForwardShape& s = g.s;
  const bool has_max = !s.breaks.no_max_subtraction;
  const int m = has_max ? g.row_stat("m") : -1;
  const int l = g.row_stat("l");
  if (has_max) g.fill(m, -std::numeric_limits<double>::infinity());
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  const int slots = s.double_buffer ? 2 : 1;
  const bool regs = s.accumulators_in_registers;
  int qi[2], oi[2], li[2], mi[2], l_new[2], m_new[2], kj[2], vj[2];
  for (int slot = 0; slot < slots; ++slot) {
    const std::string suffix = slots == 1 ? "" : std::to_string(slot);
    kj[slot] = g.b.buffer("Kj" + suffix, bc, d, s.dtype);
    vj[slot] = g.b.buffer("Vj" + suffix, bc, d, s.dtype);
  }
  for (int slot = 0; slot < slots; ++slot) {
    const std::string suffix = slots == 1 ? "" : std::to_string(slot);
    qi[slot] = g.b.buffer("Qi" + suffix, br, d, s.dtype);
    // With the accumulators in registers O_i lands in SRAM as stored (the kernel's fp16 tile) and is
    // updated in a register accumulator.
    oi[slot] = g.b.buffer("Oi" + suffix, br, d, regs ? s.dtype : kAcc);
    li[slot] = g.b.buffer("li" + suffix, br, 1, kAcc);
    mi[slot] = g.b.buffer("mi" + suffix, br, 1, kAcc);
    l_new[slot] = g.b.buffer("l_new" + suffix, br, 1, kAcc);
    m_new[slot] = g.b.buffer("m_new" + suffix, br, 1, kAcc);
  }
  const int sc = g.b.buffer("Sij", br, bc, kAcc);
  const int pb = g.b.buffer("Pij", br, bc, s.dtype);
  const int m_tile = g.b.buffer("m_tile", br, 1, kAcc);
  const int l_tile = g.b.buffer("l_tile", br, 1, kAcc);
  const int alpha = g.b.buffer("alpha", br, 1, kAcc);
  const int scale = g.b.buffer("scale", br, 1, kAcc);
  const int o_acc = regs ? g.b.buffer("O_acc", br, d, kAcc) : -1;
  // What the DMA loads and stores (l_i, m_i, l_new, m_new, O_i's tile) stays in SRAM: it reaches SRAM only.
  if (regs) g.b.in_registers({sc, pb, m_tile, l_tile, alpha, scale, o_acc});

  struct Step {
    int64_t head;
    Block q, k;
    bool first_of_kv;
    int kv_index;
  };
  // The (head, key block, query block) steps in order, produced one at a time: a list of them would grow
  // as heads x N^2 / (B_r B_c) and defeat streaming at long N.
  const std::vector<Block> key_blocks = blocks(s.n, bc), query_blocks = blocks(s.n, br);
  struct StepCursor {
    const ForwardShape& s;
    const std::vector<Block>& keys;
    const std::vector<Block>& queries;
    int64_t h = 0;
    size_t kb = 0, qb = 0;
    int kv_index = 0;
    bool first = true;
    bool next(Step& out) {
      for (; kb < keys.size(); ++kb, h = 0) {
        for (; h < s.heads; ++h, qb = 0, first = true, ++kv_index) {
          for (; qb < queries.size(); ++qb) {
            const Block& q = queries[qb];
            const Block& k = keys[kb];
            if (s.causal && k.start > q.start + q.size - 1) continue;  // every key after every query
            out = {h, q, k, first, kv_index};
            first = false;
            ++qb;
            return true;
          }
        }
      }
      return false;
    }
  } cursor{s, key_blocks, query_blocks};

  auto load_kv = [&](const Step& st) {
    const int slot = st.kv_index % slots;
    g.emit(Opcode::Load, {g.at(g.k, st.head, st.k), g.buf(kj[slot], st.k.size)});
    g.emit(Opcode::Load, {g.at(g.v, st.head, st.k), g.buf(vj[slot], st.k.size)});
  };
  auto load_q = [&](const Step& st, int slot) {
    const int64_t rows = st.q.size;
    g.emit(Opcode::Load, {g.at(g.q, st.head, st.q), g.buf(qi[slot], rows)});
    g.emit(Opcode::Load, {g.at(g.o, st.head, st.q), g.buf(oi[slot], rows)});
    g.emit(Opcode::Load, {g.at(l, st.head, st.q), g.buf(li[slot], rows)});
    if (has_max) g.emit(Opcode::Load, {g.at(m, st.head, st.q), g.buf(mi[slot], rows)});
  };
  auto same_rows = [](const Step& a, const Step& b) { return a.head == b.head && a.q.start == b.q.start; };

  // One launch per key block j, grid (1, head): the block of head h keeps K_j, V_j on chip and walks the
  // query blocks (the validation kernels' --flash1-groups 1). Prefetching stops at a block's last step.
  std::vector<int> launches;
  for (size_t j = 0; j < key_blocks.size(); ++j)
    launches.push_back(g.b.kernel("flash1_step_" + std::to_string(j), {1, s.heads, 1}));
  Step st{}, upcoming{};
  bool has_step = cursor.next(st);
  bool has_next = has_step && cursor.next(upcoming);
  for (size_t t = 0; has_step; ++t) {
    const int qs = static_cast<int>(t % slots), ks = st.kv_index % slots;
    if (st.first_of_kv) {
      g.b.begin_block(launches[static_cast<size_t>(st.k.start / bc)], {0, st.head, 0});
      if (s.double_buffer) {
        load_kv(st);
        load_q(st, qs);
      }
    }
    if (!s.double_buffer) {
      if (st.first_of_kv) load_kv(st);
      load_q(st, 0);
    } else if (has_next && !upcoming.first_of_kv && !same_rows(st, upcoming)) {
      load_q(upcoming, static_cast<int>((t + 1) % 2));  // a next step of another block is its own to load
    }

    const int64_t rows = st.q.size, cols = st.k.size;
    auto S_ij = [&] { return g.buf(sc, rows, cols); };
    auto P_ij = [&] { return g.buf(pb, rows, cols); };
    auto O_i = [&] { return g.buf(regs ? o_acc : oi[qs], rows); };
    g.emit(Opcode::MacZ, {g.buf(qi[qs], rows), g.buf(kj[ks], cols, -1, true), S_ij()});
    if (needs_mask(s, st.q, st.k))
      g.emit(Opcode::Mask, {S_ij(), Operand::imm(st.q.start), Operand::imm(st.k.start)});
    int old_l_factor =
        li[qs];  // what the old l and O are multiplied by: l_i e^(m_i - m_new), or l_i if broken
    if (has_max) {
      g.emit(Opcode::RowMax, {S_ij(), g.buf(m_tile, rows)});
      g.emit(Opcode::Max, {g.buf(mi[qs], rows), g.buf(m_tile, rows), g.buf(m_new[qs], rows)});
      g.emit(Opcode::Sub, {S_ij(), g.buf(m_new[qs], rows), S_ij()});
    }
    g.emit(Opcode::Exp, {S_ij(), P_ij()});
    g.emit(Opcode::RowSum, {P_ij(), g.buf(l_tile, rows)});
    if (has_max && !s.breaks.no_rescaling) {
      g.emit(Opcode::Sub, {g.buf(mi[qs], rows), g.buf(m_new[qs], rows), g.buf(alpha, rows)});
      g.emit(Opcode::Exp, {g.buf(alpha, rows), g.buf(alpha, rows)});
      g.emit(Opcode::Mul, {g.buf(li[qs], rows), g.buf(alpha, rows), g.buf(scale, rows)});
      old_l_factor = scale;
    }
    // O_i <- (l_i e^(m_i - m_new) O_i + P~ V_j) / l_new, with l_new = l_i e^(m_i - m_new) + rowsum(P~).
    g.emit(Opcode::Add, {g.buf(old_l_factor, rows), g.buf(l_tile, rows), g.buf(l_new[qs], rows)});
    if (regs) g.emit(Opcode::Mov, {g.buf(oi[qs], rows), O_i()});
    g.emit(Opcode::Mul, {O_i(), g.buf(old_l_factor, rows), O_i()});
    g.emit(Opcode::Mac, {P_ij(), g.buf(vj[ks], cols), O_i(), O_i()});
    g.emit(Opcode::Div, {O_i(), g.buf(l_new[qs], rows), O_i()});
    if (regs) g.emit(Opcode::Mov, {O_i(), g.buf(oi[qs], rows)});
    g.emit(Opcode::Store, {g.buf(oi[qs], rows), g.at(g.o, st.head, st.q)});
    g.emit(Opcode::Store, {g.buf(l_new[qs], rows), g.at(l, st.head, st.q)});
    if (has_max) g.emit(Opcode::Store, {g.buf(m_new[qs], rows), g.at(m, st.head, st.q)});
    if (s.double_buffer && has_next && !upcoming.first_of_kv && same_rows(st, upcoming))
      load_q(upcoming, static_cast<int>((t + 1) % 2));
    st = upcoming;
    has_step = has_next;
    if (has_step) has_next = cursor.next(upcoming);
  }
}

// One group of query rows' running state in flash2: the whole query block, or one of its two halves
// with ping_pong.
struct Flash2Rows {
  int sc = -1, pb = -1, m = -1, m_tile = -1, m_new = -1, alpha = -1, l = -1, l_tile = -1, oi = -1;
};

// flash2's on-chip buffers (K and V twice when double-buffered) and, with store_row_statistic, its tensor.
struct Flash2Buffers {
  int qi = -1, kj[2] = {-1, -1}, vj[2] = {-1, -1};
  int q_regs = -1;     // with registers: Q_i's fragments, read from its SRAM tile once per query block
  Flash2Rows half[2];  // [1] only with ping_pong
  int stats = -1;      // one f32 per query row, stored with O
  int local = -1, spill = -1;  // spill stores: a tensor of a row per block, and the buffer stored there
  int64_t local_rows = 0;      // rows of `local`: block b stores to row b mod local_rows
};

Flash2Rows flash2_rows(Gen& g, int64_t rows, const std::string& suffix) {
  const ForwardShape& s = g.s;
  const int64_t bc = s.block_k, d = s.d;
  Flash2Rows r;
  r.sc = g.b.buffer("S" + suffix, rows, bc, kAcc);
  r.pb = g.b.buffer("P" + suffix, rows, bc, s.dtype);
  r.m = g.b.buffer("m" + suffix, rows, 1, kAcc);
  r.m_tile = g.b.buffer("m_tile" + suffix, rows, 1, kAcc);
  r.m_new = g.b.buffer("m_new" + suffix, rows, 1, kAcc);
  r.alpha = g.b.buffer("alpha" + suffix, rows, 1, kAcc);
  r.l = g.b.buffer("l" + suffix, rows, 1, kAcc);
  r.l_tile = g.b.buffer("l_tile" + suffix, rows, 1, kAcc);
  r.oi = g.b.buffer("Oi" + suffix, rows, d, kAcc);
  if (s.accumulators_in_registers) {
    // l stays in SRAM when it is stored as the row statistic: the DMA stores from SRAM only. The
    // memory-efficient kernel writes P to shared memory for its second product, which reads it from there
    // (CUTLASS's B2bGemm::accumToSmem, then an MMA from shared memory).
    g.b.in_registers({r.sc, r.m, r.m_tile, r.m_new, r.alpha, r.l_tile, r.oi});
    if (!s.as_mem_efficient) g.b.in_registers({r.pb});
    if (!s.store_row_statistic) g.b.in_registers({r.l});
  }
  return r;
}

// Rows of a query block that each half of a ping-pong pair takes: the first ceil(B_r / 2), then the rest.
int64_t first_half_rows(int64_t rows) {
  return (rows + 1) / 2;
}

Flash2Buffers flash2_buffers(Gen& g) {
  const ForwardShape& s = g.s;
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  Flash2Buffers f;
  f.qi = g.b.buffer("Qi", br, d, s.dtype);
  // The project's kernels load Q_i's fragments into registers once (ldmatrix before the key loop).
  if (s.q_in_registers) {
    f.q_regs = g.b.buffer("Q_regs", br, d, s.dtype);
    g.b.in_registers({f.q_regs});
  }
  const int slots = s.double_buffer ? 2 : 1;
  for (int slot = 0; slot < slots; ++slot) {
    f.kj[slot] = g.b.buffer(slots == 1 ? "Kj" : "Kj" + std::to_string(slot), bc, d, s.dtype);
    f.vj[slot] = g.b.buffer(slots == 1 ? "Vj" : "Vj" + std::to_string(slot), bc, d, s.dtype);
  }
  f.half[0] = flash2_rows(g, s.ping_pong ? first_half_rows(br) : br, "");
  if (s.ping_pong) f.half[1] = flash2_rows(g, br - first_half_rows(br), "_b");
  if (s.store_row_statistic) f.stats = g.row_stat("stats");
  const int64_t spill_bytes = std::max(s.spill_bytes_per_block, s.spill_bytes_per_key_block);
  if (spill_bytes > 0) {
    const int64_t blocks = s.persistent_blocks > 0 ? s.persistent_blocks : s.heads * ((s.n + br - 1) / br);
    f.local_rows = s.spill_rows > 0 ? std::min(s.spill_rows, blocks) : blocks;
    f.local = g.b.tensor("local", f.local_rows, spill_bytes / 4, kAcc, false, 0);
    f.spill = g.b.buffer("spill", 1, spill_bytes / 4, kAcc);
  }
  return f;
}

// Q rows of a group: the whole Q_i buffer, or a half's rows of it.
struct QRows {
  Block rows;    // the group's query rows (positions in the sequence)
  int64_t row0;  // its first row in Q_i
  bool whole;    // the whole query block: Q_i's plain view, as without ping_pong
};

Operand q_view(Gen& g, const Flash2Buffers& f, const QRows& q, bool operand = false) {
  const int buffer = operand && f.q_regs >= 0 ? f.q_regs : f.qi;
  return q.whole ? g.buf(buffer, q.rows.size) : g.b.buf_rows(buffer, q.row0, q.rows.size);
}

// S = Q K_j^T for a group's rows, masked where the tile reaches above the diagonal.
void flash2_score(Gen& g, const Flash2Buffers& f, const Flash2Rows& r, const QRows& q, const Block& key,
                  int slot) {
  const int64_t rows = q.rows.size, cols = key.size;
  g.emit(Opcode::MacZ, {q_view(g, f, q, true), g.buf(f.kj[slot], cols, -1, true), g.buf(r.sc, rows, cols)});
  if (needs_mask(g.s, q.rows, key))
    g.emit(Opcode::Mask, {g.buf(r.sc, rows, cols), Operand::imm(q.rows.start), Operand::imm(key.start)});
}

// alpha = exp(m - m_new), the factor the running l and O are rescaled by (none with BREAK IT's no-rescale).
void flash2_alpha(Gen& g, const Flash2Rows& r, int64_t rows) {
  if (g.s.breaks.no_rescaling) return;
  g.emit(Opcode::Sub, {g.buf(r.m, rows), g.buf(r.m_new, rows), g.buf(r.alpha, rows)});
  g.emit(Opcode::Exp, {g.buf(r.alpha, rows), g.buf(r.alpha, rows)});
}

void flash2_rescale_o(Gen& g, const Flash2Rows& r, int64_t rows) {
  if (!g.s.breaks.no_rescaling)
    g.emit(Opcode::Mul, {g.buf(r.oi, rows), g.buf(r.alpha, rows), g.buf(r.oi, rows)});
}

// S's row max: m on the first key block, else m_tile and the new running max m_new (none without max).
void flash2_row_max(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first) {
  if (g.s.breaks.no_max_subtraction) return;
  const int max = first ? r.m : r.m_tile;
  g.emit(Opcode::RowMax, {g.buf(r.sc, rows, cols), g.buf(max, rows)});
  if (!first) g.emit(Opcode::Max, {g.buf(r.m, rows), g.buf(r.m_tile, rows), g.buf(r.m_new, rows)});
}

// P = exp(S - m) (m: the first key block's max or the new running max; exp(S) without max).
void flash2_exp(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first) {
  auto S = [&] { return g.buf(r.sc, rows, cols); };
  if (!g.s.breaks.no_max_subtraction) g.emit(Opcode::Sub, {S(), g.buf(first ? r.m : r.m_new, rows), S()});
  g.emit(Opcode::Exp, {S(), g.buf(r.pb, rows, cols)});
}

// l from P: its row sum, added to the rescaled l after the first key block.
void flash2_row_sum(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first) {
  const BreakIt& brk = g.s.breaks;
  auto row = [&](int buffer) { return g.buf(buffer, rows); };
  g.emit(Opcode::RowSum, {g.buf(r.pb, rows, cols), row(first ? r.l : r.l_tile)});
  if (first) return;
  if (!brk.no_max_subtraction && !brk.no_rescaling) g.emit(Opcode::Mul, {row(r.l), row(r.alpha), row(r.l)});
  g.emit(Opcode::Add, {row(r.l), row(r.l_tile), row(r.l)});
}

// The online softmax of a group's rows from its S (seed 002's running max and rescale, on tiles): P, the
// statistics, and O rescaled last (first: the group's first key block, which sets m and l). The
// ping-pong consumers' and the memory-efficient kernel's order: all of it before their P V_j.
void flash2_softmax(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first) {
  const bool online = !first && !g.s.breaks.no_max_subtraction;
  flash2_row_max(g, r, rows, cols, first);
  flash2_exp(g, r, rows, cols, first);
  if (online) flash2_alpha(g, r, rows);
  flash2_row_sum(g, r, rows, cols, first);
  if (online) flash2_rescale_o(g, r, rows);
}

// What O += P V_j needs of the online softmax, in FlashAttention-2's softmax_rescale_o order: the new
// running max, alpha and O rescaled, then P = exp(S - m). The row sum follows P V_j in the program
// (flash2_update): a warp's compiled code interleaves the sum's adds with the product's mma instructions,
// so the sum is not on the product's path (an in-order tile stream would otherwise hold P V_j behind it).
void flash2_probabilities(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first) {
  const bool online = !first && !g.s.breaks.no_max_subtraction;
  flash2_row_max(g, r, rows, cols, first);
  if (online) {
    flash2_alpha(g, r, rows);
    flash2_rescale_o(g, r, rows);
  }
  flash2_exp(g, r, rows, cols, first);
}

// O += P V_j for a group's rows (O = P V_j on its first key block), then the new running max is kept.
void flash2_pv(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first, int v_buffer) {
  auto P = [&] { return g.buf(r.pb, rows, cols); };
  auto O = [&] { return g.buf(r.oi, rows); };
  if (first) {
    g.emit(Opcode::MacZ, {P(), g.buf(v_buffer, cols), O()});
    return;
  }
  g.emit(Opcode::Mac, {P(), g.buf(v_buffer, cols), O(), O()});
  if (!g.s.breaks.no_max_subtraction) g.emit(Opcode::Mov, {g.buf(r.m_new, rows), g.buf(r.m, rows)});
}

// The online softmax update of a group's rows from its S and O += P V_j (first: the group's first key
// block, which sets m, l and O).
// ForwardShape::sum_after_product puts the row sum after the product (never for the memory-efficient
// kernel, which sums its rows across warps through shared memory and meets at a barrier before its P V_j
// reads P there: iterative_softmax, then accumToSmem and __syncthreads).
void flash2_update(Gen& g, const Flash2Rows& r, int64_t rows, int64_t cols, bool first, int v_buffer) {
  if (!g.s.sum_after_product) {
    flash2_softmax(g, r, rows, cols, first);
    flash2_pv(g, r, rows, cols, first, v_buffer);
    return;
  }
  flash2_probabilities(g, r, rows, cols, first);
  flash2_pv(g, r, rows, cols, first, v_buffer);
  flash2_row_sum(g, r, rows, cols, first);
}

// O = O / l for a group; in registers it is staged through its rows of Q_i (FlashAttention-2's sO aliases
// sQ), else stored from its own buffer; the row statistic l follows.
void flash2_finish(Gen& g, const Flash2Buffers& f, const Flash2Rows& r, int64_t h, const QRows& q,
                   bool store_o) {
  const int64_t rows = q.rows.size;
  g.emit(Opcode::Div, {g.buf(r.oi, rows), g.buf(r.l, rows), g.buf(r.oi, rows)});
  if (g.s.accumulators_in_registers)
    g.emit(Opcode::Mov, {g.buf(r.oi, rows), q_view(g, f, q)});
  else if (store_o)
    g.emit(Opcode::Store, {g.buf(r.oi, rows), g.at(g.o, h, q.rows)});
  if (store_o && g.s.accumulators_in_registers)
    g.emit(Opcode::Store, {q_view(g, f, q), g.at(g.o, h, q.rows)});
  if (f.stats >= 0) g.emit(Opcode::Store, {g.buf(r.l, rows), g.at(f.stats, h, q.rows)});
}

void load_kv_block(Gen& g, const Flash2Buffers& f, int64_t h, const Block& qb, const Block& key, size_t j,
                   int slot) {
  const ForwardShape& s = g.s;
  if (s.as_mem_efficient && j > 0) g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(f.qi, qb.size)});
  g.emit(Opcode::Load, {g.at(g.k, h, key), g.buf(f.kj[slot], key.size)});
  g.emit(Opcode::Load, {g.at(g.v, h, key), g.buf(f.vj[slot], key.size)});
}

// `bytes` of spill stores of a block into its row of `local` (nothing for 0).
void store_spill(Gen& g, const Flash2Buffers& f, int64_t block, int64_t bytes) {
  if (bytes <= 0) return;
  g.emit(Opcode::Store,
         {g.buf(f.spill, 1, bytes / 4), g.b.slice(f.local, block % f.local_rows, 1, 0, bytes / 4)});
}

// One query block of one head: load Q_i, stream its visible K/V blocks, store O_i (and the row statistic);
// `block` is its row of `local` for spill stores after each key block.
void flash2_tile(Gen& g, const Flash2Buffers& f, int64_t h, const Block& qb, int64_t block) {
  const ForwardShape& s = g.s;
  auto keys = visible_keys(s, qb);
  if (s.keys_descending) std::reverse(keys.begin(), keys.end());
  const QRows all{qb, 0, true};
  g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(f.qi, qb.size)});
  stream(
      keys.size(), s.double_buffer, [&](size_t j, int slot) { load_kv_block(g, f, h, qb, keys[j], j, slot); },
      [&](size_t j, int slot) {
        if (j == 0) q_fragments(g, f.qi, f.q_regs, qb.size);
        flash2_score(g, f, f.half[0], all, keys[j], slot);
        flash2_update(g, f.half[0], qb.size, keys[j].size, j == 0, f.vj[slot]);
        store_spill(g, f, block, s.spill_bytes_per_key_block);
      });
  flash2_finish(g, f, f.half[0], h, all, true);
}

// ping_pong: the query block's two halves as two consumer warp groups that take turns at the tensor
// cores (FlashAttention-3, cuDNN's Hopper forward): instruction groups 1 and 2, each its own in-order
// stream, while group 0 (a producer) loads Q_i, K_j, V_j and stores O_i. Each unit takes its instructions
// in program order, so the program is written in the order they run. Double buffered, a step j issues
//   S_A(j+1); softmax_B(j); P_A(j) V_j; S_B(j+1); softmax_A(j+1); P_B(j) V_j
// (FlashAttention-3's pattern): the MXU's products of one half run while the VPU does the other half's
// softmax, and each half's next S is ready when its softmax comes. K_j+2 and V_j+1 load at the step's
// start, into the slots K_j and V_j-1 left. Single buffered, the halves alternate within a key block. A
// half skips the key blocks wholly above its rows (causal).
void flash2_tile_ping_pong(Gen& g, const Flash2Buffers& f, int64_t h, const Block& qb) {
  const ForwardShape& s = g.s;
  auto keys = visible_keys(s, qb);
  if (s.keys_descending) std::reverse(keys.begin(), keys.end());
  const size_t count = keys.size();
  const int64_t rows_a = first_half_rows(qb.size);
  const QRows half[2] = {{{qb.start, rows_a}, 0, false},
                         {{qb.start + rows_a, qb.size - rows_a}, rows_a, false}};
  const size_t slots = s.double_buffer ? 2 : 1;
  auto slot_of = [&](size_t j) { return static_cast<int>(j % slots); };
  auto visible = [&](int x, size_t j) {
    return j < count && (!s.causal || keys[j].start <= half[x].rows.start + half[x].rows.size - 1);
  };
  size_t first[2] = {count, count};  // each half's first visible key block
  for (int x = 0; x < 2; ++x)
    for (size_t j = count; j-- > 0;)
      if (visible(x, j)) first[x] = j;
  // Instruction groups: 0 the loads and O's store (a producer), 1 and 2 the halves (two consumers).
  auto consumer = [&](int x) { g.b.group(static_cast<uint8_t>(1 + x)); };
  auto score = [&](int x, size_t j) {
    consumer(x);
    if (visible(x, j)) flash2_score(g, f, f.half[x], half[x], keys[j], slot_of(j));
  };
  auto softmax = [&](int x, size_t j) {
    consumer(x);
    if (visible(x, j)) flash2_softmax(g, f.half[x], half[x].rows.size, keys[j].size, j == first[x]);
  };
  auto pv = [&](int x, size_t j) {
    consumer(x);
    if (visible(x, j))
      flash2_pv(g, f.half[x], half[x].rows.size, keys[j].size, j == first[x], f.vj[slot_of(j)]);
  };
  auto load = [&](int tensor, const int* buffers, size_t j) {
    g.b.group(0);
    if (j < count) g.emit(Opcode::Load, {g.at(tensor, h, keys[j]), g.buf(buffers[slot_of(j)], keys[j].size)});
  };
  g.b.group(0);
  g.emit(Opcode::Load, {g.at(g.q, h, qb), g.buf(f.qi, qb.size)});
  load(g.k, f.kj, 0);
  load(g.v, f.vj, 0);
  if (!s.double_buffer) {
    for (size_t j = 0; j < count; ++j) {
      if (j > 0) load(g.k, f.kj, j), load(g.v, f.vj, j);
      for (int x = 0; x < 2; ++x) score(x, j);
      for (int x = 0; x < 2; ++x) softmax(x, j), pv(x, j);
    }
  } else {
    load(g.k, f.kj, 1);
    score(0, 0);
    softmax(0, 0);
    score(1, 0);
    for (size_t j = 0; j < count; ++j) {
      load(g.k, f.kj, j + 2);
      load(g.v, f.vj, j + 1);
      score(0, j + 1);
      softmax(1, j);
      pv(0, j);
      score(1, j + 1);
      softmax(0, j + 1);
      pv(1, j);
    }
  }
  for (int x = 0; x < 2; ++x) {
    consumer(x);
    flash2_finish(g, f, f.half[x], h, half[x], !s.accumulators_in_registers);
  }
  g.b.group(0);
  if (s.accumulators_in_registers) g.emit(Opcode::Store, {g.buf(f.qi, qb.size), g.at(g.o, h, qb)});
}

void flash2_query_block(Gen& g, const Flash2Buffers& f, int64_t h, const Block& qb, int64_t block) {
  if (g.s.ping_pong && qb.size >= 2)
    flash2_tile_ping_pong(g, f, h, qb);
  else
    flash2_tile(g, f, h, qb, block);
}

// flash2: traces::flash2_forward with heads and BREAK IT (the same instructions for one head, no breaks):
// outer loop over query blocks, O accumulated on chip and written once, K and V streamed per query block.
// One kernel: grid (query block, head), x fastest, as FlashAttention-2's forward launches it; or, with
// persistent_blocks = P, a grid of P blocks where block b takes the work tiles b, b + P, b + 2P, ... of that
// launch order (ForwardShape).
void flash2(Gen& g) {
  const ForwardShape& s = g.s;
  const Flash2Buffers f = flash2_buffers(g);
  const auto q_blocks = blocks(s.n, s.block_q);
  const int64_t per_head = static_cast<int64_t>(q_blocks.size());
  auto declare = [&](const std::string& name, std::array<int64_t, 3> grid) {
    isa::KernelDecl decl{name, grid, false, s.warps, s.warp_rows};
    decl.mma = s.mma;
    decl.iterative_softmax = s.iterative_softmax;
    decl.overhead = s.overhead;
    return g.b.kernel(std::move(decl));
  };
  if (s.persistent_blocks == 0) {
    const int kernel = declare("flash2_fwd", {per_head, s.heads, 1});
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < per_head; ++i) {
        g.b.begin_block(kernel, {i, h, 0});
        flash2_query_block(g, f, h, q_blocks[static_cast<size_t>(i)], h * per_head + i);
        store_spill(g, f, h * per_head + i, s.spill_bytes_per_block);
      }
    return;
  }
  const int kernel = declare("flash2_fwd_persistent", {s.persistent_blocks, 1, 1});
  for (int64_t block = 0; block < s.persistent_blocks; ++block) {
    g.b.begin_block(kernel, {block, 0, 0});
    for (int64_t t = block; t < per_head * s.heads; t += s.persistent_blocks)
      flash2_query_block(g, f, t / per_head, q_blocks[static_cast<size_t>(t % per_head)], block);
    store_spill(g, f, block, s.spill_bytes_per_block);
  }
}

}  // namespace

bool q_in_registers_applies(ForwardSchedule schedule, const ForwardShape& shape) {
  return shape.accumulators_in_registers && !shape.as_mem_efficient && !shape.ping_pong &&
         (schedule == ForwardSchedule::Flash2 || schedule == ForwardSchedule::TwoPassFused);
}

namespace {

void check_shape(ForwardSchedule schedule, const ForwardShape& s) {
  if (s.n < 1 || s.d < 1 || s.block_q < 1 || s.block_k < 1 || s.heads < 1)
    throw std::invalid_argument("n, d, heads and the block sizes must be positive");
  if (s.persistent_blocks < 0) throw std::invalid_argument("persistent_blocks must not be negative");
  if (s.warps < 0 || (s.warps > 0 && s.warp_rows < 1))
    throw std::invalid_argument("warps: 0 for the default, or a count with the rows each warp takes");
  if (s.spill_rows < 0) throw std::invalid_argument("spill rows must not be negative");
  if (s.heads_inner_outputs < 0 || (s.heads_inner_outputs > 1 && s.heads % s.heads_inner_outputs != 0))
    throw std::invalid_argument("heads_inner_outputs must divide the heads");
  for (int64_t bytes : {s.spill_bytes_per_block, s.spill_bytes_per_key_block})
    if (bytes < 0 || bytes % 4 != 0) throw std::invalid_argument("spill bytes: a multiple of 4");
  if (s.spill_bytes_per_key_block > 0 && s.ping_pong)
    throw std::invalid_argument("spill stores per key block and ping-pong query halves do not combine");
  if ((s.persistent_blocks > 0 || s.store_row_statistic || s.as_mem_efficient || s.iterative_softmax ||
       s.spill_bytes_per_block > 0 || s.spill_bytes_per_key_block > 0) &&
      schedule != ForwardSchedule::Flash2)
    throw std::invalid_argument(
        "a persistent grid, a stored row statistic, the memory-efficient loads, the iterative softmax and "
        "spill stores are flash2 options");
  s.check_mma();
  if (s.accumulators_in_registers && schedule != ForwardSchedule::Flash2 &&
      schedule != ForwardSchedule::TwoPassFused && schedule != ForwardSchedule::Flash1)
    throw std::invalid_argument("accumulators in registers are a flash2, two-pass and flash1 option");
  if (s.q_in_registers && !q_in_registers_applies(schedule, s))
    throw std::invalid_argument(
        "Q in registers is a flash2 and two-pass option with accumulators in registers (not with the "
        "memory-efficient loads or ping-pong)");
  if (s.ping_pong && schedule != ForwardSchedule::Flash2)
    throw std::invalid_argument("ping-pong query halves are a flash2 option");
  if (s.ping_pong && s.as_mem_efficient)
    throw std::invalid_argument("ping-pong query halves and the memory-efficient loads do not combine");
  if (s.sum_after_product && (schedule != ForwardSchedule::Flash2 || s.ping_pong || s.as_mem_efficient))
    throw std::invalid_argument(
        "the row sum after the product is a flash2 option (not with ping-pong or the memory-efficient "
        "loads)");
  if (!(s.qk_range > 0) || !std::isfinite(s.qk_range))
    throw std::invalid_argument("qk_range must be positive and finite");
  if (s.breaks.any() && !breakable(schedule))
    throw std::invalid_argument(std::string(schedule_name(schedule)) +
                                " has no running softmax to break; BREAK IT applies to naive-online, "
                                "two-pass, flash1 and flash2");
}

}  // namespace

isa::Program forward_program(ForwardSchedule schedule, const ForwardShape& shape) {
  check_shape(schedule, shape);
  Gen g(schedule, shape);
  switch (schedule) {
    case ForwardSchedule::NaiveSafe:
      naive(g, false);
      break;
    case ForwardSchedule::NaiveOnline:
      naive(g, true);
      break;
    case ForwardSchedule::TwoPassFused:
      two_pass(g);
      break;
    case ForwardSchedule::Flash1:
      flash1(g);
      break;
    case ForwardSchedule::Flash2:
      flash2(g);
      break;
  }
  return g.b.take();
}

std::string_view schedule_name(ForwardSchedule schedule) {
  switch (schedule) {
    case ForwardSchedule::NaiveSafe:
      return "naive-safe";
    case ForwardSchedule::NaiveOnline:
      return "naive-online";
    case ForwardSchedule::TwoPassFused:
      return "two-pass";
    case ForwardSchedule::Flash1:
      return "flash1";
    case ForwardSchedule::Flash2:
      return "flash2";
  }
  return "?";
}

std::optional<ForwardSchedule> find_forward_schedule(std::string_view name) {
  for (ForwardSchedule s : all_forward_schedules())
    if (schedule_name(s) == name) return s;
  return std::nullopt;
}

const std::vector<ForwardSchedule>& all_forward_schedules() {
  static const std::vector<ForwardSchedule> all = {ForwardSchedule::NaiveSafe, ForwardSchedule::NaiveOnline,
                                                   ForwardSchedule::TwoPassFused, ForwardSchedule::Flash1,
                                                   ForwardSchedule::Flash2};
  return all;
}

bool breakable(ForwardSchedule schedule) {
  return schedule != ForwardSchedule::NaiveSafe;
}

}  // namespace attnsim::traces
