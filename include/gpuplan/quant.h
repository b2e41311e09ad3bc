// Weight formats for serving: bits per weight of each tensor, including block scales, and which tensors a
// format keeps at higher precision (embeddings, output head, sensitive layers).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "enum_table.h"
#include "model.h"
#include "units.h"

namespace gpuplan {

enum class WeightFormat {
  fp32, bf16, fp16, fp8, int8, gptq_int4, awq_int4, nf4, nf4_dq,
  q8_0, q6_k, q5_k_m, q4_k_m, q4_k_s, q4_0, q3_k_m, q2_k, q5_1, q5_0, q4_1, mxfp4, nvfp4
};

inline constexpr std::array<Spelling<WeightFormat>, 22> weight_format_names{{
    {WeightFormat::fp32, "fp32"},       {WeightFormat::bf16, "bf16"},         {WeightFormat::fp16, "fp16"},
    {WeightFormat::fp8, "fp8"},         {WeightFormat::int8, "int8"},         {WeightFormat::gptq_int4, "gptq-int4"},
    {WeightFormat::awq_int4, "awq-int4"}, {WeightFormat::nf4, "nf4"},          {WeightFormat::nf4_dq, "nf4-dq"},
    {WeightFormat::q8_0, "q8_0"},       {WeightFormat::q6_k, "q6_k"},         {WeightFormat::q5_k_m, "q5_k_m"},
    {WeightFormat::q4_k_m, "q4_k_m"},   {WeightFormat::q4_k_s, "q4_k_s"},     {WeightFormat::q4_0, "q4_0"},
    {WeightFormat::q3_k_m, "q3_k_m"},   {WeightFormat::q2_k, "q2_k"},         {WeightFormat::q5_1, "q5_1"},
    {WeightFormat::q5_0, "q5_0"},       {WeightFormat::q4_1, "q4_1"},         {WeightFormat::mxfp4, "mxfp4"},
    {WeightFormat::nvfp4, "nvfp4"},
}};

// GGUF tensor types: bytes per block / weights per block (ggml/src/ggml-common.h).
enum class GgmlType { f16, q8_0, q6_k, q5_k, q4_k, q3_k, q2_k, q5_1, q5_0, q4_1, q4_0, iq4_nl, mxfp4 };

namespace gguf {
inline constexpr double q8_0 = 34.0 * 8 / 32;    // fp16 scale + 32 int8: 8.5 bpw
inline constexpr double q6_k = 210.0 * 8 / 256;  // 6.5625 bpw
inline constexpr double q5_k = 176.0 * 8 / 256;  // 5.5 bpw
inline constexpr double q4_k = 144.0 * 8 / 256;  // 4.5 bpw
inline constexpr double q3_k = 110.0 * 8 / 256;  // 3.4375 bpw
inline constexpr double q2_k = 84.0 * 8 / 256;   // 2.625 bpw
inline constexpr double q5_1 = 24.0 * 8 / 32;    // fp16 scale and minimum + 32 5-bit: 6.0 bpw
inline constexpr double q5_0 = 22.0 * 8 / 32;    // 5.5 bpw
inline constexpr double q4_1 = 20.0 * 8 / 32;    // 5.0 bpw
inline constexpr double q4_0 = 18.0 * 8 / 32;    // 4.5 bpw
inline constexpr double iq4_nl = 18.0 * 8 / 32;  // 4.5 bpw
inline constexpr double mxfp4 = 17.0 * 8 / 32;   // E8M0 scale + 32 E2M1: 4.25 bpw
inline constexpr std::int64_t qk_k = 256;         // weights per k-quant super-block (QK_K)
inline constexpr std::int64_t qk = 32;            // weights per legacy block (QK4_0 … QK8_0)

inline double bits(GgmlType t) {
  switch (t) {
    case GgmlType::f16: return 16;
    case GgmlType::q8_0: return q8_0;
    case GgmlType::q6_k: return q6_k;
    case GgmlType::q5_k: return q5_k;
    case GgmlType::q4_k: return q4_k;
    case GgmlType::q3_k: return q3_k;
    case GgmlType::q2_k: return q2_k;
    case GgmlType::q5_1: return q5_1;
    case GgmlType::q5_0: return q5_0;
    case GgmlType::q4_1: return q4_1;
    case GgmlType::q4_0: return q4_0;
    case GgmlType::iq4_nl: return iq4_nl;
    case GgmlType::mxfp4: return mxfp4;
  }
  return 16;
}
}  // namespace gguf

// Where a tensor sits, for the formats whose choice depends on it.
enum class TensorRole { embedding, output, attn_qkv, attn_k, attn_v, attn_output, ffn_down, other_linear, norm_or_bias };

// What llama.cpp's llama_tensor_get_type reads besides a tensor's role and layer.
struct GgufTraits {
  std::int64_t layers = 1;
  std::int64_t gqa = 1;   // query heads per KV head (n_gqa)
  bool type_70b = false;  // llama.cpp calls the model LLM_TYPE_70B (80 layers with grouped KV heads)
  std::int64_t experts = 0;  // routed experts per MoE layer (n_expert; 0 when dense)
};

inline GgufTraits gguf_traits(const ModelSpec& s) {
  const std::int64_t gqa = s.kv_heads > 0 ? std::max<std::int64_t>(1, s.heads / s.kv_heads) : 1;
  return {s.layers, gqa, s.layers == 80 && gqa > 1, s.moe.experts};
}

namespace detail {
// llama.cpp's use_more_bits(i, n): the first and last eighth of the layers and every third in between get a
// larger type in the _M mixes.
inline bool use_more_bits(std::int64_t i, std::int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }
}  // namespace detail

// The type llama-quantize gives a weight matrix in a GGUF file type (src/llama-quant.cpp, llama_tensor_get_type;
// rules unchanged from b4343, the build of the scored logs, to late-2025 builds). Not modelled: the Falcon special
// cases, imatrix-only choices. A row length a k-quant cannot hold (not a multiple of
// 256) takes the fallback type: Q2_K/Q3_K → IQ4_NL, Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0 (F16 below 32).
inline GgmlType gguf_tensor_type(WeightFormat f, TensorRole role, std::int64_t layer, const GgufTraits& m,
                                 std::int64_t in_features) {
  using T = GgmlType;
  const bool out = role == TensorRole::output, v = role == TensorRole::attn_v, down = role == TensorRole::ffn_down;
  const bool qkv = role == TensorRole::attn_qkv, o = role == TensorRole::attn_output;
  const std::int64_t L = m.layers;
  auto pick = [&]() -> T {
    switch (f) {
      case WeightFormat::q8_0: return T::q8_0;
      case WeightFormat::q6_k: return T::q6_k;
      case WeightFormat::q5_1: return out ? T::q6_k : T::q5_1;
      case WeightFormat::q5_0: return out ? T::q6_k : T::q5_0;
      case WeightFormat::q4_1: return out ? T::q6_k : T::q4_1;
      case WeightFormat::q4_0: return out ? T::q6_k : T::q4_0;
      // _M mixes: attn_v and ffn_down a step up in the use_more_bits layers, a fused attn_qkv (GPT-NeoX, Phi-3,
      // GPT-2) a step up in every layer.
      case WeightFormat::q5_k_m:
        if (out || qkv || ((v || down) && detail::use_more_bits(layer, L))) return T::q6_k;
        return T::q5_k;
      case WeightFormat::q4_k_m:
        if (out || ((v || down) && detail::use_more_bits(layer, L))) return T::q6_k;
        if (qkv) return T::q5_k;
        return v && m.type_70b ? T::q5_k : T::q4_k;
      case WeightFormat::q4_k_s:
        if (out) return T::q6_k;
        if ((down && layer < L / 8) || (v && layer < 4)) return T::q5_k;
        return v && m.type_70b ? T::q5_k : T::q4_k;
      case WeightFormat::q3_k_m:
        if (out) return T::q6_k;
        if (v) return layer < 2 || m.type_70b ? T::q5_k : T::q4_k;
        if (down) return layer < L / 16 ? T::q5_k : T::q4_k;  // Q3_K only for Falcon's other layers
        if (qkv || o) return T::q4_k;
        return T::q3_k;
      case WeightFormat::q2_k:
        if (out) return T::q6_k;
        if (v) return m.gqa >= 4 ? (m.type_70b ? T::q5_k : T::q4_k) : (m.type_70b ? T::q5_k : T::q3_k);
        if (o || down) return T::q3_k;
        return T::q2_k;
      default: return T::f16;
    }
  };
  // 8-expert models (Mixtral): attn_k and attn_v in Q8_0 in every file type ("bumping this to Q8_0 trades just
  // ~128MB"), attn_output in Q5_K in the low-bit k-quant mixes.
  T t = pick();
  if (m.experts == 8 && t != T::f16) {
    if (v || role == TensorRole::attn_k) t = T::q8_0;
    else if (o && (f == WeightFormat::q2_k || f == WeightFormat::q3_k_m || f == WeightFormat::q4_k_s ||
                   f == WeightFormat::q4_k_m))
      t = T::q5_k;
  }
  const bool k_quant = t == T::q6_k || t == T::q5_k || t == T::q4_k || t == T::q3_k || t == T::q2_k;
  if (!k_quant || in_features % gguf::qk_k == 0) return t;
  if (in_features % gguf::qk != 0) return T::f16;
  switch (t) {
    case T::q6_k: return T::q8_0;
    case T::q5_k: return T::q5_1;
    case T::q4_k: return T::q5_0;
    default: return T::iq4_nl;
  }
}

inline bool is_gguf_format(WeightFormat f) { return f >= WeightFormat::q8_0 && f <= WeightFormat::q4_1; }

// Bits per weight of a tensor in a format. Layer index and model traits matter only for GGUF's k-quant mixes.
// `gguf_file`: the weights come from a GGUF file (the llama.cpp profile), whose 1-D tensors (norms, biases) are
// f32 in every file type (convert_hf_to_gguf.py keeps n_dims ≤ 1 in F32; llama-quantize leaves them).
inline double bits_per_weight(WeightFormat f, TensorRole role, std::int64_t layer, const GgufTraits& m,
                              std::int64_t in_features, std::int64_t group_size = 128, bool gguf_file = false) {
  const double g = double(group_size);
  if (role == TensorRole::norm_or_bias)
    return f == WeightFormat::fp32 || gguf_file || is_gguf_format(f) ? 32 : 16;
  if (is_gguf_format(f)) return gguf::bits(gguf_tensor_type(f, role, layer, m, in_features));
  const bool emb = role == TensorRole::embedding, out = role == TensorRole::output;
  switch (f) {
    case WeightFormat::fp32: return 32;
    case WeightFormat::bf16:
    case WeightFormat::fp16: return 16;
    // FP8 (e4m3) linears with a per-output-channel fp32 scale; vLLM and TensorRT-LLM keep embeddings and lm_head
    // in 16 bit.
    case WeightFormat::fp8: return emb || out ? 16 : 8 + 32.0 / double(in_features);
    // LLM.int8 (bitsandbytes Linear8bitLt): int8 + an fp32 absmax per row; embeddings and lm_head stay 16 bit.
    case WeightFormat::int8: return emb || out ? 16 : 8 + 32.0 / double(in_features);
    // GPTQ / AWQ, 4 bit, group g (128 by default): an fp16 scale and a packed 4-bit zero per group of g input
    // weights (+ GPTQ's int32 g_idx per input row, spread over the output columns); embeddings and lm_head stay
    // 16 bit (AutoGPTQ/AutoAWQ layouts: qweight, scales, qzeros, g_idx).
    case WeightFormat::gptq_int4: return emb || out ? 16 : 4 + (16.0 + 4.0) / g + 32.0 / 4096;
    case WeightFormat::awq_int4: return emb || out ? 16 : 4 + (16.0 + 4.0) / g;
    // bitsandbytes NF4: fp32 absmax per 64 weights; double quantization stores it as 8 bit with an fp32 scale per
    // 256 blocks: 4 + 8/64 + 32/(64·256) = 4.127 (QLoRA §3). HF keeps embeddings and lm_head in 16 bit.
    case WeightFormat::nf4: return emb || out ? 16 : 4 + 32.0 / 64;
    case WeightFormat::nf4_dq: return emb || out ? 16 : 4 + 8.0 / 64 + 32.0 / (64 * 256);
    // OCP MX FP4: E8M0 scale per 32 (GGUF MXFP4); embeddings and head kept 16 bit as in gpt-oss checkpoints.
    case WeightFormat::mxfp4: return emb || out ? 16 : gguf::mxfp4;
    // NVFP4: an E4M3 scale per 16 weights (+ a per-tensor fp32 scale): 4.5 bpw; embeddings and head 16 bit.
    case WeightFormat::nvfp4: return emb || out ? 16 : 4 + 8.0 / 16;
    default: return 16;
  }
}

inline TensorRole role_of(const ParamGroup& g) {
  if (!g.is_matrix()) return TensorRole::norm_or_bias;
  const std::string& m = g.module;
  auto ends = [&](const char* s) { return m.ends_with(s); };
  if (m == "embed_tokens" || m == "wte" || m == "wpe") return TensorRole::embedding;
  if (m == "lm_head") return TensorRole::output;
  if (m == "query_key_value" || m == "qkv_proj" || m == "c_attn") return TensorRole::attn_qkv;
  if (ends("v_proj")) return TensorRole::attn_v;
  if (ends("k_proj")) return TensorRole::attn_k;
  if (ends("o_proj") || m == "dense" || (m == "c_proj" && g.out == g.in)) return TensorRole::attn_output;
  if (ends("down_proj") || ends("dense_4h_to_h") || m == "c_proj") return TensorRole::ffn_down;
  return TensorRole::other_linear;
}

struct WeightBytes {
  Bytes layers{0};     // all decoder layers
  std::vector<Bytes> per_layer;
  Bytes embedding{0};  // input embeddings (llama.cpp keeps token_embd in host memory)
  Bytes output{0};     // final norm and lm_head (nothing more when tied: the head is the embedding matrix)
  Bytes routed_experts{0};  // the routed experts' share of `layers` (a decode step reads only those it routes to)
  std::vector<Bytes> per_layer_experts;  // of each layer, its routed experts
  Bytes encoder{0};  // a multimodal checkpoint's vision encoder where the engine loads it beside the language model
  Bytes total() const { return layers + embedding + output + encoder; }
};

// A checkpoint's language-model weights as its headers give them (checkpoint.h): used instead of a format's
// arithmetic when the user names no --weights.
struct StoredWeightBytes {
  WeightBytes bytes;
  WeightFormat nearest = WeightFormat::bf16;  // the format closest to it: the compute peak the throughput model uses
  std::string label;                          // what was stored, e.g. "BF16", "gptq 4-bit", "Q4_K (GGUF)"
};

// A checkpoint whose modules carry formats of their own (its quantization_config): ModelOpt's MIXED_PRECISION lists
// each quantized module with its algorithm (quantized_layers: "model.language_model.layers.3.mlp.experts":
// W4A16_NVFP4, "…self_attn.q_proj": FP8, "lm_head": W4A16_NVFP4), and every module it does not list stays in the
// checkpoint's 16-bit dtype (vLLM model_executor/layers/quantization/modelopt.py ModelOptMixedPrecisionConfig:
// unlisted layers get UnquantizedLinearMethod).
struct ModuleFormats {
  struct Rule {
    std::string module;  // the checkpoint's module name less the layer prefix ("mlp.experts", "self_attn.q_proj")
    WeightFormat format;
  };
  std::vector<Rule> rules;
  std::string label;  // what the checkpoint calls its scheme, e.g. "ModelOpt MIXED_PRECISION"
  // The format of a linear no rule names: 16 bit where the config lists what it quantizes (ModelOpt), the scheme's own
  // where it lists what it leaves (an FP8 config's modules_to_not_convert).
  WeightFormat otherwise = WeightFormat::bf16;
  // FP8 weights per fp32 scale where the config gives weight_block_size (128 × 128: one scale per 16,384 weights,
  // weight_scale_inv); 0: a scale per output channel, as bits_per_weight has it.
  double fp8_scale_block = 0;

