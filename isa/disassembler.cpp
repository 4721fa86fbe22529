#include "isa/disassembler.h"

#include <fmt/format.h>

namespace attnsim::isa {

namespace {

std::string format_number(double v) {
  // Shortest text that reads back to the same double, so disassembly round-trips exactly.
  return fmt::format("{}", v);
}

}  // namespace

std::string format_operand(const Program& program, const Operand& operand) {
  if (operand.kind == Operand::Kind::Register) return fmt::format("R{}", operand.reg);
  std::string out = program.tensors[operand.tensor].name;
  for (int64_t index : program.indices(operand)) out += fmt::format("[{}]", index);
  return out;
}

std::string format_instruction(const Program& program, const Instruction& instruction) {
  std::string out(mnemonic(instruction.op));
  for (size_t i = 0; i < instruction.operand_count; ++i)
    out += (i == 0 ? " " : ", ") + format_operand(program, instruction.operand(i));
  return out;
}

std::string disassemble(const Program& program) {
  std::string out;
  for (const auto& t : program.tensors) {
    out += ".tensor " + t.name;
    for (int64_t extent : t.shape) out += fmt::format("[{}]", extent);
    if (t.dtype) out += " " + std::string(dtype_name(*t.dtype));
    switch (t.init.kind) {
      case TensorInit::Kind::Zeros: break;
      case TensorInit::Kind::Values: {
        out += " = {";
        for (size_t i = 0; i < t.init.values.size(); ++i)
          out += (i ? ", " : "") + format_number(t.init.values[i]);
        out += "}";
        break;
      }
      case TensorInit::Kind::Random:
        out += fmt::format(" random(seed={}, lo={}, hi={})", t.init.seed, format_number(t.init.lo),
                           format_number(t.init.hi));
        break;
    }
    out += "\n";
  }
  for (const auto& check : program.checks) {
    out += ".check " + program.tensors[check.target].name + " = " + check.function + "(";
    for (size_t i = 0; i < check.args.size(); ++i) out += (i ? ", " : "") + program.tensors[check.args[i]].name;
    out += ")\n";
  }
  for (const auto& inst : program.instructions) out += format_instruction(program, inst) + "\n";
  return out;
}

}  // namespace attnsim::isa
