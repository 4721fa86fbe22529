// The DMA engine between off-chip memory (HBM, or the L2 of a chip) and the core: a queue of at most
// `queue_depth` transfers in flight. A transfer starts when it is submitted and a queue slot is free, pays
// `setup_cycles`, then moves its bytes through HBM (hbm.h) and its on-chip end (one SRAM port, or the
// register file for a GPU's ld.global / st.global: on_chip_end.h); it completes when both sides are
// done. Overlap with MXU/VPU work comes from the sequencer issuing the next instructions while transfers
// are in flight.
#pragma once

#include <deque>
#include <vector>

#include "models/common/component.h"
#include "models/common/memory_level.h"
#include "models/common/on_chip_end.h"
#include "models/common/params.h"

namespace attnsim {

class DmaEngine : public Component {
 public:
  struct Params {
    int64_t queue_depth = 8;
    int64_t setup_cycles = 0;
    int64_t fence_cycles = 0;  // a memory barrier's own round trip, after the block's stores arrived
  };
  using Transfer = MemAccess;  // is_write: on-chip -> memory (STORE)
  struct Timing {
    uint64_t start = 0;  // queue slot granted
    uint64_t done = 0;
    uint64_t left = 0;  // a store: when its data had left the core (done where the memory does not say)
  };

  DmaEngine(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // Submits at `ready_cycle` (operands ready, in program order: ready cycles never decrease). The memory
  // level behind the DMA (HBM, or L2 on a chip) keeps its own ledger; this updates the on-chip end's byte
  // counters (`end`: the SRAM, or the register file) and the DMA stats.
  Timing submit(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory, OnChipEnd& end);
  // An accumulating store (STORE_ADD: memory tile += on-chip tile): one queue slot, the on-chip tile read
  // once, and two accesses of the memory tile, a read and then a write, both issued when the transfer starts
  // (the add is done beside the memory, as a GPU's L2 executes red.global.add, so the write does not wait
  // for the old values to come back to the core). `transfer.is_write` is ignored. Counted in both
  // bytes_loaded and bytes_stored.
  Timing submit_accumulate(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory,
                           OnChipEnd& end);
  // One attempt of a lock's compare-and-swap (LOCK): an atomic at the word's home, its old value back to
  // the core; no SRAM bytes. Counted in bytes_loaded and bytes_stored as STORE_ADD is.
  Timing submit_atomic(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory, OnChipEnd& end);
  // `count` failed attempts of a lock's compare-and-swap, issued together at `cycle` (their bytes; the wait
  // they fill is the LOCK's): no queue slot, no time of their own.
  void record_failed_atomics(uint64_t cycle, const Transfer& transfer, uint64_t count, MemoryLevel& memory);
  // A lock's release (UNLOCK): a store from a register, no SRAM bytes.
  Timing submit_release(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory, OnChipEnd& end);
  // The cycle a transfer ready at `ready_cycle` would get a queue slot.
  uint64_t earliest_start(uint64_t ready_cycle) const;
  void reset();
  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t transfers = 0;
  uint64_t bytes_loaded = 0;             // read from memory: LOAD, and STORE_ADD's read of the old tile
  uint64_t bytes_stored = 0;             // written to memory: STORE and STORE_ADD
  uint64_t queue_full_stall_cycles = 0;  // waiting for a free slot
  uint64_t busy_cycles = 0;              // cycles with at least one transfer in flight
  uint64_t elapsed_cycles = 0;
  uint64_t lock_acquisitions = 0;  // LOCKs taken
  uint64_t lock_attempts = 0;      // compare-and-swaps, failed ones included
  uint64_t lock_wait_cycles = 0;   // from a LOCK's readiness until the lock was free
  uint64_t fences = 0;
  uint64_t fence_wait_cycles = 0;  // from a FENCE's turn until the block's earlier work was done
  // SRAM bytes the transfers moved, by tensor index (LOAD: written into SRAM; STORE, STORE_ADD: read out),
  // so the SRAM's energy can be charged to tensors (models/common/energy.h).
  std::vector<uint64_t> sram_bytes_per_tensor;

 private:
  enum class Kind : uint8_t { Load, Store, Accumulate, Atomic, Release };
  Timing submit_kind(uint64_t ready_cycle, const Transfer& transfer, Kind kind, MemoryLevel& memory,
                     OnChipEnd& end);

  Params params_;
  std::deque<uint64_t>
      in_flight_;            // completion cycles of transfers still in the queue, ascending order not assumed
  uint64_t busy_until_ = 0;  // end of the union of busy intervals counted so far
};

void register_dma_models();  // YAML type "queue"

}  // namespace attnsim
