// wgmma throughput of one SM (Hopper, sm_90a): each warp group of a block issues 8 wgmma.mma_async of
// m64nNk16 (f16 x f16 + f32, A and B from shared memory) per commit group, then waits for them, ITERS times;
// one block per SM on every SM, W warp groups a block. clock64 around the loop gives FLOP/clk per SM, to set
// beside mma.sync's (validation/microbench.cu: 2,447 FLOP/clk/SM on the H100). The operands' values do not
// matter (shared memory is zeroed), only the rate.
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o wgmma_bench validation/wgmma_bench.cu && ./wgmma_bench
// Prints `metric,value,unit,how` lines, as microbench does.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda_check.h"

namespace {

// One wgmma m64n64k16, f16 x f16 + f32 (32 accumulators a thread), A and B from shared memory.
__device__ __forceinline__ void wgmma_m64n64(float* d, unsigned long long desc_a, unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b));
}

// One wgmma m64n128k16, f16 x f16 + f32 (64 accumulators a thread), A and B from shared memory.
__device__ __forceinline__ void wgmma_m64n128(float* d, unsigned long long desc_a,
                                              unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
        "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
        "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b));
}

// One wgmma m64n256k16, f16 x f16 + f32 (128 accumulators a thread), A and B from shared memory.
__device__ __forceinline__ void wgmma_m64n256(float* d, unsigned long long desc_a,
                                              unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
        "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
        "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
        "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),
        "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]),
        "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),
        "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]),
        "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),
        "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
        "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b));
}

// A shared-memory matrix descriptor without swizzling: 8-row x 16-byte core matrices, the next one along K
// 128 bytes on (leading byte offset), the next 8 rows 256 bytes on (stride byte offset).
__device__ unsigned long long descriptor(unsigned address) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(128 >> 4) << 16) |
         (static_cast<unsigned long long>(256 >> 4) << 32);
}

constexpr int kPerGroup = 8;  // wgmma per commit group

template <int N>
__device__ void wgmma_n(float* d, unsigned long long a, unsigned long long b);
template <>
__device__ void wgmma_n<64>(float* d, unsigned long long a, unsigned long long b) {
  wgmma_m64n64(d, a, b);
}
template <>
__device__ void wgmma_n<128>(float* d, unsigned long long a, unsigned long long b) {
  wgmma_m64n128(d, a, b);
}
template <>
__device__ void wgmma_n<256>(float* d, unsigned long long a, unsigned long long b) {
  wgmma_m64n256(d, a, b);
}

template <int N>
__global__ void wgmma_kernel(long long* cycles, float* sink, int iters) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int bytes = 64 * 16 * 2 + N * 16 * 2;  // A (64 x 16) then B (N x 16), f16
  for (int i = static_cast<int>(threadIdx.x); i < bytes / 4; i += static_cast<int>(blockDim.x))
    reinterpret_cast<float*>(smem)[i] = 0.f;
  __syncthreads();
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned long long a = descriptor(base), b = descriptor(base + 64 * 16 * 2);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < kPerGroup; ++k) wgmma_n<N>(d, a, b);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s != 0.f) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;  // never: the operands are zero
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int N>
void measure(int sms, int groups, int iters) {
  long long* cycles = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&cycles, sms * sizeof(long long)));
  CHECK(cudaMalloc(&sink, static_cast<size_t>(sms) * 128 * groups * sizeof(float)));
  cudaFuncAttributes attributes{};
  CHECK(cudaFuncGetAttributes(&attributes, wgmma_kernel<N>));
  if (attributes.numRegs * 128 * groups > 65536) {  // the register file does not hold this many warp groups
    CHECK(cudaFree(cycles));
    CHECK(cudaFree(sink));
    return;
  }
  const int smem = 120 * 1024;  // at most one block per SM
  CHECK(cudaFuncSetAttribute(wgmma_kernel<N>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  for (int warm = 0; warm < 2; ++warm) {
    wgmma_kernel<N><<<sms, 128 * groups, smem>>>(cycles, sink, iters);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  std::vector<long long> c(static_cast<size_t>(sms));
  CHECK(cudaMemcpy(c.data(), cycles, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::sort(c.begin(), c.end());
  const double flop = 2.0 * 64 * N * 16 * kPerGroup * iters * groups;
  std::printf(
      "wgmma_m64n%dk16_flop_per_clk_per_sm_g%d,%.6g,FLOP/clk,\"%d warp group(s) of 128 threads on every SM, "
      "%d "
      "wgmma per commit group then wait_group 0, %d groups; median SM (min %.6g, max %.6g)\"\n",
      N, groups, flop / static_cast<double>(c[c.size() / 2]), groups, kPerGroup, iters,
      flop / static_cast<double>(c.back()), flop / static_cast<double>(c.front()));
  CHECK(cudaFree(cycles));
  CHECK(cudaFree(sink));
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("metric,value,unit,how\n");
  const int iters = 2000;
  for (int groups : {1, 2, 3, 4}) {
    measure<64>(prop.multiProcessorCount, groups, iters);
    measure<128>(prop.multiProcessorCount, groups, iters);
    measure<256>(prop.multiProcessorCount, groups, iters);
  }
  return 0;
}
