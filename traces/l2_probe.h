// Memory probes: thread blocks that only stream a tensor from device memory, the simulator's twin of
// validation/l2_probe.cu. Run on a whole-chip config they show the capacity the L2 gives data read by one
// core, by all cores in step or out of step, or by each core privately, and what happens past it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "isa/program.h"

namespace attnsim::traces {

enum class ProbeMode {
  Single,          // one block reads the whole tensor `passes` times
  Shared,          // `blocks` blocks each read the whole tensor `passes` times from its start
  ReadFence,       // as Shared, a FENCE after every `fence_every` 16 KiB chunks (validation/l2_probe.cu's
                   // rfence, FENCE_EVERY)
  ReadFenceOther,  // block 0 reads the tensor `passes` times; blocks 1 .. blocks - 1 each issue as many
                   // FENCEs as it reads chunks (the GPU's rfenceother: fences in a loop until it is done)
  // The GPU's rfence and rfenceother with loads through cp.async (the memory-efficient backward's tile
  // loads) or weak ld.global where theirs are ld.global.cg: the model's LOAD is one kind, so these run as
  // ReadFence and ReadFenceOther (on an H200 the three kinds' counters are equal, validation/data/
  // h200_l2_probe_fenceasync.csv)
  ReadFenceAsync,
  ReadFenceWeak,
  ReadFenceOtherAsync,
  ReadFenceOtherWeak,
  Spread,         // as Shared, block b starting at chunk b * chunks / blocks and wrapping around
  Private,        // block b reads its own 1 / blocks of the tensor `passes` times
  WritePrivate,   // block b stores its own 1 / blocks of the tensor `passes` times
  WriteSingle,    // one block stores the whole tensor `passes` times
  Rmw,            // block b loads, adds to and stores back its own 1 / blocks of the tensor `passes` times
  RmwSpread,      // every block loads and stores back the whole tensor `passes` times, from Spread's offset
  RmwHalf,        // `groups` groups of consecutive blocks, each with its own part of the tensor: per step a
                  // block loads a chunk of its part's first half, then loads and stores back the chunk at the
                  // same place in the second half, `passes` times, block r of a group from r / (its blocks)
  RmwLock,        // as RmwHalf, each rewrite under a lock per chunk (LOCK, FENCE, load, store, FENCE,
                  // UNLOCK), the tensor `coherent`: the memory-efficient backward's AtomicLock on its dQ tile
  RmwFence,       // as RmwLock without the lock: the fences and the coherent loads alone
  WriteThenRead,  // block b stores its slice of the first quarter, loads its slice of the rest `passes`
                  // times, then loads its first-quarter slice again
  ReadThenRead,   // as WriteThenRead with the first quarter loaded, not stored
  Scatter,        // one block reads `bytes` of 128-byte lines scattered over a tensor 8 times as large
  Retouch,        // one block reads parts 0 and 1 (of `bytes` each), then `passes` times part 0 again and a
                  // new part, then part 0 once more: LRU keeps part 0 below a partition's capacity
  Heads,          // one block reads the first bytes / (2 heads) of every head's K and V (tensors Q, K, V, O
                  // of heads x head_bytes each), head by head, per 16 KiB chunk K then V, `passes` times:
                  // the project's kernels' layout, whose lines fill the GPU's L2 sets less evenly
  Copies,         // one block reads `copies` blocks of `bytes` each, block i at i * stride_bytes, `passes`
                  // times: whether lines a power-of-two stride apart pile into the same sets
  Stale,         // `blocks` blocks each read a hot part of hot_bytes hot_passes times, then the `bytes` after
                 // it `passes` times, all from offset 0: under LRU the dead hot part goes first
  WriteBetween,  // `blocks` blocks each read a part of hot_bytes hot_passes times, store the `bytes` after
                 // it `passes` times, then read the part once more: whether a store of a line homed in the
                 // other partition takes room in the writer's partition
  ReadBetween,   // as WriteBetween with the `bytes` loaded, not stored (reads make copies there); the last
                 // mode (find_probe_mode counts up to it)
};

// The bytes each LOAD (or STORE) of a probe block moves: validation/l2_probe.cu's 1024 threads x 16 bytes.
inline constexpr uint64_t kProbeChunkBytes = 16384;

struct ProbeShape {
  ProbeMode mode = ProbeMode::Shared;
  uint64_t bytes = 32ull << 20;  // rounded down to whole 16 KiB chunks
  int64_t passes = 3;
  int64_t blocks = 132;                // ignored by Single
  int64_t heads = 6;                   // Heads only
  uint64_t head_bytes = 8ull << 20;    // Heads only: one head's K (and V), whole 16 KiB chunks
  int64_t copies = 17;                 // Copies only
  uint64_t stride_bytes = 1ull << 21;  // Copies only: whole 16 KiB chunks, at least `bytes`
  uint64_t hot_bytes = 12ull << 20;    // Stale, WriteBetween, ReadBetween: whole 16 KiB chunks
  int64_t hot_passes = 8;              // Stale, WriteBetween, ReadBetween
  int64_t groups = 1;                  // RmwHalf, RmwLock, RmwFence: divides `blocks`
  int64_t fence_every = 1;             // ReadFence: chunks a block reads between two FENCEs
  // Single, Shared, Spread, Private and the rfence modes: chunks a block keeps in flight. Its loads go to
  // this many SRAM buffers in turn, so load i + in_flight waits only for load i (validation/pace_probe.cu's
  // UNROLL: the GPU kernel issues that many chunks before it uses the first). 1 to kMaxProbeInFlight.
  int64_t in_flight = 1;
};

inline constexpr int64_t kMaxProbeInFlight = 8;

// One kernel "l2_probe" of grid (blocks, 1, 1); each block LOADs 16 KiB chunks (4 rows of 1024 f32) of
// tensor X into one SRAM buffer (or STOREs them from it), in the order of validation/l2_probe.cu; with
// in_flight > 1, into buffers B0, B1, ... in turn.
// Rmw, RmwSpread, RmwHalf, RmwLock, RmwFence, WriteThenRead, ReadThenRead: each block also stores its 4 KiB
// row of tensor `sink` at the end, as the kernel does. RmwLock: chunk c of a group's written half has the
// lock word at row (group * half + c) of tensor `locks`, 128 bytes a row. Heads: chunk j of head h's K is
// chunk h * head_bytes / 16 KiB + j of tensor K (V likewise). Scatter: line i of the footprint is line 8 i +
// splitmix64(i) mod 8 of X; each step of 128 lines first loads their 128 indices (u32) from tensor `lines`,
// as the kernel does.
isa::Program l2_probe(const ProbeShape& shape);
// The scattered line of footprint index i (validation/l2_probe.cu computes the same).
uint64_t scattered_line(uint64_t i);

std::optional<ProbeMode> find_probe_mode(
    std::string_view name);  // single, shared, spread, private, wprivate, wsingle, rmw, rmwspread,
                             // rmwhalf, rmwlock, rmwfence, rfence, rfenceother, rfenceasync,
                             // rfenceweak, rfenceotherasync, rfenceotherweak,
                             // wthenread, rthenread, scatter, retouch,
                             // heads, copies, stale, wbetween, rbetween
std::string_view probe_mode_name(ProbeMode mode);
// RmwHalf, RmwLock and RmwFence: the modes whose blocks form `groups`.
bool rewrites_halves(ProbeMode mode);
// ReadFence and its twins: one reader FENCEs after every `fence_every` chunks.
bool reader_fences(ProbeMode mode);
// ReadFenceOther and its twins: block 0 reads, the other blocks FENCE.
bool others_fence(ProbeMode mode);
// The reading modes that take ProbeShape::in_flight > 1.
bool keeps_chunks_in_flight(ProbeMode mode);

}  // namespace attnsim::traces
