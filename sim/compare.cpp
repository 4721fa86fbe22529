#include "sim/compare.h"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "isa/init.h"
#include "models/common/parallel.h"
#include "sim/compare_codec.h"
#include "sim/machine.h"
#include "sim/reference.h"
#include "sim/sweep_output.h"
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

// The flash2-only and register options apply to the schedules that have them; the others run as usual.
std::vector<ScheduleEntry> forward_entries(const CompareOptions& options) {
  std::vector<ScheduleEntry> out;
  for (auto s : traces::all_forward_schedules()) {
    const bool flash2 = s == traces::ForwardSchedule::Flash2;
    traces::ForwardShape options_of_s;  // the options this schedule takes, copied into each shape
    options_of_s.keys_descending = options.keys_descending && flash2;
    options_of_s.ping_pong = options.ping_pong && flash2;
    options_of_s.sum_after_product = options.sum_after_product && flash2;
    options_of_s.accumulators_in_registers =
        options.registers && (flash2 || s == traces::ForwardSchedule::TwoPassFused);
    // The project's kernels' form: Q_i's fragments in registers too (not with ping-pong's wgmma).
    options_of_s.q_in_registers = traces::q_in_registers_applies(s, options_of_s);
    out.push_back({std::string(traces::schedule_name(s)),
                   [s, options_of_s](const traces::AttentionShape& shape, int64_t heads, bool) {
                     traces::ForwardShape f = options_of_s;
                     static_cast<traces::AttentionShape&>(f) = shape;
                     f.heads = heads;
                     return traces::forward_program(s, f);
                   }});
  }
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
  row.energy = machine.energy_report();
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
  row.energy = s.energy;
  row.blocks = machine.chip()->block_records();
}

// Progress on stderr while schedules run. Plain lines (a log, CI, a test) or, on a terminal, one line
// redrawn every quarter second; in Auto mode nothing until a schedule has run for a second, so short runs
// stay quiet.
class CompareProgress {
 public:
  CompareProgress(const CompareOptions& o, size_t count)
      : mode_(o.progress),
        out_(*o.progress_out),
        count_(count),
        tty_(o.progress_out == &std::cerr && ::isatty(STDERR_FILENO) &&
             mode_ == CompareOptions::Progress::Auto) {
    if (mode_ == CompareOptions::Progress::Auto) watcher_ = std::thread([this] { watch(); });
  }
  ~CompareProgress() {
    {
      std::lock_guard guard(lock_);
      stop_ = true;
    }
    wake_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    if (tty_ && shown_) out_ << "\r\33[K" << std::flush;
  }
  void start(const std::string& schedule, size_t index) {
    std::lock_guard guard(lock_);
    schedule_ = schedule;
    index_ = index;
    started_ = Clock::now();
    announced_ = false;
    if (mode_ == CompareOptions::Progress::On) announce();
  }
  // compare --jobs: schedules run side by side and end in any order, one plain line each (Auto: those
  // that ran past a second).
  void launched(const std::string& schedule, size_t index) {
    std::lock_guard guard(lock_);
    if (mode_ == CompareOptions::Progress::On)
      out_ << fmt::format("compare: [{}/{}] {} running\n", index + 1, count_, schedule) << std::flush;
  }
  void finished(const CompareRow& row, size_t index, double took) {
    std::lock_guard guard(lock_);
    if (mode_ == CompareOptions::Progress::Off || (mode_ == CompareOptions::Progress::Auto && took < 1.0))
      return;
    const std::string what = row.ran() ? fmt::format("done in {:.1f} s", took) : "did not run: " + row.error;
    out_ << fmt::format("compare: [{}/{}] {} {}\n", index + 1, count_, row.schedule, what) << std::flush;
  }
  void finish(const CompareRow& row) {
    std::lock_guard guard(lock_);
    const double took = std::chrono::duration<double>(Clock::now() - started_).count();
    if (mode_ == CompareOptions::Progress::Off || (!announced_ && mode_ == CompareOptions::Progress::Auto))
      return;
    const std::string what = row.ran() ? fmt::format("done in {:.1f} s", took) : "did not run: " + row.error;
    if (tty_) {
      out_ << fmt::format("\r\33[Kcompare: [{}/{}] {} {}", index_ + 1, count_, schedule_, what) << std::flush;
    } else {
      out_ << fmt::format("compare: [{}/{}] {} {}\n", index_ + 1, count_, schedule_, what) << std::flush;
    }
    announced_ = false;
    schedule_.clear();
  }

