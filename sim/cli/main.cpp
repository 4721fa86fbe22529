// The attnsim command line: run, compare, gen, disasm, config, validate. Every subcommand has --help. Input
// errors print `file:line:col: error: ...` and exit with status 2; a failed value check exits with 1.
#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/suggest.h"
#include "models/common/parallel.h"
#include "models/common/registry.h"
#include "sim/chip_report.h"
#include "sim/cli/gen_kinds.h"
#include "sim/compare.h"
#include "sim/machine.h"
#include "sim/plan.h"
#include "sim/plot.h"
#include "sim/probe_compare.h"
#include "sim/probe_samples.h"
#include "sim/run.h"
#include "sim/sweep.h"
#include "sim/validate.h"
#include "traces/attention_backward.h"
#include "traces/attention_forward.h"
#include "traces/hot_part.h"
#include "traces/l2_probe.h"
#include "traces/scalar.h"
#include "traces/stream.h"
#include "traces/tile.h"

namespace po = boost::program_options;
using namespace attnsim;

namespace {

constexpr int kExitCheckFailed = 1;
constexpr int kExitInputError = 2;
constexpr int kExitInternalError = 3;

const char* kUsage = R"(usage: attnsim <command> [options]
       attnsim --version

commands:
  run      run a trace on a machine config and print cycles, counts and checks
  compare  run every forward attention schedule on a machine and compare HBM traffic, cycles, errors
  plan     search block sizes and loop orders by simulation for the least DRAM bytes, SM<->L2 bytes or cycles
  sweep    run compare over the cartesian product of config keys and options, in parallel, to CSV and JSONL
  plot     draw a sweep's CSV as an SVG chart (any columns, or the named plots: sram, n, roofline, units)
  gen      generate a trace (scalar softmax labs, online attention, tiled attention)
  disasm   assemble a trace and print it back in canonical form
  config   print a machine's effective parameters with units and descriptions
  validate hold the simulator's predictions against GPU measurements (validation/data/*.csv)
  probe    stream a buffer through a whole chip's L2 as validation/l2_probe.cu does, print every level

`attnsim <command> --help` describes each command's options. The sequence length is --N everywhere (--n is
accepted too).
)";

struct Parsed {
  po::variables_map vars;
  bool help = false;
};

Parsed parse(const std::string& command, po::options_description& options,
             po::positional_options_description& positional, const std::vector<std::string>& args,
             const char* synopsis) {
  options.add_options()("help,h", "show this help");
  Parsed parsed;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), parsed.vars);
    if (parsed.vars.count("help")) {
      std::cout << "usage: attnsim " << command << " " << synopsis << "\n\n" << options << "\n";
      parsed.help = true;
      return parsed;
    }
    po::notify(parsed.vars);
  } catch (const po::error& e) {
    throw InputError("attnsim " + command, {},
                     std::string(e.what()) + " (see attnsim " + command + " --help)");
  }
  return parsed;
}

// The terminal's width when stdout is one, so --table fits without a --width; 160 when piped (stable output).
size_t terminal_width() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 40)
    return size.ws_col;
  return 160;
}

// --progress auto|on|off, as run's or compare's enum (both name the same three modes).
template <class Progress>
Progress parse_progress(const std::string& text, const std::string& command) {
  if (text == "auto") return Progress::Auto;
  if (text == "on") return Progress::On;
  if (text == "off") return Progress::Off;
  throw InputError(command, {}, "--progress must be auto, on or off");
}

// The bounds of run's --*-limit options: at least one, and small enough that a limit's record fits memory.
void check_run_limits(const RunOptions& options) {
  constexpr size_t kMostRecorded = size_t{1} << 28;
  auto check = [](const char* option, uint64_t value, uint64_t most) {
    if (value < 1 || value > most)
      throw InputError("attnsim run", {}, fmt::format("--{} must be from 1 to {}", option, most));
  };
  check("timeline-limit", options.timeline_limit, kMostRecorded);
  check("vcd-limit", options.vcd_limit, kMostRecorded);
  check("html-limit", options.html_limit, kMostRecorded);
  check("max-instructions", static_cast<uint64_t>(std::max<int64_t>(options.max_instructions, 0)),
        uint64_t{1} << 40);
}

int cmd_run(const std::vector<std::string>& args) {
  std::string progress = "auto";
  RunOptions options;
  TableLayout layout;
  layout.width = terminal_width();
  std::string trace;
  po::options_description desc("run options");
  desc.add_options()("config,c", po::value(&options.config_path)->required(),
                     "machine YAML (configs/*.yaml)")("trace", po::value(&trace)->required(), "trace file")(
      "table", po::bool_switch(&options.table),
      "print the registers after every step, with each instruction's issue and done cycle")(
      "width", po::value(&layout.width),
      "--table: fit the table to this many columns (default: the terminal's, else 160)")(
      "wrap", po::bool_switch(&layout.wrap), "--table: wrap long cells instead of eliding their middle")(
      "symbolic", po::bool_switch(&options.symbolic),
      "registers carry expressions (a00·b00) instead of numbers")(
      "stats-json", po::value(&options.stats_json), "write all stats and the effective config as JSON")(
      "timing-only", po::bool_switch(&options.timing_only),
      "tile programs: skip values, keep counts and cycles")(
      "timeline", po::value(&options.timeline),
      "write each unit's activity as a Perfetto / chrome://tracing JSON (first 200,000 instructions); on a "
      "whole chip a process per core, with its thread blocks and units")(
      "timeline-cores", po::value(&options.timeline_cores)->default_value(options.timeline_cores),
      "--timeline on a whole chip: the cores shown, all or a list such as 0-3,17")(
      "vcd", po::value(&options.vcd),
      "write a VCD waveform for GTKWave: registers, unit busy, DRAM accesses; tile machines: unit busy, SRAM "
      "occupancy (first 100,000 instructions)")(
      "html", po::value(&options.html),
      "write a self-contained page that steps through the run in a browser: the machine, the trace, "
      "registers or SRAM buffers, DRAM/HBM traffic and cycles (first 10,000 instructions)")(
      "timeline-limit", po::value(&options.timeline_limit)->default_value(options.timeline_limit),
      "--timeline: instructions kept")("vcd-limit",
                                       po::value(&options.vcd_limit)->default_value(options.vcd_limit),
                                       "--vcd: instructions drawn")(
      "html-limit", po::value(&options.html_limit)->default_value(options.html_limit),
      "--html: instructions shown")(
      "max-instructions", po::value(&options.max_instructions)->default_value(isa::kDefaultMaxInstructions),
      "refuse a trace with more instructions (a scalar trace file over 32 MiB streams: memory does not grow "
      "with its length)")("progress", po::value(&progress)->default_value("auto"),
                          "progress lines on stderr: auto (once a one-core run passes a second), on, off")(
      "stream-bytes", po::value(&options.stream_bytes)->default_value(options.stream_bytes),
      "a scalar trace file at least this long is read in chunks while it runs")(
      "param,p", po::value(&options.overrides)->composing(), "override a config key: -p regfile.count=6");
  po::positional_options_description pos;
  pos.add("trace", 1);
  auto parsed = parse("run", desc, pos, args,
                      "-c CONFIG TRACE [--table] [--symbolic] [--stats-json FILE] [--timeline FILE] [--vcd "
                      "FILE] [--html FILE] [-p K=V]...");
  if (parsed.help) return 0;
  check_run_limits(options);
  options.progress = parse_progress<RunOptions::Progress>(progress, "attnsim run");
  check_output_paths({options.stats_json, options.timeline, options.vcd, options.html});
  isa::Program program = load_trace(trace, options);
  RunResult result = run_program(program, options);
  if (options.table) {
    print_table(std::cout, result.table, layout);
    std::cout << "\n";
  }
  print_summary(std::cout, program, result);
  return result.checks_passed() ? 0 : kExitCheckFailed;
}

