#include "models/l2/l2.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "models/common/splitmix.h"

namespace attnsim {

namespace {

bool power_of_two(int64_t x) {
  return x > 0 && (x & (x - 1)) == 0;
}

// Set bits of a sector mask (or of a byte of a page's line mask). A table: without -mpopcnt, std::popcount
// is a library call, and the L2 counts sectors several times per line.
constexpr std::array<uint8_t, 256> kSectorCount = [] {
  std::array<uint8_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i)
    t[i] = static_cast<uint8_t>((i & 1) + (i >> 1 & 1) + (i >> 2 & 1) + (i >> 3 & 1) + (i >> 4 & 1) +
                                (i >> 5 & 1) + (i >> 6 & 1) + (i >> 7 & 1));
  return t;
}();

uint64_t sectors(uint8_t mask) {
  return kSectorCount[mask];
}

// set_of reduces a 40-bit hash modulo the set count by multiplying with ceil(2^64 / sets): exact while
// hash * (rounding error) / 2^64 < 2^-24 <= 1 / sets, i.e. for fewer than 2^24 sets.
constexpr uint64_t kMaxSets = uint64_t{1} << 24;
__extension__ using Uint128 = unsigned __int128;

}  // namespace

L2Cache::L2Cache(sc_core::sc_module_name instance, const Params& params, double core_clock_ghz)
    : Component(instance), params_(params), coalescer_(params.coalescer_entries) {
  set_core_clock_ghz(core_clock_ghz);
  const Params& p = params_;
  if (!power_of_two(p.line_bytes) || !power_of_two(p.sector_bytes) || p.sector_bytes > p.line_bytes ||
      p.line_bytes / p.sector_bytes > 8)
    throw std::invalid_argument(fmt::format(
        "line_bytes ({}) and sector_bytes ({}) must be powers of two with 1 to 8 sectors per line",
        p.line_bytes, p.sector_bytes));
  const uint64_t per_set = static_cast<uint64_t>(p.line_bytes * p.ways * p.partitions);
  if (p.ways < 1 || p.partitions < 1 || p.capacity_bytes % per_set != 0 || p.capacity_bytes == 0)
    throw std::invalid_argument(
        fmt::format("capacity_bytes ({}) must be a positive multiple of line_bytes x ways x partitions ({})",
                    p.capacity_bytes, per_set));
  sets_per_partition_ = p.capacity_bytes / per_set;
  if (sets_per_partition_ >= kMaxSets)
    throw std::invalid_argument(fmt::format("more than {} sets per partition", kMaxSets));
  set_divisor_magic_ = sets_per_partition_ == 1 ? 0 : UINT64_MAX / sets_per_partition_ + 1;
  region_bits_ = std::bit_width(sets_per_partition_ - 1);
  if (p.region_bytes != 0) {
    const uint64_t pair_bytes = 2 * static_cast<uint64_t>(p.line_bytes);
    if (!power_of_two(p.region_bytes) || p.region_bytes < 4 * pair_bytes)
      throw std::invalid_argument(
          fmt::format("region_bytes ({}) must be 0 or a power of two of at least 4 line pairs ({} bytes)",
                      p.region_bytes, 4 * pair_bytes));
    region_bits_ = std::countr_zero(p.region_bytes / pair_bytes);
  }
  page_key_ = p.page_seed == 0 ? 0 : splitmix64_mix(p.page_seed);
  partner_home_bit_ = check_address_bits(p);
  if (p.set_index == Params::SetIndex::PairedRegions && p.home != Params::Home::AddressParity)
    throw std::invalid_argument(
        "set_index: paired_regions needs home: address_parity (a line's partner is "
        "homed in the other partition)");
  sectors_per_line_ = static_cast<uint32_t>(p.line_bytes / p.sector_bytes);
  line_shift_ = std::countr_zero(static_cast<uint64_t>(p.line_bytes));
  sector_shift_ = std::countr_zero(static_cast<uint64_t>(p.sector_bytes));
  for (char c : p.core_partitions) {
    if (c == ' ') continue;
    if (c < '0' || c - '0' >= p.partitions)
      throw std::invalid_argument(fmt::format(
          "core_partitions: '{}' is not a partition (one digit 0 to {} per core)", c, p.partitions - 1));
    attached_.push_back(static_cast<uint8_t>(c - '0'));
  }
  const size_t slots = static_cast<size_t>(p.capacity_bytes / static_cast<uint64_t>(p.line_bytes));
  tags_ = HostTable<Tag>(slots);
  lines_ = HostTable<Line>(slots);
  if (p.victim_orders && p.ways <= kMaxOrderedWays && p.replacement != Replacement::TreePlru)
    victim_orders_.resize(slots / static_cast<size_t>(p.ways));
  // Four hint slots per page the L2 can hold: few live pages share a slot.
  const uint64_t hints = std::bit_ceil(std::max<uint64_t>(4 * slots / kPageLines, 2));
  record_hints_.assign(hints, 0);
  hint_shift_ = 64 - std::countr_zero(hints);
  reset({});

  const char* sectors = "sectors";
  stats_.add_vector(&read_sectors, &tensor_names, "read_sectors", sectors,
                    "sectors the cores read, per tensor");
  stats_.add_vector(&read_hit_sectors, &tensor_names, "read_hit_sectors", sectors,
                    "read sectors found valid in L2, per tensor");
  stats_.add_vector(&read_miss_sectors, &tensor_names, "read_miss_sectors", sectors,
                    "read sectors fetched from DRAM, per tensor");
  stats_.add_vector(&write_sectors, &tensor_names, "write_sectors", sectors,
                    "sectors the cores wrote, per tensor");
  stats_.add_vector(&write_hit_sectors, &tensor_names, "write_hit_sectors", sectors,
                    "written sectors whose line was in L2, per tensor");
  stats_.add_vector(&write_miss_sectors, &tensor_names, "write_miss_sectors", sectors,
                    "written sectors that allocated a line (no DRAM read: write-allocate without fetch)");
  stats_.add_vector(&writeback_bytes, &tensor_names, "writeback_bytes", "bytes",
                    "dirty bytes evicted to DRAM while kernels ran, per tensor (counted as DRAM writes)");
  stats_.add_vector(&flushed_dirty_bytes, &tensor_names, "dirty_bytes_at_kernel_end", "bytes",
                    "dirty bytes still in L2 when a kernel ended (written back by the flush between kernels, "
                    "or left at the end; Nsight Compute counts neither as the kernel's DRAM writes)");
  stats_.add_vector(&resident_bytes_at_kernel_end, &tensor_names, "resident_bytes_at_kernel_end", "bytes",
                    "bytes valid in L2 when a kernel ended, a line in both partitions counted once (summed "
                    "over kernels; validation/run_memeff_residency.sh measures it on a GPU)");
  stats_.add(&evictions, "evictions", "lines", "valid lines replaced");
  stats_.add(&fabric_read_sectors, "fabric_read_sectors", "sectors",
             "sectors a partition fetched from the other (their home) to fill a copy (far_data: copy)");
  stats_.add(&lookup_read_miss_sectors, "lookup_read_miss_sectors", "sectors",
             "read sectors missing in the partition a request looked up first (the near one with far_data: "
             "copy; Nsight Compute's lts__t_sectors_srcunit_tex_op_read_lookup_miss)");
  stats_.add(&fabric_write_sectors, "fabric_write_sectors", "sectors",
             "sectors cores wrote into the partition they are not attached to (far_data: copy)");
  stats_.add(&home_lookup_miss_sectors, "home_lookup_miss_sectors", "sectors",
             "read sectors a copy fetched across the fabric that missed in their home partition too (Nsight "
             "Compute: lts__t_sectors_lookup_miss less its srcunit_tex part; writes never miss)");
  stats_.add(&eager_writebacks, "eager_writebacks", "lines",
             "dirty lines written back early because their set had max_dirty_ways dirty lines");
  stats_.add(&second_chances, "second_chance_writebacks", "lines",
             "dirty lines chosen as victims, written back and kept clean (dirty_second_chance)");
  stats_.add(&invalidated_copies, "invalidated_copies", "lines",
             "copies of lines in partitions other than their home dropped because a core stored to the line "
             "(copies_on_store: invalidate, writer_keeps)");
  stats_.add(&updated_copy_sectors, "updated_copy_sectors", "sectors",
             "sectors stores wrote into copies of their lines held by partitions other than the home one "
             "(copies_on_store: update, writer_keeps)");
  stats_.add(&demoted_copies, "demoted_copies", "lines",
             "copies of lines in partitions other than their home and the writer's made their set's oldest "
             "line by a store (copies_on_store: demote)");
  stats_.add(&refetched_stale_copies, "refetched_stale_copies", "lines",
             "copies made stale by a store from a core of another partition, fetched again by a load of a "
             "coherent tensor (copies_on_store: keep, acquire_refetches)");
  stats_.add(&revalidated_copies, "revalidated_copies", "lines",
             "copies checked at home after a fence before they served a read (fence_revalidates): their "
             "sectors crossed the fabric again");
  stats_.add(&fence_fabric_sectors, "fence_fabric_sectors", "sectors",
             "sectors GPU-scope fences sent between the partitions (fence_fabric_sectors a fence), counted "
             "with the fabric sectors; no data");
  stats_.add(&coalesced_read_sectors, "coalesced_read_sectors", "sectors",
             "read sectors that rode on another core's request in flight in the request coalescer "
             "(coalescer_entries): counted in read_sectors, not looked up (Nsight Compute: "
             "lrc__xbar2gpc_sectors_op_read less lrc__lts2lrc_sectors_op_read)");
  stats_.add(&far_accesses, "far_partition_accesses", "accesses",
             "accesses that touched a partition the requesting core is not attached to");
}

