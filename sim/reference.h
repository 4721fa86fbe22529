// Float64 references for `.check` lines: computed from the tensors' initial contents, compared with what
// the simulated machine left in memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "isa/program.h"

namespace attnsim {

struct CheckResult {
  std::string description;  // "c = matmul(a, b)"
  double max_abs_error = 0;
  double max_rel_error = 0;  // max |y - ref| / max |ref|
  double tolerance = 0;      // on max_rel_error, from the machine dtype
  bool passed = false;
  // A failed check's first element (row-major) whose error alone exceeds the tolerance, so a student sees
  // which output is wrong: "c[0][1]", its expected and its final value.
  struct Element {
    std::string name;
    double expected = 0, got = 0;
  };
  std::optional<Element> first_wrong;
};

// initial[i] / final[i]: contents of tensor i before and after the run.
CheckResult evaluate_check(const isa::Program& program, const isa::Check& check,
                           const std::vector<std::vector<double>>& initial,
                           const std::vector<std::vector<double>>& final, Dtype compute_dtype);

// Computes and keeps the reference of `check` for these initial contents, so a later evaluate_check of the
// same function of the same inputs (in this process, or in a child forked after this) finds it ready.
void warm_reference(const isa::Program& program, const isa::Check& check,
                    const std::vector<std::vector<double>>& initial);

// Relative tolerance for results computed in a dtype (a few ulps times a growth margin).
double tolerance_for(Dtype dtype);

// The precision a program computes in, for its checks' tolerance: the machine's register dtype for scalar
// traces; for tile programs the least precise of its buffers (each defaulting to the machine dtype), since
// every value passes through them.
Dtype compute_dtype_of(const isa::Program& program, Dtype machine_dtype);

}  // namespace attnsim
