// `attnsim plot`: a CSV (a sweep's, or any with a header line) to one SVG chart. The SVG is written here, as
// text: a chart is a few hundred lines, rectangles and labels, and writing them keeps the output byte-stable,
// testable and free of a plotting dependency (docs/plots.md).
#include "sim/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "isa/diagnostics.h"
#include "isa/suggest.h"
#include "sim/config.h"
#include "sim/run.h"

namespace attnsim {

namespace {

// ---------------------------------------------------------------------------------------------------------
// The CSV, with each cell's line and column for error messages.

struct Row {
  int line = 0;
  std::vector<std::string> cells;
  std::vector<int> cols;  // 1-based character column where each cell starts
};

struct Table {
  std::string path;
  std::vector<std::string> header;
  std::vector<Row> rows;

  bool has(const std::string& name) const {
    return std::find(header.begin(), header.end(), name) != header.end();
  }
  size_t column(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it != header.end()) return size_t(it - header.begin());
    std::string all;
    for (const auto& h : header) all += (all.empty() ? "" : ", ") + h;
    throw InputError(path, {1, 1},
                     "no column '" + name + "'" + did_you_mean(name, header) + " (columns: " + all + ")");
  }
  const std::string& text(const Row& r, size_t c) const { return r.cells[c]; }
  double number(const Row& r, size_t c) const {
    const std::string& t = r.cells[c];
    char* end = nullptr;
    const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v))
      throw InputError(
          path, {r.line, r.cols[c]},
          t.empty() ? header[c] + " is empty, not a number" : header[c] + " is '" + t + "', not a number");
    return v;
  }
};

// Cells of one line: RFC 4180 quotes ("" inside quotes is a quote); the sweep never breaks a line in a cell.
std::pair<std::vector<std::string>, std::vector<int>> split_line(const std::string& line) {
  std::vector<std::string> cells(1);
  std::vector<int> cols = {1};
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
      cols.push_back(int(i) + 2);
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return {cells, cols};
}

Table read_csv(const std::string& path) {
  std::istringstream in(read_input_file(path, "CSV file"));
  Table table{path, {}, {}};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto [cells, cols] = split_line(line);
    if (table.header.empty()) {
      table.header = cells;
      continue;
    }
    if (cells.size() != table.header.size())
      throw InputError(path, {number, 1},
                       fmt::format("{} cells, the header has {}", cells.size(), table.header.size()));
    table.rows.push_back({number, std::move(cells), std::move(cols)});
  }
  if (table.header.empty()) throw InputError(path, {}, "empty file: expected a header line");
  return table;
}

// ---------------------------------------------------------------------------------------------------------
// What a column measures, for axis labels: known columns of the sweep's CSV by name, others by their suffix.

struct Quantity {
  std::string name, unit;
  bool bytes = false;
};

Quantity describe(const std::string& column) {
  static const std::map<std::string, Quantity> known = {
      {"sram.capacity_bytes", {"SRAM capacity", "bytes", true}},
      {"sram_bytes", {"SRAM capacity", "bytes", true}},
      {"hbm_read_bytes", {"HBM read", "bytes", true}},
      {"hbm_write_bytes", {"HBM written", "bytes", true}},
      {"hbm_total_bytes", {"HBM read + written", "bytes", true}},
      {"sm_l2_read_bytes", {"SM <- L2 read", "bytes", true}},
      {"sm_l2_write_bytes", {"SM -> L2 written", "bytes", true}},
      {"dram_read_bytes", {"DRAM read", "bytes", true}},
      {"dram_write_bytes", {"DRAM written", "bytes", true}},
      {"sram_peak_bytes", {"SRAM peak", "bytes", true}},
      {"compulsory_bytes", {"|Q|+|K|+|V|+|O|", "bytes", true}},
      {"sm_l2_read_pred_bytes", {"predicted SM <- L2 read", "bytes", true}},
      {"sm_l2_read_meas_bytes", {"measured SM <- L2 read", "bytes", true}},
      {"sm_l2_write_pred_bytes", {"predicted SM -> L2 written", "bytes", true}},
      {"sm_l2_write_meas_bytes", {"measured SM -> L2 written", "bytes", true}},
      {"dram_read_pred_bytes", {"predicted DRAM read", "bytes", true}},
      {"dram_read_meas_bytes", {"measured DRAM read", "bytes", true}},
      {"time_pred_ns", {"predicted kernel time", "ns"}},
      {"time_meas_ns", {"measured kernel time (gpu__time_duration)", "ns"}},
      {"cycles", {"cycles", "cycles"}},
      {"time_us", {"whole-chip time", "µs"}},
      {"simulated_seconds", {"simulated time", "s"}},
      {"host_seconds", {"host time", "s"}},
      {"flop_per_byte", {"MXU FLOPs per HBM byte", "FLOP/byte"}},
      {"flop_per_dram_byte", {"MXU FLOPs per DRAM byte", "FLOP/byte"}},
      {"achieved_flop_per_s", {"achieved MXU throughput", "FLOP/s"}},
      {"peak_flop_per_s", {"MXU peak", "FLOP/s"}},
      {"peak_bytes_per_s", {"HBM peak bandwidth", "bytes/s"}},
      {"mxu_flops", {"MXU FLOPs", "FLOP"}},
      {"N", {"sequence length N", "tokens"}},
      {"d", {"head dimension d", "elements"}},
      {"heads", {"heads", "count"}},
      {"batch", {"batch", "count"}},
      {"block_q", {"B_r", "query rows"}},
      {"block_k", {"B_c", "key rows"}},
      {"block-q", {"B_r", "query rows"}},
      {"block-k", {"B_c", "key rows"}},
      {"block", {"B_r = B_c", "rows"}},
      {"l2_hit_rate", {"L2 hit rate", "fraction"}},
      {"waves", {"waves of thread blocks", "waves"}},
      {"max_rel_error", {"max relative error", "vs float64"}},
      {"bytes_per_base", {"HBM bytes / first schedule's", "ratio"}},
      {"cycles_per_base", {"cycles / first schedule's", "ratio"}},
      {"dram_per_base", {"DRAM bytes / first schedule's", "ratio"}},
      {"time_per_base", {"time / first schedule's", "ratio"}},
      {"element_bytes", {"element size", "bytes"}}};
  if (const auto it = known.find(column); it != known.end()) return it->second;
  const auto ends = [&](const char* suffix) { return column.ends_with(suffix); };
  const std::string base = column.substr(0, column.rfind('_'));
  if (ends("_busy_cycles")) {
    std::string unit = column.substr(0, column.size() - 12);
    std::transform(unit.begin(), unit.end(), unit.begin(), ::toupper);
    return {unit + " busy", "cycles"};
  }
  if (ends("_bytes")) return {base, "bytes", true};
  if (ends("_cycles")) return {base, "cycles"};
  if (ends("_gbps")) return {base, "GB/s"};
  if (ends("_ghz")) return {base, "GHz"};
  if (ends("_ns")) return {base, "ns"};
  if (ends("_us")) return {base, "µs"};
  return {column, ""};
}

