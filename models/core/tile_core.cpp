#include "models/core/tile_core.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attnsim {

namespace {

VpuOp vpu_op_of(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::Max:
      return VpuOp::Max;
    case isa::Opcode::Sub:
      return VpuOp::Sub;
    case isa::Opcode::Exp:
      return VpuOp::Exp;
    case isa::Opcode::Add:
      return VpuOp::Add;
    case isa::Opcode::Mul:
      return VpuOp::Mul;
    case isa::Opcode::Div:
      return VpuOp::Div;
    case isa::Opcode::Mov:
      return VpuOp::Mov;
    case isa::Opcode::RowMax:
      return VpuOp::RowMax;
    case isa::Opcode::RowSum:
      return VpuOp::RowSum;
    case isa::Opcode::Mask:
      return VpuOp::MaskCausal;
    default:
      throw std::logic_error("not a vector-unit opcode");
  }
}

// The opcodes TileCore::execute sends to the vector unit.
bool is_vector_op(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::Load:
    case isa::Opcode::Store:
    case isa::Opcode::StoreAdd:
    case isa::Opcode::MacZ:
    case isa::Opcode::Mac:
    case isa::Opcode::Lock:
    case isa::Opcode::Unlock:
    case isa::Opcode::Fence:
      return false;
    default:
      return true;
  }
}

// to = round(from), or to = round(to + from) when Accumulate; rows of untransposed views as plain arrays
// (loads and stores of naive's N x N scores move hundreds of millions of elements at N = 8192).
template <Dtype D, bool Accumulate>
void move_tile(const TileView& from, const TileView& to) {
  auto value = [](double old, double x) { return round_to<D>(Accumulate ? old + x : x); };
  if (from.transposed || to.transposed) {
    for (int64_t r = 0; r < to.rows; ++r)
      for (int64_t c = 0; c < to.cols; ++c) to.at(r, c) = value(to.at(r, c), from.at(r, c));
    return;
  }
  for (int64_t r = 0; r < to.rows; ++r) {
    const double* in = from.data + r * from.row_stride;
    double* out = to.data + r * to.row_stride;
    for (int64_t c = 0; c < to.cols; ++c) out[c] = value(out[c], in[c]);
  }
}

template <bool Accumulate>
void move_tile(const TileView& from, const TileView& to, Dtype to_dtype) {
  switch (to_dtype) {
    case Dtype::F16:
      return move_tile<Dtype::F16, Accumulate>(from, to);
    case Dtype::BF16:
      return move_tile<Dtype::BF16, Accumulate>(from, to);
    case Dtype::F32:
      return move_tile<Dtype::F32, Accumulate>(from, to);
    case Dtype::F64:
      return move_tile<Dtype::F64, Accumulate>(from, to);
  }
}

void copy_tile(const TileView& from, const TileView& to, Dtype to_dtype) {
  move_tile<false>(from, to, to_dtype);
}

// STORE_ADD's values: to += from, added in float64 and rounded once to `to`'s dtype (into an f32 tensor from
// an f32 buffer: bit for bit what LOAD, ADD, STORE of the tile give).
void add_tile(const TileView& from, const TileView& to, Dtype to_dtype) {
  move_tile<true>(from, to, to_dtype);
}

// The instructions the DMA engine carries out.
bool is_memory_op(isa::Opcode op) {
  return op == isa::Opcode::Load || op == isa::Opcode::Store || op == isa::Opcode::StoreAdd;
}

// LOCK, UNLOCK and FENCE: the DMA engine's, without SRAM.
bool is_ordering_op(isa::Opcode op) {
  return op == isa::Opcode::Lock || op == isa::Opcode::Unlock || op == isa::Opcode::Fence;
}

}  // namespace

TileCore::TileCore(const TileUnits& units, std::vector<TensorState>& tensors, int core_id)
    : units_(units), tensors_(tensors), id_(core_id) {}

void TileCore::require_unit(const isa::Program& program, const void* unit, const char* name) const {
  if (!unit)
    throw InputError(program.file, {},
                     std::string("this tile program needs a ") + name + " but the machine config has none");
}

void TileCore::reset_units() {
  mxu_busy_since_ = mxu_free_ = vpu_free_ = sfu_free_ = 0;
  mxu_holder_ = vpu_holder_ = sfu_holder_ = port_holder_ = Holder{};
  port_booked_.reset();
  for (SharedServer* server : {&mxu_shared_, &vpu_shared_, &sfu_shared_, &port_shared_}) server->clear();
  in_flight_.clear();
  in_flight_first_ = 1;
  job_ = 0;
  delayed_others_ = false;
  per_opcode_.fill(0);
  own_locks_.clear();
  units_.dma->reset();
  if (units_.issue) units_.issue->reset();
  // Each run's unit counters are its own (a machine may run several programs in one process).
  if (MxuUnit* mxu = units_.mxu)
    mxu->matmuls = mxu->macs = mxu->busy_cycles = mxu->folds = mxu->stall_cycles = 0;
  if (VpuUnit* vpu = units_.vpu) {
    vpu->ops = vpu->element_ops = vpu->busy_cycles = 0;
    vpu->ops_by_kind.fill(0);
  }
}

uint64_t TileCore::instructions() const {
  uint64_t total = 0;
  for (uint64_t c : per_opcode_) total += c;
  return total;
}

