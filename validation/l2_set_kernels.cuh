// Eviction sets for the chunk probe's `sets` mode (l2_chunk_probe.cu): which lines share one L2 set.
// The pool is every line of the mapped chunks' 4 KiB blocks whose home is the partition the probing SM is
// attached to (a cold load of them is fast), so that a line the near partition evicts comes back from DRAM
// (slow), never from a far copy. A test: load x, load a list of lines, load x again and time it; x is
// evicted iff the list holds at least `ways` lines of x's set (LRU, measured: docs/chip.md). From the whole
// pool, parts are dropped while x stays evicted (Vila et al.'s group reduction) down to `ways` lines: an
// eviction set E. Then every pool line y is tested with E less one line plus y: x evicted iff y is in x's
// set. Everything the tests read lives in shared memory, so that no load but the tested ones reaches L2.
#pragma once

#include <cuda_runtime.h>

constexpr int kSetWays = 16;
constexpr int kMaxRanges = 1024;
constexpr int kMaxMembers = 256;
constexpr int kEvictedCycles = 448;

struct SetShared {
  unsigned range_begin[kMaxRanges], range_end[kMaxRanges];
  unsigned next_begin[kMaxRanges], next_end[kMaxRanges];  // drop_positions builds the new list here
  int ranges;
  unsigned evict_set[kSetWays];
  unsigned histogram[64];  // reload latencies in 32-cycle bins, every test
};

__device__ __forceinline__ unsigned pool_offset(const unsigned short* near_blocks, unsigned p) {
  return static_cast<unsigned>(near_blocks[p >> 5]) * 4096u + (p & 31u) * 128u;
}

__device__ __forceinline__ unsigned load_word(const char* base, unsigned offset, unsigned dep) {
  return load_cg(reinterpret_cast<const unsigned*>(base + offset) + dep);
}

// Loads the positions of the shared range list outside [skip_lo, skip_hi), lanes in parallel, eight loads
// in flight per lane; returns the sum of the loaded words over the warp (zero: the memory is zeroed), which
// the next load's address takes, so it waits for all of them.
__device__ unsigned touch_ranges(const char* base, const unsigned short* near_blocks, const SetShared& s,
                                 unsigned skip_lo, unsigned skip_hi, unsigned dep) {
  unsigned acc = 0, pos0 = 0;
  for (int r = 0; r < s.ranges; ++r) {
    const unsigned a = s.range_begin[r], len = s.range_end[r] - a;
    for (unsigned k = threadIdx.x; k < len; k += 32 * 8) {
      unsigned v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const unsigned kk = k + 32u * j, pos = pos0 + kk;
        const bool load = kk < len && (pos < skip_lo || pos >= skip_hi);
        v[j] = load ? load_word(base, pool_offset(near_blocks, a + kk), dep) : 0u;
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) acc += v[j];
    }
    pos0 += len;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  return acc;
}

// Reloads x after the loads whose sum is `dep`; true if it came from DRAM.
__device__ bool reload_evicted(const char* base, unsigned x_offset, unsigned dep, SetShared& s) {
  const long long start = clock64();
  const unsigned value = load_word(base, x_offset, dep);
  __shared__ volatile unsigned sink;
  sink = value;
  __syncwarp();
  const long long cycles = clock64() - start;
  if (threadIdx.x == 0) ++s.histogram[cycles / 32 < 63 ? cycles / 32 : 63];
  __syncwarp();
  return cycles >= kEvictedCycles;
}

__device__ bool evicts_ranges(const char* base, const unsigned short* near_blocks, unsigned x_offset,
                              SetShared& s, unsigned skip_lo, unsigned skip_hi) {
  const unsigned first = load_word(base, x_offset, 0);
  const unsigned dep = touch_ranges(base, near_blocks, s, skip_lo, skip_hi, first);
  return reload_evicted(base, x_offset, dep, s);
}

// Removes positions [lo, hi) from the range list (lane 0; the others wait).
__device__ void drop_positions(SetShared& s, unsigned lo, unsigned hi) {
  if (threadIdx.x == 0) {
    unsigned* nb = s.next_begin;
    unsigned* ne = s.next_end;
    int n = 0;
    unsigned pos0 = 0;
    for (int r = 0; r < s.ranges; ++r) {
      const unsigned a = s.range_begin[r], b = s.range_end[r], p1 = pos0 + (b - a);
      if (pos0 < lo && n < kMaxRanges) nb[n] = a, ne[n++] = a + (min(lo, p1) - pos0);
      if (p1 > hi && n < kMaxRanges) nb[n] = a + (max(hi, pos0) - pos0), ne[n++] = b;
      pos0 = p1;
    }
    for (int r = 0; r < n; ++r) s.range_begin[r] = nb[r], s.range_end[r] = ne[r];
    s.ranges = n;
  }
  __syncwarp();
}