std::string axis_label(const Quantity& q) {
  return q.unit.empty() ? q.name : q.name + " (" + q.unit + ")";
}

// ---------------------------------------------------------------------------------------------------------
// Axes: linear with 1-2-5 steps, or log with a labelled tick per decade (and 2, 5 when under two decades
// show), or, for byte counts that are all powers of two (SRAM sizes), a tick at each of them in KiB/MiB.

std::string si(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e3) {
    const int e = std::min(5, int(std::floor(std::log10(a) / 3 + 1e-9)));
    return fmt::format("{:.3g}{}", v / std::pow(10.0, 3 * e), "kMGTP"[e - 1]);
  }
  return fmt::format("{:.3g}", v);
}

std::string binary_size(double v) {
  const auto n = int64_t(v);
  if (n >= (1LL << 30) && n % (1LL << 30) == 0) return fmt::format("{} GiB", n >> 30);
  if (n >= (1LL << 20) && n % (1LL << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n >= (1LL << 10) && n % (1LL << 10) == 0) return fmt::format("{} KiB", n >> 10);
  return si(v);
}

// "7.5 TFLOP/s".
std::string si_unit(double v, const std::string& unit) {
  const std::string n = si(v);
  const bool prefixed = !n.empty() && std::isalpha(static_cast<unsigned char>(n.back()));
  return prefixed ? n.substr(0, n.size() - 1) + " " + n.back() + unit : n + " " + unit;
}

bool power_of_two(double v) {
  return v >= 1 && v < 9e18 && v == std::floor(v) && (int64_t(v) & (int64_t(v) - 1)) == 0;
}

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<std::pair<double, std::string>> major;
  std::vector<double> minor;
  double fraction(double v) const {
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
  }
};

Axis make_axis(const std::vector<double>& values, bool log, bool bytes, bool from_zero) {
  Axis axis;
  axis.log = log;
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  if (log) {
    if (lo == hi) lo /= 2, hi *= 2;
    const double llo = std::log10(lo), lhi = std::log10(hi), pad = std::max(0.05 * (lhi - llo), 0.03);
    axis.lo = std::pow(10.0, llo - pad);
    axis.hi = std::pow(10.0, lhi + pad);
    // Swept sizes and lengths are powers of two: a tick at each, 32 KiB or 1024, reads better than decades.
    const bool binary = std::all_of(values.begin(), values.end(), power_of_two);
    std::set<double> distinct(values.begin(), values.end());
    if (binary && distinct.size() >= 2 && distinct.size() <= 12) {
      for (double v : distinct)
        axis.major.emplace_back(v, bytes ? binary_size(v) : fmt::format("{}", int64_t(v)));
      return axis;
    }
    for (int k = int(std::floor(std::log10(axis.lo))); k <= int(std::ceil(std::log10(axis.hi))); ++k)
      for (int m = 1; m <= 9; ++m) {
        const double v = m * std::pow(10.0, k);
        if (v < axis.lo || v > axis.hi) continue;
        if (m == 1)
          axis.major.emplace_back(v, si(v));
        else
          axis.minor.push_back(v);
      }
    // Few decade ticks: label 2 and 5 (and 3) times a power of ten too, and every tick when still few.
    const auto label_more = [&](const std::set<int>& multiples) {
      std::vector<double> rest;
      for (double v : axis.minor) {
        const int m = int(std::round(v / std::pow(10.0, std::floor(std::log10(v) + 1e-9))));
        if (multiples.empty() || multiples.count(m))
          axis.major.emplace_back(v, si(v));
        else
          rest.push_back(v);
      }
      axis.minor = rest;
      std::sort(axis.major.begin(), axis.major.end());
    };
    const size_t decades = axis.major.size();
    if (decades == 2) label_more({2, 5});
    if (decades < 2) label_more({2, 3, 5});
    if (axis.major.size() < 3) label_more({});
    return axis;
  }
  if (from_zero && lo > 0) lo = 0;
  if (lo == hi) lo -= std::max(std::fabs(lo) * 0.1, 1.0), hi += std::max(std::fabs(hi) * 0.1, 1.0);
  const double pad = 0.05 * (hi - lo);
  axis.lo = from_zero && lo == 0 ? 0 : lo - pad;
  axis.hi = hi + pad;
  const double raw = (axis.hi - axis.lo) / 6, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  for (double v = std::ceil(axis.lo / step) * step; v <= axis.hi + step * 1e-9; v += step)
    axis.major.emplace_back(std::fabs(v) < step * 1e-9 ? 0.0 : v, si(std::fabs(v) < step * 1e-9 ? 0.0 : v));
  return axis;
}

