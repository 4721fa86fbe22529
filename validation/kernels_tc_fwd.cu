// Tensor-core versions of the other forward schedules of docs/schedules.md (naive-safe, naive-online,
// two-pass, flash1), for timing them against the simulator: the same loop order, tiles and global traffic
// (bytes between the SMs and L2) as traces/attention_forward.cpp's programs and the FFMA kernels of
// kernels.cu, with the matrix products on mma.sync m16n8k16 (fp16 x fp16 + f32) as in kernels_tc.cu.
//
// Common to all: one warp per 16 query rows (B_r / 16 warps), fp16 tiles copied into shared memory with
// 16-byte cp.async.cg (L2 only) into the XOR-swizzled layout of tc_common.cuh (whole 32-byte sectors, no
// byte read twice), A/B fragments by ldmatrix(.trans), every global store a 16-byte st.global.cg of whole
// rows staged through shared memory. Nothing is loaded that the schedule does not load.
//
//   naive-safe / naive-online (three kernels, no double buffering, as the simulator's naive programs):
//     sched_naive_qk_tc       per (i, head): Q_i once; for ALL j: K_j, S_ij = Q_i K_j^T, causal mask (tiles
//                             above the diagonal computed and stored as -inf), S_ij stored f32;
//     sched_naive_softmax_tc  per (i, head), m and l in registers: safe: pass 1 max, pass 2 sum, pass 3
//                             P = exp(S - m) / l (fp16); online: pass 1 running (m, l), pass 2 P;
//     sched_naive_pv_tc       per (i, head): for ALL j: P_ij, V_j, O_i += P_ij V_j; O_i stored once.
//   two-pass (two kernels, the next K (pass 1) / K and V (pass 2) prefetched, double buffered):
//     sched_two_pass_stats_tc   per (i, head): Q_i; visible j: K_j, S, mask, online (m, l) in f32; m_i, l_i
//                               stored (f32);
//     sched_two_pass_output_tc  per (i, head): Q_i, m_i, l_i; visible j: K_j, V_j, S, mask,
//                               P = exp(S - m_i) / l_i (fp16), O_i += P V_j; O_i stored once.
//   flash1 (one launch per key block j, as sched_flash1_step and flash1_grid):
//     sched_flash1_tc  per (group of visible query blocks, head): K_j, V_j once; per query block i: Q_i,
//                      O_i (fp16), l_i, m_i (f32) (the next step's prefetched, double buffered), Algorithm
//                      1's step with P~ = exp(S - m_new), O_i (normalised, fp16), l_new, m_new stored.
// A warp whose 16 rows see no key of a tile (causal) skips that tile's products; the tile is still loaded
// (and in flash1 the warp's O, l, m rows are still read and written back, unchanged), as the schedule says.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_check.h"
#include "kernels.h"
#include "tc_common.cuh"

namespace attnval {

namespace {

// Offset (floats) of element (r, c) of a swizzled f32 tile with rows of W floats (16-byte chunks of 4).
template <int W>
__device__ __forceinline__ int swzf(int r, int c) {
  static_assert(W % 32 == 0, "the swizzle needs 8 chunks a row");
  return r * W + ((((c >> 2) ^ (r & 7)) << 2) | (c & 3));
}

// R floats (a slice of l or m) -> shared memory, by threads [first, first + R / 4).
template <int R>
__device__ __forceinline__ void cp_vec(const float* __restrict__ g, float* s, int first) {
  static_assert(R % 4 == 0, "16-byte chunks");
  const int idx = static_cast<int>(threadIdx.x) - first;
  if (idx >= 0 && idx < R / 4) cp_async16(s + 4 * idx, g + 4 * idx);
}

// This warp's A fragments of rows [row0, row0 + 16) x K columns of a swizzled tile with rows of W halves.
template <int K, int W>
__device__ __forceinline__ void load_a(uint32_t (&a)[K / 16][4], const __half* s, int row0, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    ldmatrix_x4(a[kk], s + swz<W>(row0 + (lane & 15), kk * 16 + (lane >> 4) * 8));
}

// s = Q K_j^T for this warp's 16 rows x BC keys (K tile swizzled, rows of D halves), as in sched_flash2_tc.
template <int BC, int D>
__device__ __forceinline__ void qk_mma(float (&s)[BC / 8][4], const uint32_t (&qf)[D / 16][4],
                                       const __half* sK, int lane) {
#pragma unroll
  for (int nt = 0; nt < BC / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int nb = 0; nb < BC / 16; ++nb) {
      uint32_t b[4];
      ldmatrix_x4(b, sK + swz<D>(nb * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 16 + ((lane >> 3) & 1) * 8));
      mma16816(s[2 * nb], qf[kk], b[0], b[1]);
      mma16816(s[2 * nb + 1], qf[kk], b[2], b[3]);
    }
  }
}

// o += P V for k16 step kk of the tile (a: the A fragment of P's columns [16kk, 16kk + 16)).
template <int D>
__device__ __forceinline__ void pv_step(float (&o)[D / 8][4], const uint32_t (&a)[4], const __half* sV,
                                        int kk, int lane) {
#pragma unroll
  for (int db = 0; db < D / 16; ++db) {
    uint32_t b[4];
    ldmatrix_x4_trans(b,
                      sV + swz<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, db * 16 + (lane >> 4) * 8));
    mma16816(o[2 * db], a, b[0], b[1]);
    mma16816(o[2 * db + 1], a, b[2], b[3]);
  }
}

