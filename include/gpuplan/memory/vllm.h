// vLLM's start-up memory arithmetic by release (vllm-project/vllm; each row of vllm_releases names the files it
// was read from):
//   budget    = gpu_memory_utilization × the CUDA total (the context already there is outside it, but before 0.4.1
//               and in early V1)
//   non-KV    = weights as loaded + the torch peak of one profiling step + non-torch memory that step adds
//   KV pool   = budget − non-KV, in blocks of 16 tokens per layer, shared by the KV-cache groups (from 0.10 each
//               attention kind its own group: sliding-window layers keep only their window per request);
//               CUDA graphs are captured afterwards, outside the budget.
// Checked against vLLM's own start-up logs in tests/data/engines/vllm.jsonl (docs/engines-accuracy.md).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../model.h"
#include "../units.h"
#include "engine_version.h"
#include "profile.h"

namespace gpuplan {

// `vllm serve` flags that change memory, under vLLM's names (max_model_len is the workload's context).
struct VllmSettings {
  std::optional<EngineVersion> version;     // --engine-version (default: the newest modelled release)
  double gpu_memory_utilization = 0.90;     // CacheConfig.gpu_memory_utilization
  std::int64_t max_num_batched_tokens = 0;  // 0: the release's default for the GPU
  std::int64_t max_num_seqs = 0;            // 0: likewise
  bool enable_expert_parallel = false;      // experts whole on each rank instead of sliced over tp
  // FlashInfer installed and VLLM_USE_FLASHINFER_SAMPLER not 0 (V1 reads its unset default as on: the log says
  // "Using FlashInfer for top-p & top-k sampling"): the sampler warm-up runs FlashInfer's top-k/top-p instead of the
  // release's own (v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__).
  bool flashinfer_sampler = false;
  // --enable-prefix-caching: for hybrid models (opt-in there) the linear layers' states in "align" mode, two pages a
  // request (vllm_mamba_align_from); for attention layers it changes nothing gpuplan counts.
  bool enable_prefix_caching = false;
};

enum class VllmEngine { v0, v1_early, v1 };
// How the sampler warm-up filters top-k/top-p over max_num_seqs rows of the whole vocabulary.
enum class VllmSampler { torch_sort, triton, flashinfer };
// Model Runner V2 (vllm/v1/worker/gpu/model_runner.py) profiles the sampler without top-k, top-p and logprobs: by
// default for dense models from 0.25, for every model from 0.29; before, model runner V1 (gpu_model_runner.py).
enum class VllmModelRunner { v1, v2_dense, v2 };

struct VllmRelease {
  EngineVersion from;
  const char* engine_name;
  VllmEngine engine;
  VllmSampler sampler;
  VllmModelRunner runner;
  bool hybrid_kv;                  // KV-cache groups per attention kind (else every layer counts as full attention)
  std::int64_t v0_prefill_chunk;   // V0: max_num_batched_tokens when chunked prefill is on by default (max_model_len
                                   // > 32k); 0: no default chunked prefill
  bool charges_context;            // the budget pays for every non-torch byte on the GPU, the CUDA context included
  // Non-torch memory the profiling step adds, GiB per GPU (cuBLAS/cuDNN workspaces, kernels loaded on first use; with
  // tensor parallelism NCCL's buffers and vLLM's custom all-reduce on top). On one GPU: 0.13–0.14 in every V1 log of
  // 0.11–0.17 on H100 (llm-d-benchmark's 0.11 table, llm-d-planner's 0.15–0.17 sweep), 0.24–0.26 from 0.18 (the
  // sweep's 0.18, every single-GPU 0.19 log). With tensor parallelism over NVSwitch of Hopper and later: 0.54–0.55 at
  // TP 2 under 0.11 (llm-d-benchmark), 2.06–2.21 at TP 2 and 4 under 0.19 (NCCL's NVLink SHARP buffers; no TP log
  // between them, so the step is taken with the single-GPU one at 0.18). Releases before 0.10 keep 0.19's figures
  // (no V1 log of theirs prints it), but V0 0.7 on one GPU: 0.16 (its row's log). Without NVSwitch see VllmProfile::non_torch_tensor_parallel.
  double non_torch_gib, non_torch_nvswitch_gib;
  const char* source;
};

// The releases whose start-up arithmetic differs. Boundaries are the first release carrying the change.
inline constexpr std::array<VllmRelease, 13> vllm_releases{{
    {{0, 2, 0}, "V0", VllmEngine::v0, VllmSampler::torch_sort, VllmModelRunner::v1, false, 0, true, 0.25, 2.1,
     "vllm/worker/worker.py profile_num_available_blocks (peak = total − free after profile_run: the CUDA context "
     "charged); vllm/config.py SchedulerConfig max(max_model_len, 2048) tokens, 256 sequences"},
    {{0, 4, 1}, "V0", VllmEngine::v0, VllmSampler::torch_sort, VllmModelRunner::v1, false, 0, false, 0.25, 2.1,
     "vllm/worker/worker.py determine_num_available_blocks: peak = free at init − free after profile_run"},
    {{0, 5, 0}, "V0", VllmEngine::v0, VllmSampler::torch_sort, VllmModelRunner::v1, false, 512, false, 0.25, 2.1,
     "vllm/worker/worker.py determine_num_available_blocks; vllm/worker/model_runner.py profile_run (max_num_seqs "
     "sequences sharing max_num_batched_tokens); vllm/config.py SchedulerConfig (max(max_model_len, 2048) tokens, "
     "chunks of 512 with chunked prefill); vllm/model_executor/layers/sampler.py _apply_top_k_top_p (sort)"},
    {{0, 6, 0}, "V0", VllmEngine::v0, VllmSampler::torch_sort, VllmModelRunner::v1, false, 2048, false, 0.25, 2.1,
     "vllm/config.py SchedulerConfig: chunked-prefill chunks of _DEFAULT_MAX_NUM_BATCHED_TOKENS (2048); "
     "vllm/utils.py memory_profiling (the start-up baseline excluded)"},
    {{0, 7, 0}, "V0", VllmEngine::v0, VllmSampler::torch_sort, VllmModelRunner::v1, false, 2048, false, 0.16, 2.1,
     "vllm/utils.py MemorySnapshot (PR #11809, in 0.7.0): torch's memory read as memory_reserved(), so segments the "
     "caching allocator cannot release are no longer non-torch (0.6.5-0.6.6 counted them: PR #10511's log prints "
     "1.79 GiB on one 80 GB GPU); PR #12126's log (0.7.0 V0, one H100): non_torch_memory takes 0.16GiB"},
    {{0, 8, 0}, "early V1", VllmEngine::v1_early, VllmSampler::torch_sort, VllmModelRunner::v1, false, 0, true, 0.25, 2.1,
     "V1 the default (PR #13726); vllm/v1/worker/gpu_worker.py determine_available_memory (torch peak + every "
     "non-torch byte on the GPU, the CUDA context included); gpu_model_runner.py profile_run (logits of every "
     "profiled token)"},
    {{0, 9, 0}, "V1", VllmEngine::v1, VllmSampler::torch_sort, VllmModelRunner::v1, false, 0, false, 0.25, 2.1,
     "vllm/v1/worker/gpu_worker.py memory_profiling from the start-up snapshot; gpu_model_runner.py _dummy_run "
     "(logits of each request's last token); arg_utils.py batch defaults by GPU memory (PRs #17073, #17885)"},
    {{0, 10, 0}, "V1", VllmEngine::v1, VllmSampler::torch_sort, VllmModelRunner::v1, true, 0, false, 0.13, 0.54,
     "vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size, get_max_concurrency_for_kv_cache_config "
     "(hybrid KV-cache manager); vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes"},
    {{0, 17, 0}, "V1", VllmEngine::v1, VllmSampler::triton, VllmModelRunner::v1, true, 0, false, 0.13, 0.54,
     "vllm/v1/sample/ops/topk_topp_triton.py (PR #33538, merged 2026-02-02, first released in 0.17): top-k/top-p "
     "without a full sort; llm-d-planner's version sweep logs the same Qwen3-14B on H100 with a 5.64 GiB torch peak "
     "under 0.15 and 0.16 and 2.23 GiB under 0.17"},
    {{0, 18, 0}, "V1", VllmEngine::v1, VllmSampler::triton, VllmModelRunner::v1, true, 0, false, 0.25, 2.1,
     "llm-d-planner's version sweep: Qwen3-14B on H100 logs 0.13 GiB of non-torch memory under 0.15–0.17 and 0.25 "
     "under 0.18"},
    {{0, 19, 0}, "V1", VllmEngine::v1, VllmSampler::triton, VllmModelRunner::v1, true, 0, false, 0.25, 2.1,
     "vllm/v1/worker/gpu_worker.py determine_available_memory, vllm/engine/arg_utils.py get_batch_defaults, "
     "vllm/v1/core/kv_cache_utils.py at v0.19.0, checked against llm-d-planner's v0.19.0 start-up logs"},
    {{0, 25, 0}, "V1", VllmEngine::v1, VllmSampler::triton, VllmModelRunner::v2_dense, true, 0, false, 0.25, 2.1,
     "v0.25.0 release notes: Model Runner V2 the default for all dense models (PR #44443); "
     "vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run ('the sampler may skip top_k, top_p, and logprobs'); "
     "kvlm's v0.26.0 Qwen3-32B-FP8 log on H100: a 1.26 GiB torch peak, the forward's"},
    {{0, 29, 0}, "V1", VllmEngine::v1, VllmSampler::triton, VllmModelRunner::v2, true, 0, false, 0.25, 2.1,
     "v0.29.0 release notes: Model Runner V2 the default for all models"},
}};
inline constexpr EngineVersion vllm_newest = vllm_releases.back().from;

inline const VllmRelease& vllm_release(const std::optional<EngineVersion>& v) {
  return pick_release(vllm_releases, v, "vLLM");
}

struct VllmProfile {
  static constexpr std::int64_t block_size = 16;                   // CacheConfig block_size on CUDA
  // The CUDA context of the engine process before its first memory snapshot, outside the budget: v0.19 logs on
  // H100 print "Initial free memory: 78.68 GiB" of 79.19 GiB.
  static constexpr Bytes cuda_context{0.51 * 1073741824.0};
  // Non-torch memory with tensor parallelism without NCCL's NVLS (PCIe cards: L40S, L4, RTX 4090; A100's NVLink 3):
  // NCCL's ring buffers alone, logged 0.2–0.5 GiB in all (issue #42's held-out logs). On NVSwitch systems of Hopper
  // and later the release's non_torch_nvswitch_gib; on one GPU its non_torch_gib.
  static constexpr Bytes non_torch_tensor_parallel{0.4 * 1073741824.0};
  // The sampler's dummy run over max_num_seqs rows of logits, bytes per logit beyond the logits in the model dtype.
  // Triton top-k/top-p (0.17 on): the fp32 copy, the softmax and the exponential noise of random sampling (12 B)
  // and a 1-byte mask; 13 B reproduces the torch peak of the sampler-bound v0.19 logs within 3 % (Llama 3.1,
  // Qwen2.5, Gemma 2, Granite).
  static constexpr double sampler_triton_bytes_per_logit = 13.0;
  // torch.sort top-k/top-p (V0 and V1 before 0.17; FlashInfer's sampler off by default): at the sort the fp32
  // logits (4), the sorted values (4) and their int64 indices (8), and the sort's own int64 index input and cub's
  // alternate key/value buffers (8 + 4 + 8). PR #32558 measured the torch path at 1.25 GB beyond its fp32 input for
  // 256 × 131,072 logits (37 B each; 32 here).
  static constexpr double sampler_sort_bytes_per_logit = 36.0;
  // FlashInfer's top-k/top-p (flashinfer_sample, V1 with FlashInfer installed): the dummy run sets both top-k and
  // top-p, so top_k_top_p_sampling_from_logits masks the fp32 logits (a masked copy) and takes their softmax before
  // sampling without a sort: the fp32 logits, the masked logits and the probabilities, 4 B each.
  static constexpr double sampler_flashinfer_bytes_per_logit = 12.0;
  // Model Runner V2's profiling sampler: no top-k/top-p, so the fp32 copy of the logits that temperature and the
  // Gumbel-max kernel read (4 B); kvlm's 0.26 log bounds it at 6 B (a 1.26 GiB peak over 1,024 × 151,936 logits).
  static constexpr double sampler_mrv2_bytes_per_logit = 4.0;
  // CUDA graphs (51 piecewise + 51 full decode sizes up to 512): v0.19 logs "Estimated CUDA graph memory" 0.74–1.13
  // GiB for 7–27B models, median 0.84. Captured after the KV pool is sized, so outside the budget by default.
  static constexpr Bytes cuda_graphs{0.84 * 1073741824.0};
};

// The scheduler limits vLLM picks when the user does not. V1 (`vllm serve`, arg_utils.get_batch_defaults): devices
// with at least 70 GiB other than the A100 get 8192 batched tokens and 1024 sequences, others 2048 and 256. V0:
// 256 sequences and max(max_model_len, 2048) tokens (the whole prompt in one step), or chunks of v0_prefill_chunk
// when chunked prefill is on by default (max_model_len above 32k).
struct VllmBatchLimits {
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
};

inline VllmBatchLimits vllm_batch_defaults(Bytes cuda_total, bool is_a100, const VllmRelease& r = vllm_releases.back(),
                                           std::int64_t max_model_len = 0) {
  if (r.engine == VllmEngine::v0)
    return {max_model_len > 32768 && r.v0_prefill_chunk > 0 ? r.v0_prefill_chunk : std::max<std::int64_t>(max_model_len, 2048),
            256};
  if (cuda_total.in(unit::bytes) >= 70.0 * 1073741824.0 && !is_a100) return {8192, 1024};
  return {2048, 256};
}

// Whether a model's sampler warm-up runs under Model Runner V2 in release r.
inline bool vllm_model_runner_v2(const VllmRelease& r, bool moe) {
  return r.runner == VllmModelRunner::v2 || (r.runner == VllmModelRunner::v2_dense && !moe);
}

inline double vllm_sampler_bytes_per_logit(const VllmRelease& r, bool moe = false) {
  if (vllm_model_runner_v2(r, moe)) return VllmProfile::sampler_mrv2_bytes_per_logit;
  switch (r.sampler) {
    case VllmSampler::triton: return VllmProfile::sampler_triton_bytes_per_logit;
    case VllmSampler::flashinfer: return VllmProfile::sampler_flashinfer_bytes_per_logit;
    case VllmSampler::torch_sort: break;
  }
  return VllmProfile::sampler_sort_bytes_per_logit;
}

// The release's arithmetic with the sampler the settings say the warm-up runs (FlashInfer's where installed; V0
// never used it for its warm-up).
inline VllmRelease vllm_release_as_run(const VllmSettings& v) {
  VllmRelease r = vllm_release(v.version);
  if (v.flashinfer_sampler && r.engine != VllmEngine::v0) r.sampler = VllmSampler::flashinfer;
  return r;
}

// What the assumptions call the sampler warm-up's top-k/top-p.
inline std::string vllm_sampler_name(const VllmRelease& r, bool moe) {
  if (vllm_model_runner_v2(r, moe)) return "without top-k/top-p (Model Runner V2)";
  const char* kernel = r.sampler == VllmSampler::triton       ? "Triton"
                       : r.sampler == VllmSampler::flashinfer ? "FlashInfer"
                                                              : "torch.sort";
  return std::string(kernel) + " top-k/top-p";
}

// The torch peak of vLLM's profiling step (profile_run): a forward of max_num_batched_tokens tokens, then the
// sampler on max_num_seqs rows of logits over the whole vocabulary (gathered on every TP rank); early V1 kept the
// logits of every profiled token. Fused MoE keeps its intermediate caches allocated between calls, so they are
// still there when the sampler runs; with expert parallelism each rank's experts are whole (not sliced over tp).
// MXFP4 experts on the Triton kernels (Hopper) or FlashInfer (sm100) keep none (moe_cache_kept false): matmul_ogs
// allocates its outputs per call, and the gpt-oss logs on H100 put the torch peak at the sampler's alone (0.11:
// 7.38 GiB for gpt-oss-20b and -120b alike, whose experts differ 4.5-fold; 0.19 at TP 2: 2.87 GiB).
inline double vllm_profile_peak(const ModelSpec& s, std::int64_t batched_tokens, std::int64_t max_seqs, double c,
                                std::int64_t tp, const VllmRelease& r = vllm_releases.back(),
                                bool expert_parallel = false, bool moe_cache_kept = true) {
  const double T = double(batched_tokens), S = double(std::min(max_seqs, batched_tokens));
  const double h = double(s.hidden), t = double(tp);
  // Dense FFN at its widest (torch.compile fuses norms and activations): gate_up (2I) and the activation (I) of a
  // gated MLP, up and activation (2I) of a plain one, beside the residual stream, the normed input, the attention
  // output and the down projection (4h).
  const double ffn = (s.mlp == MlpKind::gated ? 3.0 : 2.0) * double(s.intermediate) / t;
  double dense = 0, moe = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    if (!s.is_moe_layer(l)) {
      dense = std::max(dense, T * c * (ffn + 4.0 * h));
      continue;
    }
    // fused_moe's caches per routed token: gate_up out (2I, sharing its buffer with the h-wide output) and the
    // activation (I).
    const double im = double(s.moe.intermediate) / (expert_parallel ? 1.0 : t);
    const double cache = T * double(s.moe.experts_per_token) * c * (std::max(2.0 * im, h) + im);
    const double shared = 3.0 * double(s.moe.shared_experts * s.moe.shared_intermediate) / t;
    moe = std::max(moe, cache);
    dense = std::max(dense, cache + T * c * (shared + 4.0 * h));
  }
  const double every_token = r.engine == VllmEngine::v1_early ? c * T * double(s.vocab) : 0.0;
  const double logits = (c + vllm_sampler_bytes_per_logit(r, s.moe.experts > 0)) * S * double(s.vocab) + every_token;
  const double sampler = (moe_cache_kept ? moe : 0.0) + logits + c * (T + S) * h;  // the step's hidden states stay alive
  return std::max(dense, sampler);
}

