#include "traces/attention_backward.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <string>
#include <vector>
#include "traces/attention_math.h"

#include "isa/init.h"
#include "traces/builder.h"

namespace attnsim::traces {

namespace {

constexpr Dtype kAcc = Dtype::F32;  // statistics, scores and gradient accumulators, as FlashAttention-2

struct Block {
  int64_t start = 0;
  int64_t rows = 0;
};

// Row blocks of n; the last one is partial when the block does not divide n.
std::vector<Block> blocks_of(int64_t n, int64_t block) {
  std::vector<Block> out;
  for (int64_t start = 0; start < n; start += block) out.push_back({start, std::min(block, n - start)});
  return out;
}

// Causal visibility of a (query block, key block) tile: some key in it is at or before some query.
bool visible(bool causal, const Block& qb, const Block& kb) {
  return !causal || kb.start <= qb.start + qb.rows - 1;
}
// The tile has masked entries (key after query) and needs MASK.
bool crosses_diagonal(bool causal, const Block& qb, const Block& kb) {
  return causal && kb.start + kb.rows - 1 > qb.start;
}

// Tensors are [n][cols] for one head and [heads][n][cols] for several (the layout the attention checks
// read, and the one the assembler gives `Q[h, 0:64, :]`); row statistics are n x 1 matrices. A slice
// carries its head as the TileRef offset.
class Gen {
 public:
  Gen(const BackwardShape& s, std::string file) : b(std::move(file)), s_(s) {}

  int matrix(const std::string& name, int64_t rows, int64_t cols, Dtype dtype) {
    const int t = b.tensor(name, rows, cols, dtype, false, 0);
    if (s_.heads > 1) b.p.tensors[t].shape = {s_.heads, rows, cols};
    return t;
  }
  int random_matrix(const std::string& name, uint64_t seed) {
    const int t = b.tensor(name, s_.n, s_.d, s_.dtype, true, seed);
    if (s_.heads > 1) b.p.tensors[t].shape = {s_.heads, s_.n, s_.d};
    return t;
  }

  // Rows [r.start, r.start + r.rows) of head h of an n-row matrix, all columns.
  Operand rows(int tensor, int64_t h, const Block& r) {
    const int64_t cols = b.p.tensors[tensor].shape.back();
    return rows_cols(tensor, h, r, 0, cols);
  }
  // The (r, c) tile of head h of an n x n matrix.
  Operand tile(int tensor, int64_t h, const Block& r, const Block& c) {
    return slice(tensor, h * s_.n * s_.n, r.start, r.rows, c.start, c.rows, s_.n);
  }
  // Rows r and columns [col0, col0 + cols) of head h of an n-row matrix.
  Operand rows_cols(int tensor, int64_t h, const Block& r, int64_t col0, int64_t cols) {
    const int64_t all = b.p.tensors[tensor].shape.back();
    const isa::TensorDecl& t = b.p.tensors[tensor];
    if (t.heads_inner)  // head h's rows heads_inner rows apart
      return slice(tensor, t.memory_index(h, 0, 0), r.start, r.rows, col0, cols, t.heads_inner * all);
    return slice(tensor, h * s_.n * all, r.start, r.rows, col0, cols, all);
  }
  void set_heads_inner(std::initializer_list<int> tensors, int64_t group) {
    for (int t : tensors) b.p.tensors[static_cast<size_t>(t)].heads_inner = group;
  }
  // Row `row` of head h of a tensor of `rows` rows a head (the memory-efficient backward's locks).
  Operand row_of(int tensor, int64_t h, int64_t rows, int64_t row) {
    const int64_t cols = b.p.tensors[tensor].shape.back();
    return slice(tensor, h * rows * cols, row, 1, 0, cols, cols);
  }
  void emit(Opcode op, std::initializer_list<Operand> operands) { b.emit(op, operands); }
  // acc = x y on the first tile of a sum (MAC_Z), acc += x y after it (MAC).
  void mac(bool first, Operand x, Operand y, Operand acc) {
    if (first)
      emit(Opcode::MacZ, {x, y, acc});
    else
      emit(Opcode::Mac, {x, y, acc, acc});
  }

  Builder b;

 private:
  Operand slice(int tensor, int64_t offset, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                int64_t stride) {
    isa::TileRef t;
    t.index = tensor;
    t.offset = offset;
    t.row0 = row0;
    t.rows = rows;
    t.col0 = col0;
    t.cols = cols;
    t.row_stride = stride;
    return b.tile(t);
  }

