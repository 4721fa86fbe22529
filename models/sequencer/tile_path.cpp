// The tile path of the sequencer: a tile program run by one TileCore (models/core/tile_core.h), in order,
// one issue per cycle, held by a scoreboard until operands are ready and the unit is free. A program of
// several thread blocks runs them one after another here; a chip (chip/) spreads them over its cores.
#include <algorithm>

#include "isa/init.h"
#include "models/sequencer/sequencer.h"

namespace attnsim {

void Sequencer::load_tiles(const isa::Program& program, bool timing_only) {
  timing_only_ = timing_only;
  auto require = [&](const void* unit, const char* name) {
    if (!unit)
      throw InputError(program.file, {},
                       std::string("this tile program needs a ") + name + " but the machine config has none");
  };
  require(units_.hbm, "hbm");
  require(units_.sram, "sram");
  require(units_.dma, "dma");

  // HBM layout and values of the tensors.
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  tensors_.assign(program.tensors.size(), {});
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    const auto& decl = program.tensors[t];
    tensors_[t].dtype = decl.dtype.value_or(dtype_);
    tensors_[t].coherent = decl.coherent;
    names.push_back(decl.name);
    sizes.push_back(static_cast<uint64_t>(decl.elements()) * dtype_bytes(tensors_[t].dtype));
  }
  // HBM's capacity is checked before any value is allocated (a tensor too large for it used to cost
  // gigabytes of host memory before the error).
  std::vector<uint64_t> bases = units_.hbm->allocate(names, sizes, program.file);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    tensors_[t].base = bases[t];
    if (!timing_only) tensors_[t].values = isa::materialize(program.tensors[t], tensors_[t].dtype);
  }

  // Buffers: SRAM by default, the tile register file for `regs` ones.
  std::vector<BufferRequest> sram_requests, reg_requests;
  for (const auto& decl : program.buffers) {
    const uint64_t bytes =
        static_cast<uint64_t>(decl.rows * decl.cols) * dtype_bytes(decl.dtype.value_or(dtype_));
    (decl.space == isa::BufferDecl::Space::Regs ? reg_requests : sram_requests)
        .push_back({decl.name, bytes, decl.loc});
  }
  std::vector<uint64_t> offsets = units_.sram->allocate(sram_requests, program.file);
  std::vector<uint64_t> reg_bases;
  if (!reg_requests.empty()) {
    if (!units_.tile_regs)
      throw InputError(
          program.file, reg_requests.front().loc,
          "buffer '" + reg_requests.front().name + "' is in `regs` but the machine has no tile_regs");
    reg_bases = units_.tile_regs->allocate(reg_requests, program.file);
  }
  TileUnits units{units_.sram,      units_.dma, units_.mxu,  units_.vpu,
                  units_.tile_regs, units_.hbm, units_.issue};
  tile_core_ = std::make_unique<TileCore>(units, tensors_, 0);
  tile_context_ = tile_core_->context(program, dtype_, !timing_only, 0, &offsets, &reg_bases);
  // One core runs the kernels as one stream: their k-loops count as rolled if any kernel's are.
  tile_context_.rolled_k_loops = std::any_of(program.kernels.begin(), program.kernels.end(),
                                             [](const isa::KernelDecl& k) { return k.rolled_k_loops; });
  // and their products share out their warps as the first kernel that says how does; the same for the
  // mma shape and the softmax's and exponential's code.
  for (const isa::KernelDecl& k : program.kernels)
    if (k.warps > 0) {
      tile_context_.warps = k.warps;
      tile_context_.warp_rows = k.warp_rows;
      break;
    }
  for (const isa::KernelDecl& k : program.kernels)
    if (k.mma[0] > 0) {
      tile_context_.mma = k.mma;
      break;
    }
  tile_context_.iterative_softmax = std::any_of(program.kernels.begin(), program.kernels.end(),
                                                [](const isa::KernelDecl& k) { return k.iterative_softmax; });
  tile_context_.accurate_exp = std::any_of(program.kernels.begin(), program.kernels.end(),
                                           [](const isa::KernelDecl& k) { return k.accurate_exp; });

  // An in-memory program is decoded (and so validated) before it runs; a streamed one chunk by chunk.
  if (!program.stream) decode_chunk(program.instructions, program.tiles);
  tile_core_->reset_units();
}

void Sequencer::decode_chunk(const std::vector<isa::Instruction>& instructions,
                             const std::vector<isa::TileRef>& tiles) {
  tile_code_.resize(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i)
    tile_core_->decode(*program_, instructions[i], tiles, tile_code_[i]);
}

std::vector<double> Sequencer::tensor_values(int tensor) const {
  if (tile_mode_) return tensors_[tensor].values;
  return dram_->read_tensor(tensor);
}

void Sequencer::execute_tiles() {
  TileCore& core = *tile_core_;
  BlockContext& ctx = tile_context_;
  const bool blocking = params_.issue == Issue::Blocking;
  const bool values = !timing_only_;
  isa::Chunk chunk;
  size_t executed = 0;
  bool more = true;
  // A streamed chunk is decoded one instruction at a time into `scratch` (no decoded copy of the chunk);
  // an in-memory program was decoded, and so validated, at load.
  TileDecoded scratch;
  while (more) {
    const bool streamed = program_->stream != nullptr;
    if (streamed) {
      if (!program_->stream->next(chunk)) break;
    } else {
      more = false;
    }
    const size_t chunk_size = streamed ? chunk.instructions.size() : tile_code_.size();
    for (size_t c = 0; c < chunk_size; ++c) {
      const size_t i = executed++;
      if (streamed) core.decode(*program_, chunk.instructions[c], chunk.tiles, scratch);
      const TileDecoded& d = streamed ? scratch : tile_code_[c];
      const TileCore::Step step = core.execute(d, ctx, blocking, values);
      if (observer_) [[unlikely]]
        observer_->after_step(i, step.start, step.unit_free);  // the unit's occupancy
      keep_quantum(step.start, i + 1);
    }
  }
  if (ctx.locks_held > 0)
    throw InputError(program_->file, {},
                     std::to_string(ctx.locks_held) +
                         " LOCK(s) never released: UNLOCK each lock the program "
                         "takes");
  per_opcode_ = core.per_opcode();
  stall_cycles_ = ctx.stalls;
  sync(ctx.end);
  cycles_ = cycles_since_start();
  instructions_ = core.instructions();
  if (units_.mxu) units_.mxu->set_elapsed(cycles_);
  if (units_.vpu) units_.vpu->set_elapsed(cycles_);
  if (units_.tile_regs) units_.tile_regs->set_elapsed(cycles_);
  if (units_.issue) units_.issue->set_elapsed(cycles_);
  units_.sram->set_elapsed(cycles_);
  units_.dma->set_elapsed(cycles_);
}

}  // namespace attnsim
