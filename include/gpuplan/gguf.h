// GGUF headers: metadata key/values and tensor infos (name, shape, ggml type), the bytes before the weights.
// Layout (ggml/docs/gguf.md; ggml/src/gguf.cpp): "GGUF", version u32 (2 or 3), tensor count u64, metadata count
// u64, the metadata (key string, value type u32, value), the tensor infos (name, n_dims u32, dims u64[n_dims],
// ggml type u32, offset u64), then the data aligned to general.alignment. Little-endian only. Strings are a u64
// length and bytes. Hostile until parsed: every count and length is checked against the bytes left before
// anything is allocated; a header that needs more bytes than given throws `Truncated` so a reader can fetch more.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.h"

namespace gpuplan::gguf_file {

// The header ends past the bytes given: read more of the file and parse again.
struct Truncated : DataError {
  using DataError::DataError;
};

// ggml types: weights per block and bytes per block (ggml/src/ggml.c, type_traits; ggml-common.h block structs).
struct GgmlType {
  const char* name = nullptr;  // nullptr: no such type (removed or unknown)
  std::int64_t block = 1;
  std::int64_t bytes = 0;
};

inline GgmlType ggml_type(std::uint32_t t) {
  static constexpr GgmlType types[] = {
      {"F32", 1, 4},        {"F16", 1, 2},       {"Q4_0", 32, 18},    {"Q4_1", 32, 20},    {},  // 4: removed Q4_2
      {},                   {"Q5_0", 32, 22},    {"Q5_1", 32, 24},    {"Q8_0", 32, 34},    {"Q8_1", 32, 36},
      {"Q2_K", 256, 84},    {"Q3_K", 256, 110},  {"Q4_K", 256, 144},  {"Q5_K", 256, 176},  {"Q6_K", 256, 210},
      {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110}, {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
      {"I16", 1, 2},        {"I32", 1, 4},       {"I64", 1, 8},       {"F64", 1, 8},       {"IQ1_M", 256, 56},
      {"BF16", 1, 2},       {},                  {},                  {},  // 31-33: removed Q4_0_4_4/4_8/8_8
      {"TQ1_0", 256, 54},   {"TQ2_0", 256, 66},  {},                  {},                  {},  // 36-38: removed
      {"MXFP4", 32, 17},  // E8M0 scale + 32 E2M1 (gpt-oss)
  };
  return t < std::size(types) ? types[t] : GgmlType{};
}

// One metadata value: numbers and strings as such, arrays by length (numeric arrays up to 65,536 entries kept,
// e.g. per-layer head counts; token lists are only counted).
struct Value {
  enum class Kind { integer, real, boolean, string, array } kind = Kind::integer;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  std::uint64_t length = 0;          // array entries
  std::vector<std::int64_t> ints;    // numeric array entries (integers, or reals truncated)
};

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint32_t type = 0;
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
  std::uint64_t offset = 0;  // into the data section
};

struct Header {
  std::uint32_t version = 0;
  std::map<std::string, Value> metadata;
  std::vector<TensorInfo> tensors;
  std::int64_t header_bytes = 0;  // bytes up to the end of the tensor infos
  std::uint64_t alignment = 32;   // general.alignment (GGUF_DEFAULT_ALIGNMENT): the data section and every tensor

