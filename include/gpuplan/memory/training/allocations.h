// Training, step 5: the step as the caching allocator sees it — every allocation and free of three steps in the
// order PyTorch makes them (the first step creates the optimizer's states, DDP rebuilds its buckets after it), as
// an AllocationTimeline that replay_reserve folds into the allocator's reserve, or fed to the allocator model
// directly (training_allocator_reserve).
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "../../model.h"
#include "../../parallel.h"
#include "../allocator.h"
#include "../profile.h"
#include "../workload.h"
#include "moments.h"
#include "shard.h"
#include "tensors.h"

namespace gpuplan {

namespace detail {

// Writes to a Sink: an AllocationTimeline (recorded) or ReplayedAllocations (the allocator model, directly).
template <class Sink>
class TrainingAllocations {
 public:
  using Id = AllocationTimeline::Id;
  using Phase = AllocationTimeline::Phase;

  TrainingAllocations(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st, const ShardInventory& inv,
                      const ModelStates& m, const StepTensors& t)
      : s_(s), w_(w), st_(st), inv_(inv), m_(m), t_(t), g_(t.geo), pr_(recipe_of(w.precision)),
        lora_(w.lora.rank > 0), fsdp_(w.profile == Profile::pytorch && m.sharded && w.zero >= 2),
        in_flight_(step_residents(inv, m, t, w, st).in_flight) {}

  Sink build() {
    setup();
    for (int step = 0; step < 3; ++step) {
      A_.phase = Phase::forward;
      if (step == 1) rebuild_ddp_buckets();
      forward();
      A_.phase = Phase::backward;
      backward_through_loss();
      backward_through_layers();
      backward_through_embeddings();
      A_.phase = Phase::optimizer;
      optimizer_step(step == 0);
    }
    return std::move(A_);
  }

 private:
  // FSDP2 reduce-scatters on a stream of its own, and the caching allocator keeps each stream's blocks apart: the
  // reduce-scatter output — the sharded gradient — lives in the reduce-scatter stream's pool, out of reach of the
  // activations freed on the default stream (allocator snapshot on 2 × H200: one block per layer's gradient shard
  // in a pool of its own).
  static constexpr int reduce_scatter_stream = 1;
  int grad_stream() const { return fsdp_ ? reduce_scatter_stream : 0; }
  double hidden_tensor(double el) const { return el * g_.h * g_.T / g_.sp_div; }
  double adapter_or_numel(const ParamGroup& g) const {
    return lora_ ? double(w_.lora.rank) * double(g.in + g.out) : double(g.numel());
  }

  // Parameters (resident share), LoRA adapters, DDP's first bucket and the cuBLAS workspaces.
  void setup() {
    const double resident = m_.gpu_params > 0 ? ((m_.sharded && w_.zero >= 2) ? m_.param_share : 1.0) : 0.0;
    for (const auto* groups : {&inv_.groups.embedding, &inv_.groups.head})
      for (const auto& g : *groups) A_.malloc(double(g.numel()) * pr_.weight * resident);
    for (std::size_t l = 0; l < inv_.groups.layers(); ++l)
      for (const auto& g : inv_.groups.layer(l)) A_.malloc(double(g.numel()) * pr_.weight * resident);
    if (lora_) A_.malloc(m_.adapters);
    // DDP (find_unused_parameters=False) starts with one bucket holding every gradient, and after the first
    // iteration rebuilds its buckets in gradient-ready order, 25 MB each (torch DistributedDataParallel:
    // bucket_size_limits [sys.maxsize] before the rebuild): the flat first bucket is freed and stays cached as one
    // segment (allocator snapshot on 2 × H200: a free block of exactly one gradient copy).
    first_bucket_ = m_.ddp_buckets > 0 ? A_.malloc(m_.ddp_buckets) : AllocationTimeline::none;
    A_.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
    A_.malloc(PytorchProfile::cublas_workspaces.in(unit::bytes) / 2);
  }

  void rebuild_ddp_buckets() {
    if (m_.ddp_buckets <= 0) return;
    const double bucket = 25e6;  // DDP's bucket_cap_mb default
    // Past 1024 buckets (25.6 GB of gradients: no GPU holds the model under DDP) the rest is one request: the
    // reserve differs by under 2 MiB of rounding per bucket, and the replay stays bounded for absurd sizes.
    double left = m_.ddp_buckets;
    for (int n = 0; left > 0 && n < 1024; ++n, left -= bucket) A_.malloc(std::min(bucket, left));
    if (left > 0) A_.malloc(left);
    A_.free(first_bucket_);
  }

