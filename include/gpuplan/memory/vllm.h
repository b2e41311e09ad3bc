// vLLM's start-up memory arithmetic, as the V1 engine of vLLM 0.19 does it (vllm/v1/worker/gpu_worker.py
// determine_available_memory, vllm/engine/arg_utils.py get_batch_defaults, vllm/v1/core/kv_cache_utils.py):
//   budget    = gpu_memory_utilization × the CUDA total (the context already there is outside it)
//   non-KV    = weights as loaded + the torch peak of one profiling step + non-torch memory that step adds
//   KV pool   = budget − non-KV, in blocks of 16 tokens; CUDA graphs are captured afterwards, outside the budget.
// Checked against vLLM's own start-up logs in tests/data/engines/vllm.jsonl (docs/engines-accuracy.md).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../model.h"
#include "../units.h"

namespace gpuplan {

struct VllmProfile {
  static constexpr const char* version = "0.19";
  static constexpr double default_gpu_memory_utilization = 0.90;  // CacheConfig.gpu_memory_utilization
  static constexpr std::int64_t block_size = 16;                   // CacheConfig block_size on CUDA
  // The CUDA context of the engine process before its first memory snapshot, outside the budget: v0.19 logs on
  // H100 print "Initial free memory: 78.68 GiB" of 79.19 GiB.
  static constexpr Bytes cuda_context{0.51 * 1073741824.0};
  // Non-torch memory the profiling step adds (cuBLAS/cuDNN workspaces, kernels loaded on first use): 0.24–0.26 GiB
  // in every single-GPU v0.19 log; with tensor parallelism NCCL's channel buffers and vLLM's custom all-reduce IPC
  // buffers make it 2.06–2.13 GiB per GPU (llm-d-planner accuracy report, TP 2 and 4 on H100).
  static constexpr Bytes non_torch_single_gpu{0.25 * 1073741824.0};
  static constexpr Bytes non_torch_tensor_parallel{2.1 * 1073741824.0};
  // The sampler's dummy run over max_num_seqs rows of logits holds, besides the logits in the model dtype, their
  // fp32 copy, the softmax and the exponential noise of random sampling (12 B per logit) and a 1-byte mask: with
  // bf16 logits 15 B per logit, which reproduces the torch peak of the sampler-bound v0.19 logs within 3 %
  // (Llama 3.1, Qwen2.5, Gemma 2, Granite).
  static constexpr double sampler_fp32_bytes_per_logit = 13.0;
  // CUDA graphs (51 piecewise + 51 full decode sizes up to 512): v0.19 logs "Estimated CUDA graph memory" 0.74–1.13
  // GiB for 7–27B models, median 0.84. Captured after the KV pool is sized, so outside the budget by default.
  static constexpr Bytes cuda_graphs{0.84 * 1073741824.0};
};

// The scheduler limits vLLM picks when the user does not (arg_utils.get_batch_defaults, `vllm serve`): devices with
// at least 70 GiB other than the A100 get 8192 batched tokens and 1024 sequences, others 2048 and 256.
struct VllmBatchLimits {
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
};

inline VllmBatchLimits vllm_batch_defaults(Bytes cuda_total, bool is_a100) {
  if (cuda_total.in(unit::bytes) >= 70.0 * 1073741824.0 && !is_a100) return {8192, 1024};
  return {2048, 256};
}

// The torch peak of vLLM's profiling step (gpu_model_runner.profile_run): a forward of max_num_batched_tokens
// tokens, then the sampler on max_num_seqs rows of logits over the whole vocabulary (gathered on every TP rank).
// Fused MoE keeps its intermediate caches allocated between calls, so they are still there when the sampler runs.
inline double vllm_profile_peak(const ModelSpec& s, std::int64_t batched_tokens, std::int64_t max_seqs, double c,
                                std::int64_t tp) {
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
    const double im = double(s.moe.intermediate) / t;
    const double cache = T * double(s.moe.experts_per_token) * c * (std::max(2.0 * im, h) + im);
    const double shared = 3.0 * double(s.moe.shared_experts * s.moe.shared_intermediate) / t;
    moe = std::max(moe, cache);
    dense = std::max(dense, cache + T * c * (shared + 4.0 * h));
  }
  const double logits = (c + VllmProfile::sampler_fp32_bytes_per_logit) * S * double(s.vocab);
  const double sampler = moe + logits + c * (T + S) * h;  // the step's hidden states stay alive
  return std::max(dense, sampler);
}

inline double vllm_non_torch_bytes(std::int64_t tp) {
  return (tp > 1 ? VllmProfile::non_torch_tensor_parallel : VllmProfile::non_torch_single_gpu).in(unit::bytes);
}

}  // namespace gpuplan
