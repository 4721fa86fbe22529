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
}

void Noc::reset(const std::vector<std::string>& names, int cores) {
  tensor_names = names;
  bytes_read_per_tensor.assign(names.size(), 0);
  bytes_written_per_tensor.assign(names.size(), 0);
  bytes_read_per_core.assign(static_cast<size_t>(cores), 0);
  bytes_written_per_core.assign(static_cast<size_t>(cores), 0);
  core_names.clear();
  for (int c = 0; c < cores; ++c) core_names.push_back("core[" + std::to_string(c) + "]");
  bytes_read = bytes_written = 0;
  ports_.assign(static_cast<size_t>(cores), BandwidthCalendar(params_.core_bytes_per_cycle,
                                                              static_cast<uint64_t>(params_.window_cycles)));
}

uint64_t Noc::access(const MemAccess& a, uint64_t issue_cycle) {
  const uint64_t latency = static_cast<uint64_t>(params_.latency_cycles);
  if (a.atomic_read && params_.atomics_in_l2) return next_->access(a, issue_cycle + latency) + latency;
  const uint64_t bytes = a.bytes();
  const size_t core = static_cast<size_t>(a.core);
  (a.is_write ? bytes_written : bytes_read) += bytes;
  (a.is_write ? bytes_written_per_core : bytes_read_per_core)[core] += bytes;
  if (a.tensor >= 0) (a.is_write ? bytes_written_per_tensor : bytes_read_per_tensor)[a.tensor] += bytes;
  const uint64_t port_done = ports_[core].serve(issue_cycle, bytes);
  const uint64_t level_done = next_->access(a, issue_cycle + latency) + latency;
  return std::max(port_done + 2 * latency, level_done);
}

void Noc::forget_before(uint64_t cycle) {
  for (auto& p : ports_) p.forget_before(cycle);
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
        r.window_cycles = p.get<int64_t>("window_cycles", d.window_cycles, "cycles",
                                         "granularity of the port bandwidth calendars", 1, 1 << 20);
        r.atomics_in_l2 =
            p.choice("atomics", "core", {"core", "l2"},
                     "where STORE_ADD reads the old tile: at the core (the read crosses the "
                     "network) or in the L2 (only the addend crosses, as red.global.add)") == "l2";
        return std::make_unique<Noc>(instance, r);
      });
}

}  // namespace attnsim
