// Tile programs for the attention backward pass (seed 002 "Backward Pass", seed 000's Algorithm 4).
// Each program starts where a forward pass would have left HBM: Q, K, V and the upstream gradient dO are
// random (seeded), and the forward's O and per-row logsumexp L = m + log(l) are computed here in float64
// from those same inputs and embedded as initial values. Q is taken as already scaled (as in traces/tile.h),
// so P = exp(Q K^T - L), dQ = dS K and dK = dS^T Q carry no softmax scale. Every program ends with three
// checks: dQ, dK, dV against the float64 references attention[_causal]_grad_{q,k,v}(Q, K, V, dO).
// Each program is a sequence of kernels, each a grid of thread blocks (x: the query or key block a block
// owns, y: the head) emitted in launch order, so a whole-chip config spreads them over its cores; a single
// core runs the blocks one after another.
#pragma once

#include <cstdint>
#include <string_view>

#include "isa/program.h"
#include "traces/tile.h"

namespace attnsim::traces {

enum class BackwardSchedule {
  // FlashAttention-2 backward: a first kernel (flash2_bwd_dot_do_o, grid query blocks x heads) writes
  // D_i = rowsum(dO_i * O_i); then a block per K/V block (flash2_bwd_dkdv, grid key blocks x heads) reads
  // K_j, V_j once, accumulates dK_j and dV_j on chip and writes them once, looping over query blocks, with dQ
  // an f32 accumulator in HBM that STORE_ADD adds into (atomically) once per (K/V block, query block).
  Flash2,
  // Without the D_i trick: the outer loop runs over query blocks; D_i = rowsum(P_i * dP_i) needs the whole
  // row, so a first sweep over the K/V blocks computes it, and a second sweep reloads K_j and V_j to form
  // dS and consume it. dQ_i stays on chip; dK and dV are f32 accumulators in HBM that STORE_ADD adds into.
  // One kernel, flash2_bwd_no_d, a block per query block and head.
  Flash2NoD,
  // Standard backward with every n x n intermediate in HBM: P (recomputed from Q K^T and L), dP = dO V^T,
  // dS = P * (dP - rowsum(P * dP)), then dQ = dS K, dK = dS^T Q, dV = P^T dO as tiled GEMMs. One kernel
  // per phase (naive_bwd_p, _dp, _ds, _dq over query blocks; naive_bwd_dk, _dv over key blocks; x heads).
  Naive,
};

// heads > 1 makes Q, K, V, dO, O, dQ, dK, dV [heads][n][d] (independent heads: the y index of every grid)
// and the row statistics [heads][n].
struct BackwardShape : AttentionShape {
  int64_t heads = 1;
  // Leave O and L zero instead of computing them in float64 (O(heads n^2 d) on the host): for timing-only
  // runs, which neither read values nor check them.
  bool skip_forward_values = false;
  // Flash2 only: the kernels as flash-attn launches them (run_flash_bwd_seqk_parallel), to compare with
  // them on a GPU. flash2_bwd_dot_do_o also zeroes dQaccum, the f32 accumulator the dK/dV blocks add into;
  // the dK/dV blocks walk their query blocks from the last down ("for (; m_block >= m_block_min;
  // --m_block)"), keep S, dP, dK_j and dV_j in the register file, as the kernel keeps them in registers (at
  // its 128 x 128 tiles the SRAM could not hold them), and store dK_j, dV_j through the SRAM of K_j, V_j in
  // the storage dtype; a third kernel, flash2_bwd_convert_dq over (query block, head), converts dQaccum to
  // dQ in the storage dtype.
  bool as_flash_attn = false;
  // With as_flash_attn: bytes every dK/dV block stores beyond its tiles, at its end (the real kernel's
  // register spills to local memory, which reach L2; a property of the compiled kernel, not of the
  // algorithm). A multiple of 4; 0 for none.
  int64_t spill_bytes_per_block = 0;
  // Rows of `local` the spill stores share: block b stores to row b mod spill_rows, as a GPU keeps a thread's
  // local memory at an address fixed by its hardware slot (ForwardShape::spill_rows). 0: a row per block.
  int64_t spill_rows = 0;
  // flash2-bwd and flash2-bwd-no-d, as the project's tensor-core kernels (validation/kernels_tc_bwd.cu) keep
  // them in registers: S, P, dP and the f32 accumulators that are not added into HBM (flash2-bwd: dK_j,
  // dV_j, stored through the SRAM of K_j, V_j; no-D: D_i and dQ_i, stored through Q_i's) in the register
  // file. What the DMA stores or adds (dS, dQ_i's partial products, no-D's dK_j, dV_j) stays in SRAM.
  bool accumulators_in_registers = false;
  // (AttentionShape::double_buffer) flash2-bwd's dK/dV blocks load the next query block's Q_i, dO_i, L_i,
  // D_i as soon as the current step has read its own (after dK's product), before dQ's product and its
  // STORE_ADD, as the project's kernel and flash-attn's prefetch them; flash2-bwd-no-d has no prefetch.
  // flash2-bwd's dK/dV kernel and flash2-bwd-no-d step through their products' k in rolled loops, as the
  // project's kernels do (`#pragma unroll 1`, validation/kernels_tc_bwd.cu): `.kernel ... k_loops(rolled)`.
  bool rolled_k_loops = false;
  // With as_flash_attn: the dK/dV blocks as cuDNN's Hopper backward runs them, a producer warp group and two
  // consumers (instruction groups 0, 1, 2). The producer loads K_j, V_j and, double buffered, each step's
  // Q_i, dO_i, L_i, D_i; consumer x owns half x of the key block (its S, P, dP, dS and the dK_j, dV_j rows)
  // and computes half x of dQ_i's columns from both halves' dS, which it adds into dQaccum. Each unit takes
  // its instructions in program order, written so that one consumer's softmax and dS run on the VPU while
  // the MXU does the other's products.
  bool warp_groups = false;
  // Flash2 only: the one kernel PyTorch's memory-efficient backward launches (CUTLASS's
  // AttentionBackwardKernel, fmha_cutlassB_*_sm80), mem_efficient_bwd, grid (key blocks, heads). Block
  // (j, h) owns key block j. It first computes D = rowsum(dO * O) for every row of its head and stores it
  // (every block of the head, as the kernel's prologue does). Then it steps through query blocks i, from
  // block j round to the one before it (causal: from the first visible one to the last), loading each
  // product's operands for that product alone: L_i, D_i; Q_i for S and again for dK; dO_i for dV and again
  // for dP; V_j; K_j for dQ (and for S, unless K_j stays in SRAM: see reload_k). P, then dS in its place, in
  // SRAM; S, dP, dK_j, dV_j in registers. dQ_i is added through an f32 workspace (dQaccum, zero at the start,
  // as PyTorch's fill leaves it): load the tile, add dS K_j, store it back; the head's last block to visit
  // query block i (in launch order, so a single core runs it last) stores dQ_i in the storage dtype instead.
  // The kernel's per-tile spin lock around that read-modify-write is not modelled. dK_j, dV_j are stored
  // once, through SRAM.
  bool as_mem_efficient = false;
  // With as_mem_efficient: K_j for S is loaded again every step. CUTLASS keeps it in SRAM only when its
  // pipeline stages hold all of d (kSmemContainsEntireMat: d <= 32 x min(3, ceil(d / 32)); d = 64 does,
  // d = 128 does not).
  bool reload_k = false;
  // With as_mem_efficient: register spills to local memory that reach L2, beyond spill_bytes_per_block
  // (stored at the block's end): bytes stored and loaded every step, and loaded once per block after D. The
  // 128 x 128 kernel's: its dK_j and dV_j accumulators alone take the 128 registers a thread may have at 512
  // threads. Multiples of 4; a property of the compiled kernel, not of the algorithm (spill_rows as above).
  int64_t spill_bytes_per_step = 0, spill_load_bytes_per_step = 0, spill_load_bytes_per_block = 0;
  // With as_mem_efficient: the local memory a block's threads own (the compiled kernel's stack frame x its
  // threads), when more than the spills above touch: the per-step stores and every reload take the frame's
  // first bytes, the block's own spill stores its last, so the block's row of `local` is the whole frame, as
  // the GPU keeps it (validation/data/h200_memeff_residency.csv). 0: the row is as wide as the widest spill.
  int64_t spill_frame_bytes = 0;
  // O, dO, dQ, dK and dV laid out heads_inner with this many heads a batch (0: head after head): the layout
  // PyTorch's memory-efficient kernels allocate their outputs in ((batch, n, heads, d)), dO included (the
  // backward copies it so). The same bytes move; which L2 sets and partitions they fill changes.
  int64_t heads_inner_outputs = 0;
  // The main kernel computes P with expf, not ex2.approx (isa::KernelDecl::accurate_exp): PyTorch's
  // memory-efficient backward. Time only.
  bool accurate_exp = false;
};

isa::Program backward_program(BackwardSchedule schedule, const BackwardShape& shape);

// "flash2-bwd", "flash2-bwd-no-d", "naive-bwd".
std::string_view schedule_name(BackwardSchedule schedule);

}  // namespace attnsim::traces
