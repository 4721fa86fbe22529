// A Program is what a trace assembles to: tensor declarations, instructions and value checks.
// It carries source locations so later stages (decode against a machine) can still point at the text.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/code_overhead.h"
#include "isa/diagnostics.h"
#include "isa/dtype.h"
#include "isa/opcode.h"

namespace attnsim::isa {

// How a tensor's initial contents are produced.
struct TensorInit {
  enum class Kind : uint8_t { Zeros, Values, Random, Fill } kind = Kind::Zeros;
  std::vector<double> values;  // Kind::Values, row-major
  uint64_t seed = 0;           // Kind::Random: uniform in [lo, hi)
  double lo = -1.0;            // also Kind::Fill's value (e.g. -inf for a running max)
  double hi = 1.0;
};

struct TensorDecl {
  std::string name;
  std::vector<int64_t> shape;
  std::optional<Dtype> dtype;  // unset: the machine's default dtype
  TensorInit init;
  // `coherent`: every load of it is taken under a lock (ld.acquire, a semaphore), so it sees the stores made
  // at its lines' home before the lock was taken, not a stale copy another L2 partition keeps.
  bool coherent = false;
  // `heads_inner` H (0: off): a [heads][n][cols] tensor whose memory holds [heads / H][n][H][cols], each
  // row of H heads together (PyTorch's (batch, n, heads, d) outputs, batches folded into the heads).
  // Indices, slices and checks stay [heads][n][cols]; initial values and memory contents are in memory order.
  int64_t heads_inner = 0;
  SourceLoc loc;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // Where logical element (h, r, c) of a rank-3 tensor lies in memory.
  int64_t memory_index(int64_t h, int64_t r, int64_t c) const {
    if (!heads_inner) return (h * shape[1] + r) * shape[2] + c;
    return ((h / heads_inner * shape[1] + r) * heads_inner + h % heads_inner) * shape[2] + c;
  }
};

// A heads_inner tensor's contents reordered between memory order and [heads][n][cols]; others unchanged.
inline std::vector<double> reordered(const TensorDecl& t, const std::vector<double>& from, bool to_memory) {
  if (!t.heads_inner) return from;
  std::vector<double> out(from.size());
  for (int64_t h = 0; h < t.shape[0]; ++h)
    for (int64_t r = 0; r < t.shape[1]; ++r)
      for (int64_t c = 0; c < t.shape[2]; ++c) {
        const auto logical = static_cast<size_t>((h * t.shape[1] + r) * t.shape[2] + c);
        const auto memory = static_cast<size_t>(t.memory_index(h, r, c));
        if (to_memory)
          out[memory] = from[logical];
        else
          out[logical] = from[memory];
      }
  return out;
}
inline std::vector<double> logical_order(const TensorDecl& t, const std::vector<double>& memory) {
  return reordered(t, memory, false);
}
inline std::vector<double> memory_order(const TensorDecl& t, const std::vector<double>& logical) {
  return reordered(t, logical, true);
}

// An on-chip buffer of the tile machine: `.buffer Qi[64][64] f16` (SRAM) or `... regs` (tile register file).
struct BufferDecl {
  enum class Space : uint8_t { Sram, Regs };
  std::string name;
  int64_t rows = 1;
  int64_t cols = 1;
  std::optional<Dtype> dtype;
  Space space = Space::Sram;
  SourceLoc loc;
};

// A 2-D tile operand: a slice of an HBM tensor (Q[0:64, :]) or of a buffer (S, S[0:8, :]), maybe
// transposed (K[0:64, :]^T). Element (i, j) of the slice, before transposing, is stored at
// offset + (row0 + i) * row_stride + col0 + j of its tensor or buffer.
struct TileRef {
  bool is_buffer = false;
  int32_t index = -1;  // into Program::tensors or Program::buffers
  int64_t offset = 0;  // leading fixed indices of a tensor of rank > 2 (e.g. batch, head)
  int64_t row0 = 0, rows = 1;
  int64_t col0 = 0, cols = 1;
  int64_t row_stride = 1;
  bool transpose = false;

  int64_t out_rows() const { return transpose ? cols : rows; }
  int64_t out_cols() const { return transpose ? rows : cols; }
  bool operator==(const TileRef&) const = default;
};

// Kept small and inline (no heap per operand): generated traces reach tens of millions of instructions, and
// a whole-chip run reads each one from host memory once (24 bytes an operand, 112 an instruction).
struct Operand {
  int64_t flat = 0;     // Memory: row-major element offset inside the tensor; Immediate: the value
  int32_t reg = -1;     // Register
  int32_t tensor = -1;  // Memory: index into Program::tensors; Tile: index into Program::tiles
  int32_t line = 0;     // where it is written (SourceLoc), the column below
  uint16_t col = 0;     // columns past 65,535 are reported as 65,535
  enum class Kind : uint8_t { Register, Memory, Tile, Immediate } kind = Kind::Register;

