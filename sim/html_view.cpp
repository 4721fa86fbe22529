#include "sim/html_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "isa/disassembler.h"
#include "models/dram/dram.h"
#include "models/hbm/hbm.h"
#include "models/regfile/regfile.h"
#include "sim/html_view_page.h"
#include "sim/timeline.h"

namespace attnsim {

namespace {

// Expressions are shown in full and wrap on the page (the labs' longest, lab 5's running sum, has about 650
// characters); these only keep long symbolic runs from making a page of tens of megabytes: one expression
// is cut at kExpressionChars (the renderer ends it with "…"), and past kExpressionBudget characters in all
// the later steps show numbers only, as the page's note says.
constexpr size_t kExpressionChars = 4000;
constexpr size_t kExpressionBudget = 4'000'000;

const std::vector<std::string> kScalarUnits = {"dram", "mac", "alu"};
const std::vector<std::string> kTileUnits = {"dma", "mxu", "vpu"};

int unit_index(const std::vector<std::string>& units, const std::string& unit) {
  const auto it = std::find(units.begin(), units.end(), unit);
  return it == units.end() ? 0 : static_cast<int>(it - units.begin());
}

// JSON inside a <script> element ends at the first "</script"; '<' never occurs outside JSON strings, so
// writing every '<' as \u003c keeps the blob intact and JSON.parse reads it back unchanged.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

}  // namespace

HtmlRecorder::HtmlRecorder(const isa::Program& program, Options options)
    : program_(program), options_(std::move(options)), tiles_(program.has_tiles()) {
  read_so_far_.assign(program.tensors.size(), 0);
  written_so_far_.assign(program.tensors.size(), 0);
  buffer_written_.assign(program.buffers.size(), 0);
}

void HtmlRecorder::after_step(size_t index, uint64_t issue, uint64_t done) {
  if (steps_.size() >= options_.limit || index >= program_.instructions.size()) {
    ++dropped_;
    return;
  }
  Step step;
  step.index = static_cast<uint32_t>(index);
  step.issue = issue;
  step.done = done;
  record_traffic(step);
  const isa::Instruction& inst = program_.instructions[index];
  if (tiles_)
    tile_operands(inst, step);
  else
    scalar_operands(inst, step);
  steps_.push_back(std::move(step));
}

// What this step moved to or from off-chip memory: the difference of the machine's own per-tensor counters
// (DRAM elements, HBM bytes as requested by the program) since the previous step.
void HtmlRecorder::record_traffic(Step& step) {
  for (size_t t = 0; t < read_so_far_.size(); ++t) {
    uint64_t read = 0, written = 0;
    if (options_.dram) {
      read = options_.dram->reads_per_tensor[t];
      written = options_.dram->writes_per_tensor[t];
    } else if (options_.hbm) {
      read = options_.hbm->bytes_read_per_tensor[t];
      written = options_.hbm->bytes_written_per_tensor[t];
    }
    if (read != read_so_far_[t] || written != written_so_far_[t])
      step.traffic.push_back({static_cast<int32_t>(t), read - read_so_far_[t], written - written_so_far_[t]});
    read_so_far_[t] = read;
    written_so_far_[t] = written;
  }
}

// The register written (the last operand, unless the instruction is a STORE) and the registers read.
void HtmlRecorder::scalar_operands(const isa::Instruction& inst, Step& step) const {
  const int last = inst.operand_count - 1;
  for (int k = 0; k <= last; ++k) {
    const isa::Operand& op = inst.operand(k);
    if (op.kind != isa::Operand::Kind::Register) continue;
    if (k == last && inst.op != isa::Opcode::Store)
      step.reg = op.reg;
    else
      step.reads.push_back(op.reg);
  }
  const RegisterFile* regs = options_.registers;
  if (!regs || step.reg < 0) return;
  step.value = regs->values[static_cast<size_t>(step.reg)];
  if (static_cast<size_t>(step.reg) < regs->symbols.size())
    step.expr = regs->symbols[static_cast<size_t>(step.reg)];
}

// Buffers read and written; a buffer takes its SRAM bytes from the first instruction that writes it, as the
// VCD's sram.occupied_bytes counts them.
void HtmlRecorder::tile_operands(const isa::Instruction& inst, Step& step) {
  const int last = inst.operand_count - 1;
  for (int k = 0; k <= last; ++k) {
    const isa::Operand& op = inst.operand(k);
    if (op.kind != isa::Operand::Kind::Tile) continue;
    const isa::TileRef& tile = program_.tiles[static_cast<size_t>(op.tensor)];
    if (!tile.is_buffer) continue;
    const auto b = static_cast<size_t>(tile.index);
    if (k < last) {
      step.reads.push_back(tile.index);
      continue;
    }
    step.writes.push_back(tile.index);
    if (!buffer_written_[b]) sram_ += b < options_.sram_bytes.size() ? options_.sram_bytes[b] : 0;
    buffer_written_[b] = 1;
  }
  step.sram = sram_;
}

// One step as the page reads it; cycles as --table prints them (Issue counted from 1, Done the last cycle).
nlohmann::json HtmlRecorder::step_json(const Step& step, const symbolic::Aliases& aliases,
                                       size_t& expression_chars) const {
  const isa::Instruction& inst = program_.instructions[step.index];
  nlohmann::json j = {{"text", isa::format_instruction(program_, inst)},
                      {"issue", step.issue + 1},
                      {"done", step.done},
                      {"unit", unit_index(tiles_ ? kTileUnits : kScalarUnits, unit_of(program_, inst))},
                      {"reads", step.reads}};
  nlohmann::json traffic = nlohmann::json::array();
  for (const auto& t : step.traffic) traffic.push_back({t.tensor, t.read, t.written});
  j["mem"] = std::move(traffic);
  if (tiles_) {
    j["writes"] = step.writes;
    j["sram"] = step.sram;
    return j;
  }
  if (step.reg < 0) return j;
  std::string expr, expanded;
  if (step.expr && expression_chars < kExpressionBudget) {
    expr = symbolic::render(step.expr, aliases, kExpressionChars);
    expanded = symbolic::render(step.expr, {}, kExpressionChars);
    expression_chars += expr.size() + expanded.size();
  }
  j["reg"] = {step.reg, fmt::format("{:.6g}", step.value), expr, expanded == expr ? "" : expanded};
  return j;
}

// The machine's blocks: tensors off chip, registers or buffers on chip, the units.
nlohmann::json HtmlRecorder::layout_json() const {
  nlohmann::json j = {{"kind", tiles_ ? "tile" : "scalar"},
                      {"memory", tiles_ ? "HBM" : "DRAM"},
                      {"memory_unit", tiles_ ? "B" : "elements"},
                      {"units", tiles_ ? kTileUnits : kScalarUnits}};
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : program_.tensors) tensors.push_back(t.name);
  j["tensors"] = std::move(tensors);
  if (!tiles_) {
    j["registers"] = options_.registers ? options_.registers->count() : 0;
    return j;
  }
  nlohmann::json buffers = nlohmann::json::array();
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const auto& buffer = program_.buffers[b];
    buffers.push_back({{"name", buffer.name},
                       {"shape", fmt::format("{}×{} {}", buffer.rows, buffer.cols,
                                             dtype_name(buffer.dtype.value_or(options_.dtype)))},
                       {"bytes", b < options_.sram_bytes.size() ? options_.sram_bytes[b] : 0},
                       {"space", buffer.space == isa::BufferDecl::Space::Regs ? "regs" : "sram"}});
  }
  j["buffers"] = std::move(buffers);
  j["sram_capacity"] = options_.sram_capacity;
  j["sram_alignment"] = options_.sram_alignment;
  return j;
}

