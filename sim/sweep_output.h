// The sweep's CSV: derived from the JSON Lines records (the record is the source of truth, so a resumed sweep
// rebuilds OUT.csv from OUT.jsonl and no row is lost or doubled by an interruption between the two).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnsim {

// The figure columns after `schedule,status`: whole-chip configs name each memory level.
std::vector<std::string> figure_columns(bool chip);
std::string csv_header(const std::vector<std::string>& keys, bool chip);
// One line per schedule of the record's compare output, or one line with the reason for a failed point.
std::string csv_rows(const nlohmann::json& record, const std::vector<std::string>& keys, bool chip);

}  // namespace attnsim
