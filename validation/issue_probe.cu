// Does an SM scheduler issue other warps' instructions while mma.sync keeps its tensor core busy? On the
// issue-bound flash2 kernels the schedulers' issue-active and the tensor pipe's active cycles add up to
// 100% (docs/validation.md, "Issue"); this probe asks the question directly. One block of 8 warps per SM:
// warps 0-3 (one per scheduler, warp w on scheduler w % 4) run 8 independent m16n8k16 mma.sync chains,
// warps 4-7 (the same four schedulers) a neighbour's loop of CHAINS independent chains of one kind of
// instruction: FFMA, MUFU.EX2, LOP3 (integer ALU), F2FP (the f32 -> f16x2 conversion) or LDS (a shared-memory
// load). Each warp times its own loop with clock64. ptxas removes instructions whose results are overwritten
// unread (`asm volatile` binds only the front end), so every kind is a dependent chain or a volatile load.
//
// A side's rate beside the other is only read where the other side outlasted it (else part of its loop ran
// alone), so each pair runs twice: once with the neighbour's loop 16 times longer (the mma warps' rate is
// read), once with the mma warps' loop 16 times longer (the neighbour's rate is read). If mma.sync holds
// its scheduler for the cycles its tensor core works, then per scheduler
//     neighbour instructions per clock + products per clock x (clocks per product alone) ~ 1.
// Each with one, two and four mma warps and as many neighbours per scheduler (a block of 8, 16 or 32 warps:
// 2, 4 or 8 warps on each scheduler, the occupancies of the project's kernels). Prints
// `kind,chains,run,mma_products,mma_cycles,mma_per_clock,neighbour_instructions,neighbour_cycles,
// neighbour_per_clock,read,warps_per_scheduler` CSV lines on stdout (rates per warp; read: which side's
// rate the run measures).
//   nvcc -O3 -arch=sm_90 -o issue_probe validation/issue_probe.cu && ./issue_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda_check.h"
#include "mma_chains.cuh"

namespace {

constexpr int kMmaChains = 8;
constexpr int kMaxWarps = 32;  // 4 mma warps and 4 neighbours per scheduler
enum Kind { kFfma, kMufu, kAlu, kCvt, kLds, kKinds };
const char* const kKindNames[kKinds] = {"ffma", "mufu_ex2", "alu_lop3", "cvt_f2fp", "lds"};

// One instruction of KIND on chain k; x and r are the chains' float and integer registers.
template <int KIND>
__device__ __forceinline__ void neighbour_step(float& x, unsigned& r, unsigned smem) {
  if constexpr (KIND == kFfma) asm volatile("fma.rn.f32 %0, %0, 0f3F7FF972, 0f33D6BF95;" : "+f"(x));
  // x <- 2^-x stays in (0, 1): the negation folds into MUFU.EX2's operand.
  if constexpr (KIND == kMufu)
    asm volatile("{ .reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t; }" : "+f"(x));
  if constexpr (KIND == kAlu) asm volatile("lop3.b32 %0, %0, 0x5A5A5A5A, 0x33CC33CC, 0x96;" : "+r"(r));
  // The packed halves read back as one f32 (the move costs nothing): a chain of F2FP.
  if constexpr (KIND == kCvt)
    asm volatile("{ .reg .f32 t; mov.b32 t, %0; cvt.rn.f16x2.f32 %0, t, t; }" : "+r"(r));
  if constexpr (KIND == kLds) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(r) : "r"(smem));
}

template <int KIND, int CHAINS>
__device__ void neighbour_loop(int iters, float* sink, unsigned smem) {
  float x[CHAINS];
  unsigned r[CHAINS];
  for (int k = 0; k < CHAINS; ++k) {
    x[k] = threadIdx.x * 1e-7f + 0.25f * k;
    r[k] = threadIdx.x * 2654435761u + k;
  }
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) neighbour_step<KIND>(x[k], r[k], smem);
  float s = 0;
  for (int k = 0; k < CHAINS; ++k) s += x[k] + r[k];
  if (s == 12345.f) sink[threadIdx.x] = s;  // never true: keeps the loop
}

// run: 1 the mma warps work, 2 the neighbours work, 3 both. The first half of the block's warps are mma
// warps, the second half neighbours, so each scheduler has as many of each (blockDim / 256).
// cycles[block * kMaxWarps + warp] = the warp's loop.
template <int KIND, int CHAINS>
__global__ void __launch_bounds__(1024) probe(int run, int mma_iters, int neighbour_iters, long long* cycles, float* sink) {
  __shared__ __align__(16) unsigned short tile[8 * 1024];
  for (int i = threadIdx.x; i < 8 * 1024; i += blockDim.x) tile[i] = static_cast<unsigned short>(i * 40503u);
  const int warp = threadIdx.x / 32;
  const bool mma_warp = warp < static_cast<int>(blockDim.x / 64);
  // Each lane its own word of a 16-byte row: no bank conflicts.
  const auto smem =
      static_cast<unsigned>(__cvta_generic_to_shared(tile + warp * 256 + (threadIdx.x % 32) * 8));
  __syncthreads();
  const long long t0 = clock64();
  if (mma_warp && (run & 1)) mma_chains<kMmaChains>(mma_iters, sink);
  if (!mma_warp && (run & 2)) neighbour_loop<KIND, CHAINS>(neighbour_iters, sink, smem);
  const long long t1 = clock64();
  if (threadIdx.x % 32 == 0) cycles[blockIdx.x * kMaxWarps + warp] = t1 - t0;
}

