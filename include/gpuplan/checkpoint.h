// A checkpoint's weights as stored: every tensor's bytes from its safetensors or GGUF header, sorted into the
// language model's embedding, decoder layers and head (the parts the estimators place) and everything else
// (vision tower, projector, MTP layers), with logical parameter counts that see through packed formats.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf.h"
#include "quant.h"
#include "safetensors.h"
#include "text.h"
#include "units.h"

namespace gpuplan {

struct StoredTensor {
  std::string name;
  std::string dtype;       // safetensors dtype or ggml type name
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
};

struct Checkpoint {
  std::string format;         // "safetensors" or "gguf"
  std::string quantization;   // quantization_config.quant_method, or the GGUF's dominant ggml type; "" if none
  int packed_bits = 4;        // bits per weight inside packed integer tensors (GPTQ/AWQ qweight, weight_packed)
  std::vector<StoredTensor> tensors;
};

struct StoredWeights {
  WeightBytes language;                   // as stored, by part (for per-layer placement: llama.cpp -ngl)
  Params language_params{0};
  Bytes other{0};                         // tensors outside the language model
  Params other_params{0};
  std::map<std::string, Bytes> other_parts;  // by top-level module: vision_tower, multi_modal_projector, mtp, ...
  std::map<std::string, Bytes> by_dtype;     // every tensor's bytes by stored dtype
  Bytes total() const { return language.total() + other; }
};

namespace detail {

inline bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Quantisation side tensors (scales, zero points, group indices, bitsandbytes state): bytes, not parameters.
inline bool is_quant_aux(std::string_view n) {
  for (std::string_view e : {".qzeros", ".scales", ".g_idx", "_scale", "_scale_inv", "_zero_point", ".weight_shape",
                             "_scales", "_scale_2", ".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map", ".SCB",
                             ".weight_format", ".quant_state.bitsandbytes__nf4", ".quant_state.bitsandbytes__fp4"})
    if (n.ends_with(e)) return true;
  return false;
}

// Logical weights held by a tensor: packed integer tensors hold 32 / bits (or 8 / 4) weights per element.
inline std::int64_t logical_params(const StoredTensor& t, const Checkpoint& c) {
  if (c.format == "gguf") return t.elements;
  if (is_quant_aux(t.name)) return 0;
  const std::string_view n = t.name;
  if ((n.ends_with(".qweight") || n.ends_with(".weight_packed")) && (t.dtype == "I32" || t.dtype == "U32"))
    return t.elements * (32 / c.packed_bits);
  if (n.ends_with("_blocks") && t.dtype == "U8") return t.elements * 2;  // MXFP4: two E2M1 values per byte
  if (c.quantization == "bitsandbytes" && t.dtype == "U8") return t.elements * 2;  // bnb 4-bit packs 2 per byte
  // ModelOpt NVFP4 (quant_method "modelopt"): weight U8, two E2M1 values per byte, beside weight_scale (E4M3 per 16)
  // and weight_scale_2 (fp32); its MIXED_PRECISION checkpoints keep other linears in FP8 (F8_E4M3, one per element).
  if (c.quantization == "modelopt" && t.dtype == "U8") return t.elements * 2;
  return t.elements;
}

// Where a tensor belongs: -3 other, -2 embedding, -1 head, ≥ 0 decoder layer. `part` names an "other" group.
inline std::int64_t place(std::string_view n, std::int64_t layers, std::string& part) {
  for (std::string_view m : {"vision", "visual", "image", "multi_modal", "mm_projector", "audio", "speech"})
    if (has(n, m)) {
      // The top-level module, under transformers' "model." wrapper when there is one (model.vision_tower.…).
      const std::string_view inner = n.starts_with("model.") ? n.substr(std::string_view("model.").size()) : n;
      part = std::string(inner.substr(0, inner.find('.')));
      return -3;
    }
  for (std::string_view prefix : {"layers.", "h.", "blk."}) {
    std::size_t at = n.starts_with(prefix) ? 0 : n.find(std::string(".") + std::string(prefix));
    if (at == std::string_view::npos) continue;
    at += (at == 0 ? 0 : 1) + prefix.size();
    std::int64_t l = 0;
    std::size_t k = at;
    for (; k < n.size() && n[k] >= '0' && n[k] <= '9' && l < 1'000'000; ++k) l = l * 10 + (n[k] - '0');
    if (k == at || k >= n.size() || n[k] != '.') continue;
    if (l < layers) return l;
    part = "extra layers (MTP)";
    return -3;
  }
  // Gemma 4 E2B/E4B's projection into the per-layer inputs: llama.cpp creates per_layer_model_proj and
  // per_layer_proj_norm as repeating tensors of block 0 (src/llama-arch.cpp LLM_TENSOR_LAYER_REPEATING, loaded with
  // bid 0), so they sit with layer 0; HF's per_layer_model_projection and its norm count with the embeddings
  // (model.h param_inventory_without_layers).
  if (layers > 0 && (n.starts_with("per_layer_model_proj.") || n.starts_with("per_layer_proj_norm."))) return 0;
  for (std::string_view m : {"embed_tokens", "wte.", "wpe.", "embed_in", "token_embd", "per_layer_model_projection",
                             "per_layer_projection_norm"})
    if (has(n, m)) return -2;
  // The head and what sits beside it: llama.cpp's rope_freqs (Llama 3.1's rope scaling factors) loads with it.
  for (std::string_view m : {"lm_head", "embed_out", "output.", "output_norm", "model.norm.", "ln_f.",
                             "final_layer_norm", "final_layernorm", "language_model.norm.", "rope_freqs"})
    if (has(n, m)) return -1;
  if (n.starts_with("norm.")) return -1;
  part = std::string(n.substr(0, n.find('.')));
  return -3;
}

// Every sum over a checkpoint's tensors stays exact: at most 2^53 bytes and 2^53 elements in all (9 PB; the largest
// published checkpoints hold a few TB), so logical parameters (≤ 32 per element) and bytes fit in int64 and double.
class TensorTotals {
 public:
  explicit TensorTotals(const std::string& where) : where_(where) {}
  void add(std::int64_t elements, std::int64_t bytes) {
    constexpr std::int64_t limit = std::int64_t(1) << 53;
    elements_ += elements;  // each tensor holds under 2^50 elements (the parsers' bound): no overflow before the test
    bytes_ += bytes;
    if (elements_ > limit || bytes_ > limit)
      throw DataError(where_ + ": the tensors hold over 2^53 elements or bytes in all");
  }

