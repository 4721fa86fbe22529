// The flash forward shapes the whole-chip tests run: d = 64, f16, square tiles, single-buffered as the
// validation kernels are.
#pragma once

#include <cstdint>

#include "traces/attention_forward.h"

namespace attnsim::testing {

inline traces::ForwardShape chip_shape(int64_t n, int64_t heads, int64_t block, bool causal = false) {
  traces::ForwardShape s;
  s.n = n;
  s.d = 64;
  s.heads = heads;
  s.block_q = s.block_k = block;
  s.causal = causal;
  s.dtype = Dtype::F16;
  s.double_buffer = false;  // as the validation kernels
  return s;
}

}  // namespace attnsim::testing
