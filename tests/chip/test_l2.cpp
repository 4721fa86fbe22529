// The L2 model on its own: hits, misses, LRU, write-back with write-allocate, flush, partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/l2/l2.h"
#include "sim/config.h"
#include "sim/machine.h"

namespace attnsim {
namespace {

// Counts what reaches DRAM.
class Recorder : public MemoryLevel {
 public:
  uint64_t access(const MemAccess& a, uint64_t issue) override {
    (a.is_write ? written : read) += a.bytes();
    return issue + 1000;
  }
  uint64_t read = 0, written = 0;
};

constexpr int64_t kLine = 128, kSector = 32;

L2Cache::Params tiny(int64_t ways, int64_t sets, int64_t partitions = 1) {
  L2Cache::Params p;
  p.capacity_bytes = static_cast<uint64_t>(kLine * ways * sets * partitions);
  p.line_bytes = kLine;
  p.sector_bytes = kSector;
  p.ways = ways;
  p.partitions = partitions;
  p.hit_latency_cycles = 10;
  p.far_latency_cycles = 5;
  p.bytes_per_cycle = 64;
  return p;
}

MemAccess range(uint64_t addr, uint64_t bytes, bool write = false) {
  return MemAccess{0, addr, 1, bytes, bytes, write, 0};
}

struct Rig {
  explicit Rig(const L2Cache::Params& p) : l2("l2", p) {
    l2.set_next(&dram);
    l2.reset({"T"});
  }
  Recorder dram;
  L2Cache l2;
};

// Two partitions that keep copies of far-homed lines (far_data: copy), as the GPU presets.
L2Cache::Params two_partitions_with_copies() {
  L2Cache::Params p = tiny(4, 16, 2);
  p.far_data = L2Cache::FarData::Copy;
  return p;
}

// The first line homed in `partition`.
uint64_t first_line_homed_in(L2Cache& l2, int partition) {
  uint64_t line = 0;
  while (l2.partition_of(line * kLine) != partition) ++line;
  return line;
}

// The first line after `line` homed in the same partition.
uint64_t next_line_homed_with(L2Cache& l2, uint64_t line) {
  const int partition = l2.partition_of(line * kLine);
  do ++line;
  while (l2.partition_of(line * kLine) != partition);
  return line;
}

// A read of the whole of `line` by `core`.
void read_line(Rig& rig, uint64_t line, int core) {
  rig.l2.access(MemAccess{0, line * kLine, 1, kLine, kLine, false, core}, 0);
}

TEST(L2, SecondReadHitsAndReachesDramOnce) {
  Rig rig(tiny(4, 16));
  rig.l2.access(range(0, 4096), 0);
  rig.l2.access(range(0, 4096), 0);
  EXPECT_EQ(rig.dram.read, 4096u);
  EXPECT_EQ(rig.l2.read_miss_sectors[0], 4096u / kSector);
  EXPECT_EQ(rig.l2.read_hit_sectors[0], 4096u / kSector);
}

TEST(L2, PartialLineReadsOnlyTheSectorsTouched) {
  Rig rig(tiny(4, 16));
  rig.l2.access(range(40, 8), 0);  // inside the second sector of line 0
  EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kSector));
}

TEST(L2, WriteAllocatesWithoutReadingAndWritesBackOnlyWhenEvicted) {
  Rig rig(tiny(1, 1));  // one line in all
  rig.l2.access(range(0, kLine, true), 0);
  EXPECT_EQ(rig.dram.read, 0u);
  EXPECT_EQ(rig.dram.written, 0u);
  rig.l2.access(range(kLine, kLine), 0);  // a second line evicts the dirty first
  EXPECT_EQ(rig.dram.written, static_cast<uint64_t>(kLine));
  EXPECT_EQ(rig.l2.writeback_bytes[0], static_cast<uint64_t>(kLine));
}

// DRAM that takes one byte per cycle: a write-back is accepted when its bytes have had their turn.
class SlowDram : public MemoryLevel {
 public:
  uint64_t access(const MemAccess& a, uint64_t issue) override {
    accepted_ = std::max(accepted_, issue) + a.bytes();
    return accepted_ + 1000;
  }
  uint64_t last_accepted_cycle() const override { return accepted_; }

 private:
  uint64_t accepted_ = 0;
};

// A write that must evict a dirty line waits until DRAM has taken the evicted data (the L2 has nowhere
// else to put it), and reports that as when it was taken in: the sender's queue stays blocked until then.
TEST(L2, AWriteThatEvictsADirtyLineWaitsForDramToTakeIt) {
  SlowDram dram;
  L2Cache l2("l2", tiny(1, 1));  // one line in all
  l2.set_next(&dram);
  l2.reset({"T"});
  EXPECT_EQ(l2.access(range(0, kLine, true), 0), 2u + 10u);  // 128 B at 64 B/cycle + the hit latency
  EXPECT_EQ(l2.access(range(kLine, kLine, true), 0), 128u);  // line 0's 128 B leave at 1 B/cycle first
  EXPECT_EQ(l2.last_accepted_cycle(), 128u);
}

TEST(L2, LruKeepsTheRecentlyUsedLine) {
  // One set of two ways: lines A, B, touch A, then C evicts B (least recently used), so A still hits.
  Rig rig(tiny(2, 1));
  rig.l2.access(range(0, kLine), 0);
  rig.l2.access(range(kLine, kLine), 0);
  rig.l2.access(range(0, kLine), 0);
  rig.l2.access(range(2 * kLine, kLine), 0);
  const uint64_t before = rig.dram.read;
  rig.l2.access(range(0, kLine), 0);
  EXPECT_EQ(rig.dram.read, before);
  rig.l2.access(range(kLine, kLine), 0);
  EXPECT_EQ(rig.dram.read, before + kLine);
}

TEST(L2, FifoEvictsTheOldestEvenIfUsed) {
  L2Cache::Params p = tiny(2, 1);
  p.replacement = L2Cache::Replacement::Fifo;
  Rig rig(p);
  rig.l2.access(range(0, kLine), 0);
  rig.l2.access(range(kLine, kLine), 0);
  rig.l2.access(range(0, kLine), 0);
  rig.l2.access(range(2 * kLine, kLine), 0);  // evicts line 0, the oldest
  const uint64_t before = rig.dram.read;
  rig.l2.access(range(0, kLine), 0);
  EXPECT_EQ(rig.dram.read, before + kLine);
}

// Tree pseudo-LRU over four ways: after A, B, C, D and A again, the root points away from the half {A, B}
// (used last) and the node under it away from D (used after C), so E takes C's way where LRU would take B's.
TEST(L2, TreePseudoLruEvictsFromTheHalfUsedLeastRecently) {
  for (const auto replacement : {L2Cache::Replacement::Lru, L2Cache::Replacement::TreePlru}) {
    L2Cache::Params p = tiny(4, 1);
    p.replacement = replacement;
    Rig rig(p);
    for (const uint64_t line : {0, 1, 2, 3, 0, 4}) rig.l2.access(range(line * kLine, kLine), 0);
    const uint64_t before = rig.dram.read;
    const uint64_t evicted = replacement == L2Cache::Replacement::Lru ? 1 : 2;
    for (const uint64_t line : {0, 1, 2, 3}) {
      const uint64_t read = rig.dram.read;
      rig.l2.access(range(line * kLine, kLine), 0);
      if (line == evicted) break;  // this miss evicts another line in turn: stop before it counts
      EXPECT_EQ(rig.dram.read, read) << "line " << line << " should still hit";
    }
    EXPECT_EQ(rig.dram.read, before + kLine) << "line " << evicted << " should have been evicted";
  }
}

TEST(L2, FlushCountsDirtyBytesWithoutSendingThemToDram) {
  Rig rig(tiny(4, 16));
  rig.l2.access(range(0, 1000, true), 0);
  rig.l2.flush();
  EXPECT_EQ(rig.dram.written, 0u);
  EXPECT_EQ(rig.l2.flushed_dirty_bytes[0], 1024u);  // 1000 bytes touch 32 sectors
  rig.l2.access(range(0, 1000), 0);                 // invalidated: read from DRAM again
  EXPECT_EQ(rig.dram.read, 1024u);
}

// What the L2 holds when a kernel ends, per tensor: sectors valid anywhere, a far line and its copy counted
// once (validation/run_memeff_residency.sh measures the same on a GPU: a read of the tensor afterwards
// reaches DRAM only for what is not held). Recorded at the flush between kernels, then gone.
TEST(L2, AKernelsEndRecordsWhatEachTensorHasResident) {
  Rig rig(two_partitions_with_copies());
  rig.l2.reset({"A", "B"});
  const uint64_t far = first_line_homed_in(rig.l2, 1);  // homed in partition 1: core 0 keeps a copy
  rig.l2.access(MemAccess{0, far * kLine, 1, kLine, kLine, false, 0}, 0);
  rig.l2.access(MemAccess{1, (far + 1) * kLine, 1, 40, 40, true, 0}, 0);  // B: two sectors of another line
  EXPECT_EQ(rig.l2.resident_bytes_per_tensor(), (std::vector<uint64_t>{kLine, 2 * kSector}));
  rig.l2.flush();
  EXPECT_EQ(rig.l2.resident_bytes_at_kernel_end, (std::vector<uint64_t>{kLine, 2 * kSector}));
  EXPECT_EQ(rig.l2.flushed_dirty_bytes, (std::vector<uint64_t>{0, 2 * kSector}));
  EXPECT_EQ(rig.l2.resident_bytes_per_tensor(), (std::vector<uint64_t>{0, 0}));
}

TEST(L2, AHitTakesTheHitLatencyAndAMissWaitsForDram) {
  Rig rig(tiny(4, 16));
  EXPECT_EQ(rig.l2.access(range(0, 64), 100), 100u + 10u + 1000u);  // miss: DRAM answers 1000 after 110
  EXPECT_EQ(rig.l2.access(range(0, 64), 5000), 5000u + 1u + 10u);   // hit: 64 bytes at 64 B/cycle + latency
}

