// The built-in catalog and model presets in a compact binary form: written at build time from what the JSON
// parsers return (cmake/gpuplan_tables.cpp), read back at run time (builtin.h), so a process parses no JSON for
// them. Parsing the catalog's 80 kB of JSON cost every estimate ~1.3 ms (12.7 M instructions and the DOM's page
// faults, 2-core machine), the presets' ~0.9 ms for `gpuplan models`.
//
// Every value is 8 bytes little-endian (integers, bools and enums as int64, reals as double); strings and vectors
// carry a count first, optionals a flag. One list of fields per struct (`fields`) serves writing and reading.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "catalog.h"
#include "error.h"
#include "hardware.h"
#include "model.h"
#include "model_presets.h"
#include "units.h"

namespace gpuplan::tables {

static_assert(std::endian::native == std::endian::little, "the tables are written and read little-endian");

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_quantity : std::false_type {};
template <class U, class R> struct is_quantity<Quantity<U, R>> : std::true_type {};

class Writer {
 public:
  template <class... T>
  void operator()(const T&... v) { (put(v), ...); }
  const std::string& bytes() const { return out_; }

 private:
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      scalar(static_cast<std::int64_t>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      scalar(static_cast<double>(v));
    } else if constexpr (is_quantity<T>::value) {
      put(v.in(quantity_unit(v)));
    } else if constexpr (std::is_same_v<T, std::string>) {
      put(std::int64_t(v.size()));
      out_.append(v);
    } else if constexpr (is_vector<T>::value) {
      put(std::int64_t(v.size()));
      if constexpr (std::is_same_v<T, std::vector<bool>>)
        for (bool x : v) put(x);
      else
        for (const auto& x : v) put(x);
    } else if constexpr (is_optional<T>::value) {
      put(v.has_value());
      if (v) put(*v);
    } else {
      fields(*this, v);  // a struct: its list of fields
    }
  }
  template <class S>
  void scalar(S v) {
    char b[8];
    std::memcpy(b, &v, 8);
    out_.append(b, 8);
  }
  template <class U, class R>
  static U quantity_unit(const Quantity<U, R>&) { return U{}; }

  std::string out_;
};

class Reader {
 public:
  Reader(const unsigned char* bytes, std::size_t size) : p_(bytes), end_(bytes + size) {}
  template <class... T>
  void operator()(T&... v) { (get(v), ...); }
  bool done() const { return p_ == end_; }

 private:
  template <class T>
  void get(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      v = scalar<std::int64_t>() != 0;
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      v = static_cast<T>(scalar<std::int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(scalar<double>());
    } else if constexpr (is_quantity<T>::value) {
      typename T::rep x{};
      get(x);
      v = T(x);
    } else if constexpr (std::is_same_v<T, std::string>) {
      const std::size_t n = count(1);
      v.assign(reinterpret_cast<const char*>(p_), n);
      p_ += n;
    } else if constexpr (is_vector<T>::value) {
      const std::size_t n = count(8);
      v.clear();
      v.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        typename T::value_type x{};
        get(x);
        v.push_back(std::move(x));
      }
    } else if constexpr (is_optional<T>::value) {
      bool has = false;
      get(has);
      v.reset();
      if (has) get(v.emplace());
    } else {
      fields(*this, v);
    }
  }
  template <class S>
  S scalar() {
    need(8);
    S v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  // A count of items of at least `item` bytes each, checked against what is left.
  std::size_t count(std::size_t item) {
    const auto n = scalar<std::int64_t>();
    if (n < 0 || std::size_t(n) > std::size_t(end_ - p_) / item) throw DataError("built-in tables: truncated");
    return std::size_t(n);
  }
  void need(std::size_t n) const {
    if (std::size_t(end_ - p_) < n) throw DataError("built-in tables: truncated");
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

// The fields of each struct, in one order for writing (T const) and reading.
template <class T, class U>
concept either = std::is_same_v<std::remove_const_t<T>, U>;

template <class Ar, either<PeakFlops> T>
void fields(Ar& ar, T& p) { ar(p.fp64, p.fp32, p.tf32, p.bf16, p.fp16, p.fp8, p.int8, p.fp4); }

template <class Ar, either<Device> T>
void fields(Ar& ar, T& d) {
  ar(d.id, d.aliases, d.vendor, d.name, d.segment, d.unit, d.memory, d.usable_memory, d.cuda_total_memory,
     d.memory_type, d.memory_bandwidth, d.peak, d.fp16_accumulate, d.tdp_watts, d.matmul_efficiency, d.matmul_burst_efficiency, d.boost_clock_hz, d.interconnect,
     d.interconnect_bandwidth, d.pcie_gen, d.form_factor, d.launch_year, d.price_usd, d.price_note, d.source,
     d.verification, d.notes, d.origin);
}

template <class Ar, either<Offering> T>
void fields(Ar& ar, T& f) {
  ar(f.provider, f.instance, f.accelerator, f.count, f.max_count, f.on_demand, f.spot, f.region, f.as_of, f.source, f.status,
     f.origin);
}

template <class Ar, either<Catalog> T>
void fields(Ar& ar, T& c) { ar(c.devices, c.offerings, c.dates); }

template <class Ar, either<MoeSpec> T>
void fields(Ar& ar, T& m) {
  ar(m.experts, m.experts_per_token, m.intermediate, m.shared_experts, m.shared_intermediate, m.shared_gate,
     m.router_bias, m.router_linear_bias, m.dense_routing);
}

template <class Ar, either<MlaSpec> T>
void fields(Ar& ar, T& m) { ar(m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim); }

template <class Ar, either<LinearAttentionSpec> T>
void fields(Ar& ar, T& l) { ar(l.key_heads, l.value_heads, l.key_head_dim, l.value_head_dim, l.conv_kernel); }

template <class Ar, either<LayerShape> T>
void fields(Ar& ar, T& l) { ar(l.kv_heads, l.head_dim, l.intermediate, l.values_are_keys, l.shares_kv); }

template <class Ar, either<ModelSpec> T>
void fields(Ar& ar, T& s) {
  ar(s.name, s.model_type, s.family, s.vocab, s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim, s.intermediate,
     s.mlp, s.activation, s.norm, s.tied_embeddings, s.qkv_bias, s.o_bias, s.mlp_bias, s.qk_norm, s.qk_norm_full,
     s.attn_sinks, s.attn_output_gate, s.lm_head_bias, s.norms_per_layer, s.learned_positions, s.max_positions,
     s.sliding_window, s.sliding_layers, s.chunked_attention, s.linear_layers, s.linear, s.rope_theta,
     s.partial_rotary, s.parallel_residual, s.dropout, s.final_logit_softcap, s.attn_logit_softcap, s.moe,
     s.moe_layers, s.mla_enabled, s.mla, s.layer_shapes, s.shape_of, s.per_layer_input, s.per_layer_vocab,
     s.router_scales);
}

template <class Ar, either<ModelPreset> T>
void fields(Ar& ar, T& p) { ar(p.id, p.aliases, p.name, p.source, p.shipped_weights, p.spec, p.params, p.active_params); }

template <class T>
std::string write(const T& value) {
  Writer w;
  w(value);
  return w.bytes();
}

template <class T>
T read(const unsigned char* bytes, std::size_t size) {
  Reader r(bytes, size);
  T value{};
  r(value);
  if (!r.done()) throw DataError("built-in tables: trailing bytes");
  return value;
}

}  // namespace gpuplan::tables
