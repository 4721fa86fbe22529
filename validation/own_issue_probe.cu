// Does a warp's own instruction, issued between its mma.sync, delay its tensor core? issue_probe.cu asks
// it of another warp's instructions on the same scheduler (about one clock each, the presets'
// issue.mma_cycles_per_other_instruction); a FlashAttention block of four warps has one warp a scheduler,
// so the ldmatrix, address and softmax instructions beside its products are the product's own warp's.
// One block an SM of 4 or 8 warps (1 or 2 a scheduler), every warp alike: per iteration 8 independent
// m16n8k16 mma.sync chains, each mma followed by K instructions of one kind, each on a chain of its own
// (so their latency hides behind the iteration): FFMA, MUFU.EX2, LOP3, LDS; or LDSM, one ldmatrix.x4 after
// every K-th mma, whose fragments are that chain's A operand two phases of 8 products on (a product's
// k-loop feeds its mma so; FlashAttention-2's products run one ldmatrix.x4 a warp per four mma.sync).
// Each warp times its loop with clock64. Prints
// `kind,k_per_mma,warps_per_scheduler,mma_products,cycles,cycles_per_mma` CSV lines on stdout (per warp,
// the median over the warps of all SMs), then the SASS counts are checked by the run script.
//   nvcc -O3 -arch=sm_90 -o own_issue_probe validation/own_issue_probe.cu && ./own_issue_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kMmaChains = 8;
constexpr int kMaxWarps = 8;
enum Kind { kNone, kFfma, kMufu, kAlu, kLds, kLdsm, kKinds };
const char* const kKindNames[kKinds] = {"none", "ffma", "mufu_ex2", "alu_lop3", "lds", "ldsm_feed"};

__device__ __forceinline__ void mma(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int KIND>
__device__ __forceinline__ void other(float& x, unsigned& r, unsigned smem) {
  if constexpr (KIND == kFfma) asm volatile("fma.rn.f32 %0, %0, 0f3F7FF972, 0f33D6BF95;" : "+f"(x));
  if constexpr (KIND == kMufu)
    asm volatile("{ .reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t; }" : "+f"(x));
  if constexpr (KIND == kAlu) asm volatile("lop3.b32 %0, %0, 0x5A5A5A5A, 0x33CC33CC, 0x96;" : "+r"(r));
  if constexpr (KIND == kLds) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(r) : "r"(smem));
}

// ldmatrix.x4 of a 16 x 16 f16 fragment: the next product's A on this chain.
__device__ __forceinline__ void ldsm(unsigned (&a)[4], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem));
}

template <int KIND, int K>
__global__ void __launch_bounds__(256) probe(int iters, long long* cycles, float* sink) {
  __shared__ __align__(16) unsigned short tile[16 * 1024];
  // Small positive f16 values (about 2^-10): products stay finite.
  for (int i = threadIdx.x; i < 16 * 1024; i += blockDim.x)
    tile[i] = static_cast<unsigned short>(0x1000 + i % 64);
  const int warp = threadIdx.x / 32;
  // Each warp 4 KB; a lane's 16-byte row of an ldmatrix, or its word for LDS (consecutive: no conflicts).
  const auto lane_row =
      static_cast<unsigned>(__cvta_generic_to_shared(tile + warp * 2048 + (threadIdx.x % 32) * 8));
  const auto lane_word =
      static_cast<unsigned>(__cvta_generic_to_shared(tile + warp * 2048 + (threadIdx.x % 32) * 2));
  __syncthreads();
  constexpr int kOthers = K > 0 ? K : 1;
  unsigned a[kMmaChains][4], b[2] = {0x10001000u, 0x10001000u};
  float acc[kMmaChains][4] = {};
  float x[kMmaChains][kOthers];
  unsigned r[kMmaChains][kOthers];
  for (int k = 0; k < kMmaChains; ++k) {
    for (int j = 0; j < 4; ++j) a[k][j] = 0x10001000u;
    for (int m = 0; m < kOthers; ++m)
      x[k][m] = threadIdx.x * 1e-7f + 0.25f * m, r[k][m] = threadIdx.x + k * 7 + m;
  }
  const long long t0 = clock64();
  if constexpr (KIND == kLdsm) {
    // Three sets of A fragments: an ldmatrix loads the set two phases on, so its latency (about 30-95 clk)
    // hides behind 16 products, as a k-loop that loads the next k-step's fragments hides it.
    unsigned f[3][kMmaChains][4];
    for (int p = 0; p < 3; ++p)
      for (int k = 0; k < kMmaChains; ++k)
        for (int j = 0; j < 4; ++j) f[p][k][j] = 0x10001000u;
    for (int i = 0; i < iters; i += 3) {
      const unsigned page = 512u * static_cast<unsigned>(i / 3 % 3);  // within the warp's 4 KB
#pragma unroll
      for (int p = 0; p < 3; ++p)
#pragma unroll
        for (int k = 0; k < kMmaChains; ++k) {
          mma(acc[k], f[p][k], b);
          if (k % K == 0) ldsm(f[(p + 2) % 3][k], lane_row + page + 64u * k + 1024u * (p % 2));
        }
    }
    for (int k = 0; k < kMmaChains; ++k)
      for (int p = 0; p < 3; ++p)
        for (int j = 0; j < 4; ++j) r[k][0] += f[p][k][j];
  } else {
    for (int i = 0; i < iters; ++i)
#pragma unroll
      for (int k = 0; k < kMmaChains; ++k) {
        mma(acc[k], a[k], b);
        if constexpr (KIND != kNone) {
#pragma unroll
          for (int m = 0; m < K; ++m) other<KIND>(x[k][m], r[k][m], lane_word + 128u * m);
        }
      }
  }
  const long long t1 = clock64();
  float s = 0;
  for (int k = 0; k < kMmaChains; ++k) {
    for (float v : acc[k]) s += v;
    for (int m = 0; m < kOthers; ++m) s += x[k][m] + r[k][m];
  }
  if (s == 12345.f) sink[threadIdx.x] = s;  // never true: keeps every chain
  if (threadIdx.x % 32 == 0) cycles[blockIdx.x * kMaxWarps + warp] = t1 - t0;
}