// An L2 given in time (its own clock): at a core clock of 2 GHz, 32 GB/s is 16 bytes and 5 ns is 10 cycles
// of the core; at 1 GHz the same L2 is 32 bytes and 5 cycles, so a slower core sees a faster L2 in its
// cycles. The change takes effect at the next reset.
TEST(L2, AnL2InTimeIsConvertedAtTheCoresClock) {
  L2Cache::Params p = tiny(4, 16);
  p.bandwidth_gbps = 32;
  p.hit_latency_ns = 5;
  Rig rig(p);  // built at 1 GHz
  EXPECT_EQ(rig.l2.params().bytes_per_cycle, 32.0);
  EXPECT_EQ(rig.l2.params().hit_latency_cycles, 5);
  rig.l2.access(range(0, 64), 0);                                 // a miss brings the line in
  EXPECT_EQ(rig.l2.access(range(0, 64), 5000), 5000u + 2u + 5u);  // hit: 64 bytes at 32 B/cycle
  rig.l2.set_core_clock_ghz(2.0);
  EXPECT_EQ(rig.l2.params().bytes_per_cycle, 16.0);
  EXPECT_EQ(rig.l2.params().hit_latency_cycles, 10);
  EXPECT_EQ(rig.l2.params().far_latency_cycles, 5);  // given in cycles: unchanged
  rig.l2.reset({"T"});
  rig.l2.access(range(0, 64), 0);
  EXPECT_EQ(rig.l2.access(range(0, 64), 5000), 5000u + 4u + 10u);  // 64 bytes at 16 B/cycle
}

// A read that finds its line allocated by a miss still in flight waits for that fill (a GPU L2 merges it
// into the pending miss) instead of taking the hit latency; once the fill has arrived it is a plain hit.
TEST(L2, AReadOfALineStillBeingFilledWaitsForTheFill) {
  L2Cache::Params p = tiny(4, 16);
  p.merge_pending_fills = true;
  Rig rig(p);
  EXPECT_EQ(rig.l2.access(range(0, 64), 100), 1110u);     // miss: DRAM answers 1000 after 110
  EXPECT_EQ(rig.l2.access(range(0, 64), 101), 1110u);     // issued 1 cycle later: merged into that fill
  EXPECT_EQ(rig.dram.read, 64u);                          // fetched once
  EXPECT_EQ(rig.l2.access(range(4096, 64), 101), 1111u);  // another page: its own miss
  rig.l2.forget_before(2000);
  EXPECT_EQ(rig.l2.access(range(0, 64), 2000), 2000u + 1u + 10u);  // the fill has arrived: a hit
}

TEST(L2, PartitionsSplitTheAddressesAndFarOnesCostMore) {
  Rig rig(tiny(4, 16, 2));
  int far = 0;
  for (uint64_t line = 0; line < 64; ++line) far += rig.l2.partition_of(line * kLine) != 0;
  EXPECT_GT(far, 16);  // both partitions get a fair share of the lines
  EXPECT_LT(far, 48);
}

// far_data: copy. A line homed in the other partition is fetched into both (home from DRAM, the copy across
// the fabric); a core attached to the home partition then hits without DRAM, and a second read by the
// first core hits its copy without crossing the fabric.
TEST(L2, FarLinesAreCopiedIntoTheRequestersPartition) {
  L2Cache::Params p = two_partitions_with_copies();
  Rig rig(p);
  const uint64_t line = first_line_homed_in(rig.l2, 1);  // homed in partition 1, far from core 0
  MemAccess from_core0{0, line * kLine, 1, kLine, kLine, false, 0};
  MemAccess from_core1 = from_core0;
  from_core1.core = 1;  // attached to partition 1 (core % 2)
  rig.l2.access(from_core0, 0);
  EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine));
  EXPECT_EQ(rig.l2.fabric_read_sectors, 4u);
  rig.l2.access(from_core1, 0);  // the home partition has it
  rig.l2.access(from_core0, 0);  // so has core 0's copy
  EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine));
  EXPECT_EQ(rig.l2.fabric_read_sectors, 4u);
  EXPECT_EQ(rig.l2.read_hit_sectors[0], 8u);
}

// home: address_parity and set_index: paired_regions (the H200's, measured: docs/chip.md, "Sets line by
// line"). A line and its partner (address bits 8 and 12 flipped) are homed in opposite partitions, flipping
// two of the parity bits keeps the home, and the other combinations are refused.
L2Cache::Params paired_regions(int64_t ways, int64_t sets) {
  L2Cache::Params p = tiny(ways, sets, 2);
  p.far_data = L2Cache::FarData::Copy;
  p.home = L2Cache::Params::Home::AddressParity;
  p.set_index = L2Cache::Params::SetIndex::PairedRegions;
  return p;
}

TEST(L2, AddressParityHomesALineAndItsPartnerApart) {
  Rig rig(paired_regions(4, 16));
  int in_one = 0;
  for (uint64_t addr = 0; addr < (64u << 20); addr += 4096 + kLine) {
    const int home = rig.l2.partition_of(addr);
    EXPECT_NE(home, rig.l2.partition_of(addr ^ (1u << 8 | 1u << 12)));
    EXPECT_EQ(home, rig.l2.partition_of(addr ^ (1u << 13 | 1u << 19)));
    EXPECT_EQ(home, rig.l2.partition_of(addr ^ (1u << 7 | 1u << 9 | 1u << 14)));  // not parity bits
    in_one += home;
  }
  EXPECT_GT(in_one, 6000);  // of 16,130 addresses: the pages' own bit balances the partitions
  EXPECT_LT(in_one, 10000);
  L2Cache::Params hashed_home = paired_regions(4, 16);
  hashed_home.home = L2Cache::Params::Home::Hashed;
  EXPECT_THROW(L2Cache("l2_hashed_home", hashed_home), std::invalid_argument);
  L2Cache::Params one_partition = tiny(4, 16, 1);
  one_partition.home = L2Cache::Params::Home::AddressParity;
  EXPECT_THROW(L2Cache("l2_one_partition", one_partition), std::invalid_argument);
}

// The H100's bits (docs/chip.md, "The H100's eviction sets"): homes by the parity of address bits 12, 13, 16,
// 17 and 19, and a line's partner 328 lines away (bits 10, 13 and 15). One core reads a line, then its
// partner (homed in the other partition, copied beside it in the core's own), then the line again: with a
// way a set the partner's copy evicts it, where another far line (bit 7 flipped too) does not.
TEST(L2, H100PartnerCopiesLandInTheSetOfTheLine) {
  L2Cache::Params p = paired_regions(1, 64);
  p.home_bits = 1u << 12 | 1u << 13 | 1u << 16 | 1u << 17 | 1u << 19;
  p.partner_bits = 1u << 10 | 1u << 13 | 1u << 15;
  const L2Cache bits("l2_h100_bits", p);
  for (uint64_t addr = 0; addr < (64u << 20); addr += 4096 + kLine) {
    EXPECT_NE(bits.partition_of(addr), bits.partition_of(addr ^ p.partner_bits));
    EXPECT_NE(bits.partition_of(addr), bits.partition_of(addr ^ 1u << 16));
    EXPECT_EQ(bits.partition_of(addr), bits.partition_of(addr ^ (1u << 15 | 1u << 10)));  // not home bits
  }
  uint64_t line = 0;
  while (bits.partition_of(line) != 0) line += kLine;  // homed where core 0 is attached
  auto dram_lines = [&](uint64_t other) {
    Rig rig(p);
    for (uint64_t addr : {line, other, line}) rig.l2.access(range(addr, kLine), 0);
    return rig.dram.read / kLine;
  };
  EXPECT_EQ(dram_lines(line ^ p.partner_bits), 3u);
  EXPECT_EQ(dram_lines(line ^ p.partner_bits ^ kLine), 2u);
}

// l2.page_seed stands for another placement of the pages (another process's physical addresses): each 2 MiB
// page keeps or swaps its lines' homes as a whole (a line and its partner stay apart), about half of them
// swapping; seed 0 is the fixed placement every other test runs on.
TEST(L2, PageSeedMovesWholePagesBetweenPartitions) {
  Rig fixed(paired_regions(4, 16));
  L2Cache::Params p = paired_regions(4, 16);
  p.page_seed = 7;
  const L2Cache seeded("l2_seeded", p);
  int pages_moved = 0;
  for (uint64_t page = 0; page < 64; ++page) {
    const uint64_t base = page << 21;
    const bool moved = fixed.l2.partition_of(base) != seeded.partition_of(base);
    pages_moved += moved ? 1 : 0;
    for (uint64_t addr = base; addr < base + (2u << 20); addr += 4096 + kLine) {
      EXPECT_EQ(fixed.l2.partition_of(addr) != seeded.partition_of(addr), moved) << addr;
      EXPECT_NE(seeded.partition_of(addr), seeded.partition_of(addr ^ (1u << 8 | 1u << 12)));
    }
  }
  EXPECT_GT(pages_moved, 16);  // of 64
  EXPECT_LT(pages_moved, 48);
}

// One core reads a contiguous buffer of exactly its partition's capacity twice. With paired regions the
// lines and the copies of their partners tile the sets (each region of pairs covers every set once), so the
// second pass hits throughout; a hash of each line fills some sets past their ways. Pieces of many regions
// (the first 512 bytes of every 4 KiB, as far apart as head windows) fill them unevenly and miss.
TEST(L2, PairedRegionsTileContiguousMemoryButNotPiecesOfIt) {
  const int64_t ways = 4, sets = 64;
  const uint64_t capacity = static_cast<uint64_t>(kLine * ways * sets);  // one partition's
  auto second_pass_misses = [&](L2Cache::Params p, uint64_t piece, uint64_t stride) {
    Rig rig(p);
    for (int pass = 0; pass < 2; ++pass)
      for (uint64_t a = 0; a < capacity / piece * stride; a += stride) rig.l2.access(range(a, piece), 0);
    return rig.dram.read - capacity;
  };
  EXPECT_EQ(second_pass_misses(paired_regions(ways, sets), capacity, capacity), 0u);
  L2Cache::Params hashed = paired_regions(ways, sets);
  hashed.set_index = L2Cache::Params::SetIndex::Hashed;
  EXPECT_GT(second_pass_misses(hashed, capacity, capacity), capacity / 10);
  EXPECT_GT(second_pass_misses(paired_regions(ways, sets), 512, 1u << 16), capacity / 10);
}

