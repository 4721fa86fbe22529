// "Did you mean" for names a user typed: the closest candidate by edit distance, when it is close enough to
// be the likely intent (a typo, a missing underscore, a wrong case) rather than a different word.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

// Levenshtein distance, case-insensitive: MACZ -> MAC_Z is 1, mac_z -> MAC_Z is 0.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

// Separators are the commonest slip (MACZ for MAC_Z, loadlatency for load_latency): compare without them
// first, and count them only to break ties.
inline std::string without_separators(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += c;
  return out;
}

// The closest candidate within 1 edit for short words and 2 for longer ones, or "" when none is that close
// (ties go to the first candidate).
inline std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = word.size() <= 3 ? 1 : 2;
  const std::string bare = without_separators(word);
  std::string best;
  size_t best_score = SIZE_MAX;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(bare, without_separators(candidate));
    const size_t raw = edit_distance(word, candidate);
    if (std::min(d, raw) > limit || candidate == word) continue;
    const size_t score = d * 64 + std::min<size_t>(raw, 63);
    if (score < best_score) best = candidate, best_score = score;
  }
  return best;
}

// "; did you mean 'X'?" or "", to append to an error message.
inline std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(word, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

}  // namespace attnsim