// vLLM's encoder profiling (V1: v1/worker/gpu_model_runner.py profile_run): before the language model's dummy run
// the multimodal encoder runs a dummy batch of the modality with the most tokens per item, as many items of the
// maximum feature size as the encoder budget, max(max_num_batched_tokens, one item's tokens), holds and at least one
// ("Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items of the maximum
// feature size"); the dummy inputs (profile_run's local batch) and the encoder's outputs (encoder_cache) stay alive
// through the language model's dummy run. The torch peak is the larger of the two.
// Qwen3-VL-style image processors resize to at most size.longest_edge = 16,777,216 pixels (preprocessor_config.json
// of Qwen3-VL and Qwen3.5/3.6): 16,384 merged tokens of (16 · 2)² pixels, 65,536 patches, as the log's budget says.
inline constexpr double qwen_vl_max_pixels = 16'777'216.0;

struct VllmEncoderProfile {
  double peak = 0;  // the encoder step's torch peak, bytes per GPU
  double kept = 0;  // its dummy inputs and outputs, alive through the language model's dummy run
};

// Per patch, in elements of the activation dtype (model_executor/models/qwen3_vl.py Qwen3_VisionTransformer.forward
// and the Qwen2.5-VL vision attention it uses, as read at 0.11; the 0.24 files were not read): the dummy pixels
// (channels × temporal_patch × patch², cast to the model dtype by the processor), then the largest of
//   - the position-embedding interpolation: the patch embedding h beside 4 gathered and 4 weighted embeddings;
//   - a block's attention: the residual stream and the position embeddings (a local of forward) 2h, the normed
//     input h, the fused qkv 3h (the attention's `x`), q, k, v made contiguous 3h, torch.cat([q, k]) 2h and its
//     rotated copy 2h;
//   - a block's MLP: residual, position embeddings and normed input 3h, fc1's output and its activation 2i.
// qkv and fc1 are column-parallel, split over tp (mm_encoder_tp_mode "weights"). Qwen3.6-35B-A3B's encoder (h 1,152,
// i 4,304, 16² × 2 × 3 = 1,536 pixel values a patch): attention-bound, (1,536 + 13 · 1,152) × 2 B × 65,536 =
// 2.02 GiB against the language model's 0.46 for 8,192 tokens.
inline VllmEncoderProfile vllm_encoder_profile(const VisionEncoderShape& e, std::int64_t batched, double c,
                                               std::int64_t tp, const VllmRelease& r) {
  if (e.depth == 0 || r.engine == VllmEngine::v0) return {};
  const double side = double(e.patch * e.merge), item_tokens = std::floor(qwen_vl_max_pixels / (side * side));
  const double items = std::max(1.0, std::floor(std::max(double(batched), item_tokens) / item_tokens));
  const double patches = items * item_tokens * double(e.merge * e.merge), t = double(tp);
  const double h = double(e.hidden), i = double(e.intermediate);
  const double pixels = double(e.in_channels * e.temporal_patch * e.patch * e.patch);
  const double step = std::max({9.0 * h, 3.0 * h + 10.0 * h / t, 3.0 * h + 2.0 * i / t});
  const double outputs = items * item_tokens * double(e.out_hidden * (1 + e.deepstack));
  return {patches * c * (pixels + step), c * (patches * pixels + outputs)};
}