// Comma-separated numbers for --x and --v.
std::vector<double> split_numbers(const std::string& text) {
  std::vector<double> values;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      values.push_back(std::stod(item));
    } catch (const std::exception&) {
      throw InputError("attnsim gen", {}, "not a number: '" + item + "'");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

// The command that made a trace, for its first line (the output path says nothing about the trace).
std::string generated_by(const std::vector<std::string>& args) {
  std::string command_line = "attnsim gen";
  for (size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "-o" || args[i] == "--output") && i + 1 < args.size()) {
      ++i;
      continue;
    }
    if (args[i].rfind("--output=", 0) == 0) continue;
    command_line += " " + args[i];
  }
  return "# generated by: " + command_line + "\n";
}

std::string gen_synopsis() {
  std::string synopsis = "KIND [--n N] [--seed S] [--x 1,2,3] [--v ...] [-o FILE]\n\nkinds:\n";
  for (const auto& kind : cli::gen_kinds())
    synopsis += fmt::format("  {:18} {}\n", kind.name, kind.description);
  return synopsis;
}

// The kind's program, stopped with an input error once it passes `max_instructions` (a shape whose lower
// bound passed check_gen_request may still be too long).
isa::Program generate_bounded(const cli::GenKind& generator, const cli::GenInputs& in,
                              int64_t max_instructions) {
  struct LimitScope {
    explicit LimitScope(size_t limit) { isa::generator_instruction_limit = limit; }
    ~LimitScope() { isa::generator_instruction_limit = SIZE_MAX; }
  } scope(static_cast<size_t>(max_instructions));
  try {
    return generator.make(in);
  } catch (const std::length_error& e) {
    throw std::invalid_argument(
        fmt::format("{}: {}, the most a run reads; generate a smaller shape, or raise the limit with "
                    "--max-instructions N "
                    "here and in run",
                    generator.name, e.what()));
  }
}

int cmd_gen(const std::vector<std::string>& args) {
  std::string kind, output, x_values, v_values;
  cli::GenInputs in;
  int64_t block = 0, seed = 1, max_instructions = isa::kDefaultMaxInstructions;
  bool single_buffer = false;
  std::string dtype = "f16";
  po::options_description desc("gen options");
  desc.add_options()("kind", po::value(&kind)->required(), "generator name")(
      "n", po::value(&in.scalar.n)->default_value(8),
      "number of elements (scalar kinds) or sequence length (tile kinds) or rows (lab 7 kinds); --N is the "
      "same")("d", po::value(&in.shape.d)->default_value(64),
              "tile kinds: head dimension (lab 7 kinds: 4 unless given)")(
      "block", po::value(&block)->default_value(64), "tile kinds: B_r = B_c")(
      "block-q", po::value(&in.shape.block_q), "tile kinds: B_r, query rows per tile (overrides --block)")(
      "block-k", po::value(&in.shape.block_k), "tile kinds: B_c, key rows per tile (overrides --block)")(
      "causal", po::bool_switch(&in.shape.causal), "tile kinds: causal mask")(
      "double-buffer", po::bool_switch(&in.shape.double_buffer), "tile kinds: prefetch the next K/V block")(
      "single-buffer", po::bool_switch(&single_buffer), "tile kinds: no prefetch (the default here)")(
      "registers", po::bool_switch(&in.registers),
      "flash2, two-pass, flash1: keep S, P, O_i and the row statistics in the tile register file, as GPU "
      "kernels keep them in registers (flash1: what each step loads and stores lands in SRAM; the config "
      "needs tile_regs)")(
      "ping-pong", po::bool_switch(&in.ping_pong),
      "flash2: each query block's two halves as instruction groups (.group) whose softmax and matrix "
      "products interleave, as FlashAttention-3's two consumer warp groups")(
      "sum-after-product", po::bool_switch(&in.sum_after_product),
      "flash2: what P V_j needs first (max, O rescaled, P), the row sum after it, as FlashAttention-2's "
      "compiled code")("dtype", po::value(&dtype)->default_value("f16"),
                       "tile kinds: storage dtype of Q, K, V, O (lab 7 kinds: f32 unless given)")(
      "heads", po::value(&in.heads)->default_value(1), "attention kinds: batch x heads, independent")(
      "slots", po::value(&in.slots)->default_value(0),
      "outer-product: output rows (with their m, l) kept in SRAM across all key rows, 0..n")(
      "break-no-max", po::bool_switch(&in.breaks.no_max_subtraction),
      "forward kinds: BREAK IT, never subtract the max")("break-no-rescale",
                                                         po::bool_switch(&in.breaks.no_rescaling),
                                                         "forward kinds: BREAK IT, drop the rescaling")(
      "qk-range", po::value(&in.qk_range)->default_value(1.0), "forward kinds: Q, K uniform in [-r, r)")(
      "seed", po::value(&seed)->default_value(1), "seed of the random inputs, 0 or more")(
      "lo", po::value(&in.scalar.lo)->default_value(-4.0), "random inputs: lower bound")(
      "hi", po::value(&in.scalar.hi)->default_value(4.0), "random inputs: upper bound")(
      "x", po::value(&x_values), "explicit x values, comma-separated (sets n)")(
      "v", po::value(&v_values), "explicit v values, comma-separated")(
      "output,o", po::value(&output), "write the trace here instead of stdout")(
      "max-instructions", po::value(&max_instructions)->default_value(isa::kDefaultMaxInstructions),
      "refuse to write a trace with more instructions (run's --max-instructions)");
  po::positional_options_description pos;
  pos.add("kind", 1);
  const std::string synopsis = gen_synopsis();
  auto parsed = parse("gen", desc, pos, args, synopsis.c_str());
  if (parsed.help) return 0;
  check_output_paths({output});
  if (!x_values.empty()) {
    in.scalar.x = split_numbers(x_values);
    in.scalar.n = static_cast<int64_t>(in.scalar.x->size());
  }
  if (!v_values.empty()) in.scalar.v = split_numbers(v_values);
  if (single_buffer && in.shape.double_buffer)
    throw InputError("attnsim gen", {}, "--single-buffer and --double-buffer contradict each other");
  if (seed < 0) throw InputError("attnsim gen", {}, fmt::format("--seed must be 0 or more, not {}", seed));
  if (max_instructions < 1) throw InputError("attnsim gen", {}, "--max-instructions must be at least 1");
  in.scalar.seed = static_cast<uint64_t>(seed);
  in.d_given = !parsed.vars["d"].defaulted();
  in.dtype_given = !parsed.vars["dtype"].defaulted();
  isa::Program program;
  try {
    const cli::GenKind& generator = cli::find_gen_kind(kind);
    in.shape.n = in.scalar.n;
    in.shape.seed = in.scalar.seed;
    if (!parsed.vars.count("block-q")) in.shape.block_q = block;
    if (!parsed.vars.count("block-k")) in.shape.block_k = block;
    auto parsed_dtype = parse_dtype(dtype);
    if (!parsed_dtype) throw std::invalid_argument("unknown dtype '" + dtype + "'");
    in.shape.dtype = *parsed_dtype;
    cli::check_gen_request(generator, in, max_instructions);
    program = generate_bounded(generator, in, max_instructions);
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim gen", {}, e.what());
  }
  std::string text = generated_by(args) + isa::disassemble(program);
  if (output.empty())
    std::cout << text;
  else
    write_file_atomically(output, text);
  return 0;
}

