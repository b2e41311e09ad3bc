// Model architecture: the shape of a decoder-only transformer, its exact parameter inventory, and a standard
// shape derived from a bare parameter count.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "units.h"

namespace gpuplan {

enum class MlpKind { gated, plain };       // gated: SwiGLU/GeGLU (gate, up, down); plain: up, down (GPT-2, NeoX)
enum class NormKind { rms, layer };        // RMSNorm (weight only) or LayerNorm (weight + bias)
enum class Family { llama, gpt2, gpt_neox };  // which HF module layout (names, fused projections) applies

struct MoeSpec {
  std::int64_t experts = 0;             // routed experts per MoE layer (0 = dense model)
  std::int64_t experts_per_token = 0;   // top-k
  std::int64_t intermediate = 0;        // per-expert FFN width
  std::int64_t shared_experts = 0;      // always-active experts (DeepSeek: count; Qwen2-MoE: 1 of shared width)
  std::int64_t shared_intermediate = 0; // width of one shared expert
  bool shared_gate = false;             // Qwen2-MoE: sigmoid gate h→1 on the shared expert
  bool router_bias = false;             // DeepSeek-V3 / GLM-4.5: e_score_correction_bias (E values per layer)
  bool router_linear_bias = false;      // gpt-oss: the router is a Linear with a bias
  bool dense_routing = false;           // HF Llama 4: every token runs through every expert, scaled by its score
  bool operator==(const MoeSpec&) const = default;
};

struct MlaSpec {  // DeepSeek multi-head latent attention (DeepSeek-V2 §2.1)
  std::int64_t q_lora_rank = 0;  // 0: q is projected directly from h
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool operator==(const MlaSpec&) const = default;
};

// Linear attention: a fixed recurrent state per sequence instead of a KV cache that grows with the context. Gated
// DeltaNet (Qwen3-Next, HF Qwen3NextGatedDeltaNet) or Kimi Delta Attention (Kimi Linear, KimiDeltaAttention): the
// same state (a conv window over q, k, v and a key×value matrix per head), different projections.
enum class LinearAttentionKind { gated_deltanet, kda };

struct LinearAttentionSpec {
  LinearAttentionKind kind = LinearAttentionKind::gated_deltanet;
  std::int64_t key_heads = 0;
  std::int64_t value_heads = 0;
  std::int64_t key_head_dim = 0;
  std::int64_t value_head_dim = 0;
  std::int64_t conv_kernel = 0;  // causal depthwise conv1d over q, k, v
  std::int64_t key_dim() const { return key_heads * key_head_dim; }
  std::int64_t value_dim() const { return value_heads * value_head_dim; }
  std::int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  // Elements one sequence keeps per layer: the conv window over q, k, v and one key×value state per value head.
  std::int64_t conv_state() const { return conv_dim() * conv_kernel; }
  std::int64_t recurrent_state() const { return value_heads * key_head_dim * value_head_dim; }
  bool operator==(const LinearAttentionSpec&) const = default;
};

// One layer's own attention and FFN shape, where a model's layers differ (transformers' per_layer_config; Gemma 4,
// modeling_gemma4.py Gemma4TextAttention / Gemma4TextMLP): full-attention layers with their own head_dim and
// key/value heads, values that are the keys (attention_k_eq_v: no v_proj, yet the cache still keeps K and V: vLLM
// loads K into both slots, transformers passes k as v), layers that read an earlier layer's K and V
// (num_kv_shared_layers: no k/v projections or norms and no cache of their own), and a wider FFN.
// A Qwen3-VL-style vision encoder's shape (vision_config of qwen3_vl, qwen3_5 and qwen3_5_moe; model_hf.h
// qwen_vision_shape), what an engine's profiling step runs it with. depth 0: none gpuplan reads.
struct VisionEncoderShape {
  std::int64_t depth = 0, hidden = 0, intermediate = 0, patch = 0, temporal_patch = 0, merge = 0, in_channels = 3;
  std::int64_t out_hidden = 0, position_embeddings = 0, deepstack = 0;
};

struct LayerShape {
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;  // the dense FFN's width
  bool values_are_keys = false;
  bool shares_kv = false;
  bool operator==(const LayerShape&) const = default;
};

// Distinct layer shapes a model may have (Gemma 4 E2B: sliding or full, own or shared KV: 4).
inline constexpr std::size_t max_layer_shapes = 8;

struct ModelSpec {
  std::string name;
  std::string model_type;  // HF model_type, or "derived" for a shape derived from --params
  Family family = Family::llama;
  std::int64_t vocab = 0;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;
  MlpKind mlp = MlpKind::gated;
  std::string activation = "silu";
  NormKind norm = NormKind::rms;
  bool tied_embeddings = false;
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;              // Qwen3 / Gemma 3: RMSNorm over head_dim on q and k
  bool qk_norm_full = false;         // OLMo 2: the q/k RMSNorm spans all heads (q_dim, kv_dim), not head_dim
  bool attn_sinks = false;           // gpt-oss: one learned sink logit per head and layer
  bool attn_output_gate = false;     // Qwen3-Next: q_proj also emits a sigmoid gate on the attention output
  bool lm_head_bias = false;         // Phi-3.5-MoE
  int norms_per_layer = 2;           // Gemma 2/3: 4 (pre/post attention and feed-forward)
  std::int64_t learned_positions = 0;  // GPT-2: wpe rows (n_positions); 0 for rotary models
  std::int64_t max_positions = 0;
  std::int64_t sliding_window = 0;     // 0: none
  std::vector<bool> sliding_layers;    // per layer: true = sliding-window (or Llama 4 chunked) attention
  bool chunked_attention = false;      // Llama 4: the windowed layers attend within fixed chunks of sliding_window
  std::vector<bool> linear_layers;     // per layer: true = linear attention (empty = none)
  LinearAttentionSpec linear;
  double rope_theta = 0;               // rotary base (0: none or not given)
  double partial_rotary = 1.0;         // fraction of head_dim that is rotated (GLM-4.5 0.5, Qwen3-Next 0.25)
  bool parallel_residual = false;      // GPT-NeoX
  double dropout = 0.0;                // HF training dropout on attention/residual/embeddings (GPT-2: 0.1)
  double final_logit_softcap = 0.0;    // Gemma 2: logits = cap · tanh(logits / cap)
  double attn_logit_softcap = 0.0;     // Gemma 2: scores = cap · tanh(scores / cap) (eager attention only)
  MoeSpec moe;
  std::vector<bool> moe_layers;        // per layer: true = MoE FFN (empty = all dense)
  bool mla_enabled = false;
  MlaSpec mla;
  // Per-layer shapes where layers differ: the distinct shapes, and each layer's index into them. Empty: every layer
  // has the model-wide kv_heads, head_dim and intermediate (which then describe the first layer).
  std::vector<LayerShape> layer_shapes;
  std::vector<std::uint8_t> shape_of;
  // Per-layer embeddings (Gemma 4 E2B/E4B, Gemma4TextModel): a second token table of per_layer_vocab rows ×
  // layers·per_layer_input, projected from the hidden state too, and fed to each layer through a gate.
  std::int64_t per_layer_input = 0;    // hidden_size_per_layer_input (0: none)
  std::int64_t per_layer_vocab = 0;    // vocab_size_per_layer_input
  bool router_scales = false;          // Gemma 4 router: a learned input scale (h) and per-expert scale (E)