  // FSDP2's all-gather buffer and the unsharded parameters copied out of it, per gathered layer. (Its all-gather
  // stream pool holds one layer's buffer, reused layer after layer; modelled on the default stream, where the replay
  // matches the measured reserve better.)
  void gather() {
    const Id buffer = A_.malloc(inv_.largest_layer * pr_.weight);
    gathered_.push_back({buffer, A_.malloc(inv_.largest_layer * pr_.weight)});
  }
  void release() {
    A_.free(gathered_.back().first);
    A_.free(gathered_.back().second);
    gathered_.pop_back();
  }
  void autocast_casts(std::size_t layer) {
    if (pr_.autocast)
      for (const auto& g : inv_.groups.layer(layer))
        if (g.linear) casts_[layer].push_back(A_.malloc(double(g.numel()) * 2.0));
  }

  // Empties the per-layer lists, keeping their storage for the next step (a replay's small allocations add up).
  static void clear_each(std::vector<std::vector<Id>>& lists, std::size_t n) {
    lists.resize(n);
    for (auto& l : lists) l.clear();
  }

  void forward() {
    clear_each(saved_, t_.layers.size());
    clear_each(casts_, t_.layers.size());
    others_ = A_.malloc(in_flight_);  // earlier micro-batches in flight on this pipeline stage
    resid_ = A_.malloc(hidden_tensor(pr_.stream));  // embedding output (or the activation received)
    const bool full = w_.recompute == Recompute::full;
    for (std::size_t i = 0; i < t_.layers.size(); ++i) {
      if (m_.sharded && w_.zero >= 2) gather();
      autocast_casts(i);
      const Id ckpt = full ? A_.malloc(hidden_tensor(pr_.stream)) : AllocationTimeline::none;
      for (double x : t_.layers[i].per_token) saved_[i].push_back(A_.malloc(x * g_.T));
      if (t_.layers[i].scores > 0) {
        const Id pre = A_.malloc(pr_.compute * g_.b * g_.heads * g_.sq * g_.sq);
        saved_[i].push_back(A_.malloc(t_.layers[i].scores));
        A_.free(pre);
      }
      // The residual stream after the layer: a tensor of its own when 16-bit (the norms keep fp32 copies),
      // otherwise it is the next norm's saved input, already counted.
      if (pr_.stream < 4) {
        const Id next = A_.malloc(hidden_tensor(pr_.stream));
        A_.free(resid_);
        resid_ = next;
      }
      if (full || w_.activation_offload) {  // checkpointed, or copied to the host (the checkpoint too)
        for (Id x : saved_[i]) A_.free(x);
        saved_[i].clear();
        if (w_.activation_offload) A_.free(ckpt);
        else saved_[i].push_back(ckpt);
      }
      if (full) {
        for (Id x : casts_[i]) A_.free(x);
        casts_[i].clear();
      }
      if (m_.sharded && w_.zero == 3) release();
    }
  }

  // One micro-batch through the loss and back: logits, soft-capping, the fp32 upcast and log-softmax, the two fp32
  // gradient buffers, the gradient cast back to the logits' dtype (returned, freed after lm_head's backward). Only
  // the loss is kept after forward (HF Trainer) — except under torch pipelining, which keeps every micro-batch's
  // logits until the step ends.
  Id loss_pass() {
    if (w_.loss != Loss::eager) return chunked_loss_pass();
    const double cl = pr_.compute, VT = st_.head ? g_.V * g_.T : 0.0;  // no loss off the last stage
    const Id logits = A_.malloc(cl * VT);
    const Id cap = s_.final_logit_softcap > 0 ? A_.malloc(cl * VT) : AllocationTimeline::none;
    const Id up = cl < 4 ? A_.malloc(4.0 * VT) : AllocationTimeline::none;
    const Id lsm = A_.malloc(4.0 * VT);
    const Id shifted = A_.malloc(t_.loss.vocab_parallel);
    A_.free(up);
    if (t_.loss.earlier_outputs > 0) kept_logits_.push_back(logits);
    else A_.free(logits);
    const Id g1 = A_.malloc(4.0 * VT);
    const Id g2 = A_.malloc(4.0 * VT);
    A_.free(g1);
    A_.free(lsm);
    const Id g3 = cl < 4 ? A_.malloc(cl * VT) : AllocationTimeline::none;
    A_.free(g2);
    A_.free(cap);
    A_.free(shifted);
    return g3;
  }

