// Names people type: ids compared without case or punctuation ("H100 SXM" is h100-sxm, "Llama-3.1-8B" is
// llama-3.1-8b), and the known names closest to one that matches nothing, for "did you mean …".
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuplan {

// Lower-case letters, digits and dots ("3.1" is a version, not punctuation): "H100 SXM", "h100_sxm" → "h100sxm".
inline std::string name_key(std::string_view s) {
  std::string k;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') k += char(c - 'A' + 'a');
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.') k += c;
  }
  return k;
}

inline bool same_name(std::string_view a, std::string_view b) { return name_key(a) == name_key(b); }

// Edits (insert, delete, substitute, swap two neighbours) from a to b: the optimal-string-alignment distance, so
// "trian" is one edit from "train".
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// A candidate: the name to suggest and the spellings it answers to (its id, aliases, …).
struct NameCandidate {
  std::string name;
  std::vector<std::string> spellings;
};

// The candidates worth suggesting for `typed`, closest first, at most `limit`: those it begins (≥ 3 characters:
// "mi300" → mi300x), as close as one edit, and those within a third of its length in edits (one to three).
inline std::vector<std::string> closest_names(std::string_view typed, const std::vector<NameCandidate>& candidates,
                                              std::size_t limit = 4) {
  const std::string t = name_key(typed);
  if (t.empty()) return {};
  const std::size_t within = std::clamp<std::size_t>(t.size() / 3, 1, 3);
  std::vector<std::pair<std::size_t, std::string>> found;
  for (const auto& c : candidates) {
    std::size_t best = within + 1;
    for (const auto& s : c.spellings) {
      const std::string k = name_key(s);
      const bool begins = t.size() >= 3 && k.size() > t.size() && k.compare(0, t.size(), t) == 0;
      best = std::min(best, begins ? std::size_t{1} : edit_distance(t, k));
    }
    if (best <= within) found.emplace_back(best, c.name);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (const auto& [d, n] : found)
    if (names.size() < limit && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

// "did you mean a, b or c?" for the closest candidates, or "" when none is close.
inline std::string did_you_mean(std::string_view typed, const std::vector<NameCandidate>& candidates) {
  const auto names = closest_names(typed, candidates);
  if (names.empty()) return "";
  std::string s = "did you mean ";
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s + "?";
}

}  // namespace gpuplan
