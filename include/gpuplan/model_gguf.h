// GGUF metadata → ModelSpec: the shape llama.cpp itself reads (src/llama-model.cpp, load_hparams; key names from
// src/llama-arch.cpp, LLM_KV_NAMES: "{arch}.block_count", "{arch}.attention.head_count_kv", ...).
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "gguf.h"
#include "model.h"
#include "text.h"

namespace gpuplan {

namespace detail {

class GgufKeys {
 public:
  GgufKeys(const gguf_file::Header& h, std::string where)
      : h_(h), arch_(h.string("general.architecture")), where_(std::move(where)) {
    if (arch_.empty()) throw DataError(where_ + ": GGUF has no general.architecture");
  }
  const std::string& arch() const { return arch_; }
  // A per-model integer; llama.cpp also accepts a per-layer array (head counts, FFN widths): its largest entry.
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback = std::nullopt) const {
    const gguf_file::Value* v = h_.find(arch_ + "." + key);
    const bool scalar = v && (v->kind == gguf_file::Value::Kind::integer || v->kind == gguf_file::Value::Kind::boolean);
    if (scalar && v->i >= 0) return v->i;
    if (v && v->kind == gguf_file::Value::Kind::array && !v->ints.empty()) {
      std::int64_t m = 0;
      for (auto x : v->ints) m = std::max(m, x);
      return m;
    }
    if (fallback) return *fallback;
    throw DataError(where_ + ": GGUF is missing \"" + arch_ + "." + key + "\"");
  }
  // One value per layer (llama.cpp get_key_or_arr): an array must list every one of the n layers, numbers ≥ 0; a
  // single value holds for all of them.
  std::vector<std::int64_t> each_layer(const std::string& key, std::int64_t n, std::optional<std::int64_t> fallback) const {
    const gguf_file::Value* v = h_.find(arch_ + "." + key);
    if (!v || v->kind != gguf_file::Value::Kind::array) return std::vector<std::int64_t>(std::size_t(n), integer(key, fallback));
    // ints holds numeric arrays of up to 65,536 entries (gguf.h): a string array or a longer one keeps none.
    const bool whole = v->length == std::uint64_t(n) && v->ints.size() == v->length;
    if (!whole || std::any_of(v->ints.begin(), v->ints.end(), [](std::int64_t x) { return x < 0; }))
      throw DataError(where_ + ": GGUF \"" + arch_ + "." + key + "\" must list a number ≥ 0 for each of the " +
                      std::to_string(n) + " layers (it lists " + std::to_string(v->length) + " entries)");
    return v->ints;
  }
  std::optional<double> real(const std::string& key) const { return h_.real(arch_ + "." + key); }
  const gguf_file::Value* per_layer(const std::string& key) const {
    const gguf_file::Value* v = h_.find(arch_ + "." + key);
    return v && v->kind == gguf_file::Value::Kind::array ? v : nullptr;
  }

 private:
  const gguf_file::Header& h_;
  std::string arch_;
  std::string where_;
};

// The vocabulary: the tokenizer's token list, else the embedding's rows.
inline std::int64_t gguf_vocab(const gguf_file::Header& h, const GgufKeys& k) {
  if (const auto* t = h.find("tokenizer.ggml.tokens"); t && t->kind == gguf_file::Value::Kind::array)
    return std::int64_t(t->length);
  for (const auto& t : h.tensors)
    if (t.name == "token_embd.weight" && t.shape.size() == 2) return t.shape[1];
  return k.integer("vocab_size");
}

inline bool gguf_has_tensor(const gguf_file::Header& h, const std::string& name) {
  for (const auto& t : h.tensors)
    if (t.name == name) return true;
  return false;
}

// Which layers slide (llama.cpp hparams.set_swa_pattern per architecture): Gemma 2 alternates, Gemma 3 keeps one
// global layer in six, gpt-oss alternates starting with a sliding one; Gemma 4 lists each layer in
// attention.sliding_window_pattern (true: sliding); others slide everywhere.
inline void gguf_sliding(ModelSpec& s, const GgufKeys& k, std::int64_t window) {
  if (window <= 0) return;
  const std::string& arch = k.arch();
  const std::vector<std::int64_t> listed =
      arch == "gemma4" ? k.each_layer("attention.sliding_window_pattern", s.layers, std::nullopt) : std::vector<std::int64_t>{};
  s.sliding_window = window;
  s.sliding_layers.assign(static_cast<std::size_t>(s.layers), true);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    bool slide = true;
    if (arch == "gemma2" || arch == "gpt-oss") slide = l % 2 == 0;
    else if (arch == "gemma3") slide = (l + 1) % 6 != 0;
    else if (!listed.empty()) slide = listed[static_cast<std::size_t>(l)] != 0;
    s.sliding_layers[static_cast<std::size_t>(l)] = slide;
  }
  if (std::find(s.sliding_layers.begin(), s.sliding_layers.end(), true) == s.sliding_layers.end()) {
    s.sliding_window = 0;  // as the HF loader keeps it: no window where no layer slides
    s.sliding_layers.clear();
  }
}