int cmd_compare(const std::vector<std::string>& args) {
  CompareOptions options;
  std::string dtype = "f16", values = "auto", progress = "auto";
  bool json = false, csv = false, single_buffer = false, double_buffer = false, timing_only = false;
  std::string json_file, block_times;
  int compare_jobs = 0, value_threads = 0;
  po::options_description desc("compare options");
  desc.add_options()("config,c", po::value(&options.config_path)->required(),
                     "tile machine YAML (configs/h100.yaml, ...)")(
      "N", po::value(&options.n)->default_value(4096), "sequence length (--n is the same)")(
      "d", po::value(&options.d)->default_value(64), "head dimension")(
      "heads", po::value(&options.heads)->default_value(1), "heads per batch element")(
      "batch", po::value(&options.batch)->default_value(1), "batch size")(
      "causal", po::bool_switch(&options.causal),
      "causal mask (fully masked tiles skipped where the schedule can)")(
      "dtype", po::value(&dtype)->default_value("f16"), "storage dtype of Q, K, V, O: f16, bf16, f32")(
      "block", po::value(&options.block)->default_value(0), "B_r = B_c; 0 plans them from the SRAM size")(
      "block-q", po::value(&options.block_q)->default_value(0),
      "B_r, query rows per tile (overrides --block)")(
      "block-k", po::value(&options.block_k)->default_value(0), "B_c, key rows per tile (overrides --block)")(
      "planner", po::value(&options.planner),
      "how blocks are planned without --block: paper (B_c = M/4d, B_r = min(B_c, d)) or hardware (powers "
      "of two, multiples of the MXU tile, the largest that fit double-buffered); default: the config's "
      "planner: key (hardware on the a100/h100/h200 presets)")(
      "values", po::value(&values)->default_value("auto"),
      "compute values and check them: on (every head), off (timing-only), auto (N <= 8192: every head "
      "while batch x heads x N^2 <= 8192^2, beyond that the first head simulated alone)")(
      "jobs,j", po::value(&compare_jobs)->default_value(0),
      "schedules simulated at once, each in its own process; 0: all cores (results are the same for any "
      "number)")("threads", po::value(&value_threads)->default_value(0),
                 "threads for value arithmetic (products, exp, the float64 reference); 0: all cores")(
      "timing-only", po::bool_switch(&timing_only), "the same as --values off (as in attnsim run)")(
      "single-buffer", po::bool_switch(&single_buffer), "do not prefetch the next K/V block")(
      "double-buffer", po::bool_switch(&double_buffer), "prefetch the next K/V block (the default here)")(
      "keys-descending", po::bool_switch(&options.keys_descending),
      "flash2: each query block walks its key blocks from the last one down (FlashAttention-2's order)")(
      "ping-pong", po::bool_switch(&options.ping_pong),
      "flash2: each query block as two halves whose softmax and matrix products interleave (two consumer "
      "warp groups, FlashAttention-3's ping-pong)")(
      "sum-after-product", po::bool_switch(&options.sum_after_product),
      "flash2: what P V_j needs first (max, O rescaled, P), the row sum after it, as FlashAttention-2's "
      "compiled code (docs/chip.md, \"The row sum after the product\")")(
      "registers", po::bool_switch(&options.registers),
      "flash2, two-pass: S, P, O and the statistics in the tile register file, as GPU kernels keep them")(
      "schedule", po::value(&options.schedules)->composing(), "run only these (repeatable)")(
      "plan", po::bool_switch(&options.show_plan),
      "print both planner rules' blocks per schedule, how they were chosen and that they fit")(
      "backward", po::bool_switch(&options.backward),
      "compare the backward schedules (flash2-bwd, flash2-bwd-no-d, naive-bwd) instead")(
      "per-tensor", po::bool_switch(&options.per_tensor), "also each schedule's bytes per tensor")(
      "json", po::bool_switch(&json), "print JSON instead of the table")(
      "csv", po::bool_switch(&csv),
      "print CSV instead of the table: the sweep's columns (docs/sweep.md); with --per-tensor a line per "
      "schedule and tensor")("json-file", po::value(&json_file), "also write the JSON here")(
      "progress", po::value(&progress)->default_value("auto"),
      "progress lines on stderr: auto (once a schedule runs past a second; redrawn on a terminal), on, off")(
      "block-times", po::value(&block_times),
      "whole chip: write when and on which core each thread block ran (CSV, one line a block)")(
      "param,p", po::value(&options.overrides)->composing(),
      "override a config key: -p sram.capacity_bytes=100000");
  po::positional_options_description pos;
  auto parsed =
      parse("compare", desc, pos, args,
            "-c CONFIG [--N 4096] [--d 64] [--heads H] [--batch B] [--causal] [--dtype f16] [--block B] "
            "[--planner paper|hardware] [--values auto|on|off] [--json | --csv] [--per-tensor]");
  if (parsed.help) return 0;
  check_output_paths({json_file, block_times});
  auto parsed_dtype = parse_dtype(dtype);
  if (!parsed_dtype) throw InputError("attnsim compare", {}, "unknown dtype '" + dtype + "'");
  options.dtype = *parsed_dtype;
  if (compare_jobs < 0 || value_threads < 0)
    throw InputError("attnsim compare", {}, "--jobs and --threads must be 0 (all cores) or more");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.jobs = compare_jobs > 0 ? compare_jobs : cores;
  ValueThreads::set_count(value_threads > 0 ? value_threads : cores);
  if (values == "on")
    options.values = CompareOptions::Values::On;
  else if (values == "off")
    options.values = CompareOptions::Values::Off;
  else if (values != "auto")
    throw InputError("attnsim compare", {}, "--values must be auto, on or off");
  if (timing_only) {
    if (values == "on") throw InputError("attnsim compare", {}, "--timing-only contradicts --values on");
    options.values = CompareOptions::Values::Off;
  }
  if (single_buffer && double_buffer)
    throw InputError("attnsim compare", {}, "--single-buffer and --double-buffer contradict each other");
  if (json && csv) throw InputError("attnsim compare", {}, "--json and --csv: choose one");
  options.progress = parse_progress<CompareOptions::Progress>(progress, "attnsim compare");
  options.double_buffer = !single_buffer;
  options.record_blocks = !block_times.empty();
  std::vector<CompareRow> rows;
  nlohmann::json effective;
  try {
    rows = run_compare(options, &effective);
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim compare", {}, e.what());
  }
  nlohmann::json j = compare_json(options, rows);
  std::vector<std::pair<std::string, std::string>> files;
  if (!json_file.empty()) files.emplace_back(json_file, json_text(j, 2) + "\n");
  if (!block_times.empty()) files.emplace_back(block_times, block_times_csv(rows));
  write_files_atomically(files);
  if (json)
    std::cout << json_text(j, 2) << "\n";
  else if (csv)
    std::cout << compare_csv(options, rows, effective);
  else
    print_compare(std::cout, options, rows);
  std::cout << std::flush;
  // A schedule that did not run is named on stderr (its reason last, for a sweep's record); the others'
  // figures are printed. Exit 2 when none ran (nothing to compare), 1 when some did not or a check failed.
  const std::vector<std::string> failures = compare_failures(rows);
  for (const auto& line : failures) std::cerr << "attnsim compare: " << line << "\n";
  if (failures.size() == rows.size() && !rows.empty()) return kExitInputError;
  if (!failures.empty()) return kExitCheckFailed;
  for (const auto& r : rows)
    if (r.passed && !*r.passed) return kExitCheckFailed;
  return 0;
}

