#include "sim/probe_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>

#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/csv_row.h"
#include "sim/machine.h"
#include "traces/stream.h"

namespace attnsim {

namespace {

// A whole number from a cell of the mode column's shape (MODE:COUNT:SPAN), 1 to 2^40.
uint64_t shape_number(const CsvRow& row, const std::string& text, const std::string& what) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1 || value > (uint64_t{1} << 40))
    row.fail(fmt::format("column mode: {} must be a whole number from 1 to 2^40, found '{}'", what, text));
  return value;
}

// The mode cell: a probe name, or MODE:COUNT:SPAN for the probes with a second shape.
void read_mode(const CsvRow& row, traces::ProbeShape& shape) {
  const std::string& cell = row.text("mode");
  const size_t colon = cell.find(':');
  const std::string name = cell.substr(0, colon);
  const auto mode = traces::find_probe_mode(name);
  if (!mode)
    row.fail("column mode: '" + name + "' is not a probe attnsim probe runs (pair probes time two SMs " +
             "against each other; the model attaches cores to partitions by l2.core_partitions)");
  using traces::ProbeMode;
  const bool two_shapes = *mode == ProbeMode::Heads || *mode == ProbeMode::Copies ||
                          *mode == ProbeMode::Stale || *mode == ProbeMode::WriteBetween ||
                          *mode == ProbeMode::ReadBetween;
  if (two_shapes != (colon != std::string::npos))
    row.fail(two_shapes ? "column mode: " + name + " needs its second shape, " + name + ":COUNT:SPAN"
                        : "column mode: " + name + " takes no second shape");
  shape.mode = *mode;
  if (!two_shapes) return;
  const size_t second = cell.find(':', colon + 1);
  if (second == std::string::npos) row.fail("column mode: '" + cell + "' must be " + name + ":COUNT:SPAN");
  const uint64_t count = shape_number(row, cell.substr(colon + 1, second - colon - 1), "its count");
  const uint64_t span = shape_number(row, cell.substr(second + 1), "its span");
  shape.heads = shape.copies = static_cast<int64_t>(count);
  shape.head_bytes = shape.stride_bytes = span;
  shape.hot_bytes = count;
  shape.hot_passes = static_cast<int64_t>(span);
}

MeasuredProbe read_row(const CsvRow& row) {
  MeasuredProbe m;
  m.line = row.line;
  read_mode(row, m.shape);
  m.shape.bytes = static_cast<uint64_t>(row.size("bytes"));
  if (m.shape.mode == traces::ProbeMode::Copies) m.shape.bytes /= static_cast<uint64_t>(m.shape.copies);
  m.shape.passes = row.size("passes");
  m.shape.blocks = row.size("blocks");
  m.dram_read = row.number("dram_read_bytes");
  m.dram_written = row.number("dram_write_bytes");
  m.lookup_misses = row.optional_number("lts_tex_miss_sectors");
  m.fabric = row.optional_number("lts_fabric_sectors");
  m.time_ns = row.optional_number("time_ns");
  const auto asked = row.optional_number("lrc_xbar2gpc_read_sectors");
  const auto looked_up = row.optional_number("lrc_lts2lrc_read_sectors");
  if (asked && looked_up && *asked > 0) m.coalesced_share = 1 - *looked_up / *asked;
  if (const auto offset = row.optional_number("offset_bytes"))
    m.offset_bytes = static_cast<uint64_t>(*offset);
  if (row.has("sms") && !row.text("sms").empty()) m.sms = row.size("sms");
  if (row.has("groups") && !row.text("groups").empty()) m.shape.groups = row.size("groups");
  if (row.has("stagger_ns") && !row.text("stagger_ns").empty() && row.number("stagger_ns") != 0)
    row.fail(
        "column stagger_ns: blocks started apart (STAGGER_NS) are not simulated: the model's blocks "
        "start together; keep the rows with stagger_ns 0");
  if (row.has("sleep_ns") && !row.text("sleep_ns").empty() && row.number("sleep_ns") != 0)
    row.fail(
        "column sleep_ns: readers that sleep between chunks (validation/tight_probe.cu's SLEEP_NS) are not "
        "simulated; keep the rows with sleep_ns 0");
  if (row.has("fence_every") && !row.text("fence_every").empty())
    m.shape.fence_every = row.size("fence_every");
  if (row.has("in_flight") && !row.text("in_flight").empty()) m.shape.in_flight = row.size("in_flight");
  if (traces::rewrites_halves(m.shape.mode) && m.shape.blocks % m.shape.groups != 0)
    row.fail(fmt::format("column groups: {} groups do not divide the row's {} blocks", m.shape.groups,
                         m.shape.blocks));
  return m;
}

std::string ratio_cell(double predicted, std::optional<double> measured, double unit) {
  if (!measured) return fmt::format("{:>10.1f} {:>10} {:>6}", predicted / unit, "-", "-");
  const std::string ratio = *measured > 0 ? fmt::format("{:.3f}", predicted / *measured) : "-";
  return fmt::format("{:>10.1f} {:>10.1f} {:>6}", predicted / unit, *measured / unit, ratio);
}

