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
#include "profile.h"
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

namespace detail {

// Optimizer state elements kept for one rows×cols tensor family of `numel` elements.
inline double optimizer_state_elements(Optimizer o, double rows, double cols, double numel) {
  switch (o) {
    case Optimizer::adamw:
    case Optimizer::adamw_fused:
    case Optimizer::adam:
    case Optimizer::adamw_8bit: return 2.0 * numel;  // first and second moments (Kingma & Ba 2015, Alg. 1)
    case Optimizer::sgd: return 0.0;
    case Optimizer::sgd_momentum:
    case Optimizer::lion: return numel;  // one momentum buffer (Chen et al. 2023: Lion keeps only momentum)
    case Optimizer::adafactor:
      // Factored second moment: row and column statistics per matrix, full for vectors (Shazeer & Stern 2018).
      return cols > 1 ? rows + cols : numel;
  }
  return 0.0;
}

// bitsandbytes 8-bit AdamW: two uint8 moments + an fp32 absmax per 256-element block each, per parameter
// (bitsandbytes optimizer.py Optimizer2State, blocksize 256 since PR #1365).
inline constexpr double adamw_8bit_bytes_per_param = 2.0 + 8.0 / 256.0;

// Temporaries of the optimizer step per trainable parameter (PyTorch): master-weight recipes (DeepSpeed/Megatron)
// upcast the 16-bit gradients into an fp32 buffer (DeepSpeed's estimator: "4_grads_32bit") and step with fused
// kernels; torch's multi-tensor (foreach) AdamW makes one intermediate list the size of a moment (sqrt of
// exp_avg_sq; measured on H200, 8B: foreach − fused = 16.04 GB ≈ 2 B × 8.03B). Fused kernels and in-place
// foreach updates need none; Adafactor and Lion loop per tensor (a constant, not per parameter).
inline double step_temporaries_per_param(Optimizer o, double state_bytes, double master_bytes) {
  if (master_bytes > 0) return 4.0;
  return (o == Optimizer::adamw || o == Optimizer::adam) ? state_bytes : 0.0;
}

inline double lora_adapter_params(const ParamGroup& g, std::int64_t rank) {
  return double(rank) * double(g.in + g.out);  // A: r×in, B: out×r
}

// One GPU of one pipeline stage: its part of the model (parallel.h rank_model), its tokens (seq/cp), its shards.
inline TrainingEstimate estimate_stage(const ModelSpec& full, const TrainingWorkload& w, const PipelineStage& st) {
  const ModelSpec s = rank_model(full, w, st);
  const PrecisionRecipe pr = recipe_of(w.precision);
  const bool pytorch = w.profile == Profile::pytorch;
  const double tp = double(w.tp);
  const double sq = std::ceil(double(w.seq) / double(w.cp));  // context parallelism: each rank holds seq/cp tokens
  const double b = double(w.batch);
  const double T = b * sq;  // tokens per micro-batch on this rank
  const double N = double(w.dp());
  const bool sharded = N > 1;  // data-parallel ranks to shard or replicate over
  ParamInventory inv = param_inventory(s);
  if (!st.embedding) inv.embedding.clear();
  if (!st.head) inv.head.clear();
  for (auto& l : inv.per_layer)
    for (auto& g : l)
      if (g.expert) g.count /= w.ep;  // expert parallelism: experts/ep of each MoE layer live on this GPU
  const ParamCounts counts = count_params(full);
  double n_total = 0, n_expert = 0;  // parameters on this GPU (before ZeRO), of which routed-expert weights
  for (const auto* groups : {&inv.embedding, &inv.head})
    for (const auto& g : *groups) n_total += double(g.numel());
  for (const auto& l : inv.per_layer)
    for (const auto& g : l) (g.expert ? n_expert : n_total) += double(g.numel());
  n_total += n_expert;
  // ZeRO shards dense states over the dp ranks and expert states over the dp/ep ranks that hold the same experts
  // (Megatron's expert-data-parallel group): the share of a full replica one rank keeps.
  const double Ne = std::max(1.0, N / double(w.ep));
  auto zero_share = [&](double total, double expert) {
    return total > 0 ? ((total - expert) / N + expert / Ne) / total : 1.0;
  };

  TrainingEstimate est;
  est.shape.params = counts.total;
  est.shape.active_params = counts.active;

  // --- Trainable parameters and optimizer state elements ---
  double n_trainable = 0, n_lora = 0, state_elems = 0, largest_param = 0, n_trainable_expert = 0, state_expert = 0;
  const bool lora = w.lora.rank > 0;
  auto optimizer_elements = [&](double rows, double cols, double numel) {
    return optimizer_state_elements(w.optimizer, rows, cols, numel);
  };
  auto visit = [&](const std::vector<ParamGroup>& groups, bool in_layer) {
    for (const auto& g : groups) {
      const double numel = double(g.numel());
      largest_param = std::max(largest_param, double(g.out * g.in));
      if (lora) {
        if (in_layer && g.linear && !g.expert && detail::lora_targets_module(w.lora, g.module)) {
          const double adapter = lora_adapter_params(g, w.lora.rank);
          n_lora += adapter;
          state_elems += optimizer_elements(double(w.lora.rank), double(g.in), double(w.lora.rank * g.in)) +
                         optimizer_elements(double(g.out), double(w.lora.rank), double(g.out * w.lora.rank));
        }
      } else {
        const double states = double(g.count) * optimizer_elements(double(g.out), double(g.in), double(g.out * g.in));
        n_trainable += numel;
        state_elems += states;
        if (g.expert) { n_trainable_expert += numel; state_expert += states; }
      }
    }
  };
  visit(inv.embedding, false);
  for (const auto& layer : inv.per_layer) visit(layer, true);
  visit(inv.head, false);
  if (lora) n_trainable = n_lora;
  est.shape.trainable_on_gpu = Params(static_cast<std::int64_t>(std::llround(n_trainable)));

  // --- Bytes of weights, gradients, optimizer states ---
  // LoRA adapters are fp32 (PEFT casts adapters to fp32 by default: autocast_adapter_dtype=True), so are their
  // gradients and moments; the frozen base keeps the workload's weight dtype, or NF4 + double quantization for
  // QLoRA: 4 + 8/64 + 32/(64·256) = 4.127 bits (QLoRA paper §3) on the decoder linears.
  double base_weight_bytes = n_total * pr.weight;
  if (lora && w.lora.qlora) {
    double linear_numel = 0;
    for (const auto& l : inv.per_layer)
      for (const auto& g : l)
        if (g.linear) linear_numel += double(g.numel());
    base_weight_bytes = (n_total - linear_numel) * 2.0 + linear_numel * (4.0 + 8.0 / 64 + 32.0 / (64 * 256)) / 8.0;
  }
  const double adapter_bytes = lora ? n_lora * 4.0 : 0.0;
  const double grad_el = lora ? 4.0 : pr.grad;
  const double state_el = lora ? 4.0 : pr.state;
  const double master = lora ? 0.0 : pr.master;
  const double weights_bytes = base_weight_bytes + adapter_bytes;
  double grads_bytes = n_trainable * grad_el;
  double states_bytes = state_elems * state_el + n_trainable * master;
  if (w.optimizer == Optimizer::adamw_8bit) states_bytes = n_trainable * (adamw_8bit_bytes_per_param + master);

  // --- Sharding across data-parallel ranks (ZeRO paper §5; FSDP full_shard = 3, shard_grad_op = 2) ---
  const double train_share = zero_share(n_trainable, n_trainable_expert);
  const double state_share = w.optimizer == Optimizer::adamw_8bit ? train_share : zero_share(state_elems, state_expert);
  double ddp_buckets = 0;
  if (sharded) {
    if (w.zero >= 1) states_bytes *= state_share;
    if (w.zero >= 2) grads_bytes *= train_share;
    if (w.zero == 0 && pytorch) {
      // DDP: gradient buckets are a second copy of every trainable gradient, allocated at wrap time
      // (torch DistributedDataParallel, gradient_as_bucket_view=False).
      ddp_buckets = n_trainable * grad_el;
    }
  }
  // ZeRO-3 shards the parameters; under the pytorch profile stage 2 is FSDP2 shard_grad_op, which shards them at
  // rest too (and keeps them gathered between forward and backward, below).
  const double param_share = zero_share(n_total, n_expert);
  const double weights_sharded =
      (sharded && (w.zero == 3 || (w.zero == 2 && pytorch))) ? weights_bytes * param_share : weights_bytes;
  // FSDP2 keeps the unsharded parameters of the layer being computed and prefetches the next one
  // (reshard_after_forward=True); with reshard_after_forward=False (ZeRO-2 style) every layer stays gathered
  // between its forward and its backward.
  double max_layer_params = 0;
  for (const auto& l : inv.per_layer) {
    double n = 0;
    for (const auto& g : l) n += double(g.numel());
    max_layer_params = std::max(max_layer_params, n);
  }

  // --- Activations ---
  const detail::ActivationDtypes dt{pr.compute, pr.stream, pr.autocast};
  const detail::LayerActivationModel act(s, w, dt);
  if (w.cp > 1 && (sdpa_backend(s, w.attention, pr.compute) == AttentionKernel::eager ||
                   sdpa_backend(s, w.attention, pr.compute) == AttentionKernel::math))
    throw InputError("--cp needs a flash or memory-efficient attention kernel (ring attention); this workload "
                     "would run eager or math attention");
  // Megatron sequence parallelism splits the hidden-width tensors (norm inputs, residual stream, dropout masks —
  // replicated across the tp ranks under plain TP, Korthikanti et al. 2022 Table 2) along the sequence as well.
  // (The layer model is linear in the split widths: parallel.h doubled_split_widths.)
  const ModelSpec wide = doubled_split_widths(s);
  const detail::LayerActivationModel act_wide(wide, w, dt);
  const double sp_div = w.sp ? tp : 1.0;
  std::vector<double> layer_saved(static_cast<std::size_t>(s.layers));
  std::vector<double> layer_full(static_cast<std::size_t>(s.layers));  // without recomputation
  std::vector<std::vector<double>> layer_tensors(static_cast<std::size_t>(s.layers));  // per token, for the allocator
  std::vector<double> layer_scores(static_cast<std::size_t>(s.layers));
  double sum_per_token = 0;
  double layer_transient_max = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    auto a = act.layer(l);
    if (w.sp && a.per_token > 0) {
      const double split = act_wide.layer(l).per_token - a.per_token;
      const double scaled = (a.per_token - split) / tp + split;
      for (double& x : a.tensors) x *= scaled / a.per_token;
      a.per_token = scaled;
    }
    // Eager and math attention materialise b·heads·s·s scores per layer (HF eager computes the full matrix and
    // masks it, also for sliding-window layers).
    const double scores = a.score_element * b * double(s.heads) * sq * sq;
    const double full = a.per_token * T + scores;
    double saved = full;
    if (w.recompute == Recompute::full) {
      saved = pr.stream * double(s.hidden) * T / sp_div;  // checkpoint = the layer input (HF non-reentrant, per layer)
    } else if (w.recompute == Recompute::selective) {
      saved = a.per_token * T;  // attention core recomputed: the s² terms go (Korthikanti et al. 2022 §5)
    }
    layer_saved[static_cast<std::size_t>(l)] = saved;
    layer_full[static_cast<std::size_t>(l)] = full;
    layer_tensors[static_cast<std::size_t>(l)] = a.tensors;
    layer_scores[static_cast<std::size_t>(l)] = scores;
    sum_per_token += a.per_token;
    // While a layer runs forward its pre-softmax scores also exist (16-bit, freed after softmax).
    if (a.score_element > 0) layer_transient_max = std::max(layer_transient_max, pr.compute * b * double(s.heads) * sq * sq);
  }
  est.shape.activation_bytes_per_token_per_layer = Bytes(sum_per_token / double(s.layers));

