// Weight formats for serving: bits per weight of each tensor, including block scales, and which tensors a
// format keeps at higher precision (embeddings, output head, sensitive layers).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "enum_table.h"
#include "model.h"
#include "units.h"

namespace gpuplan {

enum class WeightFormat {
  fp32, bf16, fp16, fp8, int8, gptq_int4, awq_int4, nf4, nf4_dq,
  q8_0, q6_k, q5_k_m, q4_k_m, q4_k_s, q4_0, q3_k_m, q2_k, mxfp4, nvfp4
};

inline constexpr std::array<Spelling<WeightFormat>, 19> weight_format_names{{
    {WeightFormat::fp32, "fp32"},       {WeightFormat::bf16, "bf16"},         {WeightFormat::fp16, "fp16"},
    {WeightFormat::fp8, "fp8"},         {WeightFormat::int8, "int8"},         {WeightFormat::gptq_int4, "gptq-int4"},
    {WeightFormat::awq_int4, "awq-int4"}, {WeightFormat::nf4, "nf4"},          {WeightFormat::nf4_dq, "nf4-dq"},
    {WeightFormat::q8_0, "q8_0"},       {WeightFormat::q6_k, "q6_k"},         {WeightFormat::q5_k_m, "q5_k_m"},
    {WeightFormat::q4_k_m, "q4_k_m"},   {WeightFormat::q4_k_s, "q4_k_s"},     {WeightFormat::q4_0, "q4_0"},
    {WeightFormat::q3_k_m, "q3_k_m"},   {WeightFormat::q2_k, "q2_k"},         {WeightFormat::mxfp4, "mxfp4"},
    {WeightFormat::nvfp4, "nvfp4"},
}};

// GGUF block types: bytes per block / weights per block (ggml/src/ggml-common.h).
namespace gguf {
inline constexpr double q8_0 = 34.0 * 8 / 32;    // fp16 scale + 32 int8: 8.5 bpw
inline constexpr double q6_k = 210.0 * 8 / 256;  // 6.5625 bpw
inline constexpr double q5_k = 176.0 * 8 / 256;  // 5.5 bpw
inline constexpr double q4_k = 144.0 * 8 / 256;  // 4.5 bpw
inline constexpr double q4_0 = 18.0 * 8 / 32;    // 4.5 bpw
inline constexpr double q3_k = 110.0 * 8 / 256;  // 3.4375 bpw
inline constexpr double q2_k = 84.0 * 8 / 256;   // 2.625 bpw
inline constexpr double mxfp4 = 17.0 * 8 / 32;   // E8M0 scale + 32 E2M1: 4.25 bpw
}  // namespace gguf

// Where a tensor sits, for the formats whose choice depends on it.
enum class TensorRole { embedding, output, attn_qkv, attn_v, attn_output, ffn_down, other_linear, norm_or_bias };

namespace detail {
// llama.cpp's use_more_bits(i, n): the first and last eighth of the layers and every third in between get a
// larger type in the _M mixes (src/llama-quant.cpp, llama_tensor_get_type).
inline bool use_more_bits(std::int64_t i, std::int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }
}  // namespace detail

// Bits per weight of a tensor in a format. Layer index and count matter only for GGUF's k-quant mixes.
inline double bits_per_weight(WeightFormat f, TensorRole role, std::int64_t layer, std::int64_t layers,
                              std::int64_t in_features, std::int64_t group_size = 128) {
  const double g = double(group_size);
  if (role == TensorRole::norm_or_bias) return f == WeightFormat::fp32 ? 32 : (f >= WeightFormat::q8_0 ? 32 : 16);
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
    case WeightFormat::q8_0: return gguf::q8_0;
    case WeightFormat::q6_k: return gguf::q6_k;
    // llama.cpp k-quant mixes (llama_tensor_get_type): output.weight Q6_K; attn_v and ffn_down one step up in the
    // use_more_bits layers; a fused attn_qkv (GPT-NeoX, Phi-3, GPT-2) one step up in every layer for the _M mixes
    // (Q3_K_M → Q4_K, Q4_K_M → Q5_K, Q5_K_M → Q6_K).
    case WeightFormat::q5_k_m:
      if (out || role == TensorRole::attn_qkv) return gguf::q6_k;
      if ((role == TensorRole::attn_v || role == TensorRole::ffn_down) && detail::use_more_bits(layer, layers)) return gguf::q6_k;
      return gguf::q5_k;
    case WeightFormat::q4_k_m:
      if (out) return gguf::q6_k;
      if (role == TensorRole::attn_qkv) return gguf::q5_k;
      if ((role == TensorRole::attn_v || role == TensorRole::ffn_down) && detail::use_more_bits(layer, layers)) return gguf::q6_k;
      return gguf::q4_k;
    case WeightFormat::q4_k_s:
      if (out) return gguf::q6_k;
      if (role == TensorRole::ffn_down && layer < layers / 8) return gguf::q5_k;
      return gguf::q4_k;
    case WeightFormat::q4_0: return out ? gguf::q6_k : gguf::q4_0;
    case WeightFormat::q3_k_m:
      if (out) return gguf::q6_k;
      if (role == TensorRole::attn_qkv) return gguf::q4_k;
      if (role == TensorRole::attn_v) return layer < 2 ? gguf::q5_k : gguf::q4_k;
      if (role == TensorRole::attn_output) return gguf::q4_k;
      if (role == TensorRole::ffn_down)
        return layer < layers / 16 ? gguf::q5_k : detail::use_more_bits(layer, layers) ? gguf::q4_k : gguf::q3_k;
      return gguf::q3_k;
    case WeightFormat::q2_k:
      if (out) return gguf::q6_k;
      if (role == TensorRole::attn_v) return gguf::q4_k;
      if (role == TensorRole::attn_output || role == TensorRole::ffn_down) return gguf::q3_k;
      return gguf::q2_k;
    // OCP MX FP4: E8M0 scale per 32 (GGUF MXFP4); embeddings and head kept 16 bit as in gpt-oss checkpoints.
    case WeightFormat::mxfp4: return emb || out ? 16 : gguf::mxfp4;
    // NVFP4: an E4M3 scale per 16 weights (+ a per-tensor fp32 scale): 4.5 bpw; embeddings and head 16 bit.
    case WeightFormat::nvfp4: return emb || out ? 16 : 4 + 8.0 / 16;
  }
  return 16;
}