  std::int64_t q_dim() const { return mla_enabled ? heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim) : heads * head_dim; }
  std::int64_t kv_dim() const { return kv_heads * head_dim; }
  LayerShape shape(std::int64_t l) const {
    return layer_shapes.empty() ? LayerShape{kv_heads, head_dim, intermediate}
                                : layer_shapes[shape_of[static_cast<std::size_t>(l)]];
  }
  // Layer l's widths (the model-wide ones where every layer has the same shape).
  std::int64_t q_dim(std::int64_t l) const { return layer_shapes.empty() ? q_dim() : heads * shape(l).head_dim; }
  std::int64_t kv_dim(std::int64_t l) const { return layer_shapes.empty() ? kv_dim() : shape(l).kv_heads * shape(l).head_dim; }
  std::int64_t intermediate_at(std::int64_t l) const { return layer_shapes.empty() ? intermediate : shape(l).intermediate; }
  // Whether layer l keeps keys and values of its own (not a linear-attention layer, not one reading shared K and V).
  bool keeps_kv(std::int64_t l) const { return !is_linear_layer(l) && !shape(l).shares_kv; }
  bool is_moe_layer(std::int64_t l) const { return !moe_layers.empty() && moe_layers[static_cast<std::size_t>(l)]; }
  std::int64_t moe_layer_count() const {
    std::int64_t n = 0;
    for (bool b : moe_layers) n += b ? 1 : 0;
    return n;
  }
  bool is_sliding_layer(std::int64_t l) const {
    return sliding_window > 0 && !sliding_layers.empty() && sliding_layers[static_cast<std::size_t>(l)];
  }
  bool is_linear_layer(std::int64_t l) const {
    return !linear_layers.empty() && linear_layers[static_cast<std::size_t>(l)];
  }
  bool operator==(const ModelSpec&) const = default;
};