  const BackwardShape& s_;
};

// The tensors every schedule shares: inputs, the forward's O and L, the gradients with their checks.
struct Common {
  int q, k, v, dout, o, lse, dq, dk, dv;
};

// O = softmax(Q K^T) V and L = m + log(sum exp(S - m)) per row, in float64 from the values the simulator
// will load (materialize rounds to the storage dtype exactly as the machine does).
void forward_statistics(const BackwardShape& s, const isa::Program& p, const Common& t,
                        std::vector<double>& o, std::vector<double>& lse) {
  const auto q = isa::materialize(p.tensors[t.q], s.dtype);
  const auto k = isa::materialize(p.tensors[t.k], s.dtype);
  const auto v = isa::materialize(p.tensors[t.v], s.dtype);
  o.assign(static_cast<size_t>(s.heads * s.n * s.d), 0.0);
  lse.assign(static_cast<size_t>(s.heads * s.n), 0.0);
  attention_f64(q.data(), k.data(), v.data(), s.heads, s.n, s.n, s.d, s.d, s.causal, o.data(), lse.data());
}

Common declare_common(Gen& g, const BackwardShape& s, Dtype dq_dtype, Dtype dkv_dtype) {
  Common t;
  t.q = g.random_matrix("Q", s.seed);
  t.k = g.random_matrix("K", s.seed + 1);
  t.v = g.random_matrix("V", s.seed + 2);
  t.dout = g.random_matrix("dO", s.seed + 3);
  t.o = g.matrix("O", s.n, s.d, s.dtype);
  t.lse = g.matrix("L", s.n, 1, kAcc);
  t.dq = g.matrix("dQ", s.n, s.d, dq_dtype);
  t.dk = g.matrix("dK", s.n, s.d, dkv_dtype);
  t.dv = g.matrix("dV", s.n, s.d, dkv_dtype);
  if (s.heads_inner_outputs > 1) {
    if (s.heads % s.heads_inner_outputs != 0)
      throw std::invalid_argument("heads_inner_outputs must divide the heads");
    g.set_heads_inner({t.o, t.dout, t.dq, t.dk, t.dv}, s.heads_inner_outputs);
  }
  if (!s.skip_forward_values) {
    std::vector<double> o, lse;
    forward_statistics(s, g.b.p, t, o, lse);
    auto& od = g.b.p.tensors[t.o].init;
    od.kind = isa::TensorInit::Kind::Values;
    od.values = isa::memory_order(g.b.p.tensors[t.o], o);
    auto& ld = g.b.p.tensors[t.lse].init;
    ld.kind = isa::TensorInit::Kind::Values;
    ld.values = std::move(lse);
  }
  const std::string prefix = s.causal ? "attention_causal_grad_" : "attention_grad_";
  g.b.check(prefix + "q", t.dq, {t.q, t.k, t.v, t.dout});
  g.b.check(prefix + "k", t.dk, {t.q, t.k, t.v, t.dout});
  g.b.check(prefix + "v", t.dv, {t.q, t.k, t.v, t.dout});
  return t;
}

// The on-chip tiles both FlashAttention-2 backward schedules keep (the no-D one adds a D partial sum).
struct TileBuffers {
  int qi, doi, kj, vj, li, di, sc, pb, dp, ds, dqi, dkj, dvj;
};

TileBuffers declare_tile_buffers(Builder& b, const BackwardShape& s) {
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  TileBuffers t;
  t.qi = b.buffer("Qi", br, d, s.dtype);
  t.doi = b.buffer("dOi", br, d, s.dtype);
  t.kj = b.buffer("Kj", bc, d, s.dtype);
  t.vj = b.buffer("Vj", bc, d, s.dtype);
  t.li = b.buffer("Li", br, 1, kAcc);
  t.di = b.buffer("Di", br, 1, kAcc);
  t.sc = b.buffer("S", br, bc, kAcc);
  t.pb = b.buffer("P", br, bc, s.dtype);
  t.dp = b.buffer("dP", br, bc, kAcc);
  t.ds = b.buffer("dS", br, bc, s.dtype);
  t.dqi = b.buffer("dQi", br, d, kAcc);
  t.dkj = b.buffer("dKj", bc, d, kAcc);
  t.dvj = b.buffer("dVj", bc, d, kAcc);
  return t;
}

// BackwardShape::warp_groups: the step's inputs in two slots (the producer fills one while the consumers
// read the other) and each consumer's own tiles. The dot(dO, O) and dQ conversion kernels use slot 0 and
// consumer 0's dQ tile, which holds all d columns for them.
struct WarpGroupBuffers {
  int qi[2], doi[2], li[2], di[2];
  int sc[2], pb[2], dp[2], ds[2], dk[2], dv[2], dq[2];
};

WarpGroupBuffers declare_warp_group_buffers(Builder& b, const BackwardShape& s) {
  const int64_t br = s.block_q, half = (s.block_k + 1) / 2, d = s.d;
  WarpGroupBuffers w;
  for (int x = 0; x < 2; ++x) {
    const std::string tag = x == 0 ? "" : "_b";
    w.qi[x] = b.buffer("Qi" + tag, br, d, s.dtype);
    w.doi[x] = b.buffer("dOi" + tag, br, d, s.dtype);
    w.li[x] = b.buffer("Li" + tag, br, 1, kAcc);
    w.di[x] = b.buffer("Di" + tag, br, 1, kAcc);
    w.sc[x] = b.buffer("S" + tag, br, half, kAcc);
    w.pb[x] = b.buffer("P" + tag, br, half, s.dtype);
    w.dp[x] = b.buffer("dP" + tag, br, half, kAcc);
    w.ds[x] = b.buffer("dS" + tag, br, half, s.dtype);
    w.dk[x] = b.buffer("dKj" + tag, half, d, kAcc);
    w.dv[x] = b.buffer("dVj" + tag, half, d, kAcc);
    w.dq[x] = b.buffer("dQi" + tag, br, x == 0 ? d : d / 2, kAcc);
  }
  b.in_registers({w.sc[0], w.sc[1], w.dp[0], w.dp[1], w.dk[0], w.dk[1], w.dv[0], w.dv[1]});
  return w;
}

// FlashAttention-2 backward (seed 000's Algorithm 4 with seed 002's D_i trick), two kernels as
// flash-attn launches them (its batch folded into the heads):
//   flash2_bwd_dot_do_o, grid (query blocks, heads): block (i, h) computes D_i = rowsum(dO_i * O_i) and
//     stores it to D (flash-attn's flash_bwd_dot_do_o_kernel);
//   flash2_bwd_dkdv, grid (key blocks, heads): block (j, h) loads K_j, V_j; per visible query block i: loads
//     Q_i, dO_i, L_i, D_i; S = Q_i K_j^T (masked on the diagonal), P = exp(S - L_i), dV_j += P^T dO_i,
//     dP = dO_i V_j^T, dS = P * (dP - D_i), dK_j += dS^T Q_i, and adds dS K_j into dQ_i in HBM
//     (STORE_ADD); then stores dK_j, dV_j (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel). dK_j and dV_j
//     stay in the block; dQ is the one tensor several blocks of a head update: f32 in HBM, added into
//     atomically, as flash-attn's atomicAdd (STORE_ADD reads and writes the tile, as a load and a store).
// flash-attn's third kernel converts the f32 dQ accumulator to the storage dtype; by default dQ is checked
// as the f32 accumulator here, so there is no such step; as_flash_attn adds it (BackwardShape).
struct Flash2Plan {
  Common t;
  int d = -1;              // D_i = rowsum(dO_i * O_i), f32
  int dq_acc = -1;         // what STORE_ADD adds into: t.dq, or dQaccum with as_flash_attn
  int local = -1;          // the dK/dV blocks' spill stores (as_flash_attn with spill bytes)
  int64_t local_rows = 0;  // block b stores to row b mod local_rows
  TileBuffers buf;
  WarpGroupBuffers wg{};  // with warp_groups
  int spill = -1;         // buffer of one block's spill stores
  std::vector<Block> qblocks, kblocks;
  int dot_do_o = -1, dkdv = -1, convert_dq = -1;  // the kernels (all declared before any instruction)
};

// Rows of `local` the blocks' spills share: one per hardware slot (BackwardShape::spill_rows), or one per
// block (grid key blocks x heads).
int64_t spill_slot_rows(const BackwardShape& s, size_t key_blocks) {
  const int64_t blocks = s.heads * static_cast<int64_t>(key_blocks);
  return s.spill_rows > 0 ? std::min(s.spill_rows, blocks) : blocks;
}

// The kernel that does a backward's products (dK, dV and, in one pass, dQ): its code as the shape says.
isa::KernelDecl main_kernel(const BackwardShape& s, const std::string& name, std::array<int64_t, 3> grid) {
  isa::KernelDecl decl{name, grid, s.rolled_k_loops, s.warps, s.warp_rows};
  decl.mma = s.mma;
  decl.accurate_exp = s.accurate_exp;
  decl.overhead = s.overhead;
  return decl;
}

Flash2Plan plan_flash2(const BackwardShape& s, Gen& g) {
  Builder& b = g.b;
  Flash2Plan p;
  p.t = declare_common(g, s, s.as_flash_attn ? s.dtype : kAcc, s.dtype);
  p.d = g.matrix("D", s.n, 1, kAcc);
  p.dq_acc = s.as_flash_attn ? g.matrix("dQaccum", s.n, s.d, kAcc) : p.t.dq;
  if (s.warp_groups) {
    p.wg = declare_warp_group_buffers(b, s);
    p.buf = {p.wg.qi[0], p.wg.doi[0], -1, -1, p.wg.li[0], p.wg.di[0], -1, -1, -1, -1, p.wg.dq[0], -1, -1};
    p.buf.kj = b.buffer("Kj", s.block_k, s.d, s.dtype);
    p.buf.vj = b.buffer("Vj", s.block_k, s.d, s.dtype);
  } else {
    p.buf = declare_tile_buffers(b, s);
  }
  p.qblocks = blocks_of(s.n, s.block_q);
  p.kblocks = blocks_of(s.n, s.block_k);
  const int64_t tr = static_cast<int64_t>(p.qblocks.size()), tc = static_cast<int64_t>(p.kblocks.size());
  p.dot_do_o = b.kernel("flash2_bwd_dot_do_o", {tr, s.heads, 1});
  p.dkdv = b.kernel(main_kernel(s, "flash2_bwd_dkdv", {tc, s.heads, 1}));
  if (s.accumulators_in_registers && !s.as_flash_attn)
    b.in_registers({p.buf.sc, p.buf.pb, p.buf.dp, p.buf.dkj, p.buf.dvj});
  if (!s.as_flash_attn) return p;
  p.convert_dq = b.kernel("flash2_bwd_convert_dq", {tr, s.heads, 1});
  if (!s.warp_groups)  // the f32 tiles flash-attn keeps in registers
    b.in_registers({p.buf.sc, p.buf.dp, p.buf.dkj, p.buf.dvj});
  if (s.spill_bytes_per_block > 0) {
    const int64_t words = s.spill_bytes_per_block / 4;
    p.local_rows = spill_slot_rows(s, p.kblocks.size());
    p.local = b.tensor("local", p.local_rows, words, kAcc, false, 0);
    p.spill = b.buffer("spill", 1, words, kAcc);
  }
  return p;
}

// D_i; with as_flash_attn also dQaccum_i = 0. O_i goes into Qi and the product into dQi, buffers the
// second kernel's blocks have anyway, so a block's SRAM is only the second kernel's working set.
void emit_dot_do_o(const BackwardShape& s, Gen& g, const Flash2Plan& p) {
  Builder& b = g.b;
  const auto& [qi, doi, kj, vj, li, di, sc, pb, dp, ds, dqi, dkj, dvj] = p.buf;
  const int kernel = p.dot_do_o;
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < p.qblocks.size(); ++i) {
      const Block& qb = p.qblocks[i];
      const int64_t r = qb.rows;
      b.begin_block(kernel, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.rows(p.t.o, h, qb), b.buf(qi, r)});
      g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(doi, r)});
      g.emit(Opcode::Mul, {b.buf(doi, r), b.buf(qi, r), b.buf(dqi, r)});
      g.emit(Opcode::RowSum, {b.buf(dqi, r), b.buf(di, r)});
      g.emit(Opcode::Store, {b.buf(di, r), g.rows(p.d, h, qb)});
      if (!s.as_flash_attn) continue;
      g.emit(Opcode::Sub, {b.buf(dqi, r), b.buf(dqi, r), b.buf(dqi, r)});  // x - x: zeros (x is finite)
      g.emit(Opcode::Store, {b.buf(dqi, r), g.rows(p.dq_acc, h, qb)});
    }
}

