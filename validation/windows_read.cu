// One thread block (one SM) reads a list of windows of device memory `passes` times, line by line through
// L2 only (ld.global.cg): the one-SM probe of l2_probe.cu, on memory another program allocated (a PyTorch
// tensor's pages), loaded through ctypes by fa2_pages_probe.py. Under ncu's default --cache-control all the
// L2 is flushed before it, so its DRAM reads over the bytes of its windows say how evenly those pages fill
// the L2's sets: 1.0 when every line stays after the first pass, up to `passes` when none does.
#include <cuda_runtime.h>

#include <cstddef>

constexpr int kMaxWindows = 64;

struct Windows {
  const char* base[kMaxWindows];
  size_t lines[kMaxWindows];
  int count;
};

__global__ void __launch_bounds__(1024) windows_read(Windows w, int passes, unsigned* sink) {
  const size_t warp = threadIdx.x / 32, warps = blockDim.x / 32, lane = threadIdx.x % 32;
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (int k = 0; k < w.count; ++k)
      for (size_t i = warp; i < w.lines[k]; i += warps) {
        unsigned v;
        const unsigned* at = reinterpret_cast<const unsigned*>(w.base[k] + i * 128) + lane;
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(at) : "memory");
        acc ^= v;
      }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// bases/bytes: `count` windows (at most 64, each a multiple of 128 bytes). Returns a cudaError_t.
extern "C" int launch_windows_read(const unsigned long long* bases, const unsigned long long* bytes, int count,
                                   int passes, void* sink) {
  if (count < 1 || count > kMaxWindows) return static_cast<int>(cudaErrorInvalidValue);
  Windows w{};
  for (int k = 0; k < count; ++k) {
    w.base[k] = reinterpret_cast<const char*>(bases[k]);
    w.lines[k] = bytes[k] / 128;
  }
  w.count = count;
  windows_read<<<1, 1024>>>(w, passes, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}
