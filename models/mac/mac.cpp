#include "models/mac/mac.h"

#include "models/common/registry.h"

namespace attnsim {

MacUnit::MacUnit(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  stats_.add(&ops, "ops", "instructions", "MAC and MAC_Z executed");
  stats_.add(&busy_cycles, "busy_cycles", "cycles", "cycles the unit was occupied");
}

void register_mac_models() {
  Registry<MacUnit>::instance().add(
      "mac", "scalar fused multiply-add unit", [](const char* instance, ParamReader& p, const BuildContext&) {
        MacUnit::Params params;
        params.latency = p.get<int64_t>("latency", 1, "cycles", "cycles per MAC / MAC_Z", 1, kMaxLatency);
        return std::make_unique<MacUnit>(instance, params);
      });
}

}  // namespace attnsim