// o += P V_j with P in registers (fp16x2 [n tile][row half], the S accumulators' layout).
template <int BC, int D>
__device__ __forceinline__ void pv_mma(float (&o)[D / 8][4], const uint32_t (&p)[BC / 8][2], const __half* sV,
                                       int lane) {
#pragma unroll
  for (int kk = 0; kk < BC / 16; ++kk) {
    const uint32_t a[4] = {p[2 * kk][0], p[2 * kk][1], p[2 * kk + 1][0], p[2 * kk + 1][1]};
    pv_step<D>(o, a, sV, kk, lane);
  }
}

// -inf where key > query (a tile crossing the diagonal); rows wrow0 + g (+ 8), keys k0 + ...
template <int BC>
__device__ __forceinline__ void mask_tile(float (&s)[BC / 8][4], int wrow0, int k0, int g, int t) {
#pragma unroll
  for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = wrow0 + g + 8 * (e >> 1), c = k0 + nt * 8 + 2 * t + (e & 1);
      if (c > r) s[nt][e] = -INFINITY;
    }
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// This warp's 16 x D output rows (o times inv per row half) -> its 16 rows of a swizzled staging tile
// (rows of D halves; sW points at the warp's first row) -> global rows (stride D) with 16-byte st.global.cg.
template <int D>
__device__ __forceinline__ void store_o(const float (&o)[D / 8][4], const float (&inv)[2], __half* sW,
                                        __half* __restrict__ Og, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    *reinterpret_cast<__half2*>(sW + swz<D>(g, dt * 8 + 2 * t)) =
        __floats2half2_rn(o[dt][0] * inv[0], o[dt][1] * inv[0]);
    *reinterpret_cast<__half2*>(sW + swz<D>(g + 8, dt * 8 + 2 * t)) =
        __floats2half2_rn(o[dt][2] * inv[1], o[dt][3] * inv[1]);
  }
  __syncwarp();
  constexpr int CH = D / 8;
#pragma unroll
  for (int it = 0; it < 16 * CH / 32; ++it) {
    const int idx = lane + 32 * it;
    const int r = idx / CH, c = (idx % CH) * 8;
    __stcg(reinterpret_cast<int4*>(Og + static_cast<size_t>(r) * D + c),
           *reinterpret_cast<const int4*>(sW + swz<D>(r, c)));
  }
}

// This warp's rows' statistics (v[hr] for rows g + 8 hr, replicated over the quad) -> 16 floats of shared
// memory at sW -> 64 bytes of global memory at g (one 16-byte st.global.cg by each of lanes first..first+3).
__device__ __forceinline__ void store_stat(const float (&v)[2], float* sW, float* __restrict__ gp, int lane,
                                           int first) {
  const int g = lane >> 2, t = lane & 3;
  if (t == 0) sW[g] = v[0], sW[g + 8] = v[1];
  __syncwarp();
  const int idx = lane - first;
  if (idx >= 0 && idx < 4)
    __stcg(reinterpret_cast<float4*>(gp) + idx, reinterpret_cast<const float4*>(sW)[idx]);
}

__device__ __forceinline__ float finite_or_zero(float m) {
  return m == -INFINITY ? 0.f : m;
}

template <int W>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int off = W / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
template <int W>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int off = W / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <int BR>
__host__ __device__ constexpr int tc_threads() {
  return BR / 16 * 32;
}
constexpr int kSoftmaxThreads = 256;

