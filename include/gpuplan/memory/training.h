// Per-GPU memory of a training step: what is live at each moment of forward, backward and the optimizer step,
// and the peak among those moments (not a plain sum of everything).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../enum_table.h"
#include "../error.h"
#include "../model.h"
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
  Params trainable{0};
  Bytes activation_bytes_per_token_per_layer{0};  // average over layers, excluding s² terms
};

struct TrainingEstimate {
  TrainingShape shape;
  MemoryEstimate memory;
  Bytes host_memory{0};  // CPU RAM for offloaded optimizer states / parameters (per GPU's share)
  Bytes nvme{0};         // NVMe for ZeRO-Infinity offload (per GPU's share)
  std::vector<std::string> assumptions;
};


// ---------------------------------------------------------------------------------------------------------------

inline TrainingEstimate estimate_training_memory(const ModelSpec& s, const TrainingWorkload& w) {
  validate(s);
  validate(w);
  const PrecisionRecipe pr = recipe_of(w.precision);
  const bool pytorch = w.profile == Profile::pytorch;
  const double T = double(w.batch) * double(w.seq);  // tokens per micro-batch
  const double b = double(w.batch), sq = double(w.seq);
  const double N = double(w.gpus);
  const ParamInventory inv = param_inventory(s);
  const ParamCounts counts = count_params(s);
  const double n_total = double(counts.total.in(unit::params));

  TrainingEstimate est;
  est.shape.params = counts.total;
  est.shape.active_params = counts.active;

  // --- Trainable parameters and optimizer state elements ---
  double n_trainable = 0, n_lora = 0, state_elems = 0, largest_param = 0;
  const bool lora = w.lora.rank > 0;
  auto optimizer_elements = [&](double rows, double cols, double numel) {
    switch (w.optimizer) {
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
  };
  auto visit = [&](const std::vector<ParamGroup>& groups, bool in_layer) {
    for (const auto& g : groups) {
      const double numel = double(g.numel());
      largest_param = std::max(largest_param, double(g.out * g.in));
      if (lora) {
        if (in_layer && g.linear && !g.expert && detail::lora_targets_module(w.lora, g.module)) {
          const double adapter = double(w.lora.rank) * double(g.in + g.out);  // A: r×in, B: out×r
          n_lora += adapter;
          state_elems += optimizer_elements(double(w.lora.rank), double(g.in), double(w.lora.rank * g.in)) +
                         optimizer_elements(double(g.out), double(w.lora.rank), double(g.out * w.lora.rank));
        }
      } else {
        n_trainable += numel;
        state_elems += double(g.count) * optimizer_elements(double(g.out), double(g.in), double(g.out * g.in));
      }
    }
  };
  visit(inv.embedding, false);
  for (const auto& layer : inv.per_layer) visit(layer, true);
  visit(inv.head, false);
  if (lora) n_trainable = n_lora;
  est.shape.trainable = Params(static_cast<std::int64_t>(std::llround(n_trainable)));

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
  if (w.optimizer == Optimizer::adamw_8bit) {
    // bitsandbytes 8-bit AdamW: two uint8 moments + an fp32 absmax per 256-element block each
    // (bitsandbytes optimizer.py Optimizer2State, blocksize 256 since PR #1365).
    states_bytes = n_trainable * (2.0 + 8.0 / 256.0) + n_trainable * master;
  }

  // --- Sharding across data-parallel ranks (ZeRO paper §5; FSDP full_shard = 3, shard_grad_op = 2) ---
  double ddp_buckets = 0;
  if (w.gpus > 1) {
    if (w.zero >= 1) states_bytes /= N;
    if (w.zero >= 2) grads_bytes /= N;
    if (w.zero == 0 && pytorch) {
      // DDP: gradient buckets are a second copy of every trainable gradient, allocated at wrap time
      // (torch DistributedDataParallel, gradient_as_bucket_view=False).
      ddp_buckets = n_trainable * grad_el;
    }
  }
  // ZeRO-3 shards the parameters; under the pytorch profile stage 2 is FSDP2 shard_grad_op, which shards them at
  // rest too (and keeps them gathered between forward and backward, below).
  const double weights_sharded = (w.gpus > 1 && (w.zero == 3 || (w.zero == 2 && pytorch))) ? weights_bytes / N : weights_bytes;
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
  std::vector<double> layer_saved(static_cast<std::size_t>(s.layers));
  std::vector<double> layer_full(static_cast<std::size_t>(s.layers));  // without recomputation
  std::vector<std::vector<double>> layer_tensors(static_cast<std::size_t>(s.layers));  // per token, for the allocator
  std::vector<double> layer_scores(static_cast<std::size_t>(s.layers));
  double sum_per_token = 0;
  double layer_transient_max = 0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const auto a = act.layer(l);
    // Eager and math attention materialise b·heads·s·s scores per layer (HF eager computes the full matrix and
    // masks it, also for sliding-window layers).
    const double scores = a.score_element * b * double(s.heads) * sq * sq;
    const double full = a.per_token * T + scores;
    double saved = full;
    if (w.recompute == Recompute::full) {
      saved = pr.stream * double(s.hidden) * T;  // checkpoint = the layer input (HF non-reentrant, per layer)
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
  double outside = 32.0 * T;
  outside += act.final_norm() * T;  // final norm before lm_head
  if (s.learned_positions > 0 && s.dropout > 0) outside += 1.0 * h * T;  // embedding dropout mask (embd_pdrop)

  // --- Logits and loss (HF ForCausalLMLoss: logits.float(), then cross_entropy = log_softmax + nll) ---
  const double cl = pr.compute;  // lm_head output dtype
  // Forward at the loss: logits (kept in outputs.logits), their fp32 upcast (skipped when already fp32)
  // and the saved log-softmax output (fp32).
  // Gemma 2 soft-caps the logits (cap · tanh(logits / cap)): tanh's output is kept for backward.
  const double softcap = s.final_logit_softcap > 0 ? cl * V * T : 0.0;
  const double ce_forward = (cl + (cl < 4 ? 4.0 : 0.0) + 4.0) * V * T + softcap;
  // Backward through the loss: logits, two fp32 [tokens, V] buffers (nll grad / log-softmax grad) and, for 16-bit
  // logits, the grad cast back to the logits dtype. Measured on H200: 12 B·V per token for bf16 and fp32 logits.
  const double ce_backward = (cl + 8.0 + (cl < 4 ? cl : 0.0)) * V * T + softcap;

  // --- Autocast weight cache: 16-bit copies of every linear weight, made in forward, released as backward
  // consumes them (torch.autocast caches casts of leaf tensors that require grad).
  double linear_params = 0;
  for (const auto& l : inv.per_layer)
    for (const auto& g : l)
      if (g.linear) linear_params += double(g.numel());
  double head_linear = s.tied_embeddings ? V * h : 0;  // tied lm_head casts the embedding matrix
  for (const auto& g : inv.head)
    if (g.linear) head_linear += double(g.numel());
  const double cache_scale = (w.zero == 3 && w.gpus > 1) ? 1.0 / N : 1.0;
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
  const double grad_scale = (w.gpus > 1 && w.zero >= 2) ? 1.0 / N : 1.0;
  for (auto& g : layer_grad) g *= grad_scale;
  emb_grad *= grad_scale;
  head_grad *= grad_scale;
  if (s.tied_embeddings && !lora) { head_grad += emb_grad; emb_grad = 0; }  // the shared matrix's grad appears at lm_head

  // --- Framework constants ---
  const double workspace = pytorch ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;

  // --- Optimizer step temporaries ---
  double step_temp = 0;
  if (pytorch) {
    const double trainable_local = n_trainable * ((w.gpus > 1 && w.zero >= 1) ? 1.0 / N : 1.0);
    switch (master > 0 ? Optimizer::adamw_fused : w.optimizer) {  // master-weight recipes step with fused kernels
      case Optimizer::adamw:
      case Optimizer::adam:
        // torch multi-tensor (foreach) AdamW: one intermediate list the size of a moment (sqrt of exp_avg_sq),
        // measured as 1× parameter-state bytes on H200 (8B: foreach − fused = 16.04 GB ≈ 2 B × 8.03B).
        step_temp = trainable_local * state_el;
        break;
      case Optimizer::adafactor:
      case Optimizer::lion:
        step_temp = 3.0 * largest_param * 4.0;  // per-tensor loop: fp32 update temporaries of one tensor
        break;
      default: step_temp = 0;  // fused kernels and in-place foreach updates (SGD momentum) need no copy
    }
    // Master-weight recipes (DeepSpeed/Megatron) upcast the 16-bit gradients into an fp32 buffer for the update
    // (DeepSpeed's estimator: "4_grads_32bit").
    if (master > 0) step_temp += trainable_local * 4.0;
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
  const double fsdp_layer = (w.gpus > 1 && w.zero == 3) ? 2.0 * 2.0 * max_layer_params * pr.weight : 0.0;
  const double fsdp_all = (w.gpus > 1 && w.zero == 2 && pytorch) ? 2.0 * (weights_bytes - P) : 0.0;
  const double gathered = fsdp_layer + fsdp_all;
  const double base_over = workspace + ddp_buckets;
  double saved_all = 0;
  for (double x : layer_saved) saved_all += x;

  // Forward: inside the last layer (its full activations exist even under recomputation), then at the loss.
  {
    const double before_last = saved_all - layer_saved.back();
    moment("forward", "last decoder layer", P + autocast_cache + gathered, accum_grads,
           before_last + layer_full.back() + layer_transient_max + outside, 0, base_over);
    moment("forward", "loss (log-softmax)", P + autocast_cache + gathered, accum_grads, saved_all + outside,
           ce_forward, base_over);
  }
  // Backward: through the loss, then layer by layer from the top; gradients accumulate as activations go.
  {
    moment("backward", "loss", P + backward_cache + gathered, accum_grads, saved_all + outside, ce_backward, base_over);
    double grads = accum_grads > 0 ? accum_grads : head_grad;
    double acts = saved_all;
    double cache = backward_cache;
    for (std::int64_t l = s.layers - 1; l >= 0; --l) {
      const auto i = static_cast<std::size_t>(l);
      // Recomputed layers rebuild their full activations; the layer's weight grads appear during its backward.
      const double working = layer_full[i];
      const double new_grads = accum_grads > 0 ? 0.0 : layer_grad[i];
      moment("backward", "layer " + std::to_string(l), P + cache + gathered, grads + new_grads,
             acts - layer_saved[i] + working, 0, base_over);
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
  }
  // Optimizer step.
  moment("optimizer", "step", P, G_full, 0, 0, base_over + gpu_step_temp);


  // --- The caching allocator's reserve: replay three steps' allocations in the order PyTorch makes them ---
  std::optional<Bytes> reserve;
  if (pytorch) {
    CachingAllocatorModel A;
    using H = CachingAllocatorModel::Handle;
    const double cl_ = pr.compute;
    auto trainable_group = [&](const ParamGroup& g, bool in_layer) {
      return !lora ? true : (in_layer && g.linear && !g.expert && detail::lora_targets_module(w.lora, g.module));
    };
    const double param_share = gpu_params > 0 ? ((w.gpus > 1 && w.zero >= 2) ? 1.0 / N : 1.0) : 0.0;
    for (const auto* groups : {&inv.embedding, &inv.head})
      for (const auto& g : *groups) A.malloc(double(g.numel()) * pr.weight * param_share);
    for (const auto& l : inv.per_layer)
      for (const auto& g : l) A.malloc(double(g.numel()) * pr.weight * param_share);
    if (lora) A.malloc(adapter_bytes);
    if (ddp_buckets > 0) A.malloc(ddp_buckets);
    A.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
    A.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
    std::vector<H> states, grads;
    std::vector<double> grad_bytes;  // parallel to grads
    auto add_grad = [&](double bytes) {
      grads.push_back(A.malloc(bytes));
      grad_bytes.push_back(bytes);
    };
    for (int step = 0; step < 3; ++step) {
      // Forward.
      std::vector<std::vector<H>> saved(static_cast<std::size_t>(s.layers));
      std::vector<std::vector<H>> casts(static_cast<std::size_t>(s.layers));
      std::vector<H> gathered_h;
      H resid = A.malloc(pr.stream * h * T);  // embedding output
      for (std::int64_t l = 0; l < s.layers; ++l) {
        const auto i = static_cast<std::size_t>(l);
        if (w.gpus > 1 && w.zero >= 2) gathered_h.push_back(A.malloc(2.0 * max_layer_params * pr.weight));
        if (pr.autocast)
          for (const auto& g : inv.per_layer[i]) if (g.linear) casts[i].push_back(A.malloc(double(g.numel()) * 2.0));
        H ckpt = w.recompute == Recompute::full ? A.malloc(pr.stream * h * T) : CachingAllocatorModel::none;
        for (double t : layer_tensors[i]) saved[i].push_back(A.malloc(t * T));
        if (layer_scores[i] > 0) {
          const H pre = A.malloc(pr.compute * b * double(s.heads) * sq * sq);
          saved[i].push_back(A.malloc(layer_scores[i]));
          A.free(pre);
        }
        // The residual stream after the layer: a tensor of its own when 16-bit (the norms keep fp32 copies),
        // otherwise it is the next norm's saved input, already counted.
        if (pr.stream < 4) {
          const H next = A.malloc(pr.stream * h * T);
          A.free(resid);
          resid = next;
        }
        if (w.recompute == Recompute::full) {
          for (H x : saved[i]) A.free(x);
          saved[i] = {ckpt};
          if (pr.autocast) { for (H x : casts[i]) A.free(x); casts[i].clear(); }
        }
        if (w.gpus > 1 && w.zero == 3) { A.free(gathered_h.back()); gathered_h.pop_back(); }
      }
      // Loss.
      std::vector<H> head;
      for (int k = 0; k < 2; ++k) head.push_back(A.malloc(act.final_norm() * T / 2));
      H head_cast = pr.autocast ? A.malloc(head_linear * 2.0) : CachingAllocatorModel::none;
      H logits = A.malloc(cl_ * V * T);
      H cap = s.final_logit_softcap > 0 ? A.malloc(cl_ * V * T) : CachingAllocatorModel::none;
      H up = cl_ < 4 ? A.malloc(4.0 * V * T) : CachingAllocatorModel::none;
      H lsm = A.malloc(4.0 * V * T);
      A.free(up);
      A.free(logits);  // only the loss is kept (HF Trainer)
      // Backward through the loss and lm_head.
      H g1 = A.malloc(4.0 * V * T);
      H g2 = A.malloc(4.0 * V * T);
      A.free(g1);
      A.free(lsm);
      H g3 = cl_ < 4 ? A.malloc(cl_ * V * T) : CachingAllocatorModel::none;
      A.free(g2);
      A.free(cap);
      H dh = A.malloc(pr.compute * h * T);
      if (!lora) for (const auto& g : inv.head) if (trainable_group(g, false)) add_grad(double(g.numel()) * grad_el * grad_scale);
      if (!lora && s.tied_embeddings) add_grad(V * h * grad_el * grad_scale);
      A.free(g3);
      A.free(head_cast);
      for (H x : head) A.free(x);
      for (std::int64_t l = s.layers - 1; l >= 0; --l) {
        const auto i = static_cast<std::size_t>(l);
        if (w.gpus > 1 && w.zero == 3) gathered_h.push_back(A.malloc(2.0 * max_layer_params * pr.weight));
        std::vector<H> re;
        if (w.recompute == Recompute::full) {
          if (pr.autocast) for (const auto& g : inv.per_layer[i]) if (g.linear) casts[i].push_back(A.malloc(double(g.numel()) * 2.0));
          for (double t : layer_tensors[i]) re.push_back(A.malloc(t * T));
          if (layer_scores[i] > 0) re.push_back(A.malloc(layer_scores[i]));
        }
        // Gradients of the layer's activations (FFN width and hidden width), then its weight gradients.
        const double ffn_w = double(s.is_moe_layer(l) ? s.moe.intermediate * s.moe.experts_per_token : s.intermediate);
        H t1 = A.malloc(pr.compute * ffn_w * T), t2 = A.malloc(pr.compute * ffn_w * T);
        H t3 = A.malloc(pr.compute * h * T);
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
        if (!gathered_h.empty()) { A.free(gathered_h.back()); gathered_h.pop_back(); }
      }
      if (!lora) {
        H dense = A.malloc(V * h * grad_el * grad_scale);  // embedding backward: a dense V×h gradient
        if (s.tied_embeddings) {
          H sum = A.malloc(V * h * grad_el * grad_scale);  // AccumulateGrad: old + new, out of place
          A.free(dense);
          A.free(grads.front());
          grads.front() = sum;
        } else {
          grads.push_back(dense);
          grad_bytes.push_back(V * h * grad_el * grad_scale);
        }
      }
      A.free(dh);
      A.free(resid);
      // Optimizer: moments appear at the first step; the foreach implementation then makes one temporary per
      // parameter tensor; zero_grad(set_to_none=True) frees the gradients.
      if (step == 0 && gpu_states > 0) {
        const double shard = (w.gpus > 1 && w.zero >= 1) ? 1.0 / N : 1.0;
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
  if (w.gpus > 1)
    as.push_back(w.zero == 0 ? "data parallel: DDP with gradient buckets (a second gradient copy), NCCL buffers"
                 : w.zero == 3 ? "ZeRO-3 / FSDP2 full shard: current and prefetched layer gathered"
                 : w.zero == 2 ? "ZeRO-2 / FSDP2 shard_grad_op: parameters stay gathered between forward and backward"
                               : "ZeRO-1: optimizer states sharded");
  return est;
}

}  // namespace gpuplan
