// Human sizes in one place: "7B" parameters, "80GB"/"80GiB" bytes, "2T" tokens.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "error.h"
#include "units.h"

namespace gpuplan {

namespace detail {

inline double parse_number_prefix(std::string_view text, std::size_t& used) {
  std::string s(text);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.'))
    throw InputError("\"" + s + "\": expected a positive number");
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '_' )) ++i;
  // Scientific notation: 1e21, 2.5e9.
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E') && i + 1 < s.size() &&
      (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '+' || s[i + 1] == '-')) {
    ++i;
    if (s[i] == '+' || s[i] == '-') ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  std::string num;
  for (std::size_t k = 0; k < i; ++k)
    if (s[k] != '_') num += s[k];
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(num, &pos);
  } catch (...) {
    throw InputError("\"" + s + "\": expected a positive number");
  }
  if (pos != num.size() || !std::isfinite(v)) throw InputError("\"" + s + "\": expected a positive number");
  used = i;
  return v;
}

// Decimal count with an optional K, M, B (or G) or T suffix.
inline double parse_count(std::string_view text, const char* what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = parse_number_prefix(text, used);
  } catch (const InputError&) {
    throw InputError("\"" + std::string(text) + "\": expected a number with an optional K, M, B or T suffix (" +
                     what + ")");
  }
  std::string suffix(text.substr(used));
  double mult = 1;
  if (suffix.empty()) mult = 1;
  else if (suffix == "K" || suffix == "k") mult = 1e3;
  else if (suffix == "M" || suffix == "m") mult = 1e6;
  else if (suffix == "B" || suffix == "b" || suffix == "G" || suffix == "g") mult = 1e9;
  else if (suffix == "T" || suffix == "t") mult = 1e12;
  else
    throw InputError("\"" + std::string(text) + "\": expected a number with an optional K, M, B or T suffix (" +
                     what + ")");
  double r = v * mult;
  if (!(r > 0) || !std::isfinite(r))
    throw InputError("\"" + std::string(text) + "\": must be greater than zero (" + what + ")");
  return r;
}

}  // namespace detail

// "7B" → 7e9 parameters; "1.5B", "125M", "405e9". Limit 1e15 so every downstream product stays finite.
inline Params parse_params(std::string_view text) {
  double v = detail::parse_count(text, "parameters");
  if (v > 1e15) throw InputError("\"" + std::string(text) + "\": more than 1e15 parameters is not supported");
  if (v < 1e3) throw InputError("\"" + std::string(text) + "\": fewer than 1K parameters is not a model");
  return Params(static_cast<std::int64_t>(std::llround(v)));
}

// "2T" → 2e12 tokens.
inline Tokens parse_tokens(std::string_view text) {
  double v = detail::parse_count(text, "tokens");
  if (v > 1e18) throw InputError("\"" + std::string(text) + "\": more than 1e18 tokens is not supported");
  return Tokens(static_cast<std::int64_t>(std::llround(v)));
}

// "1e24", "3.14e23" FLOPs (K/M/B/T suffixes allowed).
inline Flops parse_flops(std::string_view text) {
  const double v = detail::parse_count(text, "FLOPs");
  if (v > 1e35) throw InputError("\"" + std::string(text) + "\": more than 1e35 FLOPs is not supported");
  return Flops(v);
}

// "$250K", "1.5M", "40000" US dollars.
inline Usd parse_usd(std::string_view text) {
  if (!text.empty() && text.front() == '$') text.remove_prefix(1);
  const double v = detail::parse_count(text, "US dollars");
  if (v > 1e15) throw InputError("\"" + std::string(text) + "\": more than $1e15 is not supported");
  return Usd(v);
}

// "80GB" = 80e9 bytes, "80GiB" = 80·2^30; bare numbers are bytes. Suffixes: B, KB/KiB, MB/MiB, GB/GiB, TB/TiB.
inline Bytes parse_bytes(std::string_view text) {
  std::size_t used = 0;
  double v = 0;
  const std::string s(text);
  const std::string expect = "\"" + s + "\": expected a size such as 80GB, 24GiB or 512MiB";
  try {
    v = detail::parse_number_prefix(text, used);
  } catch (const InputError&) {
    throw InputError(expect);
  }
  std::string suffix(text.substr(used));
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "KB" || suffix == "K") mult = 1e3;
  else if (suffix == "MB" || suffix == "M") mult = 1e6;
  else if (suffix == "GB" || suffix == "G") mult = 1e9;
  else if (suffix == "TB" || suffix == "T") mult = 1e12;
  else if (suffix == "KIB") mult = 1024.0;
  else if (suffix == "MIB") mult = 1048576.0;
  else if (suffix == "GIB") mult = 1073741824.0;
  else if (suffix == "TIB") mult = 1099511627776.0;
  else throw InputError(expect);
  double r = v * mult;
  if (!(r > 0) || !std::isfinite(r) || r > 1e18) throw InputError(expect);
  return Bytes(r);
}

