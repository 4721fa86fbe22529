// The DMA engine between off-chip memory (HBM, or the L2 of a chip) and SRAM: a queue of at most
// `queue_depth` transfers in flight. A transfer starts when it is submitted and a queue slot is free, pays
// `setup_cycles`, then moves its bytes through HBM (hbm.h) and one SRAM port; it completes when both sides
// are done. Overlap with MXU/VPU work comes from the sequencer issuing the next instructions while transfers
// are in flight.
#pragma once

#include <deque>

#include "models/common/component.h"
#include "models/common/memory_level.h"
#include "models/common/params.h"
#include "models/sram/sram.h"

namespace attnsim {

class DmaEngine : public Component {
 public:
  struct Params {
    int64_t queue_depth = 8;
    int64_t setup_cycles = 0;
  };
  using Transfer = MemAccess;  // is_write: SRAM -> memory (STORE)
  struct Timing {
    uint64_t start = 0;  // queue slot granted
    uint64_t done = 0;
  };

  DmaEngine(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // Submits at `ready_cycle` (operands ready, in program order: ready cycles never decrease). The memory
  // level behind the DMA (HBM, or L2 on a chip) keeps its own ledger; this updates the SRAM byte counters
  // and the DMA stats.
  Timing submit(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory, Sram& sram);
  void reset();
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t transfers = 0;
  uint64_t bytes_loaded = 0;
  uint64_t bytes_stored = 0;
  uint64_t queue_full_stall_cycles = 0;  // waiting for a free slot
  uint64_t busy_cycles = 0;              // cycles with at least one transfer in flight
  uint64_t elapsed_cycles = 0;

 private:
  Params params_;
  std::deque<uint64_t>
      in_flight_;            // completion cycles of transfers still in the queue, ascending order not assumed
  uint64_t busy_until_ = 0;  // end of the union of busy intervals counted so far
};

void register_dma_models();  // YAML type "queue"

}  // namespace attnsim