int cmd_plan(const std::vector<std::string>& args) {
  PlanSearchOptions options;
  CompareOptions& c = options.compare;
  std::string dtype = "f16";
  bool single_buffer = false, quiet = false;
  po::options_description desc("plan options (docs/planner.md)");
  desc.add_options()("config,c", po::value(&c.config_path)->required(),
                     "tile machine YAML (configs/h100.yaml, ...)")("N", po::value(&c.n)->default_value(4096),
                                                                   "sequence length (--n is the same)")(
      "d", po::value(&c.d)->default_value(64), "head dimension")(
      "heads", po::value(&c.heads)->default_value(1), "heads per batch element")(
      "batch", po::value(&c.batch)->default_value(1), "batch size")(
      "causal", po::bool_switch(&c.causal), "causal mask")("dtype", po::value(&dtype)->default_value("f16"),
                                                           "storage dtype of Q, K, V, O: f16, bf16, f32")(
      "objective", po::value(&options.objective),
      "dram (whole-chip configs; the default there), sm_l2 (SM<->L2 bytes, HBM bytes on one core; the "
      "default there), cycles or energy (dynamic energy, whole chip; needs an energy: section)")(
      "schedule", po::value(&c.schedules)->composing(),
      "schedules to try (repeatable); default flash1 and flash2")(
      "backward", po::bool_switch(&c.backward), "plan the backward (flash2-bwd unless --schedule)")(
      "single-buffer", po::bool_switch(&single_buffer), "no K/V prefetch")(
      "top", po::value(&options.top)->default_value(10), "rows to print")(
      "jobs,j", po::value(&options.jobs)->default_value(0), "candidates at once; 0: all cores")(
      "quiet,q", po::bool_switch(&quiet), "no progress lines on stderr")(
      "param,p", po::value(&c.overrides)->composing(),
      "override a config key: -p sram.capacity_bytes=128KiB");
  po::positional_options_description pos;
  auto parsed =
      parse("plan", desc, pos, args,
            "-c CONFIG [--N 4096] [--d 64] [--heads H] [--causal] [--objective dram|sm_l2|cycles|energy] "
            "[--schedule S]... [--jobs J] [--top K]");
  if (parsed.help) return 0;
  auto parsed_dtype = parse_dtype(dtype);
  if (!parsed_dtype) throw InputError("attnsim plan", {}, "unknown dtype '" + dtype + "'");
  c.dtype = *parsed_dtype;
  c.double_buffer = !single_buffer;
  options.progress = !quiet;
  if (options.top < 1) throw InputError("attnsim plan", {}, "--top must be at least 1");
  if (options.jobs < 0) throw InputError("attnsim plan", {}, "--jobs must be 0 (all cores) or more");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  PlanResult result;
  try {
    result = search_plans(options, self);
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim plan", {}, e.what());
  }
  print_plan(std::cout, options, result);
  for (const auto& candidate : result.candidates)
    if (candidate.ok) return 0;
  return kExitInputError;
}

// One spelling per option across subcommands: the sequence length is --N (compare, sweep, plan) and --n
// (gen) historically; each accepts the other.
std::vector<std::string> canonical_spellings(const std::string& command, std::vector<std::string> args) {
  const std::string from = command == "gen" ? "--N" : "--n", to = command == "gen" ? "--n" : "--N";
  if (command != "gen" && command != "compare" && command != "sweep" && command != "plan") return args;
  for (auto& a : args) {
    if (a == from)
      a = to;
    else if (a.rfind(from + "=", 0) == 0)
      a = to + a.substr(from.size());
  }
  return args;
}

// The compare options a sweep fixes, in the order sweep_option_keys() lists them, then -p overrides.
std::vector<std::pair<std::string, std::string>> fixed_options(const po::variables_map& vars) {
  std::vector<std::pair<std::string, std::string>> fixed;
  for (const auto& key : sweep_option_keys()) {
    if (!vars.count(key) || vars[key].defaulted()) continue;
    if (key == "causal" || key == "backward") {
      if (vars[key].as<bool>()) fixed.emplace_back(key, "true");
    } else if (key == "schedule") {
      for (const auto& s : vars[key].as<std::vector<std::string>>()) fixed.emplace_back(key, s);
    } else {
      fixed.emplace_back(key, vars[key].as<std::string>());
    }
  }
  if (vars.count("param"))
    for (const auto& kv : vars["param"].as<std::vector<std::string>>()) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || kv.find('.') > eq)
        throw InputError("attnsim sweep", {}, "-p " + kv + ": expected section.key=value");
      fixed.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  return fixed;
}

