// The forward attention schedules, from the one that materialises everything to FlashAttention-2, each a
// tile program for the tile machine (docs/schedules.md gives their loops and HBM traffic):
//   naive-safe    S = QK^T to HBM, 3-pass safe softmax over S tiles (P to HBM), O = PV  (seed 001 §1.3)
//   naive-online  the same with a 2-pass online softmax                                  (seed 001 §1.3)
//   two-pass      pass 1 streams K for (m, l) per query block, pass 2 recomputes S, O = PV (seed 001 §2.1)
//   flash1        FlashAttention Algorithm 1: outer loop over K/V blocks, O, l, m in HBM  (seed 000)
//   flash2        outer loop over query blocks, O written once                           (seed 002)
// Conventions as in traces/tile.h: Q is taken as already scaled by 1/sqrt(d); statistics and accumulators
// are f32; Q, K, V, O and the P tiles use the shape's dtype. Every program ends with `.check O = ...`.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "isa/program.h"
#include "traces/tile.h"

namespace attnsim::traces {

enum class ForwardSchedule { NaiveSafe, NaiveOnline, TwoPassFused, Flash1, Flash2 };

// Seed 004's BREAK IT experiments, for the schedules with a running (online) softmax: naive-online,
// two-pass (its pass 1), flash1 and flash2. naive-safe has no running statistics and rejects them.
struct BreakIt {
  bool no_max_subtraction = false;  // exp(S) with no max subtracted anywhere (m is never computed)
  bool no_rescaling = false;        // keep the running max, drop the e^(m_old - m_new) factor on l and O