// One parameter tensor family: `count` matrices of out×in (a bias or norm has in = 1).
struct ParamGroup {
  std::string module;      // HF module name, as PEFT's target_modules sees it (q_proj, c_attn, experts, ...)
  std::int64_t out = 0;
  std::int64_t in = 1;
  std::int64_t count = 1;
  bool linear = false;     // an nn.Linear/Conv1D weight (autocast casts these; LoRA can target them)
  bool expert = false;     // routed-expert weight (only experts_per_token/experts of it is active per token)
  bool is_matrix() const { return in > 1; }
  std::int64_t numel() const { return out * in * count; }
};

struct ParamInventory {
  std::vector<ParamGroup> embedding;  // token (and position) embeddings
  // Decoder layers: each kind of layer's groups once (layer_kind below: a 126-layer model has one or two kinds, and
  // naming every layer's groups again was a tenth of a large model's estimate), and each layer's kind.
  std::vector<std::vector<ParamGroup>> kinds;
  std::vector<std::uint8_t> kind_of;
  std::vector<ParamGroup> head;       // final norm and untied output projection
  std::size_t layers() const { return kind_of.size(); }
  const std::vector<ParamGroup>& layer(std::size_t l) const { return kinds[kind_of[l]]; }
};

namespace detail {

inline void add(std::vector<ParamGroup>& v, std::string m, std::int64_t out, std::int64_t in, bool linear,
                std::int64_t count = 1, bool expert = false) {
  v.push_back(ParamGroup{std::move(m), out, in, count, linear, expert});
}

inline void add_norm(std::vector<ParamGroup>& v, const ModelSpec& s, const std::string& name, std::int64_t width) {
  add(v, name, width, 1, false);
  if (s.norm == NormKind::layer) add(v, name + ".bias", width, 1, false);
}

inline void add_linear(std::vector<ParamGroup>& v, const std::string& name, std::int64_t out, std::int64_t in,
                       bool bias, std::int64_t count = 1, bool expert = false) {
  add(v, name, out, in, true, count, expert);
  if (bias) add(v, name + ".bias", out, 1, false, count, expert);
}

inline void add_attention(std::vector<ParamGroup>& v, const ModelSpec& s, std::int64_t layer) {
  const std::int64_t h = s.hidden;
  if (s.mla_enabled) {  // DeepSeek-V2/V3 MLA, HF DeepseekV3Attention
    const auto& m = s.mla;
    const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      add_linear(v, "q_a_proj", m.q_lora_rank, h, s.qkv_bias);
      add_norm(v, s, "q_a_layernorm", m.q_lora_rank);
      add_linear(v, "q_b_proj", s.heads * qk, m.q_lora_rank, false);
    } else {
      add_linear(v, "q_proj", s.heads * qk, h, false);
    }
    add_linear(v, "kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim, h, s.qkv_bias);
    add_norm(v, s, "kv_a_layernorm", m.kv_lora_rank);
    add_linear(v, "kv_b_proj", s.heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, false);
    add_linear(v, "o_proj", h, s.heads * m.v_head_dim, s.o_bias);
    return;
  }
  const std::int64_t q = s.q_dim(layer), kv = s.kv_dim(layer);
  const LayerShape shape = s.shape(layer);
  switch (s.family) {
    case Family::gpt2:  // Conv1D c_attn (h → 3h) and c_proj, both with bias
      add_linear(v, "c_attn", q + 2 * kv, h, true);
      add_linear(v, "c_proj", h, q, true);
      break;
    case Family::gpt_neox:
      add_linear(v, "query_key_value", q + 2 * kv, h, s.qkv_bias);
      add_linear(v, "dense", h, q, s.o_bias);
      break;
    case Family::llama:
      if (s.model_type == "phi3") {
        add_linear(v, "qkv_proj", q + 2 * kv, h, s.qkv_bias);
      } else {
        add_linear(v, "q_proj", s.attn_output_gate ? 2 * q : q, h, s.qkv_bias);
        if (!shape.shares_kv) add_linear(v, "k_proj", kv, h, s.qkv_bias);
        if (!shape.shares_kv && !shape.values_are_keys) add_linear(v, "v_proj", kv, h, s.qkv_bias);
      }
      add_linear(v, "o_proj", h, q, s.o_bias);
      if (s.qk_norm) {
        add(v, "q_norm", s.qk_norm_full ? q : shape.head_dim, 1, false);
        if (!shape.shares_kv) add(v, "k_norm", s.qk_norm_full ? kv : shape.head_dim, 1, false);
      }
      if (s.attn_sinks) add(v, "sinks", s.heads, 1, false);
      break;
  }
}

// HF Qwen3NextGatedDeltaNet: one projection to q, k, v and the output gate z, one to the per-head beta and decay
// inputs, a depthwise causal conv1d over q, k, v, per-head dt_bias and A_log, a gated RMSNorm over value_head_dim.
// Kimi Linear's KimiDeltaAttention (modeling_kimi.py): q, k, v projections each with a depthwise causal conv, the
// decay gate and the output gate as low-rank pairs through head_dim (the output gate's second half with a bias), a
// per-head beta projection, per-head A_log, dt_bias over the key width, a gated RMSNorm over head_dim.
inline void add_kda_attention(std::vector<ParamGroup>& v, const ModelSpec& s) {
  const auto& a = s.linear;
  add_linear(v, "q_proj", a.key_dim(), s.hidden, false);
  add_linear(v, "k_proj", a.key_dim(), s.hidden, false);
  add_linear(v, "v_proj", a.value_dim(), s.hidden, false);
  add(v, "qkv_conv1d", a.conv_dim() * a.conv_kernel, 1, false);
  add_linear(v, "f_a_proj", a.value_head_dim, s.hidden, false);
  add_linear(v, "f_b_proj", a.key_dim(), a.value_head_dim, false);
  add_linear(v, "b_proj", a.value_heads, s.hidden, false);
  add(v, "A_log", a.value_heads, 1, false);
  add(v, "dt_bias", a.key_dim(), 1, false);
  add_linear(v, "g_a_proj", a.value_head_dim, s.hidden, false);
  add_linear(v, "g_b_proj", a.value_dim(), a.value_head_dim, true);
  add(v, "o_norm", a.value_head_dim, 1, false);
  add_linear(v, "o_proj", s.hidden, a.value_dim(), false);
}

inline void add_linear_attention(std::vector<ParamGroup>& v, const ModelSpec& s) {
  const auto& a = s.linear;
  if (a.kind == LinearAttentionKind::kda) return add_kda_attention(v, s);
  add_linear(v, "in_proj_qkvz", 2 * a.key_dim() + 2 * a.value_dim(), s.hidden, false);
  add_linear(v, "in_proj_ba", 2 * a.value_heads, s.hidden, false);
  add(v, "conv1d", a.conv_dim() * a.conv_kernel, 1, false);
  add(v, "dt_bias", a.value_heads, 1, false);
  add(v, "A_log", a.value_heads, 1, false);
  add(v, "norm", a.value_head_dim, 1, false);
  add_linear(v, "out_proj", s.hidden, a.value_dim(), false);
}

inline void add_dense_mlp(std::vector<ParamGroup>& v, const ModelSpec& s, std::int64_t width, const std::string& prefix,
                          std::int64_t count = 1, bool expert = false) {
  const std::int64_t h = s.hidden;
  switch (s.family) {
    case Family::gpt2:
      add_linear(v, prefix + "c_fc", width, h, true);
      add_linear(v, prefix + "c_proj", h, width, true);
      return;
    case Family::gpt_neox:
      add_linear(v, prefix + "dense_h_to_4h", width, h, s.mlp_bias);
      add_linear(v, prefix + "dense_4h_to_h", h, width, s.mlp_bias);
      return;
    case Family::llama:
      if (s.mlp == MlpKind::plain) {
        add_linear(v, prefix + "up_proj", width, h, s.mlp_bias, count, expert);
        add_linear(v, prefix + "down_proj", h, width, s.mlp_bias, count, expert);
      } else if (s.model_type == "phi3") {
        add_linear(v, prefix + "gate_up_proj", 2 * width, h, s.mlp_bias, count, expert);
        add_linear(v, prefix + "down_proj", h, width, s.mlp_bias, count, expert);
      } else {
        add_linear(v, prefix + "gate_proj", width, h, s.mlp_bias, count, expert);
        add_linear(v, prefix + "up_proj", width, h, s.mlp_bias, count, expert);
        add_linear(v, prefix + "down_proj", h, width, s.mlp_bias, count, expert);
      }
      return;
  }
}

inline void add_moe(std::vector<ParamGroup>& v, const ModelSpec& s) {
  const auto& m = s.moe;
  add_linear(v, "gate", m.experts, s.hidden, m.router_linear_bias);  // router
  if (m.router_bias) add(v, "gate.e_score_correction_bias", m.experts, 1, false);
  if (s.router_scales) {  // Gemma4TextRouter: scale (h) on its normed input, per_expert_scale (E) on the weights
    add(v, "router.scale", s.hidden, 1, false);
    add(v, "router.per_expert_scale", m.experts, 1, false);
  }
  add_dense_mlp(v, s, m.intermediate, "experts.", m.experts, true);
  if (m.shared_experts > 0) add_dense_mlp(v, s, m.shared_intermediate * m.shared_experts, "shared_experts.");
  if (m.shared_gate) add_linear(v, "shared_expert_gate", 1, s.hidden, false);
}

}  // namespace detail

