// Trace text -> Program. Syntax (docs/trace-format.md):
//   # comment
//   .tensor a[2][2] f32 = {1, 2, 3, 4}       values, row-major; dtype optional
//   .tensor x[8] random(seed=1, lo=-2, hi=2) uniform fill
//   .tensor c[2][2]                          zeros
//   .check c = matmul(a, b)                  float64 reference of the final contents
//   LOAD a[0][0], R0                         seed 002 operand order, registers case-insensitive
#pragma once

#include <functional>
#include <istream>
#include <string>
#include <string_view>

#include "isa/program.h"

namespace attnsim::isa {

// The most instructions a trace may hold unless the command says otherwise (`--max-instructions`). An
// assembled instruction takes about 200 bytes of host memory with its decoded form, so this bounds a run
// of a hand-written or generated trace to a few GB; `gen` refuses to write a longer one.
// The most elements a tensor may have: counts stay far below int64 overflow, so offsets and byte counts
// downstream cannot wrap.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;

inline constexpr int64_t kDefaultMaxInstructions = int64_t{1} << 25;  // 33,554,432

// Throws InputError with file:line:col on the first error, and at the first instruction past
// `max_instructions` (before it takes any memory).
Program assemble(std::string_view text, const std::string& file_name,
                 int64_t max_instructions = kDefaultMaxInstructions);
Program assemble_file(const std::string& path, int64_t max_instructions = kDefaultMaxInstructions);

// Streamed assembly of a scalar trace, line by line from `in`: every `chunk_instructions` instructions (and
// at the end) `handler` receives the header as it stands (tensors, checks) and the instructions, which it
// takes out of the vector. Memory stays bounded by a chunk at any length. Directives after the first
// chunk, and the tile directives (.buffer, .kernel, .block, .group), are errors at their line. Returns the
// header.
using ChunkHandler = std::function<void(const Program& header, std::vector<Instruction>& instructions)>;
Program assemble_stream(std::istream& in, const std::string& file_name, int64_t max_instructions,
                        size_t chunk_instructions, const ChunkHandler& handler);

// The functions a `.check` may name, with their arity.
struct CheckFunction {
  std::string_view name;
  int arity;
  std::string_view meaning;
};
const std::vector<CheckFunction>& check_functions();

}  // namespace attnsim::isa
