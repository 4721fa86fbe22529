// The L2 probe's reading modes (validation/l2_probe.cu's single, spread, private) as tight loops: each block
// of 1024 threads reads 16 KiB chunks with ld.global.cg, the next chunk's index by an increment and a wrap
// instead of l2_probe.cu's 64-bit modulo, no sample points. validation/pace_probe.cu showed that a tight
// loop of one SM hits at 116-126 B/clk where l2_probe.cu's single reads 25: that kernel's pace is its
// address arithmetic, so its readers hit and miss at nearly one pace (1.14). Here the memory sets the
// pace: whether out-of-step readers then thrash the L2 as the model's do (attnsim probe --mode spread
// --in-flight K) is what the DRAM bytes of these launches say.
//   tight_probe MODE BYTES PASSES BLOCKS   (MODE: single, spread, private)
// With SLEEP_NS=S in the environment, each thread sleeps S ns (__nanosleep) after it has used a chunk: the
// readers' pace set by the kernel rather than by the memory, as l2_probe.cu's address chain sets it.
// Prints one RESULT line: mode, bytes, passes, blocks, sleep, time of the launch (CUDA events, ms). The run
// script profiles the launches named tight_kernel.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_check.h"

constexpr int kThreads = 1024;
constexpr size_t kChunk = kThreads * sizeof(int4);

// Block b reads chunks [begin, begin + count) `passes` times starting at begin + start, wrapping.
// kSleep: a separate instantiation, because the sleep's branch keeps the compiler from unrolling the loop
// (one load a thread in flight instead of four: the SASS of the two differ, 5 loads against 29).
template <bool kSleep>
__global__ void tight_kernel(const int4* __restrict__ buffer, size_t chunks, int passes, int mode,
                             unsigned sleep_ns, unsigned* __restrict__ sink) {
  const size_t blocks = gridDim.x;
  size_t begin = 0, count = chunks, start = 0;
  if (mode == 2) count = chunks / blocks, begin = blockIdx.x * count;  // private
  if (mode == 1) start = blockIdx.x * chunks / blocks;                 // spread
  const int4* first = buffer + begin * kThreads + threadIdx.x;
  const int4* end = first + count * kThreads;
  const int4* at = first + start * kThreads;
  unsigned acc = 0;
  const size_t steps = count * static_cast<size_t>(passes);
  for (size_t i = 0; i < steps; ++i) {
    const int4 v = __ldcg(at);
    acc ^= static_cast<unsigned>(v.x ^ v.y ^ v.z ^ v.w);
    if constexpr (kSleep)
      if (acc != 0x9e3779b9u) __nanosleep(sleep_ns);  // after the chunk has arrived
    at += kThreads;
    if (at == end) at = first;
  }
  sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: tight_probe single|spread|private BYTES PASSES BLOCKS\n");
    return 2;
  }
  const int mode = std::strcmp(argv[1], "single") == 0    ? 0
                   : std::strcmp(argv[1], "spread") == 0  ? 1
                   : std::strcmp(argv[1], "private") == 0 ? 2
                                                          : -1;
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  const int passes = std::atoi(argv[3]);
  int blocks = std::atoi(argv[4]);
  if (mode == 0) blocks = 1;
  const size_t chunks = bytes / kChunk;
  if (mode < 0 || chunks < 1 || passes < 1 || blocks < 1 ||
      (mode == 2 && chunks < static_cast<size_t>(blocks))) {
    std::fprintf(stderr, "tight_probe: bad mode, bytes, passes or blocks\n");
    return 2;
  }
  int4* buffer = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&buffer, chunks * kChunk));
  CHECK(cudaMemset(buffer, 0x5a, chunks * kChunk));
  CHECK(cudaMalloc(&sink, static_cast<size_t>(blocks) * kThreads * sizeof(unsigned)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  const char* sleep_env = std::getenv("SLEEP_NS");
  const unsigned sleep_ns = sleep_env ? static_cast<unsigned>(std::strtoul(sleep_env, nullptr, 10)) : 0;
  // SLEEP_NS set (0 included): the sleeping loop, one load a thread in flight.
  if (sleep_env)
    tight_kernel<true><<<blocks, kThreads>>>(buffer, chunks, passes, mode, sleep_ns, sink);
  else
    tight_kernel<false><<<blocks, kThreads>>>(buffer, chunks, passes, mode, sleep_ns, sink);
  CHECK(cudaEventRecord(b));
  CHECK(cudaGetLastError());
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  std::printf("RESULT mode=%s bytes=%zu passes=%d blocks=%d sleep_ns=%u ms=%.4f\n", argv[1], chunks * kChunk,
              passes, blocks, sleep_ns, static_cast<double>(ms));
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(sink));
  return 0;
}
