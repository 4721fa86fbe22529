// Tensor-core FlashAttention-2 forward for the attnsim cross-validation (issue 8, item 1): the same loop
// order and the same global traffic as the FFMA sched_flash2_fwd in kernels.cu, with the matrix products on
// the tensor cores.
//
// One thread block per (query block i, head), BR / 16 warps, each warp owning 16 query rows:
//   * Q_i (BR x D fp16) is copied to shared memory once with cp.async and kept in registers as mma A
//     fragments (ldmatrix) for the whole block;
//   * for the visible key blocks j (all of them, or causal: those starting at or before the block's last
//     query row, exactly the FFMA kernel's jend): K_j and V_j (BC x D fp16 each) are copied with 16-byte
//     cp.async.cg (L2 only, as ld.global.cg) into one of two shared-memory buffers; K_{j+1}, V_{j+1} are
//     prefetched into the other buffer while tile j is computed (double buffering; nothing is prefetched
//     past the last visible tile, so no byte is loaded that the FFMA kernel does not load);
//   * S = Q_i K_j^T with mma.sync.m16n8k16 (fp16 x fp16 + f32), K fragments by ldmatrix; causal mask
//     (-inf where key > query) on tiles that cross the diagonal; online softmax in f32 registers
//     (exp2 with a log2(e) prescale; P rounded to fp16 as the simulator's P tile, l summed from the rounded
//     values as in the FFMA kernel); O_i = alpha O_i + P V_j with mma.sync, P taken straight from the S
//     accumulators (the C fragment of two n8 tiles is the A fragment of one k16 step), V fragments by
//     ldmatrix.trans;
//   * O_i / l is staged through shared memory and written once with 16-byte st.global.cg, whole rows.
// A warp whose 16 rows see no key of a tile (causal, tiles past the diagonal) skips that tile's arithmetic;
// the tile is still loaded by the block, as the schedule says.
//
// Shared memory: Q, 2 x K, 2 x V as fp16, unpadded rows with the 16-byte chunks of row r XOR-swizzled
// (chunk c stored at c ^ (r & 7)), so that ldmatrix's eight 16-byte row reads fall on distinct banks and
// each 32-byte global sector lands in one 32-byte shared-memory unit. Measured on the H100 (2026-11-23):
// with rows padded by 16 bytes instead (the PAD layout, kept for that comparison: harness --tc-padded),
// every odd row's sectors straddle two 32-byte shared units and cp.async fetches them twice, 1.5x the
// L2 -> SM bytes of the schedule; with the swizzle the bytes are exact.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "block_times.cuh"
#include "cuda_check.h"
#include "kernels.h"
#include "tc_common.cuh"

