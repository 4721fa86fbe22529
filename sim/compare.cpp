#include "sim/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "sim/machine.h"
#include "sim/reference.h"
#include "traces/attention_backward.h"
#include "traces/attention_forward.h"
#include "traces/planner.h"
#include "traces/stream.h"

namespace attnsim {

namespace {

// One schedule to compare: its name and how to generate it for a shape.
struct ScheduleEntry {
  std::string name;
  std::function<isa::Program(const traces::AttentionShape& shape, int64_t heads, bool values)> make;
};

std::vector<ScheduleEntry> forward_entries() {
  std::vector<ScheduleEntry> out;
  for (auto s : traces::all_forward_schedules())
    out.push_back({std::string(traces::schedule_name(s)),
                   [s](const traces::AttentionShape& shape, int64_t heads, bool) {
                     traces::ForwardShape f;
                     static_cast<traces::AttentionShape&>(f) = shape;
                     f.heads = heads;
                     return traces::forward_program(s, f);
                   }});
  return out;
}

std::vector<ScheduleEntry> backward_entries() {
  std::vector<ScheduleEntry> out;
  for (auto s : {traces::BackwardSchedule::Flash2, traces::BackwardSchedule::Flash2NoD,
                 traces::BackwardSchedule::Naive})
    out.push_back({std::string(traces::schedule_name(s)),
                   [s](const traces::AttentionShape& shape, int64_t heads, bool values) {
                     traces::BackwardShape b;
                     static_cast<traces::AttentionShape&>(b) = shape;
                     b.heads = heads;
                     b.skip_forward_values = !values;
                     return traces::backward_program(s, b);
                   }});
  return out;
}

// Bytes the schedule's buffers take in SRAM at these blocks (each rounded up to the SRAM's alignment),
// read from a small instance of the real generator, so the planner checks the real inventory.
uint64_t schedule_buffer_bytes(const ScheduleEntry& entry, traces::AttentionShape shape, int64_t bq,
                               int64_t bk, uint64_t alignment) {
  shape.block_q = bq;
  shape.block_k = bk;
  shape.n = std::max(bq, bk) * 2;
  isa::Program p = entry.make(shape, 1, false);
  uint64_t total = 0;
  for (const auto& b : p.buffers) {
    if (b.space != isa::BufferDecl::Space::Sram) continue;
    uint64_t bytes = static_cast<uint64_t>(b.rows * b.cols) * dtype_bytes(b.dtype.value_or(shape.dtype));
    total += (bytes + alignment - 1) / alignment * alignment;
  }
  return total;
}

// One core: its off-chip traffic is the HBM ledger.
void fill_from_core(CompareRow& row, Machine& machine, const isa::Program& program) {
  const Hbm& hbm = *machine.hbm();
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    row.bytes_read[program.tensors[t].name] = hbm.bytes_read_per_tensor[t];
    row.bytes_written[program.tensors[t].name] = hbm.bytes_written_per_tensor[t];
    row.hbm_read += hbm.bytes_read_per_tensor[t];
    row.hbm_written += hbm.bytes_written_per_tensor[t];
  }
  row.sram_peak = machine.sram()->peak_occupancy_bytes;
  row.mxu_flops = 2 * machine.mxu()->macs;
  row.vpu_element_ops = machine.vpu()->element_ops;
  row.cycles = machine.sequencer().cycles();
  row.instructions = machine.sequencer().instructions();
  row.seconds = static_cast<double>(row.cycles) / (machine.clock_ghz() * 1e9);
}

// A whole chip: SM <-> L2 bytes in the per-tensor maps, the levels behind in row.chip.
void fill_from_chip(CompareRow& row, Machine& machine, const isa::Program& program) {
  row.chip = summarize_chip(*machine.chip(), program, machine.clock_ghz());
  const ChipSummary& s = *row.chip;
  row.bytes_read = s.sm_l2_read;
  row.bytes_written = s.sm_l2_written;
  row.hbm_read = total(s.sm_l2_read);
  row.hbm_written = total(s.sm_l2_written);
  row.sram_peak = s.block_sram_bytes;
  row.mxu_flops = s.mxu_flops;
  row.vpu_element_ops = s.vpu_element_ops;
  row.cycles = s.cycles;
  row.instructions = s.instructions;
  row.seconds = s.seconds;
  row.blocks = machine.chip()->block_records();
}

}  // namespace

