// A small helper for writing tile-program generators: declare tensors and buffers, make operands for
// buffer views and tensor row slices (each distinct view shared), emit instructions.
#pragma once

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "isa/program.h"
#include "traces/stream.h"

namespace attnsim::traces {

using isa::Opcode;
using isa::Operand;

// The memory-efficient backward's AtomicLock: __nanosleep(40) between a lock's attempts, in cycles at the
// H200's SM clock under load (1.38 GHz measured with the profile,
// validation/data/h200_memeff_profile_env.txt).
inline constexpr int64_t kAtomicLockBackoffCycles = 55;

class Builder {
 public:
  explicit Builder(std::string file)
      : sink_(current_stream_sink()), repeats_(sink_ && sink_->repeat_blocks()) {
    p.file = std::move(file);
  }

  int tensor(const std::string& name, int64_t rows, int64_t cols, Dtype dtype, bool random, uint64_t seed) {
    declaring();
    isa::TensorDecl t;
    t.name = name;
    t.shape = {rows, cols};
    t.dtype = dtype;
    if (random) {
      t.init.kind = isa::TensorInit::Kind::Random;
      t.init.seed = seed;
      t.init.lo = -1.0;
      t.init.hi = 1.0;
    }
    return p.add_tensor(std::move(t));
  }
  int buffer(const std::string& name, int64_t rows, int64_t cols, Dtype dtype) {
    declaring();
    isa::BufferDecl b;
    b.name = name;
    b.rows = rows;
    b.cols = cols;
    b.dtype = dtype;
    p.buffers.push_back(std::move(b));
    return static_cast<int>(p.buffers.size()) - 1;
  }
  // Moves declared buffers into the tile register file (`.buffer ... regs`), where GPU kernels keep their
  // accumulators; the DMA cannot load or store them.
  void in_registers(std::initializer_list<int> buffers) {
    for (int b : buffers) p.buffers[static_cast<size_t>(b)].space = isa::BufferDecl::Space::Regs;
  }
  // A view of the top-left rows x cols of a buffer (ragged edge tiles use partial views).
  Operand buf(int buffer, int64_t rows = -1, int64_t cols = -1, bool transpose = false) {
    isa::TileRef t = p.buffer_tile(buffer, transpose);
    if (rows >= 0) t.rows = rows;
    if (cols >= 0) t.cols = cols;
    // Buffer views repeat in every block: share one TileRef per distinct view.
    auto key = std::make_tuple(buffer, t.rows, t.cols, transpose);
    auto [it, inserted] = views_.try_emplace(key, 0);
    if (inserted) it->second = p.add_tile(t);
    return tile_operand(it->second);
  }
  // Rows [row0, row0 + rows) of a buffer, its first `cols` columns (all with -1).
  Operand buf_rows(int buffer, int64_t row0, int64_t rows, int64_t cols = -1, bool transpose = false) {
    isa::TileRef t = p.buffer_tile(buffer, transpose);
    t.row0 = row0;
    t.rows = rows;
    if (cols >= 0) t.cols = cols;
    return shared(t);
  }
  // Any tile reference (e.g. a slice of head h of a [heads][n][d] tensor), shared like the others.
  Operand tile(const isa::TileRef& t) { return shared(t); }
  // A 1-D tensor of n values (row statistics such as m, l, D); its slices are rows x 1 tiles.
  int vector_tensor(const std::string& name, int64_t n, Dtype dtype) {
    declaring();
    isa::TensorDecl t;
    t.name = name;
    t.shape = {n};
    t.dtype = dtype;
    return p.add_tensor(std::move(t));
  }
  // Rows [row0, row0 + rows) of a tensor, all columns (a 1-D tensor gives rows x 1).
  Operand rows_of(int tensor, int64_t row0, int64_t rows, bool transpose = false) {
    isa::TileRef t = p.tensor_rows(tensor, row0, rows, transpose);
    return shared(t);
  }
  // Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a 2-D tensor (e.g. a tile of S in HBM).
  Operand slice(int tensor, int64_t row0, int64_t rows, int64_t col0, int64_t cols, bool transpose = false) {
    isa::TileRef t = p.tensor_rows(tensor, row0, rows, transpose);
    t.col0 = col0;
    t.cols = cols;
    return shared(t);
  }
  // Declares a kernel (a grid of thread blocks); returns its index for begin_block.
  int kernel(const std::string& name, std::array<int64_t, 3> grid, bool rolled_k_loops = false,
             int64_t warps = 0, int64_t warp_rows = 0) {
    return kernel({name, grid, rolled_k_loops, warps, warp_rows});
  }
  int kernel(isa::KernelDecl decl) {
    declaring();
    p.kernels.push_back(std::move(decl));
    return static_cast<int>(p.kernels.size()) - 1;
  }
  // The instructions emitted from here on are thread block `index` of `kernel`, until the next block
  // begins. When streaming, a block starts a fresh chunk, so a core can be handed whole chunks.
  // With a stream that takes repeats, the first block of each kernel is its template, and a later block
  // is compared with it as it is emitted: one that turns out to be the template with every tensor tile
  // moved by a fixed offset per tensor goes out as those offsets alone (isa::BlockStart).
  void begin_block(int kernel, std::array<int64_t, 3> index) {
    end_repeat_candidate();
    if (sink_ && !p.instructions.empty()) flush();
    group_ = 0;
    if (repeats_ && template_.kernel == kernel && !template_.instructions.empty() &&
        template_.misses < kMaxTemplateMisses) {
      begin_repeat_candidate(kernel, index);
      return;
    }
    p.blocks.push_back({p.instructions.size(), kernel, index, false, false, {}});
    recording_ = repeats_ && template_.kernel != kernel;
    if (recording_) {
      template_ = Template{};
      template_.kernel = kernel;
      p.blocks.back().is_template = true;
    }
  }
  // The instruction group (`.group`) of the instructions emitted from here to the next block or group.
  void group(uint8_t g) { group_ = g; }
  void check(const std::string& function, int target, std::vector<int> args) {
    declaring();
    isa::Check c;
    c.function = function;
    c.target = target;
    c.args = std::move(args);
    p.checks.push_back(std::move(c));
  }
  // When streaming, a chunk is handed off after the instruction that fills it. Each chunk has its own tile
  // table, so a tile operand records the chunk it was made in (in its otherwise unused `flat` field). An
  // operand made in the previous chunk and kept in a variable is moved into the current table; one made
  // two or more chunks ago is refused (its table is gone).
  void emit(Opcode op, std::initializer_list<Operand> operands) {
    if (p.instructions.size() >= isa::generator_instruction_limit) isa::throw_generator_limit();
    isa::Instruction inst;
    inst.op = op;
    inst.group = group_;
    for (Operand o : operands) {
      if (o.kind == Operand::Kind::Tile && o.flat != epoch_) {
        if (o.flat != epoch_ - 1 || o.tensor >= static_cast<int32_t>(previous_tiles_.size()))
          throw std::logic_error(
              "a tile operand was kept across more than one stream chunk; make it closer to its use");
        auto [it, inserted] = carried_.try_emplace(o.tensor, 0);
        if (inserted) it->second = p.add_tile(previous_tiles_[o.tensor]);
        o.tensor = it->second;
        o.flat = epoch_;
      }
      inst.push(o);
    }
    if (candidate_) {
      if (matches_template(inst)) return;
      diverge(inst);
    }
    if (recording_) record(inst);
    push(inst);
  }
  // The finished program; when streaming, the rest goes to the stream and only the header is returned.
  isa::Program take() {
    end_repeat_candidate();
    if (sink_) flush();
    return std::move(p);
  }
  // Tensors declared so far, e.g. to read another tensor's declaration while generating.
  const isa::Program& program() const { return p; }

