// Where a thread's local memory (register spills) lives in L2: blocks of 128 threads each write a private
// array of WORDS floats, indexed at run time so it stays in local memory, REPS times, then read it back.
//   local_probe BLOCKS WORDS REPS SMEM_KB [scatter|coalesced]
// SMEM_KB of dynamic shared memory per block limits the blocks per SM (e.g. 100: two per SM on an H100).
// If local memory is addressed by the hardware slot a thread runs in (the driver sizes it for the most
// threads that can be resident), blocks that follow each other in a slot reuse the same lines and the
// footprint in L2 is resident blocks x 128 x WORDS x 4 bytes, whatever the grid; if every block had lines
// of its own, it would be the whole grid's, and what does not fit would be written back to DRAM.
// Prints one RESULT line; the run script profiles the launch named local_probe_kernel.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_check.h"

constexpr int kThreads = 128;

// scatter: each lane writes a word of its own (4-byte stores, 8 sectors per warp store, each sector written
// 8 times); coalesced: every lane the same word index (one 128-byte line per warp store, written once).
template <int kWords>
__global__ void local_probe_kernel(float* out, int reps, int coalesced) {
  extern __shared__ float smem[];
  float a[kWords];
  const int t = static_cast<int>(threadIdx.x);
  const int lane_step = coalesced ? 0 : 1;
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < kWords; ++i) a[(i * 5 + t * lane_step + r) % kWords] = static_cast<float>(i + r + t);
  float s = 0;
  for (int i = 0; i < kWords; ++i) s += a[(i * 3 + t) % kWords];
  if (t == 0) smem[0] = s;
  __syncthreads();
  out[blockIdx.x * kThreads + t] = s + smem[0];
}

template <int kWords>
void launch(int blocks, int reps, size_t smem, int coalesced, float* out) {
  CHECK(cudaFuncSetAttribute(local_probe_kernel<kWords>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, local_probe_kernel<kWords>, kThreads, smem));
  local_probe_kernel<kWords><<<blocks, kThreads, smem>>>(out, reps, coalesced);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("RESULT blocks=%d words=%d reps=%d smem_kb=%zu blocks_per_sm=%d stores=%s\n", blocks, kWords,
              reps, smem / 1024, per_sm, coalesced ? "coalesced" : "scatter");
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: local_probe BLOCKS WORDS(128|512) REPS SMEM_KB [scatter|coalesced]\n");
    return 2;
  }
  const int coalesced = argc == 6 && std::string(argv[5]) == "coalesced";
  const int blocks = std::atoi(argv[1]), words = std::atoi(argv[2]), reps = std::atoi(argv[3]);
  const size_t smem = static_cast<size_t>(std::atoi(argv[4])) * 1024;
  float* out = nullptr;
  CHECK(cudaMalloc(&out, static_cast<size_t>(blocks) * kThreads * sizeof(float)));
  if (words == 128)
    launch<128>(blocks, reps, smem, coalesced, out);
  else if (words == 512)
    launch<512>(blocks, reps, smem, coalesced, out);
  else {
    std::fprintf(stderr, "WORDS: 128 or 512\n");
    return 2;
  }
  CHECK(cudaFree(out));
  return 0;
}
