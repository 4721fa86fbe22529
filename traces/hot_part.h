// A program's kernels bracketed by two reads of a hot buffer, the simulator's twin of
// validation/memeff_room_probe.py: how much L2 room the kernels take, measured by how much of a buffer read
// just before them they push out. Run with the L2 kept between kernels (chip.l2_between_kernels: keep).
#pragma once

#include <cstdint>

#include "isa/dtype.h"
#include "isa/program.h"

namespace attnsim::traces {

inline constexpr const char* kHotPartTensor = "hot";

// Kernel "hot_read" (`blocks` blocks, block b reading chunks b, b + blocks, ... of tensor "hot" into the
// kernels' largest SRAM buffer, a chunk that buffer's size: every line once, by one block, as the GPU probe's
// grid-stride read), then `kernels`' own kernels, then "hot_read" again. hot_bytes is rounded down to whole
// chunks, at least one per block; dtype: the buffer's when it declares none (the machine's default).
// Throws std::invalid_argument.
// What the second read takes: all the chunks, or every 5th chunk of the first or second half (in the order
// the first read took them: few fills, so that the read evicts little of what it measures).
enum class HotReread : uint8_t { All, FirstHalf, SecondHalf };
// Who takes the first read: a grid of `grid` blocks of which `count` from `first` read, the others empty
// (the first wave goes out one block per core in order, so with a grid of one block per core these are
// the blocks on cores first .. first + count - 1: a buffer read by one L2 partition's cores).
// grid 0: the same `blocks` as the second read, all reading.
struct HotReaders {
  int64_t grid = 0, first = 0, count = 0;
};
isa::Program hot_part_bracket(const isa::Program& kernels, uint64_t hot_bytes, int64_t blocks,
                              Dtype dtype = Dtype::F16, HotReread reread = HotReread::All,
                              HotReaders first_read = {});
// The bytes the second read loads (all of them, or the sampled chunks of a half).
uint64_t hot_reread_bytes(const isa::Program& bracketed, HotReread reread);

}  // namespace attnsim::traces