  isa::Program p;

 private:
  // Streaming: the header goes out with the first chunk, so everything must be declared before it.
  void declaring() {
    if (flushed_)
      throw std::logic_error("generator declared a tensor, buffer or check after emitting instructions");
  }
  void flush() {
    if (!flushed_) sink_->header(p);
    flushed_ = true;
    previous_tiles_ = p.tiles;  // kept for operands made in this chunk and used in the next
    const size_t filled = p.instructions.size();
    sink_->chunk({std::move(p.instructions), std::move(p.tiles), std::move(p.blocks)});
    isa::Chunk next = sink_->reusable();
    p.instructions = std::move(next.instructions);
    p.tiles = std::move(next.tiles);
    p.blocks = std::move(next.blocks);
    // No regrowth copies while the next chunk fills, and no fresh pages beyond what a chunk has needed (a
    // chunk per thread block is often far below the limit).
    p.instructions.reserve(std::min(sink_->chunk_instructions(), std::max<size_t>(filled, 64)));
    views_.clear();
    slices_.clear();
    carried_.clear();
    ++epoch_;
  }

  void push(const isa::Instruction& inst) {
    p.instructions.push_back(inst);
    if (sink_ && p.instructions.size() >= sink_->chunk_instructions()) flush();
  }
  // Drops the tile table the way a flush does (operands made in it stay usable in the next instruction's
  // table), without sending anything: a repeated block's operands are compared, never sent.
  void discard_tiles() {
    previous_tiles_ = std::move(p.tiles);
    p.tiles.clear();
    views_.clear();
    slices_.clear();
    carried_.clear();
    ++epoch_;
  }

