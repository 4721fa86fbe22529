// The shared L2 of a chip, in front of DRAM: sectored lines (valid and dirty bits per sector), set
// associative with hashed set indices, LRU, FIFO or tree pseudo-LRU replacement, write-back with
// write-allocate (a write needs no DRAM read: sectors carry byte masks on a GPU, modelled as whole sectors),
// split into partitions by address, each with its own bandwidth. Misses go to the level behind (DRAM) as
// contiguous runs of sectors; evicted dirty sectors are written back. Every count is kept per tensor.
//
// Partitions: every line has a home partition (hashed address), the only one that talks to DRAM for it.
// With `far_data: copy` (Ampere and Hopper) a core's requests go to the partition it is attached to, which
// also keeps copies of lines homed in the other partition; a miss there crosses the fabric to the home
// partition, and a miss at home reaches DRAM. Data read by every SM then occupies both partitions, halving
// the capacity it sees (measured: Nsight Compute's lts__t_sectors_srcunit_ltcfabric equals the DRAM reads).
// Writes go to the home partition, and with `store_copies` leave a copy in the writer's partition too; what
// they do to copies the other partition holds is `copies_on_store`; a load under a lock fetches a copy made
// stale by such a store again
// (`acquire_refetches`). An atomic's read (red.global) is served at home too (`atomics_at_home`): the GPU
// adds there, so no copy is made. With `far_data: home` a line lives only in its home
// partition and far cores reach it there. `max_dirty_ways` bounds the dirty lines per set (measured on the
// H100: about 43% of the L2 stays dirty, whichever SMs write).
//
// Pages: a read that covers an aligned page of kPageLines lines, all of them present and fully valid in
// the partitions that serve it, is a hit on every line and changes nothing but their LRU stamps. After one
// such page has been read line by line it gets a record (the lines point to it); later reads of the whole
// page update the record's stamp once instead of searching a set per line (a host-cache miss each: the
// L2's state is megabytes). A line's LRU stamp is the later of its own and the one its record implies, the
// very value the line-by-line path would have written. An evicted line leaves its page's record; the next
// whole-page read through the record searches only for the lines that left. A read finds a page's record
// through a small table of hints keyed by the page (checked against the record's own key), else through
// its first line: under LRU the first line is the one that leaves first. Every figure is the same as
// without records (page_records: false), only faster.
//
// A miss's victim is the set's oldest line. Each set keeps the order of its lines from its last full search
// (VictimOrder); until a victim has been touched since, the next one is read from it (victim_orders).
//
// Timing: an access books its bytes on the calendars of the partitions it touches (requests arrive out of
// time order under temporal decoupling: bandwidth_calendar.h), pays the hit latency (plus the far-partition
// latency when the core is attached to the other partition), and waits for its missed sectors from DRAM.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/common/bandwidth_calendar.h"
#include "models/common/component.h"
#include "models/common/host_table.h"
#include "models/common/memory_level.h"
#include "models/common/params.h"
#include "models/common/registry.h"
#include "models/l2/request_coalescer.h"