BlockContext TileCore::context(const isa::Program& program, Dtype dtype, bool values, uint64_t sram_base,
                               const std::vector<uint64_t>* sram_offsets,
                               const std::vector<uint64_t>* reg_bases) const {
  BlockContext ctx;
  ctx.buffers.assign(program.buffers.size(), {});
  ctx.tensor_written.assign(program.tensors.size(), 0);
  size_t next_sram = 0, next_reg = 0;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const auto& decl = program.buffers[b];
    BufferState& s = ctx.buffers[b];
    s.dtype = decl.dtype.value_or(dtype);
    s.in_regs = decl.space == isa::BufferDecl::Space::Regs;
    if (s.in_regs && reg_bases) s.base = (*reg_bases)[next_reg++];
    if (!s.in_regs && sram_offsets) s.base = sram_base + (*sram_offsets)[next_sram++];
    if (values) s.values.assign(static_cast<size_t>(decl.rows * decl.cols), 0.0);
  }
  return ctx;
}

// Records the bytes an MXU/VPU instruction reads (sources) and writes (destination) in SRAM and in the
// tile register file, and returns the cycles the busier of the two needs to move them.
uint64_t TileCore::operand_traffic(const TileDecoded& d, const BlockContext& ctx, int repeated,
                                   uint64_t repeats) const {
  const size_t dst = d.op == isa::Opcode::Mask ? 0 : static_cast<size_t>(d.count - 1);
  uint64_t sram_bytes = 0, reg_read = 0, reg_written = 0;
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0) continue;
    const BufferState& s = ctx.buffers[o.storage];
    const uint64_t bytes = static_cast<uint64_t>(o.rows * o.cols) * dtype_bytes(s.dtype);
    const uint64_t read = static_cast<int>(k) == repeated ? bytes * repeats : bytes;
    const bool is_write = k == dst;
    const bool is_read = k != dst || d.op == isa::Opcode::Mask;  // MASK reads and rewrites its tile
    if (s.in_regs) {
      if (is_read) units_.tile_regs->record_read(read), reg_read += read;
      if (is_write) units_.tile_regs->record_write(bytes), reg_written += bytes;
    } else {
      if (is_read) units_.sram->record_read(read), sram_bytes += read;
      if (is_write) units_.sram->record_write(bytes), sram_bytes += bytes;
    }
  }
  uint64_t cycles = units_.sram->access_cycles(sram_bytes);
  if (units_.tile_regs)
    cycles = std::max({cycles, units_.tile_regs->access_cycles(reg_read, false),
                       units_.tile_regs->access_cycles(reg_written, true)});
  return cycles;
}

// The warp instructions of an MXU or VPU instruction.
double TileCore::issue_cost(const TileDecoded& d, const BlockContext& ctx, double* ldmatrix) const {
  if (!units_.issue) return 0;
  const IssueUnit& issue = *units_.issue;
  auto bytes_in_sram = [&](const TileOperand& o) -> uint64_t {
    const BufferState& s = ctx.buffers[o.storage];
    return s.in_regs ? 0 : static_cast<uint64_t>(o.rows * o.cols) * dtype_bytes(s.dtype);
  };
  if (d.op == isa::Opcode::MacZ || d.op == isa::Opcode::Mac) {
    const TileOperand& a = d.ops[0];
    const TileOperand& b = d.ops[1];
    const WarpTiling tiling = ctx.tiling();
    const uint64_t a_loaded = a_from_threads(a, ctx) ? 0 : bytes_in_sram(a);
    const double loads = issue.ldmatrix_instructions(a.out_rows(), a_loaded, bytes_in_sram(b), tiling);
    if (ldmatrix) *ldmatrix = loads;
    return issue.product_instructions(a.out_rows(), a.out_cols(), b.out_cols(), loads, a_loaded > 0,
                                      ctx.rolled_k_loops, tiling);
  }
  const TileOperand& src = d.ops[0];
  const TileOperand& dst = d.ops[d.destination()];
  const bool reduction = d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum;
  const TileOperand& shape = reduction ? src : dst;
  const bool to_16bit = dtype_bytes(ctx.buffers[dst.storage].dtype) == 2;
  // A 16-bit tile from SRAM into 16-bit registers: an mma operand's fragments (Q_i before the key loop).
  const BufferState& from = ctx.buffers[src.storage];
  if (d.op == isa::Opcode::Mov && !from.in_regs && ctx.buffers[dst.storage].in_regs &&
      dtype_bytes(from.dtype) == 2 && to_16bit)
    return issue.fragment_load_instructions(dst.out_rows(), bytes_in_sram(src), ctx.overhead);
  // CUTLASS's iterative softmax begins a score tile's softmax with its row maximum.
  const double softmax = ctx.iterative_softmax && d.op == isa::Opcode::RowMax && src.out_cols() > 1
                             ? issue.iterative_softmax_instructions(src.out_rows(), src.out_cols())
                             : 0.0;
  return issue.vector_instructions(vpu_op_of(d.op), shape.out_rows(), shape.out_cols(), to_16bit,
                                   ctx.accurate_exp, ctx.overhead) +
         shared_access_cost(d, ctx) + softmax;
}

// A product's A operand its warps computed themselves: an SRAM tile an element-wise op wrote from registers
// (BufferState::register_copy), read untransposed, in a kernel whose warps each own whole rows of every tile:
// each warp's rows of A are in its registers as mma accumulators, which are A fragments once packed
// (dQ_i += dS K_j in the project's backward kernels). Transposed, or with warps split along a tile's
// columns, the fragments a warp needs are other threads': they come from shared memory by ldmatrix. Split
// are a kernel declaring `warps(W, R)` (PyTorch's FlashAttention-2) and CUTLASS's `softmax(iterative)`
// forward, whose 2-D warp tiles are why it sums its rows across warps and stores P (accumToSmem).
bool TileCore::a_from_threads(const TileOperand& a, const BlockContext& ctx) {
  const bool warps_own_rows = ctx.warps == 0 && !ctx.iterative_softmax;
  return warps_own_rows && !a.transpose && a.storage >= 0 && a.is_buffer &&
         ctx.buffers[a.storage].register_copy;
}