  const Value* find(const std::string& key) const {
    const auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
  }
  std::string string(const std::string& key, std::string fallback = "") const {
    const Value* v = find(key);
    return v && v->kind == Value::Kind::string ? v->s : fallback;
  }
  std::optional<std::int64_t> integer(const std::string& key) const {
    const Value* v = find(key);
    if (!v || v->kind != Value::Kind::integer) return std::nullopt;
    return v->i;
  }
  std::optional<double> real(const std::string& key) const {
    const Value* v = find(key);
    if (v && v->kind == Value::Kind::real) return v->f;
    if (v && v->kind == Value::Kind::integer) return double(v->i);
    return std::nullopt;
  }
};

namespace detail {

class Reader {
 public:
  Reader(std::string_view b, const std::string& where) : b_(b), where_(where) {}
  template <class T>
  T scalar() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string() {
    // The longest real strings are chat templates and licences (tens of KB); 16 MiB bounds a hostile length.
    const auto n = scalar<std::uint64_t>();
    if (n > (1u << 24)) throw DataError(where_ + ": GGUF string of " + std::to_string(n) + " bytes (limit 16 MiB)");
    need(n);
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items of at least `min_bytes` each must fit in what is left of a whole header (a file's header is
  // far below 4 GiB even with 256K-token vocabularies); beyond the bytes given, the caller reads more.
  std::uint64_t count(std::uint64_t min_bytes, const char* what) {
    const auto n = scalar<std::uint64_t>();
    if (n > (std::uint64_t(1) << 32) / min_bytes) throw DataError(where_ + ": GGUF " + what + " count " +
                                                                  std::to_string(n) + " is absurd");
    need(n * min_bytes);
    return n;
  }
  std::size_t pos() const { return pos_; }
  const std::string& where() const { return where_; }

 private:
  void need(std::uint64_t n) const {
    if (n > b_.size() - pos_) throw Truncated(where_ + ": GGUF header is truncated");
  }
  std::string_view b_;
  std::size_t pos_ = 0;
  std::string where_;
};

// Bytes of one scalar of a metadata type (0: not a fixed-size scalar).
inline std::uint64_t scalar_bytes(std::uint32_t t) {
  switch (t) {
    case 0: case 1: case 7: return 1;   // u8, i8, bool
    case 2: case 3: return 2;           // u16, i16
    case 4: case 5: case 6: return 4;   // u32, i32, f32
    case 10: case 11: case 12: return 8;  // u64, i64, f64
    default: return 0;
  }
}

inline Value read_scalar(Reader& r, std::uint32_t t) {
  Value v;
  switch (t) {
    case 0: v.i = r.scalar<std::uint8_t>(); break;
    case 1: v.i = r.scalar<std::int8_t>(); break;
    case 2: v.i = r.scalar<std::uint16_t>(); break;
    case 3: v.i = r.scalar<std::int16_t>(); break;
    case 4: v.i = r.scalar<std::uint32_t>(); break;
    case 5: v.i = r.scalar<std::int32_t>(); break;
    case 10: {
      const auto u = r.scalar<std::uint64_t>();
      v.i = u > std::uint64_t(INT64_MAX) ? INT64_MAX : std::int64_t(u);
      break;
    }
    case 11: v.i = r.scalar<std::int64_t>(); break;
    case 6: v.kind = Value::Kind::real; v.f = r.scalar<float>(); break;
    case 12: v.kind = Value::Kind::real; v.f = r.scalar<double>(); break;
    case 7: v.kind = Value::Kind::boolean; v.i = r.scalar<std::uint8_t>() != 0; break;
    case 8: v.kind = Value::Kind::string; v.s = r.string(); break;
    default: throw DataError(r.where() + ": unknown GGUF value type " + std::to_string(t));
  }
  return v;
}

inline Value read_value(Reader& r, std::uint32_t t) {
  if (t != 9) return read_scalar(r, t);
  Value v;
  v.kind = Value::Kind::array;
  const auto et = r.scalar<std::uint32_t>();
  if (et == 9) throw DataError(r.where() + ": nested GGUF arrays are not supported");
  const std::uint64_t size = et == 8 ? 8 : scalar_bytes(et);
  if (size == 0) throw DataError(r.where() + ": unknown GGUF array type " + std::to_string(et));
  v.length = r.count(size, "array");
  const bool keep = et != 8 && v.length <= 65536;
  for (std::uint64_t k = 0; k < v.length; ++k) {
    const Value e = read_scalar(r, et);
    // Reals are kept truncated, within int64 (NaN and out-of-range values as 0: no size is a real).
    const bool real_ok = std::isfinite(e.f) && std::fabs(e.f) < 9e18;
    if (keep) v.ints.push_back(e.kind != Value::Kind::real ? e.i : real_ok ? std::int64_t(e.f) : 0);
  }
  return v;
}

inline TensorInfo read_tensor_info(Reader& r) {
  TensorInfo t;
  t.name = r.string();
  const auto dims = r.scalar<std::uint32_t>();
  if (dims < 1 || dims > 4) throw DataError(r.where() + ": tensor " + t.name + " has " + std::to_string(dims) +
                                            " dimensions (GGML_MAX_DIMS is 4)");
  std::uint64_t n = 1;
  for (std::uint32_t d = 0; d < dims; ++d) {
    const auto v = r.scalar<std::uint64_t>();
    if (v > (std::uint64_t(1) << 40) || (v != 0 && n > (std::uint64_t(1) << 50) / v))
      throw DataError(r.where() + ": tensor " + t.name + " has an absurd shape");
    n *= v;
    t.shape.push_back(std::int64_t(v));
  }
  t.type = r.scalar<std::uint32_t>();
  const GgmlType g = ggml_type(t.type);
  if (!g.name) throw DataError(r.where() + ": tensor " + t.name + " has unknown ggml type " + std::to_string(t.type));
  if (t.shape[0] % g.block != 0)
    throw DataError(r.where() + ": tensor " + t.name + " rows are not whole " + g.name + " blocks");
  t.offset = r.scalar<std::uint64_t>();
  t.elements = std::int64_t(n);
  t.bytes = std::int64_t(n / std::uint64_t(g.block) * std::uint64_t(g.bytes));
  return t;
}

}  // namespace detail

// Parse a file's first bytes; throws Truncated when the header runs past them.
inline Header parse_header(std::string_view bytes, const std::string& where) {
  detail::Reader r(bytes, where);
  if (bytes.size() >= 4 && bytes.substr(0, 4) != "GGUF") throw DataError(where + ": not a GGUF file (bad magic)");
  r.scalar<std::uint32_t>();
  Header h;
  h.version = r.scalar<std::uint32_t>();
  if (h.version != 2 && h.version != 3)
    throw DataError(where + ": GGUF version " + std::to_string(h.version) + " is not supported (2 and 3 are)");
  const auto tensors = r.scalar<std::uint64_t>();
  const auto kvs = r.scalar<std::uint64_t>();
  // Each key/value takes at least 13 bytes (key length, a byte of key, type), each tensor info at least 28.
  if (kvs > (std::uint64_t(1) << 32) / 13 || tensors > (std::uint64_t(1) << 32) / 28)
    throw DataError(where + ": GGUF header counts are absurd");
  for (std::uint64_t k = 0; k < kvs; ++k) {
    std::string key = r.string();
    const auto type = r.scalar<std::uint32_t>();
    h.metadata[std::move(key)] = detail::read_value(r, type);
  }
  // ggml (gguf.cpp, gguf_init_from_file_impl) takes general.alignment as a u32 power of two, and nothing else.
  if (const Value* a = h.find("general.alignment")) {
    if (a->kind != Value::Kind::integer || a->i <= 0 || a->i > (1 << 30) || (a->i & (a->i - 1)) != 0)
      throw DataError(where + ": GGUF general.alignment must be a power of two");
    h.alignment = std::uint64_t(a->i);
  }
  for (std::uint64_t t = 0; t < tensors; ++t) h.tensors.push_back(detail::read_tensor_info(r));
  h.header_bytes = std::int64_t(r.pos());
  return h;
}

// The tensors' data as ggml loads it: each at an aligned offset, none overlapping another, all inside the file
// (`file_bytes`: its size). A file that fails this holds bytes other than its header says.
inline void check_data(const Header& h, std::uint64_t file_bytes, const std::string& where) {
  const std::uint64_t start = (std::uint64_t(h.header_bytes) + h.alignment - 1) / h.alignment * h.alignment;
  const std::uint64_t data = file_bytes > start ? file_bytes - start : 0;
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : h.tensors) {
    if (t.offset % h.alignment != 0)
      throw DataError(where + ": tensor " + t.name + " is not at a multiple of general.alignment");
    if (t.offset > data || std::uint64_t(t.bytes) > data - t.offset)
      throw DataError(where + ": tensor " + t.name + " lies past the end of the file (truncated?)");
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + std::uint64_t(by_offset[i - 1]->bytes) > by_offset[i]->offset)
      throw DataError(where + ": tensors " + by_offset[i - 1]->name + " and " + by_offset[i]->name + " overlap");
}

}  // namespace gpuplan::gguf_file