template <int BR, int BC, int D>
constexpr size_t smem_naive_qk_tc() {
  return sizeof(__half) * (BR * D + BC * D) + sizeof(float) * BR * BC;
}
template <int BR, int BC, int D>
constexpr size_t smem_naive_pv_tc() {
  return sizeof(__half) * (BR * (BC > D ? BC : D) + BC * D);
}
template <int BR, int BC, int D>
constexpr size_t smem_two_pass_tc(bool output) {
  return sizeof(__half) * (BR * D + (output ? 4 : 2) * BC * D) + sizeof(float) * 2 * BR;
}
template <int BR, int BC, int D>
constexpr size_t smem_flash1_tc() {
  return sizeof(__half) * (2 * BC * D + 4 * BR * D) + sizeof(float) * 4 * BR;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// naive, kernel 1: S = Q K^T (f32) for every tile, causal mask, stored whole rows.
template <int BR, int BC, int D>
__global__ void __launch_bounds__(tc_threads<BR>())
    sched_naive_qk_tc(const __half* __restrict__ Q, const __half* __restrict__ K, float* __restrict__ S,
                      int n, int causal) {
  constexpr int NTH = tc_threads<BR>();
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sQ = reinterpret_cast<__half*>(tc_smem);
  __half* sK = sQ + BR * D;
  float* sS = reinterpret_cast<float*>(sK + BC * D);  // BR x BC f32, each warp stages its own 16 rows
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int wrow0 = q0 + warp * 16;
  float* sW = sS + warp * 16 * BC;
  float* Sw = S + static_cast<size_t>(h) * n * n + static_cast<size_t>(wrow0) * n;
  const int tc = n / BC;
  cp_rows<NTH, BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  uint32_t qf[D / 16][4];
  load_a<D, D>(qf, sQ, warp * 16, lane);
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC;
    if (j > 0) __syncthreads();  // every warp is done with K_{j-1}
    cp_rows<NTH, BC, D>(K + hoff + static_cast<size_t>(k0) * D, D, sK);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    float s[BC / 8][4];
    qk_mma<BC, D>(s, qf, sK, lane);
    if (causal && k0 + BC - 1 > q0) mask_tile<BC>(s, wrow0, k0, g, t);
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt) {
      *reinterpret_cast<float2*>(sW + swzf<BC>(g, nt * 8 + 2 * t)) = make_float2(s[nt][0], s[nt][1]);
      *reinterpret_cast<float2*>(sW + swzf<BC>(g + 8, nt * 8 + 2 * t)) = make_float2(s[nt][2], s[nt][3]);
    }
    __syncwarp();
    constexpr int CH = BC / 4;
#pragma unroll
    for (int it = 0; it < 16 * CH / 32; ++it) {
      const int idx = lane + 32 * it;
      const int r = idx / CH, c = (idx % CH) * 4;
      __stcg(reinterpret_cast<float4*>(Sw + static_cast<size_t>(r) * n + k0 + c),
             *reinterpret_cast<const float4*>(sW + swzf<BC>(r, c)));
    }
    __syncwarp();  // the staging rows are read before the next tile overwrites them
  }
}