namespace attnval {

// ---------------------------------------------------------------------------------------------------
// Per-block SM and %globaltimer at its start, at the top of key blocks jend/4, jend/2 and 3 jend/4, and at
// its end (null unless set_tc_block_times was called): how co-resident blocks share an SM over time. Read
// through the constant cache, so the kernel's L1 <-> L2 bytes stay the ledger's when it is null. The checks
// cost up to 8 registers in some instantiations (ptxas, 2026-11-26); none of them changes its occupancy.
__constant__ unsigned long long* g_tc_block_times = nullptr;

__device__ void tc_record_block_time(int slot) {
  record_block_time_at(g_tc_block_times, kTcTimeFields, slot);
}

// MINB: the blocks per SM the compiler must leave registers for. 1 keeps Q_i's A fragments in registers for
// the whole block; 2 re-reads them from shared memory (ldmatrix) at every key block, which frees the 64
// registers a thread needs for them at d = 128 so that two 256-thread blocks fit in the register file, as
// FlashAttention-2's forward runs two 128-row blocks per SM. The global traffic is the same either way.
template <int BR, int BC, int D, bool PAD, int MINB>
__global__ void __launch_bounds__(TcShape<BR, BC, D, PAD>::threads, MINB)
    sched_flash2_tc(const __half* __restrict__ Q, const __half* __restrict__ K, const __half* __restrict__ V,
                    __half* __restrict__ O, int n, int causal, int descending) {
  using S = TcShape<BR, BC, D, PAD>;
  constexpr int LD = S::ld;
  extern __shared__ __align__(16) unsigned char tc_smem[];
  __half* sQ = reinterpret_cast<__half*>(tc_smem);
  __half* sK = sQ + BR * LD;      // two buffers of BC x LD
  __half* sV = sK + 2 * BC * LD;  // two buffers of BC x LD

  const int h = blockIdx.y, q0 = blockIdx.x * BR;
  const size_t hoff = static_cast<size_t>(h) * n * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;  // mma fragment row group and column pair
  const int tc = n / BC;
  const int jend = causal ? min(tc, (q0 + BR - 1) / BC + 1) : tc;  // as sched_flash2_fwd
  const int wrow0 = q0 + warp * 16;                                // this warp's first query row
  tc_record_block_time(0);

  // Step jj visits key block key_block(jj): 0, 1, ... or, descending, jend - 1 down to 0 (FlashAttention-2's
  // order); the tiles loaded are the same either way.
  auto key_block = [&](int jj) { return descending ? jend - 1 - jj : jj; };

  // Q_i and the first step's K, V.
  cp_tile<S, BR, D>(Q + hoff + static_cast<size_t>(q0) * D, sQ);
  cp_tile<S, BC, D>(K + hoff + static_cast<size_t>(key_block(0)) * BC * D, sK);
  cp_tile<S, BC, D>(V + hoff + static_cast<size_t>(key_block(0)) * BC * D, sV);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  constexpr bool kQInRegisters = MINB == 1;
  uint32_t qf[kQInRegisters ? D / 16 : 1][4];  // A fragments of this warp's 16 rows, all of d
  auto load_q = [&](uint32_t(&a)[4], int kk) {
    ldmatrix_x4(a, sQ + S::off(warp * 16 + (lane & 15), kk * 16 + (lane >> 4) * 8));
  };
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);
  }

  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of the warp, replicated over the quad
  float l[2] = {0.f, 0.f};              // this thread's partial sums (its columns), reduced at the end

  for (int j = 0; j < jend; ++j) {  // step j (its buffer j & 1) holds key block key_block(j)
    const int k0 = key_block(j) * BC;
    if (j > 0 && 4 * j / jend != 4 * (j - 1) / jend) tc_record_block_time(4 * j / jend);  // quarters
    if (j > 0) {
      cp_async_wait_all();  // this thread's copies of step j's K, V have landed
      __syncthreads();      // everyone's have; everyone is done with step j - 1 (its buffer is free)
    }
    if (j + 1 < jend) {  // prefetch step j + 1's K, V while this one is computed
      const int nb = (j + 1) & 1;
      const size_t next = static_cast<size_t>(key_block(j + 1)) * BC * D;
      cp_tile<S, BC, D>(K + hoff + next, sK + nb * BC * LD);
      cp_tile<S, BC, D>(V + hoff + next, sV + nb * BC * LD);
      cp_async_commit();
    }
    if (causal && k0 > wrow0 + 15) continue;  // no key of this tile is visible to the warp's rows
    const __half* sKb = sK + (j & 1) * BC * LD;
    const __half* sVb = sV + (j & 1) * BC * LD;

    // S = Q_i K_j^T: this warp's 16 x BC, as BC / 8 n8 tiles.
    float s[BC / 8][4];
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll(kQInRegisters ? D / 16 : 1)  // fewer live addresses: 16 bytes of spills, not 80
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t(&a)[4] = qf[kQInRegisters ? kk : 0];
      if constexpr (!kQInRegisters) load_q(a, kk);
#pragma unroll
      for (int nb = 0; nb < BC / 16; ++nb) {
        uint32_t b[4];  // b0, b1 of n tile 2nb, then of 2nb + 1
        ldmatrix_x4(b,
                    sKb + S::off(nb * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 16 + ((lane >> 3) & 1) * 8));
        mma16816(s[2 * nb], a, b[0], b[1]);
        mma16816(s[2 * nb + 1], a, b[2], b[3]);
      }
    }
    if (causal && k0 + BC - 1 > q0) {  // the tile crosses the diagonal (the FFMA kernel's condition)
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = wrow0 + g + 8 * (e >> 1), c = k0 + nt * 8 + 2 * t + (e & 1);
          if (c > r) s[nt][e] = -INFINITY;
        }
    }

    // Online softmax, rows g (e = 0, 1) and g + 8 (e = 2, 3).
    uint32_t p[BC / 8][2];  // fp16x2: [n tile][row half]
    float alpha[2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * hr], s[nt][2 * hr + 1]));
      const float m_new = fmaxf(m[hr], quad_max(mx));
      const float mu = (m_new == -INFINITY ? 0.f : m_new) * kLog2e;
      alpha[hr] = exp2f(m[hr] * kLog2e - mu);  // 0 while m was -inf
      m[hr] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < BC / 8; ++nt)
        p[nt][hr] = pack_half2(exp2f(fmaf(s[nt][2 * hr], kLog2e, -mu)),
                               exp2f(fmaf(s[nt][2 * hr + 1], kLog2e, -mu)), sum);
      l[hr] = alpha[hr] * l[hr] + sum;
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= alpha[0];
      o[dt][1] *= alpha[0];
      o[dt][2] *= alpha[1];
      o[dt][3] *= alpha[1];
    }

    // O += P V_j: k16 steps over the tile's keys; V fragments by ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      const uint32_t a[4] = {p[2 * kk][0], p[2 * kk][1], p[2 * kk + 1][0], p[2 * kk + 1][1]};
