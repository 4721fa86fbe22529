// `attnsim run --table`: the step table (Step | Instruction | Issue | Done | R0 | R1 | ...) laid out for a
// terminal. Symbolic cells can be hundreds of characters long, so register columns share the width that the
// fixed columns leave, and a longer cell is either elided in the middle (its start and its end stay
// readable: the end of an expression is the term the last instruction added) or wrapped onto more lines.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace attnsim {

struct TableLayout {
  size_t width = 160;        // terminal columns for the whole table
  bool wrap = false;         // wrap long cells onto more lines instead of eliding their middle
  size_t fixed_columns = 4;  // leading columns never shortened (Step, Instruction, Issue, Done)
};

// Header row first, then one row per step.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& table,
                 const TableLayout& layout = {});

// `text` cut to `width` terminal columns by replacing its middle with "…" (unchanged if it fits). A text
// that already ends in "…" (cut by the renderer) keeps only its start.
std::string elide_middle(const std::string& text, size_t width);
// `text` broken into lines of at most `width` columns, at spaces where possible.
std::vector<std::string> wrap_text(const std::string& text, size_t width);
// Column widths: the first `fixed` columns keep their natural width; the others share what is left of
// `total` (separators included), each getting at most its natural width and at least a readable minimum.
std::vector<size_t> fit_widths(const std::vector<size_t>& natural, size_t fixed, size_t total);

}  // namespace attnsim
