#include "sim/timeline.h"

#include <nlohmann/json.hpp>

#include "isa/disassembler.h"
#include "sim/run.h"

namespace attnsim {

std::string unit_of(const isa::Program& program, const isa::Instruction& inst) {
  return unit_of(inst.op, program.has_tiles());
}

std::string unit_of(isa::Opcode op, bool tile) {
  switch (op) {
    case isa::Opcode::Load:
    case isa::Opcode::Store:
    case isa::Opcode::StoreAdd:
    case isa::Opcode::Lock:
    case isa::Opcode::Unlock:
    case isa::Opcode::Fence:
      return tile ? "dma" : "dram";
    case isa::Opcode::MacZ:
    case isa::Opcode::Mac:
      return tile ? "mxu" : "mac";
    default:
      return tile ? "vpu" : "alu";
  }
}

uint16_t TimelineRecorder::track_for(const std::string& unit, uint64_t start, uint64_t done) {
  // The first track of this unit that is free at `start`; a new one when all are busy (overlap).
  for (size_t t = 0; t < track_names_.size(); ++t) {
    if (track_names_[t].rfind(unit, 0) != 0 || track_free_[t] > start) continue;
    track_free_[t] = done;
    return static_cast<uint16_t>(t);
  }
  size_t same_unit = 0;
  for (const auto& name : track_names_) same_unit += name.rfind(unit, 0) == 0;
  track_names_.push_back(same_unit ? unit + " " + std::to_string(same_unit) : unit);
  track_free_.push_back(done);
  return static_cast<uint16_t>(track_names_.size() - 1);
}

void TimelineRecorder::after_step(size_t index, uint64_t start, uint64_t done) {
  if (slices_.size() >= limit_ || index >= program_.instructions.size()) {
    ++dropped_;
    return;
  }
  const std::string unit = unit_of(program_, program_.instructions[index]);
  slices_.push_back({static_cast<uint32_t>(index), track_for(unit, start, done), start, done});
}

std::string TimelineRecorder::json() const {
  nlohmann::json events = nlohmann::json::array();
  for (size_t t = 0; t < track_names_.size(); ++t)
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", t},
                      {"args", {{"name", track_names_[t]}}}});
  for (const auto& s : slices_) {
    const auto& inst = program_.instructions[s.instruction];
    events.push_back(
        {{"ph", "X"},
         {"name", std::string(isa::mnemonic(inst.op))},
         {"pid", 0},
         {"tid", s.track},
         {"ts", s.start},
         {"dur", s.done - s.start},
         {"args", {{"step", s.instruction + 1}, {"instruction", isa::format_instruction(program_, inst)}}}});
  }
  nlohmann::json doc = {{"traceEvents", events},
                        {"displayTimeUnit", "ns"},
                        {"otherData",
                         {{"time_unit", "1 us on the axis = 1 cycle"},
                          {"trace", program_.file},
                          {"instructions_not_shown", dropped_}}}};
  return json_text(doc) + "\n";
}

std::string TimelineRecorder::note(const std::string& path) const {
  if (!dropped_) return "";
  return path + ": --timeline stopped after " + std::to_string(slices_.size()) + " instructions (" +
         std::to_string(dropped_) + " more not shown; --timeline-limit N keeps more)";
}

}  // namespace attnsim