 private:
  using Clock = std::chrono::steady_clock;
  void announce() {  // under lock_
    announced_ = shown_ = true;
    if (tty_)
      out_ << fmt::format("\r\33[Kcompare: [{}/{}] {} running, {:.0f} s", index_ + 1, count_, schedule_,
                          std::chrono::duration<double>(Clock::now() - started_).count())
           << std::flush;
    else
      out_ << fmt::format("compare: [{}/{}] {} running\n", index_ + 1, count_, schedule_) << std::flush;
  }
  void watch() {
    std::unique_lock guard(lock_);
    while (!wake_.wait_for(guard, std::chrono::milliseconds(250), [this] { return stop_; })) {
      if (schedule_.empty() || Clock::now() - started_ < std::chrono::seconds(1)) continue;
      if (!announced_ || tty_) announce();
    }
  }

  CompareOptions::Progress mode_;
  std::ostream& out_;
  size_t count_, index_ = 0;
  bool tty_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stop_ = false, announced_ = false, shown_ = false;
  std::string schedule_;  // the one running; empty between schedules
  Clock::time_point started_;
  std::thread watcher_;
};

// Both rules' choices for one schedule; `rows` and `cols` are the MXU tile the hardware rule rounds to.
std::vector<RuleChoice> plan_rules(const CompareOptions& o, const ScheduleEntry& schedule,
                                   const traces::AttentionShape& shape, const Sram& sram, int64_t rows,
                                   int64_t cols) {
  const auto inventory = [&](int64_t bq, int64_t bk) {
    return schedule_buffer_bytes(schedule, shape, bq, bk, sram.params().alignment_bytes);
  };
  std::vector<RuleChoice> out;
  for (auto rule : {traces::PlannerRule::Paper, traces::PlannerRule::Hardware}) {
    traces::BlockPlan plan =
        rule == traces::PlannerRule::Paper
            ? traces::plan_for_sram(sram.params().capacity_bytes, o.d, dtype_bytes(o.dtype), inventory)
            : traces::plan_hardware(sram.params().capacity_bytes, o.n, rows, cols, inventory);
    out.push_back({std::string(traces::planner_rule_name(rule)), plan.block_q, plan.block_k, plan.fits,
                   plan.reasoning});
  }
  return out;
}

// The table's reason: the SRAM's message without the file prefix and the buffer list after the sizes.
std::string short_reason(const std::string& error) {
  std::string reason = error;
  if (const size_t e = reason.find("error: "); e != std::string::npos) reason = reason.substr(e + 7);
  if (const size_t cap = reason.find("capacity_bytes is "); cap != std::string::npos)
    if (const size_t colon = reason.find(':', cap); colon != std::string::npos) reason.resize(colon);
  return reason;
}

// The schedules options.schedules names (all of the direction's when empty), in that order.
std::vector<ScheduleEntry> selected_schedules(const CompareOptions& options) {
  const std::vector<ScheduleEntry> available =
      options.backward ? backward_entries() : forward_entries(options);
  if (options.schedules.empty()) return available;
  std::vector<ScheduleEntry> schedules;
  for (const auto& name : options.schedules) {
    auto it = std::find_if(available.begin(), available.end(), [&](const auto& e) { return e.name == name; });
    if (it == available.end()) {
      std::string known;
      for (const auto& e : available) known += (known.empty() ? "" : ", ") + e.name;
      throw InputError("attnsim compare", {}, "unknown schedule '" + name + "' (here: " + known + ")");
    }
    schedules.push_back(*it);
  }
  return schedules;
}

traces::AttentionShape base_shape(const CompareOptions& options) {
  traces::AttentionShape shape;
  shape.n = options.n;
  shape.d = options.d;
  shape.causal = options.causal;
  shape.dtype = options.dtype;
  shape.double_buffer = options.double_buffer;
  return shape;
}

}  // namespace

BlockSpace block_space(const CompareOptions& options) {
  Machine machine(load_config(options.config_path, options.overrides));
  if (!machine.has_tile_units() || !machine.sram())
    throw InputError(options.config_path, {}, "plan needs a tile machine (hbm, sram, dma, mxu, vpu)");
  BlockSpace space;
  space.chip = machine.is_chip();
  space.planner = machine.planner();
  space.tile_rows = machine.mxu() ? machine.mxu()->params().geometry.rows : 1;
  space.tile_cols = machine.mxu() ? machine.mxu()->params().geometry.cols : 1;
  const traces::AttentionShape shape = base_shape(options);
  const Sram& sram = *machine.sram();
  for (const auto& schedule : selected_schedules(options)) {
    BlockSpace::Schedule s{
        schedule.name, plan_rules(options, schedule, shape, sram, space.tile_rows, space.tile_cols), {}};
    for (int64_t q : traces::hardware_block_sizes(space.tile_rows, options.n))
      for (int64_t k : traces::hardware_block_sizes(space.tile_cols, options.n))
        if (schedule_buffer_bytes(schedule, shape, q, k, sram.params().alignment_bytes) <=
            sram.params().capacity_bytes)
          s.fitting.emplace_back(q, k);
    space.schedules.push_back(std::move(s));
  }
  return space;
}