  const double h = double(s.hidden), V = double(s.vocab);
  // Outside the layers: int64 input ids and labels (8 B each) and the loss's shifted/padded label copies
  // (HF ForCausalLMLoss pads and shifts labels: two more int64 per token).
  // Under pipeline parallelism the ids live on the first stage, the labels on the last; later stages keep the
  // activation received from the previous stage as their input.
  double outside = (st.embedding ? 8.0 : pr.stream * h / sp_div) * T + (st.head ? 24.0 * T : 0.0);
  if (st.head) outside += act.final_norm() * T / sp_div;  // final norm before lm_head
  if (s.learned_positions > 0 && s.dropout > 0) outside += 1.0 * h * T;  // embedding dropout mask (embd_pdrop)

  // --- Logits and loss (HF ForCausalLMLoss: logits.float(), then cross_entropy = log_softmax + nll) ---
  const double cl = pr.compute;  // lm_head output dtype
  // Forward at the loss: logits (kept in outputs.logits), their fp32 upcast (skipped when already fp32)
  // and the saved log-softmax output (fp32).
  // Gemma 2 soft-caps the logits (cap · tanh(logits / cap)): tanh's output is kept for backward.
  // (Vocab-parallel under TP: V is this rank's share.)
  const double softcap = st.head && s.final_logit_softcap > 0 ? cl * V * T : 0.0;
  double ce_forward = st.head ? (cl + (cl < 4 ? 4.0 : 0.0) + 4.0) * V * T + softcap : 0.0;
  // Backward through the loss: logits, two fp32 [tokens, V] buffers (nll grad / log-softmax grad) and, for 16-bit
  // logits, the grad cast back to the logits dtype. Measured on H200: 12 B·V per token for bf16 and fp32 logits.
  double ce_backward = st.head ? (cl + 8.0 + (cl < 4 ? cl : 0.0)) * V * T + softcap : 0.0;
  // The vocabulary-parallel loss (torch loss_parallel; Megatron's vocab-parallel cross-entropy works alike) keeps
  // one more fp32 [tokens, V/tp] tensor, the max-shifted logits, through forward and backward (2 × H200, d1 set).
  const double vocab_parallel = st.head && w.tp > 1 ? 4.0 * V * T : 0.0;
  ce_forward += vocab_parallel;
  ce_backward += vocab_parallel;
  // torch.distributed.pipelining keeps every micro-batch's last-stage output (the logits) until the step ends, to
  // merge them for Schedule.step's return value: the earlier micro-batches' logits sit beside the current loss
  // (2 × H200, d1 set: m × logits still allocated after the optimizer step).
  const double earlier_outputs = st.head && w.pp > 1 && pytorch ? double(w.grad_accum - 1) * cl * V * T : 0.0;
  const double all_outputs = earlier_outputs > 0 ? earlier_outputs + cl * V * T : 0.0;

