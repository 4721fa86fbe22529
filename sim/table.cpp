#include "sim/table.h"

#include <algorithm>

#include "models/common/symbolic.h"

namespace attnsim {

namespace {

constexpr size_t kMinColumn = 10;  // narrower than this, an elided expression says nothing
const std::string kEllipsis = "…";
const std::string kSeparator = " | ";

size_t width_of(const std::string& s) {
  return symbolic::display_width(s);
}

// Byte offset of code point `n` (or the end): widths count code points, so cuts must fall between them.
size_t byte_of(const std::string& s, size_t n) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == n) return i;
  return s.size();
}

std::string head(const std::string& s, size_t n) {
  return s.substr(0, byte_of(s, n));
}

std::string tail(const std::string& s, size_t n) {
  const size_t w = width_of(s);
  return n >= w ? s : s.substr(byte_of(s, w - n));
}

std::string pad(const std::string& s, size_t width) {
  return s + std::string(width > width_of(s) ? width - width_of(s) : 0, ' ');
}

}  // namespace

std::string elide_middle(const std::string& text, size_t width) {
  if (width_of(text) <= width) return text;
  if (width < 2) return head(text, width);
  const bool already_cut = text.size() >= kEllipsis.size() &&
                           text.compare(text.size() - kEllipsis.size(), kEllipsis.size(), kEllipsis) == 0;
  if (already_cut) return head(text, width - 1) + kEllipsis;
  const size_t keep = width - 1;
  return head(text, keep - keep / 2) + kEllipsis + tail(text, keep / 2);
}

std::vector<std::string> wrap_text(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string rest = text;
  width = std::max<size_t>(width, 1);
  while (width_of(rest) > width) {
    std::string first = head(rest, width + 1);  // one more, to see whether a space ends the line
    size_t space = first.rfind(' ');
    size_t cut = space != std::string::npos && space > 0 ? space : byte_of(rest, width);
    lines.push_back(rest.substr(0, cut));
    rest = rest.substr(cut);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
  }
  lines.push_back(rest);
  return lines;
}

std::vector<size_t> fit_widths(const std::vector<size_t>& natural, size_t fixed, size_t total) {
  std::vector<size_t> widths = natural;
  size_t used = natural.empty() ? 0 : kSeparator.size() * (natural.size() - 1);
  for (size_t c = 0; c < std::min(fixed, natural.size()); ++c) used += natural[c];
  size_t left = total > used ? total - used : 0;
  std::vector<size_t> open;
  for (size_t c = fixed; c < natural.size(); ++c) open.push_back(c);
  // Water-filling: columns narrower than an equal share keep their width and give the rest to the others.
  bool settled = false;
  while (!open.empty() && !settled) {
    settled = true;
    const size_t share = left / open.size();
    for (size_t k = 0; k < open.size(); ++k) {
      if (natural[open[k]] > share) continue;
      left -= natural[open[k]];
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(k));
      settled = false;
      break;
    }
  }
  for (size_t c : open) widths[c] = std::max(kMinColumn, left / open.size());
  return widths;
}

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& table,
                 const TableLayout& layout) {
  if (table.empty()) return;
  std::vector<size_t> natural(table[0].size(), 0);
  for (const auto& row : table)
    for (size_t c = 0; c < row.size() && c < natural.size(); ++c)
      natural[c] = std::max(natural[c], width_of(row[c]));
  const std::vector<size_t> widths = fit_widths(natural, layout.fixed_columns, layout.width);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c)
      text += (c ? kSeparator : "") + (c + 1 < cells.size() ? pad(cells[c], widths[c]) : cells[c]);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  auto row_out = [&](const std::vector<std::string>& row) {
    std::vector<std::vector<std::string>> parts(row.size());
    size_t height = 1;
    for (size_t c = 0; c < row.size(); ++c) {
      parts[c] = layout.wrap ? wrap_text(row[c], widths[c])
                             : std::vector<std::string>{elide_middle(row[c], widths[c])};
      height = std::max(height, parts[c].size());
    }
    for (size_t l = 0; l < height; ++l) {
      std::vector<std::string> cells;
      for (const auto& p : parts) cells.push_back(l < p.size() ? p[l] : "");
      line(cells);
    }
  };
  row_out(table[0]);
  std::string rule;
  for (size_t c = 0; c < widths.size(); ++c) rule += (c ? "-|-" : "") + std::string(widths[c], '-');
  out << rule << "\n";
  for (size_t r = 1; r < table.size(); ++r) row_out(table[r]);
}

}  // namespace attnsim
