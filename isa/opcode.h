// The one ISA of attnsim. Scalars are 1x1 tiles: the same opcodes run on registers (the toy machine) and,
// with tile operands, on SRAM buffers. Operand order follows seed 002: sources first, destination last.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attnsim::isa {

enum class Opcode : uint8_t {
  Load,
  Store,
  MacZ,
  Mac,
  Max,
  Sub,
  Exp,
  Add,
  Mul,
  Div,
  Mov,
  RowMax,
  RowSum,
  Mask,
  StoreAdd,
  Lock,
  Unlock,
  Fence
};
inline constexpr int kOpcodeCount = 18;

// What each operand position must be in the scalar form (tile-only opcodes have no scalar form).
enum class OperandRole : uint8_t { Reg, Mem, None };

struct OpcodeInfo {
  Opcode op;
  std::string_view mnemonic;
  std::string_view semantics;  // one line, for --help and errors
  uint8_t operand_count;
  std::array<OperandRole, 4> roles;
  bool tile_only = false;
  std::string_view tile_semantics = {};  // the tile form, when it differs
};

inline constexpr std::array<OpcodeInfo, kOpcodeCount> kOpcodes = {{
    {Opcode::Load, "LOAD", "LOAD src, Rd: Rd = DRAM[src]", 2, {OperandRole::Mem, OperandRole::Reg}},
    {Opcode::Store, "STORE", "STORE Rs, dst: DRAM[dst] = Rs", 2, {OperandRole::Reg, OperandRole::Mem}},
    {Opcode::MacZ,
     "MAC_Z",
     "MAC_Z Ra, Rb, Rd: Rd = Ra * Rb",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Mac,
     "MAC",
     "MAC Ra, Rb, Rc, Rd: Rd = Ra * Rb + Rc",
     4,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Max,
     "MAX",
     "MAX Ra, Rb, Rd: Rd = max(Ra, Rb)",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Sub,
     "SUB",
     "SUB Ra, Rb, Rd: Rd = Ra - Rb",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Exp, "EXP", "EXP Ra, Rd: Rd = exp(Ra)", 2, {OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Add,
     "ADD",
     "ADD Ra, Rb, Rd: Rd = Ra + Rb",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Mul,
     "MUL",
     "MUL Ra, Rb, Rd: Rd = Ra * Rb",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Div,
     "DIV",
     "DIV Ra, Rb, Rd: Rd = Ra / Rb",
     3,
     {OperandRole::Reg, OperandRole::Reg, OperandRole::Reg}},
    {Opcode::Mov, "MOV", "MOV Rs, Rd: Rd = Rs", 2, {OperandRole::Reg, OperandRole::Reg}},
    {Opcode::RowMax,
     "ROWMAX",
     "ROWMAX A, d: d[i] = max_j A[i][j] (d is rows x 1)",
     2,
     {OperandRole::None, OperandRole::None},
     true},
    {Opcode::RowSum,
     "ROWSUM",
     "ROWSUM A, d: d[i] = sum_j A[i][j] (d is rows x 1)",
     2,
     {OperandRole::None, OperandRole::None},
     true},
    {Opcode::Mask,
     "MASK",
     "MASK S, q0, k0: S[i][j] = -inf where k0 + j > q0 + i (causal mask of a tile)",
     3,
     {OperandRole::None, OperandRole::None, OperandRole::None},
     true},
    // An atomic add into memory (CUDA's red.global.add): the whole tile is updated when the instruction
    // executes, so thread blocks adding into one tensor at once lose no update. Moves the tile's bytes
    // both ways, as LOAD + STORE would.
    {Opcode::StoreAdd,
     "STORE_ADD",
     "STORE_ADD s, dst: dst = dst + s in memory, atomically (dst rounded to its dtype; reads and writes the "
     "tile)",
     2,
     {OperandRole::None, OperandRole::None},
     true},
    // A spin lock in memory (the memory-efficient backward's lock per dQ tile): LOCK takes it by atomic
    // compare-and-swap at the word's L2 home, trying again every round trip plus `backoff` cycles (the
    // kernel's __nanosleep) while another thread block holds it; UNLOCK releases it by a store. The tile's
    // first element names the lock; its bytes are what each attempt moves. Values are left as they are.
    {Opcode::Lock,
     "LOCK",
     "LOCK m, backoff: wait until the lock at m is free and take it (atomic compare-and-swap, tried again "
     "every round trip + backoff cycles)",
     2,
     {OperandRole::None, OperandRole::None},
     true},
    {Opcode::Unlock, "UNLOCK", "UNLOCK m: release the lock at m (a store)", 1, {OperandRole::None}, true},
    // CUDA's __threadfence: the block's later instructions wait until its earlier ones are done (its stores
    // have reached memory) and the barrier's own round trip is over.
    {Opcode::Fence,
     "FENCE",
     "FENCE: wait until this block's earlier instructions are done (its stores reached memory), then a "
     "memory barrier's round trip",
     0,
     {},
     true},
}};

constexpr const OpcodeInfo& info(Opcode op) {
  return kOpcodes[static_cast<size_t>(op)];
}
constexpr std::string_view mnemonic(Opcode op) {
  return info(op).mnemonic;
}

// Case-insensitive lookup, so `load` and `LOAD` both assemble.
std::optional<Opcode> find_opcode(std::string_view text);

}  // namespace attnsim::isa
