// Reads every STRIDE-th 128-byte line of a byte range once, a warp per line (whole-line requests, as the
// kernels' loads), with ld.global.cg (L2 only). Under ncu --cache-control none with DRAM bytes as the only
// metric (one pass: a metric set that needs replays restores memory between passes and leaves nothing in
// L2), the read's DRAM bytes over the bytes it read are the share of those lines the L2 no longer held when
// it began (memeff_residency_probe.py). ld.global.cs (evict-first fills) was tried: a second read of a
// resident tensor then missed 14% of it.
#include <cuda_runtime.h>

#include <cstddef>

__global__ void residency_read(const char* __restrict__ base, size_t lines, int stride, unsigned* sink) {
  const size_t lane = threadIdx.x % 32;
  const size_t warp = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32;
  const size_t warps = gridDim.x * static_cast<size_t>(blockDim.x) / 32;
  unsigned acc = 0;
  for (size_t i = warp; i * stride < lines; i += warps) {
    const unsigned* at = reinterpret_cast<const unsigned*>(base + i * stride * 128) + lane;
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(at) : "memory");
    acc ^= v;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads
}

extern "C" int launch_residency_read(const void* base, size_t bytes, int stride, void* sink) {
  residency_read<<<264, 256>>>(static_cast<const char*>(base), bytes / 128, stride,
                               static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

// The same read by `blocks` blocks of 256 threads: one block is one SM (memeff_room_probe.py's copies set).
extern "C" int launch_residency_read_blocks(const void* base, size_t bytes, int stride, int blocks,
                                            void* sink) {
  residency_read<<<blocks, 256>>>(static_cast<const char*>(base), bytes / 128, stride,
                                  static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

static __device__ unsigned sm_id() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

// The same read by the SMs of `mask` (bit s of mask[s / 32] for SM s) only: blocks on other SMs leave at
// once, the others take lines from a shared counter (*next, zeroed before the launch), a warp a line, so the
// lines go in about the buffer's order, as the grid-stride read takes them (memeff_room_probe.py's
// partitions set: a buffer read by one L2 partition's SMs). `take` lines at a time (1: each line by a warp
// of its own; 128: 16 KiB runs, each read by one SM, as the model's probes deal chunks to blocks).
__global__ void masked_read(const char* __restrict__ base, size_t lines, const unsigned* mask,
                            unsigned long long* next, int take, unsigned* sink) {
  const unsigned sm = sm_id();
  if (!((mask[sm / 32] >> (sm % 32)) & 1u)) return;
  const unsigned lane = threadIdx.x % 32;
  unsigned acc = 0;
  for (;;) {
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(next, 1ull) * take;
    first = __shfl_sync(0xffffffffu, first, 0);
    if (first >= lines) break;
    for (unsigned long long i = first; i < first + take && i < lines; ++i) {
      const unsigned* at = reinterpret_cast<const unsigned*>(base + i * 128) + lane;
      unsigned v;
      asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(at) : "memory");
      acc ^= v;
    }
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

extern "C" int launch_masked_read(const void* base, size_t bytes, const void* mask, void* next, int take,
                                  void* sink) {
  cudaMemsetAsync(next, 0, sizeof(unsigned long long));
  masked_read<<<1056, 256>>>(static_cast<const char*>(base), bytes / 128, static_cast<const unsigned*>(mask),
                             static_cast<unsigned long long*>(next), take, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

// Which L2 partition an SM is attached to, by time: SMs A and B (the first block to land on each) read a
// half each of a buffer, PASSES times. Two halves of 20 MiB fit when the SMs sit on different partitions
// (each partition then holds its home lines and the other side's copies) and thrash in one partition
// otherwise (l2_probe.cu's pair mode, measured there with ncu: 43 MB against 83 MB of DRAM reads, 0.57
// against 0.69 ms at base clocks), so the launch takes longer. `claimed`: two zeroed words.
__global__ void __launch_bounds__(1024)
    sm_pair_read(const char* __restrict__ base, size_t lines, int passes, unsigned sm_a, unsigned sm_b,
                 int* claimed, unsigned* sink) {
  __shared__ int mine;
  if (threadIdx.x == 0) {
    const unsigned sm = sm_id();
    const int half = sm == sm_a ? 0 : sm == sm_b ? 1 : -1;
    mine = half >= 0 && atomicCAS(claimed + half, 0, 1) == 0 ? half : -1;
  }
  __syncthreads();
  if (mine < 0) return;
  const size_t half_lines = lines / 2, first = static_cast<size_t>(mine) * half_lines;
  const size_t warp = threadIdx.x / 32, warps = blockDim.x / 32, lane = threadIdx.x % 32;
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = warp; i < half_lines; i += 4 * warps) {
      unsigned v[4] = {0, 0, 0, 0};
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (i + u * warps < half_lines) {
          const unsigned* at = reinterpret_cast<const unsigned*>(base + (first + i + u * warps) * 128) + lane;
          asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[u]) : "l"(at) : "memory");
        }
      acc ^= v[0] ^ v[1] ^ v[2] ^ v[3];
    }
  if (acc == 0x9e3779b9u) *sink = acc;
}

extern "C" int launch_sm_pair_read(const void* base, size_t bytes, int passes, int sm_a, int sm_b,
                                   void* claimed, void* sink) {
  cudaMemsetAsync(claimed, 0, 2 * sizeof(int));
  sm_pair_read<<<264, 1024>>>(static_cast<const char*>(base), bytes / 128, passes,
                              static_cast<unsigned>(sm_a), static_cast<unsigned>(sm_b),
                              static_cast<int*>(claimed), static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

// Local memory: a thread's local memory sits at an address fixed by the hardware slot it runs in, the same
// for every kernel of the process that reserves the same bytes per thread (the memory-efficient backward's
// sm_90 build: 136 bytes of stack, cuobjdump -res-usage). These kernels give each of 512 threads a frame of
// 34 words and either write it or read it without writing: the reads are of whatever the previous kernel
// run in the same slots left, so under the same ncu settings their DRAM bytes say how much of it the L2
// still holds. Blocks per SM follow from the dynamic shared memory each asks for.
constexpr int kFrameWords = 34;

__global__ void __launch_bounds__(512) residency_local_read(int words, unsigned* sink) {
  volatile unsigned frame[kFrameWords];
  unsigned acc = 0;
  for (int i = 0; i < words; ++i) acc ^= frame[i];
  if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void __launch_bounds__(512) local_write(int words, unsigned* sink) {
  volatile unsigned frame[kFrameWords];
  for (int i = 0; i < words; ++i) frame[i] = threadIdx.x + i;
  if (frame[words - 1] == 0x9e3779b9u) *sink = 1;
}

extern "C" int launch_local(int write, int blocks, int smem_bytes, void* sink) {
  auto kernel = write ? local_write : residency_local_read;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  kernel<<<blocks, 512, smem_bytes>>>(kFrameWords, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

// Which SMs a context may use (memeff_sms_probe.py, green contexts of num_sms SMs): each block writes the SM
// it ran on, in launch order, so the first distinct ones are the block scheduler's order of filling them.
__global__ void record_smid(unsigned* out) {
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    out[blockIdx.x] = sm;
  }
}

extern "C" int launch_smids(int blocks, int smem_bytes, void* out) {
  cudaFuncSetAttribute(record_smid, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  record_smid<<<blocks, 512, smem_bytes>>>(static_cast<unsigned*>(out));
  return static_cast<int>(cudaGetLastError());
}