int cmd_sweep(const std::vector<std::string>& args) {
  SweepSpec spec;
  std::string spec_file;
  std::vector<std::string> sweeps;
  po::options_description desc("sweep options (any compare option not swept is fixed for every point)");
  desc.add_options()("config,c", po::value(&spec.config_path), "machine YAML (configs/h100-sm.yaml, ...)")(
      "sweep", po::value(&sweeps)->composing(),
      "key=values, repeatable: a config key (sram.capacity_bytes) or a compare option (N, d, heads, batch, "
      "causal, schedule, block-q, block-k, block, dtype, values, backward); values: 64,128,256 or ranges "
      "32KiB..1MiB*2 (geometric), 512..4096+512 (arithmetic); KiB, MiB, GiB, KB, MB, GB suffixes")(
      "spec", po::value(&spec_file),
      "a YAML sweep spec: config:, sweep: {key: values}, fixed: {key: value}, "
      "output:, jobs: (docs/sweep.md)")("output,o", po::value(&spec.output),
                                        "write OUT.csv and OUT.jsonl (appended; a rerun resumes)")(
      "jobs,j", po::value(&spec.jobs)->default_value(0), "points at once; 0: all cores")(
      "unit-cycles", po::bool_switch(&spec.unit_cycles),
      "also each unit's busy cycles (DMA, MXU, VPU) per schedule, by a second timing-only run of the same "
      "trace (one-core configs; for attnsim plot --kind units)")(
      "retry-failed", po::bool_switch(&spec.retry_failed),
      "run again the points OUT.jsonl records as failed (a rerun skips them otherwise)")(
      "N", po::value<std::string>(), "sequence length")("d", po::value<std::string>(), "head dimension")(
      "heads", po::value<std::string>(), "heads per batch element")(
      "batch", po::value<std::string>(), "batch size")("causal", po::bool_switch(), "causal mask")(
      "backward", po::bool_switch(), "the backward schedules")(
      "dtype", po::value<std::string>(), "f16, bf16, f32")("block", po::value<std::string>(), "B_r = B_c")(
      "block-q", po::value<std::string>(), "B_r")("block-k", po::value<std::string>(), "B_c")(
      "values", po::value<std::string>(), "auto, on, off")(
      "schedule", po::value<std::vector<std::string>>()->composing(), "run only these (repeatable)")(
      "param,p", po::value<std::vector<std::string>>()->composing(),
      "fix a config key: -p sram.capacity_bytes=128KiB")(
      "shard", po::value<std::string>(),
      "K/N: run only shard K of N (every N-th point) into OUT.shard-K-of-N.*; join with attnsim sweep merge")(
      "slurm", po::value<int>(),
      "N: write OUT.sbatch (a Slurm array of N shards) and OUT.merge.sbatch, submit")(
      "sbatch", po::value<std::vector<std::string>>()->composing(),
      "with --slurm: an sbatch option for both jobs (--sbatch=--partition=cpu), repeatable")(
      "no-submit", po::bool_switch(), "with --slurm: write the scripts, do not submit them");
  po::positional_options_description pos;
  if (!args.empty() && args[0] == "merge") {
    if (args.size() == 2 && (args[1] == "--help" || args[1] == "-h")) {
      std::cout << "usage: attnsim sweep merge OUT SHARD...\n\njoins the shards of one sweep (--shard K/N; "
                   "SHARD is a shard's OUT.shard-K-of-N, .csv or .jsonl) into OUT.csv and OUT.jsonl in point "
                   "order;\na missing or doubled point is an error (exit 2), a failed point exit 1\n";
      return 0;
    }
    if (args.size() < 3)
      throw InputError("attnsim sweep merge", {}, "usage: attnsim sweep merge OUT SHARD...");
    return merge_sweep(args[1], std::vector<std::string>(args.begin() + 2, args.end()));
  }
  auto parsed = parse("sweep", desc, pos, args,
                      "-c CONFIG --sweep KEY=VALUES [--sweep ...] [--spec FILE] [compare options] -o OUT "
                      "[--jobs N] [--shard K/N | --slurm N]\n       attnsim sweep merge OUT SHARD...");
  if (parsed.help) return 0;
  if (parsed.vars.count("shard")) {
    const auto [shard, shards] = parse_shard(parsed.vars["shard"].as<std::string>());
    spec.shard = shard;
    spec.shards = shards;
  }
  if (spec.jobs < 0) throw InputError("attnsim sweep", {}, "--jobs must be 0 (all cores) or more");
  if (!spec_file.empty()) read_sweep_spec(spec_file, spec);
  for (const auto& s : sweeps) spec.axes.push_back(parse_sweep_axis(s));
  for (auto& f : fixed_options(parsed.vars)) spec.fixed.push_back(std::move(f));
  if (spec.axes.empty()) throw InputError("attnsim sweep", {}, "nothing to sweep: --sweep key=values");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  if (parsed.vars.count("slurm"))
    return submit_slurm(spec, args, parsed.vars["slurm"].as<int>(),
                        parsed.vars.count("sbatch") ? parsed.vars["sbatch"].as<std::vector<std::string>>()
                                                    : std::vector<std::string>{},
                        !parsed.vars["no-submit"].as<bool>(), self);
  return run_sweep(spec, self);
}

int cmd_plot(const std::vector<std::string>& args) {
  PlotOptions o;
  std::string y;
  std::vector<std::string> where;
  po::options_description desc("plot options (docs/plots.md)");
  desc.add_options()("csv", po::value(&o.csv_path)->required(),
                     "the CSV (a sweep's OUT.csv, or validate --csv's)")("output,o", po::value(&o.output),
                                                                         "the SVG to write")(
      "kind", po::value(&o.kind)->default_value("lines"),
      "lines (--x, --y, --series); scatter (the same as points, with y = x: predicted vs measured); or a "
      "named plot that picks its columns: sram (bytes vs SRAM size with "
      "N^2 d^2/M and |Q|+|K|+|V|+|O|), n (bytes vs N), roofline, units (busy cycles by unit, stacked; needs "
      "sweep --unit-cycles)")("x", po::value(&o.x), "the x column")(
      "y", po::value(&y), "the y column, or several: COL,COL")("series", po::value(&o.series),
                                                               "one line per value of this column")(
      "where", po::value(&where)->composing(), "COL=VALUE: only rows with that cell, repeatable")(
      "log-x", po::bool_switch(&o.log_x), "logarithmic x axis, a tick per decade")(
      "log-y", po::bool_switch(&o.log_y), "logarithmic y axis, a tick per decade")(
      "title", po::value(&o.title), "the chart's title (default: from the columns)");
  po::positional_options_description pos;
  pos.add("csv", 1);
  auto parsed =
      parse("plot", desc, pos, args,
            "RESULTS.csv [--kind lines|scatter|sram|n|roofline|units] [--x COL --y COL[,COL] [--series COL]] "
            "[--log-x] [--log-y] [--where COL=VALUE] [--title TEXT] -o OUT.svg");
  if (parsed.help) return 0;
  check_output_paths({o.output});
  for (size_t start = 0; !y.empty() && start <= y.size();) {
    const size_t comma = std::min(y.find(',', start), y.size());
    o.y.push_back(y.substr(start, comma - start));
    start = comma + 1;
  }
  for (const auto& w : where) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("attnsim plot", {}, "--where " + w + ": expected COLUMN=VALUE");
    o.where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  plot_csv(o);
  std::cerr << "plot: wrote " << o.output << "\n";
  return 0;
}

// --placements K --placement-step-mib S: offsets 0, S, ..., (K-1) S MiB; none for one placement.
std::vector<uint64_t> placement_offsets(int64_t placements, int64_t step_mib) {
  if (placements < 1 || placements > 64)
    throw InputError("attnsim validate", {},
                     fmt::format("--placements must be from 1 to 64, not {}", placements));
  if (step_mib < 1 || step_mib > (int64_t{1} << 20))
    throw InputError("attnsim validate", {},
                     fmt::format("--placement-step-mib must be from 1 to 2^20, not {}", step_mib));
  std::vector<uint64_t> offsets;
  if (placements == 1) return offsets;
  for (int64_t k = 0; k < placements; ++k) offsets.push_back(static_cast<uint64_t>(k * step_mib) << 20);
  return offsets;
}

