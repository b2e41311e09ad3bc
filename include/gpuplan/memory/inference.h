// Per-GPU memory for serving: weights, KV cache, and the working set of prefill and decode.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "../model.h"
#include "../quant.h"
#include "../units.h"
#include "allocator.h"
#include "profile.h"
#include "training.h"

namespace gpuplan {

struct InferenceWorkload {
  std::int64_t batch = 1;
  std::int64_t prompt_len = 1024;
  std::int64_t new_tokens = 256;
  std::optional<std::int64_t> context;       // KV tokens per sequence to plan for (default prompt + new)
  Precision precision = Precision::bf16;     // activations dtype (bf16, fp16, fp32)
  std::optional<WeightFormat> weights;       // default: the precision's dtype
  std::int64_t group_size = 128;             // GPTQ/AWQ quantisation group
  std::optional<KvDtype> kv;                 // default: the activations dtype
  Attention attention = Attention::sdpa;
  Profile profile = Profile::pytorch;
  std::int64_t tp = 1;                       // tensor-parallel GPUs: weights and KV heads split across them
  std::int64_t chunked_prefill = 0;          // tokens per prefill chunk (0: the whole prompt at once)
  double gpu_memory_utilization = VllmProfile::default_gpu_memory_utilization;
  std::optional<std::int64_t> gpu_layers;    // llama.cpp -ngl (default: every layer)
  std::optional<Bytes> device_memory;        // the GPU's usable memory, for vLLM's KV pool
};

inline void validate(const InferenceWorkload& w) {
  if (w.batch < 1 || w.batch > 1'000'000) throw InputError("--batch must be between 1 and 1,000,000");
  if (w.prompt_len < 1 || w.prompt_len > 10'000'000) throw InputError("--prompt-len must be between 1 and 10,000,000");
  if (w.new_tokens < 0 || w.new_tokens > 10'000'000) throw InputError("--new-tokens must be between 0 and 10,000,000");
  if (w.context && (*w.context < 1 || *w.context > 10'000'000)) throw InputError("--context must be between 1 and 10,000,000");
  if (w.tp < 1 || w.tp > 1024) throw InputError("--tp must be between 1 and 1024");
  if (w.group_size < 8 || w.group_size > 1'000'000) throw InputError("--group-size must be between 8 and 1,000,000");
  if (w.chunked_prefill < 0 || w.chunked_prefill > 10'000'000) throw InputError("--chunked-prefill must be positive");
  if (!(w.gpu_memory_utilization > 0 && w.gpu_memory_utilization <= 1))
    throw InputError("--gpu-memory-utilization must be in (0, 1]");
  if (w.gpu_layers && *w.gpu_layers < 0) throw InputError("--gpu-layers must be 0 or more");
}

// What an engine reports about its KV pool (vLLM) or host memory (llama.cpp).
struct ServingDetails {
  std::optional<Bytes> kv_pool;                 // vLLM: memory left for KV blocks
  std::optional<std::int64_t> kv_blocks;        // vLLM: blocks of block_size tokens
  std::optional<double> max_concurrency;        // vLLM: sequences of `context` tokens the pool holds
  std::optional<Bytes> host_memory;             // llama.cpp: weights and KV kept in RAM
  std::optional<std::int64_t> gpu_layers;       // llama.cpp: layers on the GPU
};

struct InferenceEstimate {
  Params params{0};
  Params active_params{0};
  Bytes kv_bytes_per_token{0};  // one sequence, all layers, at full (unwindowed) length, per GPU
  std::int64_t context_tokens = 0;
  WeightFormat weights = WeightFormat::bf16;
  KvDtype kv = KvDtype::bf16;
  Bytes weight_bytes{0};        // per GPU
  MemoryEstimate memory;        // per GPU
  ServingDetails serving;
  std::vector<std::string> assumptions;
};

// KV elements per token per layer: key and value for every KV head (MHA, GQA, MQA; DeepSeek-V2 Table 1). MLA:
// transformers caches full per-head k (nope + rope) and v; MLA-aware engines (vLLM) cache the compressed latent
// and the shared rope key, (kv_lora_rank + qk_rope_head_dim) per layer (DeepSeek-V2 §2.1.3).
inline double kv_elements_per_token_per_layer(const ModelSpec& s, bool mla_latent = false) {
  if (s.mla_enabled && mla_latent) return double(s.mla.kv_lora_rank + s.mla.qk_rope_head_dim);
  if (s.mla_enabled)
    return double(s.heads) * double(s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim + s.mla.v_head_dim);
  return 2.0 * double(s.kv_heads) * double(s.head_dim);
}

inline WeightFormat default_weight_format(Precision p) {
  return p == Precision::fp32 ? WeightFormat::fp32 : p == Precision::fp16 ? WeightFormat::fp16 : WeightFormat::bf16;
}
inline KvDtype default_kv_dtype(Precision p) {
  return p == Precision::fp32 ? KvDtype::fp32 : p == Precision::fp16 ? KvDtype::fp16 : KvDtype::bf16;
}

namespace detail {
template <class Cached>
double sequence_kv(double kv_layer_tok, double tokens, Cached cached, std::int64_t first, std::int64_t last) {
  double bytes = 0;
  for (std::int64_t l = first; l < last; ++l) bytes += cached(l, tokens) * kv_layer_tok;
  return bytes;
}
}  // namespace detail

// vLLM: the engine claims gpu_memory_utilization of the device; what the weights, the profiled activation peak,
// CUDA graphs and the CUDA context leave becomes KV blocks of 16 tokens (vllm/worker gpu_worker
// determine_num_available_blocks). Without a device: what the batch needs.
template <class Cached>
InferenceEstimate detail_vllm(InferenceEstimate est, const ModelSpec& s, const InferenceWorkload& w, double weights,
                              double kv_layer_tok, double context, double prefill_tok, Cached cached) {
  const double bs = double(VllmProfile::block_size);
  // Paged allocation: each sequence holds whole blocks.
  const double per_seq_tokens = std::ceil(context / bs) * bs;
  const double per_seq = detail::sequence_kv(kv_layer_tok, per_seq_tokens, cached, 0, s.layers);
  // Profiling run: max_num_batched_tokens through the model at once, plus fp32 logits for max_num_seqs rows.
  const double profile_tokens = double(w.chunked_prefill > 0 ? w.chunked_prefill : VllmProfile::default_max_num_batched_tokens);
  const double activations = profile_tokens * prefill_tok + double(VllmProfile::default_max_num_seqs) * double(s.vocab) * 4.0;
  const double graphs = VllmProfile::cuda_graphs.in(unit::bytes);
  const double ctx = PytorchProfile::cuda_context.in(unit::bytes);
  MemoryComponents m;
  m.weights = Bytes(weights);
  m.activations = Bytes(activations);
  m.overhead = Bytes(graphs);
  if (w.device_memory) {
    const double budget = w.gpu_memory_utilization * w.device_memory->in(unit::bytes);
    const double pool = budget - weights - activations - graphs - ctx;
    est.serving.kv_pool = Bytes(std::max(0.0, pool));
    const double block_bytes = detail::sequence_kv(kv_layer_tok, bs, cached, 0, s.layers);
    est.serving.kv_blocks = pool > 0 ? static_cast<std::int64_t>(std::floor(pool / block_bytes)) : 0;
    // vLLM's "Maximum concurrency for N tokens per request": blocks × block_size / N (full-attention layers).
    est.serving.max_concurrency = double(*est.serving.kv_blocks) * bs / context;
    m.kv_cache = Bytes(std::max(0.0, pool));
  } else {
    m.kv_cache = Bytes(double(w.batch) * per_seq);
  }
  Moment mo{"serve", w.device_memory ? "pre-allocated pool" : "KV for the batch", m};
  est.memory = summarize({mo}, Profile::none, Bytes(ctx));
  est.assumptions.push_back("profile vllm: gpu_memory_utilization " + std::to_string(w.gpu_memory_utilization).substr(0, 4) +
                            ", KV blocks of 16 tokens, activations profiled at " +
                            std::to_string(static_cast<std::int64_t>(profile_tokens)) +
                            " batched tokens, CUDA graphs 0.5 GiB (typical vLLM log figure)");
  if (!w.device_memory) est.assumptions.push_back("no --gpu: memory the batch needs, not vLLM's pre-allocated pool");
  if (s.mla_enabled) est.assumptions.push_back("MLA: the compressed latent + rope key is cached, as vLLM does");
  return est;
}

// llama.cpp: the first n layers' weights and KV on the GPU (-ngl), the output layer too when every layer is,
// token embeddings always in host memory; a compute buffer for one micro-batch.
template <class Cached>
InferenceEstimate detail_llama_cpp(InferenceEstimate est, const ModelSpec& s, const InferenceWorkload& w,
                                   const WeightBytes& wb, double kv_layer_tok, double context, double ffn_width,
                                   Cached cached) {
  const std::int64_t n = std::min<std::int64_t>(s.layers, w.gpu_layers.value_or(s.layers));
  const double tp = double(w.tp);
  double gpu_w = 0, host_w = wb.embedding.in(unit::bytes);
  for (std::int64_t l = 0; l < s.layers; ++l) (l < n ? gpu_w : host_w) += wb.per_layer[static_cast<std::size_t>(l)].in(unit::bytes);
  (n == s.layers ? gpu_w : host_w) += wb.output.in(unit::bytes);
  const double b = double(w.batch);
  const double gpu_kv = b * detail::sequence_kv(kv_layer_tok, context, cached, 0, n);
  const double host_kv = b * detail::sequence_kv(kv_layer_tok, context, cached, n, s.layers);
  // Compute buffer (flash attention on): logits of one micro-batch in fp32 and its widest activations, an
  // approximation of ggml's graph allocator (gguf-parser computes it op by op).
  const double ub = double(LlamaCppProfile::n_ubatch);
  // (With -ngl 0 the CUDA backend still runs large prompt-processing matmuls on the GPU: context and buffer stay.)
  const double compute = ub * 4.0 * (double(s.vocab) + 3.0 * double(s.hidden) + 2.0 * ffn_width);
  MemoryComponents m;
  m.weights = Bytes(gpu_w / tp);
  m.kv_cache = Bytes(gpu_kv);
  m.activations = Bytes(compute);
  Moment mo{"serve", "weights, KV and compute buffer", m};
  est.memory = summarize({mo}, Profile::none, LlamaCppProfile::cuda_context);
  est.serving.host_memory = Bytes(host_w + host_kv);
  est.serving.gpu_layers = n;
  est.assumptions.push_back("profile llama.cpp: " + std::to_string(n) + " of " + std::to_string(s.layers) +
                            " layers on the GPU, token embeddings in host memory, n_ubatch 512, flash attention; "
                            "CUDA context ~0.35 GB");
  return est;
}

inline InferenceEstimate estimate_inference_memory(const ModelSpec& s, const InferenceWorkload& w) {
  validate(s);
  validate(w);
  const bool pytorch = w.profile == Profile::pytorch;
  const double c = w.precision == Precision::fp32 || w.precision == Precision::amp_bf16 ? 4.0 : 2.0;
  const double tp = double(w.tp);
  const ParamCounts counts = count_params(s);
  InferenceEstimate est;
  est.params = counts.total;
  est.active_params = counts.active;
  est.weights = w.weights.value_or(default_weight_format(w.precision));
  est.kv = w.kv.value_or(default_kv_dtype(w.precision));
  const double b = double(w.batch), sp = double(w.prompt_len);
  const double h = double(s.hidden), V = double(s.vocab);
  // Tensor parallelism splits every layer's weights and the head across the GPUs (Megatron-style column/row
  // parallel linears, vocabulary-parallel embedding and head).
  const WeightBytes wb = weight_bytes(s, est.weights, w.group_size);
  const double weights = wb.total().in(unit::bytes) / tp;
  est.weight_bytes = Bytes(weights);

  // KV tokens per sequence: HF generate feeds the prompt, then each new token but the last (prompt + new − 1);
  // engines plan for prompt + new; --context overrides both.
  const bool hf = pytorch || w.profile == Profile::none;
  const double len = w.context ? double(*w.context)
                               : sp + double(std::max<std::int64_t>(w.new_tokens, 1)) - (hf ? 1.0 : 0.0);
  est.context_tokens = static_cast<std::int64_t>(len);
  // Per GPU: KV heads are split over tp (at least one head per GPU); MLA's latent is replicated.
  const bool latent = s.mla_enabled && w.profile == Profile::vllm;
  double kv_split = tp;
  if (!latent && !s.mla_enabled && s.kv_heads < w.tp) kv_split = double(s.kv_heads);
  if (latent) kv_split = 1;
  const double kv_layer_tok = kv_elements_per_token_per_layer(s, latent) * kv_bytes_per_element(est.kv) / kv_split;
  est.kv_bytes_per_token = Bytes(kv_layer_tok * double(s.layers));
  // Sliding-window layers keep window − 1 tokens (transformers DynamicSlidingWindowLayer; vLLM and llama.cpp
  // likewise keep the window).
  auto cached = [&](std::int64_t l, double tokens) {
    return s.is_sliding_layer(l) ? std::min(tokens, double(s.sliding_window - 1)) : tokens;
  };
  double kv_after_prefill = 0, kv_final = 0, kv_layer_max = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    // During prefill a sliding layer still holds the whole prompt; it is cropped at the first decode step.
    kv_after_prefill += b * std::min(sp, len) * kv_layer_tok;
    kv_final += b * cached(l, len) * kv_layer_tok;
    kv_layer_max = std::max(kv_layer_max, b * cached(l, len) * kv_layer_tok);
  }
  // Prompt tokens processed at once: the whole prompt, or one chunk (--chunked-prefill).
  const double chunk = w.chunked_prefill > 0 ? std::min(sp, double(w.chunked_prefill)) : sp;