 private:
  std::string where_;
  std::int64_t elements_ = 0, bytes_ = 0;
};

}  // namespace detail

inline StoredWeights stored_weights(const Checkpoint& c, std::int64_t layers) {
  StoredWeights w;
  w.language.per_layer.assign(static_cast<std::size_t>(std::max<std::int64_t>(layers, 0)), Bytes(0));
  w.language.per_layer_experts = w.language.per_layer;
  std::int64_t lang = 0, other = 0;
  for (const auto& t : c.tensors) {
    const Bytes b(double(t.bytes));
    const std::int64_t p = detail::logical_params(t, c);
    w.by_dtype[t.dtype] += b;
    std::string part;
    const std::int64_t at = detail::place(t.name, layers, part);
    if (at == -3) {
      w.other += b;
      w.other_parts[printable(part)] += b;  // a name from the file: shown in notes and JSON
      other += p;
      continue;
    }
    lang += p;
    if (at == -2) w.language.embedding += b;
    else if (at == -1) w.language.output += b;
    else {
      w.language.per_layer[static_cast<std::size_t>(at)] += b;
      w.language.layers += b;
      // Routed experts: HF's mlp.experts.N (gate_up_proj of gpt-oss) and GGUF's ffn_{gate,up,down}_exps; a shared
      // expert is read by every token.
      const bool routed = (t.name.find(".experts.") != std::string::npos || t.name.find("_exps") != std::string::npos) &&
                          t.name.find("shared") == std::string::npos;
      if (routed) {
        w.language.per_layer_experts[static_cast<std::size_t>(at)] += b;
        w.language.routed_experts += b;
      }
    }
  }
  w.language_params = Params(lang);
  w.other_params = Params(other);
  return w;
}

inline Checkpoint checkpoint_from(const std::vector<safetensors::Header>& files, std::string quantization,
                                  int packed_bits, const std::string& where = "checkpoint") {
  Checkpoint c;
  detail::TensorTotals totals(where);
  c.format = "safetensors";
  c.quantization = std::move(quantization);
  c.packed_bits = packed_bits >= 1 && packed_bits <= 16 ? packed_bits : 4;
  for (const auto& f : files)
    for (const auto& t : f.tensors) {
      totals.add(t.elements(), t.bytes);
      c.tensors.push_back({t.name, t.dtype, t.elements(), t.bytes});
    }
  return c;
}

// GGUF: the quantisation is the type holding most of the bytes (general.file_type names a mix, e.g. Q4_K_M,
// whose tensors are Q4_K, Q6_K and F32).
inline Checkpoint checkpoint_from(const gguf_file::Header& h, const std::string& where = "checkpoint") {
  Checkpoint c;
  c.format = "gguf";
  detail::TensorTotals totals(where);
  std::map<std::string, std::int64_t> bytes;
  for (const auto& t : h.tensors) {
    const std::string type = gguf_file::ggml_type(t.type).name;
    totals.add(t.elements, t.bytes);
    c.tensors.push_back({t.name, type, t.elements, t.bytes});
    bytes[type] += t.bytes;
  }
  std::int64_t most = -1;
  for (const auto& [type, b] : bytes)
    if (b > most) most = b, c.quantization = type;
  return c;
}

// The language model's stored bytes for the serving estimator, with the nearest named format (for the compute
// peak) and a label saying what was stored.
inline StoredWeightBytes stored_language_weights(const StoredWeights& w, const Checkpoint& c) {
  std::string dtype;
  Bytes most(-1);
  for (const auto& [d, b] : w.by_dtype)
    if (b > most) most = b, dtype = d;
  StoredWeightBytes r;
  r.bytes = w.language;
  const std::string& q = c.quantization;
  if (c.format == "gguf") {
    static const std::map<std::string, WeightFormat> ggml{
        {"F32", WeightFormat::fp32},  {"F16", WeightFormat::fp16},    {"BF16", WeightFormat::bf16},
        {"Q8_0", WeightFormat::q8_0}, {"Q6_K", WeightFormat::q6_k},   {"Q5_K", WeightFormat::q5_k_m},
        {"Q4_K", WeightFormat::q4_k_m}, {"Q4_0", WeightFormat::q4_0}, {"Q3_K", WeightFormat::q3_k_m},
        {"Q2_K", WeightFormat::q2_k}, {"Q5_1", WeightFormat::q5_1},     {"Q5_0", WeightFormat::q5_0},
        {"Q4_1", WeightFormat::q4_1}, {"MXFP4", WeightFormat::mxfp4}};
    const auto it = ggml.find(q);
    r.nearest = it != ggml.end() ? it->second : WeightFormat::q4_0;  // other i-quants: a 4-bit block format
    r.label = "GGUF, mostly " + q;
    return r;
  }
  if (q == "gptq") r.nearest = WeightFormat::gptq_int4;
  else if (q == "awq") r.nearest = WeightFormat::awq_int4;
  else if (q == "mxfp4") r.nearest = WeightFormat::mxfp4;
  else if (q == "bitsandbytes") r.nearest = dtype == "U8" ? WeightFormat::nf4 : WeightFormat::int8;
  else if (q == "modelopt" && dtype == "U8") r.nearest = WeightFormat::nvfp4;
  else if (dtype.starts_with("F8")) r.nearest = WeightFormat::fp8;
  else if (dtype == "I8") r.nearest = WeightFormat::int8;
  else if (dtype == "F32") r.nearest = WeightFormat::fp32;
  else if (dtype == "F16") r.nearest = WeightFormat::fp16;
  else r.nearest = WeightFormat::bf16;
  r.label = q.empty() ? "mostly " + dtype : q + ", mostly " + dtype;
  return r;
}

}  // namespace gpuplan
