// `attnsim plan`: searches block sizes (and the loop order where a schedule has a choice) by simulation.
// Every candidate is an `attnsim compare` child run timing-only, --jobs at a time (sweep's machinery); the
// candidates are ranked by what they moved or took, never by a formula.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/compare.h"

namespace attnsim {

struct PlanSearchOptions {
  CompareOptions compare;  // config, overrides, shape (N, d, heads, batch, causal, dtype); schedules to try
  // "dram", "sm_l2", "cycles", "energy"; empty: dram on a whole chip, sm_l2 on one core
  std::string objective;
  int jobs = 0;          // 0: all cores
  size_t top = 10;       // rows printed
  bool progress = true;  // a line on stderr per finished candidate
};

struct PlanCandidate {
  std::string schedule;
  bool keys_descending = false;  // flash2's other key order
  int64_t block_q = 0, block_k = 0;
  std::vector<std::string> rules;  // the planner rules that choose this candidate ("paper", "hardware")
  bool ok = false;
  std::string reason;                  // when not ok
  uint64_t sm_l2_bytes = 0;            // SM <-> L2 (whole chip) or HBM (one core), read + written
  std::optional<uint64_t> dram_bytes;  // whole chip: read + written
  uint64_t cycles = 0;
  double seconds = 0;               // simulated
  std::optional<double> energy_pj;  // whole chip, dynamic; none without the config's energy: section
};

struct PlanResult {
  std::string objective;
  bool chip = false;
  std::vector<PlanCandidate> candidates;  // ranked: ok ones by the objective (ties: cycles), then the rest
  double host_seconds = 0;
  int jobs = 1;
};

// The objective's value for a candidate (bytes, cycles or picojoules).
double objective_value(const PlanResult& result, const PlanCandidate& c);

// `self`: the attnsim binary the candidates run in. Throws InputError for bad options.
PlanResult search_plans(const PlanSearchOptions& options, const std::string& self);
void print_plan(std::ostream& out, const PlanSearchOptions& options, const PlanResult& result);

}  // namespace attnsim
