#include "models/alu/alu.h"

#include <cctype>

#include "models/common/registry.h"

namespace attnsim {

namespace {
constexpr std::array kAluOps = {isa::Opcode::Max, isa::Opcode::Sub, isa::Opcode::Exp, isa::Opcode::Add,
                                isa::Opcode::Mul, isa::Opcode::Div, isa::Opcode::Mov};
}

bool Alu::handles(isa::Opcode op) {
  for (auto o : kAluOps)
    if (o == op) return true;
  return false;
}

Alu::Alu(sc_core::sc_module_name instance, const Params& params) : Component(instance), params_(params) {
  stats_.add(&ops, "ops", "instructions", "ALU instructions executed");
  stats_.add(&busy_cycles, "busy_cycles", "cycles", "cycles the unit was occupied");
}

void register_alu_models() {
  Registry<Alu>::instance().add("alu", "scalar ALU (MAX SUB EXP ADD MUL DIV MOV)",
                                [](const char* instance, ParamReader& p, const BuildContext&) {
                                  Alu::Params params;
                                  for (auto op : kAluOps) {
                                    std::string key(isa::mnemonic(op));
                                    for (char& ch : key)
                                      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                                    params.latency[static_cast<size_t>(op)] = p.get<int64_t>(
                                        key + "_latency", 1, "cycles",
                                        "cycles per " + std::string(isa::mnemonic(op)), 1, kMaxLatency);
                                  }
                                  return std::make_unique<Alu>(instance, params);
                                });
}

}  // namespace attnsim