// ---------------------------------------------------------------------------------------------------------
// SVG.

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// Okabe and Ito's colour-blind-safe palette (yellow left out: too pale on white).
const char* const kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};

std::string marker(int shape, const std::string& color) {
  switch (shape % 4) {
    case 0:
      return fmt::format(R"(<circle r="4" fill="{}"/>)", color);
    case 1:
      return fmt::format(R"(<rect x="-3.6" y="-3.6" width="7.2" height="7.2" fill="{}"/>)", color);
    case 2:
      return fmt::format(R"(<polygon points="0,-5 4.5,3.5 -4.5,3.5" fill="{}"/>)", color);
    default:
      return fmt::format(R"(<polygon points="0,-5 5,0 0,5 -5,0" fill="{}"/>)", color);
  }
}

// A schedule keeps its colour and marker in every chart; other series take the palette in order.
std::pair<std::string, int> style_for(const std::string& name, int index) {
  static const std::vector<std::string> schedules = {"naive-safe",      "naive-online", "two-pass",
                                                     "flash1",          "flash2",       "flash2-bwd",
                                                     "flash2-bwd-no-d", "naive-bwd"};
  const auto it = std::find(schedules.begin(), schedules.end(), name);
  const int k = it == schedules.end() ? index : int(it - schedules.begin());
  return {kColors[k % 7], k};
}

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // data coordinates, drawn in this order
  std::string color;
  int shape = 0;
  bool line = true, markers = true;
  std::string dash;  // stroke-dasharray, empty: solid
  double width = 1.8;
};

struct Chart {
  std::string title, subtitle, x_label, y_label;
  Axis x, y;
  std::vector<Series> series;
};

struct Frame {
  double width, height, left, top, right, bottom;  // the plot area is [left, right] x [top, bottom]
};

Frame frame_for(const std::vector<std::string>& legend) {
  size_t longest = 10;
  for (const auto& l : legend) longest = std::max(longest, l.size());
  const double legend_width = std::clamp(44.0 + 6.6 * double(longest), 130.0, 360.0);
  const double width = 860, height = std::max(520.0, 110.0 + 20.0 * double(legend.size()));
  return {width, height, 96, 70, width - legend_width - 24, height - 64};
}

void open_svg(std::string& svg, const Frame& f, const Chart& c) {
  svg += fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      f.width, f.height);
  svg += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" "
      "font-weight=\"bold\">{}</text>\n",
      f.width / 2, escape(c.title));
  if (!c.subtitle.empty())
    svg += fmt::format(
        "<text class=\"subtitle\" x=\"{}\" y=\"46\" text-anchor=\"middle\" font-size=\"11.5\" "
        "fill=\"#444\">{}</text>\n",
        f.width / 2, escape(c.subtitle));
  svg += fmt::format(
      "<clipPath id=\"plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n", f.left,
      f.top, f.right - f.left, f.bottom - f.top);
}

double px(const Frame& f, const Axis& a, double v) {
  return f.left + a.fraction(v) * (f.right - f.left);
}
double py(const Frame& f, const Axis& a, double v) {
  return f.bottom - a.fraction(v) * (f.bottom - f.top);
}