  // --- Autocast weight cache: 16-bit copies of every linear weight, made in forward, released as backward
  // consumes them (torch.autocast caches casts of leaf tensors that require grad).
  double linear_params = 0;
  for (const auto& l : inv.per_layer)
    for (const auto& g : l)
      if (g.linear) linear_params += double(g.numel());
  double head_linear = s.tied_embeddings ? V * h : 0;  // tied lm_head casts the embedding matrix
  for (const auto& g : inv.head)
    if (g.linear) head_linear += double(g.numel());
  const double cache_scale = (w.zero == 3 && sharded) ? param_share : 1.0;
  // (Frozen LoRA base weights are not cached, but each linear keeps its cast weight for the input gradient:
  // the same bytes.)
  const double autocast_cache = pr.autocast ? (linear_params + head_linear) * 2.0 * cache_scale : 0.0;
  // Under full recomputation the checkpointed layers save nothing, so their casts die with the autocast context
  // at the end of forward; only lm_head (outside the checkpoints) keeps its cast for backward.
  const double backward_cache = w.recompute == Recompute::full ? (pr.autocast ? head_linear * 2.0 * cache_scale : 0.0)
                                                               : autocast_cache;

  // --- Per-layer gradient bytes (gradients appear layer by layer in backward) ---
  std::vector<double> layer_grad(static_cast<std::size_t>(s.layers), 0.0);
  double emb_grad = 0, head_grad = 0;
  if (!lora) {
    for (std::size_t l = 0; l < inv.per_layer.size(); ++l)
      for (const auto& g : inv.per_layer[l]) layer_grad[l] += double(g.numel()) * grad_el;
    for (const auto& g : inv.embedding) emb_grad += double(g.numel()) * grad_el;
    for (const auto& g : inv.head) head_grad += double(g.numel()) * grad_el;
  } else {
    for (std::size_t l = 0; l < inv.per_layer.size(); ++l)
      for (const auto& g : inv.per_layer[l])
        if (g.linear && !g.expert && detail::lora_targets_module(w.lora, g.module))
          layer_grad[l] += double(w.lora.rank) * double(g.in + g.out) * 4.0;
  }
  const double grad_scale = (sharded && w.zero >= 2) ? train_share : 1.0;
  for (auto& g : layer_grad) g *= grad_scale;
  emb_grad *= grad_scale;
  head_grad *= grad_scale;
  if (s.tied_embeddings && !lora) { head_grad += emb_grad; emb_grad = 0; }  // the shared matrix's grad appears at lm_head