// The 0.2 releases with tensor parallelism: the profiling forward's all-reduced activations held by the caching
// allocator until the step ends. vLLM 0.2.x all-reduces in place (tensor_model_parallel_all_reduce, a
// torch.distributed.all_reduce, in vllm/model_executor/parallel_utils/) the [tokens, hidden] output of every
// row-parallel layer (attention's o_proj and the MLP's down_proj: 2 per layer) and of the vocab-parallel embedding
// (1). PyTorch's ProcessGroupNCCL record_stream()s each on NCCL's stream, so a freed block is reused only once an
// event on that stream has completed; with the CPU issuing the forward ahead of the GPU, none is taken as reused
// within the step (issue #2150, from PR #2031's review: "when using TP, the activation memory for all reduce is not
// reused", Llama-70B at TP 8).
// PR #2031 sized the pool from total − free after profile_run, so these reserved blocks shrink the pool; PR #2151
// set TORCH_NCCL_AVOID_RECORD_STREAMS=1 (effective with torch 2.1.2), in vLLM from 0.2.7 (issue #2248: "already set
// in vLLM-v0.2.7"). Reuse by a GPU that keeps pace with the CPU would make this smaller; allocator fragmentation
// around the held blocks, larger.
inline constexpr EngineVersion vllm_nccl_avoids_record_streams{0, 2, 7};
inline double vllm_pending_allreduce_bytes(const ModelSpec& s, std::int64_t batched_tokens, double c, std::int64_t tp,
                                           EngineVersion v) {
  if (tp == 1 || v >= vllm_nccl_avoids_record_streams) return 0.0;
  return double(2 * s.layers + 1) * double(batched_tokens) * double(s.hidden) * c;
}