// naive, kernel 2: the row softmax of S_i. (m, l) per row in registers. 256 threads; BC / 4 lanes share a
// row, each loading 16 bytes (4 scores) a tile, so a warp's load covers whole rows; P: each even lane of
// the row stores its 4 and its neighbour's 4 halves as one 16-byte st.global.cg.
//   safe (ONLINE = false): pass 1 max, pass 2 l = sum exp(S - m), pass 3 P = exp(S - m) / l;
//   online: pass 1 m_new = max(m, rowmax), l = l e^(m - m_new) + sum exp(S - m_new); pass 2 P.
template <int BR, int BC, bool ONLINE>
__global__ void __launch_bounds__(kSoftmaxThreads)
    sched_naive_softmax_tc(const float* __restrict__ S, __half* __restrict__ P, int n) {
  constexpr int CH = BC / 4;  // lanes per row
  static_assert(CH >= 2 && CH <= 32 && 32 % CH == 0, "BC / 4 lanes must tile a warp");
  constexpr int RPI = kSoftmaxThreads / CH;  // rows per iteration
  static_assert(BR % RPI == 0, "whole iterations");
  constexpr int ITER = BR / RPI;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const int c = threadIdx.x % CH, rr = threadIdx.x / CH;
  const float* Sh = S + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  __half* Ph = P + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  const int tc = n / BC;
  float m[ITER], l[ITER];
#pragma unroll
  for (int it = 0; it < ITER; ++it) m[it] = -INFINITY, l[it] = 0.f;
  auto load4 = [&](int r, int k0) {
    return __ldcg(reinterpret_cast<const float4*>(Sh + static_cast<size_t>(r) * n + k0 + 4 * c));
  };
  for (int j = 0; j < tc; ++j)  // pass 1
#pragma unroll
    for (int it = 0; it < ITER; ++it) {
      const float4 v = load4(rr + RPI * it, j * BC);
      const float mt = group_max<CH>(fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      if constexpr (ONLINE) {
        const float m_new = fmaxf(m[it], mt);
        const float mu = finite_or_zero(m_new);
        const float sum = group_sum<CH>(expf(v.x - mu) + expf(v.y - mu) + expf(v.z - mu) + expf(v.w - mu));
        l[it] = l[it] * expf(m[it] - mu) + sum;  // 0 while m was -inf (l is 0 then)
        m[it] = m_new;
      } else {
        m[it] = fmaxf(m[it], mt);
      }
    }
  if constexpr (!ONLINE)
    for (int j = 0; j < tc; ++j)  // pass 2
#pragma unroll
      for (int it = 0; it < ITER; ++it) {
        const float4 v = load4(rr + RPI * it, j * BC);
        const float mu = finite_or_zero(m[it]);
        l[it] += group_sum<CH>(expf(v.x - mu) + expf(v.y - mu) + expf(v.z - mu) + expf(v.w - mu));
      }
  for (int j = 0; j < tc; ++j)  // last pass: P
#pragma unroll
    for (int it = 0; it < ITER; ++it) {
      const int r = rr + RPI * it;
      const float4 v = load4(r, j * BC);
      const float mu = finite_or_zero(m[it]), inv = 1.f / l[it];
      const uint32_t lo = pack2(expf(v.x - mu) * inv, expf(v.y - mu) * inv);
      const uint32_t hi = pack2(expf(v.z - mu) * inv, expf(v.w - mu) * inv);
      const uint32_t nlo = __shfl_down_sync(0xffffffffu, lo, 1), nhi = __shfl_down_sync(0xffffffffu, hi, 1);
      if ((c & 1) == 0)
        __stcg(reinterpret_cast<int4*>(Ph + static_cast<size_t>(r) * n + j * BC + 4 * c),
               make_int4(static_cast<int>(lo), static_cast<int>(hi), static_cast<int>(nlo),
                         static_cast<int>(nhi)));
    }
}

// naive, kernel 3: O_i = sum_j P_ij V_j; O_i stored once.
template <int BR, int BC, int D>
__global__ void __launch_bounds__(tc_threads<BR>())
    sched_naive_pv_tc(const __half* __restrict__ P, const __half* __restrict__ V, __half* __restrict__ O,
                      int n) {
  constexpr int NTH = tc_threads<BR>();
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sP = reinterpret_cast<__half*>(tc_smem);  // BR x BC (later BR x D: O's staging)
  __half* sV = sP + BR * (BC > D ? BC : D);
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const __half* Pi = P + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  const int tc = n / BC;
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC;
    if (j > 0) __syncthreads();  // every warp is done with P_i(j-1), V_{j-1}
    cp_rows<NTH, BR, BC>(Pi + k0, n, sP);
    cp_rows<NTH, BC, D>(V + hoff + static_cast<size_t>(k0) * D, D, sV);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    uint32_t pf[BC / 16][4];
    load_a<BC, BC>(pf, sP, warp * 16, lane);
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) pv_step<D>(o, pf[kk], sV, kk, lane);
  }
  __syncthreads();  // sP becomes O's staging
  const float inv[2] = {1.f, 1.f};
  store_o<D>(o, inv, sP + warp * 16 * D, O + hoff + static_cast<size_t>(q0 + warp * 16) * D, lane);
}

