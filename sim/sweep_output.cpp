// The sweep's records as CSV rows: the swept values, then per schedule the figures `compare` prints, named
// per memory level on whole-chip configs (sim/compare.cpp's print_chip_compare computes the same).
#include <fmt/format.h>

#include <algorithm>

#include "sim/sweep_output.h"

namespace attnsim {

namespace {

std::string cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return value.dump();
}

// Quoted only when it must be, so numbers stay numbers to every CSV reader.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

double number(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? j[key].get<double>() : 0.0;
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

uint64_t sum_values(const nlohmann::json& per_tensor) {
  uint64_t sum = 0;
  for (const auto& [tensor, bytes] : per_tensor.items()) sum += bytes.get<uint64_t>();
  return sum;
}

uint64_t dram_bytes(const nlohmann::json& s) {
  return s["whole_chip"]["dram_bytes_read"].get<uint64_t>() +
         s["whole_chip"]["dram_bytes_written"].get<uint64_t>();
}

std::vector<nlohmann::json> chip_figures(const nlohmann::json& s, const nlohmann::json& base) {
  const nlohmann::json& c = s["whole_chip"];
  const uint64_t hit = sum_values(c["l2_read_hit_bytes_per_tensor"]);
  const uint64_t miss = sum_values(c["l2_read_miss_bytes_per_tensor"]);
  double waves = 0;
  for (const auto& k : c["kernels"]) waves += k["waves"].get<double>();
  const double dram = double(dram_bytes(s));
  return {s["sm_l2_bytes_read"],
          s["sm_l2_bytes_written"],
          c["dram_bytes_read"],
          c["dram_bytes_written"],
          hit + miss ? nlohmann::json(double(hit) / double(hit + miss)) : nlohmann::json(),
          waves,
          number(c, "simulated_seconds") * 1e6,
          ratio(number(s, "mxu_flops"), dram),
          s.value("max_rel_error", nlohmann::json()),
          s.value("passed", nlohmann::json()),
          ratio(dram, double(dram_bytes(base))),
          ratio(number(s, "simulated_seconds"), number(base, "simulated_seconds")),
          s["cycles"]};
}

std::vector<nlohmann::json> core_figures(const nlohmann::json& s, const nlohmann::json& base) {
  const double total = number(s, "hbm_bytes_read") + number(s, "hbm_bytes_written");
  const double base_total = number(base, "hbm_bytes_read") + number(base, "hbm_bytes_written");
  return {s["hbm_bytes_read"],
          s["hbm_bytes_written"],
          uint64_t(total),
          s["sram_peak_bytes"],
          s["mxu_flops"],
          s["cycles"],
          ratio(number(s, "mxu_flops"), total),
          s.value("max_rel_error", nlohmann::json()),
          s.value("passed", nlohmann::json()),
          ratio(total, base_total),
          ratio(number(s, "cycles"), number(base, "cycles"))};
}

// A swept schedule is already the schedule column.
std::vector<std::string> lead_keys(const std::vector<std::string>& keys) {
  std::vector<std::string> lead;
  for (const auto& k : keys)
    if (k != "schedule") lead.push_back(k);
  return lead;
}

// Shape options a swept key does not already name.
std::vector<std::string> shape_columns(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const char* k : {"N", "d", "heads", "batch", "causal", "dtype"})
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) out.push_back(k);
  return out;
}

const std::vector<std::string>& derived_columns() {
  static const std::vector<std::string> columns = {
      "element_bytes",   "sram_bytes",       "compulsory_bytes", "simulated_seconds", "achieved_flop_per_s",
      "peak_flop_per_s", "peak_bytes_per_s", "dma_busy_cycles",  "mxu_busy_cycles",   "vpu_busy_cycles"};
  return columns;
}

// Last, so every earlier column keeps its place: dynamic energy in microjoules, total and per level (whole
// chip; empty on one core or when the config has no energy: section).
const std::vector<std::string>& energy_columns() {
  static const std::vector<std::string> columns = {"energy_uj",       "dram_energy_uj", "l2_energy_uj",
                                                   "sm_l2_energy_uj", "sram_energy_uj", "regfile_energy_uj",
                                                   "mxu_energy_uj",   "vpu_energy_uj"};
  return columns;
}