inline double vllm_non_torch_bytes(std::int64_t tp, GpuLink link = GpuLink::nvswitch,
                                   const VllmRelease& r = vllm_releases.back()) {
  const double gib = 1073741824.0;
  if (tp == 1) return r.non_torch_gib * gib;
  return link == GpuLink::nvswitch ? r.non_torch_nvswitch_gib * gib
                                   : VllmProfile::non_torch_tensor_parallel.in(unit::bytes);
}

// The MXFP4 MoE kernel vLLM picks for a GPU (model_executor/layers/quantization/mxfp4.py get_mxfp4_backend, from
// gpt-oss support in 0.10.1): Marlin below Hopper and on consumer Blackwell (sm120), Triton kernels on Hopper,
// FlashInfer on datacenter Blackwell (sm100).
enum class Mxfp4Backend { marlin, triton, flashinfer_sm100 };

// Told apart by what the catalog says of the GPU: HBM with FP4 tensor cores is sm100, HBM with FP8 but not FP4 is
// Hopper; the rest (Ampere, Ada, GDDR7 Blackwell) run Marlin.
inline Mxfp4Backend mxfp4_backend(bool hbm, bool fp8, bool fp4) {
  if (hbm && fp4) return Mxfp4Backend::flashinfer_sm100;
  if (hbm && fp8) return Mxfp4Backend::triton;
  return Mxfp4Backend::marlin;
}