// l2.region_bytes: where a region starts decides whether a contiguous buffer tiles the sets. A core reads
// a partition's capacity twice from half a region into memory: with regions of the default size (64 pairs,
// 16 KiB: the sets) its two pieces of regions fill some sets past their ways; with regions of half that,
// the buffer is whole regions dealt over the sets in order and the second pass hits. A region must be a
// power of two of line pairs.
TEST(L2, RegionBytesDecideWhereContiguousMemoryTilesTheSets) {
  const int64_t ways = 4, sets = 64;
  const uint64_t capacity = static_cast<uint64_t>(kLine * ways * sets), half_region = 8192;
  auto second_pass_misses = [&](const L2Cache::Params& p) {
    Rig rig(p);
    for (int pass = 0; pass < 2; ++pass) rig.l2.access(range(half_region, capacity), 0);
    return rig.dram.read - capacity;
  };
  EXPECT_GT(second_pass_misses(paired_regions(ways, sets)), capacity / 20);
  L2Cache::Params halves = paired_regions(ways, sets);
  halves.region_bytes = half_region;
  EXPECT_EQ(second_pass_misses(halves), 0u);
  halves.region_bytes = 3 * half_region;
  EXPECT_THROW(L2Cache("l2_three_halves", halves), std::invalid_argument);
}

// Writes go to the home partition, even from a far core: nothing dirty is held as a copy.
TEST(L2, WritesGoToTheHomePartition) {
  L2Cache::Params p = two_partitions_with_copies();
  Rig rig(p);
  const uint64_t line = first_line_homed_in(rig.l2, 1);
  rig.l2.access(MemAccess{0, line * kLine, 1, kLine, kLine, true, 0}, 0);  // core 0, far from partition 1
  EXPECT_EQ(rig.l2.fabric_write_sectors, 4u);
  MemAccess read{0, line * kLine, 1, kLine, kLine, false, 1};  // core 1 reads it at home
  rig.l2.access(read, 0);
  EXPECT_EQ(rig.dram.read, 0u);
  EXPECT_EQ(rig.l2.read_hit_sectors[0], 4u);
}

// An atomic's read (red.global: STORE_ADD with the network's atomics in L2) is executed at the line's home
// partition: a core attached to the other partition makes no copy of the line and moves nothing across the
// fabric but the addend (its write). As a plain read it would fetch a copy across the fabric.
TEST(L2, AnAtomicIsServedAtTheLinesHomePartition) {
  for (bool at_home : {false, true}) {
    L2Cache::Params p = two_partitions_with_copies();
    p.atomics_at_home = at_home;
    Rig rig(p);
    const uint64_t line = first_line_homed_in(rig.l2, 1);  // homed in partition 1, far from core 0
    MemAccess add_read{0, line * kLine, 1, kLine, kLine, false, 0};
    add_read.atomic_read = true;
    MemAccess add_write = add_read;
    add_write.atomic_read = false;
    add_write.is_write = true;
    rig.l2.access(add_read, 0);
    rig.l2.access(add_write, 0);
    EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine)) << at_home;
    EXPECT_EQ(rig.l2.fabric_read_sectors, at_home ? 0u : 4u);
    EXPECT_EQ(rig.l2.fabric_write_sectors, 4u);                               // the addend crosses either way
    rig.l2.access(MemAccess{0, line * kLine, 1, kLine, kLine, false, 0}, 0);  // a plain read by core 0
    EXPECT_EQ(rig.l2.fabric_read_sectors, 4u) << at_home;  // its copy now, or the atomic's before
    EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine)) << at_home;
  }
}

// What a store does to the copies of its line (far_data: copy). Core 0 (partition 0) holds a copy of a line
// homed in partition 1; core 1 (home side) stores to it, then core 0 reads it again, stores to it and reads.
TEST(L2, AStoreUpdatesOrDropsTheCopiesOfItsLine) {
  using Rule = L2Cache::Params::CopiesOnStore;
  struct Expected {
    Rule rule;
    uint64_t fabric_reads, fabric_writes, invalidated;
  };
  // keep: copies stay as they were (the reads hit, stale); invalidate: each store drops the copy, so both
  // reads fetch it again; update: the home-side store's sectors cross to the copy; writer_keeps: the
  // home-side store drops it, the far store keeps its own partition's copy; demote: as keep while nothing
  // leaves (the next test shows what it changes).
  for (const Expected& e :
       {Expected{Rule::Keep, 4, 4, 0}, Expected{Rule::Invalidate, 12, 4, 2}, Expected{Rule::Update, 4, 8, 0},
        Expected{Rule::WriterKeeps, 8, 4, 1}, Expected{Rule::Demote, 4, 4, 0}}) {
    L2Cache::Params p = two_partitions_with_copies();
    p.copies_on_store = e.rule;
    Rig rig(p);
    const uint64_t line = first_line_homed_in(rig.l2, 1);
    auto access = [&](int core, bool write) {
      rig.l2.access(MemAccess{0, line * kLine, 1, kLine, kLine, write, core}, 0);
    };
    access(0, false);  // the copy, across the fabric
    access(1, true);
    access(0, false);
    access(0, true);
    access(0, false);
    const int rule = static_cast<int>(e.rule);
    EXPECT_EQ(rig.l2.fabric_read_sectors, e.fabric_reads) << rule;
    EXPECT_EQ(rig.l2.fabric_write_sectors, e.fabric_writes) << rule;
    EXPECT_EQ(rig.l2.invalidated_copies, e.invalidated) << rule;
    EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine)) << rule;  // home keeps the line throughout
  }
}

// demote: a store from another partition leaves the copy valid but makes it its set's oldest line. One set
// of two ways a partition: core 0 (partition 0) reads a line homed there, then a copy of a line homed in
// partition 1, which core 1 (home side) then stores to. A third line in core 0's set evicts the copy under
// demote, so the next read of it crosses the fabric again, and the first line under keep, where the stale
// copy still hits.
TEST(L2, ADemotedCopyIsTheNextVictimOfItsSet) {
  using Rule = L2Cache::Params::CopiesOnStore;
  for (Rule rule : {Rule::Keep, Rule::Demote}) {
    L2Cache::Params p = tiny(2, 1, 2);
    p.far_data = L2Cache::FarData::Copy;
    p.copies_on_store = rule;
    Rig rig(p);
    const uint64_t near = first_line_homed_in(rig.l2, 0), far = first_line_homed_in(rig.l2, 1);
    uint64_t third = near + 1;
    while (rig.l2.partition_of(third * kLine) != 0) ++third;
    auto access = [&](uint64_t line, int core, bool write) {
      rig.l2.access(MemAccess{0, line * kLine, 1, kLine, kLine, write, core}, 0);
    };
    access(near, 0, false);
    access(far, 0, false);  // the copy, newer than `near` in partition 0's set
    access(far, 1, true);
    access(third, 0, false);
    const bool demote = rule == Rule::Demote;
    EXPECT_EQ(rig.l2.demoted_copies, demote ? 1u : 0u);
    EXPECT_EQ(rig.l2.evictions, 1u);
    access(far, 0, false);  // kept: the stale copy hits; demoted: fetched again from home, not from DRAM
    EXPECT_EQ(rig.l2.fabric_read_sectors, demote ? 8u : 4u) << demote;
    EXPECT_EQ(rig.dram.read, 3u * kLine) << demote;
  }
}

// fence_revalidates: core 0 (partition 0) keeps a copy of a line homed in partition 1, one way a set, so
// that core 1 (home side) evicts the line at home by reading another line homed there. A read after a fence
// that binds core 0 (its own; with `all` core 1's too) checks the copy at home: its sectors cross the fabric
// again without a lookup miss, and, the home having lost them, come from DRAM (once: the check brings the
// line home again); the read after that uses the checked copy. With `all` core 1's fence and core 0's each
// cost a check; without a binding fence the copy serves every read.
TEST(L2, AFenceMakesACopyBeCheckedAtHome) {
  using Rule = L2Cache::Params::FenceRevalidates;
  for (Rule rule : {Rule::None, Rule::Own, Rule::All}) {
    L2Cache::Params p = tiny(1, 1, 2);
    p.far_data = L2Cache::FarData::Copy;
    p.fence_revalidates = rule;
    Rig rig(p);
    const uint64_t line = first_line_homed_in(rig.l2, 1);
    const uint64_t other = next_line_homed_with(rig.l2, line);
    auto read = [&](uint64_t l, int core) { read_line(rig, l, core); };
    read(line, 0);
    read(other, 1);  // evicts `line` at home; core 0's copy stays
    EXPECT_EQ(rig.dram.read, 2u * kLine);
    rig.l2.fence(1);
    read(line, 0);
    const bool others_bind = rule == Rule::All;
    EXPECT_EQ(rig.l2.fabric_read_sectors, others_bind ? 8u : 4u) << static_cast<int>(rule);
    rig.l2.fence(0);
    read(line, 0);
    read(line, 0);
    const uint64_t checks = rule == Rule::None ? 0u : rule == Rule::Own ? 1u : 2u;
    EXPECT_EQ(rig.l2.revalidated_copies, checks) << static_cast<int>(rule);
    EXPECT_EQ(rig.l2.fabric_read_sectors, 4u + 4u * checks) << static_cast<int>(rule);
    EXPECT_EQ(rig.l2.lookup_read_miss_sectors, 8u) << static_cast<int>(rule);
    EXPECT_EQ(rig.dram.read, (checks ? 3u : 2u) * kLine) << static_cast<int>(rule);
  }
}