// The tiles of query block qb a dK/dV step reads: Q_i, dO_i, L_i, D_i.
void emit_dkdv_loads(Gen& g, const Flash2Plan& p, int64_t h, const Block& qb) {
  Builder& b = g.b;
  const int64_t r = qb.rows;
  g.emit(Opcode::Load, {g.rows(p.t.q, h, qb), b.buf(p.buf.qi, r)});
  g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(p.buf.doi, r)});
  g.emit(Opcode::Load, {g.rows(p.t.lse, h, qb), b.buf(p.buf.li, r)});
  g.emit(Opcode::Load, {g.rows(p.d, h, qb), b.buf(p.buf.di, r)});
}

// One visible (query block, key block) tile of a dK/dV block: dV_j, dK_j accumulate on chip, dS K_j is added
// into dQ_i's accumulator in HBM. With `next`, the next step's tiles are loaded as soon as this step has
// read its own (after dK's product), before dQ's product and its addition: the kernels prefetch them
// (double_buffer), so their loads do not queue behind this step's stores.
void emit_dkdv_tile(const BackwardShape& s, Gen& g, const Flash2Plan& p, int64_t h, const Block& qb,
                    const Block& kb, bool first, const Block* next) {
  Builder& b = g.b;
  const auto& [qi, doi, kj, vj, li, di, sc, pb, dp, ds, dqi, dkj, dvj] = p.buf;
  const int64_t r = qb.rows, c = kb.rows;
  g.emit(Opcode::MacZ, {b.buf(qi, r), b.buf(kj, c, -1, true), b.buf(sc, r, c)});
  if (crosses_diagonal(s.causal, qb, kb))
    g.emit(Opcode::Mask, {b.buf(sc, r, c), Operand::imm(qb.start), Operand::imm(kb.start)});
  g.emit(Opcode::Sub, {b.buf(sc, r, c), b.buf(li, r), b.buf(sc, r, c)});
  g.emit(Opcode::Exp, {b.buf(sc, r, c), b.buf(pb, r, c)});
  g.mac(first, b.buf(pb, r, c, true), b.buf(doi, r), b.buf(dvj, c));
  g.emit(Opcode::MacZ, {b.buf(doi, r), b.buf(vj, c, -1, true), b.buf(dp, r, c)});
  g.emit(Opcode::Sub, {b.buf(dp, r, c), b.buf(di, r), b.buf(dp, r, c)});
  g.emit(Opcode::Mul, {b.buf(pb, r, c), b.buf(dp, r, c), b.buf(ds, r, c)});
  g.mac(first, b.buf(ds, r, c, true), b.buf(qi, r), b.buf(dkj, c));
  if (next) emit_dkdv_loads(g, p, h, *next);
  g.emit(Opcode::MacZ, {b.buf(ds, r, c), b.buf(kj, c), b.buf(dqi, r)});
  g.emit(Opcode::StoreAdd, {b.buf(dqi, r), g.rows(p.dq_acc, h, qb)});
}

// The block's spill stores (BackwardShape::spill_bytes_per_block) into its row of `local`.
void emit_spill(Gen& g, const Flash2Plan& p, int64_t h, size_t j) {
  if (p.local < 0) return;
  const int64_t row = h * static_cast<int64_t>(p.kblocks.size()) + static_cast<int64_t>(j);
  g.emit(Opcode::Store, {g.b.buf(p.spill), g.b.rows_of(p.local, row % p.local_rows, 1)});
}

// dK, dV, and dQ accumulated.
void emit_dkdv(const BackwardShape& s, Gen& g, const Flash2Plan& p) {
  Builder& b = g.b;
  const auto& buf = p.buf;
  const int kernel = p.dkdv;
  std::vector<Block> order = p.qblocks;
  if (s.as_flash_attn) std::reverse(order.begin(), order.end());
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t j = 0; j < p.kblocks.size(); ++j) {
      const Block& kb = p.kblocks[j];
      const int64_t c = kb.rows;
      b.begin_block(kernel, {static_cast<int64_t>(j), h, 0});
      g.emit(Opcode::Load, {g.rows(p.t.k, h, kb), b.buf(buf.kj, c)});
      g.emit(Opcode::Load, {g.rows(p.t.v, h, kb), b.buf(buf.vj, c)});
      std::vector<Block> visible_blocks;
      for (const Block& qb : order)
        if (visible(s.causal, qb, kb)) visible_blocks.push_back(qb);
      for (size_t i = 0; i < visible_blocks.size(); ++i) {
        const Block* next =
            s.double_buffer && i + 1 < visible_blocks.size() ? &visible_blocks[i + 1] : nullptr;
        if (i == 0 || !s.double_buffer) emit_dkdv_loads(g, p, h, visible_blocks[i]);
        emit_dkdv_tile(s, g, p, h, visible_blocks[i], kb, i == 0, next);
      }
      const bool staged = s.as_flash_attn || s.accumulators_in_registers;
      if (staged) {  // through shared memory in the storage dtype, where K_j and V_j were
        g.emit(Opcode::Mov, {b.buf(buf.dkj, c), b.buf(buf.kj, c)});
        g.emit(Opcode::Mov, {b.buf(buf.dvj, c), b.buf(buf.vj, c)});
      }
      const int dk_from = staged ? buf.kj : buf.dkj, dv_from = staged ? buf.vj : buf.dvj;
      g.emit(Opcode::Store, {b.buf(dk_from, c), g.rows(p.t.dk, h, kb)});
      g.emit(Opcode::Store, {b.buf(dv_from, c), g.rows(p.t.dv, h, kb)});
      emit_spill(g, p, h, j);
    }
}

// BackwardShape::warp_groups: the key block's halves (consumer x's rows, keys[x].start - kb.start into
// K_j) and d's column halves (consumer x's columns of dQ_i; consumer 0's dQ tile holds the wider one).
struct Halves {
  Block keys[2];
  int64_t col0[2], cols[2];
};

Halves halves_of(const Block& kb, int64_t d) {
  const int64_t a = (kb.rows + 1) / 2, wide = d - d / 2;
  return {{{kb.start, a}, {kb.start + a, kb.rows - a}}, {0, wide}, {wide, d / 2}};
}

// The producer (group 0) loads query block qb's Q_i, dO_i, L_i, D_i into a slot.
void emit_step_loads(Gen& g, const Flash2Plan& p, int64_t h, const Block& qb, int slot) {
  Builder& b = g.b;
  const WarpGroupBuffers& w = p.wg;
  const int64_t r = qb.rows;
  b.group(0);
  g.emit(Opcode::Load, {g.rows(p.t.q, h, qb), b.buf(w.qi[slot], r)});
  g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(w.doi[slot], r)});
  g.emit(Opcode::Load, {g.rows(p.t.lse, h, qb), b.buf(w.li[slot], r)});
  g.emit(Opcode::Load, {g.rows(p.d, h, qb), b.buf(w.di[slot], r)});
}

// Consumer x's rows of K_j or V_j (a buffer holding the key block), all columns.
Operand key_rows(Builder& b, int buffer, const Block& kb, const Block& half, bool transpose = false) {
  return b.buf_rows(buffer, half.start - kb.start, half.rows, -1, transpose);
}