// Grid, ticks, tick labels and axis labels; `categories` replaces the x axis's ticks with names (bars).
void draw_axes(std::string& svg, const Frame& f, const Chart& c,
               const std::vector<std::string>& categories = {}) {
  svg += "<g class=\"grid\" stroke-width=\"1\">\n";
  for (double v : c.y.minor)
    svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#f0f0f0\"/>\n", f.left,
                       f.right, py(f, c.y, v), py(f, c.y, v));
  for (const auto& [v, label] : c.y.major)
    svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#dddddd\"/>\n", f.left,
                       f.right, py(f, c.y, v), py(f, c.y, v));
  if (categories.empty()) {
    for (double v : c.x.minor)
      svg += fmt::format("<line y1=\"{}\" y2=\"{}\" x1=\"{:.2f}\" x2=\"{:.2f}\" stroke=\"#f0f0f0\"/>\n",
                         f.top, f.bottom, px(f, c.x, v), px(f, c.x, v));
    for (const auto& [v, label] : c.x.major)
      svg += fmt::format("<line y1=\"{}\" y2=\"{}\" x1=\"{:.2f}\" x2=\"{:.2f}\" stroke=\"#dddddd\"/>\n",
                         f.top, f.bottom, px(f, c.x, v), px(f, c.x, v));
  }
  svg += "</g>\n<g class=\"axes\" stroke=\"#333\">\n";
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>\n", f.left, f.top,
                     f.right - f.left, f.bottom - f.top);
  svg += "</g>\n<g class=\"tick-labels\" fill=\"#222\">\n";
  for (const auto& [v, label] : c.y.major)
    svg += fmt::format(
        "<text x=\"{}\" y=\"{:.2f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
        f.left - 7, py(f, c.y, v), escape(label));
  if (categories.empty()) {
    for (const auto& [v, label] : c.x.major)
      svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(f, c.x, v),
                         f.bottom + 18, escape(label));
  } else {
    for (size_t i = 0; i < categories.size(); ++i)
      svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         f.left + (double(i) + 0.5) * (f.right - f.left) / double(categories.size()),
                         f.bottom + 18, escape(categories[i]));
  }
  svg += "</g>\n";
  svg += fmt::format(
      "<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
      (f.left + f.right) / 2, f.bottom + 42, escape(c.x_label));
  svg += fmt::format(
      "<text class=\"y-label\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" font-size=\"13\" "
      "transform=\"rotate(-90 {0} {1})\">{2}</text>\n",
      22, (f.top + f.bottom) / 2, escape(c.y_label));
}

struct LegendEntry {
  std::string label, color, dash;
  int shape = 0;
  bool line = true, markers = true, box = false;
};

void draw_legend(std::string& svg, const Frame& f, const std::vector<LegendEntry>& entries) {
  svg += "<g class=\"legend\">\n";
  const double x = f.right + 18;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const double y = f.top + 8 + 20.0 * double(i);
    if (e.box)
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"11\" fill=\"{}\"/>\n", x, y - 5.5,
                         e.color);
    if (e.line)
      svg += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", x, x + 22,
          y, y, e.color, e.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", e.dash));
    if (e.markers)
      svg += fmt::format("<g transform=\"translate({},{})\">{}</g>\n", x + 11, y, marker(e.shape, e.color));
    svg += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n", x + 30, y,
                       escape(e.label));
  }
  svg += "</g>\n";
}

std::string render_lines(const Chart& c) {
  std::vector<std::string> labels;
  for (const auto& s : c.series) labels.push_back(s.label);
  const Frame f = frame_for(labels);
  std::string svg;
  open_svg(svg, f, c);
  draw_axes(svg, f, c);
  std::vector<LegendEntry> legend;
  for (const auto& s : c.series) {
    svg += fmt::format("<g class=\"series\" data-label=\"{}\" clip-path=\"url(#plot-area)\">\n",
                       escape(s.label));
    if (s.line && s.points.size() > 1) {
      std::string points;
      for (const auto& [x, y] : s.points)
        points += fmt::format("{:.2f},{:.2f} ", px(f, c.x, x), py(f, c.y, y));
      points.pop_back();
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                         points, s.color, s.width,
                         s.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", s.dash));
    }
    if (s.markers)
      for (const auto& [x, y] : s.points)
        svg += fmt::format("<g class=\"point\" transform=\"translate({:.2f},{:.2f})\">{}</g>\n",
                           px(f, c.x, x), py(f, c.y, y), marker(s.shape, s.color));
    svg += "</g>\n";
    legend.push_back({s.label, s.color, s.dash, s.shape, s.line, s.markers, false});
  }
  draw_legend(svg, f, legend);
  return svg + "</svg>\n";
}

// ---------------------------------------------------------------------------------------------------------
// From rows to series.

// Rows that ran (status ok, when there is a status column) and pass every --where.
std::vector<const Row*> kept_rows(const Table& t, const PlotOptions& o) {
  std::vector<std::pair<size_t, std::string>> filters;
  for (const auto& [col, value] : o.where) filters.emplace_back(t.column(col), value);
  const size_t status = t.has("status") ? t.column("status") : std::string::npos;
  std::vector<const Row*> rows;
  size_t failed = 0;
  for (const auto& r : t.rows) {
    if (!std::all_of(filters.begin(), filters.end(),
                     [&](const auto& f) { return r.cells[f.first] == f.second; }))
      continue;
    if (status != std::string::npos && r.cells[status] != "ok") {
      ++failed;
      continue;
    }
    rows.push_back(&r);
  }
  if (failed) std::cerr << fmt::format("plot: {} rows of failed points left out\n", failed);
  if (rows.empty()) throw InputError(t.path, {}, "no rows to plot (all failed, or none matches --where)");
  return rows;
}