int cmd_validate(const std::vector<std::string>& args) {
  std::string config_path, csv_file, block_times, timeline_file, clocks_from;
  std::vector<std::string> data, overrides;
  double hot_mib = 0;
  int64_t placements = 1, placement_step_mib = 37;
  bool gpu_median = false;
  TimelineRequest timeline;
  po::options_description desc("validate options");
  desc.add_options()("config,c", po::value(&config_path)->required(), "machine YAML (configs/h100.yaml)")(
      "data", po::value(&data)->required(),
      "measurements CSV files, figures over all their rows (validation/data/h100_tc_*.csv)")(
      "param,p", po::value(&overrides)->composing(),
      "override a config key, to see what a parameter moves: -p l2.far_data=copy")(
      "csv", po::value(&csv_file),
      "also write every row's predicted and measured bytes and time here (for attnsim plot)")(
      "block-times", po::value(&block_times),
      "whole chip: also write when and on which core each thread block of every row ran (CSV), to set "
      "beside the GPU's per-block times (validation/run_block_times.sh)")(
      "hot-mib", po::value(&hot_mib),
      "whole chip: run each row's kernels between two reads of a buffer of this many MiB by every core, "
      "the L2 kept between kernels, and print the share of it the kernels pushed out of the L2 "
      "(validation/memeff_room_probe.py measures the same on the GPU; the row's program is held in memory, "
      "up to 5 million instructions: a wave or a few)")(
      "placements", po::value(&placements)->default_value(placements),
      "whole chip: run each row with its tensors at this many places in DRAM (the L2's hashes see the "
      "addresses, as a GPU's do: one placement is one draw) and report the run with the median DRAM reads, "
      "the range beside it")(
      "placement-step-mib", po::value(&placement_step_mib)->default_value(placement_step_mib),
      "--placements: the k-th placement starts k times this many MiB after the config's "
      "hbm.first_tensor_address (validation/run_sdpa_placements.sh holds 37 x k MiB before the tensors)")(
      "gpu-median", po::bool_switch(&gpu_median),
      "the DATA files are sweeps of the same rows, each with the tensors elsewhere "
      "(validation/run_sdpa_placements.sh): each case once, held against its median over the files "
      "(DRAM bytes and time; SM<->L2 bytes where every file has them)")(
      "clocks-from", po::value(&clocks_from),
      "rows whose files did not measure the SM clock (DRAM-only sweeps) are simulated at the clock this "
      "sweep of the same cases measured, not at the config's clock_base_ghz "
      "(validation/data/h200_sdpa_cases.csv for the one-pass sweeps)")(
      "timeline", po::value(&timeline_file),
      "whole chip, one row: write every instruction of its run as a Perfetto / chrome://tracing JSON, a "
      "process per core with its thread blocks and units (first 200,000 instructions)")(
      "timeline-cores", po::value(&timeline.cores)->default_value(timeline.cores),
      "--timeline: the cores shown, all or a list such as 0-3,17")(
      "timeline-limit", po::value(&timeline.limit)->default_value(timeline.limit),
      "--timeline: instructions kept");
  po::positional_options_description pos;
  pos.add("data", -1);
  auto parsed = parse("validate", desc, pos, args,
                      "-c CONFIG DATA.csv... [-p key=value] [--csv FILE] [--block-times FILE] [--hot-mib M] "
                      "[--placements K] [--gpu-median] [--clocks-from FILE] [--timeline FILE]");
  if (parsed.help) return 0;
  if (timeline.limit < 1 || timeline.limit > (size_t{1} << 28))
    throw InputError("attnsim validate", {},
                     fmt::format("--timeline-limit must be from 1 to {}", size_t{1} << 28));
  check_output_paths({csv_file, block_times, timeline_file});
  std::vector<Measurement> measurements;
  for (const auto& path : data) {  // every file read (and checked) before anything is simulated
    std::vector<Measurement> rows = read_measurements(path);
    measurements.insert(measurements.end(), rows.begin(), rows.end());
  }
  if (gpu_median && data.size() < 2)
    throw InputError("attnsim validate", {}, "--gpu-median takes the median over two or more DATA files");
  if (gpu_median) measurements = merge_repeats(measurements);
  size_t clocks_taken = 0;
  if (!clocks_from.empty()) clocks_taken = take_clocks(measurements, read_measurements(clocks_from));
  // Whole 16 KiB chunks: a multiple of 1/64 MiB.
  if (hot_mib < 0 || hot_mib > (1 << 20) ||
      hot_mib * 64 != static_cast<double>(static_cast<int64_t>(hot_mib * 64)))
    throw InputError("attnsim validate", {}, "--hot-mib must be a multiple of 1/64 from 0 to 2^20");
  const auto hot_bytes = static_cast<uint64_t>(hot_mib * 64) << 14;
  ValidateOptions options{
      overrides, !block_times.empty(), hot_bytes, timeline_file.empty() ? nullptr : &timeline, {}};
  options.placement_offsets = placement_offsets(placements, placement_step_mib);
  const ValidationSummary summary = validate(config_path, data.front(), measurements, options);
  if (!timeline_file.empty() && summary.timeline_json.empty())
    throw InputError("attnsim validate", {},
                     "--timeline: the row did not run on a whole chip (not simulated, or a one-core config)");
  std::vector<std::pair<std::string, std::string>> files;
  if (!csv_file.empty()) files.emplace_back(csv_file, validation_csv(summary));
  if (!block_times.empty()) files.emplace_back(block_times, validation_block_times_csv(summary));
  if (!timeline_file.empty()) files.emplace_back(timeline_file, summary.timeline_json);
  if (!files.empty()) write_files_atomically(files);
  print_validation(std::cout, summary);
  if (!clocks_from.empty())
    std::cout << fmt::format(
        "--clocks-from {}: {} rows simulated at the SM clock it measured for their case\n", clocks_from,
        clocks_taken);
  const auto unclocked = std::count_if(summary.rows.begin(), summary.rows.end(), [](const ValidationRow& r) {
    return !r.measured.sm_l2_measured && r.measured.sm_clock_ghz <= 0;
  });
  if (unclocked > 0)  // the trap: a DRAM-only sweep's rows at the base clock, which large kernels do not hold
    std::cout << fmt::format(
        "note: {} rows come from DRAM-only sweeps that did not measure the SM clock and ran at the config's "
        "clock, which large kernels may not hold; the clock moves when blocks meet in the L2 and so the DRAM "
        "reads of rows near its capacity (docs/validation.md, \"That command needs the clocks\"): "
        "--clocks-from FILE takes it from a sweep of the same cases\n",
        unclocked);
  if (!summary.timeline_note.empty()) std::cout << timeline_file << ": " << summary.timeline_note << "\n";
  return 0;
}

// --bracket-cores LO-HI: the first hot read by those cores of a grid of one block per core (empty: all).
traces::HotReaders core_range(const std::string& text, int64_t cores) {
  if (text.empty()) return {};
  int64_t lo = -1, hi = -1;
  char dash = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%ld %c %ld %c", &lo, &dash, &hi, &extra) != 3 || dash != '-' || lo < 0 ||
      hi < lo || hi >= cores)
    throw InputError("attnsim probe", {},
                     fmt::format("--bracket-cores must be LO-HI with 0 <= LO <= HI < {} (the cores)", cores));
  return {cores, lo, hi - lo + 1};
}

// --samples: a recorder for the modes whose blocks read `count` chunks a pass, in l2_probe.cu's order.
ProbeSamplesRecorder probe_samples_recorder(const traces::ProbeShape& shape, uint64_t bracket_bytes,
                                            int64_t per_pass) {
  const auto mode = shape.mode;
  using traces::ProbeMode;
  if (mode != ProbeMode::Single && mode != ProbeMode::Shared && mode != ProbeMode::Spread &&
      mode != ProbeMode::Private)
    throw InputError("attnsim probe", {}, "--samples takes --mode single, shared, spread or private");
  if (bracket_bytes) throw InputError("attnsim probe", {}, "--samples and --bracket-mib do not go together");
  const auto chunks = static_cast<int64_t>(shape.bytes / traces::kProbeChunkBytes);
  const int64_t count = mode == ProbeMode::Private ? chunks / std::max<int64_t>(1, shape.blocks) : chunks;
  try {
    return ProbeSamplesRecorder(std::max<int64_t>(1, count), shape.passes, per_pass);
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim probe", {}, e.what());
  }
}

