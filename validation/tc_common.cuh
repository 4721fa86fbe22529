// Device helpers shared by the tensor-core kernels (kernels_tc.cu: flash2; kernels_tc_fwd.cu: naive-safe,
// naive-online, two-pass, flash1; kernels_tc_bwd.cu: the backward): cp.async 16-byte copies (L2 only), ldmatrix, mma.sync m16n8k16 (f16 x
// f16 + f32), quad reductions, and the XOR-swizzled shared-memory layout (16-byte chunk c of row r stored at
// c ^ (r & 7), so ldmatrix's eight row reads fall on distinct banks and each 32-byte global sector lands in
// one 32-byte shared unit: cp.async reads exactly the schedule's bytes; see kernels_tc.cu).
// Everything is in an anonymous namespace: each translation unit gets its own copy.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace attnval {

namespace {

template <int BR, int BC, int D, bool PAD>
struct TcShape {
  static constexpr int warps = BR / 16;
  static constexpr int threads = warps * 32;
  static constexpr int ld = PAD ? D + 8 : D;  // shared-memory row stride, halves
  static constexpr size_t smem = sizeof(__half) * static_cast<size_t>(ld) * (BR + 4 * BC);
  static_assert(BR % 16 == 0 && BC % 16 == 0 && D % 64 == 0, "mma tiles; the swizzle needs 8 chunks a row");
  // Offset (halves) of element (r, c) of a tile in shared memory.
  static __device__ __forceinline__ int off(int r, int c) {
    if constexpr (PAD)
      return r * ld + c;
    else
      return r * D + ((((c >> 3) ^ (r & 7)) << 3) | (c & 7));
  }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// R x D fp16 tile (rows contiguous in global memory, stride D) -> shared memory (layout S::off), 16 bytes
// per thread per step: each warp instruction covers 512 contiguous bytes, whole 32-byte sectors.
template <typename S, int R, int D>
__device__ __forceinline__ void cp_tile(const __half* __restrict__ g, __half* s) {
  constexpr int CH = D / 8;
  static_assert((R * CH) % S::threads == 0, "whole steps");
#pragma unroll
  for (int it = 0; it < R * CH / S::threads; ++it) {
    const int idx = threadIdx.x + it * S::threads;
    const int r = idx / CH, c = (idx % CH) * 8;
    cp_async16(s + S::off(r, c), g + static_cast<size_t>(r) * D + c);
  }
}

// Offset (halves) of element (r, c) of a swizzled fp16 tile with rows of W halves (W a multiple of 64).
template <int W>
__device__ __forceinline__ int swz(int r, int c) {
  static_assert(W % 64 == 0, "the swizzle needs 8 chunks a row");
  return r * W + ((((c >> 3) ^ (r & 7)) << 3) | (c & 7));
}
// R x W fp16 tile at g (row stride gstride halves) -> shared memory (swz<W>), by NTH threads, 16 bytes each
// a step: a warp instruction covers whole rows of 32-byte sectors.
template <int NTH, int R, int W>
__device__ __forceinline__ void cp_rows(const __half* __restrict__ g, size_t gstride, __half* s) {
  constexpr int CH = W / 8;
  static_assert((R * CH) % NTH == 0, "whole steps");
#pragma unroll
  for (int it = 0; it < R * CH / NTH; ++it) {
    const int idx = threadIdx.x + it * NTH;
    const int r = idx / CH, c = (idx % CH) * 8;
    cp_async16(s + swz<W>(r, c), g + static_cast<size_t>(r) * gstride + c);
  }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a b for one m16n8k16 tile: a row-major (4 x f16x2), b col-major (2 x f16x2), c f32.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi, float& sum) {
  const __half2 h = __floats2half2_rn(lo, hi);
  const float2 f = __half22float2(h);
  sum += f.x + f.y;  // l sums the fp16-rounded P, as the FFMA kernel does
  return *reinterpret_cast<const uint32_t*>(&h);
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

constexpr float kLog2e = 1.4426950408889634f;

}  // namespace

}  // namespace attnval
