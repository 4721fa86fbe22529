#include "sim/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "isa/diagnostics.h"
#include "sim/chip_report.h"
#include "sim/chip_timeline.h"
#include "sim/config.h"
#include "sim/csv_row.h"
#include "sim/machine.h"
#include "sim/sdpa_cases.h"
#include "traces/attention_backward.h"
#include "traces/attention_forward.h"
#include "traces/hot_part.h"
#include "traces/stream.h"

namespace attnsim {

double nrmse(const std::vector<double>& predicted, const std::vector<double>& measured) {
  double sum_sq = 0, mean = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    sum_sq += (predicted[i] - measured[i]) * (predicted[i] - measured[i]);
    mean += measured[i];
  }
  if (measured.empty() || mean == 0) return 0;
  mean /= static_cast<double>(measured.size());
  return std::sqrt(sum_sq / static_cast<double>(measured.size())) / mean;
}

// Mean absolute percentage error, as a fraction.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured) {
  double sum = 0;
  for (size_t i = 0; i < measured.size(); ++i) sum += std::abs(predicted[i] - measured[i]) / measured[i];
  return measured.empty() ? 0 : sum / static_cast<double>(measured.size());
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

void read_l2_counters(const CsvRow& row, const std::string& prefix, Measurement& m) {
  if (auto v = row.optional_number(prefix + "lts_tex_miss_sectors")) m.l2_lookup_miss_sectors = *v;
  if (auto v = row.optional_number(prefix + "lts_fabric_sectors")) m.l2_fabric_sectors = *v;
  // All lookup misses less the SMs' own: the copies' fetches that missed at home too.
  if (auto v = row.optional_number(prefix + "lts_miss_sectors"); v && m.l2_lookup_miss_sectors >= 0)
    m.l2_home_miss_sectors = *v - m.l2_lookup_miss_sectors;
}

namespace {

// The smallest of the occupancy limits per launch ("4/32/4": one value per launch, or one for all);
// blocks_per_sm is the CUDA occupancy calculator's figure for the launch (validation/kernels_tc.cu).
std::vector<int64_t> occupancy_limits(const std::map<std::string, size_t>& column,
                                      const std::vector<std::string>& cells, const std::string& path,
                                      int line, const std::string& prefix = "") {
  std::vector<int64_t> out;
  for (const char* limit :
       {"occ_limit_smem", "occ_limit_registers", "occ_limit_warps", "occ_limit_blocks", "blocks_per_sm"}) {
    const std::string name = prefix + limit;
    auto it = column.find(name);
    if (it == column.end()) continue;
    std::vector<int64_t> values;
    const std::optional<std::vector<double>> parsed = CsvRow::parse_numbers(cells[it->second]);
    for (double value : parsed.value_or(std::vector<double>{0})) {
      if (value < 1 || value > 1024 || value != std::floor(value))
        throw InputError(
            path, {line, 1},
            fmt::format("column {}: expected blocks per SM from 1 to 1024 per launch, found '{}'", name,
                        cells[it->second]));
      values.push_back(static_cast<int64_t>(value));
    }
    if (out.empty()) out = values;
    if (values.size() != out.size())
      throw InputError(
          path, {line, 1},
          fmt::format("column {}: {} launches, the other limits have {}", name, values.size(), out.size()));
    for (size_t k = 0; k < out.size(); ++k) out[k] = std::min(out[k], values[k]);
  }
  return out;
}

// The tensor-core flash2's build (harness --tc-min-blocks, summarize_dram.py's tc_min_blocks and local_bytes
// columns, where a CSV has them): built for two blocks per SM it reads Q_i's fragments from shared memory at
// every key block instead of holding them in registers, and stores its local memory (register spills) once
// per block, a slot's lines reused by the blocks that follow in it (measured: the SM -> L2 writes are O plus
// local_bytes x threads per block, validation/data/h100_tc_two_blocks.csv).
void tc_build(const CsvRow& row, Measurement& m) {
  if (m.kernel != "tc" || m.schedule != "flash2") return;
  auto given = [&](const char* name) { return row.has(name) && !row.text(name).empty(); };
  if (given("tc_min_blocks")) {
    const int64_t blocks = row.size("tc_min_blocks");
    if (blocks != 1 && blocks != 2) row.fail(fmt::format("column tc_min_blocks: 1 or 2, found {}", blocks));
    m.q_in_registers = blocks == 1;
  }
  if (given("local_bytes") && given("block_size")) {
    const double local = row.number("local_bytes");  // 0: no local memory; checked before the cast
    if (local > 1e9 || local != std::floor(local) || static_cast<int64_t>(local) % 4 != 0)
      row.fail("column local_bytes: a whole multiple of 4 bytes a thread, at most 10^9");
    m.spill_bytes_per_block = static_cast<int64_t>(local) * row.size("block_size");
  }
  if (given("sm_count")) m.sm_count = row.size("sm_count");
}

// A row of the project's kernels (validation/run_on_device.sh, run_tc.sh), its occupancy aside.
Measurement project_measurement(const CsvRow& row) {
  auto text = [&](const char* name) { return row.text(name); };
  auto number = [&](const char* name) { return row.number(name); };
  auto size = [&](const char* name) { return row.size(name); };
  Measurement m;
  m.gpu = text("gpu");
  m.schedule = text("schedule");
  m.dtype = text("dtype");
  m.n = size("n");
  m.d = size("d");
  m.heads = size("heads");
  m.block_q = size("block_q");
  m.block_k = size("block_k");
  m.causal = number("causal") != 0;
  m.line = row.line;
  m.path = row.path;
  m.max_rel_error = number("max_rel_error");
  if (row.has("kernel")) m.kernel = text("kernel");
  // Tensor-core flash2 walking its key blocks from the diagonal down (harness --keys-descending).
  if (row.has("keys_descending") && !text("keys_descending").empty())
    m.keys_descending = number("keys_descending") != 0;
  if (row.has("clock_control")) m.clock_control = text("clock_control");
  if (m.kernel != "ffma" && m.kernel != "tc" && m.kernel != "tc-padded")
    throw InputError(row.path, {row.line, 1},
                     "column kernel: expected ffma, tc or tc-padded, found '" + m.kernel + "'");
  // run_tc.sh stops profiling at its deadline; such a row has its check and event time but no counters.
  if (text("time_ns").empty() && text("l1_read_bytes").empty()) {
    m.label = m.schedule + " " + m.kernel;
    m.not_simulated = "not profiled: no Nsight Compute counters (the device run's deadline passed)";
    return m;
  }
  m.time_ns = number("time_ns");
  m.l1_read_bytes = number("l1_read_bytes");
  m.l1_write_bytes = number("l1_write_bytes");
  m.dram_read_bytes = number("dram_read_bytes");
  m.dram_write_bytes = number("dram_write_bytes");
  read_l2_counters(row, "", m);
  if (row.has("sm_clock_ghz") && !text("sm_clock_ghz").empty()) {
    m.sm_clock_ghz = number("sm_clock_ghz");
    if (!(m.sm_clock_ghz > 0.01 && m.sm_clock_ghz < 10))
      throw InputError(row.path, {row.line, 1},
                       fmt::format("column sm_clock_ghz: {} GHz is not an SM clock", text("sm_clock_ghz")));
  }
  if (row.has("kernel_times_ns") && row.has("kernel_clocks_ghz")) {
    m.kernel_times_ns = row.numbers("kernel_times_ns");
    m.kernel_clocks_ghz = row.numbers("kernel_clocks_ghz");
    if (m.kernel_times_ns.size() != m.kernel_clocks_ghz.size())
      row.fail(fmt::format("columns kernel_times_ns and kernel_clocks_ghz: {} launches against {}",
                           m.kernel_times_ns.size(), m.kernel_clocks_ghz.size()));
  }
  if (m.kernel != "ffma") m.label = m.schedule + " " + m.kernel;
  // The tensor-core kernels that prefetch their next tiles (validation/kernels_tc.cu, kernels_tc_fwd.cu:
  // flash2, two-pass and flash1, which prefetches its next step) and keep S, P and the accumulators in
  // registers (docs/validation.md, "flash1, profiled"); naive's program has no registers option.
  m.double_buffer = m.kernel == "tc" && (m.schedule == "flash2" || m.schedule == "two-pass" ||
                                         m.schedule == "flash1" || m.schedule == "flash2-bwd");
  m.accumulators_in_registers =
      m.kernel == "tc" && (m.schedule == "flash2" || m.schedule == "two-pass" || m.schedule == "flash1" ||
                           m.schedule == "flash2-bwd" || m.schedule == "flash2-bwd-no-d");
  // They load Q_i's fragments into registers once per block (PyTorch's FlashAttention-2 forward does not).
  m.q_in_registers = m.kernel == "tc" && (m.schedule == "flash2" || m.schedule == "two-pass");
  tc_build(row, m);
  // Their backward kernels keep the products' k-loops rolled (`#pragma unroll 1`, kernels_tc_bwd.cu).
  m.rolled_k_loops = m.kernel == "tc" && (m.schedule == "flash2-bwd" || m.schedule == "flash2-bwd-no-d");
  if (m.kernel == "tc-padded")
    m.not_simulated =
        "its 16-byte-padded shared-memory rows make cp.async fetch 1.5 times the tiles' bytes (measured); "
        "the model has no shared-memory layout";
  return m;
}

}  // namespace

namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : (values[half - 1] + values[half]) / 2;
}

std::string case_key(const Measurement& m) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", m.label, m.schedule, m.kernel, m.n, m.d, m.heads,
                     m.block_q, m.block_k, m.causal, m.keys_descending);
}

// One case's rows from several files as one: medians of what every row measured.
Measurement merged_case(const std::vector<const Measurement*>& repeats) {
  Measurement m = *repeats.front();
  m.repeats = static_cast<int>(repeats.size());
  auto median_over = [&repeats](double Measurement::*field) {
    std::vector<double> values;
    for (const Measurement* r : repeats) values.push_back(r->*field);
    return median_of(values);
  };
  m.dram_read_bytes = median_over(&Measurement::dram_read_bytes);
  m.dram_write_bytes = median_over(&Measurement::dram_write_bytes);
  m.time_ns = median_over(&Measurement::time_ns);
  m.sm_l2_measured =
      std::all_of(repeats.begin(), repeats.end(), [](const Measurement* r) { return r->sm_l2_measured; });
  if (m.sm_l2_measured) {
    m.l1_read_bytes = median_over(&Measurement::l1_read_bytes);
    m.l1_write_bytes = median_over(&Measurement::l1_write_bytes);
  }
  std::vector<double> clocks;  // over the files that measured it (a DRAM-only sweep does not)
  for (const Measurement* r : repeats)
    if (r->sm_clock_ghz > 0) clocks.push_back(r->sm_clock_ghz);
  m.sm_clock_ghz = clocks.empty() ? 0 : median_of(clocks);
  // The L2's counters and the per-launch times are one sweep's: not medians, so left out.
  m.l2_lookup_miss_sectors = m.l2_fabric_sectors = m.l2_home_miss_sectors = -1;
  m.kernel_times_ns.clear();
  m.kernel_clocks_ghz.clear();
  return m;
}

}  // namespace

std::vector<Measurement> merge_repeats(const std::vector<Measurement>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Measurement*>> cases;
  std::vector<Measurement> out;
  for (const Measurement& m : rows) {
    if (!m.not_simulated.empty()) continue;
    auto [it, fresh] = cases.try_emplace(case_key(m));
    if (fresh) order.push_back(it->first);
    it->second.push_back(&m);
  }
  for (const std::string& key : order) out.push_back(merged_case(cases.at(key)));
  for (const Measurement& m : rows)
    if (!m.not_simulated.empty()) out.push_back(m);
  return out;
}

size_t take_clocks(std::vector<Measurement>& rows, const std::vector<Measurement>& from) {
  std::map<std::string, double> clock_of;
  for (const Measurement& m : from)
    if (m.sm_clock_ghz > 0) clock_of.emplace(case_key(m), m.sm_clock_ghz);
  size_t taken = 0;
  for (Measurement& m : rows) {
    if (m.sm_clock_ghz > 0 || !m.not_simulated.empty()) continue;
    const auto it = clock_of.find(case_key(m));
    if (it == clock_of.end()) continue;
    m.sm_clock_ghz = it->second;
    ++taken;
  }
  return taken;
}

std::vector<double> Measurement::kernel_cycles() const {
  std::vector<double> out;
  for (size_t k = 0; k < kernel_times_ns.size(); ++k)
    out.push_back(kernel_times_ns[k] * kernel_clocks_ghz[k]);
  return out;
}

std::vector<Measurement> read_measurements(const std::string& path) {
  std::istringstream in(read_input_file(path, "measurements file"));
  std::string line;
  if (!std::getline(in, line)) throw InputError(path, {1, 1}, "empty file: expected a header row");
  std::map<std::string, size_t> column;
  auto header = split_csv(line);
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  // PyTorch's SDPA backends (validation/sdpa_measure.py), one row per case and pass.
  const bool sdpa = column.count("backend") != 0;
  const std::vector<std::string> required = sdpa ? sdpa_columns()
                                                 : std::vector<std::string>{"gpu",
                                                                            "schedule",
                                                                            "n",
                                                                            "d",
                                                                            "heads",
                                                                            "block_q",
                                                                            "block_k",
                                                                            "causal",
                                                                            "dtype",
                                                                            "time_ns",
                                                                            "l1_read_bytes",
                                                                            "l1_write_bytes",
                                                                            "dram_read_bytes",
                                                                            "dram_write_bytes",
                                                                            "max_rel_error"};
  for (const auto& name : required)
    if (!column.count(name)) throw InputError(path, {1, 1}, "missing column '" + name + "'");
  std::vector<Measurement> out;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    auto cells = split_csv(line);
    if (cells.size() < header.size())
      throw InputError(path, {line_no, 1},
                       fmt::format("{} cells, the header has {}", cells.size(), header.size()));
    const CsvRow row{column, cells, path, line_no};
    if (sdpa) {
      out.push_back(sdpa_measurement(row));
      out.back().path = path;
      if (row.has("clock_control")) out.back().clock_control = row.text("clock_control");
      if (out.back().not_simulated.empty())
        out.back().blocks_per_sm = occupancy_limits(column, cells, path, line_no, "main_");
      continue;
    }
    Measurement m = project_measurement(row);
    if (m.not_simulated.empty() || m.kernel == "tc-padded")
      m.blocks_per_sm = occupancy_limits(column, cells, path, line_no);
    out.push_back(m);
  }
  return out;
}