// fence_fabric_sectors: a fence sends that many sectors between the partitions whatever came before it
// and moves no line: core 0 (partition 0) holds a copy of a line homed in partition 1; two fences by either
// core add 2 x 160 fabric sectors, and the copy still serves the next read.
TEST(L2, AFenceCrossesTheFabricWithoutMovingALine) {
  L2Cache::Params p = tiny(4, 2, 2);
  p.far_data = L2Cache::FarData::Copy;
  p.fence_fabric_sectors = 160;
  Rig rig(p);
  const uint64_t a = first_line_homed_in(rig.l2, 1), b = next_line_homed_with(rig.l2, a);
  read_line(rig, a, 0), read_line(rig, b, 0);  // the copies: 8 sectors across the fabric
  EXPECT_EQ(rig.l2.fabric_read_sectors, 8u);
  rig.l2.fence(0), rig.l2.fence(1);
  read_line(rig, a, 0), read_line(rig, b, 0);
  EXPECT_EQ(rig.l2.fence_fabric_sectors, 320u);
  EXPECT_EQ(rig.l2.fabric_read_sectors, 8u);  // the copies served
  EXPECT_EQ(rig.l2.lookup_read_miss_sectors, 8u);
  EXPECT_EQ(rig.dram.read, 2u * kLine);
}

// acquire_refetches (copies_on_store: keep): core 0 (partition 0) holds a copy of a line homed in partition
// 1. A store from the home side makes the copy stale: a plain read is still served by it, an acquiring read
// (a load of a coherent tensor) fetches it again across the fabric, after which the copy is fresh and serves
// the next acquiring read; core 0's own store leaves it fresh. Switched off, every read is served by the
// copy.
TEST(L2, AnAcquiringLoadFetchesAStaleCopyAgain) {
  for (bool refetch : {false, true}) {
    L2Cache::Params p = two_partitions_with_copies();
    p.acquire_refetches = refetch;
    Rig rig(p);
    const uint64_t line = first_line_homed_in(rig.l2, 1);
    auto access = [&](int core, bool write, bool acquire) {
      MemAccess a{0, line * kLine, 1, kLine, kLine, write, core};
      a.acquire = acquire;
      rig.l2.access(a, 0);
    };
    access(0, false, true);  // the copy, across the fabric: 4 sectors
    access(0, false, true);  // fresh: a hit
    EXPECT_EQ(rig.l2.lookup_read_miss_sectors, 4u) << refetch;
    access(1, true, false);   // a store at home
    access(0, false, false);  // a plain read: the stale copy serves it
    EXPECT_EQ(rig.l2.fabric_read_sectors, 4u) << refetch;
    access(0, false, true);  // an acquiring read
    access(0, false, true);  // the copy is fresh again
    EXPECT_EQ(rig.l2.fabric_read_sectors, refetch ? 8u : 4u) << refetch;
    EXPECT_EQ(rig.l2.lookup_read_miss_sectors, refetch ? 8u : 4u) << refetch;
    EXPECT_EQ(rig.l2.refetched_stale_copies, refetch ? 1u : 0u) << refetch;
    access(0, true, false);  // core 0's own store passes through its copy on the way home: not stale
    access(0, false, true);
    EXPECT_EQ(rig.l2.fabric_read_sectors, refetch ? 8u : 4u) << refetch;
    EXPECT_EQ(rig.l2.read_hit_sectors[0], 20u) << refetch;  // a copy fetched from home is an L2 hit
    EXPECT_EQ(rig.dram.read, static_cast<uint64_t>(kLine)) << refetch;  // home keeps the line throughout
  }
}

// Two cores taking turns rewriting one buffer (read it all, store it all), as the coherence probe's two SMs
// do on an H200 (validation/l2_coherence_probe.cu, validation/data/h200_l2_coherence_probe.csv, 1 MiB, one
// and eight rounds each, plain loads: no fence after taking the turn). Read lookup misses over the
// buffer's sectors: on different partitions the GPU misses 1.50 times at one round and 8.50 at eight, so
// every turn misses again on the half homed on the other side, as when a store at home drops the other
// partition's copy (writer_keeps: 1 + rounds + (rounds - 1) halves); the stale copies of `keep` serve every
// later turn (1.5 whatever the rounds). Two cores on one partition share its copies: 1.00 on the GPU and
// under either rule. A fence after taking the turn changes nothing on the GPU (the fence-1 rows).
struct TurnRow {
  int other_sm;
  int64_t rounds;
  double lookup_misses;  // per sector of the buffer
};

std::vector<TurnRow> measured_turn_rows() {
  std::ifstream in(std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/h200_l2_coherence_probe.csv");
  std::string line;
  std::getline(in, line);  // mode,bytes,passes,blocks,dram_read_bytes,dram_write_bytes,l2_read_sectors,...
  std::vector<TurnRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream stream(line);
    for (std::string cell; std::getline(stream, cell, ',');) cells.push_back(cell);
    // mode coherence:128:<other>:fence<0|1>; the 8th column is lts_tex_miss_sectors
    if (cells.size() < 9 || cells[0].find("fence0") == std::string::npos || cells[1] != "1048576") continue;
    const size_t other = cells[0].find(':', cells[0].find(':') + 1) + 1;
    rows.push_back({std::stoi(cells[0].substr(other)), std::stoll(cells[2]),
                    std::stod(cells[8]) / (1048576.0 / kSector)});
  }
  return rows;
}

double turn_taking_misses(L2Cache::Params::CopiesOnStore rule, int other_core, int64_t rounds) {
  L2Cache::Params p = tiny(16, 256, 2);  // 4,096 lines a partition: the buffer and its copies fit
  p.far_data = L2Cache::FarData::Copy;
  p.copies_on_store = rule;
  Rig rig(p);
  constexpr uint64_t kBytes = 1024 * kLine;
  for (int64_t turn = 0; turn < 2 * rounds; ++turn) {
    const int core = turn % 2 == 0 ? 0 : other_core;
    rig.l2.access(MemAccess{0, 0, 1, kBytes, kBytes, false, core}, 0);
    rig.l2.access(MemAccess{0, 0, 1, kBytes, kBytes, true, core}, 0);
  }
  return static_cast<double>(rig.l2.lookup_read_miss_sectors) / (kBytes / kSector);
}

TEST(L2, TwoCoresTakingTurnsMissAsTheH200Does) {
  using Rule = L2Cache::Params::CopiesOnStore;
  const auto rows = measured_turn_rows();
  ASSERT_EQ(rows.size(), 8u);  // SMs 4 and 5 on the other partition than SM 128, 0 and 1 on its own
  for (const TurnRow& r : rows) {
    const bool across = r.other_sm == 4 || r.other_sm == 5;
    const int other_core = across ? 1 : 2;  // core % 2: core 1 on the other partition, core 2 on core 0's
    const std::string row = "SM " + std::to_string(r.other_sm) + ", " + std::to_string(r.rounds) + " rounds";
    EXPECT_NEAR(r.lookup_misses, across ? 0.5 + r.rounds : 1.0, 0.01) << row;  // the GPU itself
    EXPECT_NEAR(turn_taking_misses(Rule::WriterKeeps, other_core, r.rounds) / r.lookup_misses, 1.0, 0.02)
        << row;
    const double kept = turn_taking_misses(Rule::Keep, other_core, r.rounds);
    EXPECT_NEAR(kept, across ? 1.5 : 1.0, 0.05) << row;
  }
}

// Whether a fetch across the fabric keeps the home partition's line young (`refresh` of
// validation/l2_coherence_probe.cu, validation/data/h200_l2_refresh_probe.csv, an H200): SM 128 reads A and B
// (0.4 of a partition each, or 1/3), another SM reads A or not, SM 128 reads C (0.6, or 8/15) and A again.
// Without the other SM's read, C evicts A first and the last read fetches A's lines homed near SM 128 from
// DRAM again: half of A more. With it, from the same partition (SMs 0, 1) all of A is young again and 0.26
// (0.11) of A is read again; from the other partition (SMs 4, 5) only A's home lines there are, through the
// fabric, so C takes A's stale copies and B first and 0.10 (0.05) of A is read again. The model, the same
// rows on a scaled L2 (16 ways, 2,048 sets a partition: 4 MiB): 0.50 / 0.21 (0.06) / 0.07 (0.02); were a
// fetch across the fabric not a use of the home line, the far rows would read half of A again, as the idle
// ones.
struct RefreshRow {
  int other_sm;
  bool other_reads;
  double part_fraction, extra_over_part;  // A's size over a partition's; DRAM reads past A + B + C, over A
};

// A row of a validation/data/h200_l2_*_probe.csv (mode,part_bytes,c_bytes,blocks,dram_read_bytes,...), mode
// refresh:128:<other SM>:reads<0|1|2>: what the other SM did, A's and C's bytes and the DRAM reads past
// A + B + C, over A.
struct ProbeRow {
  int other_sm;
  char other_reads;
  double part, c, extra_over_part;
  double dram_read, lookup_miss_sectors, fabric_sectors;  // the whole launch's
  uint64_t offset = 0;  // a mode ending in :off<bytes>: where the buffers start in their allocation
};

constexpr double kH200Partition = 30.0 * (1 << 20);  // the H200's 60 MiB in two

std::vector<ProbeRow> probe_rows(const std::string& file) {
  std::ifstream in(std::string(ATTNSIM_SOURCE_DIR) + "/validation/data/" + file);
  std::string line;
  std::getline(in, line);
  std::vector<ProbeRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream stream(line);
    for (std::string cell; std::getline(stream, cell, ',');) cells.push_back(cell);
    if (cells.size() < 5) continue;
    const double part = std::stod(cells[1]), c = std::stod(cells[2]), dram = std::stod(cells[4]);
    const size_t other = cells[0].find(':', cells[0].find(':') + 1) + 1;
    const size_t off = cells[0].find(":off");
    rows.push_back({std::stoi(cells[0].substr(other)), cells[0].back(), part, c, (dram - 2 * part - c) / part,
                    dram, std::stod(cells[8]), std::stod(cells[9]),
                    off == std::string::npos ? 0 : std::stoull(cells[0].substr(off + 4))});
  }
  return rows;
}

std::vector<RefreshRow> measured_refresh_rows() {
  std::vector<RefreshRow> rows;
  for (const ProbeRow& r : probe_rows("h200_l2_refresh_probe.csv"))
    rows.push_back({r.other_sm, r.other_reads == '1', r.part / kH200Partition, r.extra_over_part});
  return rows;
}

