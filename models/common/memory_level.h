// One level of the memory hierarchy as the cores see it: an access (a strided 2-D range of one tensor) and
// the cycle it is issued go in, the cycle its last byte is through comes out. A level may have another
// behind it (L2 in front of DRAM); which levels a machine has is written in its YAML config.
#pragma once

#include <cstdint>

namespace attnsim {

struct MemAccess {
  int tensor = -1;    // charged to this tensor's ledger (-1: to none)
  uint64_t addr = 0;  // address of the first row
  uint64_t rows = 0;
  uint64_t row_bytes = 0;
  uint64_t stride_bytes = 0;
  bool is_write = false;
  int core = 0;  // the requesting core, for per-core counts and network ports
  // The read half of an atomic add (STORE_ADD): a level that adds in place (a GPU's L2 executing
  // red.global.add) serves it without the bytes crossing the network to the core.
  bool atomic_read = false;
  // A load taken under a lock (an acquire): a level that keeps copies of lines away from their home
  // (a GPU's L2 partitions) fetches a copy again when a store at the home has made it stale.
  bool acquire = false;
  uint64_t bytes() const { return rows * row_bytes; }
};

class MemoryLevel {
 public:
  virtual ~MemoryLevel() = default;
  // Serves the access issued at `issue_cycle`; returns the cycle it completes.
  virtual uint64_t access(const MemAccess& access, uint64_t issue_cycle) = 0;
  // When the last access's bytes had been taken in (its bandwidth booked), before any latency: how long
  // a sender's queue stays blocked by it. 0 for a level that takes everything at once.
  virtual uint64_t last_accepted_cycle() const { return 0; }
  // When the stores `core` has sent so far had left it (the level took their data in); 0 where a level
  // does not track it (a store is then done when it completes).
  virtual uint64_t stores_left_cycle(int /*core*/) const { return 0; }
  // `core` passed a GPU-scope fence (MEMBAR.SC.GPU): a level that keeps copies of lines away from their
  // home may have to check them at home again before they serve a read.
  virtual void fence(int /*core*/) {}
};

}  // namespace attnsim
