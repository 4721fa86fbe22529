// One SM's read pace against the bytes it keeps in flight: one block of THREADS threads reads a buffer in
// chunks of THREADS x 16 bytes with ld.global.cg (L2 only), UNROLL chunks issued before any is used, so a
// block keeps THREADS x 16 x UNROLL bytes in flight. `hit`: 8 MiB read once untimed, then twice timed (every
// line in the L2). `miss`: 256 MiB read once (past the L2: every line from DRAM). Prints one CSV row per
// launch: kind, threads, unroll, bytes read in the timed part, SM cycles (clock64) and ns (globaltimer) of
// the timed part, bytes per SM cycle. Whether an SM's pace is bound by latency (bytes in flight over a
// round trip) or by a port (a fixed number of bytes a cycle) is read off the curve; attnsim's probe of the
// same reads is `attnsim probe --mode single` (docs/chip.md, "DRAM channels break the readers' step": one
// SM's pace, hitting and missing).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

__device__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

template <int kUnroll>
__device__ unsigned read_pass(const int4* buffer, size_t chunks) {
  unsigned acc = 0;
  const size_t stride = blockDim.x;
  for (size_t i = 0; i + kUnroll <= chunks; i += kUnroll) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcg(buffer + (i + u) * stride + threadIdx.x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= static_cast<unsigned>(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  return acc;
}

// timing[0..1]: clock64 and globaltimer at the start of the timed passes, [2..3] at their end.
template <int kUnroll>
__global__ void pace_kernel(const int4* buffer, size_t chunks, int warm_passes, int timed_passes,
                            unsigned long long* timing, unsigned* sink) {
  unsigned acc = 0;
  for (int p = 0; p < warm_passes; ++p) acc ^= read_pass<kUnroll>(buffer, chunks);
  __syncthreads();
  if (threadIdx.x == 0) {
    timing[0] = clock64();
    timing[1] = global_timer();
  }
  for (int p = 0; p < timed_passes; ++p) acc ^= read_pass<kUnroll>(buffer, chunks);
  __syncthreads();
  if (threadIdx.x == 0) {
    timing[2] = clock64();
    timing[3] = global_timer();
  }
  if (acc == 0x12345678u) sink[threadIdx.x] = acc;  // keeps the loads
}

template <int kUnroll>
void launch(const int4* buffer, size_t chunks, int warm, int timed, int threads, unsigned long long* timing,
            unsigned* sink) {
  pace_kernel<kUnroll><<<1, threads>>>(buffer, chunks, warm, timed, timing, sink);
}

int main() {
  constexpr size_t kMiB = 1 << 20;
  const size_t buffer_bytes = 256 * kMiB;
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  unsigned long long* timing = nullptr;
  CHECK(cudaMalloc(&buffer, buffer_bytes));
  CHECK(cudaMemset(buffer, 0x5a, buffer_bytes));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  CHECK(cudaMallocHost(&timing, 4 * sizeof(unsigned long long)));
  std::printf("kind,threads,unroll,bytes,cycles,ns,bytes_per_cycle\n");
  const int unrolls[] = {1, 2, 4, 8};
  for (const char* kind : {"hit", "miss"}) {
    const bool hit = kind[0] == 'h';
    const size_t bytes = hit ? 8 * kMiB : buffer_bytes;
    for (int threads : {256, 512, 1024})
      for (int unroll : unrolls) {
        const size_t chunks = bytes / (threads * sizeof(int4));
        const int warm = hit ? 1 : 0, timed = hit ? 2 : 1;
        switch (unroll) {
          case 1:
            launch<1>(buffer, chunks, warm, timed, threads, timing, sink);
            break;
          case 2:
            launch<2>(buffer, chunks, warm, timed, threads, timing, sink);
            break;
          case 4:
            launch<4>(buffer, chunks, warm, timed, threads, timing, sink);
            break;
          default:
            launch<8>(buffer, chunks, warm, timed, threads, timing, sink);
            break;
        }
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const unsigned long long cycles = timing[2] - timing[0], ns = timing[3] - timing[1];
        const size_t read = chunks / unroll * unroll * threads * sizeof(int4) * timed;
        std::printf("%s,%d,%d,%zu,%llu,%llu,%.2f\n", kind, threads, unroll, read, cycles, ns,
                    static_cast<double>(read) / static_cast<double>(cycles));
      }
  }
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(sink));
  CHECK(cudaFreeHost(timing));
  return 0;
}