// The probes' sequences on a scaled H200 partition pair (16 ways, 2,048 sets a partition: 4 MiB), core 0
// standing for SM 128, core 1 for an SM across the fabric (4, 5) and core 2 for one beside it (0, 1).
struct ScaledPartitions {
  explicit ScaledPartitions(bool far_fills_oldest = false) : rig(params(far_fills_oldest)) {}
  static L2Cache::Params params(bool far_fills_oldest) {
    L2Cache::Params p = tiny(16, 2048, 2);
    p.far_data = L2Cache::FarData::Copy;
    p.far_fills_oldest = far_fills_oldest;
    return p;
  }
  static uint64_t bytes(double fraction) { return static_cast<uint64_t>(fraction * 16 * 2048) * kLine; }
  static int core_of(int sm) { return sm == 4 || sm == 5 ? 1 : 2; }
  void read(uint64_t addr, uint64_t size, int core) {
    rig.l2.access(MemAccess{0, addr, 1, size, size, false, core}, 0);
  }
  // Both probes end alike: SM 128 reads C (after A and B, `part` bytes each) and A again; the DRAM reads
  // past A + B + C, over A.
  double c_then_a_again(uint64_t part, uint64_t c) {
    read(2 * part, c, 0), read(0, part, 0);
    return (static_cast<double>(rig.dram.read) - static_cast<double>(2 * part + c)) /
           static_cast<double>(part);
  }
  Rig rig;
};

double simulated_refresh_extra(const RefreshRow& r) {
  ScaledPartitions l2;
  const uint64_t part = l2.bytes(r.part_fraction), c = l2.bytes(r.part_fraction < 0.35 ? 8.0 / 15 : 0.6);
  l2.read(0, 2 * part, 0);                                      // SM 128: A, then B
  if (r.other_reads) l2.read(0, part, l2.core_of(r.other_sm));  // the other SM: A
  return l2.c_then_a_again(part, c);
}

TEST(L2, AFetchAcrossTheFabricKeepsTheHomeLineYoung) {
  const auto rows = measured_refresh_rows();
  ASSERT_EQ(rows.size(), 16u);
  for (const RefreshRow& r : rows) {
    const double simulated = simulated_refresh_extra(r);
    const std::string row = "SM " + std::to_string(r.other_sm) + (r.other_reads ? " reads A" : " idle") +
                            ", A = " + std::to_string(r.part_fraction) + " of a partition";
    EXPECT_NEAR(simulated, r.extra_over_part, 0.06) << row;  // the model keeps 0.02-0.05 of A more
    if (!r.other_reads) {
      EXPECT_NEAR(r.extra_over_part, 0.5, 0.01) << row;
    } else if (r.other_sm == 4 || r.other_sm == 5) {
      EXPECT_LT(simulated, 0.1) << row;
    }
  }
}

// Where a line that a far core's miss brings into its home partition enters that partition's replacement
// order (`SET=farfill` of validation/run_l2_coherence_probe.sh, validation/data/h200_l2_farfill_probe.csv,
// an H200, 2026-12-01): SM 128 reads B (0.4 of a partition), another SM reads A (0.4), SM 128 reads C (0.5
// or 0.7) and A again. With the other SM across the fabric (SMs 4, 5: their reads of A cross it), A's lines
// homed at SM 128's partition came in for it. At C = 0.5 SM 128's partition must give up 0.1 of itself:
// the GPU reads 0.002 of A again (B left), where were such a fill the oldest line of its set A's home half
// would leave first (a quarter of A again). So the fill enters as the most recent, as the presets have it
// (l2.far_fills_oldest: false); the model, the same rows on a scaled L2 (16 ways, 2,048 sets a partition):
// 0.015 / 0.206 (C = 0.5 / 0.7) beside the GPU's 0.002 / 0.241, and 0.47 / 0.50 with far_fills_oldest. With
// the other SM beside SM 128 (0, 1) the model reads 0.06 of A again at C = 0.5 where the GPU reads 0.002
// (its partition just full: the scaled sets fill less evenly), 0.415 at 0.7 beside 0.436.
struct FarFillRow {
  int other_sm;
  double c_fraction, extra_over_part;  // C's size over a partition's; DRAM reads past A + B + C, over A
};

std::vector<FarFillRow> measured_far_fill_rows() {
  std::vector<FarFillRow> rows;
  for (const ProbeRow& r : probe_rows("h200_l2_farfill_probe.csv"))
    if (r.other_reads == '2') rows.push_back({r.other_sm, r.c / kH200Partition, r.extra_over_part});
  return rows;
}

double simulated_far_fill_extra(const FarFillRow& r, bool far_fills_oldest) {
  ScaledPartitions l2(far_fills_oldest);
  const uint64_t part = l2.bytes(0.4), c = l2.bytes(r.c_fraction);
  l2.read(part, part, 0);                    // SM 128: B
  l2.read(0, part, l2.core_of(r.other_sm));  // the other SM: A
  return l2.c_then_a_again(part, c);
}

TEST(L2, ALineFetchedForAFarCoreEntersItsHomeAsTheMostRecent) {
  const auto rows = measured_far_fill_rows();
  ASSERT_EQ(rows.size(), 8u);
  for (const FarFillRow& r : rows) {
    const std::string row = "SM " + std::to_string(r.other_sm) + ", C = " + std::to_string(r.c_fraction);
    const double recent = simulated_far_fill_extra(r, false), oldest = simulated_far_fill_extra(r, true);
    std::printf("%s: GPU %.3f, model %.3f, oldest %.3f\n", row.c_str(), r.extra_over_part, recent, oldest);
    EXPECT_NEAR(recent, r.extra_over_part, 0.07) << row;
    if ((r.other_sm == 4 || r.other_sm == 5) && r.c_fraction < 0.6) {
      EXPECT_LT(r.extra_over_part, 0.01) << row;  // the GPU kept A's home half
      EXPECT_GT(oldest, 0.3) << row;              // as the oldest it would not have
    }
  }
}

// How a partition's home lines and its copies of far-homed lines give way to each other (`SET=share` of
// validation/run_l2_coherence_probe.sh, validation/data/h200_l2_share_probe.csv, an H200, 2026-12-01): SM 128
// reads A and B (0.4 of a partition each) and C (0.3, 0.4, 0.5), then A backwards (the lines of A still
// there are found before the misses push them out); another SM reads each buffer just after SM 128
// (reads1), just before (reads2) or never (reads0). Alone, SM 128 loses as many of A's home lines (read
// from DRAM again) as of its copies (fetched again through the fabric): 0.153 / 0.278 / 0.402 of A each,
// so neither kind leaves first. With SMs across the fabric reading just after SM 128 the GPU reads more of
// A from DRAM again at C = 0.4 and 0.5 (0.33, 0.56 of A); just before, as much as alone. The model runs the
// same sequences on the H200's L2 (its preset's sets, homes and rules): every launch's DRAM reads, lookup
// misses and fabric sectors 0.00-0.08 of A below the GPU's. On each row the GPU loses about 0.05 of A more
// than its partition's 30 MiB would under LRU (0.63 MiB at each C), the model none (docs/chip.md).
struct ShareRun {
  double dram_read, lookup_misses, fabric_sectors;  // over A's bytes, its sectors, its sectors
};

// The H200 preset's L2 parameters; its machine is gone when they return (its module names are free again).
L2Cache::Params h200_l2_params() {
  Machine machine(load_config(std::string(ATTNSIM_SOURCE_DIR) + "/configs/h200.yaml", {}));
  return machine.l2()->params();
}

// `base`: where the buffers start (the probe's PROBE_OFFSET_BYTES).
ShareRun simulated_share(const L2Cache::Params& h200, const ProbeRow& r, uint64_t base = 0) {
  Rig rig(h200);
  const auto read = [&](uint64_t addr, uint64_t size, int core) {
    rig.l2.access(MemAccess{0, base + addr, 1, size, size, false, core}, 0);
  };
  const uint64_t part = static_cast<uint64_t>(r.part), c = static_cast<uint64_t>(r.c);
  const int other = r.other_sm == 4 || r.other_sm == 5 ? 1 : 2;  // core % 2 is its partition; SM 128's 0
  const auto a_and_b = [&](int core) { read(0, 2 * part, core); };
  const auto c_alone = [&](int core) { read(2 * part, c, core); };
  if (r.other_reads == '0') a_and_b(0), c_alone(0);
  if (r.other_reads == '1') a_and_b(0), a_and_b(other), c_alone(0), c_alone(other);
  if (r.other_reads == '2') a_and_b(other), a_and_b(0), c_alone(other), c_alone(0);
  constexpr uint64_t kChunk = 16384;  // the probe's step: 1,024 threads x 16 bytes
  for (uint64_t end = part; end > 0; end -= kChunk) read(end - kChunk, kChunk, 0);  // A backwards
  const double sectors = r.part / kSector;
  return {static_cast<double>(rig.dram.read) / r.part,
          static_cast<double>(rig.l2.lookup_read_miss_sectors) / sectors,
          static_cast<double>(rig.l2.fabric_read_sectors) / sectors};
}

TEST(L2, HomeLinesAndCopiesGiveWayAlike) {
  const L2Cache::Params h200 = h200_l2_params();
  const auto rows = probe_rows("h200_l2_share_probe.csv");
  ASSERT_EQ(rows.size(), 21u);
  for (const ProbeRow& r : rows) {
    const double a_sectors = r.part / kSector;
    const ShareRun gpu{r.dram_read / r.part, r.lookup_miss_sectors / a_sectors, r.fabric_sectors / a_sectors};
    const ShareRun model = simulated_share(h200, r);
    const std::string row = "SM " + std::to_string(r.other_sm) + " reads" + r.other_reads +
                            ", C = " + std::to_string(r.c / kH200Partition).substr(0, 3);
    std::printf("%s: DRAM %.3f / %.3f, lookup misses %.3f / %.3f, fabric %.3f / %.3f (GPU / model)\n",
                row.c_str(), gpu.dram_read, model.dram_read, gpu.lookup_misses, model.lookup_misses,
                gpu.fabric_sectors, model.fabric_sectors);
    for (const auto& [measured, simulated] : {std::pair{gpu.dram_read, model.dram_read},
                                              {gpu.lookup_misses, model.lookup_misses},
                                              {gpu.fabric_sectors, model.fabric_sectors}}) {
      EXPECT_LE(simulated, measured + 0.005) << row;
      EXPECT_GE(simulated, measured - 0.08) << row;
    }
    // Alone, the GPU's last read fetches A's home lines from DRAM and its copies through the fabric alike.
    if (r.other_reads == '0') {
      const double first_fabric = (2 * r.part + r.c) / 2 / kSector;
      EXPECT_NEAR(r.extra_over_part, (r.fabric_sectors - first_fabric) / a_sectors, 0.01) << row;
    }
  }
}