  // Repeated blocks. The template: its instructions with each operand's tile reference (by value: the
  // template may span chunks whose tables are gone).
  struct Template {
    int kernel = -1;
    std::vector<isa::Instruction> instructions;
    std::vector<isa::TileRef> refs;  // 4 per instruction, by operand slot
    int misses = 0;                  // later blocks that did not repeat it
  };
  static constexpr int kMaxTemplateMisses = 8;  // then the kernel's blocks are not compared any more
  static constexpr int64_t kUnshifted = INT64_MIN;

  void record(const isa::Instruction& inst) {
    template_.instructions.push_back(inst);
    for (size_t i = 0; i < 4; ++i)
      template_.refs.push_back(i < inst.operand_count && inst.operand(i).kind == Operand::Kind::Tile
                                   ? p.tiles[static_cast<size_t>(inst.operand(i).tensor)]
                                   : isa::TileRef{});
  }
  void begin_repeat_candidate(int kernel, std::array<int64_t, 3> index) {
    if (!p.tiles.empty()) discard_tiles();  // made since the last chunk, outside any block's instructions
    candidate_ = true;
    recording_ = false;
    matched_ = 0;
    candidate_start_ = {0, kernel, index, false, false, {}};
    shift_.assign(p.tensors.size(), kUnshifted);
  }
  static int64_t flat_offset(const isa::TileRef& t) { return t.offset + t.row0 * t.row_stride + t.col0; }
  // Whether `inst` is the template's next instruction, its tensor tiles moved by this block's offsets
  // (each tensor's set by its first tile).
  bool matches_template(const isa::Instruction& inst) {
    if (matched_ >= template_.instructions.size()) return false;
    const isa::Instruction& t = template_.instructions[matched_];
    if (t.op != inst.op || t.group != inst.group || t.operand_count != inst.operand_count) return false;
    for (size_t i = 0; i < inst.operand_count; ++i) {
      const Operand& a = inst.operand(i);
      const Operand& b = t.operand(i);
      if (a.kind != b.kind) return false;
      if (a.kind == Operand::Kind::Immediate && a.flat != b.flat) return false;
      if (a.kind != Operand::Kind::Tile) continue;
      const isa::TileRef& x = p.tiles[static_cast<size_t>(a.tensor)];
      const isa::TileRef& y = template_.refs[matched_ * 4 + i];
      if (x.is_buffer != y.is_buffer || x.index != y.index || x.rows != y.rows || x.cols != y.cols ||
          x.row_stride != y.row_stride || x.transpose != y.transpose)
        return false;
      const int64_t moved = flat_offset(x) - flat_offset(y);
      if (x.is_buffer) {
        if (moved != 0) return false;
        continue;
      }
      int64_t& shift = shift_[static_cast<size_t>(x.index)];
      if (shift == kUnshifted) shift = moved;
      if (shift != moved) return false;
    }
    ++matched_;
    return true;
  }
  // The block differs from the template: it begins as a block of its own with the instructions matched so
  // far (the template's, moved), and goes on unrepeated.
  void emit_template_prefix() {
    candidate_ = false;
    ++template_.misses;
    p.blocks.push_back(candidate_start_);
    for (size_t k = 0; k < matched_; ++k) {
      isa::Instruction inst = template_.instructions[k];
      for (size_t i = 0; i < inst.operand_count; ++i) {
        if (inst.operand(i).kind != Operand::Kind::Tile) continue;
        isa::TileRef ref = template_.refs[k * 4 + i];
        if (!ref.is_buffer) ref.offset += shift_[static_cast<size_t>(ref.index)];
        inst.operand_slots[i].tensor = shared(ref).tensor;
        inst.operand_slots[i].flat = epoch_;
      }
      push(inst);
    }
  }
  // `inst` is where the block leaves the template: after the prefix (which may have filled a chunk) its tile
  // operands are made again in the current table.
  void diverge(isa::Instruction& inst) {
    std::array<isa::TileRef, 4> refs{};
    const size_t count = std::min<size_t>(inst.operand_count, refs.size());
    for (size_t i = 0; i < count; ++i)
      if (inst.operand(i).kind == Operand::Kind::Tile)
        refs[i] = p.tiles[static_cast<size_t>(inst.operand(i).tensor)];
    emit_template_prefix();
    for (size_t i = 0; i < count; ++i)
      if (inst.operand(i).kind == Operand::Kind::Tile) inst.operand_slots[i] = shared(refs[i]);
  }
  // At the block's end: a whole repeat goes out as its offsets, in a chunk of its own.
  void end_repeat_candidate() {
    if (!candidate_) return;
    if (matched_ < template_.instructions.size()) return emit_template_prefix();
    candidate_ = false;
    isa::BlockStart start = candidate_start_;
    start.repeats_template = true;
    for (int64_t& shift : shift_) shift = shift == kUnshifted ? 0 : shift;
    start.tensor_shift = std::move(shift_);
    isa::Chunk repeat;
    repeat.blocks.push_back(std::move(start));
    sink_->chunk(std::move(repeat));
    discard_tiles();
  }

