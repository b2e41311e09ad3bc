// Human-readable quantities, for tables only (JSON keeps raw numbers).
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace gpuplan::cli {

// 8030261248 → "8,030,261,248"
inline std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

// Binary units, as nvidia-smi and PyTorch report memory.
inline std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }
// Both, for a message comparing a size with one the user typed in either unit: "34.49 GiB (37.04 GB)".
inline std::string gib_and_gb(double bytes) { return gib(bytes) + fmt::format(" ({:.2f} GB)", bytes / 1e9); }

// 8.03e9 → "8.03B"
inline std::string short_count(double v) {
  if (v >= 1e12) return fmt::format("{:.2f}T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.2f}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}K", v / 1e3);
  return fmt::format("{:.0f}", v);
}

}  // namespace gpuplan::cli