// What layer_params depends on besides the spec: the layer's kind (linear or softmax attention, MoE or dense MLP, and
// its shape where layers differ), a number below max_layer_kinds.
inline constexpr std::size_t max_layer_kinds = 4 * max_layer_shapes;
inline int layer_kind(const ModelSpec& s, std::int64_t layer) {
  const int shape = s.layer_shapes.empty() ? 0 : int(s.shape_of[static_cast<std::size_t>(layer)]);
  return (s.is_linear_layer(layer) ? 1 : 0) + (s.is_moe_layer(layer) ? 2 : 0) + 4 * shape;
}

// One decoder layer's named parameter groups; it depends on `layer` only through layer_kind (param_inventory relies on it).
inline std::vector<ParamGroup> layer_params(const ModelSpec& s, std::int64_t layer) {
  std::vector<ParamGroup> v;
  const std::int64_t h = s.hidden;
  const bool gpt = s.family != Family::llama;
  detail::add_norm(v, s, gpt ? (s.family == Family::gpt2 ? "ln_1" : "input_layernorm") : "input_layernorm", h);
  if (s.is_linear_layer(layer)) detail::add_linear_attention(v, s);
  else detail::add_attention(v, s, layer);
  detail::add_norm(v, s, s.family == Family::gpt2 ? "ln_2" : "post_attention_layernorm", h);
  for (int extra = 2; extra < s.norms_per_layer; ++extra) detail::add_norm(v, s, "feedforward_layernorm", h);
  if (s.is_moe_layer(layer)) detail::add_moe(v, s);
  else detail::add_dense_mlp(v, s, s.intermediate_at(layer), "");
  if (s.per_layer_input > 0) {  // Gemma4TextDecoderLayer: the gate from h, the projection back, its norm
    detail::add_linear(v, "per_layer_input_gate", s.per_layer_input, h, false);
    detail::add_linear(v, "per_layer_projection", h, s.per_layer_input, false);
    detail::add_norm(v, s, "post_per_layer_input_norm", h);
  }
  return v;
}

