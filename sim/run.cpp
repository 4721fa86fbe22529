#include "sim/run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "sim/chip_timeline.h"
#include "sim/html_view.h"
#include "sim/machine.h"
#include "sim/timeline.h"
#include "sim/vcd.h"
#include "traces/stream.h"

namespace attnsim {

uint64_t RunResult::total_dram_reads() const {
  uint64_t total = 0;
  for (const auto& [name, count] : dram_reads) total += count;
  return total;
}
uint64_t RunResult::total_hbm_bytes_read() const {
  uint64_t total = 0;
  for (const auto& [name, count] : hbm_bytes_read) total += count;
  return total;
}
uint64_t RunResult::total_hbm_bytes_written() const {
  uint64_t total = 0;
  for (const auto& [name, count] : hbm_bytes_written) total += count;
  return total;
}
uint64_t RunResult::total_dram_writes() const {
  uint64_t total = 0;
  for (const auto& [name, count] : dram_writes) total += count;
  return total;
}

namespace {

// Records the register file after every step; rendering waits until the run ends so that symbolic
// values stored later can be printed by their memory names (c00), as the seed does.
class TableRecorder : public StepObserver {
 public:
  TableRecorder(const isa::Program& program, RegisterFile& regs, bool symbolic)
      : program_(program), regs_(regs), symbolic_(symbolic) {}

  void after_step(size_t index, uint64_t issue, uint64_t done) override {
    Row row;
    row.instruction = index;
    row.issue = issue;
    row.done = done;
    row.written = regs_.written;
    if (symbolic_)
      row.symbols = regs_.symbols;
    else
      row.values = regs_.values;
    rows_.push_back(std::move(row));
  }

  std::vector<std::vector<std::string>> render(const symbolic::Aliases& aliases, bool allow_uninit) const {
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> header = {"Step", "Instruction", "Issue", "Done"};
    for (int r = 0; r < regs_.count(); ++r) header.push_back(fmt::format("R{}", r));
    table.push_back(header);
    for (size_t step = 0; step < rows_.size(); ++step) {
      const Row& row = rows_[step];
      std::vector<std::string> cells = {
          fmt::format("{}", step + 1),
          isa::format_instruction(program_, program_.instructions[row.instruction]),
          // Cycles count from 1: Issue is the cycle the instruction starts, Done the last cycle it occupies
          // (its result is usable from the next one), so a 1-cycle instruction shows the same number twice.
          fmt::format("{}", row.issue + 1), fmt::format("{}", row.done)};
      for (int r = 0; r < regs_.count(); ++r) {
        bool shown = row.written[r] && (!allow_uninit || touched(step, r));
        if (!shown)
          cells.emplace_back("");
        else if (symbolic_)
          cells.push_back(symbolic::render(row.symbols[r], aliases, kSymbolicCellChars));
        else
          cells.push_back(fmt::format("{:.6g}", row.values[r]));
      }
      table.push_back(std::move(cells));
    }
    return table;
  }

 private:
  // With uninitialized reads allowed every register counts as written; show only those written so far.
  bool touched(size_t step, int reg) const {
    for (size_t s = 0; s <= step; ++s) {
      const auto& inst = program_.instructions[rows_[s].instruction];
      if (inst.op != isa::Opcode::Store && inst.operand(inst.operand_count - 1).reg == reg) return true;
    }
    return false;
  }

  // Whole expressions for print_table to elide or wrap; beyond this the renderer cuts (lab 5's n = 8 sums).
  static constexpr size_t kSymbolicCellChars = 1000;
  struct Row {
    size_t instruction;
    uint64_t issue, done;
    std::vector<uint8_t> written;
    std::vector<double> values;
    std::vector<symbolic::Expr> symbols;
  };
  const isa::Program& program_;
  RegisterFile& regs_;
  bool symbolic_;
  std::vector<Row> rows_;
};

}  // namespace

namespace {

nlohmann::json checks_json(const std::vector<CheckResult>& results) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : results)
    checks.push_back({{"check", c.description},
                      {"max_abs_error", c.max_abs_error},
                      {"max_rel_error", c.max_rel_error},
                      {"tolerance", c.tolerance},
                      {"passed", c.passed}});
  for (size_t i = 0; i < results.size(); ++i)
    if (const auto& wrong = results[i].first_wrong)
      checks[i]["first_wrong"] = {
          {"element", wrong->name}, {"expected", wrong->expected}, {"got", wrong->got}};
  return checks;
}

