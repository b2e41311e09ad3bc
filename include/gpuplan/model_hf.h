// Hugging Face config.json → ModelSpec, one function per model_type family.
#pragma once
#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model.h"
#include "quant.h"
#include "text.h"

namespace gpuplan {

namespace detail {

class HfConfig {
 public:
  HfConfig(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {
    // Multimodal wrappers keep the language model under text_config.
    if (j_.contains("text_config") && j_["text_config"].is_object() && !j_.contains("num_hidden_layers"))
      j_ = j_["text_config"];
    // transformers' attribute_map: one field, two names across versions and families (transformers 5 writes
    // Qwen3-MoE's expert count as num_local_experts, 4.x as num_experts). Either name fills the other.
    static constexpr std::pair<const char*, const char*> aliases[] = {
        {"n_routed_experts", "num_local_experts"}, {"num_experts", "num_local_experts"},
        {"num_experts_per_tok", "num_experts_per_token"}, {"num_experts_per_tok", "moe_topk"},
        {"num_experts_per_tok", "experts_per_token"}, {"num_experts_per_tok", "top_k_experts"},
        {"moe_intermediate_size", "expert_intermediate_size"}};
    if (!j_.is_object()) return;
    for (const auto& [a, b] : aliases) {
      if (!has(a) && has(b)) j_[a] = j_[b];
      else if (has(a) && !has(b)) j_[b] = j_[a];
    }
  }
  bool has(const char* k) const { return j_.contains(k) && !j_[k].is_null(); }
  std::int64_t integer(const char* k) const {
    if (!has(k)) throw DataError(where_ + ": missing field \"" + k + "\"");
    const auto& v = j_[k];
    // Unsigned above 2^63 reads as negative here; 2^40 bounds every field so that local sums and products
    // (4·hidden, heads·head_dim) cannot overflow before check_dimensions sees the shape.
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (std::int64_t(1) << 40))
      throw DataError(where_ + ": field \"" + k + "\" must be an integer in 0 … 2^40");
    return v.get<std::int64_t>();
  }
  std::int64_t integer(const char* k, std::int64_t fallback) const { return has(k) ? integer(k) : fallback; }
  bool boolean(const char* k, bool fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_boolean()) throw DataError(where_ + ": field \"" + k + "\" must be true or false");
    return j_[k].get<bool>();
  }
  double number(const char* k, double fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_number() || !std::isfinite(j_[k].get<double>()))
      throw DataError(where_ + ": field \"" + k + "\" must be a finite number");
    return j_[k].get<double>();
  }
  std::string string(const char* k, std::string fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_string()) throw DataError(where_ + ": field \"" + k + "\" must be a string");
    return j_[k].get<std::string>();
  }
  const nlohmann::json& raw() const { return j_; }
  const std::string& where() const { return where_; }

 private:
  nlohmann::json j_;
  std::string where_;
};

// Qwen3-Next and Qwen3.5/3.6 MoE (transformers Qwen3_5MoeTextConfig: the text_config of qwen3_5_moe): Gated
// DeltaNet linear attention with gated full attention every full_attention_interval-th layer, routed experts plus
// one gated shared expert. Qwen3.5 splits in_proj_qkvz/in_proj_ba into four projections of the same sizes
// (transformers modeling_qwen3_5_moe.py), so one parameter layout serves both.
inline bool gated_deltanet_hybrid(const std::string& type) { return type == "qwen3_next" || type == "qwen3_5_moe_text"; }

inline void read_attention_shape(ModelSpec& s, const HfConfig& c) {
  s.vocab = c.integer("vocab_size");
  s.hidden = c.integer("hidden_size");
  s.layers = c.integer("num_hidden_layers");
  s.heads = c.integer("num_attention_heads");
  s.kv_heads = c.integer("num_key_value_heads", s.heads);
  if (s.heads == 0) throw DataError(c.where() + ": num_attention_heads must be positive");
  s.head_dim = c.integer("head_dim", s.hidden / s.heads);
  s.max_positions = c.integer("max_position_embeddings", 0);
}

