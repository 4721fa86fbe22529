// What a kernel's own code spends beside its tile instructions, where it differs from the machine's
// (`.kernel ... overhead(fixed=F, ldmatrix_address=A, copy_address=C, red_bytes=R)`, any of them). A
// machine's issue costs (issue.fixed_per_warp, address_per_ldmatrix, address_per_copy, red_bytes) describe
// the project's tensor-core kernels; a kernel compiled otherwise, such as FlashAttention-2's CuTe code, whose
// loops are unrolled at compile time and whose shared-memory offsets are folded into immediates, spends less.
#pragma once

namespace attnsim::isa {

struct CodeOverhead {
  // Each negative: the machine's.
  double fixed_per_warp = -1;        // instructions per warp and tile instruction
  double address_per_ldmatrix = -1;  // integer instructions per ldmatrix of a product's SRAM operand
  double address_per_copy = -1;      // integer and control instructions per copy instruction
  double red_bytes = -1;             // bytes one warp's red.global.add of a STORE_ADD carries (>= 1)
  bool any() const {
    return fixed_per_warp >= 0 || address_per_ldmatrix >= 0 || address_per_copy >= 0 || red_bytes >= 0;
  }
  bool operator==(const CodeOverhead&) const = default;
};

}  // namespace attnsim::isa
