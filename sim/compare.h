// `attnsim compare`: every forward attention schedule on one machine, side by side — HBM bytes, SRAM
// peak, FLOPs, cycles, arithmetic intensity, max error — relative to the naive schedule. One Machine runs
// all of them in turn (programs are streamed, so memory does not grow with N).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "isa/dtype.h"
#include "sim/chip_report.h"

namespace attnsim {

struct CompareOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  int64_t n = 4096;
  int64_t d = 64;
  int64_t heads = 1;  // per batch element
  int64_t batch = 1;
  bool causal = false;
  Dtype dtype = Dtype::F16;
  int64_t block = 0;                 // 0: plan from the SRAM size
  int64_t block_q = 0, block_k = 0;  // > 0: B_r, B_c given separately (both, or with --block for the other)
  enum class Values { Auto, On, Off } values = Values::Auto;
  bool double_buffer = true;
  std::vector<std::string> schedules;  // empty: all
  bool show_plan = false;              // print the block planner's reasoning per schedule
  bool backward = false;               // the backward schedules (dQ, dK, dV) instead of the forward ones
  bool record_blocks = false;          // whole chip: keep when and where each thread block ran
  bool values_enabled() const { return values == Values::On || (values == Values::Auto && n <= 2048); }
};

struct CompareRow {
  std::string schedule;
  int64_t block_q = 0, block_k = 0;
  std::vector<std::string> plan;
  std::map<std::string, uint64_t> bytes_read, bytes_written;  // per tensor
  uint64_t hbm_read = 0, hbm_written = 0;
  uint64_t sram_peak = 0;
  uint64_t mxu_flops = 0;
  uint64_t vpu_element_ops = 0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  double seconds = 0;  // simulated
  std::optional<double> max_abs_error, max_rel_error;
  std::optional<bool> passed;
  double host_seconds = 0;  // wall time the simulation took
  // Whole chip: hbm_read/hbm_written above are then SM <-> L2 bytes, and these are the levels behind it.
  std::optional<ChipSummary> chip;
  std::vector<BlockRecord> blocks;  // record_blocks
};

std::vector<CompareRow> run_compare(const CompareOptions& options);
// One CSV line per thread block of every row (record_blocks): schedule, kernel launch, blockIdx, core,
// start and end in cycles and microseconds.
std::string block_times_csv(const std::vector<CompareRow>& rows);
void print_compare(std::ostream& out, const CompareOptions& options, const std::vector<CompareRow>& rows);
nlohmann::json compare_json(const CompareOptions& options, const std::vector<CompareRow>& rows);

}  // namespace attnsim