// ---------------------------------------------------------------------------------------------------
// two-pass, kernel 1: the row statistics (m, l) of Q_i K^T over the visible key blocks, f32; K double
// buffered.
template <int BR, int BC, int D>
__global__ void __launch_bounds__(tc_threads<BR>())
    sched_two_pass_stats_tc(const __half* __restrict__ Q, const __half* __restrict__ K, float* __restrict__ L,
                            float* __restrict__ M, int n, int causal) {
  constexpr int NTH = tc_threads<BR>();
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sQ = reinterpret_cast<__half*>(tc_smem);
  __half* sK = sQ + BR * D;                                  // two buffers
  float* sStat = reinterpret_cast<float*>(sK + 2 * BC * D);  // 2 x BR: m, l staging
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int tc = n / BC;
  const int jend = causal ? min(tc, (q0 + BR - 1) / BC + 1) : tc;
  const int wrow0 = q0 + warp * 16;
  cp_rows<NTH, BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ);
  cp_rows<NTH, BC, D>(K + hoff, D, sK);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  uint32_t qf[D / 16][4];
  load_a<D, D>(qf, sQ, warp * 16, lane);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // l: this thread's partial sums
  for (int j = 0; j < jend; ++j) {
    const int k0 = j * BC;
    if (j > 0) {
      cp_async_wait_all();
      __syncthreads();
    }
    if (j + 1 < jend) {
      cp_rows<NTH, BC, D>(K + hoff + static_cast<size_t>(k0 + BC) * D, D, sK + ((j + 1) & 1) * BC * D);
      cp_async_commit();
    }
    if (causal && k0 > wrow0 + 15) continue;  // no key of this tile is visible to the warp's rows
    float s[BC / 8][4];
    qk_mma<BC, D>(s, qf, sK + (j & 1) * BC * D, lane);
    if (causal && k0 + BC - 1 > q0) mask_tile<BC>(s, wrow0, k0, g, t);
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * hr], s[nt][2 * hr + 1]));
      const float m_new = fmaxf(m[hr], quad_max(mx));
      const float mu = finite_or_zero(m_new) * kLog2e;
      float sum = 0.f;  // f32: the scores are not rounded here
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
        sum += exp2f(fmaf(s[nt][2 * hr], kLog2e, -mu)) + exp2f(fmaf(s[nt][2 * hr + 1], kLog2e, -mu));
      l[hr] = l[hr] * exp2f(m[hr] * kLog2e - mu) + sum;
      m[hr] = m_new;
    }
  }
  const float lt[2] = {quad_sum(l[0]), quad_sum(l[1])};
  const size_t roff = static_cast<size_t>(h) * n + wrow0;
  store_stat(m, sStat + warp * 16, M + roff, lane, 0);
  store_stat(lt, sStat + BR + warp * 16, L + roff, lane, 4);
}

// two-pass, kernel 2: O_i = sum_j exp(S_ij - m_i) / l_i V_j over the visible key blocks, stored once; K, V
// double buffered.
template <int BR, int BC, int D>
__global__ void __launch_bounds__(tc_threads<BR>())
    sched_two_pass_output_tc(const __half* __restrict__ Q, const __half* __restrict__ K,
                             const __half* __restrict__ V, const float* __restrict__ L,
                             const float* __restrict__ M, __half* __restrict__ O, int n, int causal) {
  constexpr int NTH = tc_threads<BR>();
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sQ = reinterpret_cast<__half*>(tc_smem);
  __half* sK = sQ + BR * D;      // two buffers
  __half* sV = sK + 2 * BC * D;  // two buffers
  float* sM = reinterpret_cast<float*>(sV + 2 * BC * D);
  float* sL = sM + BR;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const size_t roff = static_cast<size_t>(h) * n + q0;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int tc = n / BC;
  const int jend = causal ? min(tc, (q0 + BR - 1) / BC + 1) : tc;
  const int wrow0 = q0 + warp * 16;
  cp_rows<NTH, BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ);
  cp_vec<BR>(M + roff, sM, 0);
  cp_vec<BR>(L + roff, sL, BR / 4);
  cp_rows<NTH, BC, D>(K + hoff, D, sK);
  cp_rows<NTH, BC, D>(V + hoff, D, sV);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  uint32_t qf[D / 16][4];
  load_a<D, D>(qf, sQ, warp * 16, lane);
  float mu[2], inv[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    mu[hr] = finite_or_zero(sM[warp * 16 + g + 8 * hr]) * kLog2e;
    inv[hr] = 1.f / sL[warp * 16 + g + 8 * hr];
  }
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  for (int j = 0; j < jend; ++j) {
    const int k0 = j * BC;
    if (j > 0) {
      cp_async_wait_all();
      __syncthreads();
    }
    if (j + 1 < jend) {
      const int nb = (j + 1) & 1;
      cp_rows<NTH, BC, D>(K + hoff + static_cast<size_t>(k0 + BC) * D, D, sK + nb * BC * D);
      cp_rows<NTH, BC, D>(V + hoff + static_cast<size_t>(k0 + BC) * D, D, sV + nb * BC * D);
      cp_async_commit();
    }
    if (causal && k0 > wrow0 + 15) continue;
    float s[BC / 8][4];
    qk_mma<BC, D>(s, qf, sK + (j & 1) * BC * D, lane);
    if (causal && k0 + BC - 1 > q0) mask_tile<BC>(s, wrow0, k0, g, t);
    uint32_t p[BC / 8][2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
        p[nt][hr] = pack2(exp2f(fmaf(s[nt][2 * hr], kLog2e, -mu[hr])) * inv[hr],
                          exp2f(fmaf(s[nt][2 * hr + 1], kLog2e, -mu[hr])) * inv[hr]);
    pv_mma<BC, D>(o, p, sV + (j & 1) * BC * D, lane);
  }
  // Each warp stages its own 16 rows in sQ (only it read them).
  const float one[2] = {1.f, 1.f};
  store_o<D>(o, one, sQ + warp * 16 * D, O + hoff + static_cast<size_t>(wrow0) * D, lane);
}