// The bytes Mxfp4MoEMethod.create_weights adds to a GPU's routed experts by padding them for the kernel: the
// per-partition intermediate and the hidden size rounded up (Marlin: 128 and 256, its n % 256 and k % 128;
// FlashInfer on sm100: 256 and 256; Triton: the intermediate to 64). Each expert holds gate_up (2·I × h) and down
// (h × I) at 4.25 bits per weight (E2M1 + an E8M0 scale per 32). The Triton kernels' copies after loading are
// vllm_mxfp4_triton_copy_bytes.
inline double vllm_mxfp4_padding_bytes(const ModelSpec& s, std::int64_t tp, bool expert_parallel, Mxfp4Backend b) {
  if (s.moe.experts == 0) return 0;
  auto up = [](std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; };
  const std::int64_t i = expert_parallel ? s.moe.intermediate : s.moe.intermediate / tp, h = s.hidden;
  const std::int64_t ip = b == Mxfp4Backend::marlin ? up(i, 128) : b == Mxfp4Backend::flashinfer_sm100 ? up(i, 256) : up(i, 64);
  const std::int64_t hp = b == Mxfp4Backend::marlin || b == Mxfp4Backend::flashinfer_sm100 ? up(h, 256) : h;
  const double experts_here = double(s.moe.experts) / (expert_parallel ? double(tp) : 1.0);
  return double(s.moe_layer_count()) * experts_here * 3.0 * double(ip * hp - i * h) * 4.25 / 8.0;
}

