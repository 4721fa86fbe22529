// Value arithmetic on all host cores. Simulated time never depends on it: only the float64 values of large
// tile products and of the reference are computed by several threads, each over its own rows, so every
// element is computed exactly as on one thread and results are bit-for-bit the same for any thread count.
// The simulation itself (SystemC, the units' timing) stays on the calling thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attnsim {

class ValueThreads {
 public:
  // Threads that share value work (the caller included): `--threads` where a command has it, else the
  // host's hardware concurrency. 1 keeps all work on the caller.
  static void set_count(int count) { instance().resize(std::max(1, count)); }
  static int count() { return instance().total_; }

  // fn(begin, end) over [0, rows) in contiguous ranges, one per thread; returns when all are done. Work
  // below `kMinWork` (in multiply-adds or comparable operations) runs on the caller alone.
  static void for_ranges(int64_t rows, int64_t work, const std::function<void(int64_t, int64_t)>& fn) {
    instance().run(rows, work, fn);
  }

  ~ValueThreads() { resize(1); }

 private:
  static constexpr int64_t kMinWork = int64_t{1} << 18;

  static ValueThreads& instance() {
    static ValueThreads pool;
    return pool;
  }

  ValueThreads() { resize(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))); }

  void resize(int total) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    total_ = total;
    // A new worker waits for the next job, not one that ended before it started.
    for (int w = 1; w < total; ++w)
      workers_.emplace_back([this, w, seen = generation_] { work_loop(w, seen); });
  }

  void run(int64_t rows, int64_t work, const std::function<void(int64_t, int64_t)>& fn) {
    const int64_t parts = std::min<int64_t>(total_, rows);
    if (parts <= 1 || work < kMinWork) {
      fn(0, rows);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      job_ = &fn;
      rows_ = rows;
      parts_ = parts;
      pending_ = parts - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    run_part(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

  void run_part(int64_t part) {
    const int64_t begin = rows_ * part / parts_, end = rows_ * (part + 1) / parts_;
    try {
      if (begin < end) (*job_)(begin, end);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
  }

  void work_loop(int worker, uint64_t seen) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (worker >= parts_) continue;
      }
      run_part(worker);
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  int total_ = 1;
  bool stop_ = false;
  uint64_t generation_ = 0;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t rows_ = 0, parts_ = 0, pending_ = 0;
  std::exception_ptr error_;
};

}  // namespace attnsim