void check_compare_options(const CompareOptions& options, const std::string& command) {
  if (options.n < 1 || options.d < 1 || options.heads < 1 || options.batch < 1)
    throw InputError(command, {}, "--N, --d, --heads and --batch must be positive");
  // Bounds that keep every tensor's element count (heads x N x N for S) well inside 64 bits.
  if (options.n > (int64_t{1} << 24) || options.d > 65536 || options.heads > 65536 || options.batch > 65536 ||
      options.heads * options.batch > 65536)
    throw InputError(command, {}, "--N is at most 2^24, --d 65536, and --heads x --batch at most 65536");
  if (options.block < 0 || options.block_q < 0 || options.block_k < 0)
    throw InputError(command, {}, "--block, --block-q and --block-k must be positive (or 0 to plan)");
  if ((options.block_q > 0) != (options.block_k > 0) && options.block == 0)
    throw InputError(command, {}, "--block-q and --block-k go together (or with --block for the other)");
  if (options.jobs < 1) throw InputError(command, {}, "--jobs must be at least 1");
}

namespace {

// What every schedule of one compare shares: the options, the machine and the planner's inputs.
struct CompareContext {
  const CompareOptions& options;
  Machine& machine;
  traces::AttentionShape shape;
  int64_t heads = 1;
  bool values = false;         // the whole problem's run computes and checks values
  bool sample_values = false;  // they come from a run of the first head alone (CompareOptions::value_heads)
  std::string planner;
  int64_t tile_rows = 1, tile_cols = 1;
};

// The row's blocks (given, or planned by the chosen rule), or the reason it cannot run; nothing simulated.
CompareRow plan_row(const CompareContext& cx, const ScheduleEntry& schedule) {
  const CompareOptions& options = cx.options;
  CompareRow row;
  row.schedule = schedule.name;
  if (options.block > 0 || options.block_q > 0) {
    row.block_q = options.block_q > 0 ? options.block_q : options.block;
    row.block_k = options.block_k > 0 ? options.block_k : options.block;
    row.planner = "given";
    row.plan.push_back(fmt::format("B_r = {}, B_c = {} (given)", row.block_q, row.block_k));
  } else {
    row.planner = cx.planner;
    row.rules = plan_rules(options, schedule, cx.shape, *cx.machine.sram(), cx.tile_rows, cx.tile_cols);
    const RuleChoice* chosen = &row.rules[cx.planner == "paper" ? 0 : 1];
    row.plan = chosen->reasoning;
    // An SRAM too small for the smallest hardware tile (32 KiB for flash1 on an H100 SM) still runs, on
    // the paper's blocks, which go down to 1 x 1.
    if (!chosen->fits && cx.planner == "hardware" && row.rules[0].fits) {
      chosen = &row.rules[0];
      row.planner = "paper";
      row.plan.push_back("the hardware rule finds no pair that fits: the paper rule's blocks instead");
      row.plan.insert(row.plan.end(), chosen->reasoning.begin(), chosen->reasoning.end());
    }
    row.block_q = chosen->block_q;
    row.block_k = chosen->block_k;
    if (!chosen->fits)
      row.error = "no block size fits the SRAM (" + cx.planner +
                  " rule: " + (chosen->reasoning.empty() ? std::string("-") : chosen->reasoning.back()) + ")";
  }
  // A block longer than the sequence only reserves SRAM it never fills.
  if (row.ran() && (row.block_q > options.n || row.block_k > options.n)) {
    row.block_q = std::min(row.block_q, options.n);
    row.block_k = std::min(row.block_k, options.n);
    row.plan.push_back(
        fmt::format("capped at N = {}: B_r = {}, B_c = {}", options.n, row.block_q, row.block_k));
  }
  return row;
}

isa::Program row_program(const CompareContext& cx, const ScheduleEntry& schedule, const CompareRow& row,
                         int64_t heads, bool values) {
  traces::AttentionShape run_shape = cx.shape;
  run_shape.block_q = row.block_q;
  run_shape.block_k = row.block_k;
  return traces::stream_program([&] { return schedule.make(run_shape, heads, values); }, 1 << 16,
                                cx.machine.is_chip());
}

// The program whose values are checked: the row's own, or its first head alone.
isa::Program value_program(const CompareContext& cx, const ScheduleEntry& schedule, const CompareRow& row) {
  return row_program(cx, schedule, row, cx.sample_values ? 1 : cx.heads, true);
}

// Each check's arguments before the run (or the targets after it) and nothing else: naive's N x N score
// matrices would otherwise be copied twice, gigabytes at N = 8192.
std::vector<std::vector<double>> check_tensors(Machine& machine, const isa::Program& program, bool targets) {
  std::vector<std::vector<double>> out(program.tensors.size());
  auto values = [&](int t) {
    return machine.chip_loaded() ? machine.chip()->tensor_values(t) : machine.sequencer().tensor_values(t);
  };
  for (const auto& check : program.checks)
    for (int t : targets ? std::vector<int>{check.target} : check.args)
      if (out[size_t(t)].empty()) out[size_t(t)] = values(t);
  return out;
}

// The program's checks against float64, from its checked tensors before the run (`initial`) and after it.
void check_row(Machine& machine, const isa::Program& program, const std::vector<std::vector<double>>& initial,
               CompareRow& row) {
  const std::vector<std::vector<double>> final = check_tensors(machine, program, true);
  for (const auto& check : program.checks) {
    CheckResult r =
        evaluate_check(program, check, initial, final, compute_dtype_of(program, machine.dtype()));
    row.max_abs_error = std::max(row.max_abs_error.value_or(0.0), r.max_abs_error);
    row.max_rel_error = std::max(row.max_rel_error.value_or(0.0), r.max_rel_error);
    row.passed = row.passed.value_or(true) && r.passed;
  }
}

// The row's values from its first head simulated alone, after the whole problem ran timing-only; the
// row's counts and times stay the whole run's.
void check_first_head(const CompareContext& cx, const ScheduleEntry& schedule, CompareRow& row) {
  const isa::Program program = value_program(cx, schedule, row);
  cx.machine.load(program, false, false);
  const std::vector<std::vector<double>> initial = check_tensors(cx.machine, program, false);
  cx.machine.run();
  check_row(cx.machine, program, initial, row);
}

// Runs a planned row: loads its program (a schedule whose buffers do not fit gets the reason instead),
// simulates it, fills the counts and, with values, its checks against float64.
void simulate_row(const CompareContext& cx, const ScheduleEntry& schedule, CompareRow& row) {
  Machine& machine = cx.machine;
  isa::Program program = row_program(cx, schedule, row, cx.heads, cx.values);
  const auto started = std::chrono::steady_clock::now();
  // The buffers are laid out in SRAM here, before anything runs: a schedule that does not fit leaves the
  // machine as it was, and the next schedule loads afresh.
  try {
    machine.load(program, false, !cx.values);
  } catch (const InputError& e) {
    row.error = e.what();
    return;
  }
  if (cx.options.record_blocks) {
    if (!machine.chip_loaded())
      throw InputError(cx.options.config_path, {},
                       "--block-times needs a whole-chip config (one with a chip: section)");
    machine.chip()->record_blocks(true);
  }
  std::vector<std::vector<double>> initial;
  if (cx.values) initial = check_tensors(machine, program, false);
  machine.run();
  if (machine.chip_loaded())
    fill_from_chip(row, machine, program);
  else
    fill_from_core(row, machine, program);
  if (cx.values)
    check_row(machine, program, initial, row);
  else if (cx.sample_values)
    check_first_head(cx, schedule, row);
  row.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// The checks' float64 references computed once, here, before the schedules run in child processes: the
// children inherit them (sim/reference.h keeps them, keyed by the inputs) instead of each computing its own.
void warm_references(const CompareContext& cx, const std::vector<ScheduleEntry>& schedules,
                     const std::vector<CompareRow>& rows) {
  if (!cx.values && !cx.sample_values) return;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].ran()) continue;
    const isa::Program program = value_program(cx, schedules[i], rows[i]);
    for (const auto& check : program.checks) {
      std::vector<std::vector<double>> initial(program.tensors.size());
      for (int t : check.args) {
        const isa::TensorDecl& decl = program.tensors[size_t(t)];
        initial[size_t(t)] = isa::materialize(decl, decl.dtype.value_or(cx.machine.dtype()));
      }
      warm_reference(program, check, initial);
    }
    return;  // every schedule checks the same functions of the same inputs
  }
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// In a child process: simulate one row and write what came of it to `path`; never returns.
[[noreturn]] void child_simulates(const CompareContext& cx, const ScheduleEntry& schedule, CompareRow row,
                                  const std::string& path, int value_threads) {
  ValueThreads::set_count(value_threads);
  RowOutcome outcome;
  try {
    simulate_row(cx, schedule, row);
    outcome.row = std::move(row);
  } catch (const InputError& e) {
    outcome.input_error = true;
    outcome.file = e.file();
    outcome.line = e.loc().line;
    outcome.col = e.loc().col;
    outcome.message = e.message();
  } catch (const std::exception& e) {
    outcome.message = e.what();
  }
  const std::vector<uint8_t> bytes = encode_outcome(outcome);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  out.close();
  std::_Exit(out ? 0 : 1);
}