  SourceLoc loc() const { return {line, col}; }
  void set_loc(SourceLoc at) {
    line = at.line;
    col = static_cast<uint16_t>(std::clamp(at.col, 0, 65535));
  }

  static Operand r(int32_t reg) {
    Operand o;
    o.reg = reg;
    return o;
  }
  static Operand m(int32_t tensor, int64_t flat) {
    Operand o;
    o.kind = Kind::Memory;
    o.tensor = tensor;
    o.flat = flat;
    return o;
  }
  static Operand tile(int32_t tile_index) {
    Operand o;
    o.kind = Kind::Tile;
    o.tensor = tile_index;
    return o;
  }
  static Operand imm(int64_t value) {
    Operand o;
    o.kind = Kind::Immediate;
    o.flat = value;
    return o;
  }
};

// Instruction groups of one thread block (`.group N`): each an in-order stream of its own, as the warp
// groups of a GPU block (a producer and consumers that take turns at the tensor cores). They share the
// block's buffers, whose scoreboard orders them. Tile machines only.
inline constexpr uint8_t kInstructionGroups = 4;

struct Instruction {
  Opcode op{};
  uint8_t operand_count = 0;
  uint8_t group = 0;  // < kInstructionGroups
  SourceLoc loc;
  std::array<Operand, 4> operand_slots;

  std::span<const Operand> operands() const { return {operand_slots.data(), operand_count}; }
  const Operand& operand(size_t i) const { return operand_slots[i]; }
  void push(const Operand& o) { operand_slots[operand_count++] = o; }
};
static_assert(sizeof(Operand) == 24 && sizeof(Instruction) == 112);

// `.check out = softmax(x)`: compare a tensor's final contents with a float64 reference of the inputs'
// initial contents.
struct Check {
  std::string function;   // matmul, softmax, attend
  int target = -1;        // tensor index
  std::vector<int> args;  // tensor indices
  SourceLoc loc;
};

// A kernel: a grid of thread blocks that all run the kernel's block program, each for its own block index.
// Kernels of a program run one after another; a program that declares none is one kernel of one block.
struct KernelDecl {
  std::string name;
  std::array<int64_t, 3> grid{1, 1, 1};  // x, y, z; CUDA's launch order: x fastest, then y, then z
  // How the kernel's code steps through a product's k: rolled, each k-step of the loop recomputing its
  // addresses and testing its bound (`.kernel ... k_loops(rolled)`), or unrolled (the default). What a
  // rolled k-step costs is the machine's (issue.rolled_kstep_instructions).
  bool rolled_k_loops = false;
  // How the block's warps share a product's output (`.kernel ... warps(W, R)`): the block has W warps, a
  // product of m rows is cut into bands of R rows over min(W, ceil(m / R)) of them, and the other warps
  // split its columns, each warp loading its rows of A and its columns of B (CUTLASS's warp layouts, e.g.
  // FlashAttention-2's AtomLayoutMSdP). 0: each 16-row band of a product is a warp of its own that loads
  // all of B (the project's kernels). What it costs is the machine's (the issue unit's ldmatrix).
  int64_t warps = 0;
  int64_t warp_rows = 0;
  // The kernel's mma instruction shape, M x N x K (`.kernel ... mma(16, 8, 8)`): each product is this many
  // warp-level mma instructions. {0, 0, 0}: the machine's (issue.mma_m, mma_n, mma_k). PyTorch's
  // memory-efficient kernels are CUTLASS's sm80 builds with a 16 x 8 x 8 shape (HMMA.1688 in their SASS),
  // twice the instructions of the 16 x 8 x 16 that FlashAttention-2 and the project's kernels use.
  std::array<int64_t, 3> mma{0, 0, 0};
  // The kernel's softmax is CUTLASS's iterative one (`.kernel ... softmax(iterative)`, PyTorch's
  // memory-efficient forward): every score is scaled twice and tested against the sequence's end in both
  // its passes, the tests kept as predicates. What it costs per score is the machine's
  // (issue.iterative_softmax_per_element), charged with the row maximum of each score tile.
  bool iterative_softmax = false;
  // The kernel's exponential is the accurate expf (`.kernel ... exp(accurate)`, PyTorch's memory-efficient
  // backward: expf(s - lse) after a separate multiply by the scale), not ex2.approx with the scale folded in
  // as the project's kernels have it. What it costs per element is the machine's
  // (issue.accurate_exp_per_element).
  bool accurate_exp = false;
  // What the kernel's code spends beside its tile instructions (`.kernel ... overhead(...)`; CodeOverhead).
  CodeOverhead overhead{};
  int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
};

// Where a thread block's instructions begin: blocks follow one another in the instruction stream, each
// running until the next one begins. A chip hands each block to a core; a single core runs them in order.
struct BlockStart {
  size_t instruction = 0;  // index in the program (or in its chunk, for streamed programs)
  int32_t kernel = 0;      // index into Program::kernels
  std::array<int64_t, 3> index{};
  // Streamed to a whole chip only (traces::stream_program's repeat_blocks): a template block's instructions
  // may run again for later blocks of its kernel. A repeat has no instructions of its own: it runs those of
  // the last template block, every tensor operand moved by `tensor_shift[tensor]` elements (empty: none).
  bool is_template = false;
  bool repeats_template = false;
  std::vector<int64_t> tensor_shift;
};

// A piece of a streamed program: instructions with their own tile table (Tile operands index `tiles`), and
// the blocks that begin inside it (instruction indices relative to this chunk).
struct Chunk {
  std::vector<Instruction> instructions;
  std::vector<TileRef> tiles;
  std::vector<BlockStart> blocks;
};

// Instructions that arrive in chunks while the program runs, so a program of 10^7 tile instructions need
// not sit in memory at once.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  // Replaces the chunk's contents with the next chunk; false when the program has ended.
  virtual bool next(Chunk& chunk) = 0;
  // A chunk the simulator is done with; its vectors may be reused for a later chunk.
  virtual void recycle(Chunk&& /*used*/) {}
};

