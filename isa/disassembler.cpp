#include "isa/disassembler.h"

#include <fmt/format.h>

namespace attnsim::isa {

namespace {

std::string format_number(double v) {
  // Shortest text that reads back to the same double, so disassembly round-trips exactly.
  return fmt::format("{}", v);
}

// How many grid dimensions a kernel's lines print: trailing extents of 1 are left out (at least x).
size_t grid_dims(const KernelDecl& k) {
  size_t dims = 3;
  while (dims > 1 && k.grid[dims - 1] == 1) --dims;
  return dims;
}

// `(a, b, c)` of the first `dims` values.
std::string tuple_text(const std::array<int64_t, 3>& values, size_t dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims; ++i) out += fmt::format("{}{}", i ? ", " : "", values[i]);
  return out + ")";
}

// ` overhead(fixed=F, ...)` of the fields a kernel sets; "" when it sets none.
std::string overhead_text(const CodeOverhead& o) {
  std::string fields;
  auto add = [&](const char* key, double value) {
    if (value >= 0) fields += fmt::format("{}{}={}", fields.empty() ? "" : ", ", key, format_number(value));
  };
  add("fixed", o.fixed_per_warp);
  add("ldmatrix_address", o.address_per_ldmatrix);
  add("copy_address", o.address_per_copy);
  add("red_bytes", o.red_bytes);
  return fields.empty() ? "" : " overhead(" + fields + ")";
}

}  // namespace

std::string format_tile(const Program& program, const TileRef& t) {
  std::string out;
  if (t.is_buffer) {
    const BufferDecl& b = program.buffers[t.index];
    out = b.name;
    if (t.row0 != 0 || t.rows != b.rows || t.col0 != 0 || t.cols != b.cols)
      out += fmt::format("[{}:{}, {}:{}]", t.row0, t.row0 + t.rows, t.col0, t.col0 + t.cols);
  } else {
    const TensorDecl& d = program.tensors[t.index];
    out = d.name;
    const size_t rank = d.shape.size();
    // Leading fixed indices come back from the offset, one dimension at a time.
    int64_t plane = 1;
    for (size_t k = rank >= 2 ? rank - 2 : 0; k < rank; ++k) plane *= d.shape[k];
    int64_t lead = t.offset / plane;
    if (const int64_t group = d.heads_inner)  // offset (batch x n x H + h) x cols
      lead = t.offset / d.shape[2] / (d.shape[1] * group) * group + t.offset / d.shape[2] % group;
    std::vector<int64_t> leading(rank >= 2 ? rank - 2 : 0);
    for (size_t k = leading.size(); k-- > 0;) {
      leading[k] = lead % d.shape[k];
      lead /= d.shape[k];
    }
    out += "[";
    for (int64_t index : leading) out += fmt::format("{}, ", index);
    out += fmt::format("{}:{}", t.row0, t.row0 + t.rows);
    if (rank >= 2) out += fmt::format(", {}:{}", t.col0, t.col0 + t.cols);
    out += "]";
  }
  if (t.transpose) out += "^T";
  return out;
}

std::string format_operand(const Program& program, const Operand& operand) {
  if (operand.kind == Operand::Kind::Register) return fmt::format("R{}", operand.reg);
  if (operand.kind == Operand::Kind::Immediate) return fmt::format("{}", operand.flat);
  if (operand.kind == Operand::Kind::Tile) return format_tile(program, program.tiles[operand.tensor]);
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
      case TensorInit::Kind::Zeros:
        break;
      case TensorInit::Kind::Values: {
        out += " = {";
        for (size_t i = 0; i < t.init.values.size(); ++i)
          out += (i ? ", " : "") + format_number(t.init.values[i]);
        out += "}";
        break;
      }
      case TensorInit::Kind::Fill:
        out += fmt::format(" fill({})", format_number(t.init.lo));
        break;
      case TensorInit::Kind::Random:
        out += fmt::format(" random(seed={}, lo={}, hi={})", t.init.seed, format_number(t.init.lo),
                           format_number(t.init.hi));
        break;
    }
    if (t.coherent) out += " coherent";
    if (t.heads_inner == (t.shape.empty() ? 0 : t.shape[0]))
      out += " heads_inner";
    else if (t.heads_inner)
      out += fmt::format(" heads_inner({})", t.heads_inner);
    out += "\n";
  }
  for (const auto& b : program.buffers) {
    out += fmt::format(".buffer {}[{}][{}]", b.name, b.rows, b.cols);
    if (b.dtype) out += " " + std::string(dtype_name(*b.dtype));
    if (b.space == BufferDecl::Space::Regs) out += " regs";
    out += "\n";
  }
  for (const auto& k : program.kernels)
    out += ".kernel " + k.name + " grid" + tuple_text(k.grid, grid_dims(k)) +
           (k.rolled_k_loops ? " k_loops(rolled)" : "") +
           (k.warps > 0 ? fmt::format(" warps({}, {})", k.warps, k.warp_rows) : "") +
           (k.mma[0] > 0 ? fmt::format(" mma({}, {}, {})", k.mma[0], k.mma[1], k.mma[2]) : "") +
           (k.iterative_softmax ? " softmax(iterative)" : "") + (k.accurate_exp ? " exp(accurate)" : "") +
           overhead_text(k.overhead) + "\n";
  for (const auto& check : program.checks) {
    out += ".check " + program.tensors[check.target].name + " = " + check.function + "(";
    for (size_t i = 0; i < check.args.size(); ++i)
      out += (i ? ", " : "") + program.tensors[check.args[i]].name;
    out += ")\n";
  }
  // A block's line goes before its first instruction; empty blocks give several lines in a row.
  // A .group line goes where the group changes (each block starts in group 0).
  size_t next_block = 0;
  uint8_t group = 0;
  auto blocks_up_to = [&](size_t instruction) {
    for (; next_block < program.blocks.size() && program.blocks[next_block].instruction <= instruction;
         ++next_block) {
      const BlockStart& b = program.blocks[next_block];
      const KernelDecl& k = program.kernels[static_cast<size_t>(b.kernel)];
      out += ".block " + k.name + tuple_text(b.index, grid_dims(k)) + "\n";
      group = 0;
    }
  };
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    blocks_up_to(i);
    const Instruction& inst = program.instructions[i];
    if (inst.group != group) out += fmt::format(".group {}\n", inst.group);
    group = inst.group;
    out += format_instruction(program, inst) + "\n";
  }
  blocks_up_to(program.instructions.size());
  return out;
}

}  // namespace attnsim::isa