// One child per schedule, `options.jobs` at a time, each on a copy of the machine made by fork() (nothing
// has run on it yet); rows come back in the order of the schedules, whatever order the children end in.
// Only this thread may exist when the process forks, so the value threads are stopped meanwhile.
class ChildRows {
 public:
  ChildRows(const CompareContext& cx, const std::vector<ScheduleEntry>& schedules,
            std::vector<CompareRow>& rows, CompareProgress& progress)
      : cx_(cx), schedules_(schedules), rows_(rows), progress_(progress), threads_(ValueThreads::count()) {}
  ~ChildRows() {
    for (const Running& r : running_) {
      ::kill(r.pid, SIGTERM);
      while (::waitpid(r.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      std::remove(r.path.c_str());
    }
    ValueThreads::set_count(threads_);
  }

  void run() {
    ValueThreads::set_count(1);
    std::deque<size_t> queue;
    for (size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].ran()) queue.push_back(i);
    while (!queue.empty() || !running_.empty()) {
      while (running_.size() < size_t(cx_.options.jobs) && !queue.empty()) {
        launch(queue.front());
        queue.pop_front();
      }
      collect(wait_any());
    }
  }

 private:
  struct Running {
    pid_t pid;
    size_t index;
    std::string path;
    std::chrono::steady_clock::time_point started;
  };

  void launch(size_t index) {
    std::string path = (std::filesystem::temp_directory_path() / "attnsim-compare-XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    if (fd < 0)
      throw std::runtime_error("compare --jobs: cannot create a file for a child's row: " +
                               system_reason(errno));
    ::close(fd);
    progress_.launched(rows_[index].schedule, index);
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("compare --jobs: fork: " + system_reason(errno));
    if (pid == 0)
      child_simulates(cx_, schedules_[index], rows_[index], path,
                      std::max(1, threads_ / std::max(1, cx_.options.jobs)));
    running_.push_back({pid, index, path, std::chrono::steady_clock::now()});
  }

  std::pair<pid_t, int> wait_any() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, 0)) < 0)
      if (errno != EINTR) throw std::runtime_error("compare --jobs: waitpid: " + system_reason(errno));
    return {pid, status};
  }

  void collect(std::pair<pid_t, int> ended) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const Running& r) { return r.pid == ended.first; });
    if (it == running_.end()) return;  // not one of ours
    const Running child = *it;
    running_.erase(it);
    const std::vector<uint8_t> bytes = read_bytes(child.path);
    std::remove(child.path.c_str());
    const std::string& name = rows_[child.index].schedule;
    if (!WIFEXITED(ended.second) || WEXITSTATUS(ended.second) != 0 || bytes.empty())
      throw std::runtime_error("compare --jobs: the child that ran " + name + " ended without a result (" +
                               (WIFSIGNALED(ended.second)
                                    ? "signal " + std::to_string(WTERMSIG(ended.second))
                                    : "exit status " + std::to_string(WEXITSTATUS(ended.second))) +
                               ")");
    RowOutcome outcome = decode_outcome(bytes);
    if (outcome.input_error) throw InputError(outcome.file, {outcome.line, outcome.col}, outcome.message);
    if (!outcome.row) throw std::runtime_error(outcome.message);
    rows_[child.index] = std::move(*outcome.row);
    progress_.finished(
        rows_[child.index], child.index,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - child.started).count());
  }

  const CompareContext& cx_;
  const std::vector<ScheduleEntry>& schedules_;
  std::vector<CompareRow>& rows_;
  CompareProgress& progress_;
  const int threads_;
  std::vector<Running> running_;
};

}  // namespace