// The embedding and head groups; no layers.
inline ParamInventory param_inventory_without_layers(const ModelSpec& s) {
  ParamInventory inv;
  detail::add(inv.embedding, s.family == Family::gpt2 ? "wte" : "embed_tokens", s.vocab, s.hidden, false);
  if (s.learned_positions > 0) detail::add(inv.embedding, "wpe", s.learned_positions, s.hidden, false);
  if (s.per_layer_input > 0) {  // Gemma4TextModel: the per-layer table, its projection from h and that one's norm
    const std::int64_t width = s.layers * s.per_layer_input;
    detail::add(inv.embedding, "embed_tokens_per_layer", s.per_layer_vocab, width, false);
    detail::add_linear(inv.embedding, "per_layer_model_projection", width, s.hidden, false);
    detail::add_norm(inv.embedding, s, "per_layer_projection_norm", s.per_layer_input);
  }
  detail::add_norm(inv.head, s, s.family == Family::gpt2 ? "ln_f" : "norm", s.hidden);
  if (!s.tied_embeddings) detail::add(inv.head, "lm_head", s.vocab, s.hidden, true);
  if (s.lm_head_bias) detail::add(inv.head, "lm_head.bias", s.vocab, 1, false);
  return inv;
}

inline ParamInventory param_inventory(const ModelSpec& s) {
  ParamInventory inv = param_inventory_without_layers(s);
  std::array<int, max_layer_kinds> index;  // by layer_kind: its place in inv.kinds
  index.fill(-1);
  inv.kind_of.reserve(static_cast<std::size_t>(std::max<std::int64_t>(s.layers, 0)));
  for (std::int64_t l = 0; l < s.layers; ++l) {
    int& k = index[static_cast<std::size_t>(layer_kind(s, l))];
    if (k < 0) {
      k = int(inv.kinds.size());
      inv.kinds.push_back(layer_params(s, l));
    }
    inv.kind_of.push_back(static_cast<std::uint8_t>(k));
  }
  return inv;
}

namespace detail {
inline std::int64_t sum_numel(const std::vector<ParamGroup>& v, bool active_only, const MoeSpec& m) {
  std::int64_t n = 0;
  for (const auto& g : v) {
    if (active_only && g.expert) n += g.out * g.in * m.experts_per_token;
    else n += g.numel();
  }
  return n;
}
}  // namespace detail

