// Base of every model: a SystemC module with its own stat group and the effective parameters it read.
#pragma once

#include <systemc>

#include "models/common/stats.h"

namespace attnsim {

class Component : public sc_core::sc_module {
 public:
  explicit Component(sc_core::sc_module_name instance) : sc_core::sc_module(instance), stats_(name()) {}
  StatGroup& stats() { return stats_; }
  const StatGroup& stats() const { return stats_; }

 protected:
  StatGroup stats_;
};

}  // namespace attnsim