std::vector<CompareRow> run_compare(const CompareOptions& options, nlohmann::json* effective_config) {
  check_compare_options(options);
  MachineConfig config = load_config(options.config_path, options.overrides);
  Machine machine(config);
  if (effective_config) *effective_config = machine.effective_config();
  if (!machine.has_tile_units())
    throw InputError(options.config_path, {}, "compare needs a tile machine (hbm, sram, dma, mxu, vpu)");
  CompareContext cx{options,
                    machine,
                    base_shape(options),
                    options.heads * options.batch,
                    options.values_enabled() && !options.values_sampled(),
                    options.values_sampled(),
                    options.planner.empty() ? machine.planner() : options.planner};
  if (!traces::find_planner_rule(cx.planner))
    throw InputError("attnsim compare", {}, "--planner must be paper or hardware, not '" + cx.planner + "'");
  cx.tile_rows = machine.mxu() ? machine.mxu()->params().geometry.rows : 1;
  cx.tile_cols = machine.mxu() ? machine.mxu()->params().geometry.cols : 1;
  const std::vector<ScheduleEntry> schedules = selected_schedules(options);

  std::vector<CompareRow> rows;
  for (const auto& schedule : schedules) rows.push_back(plan_row(cx, schedule));
  CompareProgress progress(options, schedules.size());
  size_t runnable = 0;
  for (const CompareRow& row : rows) runnable += row.ran() ? 1 : 0;
  if (options.jobs > 1 && runnable > 1) {
    warm_references(cx, schedules, rows);
    ChildRows(cx, schedules, rows, progress).run();
    return rows;
  }
  for (size_t i = 0; i < schedules.size(); ++i) {
    progress.start(schedules[i].name, i);
    if (rows[i].ran()) simulate_row(cx, schedules[i], rows[i]);
    progress.finish(rows[i]);
  }
  return rows;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  return fmt::format("{:.{}f} {}", bytes, u == 0 ? 0 : 1, units[u]);
}

