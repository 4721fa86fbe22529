// `--timeline FILE` on a whole chip: every instruction the chosen cores execute as a slice, in the Chrome
// trace-event JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open. One process per core; on
// each, a track of its thread blocks (one slice a block, named by its kernel and index) and its units'
// tracks (dma, mxu, vpu), a unit that overlaps its own work (the DMA queue, resident blocks side by side)
// getting one track per concurrent slice. Time is in cycles (shown as µs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chip/chip.h"

namespace attnsim {

// The cores a timeline shows: "all", or a list of cores and ranges ("0-3,17"). Throws
// std::invalid_argument naming what is wrong (an empty item, a reversed range, a core the chip lacks).
std::vector<bool> parse_timeline_cores(const std::string& text, int64_t cores);

class ChipTimelineRecorder : public ChipObserver {
 public:
  // Keeps at most `limit` instructions of the cores `shown` marks (a slice of every block of theirs too).
  ChipTimelineRecorder(std::vector<bool> shown, size_t limit) : shown_(std::move(shown)), limit_(limit) {}

  void after_step(const BlockRecord& block, isa::Opcode op, uint64_t start, uint64_t done) override;
  void block_done(const BlockRecord& block) override;
  // The JSON document (`kernels`: the run's launches, Chip::kernels(), for the blocks' names); the
  // instructions beyond the limit are counted in its metadata.
  std::string json(const std::string& trace, const std::vector<KernelReport>& kernels) const;
  // "" when every instruction of the shown cores is in the timeline, else a line saying where it stopped.
  std::string note() const;
  size_t recorded() const { return slices_.size(); }

 private:
  struct Slice {
    int32_t core;
    uint16_t track;  // index into the core's track names
    isa::Opcode op;
    uint64_t start, done;
  };
  struct BlockSlice {
    BlockRecord block;
    uint16_t track;
  };
  struct Tracks {
    std::vector<std::string> names;
    std::vector<uint64_t> free_at;  // per track: when its last slice ends
  };
  uint16_t track_for(int32_t core, const std::string& unit, uint64_t start, uint64_t done);
  bool shown(int32_t core) const {
    return core >= 0 && static_cast<size_t>(core) < shown_.size() && shown_[core];
  }

  std::vector<bool> shown_;
  size_t limit_;
  size_t dropped_ = 0;
  std::vector<Slice> slices_;
  std::vector<BlockSlice> blocks_;
  std::map<int32_t, Tracks> tracks_;  // per shown core that ran something
};

}  // namespace attnsim
