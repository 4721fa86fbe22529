// Kernels for the attnsim cross-validation: naive-safe, flash1 and flash2 exactly as docs/schedules.md
// writes them, one thread block per (query block, head) (flash1: per (query block, head) within a launch
// per key block). Plain f32 FMA math on tiles staged in shared memory (no tensor cores: the validation is
// about bytes moved, not the matrix rate).
//
// Traffic discipline, so that the SM<->L2 counters equal the schedule's bytes:
//   * every global load is a 16-byte ld.global.cg (__ldcg: cached in L2 only, not in L1), coalesced, of a
//     whole tile row-major; no tile is read twice unless the schedule reads it twice;
//   * every global store is a 16-byte st.global.cg (__stcg) of whole 32-byte sectors;
//   * 256 threads, fixed register tiles indexed by compile-time constants (no local memory; check the
//     -Xptxas -v report: 0 bytes stack frame, 0 spills).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "block_times.cuh"
#include "cuda_check.h"
#include "kernels.h"

namespace attnval {

namespace {

constexpr int NT = 256;  // threads per block: a 16 x 16 grid of threads over every tile


// Shared-memory row strides (floats). +1 keeps the 16 rows a half-warp reads in one column on 16 banks;
// V is read along rows, +4 keeps its rows 16-byte aligned.
template <int D>
constexpr int kStrideQK = D + 1;
template <int D>
constexpr int kStrideV = D + 4;
template <int BC>
constexpr int kStrideS = BC + 1;

__device__ __forceinline__ void h8_to_f8(const int4& v, float (&f)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__device__ __forceinline__ int4 f8_to_h8(const float (&f)[8]) {
  union {
    int4 v;
    __half2 h[4];
  } u;
#pragma unroll
  for (int i = 0; i < 4; ++i) u.h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
  return u.v;
}

__device__ __forceinline__ float round_half(float x) {
  return __half2float(__float2half_rn(x));
}

// R x C fp16 tile at g (row stride ld elements) -> f32 shared memory (row stride sld).
template <int R, int C>
__device__ __forceinline__ void load_h_tile(const __half* __restrict__ g, size_t ld, float* s, int sld) {
  static_assert(C % 8 == 0, "16-byte rows");
  constexpr int CH = C / 8;
  for (int idx = threadIdx.x; idx < R * CH; idx += NT) {
    const int r = idx / CH, c = (idx % CH) * 8;
    const int4 v = __ldcg(reinterpret_cast<const int4*>(g + r * ld + c));
    float f[8];
    h8_to_f8(v, f);
    float* dst = s + r * sld + c;
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[e] = f[e];
  }
}

// f32 shared memory -> R x C fp16 tile at g.
template <int R, int C>
__device__ __forceinline__ void store_h_tile(const float* s, int sld, __half* __restrict__ g, size_t ld) {
  constexpr int CH = C / 8;
  for (int idx = threadIdx.x; idx < R * CH; idx += NT) {
    const int r = idx / CH, c = (idx % CH) * 8;
    float f[8];
    const float* src = s + r * sld + c;
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = src[e];
    __stcg(reinterpret_cast<int4*>(g + r * ld + c), f8_to_h8(f));
  }
}

// f32 shared memory -> R x C f32 tile at g.
template <int R, int C>
__device__ __forceinline__ void store_f_tile(const float* s, int sld, float* __restrict__ g, size_t ld) {
  static_assert(C % 4 == 0, "16-byte rows");
  constexpr int CH = C / 4;
  for (int idx = threadIdx.x; idx < R * CH; idx += NT) {
    const int r = idx / CH, c = (idx % CH) * 4;
    const float* src = s + r * sld + c;
    __stcg(reinterpret_cast<float4*>(g + r * ld + c), make_float4(src[0], src[1], src[2], src[3]));
  }
}

// R floats (a slice of l or m) global <-> shared.
template <int R>
__device__ __forceinline__ void load_f_vec(const float* __restrict__ g, float* s) {
  static_assert(R % 4 == 0, "16-byte vectors");
  for (int idx = threadIdx.x; idx < R / 4; idx += NT) {
    const float4 v = __ldcg(reinterpret_cast<const float4*>(g) + idx);
    s[4 * idx] = v.x;
    s[4 * idx + 1] = v.y;
    s[4 * idx + 2] = v.z;
    s[4 * idx + 3] = v.w;
  }
}
template <int R>
__device__ __forceinline__ void store_f_vec(const float* s, float* __restrict__ g) {
  for (int idx = threadIdx.x; idx < R / 4; idx += NT)
    __stcg(reinterpret_cast<float4*>(g) + idx,
           make_float4(s[4 * idx], s[4 * idx + 1], s[4 * idx + 2], s[4 * idx + 3]));
}

// Thread (ty, tx) of the 16 x 16 grid owns tile elements (ty + 16a, tx + 16b).
__device__ __forceinline__ int tid_x() {
  return threadIdx.x & 15;
}
__device__ __forceinline__ int tid_y() {
  return threadIdx.x >> 4;
}

// acc = Q_i K_j^T for the BR x BC tile; sQ, sK: f32, row stride D + 1.
template <int BR, int BC, int D>
__device__ __forceinline__ void qk_tile(const float* sQ, const float* sK, float (&acc)[BR / 16][BC / 16]) {
  const int tx = tid_x(), ty = tid_y();
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < BC / 16; ++b) acc[a][b] = 0.f;
#pragma unroll 8
  for (int k = 0; k < D; ++k) {
    float qa[BR / 16], kb[BC / 16];
#pragma unroll
    for (int a = 0; a < BR / 16; ++a) qa[a] = sQ[(ty + 16 * a) * kStrideQK<D> + k];
#pragma unroll
    for (int b = 0; b < BC / 16; ++b) kb[b] = sK[(tx + 16 * b) * kStrideQK<D> + k];
#pragma unroll
    for (int a = 0; a < BR / 16; ++a)
#pragma unroll
      for (int b = 0; b < BC / 16; ++b) acc[a][b] = fmaf(qa[a], kb[b], acc[a][b]);
  }
}

// Writes acc to sS (row stride BC + 1), -inf where key > query if the tile needs the causal mask.
template <int BR, int BC>
__device__ __forceinline__ void masked_to_smem(const float (&acc)[BR / 16][BC / 16], float* sS, bool mask,
                                               int q0, int k0) {
  const int tx = tid_x(), ty = tid_y();
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < BC / 16; ++b) {
      const int r = ty + 16 * a, c = tx + 16 * b;
      sS[r * kStrideS<BC> + c] = (mask && k0 + c > q0 + r) ? -INFINITY : acc[a][b];
    }
}

// o += P V_j; sP: f32 row stride BC + 1, sV: f32 row stride D + 4.
template <int BR, int BC, int D>
__device__ __forceinline__ void pv_tile(const float* sP, const float* sV, float (&o)[BR / 16][D / 16]) {
  const int tx = tid_x(), ty = tid_y();
#pragma unroll 8
  for (int k = 0; k < BC; ++k) {
    float pa[BR / 16], vb[D / 16];
#pragma unroll
    for (int a = 0; a < BR / 16; ++a) pa[a] = sP[(ty + 16 * a) * kStrideS<BC> + k];
#pragma unroll
    for (int b = 0; b < D / 16; ++b) vb[b] = sV[k * kStrideV<D> + tx + 16 * b];
#pragma unroll
    for (int a = 0; a < BR / 16; ++a)
#pragma unroll
      for (int b = 0; b < D / 16; ++b) o[a][b] = fmaf(pa[a], vb[b], o[a][b]);
  }
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
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

// exp(x - m) with a finite stand-in for m = -inf (a row with no visible key so far), so no -inf - -inf.
__device__ __forceinline__ float finite_or_zero(float m) {
  return m == -INFINITY ? 0.f : m;
}

template <int BR, int BC, int D>
constexpr size_t smem_naive_qk() {
  return sizeof(float) * (BR * kStrideQK<D> + BC * kStrideQK<D> + BR * kStrideS<BC>);
}
template <int BR, int BC, int D>
constexpr size_t smem_naive_pv() {
  return sizeof(float) * (BR * kStrideS<BC> + BC * kStrideV<D> + BR * kStrideQK<D>);
}
template <int BR, int BC, int D>
constexpr size_t smem_flash2() {
  return sizeof(float) *
         (BR * kStrideQK<D> + BC * kStrideQK<D> + BC * kStrideV<D> + BR * kStrideS<BC> + 2 * BR);
}
template <int BR, int BC, int D>
constexpr size_t smem_flash1() {
  return sizeof(float) * (BR * kStrideQK<D> + BC * kStrideQK<D> + BC * kStrideV<D> + BR * kStrideS<BC> +
                          BR * kStrideQK<D> + 5 * BR);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// naive-safe, kernel 1: per (query block i, head): load Q_i once; for ALL key blocks j: load K_j,
// S_ij = Q_i K_j^T, causal mask (tiles above the diagonal are computed and stored as all -inf), store S_ij
// (f32).
template <int BR, int BC, int D>
__global__ void __launch_bounds__(NT)
    sched_naive_qk(const __half* __restrict__ Q, const __half* __restrict__ K, float* __restrict__ S, int n,
                   int causal) {
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sK = sQ + BR * kStrideQK<D>;
  float* sS = sK + BC * kStrideQK<D>;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const __half* Qh = Q + static_cast<size_t>(h) * n * D;
  const __half* Kh = K + static_cast<size_t>(h) * n * D;
  float* Sh = S + static_cast<size_t>(h) * n * n;
  load_h_tile<BR, D>(Qh + static_cast<size_t>(q0) * D, D, sQ, kStrideQK<D>);
  const int tc = n / BC;
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC;
    __syncthreads();  // previous tile's sK and sS are no longer read
    load_h_tile<BC, D>(Kh + static_cast<size_t>(k0) * D, D, sK, kStrideQK<D>);
    __syncthreads();
    float acc[BR / 16][BC / 16];
    qk_tile<BR, BC, D>(sQ, sK, acc);
    masked_to_smem<BR, BC>(acc, sS, causal && k0 + BC - 1 > q0, q0, k0);
    __syncthreads();
    store_f_tile<BR, BC>(sS, kStrideS<BC>, Sh + static_cast<size_t>(q0) * n + k0, n);
  }
}

// naive-safe, kernel 2: per (query block i, head), m and l on chip (registers): pass 1 reads every S_ij for
// the row max, pass 2 reads them again for l = sum exp(S - m), pass 3 reads them again and stores
// P_ij = exp(S - m) / l (fp16). Each thread handles 8 scores of a row: the 4 at lane*4 and the 4 at
// (LPR + lane)*4, so each of the two 16-byte loads of the row's LPR lanes covers whole 32-byte sectors
// (with L1 bypassed, two loads that each touched half of every sector moved every sector twice: the first
// H200 run measured 2x the S read bytes that way). BC / 8 neighbouring lanes share a row.
template <int BR, int BC>
__global__ void __launch_bounds__(NT)
    sched_naive_softmax(const float* __restrict__ S, __half* __restrict__ P, int n) {
  constexpr int LPR = BC / 8;  // lanes per row
  static_assert(LPR >= 1 && LPR <= 32 && (32 % LPR) == 0, "BC/8 lanes must tile a warp");
  constexpr int RPI = NT / LPR;  // rows per iteration
  constexpr int ITER = (BR + RPI - 1) / RPI;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const int lr = threadIdx.x % LPR, rr = threadIdx.x / LPR;
  const float* Sh = S + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  __half* Ph = P + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  const int tc = n / BC;
  float m[ITER], l[ITER];
#pragma unroll
  for (int it = 0; it < ITER; ++it) m[it] = -INFINITY, l[it] = 0.f;

  auto load8 = [&](int r, int k0, float(&v)[8]) {
    const float* row = Sh + static_cast<size_t>(r) * n + k0;
    const float4 a = __ldcg(reinterpret_cast<const float4*>(row + lr * 4));
    const float4 b = __ldcg(reinterpret_cast<const float4*>(row + (LPR + lr) * 4));
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  };
  for (int j = 0; j < tc; ++j)  // pass 1: row max
#pragma unroll
    for (int it = 0; it < ITER; ++it) {
      const int r = rr + RPI * it;
      if (r >= BR) continue;  // whole warps (BR is a multiple of 32 / LPR)
      float v[8];
      load8(r, j * BC, v);
      float mx = v[0];
#pragma unroll
      for (int e = 1; e < 8; ++e) mx = fmaxf(mx, v[e]);
      m[it] = fmaxf(m[it], group_max<LPR>(mx));
    }
  for (int j = 0; j < tc; ++j)  // pass 2: l = sum exp(S - m)
#pragma unroll
    for (int it = 0; it < ITER; ++it) {
      const int r = rr + RPI * it;
      if (r >= BR) continue;
      float v[8];
      load8(r, j * BC, v);
      const float mu = finite_or_zero(m[it]);
      float sum = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) sum += expf(v[e] - mu);
      l[it] += group_sum<LPR>(sum);
    }
  for (int j = 0; j < tc; ++j)  // pass 3: P = exp(S - m) / l, stored fp16
#pragma unroll
    for (int it = 0; it < ITER; ++it) {
      const int r = rr + RPI * it;
      if (r >= BR) continue;
      float v[8];
      load8(r, j * BC, v);
      const float mu = finite_or_zero(m[it]);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = expf(v[e] - mu) / l[it];
      // The same two halves as the loads: 8-byte stores, each run of LPR lanes writes whole sectors.
      const int4 h8 = f8_to_h8(v);
      __half* row = Ph + static_cast<size_t>(r) * n + j * BC;
      __stcg(reinterpret_cast<int2*>(row + lr * 4), make_int2(h8.x, h8.y));
      __stcg(reinterpret_cast<int2*>(row + (LPR + lr) * 4), make_int2(h8.z, h8.w));
    }
}

// naive-safe, kernel 3: per (query block i, head): for ALL key blocks j load P_ij and V_j, O_i += P_ij V_j;
// store O_i once (fp16).
template <int BR, int BC, int D>
__global__ void __launch_bounds__(NT)
    sched_naive_pv(const __half* __restrict__ P, const __half* __restrict__ V, __half* __restrict__ O,
                   int n) {
  extern __shared__ float smem[];
  float* sP = smem;
  float* sV = sP + BR * kStrideS<BC>;
  float* sO = sV + BC * kStrideV<D>;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const __half* Ph = P + static_cast<size_t>(h) * n * n + static_cast<size_t>(q0) * n;
  const __half* Vh = V + static_cast<size_t>(h) * n * D;
  const int tc = n / BC;
  float o[BR / 16][D / 16];
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < D / 16; ++b) o[a][b] = 0.f;
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC;
    __syncthreads();
    load_h_tile<BR, BC>(Ph + k0, n, sP, kStrideS<BC>);
    load_h_tile<BC, D>(Vh + static_cast<size_t>(k0) * D, D, sV, kStrideV<D>);
    __syncthreads();
    pv_tile<BR, BC, D>(sP, sV, o);
  }
  const int tx = tid_x(), ty = tid_y();
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < D / 16; ++b) sO[(ty + 16 * a) * kStrideQK<D> + tx + 16 * b] = o[a][b];
  __syncthreads();
  store_h_tile<BR, D>(sO, kStrideQK<D>, O + static_cast<size_t>(h) * n * D + static_cast<size_t>(q0) * D, D);
}

