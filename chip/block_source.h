// Hands out the thread blocks of a program in launch order: each block is the instructions from its
// BlockStart to the next one, possibly spread over several stream chunks. A program without kernels is one
// kernel ("main") of one block, so a hand-written single-block trace runs on a chip as it is.
#pragma once

#include <memory>
#include <vector>

#include "isa/program.h"

namespace attnsim {

struct BlockSegment {
  std::shared_ptr<const isa::Chunk> chunk;  // instructions and the tile table they index
  size_t begin = 0, end = 0;
};

struct BlockWork {
  int32_t kernel = 0;
  std::array<int64_t, 3> index{};
  std::vector<BlockSegment> segments;
  // A repeated block (isa::BlockStart::repeats_template): its template's segments, each tensor operand
  // moved by tensor_shift[tensor] elements. Empty for any other block.
  std::vector<int64_t> tensor_shift;
};

class BlockSource {
 public:
  explicit BlockSource(const isa::Program& program);
  // The kernels of the program (one "main" kernel of one block when it declares none).
  const std::vector<isa::KernelDecl>& kernels() const { return kernels_; }
  // The next block in launch order; false when the program has ended. Throws InputError when blocks go
  // back to an earlier kernel or instructions come before the first block of a program with kernels.
  bool next(BlockWork& out);

 private:
  bool fetch();            // the next chunk into current_; false at the end
  bool at_repeat() const;  // current_ holds only a repeated block
  isa::BlockStart* start_block(BlockWork& out);
  bool collect_segments(BlockWork& out);

  const isa::Program& program_;
  std::vector<isa::KernelDecl> kernels_;
  std::shared_ptr<isa::Chunk> current_;
  size_t position_ = 0;
  size_t mark_ = 0;  // next unused BlockStart of current_
  bool started_ = false;
  bool in_memory_done_ = false;
  int32_t last_kernel_ = 0;
  std::vector<BlockSegment> template_;  // the last template block's segments
};

}  // namespace attnsim