  // The module name without "….layers.N." (and without a wrapper's "model.language_model." at the top level).
  static std::string local_name(const std::string& name) {
    const std::size_t at = name.rfind("layers.");
    if (at != std::string::npos) {
      const std::size_t dot = name.find('.', at + 7);
      if (dot != std::string::npos) return name.substr(dot + 1);
    }
    const std::size_t last = name.rfind('.');
    return last == std::string::npos ? name : name.substr(last + 1);
  }

  // The names a checkpoint may give one of gpuplan's parameter groups: routed experts are one module ("experts"),
  // Qwen's shared expert is "shared_expert" (singular), and HF's Gated DeltaNet splits gpuplan's fused in_proj_qkvz
  // and in_proj_ba into in_proj_qkv + in_proj_z and in_proj_a + in_proj_b (Qwen3.5/3.6).
  static std::vector<std::string> names_of(const ParamGroup& g) {
    if (g.expert) return {"experts"};
    std::string m = g.module;
    if (m.rfind("shared_experts.", 0) == 0) m = "shared_expert." + m.substr(15);
    if (m == "in_proj_qkvz") return {m, "in_proj_qkv", "in_proj_z"};
    if (m == "in_proj_ba") return {m, "in_proj_a", "in_proj_b"};
    return {m};
  }