  // Chunked (torchtune) or fused (Liger) loss: what stays through the loss, one chunk's buffers in forward and in
  // backward (tensors.h loss_buffers); the gradient handed to lm_head's backward (one chunk's, or the hidden states').
  Id chunked_loss_pass() {
    if (!st_.head) return AllocationTimeline::none;
    const LossBuffers& L = t_.loss;
    const Id kept = A_.malloc(L.kept);
    A_.free(A_.malloc(L.chunk_forward));
    if (w_.loss == Loss::fused) return kept;
    const Id g = A_.malloc(L.chunk_backward);
    A_.free(kept);
    return g;
  }

  void add_grad(double bytes) {
    const Id g = A_.malloc(bytes, grad_stream());
    if (fsdp_ && w_.offload_optimizer != Offload::none) {  // with CPU offload the shard goes to the host at once
      A_.free(g);
      return;
    }
    grads_.push_back(g);
    grad_bytes_.push_back(bytes);
  }

  // The loss and lm_head (or the gradient received from the next stage). Under torch pipelining the earlier
  // micro-batches' passes are replayed first, so their logits sit between the freed fp32 buffers as on the GPU.
  void backward_through_loss() {
    if (t_.loss.earlier_outputs > 0)
      for (std::int64_t k = 1; k < w_.grad_accum; ++k) A_.free(loss_pass());
    std::vector<Id> head;
    for (int k = 0; k < 2; ++k) head.push_back(A_.malloc(st_.head ? t_.final_norm * g_.T / g_.sp_div / 2 : 0.0));
    const Id head_cast = pr_.autocast ? A_.malloc(t_.head_linear * 2.0) : AllocationTimeline::none;
    const Id g3 = loss_pass();
    dh_ = A_.malloc(hidden_tensor(pr_.compute));
    if (!lora_)
      for (const auto& g : inv_.groups.head) add_grad(double(g.numel()) * m_.grad_el * t_.grad_scale);
    tied_grad_.reset();  // the shared matrix's gradient, made at lm_head
    if (!lora_ && s_.tied_embeddings) {
      const std::size_t before = grads_.size();
      add_grad(g_.V * g_.h * m_.grad_el * t_.grad_scale);
      if (grads_.size() > before) tied_grad_ = before;
    }
    A_.free(g3);
    A_.free(head_cast);
    for (Id x : head) A_.free(x);
  }

  void backward_through_layers() {
    for (std::size_t i = t_.layers.size(); i-- > 0;) {
      if (m_.sharded && w_.zero == 3) gather();
      std::vector<Id>& re = recomputed_;
      re.clear();
      if (w_.recompute == Recompute::full || w_.activation_offload) {  // recomputed, or back from the host
        if (w_.recompute == Recompute::full) autocast_casts(i);
        for (double x : t_.layers[i].per_token) re.push_back(A_.malloc(x * g_.T));
        if (t_.layers[i].scores > 0) re.push_back(A_.malloc(t_.layers[i].scores));
      }
      // Gradients of the layer's activations (FFN width and hidden width), then its weight gradients.
      const auto l = static_cast<std::int64_t>(i);
      const double ffn = double(s_.is_moe_layer(l) ? s_.moe.intermediate * s_.moe.experts_per_token : s_.intermediate);
      const Id t1 = A_.malloc(pr_.compute * ffn * g_.T), t2 = A_.malloc(pr_.compute * ffn * g_.T);
      const Id t3 = A_.malloc(hidden_tensor(pr_.compute));
      for (const auto& g : inv_.groups.layer(i))
        if (trains(g, true, w_.lora)) add_grad(adapter_or_numel(g) * (lora_ ? 4.0 : m_.grad_el) * t_.grad_scale);
      A_.free(t1);
      A_.free(t2);
      for (Id x : saved_[i]) A_.free(x);
      for (Id x : re) A_.free(x);
      for (Id x : casts_[i]) A_.free(x);
      A_.free(dh_);
      dh_ = t3;
      if (!gathered_.empty()) release();
    }
  }