// ---------------------------------------------------------------------------------------------------
// flash1, launch j: K_j, V_j once per block; per visible query block i of the block's group: Q_i, O_i,
// l_i, m_i in, S, mask, P~ = exp(S - m_new) (fp16; l sums the rounded values, as sched_flash1_step),
// O_i = (l_i e^(m_i - m_new) O_i + P~ V_j) / l_new, O_i, l_new, m_new out. The next step's Q, O, l, m are
// prefetched into the other buffer (distinct query blocks: no step of a launch reads rows another writes).
template <int BR, int BC, int D>
__global__ void __launch_bounds__(tc_threads<BR>())
    sched_flash1_tc(const __half* __restrict__ Q, const __half* __restrict__ K, const __half* __restrict__ V,
                    __half* __restrict__ O, float* __restrict__ L, float* __restrict__ M, int n, int causal,
                    int j, int chunk) {
  constexpr int NTH = tc_threads<BR>();
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sK = reinterpret_cast<__half*>(tc_smem);
  __half* sV = sK + BC * D;
  __half* sQ = sV + BC * D;      // two buffers of BR x D
  __half* sO = sQ + 2 * BR * D;  // two buffers of BR x D (also the staging of the new O)
  float* sL = reinterpret_cast<float*>(sO + 2 * BR * D);  // two buffers of BR
  float* sM = sL + 2 * BR;                                // two buffers of BR
  const int k0 = j * BC;
  const int tr = n / BR;
  const int i_begin = (causal ? k0 / BR : 0) + blockIdx.x * chunk;
  const int i_end = min(tr, i_begin + chunk);
  const int h = blockIdx.y;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  auto load_step = [&](int i, int b) {
    const int q0 = i * BR;
    const size_t roff = static_cast<size_t>(h) * n + q0;
    cp_rows<NTH, BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ + b * BR * D);
    cp_rows<NTH, BR, D>(O + hoff + static_cast<size_t>(q0) * D, D, sO + b * BR * D);
    cp_vec<BR>(L + roff, sL + b * BR, 0);
    cp_vec<BR>(M + roff, sM + b * BR, BR / 4);
  };
  cp_rows<NTH, BC, D>(K + hoff + static_cast<size_t>(k0) * D, D, sK);
  cp_rows<NTH, BC, D>(V + hoff + static_cast<size_t>(k0) * D, D, sV);
  load_step(i_begin, 0);
  cp_async_commit();
  for (int i = i_begin; i < i_end; ++i) {
    const int b = (i - i_begin) & 1;
    cp_async_wait_all();
    __syncthreads();  // step i's tiles have landed; every warp is done with step i - 1's buffers
    if (i + 1 < i_end) {
      load_step(i + 1, b ^ 1);
      cp_async_commit();
    }
    const int q0 = i * BR, wrow0 = q0 + warp * 16;
    const __half* sQb = sQ + b * BR * D;
    __half* sOw = sO + b * BR * D + warp * 16 * D;  // this warp's 16 rows of O_i
    float* sLw = sL + b * BR + warp * 16;
    float* sMw = sM + b * BR + warp * 16;
    const bool live = !(causal && k0 > wrow0 + 15);  // some key of the tile is visible to the warp's rows
    float s[BC / 8][4];
    if (live) {
      uint32_t qf[D / 16][4];
      load_a<D, D>(qf, sQb, warp * 16, lane);
      qk_mma<BC, D>(s, qf, sK, lane);
      if (causal && k0 + BC - 1 > q0) mask_tile<BC>(s, wrow0, k0, g, t);
    }
    uint32_t p[BC / 8][2];
    float scale[2], m_new[2], l_new[2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const float mi = sMw[g + 8 * hr], li = sLw[g + 8 * hr];
      float mx = -INFINITY;
      if (live) {
#pragma unroll
        for (int nt = 0; nt < BC / 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * hr], s[nt][2 * hr + 1]));
        mx = quad_max(mx);
      }
      m_new[hr] = fmaxf(mi, mx);
      const float mu = finite_or_zero(m_new[hr]) * kLog2e;
      float sum = 0.f;
      if (live) {
#pragma unroll
        for (int nt = 0; nt < BC / 8; ++nt)
          p[nt][hr] = pack_half2(exp2f(fmaf(s[nt][2 * hr], kLog2e, -mu)),
                                 exp2f(fmaf(s[nt][2 * hr + 1], kLog2e, -mu)), sum);
        sum = quad_sum(sum);
      }
      scale[hr] = li * exp2f(mi * kLog2e - mu);  // 0 on the first step (m_i = -inf, l_i = 0)
      l_new[hr] = scale[hr] + sum;
    }
    float o[D / 8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const float2 a = __half22float2(*reinterpret_cast<const __half2*>(sOw + swz<D>(g, dt * 8 + 2 * t)));
      const float2 c = __half22float2(*reinterpret_cast<const __half2*>(sOw + swz<D>(g + 8, dt * 8 + 2 * t)));
      o[dt][0] = a.x * scale[0];
      o[dt][1] = a.y * scale[0];
      o[dt][2] = c.x * scale[1];
      o[dt][3] = c.y * scale[1];
    }
    if (live) pv_mma<BC, D>(o, p, sV, lane);
    const float inv[2] = {1.f / l_new[0], 1.f / l_new[1]};
    __syncwarp();  // every lane has read its O, l, m values before the staging overwrites them
    store_o<D>(o, inv, sOw, O + hoff + static_cast<size_t>(wrow0) * D, lane);
    const size_t roff = static_cast<size_t>(h) * n + wrow0;
    store_stat(l_new, sLw, L + roff, lane, 0);
    store_stat(m_new, sMw, M + roff, lane, 4);
  }
}