inline void gguf_moe(ModelSpec& s, const GgufKeys& k) {
  s.moe.experts = k.integer("expert_count", 0);
  if (s.moe.experts == 0) return;
  s.moe.experts_per_token = k.integer("expert_used_count");
  s.moe.intermediate = k.integer("expert_feed_forward_length", s.intermediate);
  s.moe.shared_experts = k.integer("expert_shared_count", 0);
  s.moe.shared_intermediate = k.integer("expert_shared_feed_forward_length", s.moe.intermediate);
  s.moe_layers.assign(static_cast<std::size_t>(s.layers), true);
  const std::int64_t dense = k.integer("leading_dense_block_count", 0);
  for (std::int64_t l = 0; l < std::min(dense, s.layers); ++l) s.moe_layers[static_cast<std::size_t>(l)] = false;
}

// Gemma 4 (llama.cpp src/models/gemma4.cpp load_arch_hparams and load_arch_tensors; convert_hf_to_gguf.py
// Gemma4Model.set_gguf_parameters), into the shape the HF loader reads from Gemma4TextConfig (model_hf.h
// read_layer_shapes): key_length is the full-attention layers' head_dim (global_head_dim), key_length_swa the
// sliding ones'; head_count_kv lists each layer where the full layers have heads of their own
// (num_global_key_value_heads), feed_forward_length where the layers reading shared KV are twice as wide
// (use_double_wide_mlp); the last attention.shared_kv_layers layers read an earlier layer's K and V (llama.cpp:
// n_layer_kv_from_start, no attn_k of their own); a layer that has attn_k but no attn_v takes its keys as values
// (attention_k_eq_v: "if v_proj is not present, use Kcur as Vcur"); embedding_length_per_layer_input feeds each layer
// a slice of a second token table, per_layer_token_embd (E2B, E4B). The MoE variant runs the dense MLP beside the
// routed experts on every layer (an ungated shared expert) behind a scaled router (ffn_gate_inp.scale,
// ffn_down_exps.scale).
inline void gguf_gemma4(ModelSpec& s, const gguf_file::Header& h, const GgufKeys& k, const std::string& where) {
  const std::int64_t full_dim = s.head_dim;  // attention.key_length
  s.head_dim = k.integer("attention.key_length_swa");
  // load_arch_tensors: "Gemma 4 requires n_embd_head_k == n_embd_head_v" (and the same of the sliding layers).
  if (k.integer("attention.value_length", full_dim) != full_dim || k.integer("attention.value_length_swa", s.head_dim) != s.head_dim)
    throw DataError(where + ": GGUF gemma4 value_length must equal key_length (llama.cpp refuses the file otherwise)");
  const std::vector<std::int64_t> kv = k.each_layer("attention.head_count_kv", s.layers, s.heads);
  const std::vector<std::int64_t> ffn = k.each_layer("feed_forward_length", s.layers, std::nullopt);
  const std::int64_t shared = k.integer("attention.shared_kv_layers", 0);
  if (shared > s.layers) throw DataError(where + ": GGUF gemma4 attention.shared_kv_layers exceeds block_count");
  std::unordered_set<std::string> names;
  for (const auto& t : h.tensors) names.insert(t.name);
  std::vector<LayerShape> per_layer;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    const bool full = !s.is_sliding_layer(l);
    const std::string blk = "blk." + std::to_string(l) + ".";
    const bool keys_as_values = names.count(blk + "attn_k.weight") > 0 && names.count(blk + "attn_v.weight") == 0;
    per_layer.push_back({kv[i], full ? full_dim : s.head_dim, ffn[i], full && keys_as_values, l >= s.layers - shared});
  }
  // The model-wide shape is the first sliding layer's (HF num_key_value_heads, head_dim, intermediate_size).
  const auto first = static_cast<std::size_t>(std::find(s.sliding_layers.begin(), s.sliding_layers.end(), true) -
                                               s.sliding_layers.begin());
  s.kv_heads = kv[first < kv.size() ? first : 0];
  s.intermediate = ffn[0];
  set_layer_shapes(s, per_layer);
  s.per_layer_input = k.integer("embedding_length_per_layer_input", 0);
  if (s.per_layer_input > 0) {
    s.per_layer_vocab = s.vocab;
    for (const auto& t : h.tensors)
      if (t.name == "per_layer_token_embd.weight" && t.shape.size() == 2) s.per_layer_vocab = t.shape[1];
  }
  s.activation = "gelu_pytorch_tanh";  // LLM_FFN_GELU (the tanh approximation), as hidden_activation
  s.qk_norm = true;                    // attn_q_norm and attn_k_norm are required tensors
  s.norms_per_layer = s.moe.experts > 0 ? 7 : 4;  // the MoE block adds ffn_pre_norm_2, ffn_post_norm_1 and _2
  const double cap = k.real("final_logit_softcapping").value_or(0.0);
  if (!(cap >= 0 && cap < 1e6)) throw DataError(where + ": GGUF gemma4 final_logit_softcapping must be in 0 … 10^6");
  s.final_logit_softcap = cap;
  if (s.moe.experts > 0) {
    s.moe.shared_experts = 1;
    s.moe.shared_intermediate = s.intermediate;
    s.router_scales = true;
  }
}

}  // namespace detail