  // --- Framework constants ---
  const double workspace = pytorch ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;

  // --- Optimizer step temporaries ---
  double step_temp = 0;
  if (pytorch) {
    const double trainable_local = n_trainable * ((sharded && w.zero >= 1) ? train_share : 1.0);
    step_temp = trainable_local * step_temporaries_per_param(w.optimizer, state_el, master);
    if (master == 0 && (w.optimizer == Optimizer::adafactor || w.optimizer == Optimizer::lion))
      step_temp = 3.0 * largest_param * 4.0;  // per-tensor loop: fp32 update temporaries of one tensor
  }

  // --- Offload (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021) ---
  // Optimizer offload keeps the moments and fp32 master weights in host memory (or NVMe) and runs the update on
  // the CPU; the host also holds an fp32 copy of the gradient shard to update from. Parameter offload (ZeRO-3)
  // keeps the parameter shards there too; the GPU holds only the layers being computed (gathered).
  double offloaded_host = 0, offloaded_nvme = 0;
  double gpu_states = states_bytes, gpu_params = weights_sharded, gpu_step_temp = step_temp;
  if (w.offload_optimizer != Offload::none) {
    const double host = states_bytes + grads_bytes / grad_el * 4.0;
    (w.offload_optimizer == Offload::cpu ? offloaded_host : offloaded_nvme) += host;
    gpu_states = 0;
    gpu_step_temp = 0;
  }
  if (w.offload_params != Offload::none) {
    (w.offload_params == Offload::cpu ? offloaded_host : offloaded_nvme) += weights_sharded;
    gpu_params = 0;
  }
  est.host_memory = Bytes(offloaded_host);
  est.nvme = Bytes(offloaded_nvme);

