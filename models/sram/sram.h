// On-chip SRAM (shared memory / VMEM): named buffers are allocated when a program loads, and a program that
// does not fit fails with an error naming every buffer and its size. Bandwidth: `ports` ports of
// `bytes_per_cycle` each; `banks` is recorded for reports (bank conflicts are not modelled).
#pragma once

#include <string>
#include <vector>

#include "isa/diagnostics.h"
#include "models/common/component.h"
#include "models/common/on_chip_end.h"
#include "models/common/params.h"

namespace attnsim {

struct BufferRequest {
  std::string name;
  uint64_t bytes = 0;
  SourceLoc loc;  // the .buffer line, for the error
};

class Sram : public Component, public OnChipEnd {
 public:
  struct Params {
    uint64_t capacity_bytes = 228 * 1024;
    int64_t banks = 32;
    int64_t ports = 1;
    double bytes_per_cycle = 128;  // per port
    uint64_t alignment_bytes = 128;
  };
  Sram(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // Offsets of the buffers, in request order, each aligned. Throws InputError(file, loc of the first
  // buffer that does not fit, ...) listing all buffers with sizes, the total and the capacity.
  std::vector<uint64_t> allocate(const std::vector<BufferRequest>& buffers, const std::string& file);

  // Cycles to move `bytes` through one port (at least 1 for a non-empty access).
  uint64_t access_cycles(uint64_t bytes) const;
  uint64_t stream_cycles(uint64_t bytes, bool /*is_write*/) const override { return access_cycles(bytes); }
  void record_read(uint64_t bytes) override { bytes_read += bytes; }
  void record_write(uint64_t bytes) override { bytes_written += bytes; }
  bool is_sram() const override { return true; }
  // The run's length, for the average-bandwidth formulas.
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t allocated_bytes = 0;
  uint64_t peak_occupancy_bytes = 0;
  uint64_t buffer_count = 0;
  uint64_t elapsed_cycles = 0;

 private:
  Params params_;
};

void register_sram_models();  // YAML type "scratchpad"

}  // namespace attnsim