// The tensors' final values into the result, and the program's checks on them (timing-only runs keep no
// values to check).
template <class ValuesOf>
void record_values_and_checks(const isa::Program& program, const RunOptions& options, const Machine& machine,
                              const std::vector<std::vector<double>>& initial, ValuesOf values_of,
                              RunResult& result) {
  std::vector<std::vector<double>> final;
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    final.push_back(values_of(static_cast<int>(t)));
    result.final_values[program.tensors[t].name] = final.back();
  }
  if (options.timing_only) return;
  for (const auto& check : program.checks)
    result.checks.push_back(
        evaluate_check(program, check, initial, final, compute_dtype_of(program, machine.dtype())));
}

// A tile program on a whole chip: its blocks spread over the cores; counts per level.
RunResult run_on_chip(const isa::Program& program, const RunOptions& options, Machine& machine) {
  if (options.table || !options.vcd.empty() || !options.html.empty())
    throw InputError(program.file, {},
                     "--table, --vcd and --html are for single-core machines, not a whole chip (--timeline "
                     "shows every core)");
  Chip& chip = *machine.chip();
  std::unique_ptr<ChipTimelineRecorder> timeline;
  if (!options.timeline.empty()) {
    try {
      timeline = std::make_unique<ChipTimelineRecorder>(
          parse_timeline_cores(options.timeline_cores, chip.params().cores), options.timeline_limit);
    } catch (const std::invalid_argument& e) {
      throw InputError(program.file, {}, std::string("--timeline-cores: ") + e.what());
    }
  }
  std::vector<std::vector<double>> initial;
  for (size_t t = 0; t < program.tensors.size(); ++t) initial.push_back(chip.tensor_values(int(t)));
  {
    const ObservedBy watched(chip, timeline.get());
    machine.run();
  }
  RunResult result;
  result.machine = machine.name();
  result.tile_machine = true;
  result.clock_ghz = machine.clock_ghz();
  result.chip = summarize_chip(chip, program, machine.clock_ghz());
  result.cycles = result.chip->cycles;
  result.instructions = result.chip->instructions;
  const auto per_opcode = chip.per_opcode();
  for (int op = 0; op < isa::kOpcodeCount; ++op)
    if (per_opcode[op]) result.per_opcode[std::string(isa::kOpcodes[op].mnemonic)] = per_opcode[op];
  record_values_and_checks(
      program, options, machine, initial, [&](int t) { return chip.tensor_values(t); }, result);
  result.stats = {{"machine", machine.name()},
                  {"trace", program.file},
                  {"config", machine.effective_config()},
                  {"summary", chip_summary_json(*result.chip)},
                  {"stats", machine.stats_json()},
                  {"checks", checks_json(result.checks)}};
  std::vector<std::pair<std::string, std::string>> files;
  if (!options.stats_json.empty()) files.emplace_back(options.stats_json, json_text(result.stats, 2) + "\n");
  if (timeline) {
    files.emplace_back(options.timeline, timeline->json(program.file, chip.kernels()));
    if (auto note = timeline->note(); !note.empty()) result.notes.push_back(options.timeline + ": " + note);
  }
  write_files_atomically(files);
  return result;
}

}  // namespace

namespace {

// The step observers a run asked for (--table, --timeline, --vcd, --html); the sequencer tells this one of
// every step.
struct Recorders : StepObserver {
  std::unique_ptr<TableRecorder> table;
  std::unique_ptr<TimelineRecorder> timeline;
  std::unique_ptr<VcdRecorder> vcd;
  std::unique_ptr<HtmlRecorder> html;