double median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[v.size() / 2]);
}

template <int KIND, int K>
void run(int sms, int per_scheduler, int iters, long long* cycles, float* sink) {
  for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up; the second is reported
    probe<KIND, K><<<sms, 128 * per_scheduler>>>(iters, cycles, sink);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  std::vector<long long> h(sms * kMaxWarps), mine;
  CHECK(cudaMemcpy(h.data(), cycles, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int blk = 0; blk < sms; ++blk)
    for (int w = 0; w < 4 * per_scheduler; ++w) mine.push_back(h[blk * kMaxWarps + w]);
  const long long products = 1LL * iters * kMmaChains;
  const double c = median(mine);
  // k_per_mma: instructions of the kind per product (ldmatrix: one every K products).
  std::printf("%s,%.3f,%d,%lld,%.0f,%.3f\n", kKindNames[KIND], KIND == kLdsm ? 1.0 / K : K, per_scheduler,
              products, c, c / products);
}

template <int KIND>
void sweep(int sms, int per_scheduler, int iters, long long* cycles, float* sink) {
  run<KIND, 1>(sms, per_scheduler, iters, cycles, sink);
  run<KIND, 2>(sms, per_scheduler, iters, cycles, sink);
  run<KIND, 3>(sms, per_scheduler, iters, cycles, sink);
  run<KIND, 4>(sms, per_scheduler, iters, cycles, sink);
  run<KIND, 6>(sms, per_scheduler, iters, cycles, sink);
  run<KIND, 8>(sms, per_scheduler, iters, cycles, sink);
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  long long* cycles = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&cycles, sms * kMaxWarps * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 32 * kMaxWarps * sizeof(float)));
  const int iters = 19998;  // a multiple of 3 (the ldmatrix loop's phases)  // about 1.1 M clocks alone (8
                            // products an iteration, ~7 clk each)
  std::printf("kind,k_per_mma,warps_per_scheduler,mma_products,cycles,cycles_per_mma\n");
  for (int per_scheduler : {1, 2}) {
    run<kNone, 0>(sms, per_scheduler, iters, cycles, sink);
    sweep<kFfma>(sms, per_scheduler, iters, cycles, sink);
    sweep<kAlu>(sms, per_scheduler, iters, cycles, sink);
    sweep<kLds>(sms, per_scheduler, iters, cycles, sink);
    sweep<kMufu>(sms, per_scheduler, iters, cycles, sink);
    run<kLdsm, 1>(sms, per_scheduler, iters, cycles, sink);
    run<kLdsm, 2>(sms, per_scheduler, iters, cycles, sink);
    run<kLdsm, 4>(sms, per_scheduler, iters, cycles, sink);
  }
  CHECK(cudaFree(cycles));
  CHECK(cudaFree(sink));
  return 0;
}
