// A tensor's initial contents, produced the same way everywhere (scalar DRAM, tile HBM, generators that
// precompute inputs): mt19937_64 with the declared seed, mapped to [lo, hi), rounded to the dtype.
#pragma once

#include <random>
#include <vector>

#include "isa/program.h"

namespace attnsim::isa {

inline void materialize(const TensorDecl& t, Dtype dtype, double* out) {
  const int64_t n = t.elements();
  switch (t.init.kind) {
    case TensorInit::Kind::Zeros:
      for (int64_t i = 0; i < n; ++i) out[i] = 0.0;
      break;
    case TensorInit::Kind::Fill:
      for (int64_t i = 0; i < n; ++i) out[i] = round_to(dtype, t.init.lo);
      break;
    case TensorInit::Kind::Values:
      for (int64_t i = 0; i < n; ++i) out[i] = round_to(dtype, t.init.values[i]);
      break;
    case TensorInit::Kind::Random: {
      std::mt19937_64 rng(t.init.seed);
      for (int64_t i = 0; i < n; ++i) {
        double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        out[i] = round_to(dtype, t.init.lo + unit * (t.init.hi - t.init.lo));
      }
      break;
    }
  }
}

inline std::vector<double> materialize(const TensorDecl& t, Dtype dtype) {
  std::vector<double> out(static_cast<size_t>(t.elements()));
  materialize(t, dtype, out.data());
  return out;
}

}  // namespace attnsim::isa