  // --- The timeline ---
  const double P = gpu_params;
  const double S = gpu_states;
  const double G_full = grads_bytes;
  const double accum_grads = w.grad_accum > 1 ? G_full : 0.0;  // later micro-batches find the grads allocated
  std::vector<Moment> moments;
  auto moment = [&](const char* phase, std::string what, double weights, double grads, double acts, double logits,
                    double over) {
    MemoryComponents m;
    m.weights = Bytes(weights);
    m.gradients = Bytes(grads);
    m.optimizer_states = Bytes(S);
    m.activations = Bytes(acts);
    m.logits = Bytes(logits);
    m.overhead = Bytes(over);
    moments.push_back(Moment{phase, std::move(what), m});
  };
  // FSDP2 all-gathers into a flat buffer and copies out into the unsharded parameters: two copies of each gathered
  // layer while it is in use. Full shard holds the current and the prefetched layer.
  const double fsdp_layer = (sharded && w.zero == 3) ? 2.0 * 2.0 * max_layer_params * pr.weight : 0.0;
  const double fsdp_all = (sharded && w.zero == 2 && pytorch) ? 2.0 * (weights_bytes - P) : 0.0;
  const double gathered = fsdp_layer + fsdp_all;
  const double base_over = workspace + ddp_buckets;
  double saved_all = 0;
  for (double x : layer_saved) saved_all += x;
  // Pipeline: the saved activations of the other micro-batches in flight on this stage (1F1B).
  const double in_flight = (st.in_flight - 1) * saved_all;

  // Forward: inside the last layer (its full activations exist even under recomputation), then at the loss.
  {
    const double before_last = saved_all - layer_saved.back();
    moment("forward", "last decoder layer", P + autocast_cache + gathered, accum_grads,
           in_flight + before_last + layer_full.back() + layer_transient_max + outside, earlier_outputs, base_over);
    if (st.head)
      moment("forward", "loss (log-softmax)", P + autocast_cache + gathered, accum_grads, in_flight + saved_all + outside,
             ce_forward + earlier_outputs, base_over);
  }
  // Backward: through the loss, then layer by layer from the top; gradients accumulate as activations go.
  {
    if (st.head)
      moment("backward", "loss", P + backward_cache + gathered, accum_grads, in_flight + saved_all + outside,
             ce_backward + earlier_outputs, base_over);
    double grads = accum_grads > 0 ? accum_grads : head_grad;
    double acts = in_flight + saved_all;
    double cache = backward_cache;
    for (std::int64_t l = s.layers - 1; l >= 0; --l) {
      const auto i = static_cast<std::size_t>(l);
      // Recomputed layers rebuild their full activations; the layer's weight grads appear during its backward.
      const double working = layer_full[i];
      const double new_grads = accum_grads > 0 ? 0.0 : layer_grad[i];
      moment("backward", "layer " + std::to_string(l), P + cache + gathered, grads + new_grads,
             acts - layer_saved[i] + working, all_outputs, base_over);
      acts -= layer_saved[i];
      grads += new_grads;
      cache -= backward_cache / double(s.layers + 1);
    }
    // Embedding backward produces a dense V×h gradient; with tied embeddings AccumulateGrad then adds it to the
    // grad lm_head already made, out of place: the old grad, the new one and their sum exist for a moment
    // (measured: fp32 1B tied, b2 s512: backward peak = weights + momentum + grads + 2 × V·h·4 B).
    const double emb_dense = s.tied_embeddings && !lora ? 2.0 * V * h * grad_el * grad_scale : 0.0;
    moment("backward", "embeddings", P + gathered, (accum_grads > 0 ? accum_grads : grads + emb_grad) + emb_dense, 0, 0,
           base_over);
    // torch pipelining's Schedule.step ends by concatenating the last stage's outputs (merge_chunks) while the
    // per-micro-batch outputs still exist: m logits twice (2 × H200 allocator snapshot: a segment of exactly m
    // logits beside the kept ones).
    if (all_outputs > 0)
      moment("backward", "outputs merged", P + gathered, accum_grads > 0 ? accum_grads : grads + emb_grad,
             0, 2 * all_outputs, base_over);
  }
  // Optimizer step.
  moment("optimizer", "step", P, G_full, 0, all_outputs, base_over + gpu_step_temp);