// An element-wise op (not a copy, product or lock) with an operand in the register file that writes an SRAM
// tile: its threads keep what they stored (BufferState::register_copy).
bool TileCore::writes_from_registers(const TileDecoded& d, const BlockContext& ctx) {
  if (!is_vector_op(d.op)) return false;
  const TileOperand& dst = d.ops[d.destination()];
  if (dst.storage < 0 || !dst.is_buffer || ctx.buffers[dst.storage].in_regs) return false;
  for (size_t k = 0; k < d.count; ++k)
    if (d.ops[k].storage >= 0 && d.ops[k].is_buffer && ctx.buffers[d.ops[k].storage].in_regs) return true;
  return false;
}

// An op between the register file and SRAM: its threads reach each SRAM operand by ld.shared / st.shared,
// but for a source they hold already (BufferState::register_copy).
double TileCore::shared_access_cost(const TileDecoded& d, const BlockContext& ctx) const {
  bool in_regs = false;
  double count = 0;  // of the SRAM operands
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0 || !o.is_buffer) continue;
    const BufferState& s = ctx.buffers[o.storage];
    in_regs = in_regs || s.in_regs;
    if (!s.in_regs && !(k != d.destination() && s.register_copy))
      count += units_.issue->shared_access_instructions(o.out_rows(), o.out_cols(),
                                                        static_cast<int64_t>(dtype_bytes(s.dtype)));
  }
  return in_regs ? count : 0;
}

// The schedulers' span for an MXU or VPU instruction of `count` warp instructions that starts at `start`
// ({start, start, start} without an issue unit). A product's `unit_cycles` on the MXU may hold the
// schedulers too; any other instruction that issues while a product works delays it.
IssueUnit::Span TileCore::issued(const TileDecoded& d, BlockContext& ctx, uint64_t start, double count,
                                 uint64_t unit_cycles) {
  IssueUnit* issue = units_.issue;
  if (!issue) return {start, start, start};
  const bool product = d.op == isa::Opcode::MacZ || d.op == isa::Opcode::Mac;
  const int64_t rows = product || d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum
                           ? d.ops[0].out_rows()
                           : d.ops[d.destination()].out_rows();
  // A kernel that says how many warps a block has shares every instruction among them all.
  const int64_t warps = ctx.warps > 0 ? ctx.warps : issue->warps(rows);
  const IssueUnit::Span span = book_issue(ctx, d.op, start, count, warps, product ? unit_cycles : 0);
  if (!product) yield_mxu(span, count);
  return span;
}

uint64_t TileCore::mma_delay_at_start(const TileDecoded& d, const BlockContext& ctx, uint64_t start,
                                      uint64_t cycles, double count) const {
  const IssueUnit* issue = units_.issue;
  if (!issue || !issue->mma_yields()) return 0;
  const uint64_t queued = port_queued(start, cycles);
  const TileOperand& a = d.ops[0];
  const double own =
      count - issue->mma_instructions(a.out_rows(), a.out_cols(), d.ops[1].out_cols(), ctx.tiling());
  return issue->mma_delay(issue->instructions_in(queued) + own);
}

uint64_t TileCore::port_queued(uint64_t start, uint64_t cycles) const {
  if (sharing_) {
    const auto left = static_cast<uint64_t>(std::llround(port_shared_.work_left_at(start)));
    return std::min(left, cycles);
  }
  const uint64_t free = units_.issue->port_free();
  return free > start ? std::min(free, start + cycles) - start : 0;
}

void TileCore::yield_mxu(const IssueUnit::Span& span, double instructions) {
  if (!units_.issue->mma_yields()) return;
  const uint64_t from = std::max(span.start, mxu_busy_since_);
  const uint64_t until = std::min(span.port_end, mxu_free_);
  if (until <= from || span.port_end <= span.start) return;
  const double beside =
      instructions * static_cast<double>(until - from) / static_cast<double>(span.port_end - span.start);
  const uint64_t delay = units_.issue->mma_delay(beside);
  if (!sharing_) {
    mxu_free_ += delay;
  } else if (mxu_shared_.append_behind(static_cast<double>(delay))) {
    apply_moves(mxu_shared_);
    mxu_free_ = mxu_shared_.busy_until();
  }
}