std::string shape_text(const traces::ProbeShape& s) {
  const std::string groups = traces::rewrites_halves(s.mode) ? fmt::format(" {}g", s.groups) : "";
  const std::string fences = s.fence_every > 1 ? fmt::format(" f{}", s.fence_every) : "";
  const std::string in_flight = s.in_flight > 1 ? fmt::format(" k{}", s.in_flight) : "";
  return fmt::format("{} {:g} MiB x{} {}b{}{}{}", traces::probe_mode_name(s.mode),
                     static_cast<double>(s.bytes) / (1 << 20), s.passes, s.blocks, groups, fences, in_flight);
}

}  // namespace

std::vector<MeasuredProbe> read_measured_probes(const std::string& path) {
  std::istringstream in(read_input_file(path, "probe measurements file"));
  std::string line;
  if (!std::getline(in, line)) throw InputError(path, {1, 1}, "empty file: expected a header row");
  const std::vector<std::string> header = split_csv(line);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name : {"mode", "bytes", "passes", "blocks", "dram_read_bytes", "dram_write_bytes"})
    if (!column.count(name)) throw InputError(path, {1, 1}, std::string("missing column '") + name + "'");
  std::vector<MeasuredProbe> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> cells = split_csv(line);
    if (cells.size() < header.size())
      throw InputError(path, {line_no, 1},
                       fmt::format("{} cells, the header has {}", cells.size(), header.size()));
    rows.push_back(read_row(CsvRow{column, cells, path, line_no}));
  }
  if (rows.empty()) throw InputError(path, {1, 1}, "no rows after the header");
  return rows;
}

std::vector<ProbeComparison> compare_probes(Machine& machine, const std::vector<MeasuredProbe>& rows,
                                            const std::string& path) {
  const uint64_t first_address = machine.first_tensor_address();
  const auto cores = static_cast<int64_t>(machine.chip()->cores().size());
  for (const MeasuredProbe& m : rows)  // before any row runs: nothing printed for a file that cannot run
    if (m.sms != 0 && m.sms != cores)
      throw InputError(
          path, {m.line, 1},
          fmt::format("column sms: this launch ran on {} SMs (a green context), the config has {} "
                      "cores: -p chip.cores={} (and l2.core_partitions, the SMs' partitions)",
                      m.sms, cores, m.sms));
  std::vector<ProbeComparison> out;
  for (const MeasuredProbe& m : rows) {
    machine.set_first_tensor_address(m.offset_bytes.value_or(first_address));
    const isa::Program program = traces::stream_program([&] { return traces::l2_probe(m.shape); });
    machine.load(program, false, true);
    machine.run();
    const ChipSummary s = summarize_chip(*machine.chip(), program, machine.clock_ghz());
    const L2Cache* l2 = machine.chip()->l2();
    const uint64_t read_sectors =
        l2 ? total(s.sm_l2_read) / static_cast<uint64_t>(l2->params().sector_bytes) : 0;
    out.push_back({m, static_cast<double>(total(s.dram_read)), static_cast<double>(total(s.dram_written)),
                   static_cast<double>(s.l2_lookup_read_miss_sectors),
                   static_cast<double>(s.l2_fabric_sectors), s.seconds * 1e9,
                   read_sectors ? static_cast<double>(s.l2_coalesced_read_sectors) / read_sectors : 0.0});
  }
  return out;
}

void print_probe_comparison(std::ostream& out, const std::string& path,
                            const std::vector<ProbeComparison>& rows) {
  const bool coalescer = std::any_of(rows.begin(), rows.end(), [](const ProbeComparison& r) {
    return r.measured.coalesced_share.has_value();
  });
  out << "measured: " << path << " (whole chip; each column predicted, measured, predicted / measured)\n";
  out << fmt::format("{:<34} {:>28} {:>28} {:>28} {:>28} {:>28}{}\n", "probe", "DRAM read MB",
                     "DRAM written MB", "L2 fabric M sectors", "L2 lookup miss M sectors", "time us",
                     coalescer ? fmt::format(" {:>16}", "coalesced %") : "");
  for (const ProbeComparison& r : rows) {
    const MeasuredProbe& m = r.measured;
    const std::string merged =
        !coalescer ? ""
        : m.coalesced_share
            // The L2 may count a few sectors more than the SMs asked for: no merging, not a negative share.
            ? fmt::format(" {:>7.1f} {:>8.1f}", 100 * r.coalesced_share,
                          100 * std::max(0.0, *m.coalesced_share))
            : fmt::format(" {:>7.1f} {:>8}", 100 * r.coalesced_share, "-");
    out << fmt::format(
        "{:<34} {} {} {} {} {}{}\n", shape_text(m.shape), ratio_cell(r.dram_read, m.dram_read, 1e6),
        ratio_cell(r.dram_written, m.dram_written, 1e6), ratio_cell(r.fabric, m.fabric, 1e6),
        ratio_cell(r.lookup_misses, m.lookup_misses, 1e6), ratio_cell(r.time_ns, m.time_ns, 1e3), merged);
  }
  out << "DRAM bytes: sector-rounded, during the kernel (written: evictions while it ran, as Nsight Compute "
         "counts them); L2 fabric: sectors between the L2's partitions (copies fetched, stores to a far "
         "home); L2 lookup misses: read sectors missing in the partition looked up first\n";
  if (coalescer)
    out << "coalesced: the share of the SMs' read sectors merged in the L2's request coalescer before any "
           "lookup (predicted with l2.coalescer_entries > 0, else 0; measured 1 - "
           "lrc__lts2lrc_sectors_op_read / lrc__xbar2gpc_sectors_op_read)\n";
}

}  // namespace attnsim
