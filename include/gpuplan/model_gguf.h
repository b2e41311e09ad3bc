// GGUF metadata → ModelSpec: the shape llama.cpp itself reads (src/llama-model.cpp, load_hparams; key names from
// src/llama-arch.cpp, LLM_KV_NAMES: "{arch}.block_count", "{arch}.attention.head_count_kv", ...).
#pragma once
#include <algorithm>
#include <optional>
#include <string>

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
    if (v && v->kind == gguf_file::Value::Kind::integer && v->i >= 0) return v->i;
    if (v && v->kind == gguf_file::Value::Kind::array && !v->ints.empty()) {
      std::int64_t m = 0;
      for (auto x : v->ints) m = std::max(m, x);
      return m;
    }
    if (fallback) return *fallback;
    throw DataError(where_ + ": GGUF is missing \"" + arch_ + "." + key + "\"");
  }
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
// global layer in six, gpt-oss alternates starting with a sliding one; others slide everywhere.
inline void gguf_sliding(ModelSpec& s, const std::string& arch, std::int64_t window) {
  if (window <= 0) return;
  s.sliding_window = window;
  s.sliding_layers.assign(static_cast<std::size_t>(s.layers), true);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    bool slide = true;
    if (arch == "gemma2" || arch == "gpt-oss") slide = l % 2 == 0;
    else if (arch == "gemma3") slide = (l + 1) % 6 != 0;
    s.sliding_layers[static_cast<std::size_t>(l)] = slide;
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
  gguf_sliding(s, k.arch(), window);
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
