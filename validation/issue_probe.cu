// Does an SM scheduler issue other warps' instructions while mma.sync keeps its tensor core busy? On the
// issue-bound flash2 kernels the schedulers' issue-active and the tensor pipe's active cycles add up to
// 100% (docs/validation.md, "Issue"); this probe asks the question directly. One block of 8 warps per SM:
// warps 0-3 (one per scheduler, warp w on scheduler w % 4) run 8 independent m16n8k16 mma.sync chains,
// warps 4-7 (the same four schedulers) 8 independent FFMA chains. Each warp times its own loop with
// clock64. Three runs: the mma warps alone, the FFMA warps alone, both. If the schedulers issue FFMA beside
// the mma, the FFMA warps keep their rate in the mixed run; if mma.sync holds its scheduler, their rate
// falls by about the tensor pipe's share. The FFMA warps run 8, 4, 2 or 1 independent chains (from about
// one instruction per cycle down to one per FMA latency). Prints `run,ffma_chains,warps,
// instructions_per_warp,cycles_median,instructions_per_cycle_per_warp` CSV lines on stdout.
//   nvcc -O3 -arch=sm_90 -o issue_probe validation/issue_probe.cu && ./issue_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "cuda_check.h"
#include "mma_chains.cuh"

namespace {

constexpr int kChains = 8;

template <int CHAINS>
__device__ void ffma_loop(int iters, float* sink) {
  float x[CHAINS];
  for (int k = 0; k < CHAINS; ++k) x[k] = threadIdx.x * 1e-7f + k;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) asm volatile("fma.rn.f32 %0, %0, 0f3F7FF972, 0f33D6BF95;" : "+f"(x[k]));
  float s = 0;
  for (float v : x) s += v;
  if (s == 12345.f) sink[threadIdx.x] = s;
}

// run: 1 the mma warps work, 2 the FFMA warps work, 3 both. cycles[block * 8 + warp] = the warp's loop.
// FFMA_CHAINS independent chains per FFMA thread: 8 issue about every cycle, 1 every 4 (the FMA latency).
template <int FFMA_CHAINS>
__global__ void probe(int run, int mma_iters, int ffma_iters, long long* cycles, float* sink) {
  const int warp = threadIdx.x / 32;
  const bool mma_warp = warp < 4;
  __syncthreads();
  const long long t0 = clock64();
  if (mma_warp && (run & 1)) mma_chains<kChains>(mma_iters, sink);
  if (!mma_warp && (run & 2)) ffma_loop<FFMA_CHAINS>(ffma_iters, sink);
  const long long t1 = clock64();
  if (threadIdx.x % 32 == 0) cycles[blockIdx.x * 8 + warp] = t1 - t0;
}

double median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[v.size() / 2]);
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  long long* cycles;
  float* sink;
  CHECK(cudaMalloc(&cycles, sms * 8 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  // About equal lengths alone: an mma warp's 8 products per iteration (~8 x 7 clk on its tensor core)
  // against an FFMA warp's FFMA_CHAINS FMAs.
  const int mma_iters = 20000;
  std::printf("run,ffma_chains,warps,instructions_per_warp,cycles_median,instructions_per_cycle_per_warp\n");
  const char* names[] = {"", "mma_alone", "ffma_alone", "both"};
  using Probe = void (*)(int, int, int, long long*, float*);
  const std::pair<int, Probe> variants[] = {{8, probe<8>}, {4, probe<4>}, {2, probe<2>}, {1, probe<1>}};
  for (const auto& [chains, kernel] : variants) {
    const int ffma_iters = 640000 / chains;
    for (int run : {1, 2, 3}) {
      if (run == 1 && chains != 8) continue;  // the mma warps alone do not depend on the FFMA chains
      for (int rep = 0; rep < 2; ++rep) {     // the first launch warms up; the second is reported
        kernel<<<sms, 256>>>(run, mma_iters, ffma_iters, cycles, sink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
      }
      std::vector<long long> h(sms * 8);
      CHECK(cudaMemcpy(h.data(), cycles, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      std::vector<long long> mma, ffma;
      for (int b = 0; b < sms; ++b)
        for (int w = 0; w < 8; ++w) (w < 4 ? mma : ffma).push_back(h[b * 8 + w]);
      if (run & 1) {
        const double c = median(mma);
        std::printf("%s,%d,mma,%d,%.0f,%.4f\n", names[run], chains, mma_iters * kChains, c,
                    mma_iters * kChains / c);
      }
      if (run & 2) {
        const double c = median(ffma);
        std::printf("%s,%d,ffma,%d,%.0f,%.4f\n", names[run], chains, ffma_iters * chains, c,
                    ffma_iters * chains / c);
      }
    }
  }
  CHECK(cudaFree(cycles));
  CHECK(cudaFree(sink));
  return 0;
}
