#include "models/sequencer/sequencer.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "isa/disassembler.h"
#include "models/common/checked.h"

namespace attnsim {

namespace {
enum Unit : uint8_t { kDramPort = 0, kMacUnit = 1, kAluUnit = 2, kUnitCount = 3 };
}

Sequencer::Sequencer(sc_core::sc_module_name instance, const Params& params, const SequencerUnits& units)
    : Component(instance),
      params_(params),
      units_(units),
      dram_(units.dram),
      regfile_(units.regfile),
      mac_(units.mac),
      alu_(units.alu) {
  SC_THREAD(run_thread);
  stats_.add(&cycles_, "cycles", "cycles", "cycles from the first issue to the last completion");
  stats_.add(&instructions_, "instructions", "instructions", "instructions executed");
  stats_.add(&stall_cycles_, "stall_cycles", "cycles",
             "issue slots lost to operand or unit hazards (pipelined issue only)");
  stats_.add(&kernel_syncs_, "kernel_syncs", "waits",
             "times the sequencer synchronised with the SystemC kernel");
  stats_.add_formula(
      [this] {
        nlohmann::json out = nlohmann::json::object();
        for (int i = 0; i < isa::kOpcodeCount; ++i)
          if (per_opcode_[i]) out[std::string(isa::kOpcodes[i].mnemonic)] = per_opcode_[i];
        return out;
      },
      "per_opcode", "instructions", "instructions executed by opcode");
  stats_.add_formula([this] { return cycles_ ? double(instructions_) / double(cycles_) : 0.0; }, "ipc",
                     "instructions/cycle", "instructions per cycle");
}

void register_sequencer_params(ParamReader& p, Sequencer::Params& params) {
  p.choice("type", "in_order", {"in_order"}, "sequencer implementation");
  std::string issue =
      p.choice("issue", "blocking", {"blocking", "pipelined"},
               "blocking: next instruction starts when the previous completes; pipelined: one "
               "issue per cycle with a register scoreboard");
  params.issue = issue == "blocking" ? Sequencer::Issue::Blocking : Sequencer::Issue::Pipelined;
  params.quantum_cycles =
      p.get<int64_t>("quantum_cycles", 1'000'000, "cycles",
                     "local time the sequencer may run ahead of the SystemC kernel", 1, 1e15);
}

void Sequencer::load(const isa::Program& program, Dtype dtype, bool symbolic, bool timing_only) {
  program_ = &program;
  dtype_ = dtype;
  symbolic_ = symbolic;
  period_ = sc_core::sc_time(1.0 / params_.clock_ghz, sc_core::SC_NS);
  quantum_ = static_cast<uint64_t>(params_.quantum_cycles);
  aliases_.clear();
  tile_mode_ = program.has_tiles() || !program.buffers.empty();
  if (tile_mode_) {
    if (symbolic)
      throw InputError(program.file, {}, "--symbolic is for scalar traces; tile programs carry numbers");
    load_tiles(program, timing_only);
    return;
  }
  if (!dram_ || !regfile_ || !mac_ || !alu_)
    throw InputError(
        program.file, {},
        "this is a scalar trace but the machine has no scalar units (dram, regfile, mac, alu); run it "
        "on a toy config");
  dram_->allocate(program, dtype, symbolic);
  regfile_->reset(symbolic);
  code_.clear();
  // An in-memory trace is decoded (and so validated) before it runs; a streamed one chunk by chunk.
  if (!program.stream) decode_scalar(program.instructions, code_);
}

void Sequencer::decode_scalar(std::span<const isa::Instruction> instructions,
                              std::vector<Decoded>& out) const {
  const isa::Program& program = *program_;
  const int registers = regfile_->count();
  out.clear();
  out.reserve(instructions.size());
  for (const auto& inst : instructions) {
    if (inst.group != 0)
      throw InputError(program.file, inst.loc,
                       ".group is for tile programs (thread blocks of buffers); a scalar trace runs in one "
                       "stream");
    for (const auto& operand : inst.operands()) {
      if (operand.kind == isa::Operand::Kind::Register && operand.reg >= registers)
        throw InputError(program.file, operand.loc(),
                         "R" + std::to_string(operand.reg) + " is beyond this machine's " +
                             std::to_string(registers) + " registers (R0..R" + std::to_string(registers - 1) +
                             "); use a config with more (regfile.count)");
    }
    Decoded d{};
    d.op = inst.op;
    d.dst = -1;
    d.src = {-1, -1, -1};
    d.tensor = -1;
    const auto ops = inst.operands();
    switch (inst.op) {
      case isa::Opcode::Load:
        d.tensor = ops[0].tensor;
        d.address = dram_->base(d.tensor) + ops[0].flat;
        d.dst = ops[1].reg;
        d.unit = kDramPort;
        d.latency = static_cast<uint32_t>(dram_->params().load_latency);
        break;
      case isa::Opcode::Store:
        d.src[0] = ops[0].reg;
        d.source_count = 1;
        d.tensor = ops[1].tensor;
        d.address = dram_->base(d.tensor) + ops[1].flat;
        d.round_on_store = dram_->dtype(d.tensor) != dtype_;
        d.unit = kDramPort;
        d.latency = static_cast<uint32_t>(dram_->params().store_latency);
        break;
      case isa::Opcode::MacZ:
      case isa::Opcode::Mac:
        d.source_count = static_cast<uint8_t>(ops.size() - 1);
        for (size_t i = 0; i + 1 < ops.size(); ++i) d.src[i] = ops[i].reg;
        d.dst = ops.back().reg;
        d.unit = kMacUnit;
        d.latency = static_cast<uint32_t>(mac_->params().latency);
        break;
      default:
        d.source_count = static_cast<uint8_t>(ops.size() - 1);
        for (size_t i = 0; i + 1 < ops.size(); ++i) d.src[i] = ops[i].reg;
        d.dst = ops.back().reg;
        d.unit = kAluUnit;
        d.latency = static_cast<uint32_t>(alu_->params().latency[static_cast<size_t>(inst.op)]);
        break;
    }
    out.push_back(d);
  }
}

void Sequencer::uninitialized_read(const isa::Instruction& inst, int source) const {
  const auto& operand = inst.operand(static_cast<size_t>(source));
  throw InputError(program_->file, operand.loc(),
                   "R" + std::to_string(operand.reg) + " is read by '" +
                       isa::format_instruction(*program_, inst) +
                       "' before anything was written to it (set regfile.allow_uninitialized_read: true to "
                       "read 0)");
}

// Cycles become SystemC time units (1 ps) with integer arithmetic: `double * sc_time` rounds above 2^53
// units and wraps past 2^64 - 1 (SystemC's horizon), which once printed 18,445,810,794,497 cycles with exit 0
// for a run of 21,474,836,480,001.
sc_core::sc_time Sequencer::time_of_cycle(uint64_t cycle) const {
  const uint64_t period_ps = period_.value();
  const uint64_t start = run_start_.value();
  const auto offset = try_mul(cycle, period_ps);
  const auto target = offset ? try_add(start, *offset) : std::nullopt;
  if (!target || *target > sc_core::sc_max_time().value()) {
    const uint64_t horizon = (sc_core::sc_max_time().value() - start) / period_ps;
    throw InputError(program_->file, {},
                     fmt::format("the run reaches cycle {}, past SystemC's time horizon of {} cycles ({} "
                                 "at a clock period of {}); lower the latencies or raise clock_ghz",
                                 cycle, horizon, sc_core::sc_max_time().to_string(), period_.to_string()));
  }
  return sc_core::sc_time::from_value(*target);
}

uint64_t Sequencer::cycles_since_start() const {
  const uint64_t elapsed = (sc_core::sc_time_stamp() - run_start_).value();
  const uint64_t period_ps = period_.value();
  // Rounded to the nearest cycle without forming elapsed + period / 2, which could wrap near the horizon.
  return elapsed / period_ps + (2 * (elapsed % period_ps) >= period_ps ? 1 : 0);
}

void Sequencer::sync(uint64_t now) {
  // Only this thread advances the run's time, so the target is never behind the kernel; the guard keeps
  // an unsigned sc_time difference from wrapping if that ever changes.
  const sc_core::sc_time target = time_of_cycle(now);
  const sc_core::sc_time stamp = sc_core::sc_time_stamp();
  wait(target > stamp ? target - stamp : sc_core::SC_ZERO_TIME);
  synced_cycle_ = now;
  ++kernel_syncs_;
}

void Sequencer::run_thread() {
  for (;;) {
    if (!start_pending_) wait(start_event_);
    start_pending_ = false;
    error_ = nullptr;
    run_start_ = sc_core::sc_time_stamp();
    synced_cycle_ = 0;
    kernel_syncs_ = 0;
    try {
      execute();
    } catch (...) {
      error_ = std::current_exception();
    }
  }
}

bool Sequencer::next_scalar_window(ScalarWindow& window, isa::Chunk& chunk) {
  const bool started = window.first != kNoWindow;
  if (!program_->stream) {  // one window: the whole program, decoded at load
    if (started) return false;
    window = {code_, program_->instructions, 0};
    return true;
  }
  const size_t first = started ? window.first + window.code.size() : 0;
  if (started) program_->stream->recycle(std::move(chunk));
  chunk = isa::Chunk{};
  if (!program_->stream->next(chunk)) return false;
  decode_scalar(chunk.instructions, code_);
  window = {code_, chunk.instructions, first};
  return true;
}

void Sequencer::execute() {
  const bool blocking = params_.issue == Issue::Blocking;
  if (tile_mode_) {
    execute_tiles();
    return;
  }
  if (symbolic_) {
    blocking ? execute_symbolic<Issue::Blocking>() : execute_symbolic<Issue::Pipelined>();
    return;
  }
  auto run = [&]<Dtype D>() {
    blocking ? execute_numeric<D, Issue::Blocking>() : execute_numeric<D, Issue::Pipelined>();
  };
  switch (dtype_) {
    case Dtype::F16:
      run.template operator()<Dtype::F16>();
      break;
    case Dtype::BF16:
      run.template operator()<Dtype::BF16>();
      break;
    case Dtype::F32:
      run.template operator()<Dtype::F32>();
      break;
    case Dtype::F64:
      run.template operator()<Dtype::F64>();
      break;
  }
}

// Issue timing shared by the numeric and symbolic loops. Blocking: one instruction at a time. Pipelined:
// in-order, one issue per cycle, operands read at issue, results ready `latency` cycles later; units accept
// one instruction per cycle.
template <Sequencer::Issue kIssue>
struct IssueClock {
  uint64_t next_issue = 0;
  uint64_t end = 0;
  uint64_t stalls = 0;
  std::vector<uint64_t> ready;  // per register: cycle its pending value is available
  std::array<uint64_t, kUnitCount> unit_free{};