double positive(const Table& t, const Row& r, size_t c, const char* option) {
  const double v = t.number(r, c);
  if (v <= 0)
    throw InputError(
        t.path, {r.line, r.cols[c]},
        fmt::format("{}: {} is {}; a log axis needs values above 0", option, t.header[c], t.text(r, c)));
  return v;
}

// The value a column has on every row, or an error naming the row where it differs.
double constant(const Table& t, const std::vector<const Row*>& rows, const std::string& column) {
  const size_t c = t.column(column);
  const double v = t.number(*rows.front(), c);
  for (const Row* r : rows)
    if (t.number(*r, c) != v)
      throw InputError(
          t.path, {r->line, r->cols[c]},
          fmt::format("{} is {} here but {} at line {}: plot one value at a time (--where {}=...)", column,
                      t.text(*r, c), t.text(*rows.front(), c), rows.front()->line, column));
  return v;
}

// "N = 1024, d = 64, 1 head, f16, causal": the shape columns that are the same on every row.
std::string shape_text(const Table& t, const std::vector<const Row*>& rows, bool with_n) {
  std::string out;
  const auto same = [&](const std::string& col) -> std::optional<std::string> {
    if (!t.has(col)) return std::nullopt;
    const size_t c = t.column(col);
    for (const Row* r : rows)
      if (r->cells[c] != rows.front()->cells[c] || r->cells[c].empty()) return std::nullopt;
    return rows.front()->cells[c];
  };
  const auto add = [&](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  if (with_n)
    if (auto v = same("N")) add("N = " + *v);
  if (auto v = same("d")) add("d = " + *v);
  const auto heads = same("heads"), batch = same("batch");
  if (heads && batch) add(fmt::format("batch x heads = {} x {}", *batch, *heads));
  if (auto v = same("dtype")) add(*v);
  if (auto v = same("causal")) add(*v == "true" ? "causal" : "not causal");
  return out;
}

// Groups of rows by the series column (in order of first appearance), or one group.
std::vector<std::pair<std::string, std::vector<const Row*>>> group(const Table& t,
                                                                   const std::vector<const Row*>& rows,
                                                                   const std::string& series) {
  std::vector<std::pair<std::string, std::vector<const Row*>>> groups;
  if (series.empty()) {
    groups.emplace_back("", rows);
    return groups;
  }
  const size_t c = t.column(series);
  for (const Row* r : rows) {
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == r->cells[c]; });
    if (it == groups.end()) {
      groups.emplace_back(r->cells[c], std::vector<const Row*>{});
      it = groups.end() - 1;
    }
    it->second.push_back(r);
  }
  return groups;
}

