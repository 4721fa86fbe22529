// A shared resource's bandwidth (an L2 partition, a network port, DRAM) as a calendar of fixed windows:
// each window carries at most bytes_per_cycle x window_cycles bytes, and a request books the capacity left
// in the windows from its arrival on. Under temporal decoupling cores run ahead of each other by up to a
// quantum, so requests reach a shared resource out of time order; a single busy-until time would then make
// an early request wait behind a later one (not causal). Here a request that arrives late for an earlier
// window still finds that window's spare capacity. Windows older than every core's local time are
// forgotten. Pure C++: deterministic for a given order of calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <stdexcept>

namespace attnsim {

class BandwidthCalendar {
 public:
  BandwidthCalendar(double bytes_per_cycle, uint64_t window_cycles)
      : bytes_per_cycle_(bytes_per_cycle),
        window_(window_cycles),
        capacity_(bytes_per_cycle * static_cast<double>(window_cycles)) {
    if (!(bytes_per_cycle > 0) || window_cycles == 0)
      throw std::invalid_argument("a bandwidth calendar needs a positive bandwidth and window");
  }

  // Books `bytes` arriving at cycle `at`; returns the cycle the last byte is through.
  uint64_t serve(uint64_t at, uint64_t bytes) {
    if (bytes == 0) return at;
    uint64_t w = at / window_;
    if (w < first_) w = first_, at = first_ * window_;  // older windows are settled: the earliest open one
    double remaining = static_cast<double>(bytes);
    double start_in_window = static_cast<double>(at);
    bool first_window = true;
    if (w < full_until_) w = full_until_, first_window = false;  // a saturated backlog: skip it at once
    for (;; ++w, first_window = false) {
      double& used = slot(w);
      const double window_start = static_cast<double>(w * window_);
      // In the arrival window only the time left after `at` can carry this request's bytes.
      double room = capacity_ - used;
      if (first_window)
        room = std::min(room,
                        bytes_per_cycle_ * (window_start + static_cast<double>(window_) - start_in_window));
      if (room <= 0) continue;
      const double take = std::min(room, remaining);
      used += take;
      remaining -= take;
      total_bytes_ += take;
      if (w == full_until_)
        while (full_until_ - first_ < used_.size() && capacity_ - used_[full_until_ - first_] <= 0)
          ++full_until_;
      if (remaining <= 0) {
        const double begin = first_window ? start_in_window : window_start;
        const double done = std::max(window_start + used / bytes_per_cycle_, begin + take / bytes_per_cycle_);
        return static_cast<uint64_t>(std::ceil(done - 1e-9));
      }
    }
  }

  // No request will arrive before `cycle` any more: drop the windows that end before it.
  void forget_before(uint64_t cycle) {
    const uint64_t w = cycle / window_;
    while (first_ < w && !used_.empty()) used_.pop_front(), ++first_;
    if (used_.empty()) first_ = std::max(first_, w);
    full_until_ = std::max(full_until_, first_);
  }

  double bytes_per_cycle() const { return bytes_per_cycle_; }
  double total_bytes() const { return total_bytes_; }

 private:
  double& slot(uint64_t w) {
    if (w - first_ >= used_.size()) used_.resize(w - first_ + 1, 0.0);
    return used_[w - first_];
  }

  double bytes_per_cycle_;
  uint64_t window_;
  double capacity_;          // bytes per window
  uint64_t first_ = 0;       // window index of used_.front()
  uint64_t full_until_ = 0;  // every window in [first_, full_until_) is full
  std::deque<double> used_;
  double total_bytes_ = 0;
};

}  // namespace attnsim