void TileCore::decode(const isa::Program& program, const isa::Instruction& inst,
                      const std::vector<isa::TileRef>& tiles, TileDecoded& d) const {
  for (const auto& operand : inst.operands())
    if (operand.kind == isa::Operand::Kind::Register || operand.kind == isa::Operand::Kind::Memory)
      throw InputError(program.file, operand.loc(),
                       "scalar operands cannot be mixed into a tile program (this trace declares .buffer)");
  if (inst.op == isa::Opcode::MacZ || inst.op == isa::Opcode::Mac)
    require_unit(program, units_.mxu, "mxu");
  else if (!is_memory_op(inst.op) && !is_ordering_op(inst.op))
    require_unit(program, units_.vpu, "vpu");
  d.op = inst.op;
  d.program = &program;
  d.loc = inst.loc;
  d.group = inst.group;
  d.count = inst.operand_count;
  int imm = 0;
  for (size_t i = 0; i < inst.operand_count; ++i) {
    const auto& operand = inst.operand(i);
    if (operand.kind == isa::Operand::Kind::Immediate) {
      d.imm[imm++] = operand.flat;
      d.ops[i].storage = -1;  // the scoreboard skips it
      continue;
    }
    const isa::TileRef& ref = tiles[operand.tensor];
    TileOperand& o = d.ops[i];
    o.storage = ref.index;
    o.is_buffer = ref.is_buffer;
    o.offset = ref.offset + ref.row0 * ref.row_stride + ref.col0;
    o.rows = ref.rows;
    o.cols = ref.cols;
    o.row_stride = ref.row_stride;
    o.transpose = ref.transpose;
  }
}

TileView TileCore::view(const TileOperand& o, BlockContext& ctx) {
  std::vector<double>& values = o.is_buffer ? ctx.buffers[o.storage].values : tensors_[o.storage].values;
  TileView v;
  v.data = values.empty() ? nullptr : values.data() + o.offset;
  v.rows = o.out_rows();
  v.cols = o.out_cols();
  v.row_stride = o.row_stride;
  v.transposed = o.transpose;
  return v;
}

// Scoreboard: sources must be written, the destination's earlier readers and writer done.
uint64_t TileCore::ready_time(const TileDecoded& d, const BlockContext& ctx) const {
  const size_t dst_index = d.destination();
  uint64_t ready = ctx.next_issue[d.group];
  // A GPU's warps reach __threadfence (and the __syncthreads before a lock) having issued everything
  // before it: the block's earlier instructions are done, its stores arrived.
  if (d.op == isa::Opcode::Fence) return std::max(ready, ctx.end);
  if (d.op == isa::Opcode::Lock) ready = std::max(ready, ctx.end);
  if (d.op == isa::Opcode::Lock && locks().holder(lock_word(d).addr) == &ctx)
    throw InputError(d.program->file, d.loc,
                     "LOCK of a lock this thread block already holds: it would wait "
                     "for itself forever (UNLOCK it first)");
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0) continue;  // immediate
    if (o.is_buffer) {
      const BufferState& s = ctx.buffers[o.storage];
      const bool chained = k != dst_index && s.chain_ready != 0 && is_vector_op(d.op);
      ready = std::max(ready, chained ? s.chain_ready : s.ready);
      if (k == dst_index) ready = std::max(ready, s.reads_done);
    } else if (k != dst_index) {
      ready = std::max(ready, ctx.tensor_written[o.storage]);
    }
  }
  return ready;
}

uint64_t TileCore::unit_free_for(uint64_t free, const Holder& holder, const BlockContext* ctx) const {
  const bool takes = older_preempts_ && ctx && holder.ctx && holder.ctx->age > ctx->age && free > holder.from;
  return takes ? holder.from : free;
}

void TileCore::hold(Holder& holder, BlockContext& ctx, const TileDecoded& d, uint64_t start, uint64_t done,
                    uint64_t latency) const {
  if (older_preempts_) holder = {&ctx, start, done, latency, d};
}

void TileCore::resume_later(Holder& holder, uint64_t start, uint64_t taken, uint64_t unit_free) {
  holder.from = start + taken;
  push_results(holder, unit_free + holder.latency);
  delayed_others_ = true;
}

void TileCore::push_results(Holder& holder, uint64_t done) {
  const uint64_t was_done = holder.done;
  holder.done = std::max(holder.done, done);
  if (!holder.ctx || holder.done == was_done) return;
  BlockContext& ctx = *holder.ctx;
  const TileDecoded& d = holder.d;
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0 || !o.is_buffer) continue;
    BufferState& s = ctx.buffers[o.storage];
    uint64_t& t = k == d.destination() ? s.ready : s.reads_done;
    t = std::max(t, holder.done);
    if (k == d.destination() && s.chain_ready != 0)
      s.chain_ready += holder.done - was_done;  // its stream too
  }
  ctx.end = std::max(ctx.end, holder.done);
  delayed_others_ = true;
}

SharedServer& TileCore::vector_pipe_server(isa::Opcode op) {
  return on_sfu(op) ? sfu_shared_ : vpu_shared_;
}

const SharedServer& TileCore::vector_pipe_server(isa::Opcode op) const {
  return on_sfu(op) ? sfu_shared_ : vpu_shared_;
}

// A moved job's unit (or schedulers') part now ends later: so does its result, its latency after.
void TileCore::apply_moves(const SharedServer& server) {
  for (const auto& [job, end] : server.moved()) {
    if (job < in_flight_first_ || job - in_flight_first_ >= in_flight_.size()) continue;
    Holder& holder = in_flight_[job - in_flight_first_];
    push_results(holder, end + holder.latency);
  }
}

void TileCore::track(BlockContext& ctx, const TileDecoded& d, uint64_t done, uint64_t latency) {
  while (in_flight_first_ + in_flight_.size() < job_) in_flight_.emplace_back();  // untracked jobs
  if (in_flight_first_ + in_flight_.size() == job_) in_flight_.push_back(Holder{&ctx, 0, done, latency, d});
}

void TileCore::sweep(uint64_t now) {
  for (SharedServer* server : {&mxu_shared_, &vpu_shared_, &sfu_shared_, &port_shared_}) server->advance(now);
  // A job's end is its fractional end rounded: one done a cycle before `now` has left every unit.
  while (!in_flight_.empty() && (!in_flight_.front().ctx || in_flight_.front().done + 1 < now)) {
    in_flight_.pop_front();
    ++in_flight_first_;
  }
}

