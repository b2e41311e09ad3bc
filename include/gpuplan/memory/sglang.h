// SGLang's start-up memory arithmetic by release (sgl-project/sglang; each row of sglang_releases names the file it
// was read from; model_runner.py profile_max_num_token and init_memory_pool in every release modelled):
//   mem_fraction_static  the user's, else the release's default: by TP before 0.4.7, GBs reserved by GPU class from
//                        0.4.7, MBs reserved by chunked prefill and CUDA-graph batch from 0.5.4
//   token pool           = (mem_fraction_static × free memory at start − weights) / bytes per token of all layers
//   req_to_token table   max_running_requests × (context_length + 4) int32 slots, allocated after the pool
//   hybrid models        the pool is shared by the linear-attention state slots and the full-attention tokens
// The rest of the GPU, (1 − mem_fraction_static) of it, is left to activations, the table and CUDA graphs.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

#include "../model.h"
#include "../units.h"
#include "engine_version.h"

namespace gpuplan {

// `python -m sglang.launch_server` flags that change memory, under SGLang's names (context_length is the
// workload's context).
struct SglangSettings {
  std::optional<EngineVersion> version;  // --engine-version (default: the newest modelled release)
  double mem_fraction_static = 0;        // 0: the release's default
  std::int64_t max_running_requests = 0; // 0: by the pool (init_memory_pool)
};

// How a release picks mem_fraction_static when the user does not (python/sglang/srt/server_args.py).
enum class SglangFraction {
  by_tp,                  // __post_init__: 0.88 at TP 1, 0.87 at TP 2, 0.85 at TP 4, 0.81 at TP 8, 0.79 at TP 16
  reserved_by_gpu,        // PR #7054: GBs reserved by GPU class and TP × PP, over the GPU's memory
  by_prefill_and_graphs,  // PR #10975 (_handle_gpu_memory_settings): MBs by chunked prefill, CUDA-graph batch, TP
};

struct SglangRelease {
  EngineVersion from;
  SglangFraction fraction;
  const char* source;
};

inline constexpr std::array<SglangRelease, 3> sglang_releases{{
    {{0, 1, 0}, SglangFraction::by_tp,
     "python/sglang/srt/server_args.py __post_init__ (as read for 0.4.0-0.4.2; 0.2 had 0.83 at TP 8, not modelled): "
     "mem_fraction_static 0.88 at TP 1, 0.87 at TP 2, 0.85 at TP 4, 0.81 at TP 8, 0.79 at TP 16; chunked prefill "
     "2048 and CUDA graphs to batch 8 (80 at TP >= 4) under 25,000 MB, else 8192 and 160"},
    {{0, 4, 7}, SglangFraction::reserved_by_gpu,
     "python/sglang/srt/server_args.py __post_init__ after PR #7054 (merged 2025-06-10, taken as first released in "
     "0.4.7): reserved (2.8 + TP×PP / 10) GB under 35 GB, (9.5 + TP×PP / 2) GB under 90 GB, (12 + TP×PP / 2) GB under "
     "160 GB, else 32 GB"},
    {{0, 5, 4}, SglangFraction::by_prefill_and_graphs,
     "python/sglang/srt/server_args.py _handle_gpu_memory_settings (PR #10975): reserved MB by chunked prefill, "
     "CUDA-graph batch and TP; x 0.85 with ROCm's aiter attention above 8192 tokens of context"},
}};
inline constexpr EngineVersion sglang_newest = sglang_releases.back().from;

inline const SglangRelease& sglang_release(const std::optional<EngineVersion>& v) {
  return pick_release(sglang_releases, v, "SGLang");
}

struct SglangDefaults {
  std::int64_t chunked_prefill_size = 0;
  std::int64_t cuda_graph_max_bs = 0;
  double mem_fraction_static = 0;
};

namespace detail {

inline double sglang_fraction_of(double gpu_mem_mib, double reserved_mib) {
  return std::round((gpu_mem_mib - reserved_mib) / gpu_mem_mib * 1000.0) / 1000.0;
}

// Before PR #10975: the TP table, or (from PR #7054) the GBs reserved by GPU class.
inline SglangDefaults sglang_defaults_before_10975(double gpu_mem_mib, std::int64_t tp, SglangFraction f) {
  const bool small = gpu_mem_mib < (f == SglangFraction::by_tp ? 25'000 : 35 * 1024);
  SglangDefaults d{small ? 2048 : gpu_mem_mib < 160 * 1024 || f == SglangFraction::by_tp ? 8192 : 16384,
                   small ? (tp < 4 ? 8 : 80) : 160, 0};
  // From PR #7054 larger GPUs capture more CUDA-graph batch sizes (cuda_graph_runner get_batch_sizes_to_capture):
  // to 256 over 96 GB, to 512 over 180,000 MB.
  if (f == SglangFraction::reserved_by_gpu && !small)
    d.cuda_graph_max_bs = gpu_mem_mib > 180'000 ? 512 : gpu_mem_mib > 96 * 1024 ? 256 : 160;
  if (f == SglangFraction::by_tp) {
    d.mem_fraction_static = tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
    return d;
  }
  const double p = double(tp);  // TP × PP; gpuplan has no pipeline parallelism
  const double reserved_gb = gpu_mem_mib < 35 * 1024 ? 2.8 + p / 10 : gpu_mem_mib < 90 * 1024 ? 9.5 + p / 2
                             : gpu_mem_mib < 160 * 1024                ? 12 + p / 2
                                                                      : 32;
  d.mem_fraction_static = sglang_fraction_of(gpu_mem_mib, reserved_gb * 1024);
  return d;
}

}  // namespace detail

// gpu_mem: the device total as nvidia-smi reports it, in MiB (sglang get_device_memory_capacity); rocm_long_context:
// a ROCm GPU (the aiter attention backend by default) serving a context above 8192 tokens.
inline SglangDefaults sglang_defaults(double gpu_mem_mib, std::int64_t tp, const SglangRelease& r = sglang_releases.back(),
                                      bool rocm_long_context = false) {
  if (r.fraction != SglangFraction::by_prefill_and_graphs)
    return detail::sglang_defaults_before_10975(gpu_mem_mib, tp, r.fraction);
  SglangDefaults d;
  const bool small_tp = tp < 4;
  if (gpu_mem_mib < 20 * 1024) d = {2048, 8, 0};                           // T4, 4080
  else if (gpu_mem_mib < 35 * 1024) d = {2048, small_tp ? 24 : 80, 0};     // A10, 4090, 5090
  else if (gpu_mem_mib < 60 * 1024) d = {4096, small_tp ? 32 : 160, 0};    // A100 40GB, L40
  else if (gpu_mem_mib < 160 * 1024) d = {8192, small_tp ? 256 : 512, 0};  // H100, A100 80GB, H20, H200
  else d = {16384, 512, 0};                                                // B200, MI300
  // Reserved MB: attention-backend metadata, 1.5 MB per prefill-chunk token, 2 MB per CUDA-graph batch size,
  // 128 MB per tensor-parallel rank; at least 10 GB on GPUs over 60 GB.
  double reserved = 512 + 1.5 * double(std::max<std::int64_t>(d.chunked_prefill_size, 2048)) +
                    2.0 * double(d.cuda_graph_max_bs) + double(tp) / 8.0 * 1024.0;
  if (gpu_mem_mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  d.mem_fraction_static = detail::sglang_fraction_of(gpu_mem_mib, reserved);
  // _handle_attention_backend_compatibility: aiter keeps more workspace for long contexts.
  if (rocm_long_context) d.mem_fraction_static *= 0.85;
  return d;
}

// Requests the req_to_token table holds when --max-running-requests is not given (model_runner.init_memory_pool):
// the pool's tokens over the context, × 512, kept within [2048, 4096].
inline std::int64_t sglang_max_running_requests(std::int64_t pool_tokens, std::int64_t context_len) {
  const auto by_pool = static_cast<std::int64_t>(double(pool_tokens) / double(std::max<std::int64_t>(context_len, 1)) * 512.0);
  return std::min<std::int64_t>(std::max<std::int64_t>(by_pool, 2048), 4096);
}

// The req_to_token table (ReqToTokenPool): (requests + 1) rows of context_len + 4 int32 token slots.
inline double sglang_req_to_token_bytes(std::int64_t requests, std::int64_t context_len) {
  return double(requests + 1) * double(context_len + 4) * 4.0;
}

// Bytes per element of the RoPE cos/sin cache SGLang builds once per model (the 12 full-attention layers of Qwen3-Next
// share it): fp32 on CUDA, the model's dtype elsewhere (python/sglang/srt/layers/rotary_embedding.py
// RotaryEmbedding.__init__, 0.4–0.5.x: "NOTE(ByronHsu): cache needs to be in FP32 for numerical stability", then
// `if not _is_cuda: cache = cache.to(dtype)`). vLLM casts it to the model's dtype.
inline double sglang_rotary_element_bytes(bool rocm, double model_bytes) { return rocm ? model_bytes : 4.0; }

// Model types SGLang serves through its transformers fallback (python/sglang/srt/models/transformers.py,
// TransformersForCausalLM) for want of a model class of its own: Hugging Face's rotary embedding keeps only inv_freq
// and computes cos/sin each step, so there is no cache. seed_oss at 0.5.5: the yuy4o/llm log of Seed-OSS-36B prints
// "Load weight end. type=TransformersForCausalLM".
inline bool sglang_transformers_fallback(const ModelSpec& s) { return s.model_type == "seed_oss"; }

// What the MoE routers add on each GPU beyond the 1/tp share the weights are split by: SGLang builds each MoE
// layer's router (gate, experts × hidden) as a ReplicatedLinear, whole on every rank and in the model's dtype
// (python/sglang/srt/models/qwen2_moe.py Qwen2MoeSparseMoeBlock, used by models/qwen3_next.py at 0.5.x; the FP8
// checkpoints list mlp.gate in modules_to_not_convert). Qwen3-Next: 48 × 512 × 2048 × 2 B = 96 MiB, 48 MiB more
// per GPU at TP 2.
inline double sglang_replicated_router_bytes(const ModelSpec& s, double model_bytes, std::int64_t tp) {
  if (tp <= 1) return 0;
  const ParamInventory inv = param_inventory(s);
  double router = 0;
  for (std::size_t l = 0; l < inv.layers(); ++l)
    for (const auto& g : inv.layer(l))
      if (g.module == "gate" && g.is_matrix()) router += double(g.numel());
  return router * model_bytes * (1.0 - 1.0 / double(tp));
}

// One request's linear-attention state (a "Mamba cache" slot) over all linear layers, per GPU
// (python/sglang/srt/configs/mamba_utils.py, Mamba2StateShape at 0.5.5): the causal conv keeps its last
// conv_kernel − 1 inputs in the model's dtype, the key×value state is float32 (--mamba-ssm-dtype's default); both
// split over TP by heads. Checked against the 0.5.4 log of issue #12419 (Qwen3-Next, TP 4): 2914 slots hold
// conv 1.20 GB and ssm 51.24 GB.
inline double sglang_state_slot_bytes(const ModelSpec& s, double act_bytes, std::int64_t tp) {
  if (s.linear_layers.empty()) return 0;
  const auto& a = s.linear;
  const double split = double(std::min<std::int64_t>(tp, a.value_heads));
  const double layer = (double(a.conv_dim() * (a.conv_kernel - 1)) * act_bytes + double(a.recurrent_state()) * 4.0) / split;
  std::int64_t n = 0;
  for (bool linear : s.linear_layers) n += linear ? 1 : 0;
  return layer * double(n);
}

// mamba_full_memory_ratio, the state pool's memory over the full-attention KV pool's (server_args.py, 0.5.x
// default 0.9; docs/basic_usage/qwen3.md says so).
inline constexpr double sglang_mamba_full_memory_ratio = 0.9;

struct SglangStatePool {
  std::int64_t slots = 0;
  double reserved = 0;  // what handle_max_mamba_cache takes out of the static share before the KV pool: slots × slot
  double bytes = 0;     // what MambaPool allocates: one slot more (the padding slot), outside the static share
};

// model_runner.handle_max_mamba_cache (0.5.4–0.5.5): with the radix cache on, the state pool takes ratio / (1 + ratio)
// of the memory the weights leave in the static share, in whole slots; with it off (Kimi Linear turns it off), one
// slot per running request: --max-running-requests, else 512. It returns the rest less max_mamba_cache_size slots,
// and profile_max_num_token sizes the KV pool from that: the padding slot MambaPool adds is not charged to the pool.
// The yuy4o/llm logs of 0.5.5 (tests/data/engines/collected/sglang.jsonl) show it: on an A800, TP 2, rest
// 3.92 − 0.02 × 78.54 = 2.349 GiB less 30 slots of 36.84 MiB leaves 1.270 GiB = 110,950 tokens of 12,288 B (logged
// 110,539; the GB figures are rounded to 0.005 GiB, ±440 tokens); less 31 slots it would be 107,800. At TP 1 (FP8):
// 1.037 GiB less 6 slots of 73.69 MiB gives 26,420 tokens (logged 26,216); less 7, 23,280.
inline SglangStatePool sglang_state_pool(double rest_bytes, double slot_bytes, bool radix_cache,
                                         std::int64_t max_running_requests) {
  if (slot_bytes <= 0) return {};
  SglangStatePool p;
  if (radix_cache) {
    const double share = std::max(0.0, rest_bytes) * sglang_mamba_full_memory_ratio / (1 + sglang_mamba_full_memory_ratio);
    p.slots = static_cast<std::int64_t>(std::floor(share / slot_bytes));
  } else {
    p.slots = max_running_requests > 0 ? max_running_requests : 512;
  }
  p.reserved = double(p.slots) * slot_bytes;
  // MambaPool allocates one slot more than it hands out (the padding slot, index 0 of HybridReqToTokenPool): the
  // 0.5.4 log of issue #12419 prints 2914 slots and an ssm state of 51.24 GB = 2915 × 18,874,368 B.
  p.bytes = double(p.slots + 1) * slot_bytes;
  return p;
}

// The memory the weights must leave for `token_bytes` of full-attention tokens beside the state pool: with the radix
// cache the state takes ratio of the tokens' share again; without it the slots are fixed.
inline double sglang_rest_for(double token_bytes, double slot_bytes, bool radix_cache, std::int64_t max_running_requests) {
  if (slot_bytes <= 0) return token_bytes;
  if (radix_cache) return token_bytes * (1 + sglang_mamba_full_memory_ratio);
  return token_bytes + sglang_state_pool(0, slot_bytes, false, max_running_requests).reserved;
}

}  // namespace gpuplan
