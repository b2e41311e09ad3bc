// What a training run is: batch, sequence, precision recipe, optimizer, recomputation, attention kernel, LoRA,
// data parallelism. Value types and their spellings; validation.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../defaults.h"
#include "../enum_table.h"
#include "../error.h"
#include "profile.h"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------------------------
// Workload

enum class Precision { fp32, bf16, fp16, amp_bf16, amp_fp16, pure_bf16, pure_fp16, fp8 };
enum class Optimizer { adamw, adamw_fused, adam, sgd, sgd_momentum, adafactor, lion, adamw_8bit, paged_adamw_8bit };
enum class Recompute { none, selective, full };
enum class Attention { sdpa, flash, eager };

inline constexpr std::array<Spelling<Precision>, 8> precision_names{{
    {Precision::fp32, "fp32"},
    {Precision::bf16, "bf16"},
    {Precision::fp16, "fp16"},
    {Precision::amp_bf16, "amp-bf16"},
    {Precision::amp_fp16, "amp-fp16"},
    {Precision::pure_bf16, "pure-bf16"},
    {Precision::pure_fp16, "pure-fp16"},
    {Precision::fp8, "fp8"},
}};
inline constexpr std::array<Spelling<Optimizer>, 9> optimizer_names{{
    {Optimizer::adamw, "adamw"},
    {Optimizer::adamw_fused, "adamw-fused"},
    {Optimizer::adam, "adam"},
    {Optimizer::sgd, "sgd"},
    {Optimizer::sgd_momentum, "sgd-momentum"},
    {Optimizer::adafactor, "adafactor"},
    {Optimizer::lion, "lion"},
    {Optimizer::adamw_8bit, "adamw-8bit"},
    {Optimizer::paged_adamw_8bit, "paged-adamw-8bit"},
}};
// bitsandbytes' 8-bit AdamW, paged or not: the same states and kernel.
inline bool is_adamw_8bit(Optimizer o) { return o == Optimizer::adamw_8bit || o == Optimizer::paged_adamw_8bit; }