// Kimi Linear keeps its KDA layers' shape under linear_attn_config.
inline const nlohmann::json& kimi_linear_config(const HfConfig& c) {
  const auto& r = c.raw();
  if (!r.contains("linear_attn_config") || !r["linear_attn_config"].is_object())
    throw DataError(c.where() + ": kimi_linear needs linear_attn_config");
  return r["linear_attn_config"];
}

// Each layer's attention: layer_types (transformers ≥ 4.53) where the config lists it, else the family's pattern.
// Windowed layers (sliding, or Llama 4's chunked) keep at most sliding_window tokens; linear ones a fixed state.
inline std::string default_layer_type(const ModelSpec& s, const HfConfig& c, const std::string& type, std::int64_t l) {
  if (type == "mistral" || type == "mixtral" || type == "phi3" || type == "phimoe") return "sliding_attention";
  if (type == "gemma2" || type == "gpt_oss") return l % 2 == 0 ? "sliding_attention" : "full_attention";
  if (type == "gemma3_text" || type == "gemma4_text") {
    const std::int64_t pattern = std::max<std::int64_t>(1, c.integer("sliding_window_pattern", 6));  // 5 local : 1
    // Gemma4TextConfig.__post_init__ forces the last layer to full attention.
    if (type == "gemma4_text" && l == s.layers - 1) return "full_attention";
    return (l + 1) % pattern != 0 ? "sliding_attention" : "full_attention";
  }
  if (type == "llama4_text") {  // no_rope_layers: 1 = a RoPE layer, which attends within its chunk; 0 = global NoPE
    if (c.has("no_rope_layers")) {
      const auto& r = c.raw()["no_rope_layers"];
      if (!r.is_array() || static_cast<std::int64_t>(r.size()) != s.layers || !r[std::size_t(l)].is_number_integer())
        throw DataError(c.where() + ": no_rope_layers must list 0 or 1 per layer");
      return r[std::size_t(l)].get<std::int64_t>() != 0 ? "chunked_attention" : "full_attention";
    }
    const std::int64_t every = std::max<std::int64_t>(1, c.integer("no_rope_layer_interval", 4));
    return (l + 1) % every != 0 ? "chunked_attention" : "full_attention";
  }
  if (gated_deltanet_hybrid(type)) {
    const std::int64_t every = std::max<std::int64_t>(1, c.integer("full_attention_interval", 4));
    return (l + 1) % every != 0 ? "linear_attention" : "full_attention";
  }
  if (type == "kimi_linear") {  // linear_attn_config.kda_layers: the KDA layers, numbered from 1
    const auto& kda = kimi_linear_config(c)["kda_layers"];
    if (!kda.is_array()) throw DataError(c.where() + ": linear_attn_config.kda_layers must be a list");
    for (const auto& k : kda)
      if (k.is_number_integer() && k.get<std::int64_t>() == l + 1) return "linear_attention";
    return "full_attention";
  }
  return "full_attention";
}

inline void read_layer_types(ModelSpec& s, const HfConfig& c, const std::string& type) {
  std::int64_t window = c.integer("sliding_window", 0);
  if (c.has("use_sliding_window") && !c.boolean("use_sliding_window", false)) window = 0;  // Qwen2: off by default
  if (type == "llama4_text") {
    window = c.integer("attention_chunk_size", 0);
    s.chunked_attention = window > 0;
  }
  const bool listed = c.has("layer_types");
  const nlohmann::json* types = listed ? &c.raw()["layer_types"] : nullptr;
  if (listed && (!types->is_array() || static_cast<std::int64_t>(types->size()) != s.layers))
    throw DataError(c.where() + ": layer_types must list one entry per layer");
  s.sliding_layers.assign(static_cast<std::size_t>(s.layers), false);
  s.linear_layers.assign(static_cast<std::size_t>(s.layers), false);
  bool any_linear = false;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    if (listed && !(*types)[i].is_string()) throw DataError(c.where() + ": layer_types entries must be strings");
    const std::string t = listed ? (*types)[i].get<std::string>() : default_layer_type(s, c, type, l);
    if (t != "full_attention" && t != "sliding_attention" && t != "chunked_attention" && t != "linear_attention")
      throw DataError(c.where() + ": unsupported layer type \"" + t + "\"");
    s.sliding_layers[i] = window > 0 && (t == "sliding_attention" || t == "chunked_attention");
    s.linear_layers[i] = t == "linear_attention";
    any_linear = any_linear || s.linear_layers[i];
  }
  s.sliding_window = std::find(s.sliding_layers.begin(), s.sliding_layers.end(), true) != s.sliding_layers.end() ? window : 0;
  if (s.sliding_window == 0) s.sliding_layers.clear();
  if (!any_linear) s.linear_layers.clear();
}