inline TensorRole role_of(const ParamGroup& g) {
  if (!g.is_matrix()) return TensorRole::norm_or_bias;
  const std::string& m = g.module;
  auto ends = [&](const char* s) { return m.ends_with(s); };
  if (m == "embed_tokens" || m == "wte" || m == "wpe") return TensorRole::embedding;
  if (m == "lm_head") return TensorRole::output;
  if (m == "query_key_value" || m == "qkv_proj" || m == "c_attn") return TensorRole::attn_qkv;
  if (ends("v_proj")) return TensorRole::attn_v;
  if (ends("o_proj") || m == "dense" || (m == "c_proj" && g.out == g.in)) return TensorRole::attn_output;
  if (ends("down_proj") || ends("dense_4h_to_h") || m == "c_proj") return TensorRole::ffn_down;
  return TensorRole::other_linear;
}

struct WeightBytes {
  Bytes layers{0};     // all decoder layers
  std::vector<Bytes> per_layer;
  Bytes embedding{0};  // input embeddings (llama.cpp keeps token_embd in host memory)
  Bytes output{0};     // final norm and lm_head (nothing more when tied: the head is the embedding matrix)
  Bytes total() const { return layers + embedding + output; }
};

// A checkpoint's language-model weights as its headers give them (checkpoint.h): used instead of a format's
// arithmetic when the user names no --weights.
struct StoredWeightBytes {
  WeightBytes bytes;
  WeightFormat nearest = WeightFormat::bf16;  // the format closest to it: the compute peak the throughput model uses
  std::string label;                          // what was stored, e.g. "BF16", "gptq 4-bit", "Q4_K (GGUF)"
};

// Bytes of every tensor of the model in a format. A tied lm_head is the embedding matrix itself.
inline WeightBytes weight_bytes(const ModelSpec& s, WeightFormat f, std::int64_t group_size = 128) {
  const ParamInventory inv = param_inventory(s);
  WeightBytes w;
  auto bytes = [&](const ParamGroup& g, TensorRole role, std::int64_t layer) {
    return Bytes(double(g.numel()) * bits_per_weight(f, role, layer, s.layers, g.in, group_size) / 8.0);
  };
  // A tied embedding is also the output matrix: llama.cpp quantises it by the output rules (no output.weight).
  for (const auto& g : inv.embedding)
    w.embedding += bytes(g, s.tied_embeddings && g.module != "wpe" ? TensorRole::output : role_of(g), 0);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    Bytes b(0);
    for (const auto& g : inv.per_layer[static_cast<std::size_t>(l)]) b += bytes(g, role_of(g), l);
    w.per_layer.push_back(b);
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