std::vector<CompareRow> run_compare(const CompareOptions& options) {
  if (options.n < 1 || options.d < 1 || options.heads < 1 || options.batch < 1)
    throw InputError("attnsim compare", {}, "--N, --d, --heads and --batch must be positive");
  // Bounds that keep every tensor's element count (heads x N x N for S) well inside 64 bits.
  if (options.n > (int64_t{1} << 24) || options.d > 65536 || options.heads > 65536 || options.batch > 65536 ||
      options.heads * options.batch > 65536)
    throw InputError("attnsim compare", {},
                     "--N is at most 2^24, --d 65536, and --heads x --batch at most 65536");
  if (options.block < 0 || options.block_q < 0 || options.block_k < 0)
    throw InputError("attnsim compare", {},
                     "--block, --block-q and --block-k must be positive (or 0 to plan)");
  if ((options.block_q > 0) != (options.block_k > 0) && options.block == 0)
    throw InputError("attnsim compare", {},
                     "--block-q and --block-k go together (or with --block for the other)");
  MachineConfig config = load_config(options.config_path, options.overrides);
  Machine machine(config);
  if (!machine.has_tile_units())
    throw InputError(options.config_path, {}, "compare needs a tile machine (hbm, sram, dma, mxu, vpu)");
  const std::vector<ScheduleEntry> available = options.backward ? backward_entries() : forward_entries();
  std::vector<ScheduleEntry> schedules;
  if (options.schedules.empty()) {
    schedules = available;
  } else {
    for (const auto& name : options.schedules) {
      auto it =
          std::find_if(available.begin(), available.end(), [&](const auto& e) { return e.name == name; });
      if (it == available.end()) {
        std::string known;
        for (const auto& e : available) known += (known.empty() ? "" : ", ") + e.name;
        throw InputError("attnsim compare", {}, "unknown schedule '" + name + "' (here: " + known + ")");
      }
      schedules.push_back(*it);
    }
  }
  const int64_t heads = options.heads * options.batch;
  traces::AttentionShape shape;
  shape.n = options.n;
  shape.d = options.d;
  shape.causal = options.causal;
  shape.dtype = options.dtype;
  shape.double_buffer = options.double_buffer;
  const bool values = options.values_enabled();
  const Sram& sram = *machine.sram();

  std::vector<CompareRow> rows;
  for (const auto& schedule : schedules) {
    CompareRow row;
    row.schedule = schedule.name;
    if (options.block > 0 || options.block_q > 0) {
      row.block_q = options.block_q > 0 ? options.block_q : options.block;
      row.block_k = options.block_k > 0 ? options.block_k : options.block;
      row.plan.push_back(fmt::format("B_r = {}, B_c = {} (given)", row.block_q, row.block_k));
    } else {
      traces::BlockPlan plan = traces::plan_for_sram(
          sram.params().capacity_bytes, options.d, dtype_bytes(options.dtype), [&](int64_t bq, int64_t bk) {
            return schedule_buffer_bytes(schedule, shape, bq, bk, sram.params().alignment_bytes);
          });
      if (!plan.fits)
        throw InputError(options.config_path, {},
                         row.schedule + ": no block size fits the SRAM (" + plan.reasoning.back() + ")");
      row.block_q = plan.block_q;
      row.block_k = plan.block_k;
      row.plan = plan.reasoning;
    }
    // A block longer than the sequence only reserves SRAM it never fills.
    if (row.block_q > options.n || row.block_k > options.n) {
      row.block_q = std::min(row.block_q, options.n);
      row.block_k = std::min(row.block_k, options.n);
      row.plan.push_back(
          fmt::format("capped at N = {}: B_r = {}, B_c = {}", options.n, row.block_q, row.block_k));
    }
    traces::AttentionShape run_shape = shape;
    run_shape.block_q = row.block_q;
    run_shape.block_k = row.block_k;
    isa::Program program = traces::stream_program([&] { return schedule.make(run_shape, heads, values); });
    const auto started = std::chrono::steady_clock::now();
    machine.load(program, false, !values);
    if (options.record_blocks) {
      if (!machine.chip_loaded())
        throw InputError(options.config_path, {},
                         "--block-times needs a whole-chip config (one with a chip: section)");
      machine.chip()->record_blocks(true);
    }
    auto tensor_values = [&](int t) {
      return machine.chip_loaded() ? machine.chip()->tensor_values(t) : machine.sequencer().tensor_values(t);
    };
    std::vector<std::vector<double>> initial;
    if (values)
      for (size_t t = 0; t < program.tensors.size(); ++t) initial.push_back(tensor_values(int(t)));
    machine.run();
    row.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (machine.chip_loaded())
      fill_from_chip(row, machine, program);
    else
      fill_from_core(row, machine, program);
    if (values) {
      std::vector<std::vector<double>> final;
      for (size_t t = 0; t < program.tensors.size(); ++t) final.push_back(tensor_values(int(t)));
      for (const auto& check : program.checks) {
        CheckResult r =
            evaluate_check(program, check, initial, final, compute_dtype_of(program, machine.dtype()));
        row.max_abs_error = std::max(row.max_abs_error.value_or(0.0), r.max_abs_error);
        row.max_rel_error = std::max(row.max_rel_error.value_or(0.0), r.max_rel_error);
        row.passed = row.passed.value_or(true) && r.passed;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  return fmt::format("{:.{}f} {}", bytes, u == 0 ? 0 : 1, units[u]);
}

}  // namespace

std::string block_times_csv(const std::vector<CompareRow>& rows) {
  std::string csv =
      "schedule,launch,kernel,block_x,block_y,block_z,core,start_cycle,end_cycle,start_us,end_us\n";
  for (const CompareRow& r : rows) {
    if (!r.chip) continue;
    const double us_per_cycle = r.chip->cycles ? r.chip->seconds * 1e6 / double(r.chip->cycles) : 0.0;
    for (const BlockRecord& b : r.blocks)
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{:.3f}\n", r.schedule, b.launch,
                         r.chip->kernels.at(static_cast<size_t>(b.launch)).name, b.index[0], b.index[1],
                         b.index[2], b.core, b.start_cycle, b.end_cycle, double(b.start_cycle) * us_per_cycle,
                         double(b.end_cycle) * us_per_cycle);
  }
  return csv;
}

namespace {

std::string error_cell(const CompareRow& r) {
  return r.max_rel_error ? fmt::format("{:.1e}{}", *r.max_rel_error, r.passed.value_or(false) ? "" : "!")
                         : std::string("-");
}

// A whole chip: each level named, bytes for the whole chip, time in microseconds.
void print_chip_compare(std::ostream& out, const CompareOptions& o, const std::vector<CompareRow>& rows) {
  const ChipSummary& first = *rows.front().chip;
  out << fmt::format("whole chip: {} cores; L2 {} between kernels; bytes are whole-chip totals\n",
                     first.cores, first.l2_flushed_between_kernels ? "flushed" : "kept");
  out << fmt::format("{:16} {:>9} {:>11} {:>11} {:>10} {:>10} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}\n",
                     "schedule", "Br x Bc", "SM<-L2 rd", "SM->L2 wr", "DRAM rd", "DRAM wr", "L2 hit", "waves",
                     "time us", "FLOP/B", "max err", "DRAM/base", "time/base");
  const CompareRow& base = rows.front();
  const auto dram = [](const CompareRow& r) {
    return total(r.chip->dram_read) + total(r.chip->dram_written);
  };
  for (const auto& r : rows) {
    const ChipSummary& c = *r.chip;
    const uint64_t hit = total(c.l2_read_hit), miss = total(c.l2_read_miss);
    double waves = 0;
    for (const auto& k : c.kernels) waves += k.waves;
    out << fmt::format(
        "{:16} {:>9} {:>11} {:>11} {:>10} {:>10} {:>7} {:>7.2f} {:>10.1f} {:>9.1f} {:>9} {:>9.3f} {:>9.3f}\n",
        r.schedule, fmt::format("{}x{}", r.block_q, r.block_k), human_bytes(double(r.hbm_read)),
        human_bytes(double(r.hbm_written)), human_bytes(double(total(c.dram_read))),
        human_bytes(double(total(c.dram_written))),
        hit + miss ? fmt::format("{:.1f}%", 100.0 * double(hit) / double(hit + miss)) : std::string("-"),
        waves, c.seconds * 1e6, dram(r) ? double(r.mxu_flops) / double(dram(r)) : 0.0, error_cell(r),
        dram(base) ? double(dram(r)) / double(dram(base)) : 0.0,
        base.seconds > 0 ? r.seconds / base.seconds : 0.0);
  }
  out << fmt::format(
      "SM<-L2 / SM->L2: bytes the thread blocks load and store; DRAM: what reached DRAM (wr: evictions "
      "during "
      "kernels; dirty lines left in L2 at a kernel's end are not counted, as Nsight Compute); time: the "
      "whole "
      "chip at the config's clock; FLOP/B: MXU FLOPs per DRAM byte; base = {}{}\n",
      base.schedule, o.values_enabled() ? "" : "; timing-only: --values on checks values");
}

}  // namespace

void print_compare(std::ostream& out, const CompareOptions& o, const std::vector<CompareRow>& rows) {
  out << fmt::format("attention {}, N = {}, d = {}, batch x heads = {} x {}, {}, {}{}\n",
                     o.backward ? "backward" : "forward", o.n, o.d, o.batch, o.heads,
                     o.causal ? "causal" : "not causal", dtype_name(o.dtype),
                     o.values_enabled() ? "" : ", timing-only (no values)");
  if (!rows.empty() && rows.front().chip) {
    print_chip_compare(out, o, rows);
    return;
  }
  const CompareRow* base = rows.empty() ? nullptr : &rows.front();
  out << fmt::format("{:16} {:>9} {:>10} {:>10} {:>10} {:>9} {:>10} {:>12} {:>11} {:>9} {:>10} {:>9}\n",
                     "schedule", "Br x Bc", "HBM read", "HBM write", "HBM total", "SRAM peak", "MXU FLOPs",
                     "cycles", "FLOP/byte", "max err", "bytes/base", "cyc/base");
  for (const auto& r : rows) {
    const uint64_t total = r.hbm_read + r.hbm_written;
    const uint64_t base_total = base->hbm_read + base->hbm_written;
    out << fmt::format(
        "{:16} {:>9} {:>10} {:>10} {:>10} {:>9} {:>10.3g} {:>12} {:>11.1f} {:>9} {:>10.3f} {:>9.3f}\n",
        r.schedule, fmt::format("{}x{}", r.block_q, r.block_k), human_bytes(double(r.hbm_read)),
        human_bytes(double(r.hbm_written)), human_bytes(double(total)), human_bytes(double(r.sram_peak)),
        double(r.mxu_flops), r.cycles, total ? double(r.mxu_flops) / double(total) : 0.0,
        r.max_rel_error ? fmt::format("{:.1e}{}", *r.max_rel_error, r.passed.value_or(false) ? "" : "!")
                        : std::string("-"),
        base_total ? double(total) / double(base_total) : 0.0,
        base->cycles ? double(r.cycles) / double(base->cycles) : 0.0);
  }
  out << fmt::format(
      "base = {}; max err is relative to the float64 reference (! = above the {} tolerance){}\n",
      base ? base->schedule : "-", dtype_name(o.dtype),
      o.values_enabled() ? "" : "; timing-only: --values on computes and checks values");
  if (o.show_plan)
    for (const auto& r : rows) {
      out << fmt::format("\nblocks for {}:\n", r.schedule);
      for (const auto& line : r.plan) out << "  " << line << "\n";
    }
}

nlohmann::json compare_json(const CompareOptions& o, const std::vector<CompareRow>& rows) {
  nlohmann::json out = {{"n", o.n},
                        {"d", o.d},
                        {"heads", o.heads},
                        {"batch", o.batch},
                        {"causal", o.causal},
                        {"dtype", std::string(dtype_name(o.dtype))},
                        {"values", o.values_enabled()},
                        {"schedules", nlohmann::json::array()}};
  for (const auto& r : rows) {
    nlohmann::json j = {{"schedule", r.schedule},
                        {"block_q", r.block_q},
                        {"block_k", r.block_k},
                        {"plan", r.plan},
                        {"hbm_bytes_read", r.hbm_read},
                        {"hbm_bytes_written", r.hbm_written},
                        {"hbm_bytes_read_per_tensor", r.bytes_read},
                        {"hbm_bytes_written_per_tensor", r.bytes_written},
                        {"sram_peak_bytes", r.sram_peak},
                        {"mxu_flops", r.mxu_flops},
                        {"vpu_element_ops", r.vpu_element_ops},
                        {"cycles", r.cycles},
                        {"instructions", r.instructions},
                        {"simulated_seconds", r.seconds},
                        {"host_seconds", r.host_seconds}};
    if (r.chip) {
      j["whole_chip"] = chip_summary_json(*r.chip);
      j["sm_l2_bytes_read"] = j["hbm_bytes_read"];
      j["sm_l2_bytes_written"] = j["hbm_bytes_written"];
      j.erase("hbm_bytes_read");  // on a chip nothing but DRAM traffic is called HBM bytes
      j.erase("hbm_bytes_written");
      j["sm_l2_bytes_read_per_tensor"] = r.bytes_read;
      j["sm_l2_bytes_written_per_tensor"] = r.bytes_written;
      j.erase("hbm_bytes_read_per_tensor");
      j.erase("hbm_bytes_written_per_tensor");
    }
    if (r.max_rel_error) {
      j["max_abs_error"] = *r.max_abs_error;
      j["max_rel_error"] = *r.max_rel_error;
      j["passed"] = *r.passed;
    }
    out["schedules"].push_back(j);
  }
  return out;
}

}  // namespace attnsim
