// One row of a measurements CSV, read by column name; a bad cell throws InputError naming the file, the
// line and the column.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "isa/diagnostics.h"

namespace attnsim {

struct CsvRow {
  const std::map<std::string, size_t>& column;
  const std::vector<std::string>& cells;
  const std::string& path;
  int line = 0;

  bool has(const std::string& name) const { return column.count(name) != 0; }
  const std::string& text(const std::string& name) const { return cells[column.at(name)]; }
  double number(const std::string& name) const {
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(text(name), &used);
      if (used != text(name).size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      fail(fmt::format("column {}: not a number: '{}'", name, text(name)));
    }
    if (!std::isfinite(value) || value < 0)
      fail(fmt::format("column {}: must be finite and >= 0, found '{}'", name, text(name)));
    return value;
  }
  int64_t size(const std::string& name) const {
    const double value = number(name);
    if (value < 1 || value > 1e9 || value != std::floor(value))
      fail(fmt::format("column {}: must be a whole number from 1 to 10^9, found '{}'", name, text(name)));
    return static_cast<int64_t>(value);
  }
  // A '/'-separated list of numbers > 0 ("31040/67424/23232": one per kernel launch); empty cell: none.
  std::vector<double> numbers(const std::string& name) const {
    std::vector<double> out;
    const std::string& cell = text(name);
    size_t from = 0;
    while (!cell.empty() && from <= cell.size()) {
      const size_t to = std::min(cell.find('/', from), cell.size());
      const std::string item = cell.substr(from, to - from);
      double value = 0;
      try {
        size_t used = 0;
        value = std::stod(item, &used);
        if (used != item.size()) throw std::invalid_argument("trailing text");
      } catch (const std::exception&) {
        fail(fmt::format("column {}: expected numbers separated by '/', found '{}'", name, cell));
      }
      if (!std::isfinite(value) || value <= 0)
        fail(fmt::format("column {}: every value must be finite and > 0, found '{}'", name, item));
      out.push_back(value);
      from = to + 1;
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(path, {line, 1}, message); }
};

}  // namespace attnsim
