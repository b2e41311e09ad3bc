// Per-GPU memory of a training step: what is live at each moment of forward, backward and the optimizer step,
// and the peak among those moments (not a plain sum of everything).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "../enum_table.h"
#include "../error.h"
#include "../model.h"
#include "../parallel.h"
#include "../units.h"
#include "activations.h"
#include "allocator.h"
#include "breakdown.h"
#include "optimizer.h"
#include "profile.h"
#include "training/allocations.h"
#include "training/moments.h"
#include "training/shard.h"
#include "training/tensors.h"
#include "workload.h"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------------------------
// Result

struct TrainingShape {  // derived counts the report also shows
  Params params{0};
  Params active_params{0};
  Params trainable{0};        // in the whole model
  Params trainable_on_gpu{0}; // on the reported GPU's tensor/pipeline/expert shard, before ZeRO
  Bytes activation_bytes_per_token_per_layer{0};  // average over layers, excluding s² terms
};

struct TrainingEstimate {
  TrainingShape shape;
  PipelineStage stage;    // the most-loaded pipeline stage, whose GPU the memory is for
  MemoryEstimate memory;
  Bytes host_memory{0};  // CPU RAM for offloaded optimizer states / parameters (per GPU's share)
  Bytes nvme{0};         // NVMe for ZeRO-Infinity offload (per GPU's share)
  std::vector<std::string> assumptions;
};


// ---------------------------------------------------------------------------------------------------------------
// One GPU of one pipeline stage, in named steps over explicit data:
//   shard_inventory   what this GPU holds: parameters, trainable ones, optimizer-state elements  (training/shard.h)
//   model_states      their bytes at rest: precision recipe, ZeRO / FSDP sharding, offload        (training/shard.h)
//   step_tensors      the step's tensors: saved activations, loss buffers, casts, gradients       (training/tensors.h)
//   training_moments  live tensors at each moment of forward, backward, optimizer step           (training/moments.h)
//   summarize         the peak: a fold over the moments                                           (breakdown.h)
//   training_allocations + replay_reserve   three steps through the caching-allocator model      (training/allocations.h)

