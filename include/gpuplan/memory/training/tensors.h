// Training, step 3: the tensors of one step on one GPU, in bytes. What each decoder layer saves for backward (and
// holds while it computes), what lives outside the layers, the logits and the loss's buffers, autocast's weight
// casts, the gradients as backward makes them, the framework's buffers and the optimizer step's temporaries.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "../../error.h"
#include "../../model.h"
#include "../../parallel.h"
#include "../activations.h"
#include "../optimizer.h"
#include "../profile.h"
#include "../workload.h"
#include "shard.h"

namespace gpuplan {

// Tokens and widths of one micro-batch on this GPU.
struct StepGeometry {
  double b = 0;       // sequences per micro-batch
  double sq = 0;      // tokens per sequence on this rank (context parallelism: seq/cp)
  double T = 0;       // tokens per micro-batch on this rank
  double h = 0, V = 0;
  double heads = 0;   // attention heads on this rank
  double sp_div = 1;  // Megatron sequence parallelism splits hidden-width tensors over tp
};

inline StepGeometry step_geometry(const ModelSpec& s, const TrainingWorkload& w) {
  StepGeometry g;
  g.b = double(w.batch);
  g.sq = std::ceil(double(w.seq) / double(w.cp));
  g.T = g.b * g.sq;
  g.h = double(s.hidden);
  g.V = double(s.vocab);
  g.heads = double(s.heads);
  g.sp_div = w.sp ? double(w.tp) : 1.0;
  return g;
}

struct LayerTensors {
  std::vector<double> per_token;  // the tensors autograd saves, bytes per token (for the allocator replay)
  double scores = 0;              // attention scores kept by eager / math attention, bytes
  double full = 0;                // everything the layer saves without recomputation, bytes
  double saved = 0;               // what it keeps until backward under the workload's recomputation, bytes
  double grad = 0;                // its weight gradients (after ZeRO-2), bytes
};

// The loss on the last pipeline stage (HF ForCausalLMLoss: logits.float(), then cross_entropy = log_softmax +
// nll), per micro-batch; zero elsewhere.
struct LossBuffers {
  double logit_el = 0;        // bytes per logit: the lm_head output dtype
  double forward = 0;         // at the loss in forward
  double backward = 0;        // backward through the loss
  double vocab_parallel = 0;  // the vocabulary-parallel loss's extra fp32 shard (in both of the above)
  double earlier_outputs = 0; // torch pipelining: the earlier micro-batches' logits, kept until the step ends
  double all_outputs = 0;     // and all of them, merged at the end
  // Chunked and fused losses (the allocator replay): what stays through the loss (the 16-bit logits, or the hidden
  // states' gradient) and one chunk's buffers in forward and in backward.
  double kept = 0, chunk_forward = 0, chunk_backward = 0;
};

struct StepTensors {
  StepGeometry geo;
  std::vector<LayerTensors> layers;
  double per_token_per_layer = 0;  // average saved bytes per token per layer, without s² terms (reported)
  double scores_transient = 0;     // pre-softmax scores of the layer being computed (eager / math), bytes
  double final_norm = 0;           // the final norm's saved bytes per token (last stage)
  double outside = 0;              // ids, labels, the stage's input, the final norm, embedding dropout
  LossBuffers loss;
  double head_linear = 0;          // lm_head's parameters (the embedding matrix when tied)
  double autocast_cache = 0;       // 16-bit casts of the linear weights made in forward
  double backward_cache = 0;       // of which still alive when backward starts
  double emb_grad = 0, head_grad = 0, grad_scale = 1;
  double workspace = 0;            // cuBLAS workspaces
  double step_temp = 0;            // the optimizer step's temporaries on the GPU
};

namespace detail {

inline std::vector<LayerTensors> layer_tensors(const ModelSpec& s, const TrainingWorkload& w, const StepGeometry& g,
                                               const PrecisionRecipe& pr, double& per_token_sum, double& transient) {
  const ActivationDtypes dt{pr.compute, pr.stream, pr.autocast};
  const LayerActivationModel act(s, w, dt);
  // Megatron sequence parallelism splits the hidden-width tensors (norm inputs, residual stream, dropout masks —
  // replicated across the tp ranks under plain TP, Korthikanti et al. 2022 Table 2) along the sequence as well.
  // (The layer model is linear in the split widths: parallel.h doubled_split_widths.)
  const ModelSpec wide = w.sp ? doubled_split_widths(s) : ModelSpec{};
  const LayerActivationModel act_wide(wide, w, dt);  // (only evaluated under --sp)
  std::vector<LayerTensors> out(static_cast<std::size_t>(s.layers));
  std::array<std::optional<LayerActivation>, max_layer_kinds> by_kind;  // the layer model sees a layer only through its kind
  for (std::int64_t l = 0; l < s.layers; ++l) {
    auto& kind = by_kind[static_cast<std::size_t>(layer_kind(s, l))];
    if (!kind) {
      kind = act.layer(l);
      if (w.sp && kind->per_token > 0) {
        const double split = act_wide.layer(l).per_token - kind->per_token;
        const double scaled = (kind->per_token - split) / double(w.tp) + split;
        for (double& x : kind->tensors) x *= scaled / kind->per_token;
        kind->per_token = scaled;
      }
    }
    const LayerActivation& a = *kind;
    LayerTensors& t = out[static_cast<std::size_t>(l)];
    // Eager and math attention materialise b·heads·s·s scores per layer (HF eager computes the full matrix and
    // masks it, also for sliding-window layers).
    t.scores = a.score_element * g.b * g.heads * g.sq * g.sq;
    t.full = a.per_token * g.T + t.scores;
    t.saved = t.full;
    if (w.recompute == Recompute::full)
      t.saved = pr.stream * g.h * g.T / g.sp_div;  // checkpoint = the layer input (HF non-reentrant, per layer)
    else if (w.recompute == Recompute::selective)
      t.saved = a.per_token * g.T;  // attention core recomputed: the s² terms go (Korthikanti et al. 2022 §5)
    // Activation offloading (torch.autograd.graph.save_on_cpu, torchtune OffloadActivations v0.6): every saved
    // tensor goes to pinned host memory as forward makes it and comes back just before its layer's backward, so
    // between layers the GPU keeps none of them; the layer computing keeps its full activations.
    if (w.activation_offload) t.saved = 0;
    t.per_token = a.tensors;
    per_token_sum += a.per_token;
    // While a layer runs forward its pre-softmax scores also exist (16-bit, freed after softmax).
    if (a.score_element > 0) transient = std::max(transient, pr.compute * g.b * g.heads * g.sq * g.sq);
  }
  return out;
}

inline LossBuffers loss_buffers(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st,
                                const StepGeometry& g, const PrecisionRecipe& pr) {
  LossBuffers L;
  const double cl = pr.compute;
  L.logit_el = cl;
  if (!st.head) return L;
  // Forward at the loss: logits (kept in outputs.logits), their fp32 upcast (skipped when already fp32) and the
  // saved log-softmax output (fp32). Gemma 2 soft-caps the logits (cap · tanh(logits / cap)): tanh's output is
  // kept for backward. (Vocab-parallel under TP: V is this rank's share.)
  const double softcap = s.final_logit_softcap > 0 ? cl * g.V * g.T : 0.0;
  L.forward = (cl + (cl < 4 ? 4.0 : 0.0) + 4.0) * g.V * g.T + softcap;
  // Backward through the loss: logits, two fp32 [tokens, V] buffers (nll grad / log-softmax grad) and, for 16-bit
  // logits, the grad cast back to the logits dtype. Measured on H200: 12 B·V per token for bf16 and fp32 logits.
  L.backward = (cl + 8.0 + (cl < 4 ? cl : 0.0)) * g.V * g.T + softcap;
  if (w.loss == Loss::chunked) {
    // torchtune CEWithChunkedOutputLoss (v0.6.1, torchtune/modules/loss/ce_chunked_output_loss.py): lm_head runs
    // per chunk of the sequence, every chunk's 16-bit logits stay (the model's output list); the upcast and the
    // cross-entropy are compiled per chunk (compute_cross_entropy under torch.compile), so the fp32 buffers exist
    // for one chunk at a time, in forward and again in backward.
    const double chunk = g.V * g.T / double(w.loss_chunks);
    L.kept = cl * g.V * g.T + softcap;
    L.chunk_forward = (4.0 + 4.0) * chunk;
    L.chunk_backward = (8.0 + cl) * chunk;
    L.forward = L.kept + L.chunk_forward;
    L.backward = L.kept + L.chunk_backward;
  } else if (w.loss == Loss::fused) {
    // Liger's fused linear cross-entropy (v0.5.10, liger_kernel/ops/fused_linear_cross_entropy.py): in forward,
    // per chunk of tokens, the chunk's logits (chunk = next_pow2(⌈T / ⌈V/h⌉⌉) tokens: about T·h/V, so a chunk holds
    // ~T·h logits), the loss kernel writing the logits' gradient in place, then the hidden states' gradient
    // (T × h, kept for backward) and lm_head's weight gradient (when it trains) accumulated. No [T, V] tensor.
    const double inc = std::ceil(g.V / g.h);
    const double chunk = std::exp2(std::ceil(std::log2(std::max(1.0, std::ceil(g.T / inc)))));
    L.kept = cl * g.T * g.h;  // the hidden states' gradient
    L.chunk_forward = cl * std::min(chunk, g.T) * g.V;
    L.forward = L.kept + L.chunk_forward;
    L.backward = L.kept;
  }
  // The vocabulary-parallel loss (torch loss_parallel; Megatron's vocab-parallel cross-entropy works alike) keeps
  // one more fp32 [tokens, V/tp] tensor, the max-shifted logits, through forward and backward (2 × H200, d1 set).
  L.vocab_parallel = w.tp > 1 ? 4.0 * g.V * g.T : 0.0;
  L.forward += L.vocab_parallel;
  L.backward += L.vocab_parallel;
  // torch.distributed.pipelining keeps every micro-batch's last-stage output (the logits) until the step ends, to
  // merge them for Schedule.step's return value: the earlier micro-batches' logits sit beside the current loss
  // (2 × H200, d1 set: m × logits still allocated after the optimizer step).
  if (w.pp > 1 && w.profile == Profile::pytorch) L.earlier_outputs = double(w.grad_accum - 1) * cl * g.V * g.T;
  L.all_outputs = L.earlier_outputs > 0 ? L.earlier_outputs + cl * g.V * g.T : 0.0;
  return L;
}

// Per-layer weight gradients as backward makes them, the embedding's and the head's (after ZeRO-2).
inline void gradient_tensors(StepTensors& t, const ShardInventory& inv, const ModelStates& m, const ModelSpec& s,
                             const TrainingWorkload& w) {
  const bool lora = w.lora.rank > 0;
  for (std::size_t l = 0; l < inv.groups.layers(); ++l)
    for (const auto& g : inv.groups.layer(l)) {
      if (!lora) t.layers[l].grad += double(g.numel()) * m.grad_el;
      else if (trains(g, true, w.lora)) t.layers[l].grad += lora_adapter_params(g, w.lora.rank) * 4.0;
    }
  if (!lora) {
    for (const auto& g : inv.groups.embedding) t.emb_grad += double(g.numel()) * m.grad_el;
    for (const auto& g : inv.groups.head) t.head_grad += double(g.numel()) * m.grad_el;
  }
  t.grad_scale = (m.sharded && w.zero >= 2) ? m.train_share : 1.0;
  for (auto& l : t.layers) l.grad *= t.grad_scale;
  t.emb_grad *= t.grad_scale;
  t.head_grad *= t.grad_scale;
  if (s.tied_embeddings && !lora) {  // the shared matrix's grad appears at lm_head
    t.head_grad += t.emb_grad;
    t.emb_grad = 0;
  }
}

// Autocast weight cache: 16-bit copies of every linear weight, made in forward, released as backward consumes them
// (torch.autocast caches casts of leaf tensors that require grad). Frozen LoRA bases are not cached, but each
// linear keeps its cast weight for the input gradient: the same bytes — except inside recomputed (checkpointed)
// layers, which save nothing: there a frozen weight's cast lives only while its matmul runs (measured: Qwen2.5-7B,
// amp-bf16, LoRA, full recomputation, tests/data/calibration/measured_t1.jsonl).
inline void autocast_tensors(StepTensors& t, const ShardInventory& inv, const ModelStates& m, const ModelSpec& s,
                             const TrainingWorkload& w, const PrecisionRecipe& pr) {
  t.head_linear = s.tied_embeddings ? t.geo.V * t.geo.h : 0;  // tied lm_head casts the embedding matrix
  for (const auto& g : inv.groups.head)
    if (g.linear) t.head_linear += double(g.numel());
  const double cache_scale = (w.zero == 3 && m.sharded) ? m.param_share : 1.0;
  const bool transient = w.lora.rank > 0 && w.recompute == Recompute::full;
  t.autocast_cache = pr.autocast ? ((transient ? 0.0 : inv.linear_params) + t.head_linear) * 2.0 * cache_scale : 0.0;
  // Under full recomputation the checkpointed layers save nothing, so their casts die with the autocast context at
  // the end of forward; only lm_head (outside the checkpoints) keeps its cast for backward.
  t.backward_cache = w.recompute == Recompute::full ? (pr.autocast ? t.head_linear * 2.0 * cache_scale : 0.0)
                                                    : t.autocast_cache;
}

// The optimizer step's temporaries on the GPU (optimizer.h), none when the step runs on the host.
inline double step_temporaries(const ShardInventory& inv, const ModelStates& m, const TrainingWorkload& w) {
  if (!torch_runtime(w.profile) || w.offload_optimizer != Offload::none) return 0.0;
  const double trainable_local = inv.trainable * ((m.sharded && w.zero >= 1) ? m.train_share : 1.0);
  // DeepSpeed ZeRO upcasts the rank's gradient partition to fp32 for its fused Adam, which updates in place
  // (stage_1_and_2.py step: single_grad_partition = flatten(averaged_gradients).to(fp32)).
  if (w.profile == Profile::deepspeed) return m.master > 0 ? trainable_local * 4.0 : 0.0;
  if (m.master == 0 && (w.optimizer == Optimizer::adafactor || w.optimizer == Optimizer::lion))
    return 3.0 * inv.largest_tensor * 4.0;  // per-tensor loop: fp32 update temporaries of one tensor
  return trainable_local * step_temporaries_per_param(w.optimizer, m.state_el, m.master);
}

}  // namespace detail

// `s` is this GPU's model (parallel.h rank_model).
inline StepTensors step_tensors(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st,
                                const ShardInventory& inv, const ModelStates& m) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  if (w.cp > 1) {
    const auto kernel = detail::sdpa_backend(s, w.attention, pr.compute);
    if (kernel == detail::AttentionKernel::eager || kernel == detail::AttentionKernel::math)
      throw InputError("--cp needs a flash or memory-efficient attention kernel (ring attention); this workload "
                       "would run eager or math attention");
  }
  StepTensors t;
  t.geo = step_geometry(s, w);
  const StepGeometry& g = t.geo;
  double per_token_sum = 0;
  t.layers = detail::layer_tensors(s, w, g, pr, per_token_sum, t.scores_transient);
  t.per_token_per_layer = per_token_sum / double(s.layers);
  t.final_norm = detail::LayerActivationModel(s, w, {pr.compute, pr.stream, pr.autocast}).final_norm();
  // Outside the layers: int64 input ids and labels (8 B each) and the loss's shifted/padded label copies (HF
  // ForCausalLMLoss pads and shifts labels: two more int64 per token). Under pipeline parallelism the ids live on
  // the first stage, the labels on the last; later stages keep the activation received from the previous stage.
  t.outside = (st.embedding ? 8.0 : pr.stream * g.h / g.sp_div) * g.T + (st.head ? 24.0 * g.T : 0.0);
  if (st.head) t.outside += t.final_norm * g.T / g.sp_div;  // final norm before lm_head
  if (s.learned_positions > 0 && s.dropout > 0) t.outside += 1.0 * g.h * g.T;  // embedding dropout mask (embd_pdrop)
  t.loss = detail::loss_buffers(s, w, st, g, pr);
  detail::autocast_tensors(t, inv, m, s, w, pr);
  detail::gradient_tensors(t, inv, m, s, w);
  t.workspace = torch_runtime(w.profile) ? PytorchProfile::cublas_workspaces.in(unit::bytes) : 0.0;
  t.step_temp = detail::step_temporaries(inv, m, w);
  return t;
}

}  // namespace gpuplan