IssueUnit::Span TileCore::book_issue(BlockContext& ctx, isa::Opcode op, uint64_t at, double count,
                                     int64_t warps, uint64_t held) {
  IssueUnit& issue = *units_.issue;
  issue.attribute(op, count);
  if (sharing_) {
    const uint64_t start = std::max(at, port_shared_.owner_free(&ctx));
    const IssueUnit::Cost cost = issue.count_issue(count, warps, held);
    if (!issue.params().limit) return {at, at, at};
    const uint64_t port_end = port_shared_.add(job_, &ctx, ctx.age, start, static_cast<double>(cost.port));
    apply_moves(port_shared_);
    return {start, port_end, std::max(port_end, start + cost.own)};
  }
  const uint64_t free_before = issue.port_free();
  const uint64_t from = std::max(at, unit_free_for(free_before, port_holder_, &ctx));
  const bool takes = from < free_before;
  if (takes) issue.set_port_free(from);
  const IssueUnit::Span span = issue.issue_span(at, count, warps, held);
  port_booked_.reset();
  if (!takes) {
    port_booked_ = span;
  } else if (span.port_end > span.start) {
    const uint64_t taken = span.port_end - span.start;
    issue.set_port_free(free_before + taken);
    resume_later(port_holder_, span.start, taken, free_before + taken);
  } else {
    issue.set_port_free(free_before);
  }
  return span;
}

void TileCore::hold_port(BlockContext& ctx, const TileDecoded& d, uint64_t done, uint64_t latency) {
  if (port_booked_ && port_booked_->port_end > port_booked_->start)
    hold(port_holder_, ctx, d, port_booked_->start, done, latency);
  port_booked_.reset();
}

void TileCore::forget(const BlockContext& ctx) {
  for (Holder* h : {&mxu_holder_, &vpu_holder_, &sfu_holder_, &port_holder_})
    if (h->ctx == &ctx) *h = Holder{};
  for (Holder& holder : in_flight_)
    if (holder.ctx == &ctx) holder.ctx = nullptr;  // its results are final now
}

uint64_t TileCore::start_time(const TileDecoded& d, uint64_t ready, const BlockContext* ctx) const {
  switch (d.op) {
    case isa::Opcode::Load:
    case isa::Opcode::Store:
    case isa::Opcode::StoreAdd:
      return units_.dma->earliest_start(ready);
    case isa::Opcode::MacZ:
    case isa::Opcode::Mac:
      if (sharing_) return std::max(ready, mxu_shared_.owner_free(ctx));
      return std::max(ready, unit_free_for(mxu_free_, mxu_holder_, ctx));
    case isa::Opcode::Lock: {
      const uint64_t free = locks().free_at(lock_word(d).addr);
      return free == LockTable::kHeld ? free : std::max(units_.dma->earliest_start(ready), free);
    }
    case isa::Opcode::Unlock:
      return units_.dma->earliest_start(ready);
    case isa::Opcode::Fence:
      return ready;
    default:
      if (sharing_) return std::max(ready, vector_pipe_server(d.op).owner_free(ctx));
      return std::max(ready, unit_free_for(vector_pipe_free(d.op), vector_pipe_holder(d.op), ctx));
  }
}

bool TileCore::on_sfu(isa::Opcode op) const {
  return units_.vpu && units_.vpu->params().sfu_pipe && (op == isa::Opcode::Exp || op == isa::Opcode::Div);
}

uint64_t& TileCore::vector_pipe_free(isa::Opcode op) {
  return on_sfu(op) ? sfu_free_ : vpu_free_;
}

uint64_t TileCore::vector_pipe_free(isa::Opcode op) const {
  return on_sfu(op) ? sfu_free_ : vpu_free_;
}

TileCore::Holder& TileCore::vector_pipe_holder(isa::Opcode op) {
  return on_sfu(op) ? sfu_holder_ : vpu_holder_;
}

const TileCore::Holder& TileCore::vector_pipe_holder(isa::Opcode op) const {
  return on_sfu(op) ? sfu_holder_ : vpu_holder_;
}

TileCore::Step TileCore::execute(const TileDecoded& d, BlockContext& ctx, bool blocking, bool values) {
  return execute(d, ctx, blocking, values, ready_time(d, ctx));
}

TileCore::Step TileCore::execute(const TileDecoded& d, BlockContext& ctx, bool blocking, bool values,
                                 uint64_t ready) {
  ++per_opcode_[static_cast<size_t>(d.op)];
  ++job_;
  delayed_others_ = false;
  Step step;
  switch (d.op) {
    case isa::Opcode::Load:
    case isa::Opcode::Store:
    case isa::Opcode::StoreAdd:
      step = memory_op(d, ctx, ready, values);
      break;
    case isa::Opcode::MacZ:
    case isa::Opcode::Mac:
      step = matrix_op(d, ctx, ready, values);
      break;
    case isa::Opcode::Lock:
      step = lock_op(d, ctx, ready);
      break;
    case isa::Opcode::Unlock:
      step = unlock_op(d, ctx, ready);
      break;
    case isa::Opcode::Fence:
      step = fence_op(d, ctx, ready);
      break;
    default:
      step = vector_op(d, ctx, ready, values);
      break;
  }
  // Bookkeeping for the scoreboard: readers hold their sources until done; the writer marks readiness.
  const size_t dst_index = d.destination();
  const bool from_registers = writes_from_registers(d, ctx);
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0 || !o.is_buffer) continue;
    BufferState& s = ctx.buffers[o.storage];
    if (k == dst_index) {
      s.ready = std::max(s.ready, step.done);
      s.chain_ready = step.chain_ready;
      s.register_copy = from_registers;
    } else
      s.reads_done = std::max(s.reads_done, step.done);
  }
  step.delayed_others = delayed_others_;
  uint64_t& next_issue = ctx.next_issue[d.group];
  ctx.stalls += step.start - next_issue;
  // In order: the group's next instruction leaves the sequencer the cycle after this one was accepted by
  // its unit; blocking issue waits for completion instead.
  next_issue = blocking ? step.done : std::max(step.start + 1, step.hold);
  ctx.end = std::max(ctx.end, step.done);
  if (sharing_ && job_ % 64 == 0) sweep(step.start);
  return step;
}

