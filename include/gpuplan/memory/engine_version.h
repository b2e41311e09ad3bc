// An engine's release as users name it (`--engine-version`): X.Y[.Z] for vLLM, SGLang and Ollama, a build number
// (b4343 or 4343) for llama.cpp. Each engine module keeps a table of its defaults by the release they start from;
// a version picks the last row at or below it.
#pragma once
#include <array>
#include <charconv>
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "../error.h"

namespace gpuplan {

struct EngineVersion {
  int major = 0, minor = 0, patch = 0;  // llama.cpp: the build number in major
  auto operator<=>(const EngineVersion&) const = default;
  std::string str() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  std::string build() const { return "b" + std::to_string(major); }
};

// "0.10", "0.8.5", "0.8.5.post1" (the post-release suffix does not change defaults), "0.6.5.dev" / "0.6.5.dev123+g…"
// (a development build toward 0.6.5, as `vllm --version` prints one installed from main: taken as that release, whose
// defaults it already carries in the logs collected); builds: "b4343" or "4343".
inline EngineVersion parse_engine_version(std::string_view text, bool build_number) {
  const std::string shown(text);
  auto number = [&](std::string_view& s, int& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || end == s.data() || out < 0 || out > 1'000'000) return false;
    s.remove_prefix(std::size_t(end - s.data()));
    return true;
  };
  EngineVersion v;
  std::string_view s = text;
  if (build_number) {
    if (!s.empty() && (s.front() == 'b' || s.front() == 'B')) s.remove_prefix(1);
    if (!number(s, v.major) || !s.empty())
      throw InputError("--engine-version: expected a llama.cpp build number such as b4343, got \"" + shown + "\"");
    return v;
  }
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  const bool ok = number(s, v.major) && !s.empty() && s.front() == '.' && (s.remove_prefix(1), number(s, v.minor)) &&
                  (s.empty() || s.front() != '.' || (s.remove_prefix(1), number(s, v.patch)));
  if (!ok || (!s.empty() && s.substr(0, 5) != ".post" && s.substr(0, 4) != ".dev" && s.front() != '+' && s.front() != 'r'))
    throw InputError("--engine-version: expected X.Y or X.Y.Z, got \"" + shown + "\"");
  return v;
}

// The last row of a release table (sorted by `from`) that applies to `v`; nullptr when `v` precedes them all.
template <class Row, std::size_t N>
const Row* release_row(const std::array<Row, N>& rows, EngineVersion v) {
  const Row* found = nullptr;
  for (const Row& r : rows)
    if (r.from <= v) found = &r;
  return found;
}

// The row that applies to `v` (default: the newest modelled, the last row); a release before the first row is a
// usage error naming the engine.
template <class Row, std::size_t N>
const Row& pick_release(const std::array<Row, N>& rows, const std::optional<EngineVersion>& v, const char* engine,
                        bool builds = false) {
  const Row* r = release_row(rows, v.value_or(rows.back().from));
  const EngineVersion& first = rows.front().from;
  if (!r) throw InputError(std::string("--engine-version: ") + engine + (builds ? " builds before " : " releases before ") +
                           (builds ? first.build() : first.str()) + " are not modelled");
  return *r;
}

}  // namespace gpuplan
