// Memory probe of naive's S = Q K^T kernel (issue "Kernel time"): the kernel's loop with its memory
// traffic only, to see what a key block's K load and S store cost one thread block, alone and together.
// Same grid, threads and addresses as sched_naive_qk_tc<64, 64, 64> (kernels_tc_fwd.cu): 128 threads per
// block, grid (n / 64, heads), per key block j: cp.async of K_j (64 x 64 halves, 8 KB, L2-resident after the
// first block of a head) then the block's 64 x 64 f32 tile of S (16 KB) with 16-byte st.global.cg in rows
// of n floats. Modes: load (K only), store (S only), both (K then S, the kernel's order). Thread 0 of every
// block reads clock64 at its start and end; the program prints, per mode and shape, the median and maximum
// SM cycles per key block over the blocks, and the kernel time (CUDA events, median of 5); then an empty
// kernel of 1, 132 and 264 blocks (under Nsight Compute: the duration a kernel has without any work).
//   nvcc -O3 -arch=sm_90 -o mem_probe validation/mem_probe.cu && ./mem_probe > mem_probe.csv
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kRows = 64, kCols = 64, kD = 64, kThreads = 128;

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}

template <int MODE>  // bit 0: load K_j, bit 1: store the S tile
__global__ void __launch_bounds__(kThreads)
    probe_kernel(const __half* __restrict__ K, float* __restrict__ S, int n, long long* cycles) {
  __shared__ __align__(16) __half sK[kCols * kD];
  const int h = blockIdx.y, q0 = blockIdx.x * kRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const __half* Kh = K + static_cast<size_t>(h) * n * kD;
  float* Sw = S + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0 + warp * 16) * n;
  const long long start = clock64();
  float acc = 0.f;
  for (int j = 0; j < n / kCols; ++j) {
    const int k0 = j * kCols;
    if constexpr (MODE & 1) {
      if (j > 0) __syncthreads();
#pragma unroll
      for (int it = 0; it < kCols * kD / 8 / kThreads; ++it) {
        const int idx = threadIdx.x + it * kThreads;
        cp_async16(sK + 8 * idx, Kh + static_cast<size_t>(k0) * kD + 8 * idx);
      }
      asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
      __syncthreads();
      acc += __half2float(sK[(threadIdx.x * 8 + j) % (kCols * kD)]);
    }
    if constexpr (MODE & 2) {
#pragma unroll
      for (int it = 0; it < 16 * (kCols / 4) / 32; ++it) {
        const int idx = lane + 32 * it;
        const int r = idx / (kCols / 4), c = (idx % (kCols / 4)) * 4;
        __stcg(reinterpret_cast<float4*>(Sw + static_cast<size_t>(r) * n + k0 + c),
               make_float4(acc, acc + 1.f, acc + 2.f, static_cast<float>(j)));
      }
      __syncwarp();
    }
  }
  if (threadIdx.x == 0) {
    cycles[blockIdx.y * gridDim.x + blockIdx.x] = clock64() - start;
    if (acc == 12345.f) S[0] = acc;  // keeps the loads
  }
}

// No work: what a kernel's gpu__time_duration holds besides its blocks' instructions.
__global__ void __launch_bounds__(kThreads) empty_kernel(long long* cycles) {
  if (threadIdx.x == 0) cycles[blockIdx.x] = 0;
}

void run_empty(int blocks, long long* d_cycles) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms(5);
  empty_kernel<<<blocks, kThreads>>>(d_cycles);
  CHECK(cudaGetLastError());
  for (float& m : ms) {
    CHECK(cudaEventRecord(a));
    empty_kernel<<<blocks, kThreads>>>(d_cycles);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&m, a, b));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("empty,0,0,%d,0,0,%.2f\n", blocks, ms[2] * 1e3);
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
}

template <int MODE>
void run(const char* mode, int n, int heads, int grid_x, const __half* K, float* S, long long* d_cycles) {
  const dim3 grid(grid_x, heads);
  const int blocks = grid_x * heads;
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms(5);
  probe_kernel<MODE><<<grid, kThreads>>>(K, S, n, d_cycles);  // warm-up
  CHECK(cudaGetLastError());
  for (float& m : ms) {
    CHECK(cudaEventRecord(a));
    probe_kernel<MODE><<<grid, kThreads>>>(K, S, n, d_cycles);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&m, a, b));
  }
  std::sort(ms.begin(), ms.end());
  std::vector<long long> cycles(static_cast<size_t>(blocks));
  CHECK(cudaMemcpy(cycles.data(), d_cycles, sizeof(long long) * blocks, cudaMemcpyDeviceToHost));
  std::sort(cycles.begin(), cycles.end());
  const double steps = n / kCols;
  std::printf("%s,%d,%d,%d,%.1f,%.1f,%.2f\n", mode, n, heads, blocks, cycles[blocks / 2] / steps,
              cycles.back() / steps, ms[2] * 1e3);
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
}

}  // namespace

int main() {
  const int max_n = 2048, max_heads = 8;
  __half* K;
  float* S;
  long long* cycles;
  CHECK(cudaMalloc(&K, sizeof(__half) * max_heads * max_n * kD));
  CHECK(cudaMalloc(&S, sizeof(float) * max_heads * static_cast<size_t>(max_n) * max_n));
  CHECK(cudaMalloc(&cycles, sizeof(long long) * 512));  // the largest grid: 264 blocks
  CHECK(cudaMemset(K, 0, sizeof(__half) * max_heads * max_n * kD));
  std::printf("mode,n,heads,blocks,cycles_per_key_block_median,cycles_per_key_block_max,time_us\n");
  struct Shape {
    int n, heads, grid_x;
  };
  // One block alone; the kernel's grids at n = 1,024 (128 blocks: one per SM) and 2,048 (256: two per SM).
  for (const Shape s : {Shape{1024, 1, 1}, Shape{1024, 8, 16}, Shape{2048, 8, 32}}) {
    run<1>("load", s.n, s.heads, s.grid_x, K, S, cycles);
    run<2>("store", s.n, s.heads, s.grid_x, K, S, cycles);
    run<3>("both", s.n, s.heads, s.grid_x, K, S, cycles);
  }
  for (int blocks : {1, 132, 264}) run_empty(blocks, cycles);
  CHECK(cudaFree(K));
  CHECK(cudaFree(S));
  CHECK(cudaFree(cycles));
  return 0;
}