  // --- The caching allocator's reserve: replay three steps' allocations in the order PyTorch makes them ---
  std::optional<Bytes> reserve;
  if (pytorch) {
    CachingAllocatorModel A;
    using H = CachingAllocatorModel::Handle;
    const double cl_ = pr.compute;
    auto trainable_group = [&](const ParamGroup& g, bool in_layer) {
      return !lora ? true : (in_layer && g.linear && !g.expert && detail::lora_targets_module(w.lora, g.module));
    };
    const double resident = gpu_params > 0 ? ((sharded && w.zero >= 2) ? param_share : 1.0) : 0.0;
    for (const auto* groups : {&inv.embedding, &inv.head})
      for (const auto& g : *groups) A.malloc(double(g.numel()) * pr.weight * resident);
    for (const auto& l : inv.per_layer)
      for (const auto& g : l) A.malloc(double(g.numel()) * pr.weight * resident);
    if (lora) A.malloc(adapter_bytes);
    // DDP (find_unused_parameters=False) starts with one bucket holding every gradient, and after the first
    // iteration rebuilds its buckets in gradient-ready order, 25 MB each (torch DistributedDataParallel:
    // bucket_size_limits [sys.maxsize] before the rebuild): the flat first bucket is freed and stays cached as one
    // segment (allocator snapshot on 2 × H200: a free block of exactly one gradient copy).
    H first_bucket = ddp_buckets > 0 ? A.malloc(ddp_buckets) : CachingAllocatorModel::none;
    A.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
    A.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
    std::vector<H> states, grads;
    std::vector<double> grad_bytes;  // parallel to grads
    // FSDP2 reduce-scatters on a stream of its own, and the caching allocator keeps each stream's blocks apart:
    // the reduce-scatter output — the sharded gradient — lives in the reduce-scatter stream's pool, out of reach of
    // the activations freed on the default stream (allocator snapshot on 2 × H200: one block per layer's gradient
    // shard in a pool of its own). With CPU offload the shard goes to the host at once.
    const bool fsdp = pytorch && sharded && w.zero >= 2;
    constexpr int reduce_scatter_stream = 1;
    auto add_grad = [&](double bytes) {
      const H g = A.malloc(bytes, fsdp ? reduce_scatter_stream : 0);
      if (fsdp && w.offload_optimizer != Offload::none) {
        A.free(g);
        return;
      }
      grads.push_back(g);
      grad_bytes.push_back(bytes);
    };
    const double gathered_layer = max_layer_params * pr.weight;
    // FSDP2's all-gather buffer and the unsharded parameters copied out of it, per gathered layer. (Its all-gather
    // stream pool holds one layer's buffer, reused layer after layer; modelled on the default stream, where
    // the replay matches the measured reserve better.)
    std::vector<std::pair<H, H>> gathered_h;
    auto gather = [&] { gathered_h.push_back({A.malloc(gathered_layer), A.malloc(gathered_layer)}); };
    auto release = [&] {
      A.free(gathered_h.back().first);
      A.free(gathered_h.back().second);
      gathered_h.pop_back();
    };
    for (int step = 0; step < 3; ++step) {
      if (step == 1 && ddp_buckets > 0) {
        const double bucket = 25e6;
        for (double left = ddp_buckets; left > 0; left -= bucket) A.malloc(std::min(bucket, left));
        A.free(first_bucket);
      }
      // Forward.
      std::vector<std::vector<H>> saved(static_cast<std::size_t>(s.layers));
      std::vector<std::vector<H>> casts(static_cast<std::size_t>(s.layers));
      const H others = A.malloc(in_flight);  // earlier micro-batches in flight on this pipeline stage
      H resid = A.malloc(pr.stream * h * T / sp_div);  // embedding output (or the activation received)
      for (std::int64_t l = 0; l < s.layers; ++l) {
        const auto i = static_cast<std::size_t>(l);
        if (sharded && w.zero >= 2) gather();
        if (pr.autocast)
          for (const auto& g : inv.per_layer[i]) if (g.linear) casts[i].push_back(A.malloc(double(g.numel()) * 2.0));
        H ckpt = w.recompute == Recompute::full ? A.malloc(pr.stream * h * T / sp_div) : CachingAllocatorModel::none;
        for (double t : layer_tensors[i]) saved[i].push_back(A.malloc(t * T));
        if (layer_scores[i] > 0) {
          const H pre = A.malloc(pr.compute * b * double(s.heads) * sq * sq);
          saved[i].push_back(A.malloc(layer_scores[i]));
          A.free(pre);
        }
        // The residual stream after the layer: a tensor of its own when 16-bit (the norms keep fp32 copies),
        // otherwise it is the next norm's saved input, already counted.
        if (pr.stream < 4) {
          const H next = A.malloc(pr.stream * h * T / sp_div);
          A.free(resid);
          resid = next;
        }
        if (w.recompute == Recompute::full) {
          for (H x : saved[i]) A.free(x);
          saved[i] = {ckpt};
          if (pr.autocast) { for (H x : casts[i]) A.free(x); casts[i].clear(); }
        }
        if (sharded && w.zero == 3) release();
      }
      // Loss (on the last pipeline stage; VT = 0 elsewhere allocates nothing).
      const double VT = st.head ? V * T : 0.0;
      // One micro-batch through the loss and back: logits, soft-capping, the fp32 upcast and log-softmax, the two
      // fp32 gradient buffers, the gradient cast back to the logits' dtype (returned, freed after lm_head's
      // backward). Only the loss is kept after forward (HF Trainer) — except under torch pipelining, which keeps
      // every micro-batch's logits until the step ends: the earlier micro-batches' passes are replayed too, so
      // their logits sit between the freed fp32 buffers as they do on the GPU.
      std::vector<H> kept_logits;
      auto loss_pass = [&] {
        H logits = A.malloc(cl_ * VT);
        H cap = s.final_logit_softcap > 0 ? A.malloc(cl_ * VT) : CachingAllocatorModel::none;
        H up = cl_ < 4 ? A.malloc(4.0 * VT) : CachingAllocatorModel::none;
        H lsm = A.malloc(4.0 * VT);
        H shifted = A.malloc(vocab_parallel);
        A.free(up);
        if (earlier_outputs > 0) kept_logits.push_back(logits);
        else A.free(logits);
        H g1 = A.malloc(4.0 * VT);
        H g2 = A.malloc(4.0 * VT);
        A.free(g1);
        A.free(lsm);
        H g3 = cl_ < 4 ? A.malloc(cl_ * VT) : CachingAllocatorModel::none;
        A.free(g2);
        A.free(cap);
        A.free(shifted);
        return g3;
      };
      if (earlier_outputs > 0)
        for (std::int64_t k = 1; k < w.grad_accum; ++k) A.free(loss_pass());
      std::vector<H> head;
      for (int k = 0; k < 2; ++k) head.push_back(A.malloc(st.head ? act.final_norm() * T / sp_div / 2 : 0.0));
      H head_cast = pr.autocast ? A.malloc(head_linear * 2.0) : CachingAllocatorModel::none;
      // Backward through the loss and lm_head (or the gradient received from the next stage).
      H g3 = loss_pass();
      H dh = A.malloc(pr.compute * h * T / sp_div);
      if (!lora) for (const auto& g : inv.head) if (trainable_group(g, false)) add_grad(double(g.numel()) * grad_el * grad_scale);
      std::optional<std::size_t> tied_grad;  // the shared matrix's gradient, made at lm_head
      if (!lora && s.tied_embeddings) {
        const std::size_t before = grads.size();
        add_grad(V * h * grad_el * grad_scale);
        if (grads.size() > before) tied_grad = before;
      }
      A.free(g3);
      A.free(head_cast);
      for (H x : head) A.free(x);
      for (std::int64_t l = s.layers - 1; l >= 0; --l) {
        const auto i = static_cast<std::size_t>(l);
        if (sharded && w.zero == 3) gather();
        std::vector<H> re;
        if (w.recompute == Recompute::full) {
          if (pr.autocast) for (const auto& g : inv.per_layer[i]) if (g.linear) casts[i].push_back(A.malloc(double(g.numel()) * 2.0));
          for (double t : layer_tensors[i]) re.push_back(A.malloc(t * T));
          if (layer_scores[i] > 0) re.push_back(A.malloc(layer_scores[i]));
        }
        // Gradients of the layer's activations (FFN width and hidden width), then its weight gradients.
        const double ffn_w = double(s.is_moe_layer(l) ? s.moe.intermediate * s.moe.experts_per_token : s.intermediate);
        H t1 = A.malloc(pr.compute * ffn_w * T), t2 = A.malloc(pr.compute * ffn_w * T);
        H t3 = A.malloc(pr.compute * h * T / sp_div);
        for (const auto& g : inv.per_layer[i])
          if (trainable_group(g, true)) {
            const double n = lora ? double(w.lora.rank) * double(g.in + g.out) : double(g.numel());
            add_grad(n * (lora ? 4.0 : grad_el) * grad_scale);
          }
        A.free(t1);
        A.free(t2);
        for (H x : saved[i]) A.free(x);
        for (H x : re) A.free(x);
        for (H x : casts[i]) A.free(x);
        A.free(dh);
        dh = t3;
        if (!gathered_h.empty()) release();
      }
      if (!lora && st.embedding) {
        H dense = A.malloc(V * h * grad_el * grad_scale, fsdp ? reduce_scatter_stream : 0);  // a dense V×h gradient
        if (s.tied_embeddings) {
          H sum = A.malloc(V * h * grad_el * grad_scale, fsdp ? reduce_scatter_stream : 0);  // AccumulateGrad: old + new
          A.free(dense);
          if (tied_grad) {
            A.free(grads[*tied_grad]);
            grads[*tied_grad] = sum;
          } else {
            A.free(sum);  // offloaded: the sum goes to the host too
          }
        } else {
          grads.push_back(dense);
          grad_bytes.push_back(V * h * grad_el * grad_scale);
        }
      }
      A.free(dh);
      A.free(resid);
      A.free(others);
      A.free(A.malloc(all_outputs));  // the merged outputs, returned by Schedule.step and dropped
      // Optimizer: moments appear at the first step; the foreach implementation then makes one temporary per
      // parameter tensor; zero_grad(set_to_none=True) frees the gradients.
      if (step == 0 && gpu_states > 0) {
        const double shard = (sharded && w.zero >= 1) ? state_share : 1.0;
        auto add_states = [&](const ParamGroup& g, bool in_layer) {
          if (!trainable_group(g, in_layer)) return;
          const double n = lora ? double(w.lora.rank) * double(g.in + g.out) : double(g.numel());
          const double el = optimizer_elements(double(g.out), double(g.in), double(g.out * g.in)) * double(lora ? 1 : g.count);
          const double per = (lora ? 2.0 * n : el) * state_el * shard;
          if (per > 0) { states.push_back(A.malloc(per / 2)); states.push_back(A.malloc(per / 2)); }
          if (master > 0) states.push_back(A.malloc(n * master * shard));
        };
        for (const auto& g : inv.embedding) add_states(g, false);
        for (const auto& l : inv.per_layer) for (const auto& g : l) add_states(g, true);
        for (const auto& g : inv.head) add_states(g, false);
      }
      std::vector<H> temps;
      double total_grad = 0;
      for (double x : grad_bytes) total_grad += x;
      if (gpu_step_temp > 0 && total_grad > 0)
        for (double x : grad_bytes) temps.push_back(A.malloc(gpu_step_temp * x / total_grad));  // one per parameter
      for (H x : temps) A.free(x);
      for (H x : grads) A.free(x);
      grads.clear();
      grad_bytes.clear();
      for (H x : kept_logits) A.free(x);  // the schedule drops them when the next step starts
    }
    reserve = Bytes(std::max(0.0, A.peak_reserved() - A.peak_allocated()));
  }

