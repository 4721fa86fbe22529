#include "traces/hot_part.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "traces/builder.h"

namespace attnsim::traces {

namespace {

constexpr int64_t kRereadStep = 5;  // as validation/memeff_room_probe.py samples every 5th line

// The kernels' largest SRAM buffer: the hot reads load into it, so that they add nothing to the block's
// footprint (a chunk is one buffer's worth of the hot tensor).
const isa::BufferDecl& chunk_buffer(const isa::Program& kernels) {
  const isa::BufferDecl* best = nullptr;
  for (const isa::BufferDecl& b : kernels.buffers)
    if (b.space == isa::BufferDecl::Space::Sram && (!best || b.rows * b.cols > best->rows * best->cols))
      best = &b;
  if (!best) throw std::invalid_argument("hot part: the kernels declare no SRAM buffer to read into");
  return *best;
}

// The chunks a read takes: [first, end) every `step`-th.
struct ChunkRange {
  int64_t first = 0, end = 0, step = 1;
};

ChunkRange reread_range(HotReread reread, int64_t chunks) {
  if (reread == HotReread::FirstHalf) return {0, chunks / 2, kRereadStep};
  if (reread == HotReread::SecondHalf) return {chunks / 2, chunks, kRereadStep};
  return {0, chunks, 1};
}

// A grid of `readers.grid` blocks of which blocks first .. first + count - 1 read (the others are empty):
// reader r takes chunks r, r + count, ... of the range.
isa::Program hot_read(const isa::BufferDecl& into, Dtype dtype, int64_t chunks, HotReaders readers,
                      ChunkRange range) {
  Builder b("<hot-part>");
  const int hot = b.tensor(kHotPartTensor, chunks * into.rows, into.cols, dtype, false, 0);
  const int buffer = b.buffer(into.name, into.rows, into.cols, dtype);
  const int kernel = b.kernel("hot_read", {readers.grid, 1, 1});
  const int64_t count = (range.end - range.first + range.step - 1) / range.step;
  for (int64_t block = 0; block < readers.grid; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    if (block < readers.first || block >= readers.first + readers.count) continue;
    for (int64_t k = block - readers.first; k < count; k += readers.count) {
      const int64_t chunk = range.first + k * range.step;
      b.emit(Opcode::Load, {b.rows_of(hot, chunk * into.rows, into.rows), b.buf(buffer)});
    }
  }
  return b.take();
}

// Appends `part` to `to`: tensors and buffers of the same name become one (their shapes must agree), tiles,
// instructions, kernels and blocks follow those already there. Checks are dropped (a timing run).
void append(isa::Program& to, const isa::Program& part) {
  std::vector<int32_t> tensor_index, buffer_index;
  for (const isa::TensorDecl& t : part.tensors) {
    const int found = to.find_tensor(t.name);
    if (found >= 0 && to.tensors[static_cast<size_t>(found)].shape != t.shape)
      throw std::invalid_argument("hot part: two tensors named " + t.name + " of different shapes");
    if (found < 0) to.tensors.push_back(t);
    tensor_index.push_back(found >= 0 ? found : static_cast<int32_t>(to.tensors.size() - 1));
  }
  for (const isa::BufferDecl& buffer : part.buffers) {
    const int found = to.find_buffer(buffer.name);
    if (found >= 0 && (to.buffers[static_cast<size_t>(found)].rows != buffer.rows ||
                       to.buffers[static_cast<size_t>(found)].cols != buffer.cols))
      throw std::invalid_argument("hot part: two buffers named " + buffer.name + " of different shapes");
    if (found < 0) to.buffers.push_back(buffer);
    buffer_index.push_back(found >= 0 ? found : static_cast<int32_t>(to.buffers.size() - 1));
  }
  const auto tile_base = static_cast<int32_t>(to.tiles.size());
  for (isa::TileRef tile : part.tiles) {
    tile.index = (tile.is_buffer ? buffer_index : tensor_index)[static_cast<size_t>(tile.index)];
    to.tiles.push_back(tile);
  }
  const size_t instruction_base = to.instructions.size();
  for (isa::Instruction instruction : part.instructions) {
    for (size_t i = 0; i < instruction.operand_count; ++i) {
      isa::Operand& o = instruction.operand_slots[i];
      if (o.kind == isa::Operand::Kind::Tile) o.tensor += tile_base;
      if (o.kind == isa::Operand::Kind::Memory) o.tensor = tensor_index[static_cast<size_t>(o.tensor)];
    }
    to.instructions.push_back(instruction);
  }
  const auto kernel_base = static_cast<int32_t>(to.kernels.size());
  for (const isa::KernelDecl& k : part.kernels) to.kernels.push_back(k);
  for (isa::BlockStart block : part.blocks) {
    block.instruction += instruction_base;
    block.kernel += kernel_base;
    to.blocks.push_back(block);
  }
}

}  // namespace

isa::Program hot_part_bracket(const isa::Program& kernels, uint64_t hot_bytes, int64_t blocks, Dtype dtype,
                              HotReread reread, HotReaders first_read) {
  if (kernels.stream || kernels.kernels.empty())
    throw std::invalid_argument("hot part: the kernels must be a generated program of declared kernels");
  const isa::BufferDecl& into = chunk_buffer(kernels);
  const Dtype chunk_dtype = into.dtype.value_or(dtype);
  const auto chunk_bytes =
      static_cast<uint64_t>(into.rows * into.cols) * static_cast<uint64_t>(dtype_bytes(chunk_dtype));
  const auto chunks = static_cast<int64_t>(hot_bytes / chunk_bytes);
  if (blocks < 1 || chunks < blocks)
    throw std::invalid_argument("hot part: at least one chunk (the kernels' largest buffer) per block");
  const HotReaders every{blocks, 0, blocks};
  if (first_read.grid == 0) first_read = every;
  if (first_read.count < 1 || first_read.first < 0 || first_read.first + first_read.count > first_read.grid)
    throw std::invalid_argument("hot part: the first read's readers must be blocks of its grid");
  const isa::Program read =
      hot_read(into, chunk_dtype, chunks, first_read, reread_range(HotReread::All, chunks));
  isa::Program out;
  out.file = kernels.file;
  // The kernels' tensors and buffers first: their tensors keep their addresses, their buffers their
  // declarations (the hot reads load into one of them).
  out.tensors = kernels.tensors;
  out.buffers = kernels.buffers;
  append(out, read);
  append(out, kernels);
  append(out, hot_read(into, chunk_dtype, chunks, every, reread_range(reread, chunks)));
  return out;
}

uint64_t hot_reread_bytes(const isa::Program& bracketed, HotReread reread) {
  const isa::TensorDecl& hot = bracketed.tensors[static_cast<size_t>(bracketed.find_tensor(kHotPartTensor))];
  const isa::BufferDecl& into = chunk_buffer(bracketed);
  const int64_t chunks = hot.shape[0] / into.rows;
  const ChunkRange range = reread_range(reread, chunks);
  const int64_t count = (range.end - range.first + range.step - 1) / range.step;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(hot.elements() / chunks) *
         static_cast<uint64_t>(dtype_bytes(hot.dtype.value_or(Dtype::F16)));
}

}  // namespace attnsim::traces
