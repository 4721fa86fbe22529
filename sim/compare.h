// `attnsim compare`: every forward attention schedule on one machine, side by side — HBM bytes, SRAM
// peak, FLOPs, cycles, arithmetic intensity, max error — relative to the naive schedule. One Machine runs
// all of them in turn (programs are streamed, so memory does not grow with N). A schedule whose buffers do
// not fit the SRAM gets a row with the reason; the others still run.
#pragma once

#include <iostream>
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
  // The block planner when no block size is given: "paper" or "hardware"; empty: the config's `planner:`
  // key (hardware on the GPU presets, paper elsewhere).
  std::string planner;
  bool keys_descending = false;    // flash2: each query block walks its key blocks from the last one down
  bool ping_pong = false;          // flash2: two query halves interleaved (ForwardShape::ping_pong)
  bool sum_after_product = false;  // flash2: the row sum after P V_j (ForwardShape::sum_after_product)
  bool registers = false;          // flash2, two-pass: accumulators in the tile register file
  bool per_tensor = false;         // print: each schedule's bytes per tensor
  // Progress lines on `progress_out` as schedules start and end. Auto: only for a run past its first second
  // (one line redrawn when stderr is a terminal, plain lines otherwise); On: plain lines from the start.
  enum class Progress { Off, Auto, On } progress = Progress::Off;
  std::ostream* progress_out = &std::cerr;
  // Schedules simulated side by side, each in a child process (1: one after another in this one). The CLI
  // gives every core.
  int jobs = 1;
  // Auto checks values up to N = 8192, every head while batch x heads x N^2 is at most 8192^2 (about half
  // a minute for all five schedules on two cores, docs/benchmarks.md), beyond that the first head alone.
  static constexpr int64_t kAutoValuesUpToN = 8192;
  static constexpr int64_t kAutoValueScores = kAutoValuesUpToN * kAutoValuesUpToN;
  // The heads (of batch x heads) whose values are computed and checked: all, 1 (the first head simulated
  // alone: heads share no data and run the same program, so its values are those it has in the whole
  // run, the backward's up to the order its atomic adds land in), or 0 (timing-only).
  int64_t value_heads() const {
    const int64_t all = heads * batch;
    if (values == Values::On) return all;
    if (values == Values::Off || n > kAutoValuesUpToN) return 0;
    return all * n * n <= kAutoValueScores ? all : 1;
  }
  bool values_enabled() const { return value_heads() > 0; }
  // Values come from a run of the first head alone, beside the whole problem's timing-only run.
  bool values_sampled() const { return value_heads() > 0 && value_heads() < heads * batch; }
};

// What one planner rule chose for a schedule (both rules are worked out; --plan shows them side by side).
struct RuleChoice {
  std::string rule;  // "paper", "hardware"
  int64_t block_q = 0, block_k = 0;
  bool fits = false;
  std::vector<std::string> reasoning;
};

struct CompareRow {
  std::string schedule;
  int64_t block_q = 0, block_k = 0;
  std::string planner;  // the rule that chose the blocks ("paper", "hardware"), or "given"
  std::vector<std::string> plan;
  std::vector<RuleChoice> rules;  // both rules' choices, when the blocks were planned
  std::string error;              // non-empty: the schedule did not run (its buffers do not fit), and why
  bool ran() const { return error.empty(); }
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
  std::vector<BlockRecord> blocks;     // record_blocks
  std::optional<EnergyReport> energy;  // the whole chip's or the one core's; none without an energy: section
};

// What `attnsim plan` needs to know before it simulates: per schedule, both rules' choices and the pairs
// of the hardware rule's block sizes whose buffers fit the SRAM (the machine is built, nothing runs).
struct BlockSpace {
  bool chip = false;                     // a whole-chip config: DRAM is a level of its own
  std::string planner;                   // the config's rule
  int64_t tile_rows = 1, tile_cols = 1;  // the MXU tile
  struct Schedule {
    std::string name;
    std::vector<RuleChoice> rules;
    std::vector<std::pair<int64_t, int64_t>> fitting;  // (B_r, B_c), before capping at N
  };
  std::vector<Schedule> schedules;
};
BlockSpace block_space(const CompareOptions& options);

// Rows for every schedule; rows that did not run carry `error`. Throws InputError for bad options.
// `effective_config`, when given, receives the machine's effective config (for compare_csv).
// The bounds on the shape and blocks every compare (and plan) checks first: an InputError naming the option.
void check_compare_options(const CompareOptions& options, const std::string& command = "attnsim compare");

std::vector<CompareRow> run_compare(const CompareOptions& options,
                                    nlohmann::json* effective_config = nullptr);
// The rows that did not run, as one line each ("flash1: buffers need ..."), for stderr.
std::vector<std::string> compare_failures(const std::vector<CompareRow>& rows);
// CSV with the sweep's columns (docs/sweep.md), one line per schedule; with per_tensor, one line per
// schedule and tensor instead.
// `config` (the effective config) fills the SRAM size and the peaks, as in a sweep's CSV.
std::string compare_csv(const CompareOptions& options, const std::vector<CompareRow>& rows,
                        const nlohmann::json& config);
// One CSV line per thread block of every row (record_blocks): schedule, kernel launch, blockIdx, core,
// start and end in cycles and microseconds.
std::string block_times_csv(const std::vector<CompareRow>& rows);
void print_compare(std::ostream& out, const CompareOptions& options, const std::vector<CompareRow>& rows);
// Bytes in decimal units with one decimal ("34.6 MB"), as compare's and plan's tables print them.
std::string human_bytes(double bytes);
nlohmann::json compare_json(const CompareOptions& options, const std::vector<CompareRow>& rows);

}  // namespace attnsim