  explicit IssueClock(size_t registers) : ready(kIssue == Sequencer::Issue::Pipelined ? registers : 0, 0) {}

  template <class D>
  uint64_t issue(const D& d) {
    if constexpr (kIssue == Sequencer::Issue::Blocking) {
      uint64_t at = next_issue;
      next_issue += d.latency;
      end = next_issue;
      return at;
    } else {
      uint64_t at = std::max(next_issue, unit_free[d.unit]);
      for (int i = 0; i < d.source_count; ++i) at = std::max(at, ready[d.src[i]]);
      if (d.dst >= 0) at = std::max(at, ready[d.dst]);  // keep writes to one register in order
      stalls += at - next_issue;
      uint64_t done = at + d.latency;
      if (d.dst >= 0) ready[d.dst] = done;
      unit_free[d.unit] = at + 1;
      next_issue = at + 1;
      end = std::max(end, done);
      return at;
    }
  }
  uint64_t done_of(uint64_t issued, uint32_t latency) const { return issued + latency; }
};

template <Dtype D, Sequencer::Issue kIssue>
void Sequencer::execute_numeric() {
  double* regs = regfile_->values.data();
  const uint8_t* written = regfile_->written.data();
  uint8_t* written_mut = regfile_->written.data();
  double* mem = dram_->words.data();
  uint64_t* tensor_reads = dram_->reads_per_tensor.data();
  uint64_t* tensor_writes = dram_->writes_per_tensor.data();
  IssueClock<kIssue> clock(regfile_->values.size());
  std::array<uint64_t, isa::kOpcodeCount> counts{};

  ScalarWindow w;
  isa::Chunk chunk;
  while (next_scalar_window(w, chunk)) {
    for (size_t c = 0; c < w.code.size(); ++c) {
      const size_t i = w.first + c;
      const Decoded& d = w.code[c];
      for (int s = 0; s < d.source_count; ++s)
        if (!written[d.src[s]]) [[unlikely]]
          uninitialized_read(w.instructions[c], s);
      const uint64_t issued = clock.issue(d);
      ++counts[static_cast<size_t>(d.op)];
      const double a = d.src[0] >= 0 ? regs[d.src[0]] : 0.0;
      double result = 0.0;  // every opcode sets it; initialised for the compiler
      switch (d.op) {
        case isa::Opcode::Load:
          ++tensor_reads[d.tensor];
          result = mem[d.address];
          break;
        case isa::Opcode::Store:
          ++tensor_writes[d.tensor];
          mem[d.address] = d.round_on_store ? round_to(dram_->dtype(d.tensor), a) : a;
          goto next;
        case isa::Opcode::MacZ:
          result = MacUnit::mac_z(a, regs[d.src[1]]);
          break;
        case isa::Opcode::Mac:
          result = MacUnit::mac(a, regs[d.src[1]], regs[d.src[2]]);
          break;
        case isa::Opcode::Max:
          result = std::max(a, regs[d.src[1]]);
          break;
        case isa::Opcode::Sub:
          result = a - regs[d.src[1]];
          break;
        case isa::Opcode::Exp:
          result = std::exp(a);
          break;
        case isa::Opcode::Add:
          result = a + regs[d.src[1]];
          break;
        case isa::Opcode::Mul:
          result = a * regs[d.src[1]];
          break;
        case isa::Opcode::Div:
          result = a / regs[d.src[1]];
          break;
        case isa::Opcode::Mov:
          result = a;
          break;
        case isa::Opcode::RowMax:
        case isa::Opcode::RowSum:
        case isa::Opcode::Mask:
        case isa::Opcode::StoreAdd:
        case isa::Opcode::Lock:
        case isa::Opcode::Unlock:
        case isa::Opcode::Fence:
          throw std::logic_error("tile-only opcode on the scalar path");  // the decoder rejects them
      }
      regs[d.dst] = round_to<D>(result);
      written_mut[d.dst] = 1;
    next:
      if (observer_) [[unlikely]]
        observer_->after_step(i, issued, clock.done_of(issued, d.latency));
      keep_quantum(issued, i + 1);
    }
  }
  per_opcode_ = counts;
  stall_cycles_ = clock.stalls;
  finish(clock.end);
}

// Symbolic mode carries an expression and a number per register and word, so a run that prints
// a00·b00 in its table still computes (and checks) the values.
template <Sequencer::Issue kIssue>
void Sequencer::execute_symbolic() {
  auto& regs = regfile_->symbols;
  auto& values = regfile_->values;
  auto& written = regfile_->written;
  auto& mem = dram_->symbols_;
  auto& words = dram_->words;
  IssueClock<kIssue> clock(regs.size());
  std::array<uint64_t, isa::kOpcodeCount> counts{};
  ScalarWindow w;
  isa::Chunk chunk;
  while (next_scalar_window(w, chunk)) {
    for (size_t c = 0; c < w.code.size(); ++c) {
      const size_t i = w.first + c;
      const Decoded& d = w.code[c];
      for (int s = 0; s < d.source_count; ++s)
        if (!written[d.src[s]]) uninitialized_read(w.instructions[c], s);
      const uint64_t issued = clock.issue(d);
      ++counts[static_cast<size_t>(d.op)];
      symbolic::Expr a = d.src[0] >= 0 ? regs[d.src[0]] : nullptr;
      const double x = d.src[0] >= 0 ? values[d.src[0]] : 0.0;
      const double y = d.src[1] >= 0 ? values[d.src[1]] : 0.0;
      symbolic::Expr result;
      double number = 0;
      switch (d.op) {
        case isa::Opcode::Load:
          ++dram_->reads_per_tensor[d.tensor];
          result = mem[d.address];
          number = words[d.address];
          break;
        case isa::Opcode::Store: {
          ++dram_->writes_per_tensor[d.tensor];
          mem[d.address] = a;
          words[d.address] = d.round_on_store ? round_to(dram_->dtype(d.tensor), x) : x;
          // The stored node is printed by its memory name from now on (and in earlier table rows), as the
          // seed's tables print c00 for a00·b00 + a01·b10.
          const auto& target = w.instructions[c].operand(1);
          aliases_.emplace(a.get(), symbolic::element_name(program_->tensors[target.tensor].name,
                                                           program_->indices(target)));
          break;
        }
        case isa::Opcode::MacZ:
          result = MacUnit::mac_z(a, regs[d.src[1]]);
          number = MacUnit::mac_z(x, y);
          break;
        case isa::Opcode::Mac:
          result = MacUnit::mac(a, regs[d.src[1]], regs[d.src[2]]);
          number = MacUnit::mac(x, y, values[d.src[2]]);
          break;
        case isa::Opcode::Max:
          result = symbolic::max(a, regs[d.src[1]]);
          number = std::max(x, y);
          break;
        case isa::Opcode::Sub:
          result = symbolic::sub(a, regs[d.src[1]]);
          number = x - y;
          break;
        case isa::Opcode::Exp:
          result = symbolic::exp(a);
          number = std::exp(x);
          break;
        case isa::Opcode::Add:
          result = symbolic::add(a, regs[d.src[1]]);
          number = x + y;
          break;
        case isa::Opcode::Mul:
          result = symbolic::mul(a, regs[d.src[1]]);
          number = x * y;
          break;
        case isa::Opcode::Div:
          result = symbolic::div(a, regs[d.src[1]]);
          number = x / y;
          break;
        case isa::Opcode::Mov:
          result = a;
          number = x;
          break;
        case isa::Opcode::RowMax:
        case isa::Opcode::RowSum:
        case isa::Opcode::Mask:
        case isa::Opcode::StoreAdd:
        case isa::Opcode::Lock:
        case isa::Opcode::Unlock:
        case isa::Opcode::Fence:
          throw std::logic_error("tile-only opcode on the scalar path");  // the decoder rejects them
      }
      if (d.dst >= 0) {
        regs[d.dst] = result;
        values[d.dst] = round_to(dtype_, number);
        written[d.dst] = 1;
      }
      if (observer_) observer_->after_step(i, issued, clock.done_of(issued, d.latency));
      keep_quantum(issued, i + 1);
    }
  }
  per_opcode_ = counts;
  stall_cycles_ = clock.stalls;
  finish(clock.end);
}

void Sequencer::finish(uint64_t end_cycle) {
  sync(end_cycle);
  cycles_ = cycles_since_start();
  instructions_ = 0;
  uint64_t reg_reads = 0;
  uint64_t reg_writes = 0;
  for (size_t op = 0; op < per_opcode_.size(); ++op) {
    const uint64_t count = per_opcode_[op];
    instructions_ += count;
    const auto& spec = isa::kOpcodes[op];
    uint64_t sources = 0;
    for (int k = 0; k < spec.operand_count - 1; ++k) sources += spec.roles[k] == isa::OperandRole::Reg;
    if (spec.op == isa::Opcode::Store) sources = 1;
    reg_reads += count * sources;
    reg_writes += spec.op == isa::Opcode::Store ? 0 : count;
  }
  // Unit counters derive from the opcode counts rather than being bumped in the hot loop.
  const auto count = [&](isa::Opcode op) { return per_opcode_[static_cast<size_t>(op)]; };
  regfile_->reads = reg_reads;
  regfile_->writes = reg_writes;
  dram_->reads = count(isa::Opcode::Load);
  dram_->writes = count(isa::Opcode::Store);
  mac_->ops = count(isa::Opcode::MacZ) + count(isa::Opcode::Mac);
  mac_->busy_cycles = mac_->ops * static_cast<uint64_t>(mac_->params().latency);
  alu_->ops = 0;
  alu_->busy_cycles = 0;
  for (size_t op = 0; op < per_opcode_.size(); ++op) {
    if (!Alu::handles(static_cast<isa::Opcode>(op))) continue;
    alu_->ops += per_opcode_[op];
    alu_->busy_cycles += per_opcode_[op] * static_cast<uint64_t>(alu_->params().latency[op]);
  }
}

}  // namespace attnsim
