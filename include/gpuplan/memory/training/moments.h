// Training, step 4: the live tensors at each moment of the step worth looking at — inside the last layer and at the
// loss in forward, through the loss and down the layers in backward, the embeddings, the optimizer step — by
// component. The peak is a fold over this list (breakdown.h summarize).
#pragma once
#include <string>
#include <vector>

#include "../../model.h"
#include "../../parallel.h"
#include "../breakdown.h"
#include "../workload.h"
#include "shard.h"
#include "tensors.h"

namespace gpuplan {

namespace detail {

// What stays put through the step: weights (with gathered FSDP layers), optimizer states, framework buffers.
struct StepResidents {
  double params = 0;     // parameters on the GPU at rest
  double gathered = 0;   // FSDP's unsharded copies alive while layers compute
  double states = 0;
  double overhead = 0;   // cuBLAS workspaces, DDP buckets, DeepSpeed ZeRO-3's reduce buffer
  double backward_buffers = 0;  // DeepSpeed ZeRO-1/2 IPG buffers, alive through backward only
  double accum_grads = 0;  // with gradient accumulation, later micro-batches find every gradient allocated
  double in_flight = 0;    // pipeline: other micro-batches' saved activations on this stage (1F1B)
  double saved_all = 0;    // this micro-batch's saved activations, all layers
};

inline StepResidents step_residents(const ShardInventory& inv, const ModelStates& m, const StepTensors& t,
                                    const TrainingWorkload& w, const PipelineStage& st) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  StepResidents r;
  r.params = m.gpu_params;
  r.states = m.gpu_states;
  r.accum_grads = w.grad_accum > 1 ? m.grads : 0.0;
  // FSDP2 all-gathers into a flat buffer and copies out into the unsharded parameters: two copies of each gathered
  // layer while it is in use. Full shard holds the current and the prefetched layer; shard_grad_op every layer.
  const bool deepspeed = w.profile == Profile::deepspeed;
  const double fsdp_layer = (m.sharded && w.zero == 3 && !deepspeed) ? 2.0 * 2.0 * inv.largest_layer * pr.weight : 0.0;
  // DeepSpeed ZeRO-3 gathers module by module: the largest weight matrix in use and the prefetch bucket ahead.
  const double ds_gathered = (m.sharded && w.zero == 3 && deepspeed)
                                 ? (inv.largest_tensor + w.deepspeed.prefetch_bucket_size) * pr.weight : 0.0;
  const double fsdp_all = (m.sharded && w.zero == 2 && w.profile == Profile::pytorch) ? 2.0 * (m.weights - r.params) : 0.0;
  r.gathered = fsdp_layer + fsdp_all + ds_gathered;
  r.overhead = t.workspace + m.ddp_buckets;
  // DeepSpeed's gradient buckets of reduce_bucket_size elements: ZeRO-1/2 allocate the IPG buffer (two with
  // overlap_comm) when backward starts and drop it after; ZeRO-3 keeps one reduce buffer for the run.
  if (deepspeed && m.sharded) {
    const double bucket = w.deepspeed.reduce_bucket_size * m.grad_el;
    if (w.zero == 3) r.overhead += bucket;
    else r.backward_buffers = bucket * (w.deepspeed.overlaps(w.zero) ? 2.0 : 1.0);
  }
  for (const auto& l : t.layers) r.saved_all += l.saved;
  r.in_flight = (st.in_flight - 1) * r.saved_all;
  return r;
}

struct MomentList {
  const StepResidents& r;
  std::vector<Moment> moments;
  void add(const char* phase, std::string what, double weights, double grads, double acts, double logits, double over) {
    MemoryComponents m;
    m.weights = Bytes(weights);
    m.gradients = Bytes(grads);
    m.optimizer_states = Bytes(r.states);
    m.activations = Bytes(acts);
    m.logits = Bytes(logits);
    m.overhead = Bytes(over);
    moments.push_back(Moment{phase, std::move(what), m});
  }
};

// Forward: inside the last layer (its full activations exist even under recomputation), then at the loss.
inline void forward_moments(MomentList& out, const StepTensors& t, const PipelineStage& st) {
  const StepResidents& r = out.r;
  const double before_last = r.saved_all - t.layers.back().saved;
  out.add("forward", "last decoder layer", r.params + t.autocast_cache + r.gathered, r.accum_grads,
          r.in_flight + before_last + t.layers.back().full + t.scores_transient + t.outside, t.loss.earlier_outputs,
          r.overhead);
  if (st.head)
    out.add("forward", "loss (log-softmax)", r.params + t.autocast_cache + r.gathered, r.accum_grads,
            r.in_flight + r.saved_all + t.outside, t.loss.forward + t.loss.earlier_outputs, r.overhead);
}

// Backward: through the loss, then layer by layer from the top; gradients accumulate as activations go.
inline void backward_moments(MomentList& out, const StepTensors& t, const ModelStates& m, const ModelSpec& s,
                             const TrainingWorkload& w, const PipelineStage& st) {
  const StepResidents& r = out.r;
  if (st.head)
    out.add("backward", "loss", r.params + t.backward_cache + r.gathered, r.accum_grads,
            r.in_flight + r.saved_all + t.outside, t.loss.backward + t.loss.earlier_outputs,
            r.overhead + r.backward_buffers);
  double grads = r.accum_grads > 0 ? r.accum_grads : t.head_grad;
  double acts = r.in_flight + r.saved_all;
  double cache = t.backward_cache;
  for (std::int64_t l = s.layers - 1; l >= 0; --l) {
    const LayerTensors& L = t.layers[static_cast<std::size_t>(l)];
    // Recomputed layers rebuild their full activations; the layer's weight grads appear during its backward.
    const double new_grads = r.accum_grads > 0 ? 0.0 : L.grad;
    out.add("backward", "layer " + std::to_string(l), r.params + cache + r.gathered, grads + new_grads,
            acts - L.saved + L.full, t.loss.all_outputs, r.overhead + r.backward_buffers);
    acts -= L.saved;
    grads += new_grads;
    cache -= t.backward_cache / double(s.layers + 1);
  }
  // Embedding backward produces a dense V×h gradient; with tied embeddings AccumulateGrad then adds it to the grad
  // lm_head already made, out of place: the old grad, the new one and their sum exist for a moment (measured: fp32
  // 1B tied, b2 s512: backward peak = weights + momentum + grads + 2 × V·h·4 B).
  const double emb_dense = s.tied_embeddings && w.lora.rank == 0 ? 2.0 * t.geo.V * t.geo.h * m.grad_el * t.grad_scale : 0.0;
  const double all_grads = r.accum_grads > 0 ? r.accum_grads : grads + t.emb_grad;
  out.add("backward", "embeddings", r.params + r.gathered, all_grads + emb_dense, 0, 0,
          r.overhead + r.backward_buffers);
  // torch pipelining's Schedule.step ends by concatenating the last stage's outputs (merge_chunks) while the
  // per-micro-batch outputs still exist: m logits twice (2 × H200 allocator snapshot: a segment of exactly m logits
  // beside the kept ones).
  if (t.loss.all_outputs > 0)
    out.add("backward", "outputs merged", r.params + r.gathered, all_grads, 0, 2 * t.loss.all_outputs,
            r.overhead + r.backward_buffers);
}

}  // namespace detail

inline std::vector<Moment> training_moments(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st,
                                            const ShardInventory& inv, const ModelStates& m, const StepTensors& t) {
  const detail::StepResidents r = detail::step_residents(inv, m, t, w, st);
  detail::MomentList out{r, {}};
  out.moments.reserve(std::size_t(s.layers) + 6);  // one per layer, six at most besides: no moment is moved
  detail::forward_moments(out, t, st);
  detail::backward_moments(out, t, m, s, w, st);
  out.add("optimizer", "step", r.params, m.grads, 0, t.loss.all_outputs, r.overhead + t.step_temp);
  return std::move(out.moments);
}

}  // namespace gpuplan
