// The on-chip network between the cores and the L2: every core has a port of `core_bytes_per_cycle` (its
// share of the crossbar) and a request crosses it with `latency_cycles` each way. A GPU's SM sends its
// stores' data towards the L2 at a rate of its own (`core_write_bytes_per_cycle`), and its requests leave
// in order (`loads_wait_for_stores`): a load issued behind stores starts when their data has left. It is also
// where the SM <-> L2 traffic is counted, per tensor and per core: exactly the bytes the programs load and
// store.
#pragma once

#include <string>
#include <vector>

#include "models/common/bandwidth_calendar.h"
#include "models/common/component.h"
#include "models/common/memory_level.h"
#include "models/common/params.h"

namespace attnsim {

class Noc : public Component, public MemoryLevel {
 public:
  struct Params {
    double core_bytes_per_cycle = 64;
    // 0: stores share the reads' port. Otherwise the rate at which a core's store data leaves for the L2.
    double core_write_bytes_per_cycle = 0;
    bool loads_wait_for_stores = false;
    int64_t latency_cycles = 0;
    int64_t window_cycles = 64;
    // Where STORE_ADD's read of the old tile happens: at the core (its bytes cross the network, as a LOAD's
    // would) or in the L2, as a GPU's L2 executes red.global.add (only the addend crosses; Nsight Compute
    // counts atomics in l1tex__m_l1tex2xbar_write_bytes and nothing in the read direction).
    bool atomics_in_l2 = false;
    // A load's data cross the core's port once the next level has served them (the port booked from the
    // level's completion), so a lone load's latency and its transfer add as on a real port. false: the
    // port is booked from the request's departure, and the two overlap.
    bool load_data_after_level = false;
  };
  Noc(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  void set_next(MemoryLevel* next) { next_ = next; }
  void reset(const std::vector<std::string>& tensor_names, int cores);
  uint64_t access(const MemAccess& access, uint64_t issue_cycle) override;
  void fence(int core) override {
    if (next_) next_->fence(core);
  }
  void forget_before(uint64_t cycle);
  uint64_t stores_left_cycle(int core) const override { return stores_leave_[static_cast<size_t>(core)]; }

  std::vector<std::string> tensor_names;
  std::vector<uint64_t> bytes_read_per_tensor, bytes_written_per_tensor;  // requested, SM <-> L2
  std::vector<uint64_t> bytes_read_per_core, bytes_written_per_core;
  std::vector<std::string> core_names;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t load_cycles_behind_stores = 0;  // summed over the loads: from issue to their request leaving

 private:
  Params params_;
  MemoryLevel* next_ = nullptr;
  std::vector<BandwidthCalendar> ports_;
  std::vector<BandwidthCalendar> write_ports_;  // empty when stores share ports_
  std::vector<uint64_t> stores_leave_;          // per core: when its last queued store's data has left
};

void register_noc_models();  // YAML type "crossbar"

}  // namespace attnsim
