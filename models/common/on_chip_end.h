// The on-chip end of a transfer between memory and a core: the SRAM (cp.async, TMA: a GPU's shared memory)
// or the register file (ld.global and st.global straight to and from registers, no shared memory on the
// way). The DMA streams a transfer's bytes through it beside the memory side; whichever is slower decides.
#pragma once

#include <cstdint>

namespace attnsim {

class OnChipEnd {
 public:
  virtual ~OnChipEnd() = default;
  // Cycles to stream `bytes` into (is_write) or out of this store.
  virtual uint64_t stream_cycles(uint64_t bytes, bool is_write) const = 0;
  virtual void record_read(uint64_t bytes) = 0;
  virtual void record_write(uint64_t bytes) = 0;
  // Whether the bytes are the SRAM's (its energy is charged to tensors by the DMA's ledger).
  virtual bool is_sram() const = 0;
};

}  // namespace attnsim