  // Prefill working set per prompt token at the widest point of a layer (no autograd, one layer at a time):
  // the residual stream and the normalised input (c·h each), the fp32 RMSNorm upcast freed just before (4h),
  // and in the FFN the up projection, the activation and the product (3·c·i for gated FFNs, 2·c·i plain).
  double ffn_width = double(s.intermediate);
  for (std::int64_t l = 0; l < s.layers; ++l)
    if (s.is_moe_layer(l)) ffn_width = std::max(ffn_width, double(s.moe.intermediate * s.moe.experts_per_token));
  // GPT-2's NewGELU is a chain of pointwise ops: input, cube term, tanh and output coexist (4·c·i).
  const double ffn_live = (s.mlp == MlpKind::gated ? 3.0 : s.activation == "gelu_new" ? 4.0 : 2.0) * c * ffn_width / tp;
  double prefill_tok = ffn_live + 2.0 * c * h + 4.0 * h;
  // Attention scores when the kernel materialises them (eager, or SDPA's math path for fp32 GQA): scores and
  // softmax output of one layer, per element.
  const auto kernel = detail::sdpa_backend(s, w.attention, c);
  // HF eager: the scaled scores, the masked scores, the fp32 softmax and its 16-bit cast (3 c + 4 B per element;
  // measured on H200: Llama-3.2-1B b4 s4096 prefill holds 10.0 B per score element at its peak). SDPA's math
  // fallback: scores and softmax output.
  double scores = 0;
  if (kernel == detail::AttentionKernel::eager) scores = b * double(s.heads) / tp * chunk * sp * (3.0 * c + 4.0);
  if (kernel == detail::AttentionKernel::math) scores = b * double(s.heads) / tp * chunk * sp * (c + 4.0);
  // Last-position logits (logits_to_keep = 1) and generate's fp32 copy of them.
  const double logits = b * V * (c + 4.0);
  const double workspace = pytorch ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;

