// Program -> trace text in canonical form; assemble(disassemble(p)) == p (tested).
#pragma once

#include <string>

#include "isa/program.h"

namespace attnsim::isa {

std::string disassemble(const Program& program);
std::string format_instruction(const Program& program, const Instruction& instruction);
std::string format_operand(const Program& program, const Operand& operand);
std::string format_tile(const Program& program, const TileRef& tile);

}  // namespace attnsim::isa