void L2Cache::reset(const std::vector<std::string>& names) {
  if (names.size() > static_cast<size_t>(INT16_MAX))
    throw std::invalid_argument(fmt::format("{}: more than {} tensors", name(), INT16_MAX));
  tensor_names = names;
  for (auto* v : {&read_sectors, &write_sectors, &read_hit_sectors, &read_miss_sectors, &write_hit_sectors,
                  &write_miss_sectors, &writeback_bytes, &flushed_dirty_bytes, &resident_bytes_at_kernel_end})
    v->assign(names.size(), 0);
  evictions = far_accesses = fabric_read_sectors = lookup_read_miss_sectors = fabric_write_sectors =
      home_lookup_miss_sectors = eager_writebacks = second_chances = invalidated_copies =
          updated_copy_sectors = demoted_copies = refetched_stale_copies = revalidated_copies =
              fence_fabric_sectors = coalesced_read_sectors = 0;
  coalescer_.clear();
  std::fill(tags_.begin(), tags_.end(), Tag{0});
  std::fill(lines_.begin(), lines_.end(), Line{});
  std::fill(victim_orders_.begin(), victim_orders_.end(), VictimOrder{});
  const bool checks =
      params_.far_data == FarData::Copy && params_.fence_revalidates != Params::FenceRevalidates::None;
  checked_.assign(checks ? lines_.size() : 0, 0);
  core_fence_.clear();
  any_fence_ = 0;
  records_.clear();
  record_keys_.clear();
  free_records_.clear();
  std::fill(record_hints_.begin(), record_hints_.end(), 0);
  pending_fills_.clear();
  calendars_.clear();
  for (int64_t i = 0; i < params_.partitions; ++i)
    calendars_.emplace_back(params_.bytes_per_cycle, static_cast<uint64_t>(params_.window_cycles));
  clock_ = 0;
}

void L2Cache::set_core_clock_ghz(double ghz) {
  if (params_.bandwidth_gbps > 0) params_.bytes_per_cycle = params_.bandwidth_gbps / ghz;
  if (params_.hit_latency_ns > 0) params_.hit_latency_cycles = std::llround(params_.hit_latency_ns * ghz);
  if (params_.far_latency_ns > 0) params_.far_latency_cycles = std::llround(params_.far_latency_ns * ghz);
}

namespace {

constexpr int kPageBits = 21;  // home_bits and partner_bits lie within a 2 MiB page

}  // namespace

// address_parity and paired_regions: two partitions, home and partner bits within a page and above the
// line's offset, and a partner in the other partition (an odd number of its bits among the home bits).
int L2Cache::check_address_bits(const Params& p) {
  const bool parity = p.home == Params::Home::AddressParity;
  const bool paired = p.set_index == Params::SetIndex::PairedRegions;
  if (!parity && !paired) return 0;
  if (p.partitions != 2)
    throw std::invalid_argument("home: address_parity and set_index: paired_regions need 2 partitions");
  const uint32_t line_bits = static_cast<uint32_t>(p.line_bytes) - 1;
  for (const auto& [mask, key] :
       {std::pair{p.home_bits, "home_bits"}, std::pair{p.partner_bits, "partner_bits"}})
    if (mask == 0 || (mask & line_bits) != 0 || mask >> kPageBits != 0)
      throw std::invalid_argument(
          fmt::format("{}: address bits of a line's 2 MiB page above its {} bytes (from {} to {})", key,
                      p.line_bytes, std::countr_zero(static_cast<uint64_t>(p.line_bytes)), kPageBits - 1));
  const uint32_t shared = p.home_bits & p.partner_bits;
  if (paired && std::popcount(shared) % 2 == 0)
    throw std::invalid_argument(
        "partner_bits: an odd number of them must be home_bits, so that a line's partner is homed in the "
        "other partition");
  return paired ? std::countr_zero(shared) : 0;
}

int L2Cache::home_of_line(uint64_t line_index) const {
  if (params_.partitions == 1) return 0;
  if (params_.home == Params::Home::AddressParity) {
    const uint64_t addr = line_index << line_shift_;
    return (std::popcount(addr & params_.home_bits) +
            static_cast<int>(splitmix64_mix((addr >> 21) ^ page_key_) & 1)) &
           1;
  }
  const uint64_t hash = (line_index * 0xD6E8FEB86659FD93ull) >> 40;
  if (power_of_two(params_.partitions))  // a mask, not a division per line
    return static_cast<int>(hash & static_cast<uint64_t>(params_.partitions - 1));
  return static_cast<int>(hash % static_cast<uint64_t>(params_.partitions));
}

int L2Cache::partition_of(uint64_t addr) const {
  return home_of_line(addr >> line_shift_);
}

int L2Cache::serving_partition(int near, uint64_t line_index) const {
  return params_.far_data == FarData::Copy ? near : home_of_line(line_index);
}

// The pair's index (the partner's home bit dropped) mapped into its region by a seeded bijection (xor,
// odd multiplications and xor-shifts modulo 2^region_bits_), after the regions before it.
uint64_t L2Cache::paired_region_index(uint64_t line_index) const {
  uint64_t addr = line_index << line_shift_;
  if (addr >> partner_home_bit_ & 1) addr ^= params_.partner_bits;
  const uint64_t low = addr & ((uint64_t{1} << partner_home_bit_) - 1);
  const uint64_t pair = ((addr >> (partner_home_bit_ + 1) << partner_home_bit_) | low) >> line_shift_;
  const uint64_t mask = (uint64_t{1} << region_bits_) - 1, region = pair >> region_bits_;
  const uint64_t key = splitmix64_mix(region ^ page_key_);
  const int half = region_bits_ / 2 + 1;
  uint64_t v = (pair ^ key) & mask;
  v = (v * (key >> 20 | 1)) & mask;
  v ^= v >> half;
  v = (v * (key >> 40 | 1)) & mask;
  v ^= v >> half;
  return (region << region_bits_) + v;
}

// Hashed set index: a GPU's L2 spreads addresses over sets with XOR hashes, so power-of-two strides do not
// pile into a few sets; a multiplicative hash has the same effect.
uint64_t L2Cache::set_of(uint64_t line_index) const {
  if (sets_per_partition_ == 1) return 0;  // its magic, 2^64, does not fit
  const uint64_t hash = params_.set_index == Params::SetIndex::PairedRegions
                            ? paired_region_index(line_index) & ((uint64_t{1} << 40) - 1)
                            : (line_index * 0x9E3779B97F4A7C15ull) >> 24;
  const uint64_t quotient = static_cast<uint64_t>((Uint128{hash} * set_divisor_magic_) >> 64);
  return hash - quotient * sets_per_partition_;
}

