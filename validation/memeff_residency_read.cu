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
extern "C" int launch_residency_read_blocks(const void* base, size_t bytes, int stride, int blocks, void* sink) {
  residency_read<<<blocks, 256>>>(static_cast<const char*>(base), bytes / 128, stride,
                                  static_cast<unsigned*>(sink));
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