// Layers whose attention or FFN differs from the model-wide shape (transformers Gemma4TextConfig, modeling_gemma4.py
// Gemma4TextAttention and Gemma4TextMLP; vLLM gemma4.py Gemma4DecoderLayer): full-attention layers take
// global_head_dim, and with attention_k_eq_v num_global_key_value_heads and no v_proj; the last num_kv_shared_layers
// layers read the K and V of the last earlier layer of their attention type, and use_double_wide_mlp doubles their
// FFN. Read for every family: configs without these fields get no per-layer shapes.
inline void read_layer_shapes(ModelSpec& s, const HfConfig& c) {
  const std::int64_t global_dim = c.integer("global_head_dim", s.head_dim);
  const bool k_eq_v = c.boolean("attention_k_eq_v", false);
  const std::int64_t global_kv = k_eq_v ? c.integer("num_global_key_value_heads", s.kv_heads) : s.kv_heads;
  const std::int64_t shared = c.integer("num_kv_shared_layers", 0);
  if (shared > s.layers) throw DataError(c.where() + ": num_kv_shared_layers exceeds num_hidden_layers");
  const bool wide = c.boolean("use_double_wide_mlp", false);
  std::vector<LayerShape> per_layer;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const bool full = !s.is_sliding_layer(l) && !s.is_linear_layer(l);
    const bool reads_shared = l >= s.layers - shared;
    per_layer.push_back({full ? global_kv : s.kv_heads, full ? global_dim : s.head_dim,
                         s.intermediate * (wide && reads_shared ? 2 : 1), full && k_eq_v, reads_shared});
  }
  set_layer_shapes(s, per_layer);
  s.per_layer_input = c.integer("hidden_size_per_layer_input", 0);
  s.per_layer_vocab = s.per_layer_input > 0 ? c.integer("vocab_size_per_layer_input", s.vocab) : 0;
}

// RoPE: transformers 5 nests it as rope_parameters {rope_theta, partial_rotary_factor, rope_type, ...}; 4.x
// writes rope_theta and partial_rotary_factor at the top level (rope_scaling beside them).
inline void read_rope(ModelSpec& s, const HfConfig& c) {
  if (c.has("rope_parameters")) {
    const auto& r = c.raw()["rope_parameters"];
    if (!r.is_object()) throw DataError(c.where() + ": rope_parameters must be an object");
    const HfConfig rc(r, c.where() + ": rope_parameters");
    s.rope_theta = rc.number("rope_theta", 0.0);
    s.partial_rotary = rc.number("partial_rotary_factor", c.number("partial_rotary_factor", 1.0));
  } else {
    s.rope_theta = c.number("rope_theta", 0.0);
    s.partial_rotary = c.number("partial_rotary_factor", 1.0);
  }
  if (!(s.rope_theta >= 0) || !(s.partial_rotary > 0 && s.partial_rotary <= 1))
    throw DataError(c.where() + ": rope_theta must be ≥ 0 and partial_rotary_factor in (0, 1]");
}

inline void set_moe_layers(ModelSpec& s, std::int64_t first_dense, std::int64_t every) {
  s.moe_layers.assign(static_cast<std::size_t>(s.layers), false);
  if (every <= 0) every = 1;
  for (std::int64_t l = first_dense; l < s.layers; ++l)
    if ((l + 1) % every == 0 || every == 1) s.moe_layers[static_cast<std::size_t>(l)] = true;
}

inline void read_routed_experts(ModelSpec& s, const HfConfig& c, const char* width_field) {
  s.moe.experts = c.integer("num_experts");
  s.moe.experts_per_token = c.integer("num_experts_per_tok");
  s.moe.intermediate = c.integer(width_field);
}