uint64_t L2Cache::first_way(int partition, uint64_t line_index) const {
  const uint64_t set = static_cast<uint64_t>(partition) * sets_per_partition_ + set_of(line_index);
  return set * static_cast<uint64_t>(params_.ways);
}

void L2Cache::write_to_dram(const Line& line, uint64_t line_index, uint64_t at) {
  const uint64_t sector = static_cast<uint64_t>(params_.sector_bytes);
  const uint64_t base = line_index * static_cast<uint64_t>(params_.line_bytes);
  uint32_t s = 0;
  while (s < sectors_per_line_) {
    if (!(line.dirty >> s & 1)) {
      ++s;
      continue;
    }
    uint32_t e = s;
    while (e < sectors_per_line_ && (line.dirty >> e & 1)) ++e;
    const uint64_t bytes = (e - s) * sector;
    MemAccess w{line.tensor, base + s * sector, 1, bytes, bytes, true, 0};
    next_->access(w, at);
    writeback_accepted_ = std::max(writeback_accepted_, next_->last_accepted_cycle());
    if (line.tensor >= 0) writeback_bytes[line.tensor] += bytes;
    s = e;
  }
}

// A set's line states and victim order are host-memory misses (megabytes of them, searched at random):
// asking for them while the tags are searched overlaps the waits. A hit reads its way's state, a miss the
// order and one or more ways.
void L2Cache::prefetch_set(uint64_t first) const {
  constexpr uint64_t kLinesPerHostLine = 64 / sizeof(Line);
  for (uint64_t w = 0; w < static_cast<uint64_t>(params_.ways); w += kLinesPerHostLine)
    __builtin_prefetch(&lines_[first + w]);
  if (!victim_orders_.empty())
    __builtin_prefetch(&victim_orders_[first / static_cast<uint64_t>(params_.ways)]);
}

// The way of a set holding `tag`, or -1.
int64_t L2Cache::find_way(const Tag* tags, Tag tag) const {
  for (int64_t w = 0; w < params_.ways; ++w)
    if (tags[w] == tag) return w;
  return -1;
}

L2Cache::Line& L2Cache::find_or_allocate(int partition, uint64_t line_index, int tensor, bool& hit) {
  Tag* tag = nullptr;
  return find_or_allocate(partition, line_index, tensor, hit, tag);
}

L2Cache::Line& L2Cache::find_or_allocate(int partition, uint64_t line_index, int tensor, bool& hit,
                                         Tag*& tag) {
  const uint64_t first = first_way(partition, line_index);
  Tag* tags = &tags_[first];
  Line* ways = &lines_[first];
  prefetch_set(first);
  const int64_t w = find_way(tags, static_cast<Tag>(line_index + 1));
  if (w >= 0) {
    if (stamps_on_hit()) ways[w].stamp = ++clock_;
    hit = true;
    tag = &tags[w];
    return ways[w];
  }
  hit = false;
  int64_t victim = choose_victim(first, tags, ways);
  for (int64_t round = 0; round < params_.ways && tags[victim] != 0 && gets_second_chance(ways[victim]);
       ++round) {
    write_to_dram(ways[victim], tags[victim] - 1, now_);
    ways[victim].dirty = 0;
    // As recent as the line about to take the next victim's way, without advancing the clock: a page read
    // through its record sets the clock line by line, and an extra tick here would give its later lines
    // other stamps than the line-by-line path does.
    ways[victim].stamp = clock_ + 1;
    ++second_chances;
    victim = choose_victim(first, tags, ways);
  }
  if (tags[victim] != 0) {
    ++evictions;
    if (ways[victim].record) release_record(ways[victim], tags[victim] - 1);
    if (ways[victim].dirty) write_to_dram(ways[victim], tags[victim] - 1, now_);
  }
  tags[victim] = static_cast<Tag>(line_index + 1);
  ways[victim] = Line{.stamp = ++clock_, .tensor = static_cast<int16_t>(tensor)};
  if (!checked_.empty()) checked_[first + static_cast<uint64_t>(victim)] = clock_;
  tag = &tags[victim];
  return ways[victim];
}

bool L2Cache::gets_second_chance(const Line& victim) const {
  if (!victim.dirty) return false;
  switch (params_.dirty_second_chance) {
    case Params::SecondChance::None:
      return false;
    case Params::SecondChance::All:
      return true;
    case Params::SecondChance::FarWrites:
      return victim.far_written;
  }
  return false;
}

// The first invalid way, else the oldest.
int64_t L2Cache::choose_victim(uint64_t first, const Tag* tags, const Line* ways) {
  if (params_.replacement == Replacement::TreePlru) return choose_tree_plru_victim(tags, ways);
  for (int64_t w = 0; w < params_.ways; ++w)
    if (tags[w] == 0) return w;
  if (victim_orders_.empty()) return oldest_way(tags, ways);
  const uint64_t set = first / static_cast<uint64_t>(params_.ways);
  const int64_t victim = next_in_victim_order(set, ways);
  return victim >= 0 ? victim : order_victims(set, tags, ways);
}

// The oldest valid way by a search of the whole set.
int64_t L2Cache::oldest_way(const Tag* tags, const Line* ways) const {
  int64_t victim = 0;
  uint64_t oldest = UINT64_MAX;
  for (int64_t w = 0; w < params_.ways; ++w) {
    // A line's own stamp bounds the one its record implies from below: no older than the oldest so far,
    // it cannot be the victim, and its record (a host-cache miss) need not be read.
    if (ways[w].stamp >= oldest) continue;
    const uint64_t stamp = stamp_of(ways[w], tags[w] - 1);
    if (stamp < oldest) victim = w, oldest = stamp;
  }
  return victim;
}

// The first line of the set's order still untouched (see VictimOrder), or -1. The way returned is evicted
// or, given a second chance, stamped anew: touched either way, so the order resumes after it.
int64_t L2Cache::next_in_victim_order(uint64_t set, const Line* ways) {
  VictimOrder& order = victim_orders_[set];
  if (!order.valid) return -1;
  for (uint64_t place = order.next; place < static_cast<uint64_t>(params_.ways); ++place) {
    const int64_t w = static_cast<int64_t>(order.ways >> (4 * place) & 15);
    const Line& line = ways[w];
    // Its own stamp past the order's clock: touched, and its record need not be read.
    if (line.stamp > order.clock) continue;
    if (stamp_of(line, tags_[set * static_cast<uint64_t>(params_.ways) + static_cast<uint64_t>(w)] - 1) >
        order.clock)
      continue;
    order.next = place + 1;
    return w;
  }
  order.valid = 0;
  return -1;
}

// Orders the set's lines by stamp (ties: the lower way first, as oldest_way) and returns the oldest.
int64_t L2Cache::order_victims(uint64_t set, const Tag* tags, const Line* ways) {
  std::array<std::pair<uint64_t, uint8_t>, kMaxOrderedWays> lines;
  const auto count = static_cast<size_t>(params_.ways);
  for (size_t w = 0; w < count; ++w) lines[w] = {stamp_of(ways[w], tags[w] - 1), static_cast<uint8_t>(w)};
  std::sort(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(count));
  VictimOrder& order = victim_orders_[set];
  order.ways = 0;
  for (size_t place = 0; place < count; ++place) order.ways |= uint64_t{lines[place].second} << (4 * place);
  order.clock = clock_;
  order.next = 1;
  order.valid = 1;
  return lines[0].second;
}

// Tree pseudo-LRU: each node of a binary tree over the ways points away from the half used last, so the
// victim is found by walking from the root towards the half whose latest use is older. Those pointers
// follow from the lines' LRU stamps (a node points at the half whose largest stamp is smaller).
int64_t L2Cache::choose_tree_plru_victim(const Tag* tags, const Line* ways) const {
  std::array<uint64_t, 1024> stamps;  // the first `ways` are written before any is read
  for (int64_t w = 0; w < params_.ways; ++w) {
    if (tags[w] == 0) return w;
    stamps[static_cast<size_t>(w)] = stamp_of(ways[w], tags[w] - 1);
  }
  int64_t lo = 0, hi = params_.ways;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    const auto latest = [&](int64_t a, int64_t b) {
      return *std::max_element(stamps.begin() + a, stamps.begin() + b);
    };
    if (latest(lo, mid) <= latest(mid, hi))
      hi = mid;
    else
      lo = mid;
  }
  return lo;
}