double median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[v.size() / 2]);
}

using Probe = void (*)(int, int, int, long long*, float*);

struct Launch {
  int sms;
  int per_scheduler;  // mma warps (and neighbours) per scheduler: 1, 2 or 4
  long long* cycles;
  float* sink;
  // Median cycles of the mma warps and of the neighbours (0 for a side that did not work).
  std::pair<double, double> operator()(Probe kernel, int run, int mma_iters, int neighbour_iters) const {
    for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up; the second is reported
      kernel<<<sms, 256 * per_scheduler>>>(run, mma_iters, neighbour_iters, cycles, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    std::vector<long long> h(sms * kMaxWarps), mma, neighbour;
    const int warps = 8 * per_scheduler;
    CHECK(cudaMemcpy(h.data(), cycles, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    for (int b = 0; b < sms; ++b)
      for (int w = 0; w < warps; ++w) (w < warps / 2 ? mma : neighbour).push_back(h[b * kMaxWarps + w]);
    return {run & 1 ? median(mma) : 0.0, run & 2 ? median(neighbour) : 0.0};
  }
};

void row(const Launch& launch, const char* kind, int chains, const char* run, long long products,
         double mma_cycles, long long instructions, double neighbour_cycles, const char* read) {
  std::printf("%s,%d,%s,%lld,%.0f,%.4f,%lld,%.0f,%.4f,%s,%d\n", kind, chains, run, products, mma_cycles,
              mma_cycles > 0 ? products / mma_cycles : 0.0, instructions, neighbour_cycles,
              neighbour_cycles > 0 ? instructions / neighbour_cycles : 0.0, read, launch.per_scheduler);
}

template <int KIND, int CHAINS>
void probe_pair(const Launch& launch, int mma_iters, int neighbour_iters) {
  constexpr int kLonger = 16;
  const Probe kernel = probe<KIND, CHAINS>;
  const char* name = kKindNames[KIND];
  const long long products = 1LL * mma_iters * kMmaChains, instructions = 1LL * neighbour_iters * CHAINS;
  auto [m0, n0] = launch(kernel, 2, mma_iters, neighbour_iters);
  row(launch, name, CHAINS, "neighbour_alone", 0, 0, instructions, n0, "neighbour");
  auto [m1, n1] = launch(kernel, 3, mma_iters, neighbour_iters * kLonger);
  row(launch, name, CHAINS, "both", products, m1, instructions * kLonger, n1, n1 > m1 ? "mma" : "neither");
  auto [m2, n2] = launch(kernel, 3, mma_iters * kLonger, neighbour_iters);
  row(launch, name, CHAINS, "both", products * kLonger, m2, instructions, n2, m2 > n2 ? "neighbour" : "neither");
}

template <int KIND>
void probe_kind(const Launch& launch, int mma_iters, int neighbour_instructions) {
  probe_pair<KIND, 4>(launch, mma_iters, neighbour_instructions / 4);
  probe_pair<KIND, 1>(launch, mma_iters, neighbour_instructions);
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  Launch launch{prop.multiProcessorCount, 1, nullptr, nullptr};
  CHECK(cudaMalloc(&launch.cycles, launch.sms * kMaxWarps * sizeof(long long)));
  CHECK(cudaMalloc(&launch.sink, 32 * kMaxWarps * sizeof(float)));
  // About 1.2 M clocks for the mma warps alone (8 products per iteration, ~7 clk each on a tensor core).
  const int mma_iters = 20000;
  std::printf(
      "kind,chains,run,mma_products,mma_cycles,mma_per_clock,neighbour_instructions,neighbour_cycles,"
      "neighbour_per_clock,read,warps_per_scheduler\n");
  for (int per_scheduler : {1, 2, 4}) {
    launch.per_scheduler = per_scheduler;
    auto [mma_alone, unused] = launch(probe<kFfma, 1>, 1, mma_iters, 0);
    row(launch, "none", 0, "mma_alone", 1LL * mma_iters * kMmaChains, mma_alone, 0, 0, "mma");
    // Neighbour loops of about the mma warps' length alone or more; the longer run is 16 times that.
    probe_kind<kFfma>(launch, mma_iters, 640000);
    probe_kind<kMufu>(launch, mma_iters, 160000);
    probe_kind<kAlu>(launch, mma_iters, 640000);
    probe_kind<kCvt>(launch, mma_iters, 640000);
    probe_kind<kLds>(launch, mma_iters, 320000);
  }
  CHECK(cudaFree(launch.cycles));
  CHECK(cudaFree(launch.sink));
  return 0;
}