namespace detail {

inline ModelSpec gguf_spec(const gguf_file::Header& h, const std::string& where) {
  const GgufKeys k(h, where);
  ModelSpec s;
  s.model_type = printable(k.arch());
  s.family = Family::llama;
  s.layers = k.integer("block_count");
  s.hidden = k.integer("embedding_length");
  s.intermediate = k.integer("feed_forward_length", 0);
  s.heads = k.integer("attention.head_count");
  if (s.heads == 0) throw DataError(where + ": GGUF attention.head_count must be positive");
  s.kv_heads = k.integer("attention.head_count_kv", s.heads);
  s.head_dim = k.integer("attention.key_length", s.hidden / s.heads);
  s.max_positions = k.integer("context_length", 0);
  s.vocab = gguf_vocab(h, k);
  check_dimensions(s);  // before gguf_moe and gguf_sliding build per-layer tables
  s.name = printable(h.string("general.name", where));
  s.tied_embeddings = !gguf_has_tensor(h, "output.weight");
  s.qkv_bias = gguf_has_tensor(h, "blk.0.attn_q.bias");
  s.qk_norm = gguf_has_tensor(h, "blk.0.attn_q_norm.weight");
  if (k.integer("attention.kv_lora_rank", 0) > 0) {  // DeepSeek MLA
    s.mla_enabled = true;
    s.mla.kv_lora_rank = k.integer("attention.kv_lora_rank");
    s.mla.q_lora_rank = k.integer("attention.q_lora_rank", 0);
    s.mla.qk_rope_head_dim = k.integer("rope.dimension_count");
    s.mla.qk_nope_head_dim = s.head_dim - s.mla.qk_rope_head_dim;
    s.mla.v_head_dim = k.integer("attention.value_length", s.head_dim);
    s.kv_heads = s.heads;
  }
  gguf_moe(s, k);
  if (s.intermediate == 0) s.intermediate = s.moe.intermediate;  // all-MoE models may omit the dense width
  const std::int64_t window = k.integer("attention.sliding_window", 0);
  if (window > 1'000'000'000) throw DataError(where + ": GGUF attention.sliding_window " + std::to_string(window) + " is absurd");
  gguf_sliding(s, k, window);
  if (k.arch() == "gemma4") gguf_gemma4(s, h, k, where);
  validate(s);
  return s;
}

}  // namespace detail

// The language model of a GGUF file. Shapes come from the metadata; the tensors' own bytes are the weights
// (checkpoint.h), so quantisation mixes need no guessing.
inline ModelSpec model_from_gguf(const gguf_file::Header& h, const std::string& where) {
  try {
    return detail::gguf_spec(h, where);
  } catch (const InputError& e) {
    throw DataError(where + ": " + e.what());  // a file's bad shape is a data problem, not a usage one
  }
}

}  // namespace gpuplan