// Columns [col0, col0 + cols) of a half's rows of K_j.
Operand key_cols(Builder& b, int buffer, const Block& kb, const Block& half, int64_t col0, int64_t cols) {
  isa::TileRef t = b.p.buffer_tile(buffer);
  t.row0 = half.start - kb.start;
  t.rows = half.rows;
  t.col0 = col0;
  t.cols = cols;
  return b.tile(t);
}

// One step (query block qb, key block kb) of the two consumers. Program order, which each unit follows:
// S and dP of half 0, then of half 1 (the VPU computes half 0's P and dS meanwhile); dV, dK of half 0
// (half 1's P and dS meanwhile), then of half 1; then each consumer's columns of dQ_i from both halves' dS,
// added into dQaccum.
void emit_warp_group_step(const BackwardShape& s, Gen& g, const Flash2Plan& p, int64_t h, const Block& qb,
                          const Block& kb, int slot, bool first[2]) {
  Builder& b = g.b;
  const WarpGroupBuffers& w = p.wg;
  const Halves hv = halves_of(kb, s.d);
  const int64_t r = qb.rows;
  bool live[2];
  for (int x = 0; x < 2; ++x) live[x] = hv.keys[x].rows > 0 && visible(s.causal, qb, hv.keys[x]);
  auto consumer = [&](int x) { b.group(static_cast<uint8_t>(1 + x)); };
  const int kj = p.buf.kj, vj = p.buf.vj;
  for (int x = 0; x < 2; ++x) {
    if (!live[x]) continue;
    const int64_t c = hv.keys[x].rows;
    consumer(x);
    g.emit(Opcode::MacZ, {b.buf(w.qi[slot], r), key_rows(b, kj, kb, hv.keys[x], true), b.buf(w.sc[x], r, c)});
    g.emit(Opcode::MacZ,
           {b.buf(w.doi[slot], r), key_rows(b, vj, kb, hv.keys[x], true), b.buf(w.dp[x], r, c)});
  }
  for (int x = 0; x < 2; ++x) {
    if (!live[x]) continue;
    const int64_t c = hv.keys[x].rows;
    consumer(x);
    if (crosses_diagonal(s.causal, qb, hv.keys[x]))
      g.emit(Opcode::Mask, {b.buf(w.sc[x], r, c), Operand::imm(qb.start), Operand::imm(hv.keys[x].start)});
    g.emit(Opcode::Sub, {b.buf(w.sc[x], r, c), b.buf(w.li[slot], r), b.buf(w.sc[x], r, c)});
    g.emit(Opcode::Exp, {b.buf(w.sc[x], r, c), b.buf(w.pb[x], r, c)});
    g.emit(Opcode::Sub, {b.buf(w.dp[x], r, c), b.buf(w.di[slot], r), b.buf(w.dp[x], r, c)});
    g.emit(Opcode::Mul, {b.buf(w.pb[x], r, c), b.buf(w.dp[x], r, c), b.buf(w.ds[x], r, c)});
    g.mac(first[x], b.buf(w.pb[x], r, c, true), b.buf(w.doi[slot], r), b.buf(w.dv[x], c));
    g.mac(first[x], b.buf(w.ds[x], r, c, true), b.buf(w.qi[slot], r), b.buf(w.dk[x], c));
    first[x] = false;
  }
  for (int x = 0; x < 2; ++x) {
    consumer(x);
    bool zeroed = false;
    for (int y = 0; y < 2; ++y)
      if (live[y]) {
        g.mac(!zeroed, b.buf(w.ds[y], r, hv.keys[y].rows),
              key_cols(b, kj, kb, hv.keys[y], hv.col0[x], hv.cols[x]), b.buf(w.dq[x], r, hv.cols[x]));
        zeroed = true;
      }
    if (zeroed)
      g.emit(Opcode::StoreAdd,
             {b.buf(w.dq[x], r, hv.cols[x]), g.rows_cols(p.dq_acc, h, qb, hv.col0[x], hv.cols[x])});
  }
}

// dK, dV and dQ accumulated by a producer and two consumers (BackwardShape::warp_groups); query blocks
// from the last down, as flash-attn's. Every key is visible to the query block holding its position, so
// every half accumulates at least once.
void emit_dkdv_warp_groups(const BackwardShape& s, Gen& g, const Flash2Plan& p) {
  Builder& b = g.b;
  std::vector<Block> order = p.qblocks;
  std::reverse(order.begin(), order.end());
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t j = 0; j < p.kblocks.size(); ++j) {
      const Block& kb = p.kblocks[j];
      b.begin_block(p.dkdv, {static_cast<int64_t>(j), h, 0});
      g.emit(Opcode::Load, {g.rows(p.t.k, h, kb), b.buf(p.buf.kj, kb.rows)});
      g.emit(Opcode::Load, {g.rows(p.t.v, h, kb), b.buf(p.buf.vj, kb.rows)});
      std::vector<Block> steps;
      for (const Block& qb : order)
        if (visible(s.causal, qb, kb)) steps.push_back(qb);
      bool first[2] = {true, true};
      for (size_t i = 0; i < steps.size(); ++i) {
        if (i == 0) emit_step_loads(g, p, h, steps[0], 0);
        if (i + 1 < steps.size()) emit_step_loads(g, p, h, steps[i + 1], static_cast<int>((i + 1) % 2));
        emit_warp_group_step(s, g, p, h, steps[i], kb, static_cast<int>(i % 2), first);
      }
      // Each consumer stages its rows of dK_j, dV_j through K_j's and V_j's SRAM and stores them.
      const Halves hv = halves_of(kb, s.d);
      for (int x = 0; x < 2; ++x) {
        const Block& half = hv.keys[x];
        if (half.rows == 0) continue;
        b.group(static_cast<uint8_t>(1 + x));
        g.emit(Opcode::Mov, {b.buf(p.wg.dk[x], half.rows), key_rows(b, p.buf.kj, kb, half)});
        g.emit(Opcode::Mov, {b.buf(p.wg.dv[x], half.rows), key_rows(b, p.buf.vj, kb, half)});
        g.emit(Opcode::Store, {key_rows(b, p.buf.kj, kb, half), g.rows(p.t.dk, h, half)});
        g.emit(Opcode::Store, {key_rows(b, p.buf.vj, kb, half), g.rows(p.t.dv, h, half)});
      }
      b.group(0);
      emit_spill(g, p, h, j);
    }
}

// flash_bwd_convert_dq_kernel: dQ_i = dQaccum_i in the storage dtype.
void emit_convert_dq(const BackwardShape& s, Gen& g, const Flash2Plan& p) {
  Builder& b = g.b;
  const int kernel = p.convert_dq;
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < p.qblocks.size(); ++i) {
      const Block& qb = p.qblocks[i];
      b.begin_block(kernel, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.rows(p.dq_acc, h, qb), b.buf(p.buf.dqi, qb.rows)});
      g.emit(Opcode::Store, {b.buf(p.buf.dqi, qb.rows), g.rows(p.t.dq, h, qb)});
    }
}

// ---- PyTorch's memory-efficient backward (BackwardShape::as_mem_efficient) ----

// CUTLASS streams a product's operands through its pipeline stages; the model loads each operand whole, as
// often as the kernel loads it. K_j for S (kept across steps unless reload_k; with reload_k one buffer for
// both of K_j's loads), K_j for dQ, Q_i (S's, then dK's), dO_i (dV's, then dP's), V_j, P then dS in its
// place, the f32 dQ tile, L_i, D_i; S then dP, dK_j, dV_j in registers (the kernel's kOutputInRF). The
// prologue's O_i and dO_i go to registers too: computeDelta loads them with ld.global, never through shared
// memory, and multiplies them in registers (S's, not live yet, hold the products where d <= B_c).
struct MemEffBuffers {
  int kqk, kdq, qi, doi, vj, pds, dqw, li, di, s, dk, dv, delta_o, delta_do;
};