  StreamSink* sink_ = nullptr;
  bool repeats_ = false;  // the stream takes repeated blocks
  Template template_;
  bool recording_ = false;  // the block being emitted is its kernel's template
  bool candidate_ = false;  // the block being emitted may repeat the template
  size_t matched_ = 0;      // its instructions so far, all the template's
  isa::BlockStart candidate_start_;
  std::vector<int64_t> shift_;  // per tensor: how far its tiles moved (kUnshifted: none seen yet)
  uint8_t group_ = 0;
  bool flushed_ = false;
  int64_t epoch_ = 0;  // chunks handed off so far
  std::vector<isa::TileRef> previous_tiles_;
  std::map<int32_t, int32_t> carried_;  // previous-chunk tile index -> index in this chunk
  // Tensor slices repeat too (K block j is read by every query block): one TileRef per distinct slice.
  Operand shared(const isa::TileRef& t) {
    auto key = std::make_tuple(t.is_buffer, t.index, t.offset, t.row0, t.rows, t.col0, t.cols, t.transpose);
    auto [it, inserted] = slices_.try_emplace(key, 0);
    if (inserted) it->second = p.add_tile(t);
    return tile_operand(it->second);
  }
  Operand tile_operand(int index) const {
    Operand o = Operand::tile(index);
    o.flat = epoch_;
    return o;
  }

  // Hashing the fields of a view key; the maps are looked up for every operand, so not ordered maps.
  struct KeyHash {
    template <class Tuple>
    size_t operator()(const Tuple& key) const {
      size_t h = 0;
      std::apply(
          [&](const auto&... field) {
            ((h = h * 1000003u ^ std::hash<std::decay_t<decltype(field)>>{}(field)), ...);
          },
          key);
      return h;
    }
  };
  using ViewKey = std::tuple<int, int64_t, int64_t, bool>;
  using SliceKey = std::tuple<bool, int, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  std::unordered_map<ViewKey, int, KeyHash> views_;
  std::unordered_map<SliceKey, int, KeyHash> slices_;
};

}  // namespace attnsim::traces
