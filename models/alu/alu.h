// The ALU of the softmax machine: MAX, SUB, EXP, ADD, MUL, DIV, MOV, each with its own latency so a lab can
// make exp dearer than add.
#pragma once

#include <array>
#include <cmath>

#include "isa/opcode.h"
#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/symbolic.h"

namespace attnsim {

class Alu : public Component {
 public:
  struct Params {
    // cycles per instruction, indexed by opcode; only ALU opcodes are used
    std::array<int64_t, isa::kOpcodeCount> latency{};
  };
  Alu(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }
  static bool handles(isa::Opcode op);

  uint64_t ops = 0;
  uint64_t busy_cycles = 0;

 private:
  Params params_;
};

void register_alu_models();

}  // namespace attnsim
