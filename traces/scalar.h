// Generators of scalar (toy-machine) traces for any n: the seed 002 softmax labs, the seed 001 online
// attention example, and a long straight-line mix for the speed benchmark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/program.h"

namespace attnsim::traces {

// Inputs: explicit values, or uniform random in [lo, hi) from a seed.
struct ScalarInputs {
  int64_t n = 8;
  uint64_t seed = 1;
  double lo = -4.0;
  double hi = 4.0;
  std::optional<std::vector<double>> x;  // scores / softmax input
  std::optional<std::vector<double>> v;  // values (online attention)
};

// 3 registers, 3 passes (max, sum of exponents, normalize): 3n reads, n writes.
isa::Program softmax_safe(const ScalarInputs& in);
// 4 registers, online (m, s) pass then normalize: 2n reads, n writes; steady state is seed 002's 9 steps.
isa::Program softmax_online(const ScalarInputs& in);
// 6 registers, one pass over x (scores) and v: o = sum_j softmax(x)_j v_j (seed 001 section 2).
isa::Program online_attention(const ScalarInputs& in);

// Names accepted by `attnsim gen`, with a line each.
struct GeneratorInfo {
  std::string name;
  std::string description;
  int registers;
};
const std::vector<GeneratorInfo>& scalar_generators();
isa::Program generate_scalar(const std::string& name, const ScalarInputs& in);

}  // namespace attnsim::traces
