// The one matrix-product kernel behind value mode: the MXU's tile products (models/mxu/mxu.cpp) and the
// float64 reference's Q K^T and P V (traces/attention_math.h). Every output element is summed in order of
// the inner index, exactly as `sum += a[s] * b[s]` in a plain loop would, so results do not depend on the
// blocking, on the instruction set (models/common/simd.h) or on the number of value threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/common/simd.h"

namespace attnsim::kernels {

// Four doubles as one value: GCC and Clang lower its arithmetic to one AVX2 instruction or two SSE2 ones,
// element by element, with the same rounding as scalar code (no FMA is enabled).
using Double4 = double __attribute__((vector_size(32)));

// Unaligned loads and stores; by reference, as a 32-byte vector passed by value would change the ABI.
[[gnu::always_inline]] inline void load4(Double4& out, const double* p) {
  __builtin_memcpy(&out, p, sizeof out);
}
[[gnu::always_inline]] inline void store4(double* p, const Double4& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// An R x 4V block of out = init + a b, a row-major with stride lda, b with stride ldb, k inner steps.
// The accumulators are local values, so the compiler keeps them in registers for the whole inner loop.
template <int R, int V, class Init, class Write>
[[gnu::always_inline]] inline void product_block(const double* a, int64_t lda, const double* b, int64_t ldb,
                                                 int64_t k, int64_t r0, int64_t c0, Init& init,
                                                 Write& write) {
  Double4 acc[R][V];
  double scratch[4 * V];
  for (int r = 0; r < R; ++r) {
    for (int e = 0; e < 4 * V; ++e) scratch[e] = init(r0 + r, c0 + e);
    for (int v = 0; v < V; ++v) load4(acc[r][v], scratch + 4 * v);
  }
  for (int64_t s = 0; s < k; ++s) {
    Double4 b_row[V];
    for (int v = 0; v < V; ++v) load4(b_row[v], b + s * ldb + c0 + 4 * v);
    for (int r = 0; r < R; ++r) {
      const double x = a[(r0 + r) * lda + s];
      const Double4 broadcast = {x, x, x, x};
      for (int v = 0; v < V; ++v) acc[r][v] += broadcast * b_row[v];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) store4(scratch + 4 * v, acc[r][v]);
    for (int e = 0; e < 4 * V; ++e) write(r0 + r, c0 + e, scratch[e]);
  }
}

// write(r, c, init(r, c) + sum over s < k of a[r * lda + s] * b[s * ldb + c]) for r in [row_begin, row_end),
// c in [0, cols); edges of the R x 4V blocks one element at a time, in the same order.
template <int R, int V, class Init, class Write>
[[gnu::always_inline]] inline void product_rows(const double* a, int64_t lda, const double* b, int64_t ldb,
                                                int64_t k, int64_t row_begin, int64_t row_end, int64_t cols,
                                                Init& init, Write& write) {
  constexpr int64_t C = 4 * V;
  int64_t r0 = row_begin;
  for (; r0 + R <= row_end; r0 += R)
    for (int64_t c0 = 0; c0 + C <= cols; c0 += C) product_block<R, V>(a, lda, b, ldb, k, r0, c0, init, write);
  auto one = [&](int64_t r, int64_t c) {
    double sum = init(r, c);
    for (int64_t s = 0; s < k; ++s) sum += a[r * lda + s] * b[s * ldb + c];
    write(r, c, sum);
  };
  for (int64_t r = row_begin; r < r0; ++r)
    for (int64_t c = cols - cols % C; c < cols; ++c) one(r, c);
  for (int64_t r = r0; r < row_end; ++r)
    for (int64_t c = 0; c < cols; ++c) one(r, c);
}

// 4 x 8 accumulators fill 8 of AVX2's 16 registers; the baseline's 16 SSE2 registers hold 4 x 4.
template <class Init, class Write>
ATTNSIM_TARGET_AVX2 void product_rows_avx2(const double* a, int64_t lda, const double* b, int64_t ldb,
                                           int64_t k, int64_t row_begin, int64_t row_end, int64_t cols,
                                           Init& init, Write& write) {
  product_rows<4, 2>(a, lda, b, ldb, k, row_begin, row_end, cols, init, write);
}

template <class Init, class Write>
void product(const double* a, int64_t lda, const double* b, int64_t ldb, int64_t k, int64_t row_begin,
             int64_t row_end, int64_t cols, Init init, Write write) {
  if (host_has_avx2())
    product_rows_avx2(a, lda, b, ldb, k, row_begin, row_end, cols, init, write);
  else
    product_rows<4, 1>(a, lda, b, ldb, k, row_begin, row_end, cols, init, write);
}

}  // namespace attnsim::kernels
