// The tile path of the sequencer: tile programs (LOAD/STORE through the DMA engine, MAC on the MXU,
// element-wise ops and reductions on the VPU) issued in order, one per cycle, held by a scoreboard until
// their operands are ready and their unit is free. Times are computed, not ticked: each instruction's
// start and completion come from the unit models, and the kernel is synchronised once per quantum.
#include <algorithm>
#include <stdexcept>

#include "isa/disassembler.h"
#include "isa/init.h"
#include "models/sequencer/sequencer.h"

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

}  // namespace

void Sequencer::require_unit(const void* unit, const char* name) const {
  if (!unit)
    throw InputError(program_->file, {},
                     std::string("this tile program needs a ") + name + " but the machine config has none");
}

void Sequencer::load_tiles(const isa::Program& program, bool timing_only) {
  timing_only_ = timing_only;
  require_unit(units_.hbm, "hbm");
  require_unit(units_.sram, "sram");
  require_unit(units_.dma, "dma");

  // HBM layout and values of the tensors.
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  tensors_.assign(program.tensors.size(), {});
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    const auto& decl = program.tensors[t];
    tensors_[t].dtype = decl.dtype.value_or(dtype_);
    names.push_back(decl.name);
    sizes.push_back(static_cast<uint64_t>(decl.elements()) * dtype_bytes(tensors_[t].dtype));
    if (!timing_only) tensors_[t].values = isa::materialize(decl, tensors_[t].dtype);
  }
  std::vector<uint64_t> bases = units_.hbm->allocate(names, sizes, program.file);
  for (size_t t = 0; t < tensors_.size(); ++t) tensors_[t].base = bases[t];

  // Buffers: SRAM by default, the tile register file for `regs` ones.
  std::vector<BufferRequest> sram_requests, reg_requests;
  std::vector<size_t> sram_index, reg_index;
  buffers_.assign(program.buffers.size(), {});
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const auto& decl = program.buffers[b];
    buffers_[b].dtype = decl.dtype.value_or(dtype_);
    buffers_[b].in_regs = decl.space == isa::BufferDecl::Space::Regs;
    const uint64_t bytes = static_cast<uint64_t>(decl.rows * decl.cols) * dtype_bytes(buffers_[b].dtype);
    (buffers_[b].in_regs ? reg_requests : sram_requests).push_back({decl.name, bytes, decl.loc});
    (buffers_[b].in_regs ? reg_index : sram_index).push_back(b);
    if (!timing_only) buffers_[b].values.assign(static_cast<size_t>(decl.rows * decl.cols), 0.0);
  }
  std::vector<uint64_t> offsets = units_.sram->allocate(sram_requests, program.file);
  for (size_t i = 0; i < sram_index.size(); ++i) buffers_[sram_index[i]].base = offsets[i];
  if (!reg_requests.empty()) {
    if (!units_.tile_regs)
      throw InputError(
          program.file, reg_requests.front().loc,
          "buffer '" + reg_requests.front().name + "' is in `regs` but the machine has no tile_regs");
    std::vector<uint64_t> first = units_.tile_regs->allocate(reg_requests, program.file);
    for (size_t i = 0; i < reg_index.size(); ++i) buffers_[reg_index[i]].base = first[i];
  }

  // An in-memory program is decoded (and so validated) before it runs; a streamed one chunk by chunk.
  if (!program.stream) decode_chunk(program.instructions, program.tiles);
  units_.dma->reset();
  // Each run's unit counters are its own (a machine may run several programs in one process).
  if (MxuUnit* mxu = units_.mxu)
    mxu->matmuls = mxu->macs = mxu->busy_cycles = mxu->folds = mxu->stall_cycles = 0;
  if (VpuUnit* vpu = units_.vpu) {
    vpu->ops = vpu->element_ops = vpu->busy_cycles = 0;
    vpu->ops_by_kind.fill(0);
  }
}