// How much of a partition a read stream keeps (`SET=knee` of validation/run_l2_coherence_probe.sh on two
// H200s, 2026-12-01: validation/data/h200_l2_knee_probe{,_rep}.csv; `SET=kneefine` on a third,
// h200_l2_kneefine_probe.csv): SM 128 (or SM 4, the other partition) reads X (26 to 40 MiB), then its older
// half backwards; the backward read's misses are the lines past what each set keeps. The GPU loses nothing
// at 26-28.25 MiB, 0.19 / 0.33 / 0.61 MiB at 28.5 / 28.75 / 29, 0.59-0.73 at 29.25-30, and from 32 MiB on
// (up to 40) 0.64-0.69 MiB more than the overflow past 30 MiB, on both partitions: its partitions keep
// ~29.35 MiB of the stream. The model keeps all 30 from 32 MiB on (its sets, filled a little unevenly,
// lose 0.12-0.94 MiB at 28.25-30, 0.47 past the overflow at 31). With X starting 1 MiB into its allocation
// (h200_l2_kneefine_offset_probe.csv) the GPU's knee comes later (0.02 / 0.12 MiB lost at 28.5 / 29, 1.04 at
// 30) and the model's earlier (0.50 / 0.67, 1.06): its sets follow the pages otherwise than the GPU's. At
// five starts 0.25-1.5 MiB in (`SET=kneeoffsets`, h200_l2_kneeoffsets_probe.csv, a fourth H200) the GPU's
// knee moves by up to half a MiB, but at 31 and 32 MiB every start loses alike (1.66-1.67, 2.65-2.68 MiB):
// the shortfall is fixed; the model loses 1.46-1.60 and 2.12-2.42 there.
// After a kernel that read 256 MiB, with no flush between (`SET=kneeclean`, h200_l2_kneeclean_probe.csv),
// the GPU loses more below 34 MiB (0.29 MiB at 26, 0.99 at 29: some of the old lines outlast the probe's,
// which LRU would not allow) and the same 0.66 past the overflow at 34. What takes the 0.65 MiB is not
// known; the read-only probe writes 0.6-1.4 MB to DRAM too (docs/chip.md, "A partition keeps 29.3 MiB of a
// stream").
struct KneeRow {
  std::string file;
  int owner_sm;
  double mib, lost_mib;  // X, and the backward read's lookup misses past X's first reads
  uint64_t offset;       // where X starts in its allocation
};

std::vector<KneeRow> knee_rows() {
  std::vector<KneeRow> rows;
  for (const char* file :
       {"h200_l2_knee_probe.csv", "h200_l2_knee_probe_rep.csv", "h200_l2_kneeclean_probe.csv",
        "h200_l2_kneefine_probe.csv", "h200_l2_kneefine_offset_probe.csv", "h200_l2_kneeoffsets_probe.csv"})
    for (const ProbeRow& r : probe_rows(file)) {
      const double first_sectors = (2 * r.part + r.c) / kSector;
      const bool one_mib_in = std::string(file).find("offset_probe") != std::string::npos;
      rows.push_back({file, r.other_sm == 4 ? 128 : 4, 2 * r.part / (1 << 20),
                      (r.lookup_miss_sectors - first_sectors) * kSector / (1 << 20),
                      one_mib_in ? uint64_t{1} << 20 : r.offset});
    }
  return rows;
}

// The backward read's lookup misses past X's first reads in the model, MiB.
double simulated_knee_loss(const L2Cache::Params& h200, const KneeRow& r) {
  const double part = r.mib * (1 << 20) / 2;
  const ShareRun model = simulated_share(h200, {4, '0', part, 16384, 0, 0, 0, 0}, r.offset);
  return (model.lookup_misses * part / kSector - (2 * part + 16384) / kSector) * kSector / (1 << 20);
}

TEST(L2, APartitionKeepsLessOfAStreamThanItsShare) {
  const L2Cache::Params h200 = h200_l2_params();
  const auto rows = knee_rows();
  ASSERT_EQ(rows.size(), 96u);
  std::map<std::pair<double, uint64_t>, double> model_lost;  // the model's sets are the same for either SM
  for (const KneeRow& r : rows) {
    const auto key = std::pair{r.mib, r.offset};
    if (!model_lost.count(key)) model_lost[key] = simulated_knee_loss(h200, r);
    const double overflow = std::max(0.0, r.mib - 30), model = model_lost[key];
    const std::string row =
        r.file + ", SM " + std::to_string(r.owner_sm) + ", " + std::to_string(r.mib).substr(0, 5);
    std::printf("%s MiB, %llu B in: lost %.3f MiB (model %.3f)\n", row.c_str(),
                static_cast<unsigned long long>(r.offset), r.lost_mib, model);
    const bool after_other_lines = r.file.find("clean") != std::string::npos;
    const bool offsets = r.file.find("offsets") != std::string::npos;
    if (r.mib >= (after_other_lines ? 34 : 32)) {             // past every set's room
      EXPECT_NEAR(r.lost_mib - overflow, 0.66, 0.06) << row;  // the GPU: ~0.66 MiB short
      // the model: none, or what its sets lack at some starts (0.12-0.42 MiB at 32 MiB)
      EXPECT_NEAR(model - overflow, offsets ? 0.25 : 0.0, offsets ? 0.2 : 0.03) << row;
    }
    if (after_other_lines) continue;  // below 34 MiB the old lines take room too (docs/chip.md)
    if (offsets) {  // below 32 MiB: printed (docs/chip.md); at 31 MiB every start loses alike on the GPU
      if (r.mib == 31) {
        EXPECT_NEAR(r.lost_mib, 1.665, 0.02) << row;
      }
      continue;
    }
    if (r.offset != 0) {  // 1 MiB in: the GPU's knee comes later, the model's earlier
      if (r.mib <= 29) {
        EXPECT_LT(r.lost_mib, 0.15) << row;
        EXPECT_GT(model, r.lost_mib + 0.3) << row;
      } else if (r.mib >= 30) {
        EXPECT_NEAR(model, r.lost_mib, 0.1) << row;
      }
      continue;
    }
    if (r.mib <= 26) {
      EXPECT_LT(r.lost_mib, 0.05) << row;
    } else if (r.mib <= 30.5) {
      EXPECT_NEAR(model, r.lost_mib, 0.3) << row;
    }
  }
}

// Tags are four bytes (a set's tags in one host cache line): the last line they can name is the limit of
// the address space, and an access beyond it is refused, not aliased onto a lower line.
TEST(L2, AnAddressBeyondWhatItsTagsNameIsRefused) {
  Rig rig(tiny(4, 16));
  const uint64_t last_line = (uint64_t{1} << 32) - 2;
  EXPECT_NO_THROW(rig.l2.access(range(last_line * kLine, kLine), 0));
  EXPECT_THROW(rig.l2.access(range((last_line + 1) * kLine, kLine), 0), std::out_of_range);
  EXPECT_THROW(rig.l2.access(range(last_line * kLine, 2 * kLine), 0), std::out_of_range);
}

// max_dirty_ways: a set holding that many dirty lines writes the oldest other one back when one more
// becomes dirty; it stays valid (a later read hits).
TEST(L2, DirtyLinesPerSetAreBounded) {
  L2Cache::Params p = tiny(4, 1);  // one set of 4 ways
  p.max_dirty_ways = 2;
  Rig rig(p);
  for (uint64_t line = 0; line < 3; ++line) rig.l2.access(range(line * kLine, kLine, true), 0);
  EXPECT_EQ(rig.dram.written, static_cast<uint64_t>(kLine));  // line 0, the oldest, went early
  EXPECT_EQ(rig.l2.eager_writebacks, 1u);
  rig.l2.access(range(0, kLine), 0);
  EXPECT_EQ(rig.dram.read, 0u);  // still valid
  EXPECT_EQ(rig.l2.dirty_bytes_per_tensor()[0], 2u * kLine);
}

// dirty_second_chance: the oldest line of a full set, dirty, is written back and kept; the next oldest
// leaves instead. Without it (none) the dirty line leaves.
TEST(L2, ADirtyVictimIsWrittenBackAndKept) {
  using Chance = L2Cache::Params::SecondChance;
  for (Chance chance : {Chance::None, Chance::All}) {
    const bool kept = chance == Chance::All;
    L2Cache::Params p = tiny(4, 1);  // one set of 4 ways
    p.dirty_second_chance = chance;
    Rig rig(p);
    rig.l2.access(range(0, kLine, true), 0);  // line 0, dirty
    for (uint64_t line = 1; line < 5; ++line) rig.l2.access(range(line * kLine, kLine), 0);
    EXPECT_EQ(rig.dram.written, static_cast<uint64_t>(kLine)) << kept;
    EXPECT_EQ(rig.l2.second_chances, kept ? 1u : 0u);
    const uint64_t before = rig.dram.read;
    rig.l2.access(range(0, kLine), 0);
    EXPECT_EQ(rig.dram.read - before, kept ? 0u : static_cast<uint64_t>(kLine)) << kept;
    rig.l2.access(range(kLine, kLine), 0);  // line 1 left in its place
    EXPECT_EQ(rig.dram.read - before, static_cast<uint64_t>(kept ? kLine : 2 * kLine)) << kept;
    EXPECT_EQ(rig.l2.dirty_bytes_per_tensor()[0], 0u);
  }
}