#pragma unroll
      for (int db = 0; db < D / 16; ++db) {
        uint32_t b[4];  // b0, b1 of d tile 2db, then of 2db + 1
        ldmatrix_x4_trans(
            b, sVb + S::off(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, db * 16 + (lane >> 4) * 8));
        mma16816(o[2 * db], a, b[0], b[1]);
        mma16816(o[2 * db + 1], a, b[2], b[3]);
      }
    }
  }

  // O_i / l: each warp stages its own 16 rows in sQ (only it ever read them) and stores them whole.
  float inv[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) inv[hr] = 1.f / quad_sum(l[hr]);
  __half* sO = sQ + warp * 16 * LD;  // 16 rows: row r & 7 (the swizzle key) is the same as in sQ
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    *reinterpret_cast<__half2*>(sO + S::off(g, dt * 8 + 2 * t)) =
        __floats2half2_rn(o[dt][0] * inv[0], o[dt][1] * inv[0]);
    *reinterpret_cast<__half2*>(sO + S::off(g + 8, dt * 8 + 2 * t)) =
        __floats2half2_rn(o[dt][2] * inv[1], o[dt][3] * inv[1]);
  }
  __syncwarp();
  __half* Og = O + hoff + static_cast<size_t>(wrow0) * D;
  constexpr int CH = D / 8;
#pragma unroll
  for (int it = 0; it < 16 * CH / 32; ++it) {
    const int idx = lane + 32 * it;
    const int r = idx / CH, c = (idx % CH) * 8;
    __stcg(reinterpret_cast<int4*>(Og + static_cast<size_t>(r) * D + c),
           *reinterpret_cast<const int4*>(sO + S::off(r, c)));
  }
  tc_record_block_time(kTcTimeFields - 2);
}

// ---------------------------------------------------------------------------------------------------
// Host side.