// ---------------------------------------------------------------------------------------------------
// flash1, one launch per key block j (grid: groups of visible query blocks x heads). A block loads K_j and
// V_j once, then for each query block i of its group loads Q_i, O_i (fp16), l_i, m_i (f32), does
// FlashAttention Algorithm 1's step with P~ = exp(S - m_new) and stores O_i (normalised, fp16), l_new,
// m_new. Causal: query blocks wholly above the diagonal (i < floor(k0 / BR)) are not visited; diagonal tiles
// masked. With one query block per group (the default) K_j and V_j are read once per visible tile; with one
// group per head (--flash1-groups 1) once per key block, as the simulator's ledger has it.
template <int BR, int BC, int D>
__global__ void __launch_bounds__(NT)
    sched_flash1_step(const __half* __restrict__ Q, const __half* __restrict__ K,
                      const __half* __restrict__ V, __half* __restrict__ O, float* __restrict__ L,
                      float* __restrict__ M, int n, int causal, int j, int chunk) {
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sK = sQ + BR * kStrideQK<D>;
  float* sV = sK + BC * kStrideQK<D>;
  float* sS = sV + BC * kStrideV<D>;
  float* sO = sS + BR * kStrideS<BC>;
  float* sLi = sO + BR * kStrideQK<D>;
  float* sMi = sLi + BR;
  float* sScale = sMi + BR;
  float* sLn = sScale + BR;
  float* sMn = sLn + BR;
  const int k0 = j * BC;
  const int tr = n / BR;
  const int i_begin = (causal ? k0 / BR : 0) + blockIdx.x * chunk;
  const int i_end = min(tr, i_begin + chunk);
  const int h = blockIdx.y;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = tid_x(), ty = tid_y();
  load_h_tile<BC, D>(K + hoff + static_cast<size_t>(k0) * D, D, sK, kStrideQK<D>);
  load_h_tile<BC, D>(V + hoff + static_cast<size_t>(k0) * D, D, sV, kStrideV<D>);
  for (int i = i_begin; i < i_end; ++i) {
    const int q0 = i * BR;
    const size_t roff = static_cast<size_t>(h) * n + q0;
    __syncthreads();  // the previous query block's stores have read sO, sLn, sMn
    load_h_tile<BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ, kStrideQK<D>);
    load_h_tile<BR, D>(O + hoff + static_cast<size_t>(q0) * D, D, sO, kStrideQK<D>);
    load_f_vec<BR>(L + roff, sLi);
    load_f_vec<BR>(M + roff, sMi);
    __syncthreads();
    {
      float acc[BR / 16][BC / 16];
      qk_tile<BR, BC, D>(sQ, sK, acc);
      masked_to_smem<BR, BC>(acc, sS, causal && k0 + BC - 1 > q0, q0, k0);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < BR / 8; ++t) {
      const int r = warp + 8 * t;
      float v[BC / 32];
      float mx = -INFINITY;
#pragma unroll
      for (int e = 0; e < BC / 32; ++e) mx = fmaxf(mx, v[e] = sS[r * kStrideS<BC> + lane + 32 * e]);
      const float mi = sMi[r], li = sLi[r];
      const float m_new = fmaxf(mi, warp_max(mx));
      const float mu = finite_or_zero(m_new);
      float sum = 0.f;
#pragma unroll
      for (int e = 0; e < BC / 32; ++e) {
        const float p = round_half(expf(v[e] - mu));  // P~ lives in the storage dtype
        sS[r * kStrideS<BC> + lane + 32 * e] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      const float scale = li * expf(mi - mu);  // l_i e^(m_i - m_new); 0 on the first step (m_i = -inf)
      if (lane == 0) {
        sScale[r] = scale;
        sLn[r] = scale + sum;
        sMn[r] = m_new;
      }
    }
    __syncthreads();
    float o[BR / 16][D / 16];
#pragma unroll
    for (int a = 0; a < BR / 16; ++a)
#pragma unroll
      for (int b = 0; b < D / 16; ++b)
        o[a][b] = sO[(ty + 16 * a) * kStrideQK<D> + tx + 16 * b] * sScale[ty + 16 * a];
    pv_tile<BR, BC, D>(sS, sV, o);
#pragma unroll
    for (int a = 0; a < BR / 16; ++a)
#pragma unroll
      for (int b = 0; b < D / 16; ++b)  // the same thread read this element above: no barrier needed
        sO[(ty + 16 * a) * kStrideQK<D> + tx + 16 * b] = o[a][b] / sLn[ty + 16 * a];
    __syncthreads();
    store_h_tile<BR, D>(sO, kStrideQK<D>, O + hoff + static_cast<size_t>(q0) * D, D);
    store_f_vec<BR>(sLn, L + roff);
    store_f_vec<BR>(sMn, M + roff);
  }
}

