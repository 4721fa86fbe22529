// The tile machine's register file (vector registers / matmul accumulators): `count` registers of
// `width_bytes` each. Buffers placed here get whole registers, assigned when a program loads; a program
// that runs out fails with an error naming every buffer. Bandwidth: `read_ports` and `write_ports` each
// move one register width per cycle.
#pragma once

#include <string>
#include <vector>

#include "isa/diagnostics.h"
#include "models/common/component.h"
#include "models/common/on_chip_end.h"
#include "models/common/params.h"
#include "models/sram/sram.h"  // BufferRequest

namespace attnsim {

class TileRegisterFile : public Component, public OnChipEnd {
 public:
  // Defaults: TPU-like vector registers, 32 of 8 sublanes x 128 lanes x 4 bytes.
  struct Params {
    int64_t count = 32;
    int64_t width_bytes = 4096;
    int64_t read_ports = 2;
    int64_t write_ports = 1;
  };
  TileRegisterFile(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // Registers a buffer of `bytes` needs: ceil(bytes / width_bytes).
  uint64_t registers_for(uint64_t bytes) const;
  // First register of each buffer, in request order; each buffer gets registers_for(bytes) consecutive
  // registers. Throws InputError(file, loc of the first buffer that does not fit, ...) listing every buffer
  // with its bytes and registers, the total and the count.
  std::vector<uint64_t> allocate(const std::vector<BufferRequest>& buffers, const std::string& file);

  // Cycles to move `bytes` through all read (is_write false) or write ports: ceil(bytes / (width *
  // ports)), at least 1 for a non-empty access.
  uint64_t access_cycles(uint64_t bytes, bool is_write = false) const;
  uint64_t stream_cycles(uint64_t bytes, bool is_write) const override {
    return access_cycles(bytes, is_write);
  }
  void record_read(uint64_t bytes) override { bytes_read += bytes; }
  void record_write(uint64_t bytes) override { bytes_written += bytes; }
  bool is_sram() const override { return false; }
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t registers_used = 0;
  uint64_t buffer_count = 0;
  uint64_t elapsed_cycles = 0;

 private:
  Params params_;
};

void register_tile_regfile_models();  // YAML type "vector_regs"

}  // namespace attnsim