MemEffBuffers declare_mem_efficient_buffers(Builder& b, const BackwardShape& s) {
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  MemEffBuffers m;
  m.kqk = b.buffer("Kj", bc, d, s.dtype);
  m.kdq = s.reload_k ? m.kqk : b.buffer("Kj_dq", bc, d, s.dtype);
  m.qi = b.buffer("Qi", br, d, s.dtype);
  m.doi = b.buffer("dOi", br, d, s.dtype);
  m.vj = b.buffer("Vj", bc, d, s.dtype);
  m.pds = b.buffer("P", br, bc, s.dtype);
  m.dqw = b.buffer("dQi", br, d, kAcc);
  m.li = b.buffer("Li", br, 1, kAcc);
  m.di = b.buffer("Di", br, 1, kAcc);
  m.s = b.buffer("S", br, bc, kAcc);
  m.dk = b.buffer("dKj", bc, d, kAcc);
  m.dv = b.buffer("dVj", bc, d, kAcc);
  m.delta_o = b.buffer("Oi_delta", br, d, s.dtype);
  m.delta_do = b.buffer("dOi_delta", br, d, s.dtype);
  b.in_registers({m.s, m.dk, m.dv, m.delta_o, m.delta_do});
  return m;
}

struct MemEffPlan {
  Common t;
  int d = -1, acc = -1, kernel = -1;
  int lock = -1;  // a lock per dQ tile of the workspace (with more than one key block)
  MemEffBuffers buf{};
  std::vector<Block> qblocks, kblocks;
  int local = -1, spill = -1;  // the spills' rows in memory and their buffer (with spill bytes)
  int64_t local_rows = 0;      // block b spills to row b mod local_rows, its hardware slot's
  int64_t local_words = 0;     // a row's width: the frame, or the widest spill
};

// The spills move through a 1 KB buffer: at d = 128 the tiles leave no more SRAM (the kernel spills from
// registers, which the model's DMA cannot reach).
constexpr int64_t kSpillChunkWords = 256;

// `bytes` of block b's spills stored to, or loaded from, its row of `local`: its first bytes, or its last.
void emit_mem_efficient_spill(Gen& g, const MemEffPlan& p, int64_t block, int64_t bytes, bool store,
                              bool at_end = false) {
  const int64_t first = at_end ? p.local_words - bytes / 4 : 0;
  for (int64_t col = 0; col < bytes / 4; col += kSpillChunkWords) {
    const int64_t words = std::min(kSpillChunkWords, bytes / 4 - col);
    const Operand memory = g.b.slice(p.local, block % p.local_rows, 1, first + col, words);
    const Operand buffer = g.b.buf(p.spill, 1, words);
    if (store)
      g.emit(Opcode::Store, {buffer, memory});
    else
      g.emit(Opcode::Load, {memory, buffer});
  }
}

void declare_mem_efficient_spills(const BackwardShape& s, Builder& b, MemEffPlan& p) {
  const int64_t bytes[] = {s.spill_bytes_per_block, s.spill_bytes_per_step, s.spill_load_bytes_per_step,
                           s.spill_load_bytes_per_block};
  int64_t most = 0;
  for (int64_t x : bytes) {
    if (x < 0 || x % 4 != 0) throw std::invalid_argument("spill bytes: multiples of 4, not negative");
    most = std::max(most, x);
  }
  if (s.spill_frame_bytes < 0 || s.spill_frame_bytes % 4 != 0)
    throw std::invalid_argument("spill frame bytes: a multiple of 4, not negative");
  if (most == 0) return;
  p.local_rows = spill_slot_rows(s, p.kblocks.size());
  p.local_words = std::max(most, s.spill_frame_bytes) / 4;
  p.local = b.tensor("local", p.local_rows, p.local_words, kAcc, false, 0);
  p.spill = b.buffer("spill", 1, std::min(kSpillChunkWords, most / 4), kAcc);
}

// D = rowsum(dO * O) for every row of head h: each block of the kernel computes all of it
// (kKernelComputesDelta), reading the head's O and dO and storing D, the same values from every block. The
// kernel's computeDelta loads O_i and dO_i into registers (ld.global) and multiplies them there. Through
// shared memory the model's blocks took 2.2 times the GPU's fixed time (198 k cycles against 89 k at 1 x
// 16 x 8,192 x 128 causal, h200_block_ends; 127 k this way, MemEfficientBlockTime), which changed how many
// heads run together and so what the L2 keeps between them.
void emit_mem_efficient_delta(const BackwardShape& s, Gen& g, const MemEffPlan& p, int64_t h) {
  Builder& b = g.b;
  const MemEffBuffers& m = p.buf;
  for (const Block& qb : p.qblocks) {
    const int64_t r = qb.rows;
    const Operand product = s.d <= s.block_k ? b.buf(m.s, r, s.d) : b.buf(m.dqw, r);
    g.emit(Opcode::Load, {g.rows(p.t.o, h, qb), b.buf(m.delta_o, r)});
    g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(m.delta_do, r)});
    g.emit(Opcode::Mul, {b.buf(m.delta_do, r), b.buf(m.delta_o, r), product});
    g.emit(Opcode::RowSum, {product, b.buf(m.di, r)});
    g.emit(Opcode::Store, {b.buf(m.di, r), g.rows(p.d, h, qb)});
  }
}

// The query blocks key block j visits, in the kernel's order (getQueryStart, incrIteration): not causal,
// every one, from block j (query start shifted by j x Br) round to the one before it, so the head's blocks
// start on different dQ tiles; causal, from the first visible one to the last.
std::vector<size_t> mem_efficient_order(const BackwardShape& s, const MemEffPlan& p, size_t j) {
  const size_t tr = p.qblocks.size();
  std::vector<size_t> out;
  for (size_t k = 0; k < tr; ++k) {
    const size_t i = s.causal ? k : (j + k) % tr;
    if (visible(s.causal, p.qblocks[i], p.kblocks[j])) out.push_back(i);
  }
  return out;
}

// dQ_i += dS K_j through the f32 workspace, as the kernel adds it under the tile's lock (AtomicLock):
// take the lock, __threadfence, load the tile, add, store it back, __threadfence, release. The head's last
// block (in launch order) to visit query block i stores dQ_i in the storage dtype instead; the kernel's
// last adder (found by an atomic counter at run time, not modelled) keeps the lock and skips the second
// fence, the model's releases it as every other. With one key block the kernel keeps no workspace and no
// lock: the product is dQ_i.
void emit_mem_efficient_dq(const BackwardShape& s, Gen& g, const MemEffPlan& p, int64_t h, size_t i,
                           size_t j) {
  Builder& b = g.b;
  const MemEffBuffers& m = p.buf;
  const Block &qb = p.qblocks[i], &kb = p.kblocks[j];
  const int64_t r = qb.rows, c = kb.rows;
  const bool split = p.kblocks.size() > 1;
  const int64_t tiles = static_cast<int64_t>(p.qblocks.size());
  if (split) {
    g.emit(Opcode::Lock,
           {g.row_of(p.lock, h, tiles, static_cast<int64_t>(i)), Operand::imm(kAtomicLockBackoffCycles)});
    g.emit(Opcode::Fence, {});
    g.emit(Opcode::Load, {g.rows(p.acc, h, qb), b.buf(m.dqw, r)});
  }
  g.mac(!split, b.buf(m.pds, r, c), b.buf(m.kdq, c), b.buf(m.dqw, r));
  const bool last = j + 1 == p.kblocks.size() || !visible(s.causal, qb, p.kblocks[j + 1]);
  g.emit(Opcode::Store, {b.buf(m.dqw, r), g.rows(last ? p.t.dq : p.acc, h, qb)});
  if (split) {
    g.emit(Opcode::Fence, {});
    g.emit(Opcode::Unlock, {g.row_of(p.lock, h, tiles, static_cast<int64_t>(i))});
  }
}