namespace attnsim {

class L2Cache : public Component, public MemoryLevel {
 public:
  enum class Replacement : uint8_t { Lru, Fifo, TreePlru };
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
    // The L2 runs on its own clock, not the cores': given (> 0), these set the three figures above from
    // the cores' clock (set_core_clock_ghz), so a core that runs slower sees a faster L2 in its cycles.
    double bandwidth_gbps = 0;  // per partition
    double hit_latency_ns = 0;
    double far_latency_ns = 0;
    FarData far_data = FarData::Home;
    int64_t max_dirty_ways = 16;  // = ways: no limit
    // A read of a line whose fill is still in flight waits for it (a miss merge) instead of hitting.
    bool merge_pending_fills = false;
    // Pages of lines the request coalescer tracks in flight (request_coalescer.h): a read of lines another
    // core's read is waiting for, from the same partition, rides on it without a lookup. 0: none.
    uint64_t coalescer_entries = 0;
    // Which dirty lines chosen as the victim are written back and kept, clean and most recently used, the
    // next oldest leaving instead: none (plain LRU), all, or those last dirtied by a core attached to the
    // other partition (measured on the H100: docs/chip.md, "A dirty victim").
    enum class SecondChance : uint8_t { None, All, FarWrites };
    SecondChance dirty_second_chance = SecondChance::None;
    // The partition each core is attached to, one digit per core in the order the block scheduler fills
    // them (core c takes block c of a first wave; spaces ignored); empty: core % partitions.
    std::string core_partitions;
    // far_data: copy only. What a store does to the copies other partitions hold of its line: keep (they
    // stay as they are until evicted), invalidate (dropped), update (the written sectors cross the fabric
    // to every partition holding a copy that the writer is not attached to), writer_keeps (the copy in the
    // writer's partition takes the written sectors, the others are dropped), demote (the copy in the
    // writer's partition takes the written sectors, the others stay valid as their set's oldest line).
    enum class CopiesOnStore : uint8_t { Keep, Invalidate, Update, WriterKeeps, Demote };
    CopiesOnStore copies_on_store = CopiesOnStore::Keep;
    // Where an atomic's read (STORE_ADD with the network's atomics in L2) is served: at the line's home
    // partition, where a GPU executes red.global (no copy made, only the addend crosses the fabric); false:
    // as a core's read, through a copy in its own partition.
    bool atomics_at_home = true;
    // far_data: copy with copies_on_store: keep. A load of a `coherent` tensor (taken under a lock, as an
    // acquire) fetches again from home a copy that a store by a core of another partition has made stale
    // since the copy was filled; other loads are served by the stale copy. false: every load is served by
    // the copy.
    bool acquire_refetches = true;
    // far_data: copy. A store of a line homed in the other partition also leaves a copy of the stored
    // sectors in the writer's partition, taking room there as a read's copy does (measured on the H200:
    // one SM's stores push its earlier reads out as its loads of the same bytes do, docs/chip.md); false:
    // the store reaches the home partition only.
    bool store_copies = false;
    // far_data: copy. Which copies a core's read may use after a GPU-scope fence (MEMBAR.SC.GPU): any
    // (none: fences change nothing), or only those filled or checked at home since the reader's own last
    // fence (own) or since any core's last fence (all). A copy that may not serve the read is checked at
    // home: its sectors cross the fabric again (a lookup hit in the near partition, not a miss), and those
    // its home has lost come from DRAM.
    enum class FenceRevalidates : uint8_t { None, Own, All };
    FenceRevalidates fence_revalidates = FenceRevalidates::None;
    // Sectors a GPU-scope fence (MEMBAR.SC.GPU) sends between the partitions, whatever was read or written
    // before it: counted with the fabric sectors, no line moved (the H100: 160 a fence, measured).
    uint64_t fence_fabric_sectors = 0;
    // far_data: copy. Where a line that a far core's miss brings into its home partition goes in that
    // partition's replacement order: recent (as any fill) or oldest (the next victim of its set unless
    // touched again: the requester keeps the copy it reads).
    bool far_fills_oldest = false;
    // Which partition is a line's home. hashed: a multiplicative hash of the line index, half and half;
    // address_parity (two partitions): the parity of home_bits and of a hash of the 2 MiB page, as the
    // H200's line maps and the H100's chunk probes show within a page (docs/chip.md, "Sets line by line").
    enum class Home : uint8_t { Hashed, AddressParity };
    Home home = Home::Hashed;
    // address_parity: the address bits (within a 2 MiB page, as a mask) whose parity picks the home. The
    // H200's 12, 13, 15, 17, 19; the H100's 12, 13, 16, 17, 19 (the chunk probes' near blocks, every page).
    uint32_t home_bits = (1u << 12) | (1u << 13) | (1u << 15) | (1u << 17) | (1u << 19);
    // paired_regions: the address bits a line's partner differs in (a mask; an odd number of them among
    // home_bits, so the partner is homed in the other partition). The H200's copies land 34, 72, 178 or 400
    // lines away (the model takes 34: bits 8 and 12); the H100's 328 lines away (bits 10, 13, 15).
    uint32_t partner_bits = (1u << 8) | (1u << 12);
    // How a partition's sets are dealt. hashed: a multiplicative hash of the line index. paired_regions
    // (home: address_parity): a line and its partner (partner_bits flipped, homed in the other partition)
    // share a set index, so a partition's copy of the partner lands beside its own line; and regions of
    // consecutive pairs (the smallest power of
    // two at least the sets) are dealt over the sets in order, each region's pairs in a seeded order of its
    // own: contiguous memory fills the sets evenly, pieces of it do not (docs/chip.md, "Sets line by line").
    enum class SetIndex : uint8_t { Hashed, PairedRegions };
    SetIndex set_index = SetIndex::Hashed;
    // paired_regions: the bytes of memory whose pairs are dealt over consecutive sets as one region; 0: the
    // smallest power of two of pairs at least the sets (4 MiB on the H200). A region of one 2 MiB page lets
    // contiguous memory from any page fill the sets evenly.
    uint64_t region_bytes = 0;
    // Where the pages lie: the GPU hashes physical addresses, which differ from process to process, so the
    // page hashes of address_parity and paired_regions take this seed in (0: the model's fixed placement;
    // another seed stands for another process's, to see how much a figure moves with where memory lies).
    uint64_t page_seed = 0;
    // Page records (below): simulation speed only, every figure the same without them (tested).
    bool page_records = true;
    // Victim orders (VictimOrder, below): simulation speed only, every figure the same without them (tested).
    bool victim_orders = true;
  };
  L2Cache(sc_core::sc_module_name instance, const Params& params, double core_clock_ghz = 1.0);
  const Params& params() const { return params_; }
  // The cores' clock: converts the time-domain parameters (bandwidth_gbps, *_latency_ns) into core cycles.
  // The latencies apply at once, the bandwidth from the next reset() (which builds the calendars).
  void set_core_clock_ghz(double ghz);

