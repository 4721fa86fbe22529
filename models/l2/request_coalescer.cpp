#include "models/l2/request_coalescer.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace attnsim {

RequestCoalescer::RequestCoalescer(uint64_t entries) {
  if (entries == 0) return;
  if (!std::has_single_bit(entries) || entries > (uint64_t{1} << 30))
    throw std::invalid_argument("coalescer_entries must be 0 or a power of two up to 2^30");
  table_.resize(entries);
  shift_ = 64 - std::countr_zero(entries);
}

uint64_t RequestCoalescer::ride(uint64_t page_key, uint16_t lines, uint64_t now) const {
  if (table_.empty()) return 0;
  const Entry& e = table_[slot(page_key)];
  if (e.key != page_key + 1 || e.ready == 0 || (e.lines & lines) != lines) return 0;
  if (now >= e.issue) return now < e.open_until ? e.ready : 0;
  // Issued before the leader: it would have led, and the leader would have ridden on it.
  const uint64_t early = e.issue - now;
  return early < e.open_until - e.issue ? e.ready - early : 0;
}

void RequestCoalescer::lead(uint64_t page_key, uint16_t lines, uint64_t now) {
  if (table_.empty()) return;
  const size_t s = slot(page_key);
  Entry& e = table_[s];
  if (e.key == page_key + 1 && e.ready == 0) {  // this access leads other lines of the page too
    e.lines |= lines;
    return;
  }
  // A request later in simulated time keeps its place: it is the one still in flight.
  if (e.key == page_key + 1 && e.issue > now && e.ready > now) return;
  e = Entry{.key = page_key + 1, .issue = now, .ready = 0, .open_until = 0, .lines = lines};
  leading_.push_back(static_cast<uint32_t>(s));
}

void RequestCoalescer::settle(uint64_t ready, uint64_t open_until) {
  for (uint32_t s : leading_) {
    Entry& e = table_[s];
    if (e.ready != 0) continue;
    e.ready = std::max<uint64_t>(ready, e.issue + 1);
    e.open_until = std::clamp<uint64_t>(open_until, e.issue + 1, e.ready);
  }
  leading_.clear();
}

void RequestCoalescer::clear() {
  std::fill(table_.begin(), table_.end(), Entry{});
  leading_.clear();
}

}  // namespace attnsim
