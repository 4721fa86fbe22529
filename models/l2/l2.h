// The shared L2 of a chip, in front of DRAM: sectored lines (valid and dirty bits per sector), set
// associative with hashed set indices, LRU or FIFO replacement, write-back with write-allocate (a write
// needs no DRAM read: sectors carry byte masks on a GPU, modelled as whole sectors), split into partitions
// by address, each with its own bandwidth. Misses go to the level behind (DRAM) as contiguous runs of
// sectors; evicted dirty sectors are written back. Every count is kept per tensor.
//
// Partitions: every line has a home partition (hashed address), the only one that talks to DRAM for it.
// With `far_data: copy` (Ampere and Hopper) a core's requests go to the partition it is attached to, which
// also keeps copies of lines homed in the other partition; a miss there crosses the fabric to the home
// partition, and a miss at home reaches DRAM. Data read by every SM then occupies both partitions, halving
// the capacity it sees (measured: Nsight Compute's lts__t_sectors_srcunit_ltcfabric equals the DRAM reads).
// Writes go to the home partition (no copies). With `far_data: home` a line lives only in its home
// partition and far cores reach it there. `max_dirty_ways` bounds the dirty lines per set (measured on the
// H100: about 43% of the L2 stays dirty, whichever SMs write).
//
// Timing: an access books its bytes on the calendars of the partitions it touches (requests arrive out of
// time order under temporal decoupling: bandwidth_calendar.h), pays the hit latency (plus the far-partition
// latency when the core is attached to the other partition), and waits for its missed sectors from DRAM.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/common/bandwidth_calendar.h"
#include "models/common/component.h"
#include "models/common/memory_level.h"
#include "models/common/params.h"
#include "models/common/registry.h"

namespace attnsim {

class L2Cache : public Component, public MemoryLevel {
 public:
  enum class Replacement : uint8_t { Lru, Fifo };
  enum class FarData : uint8_t { Home, Copy };
  struct Params {
    uint64_t capacity_bytes = 50ull << 20;
    int64_t line_bytes = 128;
    int64_t sector_bytes = 32;
    int64_t ways = 16;
    int64_t partitions = 2;
    Replacement replacement = Replacement::Lru;
    double bytes_per_cycle = 1536;  // per partition
    int64_t hit_latency_cycles = 200;
    int64_t far_latency_cycles = 100;  // extra, for a core attached to the other partition
    int64_t window_cycles = 64;        // bandwidth calendar granularity
    FarData far_data = FarData::Home;
    int64_t max_dirty_ways = 16;  // = ways: no limit
  };
  L2Cache(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // The level misses and write-backs go to; must be set before the first access.
  void set_next(MemoryLevel* next) { next_ = next; }
  // Invalidates everything and sizes the per-tensor ledgers (a program starts with a cold L2).
  void reset(const std::vector<std::string>& tensor_names);
  // Between kernels: writes back and invalidates every line. The write-back is not timed and not counted as
  // DRAM traffic of any kernel (as Nsight Compute's --cache-control all); it is counted here per tensor.
  void flush();
  // Dirty bytes now in L2 per tensor (not yet written to DRAM).
  std::vector<uint64_t> dirty_bytes_per_tensor() const;

  uint64_t access(const MemAccess& access, uint64_t issue_cycle) override;
  void forget_before(uint64_t cycle);  // no access will arrive before `cycle` any more
  int partition_of(uint64_t addr) const;
  int near_partition(int core) const { return core % static_cast<int>(params_.partitions); }

  std::vector<std::string> tensor_names;
  std::vector<uint64_t> read_sectors, write_sectors;          // requested by the cores, per tensor
  std::vector<uint64_t> read_hit_sectors, read_miss_sectors;  // per tensor
  std::vector<uint64_t> write_hit_sectors, write_miss_sectors;
  std::vector<uint64_t> writeback_bytes;      // dirty sectors evicted to DRAM during kernels, per tensor
  std::vector<uint64_t> flushed_dirty_bytes;  // dirty sectors written back by flush() between kernels
  uint64_t evictions = 0;
  uint64_t far_accesses = 0;
  uint64_t fabric_read_sectors = 0;   // copies fetched from the home partition (far_data: copy)
  uint64_t fabric_write_sectors = 0;  // written by cores into the partition they are not attached to
  uint64_t eager_writebacks = 0;      // dirty lines written back early (max_dirty_ways)

 private:
  // A line's state; its tag is kept apart (tags_), so the search of a set reads 16 tags in two host cache
  // lines instead of the whole state of every way.
  struct Line {
    uint64_t stamp = 0;
    uint8_t valid = 0, dirty = 0;  // sector masks
    int32_t tensor = -1;
  };
  // The line's slot in its set of `partition` (allocating, and evicting a victim, if absent); `hit` tells
  // which.
  Line& find_or_allocate(int partition, uint64_t line_index, int tensor, bool& hit);
  int64_t find_way(const uint64_t* tags, uint64_t tag) const;
  void write_to_dram(const Line& line, uint64_t line_index, uint64_t at);
  void limit_dirty_lines(uint64_t set, const Line& written);
  // Reads `mask` of one line for a core attached to `near`; returns the sectors that must come from DRAM.
  uint8_t read_line(int near, uint64_t line_index, uint8_t mask, int tensor);
  void write_line(int near, uint64_t line_index, uint8_t mask, int tensor);
  // The partition a core's request for the line is served by.
  int serving_partition(int near, uint64_t line_index) const;
  int home_of_line(uint64_t line_index) const;
  uint64_t partition_done(int near, uint64_t issue_cycle);
  uint64_t set_of(uint64_t line_index) const;
  // First slot of the set of `partition` that holds `line_index`.
  uint64_t first_way(int partition, uint64_t line_index) const;

  Params params_;
  MemoryLevel* next_ = nullptr;
  uint64_t sets_per_partition_ = 0;
  uint32_t sectors_per_line_ = 4;
  int line_shift_ = 7, sector_shift_ = 5;  // log2 of line_bytes and sector_bytes (both powers of two)
  uint64_t set_divisor_magic_ = 0;         // set_of's modulo as a multiplication (no division per lookup)
  std::vector<uint64_t> tags_;             // [partition][set][way]: line index + 1; 0 = invalid
  std::vector<Line> lines_;                // same layout
  std::vector<BandwidthCalendar> calendars_;
  std::vector<uint64_t> partition_bytes_;  // per access, reused (no allocation on the hot path)
  uint64_t clock_ = 0;                     // access counter for LRU / FIFO stamps
  uint64_t now_ = 0;  // issue cycle of the access being served (write-backs are issued then)
};

void register_l2_models();  // YAML type "sectored"

}  // namespace attnsim
