// Per-GPU memory for serving: weights, KV cache, and the working set of prefill and decode.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "../defaults.h"
#include "../model.h"
#include "../quant.h"
#include "../units.h"
#include "allocator.h"
#include "profile.h"
#include "training.h"
#include "hf_generate.h"
#include "llama_cpp.h"
#include "sglang.h"
#include "vllm.h"

namespace gpuplan {

// What is served (model precision, formats, batch, context, tensor parallelism), the engine that serves it with its
// own settings, and the GPU facts the engines' defaults depend on.
struct InferenceWorkload {
  std::int64_t batch = defaults::batch;
  std::int64_t prompt_len = defaults::prompt_len;
  std::int64_t new_tokens = defaults::new_tokens;
  std::optional<std::int64_t> context;       // KV tokens per sequence to plan for (default prompt + new); vLLM's
                                             // max_model_len, SGLang's context_length, llama.cpp's n_ctx
  Precision precision = Precision::bf16;     // activations dtype (bf16, fp16, fp32)
  std::optional<WeightFormat> weights;       // default: the checkpoint as stored, else the precision's dtype
  std::optional<StoredWeightBytes> stored;   // the checkpoint's own weight bytes, when read from its headers
  Bytes vision_encoder{0};                   // the vision encoder's weights the engine loads beside the language model
  VisionEncoderShape vision;                 // its shape, where the engine profiles it (depth 0: not loaded or unknown)
  std::int64_t group_size = 128;             // GPTQ/AWQ quantisation group
  std::optional<KvDtype> kv;                 // default: the activations dtype
  std::int64_t tp = 1;                       // tensor-parallel GPUs: weights and KV heads split across them
  Profile profile = Profile::pytorch;        // the engine; each reads its own settings below
  HfGenerateSettings hf;                     // pytorch (and none)
  VllmSettings vllm;
  SglangSettings sglang;
  LlamaCppSettings llama_cpp;                // llama.cpp, and the runner Ollama starts
  std::optional<Bytes> device_memory;        // the GPU's usable memory (the driver's total)
  std::optional<Bytes> cuda_total;           // what cudaMemGetInfo reports as the total: vLLM's budget base
  bool device_is_a100 = false;               // vLLM picks smaller scheduler defaults on the A100
  bool device_is_rocm = false;               // an AMD GPU: SGLang's default attention backend there is aiter
  GpuLink link = GpuLink::nvswitch;          // how tensor-parallel peers connect (default: an H100 SXM's)
  Mxfp4Backend mxfp4_kernel = Mxfp4Backend::triton;  // vLLM's MXFP4 MoE kernel for the GPU (default: an H100's)
};

inline void validate(const InferenceWorkload& w) {
  if (w.batch < 1 || w.batch > 1'000'000) throw InputError("--batch must be between 1 and 1,000,000");
  if (w.prompt_len < 1 || w.prompt_len > 10'000'000) throw InputError("--prompt-len must be between 1 and 10,000,000");
  if (w.new_tokens < 0 || w.new_tokens > 10'000'000) throw InputError("--new-tokens must be between 0 and 10,000,000");
  if (w.context && (*w.context < 1 || *w.context > 10'000'000)) throw InputError("--context must be between 1 and 10,000,000");
  if (w.tp < 1 || w.tp > 1024) throw InputError("--tp must be between 1 and 1024");
  if (w.group_size < 8 || w.group_size > 1'000'000) throw InputError("--group-size must be between 8 and 1,000,000");
  if (w.hf.prefill_chunk < 0 || w.hf.prefill_chunk > 10'000'000) throw InputError("--chunked-prefill must be positive");
  if (w.vllm.max_num_batched_tokens < 0 || w.vllm.max_num_batched_tokens > 10'000'000)
    throw InputError("--max-num-batched-tokens must be positive");
  if (!(w.vllm.gpu_memory_utilization > 0 && w.vllm.gpu_memory_utilization <= 1))
    throw InputError("--gpu-memory-utilization must be in (0, 1]");
  if (w.llama_cpp.n_gpu_layers && *w.llama_cpp.n_gpu_layers < 0) throw InputError("--gpu-layers must be 0 or more");
  if (w.llama_cpp.n_ubatch < 1 || w.llama_cpp.n_ubatch > 1'000'000) throw InputError("--ubatch must be between 1 and 1,000,000");
  if (w.llama_cpp.n_parallel < 1 || w.llama_cpp.n_parallel > 65536) throw InputError("--parallel must be between 1 and 65536");
  if (w.vllm.max_num_seqs < 0 || w.vllm.max_num_seqs > 1'000'000) throw InputError("--max-num-seqs must be between 1 and 1,000,000");
  if (!(w.sglang.mem_fraction_static >= 0 && w.sglang.mem_fraction_static <= 1))
    throw InputError("--mem-fraction-static must be in (0, 1]");
  if (w.sglang.max_running_requests < 0 || w.sglang.max_running_requests > 1'000'000)
    throw InputError("--max-running-requests must be between 1 and 1,000,000");
}

// Why a tensor-parallel size cannot serve the model, if it cannot: vLLM and SGLang refuse one that does not divide
// the attention heads (vLLM ModelConfig.verify_with_parallel_config), as Megatron-style splits do; key/value heads
// are split over tp or, fewer than tp, replicated (tp a multiple of them). llama.cpp splits by layers and rows.
inline std::optional<std::string> serving_tp_problem(const ModelSpec& s, const InferenceWorkload& w, std::int64_t tp) {
  if (tp <= 1 || llama_cpp_engine(w.profile)) return std::nullopt;
  if (s.heads % tp != 0)
    return "--tp " + std::to_string(tp) + " does not divide the model's " + std::to_string(s.heads) + " attention heads";
  for (std::int64_t l = 0; l < s.layers && !s.mla_enabled; ++l) {  // every layer's own key/value heads
    const std::int64_t kv = s.shape(l).kv_heads;
    if (kv % tp != 0 && tp % kv != 0)
      return "--tp " + std::to_string(tp) + " neither divides nor is a multiple of the model's " + std::to_string(kv) +
             " key/value heads";
    if (s.layer_shapes.empty()) break;
  }
  return std::nullopt;
}

// The largest value in [1, hi] for which fits(v) holds (fits is monotone), 0 when none.
template <class F>
std::int64_t largest_fitting(std::int64_t hi, F fits) {
  if (!fits(1)) return 0;
  std::int64_t lo = 1;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// What an engine reports at start-up, in its own terms: vLLM's budget and KV pool, llama.cpp's host memory.
struct ServingDetails {
  std::string engine;                           // engine and the version whose arithmetic is followed
  std::optional<Bytes> budget;                  // vLLM: gpu_memory_utilization × the CUDA total
  std::optional<Bytes> activation_peak;         // vLLM: torch peak of the profiling step
  std::optional<Bytes> non_torch;               // vLLM: non-torch memory the profiling step adds
  std::optional<Bytes> cuda_graphs;             // vLLM: captured after the pool is sized, outside the budget
  std::optional<Bytes> kv_pool;                 // vLLM: "Available KV cache memory"
  std::optional<std::int64_t> kv_blocks;        // vLLM: blocks of block_size tokens
  std::optional<std::int64_t> kv_tokens;        // vLLM: "GPU KV cache size: N tokens"
  std::optional<double> max_concurrency;        // vLLM: sequences of `context` tokens the pool holds
  std::optional<std::int64_t> max_num_batched_tokens, max_num_seqs;  // vLLM: the profiling step's limits
  std::optional<std::int64_t> max_model_len;    // vLLM: --max-model-len (default: the model's)
  std::optional<bool> starts;                   // vLLM: the pool holds one max_model_len request
  std::optional<std::int64_t> largest_max_model_len;  // vLLM: the longest max_model_len that starts
  std::optional<double> min_gpu_memory_utilization;   // vLLM: the smallest utilization that starts
  std::optional<double> min_mem_fraction_static;      // SGLang: the smallest fraction that holds one sequence
  std::optional<Bytes> host_memory;             // llama.cpp: weights and KV kept in RAM
  std::optional<std::int64_t> gpu_layers;       // llama.cpp: layers on the GPU
  std::optional<std::int64_t> host_expert_layers;  // llama.cpp: layers whose routed experts stay in host memory
  std::optional<LlamaCppPlacement> placement;   // llama.cpp: where each layer's weights are
  std::optional<Bytes> host_dense_weights;      // llama.cpp: host weights read whole (layers, output; no embedding)
  std::optional<Bytes> host_expert_weights;     // llama.cpp: routed experts in host memory
  std::vector<LlamaCppDeviceBuffers> devices;   // llama.cpp: each GPU's model, KV and compute buffers (--tp GPUs)
  std::string engine_version;                   // the release followed (llama.cpp: its build)
  std::vector<std::pair<std::string, double>> implied_defaults;  // engine settings not given, as the release sets them
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

// The rotary cos/sin cache serving engines (vLLM, SGLang) keep as a buffer beside the weights: max_position_embeddings
// × rotary dims in the model dtype, on every GPU (vLLM 0.19 logged Llama 3.1 8B's weights as 14.99 GiB = 16.06 GB of
// parameters + 131,072 × 128 × 2 B).
inline double engine_rotary_cache_bytes(const ModelSpec& s, double c) {
  const double rotary = double(s.head_dim) * s.partial_rotary;
  return double(std::max<std::int64_t>(s.max_positions, 0)) * rotary * c;
}

// KV elements per token per layer: key and value for every KV head (MHA, GQA, MQA; DeepSeek-V2 Table 1). MLA:
// the full per-head k (nope + rope) and v, or (mla_latent) the compressed latent and the shared rope key,
// (kv_lora_rank + qk_rope_head_dim) per layer (DeepSeek-V2 §2.1.3), as vLLM, SGLang and transformers 5.17 cache it.
inline double kv_elements_per_token_per_layer(const ModelSpec& s, bool mla_latent = false) {
  if (s.mla_enabled && mla_latent) return double(s.mla.kv_lora_rank + s.mla.qk_rope_head_dim);
  if (s.mla_enabled)
    return double(s.heads) * double(s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim + s.mla.v_head_dim);
  return 2.0 * double(s.kv_heads) * double(s.head_dim);
}

// Layer l's KV bytes per token on one GPU: its own key/value heads (a layer of its own shape: Gemma 4's full-attention
// layers) split over tp, at least one head per GPU; MLA's latent replicated. 0 for a layer that keeps none: linear
// attention (its fixed state is recurrent_state_bytes) or one reading an earlier layer's K and V.
inline double kv_token_bytes_at(const ModelSpec& s, std::int64_t l, double element_bytes, std::int64_t tp, bool latent) {
  if (!s.keeps_kv(l)) return 0;
  if (latent) return kv_elements_per_token_per_layer(s, true) * element_bytes;
  const std::int64_t heads = s.mla_enabled ? s.heads : s.shape(l).kv_heads;
  const double split = s.mla_enabled ? double(tp) : double(std::min(tp, heads));
  const double elements = s.mla_enabled ? kv_elements_per_token_per_layer(s) : 2.0 * double(s.kv_dim(l));
  return elements * element_bytes / split;
}

inline WeightFormat default_weight_format(Precision p) {
  return p == Precision::fp32 ? WeightFormat::fp32 : p == Precision::fp16 ? WeightFormat::fp16 : WeightFormat::bf16;
}
inline KvDtype default_kv_dtype(Precision p) {
  return p == Precision::fp32 ? KvDtype::fp32 : p == Precision::fp16 ? KvDtype::fp16 : KvDtype::bf16;
}

// Tokens a layer's cache holds for a sequence of `tokens`: sliding-window layers keep window − 1 (transformers
// DynamicSlidingWindowLayer; vLLM and llama.cpp likewise keep the window).
// Linear-attention layers cache no tokens (their fixed state is recurrent_state_bytes).
inline double kv_cached_tokens(const ModelSpec& s, std::int64_t layer, double tokens) {
  if (s.is_linear_layer(layer)) return 0;
  return s.is_sliding_layer(layer) ? std::min(tokens, double(s.sliding_window - 1)) : tokens;
}

// Layers with a KV cache of their own (not linear attention, not reading another layer's K and V).
inline std::int64_t kv_layer_count(const ModelSpec& s) {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) n += s.keeps_kv(l) ? 1 : 0;
  return n;
}

inline std::int64_t linear_layer_count(const ModelSpec& s) {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) n += s.is_linear_layer(l) ? 1 : 0;
  return n;
}

// One sequence's state in one linear-attention layer, per GPU (value heads split over tp): the conv window in
// the activation dtype and the key×value state in fp32, as HF's Qwen3-Next cache and the fla kernels keep it.
inline double recurrent_state_bytes(const ModelSpec& s, double act_bytes, std::int64_t tp) {
  if (s.linear_layers.empty()) return 0;
  const double split = double(std::min<std::int64_t>(tp, s.linear.value_heads));
  return (double(s.linear.conv_state()) * act_bytes + double(s.linear.recurrent_state()) * 4.0) / split;
}

// KV bytes of one sequence over layers [first, last) (kv_tok: each layer's bytes per token), with `state_layer`
// bytes for each linear-attention layer.
inline double sequence_kv(const ModelSpec& s, const std::vector<double>& kv_tok, double tokens, std::int64_t first,
                          std::int64_t last, double state_layer = 0) {
  double bytes = 0;
  for (std::int64_t l = first; l < last; ++l)
    bytes += s.is_linear_layer(l) ? state_layer : kv_cached_tokens(s, l, tokens) * kv_tok[static_cast<std::size_t>(l)];
  return bytes;
}

// The tensors of serving one batch, per GPU: weights, the KV cache at its moments, the prefill working set.
struct InferenceTensors {
  WeightBytes wb;
  double c = 2;              // activation element bytes
  double b = 0, sp = 0, h = 0;
  double weights = 0;        // per GPU
  double len = 0;            // KV tokens per sequence to plan for
  std::vector<double> kv_tok;  // per layer: KV bytes per token, per GPU (0: the layer keeps none)
  double state_layer = 0;    // linear-attention state per sequence and linear layer, per GPU
  double kv_after_prefill = 0, kv_final = 0, kv_layer_max = 0;
  double kv_decompressed = 0;  // HF MLA: one layer's cache decompressed by a decode step at the final length
  double chunk = 0;          // prompt tokens processed at once
  double ffn_width = 0, ffn_live = 0;
  double prefill_tok = 0;    // prefill working set per prompt token at a layer's widest point
  double linear_tok = 0;     // a gated-DeltaNet layer's prefill working set per prompt token (torch fallback)
  double decode_experts = 0; // a decode step's gathered expert weights (batched_mm), bytes
  double scores = 0;         // materialised attention scores (eager / math), bytes
  detail::AttentionKernel kernel = detail::AttentionKernel::flash;
  double logits = 0;         // last-position logits and generate's fp32 copy
  double workspace = 0;      // cuBLAS workspaces
  bool latent = false;       // MLA's latent cache (vLLM, SGLang, HF generate)
  LlamaCppRowPadding row_padding;  // llama.cpp on CUDA/ROCm: what ggml-cuda adds to each layer's tensors and the output
};

namespace detail {

// HF MLA over `tokens` cached tokens: the latent decompressed by kv_b_proj (per head nope + v) and the key with the
// rope part concatenated (per head nope + rope), bytes per layer, per GPU; 0 for other attention.
inline double mla_decompressed(const ModelSpec& s, const InferenceTensors& t, double tp, double tokens) {
  if (!s.mla_enabled || !t.latent) return 0;
  const MlaSpec& m = s.mla;
  return t.c * double(s.heads) / tp * double(2 * m.qk_nope_head_dim + m.v_head_dim + m.qk_rope_head_dim) * tokens;
}

// KV tokens per sequence and the cache's bytes after prefill, at the end, and its largest layer.
inline void kv_cache_tensors(InferenceTensors& t, const ModelSpec& s, const InferenceWorkload& w, KvDtype kv) {
  // HF generate feeds the prompt, then each new token but the last (prompt + new − 1); engines plan for prompt +
  // new; --context overrides both.
  const bool hf = w.profile == Profile::pytorch || w.profile == Profile::none;
  t.len = w.context ? double(*w.context) : t.sp + double(std::max<std::int64_t>(w.new_tokens, 1)) - (hf ? 1.0 : 0.0);
  // Per GPU: KV heads are split over tp (at least one head per GPU); MLA's latent is replicated. HF generate on
  // transformers 5.17 caches the latent too: measured_m1's DeepSeek-V3-shaped generate (6 layers, kv_lora_rank 256,
  // rope 32, batch 4, 2,079 tokens) left 28,740,096 cache bytes = 6 × 4 × 2,079 × 288 × 2 B, not the 255 MB of
  // per-head k and v; each forward decompresses it (detail::mla_decompressed).
  t.latent = s.mla_enabled && (hf || w.profile == Profile::vllm || w.profile == Profile::sglang);
  t.state_layer = recurrent_state_bytes(s, t.c, w.tp);
  t.kv_tok.assign(static_cast<std::size_t>(s.layers), 0.0);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    if (s.is_linear_layer(l)) {  // a fixed state from the first prompt token on
      t.kv_after_prefill += t.b * t.state_layer;
      t.kv_final += t.b * t.state_layer;
      continue;
    }
    const double tok = t.kv_tok[static_cast<std::size_t>(l)] = kv_token_bytes_at(s, l, kv_bytes_per_element(kv), w.tp, t.latent);
    // During prefill a sliding layer still holds the whole prompt; it is cropped at the first decode step.
    t.kv_after_prefill += t.b * std::min(t.sp, t.len) * tok;
    t.kv_final += t.b * kv_cached_tokens(s, l, t.len) * tok;
    t.kv_layer_max = std::max(t.kv_layer_max, t.b * kv_cached_tokens(s, l, t.len) * tok);
    if (hf) t.kv_decompressed = mla_decompressed(s, t, double(w.tp), t.b * t.len);
  }
}

// MoE layers whose experts run through transformers 5's experts interface (integrations/moe.py: grouped_mm by
// default, modeling_utils get_correct_experts_implementation); HF Llama 4 routes densely through its own bmm.
inline bool grouped_experts(const ModelSpec& s) { return s.moe.experts > 0 && !s.moe.dense_routing; }

// Bytes of a routing weight as the experts receive it: DeepSeek-V3-style routers with a score-correction bias
// (GLM-4.5, DeepSeek-V3: modeling_glm4_moe.py Glm4MoeTopkRouter computes in fp32 and returns fp32 weights) leave
// them fp32; softmax routers (Qwen3-MoE, Qwen3-Next, Mixtral, PhiMoE) cast them to the activations' dtype.
inline double routing_weight_bytes(const ModelSpec& s, double c) { return s.moe.router_bias ? 4.0 : c; }

// Widths of a gated-DeltaNet layer (Qwen3-Next) per token, per GPU: key and value dims, value heads, and the chunk
// of transformers' torch_chunk_gated_delta_rule (chunk_size 64), the path it runs without the fla kernels.
struct DeltaWidths {
  double kd = 0, vd = 0, heads = 0, dk = 0, dv = 0, conv = 0;
  static constexpr double chunk = 64;
};
inline DeltaWidths delta_widths(const ModelSpec& s, double tp) {
  const LinearAttentionSpec& L = s.linear;
  const double split = std::min(tp, double(std::max<std::int64_t>(L.value_heads, 1)));
  return {double(L.key_dim()) / split, double(L.value_dim()) / split, double(L.value_heads) / split,
          double(L.key_head_dim), double(L.value_head_dim), double(L.conv_dim()) / split};
}

// The peak of gated_delta_prefill per token: the qkvz projection, z, the convolved q|k|v, q and k repeated to the
// value heads, and in the kernel ten fp32 head-width tensors and three fp32 chunk×chunk ones.
inline double gated_delta_tok(const ModelSpec& s, double c, double tp) {
  const DeltaWidths d = delta_widths(s, tp);
  const double qkvz = (2 * d.kd + 2 * d.vd) * c, z = d.vd * c, mixed = d.conv * c, rep = 2 * d.heads * d.dk * c;
  const double fp32 = 4.0 * d.heads * (6 * d.dk + 4 * d.dv) + 3 * 4.0 * d.heads * DeltaWidths::chunk;
  return qkvz + z + mixed + rep + fp32;
}

// Prefill working set per prompt token at the widest point of a layer (no autograd, one layer at a time): the
// residual stream and the normalised input (c·h each), the fp32 RMSNorm upcast freed just before (4h), and in the
// FFN the up projection, the activation and the product (3·c·i for gated FFNs, 2·c·i plain).
inline void prefill_tensors(InferenceTensors& t, const ModelSpec& s, const InferenceWorkload& w) {
  const double tp = double(w.tp);
  t.chunk = w.hf.prefill_chunk > 0 ? std::min(t.sp, double(w.hf.prefill_chunk)) : t.sp;
  t.ffn_width = double(s.intermediate);
  for (const LayerShape& sh : s.layer_shapes) t.ffn_width = std::max(t.ffn_width, double(sh.intermediate));  // widest
  // Routed tokens: top-k experts each, or all of them for HF Llama 4's dense routing.
  const double routed = double(s.moe.dense_routing ? s.moe.experts : s.moe.experts_per_token);
  for (std::int64_t l = 0; l < s.layers; ++l)
    if (s.is_moe_layer(l)) t.ffn_width = std::max(t.ffn_width, double(s.moe.intermediate) * routed);
  // GPT-2's NewGELU is a chain of pointwise ops: input, cube term, tanh and output coexist (4·c·i).
  t.ffn_live = (s.mlp == MlpKind::gated ? 3.0 : s.activation == "gelu_new" ? 4.0 : 2.0) * t.c * t.ffn_width / tp;
  // transformers 5's grouped_mm experts path (experts_prefill): per routed token (k per token) the expert-sorted
  // input with gate_up's output and its copy (h + 4I), later four h-wide rows (input, output, weighted, restored;
  // the last two fp32 after a DeepSeek-V3-style router).
  if (grouped_experts(s)) {
    const double I = double(s.moe.intermediate) / tp;
    const double wb = routing_weight_bytes(s, t.c);
    t.ffn_live = std::max(t.ffn_live, routed * std::max(t.c * (t.h + 4.0 * I), t.h * (2.0 * t.c + 2.0 * wb)));
    // Decode runs batched_mm (generation/utils.py _optimize_model_for_decode): each sequence's k experts' weights
    // gathered, gate_up (2I × h) and down (h × I).
    t.decode_experts = t.b * routed * 3.0 * I * t.h * t.c;
  }
  t.prefill_tok = t.ffn_live + 2.0 * t.c * t.h + 4.0 * t.h;
  if (s.linear.kind == LinearAttentionKind::gated_deltanet && !s.linear_layers.empty())
    t.linear_tok = gated_delta_tok(s, t.c, tp) + 2.0 * t.c * t.h;
  if (s.moe.dense_routing) t.prefill_tok += 2.0 * t.c * t.h * routed / tp;  // the repeated and the weighted input
  // Attention scores when the kernel materialises them (eager, or SDPA's math path for fp32 GQA): HF eager keeps
  // the scaled scores, the masked scores, the fp32 softmax and its 16-bit cast (3 c + 4 B per element; measured on
  // H200: Llama-3.2-1B b4 s4096 prefill holds 10.0 B per score element at its peak); SDPA's math fallback the
  // scores and the softmax output.
  t.kernel = sdpa_backend(s, w.hf.attention, t.c);
  // gpt-oss: scores, the sink-extended logits and their max-shifted copy, the softmax in the compute dtype (3 c).
  const double eager_el = s.attn_sinks ? 3.0 * t.c : 3.0 * t.c + 4.0;
  if (t.kernel == AttentionKernel::eager) t.scores = t.b * double(s.heads) / tp * t.chunk * t.sp * eager_el;
  if (t.kernel == AttentionKernel::math) t.scores = t.b * double(s.heads) / tp * t.chunk * t.sp * (t.c + 4.0);
}

}  // namespace detail

