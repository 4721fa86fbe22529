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
isa::Program hot_part_bracket(const isa::Program& kernels, uint64_t hot_bytes, int64_t blocks,
                              Dtype dtype = Dtype::F16, HotReread reread = HotReread::All);
// The bytes the second read loads (all of them, or the sampled chunks of a half).
uint64_t hot_reread_bytes(const isa::Program& bracketed, HotReread reread);

}  // namespace attnsim::traces
