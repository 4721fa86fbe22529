// The L2's request coalescer (Hopper's LRC, between the crossbar and the L2 slices): a read that asks for
// lines another read is already waiting for rides on that request. It makes no lookup (no LRU stamp, no
// hit or miss counted, no slice bandwidth booked) and its data return when the leader's do, so a follower
// never overtakes its leader. Measured on an H100 (docs/chip.md, "The coalescer measured"): 132 SMs reading
// one buffer in step send the L2 68% of their sector requests while it fits, 26.5% once every pass misses.
//
// Kept per page of lines and per partition the readers are attached to, in a direct-mapped table of the
// pages in flight: one probe per page read. Under temporal decoupling a request may arrive after a later
// one (in simulated time) has led: the two merge when their flights overlap, the earlier taking its data
// as much sooner as it was issued before the leader (the request it would have led).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnsim {

class RequestCoalescer {
 public:
  // `entries`: pages tracked at once (a power of two; 0: no coalescing).
  explicit RequestCoalescer(uint64_t entries = 0);
  bool enabled() const { return !table_.empty(); }
  // When a read of `lines` (one bit per line of the page) issued at `now` can take its data from a request
  // in flight for all of them; 0 when none is.
  uint64_t ride(uint64_t page_key, uint16_t lines, uint64_t now) const;
  // The access being served looks the lines up itself: it leads them until settle() gives its end.
  void lead(uint64_t page_key, uint16_t lines, uint64_t now);
  // The access that led since the last settle() completes at `ready`; it takes followers until `open_until`
  // (its lookup's flight: the slice's latency and DRAM's, not the wait for the slice's bandwidth, taken to
  // be spent in the sending SM's queues; counting that wait too moved the probe rows by under 2%).
  void settle(uint64_t ready, uint64_t open_until);
  void clear();

 private:
  struct Entry {
    uint64_t key = 0;  // page_key + 1; 0: empty
    uint64_t issue = 0, ready = 0, open_until = 0;
    uint16_t lines = 0;
  };
  size_t slot(uint64_t page_key) const { return (page_key * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<Entry> table_;
  std::vector<uint32_t> leading_;  // slots led by the access being served
  int shift_ = 64;
};

}  // namespace attnsim