__device__ unsigned range_size(const SetShared& s) {
  unsigned n = 0;
  for (int r = 0; r < s.ranges; ++r) n += s.range_end[r] - s.range_begin[r];
  return n;
}

// Reduces the whole pool to an eviction set for x; false if x is not evicted by the pool or a step finds
// no part to drop (a test gave a false eviction earlier). An eviction is believed when two tests agree.
__device__ bool reduce_to_eviction_set(const char* base, const unsigned short* near_blocks, unsigned pool,
                                       unsigned x_offset, SetShared& s) {
  if (threadIdx.x == 0) s.range_begin[0] = 0, s.range_end[0] = pool, s.ranges = 1;
  __syncwarp();
  if (!evicts_ranges(base, near_blocks, x_offset, s, 0, 0)) return false;
  unsigned n = pool;
  while (n > kSetWays) {
    bool dropped = false;
    for (unsigned part = 0; part <= kSetWays && !dropped; ++part) {
      const unsigned lo = static_cast<unsigned>(static_cast<unsigned long long>(n) * part / (kSetWays + 1));
      const unsigned hi =
          static_cast<unsigned>(static_cast<unsigned long long>(n) * (part + 1) / (kSetWays + 1));
      if (lo == hi) continue;
      if (evicts_ranges(base, near_blocks, x_offset, s, lo, hi) &&
          evicts_ranges(base, near_blocks, x_offset, s, lo, hi)) {
        drop_positions(s, lo, hi);
        dropped = true;
      }
    }
    if (!dropped || s.ranges >= kMaxRanges) return false;
    n = range_size(s);
  }
  if (threadIdx.x == 0) {
    int i = 0;
    for (int r = 0; r < s.ranges; ++r)
      for (unsigned p = s.range_begin[r]; p < s.range_end[r] && i < kSetWays; ++p) s.evict_set[i++] = p;
  }
  __syncwarp();
  return n == kSetWays;
}