  // A dense V×h embedding gradient; tied, AccumulateGrad adds it to lm_head's out of place (old + new = sum).
  void backward_through_embeddings() {
    if (!lora_ && st_.embedding) {
      const double bytes = g_.V * g_.h * m_.grad_el * t_.grad_scale;
      const Id dense = A_.malloc(bytes, grad_stream());
      if (s_.tied_embeddings) {
        const Id sum = A_.malloc(bytes, grad_stream());
        A_.free(dense);
        if (tied_grad_) {
          A_.free(grads_[*tied_grad_]);
          grads_[*tied_grad_] = sum;
        } else {
          A_.free(sum);  // offloaded: the sum goes to the host too
        }
      } else {
        grads_.push_back(dense);
        grad_bytes_.push_back(bytes);
      }
    }
    A_.free(dh_);
    A_.free(resid_);
    A_.free(others_);
    A_.free(A_.malloc(t_.loss.all_outputs));  // the merged outputs, returned by Schedule.step and dropped
  }

  // Moments appear at the first step; the foreach implementation then makes one temporary per parameter tensor;
  // zero_grad(set_to_none=True) frees the gradients.
  void optimizer_step(bool first) {
    if (first && m_.gpu_states > 0) {
      const double shard = (m_.sharded && w_.zero >= 1) ? m_.state_share : 1.0;
      auto add_states = [&](const ParamGroup& g, bool in_layer) {
        if (!trains(g, in_layer, w_.lora)) return;
        const double n = adapter_or_numel(g);
        const double el = optimizer_state_elements(w_.optimizer, double(g.out), double(g.in), double(g.out * g.in)) *
                          double(lora_ ? 1 : g.count);
        const double per = (lora_ ? 2.0 * n : el) * m_.state_el * shard;
        if (per > 0) { A_.malloc(per / 2); A_.malloc(per / 2); }
        if (m_.master > 0) A_.malloc(n * m_.master * shard);
      };
      for (const auto& g : inv_.groups.embedding) add_states(g, false);
      for (std::size_t l = 0; l < inv_.groups.layers(); ++l) for (const auto& g : inv_.groups.layer(l)) add_states(g, true);
      for (const auto& g : inv_.groups.head) add_states(g, false);
    }
    double total_grad = 0;
    for (double x : grad_bytes_) total_grad += x;
    std::vector<Id> temps;
    A_.begin_batch();
    if (t_.step_temp > 0 && total_grad > 0)
      for (double x : grad_bytes_) temps.push_back(A_.malloc(t_.step_temp * x / total_grad));  // one per parameter
    A_.free_batch(temps);
    for (Id x : grads_) A_.free(x);
    grads_.clear();
    grad_bytes_.clear();
    for (Id x : kept_logits_) A_.free(x);  // the schedule drops them when the next step starts
    kept_logits_.clear();
  }

  const ModelSpec& s_;
  const TrainingWorkload& w_;
  const PipelineStage& st_;
  const ShardInventory& inv_;
  const ModelStates& m_;
  const StepTensors& t_;
  const StepGeometry& g_;
  const PrecisionRecipe pr_;
  const bool lora_, fsdp_;
  const double in_flight_;

  Sink A_;
  Id first_bucket_ = AllocationTimeline::none, others_ = AllocationTimeline::none, resid_ = AllocationTimeline::none,
     dh_ = AllocationTimeline::none;
  std::vector<std::vector<Id>> saved_, casts_;  // per layer: saved for backward, autocast's weight casts
  std::vector<Id> recomputed_;                  // the layer being recomputed in backward
  std::vector<std::pair<Id, Id>> gathered_;     // FSDP layers gathered now
  std::vector<Id> grads_, kept_logits_;
  std::vector<double> grad_bytes_;              // parallel to grads_
  std::optional<std::size_t> tied_grad_;
};

}  // namespace detail

// `s` is this GPU's model (parallel.h rank_model).
inline AllocationTimeline training_allocations(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st,
                                               const ShardInventory& inv, const ModelStates& m, const StepTensors& t) {
  return detail::TrainingAllocations<AllocationTimeline>(s, w, st, inv, m, t).build();
}

// The caching allocator's reserve over those three steps (replay_reserve of the timeline, without keeping it).
inline double training_allocator_reserve(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st,
                                         const ShardInventory& inv, const ModelStates& m, const StepTensors& t) {
  return detail::TrainingAllocations<ReplayedAllocations>(s, w, st, inv, m, t).build().reserve();
}

}  // namespace gpuplan
