// `attnsim plot`: SVG charts of a sweep's CSV (or any CSV with a header), written by the program itself
// (docs/plots.md says why not gnuplot). Every chart carries its title, axis labels with units, a legend and,
// where asked or where a named plot's data spans decades, log axes with decade ticks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnsim {

struct PlotOptions {
  std::string csv_path;
  std::string output;  // the .svg to write; written whole or not at all
  // lines: --x, --y, --series as given. The named plots of issue 9 choose their columns themselves:
  // sram (bytes at each level vs SRAM size, with N^2 d^2 / M and |Q|+|K|+|V|+|O|), n (bytes vs N),
  // roofline (achieved FLOP/s vs FLOP per byte under the preset's roof), units (busy cycles by unit,
  // stacked).
  std::string kind = "lines";
  std::string x, series, title;
  std::vector<std::string> y;
  std::vector<std::pair<std::string, std::string>> where;  // keep only rows with these cells
  bool log_x = false, log_y = false;
};

// Reads the CSV, checks every cell it will draw and writes the SVG. Throws InputError (file:line:col) for a
// missing column, a value that is not a number, a log axis given a value <= 0, or nothing left to draw; no
// file is written then.
void plot_csv(const PlotOptions& options);

}  // namespace attnsim