inline InferenceTensors inference_tensors(const ModelSpec& s, const InferenceWorkload& w, WeightFormat format,
                                          KvDtype kv) {
  InferenceTensors t;
  t.c = w.precision == Precision::fp32 || w.precision == Precision::amp_bf16 ? 4.0 : 2.0;
  t.b = double(w.batch);
  t.sp = double(w.prompt_len);
  t.h = double(s.hidden);
  // Tensor parallelism splits every layer's weights and the head across the GPUs (Megatron-style column/row
  // parallel linears, vocabulary-parallel embedding and head).
  t.wb = w.stored && !w.weights ? w.stored->bytes
                                 : weight_bytes(s, format, w.group_size, /*gguf_file=*/llama_cpp_engine(w.profile));
  t.wb.encoder = w.vision_encoder;  // sharded over tp like the language model (vLLM's mm_encoder_tp_mode "weights")
  t.weights = t.wb.total().in(unit::bytes) / double(w.tp);
  const LlamaCppBackend backend = w.llama_cpp.backend_or_default();
  if (llama_cpp_engine(w.profile) && !(w.stored && !w.weights) &&
      (backend == LlamaCppBackend::cuda || backend == LlamaCppBackend::rocm))
    t.row_padding = llama_cpp_row_padding(s, format);
  detail::kv_cache_tensors(t, s, w, kv);
  detail::prefill_tensors(t, s, w);
  t.logits = t.b * double(s.vocab) * (t.c + 4.0);  // last-position logits (logits_to_keep = 1) and an fp32 copy
  t.workspace = w.profile == Profile::pytorch ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;
  return t;
}

