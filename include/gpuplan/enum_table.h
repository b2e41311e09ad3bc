// One table per enum maps value <-> spelling; CLI choices, JSON and error messages all read it. Also the one
// spelling of a number in the library's own sentences (assumption lines).
#pragma once
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "error.h"
#include "names.h"

namespace gpuplan {

template <class E>
struct Spelling {
  E value;
  std::string_view name;
};

template <class E>
std::string choices_of(std::span<const Spelling<E>> table) {
  std::string s;
  for (const auto& e : table) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

// The spelling as written, else ignoring case and punctuation ("vLLM", "llamacpp"); else an error naming the
// closest spellings and all of them.
template <class E>
E parse_enum(std::span<const Spelling<E>> table, std::string_view text, std::string_view what) {
  for (const auto& e : table)
    if (e.name == text) return e.value;
  for (const auto& e : table)
    if (same_name(e.name, text) && !name_key(text).empty()) return e.value;
  std::vector<NameCandidate> known;
  for (const auto& e : table) known.push_back({std::string(e.name), {std::string(e.name)}});
  const std::string hint = did_you_mean(text, known);
  throw InputError("unknown " + std::string(what) + " \"" + std::string(text) + "\"" + (hint.empty() ? "" : ": " + hint) +
                   " (expected: " + choices_of(table) + ")");
}

template <class E>
std::string_view spell(std::span<const Spelling<E>> table, E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

namespace detail {
// x with `digits` decimals, for assumption lines.
inline std::string decimal(double x, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}
}  // namespace detail

}  // namespace gpuplan
