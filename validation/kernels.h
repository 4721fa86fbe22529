// CUDA kernels that execute attnsim's forward-attention schedules (docs/schedules.md) on a GPU, tile for
// tile, so that Nsight Compute's SM<->L2 byte counters can be held against the simulator's per-tensor
// ledger. Host-side launchers; the kernels themselves are in kernels.cu.
//
// Layouts: Q, K, V, O are [heads][n][d] fp16; S is [heads][n][n] f32 and P [heads][n][n] fp16 (naive
// schedules); l and m are [heads][n] f32 (flash1). Q is pre-scaled (no 1/sqrt(d) inside the kernels).
//
// Every kernel whose traffic is counted is named sched_*; helpers that must NOT be counted (poisoning,
// flash1's initialiser, the L2 flush) are named aux_*, so `ncu -k regex:^sched_` selects exactly the
// schedule's kernels.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace attnval {

struct Dims {
  int heads = 8, n = 1024, d = 64, br = 64, bc = 64;
  bool causal = false;
  bool keys_descending = false;  // tensor-core flash2: key blocks from the diagonal down (FlashAttention-2's)
  int flash1_groups = 0;         // flash1: blocks per (launch, head); 0 = one per visible query block
};

// flash1's launch j: `blocks` blocks per head, each taking `chunk` consecutive visible query blocks (and
// loading K_j, V_j once).
struct Flash1Grid {
  int blocks = 0, chunk = 0;
};
Flash1Grid flash1_grid(const Dims&, int j);

// Tile sizes and head dimensions the kernels are instantiated for (B_r = B_c = block).
bool supported(int d, int block);

// naive-safe: sched_naive_qk, sched_naive_softmax, sched_naive_pv. S: heads*n*n floats, P: heads*n*n
// halves. Returns the number of kernels launched (3).
int launch_naive_safe(const Dims&, const __half* q, const __half* k, const __half* v, float* s, __half* p,
                      __half* o, cudaStream_t);

// flash1: aux_flash1_init (O = 0, l = 0, m = -inf; not counted), then one sched_flash1_step launch per key
// block j. l, m: heads*n floats. launch_flash1 launches the steps only and returns how many (T_c).
void launch_flash1_init(const Dims&, __half* o, float* l, float* m, cudaStream_t);
int launch_flash1(const Dims&, const __half* q, const __half* k, const __half* v, __half* o, float* l,
                  float* m, cudaStream_t);

// flash2: one sched_flash2_fwd launch. Returns 1.
int launch_flash2(const Dims&, const __half* q, const __half* k, const __half* v, __half* o, cudaStream_t);

// flash2 on the tensor cores (kernels_tc.cu): one sched_flash2_tc launch, the same tiles, loop order and
// global traffic as sched_flash2_fwd; B_r x B_c in {64x64, 128x64, 128x128}, d in {64, 128}. Returns 1.
bool tc_supported(int d, int br, int bc);
int launch_flash2_tc(const Dims&, const __half* q, const __half* k, const __half* v, __half* o, cudaStream_t);
struct TcKernelInfo {
  int registers = 0, local_bytes = 0, smem_bytes = 0, threads = 0, blocks_per_sm = 0;
};
TcKernelInfo flash2_tc_info(const Dims&);  // the instantiation's resources (cudaFuncGetAttributes)
// Shared-memory layout of the tc kernel: false (default) XOR-swizzled rows; true rows padded by 16 bytes,
// which makes cp.async read 1.5x the bytes (kept only to measure that; see kernels_tc.cu).
void set_tc_padded(bool padded);
// Blocks per SM the tc flash2 is compiled for: 1 (default) keeps Q_i in registers; 2 reads it from shared
// memory at every key block so that two blocks fit (128 x 64, d = 128: FlashAttention-2's occupancy).
void set_tc_min_blocks(int blocks);

// The other forward schedules on the tensor cores (kernels_tc_fwd.cu): the same tiles, loop order and global
// traffic as the simulator's programs; tiles as tc_supported. naive-safe / naive-online: sched_naive_qk_tc,
// sched_naive_softmax_tc, sched_naive_pv_tc (returns 3); two-pass: sched_two_pass_stats_tc,
// sched_two_pass_output_tc (l, m: heads*n floats; returns 2); flash1: one sched_flash1_tc launch per key
// block (flash1_grid's blocks; launch_flash1_init first; returns T_c).
bool tc_fwd_supported(const char* schedule, int d, int br, int bc);
int launch_naive_tc(const Dims&, bool online, const __half* q, const __half* k, const __half* v, float* s,
                    __half* p, __half* o, cudaStream_t);
int launch_two_pass_tc(const Dims&, const __half* q, const __half* k, const __half* v, float* l, float* m,
                       __half* o, cudaStream_t);
int launch_flash1_tc(const Dims&, const __half* q, const __half* k, const __half* v, __half* o, float* l,
                     float* m, cudaStream_t);
// Resources of each distinct kernel of the schedule, in launch order (flash1: its one kernel); returns how
// many.
int tc_fwd_info(const char* schedule, const Dims&, TcKernelInfo (&info)[3]);

// Helpers (not counted): fill with a NaN pattern; read a buffer larger than L2 to evict everything.
void launch_poison(__half* p, size_t count, cudaStream_t);
// flash2 records each block's SM, start and end (%globaltimer) into times[fields * block] when set (null:
// off), and with key_time_every > 0 the start of every key_time_every-th key block after them.
void set_block_times(unsigned long long* times, int fields, int key_time_every);
// The tensor-core flash2 records each block's SM and %globaltimer at its start, at key blocks jend/4, jend/2
// and 3 jend/4, and at its end into times[kTcTimeFields * block] when set; null: off.
constexpr int kTcTimeFields = 6;
void set_tc_block_times(unsigned long long* times);
void launch_l2_flush(const float4* buf, size_t count4, float* sink, cudaStream_t);

}  // namespace attnval