struct ParamCounts {
  Params total{0};
  Params active{0};      // per token: routed experts count top-k of E
  Params embedding{0};   // input embeddings (token + position; Gemma 4's per-layer table and its projection)
  Params lm_head{0};     // untied output projection (0 when tied)
};

// Each kind of layer once: a representative layer index and how many layers are of that kind.
inline std::vector<std::pair<std::int64_t, std::int64_t>> layer_kinds(const ModelSpec& s) {
  std::array<std::pair<std::int64_t, std::int64_t>, max_layer_kinds> k{};
  for (std::int64_t l = 0; l < s.layers; ++l) {
    auto& e = k[static_cast<std::size_t>(layer_kind(s, l))];
    if (e.second++ == 0) e.first = l;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& e : k)
    if (e.second > 0) out.push_back(e);
  return out;
}

inline ParamCounts count_params(const ModelSpec& s) {
  const ParamInventory inv = param_inventory(s);
  std::vector<std::int64_t> layers_of(inv.kinds.size(), 0);
  for (std::uint8_t k : inv.kind_of) ++layers_of[k];
  std::int64_t total = 0, active = 0, head = 0;
  for (std::size_t k = 0; k < inv.kinds.size(); ++k) {
    total += layers_of[k] * detail::sum_numel(inv.kinds[k], false, s.moe);
    active += layers_of[k] * detail::sum_numel(inv.kinds[k], true, s.moe);
  }
  const std::int64_t emb = detail::sum_numel(inv.embedding, false, s.moe);
  for (const auto& g : inv.head)
    if (g.module == "lm_head") head += g.numel();
  const std::int64_t rest = detail::sum_numel(inv.head, false, s.moe);
  return ParamCounts{Params(emb + total + rest), Params(emb + active + rest), Params(emb), Params(head)};
}

// The largest shapes accepted: far above any published model (Llama 3.1 405B: 126 layers, hidden 16,384, 128
// heads of 128; DeepSeek-V3: 256 experts, MLA ranks ≤ 1,536; Qwen3-Next: 512 experts; vocabularies ≤ 262,144;
// Llama 4 Scout: 10M positions), low enough that a per-layer table stays small and no product of two of them nears
// 2^63. Checked as soon as a parser has read them, before anything is built per layer, expert or position.
struct ShapeLimit {
  const char* what;
  std::int64_t value, max;
};

// "model "name": problem", or the problem alone while a parser has not named the model yet.
inline std::string model_problem(const ModelSpec& s, const std::string& problem) {
  return s.name.empty() ? problem : "model \"" + s.name + "\": " + problem;
}

// Each layer's shape (one per layer, as a loader read it) into the distinct shapes and each layer's index; none when
// every layer has the model-wide kv_heads, head_dim and intermediate. Shared by the HF and GGUF loaders.
inline void set_layer_shapes(ModelSpec& s, const std::vector<LayerShape>& per_layer) {
  s.layer_shapes.clear();
  s.shape_of.assign(per_layer.size(), 0);
  for (std::size_t l = 0; l < per_layer.size(); ++l) {
    const auto at = std::find(s.layer_shapes.begin(), s.layer_shapes.end(), per_layer[l]);
    if (at == s.layer_shapes.end() && s.layer_shapes.size() == max_layer_shapes)
      throw InputError(model_problem(s, "more distinct layer shapes than the " + std::to_string(max_layer_shapes) + " supported"));
    s.shape_of[l] = static_cast<std::uint8_t>(at - s.layer_shapes.begin());
    if (at == s.layer_shapes.end()) s.layer_shapes.push_back(per_layer[l]);
  }
  if (s.layer_shapes.size() <= 1 &&
      (s.layer_shapes.empty() || s.layer_shapes[0] == LayerShape{s.kv_heads, s.head_dim, s.intermediate})) {
    s.layer_shapes.clear();  // every layer the model-wide shape
    s.shape_of.clear();
  }
}