// --measured FILE: every row of a measured probe file simulated on the whole chip, predicted against
// measured.
int probe_measured(const std::string& config_path, const std::vector<std::string>& overrides,
                   const std::string& measured_path) {
  const std::vector<MeasuredProbe> rows = read_measured_probes(measured_path);
  Machine machine(load_config(config_path, overrides));
  if (!machine.is_chip())
    throw InputError(config_path, {},
                     "probe needs a whole-chip config (a chip: section), e.g. configs/h100.yaml");
  const std::vector<ProbeComparison> compared = compare_probes(machine, rows, measured_path);
  print_probe_comparison(std::cout, measured_path, compared);
  std::cout << fmt::format("time: predicted at the config's clock, {} GHz\n", machine.clock_ghz());
  return 0;
}

int cmd_probe(const std::vector<std::string>& args) {
  std::string config_path, mode, measured_path;
  double mib = 32, head_mib = 8, stride_mib = 2, hot_mib = 12, bracket_mib = 0;
  std::string bracket_reread = "all", bracket_cores;
  int64_t bracket_blocks = 0, samples_per_pass = 32;
  std::string samples_file;
  traces::ProbeShape shape;
  std::vector<std::string> overrides;
  po::options_description desc("probe options");
  desc.add_options()("config,c", po::value(&config_path)->required(), "whole-chip YAML (configs/h100.yaml)")(
      "mode", po::value(&mode)->default_value("shared"),
      "single (one block), shared (every block reads the buffer from its start), rfence (as shared, a "
      "fence after every --fence-every 16 KiB chunks), rfenceother (block 0 reads, the others fence as "
      "often), rfenceasync, rfenceweak, rfenceotherasync, rfenceotherweak (the GPU's loads through cp.async "
      "or weak ld.global; the model's loads are one kind: as rfence and rfenceother), spread "
      "(block b starts at "
      "b/blocks of it), private (block b reads its own 1/blocks), wprivate (block b stores its own "
      "1/blocks), "
      "wsingle (one block stores the buffer), rmw (block b loads and stores back its own 1/blocks), "
      "rmwspread (every block loads and stores back the whole buffer from spread's offset), rmwhalf "
      "(--groups groups of blocks, each reading the first half of its part of the buffer and rewriting the "
      "second half out of step, as rmwspread), rmwlock (rmwhalf, each rewrite under a lock per chunk and "
      "between fences: the memory-efficient backward's AtomicLock), rmwfence (rmwlock without the lock), "
      "wthenread "
      "(block b stores its slice of the first quarter, reads its slice of the rest, reads the first again), "
      "rthenread (as wthenread, the first quarter read), scatter (one block reads 128-byte lines scattered "
      "over 8 times the buffer: the associativity), retouch (one block reads parts 0 and 1 of --mib each, "
      "then --passes times part 0 and a new part, then part 0: what a hit protects), heads (one block reads "
      "the first --mib / (2 --heads) of every head's K and V, heads of --head-mib: the kernels' layout), "
      "copies (one block reads --copies blocks of --mib, --stride-mib apart: power-of-two strides), stale "
      "(every block reads a hot part of --hot-mib --hot-passes times, then --mib after it --passes times: "
      "whether the dead hot part goes first), wbetween (every block reads a part of --hot-mib --hot-passes "
      "times, stores --mib after it --passes times, reads the part again: whether stores take room in the "
      "writer's L2 partition), rbetween (as wbetween, the --mib loaded)")(
      "mib", po::value(&mib)->default_value(32), "buffer size in MiB (whole 16 KiB chunks)")(
      "passes", po::value(&shape.passes)->default_value(3), "times each block reads its data")(
      "blocks", po::value(&shape.blocks)->default_value(132), "thread blocks (grid x)")(
      "heads", po::value(&shape.heads)->default_value(6), "heads mode: heads of K and V")(
      "head-mib", po::value(&head_mib)->default_value(8), "heads mode: one head's K (and V) in MiB")(
      "copies", po::value(&shape.copies)->default_value(17), "copies mode: blocks read")(
      "groups", po::value(&shape.groups)->default_value(1),
      "rmwhalf, rmwlock, rmwfence: groups of consecutive blocks, each with its own part of the buffer "
      "(divides --blocks)")("fence-every", po::value(&shape.fence_every)->default_value(1),
                            "rfence: 16 KiB chunks a block reads between two fences")(
      "in-flight", po::value(&shape.in_flight)->default_value(1),
      "single, shared, spread, private, rfence modes: 16 KiB chunks a block keeps in flight (its loads go "
      "to that many SRAM buffers in turn; validation/pace_probe.cu's UNROLL), 1 to 8")(
      "stride-mib", po::value(&stride_mib)->default_value(2), "copies mode: distance between blocks in MiB")(
      "hot-mib", po::value(&hot_mib)->default_value(12), "stale, wbetween, rbetween: the hot part in MiB")(
      "hot-passes", po::value(&shape.hot_passes)->default_value(8),
      "stale, wbetween, rbetween: times the hot part is read first")(
      "bracket-mib", po::value(&bracket_mib)->default_value(0),
      "any mode: run the probe's kernel between two reads of a buffer of this many MiB by every core, the "
      "L2 kept between kernels, and print the share of it the kernel pushed out (as validate --hot-mib)")(
      "bracket-blocks", po::value(&bracket_blocks)->default_value(0),
      "--bracket-mib: the blocks that read the buffer, each a core (0: every core); a launch's first cores "
      "are those the block scheduler fills first")(
      "bracket-cores", po::value(&bracket_cores),
      "--bracket-mib: the first read by the cores LO-HI only (a grid of one block per core, the others "
      "empty; the first wave places block c on core c): a buffer read by one L2 partition's cores")(
      "bracket-reread", po::value(&bracket_reread)->default_value("all"),
      "--bracket-mib: the second read takes all of the buffer, or every 5th chunk of its first or second "
      "half (first, second), in the order the first read took them")(
      "samples", po::value(&samples_file),
      "single, shared, spread, private: write when each block passed --samples-per-pass points of each pass "
      "(CSV in validation/l2_probe.cu's SAMPLES layout, for validation/convoys.py)")(
      "samples-per-pass", po::value(&samples_per_pass)->default_value(32), "--samples: points a pass")(
      "measured", po::value(&measured_path),
      "a measured probe file (validation/data/<gpu>_l2_probe*.csv, from validation/run_l2_probe.sh): run "
      "every row's probe instead of --mode's and print predicted against measured DRAM bytes, fabric "
      "sectors, lookup misses and time")("param,p", po::value(&overrides)->composing(),
                                         "override a config key: -p l2.ways=8");
  po::positional_options_description pos;
  auto parsed =
      parse("probe", desc, pos, args,
            "-c CONFIG [--mode shared] [--mib 32] [--passes 3] [--blocks 132] [--heads 6] [--head-mib 8] "
            "[--copies 17] [--stride-mib 2] [--groups 1] [--fence-every 1] [--in-flight 1] [--hot-mib 12] "
            "[--hot-passes 8] "
            "[--bracket-mib 0] "
            "[--measured FILE] [-p key=value]");
  if (parsed.help) return 0;
  if (!measured_path.empty()) {
    if (bracket_mib != 0 || !samples_file.empty())
      throw InputError("attnsim probe", {}, "--measured takes no --bracket-mib or --samples");
    return probe_measured(config_path, overrides, measured_path);
  }
  auto found = traces::find_probe_mode(mode);
  if (!found)
    throw InputError(
        "attnsim probe", {},
        "--mode must be single, shared, rfence, rfenceother, rfenceasync, rfenceweak, rfenceotherasync, "
        "rfenceotherweak, spread, private, wprivate, wsingle, rmw, "
        "rmwspread, rmwhalf, rmwlock, rmwfence, wthenread, rthenread, scatter, retouch, heads, "
        "copies, stale, wbetween or rbetween");
  const auto bytes_of = [](double value, const std::string& option) {
    if (!(value >= 1.0 / 64 && value <= 1 << 20))
      throw InputError("attnsim probe", {}, option + " must be 1/64 to 2^20");
    return static_cast<uint64_t>(value * (1 << 20));
  };
  shape.mode = *found;
  shape.bytes = bytes_of(mib, "--mib");
  shape.head_bytes = bytes_of(head_mib, "--head-mib");
  shape.stride_bytes = bytes_of(stride_mib, "--stride-mib");
  shape.hot_bytes = bytes_of(hot_mib, "--hot-mib");
  const uint64_t bracket_bytes = bracket_mib == 0 ? 0 : bytes_of(bracket_mib, "--bracket-mib");
  if (bracket_reread != "all" && bracket_reread != "first" && bracket_reread != "second")
    throw InputError("attnsim probe", {}, "--bracket-reread must be all, first or second");
  const traces::HotReread reread = bracket_reread == "first"    ? traces::HotReread::FirstHalf
                                   : bracket_reread == "second" ? traces::HotReread::SecondHalf
                                                                : traces::HotReread::All;
  if (!bracket_cores.empty() && !bracket_bytes)
    throw InputError("attnsim probe", {},
                     "--bracket-cores needs --bracket-mib (the buffer those cores read)");
  if (bracket_bytes) overrides.push_back("chip.l2_between_kernels=keep");
  std::optional<ProbeSamplesRecorder> samples;
  if (!samples_file.empty()) samples = probe_samples_recorder(shape, bracket_bytes, samples_per_pass);
  check_output_paths({samples_file});
  Machine machine(load_config(config_path, overrides));
  if (!machine.is_chip())
    throw InputError(config_path, {},
                     "probe needs a whole-chip config (a chip: section), e.g. configs/h100.yaml");
  isa::Program program;
  try {
    const auto cores = static_cast<int64_t>(machine.chip()->cores().size());
    if (bracket_blocks < 0 || bracket_blocks > cores)
      throw InputError("attnsim probe", {},
                       fmt::format("--bracket-blocks must be 0 to {} (the cores)", cores));
    program = bracket_bytes ? traces::hot_part_bracket(traces::l2_probe(shape), bracket_bytes,
                                                       bracket_blocks ? bracket_blocks : cores, Dtype::F16,
                                                       reread, core_range(bracket_cores, cores))
                            : traces::stream_program([&] { return traces::l2_probe(shape); });
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim probe", {}, e.what());
  }
  machine.load(program, false, true);
  {
    const ObservedBy observed(*machine.chip(), samples ? &*samples : nullptr);
    machine.run();
  }
  if (samples) write_files_atomically({{samples_file, samples->csv(machine.clock_ghz())}});
  const ChipSummary summary = summarize_chip(*machine.chip(), program, machine.clock_ghz());
  print_chip_summary(std::cout, summary);
  if (bracket_bytes) {
    const auto hot = summary.dram_read.find(traces::kHotPartTensor);
    const double read = hot == summary.dram_read.end() ? 0 : static_cast<double>(hot->second);
    const double first = static_cast<double>(bracket_bytes);
    const double again = static_cast<double>(traces::hot_reread_bytes(program, reread));
    const std::string what = reread == traces::HotReread::All ? "bytes" : bracket_reread + " half's sample";
    std::cout << fmt::format(
        "hot buffer (DRAM reads, whole chip): {:.4f} of the {} read again ({} MiB in all) came from DRAM "
        "after the probe's "
        "kernel\n",
        (read - first) / again, what, bracket_mib);
  }
  return 0;
}

