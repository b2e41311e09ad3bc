// Element types and their sizes in bytes.
#pragma once
#include <array>
#include <string>
#include <string_view>

#include "error.h"

namespace gpuplan {

enum class Dtype { fp32, bf16, fp16, fp8, int8, int4 };

struct DtypeInfo {
  Dtype value;
  std::string_view name;
  double bytes;  // bytes per element, before any block-scale overhead
};

inline constexpr std::array<DtypeInfo, 6> dtype_table{{
    {Dtype::fp32, "fp32", 4.0},
    {Dtype::bf16, "bf16", 2.0},
    {Dtype::fp16, "fp16", 2.0},
    {Dtype::fp8, "fp8", 1.0},  // e4m3 / e5m2
    {Dtype::int8, "int8", 1.0},
    {Dtype::int4, "int4", 0.5},
}};

constexpr double bytes_of(Dtype d) {
  for (const auto& e : dtype_table)
    if (e.value == d) return e.bytes;
  return 0;
}

inline std::string_view name_of(Dtype d) {
  for (const auto& e : dtype_table)
    if (e.value == d) return e.name;
  return "?";
}

}  // namespace gpuplan
