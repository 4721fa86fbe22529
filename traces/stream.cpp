#include "traces/stream.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace attnsim::traces {

namespace {

thread_local StreamSink* active_sink = nullptr;

// Thrown inside the generator thread when the consumer has gone away, to unwind the generator.
struct StreamCancelled {};

class ThreadedStream : public isa::ChunkSource, public StreamSink {
 public:
  ThreadedStream(std::function<isa::Program()> generate, size_t chunk_instructions, bool repeat_blocks)
      : chunk_instructions_(chunk_instructions), repeat_blocks_(repeat_blocks) {
    worker_ = std::thread([this, generate = std::move(generate)] {
      active_sink = this;
      try {
        isa::Program rest = generate();  // Builder::take() has flushed everything into chunk()
        if (!rest.instructions.empty())
          throw std::logic_error(
              "a streamed generator must end with Builder::take(), not return its program");
      } catch (const StreamCancelled&) {
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      finished_ = true;
      header_ready_ = true;
      changed_.notify_all();
    });
  }

  ~ThreadedStream() override {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
      changed_.notify_all();
    }
    worker_.join();
  }

  isa::Program wait_for_header() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return header_ready_; });
    if (error_) std::rethrow_exception(error_);
    return std::move(header_);
  }

  // Consumer side.
  bool next(isa::Chunk& chunk) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || finished_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    chunk = std::move(queue_.front());
    queued_instructions_ -= chunk.instructions.size();
    queue_.pop_front();
    changed_.notify_all();
    return true;
  }

  // Producer side.
  void header(const isa::Program& header) override {
    std::lock_guard lock(mutex_);
    header_.file = header.file;
    header_.tensors = header.tensors;
    header_.buffers = header.buffers;
    header_.checks = header.checks;
    header_.kernels = header.kernels;
    header_ready_ = true;
    changed_.notify_all();
  }
  void chunk(isa::Chunk&& chunk) override {
    std::unique_lock lock(mutex_);
    // At most two full chunks' worth of instructions wait, so memory stays bounded while the simulator
    // catches up; short chunks (one thread block each, or a repeated block's offsets) may queue in larger
    // numbers, up to kMaxQueued.
    changed_.wait(lock, [&] {
      return queue_.size() < 2 ||
             (queued_instructions_ < 2 * chunk_instructions_ && queue_.size() < kMaxQueued) || cancelled_;
    });
    if (cancelled_) throw StreamCancelled{};
    queued_instructions_ += chunk.instructions.size();
    queue_.push_back(std::move(chunk));
    changed_.notify_all();
  }
  size_t chunk_instructions() const override { return chunk_instructions_; }
  bool repeat_blocks() const override { return repeat_blocks_; }

  // Reusing finished chunks' vectors spares the allocator fresh pages for every chunk (page faults were
  // 8% of a whole-chip run with one chunk per thread block).
  void recycle(isa::Chunk&& used) override {
    std::lock_guard lock(mutex_);
    if (spare_.size() >= kMaxSpare) return;
    used.instructions.clear();
    used.tiles.clear();
    used.blocks.clear();
    spare_.push_back(std::move(used));
  }
  isa::Chunk reusable() override {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return {};
    isa::Chunk chunk = std::move(spare_.back());
    spare_.pop_back();
    return chunk;
  }

 private:
  size_t chunk_instructions_;
  bool repeat_blocks_;
  size_t queued_instructions_ = 0;
  static constexpr size_t kMaxQueued = 4096;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<isa::Chunk> queue_;
  static constexpr size_t kMaxSpare = 64;
  std::vector<isa::Chunk> spare_;
  isa::Program header_;
  bool header_ready_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace

StreamSink* current_stream_sink() {
  return active_sink;
}

isa::Program stream_program(std::function<isa::Program()> generate, size_t chunk_instructions,
                            bool repeat_blocks) {
  auto stream = std::make_shared<ThreadedStream>(std::move(generate), chunk_instructions, repeat_blocks);
  isa::Program header = stream->wait_for_header();
  header.stream = stream;
  return header;
}

}  // namespace attnsim::traces