// far_writes: only a line last dirtied by a core attached to the other partition gets the second chance.
// Two partitions of one 4-way set each; the written line is homed in partition 0 and written by core 1 (far)
// or core 0 (near), then four other lines homed there are read by core 0.
TEST(L2, OnlyAFarWrittenVictimIsKept) {
  for (int writer : {0, 1}) {
    L2Cache::Params p = tiny(4, 1, 2);
    p.dirty_second_chance = L2Cache::Params::SecondChance::FarWrites;
    Rig rig(p);
    std::vector<uint64_t> homed_near;  // lines homed in partition 0
    for (uint64_t line = 0; homed_near.size() < 5; ++line)
      if (rig.l2.partition_of(line * kLine) == 0) homed_near.push_back(line * kLine);
    MemAccess write = range(homed_near[0], kLine, true);
    write.core = writer;
    rig.l2.access(write, 0);
    for (size_t i = 1; i < 5; ++i) rig.l2.access(range(homed_near[i], kLine), 0);
    const bool far = writer == 1;
    EXPECT_EQ(rig.l2.second_chances, far ? 1u : 0u) << writer;
    const uint64_t before = rig.dram.read;
    rig.l2.access(range(homed_near[0], kLine), 0);
    EXPECT_EQ(rig.dram.read - before, far ? 0u : static_cast<uint64_t>(kLine)) << writer;
  }
}

// Page records make whole-page reads faster and victim orders misses: a random mix of whole-page, partial
// and strided reads and writes from cores on both partitions, through an L2 small enough to evict all the
// time, gives every count, every completion cycle and every line's fate the same with neither, with page
// records, and with both, in both far-data modes, each replacement (LRU, FIFO, tree pseudo-LRU), with each
// of the dirty victims' second-chance rules, each rule for the copies a store finds (copies dropped out of a
// page's record), atomic reads served at home, acquiring reads that drop stale copies, and at 1, 2 and 4
// ways (few ways: a page's own lines evict each other while it is read) and 16 (a whole victim order).
TEST(L2, PageRecordsAndVictimOrdersChangeNoFigure) {
  for (int64_t ways : {1, 2, 4, 16})
    for (auto far : {L2Cache::FarData::Home, L2Cache::FarData::Copy})
      for (auto replacement :
           {L2Cache::Replacement::Lru, L2Cache::Replacement::Fifo, L2Cache::Replacement::TreePlru}) {
        // every setting over the ways and far-data modes, without tripling the run
        using Chance = L2Cache::Params::SecondChance;
        const Chance chance = ways == 1 ? Chance::All : ways == 2 ? Chance::None : Chance::FarWrites;
        const int combination = (ways == 1   ? 0
                                 : ways == 2 ? 1
                                 : ways == 4 ? 2
                                             : 3) +
                                static_cast<int>(far) * 2 + static_cast<int>(replacement);
        const auto on_store = static_cast<L2Cache::Params::CopiesOnStore>(combination % 5);
        std::vector<std::vector<uint64_t>> figures[3];
        for (int speedups : {0, 1, 2}) {
          L2Cache::Params p = tiny(ways, 64 / ways, 2);
          p.far_data = far;
          p.replacement = replacement;
          p.max_dirty_ways = std::max<int64_t>(1, ways - 1);
          p.page_records = speedups >= 1;
          p.victim_orders = speedups >= 2;
          p.dirty_second_chance = chance;
          p.copies_on_store = on_store;
          p.atomics_at_home = far == L2Cache::FarData::Copy;
          Rig rig(p);
          std::mt19937_64 random(7);
          std::vector<uint64_t> done;
          constexpr uint64_t kPage = 16 * kLine, kPages = 12;  // 24 KiB over a 16 KiB L2
          for (int i = 0; i < 40000; ++i) {
            const uint64_t page = random() % kPages, kind = random() % 8;
            MemAccess a{0, page * kPage, 1, kPage, kPage, false, static_cast<int>(random() % 4)};
            if (kind == 5) a = MemAccess{0, page * kPage + 96, 3, 200, 640, false, a.core};  // rows, sectors
            if (kind == 4) a.atomic_read = random() % 2 == 0;  // read at home, whole page
            if (kind == 3) a.acquire = true;                   // a stale copy fetched again
            if (kind == 6) a = MemAccess{0, page * kPage + 256, 2, 512, 1024, true, a.core};
            if (kind == 7)
              a = MemAccess{0, page % (kPages - 2) * kPage, 1, 3 * kPage, 3 * kPage, false, a.core};
            done.push_back(rig.l2.access(a, static_cast<uint64_t>(i) * 50));
          }
          L2Cache& l2 = rig.l2;
          figures[speedups] = {
              done,
              l2.read_hit_sectors,
              l2.read_miss_sectors,
              l2.write_hit_sectors,
              l2.writeback_bytes,
              l2.dirty_bytes_per_tensor(),
              {l2.evictions, l2.fabric_read_sectors, l2.eager_writebacks, l2.second_chances, rig.dram.read,
               rig.dram.written, l2.fabric_write_sectors, l2.lookup_read_miss_sectors, l2.invalidated_copies,
               l2.updated_copy_sectors, l2.demoted_copies, l2.refetched_stale_copies}};
        }
        EXPECT_EQ(figures[0], figures[1])
            << "page records, " << ways << " ways, far_data " << static_cast<int>(far) << ", replacement "
            << static_cast<int>(replacement) << ", copies_on_store " << static_cast<int>(on_store);
        EXPECT_EQ(figures[1], figures[2])
            << "victim orders, " << ways << " ways, far_data " << static_cast<int>(far) << ", replacement "
            << static_cast<int>(replacement) << ", copies_on_store " << static_cast<int>(on_store);
        EXPECT_GT(figures[0][6][0], 1000u);  // evictions: the records were dropped and made again
        if (chance != Chance::None && ways > 1) {
          EXPECT_GT(figures[0][6][3], 1000u);  // dirty victims kept
        }
        using Rule = L2Cache::Params::CopiesOnStore;
        if (far == L2Cache::FarData::Copy &&
            (on_store == Rule::Invalidate || on_store == Rule::WriterKeeps)) {
          EXPECT_GT(figures[0][6][8], 100u);  // copies dropped
        }
        if (far == L2Cache::FarData::Copy && on_store == Rule::Update) {
          EXPECT_GT(figures[0][6][9], 100u);  // copies updated
        }
        if (far == L2Cache::FarData::Copy && on_store == Rule::Demote) {
          EXPECT_GT(figures[0][6][10], 100u);  // copies made their set's oldest
        }
        if (far == L2Cache::FarData::Copy && (on_store == Rule::Keep || on_store == Rule::Demote)) {
          EXPECT_GT(figures[0][6][11], 50u);  // stale copies fetched again
        }
      }
}

}  // namespace

// A coherence probe's turns on the H200's L2: SM 128 is core 0, the other SM core 1 across the fabric (SMs 4
// and 5) or core 2 beside it (core % 2 is a core's partition); A and B `part` bytes from address 0, C after.
struct TurnRig {
  TurnRig(const L2Cache::Params& h200, const ProbeRow& r)
      : rig(h200),
        part(static_cast<uint64_t>(r.part)),
        c(static_cast<uint64_t>(r.c)),
        other(r.other_sm == 4 || r.other_sm == 5 ? 1 : 2) {}
  void read(uint64_t addr, uint64_t size, int core) {
    rig.l2.access(MemAccess{0, addr, 1, size, size, false, core}, 0);
  }
  // DRAM reads past A + B + C, over A (A's lines read from DRAM again).
  double extra_over_part() const {
    return (static_cast<double>(rig.dram.read) - 2.0 * static_cast<double>(part) - static_cast<double>(c)) /
           static_cast<double>(part);
  }
  Rig rig;
  uint64_t part, c;
  int other;
};

// Where a read across the fabric leaves A's home lines as C grows (`SET=refreshsweep` of
// validation/run_l2_coherence_probe.sh, validation/data/h200_l2_refreshsweep_probe.csv, an H200,
// 2026-12-02, 43 s): SM 128 reads A and B (0.4 of a partition each), SM 4 (across the fabric) or SM 0
// (beside it) reads A, SM 128 reads C (0.45 to 0.85 of a partition) and A again. The DRAM reads past A + B
// + C are A's home lines lost. The GPU starts losing them between C = 0.5 and 0.55 with SM 4 and grows to
// 0.48 of A at 0.85; with SM 0 (A's copies kept young too) it loses more at every C up to the 0.5 of A its
// home lines are. The model on the H200 preset's L2 (a fetch across the fabric a use of the home line,
// LRU) follows every row within 0.13 of A (RMS 0.049), a few hundredths short near the knee; with the
// partition 2.2% smaller (61,603,840 bytes: the knee probe's 0.65 MiB) RMS 0.023. A far fetch that only
// half renews the home line's age (a temporary switch, stamp halfway to now) would lose 0.13-0.21 of A at
// C = 0.45-0.5 where the GPU loses 0.002: the refresh is whole (docs/chip.md).
double simulated_refresh_sweep_extra(const L2Cache::Params& h200, const ProbeRow& r) {
  TurnRig t(h200, r);
  t.read(0, 2 * t.part, 0);                              // SM 128: A, then B
  if (r.other_reads == '1') t.read(0, t.part, t.other);  // the other SM: A
  t.read(2 * t.part, t.c, 0), t.read(0, t.part, 0);      // SM 128: C, then A again
  return t.extra_over_part();
}