// HF generate's moments: the last layer of prefill, the logits, a decode step's cache append.
inline std::vector<Moment> generate_moments(const InferenceTensors& t) {
  std::vector<Moment> moments;
  auto add = [&](const char* phase, const char* what, double kv, double acts, double lg) {
    MemoryComponents m;
    m.weights = Bytes(t.weights);
    m.kv_cache = Bytes(kv);
    m.activations = Bytes(acts);
    m.logits = Bytes(lg);
    m.overhead = Bytes(t.workspace);
    moments.push_back(Moment{phase, what, m});
  };
  add("prefill", "last layer", t.kv_after_prefill, t.b * t.chunk * t.prefill_tok + t.scores, 0);
  if (t.linear_tok > 0) add("prefill", "linear attention", t.kv_after_prefill, t.b * t.chunk * t.linear_tok, 0);
  add("prefill", "logits", t.kv_after_prefill, t.b * t.chunk * t.c * t.h, t.logits);
  // Decode: torch.cat grows one layer's cache at a time, so the old and the new tensor briefly coexist.
  add("decode", "cache append", t.kv_final, std::max(t.kv_layer_max, t.kv_decompressed), t.logits);
  if (t.decode_experts > 0) add("decode", "experts gathered", t.kv_final, t.decode_experts, t.logits);
  return moments;
}

namespace detail {

using Id = AllocationTimeline::Id;

// Qwen3 / Gemma 3 / OLMo 2 normalise q and k (transformers' RMSNorm over `n` elements in `rows` rows) before the
// rotary embedding: an fp32 copy, its square (freed once averaged), variance + eps and its rsqrt, the normalised
// fp32, the 16-bit cast and the weight's product; the projection is freed after. Recorded (allocator trace,
// Qwen3-0.6B prefill at batch 32 on an H200, measured_g1): per layer three 256 MiB fp32 blocks for q, two live at
// a time, where the layer norm upcasts 128 MiB: +x32 +sq +var −sq +eps +rsqrt −eps +y32 −rsqrt −x32 +cast +out −cast
// −y32 −var −proj. k's elements are its cache bytes over the compute dtype's (the cache keeps that dtype).
template <class Sink>
Id qk_norm(Sink& A, Id proj, double n, double rows, double c) {
  const Id x32 = A.malloc(4 * n), sq = A.malloc(4 * n), var = A.malloc(4 * rows);
  A.free(sq);
  const Id eps = A.malloc(4 * rows), rsqrt = A.malloc(4 * rows);
  A.free(eps);
  const Id y32 = A.malloc(4 * n);
  A.free(rsqrt);
  A.free(x32);
  const Id cast = A.malloc(c * n), out = A.malloc(c * n);
  A.free(cast);
  A.free(y32);
  A.free(var);
  A.free(proj);
  return out;
}

// transformers' RMSNorm over `n` elements (`tok` rows), as the allocator traces of dense prefills record it
// (traces/g5-llama31_8b-*, g5-llama32_1b-*): the fp32 copy and its square (freed once averaged), the normalised
// fp32, the cast back and the weight's product.
// nn.LayerNorm (GPT-2, GPT-NeoX) normalises in its kernel: its output only.
template <class Sink>
Id rms_norm(Sink& A, const ModelSpec& s, double n, double c) {
  if (s.norm == NormKind::layer) return A.malloc(c * n);
  const Id x32 = A.malloc(4.0 * n), sq = A.malloc(4.0 * n);
  A.free(sq);
  const Id y32 = A.malloc(4.0 * n);
  A.free(x32);
  const Id cast = A.malloc(c * n), out = A.malloc(c * n);
  A.free(cast);
  A.free(y32);
  return out;
}

// apply_rotary_pos_emb on one projection of `bytes` (freed): x·cos, rotate_half's negated half and its cat, that
// times sin, their sum (the same traces: +1024 +512 +1024 −512 +1024 −1024 +1024 −1024 −1024 MiB for q).
template <class Sink>
Id rotary(Sink& A, Id x, double bytes) {
  const Id cos = A.malloc(bytes), half = A.malloc(bytes / 2), cat = A.malloc(bytes);
  A.free(half);
  const Id sin = A.malloc(bytes);
  A.free(cat);
  const Id out = A.malloc(bytes);
  A.free(cos);
  A.free(sin);
  A.free(x);
  return out;
}

// Attention in a prefill layer from the normed input: q, k, v (and q/k norms), rotary embeddings, two k/v-sized
// blocks taken and freed, the scores where the kernel materialises them, the kernel's output (already laid out
// token-major, so the transpose copies nothing), the output projection; the input and rotated q freed after it.
// Leaves k and v allocated (none for a layer reading an earlier layer's K and V: Gemma 4's shared layers).
template <class Sink>
Id attention_prefill(Sink& A, const ModelSpec& s, const InferenceTensors& t, double tp, double tok, Id normed, Id& key,
                     Id& value, std::int64_t layer) {
  const bool linear = s.is_linear_layer(layer);
  const double c = t.c, h = t.h, q_dim = double(s.q_dim(layer));
  const double kv_half = linear ? t.b * t.state_layer / 2 / tok : t.kv_tok[static_cast<std::size_t>(layer)] / 2;
  Id q0 = A.malloc(c * q_dim * tok);
  if (s.qk_norm) q0 = qk_norm(A, q0, q_dim * tok, s.qk_norm_full ? tok : double(s.heads) * tok, c);
  Id k0 = A.malloc(kv_half * tok);
  if (s.qk_norm) k0 = qk_norm(A, k0, kv_half / c * tok, s.qk_norm_full ? tok : double(s.shape(layer).kv_heads) * tok, c);
  value = A.malloc(kv_half * tok);
  const Id q = rotary(A, q0, c * q_dim * tok);
  key = rotary(A, k0, kv_half * tok);
  // Two k/v-sized blocks taken and given back before the kernel (the traces: +256 +256 −256 −256 MiB). By the
  // traces' addresses they are the cache's own copies (DynamicLayer's first update concatenates onto empty tensors)
  // and what is freed is the projections; replaying them that way moved Llama 3.1 8B's g2 cases 3–5 points under
  // and OLMo 2 1B at batch 64 to −22 %, so the rest of the layer's order needs the same address-level check first.
  const Id kc = A.malloc(kv_half * tok), vc = A.malloc(kv_half * tok);
  A.free(kc);
  A.free(vc);
  const Id decompressed = A.malloc(mla_decompressed(s, t, tp, tok));  // MLA: what attention reads beside the latent
  Id sc = AllocationTimeline::none, sc2 = AllocationTimeline::none;
  std::vector<Id> rep;  // math repeats k and v to every head and scales a copy of q
  if (t.scores > 0) {
    for (int k = 0; k < (t.kernel == AttentionKernel::math ? 3 : 0); ++k) rep.push_back(A.malloc(c * q_dim * tok));
    // eager: 16-bit scores and masked scores, then the softmax (fp32 and its cast; gpt-oss: 16 bit); math: c + 4
    const bool eager = t.kernel == AttentionKernel::eager;
    const double parts = eager ? (s.attn_sinks ? 3.0 * c : 3.0 * c + 4.0) : c + 4.0;
    const double first = (eager ? 2.0 * c : c) / parts;
    sc = A.malloc(t.scores * first);
    sc2 = A.malloc(t.scores * (1.0 - first));
  }
  const Id o = A.malloc(c * q_dim * tok);
  A.free(sc);
  A.free(sc2);
  for (Id x : rep) A.free(x);
  const Id attn = A.malloc(c * h * tok);
  A.free(o);
  A.free(q);
  A.free(decompressed);
  A.free(normed);
  return attn;
}

// transformers 5.17 grouped_mm_experts_forward (integrations/moe.py) over `tok` tokens, as the allocator trace of a
// PhiMoE- and a Qwen3-Next-shaped prefill records it (traces/g3-*, S = k × tokens rows): the router's logits and
// fp32 softmax, then the rows gathered in expert order (S × h), gate_up's output and a copy (S × 2I each), the
// activation and its product with up (S × I), the down projection, its score-weighted copy, the copy restored to
// token order and one more S × h temporary, then the sum over k (tokens × h). A shared expert (Qwen2-MoE, Qwen3-Next,
// GLM-4.5) runs first as a gated MLP whose output waits for the routed one.
template <class Sink>
Id experts_prefill(Sink& A, const ModelSpec& s, const InferenceTensors& t, double tp, double tok) {
  const double c = t.c, h = t.h, I = double(s.moe.intermediate) / tp, k = double(s.moe.experts_per_token);
  const double S = k * tok, E = double(s.moe.experts);
  Id shared = AllocationTimeline::none;
  if (s.moe.shared_experts > 0) {
    const double w = double(s.moe.shared_experts * s.moe.shared_intermediate) / tp;
    const Id g = A.malloc(c * w * tok), u = A.malloc(c * w * tok), act = A.malloc(c * w * tok);
    A.free(g);
    A.free(u);
    shared = A.malloc(c * h * tok);
    A.free(act);
  }
  const Id logits = A.malloc(c * E * tok), probs = A.malloc(4.0 * E * tok);
  A.free(logits);
  const Id topk = A.malloc(12.0 * S);  // fp32 weights and int64 indices
  A.free(probs);
  const Id rows = A.malloc(c * h * S), gate_up = A.malloc(c * 2 * I * S), copy = A.malloc(c * 2 * I * S);
  A.free(gate_up);
  const Id act = A.malloc(c * I * S), gated = A.malloc(c * I * S);
  A.free(act);
  A.free(copy);
  const Id down = A.malloc(c * h * S);
  A.free(gated);
  // fp32 routing weights (DeepSeek-V3-style routers) promote the weighted rows, their restored copy and the sum to
  // fp32, and the down projection stays allocated beside them (traces/g5-glm45air_6l-*: +4096 +4096 MiB fp32 rows).
  const double wb = routing_weight_bytes(s, c);
  const Id weighted = A.malloc(wb * h * S);
  if (wb == c) A.free(down);
  const Id restored = A.malloc(wb * h * S), tmp = wb == c ? A.malloc(c * h * S) : AllocationTimeline::none;
  A.free(tmp);
  Id out = A.malloc(wb * h * tok);
  if (wb != c) {  // the sum cast back to the activations' dtype
    const Id cast = A.malloc(c * h * tok);
    A.free(out);
    out = cast;
    A.free(down);
  }
  A.free(weighted);
  A.free(restored);
  A.free(rows);
  A.free(topk);
  if (shared != AllocationTimeline::none) {
    const Id sum = A.malloc(c * h * tok);
    A.free(out);
    A.free(shared);
    return sum;
  }
  return out;
}

// A gated-DeltaNet layer's prefill (transformers 5.17 Qwen3NextGatedDeltaNet.forward without the fla kernels,
// torch_chunk_gated_delta_rule), as the allocator trace of a Qwen3-Next-shaped prefill records it
// (traces/g3-qwen3_next_8l-*): the qkvz and ba projections; q, k, v and z copied out of them; q|k|v concatenated,
// made contiguous for the depthwise conv1d, convolved (with its padding) and activated; q and k repeated to the value
// heads; in the kernel q, k, v in fp32, each padded and q scaled (a copy replacing each), β-weighted k and v, the
// chunk decay mask and attention within chunks (chunk × chunk per token and head), and five more fp32 head-width
// tensors (attn @ v_β, the cumulative decay, the output, ...); then the output cast back, the gated RMSNorm (fp32)
// and the output projection. Leaves the conv window and the recurrent state (`conv`, `state`).
template <class Sink>
Id gated_delta_prefill(Sink& A, const ModelSpec& s, const InferenceTensors& t, double tp, double tok, Id& conv, Id& state) {
  const DeltaWidths d = delta_widths(s, tp);
  const double c = t.c, n = tok, hk = 4.0 * d.heads * d.dk * n, hv = 4.0 * d.heads * d.dv * n;
  const double cc = 4.0 * d.heads * DeltaWidths::chunk * n;
  const Id qkvz = A.malloc(c * (2 * d.kd + 2 * d.vd) * n), ba = A.malloc(c * 2 * d.heads * n);
  const Id v = A.malloc(c * d.vd * n), z = A.malloc(c * d.vd * n), q = A.malloc(c * d.kd * n), k = A.malloc(c * d.kd * n);
  const Id mixed = A.malloc(c * d.conv * n), in = A.malloc(c * d.conv * n);
  const Id conv_out = A.malloc(c * d.conv * (n + double(s.linear.conv_kernel - 1) * t.b));
  A.free(in);
  const Id qkv = A.malloc(c * d.conv * n);
  A.free(conv_out);
  A.free(mixed);
  for (Id x : {q, k, v}) A.free(x);
  const bool repeat = s.linear.value_heads > s.linear.key_heads;
  const Id qr = repeat ? A.malloc(c * d.heads * d.dk * n) : AllocationTimeline::none;
  const Id kr = repeat ? A.malloc(c * d.heads * d.dk * n) : AllocationTimeline::none;
  const double qkv32[3] = {hk, hk, hv};
  std::vector<Id> kernel{A.malloc(hk), A.malloc(hk), A.malloc(hv)};  // q, k, v in fp32
  for (std::size_t i = 0; i < 3; ++i) {  // F.pad's copies, then q scaled
    const Id padded = A.malloc(qkv32[i]);
    A.free(kernel[i]);
    kernel[i] = padded;
  }
  const Id scaled = A.malloc(hk);
  A.free(kernel[0]);
  kernel[0] = scaled;
  kernel.push_back(A.malloc(hv));  // v_β
  kernel.push_back(A.malloc(hk));  // k_β
  for (int i = 0; i < 3; ++i) {    // the decay mask and attention within chunks: each built through a temporary
    const Id tmp = A.malloc(cc);
    kernel.push_back(A.malloc(cc));
    A.free(tmp);
  }
  for (double x : {hv, hk, hv, hk, hv}) kernel.push_back(A.malloc(x));
  state = A.malloc(4.0 * t.b * d.heads * d.dk * d.dv);
  const Id core = A.malloc(c * d.vd * n);
  for (Id x : kernel) A.free(x);
  A.free(qr);
  A.free(kr);
  const Id up32 = A.malloc(hv), gate32 = A.malloc(hv);  // the gated RMSNorm in fp32
  const Id normed = A.malloc(c * d.vd * n);
  A.free(gate32);
  A.free(up32);
  A.free(core);
  const Id out = A.malloc(c * t.h * n);
  A.free(normed);
  for (Id x : {qkvz, ba, z, qkv}) A.free(x);
  conv = A.malloc(c * t.b * d.conv * double(s.linear.conv_kernel));
  return out;
}

// One prefill layer: norm, projections and rotary embeddings (the cache keeps the rotated k and v), attention,
// the output projection, the second norm and the FFN. Leaves the layer's keys and values allocated (a gated-DeltaNet
// layer: its conv window and recurrent state; other linear-attention layers are replayed with attention's tensors).
template <class Sink>
Id prefill_layer(Sink& A, const ModelSpec& s, const InferenceTensors& t, double tp, double tok, Id resid,
                 Id& key, Id& value, std::int64_t l) {
  const double c = t.c, h = t.h;
  Id normed = rms_norm(A, s, h * tok, c);
  const bool delta = s.is_linear_layer(l) && s.linear.kind == LinearAttentionKind::gated_deltanet;
  const Id attn = delta ? gated_delta_prefill(A, s, t, tp, tok, key, value)
                        : attention_prefill(A, s, t, tp, tok, normed, key, value, l);
  if (delta) A.free(normed);
  const Id r1 = A.malloc(c * h * tok);
  A.free(attn);
  A.free(resid);
  normed = rms_norm(A, s, h * tok, c);
  Id ffn_out = AllocationTimeline::none;
  if (s.is_moe_layer(l) && grouped_experts(s)) {
    ffn_out = experts_prefill(A, s, t, tp, tok);
  } else if (s.mlp == MlpKind::gated) {  // act(gate) · up: gate, its activation, up, their product (traced)
    const double i = s.is_moe_layer(l) ? t.ffn_live / 3.0 : c * double(s.intermediate_at(l)) / tp;
    const Id gate = A.malloc(i * tok), act = A.malloc(i * tok);
    A.free(gate);
    const Id up = A.malloc(i * tok), prod = A.malloc(i * tok);
    A.free(act);
    A.free(up);
    ffn_out = A.malloc(c * h * tok);
    A.free(prod);
  } else {
    const int parts = 2;
    std::vector<Id> ffn;
    for (int k = 0; k < parts; ++k) ffn.push_back(A.malloc(t.ffn_live / double(parts) * tok));
    ffn_out = A.malloc(c * h * tok);
    for (Id x : ffn) A.free(x);
  }
  A.free(normed);
  const Id out = A.malloc(c * h * tok);
  A.free(ffn_out);
  A.free(r1);
  return out;
}

}  // namespace detail