  void after_step(size_t index, uint64_t issue, uint64_t done) override {
    if (table) table->after_step(index, issue, done);
    if (timeline) timeline->after_step(index, issue, done);
    if (vcd) vcd->after_step(index, issue, done);
    if (html) html->after_step(index, issue, done);
  }
  bool any() const { return table || timeline || vcd || html; }
};

// SRAM bytes each buffer takes, laid out as the allocator does (each buffer aligned, in declaration order):
// up to the next buffer's start, and the last one its own bytes, so all of them add up to `sram peak`.
// `regs` buffers live in the tile register file and take none.
std::vector<uint64_t> sram_bytes_per_buffer(const isa::Program& program, Machine& machine) {
  const uint64_t align = machine.sram() ? std::max<uint64_t>(machine.sram()->params().alignment_bytes, 1) : 1;
  std::vector<uint64_t> bytes(program.buffers.size(), 0);
  std::optional<size_t> previous;
  uint64_t end = 0;
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const auto& b = program.buffers[i];
    if (b.space == isa::BufferDecl::Space::Regs) continue;
    const uint64_t offset = (end + align - 1) / align * align;
    if (previous) bytes[*previous] += offset - end;  // the padding before this buffer
    bytes[i] = static_cast<uint64_t>(b.rows * b.cols * dtype_bytes(b.dtype.value_or(machine.dtype())));
    end = offset + bytes[i];
    previous = i;
  }
  return bytes;
}

// The page reads the machine's own counters and register file after each step, so its numbers are the run's.
std::unique_ptr<HtmlRecorder> make_html_recorder(const isa::Program& program, const RunOptions& options,
                                                 Machine& machine, bool tiles) {
  HtmlRecorder::Options html;
  html.limit = options.html_limit;
  html.config_path = options.config_path;
  html.issue = machine.sequencer().params().issue == Sequencer::Issue::Pipelined ? "pipelined" : "blocking";
  html.dtype = machine.dtype();
  if (tiles) {
    html.hbm = machine.hbm();
    html.sram_bytes = sram_bytes_per_buffer(program, machine);
    html.sram_capacity = machine.sram() ? machine.sram()->params().capacity_bytes : 0;
    html.sram_alignment = machine.sram() ? machine.sram()->params().alignment_bytes : 1;
  } else {
    html.registers = &machine.regfile();
    html.dram = &machine.dram();
  }
  return std::make_unique<HtmlRecorder>(program, std::move(html));
}

std::unique_ptr<Recorders> make_recorders(const isa::Program& program, const RunOptions& options,
                                          Machine& machine, bool tiles) {
  auto recorders = std::make_unique<Recorders>();
  if (options.table && tiles)
    throw InputError(program.file, {},
                     "--table prints scalar registers; tile programs report per-unit stats");
  if (options.table)
    recorders->table = std::make_unique<TableRecorder>(program, machine.regfile(), options.symbolic);
  if (!options.timeline.empty())
    recorders->timeline = std::make_unique<TimelineRecorder>(program, options.timeline_limit);
  if (!options.vcd.empty()) {
    VcdRecorder::Options vcd;
    vcd.limit = options.vcd_limit;
    if (tiles)
      vcd.sram_bytes = sram_bytes_per_buffer(program, machine);
    else
      vcd.registers = &machine.regfile();
    recorders->vcd = std::make_unique<VcdRecorder>(program, std::move(vcd));
  }
  if (!options.html.empty()) recorders->html = make_html_recorder(program, options, machine, tiles);
  if (recorders->any()) machine.sequencer().set_observer(recorders.get());
  return recorders;
}

// Cycles, opcodes and the memory counts of a single-core run.
void record_counts(const isa::Program& program, Machine& machine, bool tiles, RunResult& result) {
  result.machine = machine.name();
  const Sequencer& seq = machine.sequencer();
  result.cycles = seq.cycles();
  result.instructions = seq.instructions();
  for (int op = 0; op < isa::kOpcodeCount; ++op)
    if (seq.per_opcode()[op])
      result.per_opcode[std::string(isa::kOpcodes[op].mnemonic)] = seq.per_opcode()[op];
  result.tile_machine = tiles;
  result.clock_ghz = machine.clock_ghz();
  if (tiles) {
    const Hbm& hbm = *machine.hbm();
    for (size_t t = 0; t < program.tensors.size(); ++t) {
      result.hbm_bytes_read[program.tensors[t].name] = hbm.bytes_read_per_tensor[t];
      result.hbm_bytes_written[program.tensors[t].name] = hbm.bytes_written_per_tensor[t];
    }
    return;
  }
  const Dram& dram = machine.dram();
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    result.dram_reads[program.tensors[t].name] = dram.reads_per_tensor[t];
    result.dram_writes[program.tensors[t].name] = dram.writes_per_tensor[t];
  }
  result.register_reads = machine.regfile().reads;
  result.register_writes = machine.regfile().writes;
}