  // The format a rule gives the group; `otherwise` where none does.
  WeightFormat format_of(const ParamGroup& g) const {
    for (const auto& r : rules)
      for (const auto& n : names_of(g))
        if (r.module == n || r.module.ends_with("." + n)) return r.format;
    return otherwise;
  }

  // Bits per weight of a matrix in format f: FP8 with its block scales where the config says so.
  double bits(WeightFormat f, const ParamGroup& g, std::int64_t layer, const GgufTraits& traits, std::int64_t group_size) const {
    if (f == WeightFormat::fp8 && fp8_scale_block > 0) return 8 + 32.0 / fp8_scale_block;
    return bits_per_weight(f, TensorRole::other_linear, layer, traits, g.in, group_size);
  }
};

// Bytes of every tensor of the model in a format. A tied lm_head is the embedding matrix itself. `gguf_file`: as
// llama.cpp loads them from a GGUF file (1-D tensors in f32). `mixed`: each module in the format its checkpoint
// gives it instead.
inline WeightBytes weight_bytes(const ModelSpec& s, WeightFormat f, std::int64_t group_size = 128, bool gguf_file = false,
                                const ModuleFormats* mixed = nullptr) {
  const ParamInventory inv = param_inventory(s);
  const GgufTraits traits = gguf_traits(s);
  // MX FP4 checkpoints of MoE models quantize the routed experts alone: gpt-oss ships attention, router,
  // embeddings and lm_head in bf16 (its quantization_config.modules_to_not_convert).
  // In GGUF the file type MXFP4_MOE does the same with Q8_0 for the rest (ggml-org/gpt-oss-120b-GGUF: 63.39 GB,
  // "gpt-oss 120B MXFP4 MoE 59.02 GiB" in llama-bench tables).
  const bool experts_only = f == WeightFormat::mxfp4 && s.moe.experts > 0;
  const WeightFormat rest = gguf_file ? WeightFormat::q8_0 : WeightFormat::bf16;
  WeightBytes w;
  auto bytes = [&](const ParamGroup& g, TensorRole role, std::int64_t layer) {
    // A format named by the checkpoint for a module holds for it, embedding and head included.
    if (mixed && g.is_matrix())
      return Bytes(double(g.numel()) * mixed->bits(mixed->format_of(g), g, layer, traits, group_size) / 8.0);
    const WeightFormat gf = experts_only && !g.expert ? rest : f;
    return Bytes(double(g.numel()) * bits_per_weight(gf, role, layer, traits, g.in, group_size, gguf_file) / 8.0);
  };
  // A tied embedding is also the output matrix: llama.cpp quantises it by the output rules (no output.weight).
  for (const auto& g : inv.embedding)
    w.embedding += bytes(g, s.tied_embeddings && g.module != "wpe" ? TensorRole::output : role_of(g), 0);
  std::vector<std::vector<TensorRole>> roles;  // each kind of layer's groups' roles (named once, not per layer)
  for (const auto& kind : inv.kinds) {
    roles.emplace_back();
    for (const auto& g : kind) roles.back().push_back(role_of(g));
  }
  w.per_layer.reserve(inv.layers());
  w.per_layer_experts.reserve(inv.layers());
  for (std::size_t l = 0; l < inv.layers(); ++l) {
    Bytes b(0), experts(0);
    const auto& groups = inv.layer(l);
    const auto& role = roles[inv.kind_of[l]];
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const Bytes g = bytes(groups[i], role[i], static_cast<std::int64_t>(l));
      b += g;
      if (groups[i].expert) experts += g;
    }
    w.per_layer.push_back(b);
    w.per_layer_experts.push_back(experts);
    w.routed_experts += experts;
    w.layers += b;
  }
  for (const auto& g : inv.head) w.output += bytes(g, role_of(g), 0);
  return w;
}

// KV cache element formats: llama.cpp's q8_0 / q4_0 cache types carry block scales (8.5 / 4.5 bits).
enum class KvDtype { fp16, bf16, fp32, fp8, int8, int4 };
inline constexpr std::array<Spelling<KvDtype>, 6> kv_dtype_names{{{KvDtype::fp16, "fp16"}, {KvDtype::bf16, "bf16"},
                                                                 {KvDtype::fp32, "fp32"}, {KvDtype::fp8, "fp8"},
                                                                 {KvDtype::int8, "int8"}, {KvDtype::int4, "int4"}}};
inline double kv_bytes_per_element(KvDtype d) {
  switch (d) {
    case KvDtype::fp32: return 4;
    case KvDtype::fp16:
    case KvDtype::bf16: return 2;
    case KvDtype::fp8: return 1;                  // vLLM kv_cache_dtype fp8 (e4m3/e5m2), per-tensor scale
    case KvDtype::int8: return gguf::q8_0 / 8;    // llama.cpp q8_0 cache type
    case KvDtype::int4: return gguf::q4_0 / 8;    // llama.cpp q4_0 cache type
  }
  return 2;
}

}  // namespace gpuplan