inline void read_mla(ModelSpec& s, const HfConfig& c) {
  s.mla_enabled = true;
  s.mla.q_lora_rank = c.integer("q_lora_rank", 0);
  s.mla.kv_lora_rank = c.integer("kv_lora_rank");
  s.mla.qk_nope_head_dim = c.integer("qk_nope_head_dim");
  s.mla.qk_rope_head_dim = c.integer("qk_rope_head_dim");
  s.mla.v_head_dim = c.integer("v_head_dim");
  s.head_dim = s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim;
  s.kv_heads = s.heads;  // MLA expands to one key/value per head
}

// The feed-forward blocks: which layers route to experts, how many, how wide, and what is shared.
inline void read_moe(ModelSpec& s, const HfConfig& c, const std::string& type) {
  if (type == "mixtral" || type == "phimoe" || type == "granitemoe" || type == "granitemoeshared" ||
      type == "gpt_oss") {
    read_routed_experts(s, c, "intermediate_size");  // every layer is MoE; intermediate_size is one expert's
    s.moe.router_linear_bias = type == "gpt_oss";
    s.moe.shared_intermediate = type == "granitemoeshared" ? c.integer("shared_intermediate_size", 0) : 0;
    s.moe.shared_experts = s.moe.shared_intermediate > 0 ? 1 : 0;
    set_moe_layers(s, 0, 1);
  } else if (type == "qwen2_moe" || type == "qwen3_moe" || gated_deltanet_hybrid(type)) {
    read_routed_experts(s, c, "moe_intermediate_size");
    if (type != "qwen3_moe") {  // one shared expert behind a sigmoid gate
      s.moe.shared_intermediate = c.integer("shared_expert_intermediate_size", 0);
      s.moe.shared_experts = s.moe.shared_intermediate > 0 ? 1 : 0;
      s.moe.shared_gate = s.moe.shared_experts > 0;
    }
    set_moe_layers(s, 0, c.integer("decoder_sparse_step", 1));
    if (c.has("mlp_only_layers")) {
      const auto& m = c.raw()["mlp_only_layers"];
      if (!m.is_array()) throw DataError(c.where() + ": mlp_only_layers must be a list");
      for (const auto& l : m)
        if (l.is_number_integer() && l.get<std::int64_t>() >= 0 && l.get<std::int64_t>() < s.layers)
          s.moe_layers[static_cast<std::size_t>(l.get<std::int64_t>())] = false;
    }
  } else if (type == "llama4_text") {  // routed experts and one shared expert of intermediate_size; dense layers wider
    read_routed_experts(s, c, "intermediate_size");
    s.intermediate = c.integer("intermediate_size_mlp", s.intermediate);
    s.moe.shared_experts = 1;
    s.moe.shared_intermediate = s.moe.intermediate;
    set_moe_layers(s, 0, c.integer("interleave_moe_layer_step", 1));
    s.moe.dense_routing = true;  // Llama4TextMoe: hidden_states.repeat(num_experts, 1) · scores, then bmm
  } else if (type == "gemma4_text" && c.boolean("enable_moe_block", false)) {
    // Gemma4TextDecoderLayer: the dense MLP (intermediate_size) runs beside the routed experts on every layer, as an
    // ungated shared expert; the router scales its input and its weights (router.scale, router.per_expert_scale).
    read_routed_experts(s, c, "moe_intermediate_size");
    s.moe.shared_experts = 1;
    s.moe.shared_intermediate = s.intermediate;
    s.router_scales = true;
    set_moe_layers(s, 0, 1);
  } else if ((type == "deepseek_v3" || type == "deepseek_v2" || type == "glm4_moe" || type == "kimi_linear") &&
             c.integer("num_experts", 0) > 0) {
    read_routed_experts(s, c, "moe_intermediate_size");
    s.moe.shared_experts = c.integer("n_shared_experts", c.integer("num_shared_experts", 0));  // Kimi's name
    s.moe.shared_intermediate = s.moe.intermediate;
    s.moe.router_bias = type != "deepseek_v2";  // noaux_tc routing keeps a per-expert score bias
    set_moe_layers(s, c.integer("first_k_dense_replace", 0), c.integer("moe_layer_freq", 1));
  }
}