std::vector<nlohmann::json> energy_cells(const nlohmann::json& s) {
  std::vector<nlohmann::json> cells(energy_columns().size());
  if (!s.contains("whole_chip") || !s["whole_chip"].contains("energy")) return cells;
  const nlohmann::json& e = s["whole_chip"]["energy"];
  cells[0] = e["total_pj"].get<double>() * 1e-6;
  for (size_t i = 1; i < cells.size(); ++i) {
    const std::string level = energy_columns()[i].substr(0, energy_columns()[i].size() - 10);  // "_energy_uj"
    if (e["levels"].contains(level)) cells[i] = e["levels"][level]["pj"].get<double>() * 1e-6;
  }
  return cells;
}

int64_t element_bytes(const std::string& dtype) {
  return dtype == "f32" ? 4 : dtype == "f16" || dtype == "bf16" ? 2 : 0;
}

// After `reason`, so the columns before it keep their places: the shape and what the plots need besides the
// figures (plot.cpp): |Q|+|K|+|V|+|O| of a forward pass, the SRAM, the machine's peaks for a roofline, each
// unit's busy cycles (--unit-cycles; empty unless its run took exactly compare's cycles).
std::vector<nlohmann::json> extra_cells(const nlohmann::json& record, const std::vector<std::string>& keys,
                                        const nlohmann::json* schedule) {
  std::vector<nlohmann::json> cells;
  const nlohmann::json& c = record.contains("compare") ? record["compare"] : nlohmann::json::object();
  for (const auto& k : shape_columns(keys)) cells.push_back(c.value(k == "N" ? "n" : k, nlohmann::json()));
  if (!schedule) {
    cells.resize(cells.size() + derived_columns().size() + energy_columns().size());
    return cells;
  }
  const nlohmann::json& s = *schedule;
  const nlohmann::json& config = record.contains("config") ? record["config"] : nlohmann::json::object();
  const int64_t eb = element_bytes(c.value("dtype", ""));
  cells.push_back(eb ? nlohmann::json(eb) : nlohmann::json());
  const nlohmann::json sram =
      config.contains("sram") ? config["sram"].value("capacity_bytes", nlohmann::json()) : nlohmann::json();
  cells.push_back(sram);
  const bool forward = s["schedule"].get<std::string>().find("bwd") == std::string::npos;
  if (forward && eb && c.contains("n"))
    cells.push_back(4 * c["n"].get<int64_t>() * c["d"].get<int64_t>() * eb * c["heads"].get<int64_t>() *
                    c["batch"].get<int64_t>());
  else
    cells.emplace_back();
  const double seconds = number(s, "simulated_seconds");
  cells.push_back(s.value("simulated_seconds", nlohmann::json()));
  cells.push_back(seconds > 0 ? nlohmann::json(number(s, "mxu_flops") / seconds) : nlohmann::json());
  // A systolic MXU does rows x cols x arrays multiply-adds a cycle; a chip has that per core.
  const nlohmann::json mxu = config.value("mxu", nlohmann::json::object());
  const double clock = config.contains("clock_ghz") ? config["clock_ghz"].get<double>() * 1e9 : 0;
  double cores = 1;
  if (config.contains("chip") && config["chip"].is_object() && config["chip"].contains("cores"))
    cores = config["chip"]["cores"].get<double>();
  if (mxu.contains("rows") && mxu.contains("cols") && clock > 0)
    cells.push_back(2.0 * mxu["rows"].get<double>() * mxu["cols"].get<double>() * mxu.value("arrays", 1.0) *
                    clock * cores);
  else
    cells.emplace_back();
  const nlohmann::json hbm = config.value("hbm", nlohmann::json::object());
  cells.push_back(hbm.contains("peak_bandwidth_gbps")
                      ? nlohmann::json(hbm["peak_bandwidth_gbps"].get<double>() * 1e9)
                      : nlohmann::json());
  const nlohmann::json units =
      record.contains("unit_busy_cycles")
          ? record["unit_busy_cycles"].value(s["schedule"].get<std::string>(), nlohmann::json::object())
          : nlohmann::json::object();
  const bool same_run = units.value("cycles", nlohmann::json()) == s["cycles"];
  for (const char* unit : {"dma", "mxu", "vpu"})
    cells.push_back(same_run ? units.value(unit, nlohmann::json()) : nlohmann::json());
  for (auto& e : energy_cells(s)) cells.push_back(std::move(e));
  return cells;
}

}  // namespace

