// Per-GPU memory for serving: weights, KV cache, and the working set of prefill and decode.
#pragma once
#include <algorithm>
#include <optional>
#include <string>

#include "../model.h"
#include "../units.h"
#include "allocator.h"
#include "profile.h"
#include "training.h"

namespace gpuplan {

struct InferenceWorkload {
  std::int64_t batch = 1;
  std::int64_t prompt_len = 1024;
  std::int64_t new_tokens = 256;
  Precision precision = Precision::bf16;  // weights and activations dtype (bf16, fp16, fp32)
  Attention attention = Attention::sdpa;
  Profile profile = Profile::pytorch;
};

inline void validate(const InferenceWorkload& w) {
  if (w.batch < 1 || w.batch > 1'000'000) throw InputError("--batch must be between 1 and 1,000,000");
  if (w.prompt_len < 1 || w.prompt_len > 10'000'000) throw InputError("--prompt-len must be between 1 and 10,000,000");
  if (w.new_tokens < 0 || w.new_tokens > 10'000'000) throw InputError("--new-tokens must be between 0 and 10,000,000");
}

struct InferenceEstimate {
  Params params{0};
  Params active_params{0};
  Bytes kv_bytes_per_token{0};  // one sequence, all layers, at full (unwindowed) length
  std::int64_t context_tokens = 0;
  MemoryEstimate memory;
  std::vector<std::string> assumptions;
};

// KV elements per token per layer as HF's DynamicCache stores them: key and value for every KV head
// (MLA under transformers: full per-head k (nope + rope) and v, not the compressed latent).
inline double kv_elements_per_token_per_layer(const ModelSpec& s) {
  if (s.mla_enabled)
    return double(s.heads) * double(s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim + s.mla.v_head_dim);
  return 2.0 * double(s.kv_heads) * double(s.head_dim);
}

inline InferenceEstimate estimate_inference_memory(const ModelSpec& s, const InferenceWorkload& w) {
  validate(s);
  validate(w);
  const bool pytorch = w.profile == Profile::pytorch;
  const double c = w.precision == Precision::fp32 || w.precision == Precision::amp_bf16 ? 4.0 : 2.0;
  const ParamCounts counts = count_params(s);
  InferenceEstimate est;
  est.params = counts.total;
  est.active_params = counts.active;
  const double b = double(w.batch), sp = double(w.prompt_len);
  const double h = double(s.hidden), V = double(s.vocab);
  const double weights = double(counts.total.in(unit::params)) * c;

  // HF generate feeds the prompt, then each new token but the last: the cache ends at prompt + new − 1.
  const double len = sp + double(std::max<std::int64_t>(w.new_tokens, 1)) - 1.0;
  est.context_tokens = static_cast<std::int64_t>(len);
  const double kv_layer_tok = kv_elements_per_token_per_layer(s) * c;
  est.kv_bytes_per_token = Bytes(kv_layer_tok * double(s.layers));
  // Sliding-window layers keep window − 1 tokens (transformers DynamicSlidingWindowLayer).
  auto cached = [&](std::int64_t l, double tokens) {
    return s.is_sliding_layer(l) ? std::min(tokens, double(s.sliding_window - 1)) : tokens;
  };
  double kv_after_prefill = 0, kv_final = 0, kv_layer_max = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    // During prefill a sliding layer still holds the whole prompt; it is cropped at the first decode step.
    kv_after_prefill += b * sp * kv_layer_tok;
    kv_final += b * cached(l, len) * kv_layer_tok;
    kv_layer_max = std::max(kv_layer_max, b * cached(l, len) * kv_layer_tok);
  }

