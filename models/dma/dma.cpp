#include "models/dma/dma.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/common/registry.h"

namespace attnsim {

DmaEngine::DmaEngine(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  if (params_.queue_depth < 1)
    throw std::invalid_argument(
        fmt::format("{}: queue_depth must be >= 1, found {}", name(), params_.queue_depth));
  if (params_.fence_cycles < 0)
    throw std::invalid_argument(
        fmt::format("{}: fence_cycles must be >= 0, found {}", name(), params_.fence_cycles));
  if (params_.setup_cycles < 0)
    throw std::invalid_argument(
        fmt::format("{}: setup_cycles must be >= 0, found {}", name(), params_.setup_cycles));

  stats_.add(&transfers, "transfers", "transfers", "DMA transfers submitted (LOAD, STORE and STORE_ADD)");
  stats_.add(
      &bytes_loaded, "bytes_loaded", "bytes",
      "bytes read from memory (HBM -> SRAM, and STORE_ADD's read of the old tile), as requested (before "
      "sector rounding)");
  stats_.add(&bytes_stored, "bytes_stored", "bytes",
             "bytes written to memory (SRAM -> HBM, STORE and STORE_ADD), as requested (before sector "
             "rounding)");
  stats_.add(
      &queue_full_stall_cycles, "queue_full_stall_cycles", "cycles",
      "cycles transfers waited for a free queue slot after their operands were ready, summed over transfers");
  stats_.add(&busy_cycles, "busy_cycles", "cycles", "cycles with at least one transfer in flight");
  stats_.add(&lock_acquisitions, "lock_acquisitions", "locks", "LOCKs taken (spin locks in memory)");
  stats_.add(&lock_attempts, "lock_attempts", "atomics",
             "compare-and-swaps of LOCK, the failed ones (while another block held the lock) included");
  stats_.add(&lock_wait_cycles, "lock_wait_cycles", "cycles",
             "from each LOCK's readiness until its lock was free, summed");
  stats_.add(&fences, "fences", "instructions", "FENCEs (memory barriers)");
  stats_.add(&fence_wait_cycles, "fence_wait_cycles", "cycles",
             "from each FENCE's turn until the block's earlier instructions had finished (its stores "
             "arrived), summed "
             "(fence_cycles not included)");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the utilisation refers to");
  stats_.add_formula(
      [this] {
        return elapsed_cycles ? static_cast<double>(busy_cycles) / static_cast<double>(elapsed_cycles) : 0.0;
      },
      "utilisation", "fraction", "busy_cycles / elapsed_cycles; 0 before the run's length is set");
  stats_.add_formula(
      [this] {
        return elapsed_cycles
                   ? static_cast<double>(bytes_loaded + bytes_stored) / static_cast<double>(elapsed_cycles)
                   : 0.0;
      },
      "average_bytes_per_cycle", "bytes/cycle", "(bytes_loaded + bytes_stored) / elapsed_cycles");
}

void DmaEngine::reset() {
  in_flight_.clear();
  busy_until_ = 0;
  transfers = bytes_loaded = bytes_stored = queue_full_stall_cycles = busy_cycles = elapsed_cycles = 0;
  lock_acquisitions = lock_attempts = lock_wait_cycles = fences = fence_wait_cycles = 0;
  sram_bytes_per_tensor.clear();
}

uint64_t DmaEngine::earliest_start(uint64_t ready_cycle) const {
  // Full when queue_depth transfers are still in flight at ready_cycle: then the earliest of them frees one
  // (transfers can finish out of order, so search).
  uint64_t earliest = UINT64_MAX;
  size_t busy = 0;
  for (uint64_t done : in_flight_) {
    if (done <= ready_cycle) continue;
    ++busy;
    earliest = std::min(earliest, done);
  }
  return busy >= static_cast<size_t>(params_.queue_depth) ? earliest : ready_cycle;
}

DmaEngine::Timing DmaEngine::submit(uint64_t ready_cycle, const Transfer& transfer, MemoryLevel& memory,
                                    OnChipEnd& end) {
  return submit_kind(ready_cycle, transfer, transfer.is_write ? Kind::Store : Kind::Load, memory, end);
}

DmaEngine::Timing DmaEngine::submit_accumulate(uint64_t ready_cycle, const Transfer& transfer,
                                               MemoryLevel& memory, OnChipEnd& end) {
  return submit_kind(ready_cycle, transfer, Kind::Accumulate, memory, end);
}

DmaEngine::Timing DmaEngine::submit_atomic(uint64_t ready_cycle, const Transfer& transfer,
                                           MemoryLevel& memory, OnChipEnd& end) {
  return submit_kind(ready_cycle, transfer, Kind::Atomic, memory, end);
}

void DmaEngine::record_failed_atomics(uint64_t cycle, const Transfer& transfer, uint64_t count,
                                      MemoryLevel& memory) {
  if (count == 0) return;
  MemAccess spins = transfer;  // the same word `count` times: one access of `count` rows, stride 0
  spins.rows = count;
  spins.stride_bytes = 0;
  spins.is_write = false;
  spins.atomic_read = true;
  memory.access(spins, cycle);
  spins.is_write = true;
  spins.atomic_read = false;
  memory.access(spins, cycle);
  bytes_loaded += spins.bytes();
  bytes_stored += spins.bytes();
}

DmaEngine::Timing DmaEngine::submit_release(uint64_t ready_cycle, const Transfer& transfer,
                                            MemoryLevel& memory, OnChipEnd& end) {
  return submit_kind(ready_cycle, transfer, Kind::Release, memory, end);
}

DmaEngine::Timing DmaEngine::submit_kind(uint64_t ready_cycle, const Transfer& transfer, Kind kind,
                                         MemoryLevel& memory, OnChipEnd& end) {
  // Slots whose transfer has finished by ready_cycle are free again.
  std::erase_if(in_flight_, [ready_cycle](uint64_t done) { return done <= ready_cycle; });
  const uint64_t start = earliest_start(ready_cycle);
  if (start != ready_cycle) {  // full: the transfer takes the slot of the earliest to complete
    in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), start));
    queue_full_stall_cycles += start - ready_cycle;
  }

  const uint64_t bytes = transfer.rows * transfer.row_bytes;
  const uint64_t issue = start + static_cast<uint64_t>(params_.setup_cycles);
  uint64_t hbm_done = 0;
  if (kind == Kind::Accumulate || kind == Kind::Atomic) {
    // Read the old tile, then write the sum: two accesses, both issued now and in that order, so the
    // memory level books the read's bytes first and the write's after them (the single core's HBM
    // channels serve one after the other; a chip's L2 fetches a missing line for the read, before the
    // write reaches it). The write is not held until the read completes: the add happens beside the memory,
    // as a GPU's L2 executes red.global.add, and a write issued at the read's completion would come from the
    // future to the single core's HBM channel model, which takes requests in time order, and hold up the
    // transfers issued after it.
    MemAccess part = transfer;
    part.is_write = false;
    part.atomic_read = true;
    const uint64_t read_done = memory.access(part, issue);
    part.is_write = true;
    part.atomic_read = false;
    hbm_done = std::max(read_done, memory.access(part, issue));
  } else {
    hbm_done = memory.access(transfer, issue);
  }
  // The on-chip side (SRAM, or registers for ld.global / st.global) streams alongside the memory side;
  // whichever is slower decides. A lock's word comes from and goes to a register.
  const bool through_end = kind != Kind::Atomic && kind != Kind::Release;
  const uint64_t done =
      std::max(hbm_done, issue + (through_end ? end.stream_cycles(bytes, kind == Kind::Load) : 0));

  switch (kind) {
    case Kind::Load:
      end.record_write(bytes);
      bytes_loaded += bytes;
      break;
    case Kind::Store:
      end.record_read(bytes);
      bytes_stored += bytes;
      break;
    case Kind::Accumulate:  // the addend leaves SRAM; the old tile never enters it
      end.record_read(bytes);
      bytes_loaded += bytes;
      bytes_stored += bytes;
      break;
    case Kind::Atomic:
      bytes_loaded += bytes;
      bytes_stored += bytes;
      break;
    case Kind::Release:
      bytes_stored += bytes;
      break;
  }
  transfers += 1;
  if (transfer.tensor >= 0 && through_end && end.is_sram()) {
    const auto t = static_cast<size_t>(transfer.tensor);
    if (t >= sram_bytes_per_tensor.size()) sram_bytes_per_tensor.resize(t + 1, 0);
    sram_bytes_per_tensor[t] += bytes;
  }
  // Starts never decrease, so the part of [start, done) not yet counted is [max(start, busy_until), done).
  if (done > busy_until_) {
    busy_cycles += done - std::max(start, busy_until_);
    busy_until_ = done;
  }
  in_flight_.push_back(done);
  const uint64_t left = kind == Kind::Load ? 0 : memory.stores_left_cycle(transfer.core);
  return {start, done, left > 0 ? std::min(left, done) : done};
}

void register_dma_models() {
  Registry<DmaEngine>::instance().add(
      "queue", "DMA engine: bounded queue of in-flight HBM <-> SRAM transfers",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        DmaEngine::Params d;
        DmaEngine::Params params;
        params.queue_depth =
            p.get<int64_t>("queue_depth", d.queue_depth, "transfers",
                           "transfers in flight at once; a further one waits for a slot", 1, 1 << 20);
        params.setup_cycles =
            p.get<int64_t>("setup_cycles", d.setup_cycles, "cycles",
                           "fixed cost per transfer before its first HBM request", 0, 1 << 30);
        params.fence_cycles = p.get<int64_t>(
            "fence_cycles", d.fence_cycles, "cycles",
            "a FENCE's (__threadfence's) own round trip, after the block's stores have arrived", 0, 1 << 30);
        return std::make_unique<DmaEngine>(instance, params);
      });
}

}  // namespace attnsim