// One step (query block i) of key block j's block, in the kernel's order (processBlockIJ): S, P; dV;
// dP, dS; dQ; dK. Each product loads its operands just before it.
void emit_mem_efficient_step(const BackwardShape& s, Gen& g, const MemEffPlan& p, int64_t h, size_t i,
                             size_t j, bool first) {
  Builder& b = g.b;
  const MemEffBuffers& m = p.buf;
  const Block &qb = p.qblocks[i], &kb = p.kblocks[j];
  const int64_t r = qb.rows, c = kb.rows;
  g.emit(Opcode::Load, {g.rows(p.d, h, qb), b.buf(m.di, r)});
  g.emit(Opcode::Load, {g.rows(p.t.lse, h, qb), b.buf(m.li, r)});
  if (s.reload_k) g.emit(Opcode::Load, {g.rows(p.t.k, h, kb), b.buf(m.kqk, c)});
  g.emit(Opcode::Load, {g.rows(p.t.q, h, qb), b.buf(m.qi, r)});
  g.emit(Opcode::MacZ, {b.buf(m.qi, r), b.buf(m.kqk, c, -1, true), b.buf(m.s, r, c)});
  if (crosses_diagonal(s.causal, qb, kb))
    g.emit(Opcode::Mask, {b.buf(m.s, r, c), Operand::imm(qb.start), Operand::imm(kb.start)});
  g.emit(Opcode::Sub, {b.buf(m.s, r, c), b.buf(m.li, r), b.buf(m.s, r, c)});
  g.emit(Opcode::Exp, {b.buf(m.s, r, c), b.buf(m.pds, r, c)});
  g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(m.doi, r)});
  g.mac(first, b.buf(m.pds, r, c, true), b.buf(m.doi, r), b.buf(m.dv, c));
  const int64_t block = h * static_cast<int64_t>(p.kblocks.size()) + static_cast<int64_t>(j);
  emit_mem_efficient_spill(g, p, block, s.spill_bytes_per_step, true);
  g.emit(Opcode::Load, {g.rows(p.t.dout, h, qb), b.buf(m.doi, r)});
  g.emit(Opcode::Load, {g.rows(p.t.v, h, kb), b.buf(m.vj, c)});
  g.emit(Opcode::MacZ, {b.buf(m.doi, r), b.buf(m.vj, c, -1, true), b.buf(m.s, r, c)});
  g.emit(Opcode::Sub, {b.buf(m.s, r, c), b.buf(m.di, r), b.buf(m.s, r, c)});
  g.emit(Opcode::Mul, {b.buf(m.pds, r, c), b.buf(m.s, r, c), b.buf(m.pds, r, c)});
  g.emit(Opcode::Load, {g.rows(p.t.k, h, kb), b.buf(m.kdq, c)});
  g.emit(Opcode::Load, {g.rows(p.t.q, h, qb), b.buf(m.qi, r)});
  emit_mem_efficient_dq(s, g, p, h, i, j);
  emit_mem_efficient_spill(g, p, block, s.spill_load_bytes_per_step, false);
  g.mac(first, b.buf(m.pds, r, c, true), b.buf(m.qi, r), b.buf(m.dk, c));
}

// Block (j, h): K_j (once, unless reload_k), D for the head, the steps, the block's spill reloads, then dK_j
// and dV_j through the SRAM of K_j and V_j in the storage dtype.
void emit_mem_efficient_block(const BackwardShape& s, Gen& g, const MemEffPlan& p, int64_t h, size_t j) {
  Builder& b = g.b;
  const MemEffBuffers& m = p.buf;
  const Block& kb = p.kblocks[j];
  const int64_t c = kb.rows;
  b.begin_block(p.kernel, {static_cast<int64_t>(j), h, 0});
  if (!s.reload_k) g.emit(Opcode::Load, {g.rows(p.t.k, h, kb), b.buf(m.kqk, c)});
  emit_mem_efficient_delta(s, g, p, h);
  const int64_t block = h * static_cast<int64_t>(p.kblocks.size()) + static_cast<int64_t>(j);
  bool first = true;
  for (size_t i : mem_efficient_order(s, p, j)) {
    emit_mem_efficient_step(s, g, p, h, i, j, first);
    first = false;
  }
  // A spill is reloaded only after it was stored: the block's own reloads come after its steps' stores
  // (at its start they would read slots no block had written, from DRAM; the GPU reads none: 1 x 1 x 8192
  // x 128 reads its compulsory bytes, validation/data/h100_memeff_bwd_heads_cases.csv).
  emit_mem_efficient_spill(g, p, block, s.spill_load_bytes_per_block, false);
  g.emit(Opcode::Mov, {b.buf(m.dk, c), b.buf(m.kdq, c)});
  g.emit(Opcode::Mov, {b.buf(m.dv, c), b.buf(m.vj, c)});
  g.emit(Opcode::Store, {b.buf(m.kdq, c), g.rows(p.t.dk, h, kb)});
  g.emit(Opcode::Store, {b.buf(m.vj, c), g.rows(p.t.dv, h, kb)});
  emit_mem_efficient_spill(g, p, block, s.spill_bytes_per_block, true, true);
}

isa::Program mem_efficient(const BackwardShape& s, Gen& g) {
  if (s.as_flash_attn || s.warp_groups || s.accumulators_in_registers)
    throw std::invalid_argument("the memory-efficient backward takes none of flash-attn's options");
  Builder& b = g.b;
  MemEffPlan p;
  p.t = declare_common(g, s, s.dtype, s.dtype);
  p.d = g.matrix("D", s.n, 1, kAcc);
  p.acc = g.matrix("dQaccum", s.n, s.d, kAcc);
  // The kernel reads and rewrites a dQ tile holding the tile's lock (a semaphore per query block), so its
  // loads see the last block's store, not a stale copy in another L2 partition.
  b.p.tensors[static_cast<size_t>(p.acc)].coherent = true;
  p.buf = declare_mem_efficient_buffers(b, s);
  p.qblocks = blocks_of(s.n, s.block_q);
  p.kblocks = blocks_of(s.n, s.block_k);
  // A lock word per dQ tile, in its own 32-byte sector (the kernel's sits in the 16 bytes before its
  // tile's f32 values): what each attempt of its compare-and-swap and its release move.
  if (p.kblocks.size() > 1) {
    p.lock = b.tensor("dQlock", static_cast<int64_t>(p.qblocks.size()), 8, kAcc, false, 0);
    if (s.heads > 1)
      b.p.tensors[static_cast<size_t>(p.lock)].shape = {s.heads, static_cast<int64_t>(p.qblocks.size()), 8};
  }
  declare_mem_efficient_spills(s, b, p);
  p.kernel =
      b.kernel(main_kernel(s, "mem_efficient_bwd", {static_cast<int64_t>(p.kblocks.size()), s.heads, 1}));
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t j = 0; j < p.kblocks.size(); ++j) emit_mem_efficient_block(s, g, p, h, j);
  return b.take();
}

isa::Program flash2(const BackwardShape& s, Gen& g) {
  s.check_mma();
  if (s.spill_rows < 0) throw std::invalid_argument("spill rows must not be negative");
  if (s.spill_bytes_per_block % 4 != 0 || s.spill_bytes_per_block < 0 ||
      (s.spill_bytes_per_block > 0 && !s.as_flash_attn && !s.as_mem_efficient))
    throw std::invalid_argument(
        "spill bytes per block: a multiple of 4, with as_flash_attn or as_mem_efficient");
  if (s.warps < 0 || (s.warps > 0 && s.warp_rows < 1))
    throw std::invalid_argument("warps: 0 for the default, or a count with the rows each warp takes");
  if (s.warp_groups && (!s.as_flash_attn || s.block_k < 2 || s.d < 2))
    throw std::invalid_argument("warp groups: with as_flash_attn, a key block and d of at least 2");
  if (s.as_mem_efficient) return mem_efficient(s, g);
  if (s.spill_bytes_per_step != 0 || s.spill_load_bytes_per_step != 0 || s.spill_load_bytes_per_block != 0)
    throw std::invalid_argument("spills per step are a memory-efficient backward option");
  if (s.reload_k) throw std::invalid_argument("reload_k is a memory-efficient backward option");
  const Flash2Plan p = plan_flash2(s, g);
  emit_dot_do_o(s, g, p);
  if (s.warp_groups)
    emit_dkdv_warp_groups(s, g, p);
  else
    emit_dkdv(s, g, p);
  if (s.as_flash_attn) emit_convert_dq(s, g, p);
  return g.b.take();
}