void sort_points(Series& s) {
  std::stable_sort(s.points.begin(), s.points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::vector<double> all_x(const std::vector<Series>& series) {
  std::vector<double> v;
  for (const auto& s : series)
    for (const auto& p : s.points) v.push_back(p.first);
  return v;
}
std::vector<double> all_y(const std::vector<Series>& series) {
  std::vector<double> v;
  for (const auto& s : series)
    for (const auto& p : s.points) v.push_back(p.second);
  return v;
}

Chart lines_chart(const Table& t, const PlotOptions& o) {
  if (o.x.empty() || o.y.empty())
    throw InputError("attnsim plot", {}, "--x COLUMN and --y COLUMN[,COLUMN] are needed");
  const auto rows = kept_rows(t, o);
  const size_t xc = t.column(o.x);
  std::vector<size_t> ycs;
  for (const auto& y : o.y) ycs.push_back(t.column(y));
  Chart c;
  const auto groups = group(t, rows, o.series);
  int k = 0;
  for (const auto& [name, members] : groups)
    for (size_t yi = 0; yi < ycs.size(); ++yi) {
      Series s;
      s.label = name.empty()     ? describe(o.y[yi]).name
                : ycs.size() > 1 ? name + ": " + describe(o.y[yi]).name
                                 : name;
      std::tie(s.color, s.shape) = style_for(ycs.size() > 1 ? "" : name, k++);
      for (const Row* r : members) {
        const double x = o.log_x ? positive(t, *r, xc, "--log-x") : t.number(*r, xc);
        const double y = o.log_y ? positive(t, *r, ycs[yi], "--log-y") : t.number(*r, ycs[yi]);
        s.points.emplace_back(x, y);
      }
      sort_points(s);
      c.series.push_back(std::move(s));
    }
  const Quantity xq = describe(o.x);
  c.x_label = axis_label(xq);
  std::set<std::string> units;
  std::string names;
  for (const auto& y : o.y) {
    units.insert(describe(y).unit);
    names += (names.empty() ? "" : ", ") + describe(y).name;
  }
  c.y_label = o.y.size() == 1
                  ? axis_label(describe(o.y[0]))
                  : names + (units.size() == 1 && !units.begin()->empty() ? " (" + *units.begin() + ")" : "");
  bool y_bytes = true;
  for (const auto& y : o.y) y_bytes = y_bytes && describe(y).bytes;
  c.x = make_axis(all_x(c.series), o.log_x, xq.bytes, false);
  c.y = make_axis(all_y(c.series), o.log_y, y_bytes, !o.log_y);
  c.title = o.title.empty() ? names + " vs " + xq.name : o.title;
  const std::string shape = shape_text(t, rows, o.x != "N");
  c.subtitle =
      shape + (o.series.empty() ? "" : (shape.empty() ? "" : "; ") + std::string("one line per ") + o.series);
  return c;
}

Series overlay(const std::string& label, const std::string& color, const std::string& dash) {
  Series s;
  s.label = label;
  s.color = color;
  s.dash = dash;
  s.markers = false;
  s.width = 1.6;
  return s;
}

// --kind scatter: --y against --x as points, one colour per --series, and the line y = x (predicted against
// measured: a point on the line is exact).
Chart scatter_chart(const Table& t, const PlotOptions& o) {
  if (o.y.size() != 1) throw InputError("attnsim plot", {}, "--kind scatter takes one --y column");
  Chart c = lines_chart(t, o);
  for (Series& s : c.series) s.line = false;
  const size_t per = c.subtitle.find("one line per ");
  if (per != std::string::npos) c.subtitle.replace(per, 13, "one colour per ");
  const auto xs = all_x(c.series), ys = all_y(c.series);
  const double lo =
      std::min(*std::min_element(xs.begin(), xs.end()), *std::min_element(ys.begin(), ys.end()));
  const double hi =
      std::max(*std::max_element(xs.begin(), xs.end()), *std::max_element(ys.begin(), ys.end()));
  Series diagonal = overlay("y = x", "#000000", "4 3");
  for (int i = 0; i <= 40; ++i) {
    const double v = o.log_x ? lo * std::pow(hi / lo, i / 40.0) : lo + (hi - lo) * i / 40.0;
    diagonal.points.emplace_back(v, v);
  }
  c.series.push_back(diagonal);
  c.x = make_axis(all_x(c.series), o.log_x, describe(o.x).bytes, false);
  c.y = make_axis(all_y(c.series), o.log_y, describe(o.y[0]).bytes, !o.log_y);
  c.subtitle += (c.subtitle.empty() ? "" : "; ") + std::string("on the dashed line y = x the two agree");
  return c;
}

// The levels a named plot draws: HBM on a one-core config, SM <-> L2 and DRAM on a whole chip.
struct Level {
  std::string name;
  std::vector<std::string> columns;  // summed
  std::string dash;
};

std::vector<Level> levels(const Table& t) {
  if (t.has("dram_read_bytes"))
    return {{"DRAM", {"dram_read_bytes", "dram_write_bytes"}, ""},
            {"SM<->L2", {"sm_l2_read_bytes", "sm_l2_write_bytes"}, "6 4"}};
  t.column("hbm_total_bytes");  // names the column a one-core sweep has, when neither is there
  return {{"HBM", {"hbm_total_bytes"}, ""}};
}

// bytes at each level against `x_column`, one colour per schedule, one dash per level.
Chart bytes_chart(const Table& t, const std::vector<const Row*>& rows, const std::string& x_column,
                  bool log_x) {
  Chart c;
  const size_t xc = t.column(x_column);
  const auto lv = levels(t);
  int k = 0;
  for (const auto& [schedule, members] : group(t, rows, t.has("schedule") ? "schedule" : "")) {
    for (const auto& level : lv) {
      Series s;
      s.label = (schedule.empty() ? "" : schedule + ": ") + level.name;
      std::tie(s.color, s.shape) = style_for(schedule, k);
      s.dash = level.dash;
      for (const Row* r : members) {
        double bytes = 0;
        for (const auto& col : level.columns) bytes += t.number(*r, t.column(col));
        if (bytes <= 0)  // the sum is drawn: one level's reads or writes alone may be 0
          throw InputError(t.path, {r->line, r->cols[t.column(level.columns[0])]},
                           fmt::format("log y: {} bytes are 0; a log axis needs values above 0", level.name));
        s.points.emplace_back(log_x ? positive(t, *r, xc, "log x") : t.number(*r, xc), bytes);
      }
      sort_points(s);
      c.series.push_back(std::move(s));
    }
    ++k;
  }
  return c;
}

Chart sram_chart(const Table& t, const PlotOptions& o) {
  const auto rows = kept_rows(t, o);
  const std::string x_column = t.has("sram.capacity_bytes") ? "sram.capacity_bytes" : "sram_bytes";
  Chart c = bytes_chart(t, rows, x_column, true);
  const double n = constant(t, rows, "N"), d = constant(t, rows, "d"), b = constant(t, rows, "element_bytes");
  const double heads = constant(t, rows, "heads") * constant(t, rows, "batch");
  const auto xs = all_x(c.series);
  const double lo = *std::min_element(xs.begin(), xs.end()), hi = *std::max_element(xs.begin(), xs.end());
  // FlashAttention's bound: Theta(N^2 d^2 / M) elements for M elements of SRAM, here with constant 1, in
  // bytes.
  Series theta = overlay("N²d²/M (Θ bound, constant 1)", "#000000", "2 3");
  for (int i = 0; i <= 40; ++i) {
    const double m_bytes = lo * std::pow(hi / lo, i / 40.0);
    theta.points.emplace_back(m_bytes, heads * n * n * d * d * b / (m_bytes / b));
  }
  Series compulsory = overlay("|Q|+|K|+|V|+|O| (compulsory)", "#777777", "8 3 2 3");
  const double q = constant(t, rows, "compulsory_bytes");
  compulsory.points = {{lo, q}, {hi, q}};
  c.series.push_back(theta);
  c.series.push_back(compulsory);
  c.x_label = "SRAM capacity M (bytes)";
  c.y_label = levels(t).size() > 1 ? "bytes moved at each level (bytes)" : "HBM bytes read + written (bytes)";
  c.x = make_axis(xs, true, true, false);
  c.y = make_axis(all_y(c.series), true, true, false);
  c.title = o.title.empty() ? "Off-chip bytes vs SRAM size" : o.title;
  c.subtitle = shape_text(t, rows, true) + "; one colour per schedule";
  return c;
}

Chart n_chart(const Table& t, const PlotOptions& o) {
  const auto rows = kept_rows(t, o);
  Chart c = bytes_chart(t, rows, "N", true);
  Series compulsory = overlay("|Q|+|K|+|V|+|O| (compulsory)", "#777777", "8 3 2 3");
  const size_t nc = t.column("N"), qc = t.column("compulsory_bytes");
  std::map<double, double> by_n;
  for (const Row* r : rows) by_n[t.number(*r, nc)] = t.number(*r, qc);
  for (const auto& [n, q] : by_n) compulsory.points.emplace_back(n, q);
  c.series.push_back(compulsory);
  c.x_label = "sequence length N (tokens)";
  c.y_label = levels(t).size() > 1 ? "bytes moved at each level (bytes)" : "HBM bytes read + written (bytes)";
  c.x = make_axis(all_x(c.series), true, false, false);
  c.y = make_axis(all_y(c.series), true, true, false);
  c.title = o.title.empty() ? "Off-chip bytes vs sequence length" : o.title;
  c.subtitle = shape_text(t, rows, false) + "; one colour per schedule";
  return c;
}

Chart roofline_chart(const Table& t, const PlotOptions& o) {
  const auto rows = kept_rows(t, o);
  const bool chip = t.has("flop_per_dram_byte");
  const std::string x_column = chip ? "flop_per_dram_byte" : "flop_per_byte";
  const double peak = constant(t, rows, "peak_flop_per_s"), bandwidth = constant(t, rows, "peak_bytes_per_s");
  const size_t xc = t.column(x_column), yc = t.column("achieved_flop_per_s");
  Chart c;
  int k = 0;
  for (const auto& [schedule, members] : group(t, rows, t.has("schedule") ? "schedule" : "")) {
    Series s;
    s.label = schedule.empty() ? "run" : schedule;
    std::tie(s.color, s.shape) = style_for(schedule, k++);
    s.line = false;
    for (const Row* r : members)
      s.points.emplace_back(positive(t, *r, xc, "log x"), positive(t, *r, yc, "log y"));
    c.series.push_back(std::move(s));
  }
  const double ridge = peak / bandwidth;
  auto xs = all_x(c.series);
  xs.push_back(ridge);
  const double lo = *std::min_element(xs.begin(), xs.end()) / 2,
               hi = *std::max_element(xs.begin(), xs.end()) * 2;
  Series roof = overlay(fmt::format("roof: min(P, B x I), ridge at {} FLOP/byte", si(ridge)), "#000000", "");
  roof.points = {{lo, bandwidth * lo}, {ridge, peak}, {hi, peak}};
  roof.width = 2.2;
  c.series.insert(c.series.begin(), roof);
  c.x_label = chip ? "arithmetic intensity I: MXU FLOPs per DRAM byte (FLOP/byte)"
                   : "arithmetic intensity I: MXU FLOPs per HBM byte (FLOP/byte)";
  c.y_label = "achieved MXU throughput (FLOP/s)";
  c.x = make_axis({lo, hi}, true, false, false);
  auto ys = all_y(c.series);
  c.y = make_axis(ys, true, false, false);
  c.title = o.title.empty() ? "Roofline" : o.title;
  c.subtitle = fmt::format("P = {} (MXU peak), B = {} ({} peak); {}", si_unit(peak, "FLOP/s"),
                           si_unit(bandwidth, "B/s"), chip ? "DRAM" : "HBM", shape_text(t, rows, true));
  return c;
}

std::string units_svg(const Table& t, const PlotOptions& o) {
  const auto rows = kept_rows(t, o);
  const size_t sc = t.column("schedule"), cc = t.column("cycles");
  const std::vector<std::string> units = {"dma", "mxu", "vpu"};
  std::vector<size_t> ucs;
  for (const auto& u : units) ucs.push_back(t.column(u + "_busy_cycles"));
  std::vector<std::string> names;
  std::vector<std::vector<double>> busy;  // per schedule, per unit
  std::vector<double> totals;
  std::map<std::string, int> seen;
  for (const Row* r : rows) {
    const std::string& name = r->cells[sc];
    if (seen.count(name))
      throw InputError(
          t.path, {r->line, r->cols[sc]},
          fmt::format("schedule {} is also at line {}: one point at a time (--where COLUMN=VALUE)", name,
                      seen[name]));
    seen[name] = r->line;
    names.push_back(name);
    busy.emplace_back();
    for (size_t u = 0; u < units.size(); ++u) {
      if (r->cells[ucs[u]].empty())
        throw InputError(t.path, {r->line, r->cols[ucs[u]]},
                         t.header[ucs[u]] + " is empty: run the sweep with --unit-cycles (one-core configs)");
      busy.back().push_back(t.number(*r, ucs[u]));
    }
    totals.push_back(t.number(*r, cc));
  }
  Chart c;
  std::vector<double> ys = totals;
  for (const auto& b : busy) ys.push_back(b[0] + b[1] + b[2]);
  c.y = make_axis(ys, false, false, true);
  c.x.lo = 0;
  c.x.hi = 1;
  c.x_label = "schedule";
  c.y_label = "busy cycles, stacked by unit (cycles)";
  c.title = o.title.empty() ? "Busy cycles by unit" : o.title;
  c.subtitle = shape_text(t, rows, true) + "; units overlap in time, so a stack can exceed the total";
  const std::vector<std::string> legend_names = {"DMA busy", "MXU busy", "VPU busy",
                                                 "total cycles of the run"};
  const Frame f = frame_for(legend_names);
  std::string svg;
  open_svg(svg, f, c);
  draw_axes(svg, f, c, names);
  const double slot = (f.right - f.left) / double(names.size()), bar = std::min(slot * 0.55, 90.0);
  for (size_t i = 0; i < names.size(); ++i) {
    const double centre = f.left + (double(i) + 0.5) * slot;
    svg += fmt::format("<g class=\"bar\" data-label=\"{}\">\n", escape(names[i]));
    double base = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      const double top = py(f, c.y, base + busy[i][u]), bottom = py(f, c.y, base);
      svg += fmt::format(
          "<rect class=\"segment\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
          "fill=\"{}\"><title>{} {}: {} cycles</title></rect>\n",
          centre - bar / 2, top, bar, bottom - top, kColors[u], names[i], units[u], busy[i][u]);
      base += busy[i][u];
    }
    const double y = py(f, c.y, totals[i]);
    svg += fmt::format(
        "<line class=\"total\" x1=\"{:.2f}\" x2=\"{:.2f}\" y1=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#000\" "
        "stroke-width=\"3\"/>\n</g>\n",
        centre - bar / 2 - 8, centre + bar / 2 + 8, y, y);
  }
  std::vector<LegendEntry> legend;
  for (size_t u = 0; u < units.size(); ++u)
    legend.push_back({legend_names[u], kColors[u], "", 0, false, false, true});
  legend.push_back({legend_names[3], "#000000", "", 0, true, false, false});
  draw_legend(svg, f, legend);
  return svg + "</svg>\n";
}

// A named plot's columns, checked up front: a sweep's CSV written before they existed lacks them, and
// rerunning its sweep command rebuilds OUT.csv from OUT.jsonl without running a point.
void require(const Table& t, const std::string& kind, const std::vector<std::string>& columns) {
  for (const auto& c : columns)
    if (!t.has(c))
      throw InputError(
          t.path, {1, 1},
          fmt::format("--kind {} needs a column '{}'; a sweep's CSV from before it existed gets it "
                      "when the same sweep command runs again (nothing is rerun)",
                      kind, c));
}

}  // namespace

