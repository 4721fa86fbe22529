// A validated row's traffic past the SMs, predicted over measured, at the three levels the whole-chip rows
// compare: DRAM reads, read lookup misses in the partition a request looked up first, and sectors across
// the fabric between the partitions. A ratio whose measurement is missing (0) comes out as 0.
#pragma once

#include "sim/validate.h"

namespace attnsim {

struct L2Ratios {
  double dram = 0, lookups = 0, fabric = 0;
};

inline L2Ratios l2_ratios(const ValidationRow& r) {
  const auto ratio = [](double predicted, double measured) {
    return measured > 0 ? predicted / measured : 0.0;
  };
  return {ratio(r.predicted_dram_read, r.measured.dram_read_bytes),
          ratio(r.predicted_l2_lookup_read_miss_sectors, r.measured.l2_lookup_miss_sectors),
          ratio(r.predicted_l2_fabric_sectors, r.measured.l2_fabric_sectors)};
}

}  // namespace attnsim
