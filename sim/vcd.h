// `attnsim run --vcd FILE`: a Value Change Dump (IEEE 1364) of a single-core run, for GTKWave. Scalar
// machines: every register's value (real), the busy signal of the DRAM port, the MAC and the ALU, DRAM reads
// and writes in flight and counted. Tile machines: DMA, MXU and VPU busy, SRAM occupancy (the buffers that
// hold data: a buffer counts from the first instruction that writes it), HBM transfers counted.
//
// The time axis counts cycles (written as 1 ns per cycle): an instruction shown in `--table` with Issue i and
// Done d is busy from time i - 1 to d, and the register it writes changes at time d.
//
// A writer of our own rather than sc_trace: the sequencer keeps a local cycle count and meets the SystemC
// kernel only once per quantum (models/sequencer/sequencer.h), so signals sampled by sc_trace would change
// at quantum boundaries, not at the cycles the instructions occupy. The step observer knows each
// instruction's exact issue and completion cycle, costs nothing when --vcd is off, and the file needs no
// SystemC signals in the models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"
#include "models/sequencer/sequencer.h"

namespace attnsim {

class RegisterFile;

class VcdRecorder : public StepObserver {
 public:
  struct Options {
    size_t limit = 100000;                    // instructions recorded; later ones are counted, not drawn
    const RegisterFile* registers = nullptr;  // scalar machines: read after each step
    std::vector<uint64_t> sram_bytes;         // tile machines: SRAM bytes of each buffer (0 for `regs` ones)
  };
  VcdRecorder(const isa::Program& program, Options options);

  void after_step(size_t index, uint64_t issue, uint64_t done) override;
  // The whole VCD text, header and value changes in time order.
  std::string text() const;
  size_t recorded() const { return recorded_; }
  size_t dropped() const { return dropped_; }

 private:
  struct Change {
    uint64_t time;
    uint32_t order;  // keeps program order among changes at one time
    uint16_t signal;
    double value;
  };
  struct Busy {
    uint64_t time;
    int delta;  // +1 at issue, -1 at done
  };
  uint16_t signal(const std::string& name, bool real, int bits = 1);
  void change(uint64_t time, uint16_t id, double value);
  void busy(const std::string& unit, uint64_t issue, uint64_t done);
  void scalar_step(const isa::Instruction& inst, uint64_t issue, uint64_t done);
  void tile_step(const isa::Instruction& inst, uint64_t issue, uint64_t done);
  std::vector<Change> busy_changes() const;
  std::string header() const;

  const isa::Program& program_;
  Options options_;
  size_t recorded_ = 0, dropped_ = 0;
  uint64_t end_ = 0;
  struct Signal {
    std::string name;
    bool real;
    int bits;
  };
  std::vector<Signal> signals_;
  std::vector<Change> changes_;
  std::vector<std::pair<std::string, std::vector<Busy>>> units_;  // busy intervals per unit, as events
  uint64_t reads_ = 0, writes_ = 0, sram_ = 0;
  std::vector<uint8_t> buffer_written_;
};

}  // namespace attnsim