// Records the bytes an MXU/VPU instruction reads (sources) and writes (destination) in SRAM and in the
// tile register file, and returns the cycles the busier of the two needs to move them.
uint64_t Sequencer::operand_traffic(const TileDecoded& d) const {
  const size_t dst = d.op == isa::Opcode::Mask ? 0 : static_cast<size_t>(d.count - 1);
  uint64_t sram_bytes = 0, reg_read = 0, reg_written = 0;
  for (size_t k = 0; k < d.count; ++k) {
    const TileOperand& o = d.ops[k];
    if (o.storage < 0) continue;
    const StorageState& s = buffers_[o.storage];
    const uint64_t bytes = static_cast<uint64_t>(o.rows * o.cols) * dtype_bytes(s.dtype);
    const bool is_write = k == dst;
    const bool is_read = k != dst || d.op == isa::Opcode::Mask;  // MASK reads and rewrites its tile
    if (s.in_regs) {
      if (is_read) units_.tile_regs->record_read(bytes), reg_read += bytes;
      if (is_write) units_.tile_regs->record_write(bytes), reg_written += bytes;
    } else {
      if (is_read) units_.sram->record_read(bytes), sram_bytes += bytes;
      if (is_write) units_.sram->record_write(bytes), sram_bytes += bytes;
    }
  }
  uint64_t cycles = units_.sram->access_cycles(sram_bytes);
  if (units_.tile_regs)
    cycles = std::max({cycles, units_.tile_regs->access_cycles(reg_read, false),
                       units_.tile_regs->access_cycles(reg_written, true)});
  return cycles;
}

