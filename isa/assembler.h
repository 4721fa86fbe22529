// Trace text -> Program. Syntax (docs/trace-format.md):
//   # comment
//   .tensor a[2][2] f32 = {1, 2, 3, 4}       values, row-major; dtype optional
//   .tensor x[8] random(seed=1, lo=-2, hi=2) uniform fill
//   .tensor c[2][2]                          zeros
//   .check c = matmul(a, b)                  float64 reference of the final contents
//   LOAD a[0][0], R0                         seed 002 operand order, registers case-insensitive
#pragma once

#include <string>
#include <string_view>

#include "isa/program.h"

namespace attnsim::isa {

// Throws InputError with file:line:col on the first error.
Program assemble(std::string_view text, const std::string& file_name);
Program assemble_file(const std::string& path);

// The functions a `.check` may name, with their arity.
struct CheckFunction {
  std::string_view name;
  int arity;
  std::string_view meaning;
};
const std::vector<CheckFunction>& check_functions();

}  // namespace attnsim::isa