// What a family changes in the attention block and norms relative to Llama.
inline void read_attention_details(ModelSpec& s, const HfConfig& c, const std::string& type) {
  const bool gemma = type.rfind("gemma", 0) == 0;
  const bool qwen2 = type == "qwen2" || type == "qwen2_moe";
  s.qkv_bias = qwen2 || c.boolean("attention_bias", false);  // Qwen2 q/k/v always carry a bias
  // Llama, gpt-oss, Granite and PhiMoE put attention_bias on o_proj too; Qwen2 and GLM-4.5 on q/k/v only.
  s.o_bias = (type == "llama" || type == "gpt_oss" || type.rfind("granite", 0) == 0 || type == "phimoe") && s.qkv_bias;
  // Seed-OSS names the o_proj bias apart (transformers SeedOssAttention: attention_out_bias, false in its release).
  if (type == "seed_oss") s.o_bias = c.boolean("attention_out_bias", false);
  s.qk_norm = type == "qwen3" || type == "qwen3_moe" || gated_deltanet_hybrid(type) || type == "gemma3_text" ||
              type == "gemma4_text" ||
              type == "olmo2" || (type == "glm4_moe" && c.boolean("use_qk_norm", false));
  s.qk_norm_full = type == "olmo2";
  s.attn_sinks = type == "gpt_oss";
  // Qwen3-Next always gates; Qwen3.5 names it attn_output_gate (true in its releases).
  s.attn_output_gate = gated_deltanet_hybrid(type) && c.boolean("attn_output_gate", true);
  s.norms_per_layer = (type == "gemma2" || type == "gemma3_text" || type == "gemma4_text") ? 4 : 2;
  // Gemma 4's MoE block adds its own pre-norm and a post-norm on each of the two branches.
  if (type == "gemma4_text" && c.boolean("enable_moe_block", false)) s.norms_per_layer = 7;
  if (type == "phimoe") s.norm = NormKind::layer;
  s.lm_head_bias = c.boolean("lm_head_bias", false);
  s.tied_embeddings = c.boolean("tie_word_embeddings", gemma);  // Gemma ties by default, Llama does not
  s.final_logit_softcap = c.number("final_logit_softcapping", 0.0);
  s.attn_logit_softcap = c.number("attn_logit_softcapping", 0.0);
  if (gated_deltanet_hybrid(type)) {
    s.linear.key_heads = c.integer("linear_num_key_heads");
    s.linear.value_heads = c.integer("linear_num_value_heads");
    s.linear.key_head_dim = c.integer("linear_key_head_dim");
    s.linear.value_head_dim = c.integer("linear_value_head_dim");
    s.linear.conv_kernel = c.integer("linear_conv_kernel_dim");
  }
  if (type == "kimi_linear") {  // KDA: as many key as value heads, one head_dim for both
    const HfConfig k(kimi_linear_config(c), c.where() + ": linear_attn_config");
    s.linear.kind = LinearAttentionKind::kda;
    s.linear.key_heads = s.linear.value_heads = k.integer("num_heads");
    s.linear.key_head_dim = s.linear.value_head_dim = k.integer("head_dim");
    s.linear.conv_kernel = k.integer("short_conv_kernel_size");
  }
}

inline ModelSpec from_llama_like(const HfConfig& c, const std::string& type) {
  ModelSpec s;
  s.model_type = type;
  s.family = Family::llama;
  read_attention_shape(s, c);
  // Qwen3.5 MoE has no dense layer (every decoder layer is a Qwen3_5MoeSparseMoeBlock) and its config no
  // intermediate_size: the expert width stands in for the dense width, which no layer then uses.
  s.intermediate = type == "qwen3_5_moe_text" && !c.has("intermediate_size") ? c.integer("moe_intermediate_size")
                                                                             : c.integer("intermediate_size");
  check_dimensions(s);  // before read_layer_types and read_moe build per-layer tables
  s.activation = c.string("hidden_act", c.string("hidden_activation", "silu"));
  s.dropout = c.number("attention_dropout", 0.0);
  s.mlp_bias = c.boolean("mlp_bias", type == "gpt_oss");  // gpt-oss experts carry biases
  read_attention_details(s, c, type);
  read_layer_types(s, c, type);
  read_layer_shapes(s, c);
  read_rope(s, c);
  if (type == "deepseek_v3" || type == "deepseek_v2" || type == "kimi_linear") read_mla(s, c);
  read_moe(s, c, type);
  return s;
}

