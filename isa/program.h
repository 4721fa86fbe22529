// A Program is what a trace assembles to: tensor declarations, instructions and value checks.
// It carries source locations so later stages (decode against a machine) can still point at the text.
#pragma once

#include <cstdint>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "isa/diagnostics.h"
#include "isa/dtype.h"
#include "isa/opcode.h"

namespace attnsim::isa {

// How a tensor's initial contents are produced.
struct TensorInit {
  enum class Kind : uint8_t { Zeros, Values, Random } kind = Kind::Zeros;
  std::vector<double> values;  // Kind::Values, row-major
  uint64_t seed = 0;           // Kind::Random: uniform in [lo, hi)
  double lo = -1.0;
  double hi = 1.0;
};

struct TensorDecl {
  std::string name;
  std::vector<int64_t> shape;
  std::optional<Dtype> dtype;  // unset: the machine's default dtype
  TensorInit init;
  SourceLoc loc;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
};

// Kept small and inline (no heap per operand): generated traces reach tens of millions of instructions.
struct Operand {
  enum class Kind : uint8_t { Register, Memory } kind = Kind::Register;
  int32_t reg = -1;     // Register
  int32_t tensor = -1;  // Memory: index into Program::tensors
  int64_t flat = 0;     // Memory: row-major element offset inside the tensor
  SourceLoc loc;

  static Operand r(int32_t reg) {
    Operand o;
    o.reg = reg;
    return o;
  }
  static Operand m(int32_t tensor, int64_t flat) {
    Operand o;
    o.kind = Kind::Memory;
    o.tensor = tensor;
    o.flat = flat;
    return o;
  }
};

struct Instruction {
  Opcode op{};
  uint8_t operand_count = 0;
  std::array<Operand, 4> operand_slots;
  SourceLoc loc;

  std::span<const Operand> operands() const { return {operand_slots.data(), operand_count}; }
  const Operand& operand(size_t i) const { return operand_slots[i]; }
  void push(const Operand& o) { operand_slots[operand_count++] = o; }
};

// `.check out = softmax(x)`: compare a tensor's final contents with a float64 reference of the inputs'
// initial contents.
struct Check {
  std::string function;             // matmul, softmax, attend
  int target = -1;                  // tensor index
  std::vector<int> args;            // tensor indices
  SourceLoc loc;
};

struct Program {
  std::string file;  // for diagnostics
  std::vector<TensorDecl> tensors;
  std::vector<Instruction> instructions;
  std::vector<Check> checks;

  int find_tensor(std::string_view name) const {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // Per-dimension indices of a memory operand (for printing).
  std::vector<int64_t> indices(const Operand& op) const {
    const auto& shape = tensors[op.tensor].shape;
    std::vector<int64_t> out(shape.size());
    int64_t rest = op.flat;
    for (size_t d = shape.size(); d-- > 0;) {
      out[d] = rest % shape[d];
      rest /= shape[d];
    }
    return out;
  }
  int add_tensor(TensorDecl decl) {
    tensors.push_back(std::move(decl));
    return static_cast<int>(tensors.size()) - 1;
  }
  void emit(Opcode op, std::initializer_list<Operand> operands) {
    Instruction inst;
    inst.op = op;
    for (const auto& o : operands) inst.push(o);
    instructions.push_back(inst);
  }
  // Highest register number used, or -1.
  int max_register() const;
};

}  // namespace attnsim::isa