uint64_t L2Cache::stamp_of(const Line& line, uint64_t line_index) const {
  if (!line.record) return line.stamp;
  const uint64_t position = line_index & (kPageLines - 1);
  const uint64_t base = line.record == in_progress_.record && position >= in_progress_.position
                            ? in_progress_.old_base
                            : records_[line.record - 1].base;
  return base ? std::max(line.stamp, base + position + 1) : line.stamp;
}

L2Cache::Line* L2Cache::find_line(int partition, uint64_t line_index) {
  const uint64_t first = first_way(partition, line_index);
  const int64_t w = find_way(&tags_[first], static_cast<Tag>(line_index + 1));
  return w < 0 ? nullptr : &lines_[first + static_cast<uint64_t>(w)];
}

uint64_t L2Cache::page_key(int near, uint64_t first_line) const {
  const uint64_t group = params_.far_data == FarData::Copy ? static_cast<uint64_t>(near) : 0;
  return (first_line >> kPageShift) * static_cast<uint64_t>(params_.partitions) + group + 1;
}

uint32_t L2Cache::record_of_page(int near, uint64_t first_line) {
  const uint64_t key = page_key(near, first_line);
  const uint32_t hint = record_hints_[hint_slot(key)];
  if (hint && record_keys_[hint - 1] == key && records_[hint - 1].present) return hint;
  const Line* first = find_line(serving_partition(near, first_line), first_line);
  // The first line's record is this page's in the partitions of one group (a record is made for one).
  return first ? first->record : 0;
}

bool L2Cache::read_recorded_page(int near, uint64_t first_line, int tensor, uint64_t begin, uint64_t end) {
  if (!params_.page_records) return false;
  const uint32_t found = record_of_page(near, first_line);
  if (!found) return false;
  if (records_[found - 1].present != kAllLines) {
    read_partial_page(near, first_line, tensor, found, begin, end);
    return true;
  }
  PageRecord& record = records_[found - 1];
  if (stamps_on_hit()) {
    record.base = clock_;
    clock_ += kPageLines;
  }
  count_page_hits(near, first_line, kAllLines, tensor);
  return true;
}

void L2Cache::count_page_hits(int near, uint64_t first_line, uint16_t lines, int tensor) {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  uint64_t count = 0;
  if (params_.far_data == FarData::Copy) {  // every line is served by the near partition
    count = sectors(static_cast<uint8_t>(lines)) + sectors(static_cast<uint8_t>(lines >> 8));
    partition_bytes_[static_cast<size_t>(near)] += count * line_bytes;
  } else {
    for (uint64_t k = 0; k < kPageLines; ++k) {
      if (!(lines >> k & 1)) continue;
      partition_bytes_[static_cast<size_t>(home_of_line(first_line + k))] += line_bytes;
      ++count;
    }
  }
  if (tensor < 0) return;
  count *= sectors_per_line_;
  read_sectors[tensor] += count, read_hit_sectors[tensor] += count;
}

// The present lines are hits; the missing ones are read one by one in the page's order. LRU: each gets the
// stamp the line-by-line path gives it relative to the others (base + k + 1 in the serving partition; a
// home partition's copy source after it, compared with no stamp of the serving one), and while line k is
// read the lines after it keep their old stamps (in_progress_). FIFO stamps only what it allocates, as the
// line-by-line path does.
void L2Cache::read_partial_page(int near, uint64_t first_line, int tensor, uint32_t record, uint64_t begin,
                                uint64_t end) {
  const bool lru = stamps_on_hit();
  const uint64_t base = clock_;
  in_progress_ = {record, 0, records_[record - 1].base};  // also keeps the record while it may empty
  if (lru) records_[record - 1].base = base;
  uint16_t hits = 0, fetched = 0;
  std::array<Line*, kPageLines> page{};
  std::array<Tag*, kPageLines> tags{};
  for (uint64_t k = 0; k < kPageLines; ++k) {
    in_progress_.position = k + 1;
    if (records_[record - 1].present >> k & 1) {
      hits |= static_cast<uint16_t>(1u << k);
      continue;
    }
    if (lru) clock_ = base + k;
    page[k] = &read_one(near, tensor, first_line + k, begin, end, tags[k]);
    fetched |= static_cast<uint16_t>(1u << k);
  }
  in_progress_ = {};
  if (lru) clock_ = std::max(clock_, base + kPageLines);
  count_page_hits(near, first_line, hits, tensor);
  // A line fetched here may have been evicted by a later one of the page: its tag says so.
  PageRecord& r = records_[record - 1];
  for (uint64_t k = 0; k < kPageLines; ++k) {
    if (!(fetched >> k & 1) || *tags[k] != first_line + k + 1) continue;
    if (page[k]->record) release_record(*page[k], first_line + k);
    page[k]->record = record;
    r.present |= static_cast<uint16_t>(1u << k);
  }
  if (r.present == 0) free_records_.push_back(record - 1);  // its last lines left while it was read
}

uint32_t L2Cache::new_record() {
  if (free_records_.empty()) {
    records_.emplace_back();
    record_keys_.emplace_back();
    return static_cast<uint32_t>(records_.size());
  }
  const uint32_t index = free_records_.back();
  free_records_.pop_back();
  return index + 1;
}

void L2Cache::record_page(const std::array<Line*, kPageLines>& page, const std::array<Tag*, kPageLines>& tags,
                          uint64_t first_line, uint64_t key) {
  if (!params_.page_records) return;
  const uint8_t all = static_cast<uint8_t>((1u << sectors_per_line_) - 1);
  // A later line's allocation may have evicted an earlier one from the same set: its tag says so.
  for (uint64_t k = 0; k < kPageLines; ++k)
    if (*tags[k] != first_line + k + 1 || page[k]->valid != all) return;
  for (uint64_t k = 0; k < kPageLines; ++k)
    if (page[k]->record) release_record(*page[k], first_line + k);
  const uint32_t record = new_record();
  records_[record - 1] = PageRecord{0, kAllLines};
  record_keys_[record - 1] = key;
  record_hints_[hint_slot(key)] = record;
  for (Line* line : page) line->record = record;
}

// The line's stamp need not take the one the record implied: it is leaving, or has just been read line by
// line (a newer stamp; FIFO never uses the record's).
void L2Cache::release_record(Line& line, uint64_t line_index) {
  PageRecord& record = records_[line.record - 1];
  record.present = static_cast<uint16_t>(record.present & ~(1u << (line_index & (kPageLines - 1))));
  if (record.present == 0 && line.record != in_progress_.record) free_records_.push_back(line.record - 1);
  line.record = 0;
}

uint8_t L2Cache::read_line(int near, uint64_t line_index, uint8_t mask, int tensor, Line*& served,
                           Tag*& tag) {
  const int serving = serving_partition(near, line_index);
  bool present = false;
  Line& l = find_or_allocate(serving, line_index, tensor, present, tag);
  served = &l;
  uint8_t missing = static_cast<uint8_t>(mask & ~l.valid);
  lookup_read_miss_sectors += sectors(missing);
  const int home = home_of_line(line_index);
  const uint64_t slot = static_cast<uint64_t>(&l - lines_.data());
  // A copy's missing sectors come across the fabric from home; all of them when it must be checked there.
  uint8_t crossing = missing;
  if (present && serving != home && !checked_.empty() && must_revalidate(slot, miss_.core)) {
    crossing = mask;
    ++revalidated_copies;
  }
  l.valid |= mask;
  if (crossing && serving != home) {
    fabric_read_sectors += sectors(crossing);
    partition_bytes_[static_cast<size_t>(home)] +=
        sectors(crossing) * static_cast<uint64_t>(params_.sector_bytes);
    Line& h = find_or_allocate(home, line_index, tensor, present);
    if (!present && params_.far_fills_oldest) h.stamp = 0;
    const uint8_t from_dram = static_cast<uint8_t>(crossing & ~h.valid);
    home_lookup_miss_sectors += sectors(from_dram);
    h.valid |= crossing;
    missing = from_dram;
    if (!checked_.empty()) checked_[slot] = clock_;
  }
  if (tensor >= 0) {
    const uint64_t count = sectors(mask);
    const uint64_t misses = sectors(missing);
    read_sectors[tensor] += count, read_hit_sectors[tensor] += count - misses,
        read_miss_sectors[tensor] += misses;
  }
  return missing;
}