// Tokens a replayed decode step appends at most. Every step counts (each leaves segments behind), up to 2^13
// layer-steps (two requests and two frees each: 32k events, under 1 ms of replay; an 8B model's 256 new tokens token
// by token); beyond that a replayed step appends several tokens at once, so the replay stays bounded. On
// measured_g1, steps of 2–8 tokens move the estimate by ≤ 0.5 % (jumping the middle of a generation in one step, as
// before, missed up to 83 %). replay_generate coarsens it further where that changes nothing.
inline std::int64_t decode_stride(const ModelSpec& s, const InferenceWorkload& w) {
  constexpr std::int64_t layer_steps = std::int64_t(1) << 13;
  const std::int64_t steps = std::max<std::int64_t>(0, w.new_tokens - 1), layers = std::max<std::int64_t>(1, kv_layer_count(s));
  return std::max<std::int64_t>(1, (steps * layers + layer_steps - 1) / layer_steps);
}

namespace detail {

// What HF generate holds when its prefill ends: each layer's K and V, and the logits.
struct Prefilled {
  std::vector<AllocationTimeline::Id> keys, values;
  AllocationTimeline::Id logits = AllocationTimeline::none;
};

// Weights, then the prefill layer by layer.
template <class Sink>
Prefilled generate_prefill(Sink& A, const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t) {
  const double tp = double(w.tp);
  A.malloc(t.wb.embedding.in(unit::bytes) / tp);
  for (const Bytes& l : t.wb.per_layer) A.malloc(l.in(unit::bytes) / tp);
  A.malloc(t.wb.output.in(unit::bytes) / tp);
  A.malloc(t.workspace / 2);
  A.malloc(t.workspace / 2);
  const auto L = static_cast<std::size_t>(s.layers);
  Prefilled p{std::vector<AllocationTimeline::Id>(L), std::vector<AllocationTimeline::Id>(L)};
  A.phase = AllocationTimeline::Phase::forward;  // prefill
  auto resid = A.malloc(t.c * t.h * (t.b * t.chunk));
  for (std::size_t i = 0; i < L; ++i)
    resid = prefill_layer(A, s, t, tp, t.b * t.chunk, resid, p.keys[i], p.values[i], std::int64_t(i));
  p.logits = A.malloc(t.logits);
  A.free(resid);
  return p;
}

// Decode: each step appends one token to every layer's cache (`stride` tokens per replayed step); sliding layers
// are cropped to window − 1.
template <class Sink>
void generate_decode(Sink& A, Prefilled p, const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t,
                     std::int64_t stride) {
  using Id = AllocationTimeline::Id;
  A.phase = AllocationTimeline::Phase::backward;  // (decode)
  const auto L = static_cast<std::size_t>(s.layers);
  std::vector<double> len(L, t.sp);
  for (std::int64_t step = 1; step < w.new_tokens; step += stride) {
    const double grow = double(std::min(stride, w.new_tokens - step));
    const Id x = A.malloc(t.c * t.h * t.b);
    for (std::size_t i = 0; i < L; ++i) {
      const auto l = static_cast<std::int64_t>(i);
      if (s.keeps_kv(l)) {  // a linear layer's state is updated in place; a shared layer keeps none
        const double kv_half = t.kv_tok[i] / 2;
        const double n = s.is_sliding_layer(l) ? std::min(len[i] + grow, double(s.sliding_window - 1)) : len[i] + grow;
        const Id k2 = A.malloc(kv_half * t.b * n);
        A.free(p.keys[i]);
        p.keys[i] = k2;
        const Id v2 = A.malloc(kv_half * t.b * n);
        A.free(p.values[i]);
        p.values[i] = v2;
        len[i] = n;
        A.free(A.malloc(mla_decompressed(s, t, double(w.tp), t.b * n)));  // MLA: the whole cache decompressed
      }
      if (t.decode_experts > 0 && s.is_moe_layer(l)) {
        // batched_mm_experts_forward: gate_up_proj[expert_ids] (2I × h per row), then down_proj[expert_ids]
        // (h × I), both freed when it returns (traces/g3-phimoe_8l-*: +3200, +1600, −3200, −1600 MiB at batch 16).
        const Id gate_up = A.malloc(t.decode_experts * 2.0 / 3.0), down = A.malloc(t.decode_experts / 3.0);
        A.free(gate_up);
        A.free(down);
      }
    }
    A.free(p.logits);
    p.logits = A.malloc(t.logits);
    A.free(x);
  }
}

}  // namespace detail

// HF generate as the caching allocator sees it: weights, prefill layer by layer, then each decode step growing every
// layer's cache with torch.cat (a new tensor one token longer, the old one freed). Sink: an AllocationTimeline
// (recorded) or ReplayedAllocations (the allocator model, directly). `stride`: tokens a replayed decode step
// appends (0: decode_stride).
template <class Sink = AllocationTimeline>
Sink generate_allocations(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t, Sink A = Sink(),
                          std::int64_t stride = 0) {
  detail::Prefilled p = detail::generate_prefill(A, s, w, t);
  detail::generate_decode(A, std::move(p), s, w, t, stride > 0 ? stride : decode_stride(s, w));
  return A;
}

// HF generate's allocator replay at the coarsest decode stride that changes nothing. Where a generation's decode
// steps never outgrow the segments its prefill left (most batches of a few sequences), the stride does not matter;
// where each step adds segments (long generations at large batch), it does. So: replay at 8× and 16×
// decode_stride, and where their peak reserves agree to 0.1 %, take the first (3/16 of the budgeted decode's work);
// else replay at decode_stride. Against token-by-token replays of 99 workloads (11 models from GPT-2 to 405B,
// batch 1–64, 256–3,000 new tokens, TP 1–8), the totals moved by ≤ 0.33 % from decode_stride's; measured sets
// unchanged but for one GPT-2 case of measured_g1 (4.39 → 4.42 GiB, measured 4.61).
struct GenerateReplay {
  std::int64_t stride = 1;  // tokens a replayed decode step appends
  bool coarsened = false;   // coarser than decode_stride: a replay at twice the stride reserved the same
  ReplayedAllocations allocations;
};
inline GenerateReplay replay_generate(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t) {
  constexpr std::int64_t coarse = 8;
  const std::int64_t budget = decode_stride(s, w), steps = w.new_tokens - 1;
  // The replays differ from the decode on: each goes on from one prefill (a copy of the allocator's state).
  ReplayedAllocations prefill;
  const detail::Prefilled p = detail::generate_prefill(prefill, s, w, t);
  auto decoded = [&](std::int64_t stride) {
    ReplayedAllocations A = prefill;
    detail::generate_decode(A, p, s, w, t, stride);
    return A;
  };
  if (steps >= 2 * coarse * budget) {
    ReplayedAllocations once = decoded(coarse * budget);
    if (std::abs(once.peak_reserved() - decoded(2 * coarse * budget).peak_reserved()) <= once.peak_reserved() / 1000)
      return {coarse * budget, true, std::move(once)};
  }
  return {budget, false, decoded(budget)};
}