inline ModelSpec from_gpt2(const HfConfig& c) {
  ModelSpec s;
  s.model_type = "gpt2";
  s.family = Family::gpt2;
  s.vocab = c.integer("vocab_size");
  s.hidden = c.integer("n_embd");
  s.layers = c.integer("n_layer");
  s.heads = c.integer("n_head");
  if (s.heads == 0) throw DataError(c.where() + ": n_head must be positive");
  s.kv_heads = s.heads;
  s.head_dim = s.hidden / s.heads;
  s.intermediate = c.integer("n_inner", 4 * s.hidden);  // GPT-2: 4h when n_inner is null
  s.mlp = MlpKind::plain;
  s.norm = NormKind::layer;
  s.activation = c.string("activation_function", "gelu_new");
  s.tied_embeddings = c.boolean("tie_word_embeddings", true);
  s.qkv_bias = s.o_bias = s.mlp_bias = true;
  s.learned_positions = c.integer("n_positions");
  s.max_positions = s.learned_positions;
  s.dropout = c.number("attn_pdrop", 0.1);
  return s;
}

inline ModelSpec from_gpt_neox(const HfConfig& c) {
  ModelSpec s;
  s.model_type = "gpt_neox";
  s.family = Family::gpt_neox;
  read_attention_shape(s, c);
  s.kv_heads = s.heads;
  s.intermediate = c.integer("intermediate_size");
  s.mlp = MlpKind::plain;
  s.norm = NormKind::layer;
  s.activation = c.string("hidden_act", "gelu");
  s.tied_embeddings = c.boolean("tie_word_embeddings", false);
  s.qkv_bias = c.boolean("attention_bias", true);
  s.o_bias = s.qkv_bias;
  s.mlp_bias = true;
  s.parallel_residual = c.boolean("use_parallel_residual", true);
  s.dropout = c.number("attention_dropout", 0.0);
  return s;
}

}  // namespace detail

inline constexpr std::string_view llama_like_types[] = {
    "llama",      "mistral", "mixtral",     "qwen2",   "qwen2_moe",  "qwen3",      "qwen3_moe",        "qwen3_next",
    "qwen3_5_moe_text", "gemma", "gemma2",  "gemma3_text", "gemma4_text", "phi3",    "phimoe",     "deepseek_v2", "deepseek_v3",
    "glm4_moe",   "gpt_oss", "olmo2",       "granite", "granitemoe", "granitemoeshared", "llama4_text", "seed_oss",
    "kimi_linear"};

inline constexpr const char* supported_model_types =
    "llama, llama4 (text), mistral, mistral3 (text), mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen3_next, "
    "qwen3_5_moe (text: Qwen3.5/3.6 MoE), gemma, gemma2, gemma3 (text), gemma4 (text, dense and MoE), phi3 (Phi-3, Phi-4), phimoe, gpt2, gpt_neox, "
    "deepseek_v2, deepseek_v3, glm4_moe, gpt_oss, olmo2, granite, granitemoe, granitemoeshared, seed_oss, kimi_linear";

