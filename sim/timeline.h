// `--timeline FILE`: every executed instruction as a slice on its unit's track, in the Chrome trace-event
// JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open. Time is in cycles (shown as µs). Units
// that overlap their own work (the DMA queue) get one track per concurrent transfer.
#pragma once

#include <string>
#include <vector>

#include "isa/program.h"
#include "models/sequencer/sequencer.h"

namespace attnsim {

// The unit an instruction occupies: dram, mac, alu on scalar machines; dma, mxu, vpu on tile machines.
std::string unit_of(const isa::Program& program, const isa::Instruction& inst);
std::string unit_of(isa::Opcode op, bool tile);

class TimelineRecorder : public StepObserver {
 public:
  // Keeps at most `limit` instructions (a timeline of millions of slices is unreadable anyway).
  TimelineRecorder(const isa::Program& program, size_t limit) : program_(program), limit_(limit) {}

  void after_step(size_t index, uint64_t start, uint64_t done) override;
  // The JSON document; `dropped` instructions beyond the limit are mentioned in its metadata.
  std::string json() const;
  // "" when every instruction is in the timeline, else a line saying where it stopped.
  std::string note(const std::string& path) const;

 private:
  struct Slice {
    uint32_t instruction;
    uint16_t track;
    uint64_t start, done;
  };
  uint16_t track_for(const std::string& unit, uint64_t start, uint64_t done);

  const isa::Program& program_;
  size_t limit_;
  size_t dropped_ = 0;
  std::vector<Slice> slices_;
  std::vector<std::string> track_names_;
  std::vector<uint64_t> track_free_;  // per track: when its last slice ends
};

}  // namespace attnsim
