#include "sim/vcd.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/regfile/regfile.h"
#include "sim/timeline.h"

namespace attnsim {

namespace {

// VCD identifier codes: printable ASCII, as short as possible; '$' and '#' are left out because they start
// keywords and timestamps, and a lenient reader could take a code for one.
std::string code_of(size_t index) {
  static const std::string alphabet = [] {
    std::string chars;
    for (char c = 33; c < 127; ++c)
      if (c != '$' && c != '#') chars += c;
    return chars;
  }();
  std::string code;
  do {
    code += alphabet[index % alphabet.size()];
    index /= alphabet.size();
  } while (index);
  return code;
}

std::string value_text(bool real, int bits, double value, const std::string& code) {
  if (real) return fmt::format("r{:.17g} {}\n", value, code);
  if (bits == 1) return fmt::format("{}{}\n", value != 0 ? 1 : 0, code);
  return fmt::format("b{:b} {}\n", static_cast<uint64_t>(value), code);
}

}  // namespace

VcdRecorder::VcdRecorder(const isa::Program& program, Options options)
    : program_(program), options_(std::move(options)) {
  const bool tiles = program.has_tiles();
  for (const char* unit : tiles ? std::vector<const char*>{"dma", "mxu", "vpu"}
                                : std::vector<const char*>{"dram", "mac", "alu"}) {
    signal(std::string("units.") + unit + "_busy", false);
    units_.push_back({unit, {}});
  }
  signal("units.step", false, 32);  // the instruction issuing, numbered as --table's Step
  if (tiles) {
    signal("hbm.reads", false, 32);
    signal("hbm.writes", false, 32);
    signal("sram.occupied_bytes", false, 32);
    buffer_written_.assign(program.buffers.size(), 0);
  } else {
    signal("dram.reads", false, 32);
    signal("dram.writes", false, 32);
    const int count = options_.registers ? options_.registers->count() : 0;
    for (int r = 0; r < count; ++r) signal(fmt::format("regs.R{}", r), true, 64);
  }
}

uint16_t VcdRecorder::signal(const std::string& name, bool real, int bits) {
  signals_.push_back({name, real, bits});
  return static_cast<uint16_t>(signals_.size() - 1);
}

void VcdRecorder::change(uint64_t time, uint16_t id, double value) {
  changes_.push_back({time, static_cast<uint32_t>(changes_.size()), id, value});
}

void VcdRecorder::busy(const std::string& unit, uint64_t issue, uint64_t done) {
  for (auto& [name, events] : units_)
    if (name == unit) {
      events.push_back({issue, +1});
      events.push_back({done, -1});
    }
}

void VcdRecorder::after_step(size_t index, uint64_t issue, uint64_t done) {
  if (recorded_ >= options_.limit || index >= program_.instructions.size()) {
    ++dropped_;
    return;
  }
  ++recorded_;
  end_ = std::max(end_, done);
  const isa::Instruction& inst = program_.instructions[index];
  busy(unit_of(program_, inst), issue, done);
  change(issue, 3, static_cast<double>(index + 1));
  if (program_.has_tiles())
    tile_step(inst, issue, done);
  else
    scalar_step(inst, issue, done);
}

// Signal ids follow the constructor: 0-2 busy, 3 step, 4 reads, 5 writes, then R0... or SRAM bytes.
void VcdRecorder::scalar_step(const isa::Instruction& inst, uint64_t, uint64_t done) {
  if (inst.op == isa::Opcode::Load) change(done, 4, static_cast<double>(++reads_));
  if (inst.op == isa::Opcode::Store) {
    change(done, 5, static_cast<double>(++writes_));
    return;
  }
  const int dst = inst.operand(inst.operand_count - 1).reg;
  if (options_.registers && dst >= 0)
    change(done, static_cast<uint16_t>(6 + dst), options_.registers->values[static_cast<size_t>(dst)]);
}

void VcdRecorder::tile_step(const isa::Instruction& inst, uint64_t, uint64_t done) {
  if (inst.op == isa::Opcode::Load || inst.op == isa::Opcode::StoreAdd)
    change(done, 4, static_cast<double>(++reads_));
  if (inst.op == isa::Opcode::Store || inst.op == isa::Opcode::StoreAdd)
    change(done, 5, static_cast<double>(++writes_));
  const isa::Operand& dst = inst.operand(inst.operand_count - 1);
  if (dst.kind != isa::Operand::Kind::Tile) return;
  const isa::TileRef& tile = program_.tiles[static_cast<size_t>(dst.tensor)];
  if (!tile.is_buffer || buffer_written_[static_cast<size_t>(tile.index)]) return;
  buffer_written_[static_cast<size_t>(tile.index)] = 1;
  const size_t b = static_cast<size_t>(tile.index);
  sram_ += b < options_.sram_bytes.size() ? options_.sram_bytes[b] : 0;
  change(done, 6, static_cast<double>(sram_));
}

// Busy wires from the issue/done events: a unit is busy while any of its instructions is in flight, so two
// back-to-back instructions (one done at t, the next issued at t) draw one unbroken pulse.
std::vector<VcdRecorder::Change> VcdRecorder::busy_changes() const {
  std::vector<Change> out;
  for (size_t u = 0; u < units_.size(); ++u) {
    std::vector<Busy> events = units_[u].second;
    std::stable_sort(events.begin(), events.end(),
                     [](const Busy& a, const Busy& b) { return a.time < b.time; });
    int in_flight = 0;
    bool shown = false;
    for (size_t i = 0; i < events.size();) {
      const uint64_t t = events[i].time;
      for (; i < events.size() && events[i].time == t; ++i) in_flight += events[i].delta;
      if ((in_flight > 0) != shown) {
        shown = in_flight > 0;
        out.push_back({t, 0, static_cast<uint16_t>(u), shown ? 1.0 : 0.0});
      }
    }
  }
  return out;
}

std::string VcdRecorder::header() const {
  std::string text = fmt::format(
      "$version attnsim {} $end\n$comment trace {}; the time axis counts cycles (1 ns = 1 cycle){} $end\n"
      "$timescale 1ns $end\n$scope module attnsim $end\n",
      ATTNSIM_VERSION, program_.file,
      dropped_ ? fmt::format("; only the first {} instructions are drawn", recorded_) : "");
  std::string scope;
  for (size_t s = 0; s < signals_.size(); ++s) {
    const Signal& sig = signals_[s];
    const std::string group = sig.name.substr(0, sig.name.find('.'));
    if (group != scope) {
      text += (scope.empty() ? "" : "$upscope $end\n") + fmt::format("$scope module {} $end\n", group);
      scope = group;
    }
    text += fmt::format("$var {} {} {} {} $end\n", sig.real ? "real" : (sig.bits == 1 ? "wire" : "integer"),
                        sig.bits, code_of(s), sig.name.substr(group.size() + 1));
  }
  text += "$upscope $end\n$upscope $end\n$enddefinitions $end\n#0\n$dumpvars\n";
  for (size_t s = 0; s < signals_.size(); ++s)
    if (!signals_[s].real) text += value_text(false, signals_[s].bits, 0, code_of(s));
  return text + "$end\n";
}

std::string VcdRecorder::text() const {
  std::vector<Change> all = busy_changes();
  all.insert(all.end(), changes_.begin(), changes_.end());
  std::stable_sort(all.begin(), all.end(), [](const Change& a, const Change& b) { return a.time < b.time; });
  std::string text = header();
  uint64_t now = 0;
  for (const Change& c : all) {
    if (c.time != now) text += fmt::format("#{}\n", now = c.time);
    const Signal& sig = signals_[c.signal];
    text += value_text(sig.real, sig.bits, c.value, code_of(c.signal));
  }
  if (end_ != now) text += fmt::format("#{}\n", end_);
  return text;
}

}  // namespace attnsim