// Not counted: O = 0, l = 0, m = -inf before flash1's first step.
__global__ void aux_flash1_init(__half* __restrict__ O, size_t o_count, float* __restrict__ L,
                                float* __restrict__ M, size_t rows) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t x = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; x < o_count; x += stride)
    O[x] = __float2half(0.f);
  for (size_t x = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; x < rows; x += stride) {
    L[x] = 0.f;
    M[x] = -INFINITY;
  }
}

// Per-block SM and %globaltimer at start and end (flash2 only; null unless set_block_times was called):
// where the GPU places blocks and how far co-resident ones drift apart. The pointer is read through the
// constant cache, so the kernels' L1 <-> L2 bytes stay what the ledgers say when it is null.
__constant__ unsigned long long* g_block_times = nullptr;  // constant cache: no L1TEX bytes
// With TIMES_EVERY=k (flash2): also the time each k-th key block starts, after the start and end, so that
// how far apart the readers of K and V are can be seen block by block (0: start and end only). The host
// copy picks the instantiation: only the recording one (kKeyTimes) carries its extra registers.
__constant__ int g_key_time_every = 0;
__constant__ int g_block_time_fields = 3;
int g_host_key_time_every = 0;

__device__ void record_block_time(int slot) {
  record_block_time_at(g_block_times, g_block_time_fields, slot);
}