  bool any() const { return no_max_subtraction || no_rescaling; }
};

struct ForwardShape : AttentionShape {
  int64_t heads = 1;  // batch x heads, independent; > 1 makes Q, K, V, O [heads][n][d]
  BreakIt breaks;
  // Q and K are uniform in [-qk_range, qk_range), V in [-1, 1). Larger ranges make larger scores: with
  // qk_range = 4 and d = 64 the scores reach ~100, so exp(S) overflows f16 (and f32) at any n.
  double qk_range = 1.0;
  // flash2 only: walk a query block's key blocks from the last visible one down to the first, as
  // FlashAttention-2's own kernels do (the diagonal block, the only masked one, first). Causal, this puts
  // the query blocks that run together at different key blocks, which changes what L2 keeps.
  bool keys_descending = false;
  // flash2 only: a persistent grid of this many blocks (e.g. the SM count, as cuDNN's forward launches
  // it) instead of one block per (query block, head); block b takes the work tiles b, b + P, b + 2P, ... in
  // the launch order of the ordinary grid (query block fastest, then head). 0: the ordinary grid. A
  // persistent kernel's real tile order is its own (cuDNN's is not documented); the bytes between the cores
  // and L2 do not depend on it, what L2 keeps does.
  int64_t persistent_blocks = 0;
  // flash2 only: store one f32 row statistic per query row with O (the forward's log-sum-exp, which training
  // kernels write for the backward; the model stores l, having no logarithm, so the bytes are right and the
  // values unchecked).
  bool store_row_statistic = false;
  // flash2 only: the loads of PyTorch's memory-efficient kernel (CUTLASS fmha_cutlassF): Q_i is loaded again
  // for every key block (it streams through the same pipeline as K_j), and a causal query block's keys end
  // at its last row, so its last key tile may be partial.
  bool as_mem_efficient = false;
  // flash2 only: the kernel's softmax is CUTLASS's iterative one (isa::KernelDecl::iterative_softmax:
  // PyTorch's memory-efficient forward), which costs issue slots, not bytes.
  bool iterative_softmax = false;
  // O laid out heads_inner with this many heads a batch (0: head after head): PyTorch's memory-efficient
  // forward allocates it (batch, n, heads, d). The same bytes; other L2 sets and partitions.
  int64_t heads_inner_outputs = 0;
  // flash2 only: bytes every block stores at its end beyond O (a compiled kernel's register spills to local
  // memory, which reach L2); a multiple of 4, 0 for none.
  int64_t spill_bytes_per_block = 0;
  // flash2 only, not with ping_pong: bytes every block stores after each key block (a kernel that spills
  // registers inside its loop: PyTorch's FlashAttention-2 forward at 255 registers per thread); a multiple
  // of 4, 0 for none. Stored to the same row of `local` as the block's end spill, so they occupy one L2
  // footprint per block, as a thread's spill slots do.
  int64_t spill_bytes_per_key_block = 0;
  // Rows of `local` the blocks' spill stores share: block b stores to row b mod spill_rows. A GPU keeps a
  // thread's local memory at an address fixed by the hardware slot it runs in, so a block reuses the spill
  // lines of the block that held its slot before: resident blocks (SMs x blocks per SM) is the footprint.
  // 0: a row per block.
  int64_t spill_rows = 0;
  // flash2, two-pass and flash1: keep S, P, O_i and the row statistics in the core's tile register file
  // (two-pass: all but m_i and l_i, which are stored and reloaded; flash1: all but what each step loads and
  // stores, O_i landing in SRAM in the storage dtype), as GPU kernels keep
  // them in registers (each warp its rows' fragments); only Q_i, K_j and V_j live in SRAM, and O_i is staged
  // through Q_i's SRAM for its store (FlashAttention-2's sO aliases sQ). With as_mem_efficient P stays in
  // SRAM, where that kernel hands it to its second product. Needs a `tile_regs` unit.
  bool accumulators_in_registers = false;
  // flash2 and two-pass, with accumulators_in_registers: Q_i's mma fragments loaded into registers once per
  // block, before the first product (the project's kernels: ldmatrix before the key loop), instead of
  // every S = Q_i K_j^T reading Q_i from SRAM (FlashAttention-2's forward, Is_Q_in_regs false). Not with
  // as_mem_efficient (it reloads Q_i) or ping_pong (wgmma reads Q_i from shared memory).
  bool q_in_registers = false;
  // flash2 only: each query block's rows as two halves whose instructions interleave, so one half's
  // softmax runs on the VPU while the other half's matrix products run on the MXU: two consumer warp
  // groups taking turns at the tensor cores (FlashAttention-3's ping-pong, cuDNN's Hopper forward). The
  // same loads and stores; a half's own S, P, statistics and O.
  bool ping_pong = false;
  // flash2 only, not with ping_pong or as_mem_efficient: compute what P V_j needs first (the new max, alpha,
  // O rescaled, P: FlashAttention-2's softmax_rescale_o order) and sum P's rows after the product, as the
  // kernel's compiled code interleaves the sum's adds with the mma instructions. Off: the sum and the
  // rescales before P V_j, on its path. Shortens a lone block's path (1.28 -> 1.20 of the GPU's cycles) but
  // under the presets' oldest-first service takes FlashAttention-2's pairs out of step (docs/chip.md, "The
  // row sum after the product").
  bool sum_after_product = false;
};

// Throws std::invalid_argument for a bad shape, or for breaks on naive-safe.
isa::Program forward_program(ForwardSchedule schedule, const ForwardShape& shape);

// Whether `shape` (q_in_registers aside) can take q_in_registers for `schedule`.
bool q_in_registers_applies(ForwardSchedule schedule, const ForwardShape& shape);

// "naive-safe", "naive-online", "two-pass", "flash1", "flash2".
std::string_view schedule_name(ForwardSchedule schedule);
std::optional<ForwardSchedule> find_forward_schedule(std::string_view name);
const std::vector<ForwardSchedule>& all_forward_schedules();
// Whether the schedule has a running softmax that BreakIt can break (all but naive-safe).
bool breakable(ForwardSchedule schedule);

}  // namespace attnsim::traces
