// `attnsim probe --samples FILE`: when each thread block passed S evenly spaced points of every pass over
// its data (the point's LOADs all returned), in the layout of validation/l2_probe.cu's TIMES/SAMPLES file,
// so that validation/convoys.py reads the model's readers and the GPU's alike (whether out-of-step readers
// bunch up).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chip/chip.h"

namespace attnsim {

class ProbeSamplesRecorder : public ChipObserver {
 public:
  // Every block LOADs `loads_per_pass` chunks `passes` times; `samples` points a pass, the last its end.
  // Throws std::invalid_argument unless 1 <= samples <= loads_per_pass.
  ProbeSamplesRecorder(int64_t loads_per_pass, int64_t passes, int64_t samples);

  void after_step(const BlockRecord& block, isa::Opcode op, uint64_t start, uint64_t done) override;
  void block_done(const BlockRecord&) override {}
  // The CSV: block, sm (the core), start_ns (from the earliest block's start), then each point's time in ns
  // from that start. Throws std::logic_error if a block did not make every LOAD the shape promised.
  std::string csv(double clock_ghz) const;

 private:
  struct Reader {
    int32_t core = 0;
    uint64_t start = 0, latest = 0;  // the block's start; its LOADs' latest return so far
    int64_t loads = 0;
    std::vector<uint64_t> points;
  };
  int64_t loads_per_pass_, passes_, samples_;
  std::map<int64_t, Reader> readers_;  // by blockIdx.x
};

}  // namespace attnsim