// What the Triton MoE kernels (Hopper) hold beyond the padded experts once loaded
// (quantization/mxfp4.py Mxfp4MoEMethod.process_weights_after_loading, Triton branch, read in its 0.10–0.11 text and
// a later one, the same in this): the weights
// are re-laid for matmul_ogs and the originals deleted (`del layer.w13_weight`), but the E8M0 scale parameters stay
// registered beside the copy _swizzle_mxfp4 (utils/mxfp4_utils.py) makes of them in triton_kernels'
// HopperMXScaleLayout, whose swizzle_data pads each matrix's output rows to 2·num_warps·2·8 = 256 (num_warps 8
// without batched MoE) and its scale columns to 2; and the bf16 biases are replaced by fp32 copies (2 bytes more per
// output row). Per expert: gate_up's scales are (2·I_pad) rows × h/32, down's h rows × I_pad/32. gpt-oss-20b at TP 1:
// 768 expert layers × (5,888·90 + 3,072·90 + 2·8,640) bytes = 0.59 GiB, -120b's 4,608 layers 3.54 GiB, where the
// llm-d H100 logs (0.11 image) load 0.64 and 3.60 GiB more than the padded experts; vLLM 0.19 at TP 2 on H100 0.48
// (0.31 here). Caveat: _swizzle_mxfp4 falls back to strided layouts (views, no copy) on Hopper under torch < 2.8.1,
// and 0.11.0 pins torch 2.8.0; the llm-d logs show the overhead the copy explains all the same, so which image ran
// them is uncertain (their companion analysis used ':latest' of those weeks) and the copy is modelled from 0.10.1.
inline double vllm_mxfp4_triton_copy_bytes(const ModelSpec& s, std::int64_t tp, bool expert_parallel) {
  if (s.moe.experts == 0) return 0;
  auto up = [](std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; };
  const std::int64_t i = expert_parallel ? s.moe.intermediate : s.moe.intermediate / tp, h = s.hidden;
  const std::int64_t ip = up(i, 64);  // create_weights' Triton padding (vllm_mxfp4_padding_bytes)
  const std::int64_t rows = 256;      // HopperMXScaleLayout SWIZZLE_ALIGN_M at num_warps 8
  const double swizzled_scales = double(up(2 * ip, rows) * up(h / 32, 2) + up(h, rows) * up(ip / 32, 2));
  const double fp32_bias = 2.0 * double(2 * ip + h);
  const double experts_here = double(s.moe.experts) / (expert_parallel ? double(tp) : 1.0);
  return double(s.moe_layer_count()) * experts_here * (swizzled_scales + fp32_bias);
}