// LOAD, STORE and STORE_ADD. Like a STORE, a STORE_ADD waits for its source buffer, not for earlier writes
// to its tensor (a GPU's red.global.add does not either; values are computed here in program order whatever
// the timing), and later LOADs of the tensor wait for it. Its values are computed whole, here: on a chip,
// where each core computes values as it executes its instructions, no other core's update can fall between
// its read and its write.
TileCore::Step TileCore::memory_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values) {
  const bool is_store = d.op == isa::Opcode::Store || d.op == isa::Opcode::StoreAdd;
  const bool accumulate = d.op == isa::Opcode::StoreAdd;
  const TileOperand& mem = d.ops[is_store ? 1 : 0];
  const TensorState& tensor = tensors_[mem.storage];
  const uint64_t elem = static_cast<uint64_t>(dtype_bytes(tensor.dtype));
  MemAccess transfer;
  transfer.tensor = mem.storage;
  transfer.addr = tensor.base + static_cast<uint64_t>(mem.offset) * elem;
  transfer.rows = static_cast<uint64_t>(mem.rows);
  transfer.row_bytes = static_cast<uint64_t>(mem.cols) * elem;
  transfer.stride_bytes = static_cast<uint64_t>(mem.row_stride) * elem;
  transfer.is_write = is_store;
  transfer.acquire = !is_store && tensor.coherent;
  transfer.core = id_;
  // A buffer in the register file is loaded and stored as a GPU's ld.global / st.global do, with no
  // shared memory on the way.
  OnChipEnd& end = ctx.buffers[d.ops[is_store ? 0 : 1].storage].in_regs
                       ? static_cast<OnChipEnd&>(*units_.tile_regs)
                       : *units_.sram;
  DmaEngine::Timing t = accumulate ? units_.dma->submit_accumulate(ready, transfer, *units_.memory, end)
                                   : units_.dma->submit(ready, transfer, *units_.memory, end);
  // The copy's instructions issue from its start; it is done no earlier than the last of them.
  if (IssueUnit* issue = units_.issue) {
    const double count =
        issue->copy_instructions(transfer.rows * transfer.row_bytes, ctx.overhead, accumulate);
    const IssueUnit::Span span = book_issue(ctx, d.op, t.start, count);
    yield_mxu(span, count);
    t.done = std::max(t.done, span.done);
    hold_port(ctx, d, t.done, 0);
    if (sharing_) track(ctx, d, t.done, 0);
  }
  if (is_store) {
    ctx.tensor_written[mem.storage] = std::max(ctx.tensor_written[mem.storage], t.done);
  }
  if (values) {
    const Dtype to_dtype = is_store ? tensors_[d.ops[1].storage].dtype : ctx.buffers[d.ops[1].storage].dtype;
    if (accumulate)
      add_tile(view(d.ops[0], ctx), view(d.ops[1], ctx), to_dtype);
    else
      copy_tile(view(d.ops[0], ctx), view(d.ops[1], ctx), to_dtype);
  }
  // A GPU's warps issue a store's data from their registers and stall while the core's store queue is
  // full: the group goes on once the data have left the core.
  const bool held = is_store && units_.issue && units_.issue->params().stores_hold_issue;
  return {t.start, t.done, t.done, held ? std::max(t.left, t.start + 1) : 0};
}

// The lock's word: the first row of LOCK's or UNLOCK's tile, at its tensor's address.
MemAccess TileCore::lock_word(const TileDecoded& d) const {
  const TileOperand& mem = d.ops[0];
  const TensorState& tensor = tensors_[mem.storage];
  const uint64_t elem = static_cast<uint64_t>(dtype_bytes(tensor.dtype));
  MemAccess word;
  word.tensor = mem.storage;
  word.addr = tensor.base + static_cast<uint64_t>(mem.offset) * elem;
  word.rows = 1;
  word.row_bytes = static_cast<uint64_t>(mem.cols) * elem;
  word.stride_bytes = word.row_bytes;
  word.core = id_;
  return word;
}

