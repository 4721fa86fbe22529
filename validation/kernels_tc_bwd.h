// Tensor-core kernels of attnsim's backward schedules (docs/schedules.md, "Backward"): flash2-bwd (two
// launches, sched_bwd_dot then sched_flash2_bwd_dkdv) and flash2-bwd-no-d (one launch,
// sched_flash2_bwd_no_d). Counted kernels are sched_*, helpers aux_* (ncu -k regex:sched_).
//
// Layouts as the forward kernels: Q, K, V, O, dO [heads][n][d] fp16 (Q pre-scaled); L (logsumexp) and D
// [heads][n] f32. flash2-bwd: dQ f32 (accumulated with red.global.add, zeroed by aux_bwd_zero first), dK,
// dV fp16. flash2-bwd-no-d: dK, dV f32 (accumulated with red.global.add, zeroed first), dQ fp16.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

namespace attnval {

struct BwdDims {
  int heads = 8, n = 1024, d = 64, br = 64, bc = 64;
  bool causal = false;
};

struct BwdBuffers {
  const __half *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr;
  const float* lse = nullptr;
  float* dvec = nullptr;  // D (flash2-bwd)
  float* dq32 = nullptr;  // flash2-bwd
  __half *dk16 = nullptr, *dv16 = nullptr;
  __half* dq16 = nullptr;                  // flash2-bwd-no-d
  float *dk32 = nullptr, *dv32 = nullptr;  // flash2-bwd-no-d
};

// flash2-bwd: B_r x B_c in {64x64, 64x128}; flash2-bwd-no-d: {64x64, 128x64}; d in {64, 128}.
bool bwd_supported(const std::string& schedule, int d, int br, int bc);

// Zero the f32 accumulators the schedule adds into (aux_bwd_zero; not counted).
void launch_bwd_zero(const std::string& schedule, const BwdDims&, const BwdBuffers&, cudaStream_t);
// The counted kernels; returns how many launches (2 for flash2-bwd, 1 for flash2-bwd-no-d).
int launch_bwd(const std::string& schedule, const BwdDims&, const BwdBuffers&, cudaStream_t);

struct BwdKernelInfo {
  std::string name;
  int registers = 0, local_bytes = 0, smem_bytes = 0, threads = 0, blocks_per_sm = 0;
};
std::vector<BwdKernelInfo> bwd_info(const std::string& schedule, const BwdDims&);  // in launch order

// Helpers (not counted): NaN-fill halves / floats; read a buffer larger than L2.
void launch_bwd_poison(void* p, size_t bytes, cudaStream_t);
void launch_bwd_flush(const float4* buf, size_t count4, float* sink, cudaStream_t);

}  // namespace attnval