// --stats-json, --timeline, --vcd and --html together: all of them or none (a bad path leaves no partial
// output). `aliases` name the stored symbolic values for the page.
void write_outputs(const RunOptions& options, RunResult& result, const Recorders& recorders,
                   const symbolic::Aliases& aliases) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!options.stats_json.empty()) files.emplace_back(options.stats_json, json_text(result.stats, 2) + "\n");
  if (recorders.timeline) {
    files.emplace_back(options.timeline, recorders.timeline->json());
    if (auto note = recorders.timeline->note(options.timeline); !note.empty()) result.notes.push_back(note);
  }
  if (recorders.vcd) {
    files.emplace_back(options.vcd, recorders.vcd->text());
    if (recorders.vcd->dropped())
      result.notes.push_back(
          fmt::format("{}: --vcd stopped after {} instructions ({} more not drawn; --vcd-limit N draws more)",
                      options.vcd, recorders.vcd->recorded(), recorders.vcd->dropped()));
  }
  if (recorders.html) {
    files.emplace_back(options.html,
                       recorders.html->html(aliases, {result.machine, result.cycles, result.instructions}));
    if (recorders.html->dropped())
      result.notes.push_back(fmt::format(
          "{}: --html shows the first {} instructions ({} more not shown; --html-limit N shows more)",
          options.html, recorders.html->recorded(), recorders.html->dropped()));
  }
  write_files_atomically(files);
}

// Lines on stderr while a one-core run goes on, at most one a second (the sequencer calls at each kernel
// sync); with Auto the first comes once the run has taken a second.
Sequencer::Progress progress_lines(const RunOptions& options, const std::string& file) {
  if (options.progress == RunOptions::Progress::Off) return {};
  const auto started = std::chrono::steady_clock::now();
  auto due = std::make_shared<double>(options.progress == RunOptions::Progress::On ? 0.0 : 1.0);
  return [=](uint64_t instructions, uint64_t cycle) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (elapsed < *due) return;
    *due = elapsed + 1.0;
    std::cerr << fmt::format("{}: {} instructions run, cycle {} ({:.1f} s)\n", file, instructions, cycle,
                             elapsed);
  };
}

}  // namespace

RunResult run_program(const isa::Program& program, const RunOptions& options) {
  MachineConfig config = load_config(options.config_path, options.overrides);
  Machine machine(config);
  machine.load(program, options.symbolic, options.timing_only);
  if (machine.chip_loaded()) return run_on_chip(program, options, machine);
  machine.sequencer().set_progress(progress_lines(options, program.file));
  const bool tiles = machine.sequencer().tile_mode();
  if (options.timing_only && !tiles)
    throw InputError(program.file, {},
                     "--timing-only is for tile programs; scalar traces always compute values");

  std::vector<std::vector<double>> initial;
  for (size_t t = 0; t < program.tensors.size(); ++t)
    initial.push_back(machine.sequencer().tensor_values(int(t)));
  auto recorders = make_recorders(program, options, machine, tiles);
  machine.run();

  RunResult result;
  record_counts(program, machine, tiles, result);
  if (recorders->table)
    result.table = recorders->table->render(machine.sequencer().aliases(),
                                            machine.regfile().params().allow_uninitialized_read);
  record_values_and_checks(
      program, options, machine, initial, [&](int t) { return machine.sequencer().tensor_values(t); },
      result);

  result.energy = machine.energy_report();
  result.stats = {{"machine", machine.name()},
                  {"trace", program.file},
                  {"config", machine.effective_config()},
                  {"stats", machine.stats_json()}};
  // Beside the stats tree, not in it: a report derived from its counts (a whole chip's is in its summary).
  if (result.energy) result.stats["energy"] = result.energy->to_json();
  result.stats["checks"] = checks_json(result.checks);
  write_outputs(options, result, *recorders, machine.sequencer().aliases());
  return result;
}

