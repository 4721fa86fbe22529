// Energy from the simulation's own counts: each level's accesses (bytes moved, MACs, vector element ops)
// times a per-access energy from the config's `energy:` section (docs/energy.md). Dynamic energy only:
// leakage, clock tree and control are not counted. A config without `energy:` reports no energy.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/common/params.h"

namespace attnsim {

// Per-access energies, in picojoules.
struct EnergyParams {
  double dram_pj_per_bit = 0;   // off-chip DRAM/HBM, per bit transferred (sector-rounded)
  double l2_pj_per_byte = 0;    // L2 data array, per byte read or written (core accesses, fills, writebacks)
  double noc_pj_per_bit = 0;    // on-chip network SM <-> L2, per bit crossing it
  double sram_pj_per_byte = 0;  // SRAM / shared memory, per byte read or written through its ports
  double regfile_pj_per_byte = 0;  // register file, per byte read or written
  double mac_pj = 0;               // one multiply-accumulate at the machine's dtype
  double vector_op_pj = 0;         // one vector-unit (or scalar ALU) element operation
};

// Reads the `energy:` section (every key has a unit, a description and a default of 0).
EnergyParams read_energy_params(ParamReader& reader);

// One level's count and the energy of one unit of it; per tensor where the level's ledger knows tensors.
struct EnergyLevel {
  std::string name;        // "dram", "l2", "sm_l2", "sram", "regfile", "mxu", "vpu"
  std::string count_unit;  // "bytes", "MACs", "element ops"
  double pj_per_count = 0;
  uint64_t count = 0;
  std::map<std::string, uint64_t> count_per_tensor;  // empty: not split by tensor
  double pj() const { return pj_per_count * static_cast<double>(count); }
};

struct EnergyReport {
  std::string scope;  // "whole chip" or "one core"
  std::vector<EnergyLevel> levels;
  double total_pj() const;
  const EnergyLevel* level(const std::string& name) const;
  // {"scope", "unit": "pJ", "total_pj", "levels": {name: {"pj", count_unit, "pj_per_<unit>",
  // "pj_per_tensor"}}}
  nlohmann::json to_json() const;
};

// Energy of one tensor over every level that counts tensors (pJ), for --per-tensor tables.
std::map<std::string, double> energy_per_tensor(const EnergyReport& report);

}  // namespace attnsim
