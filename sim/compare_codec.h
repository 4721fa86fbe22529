// A compare row in binary (CBOR, which keeps every double exactly, infinities and NaN included), for the
// schedules that `compare --jobs` runs in child processes and hands back to the parent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/compare.h"

namespace attnsim {

// What a child hands back: its row, or the error that stopped it (an InputError keeps its parts, so the
// parent reports it exactly as a run in one process would).
struct RowOutcome {
  std::optional<CompareRow> row;
  bool input_error = false;
  std::string file, message;  // message: InputError's own (or what() of another exception)
  int line = 0, col = 0;
};

std::vector<uint8_t> encode_outcome(const RowOutcome& outcome);
RowOutcome decode_outcome(const std::vector<uint8_t>& bytes);

}  // namespace attnsim
