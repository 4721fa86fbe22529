#include "sim/chip_timeline.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "isa/opcode.h"
#include "sim/run.h"
#include "sim/timeline.h"

namespace attnsim {

namespace {

int64_t core_number(const std::string& text, const std::string& item, int64_t cores) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < 0)
    throw std::invalid_argument(fmt::format("'{}' is not a core number or a range A-B", item));
  if (value >= cores)
    throw std::invalid_argument(
        fmt::format("core {} does not exist: the chip has cores 0 to {}", value, cores - 1));
  return value;
}

}  // namespace

std::vector<bool> parse_timeline_cores(const std::string& text, int64_t cores) {
  if (text == "all") return std::vector<bool>(static_cast<size_t>(cores), true);
  std::vector<bool> shown(static_cast<size_t>(cores), false);
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    const size_t dash = item.find('-');
    const int64_t first = core_number(item.substr(0, dash), item, cores);
    const int64_t last = dash == std::string::npos ? first : core_number(item.substr(dash + 1), item, cores);
    if (last < first) throw std::invalid_argument(fmt::format("range '{}' runs backwards", item));
    for (int64_t c = first; c <= last; ++c) shown[static_cast<size_t>(c)] = true;
    begin = comma + 1;
  }
  return shown;
}

uint16_t ChipTimelineRecorder::track_for(int32_t core, const std::string& unit, uint64_t start,
                                         uint64_t done) {
  // The first track of this unit that is free at `start`; a new one when all are busy (overlap).
  Tracks& t = tracks_[core];
  size_t same_unit = 0;
  for (size_t k = 0; k < t.names.size(); ++k) {
    if (t.names[k].rfind(unit, 0) != 0) continue;
    ++same_unit;
    if (t.free_at[k] > start) continue;
    t.free_at[k] = done;
    return static_cast<uint16_t>(k);
  }
  t.names.push_back(same_unit ? unit + " " + std::to_string(same_unit) : unit);
  t.free_at.push_back(done);
  return static_cast<uint16_t>(t.names.size() - 1);
}

void ChipTimelineRecorder::after_step(const BlockRecord& block, isa::Opcode op, uint64_t start,
                                      uint64_t done) {
  if (!shown(block.core)) return;
  if (slices_.size() >= limit_) {
    ++dropped_;
    return;
  }
  slices_.push_back({block.core, track_for(block.core, unit_of(op, true), start, done), op, start, done});
}

void ChipTimelineRecorder::block_done(const BlockRecord& block) {
  if (!shown(block.core) || dropped_ > 0) return;  // past the limit: no block without its instructions
  blocks_.push_back({block, track_for(block.core, "blocks", block.start_cycle, block.end_cycle)});
}

std::string ChipTimelineRecorder::json(const std::string& trace,
                                       const std::vector<KernelReport>& kernels) const {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [core, tracks] : tracks_) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", core},
                      {"args", {{"name", fmt::format("core {}", core)}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", core}, {"args", {{"sort_index", core}}}});
    for (size_t t = 0; t < tracks.names.size(); ++t) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", core},
                        {"tid", t},
                        {"args", {{"name", tracks.names[t]}}}});
      // The blocks' tracks above the units' tracks.
      const bool blocks = tracks.names[t].rfind("blocks", 0) == 0;
      events.push_back(
          {{"ph", "M"},
           {"name", "thread_sort_index"},
           {"pid", core},
           {"tid", t},
           {"args", {{"sort_index", blocks ? static_cast<int64_t>(t) - 1000 : static_cast<int64_t>(t)}}}});
    }
  }
  for (const BlockSlice& b : blocks_) {
    const std::string kernel =
        static_cast<size_t>(b.block.launch) < kernels.size() ? kernels[b.block.launch].name : "kernel";
    events.push_back({{"ph", "X"},
                      {"name", fmt::format("{}({}, {}, {})", kernel, b.block.index[0], b.block.index[1],
                                           b.block.index[2])},
                      {"pid", b.block.core},
                      {"tid", b.track},
                      {"ts", b.block.start_cycle},
                      {"dur", b.block.end_cycle - b.block.start_cycle},
                      {"args", {{"launch", b.block.launch}}}});
  }
  for (const Slice& s : slices_)
    events.push_back({{"ph", "X"},
                      {"name", std::string(isa::mnemonic(s.op))},
                      {"pid", s.core},
                      {"tid", s.track},
                      {"ts", s.start},
                      {"dur", s.done - s.start}});
  nlohmann::json doc = {{"traceEvents", events},
                        {"displayTimeUnit", "ns"},
                        {"otherData",
                         {{"time_unit", "1 us on the axis = 1 cycle"},
                          {"trace", trace},
                          {"scope", "the chosen cores of a whole chip"},
                          {"instructions_not_shown", dropped_}}}};
  return json_text(doc) + "\n";
}

std::string ChipTimelineRecorder::note() const {
  if (!dropped_) return "";
  return fmt::format(
      "--timeline stopped after {} instructions ({} more of the chosen cores not shown; --timeline-limit N "
      "keeps more, --timeline-cores picks cores)",
      slices_.size(), dropped_);
}

}  // namespace attnsim
