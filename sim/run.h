// `attnsim run`: one trace on one machine, with the summary, the optional register table, the value checks
// and the stats JSON. Used by the CLI and by the lab tests (one run per process).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/program.h"
#include "sim/chip_report.h"
#include "sim/reference.h"
#include "sim/table.h"

namespace attnsim {

struct RunOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // -p key=value
  bool table = false;                  // print Step | Instruction | R0 | R1 | ...
  bool symbolic = false;               // registers carry expressions instead of numbers
  std::string stats_json;              // write stats here (atomically) when non-empty
  bool timing_only = false;            // tile programs: counts and cycles only, no values
  std::string timeline;                // write a Perfetto/Chrome trace of unit activity here when non-empty
  size_t timeline_limit = 200000;      // instructions kept in the timeline
  std::string timeline_cores = "all";  // whole chip: the cores the timeline shows ("0-3,17")
  std::string vcd;                     // write a VCD waveform (GTKWave) here when non-empty
  size_t vcd_limit = 100000;           // instructions drawn in the VCD
  std::string html;                    // write a step-through page (sim/html_view.h) here when non-empty
  size_t html_limit = 10000;           // instructions shown in the page
  int64_t max_instructions = isa::kDefaultMaxInstructions;  // a longer trace is refused
  // A scalar trace file at least this long streams: it is read in chunks while it runs, so memory does not
  // grow with its length (unless --table, --symbolic, --timeline, --vcd or --html keep it in memory).
  uint64_t stream_bytes = uint64_t{32} << 20;
  enum class Progress : uint8_t { Auto, On, Off };
  // Lines on stderr while a one-core run goes on: Auto once it has run a second, On from the start.
  Progress progress = Progress::Auto;
};

struct RunResult {
  std::string machine;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  std::map<std::string, uint64_t> per_opcode;
  std::map<std::string, uint64_t> dram_reads;   // per tensor
  std::map<std::string, uint64_t> dram_writes;  // per tensor
  bool tile_machine = false;
  std::map<std::string, uint64_t> hbm_bytes_read;     // per tensor, as requested by the program
  std::map<std::string, uint64_t> hbm_bytes_written;  // per tensor
  double clock_ghz = 1.0;
  uint64_t register_reads = 0;
  uint64_t register_writes = 0;
  std::vector<CheckResult> checks;
  std::vector<std::vector<std::string>> table;  // header row, then Step, Instruction, Issue, Done, R0...
  std::map<std::string, std::vector<double>> final_values;
  nlohmann::json stats;
  std::optional<ChipSummary> chip;  // set when the machine is a whole chip
  std::optional<EnergyReport>
      energy;                      // one core's (a chip's is in `chip`); none without energy: in the config
  std::vector<std::string> notes;  // where --timeline, --vcd or --html stopped, printed after the summary

  bool checks_passed() const {
    for (const auto& c : checks)
      if (!c.passed) return false;
    return true;
  }
  uint64_t total_dram_reads() const;
  uint64_t total_dram_writes() const;
  uint64_t total_hbm_bytes_read() const;
  uint64_t total_hbm_bytes_written() const;
};

RunResult run_program(const isa::Program& program, const RunOptions& options);
RunResult run_trace_file(const std::string& trace_path, const RunOptions& options);
// A trace file as a program: in memory, or streamed (options.stream_bytes) for a long scalar trace.
isa::Program load_trace(const std::string& trace_path, const RunOptions& options);

void print_summary(std::ostream& out, const isa::Program& program, const RunResult& result);

// JSON text for output. A string that is not UTF-8 (a trace's file name is bytes) is written with U+FFFD
// for its bad bytes, rather than failing after the run.
std::string json_text(const nlohmann::json& value, int indent = -1);

// Before a long command runs: an InputError for an output whose folder does not exist or cannot be written,
// or which is itself a folder, so the error does not come after minutes of simulation. Empty paths are
// skipped.
void check_output_paths(const std::vector<std::string>& paths);

// Writes to a temporary file beside `path` and renames it, so readers never see half a file.
void write_file_atomically(const std::string& path, const std::string& contents);
// The same for several files, all or none: every file is written to its temporary name before any is
// renamed, so a bad path for one leaves none of them behind.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace attnsim