  // Prefill working set per prompt token at the widest point of a layer (no autograd, one layer at a time):
  // the residual stream and the normalised input (c·h each), the fp32 RMSNorm upcast freed just before (4h),
  // and in the FFN the up projection, the activation and the product (3·c·i for gated FFNs, 2·c·i plain).
  double ffn_width = double(s.intermediate);
  for (std::int64_t l = 0; l < s.layers; ++l)
    if (s.is_moe_layer(l)) ffn_width = std::max(ffn_width, double(s.moe.intermediate * s.moe.experts_per_token));
  // GPT-2's NewGELU is a chain of pointwise ops: input, cube term, tanh and output coexist (4·c·i).
  const double ffn_live = (s.mlp == MlpKind::gated ? 3.0 : s.activation == "gelu_new" ? 4.0 : 2.0) * c * ffn_width;
  double prefill_tok = ffn_live + 2.0 * c * h + 4.0 * h;
  // Attention scores when the kernel materialises them (eager, or SDPA's math path for fp32 GQA): scores and
  // softmax output of one layer, per element.
  const auto kernel = detail::sdpa_backend(s, w.attention, c);
  // HF eager: the scaled scores, the masked scores, the fp32 softmax and its 16-bit cast (3 c + 4 B per element;
  // measured on H200: Llama-3.2-1B b4 s4096 prefill holds 10.0 B per score element at its peak). SDPA's math
  // fallback: scores and softmax output.
  double scores = 0;
  if (kernel == detail::AttentionKernel::eager) scores = b * double(s.heads) * sp * sp * (3.0 * c + 4.0);
  if (kernel == detail::AttentionKernel::math) scores = b * double(s.heads) * sp * sp * (c + 4.0);
  // Last-position logits (logits_to_keep = 1) and generate's fp32 copy of them.
  const double logits = b * V * (c + 4.0);
  const double workspace = pytorch ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;

  std::vector<Moment> moments;
  auto add = [&](const char* phase, const char* what, double kv, double acts, double lg) {
    MemoryComponents m;
    m.weights = Bytes(weights);
    m.kv_cache = Bytes(kv);
    m.activations = Bytes(acts);
    m.logits = Bytes(lg);
    m.overhead = Bytes(workspace);
    moments.push_back(Moment{phase, what, m});
  };
  add("prefill", "last layer", kv_after_prefill, b * sp * prefill_tok + scores, 0);
  add("prefill", "logits", kv_after_prefill, b * sp * c * h, logits);
  // Decode: torch.cat grows one layer's cache at a time, so the old and the new tensor briefly coexist.
  add("decode", "cache append", kv_final, kv_layer_max, logits);
  // The replay below does not see every small tensor generate makes; measured over the calibration inference
  // cases the reserve is at least half the final cache (torch.cat growth leaves blocks one token too short)
  // plus the caching share of the working set, so that is its floor.
  if (pytorch && w.new_tokens > 1)
    for (auto& m : moments) m.new_segment = Bytes(0.5 * kv_final);