RunResult run_trace_file(const std::string& trace_path, const RunOptions& options) {
  isa::Program program = load_trace(trace_path, options);
  return run_program(program, options);
}

namespace {

bool keeps_instructions(const RunOptions& o) {
  return o.table || o.symbolic || !o.timeline.empty() || !o.vcd.empty() || !o.html.empty();
}

// Whether the lines before the first instruction declare no buffer, kernel, block or group: a scalar trace.
bool starts_as_scalar_trace(std::istream& in) {
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line[first] != '.') return true;
    for (const char* tile : {".buffer", ".kernel", ".block", ".group"})
      if (line.compare(first, std::strlen(tile), tile) == 0) return false;
  }
  return true;
}

isa::Program stream_trace(const std::string& path, int64_t max_instructions) {
  return traces::stream_program([path, max_instructions] {
    traces::StreamSink& sink = *traces::current_stream_sink();
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, {}, "cannot open trace file: " + system_reason(errno));
    bool header_sent = false;
    isa::assemble_stream(in, path, max_instructions, sink.chunk_instructions(),
                         [&](const isa::Program& header, std::vector<isa::Instruction>& instructions) {
                           if (!header_sent) sink.header(header);
                           header_sent = true;
                           if (instructions.empty()) return;
                           isa::Chunk chunk = sink.reusable();  // its empty vector goes back to the assembler
                           std::swap(chunk.instructions, instructions);
                           sink.chunk(std::move(chunk));
                         });
    return isa::Program{};
  });
}

}  // namespace

isa::Program load_trace(const std::string& trace_path, const RunOptions& options) {
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(trace_path, ec);
  const uint64_t size = regular ? std::filesystem::file_size(trace_path, ec) : 0;
  if (!regular || ec || size < options.stream_bytes || keeps_instructions(options))
    return isa::assemble_file(trace_path, options.max_instructions);
  std::ifstream probe(trace_path, std::ios::binary);
  if (!starts_as_scalar_trace(probe)) return isa::assemble_file(trace_path, options.max_instructions);
  return stream_trace(trace_path, options.max_instructions);
}

namespace {

// One line per check; a failed one names its first wrong element, so the student knows where to look.
void print_checks(std::ostream& out, const std::vector<CheckResult>& checks) {
  for (const auto& c : checks) {
    std::string verdict = c.passed ? "OK" : "FAIL";
    if (c.first_wrong)
      verdict += fmt::format(": first wrong element {} = {:.6g}, expected {:.6g}", c.first_wrong->name,
                             c.first_wrong->got, c.first_wrong->expected);
    out << fmt::format("check {}: max abs err {:.3g}, max rel err {:.3g} (tolerance {:.0e})  {}\n",
                       c.description, c.max_abs_error, c.max_rel_error, c.tolerance, verdict);
  }
}

}  // namespace

// The summary without its notes (the body has three endings: chip, tile and scalar machines).
void print_counts(std::ostream& out, const isa::Program& program, const RunResult& r);

void print_summary(std::ostream& out, const isa::Program& program, const RunResult& r) {
  print_counts(out, program, r);
  for (const auto& note : r.notes) out << "note: " << note << "\n";
}