inline void check_dimensions(const ModelSpec& s) {
  const auto& l = s.linear;
  const ShapeLimit limits[] = {
      {"num_hidden_layers", s.layers, 100'000},          {"hidden_size", s.hidden, 1'000'000},
      {"vocab_size", s.vocab, 100'000'000},              {"intermediate_size", s.intermediate, 10'000'000},
      {"num_attention_heads", s.heads, 100'000},         {"num_key_value_heads", s.kv_heads, 100'000},
      {"head_dim", s.head_dim, 100'000},                 {"max_position_embeddings", s.max_positions, 1'000'000'000},
      {"learned positions", s.learned_positions, 1'000'000'000}, {"sliding_window", s.sliding_window, 1'000'000'000},
      {"num_experts", s.moe.experts, 65'536},            {"num_experts_per_tok", s.moe.experts_per_token, 65'536},
      {"moe_intermediate_size", s.moe.intermediate, 10'000'000},
      {"n_shared_experts", s.moe.shared_experts, 65'536}, {"shared_expert_intermediate_size", s.moe.shared_intermediate, 10'000'000},
      {"q_lora_rank", s.mla.q_lora_rank, 1'000'000},     {"kv_lora_rank", s.mla.kv_lora_rank, 1'000'000},
      {"qk_nope_head_dim", s.mla.qk_nope_head_dim, 100'000}, {"qk_rope_head_dim", s.mla.qk_rope_head_dim, 100'000},
      {"v_head_dim", s.mla.v_head_dim, 100'000},
      {"linear_num_key_heads", l.key_heads, 100'000},    {"linear_num_value_heads", l.value_heads, 100'000},
      {"linear_key_head_dim", l.key_head_dim, 100'000},  {"linear_value_head_dim", l.value_head_dim, 100'000},
      {"linear_conv_kernel_dim", l.conv_kernel, 65'536},
      {"hidden_size_per_layer_input", s.per_layer_input, 1'000'000}, {"vocab_size_per_layer_input", s.per_layer_vocab, 100'000'000}};
  for (const auto& [what, value, max] : limits)
    if (value < 0 || value > max)
      throw InputError(model_problem(s, std::string(what) + " " + std::to_string(value) + " is outside 0 … " +
                                            std::to_string(max)));
  // Widths that are products: the attention's q and kv projections, linear attention's key and value widths.
  std::int64_t widest_head = s.head_dim;
  for (const LayerShape& sh : s.layer_shapes) {
    for (const std::int64_t v : {sh.kv_heads, sh.head_dim, sh.intermediate})
      if (v < 1 || v > 10'000'000) throw InputError(model_problem(s, "a layer's heads or widths are outside 1 … 10,000,000"));
    widest_head = std::max(widest_head, sh.head_dim);
  }
  if (s.heads * widest_head > 10'000'000 || s.kv_heads * s.head_dim > 10'000'000 ||
      l.key_heads * l.key_head_dim > 10'000'000 || l.value_heads * l.value_head_dim > 10'000'000)
    throw InputError(model_problem(s, "attention width (heads × head_dim) over 10,000,000"));
}

// Parameters at most: 2·10^15, 1,000 times the largest published model and room above --params' own limit of 10^15
// (parse.h) for the derived shape nearest to it; every count of the model then fits in int64 with room for the
// estimators' products, and is exact in a double.
inline constexpr double max_model_params = 2e15;

// The parameter count in floating point, which cannot overflow: the check before any int64 sum of numel().
inline double param_count_bound(const ModelSpec& s) {
  const ParamInventory inv = param_inventory(s);
  auto sum = [](const std::vector<ParamGroup>& v) {
    double n = 0;
    for (const auto& g : v) n += double(g.out) * double(g.in) * double(g.count);
    return n;
  };
  double n = sum(inv.embedding) + sum(inv.head);
  for (std::uint8_t k : inv.kind_of) n += sum(inv.kinds[k]);
  return n;
}

// Reject shapes that cannot be computed with, before any formula sees them.
inline void validate(const ModelSpec& s) {
  auto need = [&](std::int64_t v, const char* what) {
    if (v <= 0) throw InputError("model \"" + s.name + "\": " + what + " must be positive");
  };
  need(s.vocab, "vocab_size");
  need(s.hidden, "hidden_size");
  need(s.layers, "num_hidden_layers");
  need(s.heads, "num_attention_heads");
  need(s.kv_heads, "num_key_value_heads");
  need(s.head_dim, "head_dim");
  need(s.intermediate, "intermediate_size");
  check_dimensions(s);
  if (s.heads % s.kv_heads != 0)
    throw InputError("model \"" + s.name + "\": num_attention_heads must be a multiple of num_key_value_heads");
  if (!s.layer_shapes.empty()) {  // every layer names one of at most max_layer_shapes shapes
    if (s.layer_shapes.size() > max_layer_shapes || std::int64_t(s.shape_of.size()) != s.layers)
      throw InputError(model_problem(s, "more distinct layer shapes than supported, or not one per layer"));
    for (const std::uint8_t i : s.shape_of)
      if (i >= s.layer_shapes.size()) throw InputError(model_problem(s, "a layer names a shape that is not there"));
    for (const LayerShape& sh : s.layer_shapes)
      if (s.heads % sh.kv_heads != 0)
        throw InputError(model_problem(s, "num_attention_heads must be a multiple of every layer's key/value heads"));
  }
  const bool routed = std::find(s.moe_layers.begin(), s.moe_layers.end(), true) != s.moe_layers.end();
  if (routed) need(s.moe.experts, "num_experts");  // an MoE family's layers with no experts: not silently dense
  if (s.moe.experts > 0) {
    need(s.moe.experts_per_token, "num_experts_per_tok");
    need(s.moe.intermediate, "moe_intermediate_size");
    if (s.moe.experts_per_token > s.moe.experts)
      throw InputError("model \"" + s.name + "\": num_experts_per_tok exceeds the number of experts");
  }
  if (s.mla_enabled) {
    need(s.mla.kv_lora_rank, "kv_lora_rank");
    need(s.mla.v_head_dim, "v_head_dim");
    need(s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim, "qk_nope_head_dim + qk_rope_head_dim");
  }
  if (!s.linear_layers.empty()) {
    need(s.linear.key_heads, "linear_num_key_heads");
    need(s.linear.value_heads, "linear_num_value_heads");
    need(s.linear.key_head_dim, "linear_key_head_dim");
    need(s.linear.value_head_dim, "linear_value_head_dim");
    need(s.linear.conv_kernel, "linear_conv_kernel_dim");
  }
  if (const double n = param_count_bound(s); n > max_model_params)
    throw InputError("model \"" + s.name + "\": " + std::to_string(std::llround(n / 1e12)) +
                     "T parameters, over the 2·10^15 supported");
}

// A standard Llama-style decoder for a bare parameter count (--params 7.5B) where no known model has that size
// (model_presets.h: model_of_size): Llama 2's proportions — aspect ratio hidden/layers ≈ 128 (7B: 4096/32,
// 13B: 5120/40), SwiGLU width 8/3·h rounded up to 256 (7B: 11008), vocab 32,000, untied embeddings — with head
// counts that tensor parallelism over 8 GPUs divides: head_dim 128 and hidden a multiple of 1024 (below 2048 also
// 1536 with head_dim 64), so heads are a multiple of 8; above 32 heads 8 KV heads (GQA, as Llama 2 70B and Code
// Llama 34B). Width and depth are chosen to land as close to the requested count as the shape allows.
inline ModelSpec derive_model(Params requested) {
  const double n = double(requested.in(unit::params));
  constexpr std::int64_t vocab = 32000;  // Llama 2 tokenizer
  ModelSpec best;
  double best_err = 1e300, best_score = 1e300;
  for (std::int64_t h = 512; h <= (1 << 20); h += h < 2048 ? 512 : 1024) {
    const std::int64_t head_dim = h % 1024 == 0 ? 128 : 64, heads = h / head_dim;
    const std::int64_t kv_heads = heads <= 32 ? heads : 8;
    const std::int64_t i = ((8 * h / 3 + 255) / 256) * 256;
    // q and o (2h²), k and v (2·h·kv·head_dim), SwiGLU gate/up/down (3·h·i), two RMSNorm gains (2h); see layer_params.
    const double per_layer = 2.0 * double(h) * double(h) + 2.0 * double(h) * double(kv_heads * head_dim) +
                             3.0 * double(h) * double(i) + 2.0 * double(h);
    const double outside = 2.0 * double(vocab) * double(h) + double(h);  // untied embedding + lm_head, final norm
    const auto layers = std::max<std::int64_t>(1, std::llround((n - outside) / per_layer));
    const double aspect = double(h) / double(layers);
    if (aspect < 64 || aspect > 256) continue;  // not the proportions of a standard model of this size
    const double err = std::abs(outside + per_layer * double(layers) - n);
    // Prefer the standard proportions: 1 % of count error weighs as much as a factor 2^0.2 off the aspect.
    const double score = err / n + 0.05 * std::abs(std::log2(aspect / 128.0));
    if (score < best_score) {
      best_score = score;
      best_err = err;
      best.hidden = h;
      best.intermediate = i;
      best.layers = layers;
      best.head_dim = head_dim;
      best.heads = heads;
      best.kv_heads = kv_heads;
    }
  }
  if (best.layers == 0 || best_err > 0.1 * n)
    throw InputError("no standard decoder shape has about " + std::to_string(requested.in(unit::params)) +
                     " parameters; describe the model with --model or --config");
  best.name = "derived";
  best.model_type = "derived";
  best.vocab = vocab;
  best.max_positions = 4096;
  return best;
}

}  // namespace gpuplan