  // The level misses and write-backs go to; must be set before the first access.
  void set_next(MemoryLevel* next) { next_ = next; }
  // Invalidates everything and sizes the per-tensor ledgers (a program starts with a cold L2).
  void reset(const std::vector<std::string>& tensor_names);
  // Between kernels: writes back and invalidates every line. The write-back is not timed and not counted as
  // DRAM traffic of any kernel (as Nsight Compute's --cache-control all); it is counted here per tensor.
  void flush();
  // Dirty bytes now in L2 per tensor (not yet written to DRAM).
  std::vector<uint64_t> dirty_bytes_per_tensor() const;
  // Bytes of each tensor now valid in L2, a line held by both partitions counted once.
  std::vector<uint64_t> resident_bytes_per_tensor() const;
  // At a kernel's end: adds what is dirty and what is resident to the ledgers below.
  void record_kernel_end();

  uint64_t access(const MemAccess& access, uint64_t issue_cycle) override;
  uint64_t last_accepted_cycle() const override { return accepted_; }
  void fence(int core) override;
  void forget_before(uint64_t cycle);  // no access will arrive before `cycle` any more
  int partition_of(uint64_t addr) const;
  // Throws std::invalid_argument (the message starting with the key) unless the home and partner bits
  // can home a line and its partner apart; returns the partner's bit among the home bits under
  // paired_regions, else 0 (no pair is formed).
  static int check_address_bits(const Params& p);
  int near_partition(int core) const {
    return attached_.empty() ? core % static_cast<int>(params_.partitions)
                             : attached_[static_cast<size_t>(core)];
  }
  // Cores named by core_partitions (0: every core, as core % partitions).
  size_t attached_cores() const { return attached_.size(); }

  std::vector<std::string> tensor_names;
  std::vector<uint64_t> read_sectors, write_sectors;          // requested by the cores, per tensor
  std::vector<uint64_t> read_hit_sectors, read_miss_sectors;  // per tensor
  std::vector<uint64_t> write_hit_sectors, write_miss_sectors;
  std::vector<uint64_t> writeback_bytes;      // dirty sectors evicted to DRAM during kernels, per tensor
  std::vector<uint64_t> flushed_dirty_bytes;  // dirty sectors written back by flush() between kernels
  std::vector<uint64_t> resident_bytes_at_kernel_end;  // valid sectors when kernels ended, per tensor
  uint64_t evictions = 0;
  uint64_t far_accesses = 0;
  uint64_t fabric_read_sectors = 0;       // copies fetched from the home partition (far_data: copy)
  uint64_t lookup_read_miss_sectors = 0;  // missing in the partition a read looked up first
  uint64_t fabric_write_sectors = 0;      // written by cores into the partition they are not attached to
  uint64_t home_lookup_miss_sectors = 0;  // copies' fetches that missed at home too (read from DRAM)
  uint64_t eager_writebacks = 0;          // dirty lines written back early (max_dirty_ways)
  uint64_t second_chances = 0;            // dirty victims written back and kept (dirty_second_chance)
  uint64_t invalidated_copies = 0;        // copies dropped by stores to their lines
  uint64_t updated_copy_sectors = 0;      // sectors stores wrote into copies (copies_on_store: update)
  uint64_t demoted_copies = 0;          // copies made their set's oldest by stores (copies_on_store: demote)
  uint64_t refetched_stale_copies = 0;  // stale copies an acquiring load fetched again (acquire_refetches)
  uint64_t revalidated_copies = 0;      // copies checked at home after a fence (fence_revalidates)
  uint64_t fence_fabric_sectors = 0;    // sectors fences sent between the partitions
  uint64_t coalesced_read_sectors = 0;  // read sectors that rode on another request (no lookup)