void Sequencer::decode_one(const isa::Instruction& inst, const std::vector<isa::TileRef>& tiles,
                           TileDecoded& d) const {
  const isa::Program& program = *program_;
  for (const auto& operand : inst.operands())
    if (operand.kind == isa::Operand::Kind::Register || operand.kind == isa::Operand::Kind::Memory)
      throw InputError(program.file, operand.loc,
                       "scalar operands cannot be mixed into a tile program (this trace declares .buffer)");
  if (inst.op == isa::Opcode::MacZ || inst.op == isa::Opcode::Mac)
    require_unit(units_.mxu, "mxu");
  else if (inst.op != isa::Opcode::Load && inst.op != isa::Opcode::Store)
    require_unit(units_.vpu, "vpu");
  d.op = inst.op;
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
    // The DMA engine moves data between HBM and SRAM; register-file buffers are filled with MOV.
    if ((inst.op == isa::Opcode::Load || inst.op == isa::Opcode::Store) && ref.is_buffer &&
        program.buffers[ref.index].space == isa::BufferDecl::Space::Regs)
      throw InputError(program.file, operand.loc,
                       "LOAD/STORE move tiles between HBM and SRAM; '" + program.buffers[ref.index].name +
                           "' is in the register file, so MOV it from or to an SRAM buffer");
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

void Sequencer::decode_chunk(const std::vector<isa::Instruction>& instructions,
                             const std::vector<isa::TileRef>& tiles) {
  tile_code_.resize(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) decode_one(instructions[i], tiles, tile_code_[i]);
}

TileView Sequencer::view(const TileOperand& o) {
  auto& storage = o.is_buffer ? buffers_[o.storage] : tensors_[o.storage];
  TileView v;
  v.data = storage.values.empty() ? nullptr : storage.values.data() + o.offset;
  v.rows = o.out_rows();
  v.cols = o.out_cols();
  v.row_stride = o.row_stride;
  v.transposed = o.transpose;
  return v;
}

std::vector<double> Sequencer::tensor_values(int tensor) const {
  if (tile_mode_) return tensors_[tensor].values;
  return dram_->read_tensor(tensor);
}

void Sequencer::execute_tiles() {
  Hbm& hbm = *units_.hbm;
  Sram& sram = *units_.sram;
  DmaEngine& dma = *units_.dma;
  const bool blocking = params_.issue == Issue::Blocking;
  const bool values = !timing_only_;
  std::array<uint64_t, isa::kOpcodeCount> counts{};
  uint64_t next_issue = 0;
  uint64_t end = 0;
  uint64_t stalls = 0;
  uint64_t mxu_free = 0;
  uint64_t vpu_free = 0;
  std::vector<uint64_t> tensor_written(tensors_.size(), 0);  // HBM read-after-write, per tensor

  std::vector<isa::Instruction> chunk_instructions;
  std::vector<isa::TileRef> chunk_tiles;
  size_t executed = 0;
  bool more = true;
  // A streamed chunk is decoded one instruction at a time into `scratch` (no decoded copy of the chunk);
  // an in-memory program was decoded, and so validated, at load.
  TileDecoded scratch;
  while (more) {
    const bool streamed = program_->stream != nullptr;
    if (streamed) {
      if (!program_->stream->next(chunk_instructions, chunk_tiles)) break;
    } else {
      more = false;
    }
    const size_t chunk_size = streamed ? chunk_instructions.size() : tile_code_.size();
    for (size_t c = 0; c < chunk_size; ++c) {
      const size_t i = executed++;
      if (streamed) decode_one(chunk_instructions[c], chunk_tiles, scratch);
      const TileDecoded& d = streamed ? scratch : tile_code_[c];
      ++counts[static_cast<size_t>(d.op)];
      // Scoreboard: sources must be written, the destination's earlier readers and writer done.
      const size_t dst_index = d.op == isa::Opcode::Store  ? 1
                               : d.op == isa::Opcode::Mask ? 0
                                                           : static_cast<size_t>(d.count - 1);
      uint64_t ready = next_issue;
      for (size_t k = 0; k < d.count; ++k) {
        const TileOperand& o = d.ops[k];
        if (o.storage < 0) continue;  // immediate
        if (o.is_buffer) {
          const StorageState& s = buffers_[o.storage];
          ready = std::max(ready, s.ready);
          if (k == dst_index) ready = std::max(ready, s.reads_done);
        } else if (k != dst_index) {
          ready = std::max(ready, tensor_written[o.storage]);
        }
      }
      uint64_t start = ready;
      uint64_t done = ready;
      const TileOperand& dst = d.ops[dst_index];
      switch (d.op) {
        case isa::Opcode::Load:
        case isa::Opcode::Store: {
          const bool is_store = d.op == isa::Opcode::Store;
          const TileOperand& mem = d.ops[is_store ? 1 : 0];
          const StorageState& tensor = tensors_[mem.storage];
          const uint64_t elem = static_cast<uint64_t>(dtype_bytes(tensor.dtype));
          DmaEngine::Transfer transfer;
          transfer.tensor = mem.storage;
          transfer.addr = tensor.base + static_cast<uint64_t>(mem.offset) * elem;
          transfer.rows = static_cast<uint64_t>(mem.rows);
          transfer.row_bytes = static_cast<uint64_t>(mem.cols) * elem;
          transfer.stride_bytes = static_cast<uint64_t>(mem.row_stride) * elem;
          transfer.is_write = is_store;
          DmaEngine::Timing t = dma.submit(ready, transfer, hbm, sram);
          start = t.start;
          done = t.done;
          if (is_store) tensor_written[mem.storage] = std::max(tensor_written[mem.storage], done);
          if (values) {
            TileView from = view(d.ops[0]);
            TileView to = view(d.ops[1]);
            const Dtype to_dtype =
                is_store ? tensors_[d.ops[1].storage].dtype : buffers_[d.ops[1].storage].dtype;
            for (int64_t r = 0; r < to.rows; ++r)
              for (int64_t c = 0; c < to.cols; ++c) to.at(r, c) = round_to(to_dtype, from.at(r, c));
          }
          break;
        }
        case isa::Opcode::MacZ:
        case isa::Opcode::Mac: {
          MxuUnit& mxu = *units_.mxu;
          start = std::max(ready, mxu_free);
          const TileOperand& a = d.ops[0];
          const TileOperand& b = d.ops[1];
          const int64_t m = a.out_rows(), k = a.out_cols(), n = b.out_cols();
          uint64_t cycles = mxu.matmul(m, k, n);
          // Operands stream from SRAM and the result returns to it; a narrow SRAM port can be the limit.
          cycles = std::max(cycles, operand_traffic(d));
          done = start + cycles;
          mxu_free = done;
          if (values) {
            TileView va = view(a), vb = view(b), vd = view(d.ops[d.count - 1]);
            std::optional<TileView> vc;
            if (d.op == isa::Opcode::Mac) vc = view(d.ops[2]);
            const Dtype out = buffers_[d.ops[d.count - 1].storage].dtype;
            // a or b in the destination's buffer, or an accumulator that is another view of it.
            const TileOperand& acc = d.ops[2];
            const bool aliases = d.ops[0].storage == dst.storage || d.ops[1].storage == dst.storage ||
                                 (d.op == isa::Opcode::Mac && acc.storage == dst.storage &&
                                  (acc.offset != dst.offset || acc.transpose != dst.transpose));
            if (!aliases) {
              MxuUnit::compute(va, vb, vc ? &*vc : nullptr, vd, out);
            } else {
              std::vector<double> scratch(static_cast<size_t>(vd.rows * vd.cols));
              TileView tmp{scratch.data(), vd.rows, vd.cols, vd.cols, false};
              MxuUnit::compute(va, vb, vc ? &*vc : nullptr, tmp, out);
              for (int64_t r = 0; r < vd.rows; ++r)
                for (int64_t c = 0; c < vd.cols; ++c) vd.at(r, c) = tmp.at(r, c);
            }
          }
          break;
        }
        default: {
          VpuUnit& vpu = *units_.vpu;
          start = std::max(ready, vpu_free);
          const VpuOp op = vpu_op_of(d.op);
          const TileOperand& src = d.ops[0];
          const int64_t rows =
              d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum ? src.out_rows() : dst.out_rows();
          const int64_t cols =
              d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum ? src.out_cols() : dst.out_cols();
          uint64_t cycles = vpu.op_cycles(op, rows, cols);
          cycles = std::max(cycles, operand_traffic(d));
          done = start + cycles;
          vpu_free = done;
          if (values) {
            const Dtype out = buffers_[dst.storage].dtype;
            // Element-wise ops may run in place on the very same view; a source that is a different view
            // of the destination's buffer (S[:, 0:1] into S) could be overwritten before it is read, so
            // such results go through a scratch tile.
            bool overlaps = false;
            for (size_t k = 0; k + 1 < d.count; ++k) {
              const TileOperand& o = d.ops[k];
              overlaps = overlaps || (o.is_buffer && o.storage == dst.storage &&
                                      (o.offset != dst.offset || o.rows != dst.rows || o.cols != dst.cols ||
                                       o.transpose != dst.transpose));
            }
            TileView target = view(dst);
            std::vector<double> scratch;
            if (overlaps && d.op != isa::Opcode::Mask) {
              scratch.resize(static_cast<size_t>(target.rows * target.cols));
              target = TileView{scratch.data(), target.rows, target.cols, target.cols, false};
            }
            if (d.op == isa::Opcode::Mask) {
              VpuUnit::mask_causal(target, d.imm[0], d.imm[1]);
            } else if (d.op == isa::Opcode::RowMax || d.op == isa::Opcode::RowSum) {
              VpuUnit::reduce(op, view(src), target, out);
            } else if (d.op == isa::Opcode::Exp || d.op == isa::Opcode::Mov) {
              VpuUnit::elementwise(op, view(src), nullptr, target, out);
            } else {
              TileView b = view(d.ops[1]);
              VpuUnit::elementwise(op, view(src), &b, target, out);
            }
            if (!scratch.empty()) {
              TileView real = view(dst);
              for (int64_t r = 0; r < real.rows; ++r)
                for (int64_t c = 0; c < real.cols; ++c) real.at(r, c) = target.at(r, c);
            }
          }
          break;
        }
      }
      // Bookkeeping for the scoreboard: readers hold their sources until done; the writer marks readiness.
      for (size_t k = 0; k < d.count; ++k) {
        const TileOperand& o = d.ops[k];
        if (o.storage < 0 || !o.is_buffer) continue;
        StorageState& s = buffers_[o.storage];
        if (k == dst_index)
          s.ready = std::max(s.ready, done);
        else
          s.reads_done = std::max(s.reads_done, done);
      }
      stalls += start - next_issue;
      // In order: the next instruction leaves the sequencer the cycle after this one was accepted by its
      // unit; blocking issue waits for completion instead.
      next_issue = blocking ? done : start + 1;
      end = std::max(end, done);
      if (observer_) [[unlikely]]
        observer_->after_step(i, start, done);
      keep_quantum(start);
    }
  }
  per_opcode_ = counts;
  stall_cycles_ = stalls;
  sync(end);
  cycles_ = static_cast<uint64_t>((sc_core::sc_time_stamp() - run_start_) / period_ + 0.5);
  instructions_ = 0;
  for (uint64_t c : counts) instructions_ += c;
  if (units_.mxu) units_.mxu->set_elapsed(cycles_);
  if (units_.vpu) units_.vpu->set_elapsed(cycles_);
  if (units_.tile_regs) units_.tile_regs->set_elapsed(cycles_);
  sram.set_elapsed(cycles_);
  dma.set_elapsed(cycles_);
}

}  // namespace attnsim