namespace {

// The one shape compiled for two blocks per SM: other shapes spill (128 x 128 at d = 128: 748 bytes) or fit
// two blocks already.
constexpr bool tc_two_blocks_supported(int br, int bc, int d) {
  return br == 128 && bc == 64 && d == 128;
}

bool g_tc_padded = false;  // set_tc_padded: the 16-byte-padded layout (1.5x reads), for comparison only
int g_tc_min_blocks = 1;   // set_tc_min_blocks: 2 keeps Q in shared memory to fit two blocks per SM

template <int BR, int BC, int D, bool PAD, int MINB>
void tc_launch_layout(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o,
                      cudaStream_t st, TcKernelInfo* info) {
  using S = TcShape<BR, BC, D, PAD>;
  auto* fn = sched_flash2_tc<BR, BC, D, PAD, MINB>;
  CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(S::smem)));
  if (info) {
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, fn));
    info->registers = a.numRegs;
    info->local_bytes = static_cast<int>(a.localSizeBytes);
    info->smem_bytes = static_cast<int>(S::smem);
    info->threads = S::threads;
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, S::threads, S::smem));
    info->blocks_per_sm = blocks;
    return;
  }
  fn<<<dim3(g.n / BR, g.heads), S::threads, S::smem, st>>>(q, k, v, o, g.n, g.causal, g.keys_descending);
  CHECK(cudaGetLastError());
}

template <int BR, int BC, int D>
void tc_launch(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o, cudaStream_t st,
               TcKernelInfo* info) {
  if (g_tc_padded)
    tc_launch_layout<BR, BC, D, true, 1>(g, q, k, v, o, st, info);
  else if (g_tc_min_blocks == 2)
    if constexpr (tc_two_blocks_supported(BR, BC, D))
      tc_launch_layout<BR, BC, D, false, 2>(g, q, k, v, o, st, info);
    else
      std::fprintf(stderr, "--tc-min-blocks 2: 128 x 64 tiles at d = 128 only\n"), std::exit(2);
  else
    tc_launch_layout<BR, BC, D, false, 1>(g, q, k, v, o, st, info);
}

template <int BR, int BC>
bool tc_dispatch_d(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o,
                   cudaStream_t st, TcKernelInfo* info) {
  if (g.d == 64) return tc_launch<BR, BC, 64>(g, q, k, v, o, st, info), true;
  if (g.d == 128) return tc_launch<BR, BC, 128>(g, q, k, v, o, st, info), true;
  return false;
}

bool tc_dispatch(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o, cudaStream_t st,
                 TcKernelInfo* info) {
  if (g.br == 64 && g.bc == 64) return tc_dispatch_d<64, 64>(g, q, k, v, o, st, info);
  if (g.br == 128 && g.bc == 64) return tc_dispatch_d<128, 64>(g, q, k, v, o, st, info);
  if (g.br == 128 && g.bc == 128) return tc_dispatch_d<128, 128>(g, q, k, v, o, st, info);
  return false;
}

}  // namespace

void set_tc_block_times(unsigned long long* times) {
  CHECK(cudaMemcpyToSymbol(g_tc_block_times, &times, sizeof(times)));
}

void set_tc_padded(bool padded) {
  g_tc_padded = padded;
}

void set_tc_min_blocks(int blocks) {
  g_tc_min_blocks = blocks;
}

bool tc_supported(int d, int br, int bc) {
  return (d == 64 || d == 128) &&
         ((br == 64 && bc == 64) || (br == 128 && bc == 64) || (br == 128 && bc == 128));
}

int launch_flash2_tc(const Dims& g, const __half* q, const __half* k, const __half* v, __half* o,
                     cudaStream_t st) {
  if (!tc_dispatch(g, q, k, v, o, st, nullptr)) {
    std::fprintf(stderr, "unsupported tensor-core tiles: d=%d B_r=%d B_c=%d\n", g.d, g.br, g.bc);
    std::exit(2);
  }
  return 1;
}

TcKernelInfo flash2_tc_info(const Dims& g) {
  TcKernelInfo info;
  if (!tc_dispatch(g, nullptr, nullptr, nullptr, nullptr, nullptr, &info)) {
    std::fprintf(stderr, "unsupported tensor-core tiles: d=%d B_r=%d B_c=%d\n", g.d, g.br, g.bc);
    std::exit(2);
  }
  return info;
}

}  // namespace attnval
