// Float64 attention for oracles: the `.check` reference (sim/reference.cpp) and the backward generators,
// which start from the O and logsumexp a forward pass would have left in HBM. One implementation, so the
// two cannot drift apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "models/common/parallel.h"
#include "models/common/value_kernels.h"

namespace attnsim::traces {

// Rows [i0, i0 + rows) of one head, as a block: scores S = Q K^T, softmax row by row, O = P V, and each
// row's lse. kt is K transposed (d x keys). Both products go through the value kernel (one block of rows
// reads K and V from the host's cache once); each dot product is summed in order of c and each output in
// order of j, exactly as the plain loops would. Under the causal mask a row sees keys [0, visible(r)):
// the block's products run over the keys its first row sees, and each row adds its own further keys after.
inline void attention_rows(const double* q, const double* kt, const double* v, int64_t i0, int64_t rows,
                           int64_t keys, bool causal, int64_t d, int64_t dv, double* scores, double* o,
                           double* lse) {
  auto visible = [&](int64_t r) { return causal ? std::min(keys, i0 + r + 1) : keys; };
  auto zero = [](int64_t, int64_t) { return 0.0; };
  auto to_scores = [&](int64_t r, int64_t j, double x) { scores[r * keys + j] = x; };
  kernels::product(q + i0 * d, d, kt, keys, d, 0, rows, visible(rows - 1), zero, to_scores);
  for (int64_t r = 0; r < rows; ++r) {
    double* s = scores + r * keys;
    double row_max = -INFINITY;
    for (int64_t j = 0; j < visible(r); ++j) row_max = std::max(row_max, s[j]);
    double sum = 0;
    for (int64_t j = 0; j < visible(r); ++j) sum += (s[j] = std::exp(s[j] - row_max));
    for (int64_t j = 0; j < visible(r); ++j) s[j] = s[j] / sum;
    if (lse) lse[i0 + r] = row_max + std::log(sum);
  }
  const int64_t shared = visible(0);
  auto to_o = [&](int64_t r, int64_t c, double x) { o[(i0 + r) * dv + c] = x; };
  kernels::product(scores, keys, v, dv, shared, 0, rows, dv, zero, to_o);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = shared; j < visible(r); ++j)
      for (int64_t c = 0; c < dv; ++c) o[(i0 + r) * dv + c] += scores[r * keys + j] * v[j * dv + c];
}

// For `heads` independent heads: O[h] = softmax(Q[h] K[h]^T) V[h] (key j hidden from query i when causal
// and j > i), and, if lse is non-null, lse[h][i] = m_i + log(sum_j exp(s_ij - m_i)). q: heads x n x d,
// k: heads x keys x d, v: heads x keys x dv, o: heads x n x dv (overwritten). Rows are shared among the
// value threads; each row is computed as on one thread.
inline void attention_f64(const double* q, const double* k, const double* v, int64_t heads, int64_t n,
                          int64_t keys, int64_t d, int64_t dv, bool causal, double* o,
                          double* lse = nullptr) {
  std::vector<double> kt(static_cast<size_t>(d * keys));
  for (int64_t h = 0; h < heads; ++h) {
    const double* kh = k + h * keys * d;
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t c = 0; c < d; ++c) kt[c * keys + j] = kh[j * d + c];
    ValueThreads::for_ranges(n, n * keys * (d + dv), [&](int64_t begin, int64_t end) {
      constexpr int64_t kRowBlock = 16;
      std::vector<double> scores(static_cast<size_t>(kRowBlock * keys));
      for (int64_t i0 = begin; i0 < end; i0 += kRowBlock)
        attention_rows(q + h * n * d, kt.data(), v + h * keys * dv, i0, std::min(kRowBlock, end - i0), keys,
                       causal, d, dv, scores.data(), o + h * n * dv, lse ? lse + h * n : nullptr);
    });
  }
}

}  // namespace attnsim::traces