// A spin lock's acquire: compare-and-swap at the word's home until it succeeds. While another block holds
// the lock the core's chip does not issue this (start_time: kHeld); once released, the attempt that
// follows succeeds. The failed attempts are those that fit in the wait, one every round trip plus the
// backoff: they move their bytes too. The block goes on when the successful one's old value is back.
TileCore::Step TileCore::lock_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready) {
  DmaEngine& dma = *units_.dma;
  LockTable& table = locks();
  const MemAccess word = lock_word(d);
  const uint64_t free = table.free_at(word.addr);
  if (free == LockTable::kHeld) throw std::logic_error("LOCK issued while its lock is held");
  uint64_t start = std::max(dma.earliest_start(ready), free);
  const bool waited = free > ready;
  if (waited) start = std::max(start, table.floor());
  const DmaEngine::Timing t = dma.submit_atomic(start, word, *units_.memory, *units_.sram);
  uint64_t attempts = 1;
  if (waited) {
    const uint64_t period = std::max<uint64_t>(1, t.done - t.start + static_cast<uint64_t>(d.imm[0]));
    const uint64_t failed = (start - ready + period - 1) / period;
    dma.record_failed_atomics(start, word, failed, *units_.memory);
    attempts += failed;
    dma.lock_wait_cycles += start - ready;
  }
  dma.lock_attempts += attempts;
  ++dma.lock_acquisitions;
  table.take(word.addr, &ctx);
  ++ctx.locks_held;
  return {t.start, t.done, t.done, t.done};
}

// The release: a store of the word; the lock is free once it has arrived.
TileCore::Step TileCore::unlock_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready) {
  LockTable& table = locks();
  MemAccess word = lock_word(d);
  if (table.holder(word.addr) != &ctx)
    throw InputError(d.program->file, d.loc, "UNLOCK of a lock this thread block does not hold");
  word.is_write = true;
  const DmaEngine::Timing t = units_.dma->submit_release(ready, word, *units_.memory, *units_.sram);
  table.release(word.addr, t.done);
  --ctx.locks_held;
  ctx.tensor_written[static_cast<size_t>(word.tensor)] =
      std::max(ctx.tensor_written[static_cast<size_t>(word.tensor)], t.done);
  return {t.start, t.done, t.done, 0};
}

// __threadfence: ready once the block's earlier instructions are done, its stores arrived (ready_time); its
// own round trip follows, and the group's next instruction waits for it.
TileCore::Step TileCore::fence_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready) {
  DmaEngine& dma = *units_.dma;
  const uint64_t turn = ctx.next_issue[d.group];
  ++dma.fences;
  dma.fence_wait_cycles += ready > turn ? ready - turn : 0;
  if (units_.memory) units_.memory->fence(id_);
  const uint64_t done = ready + static_cast<uint64_t>(dma.params().fence_cycles);
  return {ready, done, done, done};
}

TileCore::Step TileCore::matrix_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values) {
  MxuUnit& mxu = *units_.mxu;
  const uint64_t free_before = mxu_free_;
  const uint64_t start = sharing_ ? std::max(ready, mxu_shared_.owner_free(&ctx))
                                  : std::max(ready, unit_free_for(mxu_free_, mxu_holder_, &ctx));
  if (start < free_before && !sharing_) mxu_free_ = start;  // taken from a younger block's instruction
  const TileOperand& a = d.ops[0];
  const TileOperand& b = d.ops[1];
  const TileOperand& dst = d.ops[d.count - 1];
  const uint64_t array_cycles = mxu.matmul(a.out_rows(), a.out_cols(), b.out_cols());
  // Operands stream from SRAM and the result returns to it; a narrow SRAM port can be the limit, the more
  // so when each array reads the operand they all need.
  const auto repeats = static_cast<uint64_t>(mxu.shared_operand_reads(a.out_rows(), b.out_cols()));
  uint64_t cycles = std::max(array_cycles, operand_traffic(d, ctx, mxu.shared_operand_index(), repeats));
  double ldmatrix = 0;
  const double count = issue_cost(d, ctx, &ldmatrix);
  if (IssueUnit* issue = units_.issue) issue->ldmatrix += static_cast<uint64_t>(std::llround(ldmatrix));
  cycles += mma_delay_at_start(d, ctx, start, cycles, count);
  if (start > mxu_free_) mxu_busy_since_ = start;  // after an idle gap: a new busy stretch
  mxu_free_ = start + cycles;
  uint64_t unit_end = mxu_free_;
  if (sharing_) {
    unit_end = mxu_shared_.add(job_, &ctx, ctx.age, start, static_cast<double>(cycles));
    apply_moves(mxu_shared_);
    mxu_free_ = mxu_shared_.busy_until();
  }
  // A reader of the result waits for its latency too; the array is free for other work meanwhile. The
  // arrays' own cycles may hold the schedulers (the fragment loads go through the SRAM port beside them).
  const auto latency = static_cast<uint64_t>(mxu.params().result_latency);
  const uint64_t done = std::max(unit_end, issued(d, ctx, start, count, array_cycles).done) + latency;
  hold_port(ctx, d, done, latency);
  if (sharing_) {
    track(ctx, d, done, latency);
  } else if (start < free_before) {
    const uint64_t unit_free = mxu_free_;
    mxu_free_ = free_before + (unit_free - start);
    resume_later(mxu_holder_, start, unit_free - start, mxu_free_);
  } else {
    hold(mxu_holder_, ctx, d, start, done, latency);
  }
  const Step step{start, done, std::min(sharing_ ? unit_end : mxu_free_, done)};
  if (!values) return step;
  TileView va = view(a, ctx), vb = view(b, ctx), vd = view(dst, ctx);
  std::optional<TileView> vc;
  if (d.op == isa::Opcode::Mac) vc = view(d.ops[2], ctx);
  const Dtype out = ctx.buffers[dst.storage].dtype;
  // a or b in the destination's buffer, or an accumulator that is another view of it.
  const TileOperand& acc = d.ops[2];
  const bool aliases = a.storage == dst.storage || b.storage == dst.storage ||
                       (d.op == isa::Opcode::Mac && acc.storage == dst.storage &&
                        (acc.offset != dst.offset || acc.transpose != dst.transpose));
  if (!aliases) {
    MxuUnit::compute(va, vb, vc ? &*vc : nullptr, vd, out);
    return step;
  }
  std::vector<double> scratch(static_cast<size_t>(vd.rows * vd.cols));
  TileView tmp{scratch.data(), vd.rows, vd.cols, vd.cols, false};
  MxuUnit::compute(va, vb, vc ? &*vc : nullptr, tmp, out);
  for (int64_t r = 0; r < vd.rows; ++r)
    for (int64_t c = 0; c < vd.cols; ++c) vd.at(r, c) = tmp.at(r, c);
  return step;
}

