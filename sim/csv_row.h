// One row of a measurements CSV, read by column name; a bad cell throws InputError naming the file, the
// line and the column.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "isa/diagnostics.h"

namespace attnsim {

// One line's cells; a CRLF file's '\r' (a spreadsheet's or Python's csv module's default) is not part of
// the last cell, whose column would otherwise be unknown.
inline std::vector<std::string> split_csv(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> out;
  std::string cell;
  std::stringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

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
  // A number from a column the file may lack or leave empty (an optional metric): nullopt then.
  std::optional<double> optional_number(const std::string& name) const {
    if (!has(name) || text(name).empty()) return std::nullopt;
    return number(name);
  }
  int64_t size(const std::string& name) const {
    const double value = number(name);
    if (value < 1 || value > 1e9 || value != std::floor(value))
      fail(fmt::format("column {}: must be a whole number from 1 to 10^9, found '{}'", name, text(name)));
    return static_cast<int64_t>(value);
  }
  // A '/'-separated list of numbers ("31040/67424/23232": one per kernel launch); none for an empty cell,
  // nullopt when an item is not a finite number.
  static std::optional<std::vector<double>> parse_numbers(const std::string& cell) {
    std::vector<double> out;
    for (size_t from = 0; !cell.empty() && from <= cell.size();) {
      const size_t to = std::min(cell.find('/', from), cell.size());
      const std::string item = cell.substr(from, to - from);
      try {
        size_t used = 0;
        out.push_back(std::stod(item, &used));
        if (used != item.size() || !std::isfinite(out.back())) return std::nullopt;
      } catch (const std::exception&) {
        return std::nullopt;
      }
      from = to + 1;
    }
    return out;
  }
  // The same list, every value > 0; a bad cell fails naming the column.
  std::vector<double> numbers(const std::string& name) const {
    const std::optional<std::vector<double>> values = parse_numbers(text(name));
    if (!values)
      fail(fmt::format("column {}: expected numbers separated by '/', found '{}'", name, text(name)));
    for (double value : *values)
      if (value <= 0) fail(fmt::format("column {}: every value must be > 0, found '{}'", name, text(name)));
    return *values;
  }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(path, {line, 1}, message); }
};

}  // namespace attnsim
