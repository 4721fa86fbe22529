// One thread block (one SM) reads a list of windows of device memory `passes` times, line by line through
// L2 only (ld.global.cg): the one-SM probe of l2_probe.cu, on memory another program allocated (a PyTorch
// tensor's pages), loaded through ctypes by fa2_pages_probe.py. Under ncu's default --cache-control all the
// L2 is flushed before it, so its DRAM reads over the bytes of its windows say how evenly those pages fill
// the L2's sets: 1.0 when every line stays after the first pass, up to `passes` when none does. One SM sees
// its own partition's sets only (copies of far-homed lines live there too), so the reader's SM can be
// chosen: SMs 0 and 4 sit on different partitions (docs/chip.md, "The L2's partitions, measured").
#include <cuda_runtime.h>

#include <cstddef>

constexpr int kMaxWindows = 64;

struct Windows {
  const char* base[kMaxWindows];
  size_t lines[kMaxWindows];
  int count;
};

__device__ void read_windows(const Windows& w, int passes, unsigned* sink) {
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

__global__ void __launch_bounds__(1024) windows_read(Windows w, int passes, unsigned* sink) {
  read_windows(w, passes, sink);
}

// Many blocks are launched; the first to land on SM `sm` claims the work (sink[1] = 1 + sm), the rest leave
// at once. sink[1] must be 0 before the launch.
__global__ void __launch_bounds__(1024) windows_read_on(Windows w, int passes, int sm, unsigned* sink) {
  __shared__ bool mine;
  if (threadIdx.x == 0) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    mine = id == static_cast<unsigned>(sm) && atomicCAS(sink + 1, 0u, 1u + id) == 0u;
  }
  __syncthreads();
  if (mine) read_windows(w, passes, sink);
}

namespace {

bool make_windows(const unsigned long long* bases, const unsigned long long* bytes, int count, Windows& w) {
  if (count < 1 || count > kMaxWindows) return false;
  for (int k = 0; k < count; ++k) {
    w.base[k] = reinterpret_cast<const char*>(bases[k]);
    w.lines[k] = bytes[k] / 128;
  }
  w.count = count;
  return true;
}

}  // namespace

// bases/bytes: `count` windows (at most 64, each a multiple of 128 bytes). Returns a cudaError_t.
extern "C" int launch_windows_read(const unsigned long long* bases, const unsigned long long* bytes,
                                   int count, int passes, void* sink) {
  Windows w{};
  if (!make_windows(bases, bytes, count, w)) return static_cast<int>(cudaErrorInvalidValue);
  windows_read<<<1, 1024>>>(w, passes, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}

// The same, read by SM `sm` (`blocks` launched so that one lands there: two per SM cover every SM).
extern "C" int launch_windows_read_on(const unsigned long long* bases, const unsigned long long* bytes,
                                      int count, int passes, int sm, int blocks, void* sink) {
  Windows w{};
  if (!make_windows(bases, bytes, count, w)) return static_cast<int>(cudaErrorInvalidValue);
  windows_read_on<<<blocks, 1024>>>(w, passes, sm, static_cast<unsigned*>(sink));
  return static_cast<int>(cudaGetLastError());
}