void plot_csv(const PlotOptions& o) {
  if (o.output.empty()) throw InputError("attnsim plot", {}, "no output: -o OUT.svg");
  const bool columns_given = o.kind == "lines" || o.kind == "scatter";
  if (!columns_given && (!o.x.empty() || !o.y.empty() || !o.series.empty()))
    throw InputError("attnsim plot", {},
                     "--kind " + o.kind +
                         " chooses its own columns: --x, --y and --series are for --kind lines and scatter");
  const Table t = read_csv(o.csv_path);
  if (o.kind == "sram" || o.kind == "n")
    require(t, o.kind, {"N", "d", "heads", "batch", "element_bytes", "compulsory_bytes"});
  if (o.kind == "roofline")
    require(t, o.kind, {"achieved_flop_per_s", "peak_flop_per_s", "peak_bytes_per_s"});
  std::string svg;
  if (o.kind == "lines")
    svg = render_lines(lines_chart(t, o));
  else if (o.kind == "scatter")
    svg = render_lines(scatter_chart(t, o));
  else if (o.kind == "sram")
    svg = render_lines(sram_chart(t, o));
  else if (o.kind == "n")
    svg = render_lines(n_chart(t, o));
  else if (o.kind == "roofline")
    svg = render_lines(roofline_chart(t, o));
  else if (o.kind == "units")
    svg = units_svg(t, o);
  else
    throw InputError("attnsim plot", {},
                     "unknown --kind '" + o.kind + "'" +
                         did_you_mean(o.kind, {"lines", "scatter", "sram", "n", "roofline", "units"}) +
                         " (lines, scatter, sram, n, roofline, units)");
  write_file_atomically(o.output, svg);
}

}  // namespace attnsim