__device__ void record_key_block_time(int j) {
  if (g_key_time_every && j % g_key_time_every == 0) record_block_time(2 + j / g_key_time_every);
}

// ---------------------------------------------------------------------------------------------------
// flash2: per (query block i, head): Q_i once; for the visible key blocks j: load K_j, V_j, S = Q_i K_j^T,
// mask, online softmax (P rounded to fp16 as the simulator's P tile), O_i = alpha O_i + P V_j on chip;
// O_i / l stored once.
template <int BR, int BC, int D, bool kKeyTimes = false>
__global__ void __launch_bounds__(NT)
    sched_flash2_fwd(const __half* __restrict__ Q, const __half* __restrict__ K, const __half* __restrict__ V,
                     __half* __restrict__ O, int n, int causal) {
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sK = sQ + BR * kStrideQK<D>;
  float* sV = sK + BC * kStrideQK<D>;
  float* sS = sV + BC * kStrideV<D>;
  float* sAlpha = sS + BR * kStrideS<BC>;
  float* sL = sAlpha + BR;
  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  record_block_time(0);
  const size_t hoff = static_cast<size_t>(h) * n * D;
  load_h_tile<BR, D>(Q + hoff + static_cast<size_t>(q0) * D, D, sQ, kStrideQK<D>);
  const int tc = n / BC;
  const int jend = causal ? min(tc, (q0 + BR - 1) / BC + 1) : tc;  // key blocks starting at or before q0+BR-1
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = tid_x(), ty = tid_y();
  float o[BR / 16][D / 16];
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < D / 16; ++b) o[a][b] = 0.f;
  float m[BR / 8], l[BR / 8];  // rows warp + 8t, replicated across the warp's lanes