void L2Cache::fence(int core) {
  fence_fabric_sectors += params_.fence_fabric_sectors;
  if (checked_.empty()) return;
  if (static_cast<size_t>(core) >= core_fence_.size()) core_fence_.resize(static_cast<size_t>(core) + 1, 0);
  core_fence_[static_cast<size_t>(core)] = any_fence_ = clock_;
}

// A copy filled or checked at the clock of a fence or before it was there before the fence.
bool L2Cache::must_revalidate(uint64_t slot, int core) const {
  return checked_[slot] <= fence_clock(core);
}

bool L2Cache::revalidating(int core) const {
  return !checked_.empty() && fence_clock(core) > 0;
}

uint64_t L2Cache::fence_clock(int core) const {
  if (params_.fence_revalidates == Params::FenceRevalidates::All) return any_fence_;
  const size_t c = static_cast<size_t>(core);
  return c < core_fence_.size() ? core_fence_[c] : 0;
}

// Writes go to the line's home partition whatever the core: measured, one SM's stores and every SM's stores
// leave the same amount dirty, spread over both partitions. With store_copies the writer's partition keeps
// a clean copy too (measured: one SM's stores evict its earlier reads as loads of the same bytes do).
void L2Cache::write_line(int near, uint64_t line_index, uint8_t mask, int tensor) {
  const int home = home_of_line(line_index);
  if (params_.far_data == FarData::Copy && home != near) fabric_write_sectors += sectors(mask);
  if (params_.far_data == FarData::Copy && params_.copies_on_store != Params::CopiesOnStore::Keep)
    store_to_copies(near, home, line_index, mask);
  if (tracks_stale_copies()) mark_copies_stale(near, home, line_index);
  bool present = false;
  if (params_.far_data == FarData::Copy && home != near && params_.store_copies) {
    Line& copy = find_or_allocate(near, line_index, tensor, present);
    copy.valid |= mask;  // clean: the dirty sectors live at home
    copy.stale = 0;
  }
  Line& l = find_or_allocate(home, line_index, tensor, present);
  const uint64_t hits = sectors(static_cast<uint8_t>(mask & l.valid));
  const bool was_dirty = l.dirty != 0;
  // The line remembers a far writer until it is clean again (written back).
  l.far_written = (was_dirty && l.far_written) || home != near;
  l.valid |= mask;
  l.dirty |= mask;
  l.tensor = static_cast<int16_t>(tensor);
  if (!was_dirty) limit_dirty_lines(first_way(home, line_index), l);
  if (tensor < 0) return;
  const uint64_t count = sectors(mask);
  write_sectors[tensor] += count, write_hit_sectors[tensor] += hits,
      write_miss_sectors[tensor] += count - hits;
}

// A copy that takes the stored sectors stays valid (those sectors cross the fabric unless the copy is in the
// writer's own partition); one that does not is dropped.
void L2Cache::store_to_copies(int near, int home, uint64_t line_index, uint8_t mask) {
  using Rule = Params::CopiesOnStore;
  const uint64_t sector_count = sectors(mask);
  for (int p = 0; p < static_cast<int>(params_.partitions); ++p) {
    if (p == home) continue;
    const uint64_t slot = first_way(p, line_index);
    const int64_t w = find_way(&tags_[slot], static_cast<Tag>(line_index + 1));
    if (w < 0) continue;
    Line& copy = lines_[slot + static_cast<uint64_t>(w)];
    const Rule rule = params_.copies_on_store;
    const bool writer_takes = (rule == Rule::WriterKeeps || rule == Rule::Demote) && p == near;
    if (rule == Rule::Update || writer_takes) {
      copy.valid |= mask;
      updated_copy_sectors += sector_count;
      if (p == near) continue;
      fabric_write_sectors += sector_count;
      partition_bytes_[static_cast<size_t>(p)] += sector_count * static_cast<uint64_t>(params_.sector_bytes);
      continue;
    }
    if (rule == Rule::Demote) {
      demote_copy(slot, slot + static_cast<uint64_t>(w), line_index);
      continue;
    }
    drop_copy(slot + static_cast<uint64_t>(w), line_index);
    ++invalidated_copies;
  }
}

// The copy stays valid but becomes its set's oldest line: the next miss there takes it unless it is read
// again first. Its set's victim order no longer holds.
void L2Cache::demote_copy(uint64_t first, uint64_t slot, uint64_t line_index) {
  Line& copy = lines_[slot];
  if (copy.record) release_record(copy, line_index);
  copy.stamp = 0;
  ++demoted_copies;
  if (!victim_orders_.empty()) victim_orders_[first / static_cast<uint64_t>(params_.ways)].valid = 0;
}

void L2Cache::drop_copy(uint64_t slot, uint64_t line_index) {
  Line& copy = lines_[slot];
  if (copy.record) release_record(copy, line_index);
  tags_[slot] = 0;
  copy = Line{};
}

// Only kept or demoted copies can be stale: the other rules update or drop them at every store.
bool L2Cache::tracks_stale_copies() const {
  using Rule = Params::CopiesOnStore;
  return params_.far_data == FarData::Copy &&
         (params_.copies_on_store == Rule::Keep || params_.copies_on_store == Rule::Demote) &&
         params_.acquire_refetches;
}

// The writer's own partition's copy is not made stale: the store passes through it on its way home.
void L2Cache::mark_copies_stale(int near, int home, uint64_t line_index) {
  for (int p = 0; p < static_cast<int>(params_.partitions); ++p)
    if (p != home && p != near)
      if (Line* copy = find_line(p, line_index)) copy->stale = 1;
}

// At most max_dirty_ways dirty lines per set: one more writes back the least recently used other dirty line
// of the set, which stays valid and clean (an eager write-back, counted as a DRAM write).
void L2Cache::limit_dirty_lines(uint64_t first, const Line& written) {
  if (params_.max_dirty_ways >= params_.ways) return;
  const Tag* tags = &tags_[first];
  Line* ways = &lines_[first];
  int64_t dirty = 0;
  int64_t oldest = -1;
  uint64_t oldest_stamp = 0;
  for (int64_t w = 0; w < params_.ways; ++w) {
    const Line& l = ways[w];
    if (!tags[w] || !l.dirty) continue;
    ++dirty;
    if (&l == &written || (oldest >= 0 && l.stamp >= oldest_stamp)) continue;  // as in find_or_allocate
    const uint64_t stamp = stamp_of(l, tags[w] - 1);
    if (oldest < 0 || stamp < oldest_stamp) oldest = w, oldest_stamp = stamp;
  }
  if (dirty <= params_.max_dirty_ways || oldest < 0) return;
  write_to_dram(ways[oldest], tags[oldest] - 1, now_);
  ways[oldest].dirty = 0;
  ++eager_writebacks;
}

uint64_t L2Cache::access(const MemAccess& a, uint64_t issue_cycle) {
  const uint64_t end = a.rows ? a.addr + (a.rows - 1) * a.stride_bytes + a.row_bytes : a.addr;
  const uint64_t last_byte = end ? end - 1 : 0;
  if (last_byte >> line_shift_ >= std::numeric_limits<Tag>::max())
    throw std::out_of_range(fmt::format("{}: address {:#x} is beyond the {} lines the L2's tags can name",
                                        name(), last_byte, std::numeric_limits<Tag>::max() - 1));
  now_ = issue_cycle;
  miss_ =
      MissRuns{a.tensor, a.core, issue_cycle + static_cast<uint64_t>(params_.hit_latency_cycles), 0, 0, 0};
  const int near = near_partition(a.core);
  partition_bytes_.assign(static_cast<size_t>(params_.partitions), 0);
  missed_pages_.clear();
  fill_wait_ = writeback_accepted_ = ride_wait_ = 0;
  // Rows of whole lines without gaps are one range: the same lines in the same order, and whole pages.
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  const bool at_home = a.atomic_read && params_.atomics_at_home;
  const bool acquire = !a.is_write && a.acquire && tracks_stale_copies();
  if (!a.is_write && !at_home && !acquire && a.stride_bytes == a.row_bytes && a.addr % line_bytes == 0 &&
      a.row_bytes % line_bytes == 0) {
    read_range(near, a.tensor, a.addr, a.addr + a.bytes());
  } else {
    for (uint64_t r = 0; r < a.rows; ++r) {
      const uint64_t begin = a.addr + r * a.stride_bytes, end = begin + a.row_bytes;
      if (at_home)
        atomic_read_range(a.tensor, begin, end);
      else if (acquire)
        acquire_read_range(near, a.tensor, begin, end);
      else if (a.is_write)
        write_range(near, a.tensor, begin, end);
      else
        read_range(near, a.tensor, begin, end);
    }
  }
  fetch_run();
  for (uint64_t page : missed_pages_) {
    PendingFill& fill = pending_fills_[page];
    if (miss_.done >= fill.ready) fill = {issue_cycle, miss_.done};
  }
  const uint64_t done = partition_done(near, issue_cycle);
  const uint64_t queued = accepted_ - issue_cycle;  // waiting for the slices' bandwidth
  // An eviction's dirty data must have left for DRAM before the slot takes the new line.
  accepted_ = std::max(accepted_, writeback_accepted_);
  const uint64_t own = std::max({done, miss_.done, fill_wait_, writeback_accepted_});
  coalescer_.settle(own, own - std::min(own, queued));
  return std::max(own, ride_wait_);
}