namespace {

// The measured occupancy for each of the program's kernels: one value for all, or one per kernel.
std::vector<int64_t> kernel_occupancy(const Measurement& m, const isa::Program& program,
                                      const std::string& data_path, bool bracketed) {
  if (bracketed) {  // the two hot reads: one block a core
    isa::Program inner;
    inner.kernels.assign(program.kernels.begin() + 1, program.kernels.end() - 1);
    std::vector<int64_t> out = kernel_occupancy(m, inner, data_path, false);
    out.insert(out.begin(), 1);
    out.push_back(1);
    return out;
  }
  const size_t kernels = program.kernels.size();
  if (m.blocks_per_sm.size() <= 1)
    return std::vector<int64_t>(kernels, m.blocks_per_sm.empty() ? 0 : m.blocks_per_sm[0]);
  if (m.blocks_per_sm.size() != kernels)
    throw InputError(data_path, {m.line, 1},
                     fmt::format("the occupancy columns give {} launches, the simulated {} has {} kernels",
                                 m.blocks_per_sm.size(), m.schedule, kernels));
  return m.blocks_per_sm;
}

std::optional<traces::BackwardSchedule> find_backward_schedule(const std::string& name) {
  for (auto schedule : {traces::BackwardSchedule::Flash2, traces::BackwardSchedule::Flash2NoD,
                        traces::BackwardSchedule::Naive})
    if (traces::schedule_name(schedule) == name) return schedule;
  return std::nullopt;
}

// A GPU keeps a thread's local memory (register spills) at an address fixed by the hardware slot it runs in,
// so blocks that follow each other in a slot reuse its lines (validation/data/h100_local_probe.csv): one row
// of spill stores per resident block of the measured launch (its main kernel's occupancy); 0, a row per
// block, when the CSV does not give the SM count.
int64_t spill_rows(const Measurement& m) {
  return m.sm_count > 0 && !m.blocks_per_sm.empty() ? m.sm_count * m.blocks_per_sm[0] : 0;
}

// The measured row's program: a forward schedule, or a backward one (flash2-bwd for PyTorch's FlashAttention
// backward), streamed block by block: the generator runs while the machine does, so it owns its shape. A
// whole chip takes repeated blocks (traces::stream_program).
// With hot_part_bytes, the row's kernels between two reads of a hot buffer by `cores` blocks.
constexpr size_t kBracketedInstructions = 5'000'000;
isa::Program measured_program(const Measurement& m, const std::string& data_path, bool chip,
                              uint64_t hot_part_bytes, int64_t cores) {
  // Streamed, unless bracketed: a streamed generator's instructions go to the simulator as they come; a
  // bracketed program is whole in memory first, so it is held to kBracketedInstructions (about 1 GB of memory
  // at the peak).
  const auto program = [&](std::function<isa::Program()> generate) {
    if (!hot_part_bytes) return traces::stream_program(std::move(generate), 1 << 16, chip);
    const size_t limit = isa::generator_instruction_limit;
    isa::generator_instruction_limit = kBracketedInstructions;
    try {
      isa::Program kernels = generate();
      isa::generator_instruction_limit = limit;
      return traces::hot_part_bracket(kernels, hot_part_bytes, cores);
    } catch (const std::length_error& e) {
      isa::generator_instruction_limit = limit;
      throw InputError(data_path, {m.line, 1},
                       std::string("--hot-mib needs the row's program in memory: ") + e.what());
    }
  };
  auto dtype = parse_dtype(m.dtype);
  if (!dtype) throw InputError(data_path, {m.line, 1}, "unknown dtype '" + m.dtype + "'");
  auto forward = traces::find_forward_schedule(m.schedule);
  auto backward = find_backward_schedule(m.schedule);
  if (!forward && !backward)
    throw InputError(data_path, {m.line, 1}, "unknown schedule '" + m.schedule + "'");
  try {
    if (forward) {
      traces::ForwardShape shape;
      shape.n = m.n, shape.d = m.d, shape.heads = m.heads, shape.block_q = m.block_q,
      shape.block_k = m.block_k;
      shape.causal = m.causal;
      shape.keys_descending = m.keys_descending;
      shape.store_row_statistic = m.store_row_statistic;
      shape.as_mem_efficient = m.as_mem_efficient;
      shape.heads_inner_outputs = m.heads_inner_outputs;
      shape.spill_bytes_per_block = m.spill_bytes_per_block;
      shape.spill_bytes_per_key_block = m.spill_bytes_per_key_block;
      shape.spill_rows = spill_rows(m);
      shape.double_buffer = m.double_buffer;
      shape.accumulators_in_registers = m.accumulators_in_registers;
      shape.q_in_registers = m.q_in_registers;
      shape.ping_pong = m.ping_pong;
      shape.warps = m.warps, shape.warp_rows = m.warp_rows;
      shape.mma = m.mma;
      shape.iterative_softmax = m.iterative_softmax;
      shape.overhead = m.overhead;
      shape.dtype = *dtype;
      return program([shape, schedule = *forward] { return traces::forward_program(schedule, shape); });
    }
    traces::BackwardShape shape;
    shape.n = m.n, shape.d = m.d, shape.heads = m.heads, shape.block_q = m.block_q, shape.block_k = m.block_k;
    shape.causal = m.causal;
    shape.dtype = *dtype;
    shape.skip_forward_values = true;  // validation runs are timing-only
    shape.as_flash_attn = m.as_flash_attn;
    shape.spill_bytes_per_block = m.spill_bytes_per_block;
    shape.spill_rows = spill_rows(m);
    shape.accumulators_in_registers = m.accumulators_in_registers;
    shape.rolled_k_loops = m.rolled_k_loops;
    shape.double_buffer = m.double_buffer;
    shape.warp_groups = m.ping_pong;  // a producer and two consumer warp groups (cuDNN's backward)
    shape.as_mem_efficient = m.as_mem_efficient;
    shape.reload_k = m.reload_k;
    shape.spill_bytes_per_step = m.spill_bytes_per_step;
    shape.spill_load_bytes_per_step = m.spill_load_bytes_per_step;
    shape.spill_load_bytes_per_block = m.spill_load_bytes_per_block;
    shape.spill_frame_bytes = m.spill_frame_bytes;
    shape.heads_inner_outputs = m.heads_inner_outputs;
    shape.warps = m.warps, shape.warp_rows = m.warp_rows;
    shape.mma = m.mma;
    shape.accurate_exp = m.accurate_exp;
    shape.overhead = m.overhead;
    return program([shape, schedule = *backward] { return traces::backward_program(schedule, shape); });
  } catch (const std::invalid_argument& e) {
    throw InputError(data_path, {m.line, 1}, e.what());
  }
}

// The project's FFMA kernels (PyTorch's rows have a label and keep the default kernel column).
bool multiplies_with_ffma(const Measurement& m) {
  return m.label.empty() && m.kernel == "ffma";
}

// The project's FFMA kernels multiply on the CUDA cores, which the MXU model does not stand for; every other
// row (the tensor-core kernels, PyTorch's) is timed against the prediction.
bool time_comparable(const Measurement& m) {
  return !multiplies_with_ffma(m);
}

// The config as the GPU behaves: on a chip, STORE_ADD's read stays in the L2 (red.global.add), so only the
// addend crosses to L2, which is what Nsight Compute's xbar bytes count.
MachineConfig gpu_config(const std::string& config_path, const std::vector<std::string>& overrides) {
  MachineConfig config = load_config(config_path, overrides);
  if (!config.root["noc"].IsDefined()) return config;
  std::vector<std::string> with_atomics{"noc.atomics=l2"};
  with_atomics.insert(with_atomics.end(), overrides.begin(), overrides.end());
  return load_config(config_path, with_atomics);
}

// Rows measured under ncu --clock-control base ran with the SM at the config's clock_base_ghz while the
// memory system kept its own clocks, so they are simulated at that clock (HBM timing is in ns; the cores'
// cycles are not). Overrides the user gives come after, so -p clock_base_ghz=... still applies.
std::vector<std::string> base_clock_overrides(const YAML::Node& config, const std::string& data_path,
                                              const std::vector<Measurement>& measurements,
                                              const std::vector<std::string>& overrides) {
  size_t base = 0, other = 0;
  for (const auto& m : measurements)
    if (m.not_simulated.empty()) (m.clock_control == "base" ? base : other) += 1;
  // Read off the YAML: a second Machine in one process is not what SystemC allows; the Machine built from
  // the result checks the value's range.
  const YAML::Node node = config["clock_base_ghz"];
  const double clock_base_ghz = node.IsDefined() && node.IsScalar() ? node.as<double>(0.0) : 0.0;
  if (base == 0 || !(clock_base_ghz > 0)) return overrides;
  if (other > 0)
    throw InputError(data_path, {},
                     fmt::format("{} rows ran under ncu --clock-control base and {} did not: they run at "
                                 "different clocks, validate them separately",
                                 base, other));
  std::vector<std::string> out{fmt::format("clock_ghz={}", clock_base_ghz)};
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

}  // namespace

namespace {

// A row's clock that the DRAM model cannot time with (too few factors shared with its bandwidth: a clock
// given to 0.1 kHz, say) is the row's input error, not an internal one.
void set_row_clock(Machine& machine, const Measurement& m, double ghz, const std::string& data_path) {
  try {
    machine.set_clock_ghz(ghz);
  } catch (const std::invalid_argument& e) {
    throw InputError(m.path.empty() ? data_path : m.path, {m.line, 1},
                     fmt::format("the row's SM clock, {} GHz: {} (round it to 1 MHz)", ghz, e.what()));
  }
}

// wgmma's operand path on the tensor cores: each warp of a warp group owns 16 of the product's rows on its
// sub-partition's tensor core (M dealt to the arrays), and consecutive k-steps and N slices stream back to
// back with the accumulators in registers (cell hand-off); B leaves shared memory once for the four tensor
// cores: measured at the dense peak with both operands in shared memory (calibration.md), which reading B
// once per warp would exceed the 128 B/clk port for.
constexpr MxuUnit::Feed kWgmmaFeed{mxu::HandOff::kCell, MxuUnit::Deal::kM, MxuUnit::SharedOperand::kOnce};

void set_row_feed(Machine& machine, const Measurement& m, const MxuUnit::Feed& config_feed,
                  const std::string& data_path) {
  try {
    machine.set_mxu_feed(m.wgmma ? kWgmmaFeed : config_feed);
  } catch (const std::invalid_argument& e) {
    throw InputError(m.path.empty() ? data_path : m.path, {m.line, 1},
                     fmt::format("the row's kernel multiplies with wgmma: {}", e.what()));
  }
}

// Runs one measured row's program on `machine` and reads off its predictions; an empty optional (and the
// reason in `skipped`) when the model's footprint does not fit the config (e.g. S and P in SRAM).
// The row's timeline, when asked for, into `summary`.
struct RowTimeline {
  const TimelineRequest* request = nullptr;
  ValidationSummary* summary = nullptr;
};

std::optional<ValidationRow> simulate_row(Machine& machine, const Measurement& m, const std::string& where,
                                          std::string& skipped, bool record_blocks, uint64_t hot_part_bytes,
                                          RowTimeline timeline) {
  const int64_t cores = machine.is_chip() ? static_cast<int64_t>(machine.chip()->cores().size()) : 1;
  const isa::Program program = measured_program(m, where, machine.is_chip(), hot_part_bytes, cores);
  try {
    machine.load(program, false, true);
  } catch (const InputError& e) {
    skipped = "does not fit the config: " + e.message();
    return std::nullopt;
  }
  if (machine.chip_loaded()) {
    machine.chip()->set_kernel_occupancy(kernel_occupancy(m, program, where, hot_part_bytes != 0));
    machine.chip()->record_blocks(record_blocks);
  }
  std::unique_ptr<ChipTimelineRecorder> recorder;
  if (timeline.request && machine.chip_loaded()) {
    try {
      recorder = std::make_unique<ChipTimelineRecorder>(
          parse_timeline_cores(timeline.request->cores, machine.chip()->params().cores),
          timeline.request->limit);
    } catch (const std::invalid_argument& e) {
      throw InputError(where, {m.line, 1}, std::string("--timeline-cores: ") + e.what());
    }
  }
  std::optional<ObservedBy> watched;
  if (machine.chip_loaded()) watched.emplace(*machine.chip(), recorder.get());
  machine.run();
  if (recorder) {
    timeline.summary->timeline_json = recorder->json(where, machine.chip()->kernels());
    timeline.summary->timeline_note = recorder->note();
  }
  ValidationRow row;
  row.measured = m;
  if (machine.chip_loaded()) {  // SM <-> L2 from the network's ledger; DRAM behind the L2
    const ChipSummary c = summarize_chip(*machine.chip(), program, machine.clock_ghz());
    row.predicted_read = static_cast<double>(total(c.sm_l2_read));
    row.predicted_write = static_cast<double>(total(c.sm_l2_written));
    row.predicted_cycles = c.cycles;
    row.predicted_dram_read = static_cast<double>(total(c.dram_read));
    row.predicted_dram_written = static_cast<double>(total(c.dram_written));
    if (c.has_l2) {
      row.predicted_l2_lookup_read_miss_sectors = static_cast<double>(c.l2_lookup_read_miss_sectors);
      row.predicted_l2_fabric_sectors = static_cast<double>(c.l2_fabric_sectors);
      row.predicted_l2_home_miss_sectors = static_cast<double>(c.l2_home_lookup_miss_sectors);
    }
    row.predicted_dram_read_by_tensor = c.dram_read;
    if (hot_part_bytes) {  // the first read fetches the buffer once; the rest is what the kernels pushed out
      const auto hot = c.dram_read.find(traces::kHotPartTensor);
      const double read = hot == c.dram_read.end() ? 0 : static_cast<double>(hot->second);
      row.predicted_hot_part_lost =
          (read - static_cast<double>(hot_part_bytes)) / static_cast<double>(hot_part_bytes);
    }
    row.predicted_dram_written_by_tensor = c.dram_written;
    row.predicted_l2_resident_by_tensor = c.resident_at_kernel_end;
    row.predicted_read_by_tensor = c.sm_l2_read;
    if (machine.issue()) {
      row.predicted_warp_instructions = row.predicted_ldmatrix = 0;
      for (const auto& core : machine.chip()->cores()) {
        row.predicted_warp_instructions += static_cast<double>(core->issue()->warp_instructions);
        row.predicted_ldmatrix += static_cast<double>(core->issue()->ldmatrix);
      }
      row.predicted_warp_instructions_by_op = c.warp_instructions_by_op;
    }
    if (record_blocks) row.blocks = machine.chip()->block_records();
    for (const KernelReport& k : machine.chip()->kernels()) {
      row.predicted_kernel_names.push_back(k.name);
      row.predicted_kernel_cycles.push_back(static_cast<int64_t>(k.end_cycle - k.start_cycle));
      if (machine.issue()) row.predicted_kernel_warp_instructions.push_back(k.warp_instructions);
    }
  } else {
    row.predicted_read = static_cast<double>(machine.hbm()->transferred_read);
    row.predicted_write = static_cast<double>(machine.hbm()->transferred_written);
    row.predicted_cycles = machine.sequencer().cycles();
  }
  row.clock_ghz = machine.clock_ghz();  // clock_base_ghz for rows measured at base clocks
  row.predicted_ns = static_cast<double>(row.predicted_cycles) / row.clock_ghz;
  return row;
}

// The row at each placement of its tensors (each address a first_tensor_address), the run with the median
// DRAM reads kept and every run's reads beside it; the machine's layout is as configured afterwards. Without
// addresses, the one run as configured.
std::optional<ValidationRow> simulate_placements(Machine& machine, const Measurement& m,
                                                 const std::string& where, std::string& skipped,
                                                 const ValidateOptions& o, ValidationSummary& summary,
                                                 const std::vector<uint64_t>& addresses) {
  if (addresses.empty())
    return simulate_row(machine, m, where, skipped, o.record_blocks, o.hot_part_bytes,
                        {o.timeline, &summary});
  const uint64_t configured = machine.first_tensor_address();
  std::vector<ValidationRow> runs;
  for (const uint64_t address : addresses) {
    machine.set_first_tensor_address(address);
    std::optional<ValidationRow> run =
        simulate_row(machine, m, where, skipped, o.record_blocks, o.hot_part_bytes, {});
    if (!run) {
      skipped = fmt::format("at first_tensor_address {}: {}", address, skipped);
      break;
    }
    runs.push_back(std::move(*run));
  }
  machine.set_first_tensor_address(configured);
  if (runs.size() != addresses.size()) return std::nullopt;
  // The lower middle run by DRAM reads, ties to the earlier placement.
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto middle = order.begin() + static_cast<std::ptrdiff_t>((runs.size() - 1) / 2);
  std::nth_element(order.begin(), middle, order.end(), [&runs](size_t a, size_t b) {
    return std::pair(runs[a].predicted_dram_read, a) < std::pair(runs[b].predicted_dram_read, b);
  });
  std::vector<double> reads;
  for (const ValidationRow& run : runs) reads.push_back(run.predicted_dram_read);
  ValidationRow row = std::move(runs[*middle]);
  row.predicted_dram_read_by_placement = std::move(reads);
  return row;
}

// The first tensor's address of each placement: the config's plus each offset; only on a whole chip, whose
// L2 hashes see addresses.
std::vector<uint64_t> placement_addresses(const Machine& machine, const std::vector<uint64_t>& offsets,
                                          const std::string& config_path) {
  if (offsets.empty()) return {};
  if (!machine.is_chip())
    throw InputError(
        config_path, {},
        "--placements moves the tensors under a whole chip's L2: the config has no chip: section");
  std::vector<uint64_t> addresses;
  for (const uint64_t offset : offsets) addresses.push_back(machine.first_tensor_address() + offset);
  return addresses;
}

// NRMSE, Pearson r and the time's MAPE over the simulated rows.
void summarize_rows(ValidationSummary& s) {
  std::vector<double> pr, mr, pw, mw, pd, md, pdw, mdw, pt, mt;
  for (const ValidationRow& row : s.rows) {
    const Measurement& m = row.measured;
    if (m.sm_l2_measured) {
      pr.push_back(row.predicted_read), mr.push_back(m.l1_read_bytes);
      pw.push_back(row.predicted_write), mw.push_back(m.l1_write_bytes);
    }
    if (row.predicted_dram_read >= 0) {
      pd.push_back(row.predicted_dram_read), md.push_back(m.dram_read_bytes);
      pdw.push_back(row.predicted_dram_written), mdw.push_back(m.dram_write_bytes);
      s.chip = true;
    }
    if (m.time_ns > 0 && time_comparable(m)) pt.push_back(row.predicted_ns), mt.push_back(m.time_ns);
  }
  s.timed_rows = pt.size();
  s.sm_l2_rows = pr.size();
  s.time_mape = mape(pt, mt);
  s.time_pearson = pearson(pt, mt);
  s.read_nrmse = nrmse(pr, mr);
  s.write_nrmse = nrmse(pw, mw);
  s.read_pearson = pearson(pr, mr);
  s.write_pearson = pearson(pw, mw);
  if (!s.chip) return;
  s.dram_read_nrmse = nrmse(pd, md);
  s.dram_read_pearson = pearson(pd, md);
  s.dram_write_nrmse = nrmse(pdw, mdw);
  s.dram_write_pearson = pearson(pdw, mdw);
}

}  // namespace

ValidationSummary validate(const std::string& config_path, const std::string& data_path,
                           const std::vector<Measurement>& measurements, const ValidateOptions& options) {
  if (options.timeline && measurements.size() != 1)
    throw InputError(
        data_path, {},
        fmt::format("--timeline shows one row's run: give one row, not {}", measurements.size()));
  if (options.timeline && !options.placement_offsets.empty())
    throw InputError(data_path, {}, "--timeline shows one run: give no --placements");
  std::vector<std::string> overrides = options.overrides;
  if (options.hot_part_bytes) overrides.push_back("chip.l2_between_kernels=keep");
  const YAML::Node config = load_config(config_path, overrides).root;
  Machine machine(gpu_config(config_path, base_clock_overrides(config, data_path, measurements, overrides)));
  ValidationSummary summary;
  summary.placement_addresses = placement_addresses(machine, options.placement_offsets, config_path);
  summary.clock_ghz = config["clock_ghz"].as<double>(1.0);
  summary.clock_base_ghz = machine.clock_base_ghz();
  const double config_clock = machine.clock_ghz();
  const std::optional<MxuUnit::Feed> config_feed =
      machine.mxu() ? std::optional(machine.mxu()->feed()) : std::nullopt;
  for (const auto& m : measurements) {
    std::string skipped = m.not_simulated;
    std::optional<ValidationRow> row;
    // A row that says at which clock its SMs ran is simulated at that clock (a whole chip's cores and DRAM).
    const bool own_clock = m.sm_clock_ghz > 0 && machine.is_chip();
    if (machine.is_chip()) set_row_clock(machine, m, own_clock ? m.sm_clock_ghz : config_clock, data_path);
    if (config_feed) set_row_feed(machine, m, *config_feed, data_path);
    // The FFMA kernels multiply on the CUDA cores with independent accumulators per warp: none of the
    // tensor-core code whose latencies the presets carry (ldmatrix + mma.sync, the softmax's shuffles). Its
    // blocks' measured drift is reproduced without them (Validation.CoResidentBlocksDriftApartAsOnTheH100).
    if (machine.is_chip()) machine.set_result_latencies(!multiplies_with_ffma(m));
    // Their warps, issuing FFMA back to back, are ready every cycle, so the schedulers' preference for the
    // oldest holds younger blocks back (measured: 0.537 and 0.726 of the third's end): served oldest first
    // whatever the config says; the other rows as configured (docs/chip.md, "Which resident block a core
    // serves first").
    if (machine.is_chip())
      machine.set_issue_priority(multiplies_with_ffma(m) ? std::optional(ChipParams::IssuePriority::Oldest)
                                                         : std::nullopt);
    // The issue costs describe mma.sync code (the tensor-core kernels', FlashAttention-2's): not the FFMA
    // kernels' nor wgmma's (one instruction per warp group and 64 x N x 16, B read from shared memory by
    // the tensor cores, no ldmatrix), which also runs beside the schedulers.
    if (machine.is_chip()) machine.set_issue_limits(!multiplies_with_ffma(m) && !m.wgmma, !m.wgmma);
    if (skipped.empty())
      row = simulate_placements(machine, m, m.path.empty() ? data_path : m.path, skipped, options, summary,
                                summary.placement_addresses);
    if (!row) {
      summary.not_simulated.push_back(m);
      summary.not_simulated.back().not_simulated = skipped;
      continue;
    }
    summary.measured_clock_rows += own_clock ? 1 : 0;
    summary.base_clock_rows +=
        !own_clock && m.clock_control == "base" && machine.clock_base_ghz() > 0 ? 1 : 0;
    summary.rows.push_back(*row);
  }
  summarize_rows(summary);
  return summary;
}

namespace {

// Which clock turned the rows' cycles into time.
std::string clock_words(const ValidationSummary& s) {
  if (s.measured_clock_rows > 0) {
    const std::string own = fmt::format(
        "the SM clock Nsight Compute measured during each row's kernels (sm_clock_ghz) for {} rows",
        s.measured_clock_rows);
    const size_t rest = s.rows.size() - s.measured_clock_rows;
    if (rest == 0) return own;
    return fmt::format("{}; {} for the other {}", own,
                       s.base_clock_rows > 0 ? fmt::format("{} GHz (clock_base_ghz)", s.clock_base_ghz)
                                             : fmt::format("{} GHz (clock_ghz)", s.clock_ghz),
                       rest);
  }
  if (s.base_clock_rows == 0) return fmt::format("the config's clock_ghz, {} GHz", s.clock_ghz);
  if (s.base_clock_rows == s.rows.size())
    return fmt::format("{} GHz, the config's clock_base_ghz: the rows ran under ncu --clock-control base",
                       s.clock_base_ghz);
  return fmt::format(
      "{} GHz (clock_base_ghz) for the {} rows measured under ncu --clock-control base, else clock_ghz {} "
      "GHz",
      s.clock_base_ghz, s.base_clock_rows, s.clock_ghz);
}

// What --placements did, for the table's notes.
std::string placement_words(const std::vector<uint64_t>& addresses) {
  std::string list;
  for (const uint64_t a : addresses)
    list += fmt::format("{}{:.6g}", list.empty() ? "" : ", ", static_cast<double>(a) / (1 << 20));
  return fmt::format(
      "each row ran at {} placements of its tensors (the first at {} MiB, hbm.first_tensor_address): its "
      "figures are the run with the median DRAM reads; rd lo / rd hi the lowest and highest DRAM reads over "
      "the placements / measured (every run's in --csv)\n",
      addresses.size(), list);
}

}  // namespace

namespace {

std::string sm_l2_figures(const ValidationSummary& s) {
  if (s.sm_l2_rows == 0)
    return "SM<->L2 bytes:       not measured in these rows (DRAM-only sweeps: DRAM bytes and time alone)\n";
  const std::string over =
      s.sm_l2_rows < s.rows.size() ? fmt::format(" over the {} rows that measured them", s.sm_l2_rows) : "";
  return fmt::format("SM<->L2 read bytes:  NRMSE {:.4f}, Pearson r {:.5f}{}\n", s.read_nrmse, s.read_pearson,
                     over) +
         fmt::format("SM<->L2 write bytes: NRMSE {:.4f}, Pearson r {:.5f}{}\n", s.write_nrmse,
                     s.write_pearson, over);
}

std::string repeats_words(const ValidationSummary& s) {
  int least = 0, most = 0;
  for (const ValidationRow& r : s.rows)
    if (r.measured.repeats > 1) {
      least = least ? std::min(least, r.measured.repeats) : r.measured.repeats;
      most = std::max(most, r.measured.repeats);
    }
  if (!most) return "";
  const std::string files = least == most ? std::to_string(most) : fmt::format("{}-{}", least, most);
  return fmt::format(
      "meas: each row's median over {} files' rows of the same case (DRAM bytes, time, and SM<->L2 bytes "
      "where every file has them; the mean of the middle two for an even count)\n",
      files);
}

}  // namespace

void print_validation(std::ostream& out, const ValidationSummary& s) {
  out << fmt::format("{:24} {:>6} {:>3} {:>6} {:>14} {:>14} {:>7} {:>12} {:>12} {:>7}", "schedule", "n", "d",
                     "causal", "SM<-L2 pred", "SM<-L2 meas", "ratio", "SM->L2 pred", "SM->L2 meas", "ratio");
  if (s.chip)
    out << fmt::format(" {:>13} {:>13} {:>6} {:>11} {:>11}", "DRAM rd pred", "DRAM rd meas", "ratio",
                       "DRAM wr pred", "DRAM wr meas");
  const bool placed = !s.placement_addresses.empty();
  if (placed) out << fmt::format(" {:>6} {:>6}", "rd lo", "rd hi");
  out << fmt::format(" {:>10} {:>10} {:>6}\n", "pred us", "GPU us", "ratio");
  auto ratio = [](double predicted, double measured) { return measured ? predicted / measured : 0.0; };
  for (const auto& r : s.rows) {
    const auto& m = r.measured;
    out << fmt::format("{:24} {:>6} {:>3} {:>6} ", m.label.empty() ? m.schedule : m.label, m.n, m.d,
                       m.causal ? "yes" : "no");
    if (m.sm_l2_measured)
      out << fmt::format("{:>14.0f} {:>14.0f} {:>7.3f} {:>12.0f} {:>12.0f} {:>7.3f}", r.predicted_read,
                         m.l1_read_bytes, ratio(r.predicted_read, m.l1_read_bytes), r.predicted_write,
                         m.l1_write_bytes, ratio(r.predicted_write, m.l1_write_bytes));
    else
      out << fmt::format("{:>14.0f} {:>14} {:>7} {:>12.0f} {:>12} {:>7}", r.predicted_read, "-", "-",
                         r.predicted_write, "-", "-");
    if (s.chip)
      out << fmt::format(" {:>13.0f} {:>13.0f} {:>6.3f} {:>11.0f} {:>11.0f}", r.predicted_dram_read,
                         m.dram_read_bytes, ratio(r.predicted_dram_read, m.dram_read_bytes),
                         r.predicted_dram_written, m.dram_write_bytes);
    if (placed && !r.predicted_dram_read_by_placement.empty()) {
      const auto [low, high] = std::minmax_element(r.predicted_dram_read_by_placement.begin(),
                                                   r.predicted_dram_read_by_placement.end());
      out << fmt::format(" {:>6.3f} {:>6.3f}", ratio(*low, m.dram_read_bytes),
                         ratio(*high, m.dram_read_bytes));
    }
    out << fmt::format(" {:>10.1f} {:>10.1f} {:>6.3f}\n", r.predicted_ns / 1e3, m.time_ns / 1e3,
                       ratio(r.predicted_ns, m.time_ns));
  }
  out << (s.chip
              ? "bytes are whole-chip totals: SM<-L2 / SM->L2 what the thread blocks loaded and stored "
                "(measured: L1 <-> L2), DRAM rd / wr what reached DRAM (wr: evictions while kernels ran)\n"
              : "bytes: predicted off-chip traffic of the one simulated core vs the SMs' measured L1 <-> L2 "
                "traffic\n");
  if (placed) out << placement_words(s.placement_addresses);
  out << repeats_words(s);
  out << fmt::format(
      "pred us: the simulated kernels' cycles at {} ({}); GPU us: the measured time "
      "(gpu__time_duration, summed over the pass's kernels)\n",
      clock_words(s),
      s.chip ? "the whole chip" : "one core doing the whole problem, not comparable with the GPU's time");
  for (const auto& r : s.rows)
    if (!time_comparable(r.measured)) {
      out << "the project's FFMA kernels (validation/kernels.cu) multiply on the CUDA cores, the config's "
             "MXU "
             "stands for tensor cores: their predicted and measured times are not comparable (left out of "
             "the "
             "kernel time's figures)\n";
      break;
    }
  for (const auto& r : s.rows)
    if (r.measured.dynamic_tiles) {
      out << "persistent grids with a dynamic tile scheduler (cuDNN): work tiles go to SMs as they free up, "
             "simulated as the ordinary grid at one block per SM; inferred from the causal rows (a static "
             "round robin reads 1.8 to 27 times their measured DRAM bytes), not documented\n";
      break;
    }
  for (const auto& r : s.rows)
    if (r.measured.wgmma) {
      out << "wgmma kernels (cuDNN's, by name): their products fed to the tensor cores as wgmma feeds them, "
             "rows dealt to the arrays and passes streamed (mxu hand_off cell, deal m; docs/models/mxu.md); "
             "every other row as the config says\n";
      break;
    }
  for (const auto& r : s.rows)
    if (r.predicted_hot_part_lost >= 0)
      out << fmt::format(
          "{} n={} d={}{}: hot buffer (DRAM reads, whole chip): {:.4f} of it (read by every core just before "
          "the kernels) came from "
          "DRAM again just after them (the L2 kept between kernels; the DRAM figures above include its "
          "reads)\n",
          r.measured.label.empty() ? r.measured.schedule : r.measured.label, r.measured.n, r.measured.d,
          r.measured.causal ? " causal" : "", r.predicted_hot_part_lost);
  for (const auto& m : s.not_simulated)
    out << fmt::format("{}:{}: {} n={} d={}{}: not simulated: {}\n", m.path, m.line,
                       m.label.empty() ? m.schedule : m.label, m.n, m.d, m.causal ? " causal" : "",
                       m.not_simulated);
  out << sm_l2_figures(s);
  if (!s.chip) return;
  if (s.timed_rows == 0)
    out << "Kernel time:         no row with a comparable time\n";
  else
    out << fmt::format(
        "Kernel time:         MAPE {:.1f}%, Pearson r {:.5f} over {} rows (not yet calibrated: "
        "docs/calibration.md)\n",
        100 * s.time_mape, s.time_pearson, s.timed_rows);
  out << fmt::format("DRAM read bytes:     NRMSE {:.4f}, Pearson r {:.5f} (whole chip)\n", s.dram_read_nrmse,
                     s.dram_read_pearson);
  out << fmt::format(
      "DRAM write bytes:    NRMSE {:.4f}, Pearson r {:.5f} (whole chip; evictions while kernels ran, as "
      "Nsight "
      "Compute counts them)\n",
      s.dram_write_nrmse, s.dram_write_pearson);
  out << kernel_breakdown(s);
}

std::string kernel_breakdown(const ValidationSummary& s) {
  // (schedule, kernel) in first-seen order -> ratios of simulated to measured cycles, one per launch.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratios;
  for (const ValidationRow& row : s.rows) {
    const std::vector<double> measured = row.measured.kernel_cycles();
    if (measured.size() < 2 || measured.size() != row.predicted_kernel_cycles.size()) continue;
    for (size_t k = 0; k < measured.size(); ++k) {
      // flash1's launches are one kernel per key block (flash1_step_0, _1, ...): one group.
      std::string name = row.predicted_kernel_names[k];
      const size_t digits = name.find_last_not_of("0123456789");
      if (digits + 1 < name.size() && digits != std::string::npos && name[digits] == '_')
        name = name.substr(0, digits) + "_*";
      const auto key = std::make_pair(row.measured.schedule, name);
      if (!ratios.count(key)) order.push_back(key);
      ratios[key].push_back(static_cast<double>(row.predicted_kernel_cycles[k]) / measured[k]);
    }
  }
  if (order.empty()) return "";
  std::string out =
      "Kernel by kernel (rows of several launches; simulated / measured SM cycles, each launch at its own "
      "measured clock):\n";
  for (const auto& key : order) {
    std::vector<double>& v = ratios[key];
    std::sort(v.begin(), v.end());
    const size_t half = v.size() / 2;
    const double median = v.size() % 2 ? v[half] : (v[half - 1] + v[half]) / 2;
    out += fmt::format("  {:18} {:24} {:4} launches  {:.2f}-{:.2f}, median {:.2f}\n", key.first, key.second,
                       v.size(), v.front(), v.back(), median);
  }
  return out;
}

namespace {

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// "4/8/7": whole numbers (cycles, blocks) separated by '/'.
template <typename Number>
std::string joined(const std::vector<Number>& values) {
  std::string out;
  for (Number v : values) out += fmt::format("{}{:.0f}", out.empty() ? "" : "/", static_cast<double>(v));
  return out;
}

// "q=1024;k=2048": bytes per tensor, largest first (ties by name), zeros left out.
std::string by_tensor(const std::map<std::string, uint64_t>& bytes) {
  std::vector<std::pair<std::string, uint64_t>> sorted(bytes.begin(), bytes.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, count] : sorted)
    if (count) out += fmt::format("{}{}={}", out.empty() ? "" : ";", name, count);
  return out;
}

// A count, or nothing where there is none (-1).
std::string count_cell(double value) {
  return value < 0 ? "" : fmt::format("{:.0f}", value);
}

std::string measurement_cells(const Measurement& m, bool simulated) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_cell(m.path), m.line,
                     csv_cell(m.label.empty() ? m.schedule : m.label), csv_cell(m.schedule),
                     csv_cell(m.kernel), m.n, m.d, m.heads, m.block_q, m.block_k, m.causal ? 1 : 0,
                     joined(m.blocks_per_sm), simulated && m.time_ns > 0 && time_comparable(m) ? 1 : 0);
}

}  // namespace