TileCore::Step TileCore::vector_op(const TileDecoded& d, BlockContext& ctx, uint64_t ready, bool values) {
  VpuUnit& vpu = *units_.vpu;
  uint64_t& pipe_free = vector_pipe_free(d.op);
  Holder& holder = vector_pipe_holder(d.op);
  SharedServer& server = vector_pipe_server(d.op);
  const uint64_t free_before = pipe_free;
  const uint64_t start = sharing_ ? std::max(ready, server.owner_free(&ctx))
                                  : std::max(ready, unit_free_for(pipe_free, holder, &ctx));
  const VpuOp op = vpu_op_of(d.op);
  const TileOperand& src = d.ops[0];
  const TileOperand& dst = d.ops[d.destination()];
  const bool reduction = d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum;
  const int64_t rows = reduction ? src.out_rows() : dst.out_rows();
  const int64_t cols = reduction ? src.out_cols() : dst.out_cols();
  uint64_t cycles = vpu.op_cycles(op, rows, cols);
  cycles = std::max(cycles, operand_traffic(d, ctx));
  // Chained onto a producer still streaming out: the last vector follows the producer's last one.
  const uint64_t chained = chained_sources_ready(d, ctx);
  uint64_t unit_end = std::max(start + cycles, chained ? chained + vpu.vector_interval(op) : 0);
  pipe_free = unit_end;
  if (sharing_) {
    unit_end = server.add(job_, &ctx, ctx.age, start, static_cast<double>(unit_end - start));
    apply_moves(server);
  }
  const uint64_t latency = vpu.result_latency(op, cols);  // as the MXU's result_latency
  const uint64_t done = std::max(unit_end, issued(d, ctx, start, issue_cost(d, ctx), 0).done) + latency;
  hold_port(ctx, d, done, latency);
  if (sharing_) {
    track(ctx, d, done, latency);
  } else if (start < free_before) {  // taken from a younger block's instruction
    pipe_free = free_before + (unit_end - start);
    resume_later(holder, start, unit_end - start, pipe_free);
  } else {
    hold(holder, ctx, d, start, done, latency);
  }
  if (values) vector_values(d, ctx, op);
  Step step{start, done, std::min(sharing_ ? unit_end : pipe_free, done)};
  if (vpu.chains_from(op)) step.chain_ready = start + vpu.first_vector_cycles(op) + latency;
  return step;
}

uint64_t TileCore::chained_sources_ready(const TileDecoded& d, const BlockContext& ctx) const {
  if (!units_.vpu || !units_.vpu->params().chaining) return 0;
  uint64_t latest = 0;
  const size_t dst_index = d.destination();
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (k == dst_index || o.storage < 0 || !o.is_buffer) continue;
    const BufferState& s = ctx.buffers[o.storage];
    if (s.chain_ready != 0) latest = std::max(latest, s.ready);
  }
  return latest;
}

void TileCore::vector_values(const TileDecoded& d, BlockContext& ctx, VpuOp op) {
  const TileOperand& src = d.ops[0];
  const TileOperand& dst = d.ops[d.destination()];
  const Dtype out = ctx.buffers[dst.storage].dtype;
  // Element-wise ops may run in place on the very same view; a source that is a different view of the
  // destination's buffer (S[:, 0:1] into S) could be overwritten before it is read, so such results go
  // through a scratch tile.
  bool overlaps = false;
  for (size_t k = 0; k + 1 < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    overlaps = overlaps || (o.is_buffer && o.storage == dst.storage &&
                            (o.offset != dst.offset || o.rows != dst.rows || o.cols != dst.cols ||
                             o.transpose != dst.transpose));
  }
  TileView target = view(dst, ctx);
  std::vector<double> scratch;
  if (overlaps && d.op != isa::Opcode::Mask) {
    scratch.resize(static_cast<size_t>(target.rows * target.cols));
    target = TileView{scratch.data(), target.rows, target.cols, target.cols, false};
  }
  if (d.op == isa::Opcode::Mask) {
    VpuUnit::mask_causal(target, d.imm[0], d.imm[1]);
  } else if (d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum) {
    VpuUnit::reduce(op, view(src, ctx), target, out);
  } else if (d.op == isa::Opcode::Exp || d.op == isa::Opcode::Mov) {
    VpuUnit::elementwise(op, view(src, ctx), nullptr, target, out);
  } else {
    TileView b = view(d.ops[1], ctx);
    VpuUnit::elementwise(op, view(src, ctx), &b, target, out);
  }
  if (scratch.empty()) return;
  TileView real = view(dst, ctx);
  for (int64_t r = 0; r < real.rows; ++r)
    for (int64_t c = 0; c < real.cols; ++c) real.at(r, c) = target.at(r, c);
}

}  // namespace attnsim
