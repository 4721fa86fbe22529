// Runs a generator on a worker thread and hands its instructions to the simulator in chunks, so memory
// stays bounded by a chunk instead of growing with the program. The generator is unchanged: Builder
// (traces/builder.h) notices the active stream and flushes every `chunk_instructions` instructions.
#pragma once

#include <functional>

#include "isa/program.h"

namespace attnsim::traces {

// Returns the program's header (tensors, buffers, checks, file) with `stream` set. The generator must
// declare all tensors and buffers before its first instruction (Builder enforces it).
// repeat_blocks: the consumer is a whole chip's block source, which takes repeated blocks
// (isa::BlockStart::repeats_template): Builder then sends a block that repeats its kernel's template block
// with every tensor tile moved by a fixed offset as those offsets alone. A single core's sequencer reads
// the instructions in order and needs them all.
isa::Program stream_program(std::function<isa::Program()> generate, size_t chunk_instructions = 1 << 16,
                            bool repeat_blocks = false);

// Used by Builder: the stream of the current thread, or null when generating into memory.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual void header(const isa::Program& header) = 0;
  virtual void chunk(isa::Chunk&& chunk) = 0;
  // An empty chunk whose vectors keep the capacity of one the simulator has finished (none: fresh).
  virtual isa::Chunk reusable() = 0;
  virtual size_t chunk_instructions() const = 0;
  virtual bool repeat_blocks() const = 0;
};
StreamSink* current_stream_sink();

}  // namespace attnsim::traces