// The KV-cache groups of a model (kv_cache_utils.get_kv_cache_groups): every attention layer's block is one page of
// the same size. One kind of attention: one group. Full and sliding-window layers mixed (hybrid manager, 0.10 on):
// groups of group_size layers of one kind, group_size the smaller kind's count (the larger's when it is under 1.5
// times that), the last group of a kind padded; the pool is group_size tensors of num_blocks pages, shared by one
// layer of each group. A kind whose layers hold fewer bytes per token (Gemma 4's full-attention layers: 2 KV heads
// × 512 against the sliding layers' 8 × 256) gets blocks of more tokens until its page is as large
// (unify_kv_cache_spec_page_size: block_size × the ratio of the pages). Layers reading another layer's K and V
// (Gemma 4's num_kv_shared_layers) have no spec of their own and join no group. Chunked local attention (Llama 4)
// stays one full-attention group: vLLM turns the hybrid manager off for it
// (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE unset). Linear-attention (Mamba-like) layers are a kind of
// their own under the hybrid manager: grouped alike, and counted in the groups the logged token count divides by
// (_report_kv_cache_config: num_blocks // len(kv_cache_groups) × the smallest block_size). Before
// vllm_mamba_block_from their state is kept per request beside the attention blocks (`state` in vllm_estimate);
// from it a linear layer's state is one page of the groups' pool (vllm_raise_block_for_state).
struct VllmKvGroups {
  double page = 0;                 // one layer's block, per GPU
  std::int64_t group_size = 0;     // layers per group
  std::int64_t full_groups = 0, window_groups = 0, linear_groups = 0;
  std::int64_t window = 0;         // sliding window of the window groups
  std::int64_t full_block = VllmProfile::block_size, window_block = VllmProfile::block_size;  // tokens per block
  std::int64_t linear_pages = 0;   // pages a request holds in each linear group (0: its state kept outside the pool)

  std::int64_t groups() const { return full_groups + window_groups + linear_groups; }
  // Blocks one request of max_len tokens holds (FullAttentionSpec / SlidingWindowSpec / MambaSpec
  // .max_memory_usage_bytes).
  std::int64_t request_blocks(std::int64_t max_len, std::int64_t batched) const {
    const std::int64_t in_window = std::min(window - 1 + batched, max_len);
    return full_groups * ((max_len + full_block - 1) / full_block) +
           window_groups * ((in_window + window_block - 1) / window_block + 1) + linear_groups * linear_pages;
  }
  std::int64_t blocks(double pool) const {
    return pool > 0 ? static_cast<std::int64_t>(std::floor(pool / page / double(group_size))) : 0;
  }
  // "GPU KV cache size: N tokens": blocks per group × the smallest block_size.
  std::int64_t tokens(std::int64_t blocks) const {
    const std::int64_t block = std::min(full_groups > 0 ? full_block : window_block, window_groups > 0 ? window_block : full_block);
    return blocks / groups() * block;
  }
  double bytes(std::int64_t blocks) const { return double(blocks) * page * double(group_size); }
};

// Hybrid attention + Mamba-like models (vllm/model_executor/models/config.py
// HybridAttentionMambaModelConfig.verify_and_update_config, from Qwen3-Next's support in 0.10.2): the attention block
// is raised to the smallest multiple of the kernel's block alignment whose page holds one linear layer's state
// ("Setting attention block size to N tokens to ensure that attention page size is >= mamba page size"), and the
// state's page is padded to it. Alignment 16 (FlashAttention, FlashInfer, Triton), 64 for MLA (FlashMLA's blocks;
// 128 would be CUTLASS MLA on sm100, not modelled). Checks: vLLM 0.19.1 logs 528 tokens for Qwen3.5-4B (a
// 2,146,304-byte state over 4,096 bf16 KV bytes per token and layer: 524 → 528); a 0.24.0 log of Qwen3.6-35B-A3B
// with an fp8 cache implies 2,096 (2,146,304 / 1,024); a 0.11.2 Kimi Linear log at TP 4 prints 512 (MLA).
// Each linear group then holds MambaSpec.max_memory_usage_bytes per request: one page, two with prefix caching in
// mamba_cache_mode "align" (the running state and the block-aligned one kept for reuse; vLLM PR #30877).
inline constexpr EngineVersion vllm_mamba_block_from{0, 10, 2};
// PR #30877 (merged 2026-01-23) made --enable-prefix-caching work for Gated DeltaNet and the other Mamba-like layers
// in "align" mode, the default mode when prefix caching is on ("Mamba cache mode is set to 'align' for
// Qwen3_5ForConditionalGeneration by default when prefix caching is enabled"); before it the switch left them one
// page. Taken from 0.16 (PR #33538, merged ten days later, shipped in 0.17; whether 0.15 carries #30877 is not
// checked). Off by default: prefix caching stays opt-in for hybrid models (vLLM PR #46778, 2026-06).
inline constexpr EngineVersion vllm_mamba_align_from{0, 16, 0};

// One sequence's state in one linear-attention layer as vLLM keeps it, per GPU (value heads split over tp):
// model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator keeps conv_kernel − 1 columns of the conv
// window (the newest token's column is the step's input), one fewer than transformers' cache, in the model dtype,
// and the key×value state in fp32 (the config's mamba_ssm_dtype for Qwen3-Next/3.5, KDA's own). The 0.24.0
// Qwen3.6-35B-A3B log needs the 2,146,304 bytes this gives (3 × 8,192 × 2 + 32 × 128 × 128 × 4) for its 2,096-token
// blocks: the full window's 2,162,688 would raise them to 2,112 and print 4.29x, not 4.33x.
inline double vllm_linear_state_bytes(const ModelSpec& s, double act_bytes, std::int64_t tp) {
  if (s.linear_layers.empty()) return 0;
  const double split = double(std::min<std::int64_t>(tp, s.linear.value_heads));
  const double conv = double(s.linear.conv_dim()) * double(std::max<std::int64_t>(s.linear.conv_kernel - 1, 0));
  return (conv * act_bytes + double(s.linear.recurrent_state()) * 4.0) / split;
}