// The latest fill still in flight on the pages of [begin, end): a read of them cannot complete before.
void L2Cache::wait_for_pending_fills(uint64_t begin, uint64_t end) {
  if (pending_fills_.empty()) return;
  const int page_shift = line_shift_ + kPageShift;
  for (uint64_t page = begin >> page_shift; page <= (end - 1) >> page_shift; ++page) {
    const auto it = pending_fills_.find(page);
    if (it == pending_fills_.end()) continue;
    // A fill issued after this read (a core ahead in time, under temporal decoupling) is the one this read
    // would have started: its data arrive as much earlier as the read was issued before it.
    const PendingFill& fill = it->second;
    const uint64_t ready =
        fill.issue <= now_ ? fill.ready : fill.ready - std::min(fill.ready, fill.issue - now_);
    fill_wait_ = std::max(fill_wait_, ready);
  }
}

uint8_t L2Cache::sector_mask(uint64_t line_index, uint64_t begin, uint64_t end) const {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  const uint64_t lb = line_index * line_bytes;
  const uint32_t first = static_cast<uint32_t>((std::max(begin, lb) - lb) >> sector_shift_);
  const uint32_t last = static_cast<uint32_t>((std::min(end, lb + line_bytes) - 1 - lb) >> sector_shift_);
  return static_cast<uint8_t>(((1u << (last + 1)) - 1) & ~((1u << first) - 1));
}

void L2Cache::read_range(int near, int tensor, uint64_t begin, uint64_t end) {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  wait_for_pending_fills(begin, end);
  // Copies that may need a check at home are read line by line (a page record would serve them as hits),
  // each looked up (a check cannot ride on another core's request).
  const bool checks = revalidating(miss_.core);
  const bool coalescing = coalescer_.enabled() && !checks;
  uint64_t li = begin >> line_shift_;
  while (li * line_bytes < end) {
    const bool whole_page = (li & (kPageLines - 1)) == 0 && li * line_bytes >= begin &&
                            (li + kPageLines) * line_bytes <= end && !checks;
    if (!whole_page) {
      const uint8_t mask = sector_mask(li, begin, end);
      const auto line_bit = static_cast<uint16_t>(1u << (li & (kPageLines - 1)));
      if (!coalescing || !rides(near, tensor, li, line_bit, sectors(mask))) {
        Tag* tag = nullptr;
        read_one(near, tensor, li, begin, end, tag);
        // Only a whole line's request can carry another core's request for any of its sectors.
        if (coalescing && mask == (1u << sectors_per_line_) - 1)
          coalescer_.lead(coalescer_key(near, li), line_bit, now_);
      }
      ++li;
      continue;
    }
    if (coalescing && rides(near, tensor, li, kAllLines, kPageLines * sectors_per_line_)) {
      li += kPageLines;
      continue;
    }
    if (!read_recorded_page(near, li, tensor, begin, end)) {
      std::array<Line*, kPageLines> page{};
      std::array<Tag*, kPageLines> tags{};
      for (uint64_t k = 0; k < kPageLines; ++k)
        page[k] = &read_one(near, tensor, li + k, begin, end, tags[k]);
      record_page(page, tags, li, page_key(near, li));
    }
    if (coalescing) coalescer_.lead(coalescer_key(near, li), kAllLines, now_);
    li += kPageLines;
  }
}

bool L2Cache::rides(int near, int tensor, uint64_t first_line, uint16_t lines, uint64_t count) {
  const uint64_t ready = coalescer_.ride(coalescer_key(near, first_line), lines, now_);
  if (!ready) return false;
  ride_wait_ = std::max(ride_wait_, ready);
  coalesced_read_sectors += count;
  if (tensor >= 0) read_sectors[static_cast<size_t>(tensor)] += count;
  return true;
}

L2Cache::Line& L2Cache::read_one(int near, int tensor, uint64_t line_index, uint64_t begin, uint64_t end,
                                 Tag*& tag) {
  const uint8_t mask = sector_mask(line_index, begin, end);
  partition_bytes_[static_cast<size_t>(serving_partition(near, line_index))] +=
      sectors(mask) * static_cast<uint64_t>(params_.sector_bytes);
  Line* served = nullptr;
  add_missing(line_index, read_line(near, line_index, mask, tensor, served, tag));
  return *served;
}

void L2Cache::write_range(int near, int tensor, uint64_t begin, uint64_t end) {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  for (uint64_t li = begin >> line_shift_; li * line_bytes < end; ++li) {
    const uint8_t mask = sector_mask(li, begin, end);
    partition_bytes_[static_cast<size_t>(home_of_line(li))] +=
        sectors(mask) * static_cast<uint64_t>(params_.sector_bytes);
    write_line(near, li, mask, tensor);
  }
}

void L2Cache::atomic_read_range(int tensor, uint64_t begin, uint64_t end) {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  wait_for_pending_fills(begin, end);
  for (uint64_t li = begin >> line_shift_; li * line_bytes < end; ++li) {
    const uint8_t mask = sector_mask(li, begin, end);
    const int home = home_of_line(li);
    partition_bytes_[static_cast<size_t>(home)] +=
        sectors(mask) * static_cast<uint64_t>(params_.sector_bytes);
    Line* served = nullptr;
    Tag* tag = nullptr;
    add_missing(li, read_line(home, li, mask, tensor, served, tag));
  }
}

// Line by line (no page records), a stale copy in the serving partition dropped first, so that the read
// fetches it again from home as a miss there.
void L2Cache::acquire_read_range(int near, int tensor, uint64_t begin, uint64_t end) {
  const uint64_t line_bytes = static_cast<uint64_t>(params_.line_bytes);
  wait_for_pending_fills(begin, end);
  for (uint64_t li = begin >> line_shift_; li * line_bytes < end; ++li) {
    const int serving = serving_partition(near, li);
    const uint64_t first = first_way(serving, li);
    const int64_t w = serving == home_of_line(li) ? -1 : find_way(&tags_[first], static_cast<Tag>(li + 1));
    if (w >= 0 && lines_[first + static_cast<uint64_t>(w)].stale) {
      drop_copy(first + static_cast<uint64_t>(w), li);
      ++refetched_stale_copies;
    }
    Tag* tag = nullptr;
    read_one(near, tensor, li, begin, end, tag);
  }
}

void L2Cache::add_missing(uint64_t line_index, uint8_t missing) {
  if (!missing) return;
  const uint64_t page = line_index >> kPageShift;
  if (params_.merge_pending_fills && (missed_pages_.empty() || missed_pages_.back() != page))
    missed_pages_.push_back(page);
  const uint64_t sector = static_cast<uint64_t>(params_.sector_bytes);
  const uint64_t lb = line_index * static_cast<uint64_t>(params_.line_bytes);
  for (uint32_t s = 0; s < sectors_per_line_; ++s) {
    if (!(missing >> s & 1)) continue;
    const uint64_t at = lb + s * sector;
    if (at != miss_.end) fetch_run(), miss_.begin = at;
    miss_.end = at + sector;
  }
}