// Parse an HF config object; `where` names it in errors (a path or a preset id).
inline ModelSpec model_from_hf_config(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw DataError(where + ": expected a JSON object");
  detail::HfConfig c(j, where);
  const std::string type = c.string("model_type", "");
  if (type.empty()) throw DataError(where + ": missing field \"model_type\"");
  ModelSpec s;
  try {
    if (type == "gpt2") s = detail::from_gpt2(c);
    else if (type == "gpt_neox") s = detail::from_gpt_neox(c);
    else if (std::find(std::begin(llama_like_types), std::end(llama_like_types), type) != std::end(llama_like_types))
      s = detail::from_llama_like(c, type);
    else
      throw DataError(where + ": unsupported model_type \"" + type + "\" (supported: " + supported_model_types + ")");
    s.name = printable(c.string("_name_or_path", ""));
    if (s.name.empty()) s.name = printable(where);
    validate(s);
  } catch (const InputError& e) {
    throw DataError(where + ": " + e.what());  // a config's bad shape is a data problem, not a usage one
  }
  return s;
}

namespace detail {

// An FP8 checkpoint's quantization_config as transformers' FineGrainedFP8 and the Qwen / DeepSeek FP8 releases write
// it: quant_method "fp8", every Linear in FP8 e4m3 but those modules_to_not_convert (or ignored_layers, SGLang's and
// vLLM's Fp8Config read both) names, which stay 16 bit, and weight_block_size [n, k] giving one fp32 scale
// (weight_scale_inv) per n × k block. Embeddings and lm_head are not Linear layers to SGLang's and vLLM's Fp8Config
// (VocabParallelEmbedding / ParallelLMHead): 16 bit whether listed or not.
inline ModuleFormats fp8_module_formats(const nlohmann::json& q, const std::string& where) {
  ModuleFormats m;
  m.otherwise = WeightFormat::fp8;
  m.rules = {{"embed_tokens", WeightFormat::bf16}, {"lm_head", WeightFormat::bf16}};
  const auto block = q.find("weight_block_size");
  if (block != q.end() && !block->is_null()) {
    if (!block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() || !(*block)[1].is_number_integer() ||
        (*block)[0].get<std::int64_t>() <= 0 || (*block)[1].get<std::int64_t>() <= 0)
      throw DataError(where + ": quantization_config \"weight_block_size\" must be two positive integers");
    m.fp8_scale_block = double((*block)[0].get<std::int64_t>()) * double((*block)[1].get<std::int64_t>());
  }
  std::size_t kept = 0;
  for (const char* key : {"modules_to_not_convert", "ignored_layers"}) {
    const auto it = q.find(key);
    if (it == q.end() || it->is_null()) continue;
    if (!it->is_array()) throw DataError(where + ": quantization_config \"" + key + "\" must be a list of module names");
    for (const auto& name : *it) {
      if (!name.is_string()) throw DataError(where + ": quantization_config \"" + key + "\" must be a list of module names");
      const std::string n = name.get<std::string>();
      if (n.rfind("mtp", 0) == 0) continue;  // the MTP head loads only with speculative decoding
      m.rules.push_back({ModuleFormats::local_name(n), WeightFormat::bf16});
      ++kept;
    }
  }
  m.label = "FP8" + (m.fp8_scale_block > 0 ? " (block scales)" : std::string()) + ", " + std::to_string(kept) +
            " modules kept 16 bit";
  return m;
}

}  // namespace detail