std::vector<std::string> figure_columns(bool chip) {
  if (chip)
    return {"block_q",
            "block_k",
            "sm_l2_read_bytes",
            "sm_l2_write_bytes",
            "dram_read_bytes",
            "dram_write_bytes",
            "l2_hit_rate",
            "waves",
            "time_us",
            "flop_per_dram_byte",
            "max_rel_error",
            "passed",
            "dram_per_base",
            "time_per_base",
            "cycles"};
  return {"block_q",         "block_k",        "hbm_read_bytes", "hbm_write_bytes", "hbm_total_bytes",
          "sram_peak_bytes", "mxu_flops",      "cycles",         "flop_per_byte",   "max_rel_error",
          "passed",          "bytes_per_base", "cycles_per_base"};
}

std::string csv_header(const std::vector<std::string>& keys, bool chip) {
  std::vector<std::string> columns = lead_keys(keys);
  columns.push_back("schedule");
  columns.push_back("status");
  for (const auto& c : figure_columns(chip)) columns.push_back(c);
  columns.push_back("reason");
  for (const auto& c : shape_columns(keys)) columns.push_back(c);
  for (const auto& c : derived_columns()) columns.push_back(c);
  for (const auto& c : energy_columns()) columns.push_back(c);
  std::string line;
  for (const auto& c : columns) line += (line.empty() ? "" : ",") + csv_field(c);
  return line + "\n";
}

std::string csv_rows(const nlohmann::json& record, const std::vector<std::string>& keys, bool chip) {
  std::vector<std::string> lead;
  for (const auto& key : lead_keys(keys)) lead.push_back(cell(record["point"].value(key, nlohmann::json())));
  const std::string point_status = record.value("status", "");
  const std::string point_reason = record.value("reason", "");
  // A schedule that did not run (compare's row with `error`) is failed with its own reason, whatever the
  // point's status; its figures are left empty.
  const auto line = [&](const std::string& schedule, const std::vector<nlohmann::json>& figures,
                        const nlohmann::json* s, const nlohmann::json* error) {
    std::string out;
    for (const auto& v : lead) out += csv_field(v) + ",";
    out += csv_field(schedule) + "," + (error ? std::string("failed") : point_status);
    for (const auto& f : figures) out += "," + csv_field(cell(f));
    for (size_t i = figures.size(); i < figure_columns(chip).size(); ++i) out += ",";
    out += "," + csv_field(error ? error->get<std::string>() : point_reason);
    for (const auto& e : extra_cells(record, keys, s)) out += "," + csv_field(cell(e));
    return out + "\n";
  };
  const nlohmann::json* schedules = record.contains("compare") ? &record["compare"]["schedules"] : nullptr;
  if (!schedules || schedules->empty())
    return line(cell(record["point"].value("schedule", "")), {}, nullptr, nullptr);
  const nlohmann::json* base = nullptr;  // the ratios divide by the first schedule that ran
  for (const auto& s : *schedules)
    if (!base && !s.contains("error")) base = &s;
  std::string out;
  for (const auto& s : *schedules) {
    std::vector<nlohmann::json> figures = {s["block_q"], s["block_k"]};
    if (s.contains("error")) {
      out += line(s["schedule"].get<std::string>(), figures, nullptr, &s["error"]);
      continue;
    }
    const bool is_chip = s.contains("whole_chip");
    for (auto& f : is_chip ? chip_figures(s, *base) : core_figures(s, *base)) figures.push_back(std::move(f));
    if (is_chip != chip) figures.resize(2);  // columns of the other kind would mislead: blocks only
    out += line(s["schedule"].get<std::string>(), figures, &s, nullptr);
  }
  return out;
}

}  // namespace attnsim