void L2Cache::fetch_run() {
  if (miss_.end == miss_.begin) return;
  const uint64_t bytes = miss_.end - miss_.begin;
  MemAccess m{miss_.tensor, miss_.begin, 1, bytes, bytes, false, miss_.core};
  miss_.done = std::max(miss_.done, next_->access(m, miss_.issue_cycle));
  miss_.begin = miss_.end = 0;
}

// When the partitions the access touched have served their bytes (booked on their calendars).
uint64_t L2Cache::partition_done(int near, uint64_t issue_cycle) {
  uint64_t done = issue_cycle;
  accepted_ = issue_cycle;
  bool far = false;
  for (size_t p = 0; p < partition_bytes_.size(); ++p) {
    if (!partition_bytes_[p]) continue;
    const bool is_far = static_cast<int>(p) != near;
    far = far || is_far;
    const uint64_t booked = calendars_[p].serve(issue_cycle, partition_bytes_[p]);
    accepted_ = std::max(accepted_, booked);
    done = std::max(done, booked + static_cast<uint64_t>(params_.hit_latency_cycles) +
                              (is_far ? static_cast<uint64_t>(params_.far_latency_cycles) : 0));
  }
  far_accesses += far ? 1 : 0;
  return done;
}

void L2Cache::forget_before(uint64_t cycle) {
  for (auto& c : calendars_) c.forget_before(cycle);
  std::erase_if(pending_fills_, [cycle](const auto& fill) { return fill.second.ready < cycle; });
}

std::vector<uint64_t> L2Cache::dirty_bytes_per_tensor() const {
  std::vector<uint64_t> out(tensor_names.size(), 0);
  for (size_t i = 0; i < lines_.size(); ++i) {
    const Line& l = lines_[i];
    if (tags_[i] && l.dirty && l.tensor >= 0)
      out[l.tensor] += sectors(l.dirty) * static_cast<uint64_t>(params_.sector_bytes);
  }
  return out;
}

std::vector<uint64_t> L2Cache::resident_bytes_per_tensor() const {
  std::vector<uint64_t> held(tensor_names.size(), 0);
  const uint64_t ways = static_cast<uint64_t>(params_.ways);
  for (size_t i = 0; i < lines_.size(); ++i) {
    const Line& l = lines_[i];
    if (!tags_[i] || !l.valid || l.tensor < 0) continue;
    uint8_t valid = l.valid;
    const uint64_t line_index = tags_[i] - 1;
    const int home = home_of_line(line_index);
    if (static_cast<int>(i / ways / sets_per_partition_) != home) {  // a copy: its home's sectors count there
      const uint64_t first = first_way(home, line_index);
      const int64_t way = find_way(&tags_[first], tags_[i]);
      if (way >= 0) valid &= static_cast<uint8_t>(~lines_[first + static_cast<uint64_t>(way)].valid);
    }
    held[static_cast<size_t>(l.tensor)] += sectors(valid) * static_cast<uint64_t>(params_.sector_bytes);
  }
  return held;
}

void L2Cache::record_kernel_end() {
  const std::vector<uint64_t> dirty = dirty_bytes_per_tensor(), resident = resident_bytes_per_tensor();
  for (size_t t = 0; t < dirty.size(); ++t) {
    flushed_dirty_bytes[t] += dirty[t];
    resident_bytes_at_kernel_end[t] += resident[t];
  }
}

void L2Cache::flush() {
  record_kernel_end();
  std::fill(tags_.begin(), tags_.end(), Tag{0});
  std::fill(lines_.begin(), lines_.end(), Line{});
  std::fill(victim_orders_.begin(), victim_orders_.end(), VictimOrder{});
  records_.clear();
  record_keys_.clear();
  free_records_.clear();
  std::fill(record_hints_.begin(), record_hints_.end(), 0);
  pending_fills_.clear();
  coalescer_.clear();
}

namespace {

// A set of address bits written as their numbers ("12 13 15 17 19"), read into a mask.
uint32_t address_bits(ParamReader& p, const std::string& name, uint32_t default_mask,
                      std::string_view description) {
  std::string default_text;
  for (int bit = 0; bit < 32; ++bit)
    if (default_mask >> bit & 1) default_text += (default_text.empty() ? "" : " ") + std::to_string(bit);
  std::istringstream in(p.get<std::string>(name, default_text, "", description));
  uint32_t mask = 0;
  std::string word;
  while (in >> word) {
    int bit = -1;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), bit);
    if (error != std::errc{} || end != word.data() + word.size() || bit < 0 || bit > 31)
      p.fail(name,
             fmt::format("'{}' is not an address bit (a number 0 to 31, bits separated by spaces)", word));
    if (mask >> bit & 1) p.fail(name, fmt::format("address bit {} named twice", bit));
    mask |= 1u << bit;
  }
  return mask;
}

}  // namespace

