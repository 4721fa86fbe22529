// One CSV line's cells for the tests that read CSV files or command output: RFC 4180 quoting, a quoted
// cell may hold commas and doubled quotes (no line breaks inside a cell).
#pragma once

#include <string>
#include <vector>

namespace attnsim::testing {

inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
      cells.back() += '"', ++i;
    else if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      cells.emplace_back();
    else
      cells.back() += c;
  }
  return cells;
}

}  // namespace attnsim::testing