  const Bytes context = pytorch ? PytorchProfile::cuda_context + (w.gpus > 1 ? PytorchProfile::nccl_buffers : Bytes(0))
                                : Bytes(0);
  est.memory = summarize(std::move(moments), w.profile, context, reserve);

  // What the estimate rests on, in words.
  auto& as = est.assumptions;
  if (pytorch)
    as.push_back("profile pytorch: PyTorch 2.11 eager + HF transformers 5.x module code, caching allocator, CUDA 13 "
                 "context measured on an H200 (" + std::to_string(std::llround(context.in(unit::bytes) / 1e6)) + " MB)");
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
  as.push_back("loss: HF ForCausalLMLoss over full-vocabulary logits (fp32 upcast, log-softmax kept for backward); "
               "only the loss is kept after forward (HF Trainer)");
  if (pytorch) as.push_back("allocator reserve: three steps replayed through a model of PyTorch's caching allocator");
  if (s.model_type == "derived")
    as.push_back("model shape derived from the parameter count (Llama-2-style: head_dim 128, hidden/layers ≈ 128, "
                 "SwiGLU 8/3·h, vocab 32000, untied)");
  if (sharded)
    as.push_back(w.zero == 0 ? "data parallel: DDP with gradient buckets (a second gradient copy), NCCL buffers"
                 : w.zero == 3 ? "ZeRO-3 / FSDP2 full shard: current and prefetched layer gathered"
                 : w.zero == 2 ? "ZeRO-2 / FSDP2 shard_grad_op: parameters stay gathered between forward and backward"
                               : "ZeRO-1: optimizer states sharded");
  return est;
}

}  // namespace detail