namespace detail {

inline std::vector<std::string> training_assumptions(const ModelSpec& s, const TrainingWorkload& w, Bytes context) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  const bool pytorch = w.profile == Profile::pytorch, deepspeed = w.profile == Profile::deepspeed;
  const bool sharded = w.dp() > 1;
  std::vector<std::string> as;
  if (pytorch)
    as.push_back("profile pytorch: PyTorch 2.11 eager + HF transformers 5.x module code, caching allocator, CUDA 13 "
                 "context measured on an H200 (" + std::to_string(std::llround(context.in(unit::bytes) / 1e6)) + " MB)");
  else if (deepspeed)
    as.push_back("profile deepspeed: DeepSpeed 0.16 ZeRO-" + std::to_string(w.zero) + " (bf16 flat parameters, fp32 "
                 "master and Adam partitions, reduce_bucket_size " + detail::decimal(w.deepspeed.reduce_bucket_size / 1e6, 0) +
                 "M elements" + (w.zero == 3 ? ", prefetch bucket " + detail::decimal(w.deepspeed.prefetch_bucket_size / 1e6, 0) + "M" : "") +
                 ", overlap_comm " + (w.deepspeed.overlaps(w.zero) ? "true" : "false") + ") over the HF model; PyTorch "
                 "context as profile pytorch; allocator reserve 4 % of the step's churn (the replay models FSDP2, not "
                 "DeepSpeed's buckets); read from DeepSpeed's source, not yet checked against its logs");
  else
    as.push_back("profile none: tensor bytes only (no framework temporaries, allocator reserve or CUDA context)");
  switch (w.precision) {
    case Precision::bf16:
    case Precision::fp16:
    case Precision::fp8:
      as.push_back("mixed precision (ZeRO paper): 16-bit weights and gradients, fp32 master weights and moments; the "
                   "optimizer step upcasts gradients to fp32");
      break;
    case Precision::amp_bf16:
    case Precision::amp_fp16:
      as.push_back("autocast: fp32 weights, gradients and moments; 16-bit copies of linear weights cached per forward");
      break;
    case Precision::pure_bf16:
    case Precision::pure_fp16: as.push_back("pure 16-bit: weights, gradients and moments all 16-bit"); break;
    case Precision::fp32: as.push_back("fp32 weights, gradients, moments and activations"); break;
  }
  if (w.precision == Precision::fp8)
    as.push_back("fp8: GEMMs in fp8 over bf16 mixed precision; memory as bf16 mixed precision (fp8 copies transient)");
  static constexpr const char* kernel_names[] = {"flash", "memory-efficient", "math (materialises scores)", "eager (materialises scores)"};
  as.push_back(std::string("attention kernel: ") +
               kernel_names[static_cast<int>(detail::sdpa_backend(s, w.attention, pr.compute))]);
  switch (w.loss) {
    case Loss::eager:
      as.push_back("loss: HF ForCausalLMLoss over full-vocabulary logits (fp32 upcast, log-softmax kept for backward); "
                   "only the loss is kept after forward (HF Trainer)");
      break;
    case Loss::chunked:
      as.push_back("loss: torchtune's chunked cross-entropy (v0.6) in " + std::to_string(w.loss_chunks) +
                   " chunks: 16-bit logits kept, fp32 buffers for one chunk at a time (compiled per chunk)");
      break;
    case Loss::fused:
      as.push_back("loss: Liger's fused linear cross-entropy (v0.5): logits one token chunk at a time, gradients of the "
                   "hidden states and lm_head computed in forward; no full logits");
      break;
  }
  if (w.activation_offload)
    as.push_back("activation offloading: saved activations in pinned host memory between forward and their layer's "
                 "backward (host memory not counted); one layer's activations on the GPU at a time");
  if (w.optimizer == Optimizer::paged_adamw_8bit)
    as.push_back("paged 8-bit AdamW: the optimizer states live in CUDA unified memory (evictable to the host); "
                 "counted in host memory, not in the GPU peak");
  if (pytorch) as.push_back("allocator reserve: three steps replayed through a model of PyTorch's caching allocator");
  if (s.model_type == "derived")
    as.push_back("model shape derived from the parameter count (Llama-2-style: hidden/layers ≈ 128, SwiGLU 8/3·h, "
                 "heads in multiples of 8, vocab 32000, untied)");
  if (sharded && deepspeed)
    as.push_back(w.zero == 3 ? "DeepSpeed ZeRO-3: parameters partitioned, gathered module by module with a prefetch "
                               "bucket; gradient partition and one reduce bucket resident"
                 : w.zero == 2 ? "DeepSpeed ZeRO-2: full 16-bit parameters on every GPU, gradients reduced through IPG "
                                 "buckets into this rank's partition"
                               : "DeepSpeed ZeRO-1: full gradients, optimizer states partitioned");
  else if (sharded)
    as.push_back(w.zero == 0 ? "data parallel: DDP with gradient buckets (a second gradient copy), NCCL buffers"
                 : w.zero == 3 ? "ZeRO-3 / FSDP2 full shard: current and prefetched layer gathered"
                 : w.zero == 2 ? "ZeRO-2 / FSDP2 shard_grad_op: parameters stay gathered between forward and backward"
                               : "ZeRO-1: optimizer states sharded");
  return as;
}

// `replay`: run the caching-allocator replay for the reserve (else the estimate's live peak is exact and its reserve
// a rough share, see training_memory_lower_bound).
inline TrainingEstimate estimate_stage(const ModelSpec& full, const TrainingWorkload& w, const PipelineStage& st,
                                       bool replay = true) {
  const ModelSpec s = rank_model(full, w, st);
  const ShardInventory inv = shard_inventory(s, w, st);
  const ModelStates m = model_states(inv, w);
  const StepTensors t = step_tensors(s, w, st, inv, m);
  const bool pytorch = w.profile == Profile::pytorch;
  std::optional<Bytes> reserve;
  if (pytorch && replay) reserve = Bytes(training_allocator_reserve(s, w, st, inv, m, t));
  const Bytes context = torch_runtime(w.profile)
                            ? PytorchProfile::cuda_context + (w.gpus > 1 ? PytorchProfile::nccl_buffers : Bytes(0))
                            : Bytes(0);
  TrainingEstimate est;
  const ParamCounts counts = count_params(full);
  est.shape.params = counts.total;
  est.shape.active_params = counts.active;
  est.shape.trainable_on_gpu = Params(static_cast<std::int64_t>(std::llround(inv.trainable)));
  est.shape.activation_bytes_per_token_per_layer = Bytes(t.per_token_per_layer);
  est.host_memory = Bytes(m.host);
  est.nvme = Bytes(m.nvme);
  est.memory = summarize(training_moments(s, w, st, inv, m, t), w.profile, context, reserve);
  est.assumptions = training_assumptions(s, w, context);
  return est;
}

}  // namespace detail