TEST(L2, AFarFetchRenewsTheHomeLineWholeAsCGrows) {
  const auto rows = probe_rows("h200_l2_refreshsweep_probe.csv");
  ASSERT_EQ(rows.size(), 21u);
  const L2Cache::Params h200 = h200_l2_params();
  L2Cache::Params smaller = h200;
  smaller.capacity_bytes = 61603840;
  double preset_error = 0, smaller_error = 0;
  std::map<double, double> across, beside;  // C over a partition: the GPU's extra over A
  for (const ProbeRow& r : rows) {
    const double model = simulated_refresh_sweep_extra(h200, r);
    const double cut = simulated_refresh_sweep_extra(smaller, r);
    const std::string row = "SM " + std::to_string(r.other_sm) +
                            (r.other_reads == '1' ? " reads A" : " idle") +
                            ", C = " + std::to_string(r.c / kH200Partition).substr(0, 4);
    std::printf("%s: GPU %.3f, model %.3f, 2.2%% smaller %.3f\n", row.c_str(), r.extra_over_part, model, cut);
    EXPECT_NEAR(model, r.extra_over_part, 0.13) << row;
    EXPECT_LE(model, r.extra_over_part + 0.005) << row;  // never more than the GPU loses
    preset_error += (model - r.extra_over_part) * (model - r.extra_over_part);
    smaller_error += (cut - r.extra_over_part) * (cut - r.extra_over_part);
    if (r.other_reads == '0') {
      EXPECT_NEAR(r.extra_over_part, 0.5, 0.01) << row;  // nothing renewed A: its home half comes again
    } else {
      (r.other_sm == 4 ? across : beside)[std::round(r.c / kH200Partition * 20) / 20] = r.extra_over_part;
    }
  }
  const double n = static_cast<double>(rows.size());
  EXPECT_NEAR(std::sqrt(preset_error / n), 0.049, 0.005);
  EXPECT_NEAR(std::sqrt(smaller_error / n), 0.023, 0.005);  // the knee probe's shortfall fits better here
  ASSERT_EQ(across.size(), 9u);
  EXPECT_LT(across.at(0.5), 0.01);  // up to C = 0.5 the far fetch kept every home line of A
  EXPECT_GT(across.at(0.55), 0.01);
  for (const auto& [c, extra] : across) EXPECT_LE(extra, beside.at(c) + 0.005) << c;
}

// Whether a hit on a copy is a use of the home line (`SET=copyhit` of validation/run_l2_coherence_probe.sh,
// validation/data/h200_l2_copyhit_probe.csv, an H200, GPU-2eeea175, 2026-12-02): SM 128 reads A, SM 4 (across
// the fabric) reads A, SM 128 reads B, SM 4 reads A again (reads3: every sector a hit on its copies,
// nothing crosses the fabric) or not (reads4), then SM 128 reads C (0.5 to 0.8 of a partition) and A
// backwards. The GPU reads the same from DRAM either way (within 0.02 of A): the hits on the copies do not
// keep A's home lines young, and C takes them before B as if SM 4 had not read A again. With SM 0 (SM 128's
// partition) reading A again instead, those hits are near and keep A. The model runs the same sequences
// (a copy's hit renews the copy only; a temporary switch renewing the home line too moved the
// memory-efficient backward's causal row at 1 x 1 x 28,672 from 0.87 to 1.05 of the GPU: ruled out here).
double simulated_copy_hit_extra(const L2Cache::Params& h200, const ProbeRow& r) {
  TurnRig t(h200, r);
  t.read(0, t.part, 0), t.read(0, t.part, t.other), t.read(t.part, t.part, 0);
  if (r.other_reads == '3') t.read(0, t.part, t.other);
  t.read(2 * t.part, t.c, 0);
  constexpr uint64_t kChunk = 16384;  // the probe's step: 1,024 threads x 16 bytes
  for (uint64_t end = t.part; end > 0; end -= kChunk) t.read(end - kChunk, kChunk, 0);  // A backwards
  return t.extra_over_part();
}

TEST(L2, AHitOnACopyLeavesTheHomeLineAsItWas) {
  const auto rows = probe_rows("h200_l2_copyhit_probe.csv");
  ASSERT_EQ(rows.size(), 9u);
  const L2Cache::Params h200 = h200_l2_params();
  // C over a partition -> extra over A, with SM 4's second read of A and without: the GPU's, the model's.
  std::map<double, double> gpu_again, gpu_once, model_again, model_once;
  for (const ProbeRow& r : rows) {
    const double model = simulated_copy_hit_extra(h200, r);
    const double c = std::round(r.c / kH200Partition * 10) / 10;
    std::printf("SM %d, reads%c, C = %.1f: GPU %.3f, model %.3f\n", r.other_sm, r.other_reads, c,
                r.extra_over_part, model);
    // Within 0.06 and never above: the GPU's partitions keep a little less than 30 MiB under LRU would
    // (docs/chip.md, "A far fetch renews the home line whole").
    EXPECT_NEAR(model, r.extra_over_part, 0.06);
    EXPECT_LE(model, r.extra_over_part + 0.005);
    if (r.other_sm == 4) {
      (r.other_reads == '3' ? gpu_again : gpu_once)[c] = r.extra_over_part;
      (r.other_reads == '3' ? model_again : model_once)[c] = model;
    } else {
      EXPECT_LT(r.extra_over_part, 0.1);  // SM 0's hits are near: they keep A's lines
    }
  }
  ASSERT_EQ(gpu_again.size(), 4u);
  for (const auto& [c, extra] : gpu_again) {
    // The copies' hits renewed nothing at home: C took A's home half (0.4-0.5 of A) either way, where
    // renewed home lines would have outlasted B up to C = 0.8 (next to nothing from DRAM again).
    EXPECT_GT(extra, 0.35) << c;
    EXPECT_NEAR(extra, gpu_once.at(c), 0.06) << c;
    EXPECT_GT(model_again.at(c), 0.35) << c;
    EXPECT_NEAR(model_again.at(c), model_once.at(c), 0.02) << c;
  }
}

// The request coalescer (coalescer_entries): core 1 asks for a page core 0 is still waiting for. It rides
// on core 0's request: no lookup (neither hit nor miss), no second DRAM read, its data when core 0's come,
// and its sectors still in the cores' reads. Once core 0's data are back the next read looks the page up.
L2Cache::Params coalescing(L2Cache::Params p) {
  p.coalescer_entries = 64;
  return p;
}

constexpr uint64_t kPage = 16 * kLine;

// Core `core` reads the first page at `cycle`; returns when its data are back.
uint64_t read_first_page(Rig& rig, int core, uint64_t cycle) {
  return rig.l2.access(MemAccess{0, 0, 1, kPage, kPage, false, core}, cycle);
}

TEST(L2, AReadOfLinesInFlightRidesOnTheirRequest) {
  Rig rig(coalescing(tiny(4, 16)));
  const uint64_t page = kPage;
  const uint64_t leader_done = read_first_page(rig, 0, 0);
  ASSERT_GT(leader_done, 1000u);  // a miss: the recorder's DRAM answers 1000 cycles after the request
  EXPECT_EQ(read_first_page(rig, 1, 100), leader_done);
  EXPECT_EQ(rig.l2.coalesced_read_sectors, page / kSector);
  EXPECT_EQ(rig.l2.read_sectors[0], 2 * page / kSector);
  EXPECT_EQ(rig.l2.read_hit_sectors[0] + rig.l2.read_miss_sectors[0], page / kSector);
  EXPECT_EQ(rig.dram.read, page);
  // One line of the page rides too; a range reaching into the next page rides only where it is led.
  EXPECT_EQ(rig.l2.access(MemAccess{0, 3 * kLine, 1, kLine, kLine, false, 2}, 200), leader_done);
  rig.l2.access(MemAccess{0, 15 * kLine, 1, 2 * kLine, 2 * kLine, false, 3}, 300);
  EXPECT_EQ(rig.l2.coalesced_read_sectors, (page + 2 * kLine) / kSector);
  EXPECT_EQ(rig.dram.read, page + kLine);
  // After the leader's data are back: a lookup, a hit.
  const uint64_t hits = rig.l2.read_hit_sectors[0];
  read_first_page(rig, 1, leader_done + 1);
  EXPECT_EQ(rig.l2.read_hit_sectors[0], hits + page / kSector);
  EXPECT_EQ(rig.l2.coalesced_read_sectors, (page + 2 * kLine) / kSector);
}

// Under temporal decoupling a request may be served after one issued later in simulated time. The two
// still merge when their flights overlap; the earlier takes its data as much sooner as it was issued
// before the one that looked the page up (the request it would have led).
TEST(L2, AnEarlierRequestServedLateRidesOnTheLaterOne) {
  Rig rig(coalescing(tiny(4, 16)));
  const uint64_t leader_done = read_first_page(rig, 0, 5000);
  ASSERT_LT(leader_done, 7000u);
  EXPECT_EQ(read_first_page(rig, 1, 4800), leader_done - 200);
  EXPECT_EQ(rig.l2.coalesced_read_sectors, kPage / kSector);
  // Issued so much earlier that the flights do not overlap: a lookup of its own.
  const uint64_t lookups = rig.l2.read_hit_sectors[0] + rig.l2.read_miss_sectors[0];
  read_first_page(rig, 2, 2000);
  EXPECT_EQ(rig.l2.coalesced_read_sectors, kPage / kSector);
  EXPECT_EQ(rig.l2.read_hit_sectors[0] + rig.l2.read_miss_sectors[0], lookups + kPage / kSector);
}

// Without a coalescer (the default) every request is looked up; and cores attached to different
// partitions never merge, since each asks its own partition.
TEST(L2, OnlyCoresOfOnePartitionMergeAndOnlyWithACoalescer) {
  for (uint64_t entries : {uint64_t{0}, uint64_t{64}}) {
    L2Cache::Params p = two_partitions_with_copies();
    p.coalescer_entries = entries;
    Rig rig(p);
    read_first_page(rig, 0, 0);
    read_first_page(rig, 1, 10);  // the other partition
    EXPECT_EQ(rig.l2.coalesced_read_sectors, 0u);
    read_first_page(rig, 2, 20);  // core 0's partition
    EXPECT_EQ(rig.l2.coalesced_read_sectors, entries ? kPage / kSector : 0u) << entries;
  }
}

TEST(L2, TheCoalescerTracksAPowerOfTwoOfPages) {
  L2Cache::Params p = tiny(4, 16);
  p.coalescer_entries = 48;
  EXPECT_THROW(L2Cache("l2", p), std::invalid_argument);
}

}  // namespace attnsim
