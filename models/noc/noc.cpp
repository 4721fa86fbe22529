#include "models/noc/noc.h"

#include "models/common/registry.h"

namespace attnsim {

Noc::Noc(sc_core::sc_module_name instance, const Params& params) : Component(instance), params_(params) {
  stats_.add(&bytes_read, "bytes_read", "bytes", "SM <- L2: bytes the cores loaded, whole chip");
  stats_.add(&bytes_written, "bytes_written", "bytes", "SM -> L2: bytes the cores stored, whole chip");
  stats_.add_vector(&bytes_read_per_tensor, &tensor_names, "bytes_read_per_tensor", "bytes",
                    "SM <- L2 bytes per tensor, whole chip");
  stats_.add_vector(&bytes_written_per_tensor, &tensor_names, "bytes_written_per_tensor", "bytes",
                    "SM -> L2 bytes per tensor, whole chip");
  stats_.add_vector(&bytes_read_per_core, &core_names, "bytes_read_per_core", "bytes",
                    "SM <- L2 bytes per core");
  stats_.add_vector(&bytes_written_per_core, &core_names, "bytes_written_per_core", "bytes",
                    "SM -> L2 bytes per core");
  stats_.add(&load_cycles_behind_stores, "load_cycles_behind_stores", "cycles",
             "summed over the loads: cycles a load's request waited behind the stores its core issued "
             "before it (loads_wait_for_stores)");
}

void Noc::reset(const std::vector<std::string>& names, int cores) {
  tensor_names = names;
  bytes_read_per_tensor.assign(names.size(), 0);
  bytes_written_per_tensor.assign(names.size(), 0);
  bytes_read_per_core.assign(static_cast<size_t>(cores), 0);
  bytes_written_per_core.assign(static_cast<size_t>(cores), 0);
  core_names.clear();
  for (int c = 0; c < cores; ++c) core_names.push_back("core[" + std::to_string(c) + "]");
  bytes_read = bytes_written = load_cycles_behind_stores = 0;
  const auto window = static_cast<uint64_t>(params_.window_cycles);
  ports_.assign(static_cast<size_t>(cores), BandwidthCalendar(params_.core_bytes_per_cycle, window));
  write_ports_.clear();
  if (params_.core_write_bytes_per_cycle > 0)
    write_ports_.assign(static_cast<size_t>(cores),
                        BandwidthCalendar(params_.core_write_bytes_per_cycle, window));
  stores_leave_.assign(static_cast<size_t>(cores), 0);
}

uint64_t Noc::access(const MemAccess& a, uint64_t issue_cycle) {
  const uint64_t latency = static_cast<uint64_t>(params_.latency_cycles);
  if (a.atomic_read && params_.atomics_in_l2) return next_->access(a, issue_cycle + latency) + latency;
  if (a.atomic_read) {  // added at the core: its read is a core's read like any other
    MemAccess read = a;
    read.atomic_read = false;
    return access(read, issue_cycle);
  }
  const uint64_t bytes = a.bytes();
  const size_t core = static_cast<size_t>(a.core);
  (a.is_write ? bytes_written : bytes_read) += bytes;
  (a.is_write ? bytes_written_per_core : bytes_read_per_core)[core] += bytes;
  if (a.tensor >= 0) (a.is_write ? bytes_written_per_tensor : bytes_read_per_tensor)[a.tensor] += bytes;
  // A core's DMA issues in time order, so a load sees every store issued before it.
  uint64_t depart = issue_cycle;
  if (!a.is_write && params_.loads_wait_for_stores && stores_leave_[core] > depart) {
    load_cycles_behind_stores += stores_leave_[core] - depart;
    depart = stores_leave_[core];
  }
  auto& port = a.is_write && !write_ports_.empty() ? write_ports_[core] : ports_[core];
  // Store and forward: the level's last byte, then the port's time for all of them. A level streams a
  // tile far faster than one port takes it (an L2 slice 1,500 B/clk, a tile's DRAM channels in parallel),
  // so this is short of pipelining by the level's own streaming time only.
  if (!a.is_write && params_.load_data_after_level)
    return port.serve(next_->access(a, depart + latency) + latency, bytes);
  const uint64_t port_done = port.serve(depart, bytes);
  const uint64_t level_done = next_->access(a, depart + latency) + latency;
  // A store's data leave the core when its port has sent them and the next level has taken them in.
  if (a.is_write)
    stores_leave_[core] = std::max({stores_leave_[core], port_done, next_->last_accepted_cycle() + latency});
  return std::max(port_done + 2 * latency, level_done);
}

void Noc::forget_before(uint64_t cycle) {
  for (auto& p : ports_) p.forget_before(cycle);
  for (auto& p : write_ports_) p.forget_before(cycle);
}

void register_noc_models() {
  Registry<Noc>::instance().add(
      "crossbar", "on-chip network: one port per core, fixed latency; counts SM <-> L2 bytes",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        Noc::Params d, r;
        r.core_bytes_per_cycle = p.get<double>("core_bytes_per_cycle", d.core_bytes_per_cycle, "bytes/cycle",
                                               "bandwidth of one core's port to the L2", 1e-3, 1e9);
        r.latency_cycles = p.get<int64_t>("latency_cycles", d.latency_cycles, "cycles",
                                          "one-way crossing time of a request", 0, 1 << 20);
        r.core_write_bytes_per_cycle =
            p.get<double>("core_write_bytes_per_cycle", d.core_write_bytes_per_cycle, "bytes/cycle",
                          "rate at which one core's store data leaves for the L2 (0: stores share the "
                          "core_bytes_per_cycle port with loads)",
                          0, 1e9);
        r.loads_wait_for_stores =
            p.get<bool>("loads_wait_for_stores", d.loads_wait_for_stores, "",
                        "a core's requests leave in order: a load waits until the data of the stores issued "
                        "before it has left the core");
        r.window_cycles = p.get<int64_t>("window_cycles", d.window_cycles, "cycles",
                                         "granularity of the port bandwidth calendars", 1, 1 << 20);
        r.load_data_after_level =
            p.get<bool>("load_data_after_level", d.load_data_after_level, "",
                        "a load's data cross the core's port after the next level has served them, so a "
                        "lone load takes the level's latency plus its bytes over the port; false: the port "
                        "is booked from the request's departure and the two overlap");
        r.atomics_in_l2 =
            p.choice("atomics", "core", {"core", "l2"},
                     "where STORE_ADD reads the old tile: at the core (the read crosses the "
                     "network) or in the L2 (only the addend crosses, as red.global.add)") == "l2";
        return std::make_unique<Noc>(instance, r);
      });
}

}  // namespace attnsim