// The per-module formats a config's quantization_config (or hf_quant_config.json's "quantization") gives: an FP8
// checkpoint's (detail::fp8_module_formats), or a ModelOpt MIXED_PRECISION checkpoint's: quant_method "modelopt",
// quant_algo "MIXED_PRECISION", quantized_layers naming each quantized module's quant_algo. Nothing for any other
// config: one format for every linear is what --weights says. NVFP4 and W4A16_NVFP4 store the same 4.5 bits (E2M1 +
// an E4M3 scale per 16); W4A16 only keeps the activations 16 bit.
inline std::optional<ModuleFormats> module_formats_from_config(const nlohmann::json& config, const std::string& where) {
  const nlohmann::json* q = nullptr;
  if (config.contains("quantization_config") && config["quantization_config"].is_object()) q = &config["quantization_config"];
  else if (config.contains("quantization") && config["quantization"].is_object()) q = &config["quantization"];
  if (q && q->value("quant_method", "") == "fp8") return detail::fp8_module_formats(*q, where);
  if (!q || q->value("quant_algo", "") != "MIXED_PRECISION") return std::nullopt;
  if (q->contains("quant_method") && q->value("quant_method", "") != "modelopt") return std::nullopt;
  const auto it = q->find("quantized_layers");
  if (it == q->end() || !it->is_object() || it->empty())
    throw DataError(where + ": quantization_config MIXED_PRECISION needs a non-empty \"quantized_layers\" object");
  ModuleFormats m;
  m.label = "ModelOpt MIXED_PRECISION";
  for (const auto& [name, entry] : it->items()) {
    // The MTP head loads only with speculative decoding; the vision tower is not in the language model's inventory.
    if (name.rfind("mtp", 0) == 0 || name.find("visual") != std::string::npos) continue;
    const std::string algo = entry.is_object() ? entry.value("quant_algo", "") : "";
    WeightFormat f;
    if (algo == "FP8" || algo == "FP8_BLOCK_SCALES" || algo == "FP8_PB_WO") f = WeightFormat::fp8;
    else if (algo == "NVFP4" || algo == "W4A16_NVFP4") f = WeightFormat::nvfp4;
    else
      throw DataError(where + ": quantized_layers \"" + printable(name) + "\": quant_algo \"" + printable(algo) +
                      "\" is not one gpuplan models (FP8, FP8_BLOCK_SCALES, FP8_PB_WO, NVFP4, W4A16_NVFP4)");
    m.rules.push_back({ModuleFormats::local_name(name), f});
  }
  return m;
}

// A Qwen3-VL-style vision encoder's shape from its vision_config (vLLM model_executor/models/qwen3_vl.py
// Qwen3_VisionTransformer); depth 0 when the config has no such encoder.
inline VisionEncoderShape qwen_vision_shape(const nlohmann::json& config) {
  const auto it = config.find("vision_config");
  if (it == config.end() || !it->is_object()) return {};
  const auto& v = *it;
  for (const char* k : {"depth", "hidden_size", "intermediate_size", "patch_size", "temporal_patch_size",
                        "out_hidden_size", "spatial_merge_size", "num_position_embeddings"})
    if (!v.contains(k) || !v[k].is_number_integer() || v[k].get<std::int64_t>() <= 0 || v[k].get<std::int64_t>() > (1 << 20))
      return {};
  auto get = [&](const char* k) { return v[k].get<std::int64_t>(); };
  VisionEncoderShape e;
  e.depth = get("depth"), e.hidden = get("hidden_size"), e.intermediate = get("intermediate_size");
  e.patch = get("patch_size"), e.temporal_patch = get("temporal_patch_size"), e.merge = get("spatial_merge_size");
  e.in_channels = v.value("in_channels", 3), e.out_hidden = get("out_hidden_size");
  e.position_embeddings = get("num_position_embeddings");
  e.deepstack = v.contains("deepstack_visual_indexes") && v["deepstack_visual_indexes"].is_array()
                    ? std::int64_t(v["deepstack_visual_indexes"].size())
                    : 0;
  return e;
}

// Parameters of a Qwen3-VL-style vision encoder: a Conv3d patch embedding over temporal_patch_size frames of
// patch_size² pixels, learned position embeddings, `depth` blocks (two LayerNorms, fused qkv and output
// projections, a two-layer MLP, all with biases), and a patch merger (LayerNorm, then spatial_merge_size² patches
// through two linears to the language model's width) plus one per deepstack index. 0 when the config has no such
// encoder.
inline std::int64_t qwen_vision_params(const nlohmann::json& config) {
  const VisionEncoderShape e = qwen_vision_shape(config);
  if (e.depth == 0) return 0;
  const std::int64_t h = e.hidden, i = e.intermediate, p = e.patch;
  const std::int64_t merged = h * e.merge * e.merge, out = e.out_hidden;
  const std::int64_t patch_embed = e.in_channels * e.temporal_patch * p * p * h + h;
  const std::int64_t block = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h);
  const std::int64_t merger = 2 * h + (merged * merged + merged) + (merged * out + out);
  // The deepstack mergers normalise the merged patches (LayerNorm over h·m²).
  return patch_embed + e.position_embeddings * h + e.depth * block + merger +
         e.deepstack * (merger - 2 * h + 2 * merged);
}

}  // namespace gpuplan