#pragma unroll
  for (int t = 0; t < BR / 8; ++t) m[t] = -INFINITY, l[t] = 0.f;

  for (int j = 0; j < jend; ++j) {
    const int k0 = j * BC;
    __syncthreads();  // the previous tile's sK, sV, sS and sAlpha are no longer read
    if constexpr (kKeyTimes) record_key_block_time(j);
    load_h_tile<BC, D>(K + hoff + static_cast<size_t>(k0) * D, D, sK, kStrideQK<D>);
    load_h_tile<BC, D>(V + hoff + static_cast<size_t>(k0) * D, D, sV, kStrideV<D>);
    __syncthreads();
    {
      float acc[BR / 16][BC / 16];
      qk_tile<BR, BC, D>(sQ, sK, acc);
      masked_to_smem<BR, BC>(acc, sS, causal && k0 + BC - 1 > q0, q0, k0);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < BR / 8; ++t) {
      const int r = warp + 8 * t;
      float v[BC / 32];
      float mx = -INFINITY;
#pragma unroll
      for (int e = 0; e < BC / 32; ++e) mx = fmaxf(mx, v[e] = sS[r * kStrideS<BC> + lane + 32 * e]);
      const float m_new = fmaxf(m[t], warp_max(mx));
      const float mu = finite_or_zero(m_new);
      float sum = 0.f;
#pragma unroll
      for (int e = 0; e < BC / 32; ++e) {
        const float p = round_half(expf(v[e] - mu));
        sS[r * kStrideS<BC> + lane + 32 * e] = p;
        sum += p;
      }
      const float alpha = expf(m[t] - mu);  // 0 on the first tile
      l[t] = alpha * l[t] + warp_sum(sum);
      m[t] = m_new;
      if (lane == 0) sAlpha[r] = alpha;
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < BR / 16; ++a) {
      const float al = sAlpha[ty + 16 * a];
#pragma unroll
      for (int b = 0; b < D / 16; ++b) o[a][b] *= al;
    }
    pv_tile<BR, BC, D>(sS, sV, o);
  }