void print_counts(std::ostream& out, const isa::Program& program, const RunResult& r) {
  auto per = [](const std::map<std::string, uint64_t>& counts) {
    std::string text;
    for (const auto& [name, count] : counts)
      if (count) text += fmt::format("  {} {}", name, count);
    return text;
  };
  out << fmt::format("machine           {}\n", r.machine);
  out << fmt::format("trace             {}\n", program.file);
  out << fmt::format("cycles            {}\n", r.cycles);
  out << fmt::format("instructions      {}   by opcode:{}\n", r.instructions, per(r.per_opcode));
  if (r.chip) {
    print_chip_summary(out, *r.chip);
    print_checks(out, r.checks);
    return;
  }
  if (r.tile_machine) {
    const auto& st = r.stats["stats"];
    out << fmt::format("time              {:.3f} us at {} GHz\n", r.cycles / (r.clock_ghz * 1e3),
                       r.clock_ghz);
    out << fmt::format("hbm bytes read    {}   by tensor:{}\n", r.total_hbm_bytes_read(),
                       per(r.hbm_bytes_read));
    out << fmt::format("hbm bytes written {}   by tensor:{}\n", r.total_hbm_bytes_written(),
                       per(r.hbm_bytes_written));
    auto stat = [&](const char* group, const char* name) -> nlohmann::json {
      if (!st.contains(group) || !st[group].contains(name)) return nullptr;
      return st[group][name]["value"];
    };
    for (const char* unit : {"mxu", "vpu", "dma"}) {
      auto busy = stat(unit, "busy_cycles");
      auto util = stat(unit, "utilisation");
      if (busy.is_number())
        out << fmt::format(
            "{:17} busy {} cycles{}\n", std::string(unit), busy.get<uint64_t>(),
            util.is_number() ? fmt::format(", utilisation {:.1f}%", 100 * util.get<double>()) : "");
    }
    if (auto peak = stat("sram", "peak_occupancy_bytes"); peak.is_number())
      out << fmt::format("sram peak         {} bytes\n", peak.get<uint64_t>());
    if (auto flops = stat("mxu", "flops"); flops.is_number())
      out << fmt::format("mxu flops         {}\n", flops.get<uint64_t>());
    print_energy(out, r.energy);
    print_checks(out, r.checks);
    return;
  }
  out << fmt::format("dram reads        {}   by tensor:{}\n", r.total_dram_reads(), per(r.dram_reads));
  out << fmt::format("dram writes       {}   by tensor:{}\n", r.total_dram_writes(), per(r.dram_writes));
  out << fmt::format("register reads    {}\n", r.register_reads);
  out << fmt::format("register writes   {}\n", r.register_writes);
  print_energy(out, r.energy);
  // Small written tensors are the answer a student looks for; large ones are left to --stats-json.
  for (const auto& [name, writes] : r.dram_writes) {
    const auto& values = r.final_values.at(name);
    if (writes == 0 || values.size() > 16) continue;
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) text += fmt::format("{}{:.6g}", i ? ", " : "", values[i]);
    out << fmt::format("result {:11} [{}]\n", name, text);
  }
  print_checks(out, r.checks);
}

namespace {

std::filesystem::path temp_of(const std::string& path) {
  std::filesystem::path temp(path);
  temp += fmt::format(".tmp{}", ::getpid());
  return temp;
}

// Writes `contents` beside `path` under a temporary name; on failure removes it and throws.
void write_temp(const std::string& path, const std::string& contents) {
  const auto temp = temp_of(path);
  errno = 0;
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, {}, "cannot write output file: " + system_reason(errno));
  out << contents;
  out.flush();
  if (!out) {
    const int error = errno;
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw InputError(path, {}, "write failed: " + system_reason(error));
  }
}

}  // namespace

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  size_t written = 0;
  try {
    for (; written < files.size(); ++written) write_temp(files[written].first, files[written].second);
  } catch (const InputError&) {
    std::error_code ignored;
    for (size_t i = 0; i < written; ++i) fs::remove(temp_of(files[i].first), ignored);
    throw;
  }
  for (const auto& [path, contents] : files) {
    std::error_code ec;
    fs::rename(temp_of(path), path, ec);
    if (ec) {
      fs::remove(temp_of(path), ec);
      throw InputError(path, {}, "cannot rename temporary file into place");
    }
  }
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void check_output_paths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  for (const auto& path : paths) {
    if (path.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError(path, {}, "cannot write output file: it is a directory");
    const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
    if (!fs::is_directory(folder, ec))
      throw InputError(path, {}, "cannot write output file: no folder " + folder.string());
    if (::access(folder.c_str(), W_OK) != 0)
      throw InputError(path, {}, "cannot write output file: " + system_reason(errno));
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  write_files_atomically({{path, contents}});
}

}  // namespace attnsim