std::string validation_block_times_csv(const ValidationSummary& s) {
  std::string out =
      "file,line,label,launch,kernel,block_x,block_y,block_z,core,start_cycle,end_cycle,start_us,end_us\n";
  for (const auto& r : s.rows) {
    const double us_per_cycle = 1e-3 / r.clock_ghz;
    for (const BlockRecord& b : r.blocks)
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f}\n", csv_cell(r.measured.path),
                         r.measured.line,
                         csv_cell(r.measured.label.empty() ? r.measured.schedule : r.measured.label),
                         b.launch, r.predicted_kernel_names.at(static_cast<size_t>(b.launch)), b.index[0],
                         b.index[1], b.index[2], b.core, b.start_cycle, b.end_cycle,
                         double(b.start_cycle) * us_per_cycle, double(b.end_cycle) * us_per_cycle);
  }
  return out;
}

namespace {

// placements, the lowest and highest DRAM reads over them, and each run's as address=bytes; one placement:
// 1 and the row's reads.
// A measured SM <-> L2 figure, empty where the row's sweep did not measure them.
std::string sm_l2_cell(const Measurement& m, double bytes) {
  return m.sm_l2_measured ? fmt::format("{:.0f}", bytes) : "";
}

std::string placement_cells(const ValidationRow& r, const std::vector<uint64_t>& addresses) {
  if (addresses.empty()) return fmt::format("1,{:.0f},{:.0f},", r.predicted_dram_read, r.predicted_dram_read);
  const auto [low, high] = std::minmax_element(r.predicted_dram_read_by_placement.begin(),
                                               r.predicted_dram_read_by_placement.end());
  std::string each;
  for (size_t i = 0; i < addresses.size(); ++i)
    each += fmt::format("{}{}={:.0f}", i ? ";" : "", addresses[i], r.predicted_dram_read_by_placement[i]);
  return fmt::format("{},{:.0f},{:.0f},{}", addresses.size(), *low, *high, each);
}

}  // namespace