#pragma unroll
  for (int t = 0; t < BR / 8; ++t)
    if (lane == 0) sL[warp + 8 * t] = l[t];
  __syncthreads();  // also: every thread is past its last read of sQ, which now stages O
#pragma unroll
  for (int a = 0; a < BR / 16; ++a)
#pragma unroll
    for (int b = 0; b < D / 16; ++b)
      sQ[(ty + 16 * a) * kStrideQK<D> + tx + 16 * b] = o[a][b] / sL[ty + 16 * a];
  __syncthreads();
  store_h_tile<BR, D>(sQ, kStrideQK<D>, O + hoff + static_cast<size_t>(q0) * D, D);
  record_block_time(1);
}

// ---------------------------------------------------------------------------------------------------
__global__ void aux_poison(__half* __restrict__ p, size_t count) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t x = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; x < count; x += stride)
    p[x] = __ushort_as_half(0x7fff);  // NaN
}

__global__ void aux_l2_flush(const float4* __restrict__ buf, size_t count4, float* __restrict__ sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (size_t x = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; x < count4; x += stride) {
    const float4 v = buf[x];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 12345.678f) *sink = acc;  // keeps the loads alive; never true for the zero-filled buffer
}

// ---------------------------------------------------------------------------------------------------
// Host side.

namespace {

template <int B, int D>
struct Instance {
  static void naive(const Dims& g, const __half* q, const __half* k, const __half* v, float* s, __half* p,
                    __half* o, cudaStream_t st) {
    const dim3 grid(g.n / B, g.heads);
    constexpr size_t s1 = smem_naive_qk<B, B, D>(), s3 = smem_naive_pv<B, B, D>();
    CHECK(cudaFuncSetAttribute(sched_naive_qk<B, B, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, s1));
    CHECK(cudaFuncSetAttribute(sched_naive_pv<B, B, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, s3));
    sched_naive_qk<B, B, D><<<grid, NT, s1, st>>>(q, k, s, g.n, g.causal);
    CHECK(cudaGetLastError());
    sched_naive_softmax<B, B><<<grid, NT, 0, st>>>(s, p, g.n);
    CHECK(cudaGetLastError());
    sched_naive_pv<B, B, D><<<grid, NT, s3, st>>>(p, v, o, g.n);
    CHECK(cudaGetLastError());
  }
  static int flash1(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o, float* l,
                    float* m, cudaStream_t st) {
    constexpr size_t sm = smem_flash1<B, B, D>();
    CHECK(cudaFuncSetAttribute(sched_flash1_step<B, B, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
    const int tc = g.n / B;
    for (int j = 0; j < tc; ++j) {
      const Flash1Grid fg = flash1_grid(g, j);
      sched_flash1_step<B, B, D>
          <<<dim3(fg.blocks, g.heads), NT, sm, st>>>(q, k, v, o, l, m, g.n, g.causal, j, fg.chunk);
      CHECK(cudaGetLastError());
    }
    return tc;
  }
  static void flash2(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o,
                     cudaStream_t st) {
    constexpr size_t sm = smem_flash2<B, B, D>();
    const auto kernel = g_host_key_time_every ? sched_flash2_fwd<B, B, D, true> : sched_flash2_fwd<B, B, D>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
    kernel<<<dim3(g.n / B, g.heads), NT, sm, st>>>(q, k, v, o, g.n, g.causal);
    CHECK(cudaGetLastError());
  }
};

template <typename F>
void dispatch(const Dims& g, F&& f) {
  if (g.br != g.bc || !supported(g.d, g.br)) {
    std::fprintf(stderr, "unsupported tiles: d=%d B_r=%d B_c=%d\n", g.d, g.br, g.bc);
    std::exit(2);
  }
  if (g.br == 32 && g.d == 64) return f(Instance<32, 64>{});
  if (g.br == 32 && g.d == 128) return f(Instance<32, 128>{});
  if (g.br == 64 && g.d == 64) return f(Instance<64, 64>{});
  return f(Instance<64, 128>{});
}

}  // namespace

Flash1Grid flash1_grid(const Dims& g, int j) {
  const int tr = g.n / g.br;
  const int visible = tr - (g.causal ? (j * g.bc) / g.br : 0);
  const int groups = g.flash1_groups <= 0 ? visible : std::min(g.flash1_groups, visible);
  Flash1Grid out;
  out.chunk = (visible + groups - 1) / groups;
  out.blocks = (visible + out.chunk - 1) / out.chunk;
  return out;
}

bool supported(int d, int block) {
  return (d == 64 || d == 128) && (block == 32 || block == 64);
}

int launch_naive_safe(const Dims& g, const __half* q, const __half* k, const __half* v, float* s, __half* p,
                      __half* o, cudaStream_t st) {
  dispatch(g, [&](auto inst) { decltype(inst)::naive(g, q, k, v, s, p, o, st); });
  return 3;
}

void launch_flash1_init(const Dims& g, __half* o, float* l, float* m, cudaStream_t st) {
  aux_flash1_init<<<1024, 256, 0, st>>>(o, static_cast<size_t>(g.heads) * g.n * g.d, l, m,
                                        static_cast<size_t>(g.heads) * g.n);
  CHECK(cudaGetLastError());
}

int launch_flash1(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o, float* l,
                  float* m, cudaStream_t st) {
  int launched = 0;
  dispatch(g, [&](auto inst) { launched = decltype(inst)::flash1(g, q, k, v, o, l, m, st); });
  return launched;
}

int launch_flash2(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o,
                  cudaStream_t st) {
  dispatch(g, [&](auto inst) { decltype(inst)::flash2(g, q, k, v, o, st); });
  return 1;
}

void set_block_times(unsigned long long* times, int fields, int key_time_every) {
  CHECK(cudaMemcpyToSymbol(g_block_times, &times, sizeof(times)));
  CHECK(cudaMemcpyToSymbol(g_block_time_fields, &fields, sizeof(fields)));
  CHECK(cudaMemcpyToSymbol(g_key_time_every, &key_time_every, sizeof(key_time_every)));
  g_host_key_time_every = key_time_every;
}

void launch_poison(__half* p, size_t count, cudaStream_t st) {
  aux_poison<<<1024, 256, 0, st>>>(p, count);
  CHECK(cudaGetLastError());
}

void launch_l2_flush(const float4* buf, size_t count4, float* sink, cudaStream_t st) {
  aux_l2_flush<<<1024, 256, 0, st>>>(buf, count4, sink);
  CHECK(cudaGetLastError());
}

}  // namespace attnval
