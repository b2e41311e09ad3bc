// safetensors headers: every tensor's name, dtype, shape and byte range, read from the bytes before the data.
// Format (huggingface/safetensors, README "Format"): an 8-byte little-endian header length N, then N bytes of
// JSON {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [begin, end]}}, then the data.
// The header is hostile until parsed: its length is bounded before anything is allocated, every tensor's
// byte range must match its shape and dtype, and ranges must lie inside the data that follows.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "error.h"

namespace gpuplan::safetensors {

// The reference implementation refuses headers over 100 MB (safetensors/src/tensor.rs, MAX_HEADER_SIZE); the
// largest real ones (DeepSeek-V3 shards) are a few hundred KB.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

struct Tensor {
  std::string name;
  std::string dtype;                // as stored: BF16, F16, F32, F8_E4M3, I8, U8, I32, ...
  std::vector<std::int64_t> shape;
  std::int64_t bytes = 0;           // data_offsets end − begin
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

struct Header {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;  // __metadata__ (e.g. "format": "pt")
  std::int64_t data_bytes = 0;                  // the largest end offset: bytes of data after the header
};

// Bits per element of each dtype the format defines (safetensors/src/tensor.rs, Dtype::bitsize); 0 if unknown.
inline int dtype_bits(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64" || d == "C64") return 64;
  if (d == "F32" || d == "I32" || d == "U32") return 32;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 16;
  if (d == "F8_E4M3" || d == "F8_E5M2" || d == "F8_E8M0" || d == "I8" || d == "U8" || d == "BOOL") return 8;
  if (d == "F6_E2M3" || d == "F6_E3M2") return 6;
  if (d == "F4") return 4;
  return 0;
}

// The header's length from the file's first 8 bytes.
inline std::uint64_t header_length(std::string_view first8, const std::string& where) {
  if (first8.size() < 8) throw DataError(where + ": not a safetensors file (shorter than 8 bytes)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(first8[static_cast<std::size_t>(i)]);
  if (n < 2) throw DataError(where + ": safetensors header length " + std::to_string(n) + " is too small");
  if (n > max_header_bytes)
    throw DataError(where + ": safetensors header length " + std::to_string(n) + " bytes is over the 100 MB limit");
  return n;
}

namespace detail {

inline Tensor parse_tensor(const std::string& name, const nlohmann::json& t, const std::string& where) {
  const std::string at = where + ": tensor \"" + name + "\"";
  if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
    throw DataError(at + " needs dtype, shape and data_offsets");
  Tensor r;
  r.name = name;
  if (!t["dtype"].is_string()) throw DataError(at + ": dtype must be a string");
  r.dtype = t["dtype"].get<std::string>();
  const int bits = dtype_bits(r.dtype);
  if (bits == 0) throw DataError(at + ": unknown dtype \"" + r.dtype + "\"");
  const auto& shape = t["shape"];
  if (!shape.is_array() || shape.size() > 16) throw DataError(at + ": shape must be a list of at most 16 sizes");
  std::uint64_t elements = 1;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t(1) << 40))
      throw DataError(at + ": shape entries must be sizes below 2^40");
    const std::uint64_t v = d.get<std::uint64_t>();
    if (v != 0 && elements > (std::uint64_t(1) << 50) / v) throw DataError(at + ": more than 2^50 elements");
    elements *= v;
    r.shape.push_back(static_cast<std::int64_t>(v));
  }
  const auto& off = t["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw DataError(at + ": data_offsets must be [begin, end]");
  const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  if (end < begin || end > (std::uint64_t(1) << 56)) throw DataError(at + ": data_offsets out of order or range");
  // Sub-byte dtypes pack whole elements into bytes, rounding the tensor up to a byte.
  if (end - begin != (elements * std::uint64_t(bits) + 7) / 8)
    throw DataError(at + ": " + std::to_string(end - begin) + " bytes do not hold its shape in " + r.dtype);
  r.bytes = static_cast<std::int64_t>(end - begin);
  return r;
}

}  // namespace detail

// Parse the JSON header (the N bytes after the length). `file_bytes`, when known (> 0), is the file's size:
// every tensor must then lie inside it.
inline Header parse_header(std::string_view json, const std::string& where, std::uint64_t file_bytes = 0) {
  if (json.size() > max_header_bytes) throw DataError(where + ": safetensors header over the 100 MB limit");
  const auto j = nlohmann::json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw DataError(where + ": safetensors header is not a JSON object");
  Header h;
  std::uint64_t end = 0;
  std::vector<std::pair<std::uint64_t, std::size_t>> begins;  // each tensor's first byte, and which tensor
  for (const auto& [name, t] : j.items()) {
    if (name == "__metadata__") {
      if (!t.is_object()) throw DataError(where + ": __metadata__ must be an object");
      for (const auto& [k, v] : t.items())
        if (v.is_string()) h.metadata[k] = v.get<std::string>();
      continue;
    }
    h.tensors.push_back(detail::parse_tensor(name, t, where));
    begins.emplace_back(t["data_offsets"][0].get<std::uint64_t>(), h.tensors.size() - 1);
    end = std::max(end, t["data_offsets"][1].get<std::uint64_t>());
  }
  // Tensors over the same bytes would be counted twice (the reference implementation wants them back to back).
  std::sort(begins.begin(), begins.end(), [&](const auto& a, const auto& b) {  // at one offset, empty tensors first
    return a.first != b.first ? a.first < b.first : h.tensors[a.second].bytes < h.tensors[b.second].bytes;
  });
  for (std::size_t i = 1; i < begins.size(); ++i) {
    const Tensor& a = h.tensors[begins[i - 1].second];
    if (begins[i - 1].first + std::uint64_t(a.bytes) > begins[i].first)
      throw DataError(where + ": tensors \"" + a.name + "\" and \"" + h.tensors[begins[i].second].name + "\" overlap");
  }
  h.data_bytes = static_cast<std::int64_t>(end);
  if (file_bytes > 0 && 8 + json.size() + end > file_bytes)
    throw DataError(where + ": tensors run past the end of the file (truncated download?)");
  return h;
}

// Parse a whole header prefix: the 8-byte length and at least that many bytes after it.
inline Header parse_file_prefix(std::string_view bytes, const std::string& where, std::uint64_t file_bytes = 0) {
  const std::uint64_t n = header_length(bytes.substr(0, 8), where);
  if (bytes.size() - 8 < n) throw DataError(where + ": safetensors header is truncated");
  return parse_header(bytes.substr(8, n), where, file_bytes);
}

}  // namespace gpuplan::safetensors
