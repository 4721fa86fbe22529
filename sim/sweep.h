// `attnsim sweep`: the cartesian product of swept config keys and compare options, each point run as its own
// `attnsim compare --json` child process (SystemC elaborates once per process), --jobs at a time. Each
// finished point is appended to OUT.jsonl (the record: parameters, effective config, compare's JSON) and
// OUT.csv (one row per point x schedule); a rerun skips the points OUT.jsonl already holds.
#pragma once

#include <functional>
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
  // --shard K/N: run only the points whose index i (in sweep_points order) has i % N == K - 1, into
  // OUT.shard-K-of-N.csv/.jsonl; 0/0: the whole sweep.
  int shard = 0, shards = 0;
  // --unit-cycles: per point and schedule, also `attnsim gen` + `attnsim run --timing-only` of the same
  // trace (one-core forward configs), for each unit's busy cycles (the record's unit_busy_cycles).
  bool unit_cycles = false;
};

// `K/N` with 1 <= K <= N; throws InputError otherwise.
std::pair<int, int> parse_shard(const std::string& text);

// The files' stem: OUT without a .csv or .jsonl ending, plus `.shard-K-of-N` for a shard.
std::string sweep_output_stem(const std::string& output, int shard = 0, int shards = 0);

// `attnsim sweep merge OUT SHARD...`: joins the shards' records (SHARD is a shard's stem, .jsonl or .csv)
// into OUT.csv and OUT.jsonl in point order, as one unsharded --jobs 1 run writes them. Throws InputError,
// naming the file and line, when a point is missing or duplicated, or the shards belong to different sweeps.
// Returns 0, or 1 when a merged point failed.
int merge_sweep(const std::string& output, const std::vector<std::string>& shards);

// `attnsim sweep --slurm N`: writes OUT.sbatch (a job array of N tasks, task K running this sweep with
// --shard K/N) and OUT.merge.sbatch (merge, after the array), and submits both with sbatch unless `submit` is
// false. `args` are the sweep's arguments as given (--slurm, --sbatch, --no-submit are left out of the
// script). Returns the exit status.
int submit_slurm(const SweepSpec& spec, const std::vector<std::string>& args, int tasks,
                 const std::vector<std::string>& sbatch_args, bool submit, const std::string& self);

// Reads a YAML spec (config:, sweep: {key: values}, fixed: {key: value}, output:, jobs:) into `spec`;
// command-line axes and fixed options are added after the file's.
void read_sweep_spec(const std::string& path, SweepSpec& spec);

// Every point: the axes' values, the first axis varying slowest. Each point is {key: value} in axis order.
std::vector<std::vector<std::pair<std::string, std::string>>> sweep_points(
    const std::vector<SweepAxis>& axes);

// One finished child of run_commands: its exit status (-1 when killed by `signal`), stdout and the last
// line of its stderr.
struct CommandResult {
  int exit_status = -1;
  int signal = 0;
  std::string out, err_line;
};

// Runs each argument list (argv[0] the binary) as a child process, `jobs` at a time, as sweep points run;
// `finished(index, result)` is called under a lock as each one ends. A SIGINT/SIGTERM/SIGHUP is passed on to
// the running children and no new one starts; the results of commands never started have exit_status -1 and
// signal 0.
std::vector<CommandResult> run_commands(const std::vector<std::vector<std::string>>& commands, int jobs,
                                        const std::function<void(size_t, const CommandResult&)>& finished);

// Checks the spec (keys, conflicts, the config through a child `attnsim config`) before anything is written,
// then runs the points not already in OUT.jsonl. Returns the exit status: 0 when every point succeeded, 1
// when any failed; throws InputError for bad input. `self` is the attnsim binary to run for each point.
int run_sweep(const SweepSpec& spec, const std::string& self);
// The checks run_sweep makes before it writes anything; throws InputError.
void check_sweep(const SweepSpec& spec, const std::string& self);

}  // namespace attnsim