int cmd_disasm(const std::vector<std::string>& args) {
  std::string trace;
  int64_t max_instructions = isa::kDefaultMaxInstructions;
  po::options_description desc("disasm options");
  desc.add_options()("trace", po::value(&trace)->required(), "trace file")(
      "max-instructions", po::value(&max_instructions)->default_value(isa::kDefaultMaxInstructions),
      "refuse a trace with more instructions");
  po::positional_options_description pos;
  pos.add("trace", 1);
  auto parsed = parse("disasm", desc, pos, args, "TRACE");
  if (parsed.help) return 0;
  if (max_instructions < 1) throw InputError("attnsim disasm", {}, "--max-instructions must be at least 1");
  std::cout << isa::disassemble(isa::assemble_file(trace, max_instructions));
  return 0;
}

int cmd_config(const std::vector<std::string>& args) {
  std::string config_path;
  std::vector<std::string> overrides;
  bool describe = false;
  po::options_description desc("config options");
  desc.add_options()("config,c", po::value(&config_path)->required(), "machine YAML")(
      "describe", po::bool_switch(&describe),
      "list every parameter with its type, default, unit and meaning")(
      "param,p", po::value(&overrides)->composing(), "override a config key");
  po::positional_options_description pos;
  auto parsed = parse("config", desc, pos, args, "-c CONFIG [--describe] [-p K=V]...");
  if (parsed.help) return 0;
  Machine machine(load_config(config_path, overrides));
  if (!describe) {
    std::cout << json_text(machine.effective_config(), 2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:30} {:8} {:>10} {:>10}  {:12} {}\n", "key", "type", "value", "default", "unit",
                           "description");
  for (const auto& d : machine.param_docs())
    std::cout << fmt::format("{:30} {:8} {:>10} {:>10}  {:12} {}\n", d.key, d.type, d.value, d.default_value,
                             d.unit, d.description);
  return 0;
}

}  // namespace

int sc_main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? kExitInputError : 0;
  }
  std::string command = argv[1];
  if (command == "--version" || command == "version") {
    std::cout << "attnsim " << ATTNSIM_VERSION << " (SystemC " << sc_core::sc_release() << ")\n";
    return 0;
  }
  std::vector<std::string> args =
      canonical_spellings(command, std::vector<std::string>(argv + 2, argv + argc));
  try {
    if (command == "run") return cmd_run(args);
    if (command == "gen") return cmd_gen(args);
    if (command == "compare") return cmd_compare(args);
    if (command == "sweep") return cmd_sweep(args);
    if (command == "plan") return cmd_plan(args);
    if (command == "validate") return cmd_validate(args);
    if (command == "plot") return cmd_plot(args);
    if (command == "probe") return cmd_probe(args);
    if (command == "disasm") return cmd_disasm(args);
    if (command == "config") return cmd_config(args);
    std::cerr << "attnsim: error: unknown command '" << command << "'"
              << did_you_mean(command, {"run", "compare", "plan", "sweep", "plot", "gen", "disasm", "config",
                                        "validate", "probe"})
              << "\n"
              << kUsage;
    return kExitInputError;
  } catch (const InputError& e) {
    std::cerr << e.what() << "\n";
    return kExitInputError;
  } catch (const std::exception& e) {
    // Not the user's input: a bug or an exhausted resource. Say so plainly rather than let SystemC report it.
    std::cerr << "attnsim: internal error: " << e.what() << "\n";
    return kExitInternalError;
  }
}

// Replaces libsystemc's main() only to silence the banner it prints before sc_main() runs.
int main(int argc, char** argv) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