namespace {}  // namespace

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

// The tables' last words on values: none computed, or only the first head's.
std::string values_footnote(const CompareOptions& o, const std::string& what_on_does) {
  if (!o.values_enabled()) return "; timing-only: --values on " + what_on_does;
  if (o.values_sampled())
    return "; max err: the first head's values, from a run of that head alone (heads share no data; "
           "--values on checks every head)";
  return "";
}

std::string error_cell(const CompareRow& r) {
  return r.max_rel_error ? fmt::format("{:.1e}{}", *r.max_rel_error, r.passed.value_or(false) ? "" : "!")
                         : std::string("-");
}

// The row the ratio columns divide by: the first schedule that ran.
const CompareRow* base_row(const std::vector<CompareRow>& rows) {
  for (const auto& r : rows)
    if (r.ran()) return &r;
  return nullptr;
}

std::string blocks_cell(const CompareRow& r) {
  return r.block_q > 0 ? fmt::format("{}x{}", r.block_q, r.block_k) : std::string("-");
}

// Microjoules, four digits at least (whole numbers above 10^4, no exponent); "-" without energy figures.
std::string energy_cell(const std::optional<EnergyReport>& energy) {
  if (!energy) return "-";
  const double uj = energy->total_pj() * 1e-6;
  return uj >= 1e4 ? fmt::format("{:.0f}", uj) : fmt::format("{:.4g}", uj);
}

double tensor_energy_pj(const ChipSummary& c, const std::string& tensor) {
  if (!c.energy) return 0;
  const auto per = energy_per_tensor(*c.energy);
  const auto it = per.find(tensor);
  return it == per.end() ? 0.0 : it->second;
}

// A whole chip: each level named, bytes for the whole chip, time in microseconds.
void print_chip_compare(std::ostream& out, const CompareOptions& o, const std::vector<CompareRow>& rows) {
  const CompareRow* base = base_row(rows);
  const ChipSummary& first = *base->chip;
  out << fmt::format("whole chip: {} cores; L2 {} between kernels; bytes are whole-chip totals\n",
                     first.cores, first.l2_flushed_between_kernels ? "flushed" : "kept");
  out << fmt::format(
      "{:16} {:>9} {:>11} {:>11} {:>10} {:>10} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10}\n",
      "schedule", "Br x Bc", "SM<-L2 rd", "SM->L2 wr", "DRAM rd", "DRAM wr", "L2 hit", "waves", "time us",
      "FLOP/B", "max err", "DRAM/base", "time/base", "energy uJ");
  const auto dram = [](const CompareRow& r) {
    return total(r.chip->dram_read) + total(r.chip->dram_written);
  };
  for (const auto& r : rows) {
    if (!r.ran()) {
      out << fmt::format("{:16} {:>9} did not run: {}\n", r.schedule, blocks_cell(r), short_reason(r.error));
      continue;
    }
    const ChipSummary& c = *r.chip;
    const uint64_t hit = total(c.l2_read_hit), miss = total(c.l2_read_miss);
    double waves = 0;
    for (const auto& k : c.kernels) waves += k.waves;
    out << fmt::format(
        "{:16} {:>9} {:>11} {:>11} {:>10} {:>10} {:>7} {:>7.2f} {:>10.1f} {:>9.1f} {:>9} {:>9.3f} {:>9.3f} "
        "{:>10}\n",
        r.schedule, blocks_cell(r), human_bytes(double(r.hbm_read)), human_bytes(double(r.hbm_written)),
        human_bytes(double(total(c.dram_read))), human_bytes(double(total(c.dram_written))),
        hit + miss ? fmt::format("{:.1f}%", 100.0 * double(hit) / double(hit + miss)) : std::string("-"),
        waves, c.seconds * 1e6, dram(r) ? double(r.mxu_flops) / double(dram(r)) : 0.0, error_cell(r),
        dram(*base) ? double(dram(r)) / double(dram(*base)) : 0.0,
        base->seconds > 0 ? r.seconds / base->seconds : 0.0, energy_cell(c.energy));
  }
  out << fmt::format(
      "SM<-L2 / SM->L2: bytes the thread blocks load and store; DRAM: what reached DRAM (wr: evictions "
      "during "
      "kernels; dirty lines left in L2 at a kernel's end are not counted, as Nsight Compute); time: the "
      "whole "
      "chip at the config's clock; FLOP/B: MXU FLOPs per DRAM byte; energy uJ: {}; base = {}{}\n",
      first.energy ? "dynamic energy of the whole chip, each level's counts x the config's energy: figures "
                     "(docs/energy.md)"
                   : "- (the config has no energy: section)",
      base->schedule, values_footnote(o, "checks values"));
}

