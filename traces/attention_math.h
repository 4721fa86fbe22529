// Float64 attention for oracles: the `.check` reference (sim/reference.cpp) and the backward generators,
// which start from the O and logsumexp a forward pass would have left in HBM. One implementation, so the
// two cannot drift apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace attnsim::traces {

// For `heads` independent heads: O[h] = softmax(Q[h] K[h]^T) V[h] (key j hidden from query i when causal
// and j > i), and, if lse is non-null, lse[h][i] = m_i + log(sum_j exp(s_ij - m_i)). q: heads x n x d,
// k: heads x keys x d, v: heads x keys x dv, o: heads x n x dv (overwritten).
inline void attention_f64(const double* q, const double* k, const double* v, int64_t heads, int64_t n,
                          int64_t keys, int64_t d, int64_t dv, bool causal, double* o,
                          double* lse = nullptr) {
  std::vector<double> scores(static_cast<size_t>(keys));
  for (int64_t h = 0; h < heads; ++h) {
    const double* qh = q + h * n * d;
    const double* kh = k + h * keys * d;
    const double* vh = v + h * keys * dv;
    double* oh = o + h * n * dv;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t visible = causal ? std::min(keys, i + 1) : keys;
      double row_max = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += qh[i * d + c] * kh[j * d + c];
        scores[j] = dot;
        row_max = std::max(row_max, dot);
      }
      double sum = 0;
      for (int64_t j = 0; j < visible; ++j) sum += (scores[j] = std::exp(scores[j] - row_max));
      for (int64_t c = 0; c < dv; ++c) oh[i * dv + c] = 0.0;
      for (int64_t j = 0; j < visible; ++j)
        for (int64_t c = 0; c < dv; ++c) oh[i * dv + c] += scores[j] / sum * vh[j * dv + c];
      if (lse) lse[h * n + i] = row_max + std::log(sum);
    }
  }
}

}  // namespace attnsim::traces