// Trainable parameters of the whole model: all of them, or the LoRA adapters on the targeted decoder linears.
inline Params trainable_params(const ModelSpec& s, const LoraSpec& lora) {
  if (lora.rank == 0) return count_params(s).total;
  double n = 0;
  for (std::int64_t l = 0; l < s.layers; ++l)
    for (const auto& g : layer_params(s, l))
      if (g.linear && !g.expert && detail::lora_targets_module(lora, g.module)) n += detail::lora_adapter_params(g, lora.rank);
  return Params(static_cast<std::int64_t>(std::llround(n)));
}

// Per-GPU memory of a training step on the most-loaded GPU. Each pipeline stage worth checking is estimated and
// the largest peak is reported: under 1F1B usually the first stage (most micro-batches in flight), unless the last
// stage's logits and loss outweigh them.
inline TrainingEstimate estimate_training_memory(const ModelSpec& s, const TrainingWorkload& w) {
  validate(s);
  validate(w);
  if (w.vpp > 1 && w.grad_accum % w.pp != 0)
    throw InputError("the interleaved schedule (--vpp) needs --grad-accum (micro-batches per step) to be a multiple of "
                     "--pp (Megatron-LM)");
  if (w.vpp > 1 && s.layers % (w.pp * w.vpp) != 0)
    throw InputError("the interleaved schedule needs the model's " + std::to_string(s.layers) +
                     " layers to be a multiple of pp × vpp (" + std::to_string(w.pp * w.vpp) + ")");
  const auto stages = pipeline_stages(s.layers, w);
  std::optional<TrainingEstimate> best;
  for (const auto& st : stages) {
    TrainingEstimate e = detail::estimate_stage(s, w, st);
    e.stage = st;
    if (!best || e.memory.total > best->memory.total) best = std::move(e);
  }
  TrainingEstimate est = std::move(*best);
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