// --per-tensor: one line per schedule and tensor, every level the machine has.
void print_per_tensor(std::ostream& out, const std::vector<CompareRow>& rows) {
  const CompareRow* base = base_row(rows);
  const bool chip = base->chip.has_value();
  out << "\nbytes per tensor\n";
  if (chip)
    out << fmt::format("{:16} {:8} {:>11} {:>11} {:>10} {:>10} {:>10}\n", "schedule", "tensor", "SM<-L2 rd",
                       "SM->L2 wr", "DRAM rd", "DRAM wr", "energy uJ");
  else
    out << fmt::format("{:16} {:8} {:>10} {:>10}\n", "schedule", "tensor", "HBM read", "HBM write");
  const auto at = [](const std::map<std::string, uint64_t>& m, const std::string& k) {
    const auto it = m.find(k);
    return double(it == m.end() ? 0 : it->second);
  };
  for (const auto& r : rows) {
    if (!r.ran()) continue;
    for (const auto& [tensor, read] : r.bytes_read) {
      const double written = at(r.bytes_written, tensor);
      if (chip)
        out << fmt::format("{:16} {:8} {:>11} {:>11} {:>10} {:>10} {:>10}\n", r.schedule, tensor,
                           human_bytes(double(read)), human_bytes(written),
                           human_bytes(at(r.chip->dram_read, tensor)),
                           human_bytes(at(r.chip->dram_written, tensor)),
                           r.chip->energy ? fmt::format("{:.4g}", tensor_energy_pj(*r.chip, tensor) * 1e-6)
                                          : std::string("-"));
      else
        out << fmt::format("{:16} {:8} {:>10} {:>10}\n", r.schedule, tensor, human_bytes(double(read)),
                           human_bytes(written));
    }
  }
  if (chip)
    out << "energy uJ: the tensor's dynamic energy at DRAM, L2, SM<->L2 and the SRAM's DMA side, whole chip "
           "(MXU, VPU, registers and the SRAM's operand traffic are not charged to tensors)\n";
}

// --plan: what each rule chose, and the reasoning of the one used.
void print_plans(std::ostream& out, const std::vector<CompareRow>& rows) {
  for (const auto& r : rows) {
    out << fmt::format("\nblocks for {} ({}):\n", r.schedule,
                       r.planner == "given" ? "given" : r.planner + " rule");
    for (const auto& rule : r.rules)
      out << fmt::format("  {:8} rule: {}{}\n", rule.rule,
                         rule.fits ? fmt::format("B_r = {}, B_c = {}", rule.block_q, rule.block_k)
                                   : std::string("nothing fits"),
                         rule.rule == r.planner ? "  <- used" : "");
    for (const auto& line : r.plan) out << "    " << line << "\n";
    for (const auto& rule : r.rules)
      if (rule.rule != r.planner) {
        out << fmt::format("  the {} rule's reasoning:\n", rule.rule);
        for (const auto& line : rule.reasoning) out << "    " << line << "\n";
      }
  }
}

}  // namespace

void print_compare(std::ostream& out, const CompareOptions& o, const std::vector<CompareRow>& rows) {
  out << fmt::format("attention {}, N = {}, d = {}, batch x heads = {} x {}, {}, {}{}\n",
                     o.backward ? "backward" : "forward", o.n, o.d, o.batch, o.heads,
                     o.causal ? "causal" : "not causal", dtype_name(o.dtype),
                     !o.values_enabled()  ? ", timing-only (no values)"
                     : o.values_sampled() ? fmt::format(", values of the first head of {}", o.heads * o.batch)
                                          : "");
  const CompareRow* base = base_row(rows);
  if (base && base->chip) {
    print_chip_compare(out, o, rows);
  } else {
    out << fmt::format(
        "{:16} {:>9} {:>10} {:>10} {:>10} {:>9} {:>10} {:>12} {:>11} {:>9} {:>10} {:>9} {:>10}\n", "schedule",
        "Br x Bc", "HBM read", "HBM write", "HBM total", "SRAM peak", "MXU FLOPs", "cycles", "FLOP/byte",
        "max err", "bytes/base", "cyc/base", "energy uJ");
    for (const auto& r : rows) {
      if (!r.ran()) {
        out << fmt::format("{:16} {:>9} did not run: {}\n", r.schedule, blocks_cell(r),
                           short_reason(r.error));
        continue;
      }
      const uint64_t total = r.hbm_read + r.hbm_written;
      const uint64_t base_total = base->hbm_read + base->hbm_written;
      out << fmt::format(
          "{:16} {:>9} {:>10} {:>10} {:>10} {:>9} {:>10.3g} {:>12} {:>11.1f} {:>9} {:>10.3f} {:>9.3f} "
          "{:>10}\n",
          r.schedule, blocks_cell(r), human_bytes(double(r.hbm_read)), human_bytes(double(r.hbm_written)),
          human_bytes(double(total)), human_bytes(double(r.sram_peak)), double(r.mxu_flops), r.cycles,
          total ? double(r.mxu_flops) / double(total) : 0.0, error_cell(r),
          base_total ? double(total) / double(base_total) : 0.0,
          base->cycles ? double(r.cycles) / double(base->cycles) : 0.0, energy_cell(r.energy));
    }
    out << fmt::format(
        "base = {}; max err is relative to the float64 reference (! = above the {} tolerance); energy uJ: "
        "{}{}\n",
        base ? base->schedule : "-", dtype_name(o.dtype),
        base && base->energy
            ? "one core's dynamic energy, its counts x the config's energy: figures (docs/energy.md)"
            : "- (the config has no energy: section)",
        values_footnote(o, "computes and checks values"));
  }
  if (o.per_tensor && base) print_per_tensor(out, rows);
  if (o.show_plan) print_plans(out, rows);
}

