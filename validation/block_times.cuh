// Per-block SM and %globaltimer at the points a kernel marks (harness.cu, TIMES=file): where the GPU places
// blocks and how co-resident ones share an SM. `times` (null: off) has `fields` entries per block: the SM,
// then one time per slot.
#pragma once

#include <cstddef>

namespace attnval {

__device__ inline void record_block_time_at(unsigned long long* times, int fields, int slot) {
  if (!times || threadIdx.x != 0) return;
  unsigned long long t;
  unsigned sm;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  asm volatile("mov.u32 %0, %smid;" : "=r"(sm));
  unsigned long long* row = times + fields * (blockIdx.y * static_cast<size_t>(gridDim.x) + blockIdx.x);
  row[0] = sm;
  row[1 + slot] = t;
}

}  // namespace attnval
