// Which gradients several thread blocks of one backward kernel add into (with STORE_ADD, where flash-attn
// uses atomicAdd); every other tensor a block stores, it stores alone. From the schedules' definitions
// (traces/attention_backward.h), shared by the grid and chip tests.
#pragma once

#include <set>
#include <string>

#include "traces/attention_backward.h"

namespace attnsim {

inline std::set<std::string> accumulated_gradients(traces::BackwardSchedule schedule) {
  switch (schedule) {
    case traces::BackwardSchedule::Flash2:
      return {"dQ"};
    case traces::BackwardSchedule::Flash2NoD:
      return {"dK", "dV"};
    case traces::BackwardSchedule::Naive:
      return {};
  }
  return {};
}

}  // namespace attnsim
