// A small helper for writing tile-program generators: declare tensors and buffers, make operands for
// buffer views and tensor row slices (each distinct view shared), emit instructions.
#pragma once

#include <algorithm>
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

class Builder {
 public:
  explicit Builder(std::string file) : sink_(current_stream_sink()) { p.file = std::move(file); }

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
    declaring();
    p.kernels.push_back({name, grid, rolled_k_loops, warps, warp_rows});
    return static_cast<int>(p.kernels.size()) - 1;
  }
  // The instructions emitted from here on are thread block `index` of `kernel`, until the next block
  // begins. When streaming, a block starts a fresh chunk, so a core can be handed whole chunks.
  void begin_block(int kernel, std::array<int64_t, 3> index) {
    if (sink_ && !p.instructions.empty()) flush();
    p.blocks.push_back({p.instructions.size(), kernel, index});
    group_ = 0;
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
    p.instructions.push_back(inst);
    if (sink_ && p.instructions.size() >= sink_->chunk_instructions()) flush();
  }
  // The finished program; when streaming, the rest goes to the stream and only the header is returned.
  isa::Program take() {
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

  StreamSink* sink_ = nullptr;
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
