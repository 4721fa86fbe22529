// L2 behaviour probe: thread blocks stream one device buffer several times, so Nsight Compute's DRAM and
// L2 counters show the capacity that data sees and what the replacement does when it does not fit.
//   l2_probe MODE BYTES PASSES [BLOCKS]
// MODE:
//   single   one block reads the buffer PASSES times (the capacity one SM's data sees)
//   shared   BLOCKS blocks each read the whole buffer PASSES times, all from offset 0 (data every SM
//            reads, in step: FlashAttention's K and V)
//   spread   as shared, block b starting at offset b * BYTES / BLOCKS and wrapping (readers out of step)
//   private  block b reads its own BYTES / BLOCKS slice PASSES times
// Each thread loads 16 bytes per step with ld.global.cg (L2 only), a block 16 KiB per step. Prints one
// RESULT line; the run script profiles the launch named l2_probe_kernel.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));   \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

constexpr int kThreads = 1024;
constexpr size_t kChunk = kThreads * sizeof(int4);  // bytes a block reads per step

__global__ void l2_probe_kernel(const int4* __restrict__ buffer, size_t chunks, int passes, int mode,
                                unsigned* __restrict__ sink) {
  const size_t blocks = gridDim.x;
  size_t begin = 0, count = chunks, start = 0;
  if (mode == 3) {  // private slice
    count = chunks / blocks;
    begin = blockIdx.x * count;
  } else if (mode == 2) {  // spread phase
    start = blockIdx.x * chunks / blocks;
  }
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < count; ++i) {
      const size_t chunk = begin + (start + i) % count;
      const int4 v = __ldcg(buffer + chunk * kThreads + threadIdx.x);
      acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
    }
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: l2_probe single|shared|spread|private BYTES PASSES [BLOCKS]\n");
    return 2;
  }
  const std::string mode_name = argv[1];
  const int mode = mode_name == "single" ? 0 : mode_name == "shared" ? 1 : mode_name == "spread" ? 2
                 : mode_name == "private" ? 3 : -1;
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  const int passes = std::atoi(argv[3]);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int blocks = argc > 4 ? std::atoi(argv[4]) : prop.multiProcessorCount;
  if (mode == 0) blocks = 1;
  if (mode < 0 || bytes < kChunk || passes < 1 || blocks < 1) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const size_t chunks = bytes / kChunk;
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&buffer, chunks * kChunk));
  CHECK(cudaMalloc(&sink, static_cast<size_t>(blocks) * kThreads * sizeof(unsigned)));
  CHECK(cudaMemset(buffer, 0x5a, chunks * kChunk));
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  CHECK(cudaEventRecord(t0));
  l2_probe_kernel<<<blocks, kThreads>>>(buffer, chunks, passes, mode, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(t1));
  CHECK(cudaDeviceSynchronize());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, t0, t1));
  std::printf("RESULT mode=%s bytes=%zu passes=%d blocks=%d ms=%.3f sms=%d l2=%d\n", mode_name.c_str(),
              chunks * kChunk, passes, blocks, ms, prop.multiProcessorCount, prop.l2CacheSize);
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(sink));
  return 0;
}