inline std::int64_t vllm_state_block(double state, double token_bytes, bool mla) {
  const double align = mla ? 64.0 : 16.0;
  return static_cast<std::int64_t>(align * std::ceil(state / (align * token_bytes)));
}

// kv_tok: each layer's KV bytes per token on this GPU (0 for a layer that keeps none); state: one linear layer's
// state per request on this GPU; v: the release as run (the state's pages depend on it, not only on r).
inline VllmKvGroups vllm_kv_groups(const ModelSpec& s, const std::vector<double>& kv_tok, const VllmRelease& r,
                                   double state = 0, EngineVersion v = {0, 0, 0}, bool prefix_caching = false) {
  std::int64_t full = 0, windowed = 0, linear = 0;
  double full_tok = 0, window_tok = 0;  // a layer's bytes per token in each kind (the largest, should they differ)
  const bool split = r.hybrid_kv && !s.chunked_attention;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const double tok = kv_tok[static_cast<std::size_t>(l)];
    if (s.is_linear_layer(l)) ++linear;
    else if (!s.keeps_kv(l)) continue;
    else if (split && s.is_sliding_layer(l)) ++windowed, window_tok = std::max(window_tok, tok);
    else ++full, full_tok = std::max(full_tok, tok);
  }
  if (!r.hybrid_kv) linear = 0;  // before the hybrid manager the state lived in a cache of its own
  VllmKvGroups g;
  const double bs = double(VllmProfile::block_size);
  g.page = std::max(full_tok, window_tok) * bs;  // linear layers' state pages are padded to the attention page
  if (linear > 0 && state > 0 && g.page > 0 && v >= vllm_mamba_block_from) {
    g.page = double(vllm_state_block(state, std::max(full_tok, window_tok), s.mla_enabled)) * std::max(full_tok, window_tok);
    g.linear_pages = prefix_caching && v >= vllm_mamba_align_from ? 2 : 1;
  }
  if (full_tok > 0) g.full_block = std::llround(g.page / full_tok);
  if (window_tok > 0) g.window_block = std::llround(g.page / window_tok);
  g.window = s.sliding_window;
  std::int64_t lo = 0, hi = 0;
  for (const std::int64_t n : {full, windowed, linear}) {
    if (n == 0) continue;
    lo = lo == 0 ? n : std::min(lo, n);
    hi = std::max(hi, n);
  }
  g.group_size = std::max<std::int64_t>(double(hi) < 1.5 * double(lo) ? hi : lo, 1);
  auto groups_of = [&](std::int64_t n) { return (n + g.group_size - 1) / g.group_size; };
  g.full_groups = groups_of(full);
  g.window_groups = groups_of(windowed);
  g.linear_groups = groups_of(linear);
  return g;
}

// Parameters vLLM holds that the checkpoint's model does not (gemma4.py Gemma4Attention: one QKVParallelLinear in every
// layer): a layer whose values are its keys (attention_k_eq_v) keeps a V slot, K loaded into both; a layer reading
// an earlier layer's K and V keeps k and v projections it never uses.
inline double vllm_unused_kv_projection_params(const ModelSpec& s) {
  double n = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const LayerShape sh = s.shape(l);
    const double kv = double(s.hidden) * double(sh.kv_heads * sh.head_dim);
    if (sh.shares_kv) n += 2.0 * kv;            // k and v the layer does not load
    else if (sh.values_are_keys) n += kv;       // the V slot K is copied into
  }
  return n;
}

// "GPU KV cache size: N tokens": blocks over every group (Mamba-like ones too) × block_size; later releases print max
// concurrency × max_model_len (_report_kv_cache_config), which counts sliding-window and state groups by what a
// request holds in them: a 0.24.0 log prints 567,978 = 4.33 × 131,072 for Qwen3.6, a 0.11.2 one blocks ÷ 4 groups for
// Kimi Linear. vllm-project/vllm issue #43308 (2026-05-21) pins the change at 0.21.0: the same Gemma 4 31B start-up on
// an A100 with the same ~50 GB pool logs ~55k tokens under 0.20.0 (blocks ÷ 6 groups × 16) and ~525k under 0.21.0.
inline constexpr EngineVersion vllm_tokens_from_concurrency{0, 21, 0};
inline std::int64_t vllm_logged_tokens(const VllmKvGroups& g, std::int64_t blocks, double concurrency,
                                       std::int64_t max_model_len, EngineVersion v) {
  return v >= vllm_tokens_from_concurrency ? std::int64_t(concurrency * double(max_model_len)) : g.tokens(blocks);
}

}  // namespace gpuplan