// Without the D_i trick (seed 002: "K is loaded twice"), one kernel flash2_bwd_no_d, grid (query blocks,
// heads); block (i, h), for head h and query block i:
//   load Q_i, dO_i, L_i;
//   sweep 1, per visible K/V block j: load K_j, V_j; S = Q_i K_j^T (masked), P = exp(S - L_i),
//     dP = dO_i V_j^T, D_i += rowsum(P * dP);
//   sweep 2, per visible K/V block j: load K_j, V_j again; recompute S, P, dP; add P^T dO_i into the f32
//     accumulator dV_j in HBM (STORE_ADD), dS = P * (dP - D_i), add dS^T Q_i into dK_j in HBM (STORE_ADD),
//     dQ_i += dS K_j;
//   store dQ_i.
// V is reloaded too: dS needs dP = dO_i V_j^T again, and keeping a whole row of dP on chip would be the
// n-long strip the tiling exists to avoid. dK and dV are f32 in HBM because they are accumulated there, by
// every query block's thread block of the head, atomically (STORE_ADD, as dQ in flash2-bwd); D_i and dQ_i
// belong to the block.
isa::Program flash2_no_d(const BackwardShape& s, Gen& g) {
  Builder& b = g.b;
  const Common t = declare_common(g, s, s.dtype, kAcc);
  const int64_t br = s.block_q, bc = s.block_k;
  const auto [qi, doi, kj, vj, li, di, sc, pb, dp, ds, dqi, dkj, dvj] = declare_tile_buffers(b, s);
  const int part = b.buffer("Dpart", br, 1, kAcc);
  if (s.accumulators_in_registers) b.in_registers({sc, pb, dp, di, part, dqi});
  const auto qblocks = blocks_of(s.n, br), kblocks = blocks_of(s.n, bc);

  BackwardShape code = s;
  code.warps = code.warp_rows = 0;  // its products share their warps the default way
  const int kernel =
      b.kernel(main_kernel(code, "flash2_bwd_no_d", {static_cast<int64_t>(qblocks.size()), s.heads, 1}));
  for (int64_t h = 0; h < s.heads; ++h) {
    for (size_t i = 0; i < qblocks.size(); ++i) {
      const Block& qb = qblocks[i];
      const int64_t r = qb.rows;
      b.begin_block(kernel, {static_cast<int64_t>(i), h, 0});
      g.emit(Opcode::Load, {g.rows(t.q, h, qb), b.buf(qi, r)});
      g.emit(Opcode::Load, {g.rows(t.dout, h, qb), b.buf(doi, r)});
      g.emit(Opcode::Load, {g.rows(t.lse, h, qb), b.buf(li, r)});
      // Recomputes P and dP of tile (qb, kb); leaves P in pb and dP in dp.
      auto recompute = [&](const Block& kb) {
        const int64_t c = kb.rows;
        g.emit(Opcode::Load, {g.rows(t.k, h, kb), b.buf(kj, c)});
        g.emit(Opcode::Load, {g.rows(t.v, h, kb), b.buf(vj, c)});
        g.emit(Opcode::MacZ, {b.buf(qi, r), b.buf(kj, c, -1, true), b.buf(sc, r, c)});
        if (crosses_diagonal(s.causal, qb, kb))
          g.emit(Opcode::Mask, {b.buf(sc, r, c), Operand::imm(qb.start), Operand::imm(kb.start)});
        g.emit(Opcode::Sub, {b.buf(sc, r, c), b.buf(li, r), b.buf(sc, r, c)});
        g.emit(Opcode::Exp, {b.buf(sc, r, c), b.buf(pb, r, c)});
        g.emit(Opcode::MacZ, {b.buf(doi, r), b.buf(vj, c, -1, true), b.buf(dp, r, c)});
      };
      bool first = true;
      for (const Block& kb : kblocks) {  // sweep 1: D_i
        if (!visible(s.causal, qb, kb)) continue;
        const int64_t c = kb.rows;
        recompute(kb);
        g.emit(Opcode::Mul, {b.buf(pb, r, c), b.buf(dp, r, c), b.buf(dp, r, c)});
        g.emit(Opcode::RowSum, {b.buf(dp, r, c), b.buf(first ? di : part, r)});
        if (!first) g.emit(Opcode::Add, {b.buf(di, r), b.buf(part, r), b.buf(di, r)});
        first = false;
      }
      first = true;
      for (const Block& kb : kblocks) {  // sweep 2: dS and its consumers
        if (!visible(s.causal, qb, kb)) continue;
        const int64_t c = kb.rows;
        recompute(kb);
        g.emit(Opcode::MacZ, {b.buf(pb, r, c, true), b.buf(doi, r), b.buf(dvj, c)});
        g.emit(Opcode::StoreAdd, {b.buf(dvj, c), g.rows(t.dv, h, kb)});
        g.emit(Opcode::Sub, {b.buf(dp, r, c), b.buf(di, r), b.buf(dp, r, c)});
        g.emit(Opcode::Mul, {b.buf(pb, r, c), b.buf(dp, r, c), b.buf(ds, r, c)});
        g.emit(Opcode::MacZ, {b.buf(ds, r, c, true), b.buf(qi, r), b.buf(dkj, c)});
        g.emit(Opcode::StoreAdd, {b.buf(dkj, c), g.rows(t.dk, h, kb)});
        g.mac(first, b.buf(ds, r, c), b.buf(kj, c), b.buf(dqi, r));
        first = false;
      }
      int dq_from = dqi;
      if (s.accumulators_in_registers) {  // staged through Q_i's SRAM, in the storage dtype
        g.emit(Opcode::Mov, {b.buf(dqi, r), b.buf(qi, r)});
        dq_from = qi;
      }
      g.emit(Opcode::Store, {b.buf(dq_from, r), g.rows(t.dq, h, qb)});
    }
  }
  return b.take();
}