namespace detail {

// "0.9", "0.88": what an assumption prints of a setting.
inline std::string setting(double x) {
  std::string out = decimal(x, 3);
  while (out.size() > 1 && out.back() == '0') out.pop_back();
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

}  // namespace detail

// The hybrid KV cache's groups and what one request holds in them, said in the assumptions.
inline std::string vllm_groups_assumption(const VllmKvGroups& g, std::int64_t len, std::int64_t batched) {
  return "hybrid KV cache: " + std::to_string(g.full_groups) + " full-attention and " + std::to_string(g.window_groups) +
         " sliding-window groups of " + std::to_string(g.group_size) + " layers; a request of " + std::to_string(len) +
         " tokens holds " + std::to_string(g.request_blocks(len, batched)) + " blocks (sliding groups ⌈(window − 1 + " +
         std::to_string(batched) + ") / " + std::to_string(g.window_block) + "⌉ + 1 each" +
         (g.full_block != g.window_block ? "; full-attention blocks of " + std::to_string(g.full_block) +
                                               " tokens, their pages unified with the sliding ones'"
                                         : std::string()) +
         ")";
}

// How the KV cache is laid out, said in the assumptions where it is more than one group of 16-token blocks ("" if
// not).
inline std::string vllm_kv_layout_assumption(const VllmKvGroups& g, const ModelSpec& s, const VllmRelease& r,
                                             EngineVersion version, std::int64_t len, std::int64_t batched) {
  if (g.window_groups > 0 && g.full_groups > 0) return vllm_groups_assumption(g, len, batched);
  if (g.linear_pages > 0)
    return "hybrid KV cache: attention blocks of " + std::to_string(g.full_block) +
           " tokens so that a page holds a linear-attention layer's state; " + std::to_string(g.full_groups) +
           " attention and " + std::to_string(g.linear_groups) + " state groups of " + std::to_string(g.group_size) +
           " layers, " + std::to_string(g.linear_pages) + " page(s) per request in each state group" +
           (g.linear_pages == 2 ? " (prefix caching: mamba_cache_mode align)" : "");
  if (s.sliding_window > 0 && !r.hybrid_kv && !s.chunked_attention)
    return "vLLM " + version.str() + " keeps every token of sliding-window layers (no hybrid KV-cache manager before 0.10)";
  return "";
}

// The profiling step, non-torch memory, CUDA graphs and encoder profiling, said in the assumptions.
inline std::string vllm_step_assumption(const VllmRelease& r, const ModelSpec& s, const InferenceWorkload& w,
                                        std::int64_t batched, std::int64_t seqs, bool on_gpu, double non_torch,
                                        double encoder_peak) {
  const double gib = 1073741824.0;
  const VllmSettings& v = w.vllm;
  return "; profiling step of " + std::to_string(batched) + " batched tokens and " + std::to_string(seqs) + " sequences" +
         (v.max_num_batched_tokens > 0 && v.max_num_seqs > 0 ? ""
          : on_gpu ? " (vllm serve defaults of this release for this GPU)"
                   : " (vllm serve defaults of an H100-class GPU; --gpu picks yours)") +
         "; sampler warm-up " + vllm_sampler_name(r, s.moe.experts > 0) + " over " + std::to_string(seqs) +
         " rows of the vocabulary" + (r.engine == VllmEngine::v1_early ? " after the logits of every token" : "") +
         "; non-torch " + detail::decimal(non_torch / gib, 2) + " GiB" +
         (w.tp > 1 ? (w.link == GpuLink::nvswitch ? " (NCCL NVLS buffers over NVSwitch)" : " (NCCL without NVLS)") : "") +
         (r.charges_context ? ", the CUDA context charged to the budget" : "") + "; CUDA graphs " +
         detail::decimal(VllmProfile::cuda_graphs.in(unit::bytes) / gib, 2) +
         " GiB outside the budget; KV blocks of 16 tokens" +
         (encoder_peak > 0 ? "; the vision encoder profiled on its largest image first: a " +
                                 detail::decimal(encoder_peak / gib, 2) +
                                 " GiB peak, its inputs and outputs kept through the language model's step"
                           : "");
}

// What MXFP4 experts take beyond their checkpoint bytes once vLLM has laid them out for the GPU's MoE kernel: the
// padding, and on the Triton kernels the scales' swizzled copy and fp32 biases.
inline double vllm_mxfp4_extra_bytes(const ModelSpec& s, const InferenceWorkload& w) {
  const bool ep = w.vllm.enable_expert_parallel;
  return vllm_mxfp4_padding_bytes(s, w.tp, ep, w.mxfp4_kernel) +
         (w.mxfp4_kernel == Mxfp4Backend::triton ? vllm_mxfp4_triton_copy_bytes(s, w.tp, ep) : 0.0);
}

// vLLM (memory/vllm.h): the budget, minus weights as loaded, the profiling step's torch peak and the non-torch
// memory it adds, is the KV pool; its blocks are shared by the KV-cache groups. Without a device: what the batch
// needs.
inline InferenceEstimate vllm_estimate(InferenceEstimate est, const ModelSpec& s, const InferenceWorkload& w,
                                       const InferenceTensors& t) {
  const VllmSettings& v = w.vllm;
  const VllmRelease r = vllm_release_as_run(v);
  const EngineVersion version = v.version.value_or(vllm_newest);
  const double gib = 1073741824.0;
  const std::optional<Bytes> total = w.cuda_total ? w.cuda_total : w.device_memory;
  const std::int64_t max_len = w.context ? *w.context : (s.max_positions > 0 ? s.max_positions : std::int64_t(t.len));
  const VllmBatchLimits limits =
      vllm_batch_defaults(total.value_or(engine_default_device_memory), w.device_is_a100, r, max_len);
  const std::int64_t batched = v.max_num_batched_tokens > 0 ? v.max_num_batched_tokens : limits.max_num_batched_tokens;
  const std::int64_t seqs = v.max_num_seqs > 0 ? v.max_num_seqs : limits.max_num_seqs;
  // MXFP4 experts padded for the GPU's kernel (gpt-oss support came in 0.10.1).
  const bool mxfp4_padded = est.weights == WeightFormat::mxfp4 && version >= EngineVersion{0, 10, 1};
  const double padding = mxfp4_padded ? vllm_mxfp4_extra_bytes(s, w) : 0.0;
  // Projections vLLM allocates beyond the model's parameters, at the weights' average bytes per parameter.
  const double unused = vllm_unused_kv_projection_params(s) / double(w.tp) * t.weights * double(w.tp) /
                        std::max(1.0, double(est.params.in(unit::params)));
  const double weights = t.weights + engine_rotary_cache_bytes(s, t.c) + padding + unused;
  const bool moe_cache_kept = !(mxfp4_padded && w.mxfp4_kernel != Mxfp4Backend::marlin);
  const VllmEncoderProfile enc = vllm_encoder_profile(w.vision, batched, t.c, w.tp, r);
  const double held = vllm_pending_allreduce_bytes(s, batched, t.c, w.tp, version);  // before 0.2.7, with TP
  const double peak = std::max(enc.peak, enc.kept + vllm_profile_peak(s, batched, seqs, t.c, w.tp, r,
                                                                      v.enable_expert_parallel, moe_cache_kept)) + held;
  // Before 0.4.1 and in early V1 every non-torch byte on the GPU was charged to the budget, the CUDA context too.
  const double non_torch = vllm_non_torch_bytes(w.tp, w.link, r) +
                           (r.charges_context ? VllmProfile::cuda_context.in(unit::bytes) : 0.0);
  const double graphs = VllmProfile::cuda_graphs.in(unit::bytes);
  const double non_kv = weights + peak + non_torch;
  // Linear-attention layers keep their fixed state per sequence: a page of the pool from 0.10.2, before it beside
  // the attention groups' blocks.
  const double state_layer = vllm_linear_state_bytes(s, t.c, w.tp);
  const VllmKvGroups g = vllm_kv_groups(s, t.kv_tok, r, state_layer, version, v.enable_prefix_caching);
  const double state = g.linear_pages > 0 ? 0.0 : state_layer * double(linear_layer_count(s));
  auto request = [&](std::int64_t len) { return g.bytes(g.request_blocks(len, batched)) + state; };
  const auto len = static_cast<std::int64_t>(t.len);
  const auto fixed = [](double x, int digits) { return detail::decimal(x, digits); };

  ServingDetails& sv = est.serving;
  sv.engine = "vllm " + version.str();
  sv.engine_version = version.str();
  sv.activation_peak = Bytes(peak);
  sv.non_torch = Bytes(non_torch);
  sv.cuda_graphs = Bytes(graphs);
  sv.max_num_batched_tokens = batched;
  sv.max_num_seqs = seqs;
  sv.max_model_len = max_len;
  if (v.max_num_batched_tokens == 0) sv.implied_defaults.emplace_back("max_num_batched_tokens", double(batched));
  if (v.max_num_seqs == 0) sv.implied_defaults.emplace_back("max_num_seqs", double(seqs));
  if (!w.context) sv.implied_defaults.emplace_back("max_model_len", double(max_len));
  sv.implied_defaults.emplace_back("block_size", double(VllmProfile::block_size));
  MemoryComponents m;
  m.weights = Bytes(weights);
  m.activations = Bytes(peak);
  m.overhead = Bytes(non_torch + graphs);
  if (total) {
    const double budget = v.gpu_memory_utilization * total->in(unit::bytes);
    const double pool = budget - non_kv;
    const std::int64_t blocks = g.blocks(pool);
    sv.budget = Bytes(budget);
    sv.kv_pool = Bytes(pool);
    sv.kv_blocks = blocks;
    // vLLM's "Maximum concurrency for N tokens per request": the pool's blocks over one request's blocks in every
    // group (get_max_concurrency_for_kv_cache_config).
    auto concurrency = [&](std::int64_t n) {
      return state > 0 ? std::max(0.0, pool) / request(n) : double(blocks) / double(g.request_blocks(n, batched));
    };
    sv.max_concurrency = concurrency(len);
    // The log's token count follows the concurrency at max_model_len, whatever length is planned for.
    sv.kv_tokens = vllm_logged_tokens(g, blocks, concurrency(max_len), max_len, version);
    // vLLM refuses a max_model_len above the model's derived maximum (ModelConfig._get_and_verify_max_len).
    const bool too_long = w.context && s.max_positions > 0 && *w.context > s.max_positions;
    sv.starts = pool >= request(max_len) && !too_long;
    const std::int64_t cap = s.max_positions > 0 ? s.max_positions : 10'000'000;
    sv.largest_max_model_len = largest_fitting(cap, [&](std::int64_t n) { return request(n) <= pool; });
    // Above 1: no utilization starts it on this GPU (said in the assumptions, not printed as a share).
    const double least = (non_kv + request(max_len)) / total->in(unit::bytes);
    if (least <= 1) sv.min_gpu_memory_utilization = least;
    else
      est.assumptions.push_back("does not start on this GPU at any gpu_memory_utilization: weights, the profiling "
                                "step and one max_model_len request need " + fixed(least * total->in(unit::bytes) / gib, 2) +
                                " GiB of its " + fixed(total->in(unit::bytes) / gib, 2) + " GiB");
    if (too_long)
      est.assumptions.push_back("does not start: max_model_len " + std::to_string(max_len) + " is above the model's " +
                                std::to_string(s.max_positions) + " (vLLM refuses it)");
    m.kv_cache = Bytes(std::max(0.0, pool));
  } else {
    m.kv_cache = Bytes(double(w.batch) * request(len));
  }
  Moment mo{"serve", total ? "pre-allocated pool" : "KV for the batch", m};
  est.memory = summarize({mo}, Profile::none, VllmProfile::cuda_context);
  est.assumptions.push_back("profile vllm " + version.str() + " (" + r.engine_name + " engine" +
                            (version == r.from ? "" : ", as modelled from " + r.from.str()) + "): budget " +
                            detail::setting(v.gpu_memory_utilization) + " × the CUDA total" +
                            (w.cuda_total || !total ? "" : " (taken as the driver's total)") +
                            vllm_step_assumption(r, s, w, batched, seqs, total.has_value(), non_torch, enc.peak));
  if (const std::string a = vllm_kv_layout_assumption(g, s, r, version, len, batched); !a.empty())
    est.assumptions.push_back(a);
  if (padding > 0)
    est.assumptions.push_back("MXFP4 experts padded for the " +
                              std::string(w.mxfp4_kernel == Mxfp4Backend::marlin ? "Marlin" :
                                          w.mxfp4_kernel == Mxfp4Backend::triton ? "Triton" : "FlashInfer") +
                              " MoE kernel: +" + fixed(padding / gib, 2) + " GiB per GPU" +
                              (w.mxfp4_kernel == Mxfp4Backend::triton ? " (its swizzled copy of the scales and fp32 biases included)" : ""));
  if (held > 0) est.assumptions.push_back("profiling peak + " + fixed(held / gib, 2) + " GiB: all-reduced activations "
                                          "NCCL's record_stream kept from reuse (TORCH_NCCL_AVOID_RECORD_STREAMS from 0.2.7)");
  if (v.enable_expert_parallel) est.assumptions.push_back("--enable-expert-parallel: each rank's experts whole, not sliced over tp");
  if (!total) est.assumptions.push_back("no --gpu: memory the batch needs, not vLLM's pre-allocated pool");
  if (!w.context)
    est.assumptions.push_back("max_model_len " + std::to_string(max_len) + " (the model's; --max-model-len to set it)");
  if (s.mla_enabled) est.assumptions.push_back("MLA: the compressed latent + rope key is cached, as vLLM does");
  return est;
}

// SGLang (memory/sglang.h): mem_fraction_static of the memory free at start holds the weights and the token pool;
// the rest is left to activations, the req_to_token table and CUDA graphs. Without a device: what the batch needs.
inline InferenceEstimate sglang_estimate(InferenceEstimate est, const ModelSpec& s, const InferenceWorkload& w,
                                         const InferenceTensors& t) {
  const SglangSettings& g = w.sglang;
  const SglangRelease& r = sglang_release(g.version);
  const EngineVersion version = g.version.value_or(sglang_newest);
  const std::optional<Bytes> total = w.cuda_total ? w.cuda_total : w.device_memory;
  // --context-length defaults to the model's (ModelConfig.context_len); the req_to_token table is that wide.
  const std::int64_t context_length = w.context ? *w.context : (s.max_positions > 0 ? s.max_positions : std::int64_t(t.len));
  const SglangDefaults d = sglang_defaults(w.device_memory.value_or(engine_default_device_memory).in(unit::bytes) / 1048576.0,
                                           w.tp, r, w.device_is_rocm && context_length > 8192);
  const double fraction = g.mem_fraction_static > 0 ? g.mem_fraction_static : d.mem_fraction_static;
  // Whole bytes throughout: the static share and what it leaves to activations are the whole GPU by construction, so
  // the parts must add up to the device exactly (fractional bytes rounded the sum past it: "does not fit" by 1e-13).
  const double rotary = sglang_transformers_fallback(s) ? 0.0
                                                        : engine_rotary_cache_bytes(s, sglang_rotary_element_bytes(w.device_is_rocm, t.c));
  const double weights = std::ceil(t.weights + rotary + sglang_replicated_router_bytes(s, t.c, w.tp));
  // Before the first weight: the CUDA context and, with tensor parallelism, NCCL's buffers by interconnect (the same
  // PyTorch and NCCL as vLLM; its logged figures).
  const double init = std::ceil(VllmProfile::cuda_context.in(unit::bytes) +
                                (w.tp > 1 ? vllm_non_torch_bytes(w.tp, w.link) - vllm_non_torch_bytes(1) : 0.0));
  const double per_token = sequence_kv(s, t.kv_tok, 1, 0, s.layers);  // all layers, K and V
  ServingDetails& sv = est.serving;
  sv.engine = "sglang " + version.str();
  sv.engine_version = version.str();
  if (g.mem_fraction_static == 0) sv.implied_defaults.emplace_back("mem_fraction_static", fraction);
  sv.implied_defaults.emplace_back("chunked_prefill_size", double(d.chunked_prefill_size));
  sv.implied_defaults.emplace_back("cuda_graph_max_bs", double(d.cuda_graph_max_bs));
  MemoryComponents m;
  m.weights = Bytes(weights);
  std::int64_t requests = g.max_running_requests;
  SglangStatePool state;  // hybrid models: the linear-attention state slots, out of the same share as the pool
  const double slot = sglang_state_slot_bytes(s, t.c, w.tp);
  const bool radix = s.model_type != "kimi_linear";  // server_args turns the radix cache off for Kimi Linear
  if (total) {
    const double free0 = std::floor(total->in(unit::bytes)) - init;
    const double rest = std::floor(fraction * free0) - weights;
    state = sglang_state_pool(rest, slot, radix, requests);
    const double pool = rest - state.reserved;
    const double padding_slot = state.bytes - state.reserved;  // allocated beyond the static share
    const std::int64_t tokens = pool > 0 ? static_cast<std::int64_t>(std::floor(pool / per_token)) : 0;
    if (requests == 0) {
      requests = sglang_max_running_requests(tokens, context_length);
      sv.implied_defaults.emplace_back("max_running_requests", double(requests));
    }
    const double table = sglang_req_to_token_bytes(requests, context_length);
    sv.budget = Bytes(fraction * free0);
    sv.kv_pool = Bytes(pool);
    sv.kv_tokens = tokens;
    sv.max_concurrency = double(tokens) / t.len;
    sv.starts = tokens > 0;
    sv.largest_max_model_len = s.max_positions > 0 ? std::min(tokens, s.max_positions) : tokens;
    sv.min_mem_fraction_static = (weights + sglang_rest_for(t.len * per_token, slot, radix, requests)) / free0;
    // The token pool and the state slots: all the weights leave, and the state's padding slot beyond it.
    m.kv_cache = Bytes(std::max(0.0, rest) + padding_slot);
    m.logits = Bytes(0);
    // Left to activations and CUDA graphs: (1 − mem_fraction_static) of the free memory less the table and that slot.
    m.activations = Bytes(std::max(0.0, free0 - std::floor(fraction * free0) - table - padding_slot));
    m.overhead = Bytes(table);
  } else {
    m.kv_cache = Bytes(double(w.batch) * (t.len * per_token + slot));
    if (requests > 0) m.overhead = Bytes(sglang_req_to_token_bytes(requests, context_length));
  }
  Moment mo{"serve", total ? "static pool and the share left to activations" : "KV for the batch", m};
  est.memory = summarize({mo}, Profile::none, Bytes(init));
  est.assumptions.push_back(
      "profile sglang " + version.str() + (version == r.from ? "" : " (as modelled from " + r.from.str() + ")") +
      ": mem_fraction_static " + detail::decimal(fraction, 3) +
      (g.mem_fraction_static > 0 ? ""
       : r.fraction == SglangFraction::by_tp ? " (its default at TP " + std::to_string(w.tp) + ")"
       : r.fraction == SglangFraction::reserved_by_gpu
           ? " (its default for this GPU's memory at TP " + std::to_string(w.tp) + ")"
           : " (its default for this GPU: chunked prefill " + std::to_string(d.chunked_prefill_size) +
                 ", CUDA graphs up to batch " + std::to_string(d.cuda_graph_max_bs) +
                 (w.device_is_rocm && context_length > 8192 ? ", x 0.85 for aiter attention above 8192 tokens" : "") + ")") +
      " of the memory free at start holds weights and the token pool; the rest is left to activations, the "
      "req_to_token table (" + (requests > 0 ? std::to_string(requests) : std::string("max_running_requests")) +
      " requests × context_length " + std::to_string(context_length) + " + 4 int32) and CUDA graphs");
  if (state.slots > 0)
    est.assumptions.push_back(
        "hybrid model: " + std::to_string(state.slots) + " linear-attention state slots (" +
        detail::decimal(state.reserved / double(1ull << 30), 2) + " GiB) come out of the pool first, and a padding slot beyond it" +
        (s.model_type == "kimi_linear" ? std::string(", one per running request (SGLang turns the radix cache off for it)")
                                       : ", mamba_full_memory_ratio 0.9 of the KV pool's size"));
  if (!total) est.assumptions.push_back("no --gpu: memory the batch needs, not SGLang's pre-allocated pool");
  return est;
}

// llama.cpp's buffers (memory/llama_cpp.h) for a placement: on the GPUs their layers' weights but the routed
// experts overridden to host memory, their KV and a compute buffer each; in host memory the rest, token embeddings
// always. Several GPUs (--tp) split the layers (or, -sm row, the matrices' rows) as llama_cpp_layer_devices says.
struct LlamaCppBuffers {
  double host_weights = 0, host_kv = 0;
  double host_experts = 0;  // of host_weights, routed experts (the rest: the embedding, dense weights, the output)
  double row_padding = 0;   // of the GPUs' weights, what ggml-cuda adds to quantized tensors (LlamaCppRowPadding)
  std::vector<LlamaCppDeviceBuffers> devices{1};
  // The fullest GPU, whose memory decides whether the setup fits.
  const LlamaCppDeviceBuffers& fullest() const {
    return *std::max_element(devices.begin(), devices.end(),
                             [](const auto& a, const auto& b) { return a.total() < b.total(); });
  }
  double gpu() const { return fullest().total(); }
};

inline std::int64_t llama_cpp_devices(const InferenceWorkload& w) {
  return w.llama_cpp.split_mode == LlamaCppSplitMode::none ? 1 : w.tp;
}

// A device's compute buffer: the attention phase of its layers, the logits where the output layer runs (the device
// of the output layer, or the first GPU running a host-resident output's matmul), and with pipeline parallelism
// sched_copies copies of its split's inputs, the f32 hidden state and the f32 KQ mask, held beside the graph (the
// mask once already counted in the attention phase). XiongjieDai's ./main start-ups of Llama 3 8B at n_ctx 8192
// (b2824–b2843): CUDA0 560.00 MiB on one GPU, 640.01 on each of 2, 4, 6 or 8 (4 × (8 + 16) − 16 = 80 MiB more);
// Command-R 35B at 4096 over an RTX 4070 Ti and a 3090 Ti (llama.cpp PR #6122, Wuzzooy): 672.01 MiB, 584 + 88.
inline double llama_cpp_device_compute(const ModelSpec& s, const LlamaCppSettings& k, double cells, double host_output,
                                       bool layers_here, bool output_here, bool pipelined) {
  const double ub = double(k.n_ubatch), n = double(LlamaCppProfile::sched_copies);
  const double copies = pipelined ? (n * (double(s.hidden) + cells) - cells) * ub * 4.0 : 0.0;
  return llama_cpp_compute_bytes(s, cells, k.n_ubatch, k.flash_attn, host_output, layers_here, output_here) + copies;
}

inline LlamaCppBuffers llama_cpp_buffers(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t,
                                         WeightFormat f, const LlamaCppPlacement& p) {
  const LlamaCppSettings& k = w.llama_cpp;
  const WeightBytes& wb = t.wb;
  const std::int64_t L = s.layers, D = llama_cpp_devices(w);
  const std::vector<double> points = llama_cpp_split_points(k.tensor_split, D);
  const std::vector<int> dev = llama_cpp_layer_devices(L, p.gpu_layers, points);
  const bool row = k.split_mode == LlamaCppSplitMode::row && D > 1;
  const auto n_ctx = static_cast<std::int64_t>(t.len);
  const bool iswa = llama_cpp_iswa(s);
  LlamaCppBuffers b;
  b.devices.assign(static_cast<std::size_t>(D), {});
  // A layer's weights on its device, or (-sm row) cut over every device in the split shares.
  auto place = [&](int d, double bytes) {
    if (!row) return void(b.devices[static_cast<std::size_t>(d)].weights += bytes);
    for (std::size_t i = 0; i < b.devices.size(); ++i) b.devices[i].weights += bytes * (points[i] - (i ? points[i - 1] : 0.0));
  };
  b.host_weights = wb.embedding.in(unit::bytes);
  for (std::int64_t l = 0; l < L; ++l) {
    const auto i = static_cast<std::size_t>(l);
    const double layer = wb.per_layer[i].in(unit::bytes);
    const double kv = s.is_linear_layer(l) ? double(k.n_parallel) * t.state_layer
                                           : llama_cpp_cells(s, iswa, l, n_ctx, k.n_parallel, k.n_ubatch, k.flash_attn, k.swa_memory) * t.kv_tok[i];
    if (dev[i] < 0) {
      // A layer left on the CPU is computed there: per token it reads its attention and shared weights whole and
      // only the routed experts the batch picks.
      b.host_weights += layer;
      b.host_experts += wb.per_layer_experts[i].in(unit::bytes);
      b.host_kv += kv;
      continue;
    }
    const double host_experts = i < p.host_expert_share.size() ? p.host_expert_share[i] * wb.per_layer_experts[i].in(unit::bytes) : 0.0;
    const double padding = i < t.row_padding.per_layer.size() ? t.row_padding.per_layer[i] : 0.0;
    place(dev[i], layer - host_experts + padding);
    b.row_padding += padding;
    b.host_weights += host_experts;
    b.host_experts += host_experts;
    b.devices[static_cast<std::size_t>(dev[i])].kv += kv;
  }
  const int out = dev.back();
  if (out >= 0) {
    place(out, wb.output.in(unit::bytes) + t.row_padding.output);
    b.row_padding += t.row_padding.output;
  } else {
    b.host_weights += wb.output.in(unit::bytes);
  }
  const double cells = double(llama_cpp_pad(n_ctx, LlamaCppProfile::kv_pad(k.flash_attn)));
  // Each GPU reserves its layers' attention phase; the logits where the output runs (with a copy of the output
  // matrix when it stays on the host, run by the first GPU; a tied head is the token embedding, typed by the output
  // rules). Pipeline parallelism: src/llama-context.cpp turns it on for several devices, layer mode, every layer
  // offloaded (n_gpu_layers > n_layer), the KV on the GPUs and no tensor overrides.
  const double head_bits = bits_per_weight(f, TensorRole::output, 0, gguf_traits(s), s.hidden, w.group_size, true);
  const double host_output = out >= 0 ? 0.0 : double(s.vocab) * double(s.hidden) * head_bits / 8.0;
  const bool pipelined = D > 1 && !row && p.gpu_layers > L && p.host_expert_layers() == 0 && k.override_tensor.empty();
  for (int d = 0; d < int(D); ++d) {
    const bool layers_here = std::find(dev.begin(), dev.end() - 1, d) != dev.end() - 1;
    const bool output_here = out >= 0 ? out == d : d == 0;
    b.devices[static_cast<std::size_t>(d)].compute =
        llama_cpp_device_compute(s, k, cells, host_output, layers_here, output_here, pipelined);
  }
  return b;
}

// The placement the flags ask for: -ngl (default by build: all layers from b6646, none before), then the experts
// --n-cpu-moe, --cpu-moe or -ot rules keep in host memory.
inline LlamaCppPlacement llama_cpp_flag_placement(const ModelSpec& s, const LlamaCppSettings& k, bool all_by_default) {
  LlamaCppPlacement p;
  p.gpu_layers = std::min<std::int64_t>(s.layers + 1, k.n_gpu_layers.value_or(all_by_default ? s.layers + 1 : 0));
  p.host_expert_share = llama_cpp_override_shares(k.override_tensor, s.layers);
  if (k.n_cpu_moe)
    for (std::int64_t l = 0; l < std::min(*k.n_cpu_moe, s.layers); ++l) p.host_expert_share[static_cast<std::size_t>(l)] = 1.0;
  return p;
}

// --fit (common/fit.cpp llama_params_fit, one device): nothing changes when every layer leaves `target` free
// (the free memory less --fit-target). Otherwise the most layers, counted from the last, whose dense part fits with
// every routed expert in host memory (a dense model: whole layers); when all of an MoE's dense parts fit, the
// experts come back to the GPU layer by layer from the first, and of one more layer its up, then also its gate
// tensor (LAYER_FRACTION_UP, _GATE). The context the user gives is kept ("context size set by user -> no change").
inline LlamaCppPlacement llama_cpp_fit(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t,
                                       WeightFormat f, double target) {
  const std::int64_t L = s.layers;
  const bool moe = s.moe.experts > 0;
  auto fits = [&](const LlamaCppPlacement& p) { return llama_cpp_buffers(s, w, t, f, p).gpu() <= target; };
  auto dense_only = [&](std::int64_t n) {
    return LlamaCppPlacement{n, std::vector<double>(static_cast<std::size_t>(L), moe ? 1.0 : 0.0)};
  };
  const LlamaCppPlacement all{L + 1, std::vector<double>(static_cast<std::size_t>(L), 0.0)};
  if (fits(all)) return all;
  std::int64_t n = L + 1;
  while (n > 0 && !fits(dense_only(n))) --n;
  LlamaCppPlacement best = dense_only(n);
  if (!moe || n <= L) return best;
  for (std::size_t l = 0; l < best.host_expert_share.size(); ++l) {
    LlamaCppPlacement more = best;
    more.host_expert_share[l] = 0.0;
    if (fits(more)) {
      best = more;
      continue;
    }
    for (const double share : {2.0 / 3.0, 1.0 / 3.0}) {  // up on the GPU, then up and gate
      more.host_expert_share[l] = share;
      if (!fits(more)) break;
      best = more;
    }
    break;
  }
  return best;
}

// Ollama's scheduler (llm/memory.go, server.go): num_gpu, when not given, is the most whole layers, counted from the
// last, whose buffers leave OllamaProfile::minimum_memory (512 MiB on Metal) and OLLAMA_GPU_OVERHEAD of the free memory; experts are
// never split from their layer. The buffers are llama.cpp's (what the runner allocates), not Ollama's own estimate.
inline LlamaCppPlacement ollama_place(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t,
                                      WeightFormat f, double free) {
  const double limit = free - OllamaProfile::minimum_memory_for(w.llama_cpp.backend_or_default()) - w.llama_cpp.gpu_overhead_bytes;
  LlamaCppPlacement p{s.layers + 1, std::vector<double>(static_cast<std::size_t>(s.layers), 0.0)};
  while (p.gpu_layers > 0 && llama_cpp_buffers(s, w, t, f, p).gpu() > limit) --p.gpu_layers;
  return p;
}

// Vulkan (memory/llama_cpp.h LlamaCppBackend): one compute tensor must fit one allocation. The largest is the f32
// attention scores without flash attention (heads × cells × ubatch), else the f32 logits; above 4 GiB the start-up
// fails ("failed to allocate compute pp buffers"), which the estimate says and the fit verdict counts as not fitting.
inline void vulkan_allocation_check(InferenceEstimate& est, const ModelSpec& s, const InferenceTensors& t,
                                    const LlamaCppSettings& k) {
  const double ub = double(k.n_ubatch);
  const double cells = double(llama_cpp_pad(static_cast<std::int64_t>(t.len), LlamaCppProfile::kv_pad(k.flash_attn)));
  const double scores = k.flash_attn ? 0.0 : double(s.heads) * cells * ub * 4.0;
  const double largest = std::max(scores, double(s.vocab) * ub * 4.0);
  if (largest <= vulkan_max_allocation) return;
  est.serving.starts = false;
  est.assumptions.push_back(
      "Vulkan: the largest compute tensor, " + detail::decimal(largest / 1073741824.0, 2) + " GiB (" +
      (scores >= largest ? "the f32 attention scores" : "the f32 logits") +
      "), is above the 4 GiB one Vulkan allocation may hold (maxMemoryAllocationSize on AMD's and Intel's drivers): "
      "llama.cpp fails to allocate its compute buffer; flash attention or a smaller -ub avoids it");
}

// Several GPUs: what each holds, and which one decides the fit.
inline void llama_cpp_split_note(InferenceEstimate& est, const InferenceWorkload& w, const LlamaCppBuffers& b,
                                 const std::string& label, bool placed_for_memory) {
  const bool row = w.llama_cpp.split_mode == LlamaCppSplitMode::row;
  std::string each;
  std::size_t fullest = 0;
  for (std::size_t d = 0; d < b.devices.size(); ++d) {
    const LlamaCppDeviceBuffers& x = b.devices[d];
    if (x.total() > b.devices[fullest].total()) fullest = d;
    each += (d ? "; " : "") + label + std::to_string(d) + " model " + detail::decimal(x.weights / 1048576.0, 2) +
            " MiB, KV " + detail::decimal(x.kv / 1048576.0, 2) + " MiB, compute " +
            detail::decimal(x.compute / 1048576.0, 2) + " MiB";
  }
  est.assumptions.push_back(
      std::string("-sm ") + (row ? "row" : "layer") + " over " + std::to_string(b.devices.size()) + " GPUs (" +
      (w.llama_cpp.tensor_split.empty() ? "equal shares: identical GPUs' free memory" : "--tensor-split") + "): " +
      (row ? "every layer's matrices cut by rows over the GPUs, each layer's KV on its own GPU"
           : "whole layers per GPU, the output layer on the last, each layer's KV on its GPU") +
      "; " + each + "; the fullest, " + label + std::to_string(fullest) + ", decides the fit" +
      (placed_for_memory ? " (the layers placed for one GPU's free memory: llama.cpp also moves the split points, "
                           "not modelled)"
                         : ""));
}

// llama.cpp (memory/llama_cpp.h): the buffers its log prints per device, for the placement the flags ask for or, with
// --fit and a device, the one llama.cpp fits to its free memory (Ollama: the layers its scheduler offloads).
inline InferenceEstimate llama_cpp_estimate(InferenceEstimate est, const ModelSpec& s, const InferenceWorkload& w,
                                            const InferenceTensors& t) {
  const LlamaCppSettings& k = w.llama_cpp;
  const std::int64_t L = s.layers;
  const bool ollama = w.profile == Profile::ollama;
  const EngineVersion build = ollama ? llama_cpp_releases.back().from : k.version.value_or(llama_cpp_releases.back().from);
  const LlamaCppRelease& row = pick_release(llama_cpp_releases, build, "llama.cpp", /*builds=*/true);
  if (s.moe.experts == 0 && (k.n_cpu_moe || !k.override_tensor.empty()))
    throw InputError("--n-cpu-moe / --override-tensor: " + s.name + " has no routed experts to keep in host memory");
  // Ollama's runner is told its layers (num_gpu); llama.cpp fits them unless a flag places them (fit then aborts:
  // "n_gpu_layers already set by user", "tensor_buft_overrides already set by user").
  const bool placed_by_flags = k.n_gpu_layers || k.n_cpu_moe || !k.override_tensor.empty();
  const double free = k.gpu_free ? k.gpu_free->in(unit::bytes)
                     : w.device_memory ? (*w.device_memory - LlamaCppProfile::cuda_context).in(unit::bytes)
                                       : 0.0;
  const bool fit = !ollama && !placed_by_flags && k.fit.value_or(row.fit) && free > 0;
  const double target = free - k.fit_target_mib * 1048576.0;
  // Ollama measures the free memory before its runner starts: the runner's own CUDA context is in its reserve.
  const double ollama_free = k.gpu_free ? k.gpu_free->in(unit::bytes) : w.device_memory ? w.device_memory->in(unit::bytes) : 0.0;
  const bool scheduled = ollama && !placed_by_flags && ollama_free > 0;
  const LlamaCppPlacement p = fit         ? llama_cpp_fit(s, w, t, est.weights, target)
                              : scheduled ? ollama_place(s, w, t, est.weights, ollama_free)
                                          : llama_cpp_flag_placement(s, k, ollama || row.all_layers);
  const LlamaCppBuffers b = llama_cpp_buffers(s, w, t, est.weights, p);
  MemoryComponents m;
  // The fullest GPU decides the fit (one GPU: its buffers).
  const LlamaCppDeviceBuffers& full = b.fullest();
  m.weights = Bytes(full.weights);
  m.kv_cache = Bytes(full.kv);
  m.activations = Bytes(full.compute);
  Moment mo{"serve", "model, KV and compute buffers", m};
  est.memory = summarize({mo}, Profile::none, LlamaCppProfile::cuda_context);
  const EngineVersion ollama_version = k.version.value_or(ollama_newest);
  est.serving.engine = ollama ? "ollama " + ollama_version.str() : "llama.cpp " + build.build();
  est.serving.engine_version = ollama ? ollama_version.str() : build.build();
  est.serving.host_memory = Bytes(b.host_weights + b.host_kv);
  est.serving.host_expert_weights = Bytes(b.host_experts);
  est.serving.host_dense_weights = Bytes(b.host_weights - b.host_experts - t.wb.embedding.in(unit::bytes));
  est.serving.gpu_layers = p.gpu_layers;
  est.serving.host_expert_layers = p.host_expert_layers();
  est.serving.placement = p;
  est.serving.devices = b.devices;
  if (!k.n_gpu_layers) est.serving.implied_defaults.emplace_back("n_gpu_layers", double(p.gpu_layers));
  est.serving.implied_defaults.emplace_back("n_ubatch", double(k.n_ubatch));
  if (!ollama && !k.fit) est.serving.implied_defaults.emplace_back("fit", row.fit ? 1.0 : 0.0);
  if (ollama)
    est.assumptions.push_back("profile ollama " + ollama_version.str() + " (llama.cpp runner; default num_ctx as from " +
                              OllamaProfile::release(k.version).from.str() + "): num_ctx " +
                              std::to_string(t.len > 0 ? static_cast<std::int64_t>(t.len) / k.n_parallel : 0) +
                              " × OLLAMA_NUM_PARALLEL " + std::to_string(k.n_parallel) + " = n_ctx " +
                              std::to_string(static_cast<std::int64_t>(t.len)) + "; num_batch 512; flash attention " +
                              (k.flash_attn ? "auto (on)" : "off (OLLAMA_FLASH_ATTENTION=0)"));
  if (ollama && k.swa_memory > 0)
    est.assumptions.push_back("Ollama's engine keeps " + std::to_string(k.swa_memory) +
                              " cells per sequence of each sliding-window layer (kvcache.NewSWAMemCache), not the window");
  const LlamaCppBackend backend = k.backend_or_default();
  if (backend == LlamaCppBackend::vulkan) vulkan_allocation_check(est, s, t, k);
  const std::int64_t host_experts = p.host_expert_layers();
  const std::string where =
      scheduled ? "Ollama's scheduler: the layers that leave " +
                      std::to_string(std::llround(OllamaProfile::minimum_memory_for(backend) / 1048576.0)) + " MiB" +
                      std::string(k.gpu_overhead_bytes > 0 ? " + OLLAMA_GPU_OVERHEAD" : "") + " of " +
                      detail::decimal(ollama_free / 1073741824.0, 2) + " GiB free: "
      : fit ? "--fit to " + detail::decimal(free / 1073741824.0, 2) + " GiB free less --fit-target " +
                std::to_string(std::llround(k.fit_target_mib)) + " MiB: "
          : placed_by_flags ? "" : "no -ngl (" + std::string(row.all_layers || ollama ? "all" : "none") + " by default): ";
  est.assumptions.push_back(
      "profile llama.cpp " + build.build() + " (" + llama_cpp_backend_label(backend) +
      (build == row.from ? "" : ", as modelled from " + row.from.build()) +
      "): " + where + "-ngl " + std::to_string(p.gpu_layers) + " of " + std::to_string(L + 1) +
      " (repeating layers from the last, then the output layer)" +
      (host_experts > 0 ? "; routed experts of " + std::to_string(host_experts) + " layers in host memory" : "") +
      "; token embeddings in host memory; n_ctx " + std::to_string(static_cast<std::int64_t>(t.len)) + " padded to " +
      std::to_string(LlamaCppProfile::kv_pad(k.flash_attn)) + " cells" +
      (llama_cpp_iswa(s) ? ", sliding-window layers in their own cache" : "") + "; n_ubatch " +
      std::to_string(k.n_ubatch) + ", flash attention " + (k.flash_attn ? "on" : "off") +
      (b.row_padding > 0 ? "; ggml-cuda pads quantized rows to 512: +" + detail::decimal(b.row_padding / 1048576.0, 2) + " MiB"
                         : "") +
      (backend == LlamaCppBackend::cuda || backend == LlamaCppBackend::rocm ? "; CUDA context ~0.35 GB" : ""));
  if (b.devices.size() > 1) llama_cpp_split_note(est, w, b, llama_cpp_backend_label(backend), fit || scheduled);
  return est;
}

// Ollama's workload as the llama.cpp runner it starts sees it (OllamaProfile): --context is num_ctx per request
// (default by release and the GPU's memory, clamped to the model's trained context); n_ctx = num_ctx × --parallel.
inline InferenceWorkload ollama_runner_workload(const ModelSpec& s, InferenceWorkload w) {
  const OllamaRelease& r = OllamaProfile::release(w.llama_cpp.version);
  std::int64_t num_ctx = w.context.value_or(OllamaProfile::default_num_ctx(w.device_memory, r));
  if (s.max_positions > 0) num_ctx = std::min(num_ctx, s.max_positions);
  w.context = num_ctx * w.llama_cpp.n_parallel;
  w.llama_cpp.n_ubatch = std::min({w.llama_cpp.n_ubatch, OllamaProfile::num_batch, num_ctx});
  w.llama_cpp.swa_memory = ollama_swa_memory(s);
  return w;
}

namespace detail {

// The least the caching allocator must be allowed to reserve for HF generate to finish. Each decode step's
// torch.cat makes every layer's cache a little larger than the block it frees, so a long generation keeps adding
// segments and leaves the old ones cached (measured: 70.9 GiB on an H200 for a 1B model at batch 64 whose tensors
// peak at 7.6 GiB). On a GPU too small for that, a failed cudaMalloc makes the allocator free its cached segments
// and retry (release_cached_blocks), and the generation goes on: measured, a 7B at batch 32 with 41 GiB of tensors
// filled an H200, released 26 times and finished. Searched to 1/128 of the live peak (taking finishing as monotone
// in the capacity): steps doubling up from the live peak, where it usually lies close, then bisection. Only where
// the reserve beyond the live peak is more than a tenth of it (nullopt below that: at most a tenth to save, and no
// more replays).
inline std::optional<double> least_capacity(const ModelSpec& s, const InferenceWorkload& w, const InferenceTensors& t,
                                            const GenerateReplay& r) {
  const double peak_reserved = r.allocations.peak_reserved(), peak_allocated = r.allocations.peak_allocated();
  if (peak_reserved - peak_allocated <= peak_allocated / 10) return std::nullopt;
  auto runs = [&](double capacity) {
    return !generate_allocations(s, w, t, ReplayedAllocations(capacity), r.stride).out_of_memory();
  };
  const double tolerance = peak_allocated / 128;
  double lo = peak_allocated, step = tolerance, hi = lo + step;  // it cannot run below its live peak
  for (; hi < peak_reserved && !runs(hi); hi = std::min(peak_reserved, lo + step)) {
    lo = hi;
    step *= 2;
  }
  while (hi - lo > tolerance) {
    const double mid = (lo + hi) / 2;
    (runs(mid) ? hi : lo) = mid;
  }
  return hi;
}

// HF generate's memory with the caching allocator replayed: the moments' live peak plus the replay's reserve
// beyond its own, and runs_in, the least GPU it finishes on (freeing its cached segments when full). With a
// device smaller than that total: what the allocator reserves there, releasing as it goes.
inline void hf_generate_memory(InferenceEstimate& est, const ModelSpec& s, const InferenceWorkload& w,
                               const InferenceTensors& t, const std::vector<Moment>& moments) {
  const Bytes ctx = PytorchProfile::cuda_context;
  const GenerateReplay r = replay_generate(s, w, t);
  const ReplayedAllocations& A = r.allocations;
  est.memory = summarize(moments, w.profile, ctx, Bytes(A.reserve()), /*at_least_measured_shares=*/true);
  if (r.stride > 1)
    est.assumptions.push_back(
        "allocator replay: decode steps of " + std::to_string(r.stride) + " tokens " +
        (r.coarsened ? "(steps of " + std::to_string(2 * r.stride) + " reserve the same, to 0.1 %)"
                     : std::string("(a bound on the replay's work; fewer segments than token by token)")));
  const std::optional<double> least = least_capacity(s, w, t, r);
  if (!least) return;
  // The replay's reserve beyond its live peak, put on the moments' live peak as summarize puts it (without the
  // measured shares' floor, whether or not the search found less than the replay's peak: else runs_in would jump
  // by that floor between neighbouring batches).
  const Bytes runs_in = std::min(est.memory.total, est.memory.peak_allocated + Bytes(*least - A.peak_allocated()) + ctx);
  int releases = 0;
  if (w.device_memory && runs_in <= *w.device_memory && *w.device_memory < est.memory.total) {
    // On this GPU, too small for all it would keep: what it reserves when it must free them to go on.
    const double room = (*w.device_memory - ctx - est.memory.peak_allocated).in(unit::bytes) + A.peak_allocated();
    const ReplayedAllocations D = generate_allocations(s, w, t, ReplayedAllocations(room), r.stride);
    if (!D.out_of_memory()) {
      est.memory = summarize(moments, w.profile, ctx, Bytes(D.reserve()), /*at_least_measured_shares=*/true);
      if (const Bytes over = est.memory.total - *w.device_memory; over > Bytes(0)) {  // the shares' floor
        est.memory.allocator_slack -= over;
        est.memory.reserved -= over;
        est.memory.total -= over;
      }
      releases = D.releases();
    }
  }
  est.memory.runs_in = runs_in;
  if (releases > 0)
    est.assumptions.push_back("freed segments fill this GPU: the caching allocator frees its cached ones " +
                              (releases == 1 ? std::string("once") : std::to_string(releases) + " times") +
                              " to make room (runs in: the least GPU it finishes on)");
  else if (runs_in < est.memory.total)
    est.assumptions.push_back("the caching allocator keeps freed segments cached: on a GPU with room it holds "
                              "them (total), on a smaller one it frees them when full and runs in less");
}

// `replay`: run the caching-allocator replay for the pytorch profile's reserve.
inline InferenceEstimate estimate_inference(const ModelSpec& s, const InferenceWorkload& requested, bool replay) {
  validate(s);
  validate(requested);
  if (const auto problem = serving_tp_problem(s, requested, requested.tp)) throw InputError(*problem);
  const InferenceWorkload w = requested.profile == Profile::ollama ? ollama_runner_workload(s, requested) : requested;
  const bool pytorch = w.profile == Profile::pytorch;
  const ParamCounts counts = count_params(s);
  InferenceEstimate est;
  est.params = counts.total;
  est.active_params = counts.active;
  const bool as_stored = w.stored && !w.weights;
  est.weights = w.weights.value_or(as_stored ? w.stored->nearest : default_weight_format(w.precision));
  if (as_stored)
    est.assumptions.push_back("weights as stored in the checkpoint (" + w.stored->label + "), read from its headers");
  // llama.cpp's cache types default to f16 (-ctk/-ctv f16) whatever the weights.
  est.kv = w.kv.value_or(llama_cpp_engine(w.profile) ? KvDtype::fp16 : default_kv_dtype(w.precision));
  // llama.cpp splits layers (or rows) over its GPUs itself (llama_cpp_buffers): its tensors are the whole model's.
  InferenceWorkload whole = w;
  if (llama_cpp_engine(w.profile)) whole.tp = 1;
  const InferenceTensors t = inference_tensors(s, whole, est.weights, est.kv);
  est.weight_bytes = Bytes(t.weights);
  est.context_tokens = static_cast<std::int64_t>(t.len);
  est.kv_bytes_per_token = Bytes(std::accumulate(t.kv_tok.begin(), t.kv_tok.end(), 0.0));
  if (const std::int64_t linear = linear_layer_count(s); linear > 0)
    est.assumptions.push_back(std::to_string(linear) + " linear-attention layers keep a fixed state of " +
                              std::to_string(std::llround(t.state_layer * double(linear) / 1048576.0)) +
                              " MiB per sequence (conv window, fp32 key×value state) instead of a KV cache");
  if (s.chunked_attention)
    est.assumptions.push_back("chunked-attention layers keep at most " + std::to_string(s.sliding_window) +
                              " tokens (the current chunk)");
  if (w.profile == Profile::vllm) return vllm_estimate(est, s, w, t);
  if (w.profile == Profile::sglang) return sglang_estimate(est, s, w, t);
  if (llama_cpp_engine(w.profile)) return llama_cpp_estimate(est, s, w, t);

  const std::vector<Moment> moments = generate_moments(t);
  if (pytorch && replay)
    hf_generate_memory(est, s, w, t, moments);
  else
    est.memory = summarize(moments, w.profile, pytorch ? PytorchProfile::cuda_context : Bytes(0), std::nullopt,
                           /*at_least_measured_shares=*/true);
  if (pytorch)
    est.assumptions.push_back("profile pytorch: HF generate with the default dynamic KV cache (grown by torch.cat), "
                              "last-position logits, caching allocator, CUDA context measured on an H200");
  else
    est.assumptions.push_back("profile none: tensor bytes only");
  if (t.latent)
    est.assumptions.push_back("MLA: transformers caches the compressed latent + rope key and decompresses it (k and v "
                              "per head) in every forward, prefill and each decode step");
  est.assumptions.push_back(w.context ? "KV cache holds --context tokens per sequence"
                                      : "KV cache holds prompt + new − 1 tokens per sequence; sliding-window layers window − 1");
  return est;
}

}  // namespace detail

inline InferenceEstimate estimate_inference_memory(const ModelSpec& s, const InferenceWorkload& w) {
  return detail::estimate_inference(s, w, /*replay=*/true);
}

// A bound estimate_inference_memory(s, w).memory.total never falls below: live tensors at the peak plus the
// context, without the allocator replay (whose reserve is ≥ 0).
inline Bytes inference_memory_lower_bound(const ModelSpec& s, const InferenceWorkload& w) {
  const InferenceEstimate e = detail::estimate_inference(s, w, /*replay=*/false);
  return e.memory.peak_allocated + e.memory.context;
}

}  // namespace gpuplan
