// Spin locks in memory (LOCK, UNLOCK), shared by the cores of a chip: which thread block holds each lock and
// when it was last released. Under temporal decoupling a core may find a lock that a core run before it in
// the quantum took at a later simulated time; it then waits for that release, an error of at most a quantum,
// as for the shared bandwidth calendars (docs/chip.md, "Locks between thread blocks").
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

namespace attnsim {

class LockTable {
 public:
  static constexpr uint64_t kHeld = std::numeric_limits<uint64_t>::max();

  // When the lock at `addr` can be taken: its last release (0 if never taken), kHeld while a block holds it.
  uint64_t free_at(uint64_t addr) const {
    const auto it = locks_.find(addr);
    if (it == locks_.end()) return 0;
    return it->second.holder ? kHeld : it->second.released;
  }
  const void* holder(uint64_t addr) const {
    const auto it = locks_.find(addr);
    return it == locks_.end() ? nullptr : it->second.holder;
  }
  void take(uint64_t addr, const void* holder) { locks_[addr].holder = holder; }
  void release(uint64_t addr, uint64_t at) { locks_[addr] = {nullptr, at}; }
  // The shared resources have forgotten what lies before `cycle`: a waiter takes a lock no earlier.
  void set_floor(uint64_t cycle) { floor_ = cycle; }
  uint64_t floor() const { return floor_; }
  void clear() {
    locks_.clear();
    floor_ = 0;
  }

 private:
  struct State {
    const void* holder = nullptr;
    uint64_t released = 0;
  };
  std::unordered_map<uint64_t, State> locks_;
  uint64_t floor_ = 0;
};

}  // namespace attnsim