// "360GB/s", "1.8TB/s", "546e9" bytes per second: a size (parse_bytes) with an optional "/s".
inline ByteRate parse_byte_rate(std::string_view text) {
  std::string_view size = text;
  if (size.size() > 2 && (size.substr(size.size() - 2) == "/s" || size.substr(size.size() - 2) == "/S"))
    size.remove_suffix(2);
  try {
    return ByteRate(parse_bytes(size).in(unit::bytes));
  } catch (const InputError&) {
    throw InputError("\"" + std::string(text) + "\": expected a bandwidth such as 360GB/s or 1.8TB/s");
  }
}

namespace detail {
// A number and the suffix after it; any malformed number is reported as `expect`.
inline std::pair<double, std::string> number_and_suffix(std::string_view text, const std::string& expect) {
  std::size_t used = 0;
  try {
    const double v = parse_number_prefix(text, used);
    return {v, std::string(text.substr(used))};
  } catch (const InputError&) {
    throw InputError(expect);
  }
}
}  // namespace detail

// "30d", "12h", "90min", "45s", "50ms"; a bare number is seconds.
inline Seconds parse_duration(std::string_view text) {
  const std::string s(text);
  const std::string expect = "\"" + s + "\": expected a duration such as 30d, 12h, 90min, 45s or 50ms";
  const auto [v, suffix] = detail::number_and_suffix(text, expect);
  double mult = 0;
  if (suffix.empty() || suffix == "s") mult = 1;
  else if (suffix == "ms") mult = 1e-3;
  else if (suffix == "min" || suffix == "m") mult = 60;
  else if (suffix == "h") mult = 3600;
  else if (suffix == "d") mult = 86400;
  else if (suffix == "w") mult = 7 * 86400;
  else throw InputError(expect);
  const double r = v * mult;
  if (!(r > 0) || !std::isfinite(r) || r > 1e11) throw InputError(expect);
  return Seconds(r);
}

// "10%" = 0.10; a bare number is a fraction ("0.1").
inline double parse_fraction(std::string_view text) {
  const std::string s(text);
  const std::string expect = "\"" + s + "\": expected a percentage such as 10% (or a fraction such as 0.1)";
  auto [v, suffix] = detail::number_and_suffix(text, expect);
  if (suffix == "%") v /= 100;
  else if (!suffix.empty()) throw InputError(expect);
  if (!(v >= 0 && v < 1)) throw InputError(expect);
  return v;
}

// A token length or count as people write it: a whole number, "4k" = 4,096 or "128k" = 131,072 (k and M are
// binary, the way context lengths are named), `min` … 1e9. `expect` is the error for anything else.
inline std::int64_t parse_length(std::string_view text, const std::string& expect, std::int64_t min = 1) {
  const auto [v, suffix] = detail::number_and_suffix(text, expect);
  double mult = 0;
  if (suffix.empty()) mult = 1;
  else if (suffix == "k" || suffix == "K") mult = 1024;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024.0;
  else throw InputError(expect);
  const double r = v * mult;
  if (!(r >= double(min) && r <= 1e9) || r != std::floor(r))
    throw InputError(expect + " (whole numbers from " + std::to_string(min) + " to 1e9)");
  return static_cast<std::int64_t>(r);
}

// The values of a swept flag (gpuplan sweep): a comma-separated list of items, each a whole number ("8", "4k"),
// a doubling range "A..B" (A, 2A, 4A, … and B itself when the doubling skips it) or a stepped range "A..B+S"
// (A, A+S, … ≤ B). k and M are binary (4k = 4,096; 128k = 131,072, the way context lengths are named).
// Values are sorted and deduplicated; at most max_sweep_points of them, each 1 … 1e9.
inline constexpr std::size_t max_sweep_points = 256;  // a chart stays readable, a sweep stays under a second

inline std::vector<std::int64_t> parse_sweep(std::string_view text, const std::string& flag) {
  const std::string expect = flag + " \"" + std::string(text) +
                             "\": expected values such as 8, 1k,2k,4k, 1..64 (doubling) or 512..4k+512 (stepped)";
  auto whole = [&](std::string_view t) { return parse_length(t, expect); };
  std::vector<std::int64_t> values;
  auto add = [&](std::int64_t v) {
    if (values.size() >= max_sweep_points * 4) throw InputError(flag + ": more than " +
                                                                std::to_string(max_sweep_points) + " values");
    values.push_back(v);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) throw InputError(expect);
    const std::size_t dots = item.find("..");
    if (dots == std::string_view::npos) {
      add(whole(item));
      continue;
    }
    std::string_view hi_text = item.substr(dots + 2);
    const std::size_t plus = hi_text.find('+');
    const std::int64_t lo = whole(item.substr(0, dots));
    const std::int64_t hi = whole(hi_text.substr(0, plus));
    if (hi < lo) throw InputError(expect + " (a range runs from low to high)");
    if (plus == std::string_view::npos) {
      for (std::int64_t v = lo; v < hi; v *= 2) add(v);
      add(hi);
    } else {
      const std::int64_t step = whole(hi_text.substr(plus + 1));
      for (std::int64_t v = lo; v <= hi; v += step) add(v);
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.size() > max_sweep_points)
    throw InputError(flag + ": " + std::to_string(values.size()) + " values, at most " +
                     std::to_string(max_sweep_points));
  return values;
}

}  // namespace gpuplan