std::string HtmlRecorder::html(const symbolic::Aliases& aliases, const Totals& totals) const {
  nlohmann::json data = layout_json();
  data["trace"] = program_.file;
  data["config"] = options_.config_path;
  data["machine"] = totals.machine;
  data["issue"] = options_.issue;
  data["cycles_total"] = totals.cycles;
  data["instructions_total"] = totals.instructions;
  nlohmann::json steps = nlohmann::json::array();
  size_t expression_chars = 0;
  std::optional<size_t> numbers_only_from;
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (expression_chars >= kExpressionBudget && !numbers_only_from) numbers_only_from = s + 1;
    steps.push_back(step_json(steps_[s], aliases, expression_chars));
  }
  data["steps"] = std::move(steps);
  std::string note;
  if (dropped_)
    note = fmt::format(
        "This run executed {} instructions; the page shows the first {} (--html is for small "
        "runs), and its counters stop there. ",
        totals.instructions, steps_.size());
  if (numbers_only_from)
    note += fmt::format(
        "From step {} on, registers show numbers only: the expressions before it fill the "
        "page's budget of {} characters.",
        *numbers_only_from, kExpressionBudget);
  data["note"] = note;
  const std::string blob = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return std::string(html_page::kHead) + html_page::kBody +
         "<script type=\"application/json\" id=\"run-data\">" + script_safe(blob) + "</script>\n<script>" +
         html_page::kScript + "</script>\n</body>\n</html>\n";
}

}  // namespace attnsim