// Standard backward with the n x n intermediates in HBM (seed 000's "standard" algorithm, P recomputed
// rather than kept from the forward) in six kernels, one per phase, each over all heads:
//   1. naive_bwd_p, grid (query blocks, heads): per key block j: P_ij = exp(Q_i K_j^T - L_i) (masked),
//      store to P;
//   2. naive_bwd_dp, grid (query blocks, heads): per j: dP_ij = dO_i V_j^T, store to dP;
//   3. naive_bwd_ds, grid (query blocks, heads): sweep j reading P_ij, dP_ij for D_i = rowsum(P * dP);
//      sweep j again, store dS_ij = P_ij * (dP_ij - D_i) to dS;
//   4. naive_bwd_dq, grid (query blocks, heads): dQ_i = sum_j dS_ij K_j;
//   5. naive_bwd_dk, grid (key blocks, heads): dK_j = sum_i dS_ij^T Q_i;
//   6. naive_bwd_dv, grid (key blocks, heads): dV_j = sum_i P_ij^T dO_i.
// Every block writes its own rows (or tiles) only; a kernel reads what the earlier kernels wrote.
// Causal masking zeroes P above the diagonal but no tile is skipped: every n x n matrix is written whole.
isa::Program naive(const BackwardShape& s, Gen& g) {
  Builder& b = g.b;
  const Common t = declare_common(g, s, s.dtype, s.dtype);
  const int ptensor = g.matrix("P", s.n, s.n, s.dtype);
  const int dptensor = g.matrix("dP", s.n, s.n, s.dtype);
  const int dstensor = g.matrix("dS", s.n, s.n, s.dtype);
  const int64_t br = s.block_q, bc = s.block_k, d = s.d;
  const int qi = b.buffer("Qi", br, d, s.dtype);
  const int doi = b.buffer("dOi", br, d, s.dtype);
  const int kj = b.buffer("Kj", bc, d, s.dtype);
  const int vj = b.buffer("Vj", bc, d, s.dtype);
  const int li = b.buffer("Li", br, 1, kAcc);
  const int di = b.buffer("Di", br, 1, kAcc);
  const int part = b.buffer("Dpart", br, 1, kAcc);
  const int sc = b.buffer("S", br, bc, kAcc);  // scores, then dP and P * dP in f32
  const int pt = b.buffer("Pt", br, bc, s.dtype);
  const int dpt = b.buffer("dPt", br, bc, s.dtype);
  const int dst = b.buffer("dSt", br, bc, s.dtype);
  const int accq = b.buffer("accQ", br, d, kAcc);
  const int acck = b.buffer("accK", bc, d, kAcc);
  const auto qblocks = blocks_of(s.n, br), kblocks = blocks_of(s.n, bc);
  const std::array<int64_t, 3> by_rows{static_cast<int64_t>(qblocks.size()), s.heads, 1};
  const std::array<int64_t, 3> by_columns{static_cast<int64_t>(kblocks.size()), s.heads, 1};
  const int k_p = b.kernel("naive_bwd_p", by_rows);
  const int k_dp = b.kernel("naive_bwd_dp", by_rows);
  const int k_ds = b.kernel("naive_bwd_ds", by_rows);
  const int k_dq = b.kernel("naive_bwd_dq", by_rows);
  const int k_dk = b.kernel("naive_bwd_dk", by_columns);
  const int k_dv = b.kernel("naive_bwd_dv", by_columns);

  // The blocks of a kernel in launch order: body(h, block) for each of `of`'s blocks, head by head.
  auto grid = [&](int kernel, const std::vector<Block>& of, auto body) {
    for (int64_t h = 0; h < s.heads; ++h)
      for (size_t i = 0; i < of.size(); ++i) {
        b.begin_block(kernel, {static_cast<int64_t>(i), h, 0});
        body(h, of[i]);
      }
  };
  grid(k_p, qblocks, [&](int64_t h, const Block& qb) {  // 1. P
    const int64_t r = qb.rows;
    g.emit(Opcode::Load, {g.rows(t.q, h, qb), b.buf(qi, r)});
    g.emit(Opcode::Load, {g.rows(t.lse, h, qb), b.buf(li, r)});
    for (const Block& kb : kblocks) {
      const int64_t c = kb.rows;
      g.emit(Opcode::Load, {g.rows(t.k, h, kb), b.buf(kj, c)});
      g.emit(Opcode::MacZ, {b.buf(qi, r), b.buf(kj, c, -1, true), b.buf(sc, r, c)});
      if (crosses_diagonal(s.causal, qb, kb))
        g.emit(Opcode::Mask, {b.buf(sc, r, c), Operand::imm(qb.start), Operand::imm(kb.start)});
      g.emit(Opcode::Sub, {b.buf(sc, r, c), b.buf(li, r), b.buf(sc, r, c)});
      g.emit(Opcode::Exp, {b.buf(sc, r, c), b.buf(pt, r, c)});
      g.emit(Opcode::Store, {b.buf(pt, r, c), g.tile(ptensor, h, qb, kb)});
    }
  });
  grid(k_dp, qblocks, [&](int64_t h, const Block& qb) {  // 2. dP
    const int64_t r = qb.rows;
    g.emit(Opcode::Load, {g.rows(t.dout, h, qb), b.buf(doi, r)});
    for (const Block& kb : kblocks) {
      const int64_t c = kb.rows;
      g.emit(Opcode::Load, {g.rows(t.v, h, kb), b.buf(vj, c)});
      g.emit(Opcode::MacZ, {b.buf(doi, r), b.buf(vj, c, -1, true), b.buf(sc, r, c)});
      g.emit(Opcode::Store, {b.buf(sc, r, c), g.tile(dptensor, h, qb, kb)});
    }
  });
  grid(k_ds, qblocks, [&](int64_t h, const Block& qb) {  // 3. dS
    const int64_t r = qb.rows;
    bool first = true;
    for (const Block& kb : kblocks) {
      const int64_t c = kb.rows;
      g.emit(Opcode::Load, {g.tile(ptensor, h, qb, kb), b.buf(pt, r, c)});
      g.emit(Opcode::Load, {g.tile(dptensor, h, qb, kb), b.buf(dpt, r, c)});
      g.emit(Opcode::Mul, {b.buf(pt, r, c), b.buf(dpt, r, c), b.buf(sc, r, c)});
      g.emit(Opcode::RowSum, {b.buf(sc, r, c), b.buf(first ? di : part, r)});
      if (!first) g.emit(Opcode::Add, {b.buf(di, r), b.buf(part, r), b.buf(di, r)});
      first = false;
    }
    for (const Block& kb : kblocks) {
      const int64_t c = kb.rows;
      g.emit(Opcode::Load, {g.tile(ptensor, h, qb, kb), b.buf(pt, r, c)});
      g.emit(Opcode::Load, {g.tile(dptensor, h, qb, kb), b.buf(dpt, r, c)});
      g.emit(Opcode::Sub, {b.buf(dpt, r, c), b.buf(di, r), b.buf(sc, r, c)});
      g.emit(Opcode::Mul, {b.buf(pt, r, c), b.buf(sc, r, c), b.buf(dst, r, c)});
      g.emit(Opcode::Store, {b.buf(dst, r, c), g.tile(dstensor, h, qb, kb)});
    }
  });
  grid(k_dq, qblocks, [&](int64_t h, const Block& qb) {  // 4. dQ = dS K
    const int64_t r = qb.rows;
    bool first = true;
    for (const Block& kb : kblocks) {
      const int64_t c = kb.rows;
      g.emit(Opcode::Load, {g.tile(dstensor, h, qb, kb), b.buf(dst, r, c)});
      g.emit(Opcode::Load, {g.rows(t.k, h, kb), b.buf(kj, c)});
      g.mac(first, b.buf(dst, r, c), b.buf(kj, c), b.buf(accq, r));
      first = false;
    }
    g.emit(Opcode::Store, {b.buf(accq, r), g.rows(t.dq, h, qb)});
  });
  // 5. dK = dS^T Q and 6. dV = P^T dO: the same column-of-tiles GEMM on different operands.
  auto column_gemm = [&](int left, int right, int right_buf, int out) {
    return [&, left, right, right_buf, out](int64_t h, const Block& kb) {
      const int64_t c = kb.rows;
      bool first = true;
      for (const Block& qb : qblocks) {
        const int64_t r = qb.rows;
        g.emit(Opcode::Load, {g.tile(left, h, qb, kb), b.buf(dst, r, c)});
        g.emit(Opcode::Load, {g.rows(right, h, qb), b.buf(right_buf, r)});
        g.mac(first, b.buf(dst, r, c, true), b.buf(right_buf, r), b.buf(acck, c));
        first = false;
      }
      g.emit(Opcode::Store, {b.buf(acck, c), g.rows(out, h, kb)});
    };
  };
  grid(k_dk, kblocks, column_gemm(dstensor, t.q, qi, t.dk));
  grid(k_dv, kblocks, column_gemm(ptensor, t.dout, doi, t.dv));
  return b.take();
}

}  // namespace

std::string_view schedule_name(BackwardSchedule schedule) {
  switch (schedule) {
    case BackwardSchedule::Flash2:
      return "flash2-bwd";
    case BackwardSchedule::Flash2NoD:
      return "flash2-bwd-no-d";
    case BackwardSchedule::Naive:
      return "naive-bwd";
  }
  return "?";
}

isa::Program backward_program(BackwardSchedule schedule, const BackwardShape& s) {
  if (s.n < 1 || s.d < 1 || s.block_q < 1 || s.block_k < 1 || s.heads < 1)
    throw std::invalid_argument("n, d, heads and the block sizes must be positive");
  if ((s.as_mem_efficient || s.reload_k) && schedule != BackwardSchedule::Flash2)
    throw std::invalid_argument("the memory-efficient backward is a flash2-bwd option");
  if (s.accumulators_in_registers && schedule == BackwardSchedule::Naive)
    throw std::invalid_argument("accumulators in registers are a flash2-bwd and flash2-bwd-no-d option");
  Gen g(s, std::string(schedule_name(schedule)) + "(n=" + std::to_string(s.n) + ", d=" + std::to_string(s.d) +
               ", heads=" + std::to_string(s.heads) + ", Br=" + std::to_string(s.block_q) +
               ", Bc=" + std::to_string(s.block_k) + (s.causal ? ", causal" : "") + ")");
  switch (schedule) {
    case BackwardSchedule::Flash2:
      return flash2(s, g);
    case BackwardSchedule::Flash2NoD:
      return flash2_no_d(s, g);
    case BackwardSchedule::Naive:
      return naive(s, g);
  }
  throw std::invalid_argument("unknown backward schedule");
}

}  // namespace attnsim::traces