std::vector<std::string> compare_failures(const std::vector<CompareRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (!r.ran()) out.push_back(r.schedule + " did not run: " + r.error);
  return out;
}

nlohmann::json compare_json(const CompareOptions& o, const std::vector<CompareRow>& rows) {
  nlohmann::json out = {{"n", o.n},
                        {"d", o.d},
                        {"heads", o.heads},
                        {"batch", o.batch},
                        {"causal", o.causal},
                        {"dtype", std::string(dtype_name(o.dtype))},
                        {"values", o.values_enabled()},
                        {"value_heads", o.value_heads()},
                        {"schedules", nlohmann::json::array()}};
  for (const auto& r : rows) {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& rule : r.rules)
      rules.push_back(
          {{"rule", rule.rule}, {"block_q", rule.block_q}, {"block_k", rule.block_k}, {"fits", rule.fits}});
    nlohmann::json j = {{"schedule", r.schedule}, {"block_q", r.block_q}, {"block_k", r.block_k},
                        {"planner", r.planner},   {"rules", rules},       {"plan", r.plan}};
    if (!r.ran()) {  // no figures: a reader tells a row that did not run by `error`
      j["error"] = r.error;
      out["schedules"].push_back(j);
      continue;
    }
    j.update({{"hbm_bytes_read", r.hbm_read},
              {"hbm_bytes_written", r.hbm_written},
              {"hbm_bytes_read_per_tensor", r.bytes_read},
              {"hbm_bytes_written_per_tensor", r.bytes_written},
              {"sram_peak_bytes", r.sram_peak},
              {"mxu_flops", r.mxu_flops},
              {"vpu_element_ops", r.vpu_element_ops},
              {"cycles", r.cycles},
              {"instructions", r.instructions},
              {"simulated_seconds", r.seconds},
              {"host_seconds", r.host_seconds}});
    if (r.energy && !r.chip) j["energy"] = r.energy->to_json();  // a whole chip's is under whole_chip
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

std::string compare_csv(const CompareOptions& o, const std::vector<CompareRow>& rows,
                        const nlohmann::json& config) {
  const CompareRow* base = base_row(rows);
  const bool chip = base && base->chip;
  if (o.per_tensor) {
    std::string csv = chip ? "schedule,tensor,sm_l2_read_bytes,sm_l2_write_bytes,dram_read_bytes,"
                             "dram_write_bytes,energy_pj\n"
                           : "schedule,tensor,hbm_read_bytes,hbm_write_bytes\n";
    const auto at = [](const std::map<std::string, uint64_t>& m, const std::string& k) {
      const auto it = m.find(k);
      return it == m.end() ? uint64_t{0} : it->second;
    };
    for (const auto& r : rows) {
      if (!r.ran()) continue;
      for (const auto& [tensor, read] : r.bytes_read) {
        csv += fmt::format("{},{},{},{}", r.schedule, tensor, read, at(r.bytes_written, tensor));
        if (chip)
          csv += fmt::format(",{},{},{}", at(r.chip->dram_read, tensor), at(r.chip->dram_written, tensor),
                             r.chip->energy ? fmt::format("{}", tensor_energy_pj(*r.chip, tensor)) : "");
        csv += "\n";
      }
    }
    return csv;
  }
  // The sweep's rows for a record of this one point: the same columns and the same arithmetic.
  nlohmann::json record = {{"point", nlohmann::json::object()},
                           {"status", "ok"},
                           {"config", config},
                           {"compare", compare_json(o, rows)}};
  return csv_header({}, chip) + csv_rows(record, {}, chip);
}

}  // namespace attnsim