// Trainable parameters of the whole model: all of them, or the LoRA adapters on the targeted decoder linears.
inline Params trainable_params(const ModelSpec& s, const LoraSpec& lora) {
  if (lora.rank == 0) return count_params(s).total;
  double n = 0;
  for (std::int64_t l = 0; l < s.layers; ++l)
    for (const auto& g : layer_params(s, l))
      if (trains(g, true, lora)) n += lora_adapter_params(g, lora.rank);
  return Params(static_cast<std::int64_t>(std::llround(n)));
}

namespace detail {

// The most-loaded pipeline stage's estimate: under 1F1B usually the first stage (most micro-batches in flight),
// unless the last stage's logits and loss outweigh them.
inline TrainingEstimate most_loaded_stage(const ModelSpec& s, const TrainingWorkload& w, bool replay) {
  validate(s);
  validate(w);
  if (w.vpp > 1 && w.grad_accum % w.pp != 0)
    throw InputError("the interleaved schedule (--vpp) needs --grad-accum (micro-batches per step) to be a multiple of "
                     "--pp (Megatron-LM)");
  std::optional<TrainingEstimate> best;
  for (const auto& st : pipeline_stages(s.layers, w)) {
    TrainingEstimate e = estimate_stage(s, w, st, replay);
    e.stage = st;
    if (!best || e.memory.total > best->memory.total) best = std::move(e);
  }
  return std::move(*best);
}

}  // namespace detail

// A bound estimate_training_memory(s, w).memory.total never falls below, at a fraction of its cost: the live
// tensors at the peak plus the CUDA context, without replaying the caching allocator (whose reserve is ≥ 0).
inline Bytes training_memory_lower_bound(const ModelSpec& s, const TrainingWorkload& w) {
  const TrainingEstimate e = detail::most_loaded_stage(s, w, /*replay=*/false);
  return e.memory.peak_allocated + e.memory.context;
}

// Per-GPU memory of a training step on the most-loaded GPU (each pipeline stage worth checking is estimated).
inline TrainingEstimate estimate_training_memory(const ModelSpec& s, const TrainingWorkload& w) {
  TrainingEstimate est = detail::most_loaded_stage(s, w, /*replay=*/true);
  est.shape.trainable = trainable_params(s, w.lora);
  auto& as = est.assumptions;
  if (w.tp > 1)
    as.push_back("tensor parallel " + std::to_string(w.tp) + ": attention heads, FFN width and vocabulary split "
                 "(Megatron-LM), norms replicated" +
                 (w.sp ? "; sequence parallel: hidden-width activations split too (Korthikanti et al. 2022)"
                       : "; hidden-width activations replicated (no --sp)"));
  if (w.cp > 1) as.push_back("context parallel " + std::to_string(w.cp) + ": each GPU holds seq/cp tokens (ring attention)");
  if (w.ep > 1)
    as.push_back("expert parallel " + std::to_string(w.ep) + ": " + std::to_string(s.moe.experts / w.ep) +
                 " experts per GPU; activations assume balanced routing");
  if (w.pp > 1) {
    char in_flight[32];
    std::snprintf(in_flight, sizeof in_flight, "%.3g", est.stage.in_flight);
    as.push_back("pipeline " + std::to_string(w.pp) + (w.vpp > 1 ? " (interleaved, " + std::to_string(w.vpp) + " chunks per GPU)" : " (1F1B)") +
                 ": reported GPU is stage " + std::to_string(est.stage.index) + " of 0.." + std::to_string(w.pp - 1) +
                 " with layers " + std::to_string(est.stage.first_layer) + "–" +
                 std::to_string(est.stage.first_layer + est.stage.layers - 1) + " and " + in_flight +
                 " micro-batches' activations in flight (of " + std::to_string(w.grad_accum) + " per step)");
  }
  return est;
}

}  // namespace gpuplan