// ---------------------------------------------------------------------------------------------------
// Host side.

namespace {

template <typename F>
void set_smem(F* fn, size_t bytes) {
  CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <typename F>
TcKernelInfo info_of(F* fn, int threads, size_t smem) {
  set_smem(fn, smem);
  TcKernelInfo info;
  cudaFuncAttributes a{};
  CHECK(cudaFuncGetAttributes(&a, fn));
  info.registers = a.numRegs;
  info.local_bytes = static_cast<int>(a.localSizeBytes);
  info.smem_bytes = static_cast<int>(smem);
  info.threads = threads;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info.blocks_per_sm, fn, threads, smem));
  return info;
}

// Pointers of one run; info != null: fill the resources of each distinct kernel in launch order instead.
struct FwdArgs {
  const __half *q, *k, *v;
  __half *o, *p;
  float *s, *l, *m;
};

template <int BR, int BC, int D>
struct TcFwd {
  static constexpr int NTH = tc_threads<BR>();
  static int naive(const Dims& g, bool online, const FwdArgs& a, cudaStream_t st, TcKernelInfo* info) {
    auto* qk = sched_naive_qk_tc<BR, BC, D>;
    auto* sm = online ? sched_naive_softmax_tc<BR, BC, true> : sched_naive_softmax_tc<BR, BC, false>;
    auto* pv = sched_naive_pv_tc<BR, BC, D>;
    constexpr size_t s1 = smem_naive_qk_tc<BR, BC, D>(), s3 = smem_naive_pv_tc<BR, BC, D>();
    if (info) {
      info[0] = info_of(qk, NTH, s1);
      info[1] = info_of(sm, kSoftmaxThreads, 0);
      info[2] = info_of(pv, NTH, s3);
      return 3;
    }
    const dim3 grid(g.n / BR, g.heads);
    set_smem(qk, s1);
    set_smem(pv, s3);
    qk<<<grid, NTH, s1, st>>>(a.q, a.k, a.s, g.n, g.causal);
    CHECK(cudaGetLastError());
    sm<<<grid, kSoftmaxThreads, 0, st>>>(a.s, a.p, g.n);
    CHECK(cudaGetLastError());
    pv<<<grid, NTH, s3, st>>>(a.p, a.v, a.o, g.n);
    CHECK(cudaGetLastError());
    return 3;
  }
  static int two_pass(const Dims& g, const FwdArgs& a, cudaStream_t st, TcKernelInfo* info) {
    auto* k1 = sched_two_pass_stats_tc<BR, BC, D>;
    auto* k2 = sched_two_pass_output_tc<BR, BC, D>;
    constexpr size_t s1 = smem_two_pass_tc<BR, BC, D>(false), s2 = smem_two_pass_tc<BR, BC, D>(true);
    if (info) {
      info[0] = info_of(k1, NTH, s1);
      info[1] = info_of(k2, NTH, s2);
      return 2;
    }
    const dim3 grid(g.n / BR, g.heads);
    set_smem(k1, s1);
    set_smem(k2, s2);
    k1<<<grid, NTH, s1, st>>>(a.q, a.k, a.l, a.m, g.n, g.causal);
    CHECK(cudaGetLastError());
    k2<<<grid, NTH, s2, st>>>(a.q, a.k, a.v, a.l, a.m, a.o, g.n, g.causal);
    CHECK(cudaGetLastError());
    return 2;
  }
  static int flash1(const Dims& g, const FwdArgs& a, cudaStream_t st, TcKernelInfo* info) {
    auto* fn = sched_flash1_tc<BR, BC, D>;
    constexpr size_t sm = smem_flash1_tc<BR, BC, D>();
    if (info) {
      info[0] = info_of(fn, NTH, sm);
      return 1;
    }
    set_smem(fn, sm);
    const int tc = g.n / BC;
    for (int j = 0; j < tc; ++j) {
      const Flash1Grid fg = flash1_grid(g, j);
      fn<<<dim3(fg.blocks, g.heads), NTH, sm, st>>>(a.q, a.k, a.v, a.o, a.l, a.m, g.n, g.causal, j, fg.chunk);
      CHECK(cudaGetLastError());
    }
    return tc;
  }
};