// How the loss is computed over the vocabulary (memory/training/tensors.h loss_buffers):
//   eager    HF ForCausalLMLoss: the logits, their fp32 copy, log-softmax and its gradient, all at once;
//   chunked  torchtune's CEWithChunkedOutputLoss (v0.6): the hidden states split into N chunks (default 8) along
//            the sequence, each chunk's logits upcast and its cross-entropy computed separately;
//   fused    Liger's LigerFusedLinearCrossEntropyLoss (v0.5): lm_head and the loss fused per chunk of tokens, the
//            gradient of the hidden states computed in the forward; full logits never exist.
enum class Loss { eager, chunked, fused };
inline constexpr std::array<Spelling<Loss>, 3> loss_names{{{Loss::eager, "eager"}, {Loss::chunked, "chunked"}, {Loss::fused, "fused"}}};
inline constexpr std::array<Spelling<Recompute>, 3> recompute_names{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
inline constexpr std::array<Spelling<Attention>, 3> attention_names{
    {{Attention::sdpa, "sdpa"}, {Attention::flash, "flash"}, {Attention::eager, "eager"}}};

struct LoraSpec {
  std::int64_t rank = 0;             // 0: no LoRA (full fine-tuning)
  std::vector<std::string> targets;  // PEFT target_modules; "all-linear" = every linear in the decoder layers
  bool qlora = false;                // base weights in NF4 with double quantization (QLoRA)
};

enum class Offload { none, cpu, nvme };
inline constexpr std::array<Spelling<Offload>, 3> offload_names{
    {{Offload::none, "none"}, {Offload::cpu, "cpu"}, {Offload::nvme, "nvme"}}};

struct TrainingWorkload {
  std::int64_t batch = defaults::batch;  // micro-batch per GPU
  std::int64_t seq = defaults::seq;
  std::int64_t grad_accum = 1;
  Precision precision = Precision::bf16;
  Optimizer optimizer = Optimizer::adamw;
  Recompute recompute = Recompute::none;
  Attention attention = Attention::sdpa;
  LoraSpec lora;
  std::int64_t gpus = 1;         // all GPUs of the run (per node × nodes) = dp · tp · pp · cp
  int zero = 0;                  // 0: DDP (when dp > 1), 1–3: ZeRO stage / FSDP sharding over the dp ranks
  // Model parallelism (Megatron-LM / torchtitan): tensor, pipeline (virtual stages per GPU for the interleaved
  // schedule), Megatron sequence parallelism inside the TP group, context parallelism, expert parallelism (inside
  // the data-parallel ranks).
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  bool sp = false;
  // Layers on the first and last pipeline stage (Megatron --decoder-first/last-pipeline-num-layers; 0 = Megatron's
  // default: ceil(L/pp) on the first, the rest spread evenly); the middle stages share what is left evenly.
  std::int64_t pp_first_layers = 0, pp_last_layers = 0;
  std::int64_t dp() const { return gpus / (tp * pp * cp); }
  Offload offload_optimizer = Offload::none;  // ZeRO-Offload / ZeRO-Infinity: moments + master weights off the GPU
  Offload offload_params = Offload::none;     // ZeRO-3 parameter offload
  Profile profile = Profile::pytorch;
  DeepSpeedConfig deepspeed;                  // --profile deepspeed
  Loss loss = Loss::eager;
  std::int64_t loss_chunks = 8;               // --loss chunked:N (torchtune's default num_output_chunks = 8)
  // Saved activations copied to pinned host memory during forward and back before their layer's backward
  // (torch.autograd.graph.save_on_cpu; torchtune's OffloadActivations).
  bool activation_offload = false;
};

inline void validate(const TrainingWorkload& w) {
  if (w.batch < 1 || w.batch > 1'000'000) throw InputError("--batch must be between 1 and 1,000,000");
  if (w.seq < 1 || w.seq > 10'000'000) throw InputError("--seq must be between 1 and 10,000,000");
  if (w.grad_accum < 1 || w.grad_accum > 1'000'000) throw InputError("--grad-accum must be between 1 and 1,000,000");
  if (w.gpus < 1 || w.gpus > 1'000'000) throw InputError("--gpus must be between 1 and 1,000,000");
  if (w.zero < 0 || w.zero > 3) throw InputError("--zero must be 0, 1, 2 or 3");
  for (auto [v, name] : {std::pair{w.tp, "--tp"}, {w.pp, "--pp"}, {w.vpp, "--vpp"}, {w.cp, "--cp"}, {w.ep, "--ep"}})
    if (v < 1 || v > 65536) throw InputError(std::string(name) + " must be between 1 and 65536");
  if (w.gpus % (w.tp * w.pp * w.cp) != 0)
    throw InputError("--gpus × --nodes (" + std::to_string(w.gpus) + ") must be a multiple of tp × pp × cp (" +
                     std::to_string(w.tp * w.pp * w.cp) + ")");
  if (w.dp() % w.ep != 0)
    throw InputError("--ep (" + std::to_string(w.ep) + ") must divide the data-parallel degree (" +
                     std::to_string(w.dp()) + "): experts are spread over data-parallel ranks");
  if (w.sp && w.tp == 1) throw InputError("--sp (sequence parallelism) needs --tp > 1");
  if (w.vpp > 1 && w.pp == 1) throw InputError("--vpp needs --pp > 1");
  if ((w.pp_first_layers != 0 || w.pp_last_layers != 0) && w.pp < 2)
    throw InputError("--pp-first-layers and --pp-last-layers need --pp of 2 or more");
  if (w.pp_first_layers < 0 || w.pp_last_layers < 0 || w.pp_first_layers > 100000 || w.pp_last_layers > 100000)
    throw InputError("--pp-first-layers and --pp-last-layers must be between 1 and 100,000");
  if (w.lora.rank < 0 || w.lora.rank > 65536) throw InputError("--lora-rank must be between 1 and 65536");
  if (w.offload_params != Offload::none && w.zero != 3)
    throw InputError("--offload-params needs --zero 3 (parameters are offloaded from their shards)");
  if (w.profile != Profile::pytorch && w.profile != Profile::none && w.profile != Profile::deepspeed)
    throw InputError("train --profile: expected pytorch, deepspeed or none (vllm and llama.cpp are serving engines)");
  if (w.profile == Profile::deepspeed && (w.tp > 1 || w.pp > 1 || w.cp > 1 || w.ep > 1))
    throw InputError("--profile deepspeed models ZeRO data parallelism (HF Trainer / Accelerate); --tp, --pp, --cp "
                     "and --ep are not modelled for it");
  if (w.profile == Profile::deepspeed && w.zero == 0)
    throw InputError("--profile deepspeed needs --zero 1, 2 or 3 (stage 0 is plain data parallelism)");
  if (!(w.deepspeed.reduce_bucket_size >= 1 && w.deepspeed.reduce_bucket_size <= 1e12) ||
      !(w.deepspeed.prefetch_bucket_size >= 0 && w.deepspeed.prefetch_bucket_size <= 1e12))
    throw InputError("--reduce-bucket-size and --prefetch-bucket-size must be between 1 and 1e12 elements");
  if (w.loss_chunks < 1 || w.loss_chunks > 65536) throw InputError("--loss chunked:N needs N between 1 and 65536");
  if (w.lora.rank == 0 && (!w.lora.targets.empty() || w.lora.qlora))
    throw InputError("--lora-targets and --qlora need --lora-rank");
}

// ---------------------------------------------------------------------------------------------------------------
// Element sizes implied by the precision recipe

struct PrecisionRecipe {
  double weight;       // bytes per stored parameter
  double grad;         // bytes per gradient element
  double master;       // fp32 master copy kept by the optimizer (0 when the weights are the master)
  double state;        // bytes per optimizer-state element
  double compute;      // matmul outputs / activations (c)
  double stream;       // residual stream and norm outputs (r): the parameter dtype under autocast
  bool autocast;       // torch.autocast: linear weights are cast to 16 bit once per forward and cached
};

inline PrecisionRecipe recipe_of(Precision p) {
  switch (p) {
    case Precision::fp32: return {4, 4, 0, 4, 4, 4, false};
    // Mixed precision as in the ZeRO paper §3.1: 16-bit weights and gradients, fp32 master + moments (K = 12).
    case Precision::bf16:
    case Precision::fp16: return {2, 2, 4, 4, 2, 2, false};
    // FP8 GEMMs over bf16 mixed precision (Transformer Engine default: fp8 copies made per step, 1 B/param).
    case Precision::fp8: return {2, 2, 4, 4, 2, 2, false};
    // HF Trainer --bf16: fp32 parameters, gradients and moments; autocast computes matmuls in 16 bit.
    case Precision::amp_bf16:
    case Precision::amp_fp16: return {4, 4, 0, 4, 2, 4, true};
    // model.to(bfloat16): everything, moments included, in 16 bit.
    case Precision::pure_bf16:
    case Precision::pure_fp16: return {2, 2, 0, 2, 2, 2, false};
  }
  return {4, 4, 0, 4, 4, 4, false};
}

}  // namespace gpuplan