// Generators stop at this many instructions in one program (`gen --max-instructions`), so a request for a
// huge trace is refused while its memory is still small. Per thread: streamed generation on a worker
// thread, whose memory is bounded anyway, is not limited.
inline thread_local size_t generator_instruction_limit = SIZE_MAX;
// Throws std::length_error naming generator_instruction_limit.
[[noreturn]] inline void throw_generator_limit() {
  throw std::length_error("the program would have more than " + std::to_string(generator_instruction_limit) +
                          " instructions");
}

struct Program {
  std::string file;  // for diagnostics
  std::vector<TensorDecl> tensors;
  std::vector<BufferDecl> buffers;
  std::vector<TileRef> tiles;  // referenced by Tile operands
  std::vector<Instruction> instructions;
  // When set, `instructions` and `tiles` are empty and the instructions come from here (traces/stream.h).
  std::shared_ptr<ChunkSource> stream;
  std::vector<Check> checks;
  // Kernels and the blocks of each, in launch order. Empty: one kernel ("main") of one block.
  std::vector<KernelDecl> kernels;
  std::vector<BlockStart> blocks;  // empty for streamed programs (their chunks carry them)

  int find_buffer(std::string_view name) const {
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // A streamed program's tiles arrive with its chunks; a tile program always declares buffers (every tile
  // instruction names one), a scalar trace never does.
  bool has_tiles() const { return !tiles.empty() || (stream != nullptr && !buffers.empty()); }
  int add_tile(const TileRef& t) {
    tiles.push_back(t);
    return static_cast<int>(tiles.size()) - 1;
  }
  // Tile views of whole things / row ranges, for generators.
  TileRef buffer_tile(int buffer, bool transpose = false) const {
    TileRef t;
    t.is_buffer = true;
    t.index = buffer;
    t.rows = buffers[buffer].rows;
    t.cols = buffers[buffer].cols;
    t.row_stride = buffers[buffer].cols;
    t.transpose = transpose;
    return t;
  }
  // Rows of a tensor; for a tensor of rank 3 ([heads][n][d]) `head` picks the leading index.
  TileRef tensor_rows(int tensor, int64_t row0, int64_t rows, bool transpose = false,
                      int64_t head = 0) const {
    TileRef t;
    t.index = tensor;
    const auto& shape = tensors[tensor].shape;
    if (shape.size() == 3) t.offset = tensors[tensor].memory_index(head, 0, 0);
    t.row0 = row0;
    t.rows = rows;
    t.cols = shape.size() >= 2 ? shape.back() : 1;
    t.row_stride = t.cols * std::max<int64_t>(1, tensors[tensor].heads_inner);
    t.transpose = transpose;
    return t;
  }
  int find_tensor(std::string_view name) const {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // Per-dimension indices of a memory operand (for printing).
  std::vector<int64_t> indices(const Operand& op) const {
    const auto& shape = tensors[op.tensor].shape;
    std::vector<int64_t> out(shape.size());
    int64_t rest = op.flat;
    for (size_t d = shape.size(); d-- > 0;) {
      out[d] = rest % shape[d];
      rest /= shape[d];
    }
    if (const int64_t group = tensors[op.tensor].heads_inner) {  // [heads / H][n][H][cols] in memory
      const int64_t row = op.flat / shape[2];                    // (batch x n + r) x H + h
      const int64_t b = row / group / shape[1];
      out = {b * group + row % group, row / group % shape[1], op.flat % shape[2]};
    }
    return out;
  }
  int add_tensor(TensorDecl decl) {
    tensors.push_back(std::move(decl));
    return static_cast<int>(tensors.size()) - 1;
  }
  void emit(Opcode op, std::initializer_list<Operand> operands) {
    if (instructions.size() >= generator_instruction_limit) throw_generator_limit();
    Instruction inst;
    inst.op = op;
    for (const auto& o : operands) inst.push(o);
    instructions.push_back(inst);
  }
};

}  // namespace attnsim::isa
