// Value mode's fast paths against the plain loops they replace, bit for bit: the blocked matrix product
// (MxuUnit::compute; the SSE2 and AVX2 builds of models/common/value_kernels.h), element-wise ops on several
// value threads, and the float64 attention reference, each with shapes that leave partial blocks at every
// edge, transposed views, an accumulator, and 1 or 3 threads. The plain loops are the definitions (each
// output summed in order of the inner index, rounded once), written out here independently of the code.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "isa/dtype.h"
#include "models/common/parallel.h"
#include "models/common/simd.h"
#include "models/mxu/mxu.h"
#include "models/vpu/vpu.h"
#include "traces/attention_math.h"

namespace attnsim {
namespace {

std::vector<double> random_values(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

void expect_bits_equal(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i)
    differ += std::bit_cast<uint64_t>(got[i]) != std::bit_cast<uint64_t>(want[i]) ? 1 : 0;
  EXPECT_EQ(differ, 0u) << "of " << got.size() << " elements";
}

// Every combination of value threads and instruction set the host can run.
template <class F>
void for_each_setting(F check) {
  const bool avx2 = avx2_kernels_enabled();
  for (int threads : {1, 3})
    for (bool wide : {false, avx2}) {
      ValueThreads::set_count(threads);
      avx2_kernels_enabled() = wide;
      check();
    }
  avx2_kernels_enabled() = avx2;
  ValueThreads::set_count(1);
}

struct ProductCase {
  int64_t m, k, n;
  bool transpose_b, accumulate;
};

TEST(ValueKernels, MatrixProductEqualsThePlainLoop) {
  for (const ProductCase& pc :
       {ProductCase{5, 3, 7, false, false}, ProductCase{37, 19, 23, true, true},
        ProductCase{128, 64, 128, false, true}, ProductCase{130, 65, 129, true, false}}) {
    std::vector<double> a = random_values(size_t(pc.m * pc.k), 1), b = random_values(size_t(pc.k * pc.n), 2),
                        c = random_values(size_t(pc.m * pc.n), 3);
    // b stored n x k and read transposed, or k x n.
    TileView va{a.data(), pc.m, pc.k, pc.k, false};
    TileView vb = pc.transpose_b ? TileView{b.data(), pc.k, pc.n, pc.k, true}
                                 : TileView{b.data(), pc.k, pc.n, pc.n, false};
    std::vector<double> want(size_t(pc.m * pc.n));
    for (int64_t i = 0; i < pc.m; ++i)
      for (int64_t j = 0; j < pc.n; ++j) {
        double sum = pc.accumulate ? c[size_t(i * pc.n + j)] : 0.0;
        for (int64_t s = 0; s < pc.k; ++s) sum += va.at(i, s) * vb.at(s, j);
        want[size_t(i * pc.n + j)] = round_to(Dtype::F16, sum);
      }
    for_each_setting([&] {
      std::vector<double> d = c;  // d += a * b in place when accumulating
      TileView vd{d.data(), pc.m, pc.n, pc.n, false};
      MxuUnit::compute(va, vb, pc.accumulate ? &vd : nullptr, vd, Dtype::F16);
      expect_bits_equal(d, want);
    });
  }
}

TEST(ValueKernels, ElementwiseOnSeveralThreadsEqualsThePlainLoop) {
  const int64_t rows = 131, cols = 257;  // enough work to be shared among threads
  const std::vector<double> x = random_values(size_t(rows * cols), 4, -20.0, 2.0);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = round_to(Dtype::F16, std::exp(x[i]));
  for_each_setting([&] {
    std::vector<double> in = x, out(x.size());
    VpuUnit::elementwise(VpuOp::Exp, TileView{in.data(), rows, cols, cols, false}, nullptr,
                         TileView{out.data(), rows, cols, cols, false}, Dtype::F16);
    expect_bits_equal(out, want);
  });
}

// The reference's definition: one row at a time, scores summed over c, outputs over j.
std::vector<double> plain_attention(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, int64_t n, int64_t keys, int64_t d,
                                    int64_t dv, bool causal, std::vector<double>& lse) {
  std::vector<double> o(static_cast<size_t>(n * dv)), scores(static_cast<size_t>(keys));
  lse.assign(size_t(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t visible = causal ? std::min(keys, i + 1) : keys;
    double row_max = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += q[size_t(i * d + c)] * k[size_t(j * d + c)];
      scores[size_t(j)] = dot;
      row_max = std::max(row_max, dot);
    }
    double sum = 0;
    for (int64_t j = 0; j < visible; ++j) sum += (scores[size_t(j)] = std::exp(scores[size_t(j)] - row_max));
    for (int64_t j = 0; j < visible; ++j)
      for (int64_t c = 0; c < dv; ++c)
        o[size_t(i * dv + c)] += scores[size_t(j)] / sum * v[size_t(j * dv + c)];
    lse[size_t(i)] = row_max + std::log(sum);
  }
  return o;
}

TEST(ValueKernels, AttentionReferenceEqualsThePlainLoops) {
  for (bool causal : {false, true})
    for (auto [n, keys, d, dv] :
         {std::array<int64_t, 4>{67, 67, 13, 9}, std::array<int64_t, 4>{300, 300, 64, 64},
          std::array<int64_t, 4>{40, 91, 8, 17}}) {
      const auto q = random_values(size_t(n * d), 5), k = random_values(size_t(keys * d), 6),
                 v = random_values(size_t(keys * dv), 7);
      std::vector<double> want_lse;
      const std::vector<double> want = plain_attention(q, k, v, n, keys, d, dv, causal, want_lse);
      for_each_setting([&] {
        std::vector<double> o(static_cast<size_t>(n * dv)), lse(static_cast<size_t>(n));
        traces::attention_f64(q.data(), k.data(), v.data(), 1, n, keys, d, dv, causal, o.data(), lse.data());
        expect_bits_equal(o, want);
        expect_bits_equal(lse, want_lse);
      });
    }
}

}  // namespace
}  // namespace attnsim