 private:
  using Tag = uint32_t;  // line index + 1 (access() refuses addresses beyond it)
  // A line's state; its tag is kept apart (tags_), so the search of a set reads 16 tags in one host cache
  // line instead of the whole state of every way.
  struct Line {
    uint64_t stamp = 0;
    // 1 + index into records_ of the page record covering it; 0: none. A record holds at least one line,
    // so there are never more records than lines, far below 2^30.
    uint32_t record : 30 = 0;
    uint32_t far_written : 1 = 0;  // dirtied by a core attached to the other partition (second chance)
    uint32_t stale : 1 = 0;        // a copy stored to from another partition since it was filled
    int16_t tensor = -1;           // reset() bounds the tensor count
    uint8_t valid = 0, dirty = 0;  // sector masks
  };
  static_assert(sizeof(Line) == 16);
  static constexpr int kPageShift = 4;  // pages of 16 lines: a 2 KiB page at 128-byte lines
  static constexpr uint64_t kPageLines = uint64_t{1} << kPageShift;
  // A record stands for the lines of its page that point to it (present and fully valid): `present`, one
  // bit per line. A line that leaves clears its bit (no search for the page's other lines); the record is
  // freed when none is left. A read of the page through a record with lines missing serves the present
  // ones as hits and fetches the missing ones one by one, in the page's order, as the line-by-line path
  // would (see read_partial_page), and they join the record.
  // Eight bytes, its key apart (record_keys_): the victim search reads the records of a set's lines, and a
  // smaller table stays in the host's caches.
  // base: the clock before the last whole-page read (line k's stamp is base + k + 1; 0: none), 48 bits,
  // 2.8e14 line accesses, far beyond any run; present: the lines pointing to it.
  struct PageRecord {
    uint64_t base : 48 = 0;
    uint64_t present : 16 = 0;
  };
  static_assert(sizeof(PageRecord) == 8);
  static constexpr uint16_t kAllLines = static_cast<uint16_t>((1u << kPageLines) - 1);
  // A set's valid lines from oldest to newest (LRU or FIFO stamps) as of the search that ordered them, when
  // the clock read `clock`: a way, 4 bits, per place. Stamps only grow and every stamp the set's lines get
  // later exceeds `clock`, so the lines still at or below it are untouched and keep their order, and the
  // oldest of them is the set's victim: most searches read a line or two instead of 16. `next`: the places
  // before it have been taken or touched since.
  struct VictimOrder {
    uint64_t ways = 0;
    uint64_t clock : 58 = 0;
    uint64_t next : 5 = 0;
    uint64_t valid : 1 = 0;
  };
  static constexpr int64_t kMaxOrderedWays = 16;
  // A page being read through a partial record: its lines from `position` on still carry the stamps of
  // `old_base`, as the line-by-line path has not reached them yet when an earlier line's miss searches a
  // set for a victim.
  struct PageInProgress {
    uint32_t record = 0;  // 1 + index into records_; 0: none
    uint64_t position = 0, old_base = 0;
  };
  // The line's slot in `partition`, or null when it is not there.
  Line* find_line(int partition, uint64_t line_index);
  uint64_t stamp_of(const Line& line, uint64_t line_index) const;
  int64_t choose_tree_plru_victim(const Tag* tags, const Line* ways) const;
  bool stamps_on_hit() const { return params_.replacement != Replacement::Fifo; }
  // A page's records are per partition group: the serving partition with far_data: copy, else one.
  uint64_t page_key(int near, uint64_t first_line) const;
  // 1 + index of the page's live record, or 0 when the hint table and the first line know none.
  uint32_t record_of_page(int near, uint64_t first_line);
  size_t hint_slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> hint_shift_; }
  // Reads a whole page through its record; false (nothing done) when it has none.
  bool read_recorded_page(int near, uint64_t first_line, int tensor, uint64_t begin, uint64_t end);
  void read_partial_page(int near, uint64_t first_line, int tensor, uint32_t record, uint64_t begin,
                         uint64_t end);
  // Counts `lines` lines of the page as hits served by their partitions.
  void count_page_hits(int near, uint64_t first_line, uint16_t lines, int tensor);
  uint32_t new_record();
  // After a whole page was read line by line (`page`: its lines' slots as the reads left them): gives it a
  // record when all its lines are still there and fully valid.
  void record_page(const std::array<Line*, kPageLines>& page, const std::array<Tag*, kPageLines>& tags,
                   uint64_t first_line, uint64_t key);
  // The line lets go of its record (evicted, or about to take another).
  void release_record(Line& line, uint64_t line_index);
  // Reads the bytes [begin, end), whole pages through their records.
  void read_range(int near, int tensor, uint64_t begin, uint64_t end);
  // Whether the read of `lines` of the page at `first_line` (`count` sectors) rides on a request in flight.
  bool rides(int near, int tensor, uint64_t first_line, uint16_t lines, uint64_t count);
  uint64_t coalescer_key(int near, uint64_t line_index) const {
    return (line_index >> kPageShift) * static_cast<uint64_t>(params_.partitions) +
           static_cast<uint64_t>(near);
  }
  // Returns the line's slot (valid until the next allocation in its set) and, through `tag`, its tag's.
  Line& read_one(int near, int tensor, uint64_t line_index, uint64_t begin, uint64_t end, Tag*& tag);
  void write_range(int near, int tensor, uint64_t begin, uint64_t end);
  // An atomic's read of [begin, end), each line at its home partition.
  void atomic_read_range(int tensor, uint64_t begin, uint64_t end);
  // A read by a load under a lock (MemAccess::acquire) of [begin, end), line by line.
  void acquire_read_range(int near, int tensor, uint64_t begin, uint64_t end);
  bool tracks_stale_copies() const;
  // fence_revalidates: whether the copy in `slot` may serve core `core` without a check at home.
  bool must_revalidate(uint64_t slot, int core) const;
  bool revalidating(int core) const;     // some copy may need a check for this core's reads
  uint64_t fence_clock(int core) const;  // the clock of the last fence that binds this core's reads
  void mark_copies_stale(int near, int home, uint64_t line_index);
  void drop_copy(uint64_t slot, uint64_t line_index);
  void demote_copy(uint64_t first, uint64_t slot, uint64_t line_index);
  void store_to_copies(int near, int home, uint64_t line_index, uint8_t mask);
  // The sectors of the line that [begin, end) covers.
  uint8_t sector_mask(uint64_t line_index, uint64_t begin, uint64_t end) const;
  // Missed sectors of one access, fetched from DRAM as contiguous runs.
  struct MissRuns {
    int tensor = -1, core = 0;
    uint64_t issue_cycle = 0;  // when the misses go to DRAM
    uint64_t begin = 0, end = 0;
    uint64_t done = 0;  // when the last run fetched so far is back
  };
  void add_missing(uint64_t line_index, uint8_t missing);
  void fetch_run();
  // The line's slot in its set of `partition` (allocating, and evicting a victim, if absent); `hit` tells
  // which.
  Line& find_or_allocate(int partition, uint64_t line_index, int tensor, bool& hit);
  Line& find_or_allocate(int partition, uint64_t line_index, int tensor, bool& hit, Tag*& tag);
  int64_t find_way(const Tag* tags, Tag tag) const;
  int64_t choose_victim(uint64_t first, const Tag* tags, const Line* ways);
  int64_t oldest_way(const Tag* tags, const Line* ways) const;
  int64_t next_in_victim_order(uint64_t set, const Line* ways);
  int64_t order_victims(uint64_t set, const Tag* tags, const Line* ways);
  void prefetch_set(uint64_t first) const;
  bool gets_second_chance(const Line& victim) const;
  void write_to_dram(const Line& line, uint64_t line_index, uint64_t at);
  void limit_dirty_lines(uint64_t set, const Line& written);
  void wait_for_pending_fills(uint64_t begin, uint64_t end);
  // Reads `mask` of one line for a core attached to `near`; returns the sectors that must come from DRAM.
  uint8_t read_line(int near, uint64_t line_index, uint8_t mask, int tensor, Line*& served, Tag*& tag);
  void write_line(int near, uint64_t line_index, uint8_t mask, int tensor);
  // The partition a core's request for the line is served by.
  int serving_partition(int near, uint64_t line_index) const;
  int home_of_line(uint64_t line_index) const;
  uint64_t partition_done(int near, uint64_t issue_cycle);
  uint64_t set_of(uint64_t line_index) const;
  uint64_t paired_region_index(
      uint64_t line_index) const;  // set_of for SetIndex::PairedRegions, before the modulo
  // First slot of the set of `partition` that holds `line_index`.
  uint64_t first_way(int partition, uint64_t line_index) const;

  Params params_;
  MemoryLevel* next_ = nullptr;
  uint64_t sets_per_partition_ = 0;
  uint32_t sectors_per_line_ = 4;
  int line_shift_ = 7, sector_shift_ = 5;  // log2 of line_bytes and sector_bytes (both powers of two)
  uint64_t set_divisor_magic_ = 0;         // set_of's modulo as a multiplication (no division per lookup)
  int region_bits_ = 0;                    // SetIndex::PairedRegions: log2 of the pairs in a region
  uint64_t page_key_ = 0;                  // page_seed mixed (0 for seed 0: the fixed placement)
  int partner_home_bit_ = 0;               // the lowest of partner_bits among home_bits: dropped from a pair
  // [partition][set][way]: line index + 1; 0 = invalid. Four bytes, and sets of 16 ways aligned to 64
  // bytes: a set's tags are one host cache line.
  HostTable<Tag> tags_;
  HostTable<Line> lines_;  // same layout
  // Per set, when there are at most kMaxOrderedWays ways and replacement is not plru.
  std::vector<VictimOrder> victim_orders_;
  std::vector<uint8_t> attached_;  // core_partitions, parsed
  MissRuns miss_;
  std::vector<PageRecord> records_;
  std::vector<uint64_t> record_keys_;  // page_key() of each record's page
  PageInProgress in_progress_;
  std::vector<uint32_t> free_records_;  // indices into records_ that are unused
  // Hints, direct mapped by a hash of page_key: 1 + the index of the record last made for a key hashing
  // there (stale when overwritten or when the record was freed or reused: its key and lines tell).
  std::vector<uint32_t> record_hints_;
  int hint_shift_ = 64;
  std::vector<BandwidthCalendar> calendars_;
  std::vector<uint64_t> partition_bytes_;  // per access, reused (no allocation on the hot path)
  uint64_t clock_ = 0;                     // access counter for LRU / FIFO stamps
  uint64_t accepted_ = 0;                  // the last access's bytes booked in its partitions' calendars
  // Fills in flight, per page of lines: when the last fetch of one of the page's lines arrives. A read that
  // finds such a line already allocated waits for it, as a GPU L2 merges a miss into the pending one.
  struct PendingFill {
    uint64_t issue = 0, ready = 0;  // the fetch's issue cycle, and when its data arrive
  };
  std::unordered_map<uint64_t, PendingFill> pending_fills_;
  std::vector<uint64_t> missed_pages_;  // per access: pages with sectors fetched from DRAM
  uint64_t fill_wait_ = 0;              // per access: the latest pending fill its reads found
  RequestCoalescer coalescer_;
  uint64_t ride_wait_ = 0;           // per access: when the requests its reads rode on return
  uint64_t writeback_accepted_ = 0;  // per access: when DRAM took the dirty lines it evicted
  uint64_t now_ = 0;                 // issue cycle of the access being served (write-backs are issued then)
  // fence_revalidates: per slot, the clock when its copy was filled or last checked at home; per core, and
  // for any core, the clock at the last fence (a copy checked at or before it must be checked again).
  std::vector<uint64_t> checked_;
  std::vector<uint64_t> core_fence_;
  uint64_t any_fence_ = 0;
};

void register_l2_models();  // YAML type "sectored"

}  // namespace attnsim
