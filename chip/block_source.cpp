#include "chip/block_source.h"

#include <stdexcept>

#include "isa/diagnostics.h"

namespace attnsim {

BlockSource::BlockSource(const isa::Program& program) : program_(program), kernels_(program.kernels) {
  if (kernels_.empty()) kernels_.push_back({"main", {1, 1, 1}});
}

bool BlockSource::fetch() {
  if (program_.stream) {
    // The stream gets the chunk back when the last block reading it has finished.
    std::weak_ptr<isa::ChunkSource> stream = program_.stream;
    auto chunk = std::shared_ptr<isa::Chunk>(new isa::Chunk, [stream](isa::Chunk* used) {
      if (auto source = stream.lock()) source->recycle(std::move(*used));
      delete used;
    });
    if (!program_.stream->next(*chunk)) return false;
    current_ = std::move(chunk);
  } else {
    if (in_memory_done_) return false;
    in_memory_done_ = true;
    current_ =
        std::make_shared<isa::Chunk>(isa::Chunk{program_.instructions, program_.tiles, program_.blocks});
  }
  position_ = 0;
  mark_ = 0;
  return true;
}

bool BlockSource::at_repeat() const {
  return current_->instructions.empty() && mark_ < current_->blocks.size() &&
         current_->blocks[mark_].repeats_template;
}

// The block's kernel and index from the mark at position_, which it consumes (returned; null for a program
// without kernels, whose one block has none).
isa::BlockStart* BlockSource::start_block(BlockWork& out) {
  auto& marks = current_->blocks;
  isa::BlockStart* mark =
      mark_ < marks.size() && marks[mark_].instruction == position_ ? &marks[mark_++] : nullptr;
  if (mark) {
    out.kernel = mark->kernel;
    out.index = mark->index;
  } else if (!started_ && program_.kernels.empty()) {
    out.kernel = 0;
    out.index = {0, 0, 0};
  } else {
    throw InputError(program_.file, {}, "instructions outside any thread block (a block must begin first)");
  }
  if (out.kernel < last_kernel_ || out.kernel >= static_cast<int32_t>(kernels_.size()))
    throw InputError(program_.file, {},
                     "thread blocks must come kernel by kernel, in the order the kernels are declared");
  last_kernel_ = out.kernel;
  started_ = true;
  out.segments.clear();
  out.tensor_shift.clear();
  return mark;
}

bool BlockSource::next(BlockWork& out) {
  if (!current_ || (position_ >= current_->instructions.size() && !at_repeat())) {
    if (!fetch()) return false;
    while (current_->instructions.empty() && !at_repeat())  // a chunk of declarations only
      if (!fetch()) return false;
  }
  isa::BlockStart* mark = start_block(out);
  if (mark && mark->repeats_template) {
    if (template_.empty()) throw std::logic_error("a thread block repeats a template before any was sent");
    out.segments = template_;
    out.tensor_shift = std::move(mark->tensor_shift);  // the chunk holds nothing else for this block
    return true;
  }
  const bool is_template = mark && mark->is_template;  // read before collecting: fetch may free the chunk
  const bool more = collect_segments(out);
  if (is_template) template_ = out.segments;
  return more;
}

// The block's instructions from position_ to the next block's mark, across chunks.
bool BlockSource::collect_segments(BlockWork& out) {
  for (;;) {
    const size_t end =
        mark_ < current_->blocks.size() ? current_->blocks[mark_].instruction : current_->instructions.size();
    if (end > position_) out.segments.push_back({current_, position_, end});
    position_ = end;
    if (end < current_->instructions.size()) return true;  // the next block begins in this chunk
    if (!fetch()) return true;
    if (!current_->blocks.empty() && current_->blocks.front().instruction == 0) return true;
  }
}

}  // namespace attnsim
