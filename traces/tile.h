// Tile programs for the tile machine: tiled attention forward in the FlashAttention-2 order (outer loop
// over query blocks, O written once), and standard attention with S kept on chip (seed 003's "standard").
// Q is taken as already scaled by 1/sqrt(d) (seed 002 folds the scale into Q); .check uses the same.
#pragma once

#include <cstdint>
#include <string>

#include "isa/dtype.h"
#include "isa/program.h"

namespace attnsim::traces {

struct AttentionShape {
  int64_t n = 512;       // sequence length
  int64_t d = 64;        // head dimension
  int64_t block_q = 64;  // B_r: query rows per tile
  int64_t block_k = 64;  // B_c: key rows per tile
  bool causal = false;
  bool double_buffer = false;  // load the next K/V block while the current one is being used
  Dtype dtype = Dtype::F16;    // storage of Q, K, V, O and of the K/V/P tiles
  uint64_t seed = 1;
  // flash2's forward kernel and flash2-bwd's dK/dV kernel: how the block's `warps` warps share a product's
  // output in bands of `warp_rows` rows (isa::KernelDecl::warps; a kernel's own layout, as FlashAttention-2's
  // templates give it); 0: the default, a warp per 16-row band loading all of B.
  int64_t warps = 0;
  int64_t warp_rows = 0;
  // The kernel's mma instruction shape (isa::KernelDecl::mma); {0, 0, 0}: the machine's.
  std::array<int64_t, 3> mma{0, 0, 0};
  // flash2's forward kernel and flash2-bwd's main kernel: what their code spends beside the tile
  // instructions (isa::KernelDecl::overhead); unset fields: the machine's.
  isa::CodeOverhead overhead{};
  // Throws std::invalid_argument unless mma is all 0 or each of M, N, K is from 1 to 256.
  void check_mma() const;
};

// FlashAttention-2 forward. Causal: tiles entirely above the diagonal are skipped, the diagonal ones
// masked. Ragged n (not a multiple of the blocks) uses partial views of the buffers.
isa::Program flash2_forward(const AttentionShape& shape);

// Standard attention with the whole S = QK^T on chip: two big matmuls and a row softmax (seed 003's
// "standard", which fits a TPU's VMEM for n up to a few thousand).
isa::Program standard_attention_on_chip(const AttentionShape& shape);

}  // namespace attnsim::traces
