// `attnsim sweep`: the cartesian product of swept config keys and compare options, each point run as its own
// `attnsim compare --json` child process (SystemC elaborates once per process), --jobs at a time. Each
// finished point is appended to OUT.jsonl (the record: parameters, effective config, compare's JSON) and
// OUT.csv (one row per point x schedule); a rerun skips the points OUT.jsonl already holds.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attnsim {

// A byte count with an optional suffix (KiB, MiB, GiB binary; KB, MB, GB decimal), or a plain integer.
// nullopt when `text` is not one.
std::optional<int64_t> parse_size(const std::string& text);

// One swept value list: comma-separated items, each a value or a range `A..B*R` (geometric, R > 1) or
// `A..B+S` (arithmetic, S > 0), inclusive of B when the steps reach it. Byte counts with a suffix become
// plain integers (-p takes integers). Throws std::invalid_argument on a malformed item or a duplicate.
std::vector<std::string> parse_sweep_values(const std::string& text);

// The compare options a sweep can vary or fix (besides dotted config keys, passed as -p key=value).
const std::vector<std::string>& sweep_option_keys();

struct SweepAxis {
  std::string key;  // a dotted config key or one of sweep_option_keys()
  std::vector<std::string> values;
  bool is_config_key() const { return key.find('.') != std::string::npos; }
};

// `key=values`; throws InputError for an unknown option key (with did-you-mean) or malformed values.
SweepAxis parse_sweep_axis(const std::string& text);

// The command-line arguments of compare that set `key` to `value` (["--N", "256"], ["--causal"], [],
// ["-p", "sram.capacity_bytes=32768"]); throws InputError for a value the option cannot take.
std::vector<std::string> option_args(const std::string& key, const std::string& value);

struct SweepSpec {
  std::string config_path;
  std::vector<SweepAxis> axes;
  std::vector<std::pair<std::string, std::string>> fixed;  // key, value: the same for every point
  std::string output;                                      // OUT: writes OUT.csv and OUT.jsonl
  int jobs = 0;                                            // 0: all cores
  bool retry_failed = false;  // run the points OUT.jsonl records as failed again (else they are skipped)
};

// Reads a YAML spec (config:, sweep: {key: values}, fixed: {key: value}, output:, jobs:) into `spec`;
// command-line axes and fixed options are added after the file's.
void read_sweep_spec(const std::string& path, SweepSpec& spec);

// Every point: the axes' values, the first axis varying slowest. Each point is {key: value} in axis order.
std::vector<std::vector<std::pair<std::string, std::string>>> sweep_points(
    const std::vector<SweepAxis>& axes);

// Checks the spec (keys, conflicts, the config through a child `attnsim config`) before anything is written,
// then runs the points not already in OUT.jsonl. Returns the exit status: 0 when every point succeeded, 1
// when any failed; throws InputError for bad input. `self` is the attnsim binary to run for each point.
int run_sweep(const SweepSpec& spec, const std::string& self);

}  // namespace attnsim