  // --- The caching allocator's reserve: replay generate's allocations (prefill layer by layer, then each decode
  // step growing every layer's cache with torch.cat: a new tensor one token longer, the old one freed) ---
  std::optional<Bytes> reserve;
  if (pytorch) {
    CachingAllocatorModel A;
    using H = CachingAllocatorModel::Handle;
    const ParamInventory inv = param_inventory(s);
    for (const auto* groups : {&inv.embedding, &inv.head})
      for (const auto& g : *groups) A.malloc(double(g.numel()) * c);
    for (const auto& l : inv.per_layer)
      for (const auto& g : l) A.malloc(double(g.numel()) * c);
    A.malloc(workspace / 2);
    A.malloc(workspace / 2);
    const double kv_half = kv_layer_tok / 2;  // keys or values, per token
    std::vector<H> keys(static_cast<std::size_t>(s.layers)), values(static_cast<std::size_t>(s.layers));
    std::vector<double> len(static_cast<std::size_t>(s.layers), sp);
    // Prefill.
    const double tok = b * sp;
    H resid = A.malloc(c * h * tok);
    for (std::int64_t l = 0; l < s.layers; ++l) {
      const auto i = static_cast<std::size_t>(l);
      H up32 = A.malloc(4.0 * h * tok);  // RMSNorm's fp32 upcast
      H normed = A.malloc(c * h * tok);
      A.free(up32);
      // Projections, then rotary embeddings make new q and k; the cache keeps the rotated k and v themselves.
      H q0 = A.malloc(c * double(s.q_dim()) * tok);
      H k0 = A.malloc(kv_half * tok);
      values[i] = A.malloc(kv_half * tok);
      A.free(normed);
      H q = A.malloc(c * double(s.q_dim()) * tok);
      keys[i] = A.malloc(kv_half * tok);
      A.free(q0);
      A.free(k0);
      H sc = CachingAllocatorModel::none, sc2 = CachingAllocatorModel::none;
      std::vector<H> rep;  // math repeats k and v to every head and scales a copy of q
      if (scores > 0)
        for (int k = 0; k < (kernel == detail::AttentionKernel::math ? 3 : 0); ++k) rep.push_back(A.malloc(c * double(s.q_dim()) * tok));
      if (scores > 0) {  // eager: 16-bit scores and masked scores, then fp32 softmax and its cast (math: c + 4)
        const bool eager = kernel == detail::AttentionKernel::eager;
        const double parts = eager ? 3.0 * c + 4.0 : c + 4.0;
        sc = A.malloc(scores * (eager ? 2.0 * c : c) / parts);
        sc2 = A.malloc(scores * (eager ? c + 4.0 : 4.0) / parts);
      }
      H o = A.malloc(c * double(s.q_dim()) * tok);
      A.free(sc);
      A.free(sc2);
      for (H x : rep) A.free(x);
      A.free(q);
      H attn = A.malloc(c * h * tok);
      A.free(o);
      H r1 = A.malloc(c * h * tok);
      A.free(attn);
      A.free(resid);
      up32 = A.malloc(4.0 * h * tok);
      normed = A.malloc(c * h * tok);
      A.free(up32);
      std::vector<H> ffn;
      for (int k = 0; k < (s.mlp == MlpKind::gated ? 3 : 2); ++k) ffn.push_back(A.malloc(ffn_live / (s.mlp == MlpKind::gated ? 3.0 : 2.0) * tok));
      A.free(normed);
      H down = A.malloc(c * h * tok);
      for (H x : ffn) A.free(x);
      resid = A.malloc(c * h * tok);
      A.free(down);
      A.free(r1);
    }
    H lg = A.malloc(logits);
    A.free(resid);
    // Decode: each step appends one token to every layer's cache; sliding layers are cropped to window − 1.
    for (std::int64_t step = 1; step < w.new_tokens; ++step) {
      H x = A.malloc(c * h * b);
      for (std::int64_t l = 0; l < s.layers; ++l) {
        const auto i = static_cast<std::size_t>(l);
        const double n = s.is_sliding_layer(l) ? std::min(len[i] + 1, double(s.sliding_window - 1)) : len[i] + 1;
        H k2 = A.malloc(kv_half * b * n);
        A.free(keys[i]);
        keys[i] = k2;
        H v2 = A.malloc(kv_half * b * n);
        A.free(values[i]);
        values[i] = v2;
        len[i] = n;
      }
      A.free(lg);
      lg = A.malloc(logits);
      A.free(x);
    }
    reserve = Bytes(std::max(0.0, A.peak_reserved() - A.peak_allocated()));
  }

  est.memory = summarize(std::move(moments), w.profile, pytorch ? PytorchProfile::cuda_context : Bytes(0), reserve,
                         /*at_least_measured_shares=*/true);
  if (pytorch)
    est.assumptions.push_back("profile pytorch: HF generate with the default dynamic KV cache (grown by torch.cat), "
                              "last-position logits, caching allocator, CUDA context measured on an H200");
  else
    est.assumptions.push_back("profile none: tensor bytes only");
  est.assumptions.push_back("KV cache holds prompt + new − 1 tokens per sequence; sliding-window layers window − 1");
  return est;
}

}  // namespace gpuplan