void register_l2_models() {
  Registry<L2Cache>::instance().add(
      "sectored", "shared L2: sectored lines, hashed sets, LRU/FIFO, write-back + write-allocate, partitions",
      [](const char* instance, ParamReader& p, const BuildContext& ctx) {
        L2Cache::Params d, r;
        r.capacity_bytes = static_cast<uint64_t>(p.get<int64_t>(
            "capacity_bytes", static_cast<int64_t>(d.capacity_bytes), "bytes", "total L2 capacity", 1));
        r.line_bytes = p.get<int64_t>("line_bytes", d.line_bytes, "bytes", "cache line (tag) size", 1, 4096);
        r.sector_bytes = p.get<int64_t>("sector_bytes", d.sector_bytes, "bytes",
                                        "unit of valid/dirty state and DRAM transfer", 1, 4096);
        r.ways = p.get<int64_t>("ways", d.ways, "ways", "associativity", 1, 1024);
        r.partitions = p.get<int64_t>("partitions", d.partitions, "partitions",
                                      "address-interleaved partitions, each with its own bandwidth", 1, 64);
        const std::string replacement =
            p.choice("replacement", "lru", {"lru", "fifo", "plru"}, "victim choice within a set");
        r.replacement = replacement == "lru"    ? L2Cache::Replacement::Lru
                        : replacement == "fifo" ? L2Cache::Replacement::Fifo
                                                : L2Cache::Replacement::TreePlru;
        r.bytes_per_cycle = p.get<double>("bytes_per_cycle", d.bytes_per_cycle, "bytes/cycle",
                                          "bandwidth of one partition, in core cycles", 1e-3, 1e9);
        r.hit_latency_cycles = p.get<int64_t>("hit_latency_cycles", d.hit_latency_cycles, "cycles",
                                              "request to data for a hit in the near partition", 0, 1 << 20);
        r.far_latency_cycles =
            p.get<int64_t>("far_latency_cycles", d.far_latency_cycles, "cycles",
                           "extra latency to the partition the core is not attached to", 0, 1 << 20);
        r.bandwidth_gbps =
            p.get<double>("bandwidth_gbps", d.bandwidth_gbps, "GB/s",
                          "bandwidth of one partition in time, the L2 having its own clock (0: "
                          "bytes_per_cycle in core cycles); converted at the cores' clock",
                          0.0, 1e9);
        r.hit_latency_ns =
            p.get<double>("hit_latency_ns", d.hit_latency_ns, "ns",
                          "hit latency in time (0: hit_latency_cycles in core cycles)", 0.0, 1e9);
        r.far_latency_ns =
            p.get<double>("far_latency_ns", d.far_latency_ns, "ns",
                          "far-partition latency in time (0: far_latency_cycles in core cycles)", 0.0, 1e9);
        const std::array<std::tuple<double, const char*, const char*>, 3> in_time{
            {{r.bandwidth_gbps, "bandwidth_gbps", "bytes_per_cycle"},
             {r.hit_latency_ns, "hit_latency_ns", "hit_latency_cycles"},
             {r.far_latency_ns, "far_latency_ns", "far_latency_cycles"}}};
        for (const auto& [value, time, cycles] : in_time)
          if (value > 0 && p.has(cycles))
            p.fail_combination({cycles}, fmt::format("give {0} (in time) or {1} (in core cycles), not both; "
                                                     "{0}=0 lets {1} count",
                                                     time, cycles));
        r.far_data =
            p.choice("far_data", "home", {"home", "copy"},
                     "home: a line lives only in its home partition; copy: a core's partition also keeps "
                     "copies of lines homed in the other (Ampere, Hopper)") == "copy"
                ? L2Cache::FarData::Copy
                : L2Cache::FarData::Home;
        r.home = p.choice("home", "hashed", {"hashed", "address_parity"},
                          "which partition is a line's home: hashed (a hash of the line), or address_parity "
                          "(the parity of home_bits and of a hash of the 2 MiB page: the H100's and the "
                          "H200's, measured)") == "address_parity"
                     ? L2Cache::Params::Home::AddressParity
                     : L2Cache::Params::Home::Hashed;
        r.set_index =
            p.choice("set_index", "hashed", {"hashed", "paired_regions"},
                     "how lines are dealt over a partition's sets: hashed (evenly, whatever the addresses), "
                     "or paired_regions (home: address_parity): a line and its partner in the other "
                     "partition (partner_bits flipped) share a set index, and contiguous memory "
                     "fills the sets evenly while pieces of it do not (as the H200's, measured)") ==
                    "paired_regions"
                ? L2Cache::Params::SetIndex::PairedRegions
                : L2Cache::Params::SetIndex::Hashed;
        r.home_bits = address_bits(p, "home_bits", d.home_bits,
                                   "home: address_parity: the address bits within a 2 MiB page whose parity "
                                   "(with a hash of the page) picks a line's home (H200 12 13 15 17 19, H100 "
                                   "12 13 16 17 19; measured)");
        r.partner_bits =
            address_bits(p, "partner_bits", d.partner_bits,
                         "set_index: paired_regions: the address bits a line's partner in the "
                         "other partition differs in (an odd number of them home bits; H200 8 12, "
                         "H100 10 13 15; measured)");
        try {  // blame the bits (a -p of them) rather than the section
          L2Cache::check_address_bits(r);
        } catch (const std::invalid_argument& e) {
          const std::string what = e.what();
          for (const char* key : {"home_bits", "partner_bits"})
            if (what.rfind(key, 0) == 0) p.fail(key, what.substr(what.find(':') + 2));
          p.fail_combination({}, what);
        }
        r.region_bytes = static_cast<uint64_t>(p.get<int64_t>(
            "region_bytes", 0, "bytes",
            "set_index: paired_regions: the memory whose line pairs are dealt over consecutive sets as "
            "one region, in a seeded order of its own; 0: the smallest power of two of pairs at least the "
            "sets (4 MiB on the H200)",
            0, int64_t{1} << 40));
        r.page_seed = static_cast<uint64_t>(p.get<int64_t>(
            "page_seed", 0, "",
            "home: address_parity and set_index: paired_regions take it into their page hashes: where "
            "memory lies, which differs from process to process on a GPU (physical addresses); 0: the "
            "model's own placement, another value another (to see how much a figure moves with it)",
            0, int64_t{1} << 62));
        r.max_dirty_ways =
            p.get<int64_t>("max_dirty_ways", -1, "ways",
                           "dirty lines a set may hold before the oldest is written back early; "
                           "-1: as many as it has ways",
                           -1, 1024);
        if (r.max_dirty_ways < 0 || r.max_dirty_ways > r.ways) r.max_dirty_ways = r.ways;
        r.window_cycles = p.get<int64_t>("window_cycles", d.window_cycles, "cycles",
                                         "granularity of the bandwidth calendars", 1, 1 << 20);
        r.coalescer_entries = static_cast<uint64_t>(p.get<int64_t>(
            "coalescer_entries", static_cast<int64_t>(d.coalescer_entries), "pages",
            "pages of lines (16 lines each) the request coalescer tracks in flight, a power of two: a read "
            "of lines that another core of the same partition is waiting for rides on its request, without "
            "a lookup; 0: every request is looked up",
            0, int64_t{1} << 30));
        r.merge_pending_fills = p.get<bool>(
            "merge_pending_fills", d.merge_pending_fills, "",
            "a read of a line whose DRAM fill is still in flight waits for that fill (measured on "
            "the H100: validation/data/h100_mem_probe.csv); false: it hits at the hit latency");
        const std::string chance =
            p.choice("dirty_second_chance", "none", {"none", "all", "far_writes"},
                     "which dirty lines chosen as the victim are written back and stay, clean and most "
                     "recently used, the next oldest leaving instead: none (LRU), all, or far_writes: those "
                     "last dirtied by a core attached to the other partition");
        r.dirty_second_chance = chance == "all"          ? L2Cache::Params::SecondChance::All
                                : chance == "far_writes" ? L2Cache::Params::SecondChance::FarWrites
                                                         : L2Cache::Params::SecondChance::None;
        const std::string on_store = p.choice(
            "copies_on_store", "keep", {"keep", "invalidate", "update", "writer_keeps", "demote"},
            "far_data: copy: what a store does to the copies other partitions hold of its line: keep "
            "them as they are, invalidate them, update them (the written sectors cross the fabric to "
            "each one the writer is not attached to), writer_keeps (the copy in the writer's "
            "partition takes the sectors, the others are dropped), or demote (the copy in the writer's "
            "partition takes the sectors, the others stay but become their set's oldest line)");
        using Rule = L2Cache::Params::CopiesOnStore;
        r.copies_on_store = on_store == "invalidate"     ? Rule::Invalidate
                            : on_store == "update"       ? Rule::Update
                            : on_store == "writer_keeps" ? Rule::WriterKeeps
                            : on_store == "demote"       ? Rule::Demote
                                                         : Rule::Keep;
        r.atomics_at_home = p.get<bool>(
            "atomics_at_home", d.atomics_at_home, "",
            "an atomic's read (STORE_ADD with noc.atomics: l2) is served at the line's home partition, "
            "making no copy; false: through a copy in the core's partition, as a read");
        r.acquire_refetches = p.get<bool>(
            "acquire_refetches", d.acquire_refetches, "",
            "far_data: copy, copies_on_store: keep: a load of a coherent tensor (taken under a lock) fetches "
            "again from home a copy that a store from a core of another partition made stale; false: the "
            "stale copy serves it");
        r.far_fills_oldest = p.get<bool>(
            "far_fills_oldest", d.far_fills_oldest, "",
            "far_data: copy: a line fetched from DRAM into its home partition for a core of the other "
            "partition enters that partition as its set's oldest line (the requester keeps its copy); "
            "false: as the most recent, as any fill");
        r.store_copies = p.get<bool>(
            "store_copies", d.store_copies, "",
            "far_data: copy: a store of a line homed in the other partition also leaves a clean copy of the "
            "stored sectors in the writer's partition, taking room there as a read's copy does; false: only "
            "the home partition takes it");
        const std::string revalidates =
            p.choice("fence_revalidates", "none", {"none", "own", "all"},
                     "far_data: copy: which copies a read may use after a GPU-scope fence (MEMBAR.SC.GPU): "
                     "none (fences change nothing), own (those filled or checked at home since the reader's "
                     "own last fence), all (since any core's last fence); another is checked at home, its "
                     "sectors crossing the fabric again and those its home lost coming from DRAM");
        r.fence_revalidates = revalidates == "own"   ? L2Cache::Params::FenceRevalidates::Own
                              : revalidates == "all" ? L2Cache::Params::FenceRevalidates::All
                                                     : L2Cache::Params::FenceRevalidates::None;
        r.fence_fabric_sectors = static_cast<uint64_t>(p.get<int64_t>(
            "fence_fabric_sectors", static_cast<int64_t>(d.fence_fabric_sectors), "sectors",
            "sectors a GPU-scope fence sends between the partitions, whatever came before it: counted with "
            "the fabric sectors, no data moved",
            0, int64_t{1} << 20));
        r.core_partitions = p.get<std::string>(
            "core_partitions", d.core_partitions, "",
            "the partition each core is attached to, one digit per core in the order the block scheduler "
            "fills them (spaces ignored; as many as chip.cores); empty: core % partitions");
        try {
          return std::make_unique<L2Cache>(instance, r, ctx.clock_ghz);
        } catch (const std::invalid_argument& e) {
          p.fail_combination({}, e.what());
        }
      });
}

}  // namespace attnsim