  if (w.profile == Profile::vllm) return detail_vllm(est, s, w, weights, kv_layer_tok, len, prefill_tok, cached);
  if (w.profile == Profile::llama_cpp) return detail_llama_cpp(est, s, w, wb, kv_layer_tok, len, ffn_width, cached);

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
  add("prefill", "last layer", kv_after_prefill, b * chunk * prefill_tok + scores, 0);
  add("prefill", "logits", kv_after_prefill, b * chunk * c * h, logits);
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
    A.malloc(wb.embedding.in(unit::bytes) / tp);
    for (const Bytes& l : wb.per_layer) A.malloc(l.in(unit::bytes) / tp);
    A.malloc(wb.output.in(unit::bytes) / tp);
    A.malloc(workspace / 2);
    A.malloc(workspace / 2);
    const double kv_half = kv_layer_tok / 2;  // keys or values, per token
    std::vector<H> keys(static_cast<std::size_t>(s.layers)), values(static_cast<std::size_t>(s.layers));
    std::vector<double> len(static_cast<std::size_t>(s.layers), sp);
    // Prefill.
    const double tok = b * chunk;
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
    // Long generations replay their first and last 32 steps and jump the middle in one step (the pattern of
    // freed and requested blocks repeats), so the replay stays a few thousand events.
    constexpr std::int64_t kEdge = 32;
    for (std::int64_t step = 1; step < w.new_tokens; ++step) {
      double grow = 1;
      if (w.new_tokens > 2 * kEdge && step == kEdge) {
        grow = double(w.new_tokens - 2 * kEdge);
        step += w.new_tokens - 2 * kEdge - 1;
      }
      H x = A.malloc(c * h * b);
      for (std::int64_t l = 0; l < s.layers; ++l) {
        const auto i = static_cast<std::size_t>(l);
        const double n = s.is_sliding_layer(l) ? std::min(len[i] + grow, double(s.sliding_window - 1)) : len[i] + grow;
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
  est.assumptions.push_back(w.context ? "KV cache holds --context tokens per sequence"
                                      : "KV cache holds prompt + new − 1 tokens per sequence; sliding-window layers window − 1");
  return est;
}

}  // namespace gpuplan