template <int BR, int BC, int D>
int run_schedule(const char* schedule, const Dims& g, const FwdArgs& a, cudaStream_t st, TcKernelInfo* info) {
  using T = TcFwd<BR, BC, D>;
  if (!std::strcmp(schedule, "naive-safe")) return T::naive(g, false, a, st, info);
  if (!std::strcmp(schedule, "naive-online")) return T::naive(g, true, a, st, info);
  if (!std::strcmp(schedule, "two-pass")) return T::two_pass(g, a, st, info);
  if (!std::strcmp(schedule, "flash1")) return T::flash1(g, a, st, info);
  return -1;
}

int dispatch_fwd(const char* schedule, const Dims& g, const FwdArgs& a, cudaStream_t st, TcKernelInfo* info) {
  int r = -1;
  if (g.d == 64) {
    if (g.br == 64 && g.bc == 64) r = run_schedule<64, 64, 64>(schedule, g, a, st, info);
    if (g.br == 128 && g.bc == 64) r = run_schedule<128, 64, 64>(schedule, g, a, st, info);
    if (g.br == 128 && g.bc == 128) r = run_schedule<128, 128, 64>(schedule, g, a, st, info);
  } else if (g.d == 128) {
    if (g.br == 64 && g.bc == 64) r = run_schedule<64, 64, 128>(schedule, g, a, st, info);
    if (g.br == 128 && g.bc == 64) r = run_schedule<128, 64, 128>(schedule, g, a, st, info);
    if (g.br == 128 && g.bc == 128) r = run_schedule<128, 128, 128>(schedule, g, a, st, info);
  }
  if (r < 0) {
    std::fprintf(stderr, "unsupported tensor-core forward: schedule=%s d=%d B_r=%d B_c=%d\n", schedule, g.d,
                 g.br, g.bc);
    std::exit(2);
  }
  return r;
}

}  // namespace

bool tc_fwd_supported(const char* schedule, int d, int br, int bc) {
  const bool known = !std::strcmp(schedule, "naive-safe") || !std::strcmp(schedule, "naive-online") ||
                     !std::strcmp(schedule, "two-pass") || !std::strcmp(schedule, "flash1");
  return known && tc_supported(d, br, bc);
}

int launch_naive_tc(const Dims& g, bool online, const __half* q, const __half* k, const __half* v, float* s,
                    __half* p, __half* o, cudaStream_t st) {
  const FwdArgs a{q, k, v, o, p, s, nullptr, nullptr};
  return dispatch_fwd(online ? "naive-online" : "naive-safe", g, a, st, nullptr);
}

int launch_two_pass_tc(const Dims& g, const __half* q, const __half* k, const __half* v, float* l, float* m,
                       __half* o, cudaStream_t st) {
  const FwdArgs a{q, k, v, o, nullptr, nullptr, l, m};
  return dispatch_fwd("two-pass", g, a, st, nullptr);
}

int launch_flash1_tc(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o, float* l,
                     float* m, cudaStream_t st) {
  const FwdArgs a{q, k, v, o, nullptr, nullptr, l, m};
  return dispatch_fwd("flash1", g, a, st, nullptr);
}

int tc_fwd_info(const char* schedule, const Dims& g, TcKernelInfo (&info)[3]) {
  const FwdArgs a{};
  return dispatch_fwd(schedule, g, a, nullptr, info);
}

}  // namespace attnval