std::string validation_csv(const ValidationSummary& s) {
  std::string out =
      "file,line,label,schedule,kernel,n,d,heads,block_q,block_k,causal,blocks_per_sm,timed,"
      "sm_l2_read_pred_bytes,sm_l2_read_meas_bytes,sm_l2_write_pred_bytes,sm_l2_write_meas_bytes,"
      "dram_read_pred_bytes,dram_read_meas_bytes,dram_write_pred_bytes,dram_write_meas_bytes,"
      "time_pred_ns,time_meas_ns,time_ratio,clock_ghz,warp_instructions_pred,ldmatrix_pred,"
      "kernel_cycles_pred,kernel_cycles_meas,not_simulated,sm_l2_read_pred_by_tensor,"
      "dram_read_pred_by_tensor,dram_write_pred_by_tensor,l2_lookup_read_miss_pred_sectors,"
      "l2_lookup_miss_meas_sectors,l2_fabric_pred_sectors,l2_fabric_meas_sectors,"
      "l2_resident_end_pred_by_tensor,l2_home_miss_pred_sectors,l2_home_miss_meas_sectors,placements,"
      "dram_read_pred_min_bytes,dram_read_pred_max_bytes,dram_read_pred_by_first_tensor_address,"
      "meas_repeats,kernel_warp_instructions_pred,warp_instructions_pred_by_op\n";
  auto ratio = [](double predicted, double measured) { return measured ? predicted / measured : 0.0; };
  for (const auto& r : s.rows) {
    const Measurement& m = r.measured;
    out += fmt::format(
        "{},{:.0f},{},{:.0f},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.1f},{:.1f},{:.4f},{},{:.0f},{:.0f},{},"
        "{},,{},{},{},{},{},{},{},{},{},{},{},{},{},{}"
        "\n",
        measurement_cells(m, true), r.predicted_read, sm_l2_cell(m, m.l1_read_bytes), r.predicted_write,
        sm_l2_cell(m, m.l1_write_bytes), r.predicted_dram_read, m.dram_read_bytes, r.predicted_dram_written,
        m.dram_write_bytes, r.predicted_ns, m.time_ns, ratio(r.predicted_ns, m.time_ns), r.clock_ghz,
        r.predicted_warp_instructions, r.predicted_ldmatrix, joined(r.predicted_kernel_cycles),
        joined(m.kernel_cycles()), by_tensor(r.predicted_read_by_tensor),
        by_tensor(r.predicted_dram_read_by_tensor), by_tensor(r.predicted_dram_written_by_tensor),
        count_cell(r.predicted_l2_lookup_read_miss_sectors), count_cell(m.l2_lookup_miss_sectors),
        count_cell(r.predicted_l2_fabric_sectors), count_cell(m.l2_fabric_sectors),
        by_tensor(r.predicted_l2_resident_by_tensor), count_cell(r.predicted_l2_home_miss_sectors),
        count_cell(m.l2_home_miss_sectors), placement_cells(r, s.placement_addresses), m.repeats,
        joined(r.predicted_kernel_warp_instructions), by_tensor(r.predicted_warp_instructions_by_op));
  }
  for (const auto& m : s.not_simulated)
    out += fmt::format("{},,,,,,,,,,,,,,,,,{},,,,,,,,,,,,,,,,,\n", measurement_cells(m, false),
                       csv_cell(m.not_simulated));
  return out;
}

}  // namespace attnsim
