// Lab 7 (seed 002, "Inner Product vs. Outer Product in Attention"): attention with rows as 1 x d tiles in
// the two loop orders, so the simulator's HBM ledger reproduces the seed's "Cost Comparison" table.
//
// Tensors in HBM: Q, K, V, O are [n][d]; the running state of each query lives in two [n] tensors, m (running
// max, fill(-inf)) and l (running denominator, zeros), NOT packed beside O, so the seed's "O loads / O
// stores" are exactly the reads / writes of tensor O, and the state's traffic is counted separately (m and
// l). O starts as zeros in HBM: the seed's "O loads n (initialize once per query)" is the load of that zero
// row. Q is taken as already scaled (as traces/tile.h); the programs end with `.check O = attention(Q, K,
// V)`.
//
// One step (query row i, key/value row j), all on 1 x d or 1 x 1 buffers (online softmax, seed 002):
//   s = q_i k_j^T;  m' = max(m, s);  p = e^(s - m');  a = e^(m - m');  l = l a + p;  o = o a + p v_j;  m = m'
// and o / l is stored as the result once the last key row has been seen.
//
// HBM traffic in rows (one row = d elements of O/Q/K/V, or one element of m/l); a "KV load" is one k row and
// one v row:
//                      Q      K, V each   O loads        O stores       m, l loads each   m, l stores each
//   inner (FA2-like)   n      n^2         n              n              n                 0
//   outer (FA1-like)   n^2    n           n^2 - r(n-1)   n^2 - r(n-1)   n^2 - r(n-1)      (n - r)(n - 1)
// where r = outputs_on_chip (0 by default): the outer order keeps the outputs of queries 0..r-1 and their
// m, l in SRAM (buffers O_slotK, m_slotK, l_slotK) across all key rows, so each is loaded and stored once:
// every extra output slot saves n - 1 stores (and n - 1 loads). r = n recovers the inner order's O traffic.
// The state is loaded whenever its O row is, and stored whenever its O row is stored, except when it is dead
// (after the last key row): the inner order never stores it, the outer order skips the stores of its last
// pass.
#pragma once

#include <cstdint>

#include "isa/dtype.h"
#include "isa/program.h"

namespace attnsim::traces {

struct LoopOrderOptions {
  Dtype dtype = Dtype::F32;     // storage of Q, K, V, O and their row buffers; m, l and scalars are f32
  uint64_t seed = 1;            // Q, K, V are random(seed), random(seed + 1), random(seed + 2) in [-1, 1)
  int64_t outputs_on_chip = 0;  // outer order only: output rows kept in SRAM across key rows (0..n)
};

// FlashAttention-2 order at row granularity: for each query row i, load q_i and its (o, m, l) once, stream
// every k_j, v_j, store o_i once.
isa::Program inner_product_attention(int64_t n, int64_t d, const LoopOrderOptions& options = {});

// FlashAttention-1 order at row granularity: for each key/value row j (loaded once), for each query row i,
// load q_i and (o_i, m_i, l_i), update, store them back (outputs_on_chip of them stay in SRAM instead).
isa::Program outer_product_attention(int64_t n, int64_t d, const LoopOrderOptions& options = {});

}  // namespace attnsim::traces