// x, the first ways - 1 lines of E and the pool lines [lo, hi): true if x was evicted, so one of them at
// least is in x's set.
__device__ bool evicts_with(const char* base, const unsigned short* near_blocks, unsigned x_offset,
                            unsigned lo, unsigned hi, SetShared& s) {
  const unsigned first = load_word(base, x_offset, 0);
  const unsigned count = kSetWays - 1 + (hi - lo);
  unsigned acc = 0;
  for (unsigned i = threadIdx.x; i < count; i += 32) {
    const unsigned p = i < kSetWays - 1 ? s.evict_set[i] : lo + (i - (kSetWays - 1));
    acc += load_word(base, pool_offset(near_blocks, p), first);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  return reload_evicted(base, x_offset, acc, s);
}

// Every pool line in x's set (E included), to `members` (at most kMaxMembers; returns the count): blocks of
// test_block lines tested with E less one line, then each line of a block that evicted x (twice).
__device__ int members_of_set(const char* base, const unsigned short* near_blocks, unsigned pool, unsigned x,
                              unsigned x_offset, SetShared& s, unsigned* members, unsigned test_block,
                              bool reverse) {
  int count = 0;
  for (unsigned step = 0; step < pool; step += test_block) {
    const unsigned lo = reverse ? (pool - min(pool, step + test_block)) : step;
    const unsigned hi = reverse ? pool - step : min(pool, lo + test_block);
    if (test_block > 1 && !evicts_with(base, near_blocks, x_offset, lo, hi, s)) continue;
    for (unsigned y = lo; y < hi; ++y) {
      if (y == x) continue;
      bool member = false;
      for (int i = 0; i < kSetWays; ++i) member |= s.evict_set[i] == y;
      if (!member)
        member = evicts_with(base, near_blocks, x_offset, y, y + 1, s) &&
                 evicts_with(base, near_blocks, x_offset, y, y + 1, s);
      if (member && threadIdx.x == 0 && count < kMaxMembers) members[count] = y;
      count += member;
    }
  }
  __syncwarp();
  return count;
}

// The lines of the first far_lines of the mapping (whole chunks) outside the pool (their home is the other
// partition) whose copy, made by a whole-line read (a warp's 32 words), lands in x's set; stored as
// kFarFlag | line index. near_bits: a bit per 4 KiB block, set for the pool's.
constexpr unsigned kFarFlag = 0x80000000u;
__device__ int far_members_of_set(const char* base, const unsigned short* near_blocks,
                                  const unsigned* near_bits, unsigned far_lines, unsigned x_offset,
                                  SetShared& s, unsigned* members) {
  int count = 0;
  for (unsigned line = 0; line < far_lines; ++line) {
    const unsigned block = line / 32;
    if (near_bits[block / 32] >> (block % 32) & 1) continue;
    bool member = true;
    for (int repeat = 0; repeat < 2 && member; ++repeat) {
      const unsigned first = load_word(base, x_offset, 0);
      unsigned acc = threadIdx.x < kSetWays - 1
                         ? load_word(base, pool_offset(near_blocks, s.evict_set[threadIdx.x]), first)
                         : 0u;
      acc += load_word(base, line * 128u + threadIdx.x * 4u, first);  // the whole line, one request
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      member = reload_evicted(base, x_offset, acc, s);
    }
    if (member && threadIdx.x == 0 && count < kMaxMembers) members[count] = kFarFlag | line;
    count += member;
  }
  __syncwarp();
  return count;
}

// One block of one warp. near_blocks: the pool's 4 KiB blocks (index from the mapping's start), copied to
// shared memory. targets: pool positions; or, with target_count < 0, every pool line whose address bits 7
// and 9 are 0 and that no set found before holds, until -target_count sets are found (bits 7 and 9 only
// move a line to the set of its set's members XOR those bits: measured, docs/chip.md). Per set, out gets
// [target, status, member count, members...] in kMaxMembers + 3 words: status 1 found, 0 the pool does not
// evict the target or the reduction failed, 2 more members than kMaxMembers (a failed test, not believed).
// budget_ns > 0: no new target once that much %globaltimer time has passed (the sets found so far are kept,
// where a host-side timeout would lose them all).
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void set_kernel(const char* __restrict__ base,
                           const unsigned short* __restrict__ near_blocks_global, unsigned near_count,
                           const unsigned* __restrict__ targets, int target_count, unsigned* __restrict__ out,
                           unsigned* __restrict__ histogram_out, unsigned test_block, bool reverse,
                           unsigned far_lines, unsigned long long budget_ns) {
  const unsigned long long started = global_ns();
  extern __shared__ unsigned char shared_bytes[];
  unsigned short* near_blocks = reinterpret_cast<unsigned short*>(shared_bytes);
  const unsigned pool = near_count * 32;
  unsigned* found_bits = reinterpret_cast<unsigned*>(shared_bytes + ((near_count * 2 + 15) / 16) * 16);
  unsigned* near_bits = found_bits + (pool + 31) / 32;  // 65,536 blocks at most
  for (unsigned i = threadIdx.x; i < 2048; i += 32) near_bits[i] = 0;
  __syncwarp();
  if (threadIdx.x == 0)
    for (unsigned i = 0; i < near_count; ++i)
      near_bits[near_blocks_global[i] / 32] |= 1u << (near_blocks_global[i] % 32);
  __shared__ SetShared s;
  __shared__ unsigned members[kMaxMembers];
  for (unsigned i = threadIdx.x; i < near_count; i += 32) near_blocks[i] = near_blocks_global[i];
  for (unsigned i = threadIdx.x; i < (pool + 31) / 32; i += 32) found_bits[i] = 0;
  for (int i = threadIdx.x; i < 64; i += 32) s.histogram[i] = 0;
  __syncwarp();
  const bool sweep = target_count < 0;
  const int sets = sweep ? -target_count : target_count;
  unsigned next = 0;
  for (int t = 0; t < sets; ++t) {
    const bool over = budget_ns > 0 && __shfl_sync(0xffffffffu, global_ns() - started, 0) > budget_ns;
    if (over) break;
    unsigned x = 0;
    if (sweep) {
      while (next < pool && ((next & 5) != 0 || (found_bits[next / 32] >> (next % 32) & 1))) ++next;
      if (next >= pool) break;
      x = next++;
    } else {
      x = targets[t];
    }
    const unsigned x_offset = pool_offset(near_blocks, x);
    const bool found = reduce_to_eviction_set(base, near_blocks, pool, x_offset, s);
    const int count =
        !found      ? 0
        : far_lines ? far_members_of_set(base, near_blocks, near_bits, far_lines, x_offset, s, members)
                    : members_of_set(base, near_blocks, pool, x, x_offset, s, members, test_block, reverse);
    const unsigned status = !found ? 0u : count > kMaxMembers ? 2u : 1u;
    if (threadIdx.x == 0 && status == 1 && far_lines == 0)
      for (int i = 0; i < count; ++i) found_bits[members[i] / 32] |= 1u << (members[i] % 32);
    unsigned* o = out + static_cast<size_t>(t) * (kMaxMembers + 3);
    if (threadIdx.x == 0) {
      o[0] = x;
      o[1] = status;
      o[2] = count;
      for (int i = 0; i < count && i < kMaxMembers; ++i) o[3 + i] = members[i];
    }
    __syncwarp();
  }
  for (int i = threadIdx.x; i < 64; i += 32) histogram_out[i] = s.histogram[i];
}
