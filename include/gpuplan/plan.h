// The planner: the cheapest (or fastest) setups that fit, searched over accelerators × GPU count × parallel
// layout × micro-batch × recomputation × offload × offering for training, and accelerators × tensor parallelism ×
// weight format × KV dtype × replicas for serving.
//
// Training search in two passes. A closed-form screen of the estimator's largest terms (TrainingMemoryScreen,
// nanoseconds per layout, device-independent) keeps the layouts that may fit each device; candidates are ranked by
// the objective; then the best ones are re-estimated with the full estimator (estimate_training_memory: the
// timeline and the allocator replay) and only those that still fit with the requested headroom are reported. Every
// printed memory figure is the full estimator's.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "catalog.h"
#include "compute.h"
#include "cost.h"
#include "step_time.h"
#include "hardware.h"
#include "memory/inference.h"
#include "memory/training.h"
#include "parallel.h"
#include "runs_on.h"
#include "step_time.h"
#include "throughput.h"

namespace gpuplan {

enum class Objective { cost, time };
inline constexpr std::array<Spelling<Objective>, 2> objective_names{{{Objective::cost, "cost"}, {Objective::time, "time"}}};

// ---------------------------------------------------------------------------------------------------------------
// Training layouts and the memory screen

struct TrainingLayout {
  std::int64_t gpus = 1, tp = 1, pp = 1, zero = 0, micro_batch = 1, grad_accum = 1, ep = 1;
  Recompute recompute = Recompute::none;
  Offload offload = Offload::none;  // optimizer states (and, with ZeRO-3, parameters) in host memory
  std::int64_t dp() const { return gpus / (tp * pp); }
};

// The estimator's largest terms in closed form, from the same per-layer models (parameter inventory, saved
// activations per token, loss buffers): weights, gradients and optimizer states sharded as the estimator shards
// them, the first pipeline stage's in-flight activations or the last stage's loss buffers, the optimizer step's
// temporaries, the CUDA context and NCCL buffers. It leaves out the allocator's reserve and small tensors, so it
// is a lower bound the full estimator then checks.
class TrainingMemoryScreen {
 public:
  TrainingMemoryScreen(const ModelSpec& s, const TrainingWorkload& base) : layers_(double(s.layers)) {
    const PrecisionRecipe pr = recipe_of(base.precision);
    per_param_weight_ = pr.weight;
    per_param_grad_ = pr.grad;
    // Optimizer states per parameter, from the estimator's own rules (training.h) over the model's tensors.
    double state_elements = 0, numel = 0;
    auto count = [&](const std::vector<ParamGroup>& groups) {
      for (const auto& g : groups) {
        state_elements += double(g.count) * optimizer_state_elements(base.optimizer, double(g.out), double(g.in),
                                                                              double(g.out * g.in));
        numel += double(g.numel());
      }
    };
    const ParamInventory inv = param_inventory(s);
    count(inv.embedding);
    for (std::size_t l = 0; l < inv.layers(); ++l) count(inv.layer(l));
    count(inv.head);
    per_param_states_ = (is_adamw_8bit(base.optimizer) ? adamw_8bit_bytes_per_param
                                                                 : state_elements / numel * pr.state) + pr.master;
    step_temp_per_param_ = step_temporaries_per_param(base.optimizer, pr.state, pr.master);
    if (base.lora.rank > 0) {
      // LoRA: the frozen base has no gradients or states (the adapters' are small: left out of the bound); QLoRA
      // keeps the decoder linears in NF4, 4.127 bits (the bound takes that width for every parameter).
      per_param_grad_ = per_param_states_ = step_temp_per_param_ = 0;
      if (base.lora.qlora) per_param_weight_ = (4.0 + 8.0 / 64 + 32.0 / (64 * 256)) / 8.0;
    }
    // Parameters per layer: replicated under TP (norms, router) and split (heads, FFN), separated by evaluating
    // the inventory at doubled split widths (parallel.h).
    const ModelSpec wide = doubled_split_widths(s);
    const ParamInventory wide_inv = param_inventory(wide);
    double p1 = 0, p2 = 0;
    double experts = 0;  // routed-expert weights (split over ep, and over tp by their FFN width)
    for (std::size_t l = 0; l < inv.layers(); ++l) {
      for (const auto& g : inv.layer(l)) {
        p1 += double(g.numel());
        experts += g.expert ? double(g.numel()) : 0.0;
      }
      for (const auto& g : wide_inv.layer(l)) p2 += double(g.numel());
    }
    layer_experts_ = experts / layers_;
    layer_split_ = (p2 - p1) / layers_ - layer_experts_;
    layer_replicated_ = (2 * p1 - p2) / layers_;
    const double h = double(s.hidden), V = double(s.vocab);
    vocab_params_ = V * h;
    head_params_ = s.tied_embeddings ? 0.0 : V * h;
    // Activations saved per token per layer, split the same way, for each recomputation mode.
    const detail::ActivationDtypes dt{pr.compute, pr.stream, pr.autocast};
    TrainingWorkload w = base;
    const detail::LayerActivationModel act(s, w, dt), act_wide(wide, w, dt);
    double a1 = 0, a2 = 0;
    for (std::int64_t l = 0; l < s.layers; ++l) {
      a1 += act.layer(l).per_token;
      a2 += act_wide.layer(l).per_token;
    }
    act_split_ = (a2 - a1) / layers_;
    act_hidden_ = (2 * a1 - a2) / layers_;
    checkpoint_ = pr.stream * h;
    // Loss buffers per token (backward through the loss, estimate_training_memory): 12 B per vocabulary entry for
    // 16-bit logits, 4 more with the vocabulary-parallel loss.
    const double cl = pr.compute;
    loss_per_vocab_ = cl + 8.0 + (cl < 4 ? cl : 0.0);
    // torchtune's chunked loss keeps the 16-bit logits and one chunk's buffers; Liger's fused loss the hidden
    // states' gradient (tensors.h loss_buffers; the fused loss's one chunk of logits left out of the bound).
    if (base.loss == Loss::chunked) loss_per_vocab_ = cl + (8.0 + cl) / double(base.loss_chunks);
    if (base.loss == Loss::fused) loss_per_vocab_ = cl * h / V;
    logit_bytes_ = cl;
    vocab_ = V;
    hidden_ = h;
    seq_ = double(base.seq);
    fixed_ = (PytorchProfile::cuda_context + PytorchProfile::cublas_workspaces).in(unit::bytes);
    nccl_ = PytorchProfile::nccl_buffers.in(unit::bytes);
  }

  // Per-GPU bytes on the most-loaded pipeline stage (first or last), without the allocator's reserve.
  double lower_bound(const TrainingLayout& L) const {
    const double tp = double(L.tp), pp = double(L.pp), dp = double(L.dp());
    const double T = double(L.micro_batch) * seq_;
    const double stage_layers = std::ceil(layers_ / pp);
    const double layer_experts = layer_experts_ / (tp * double(L.ep));
    const double layer_params = layer_replicated_ + layer_split_ / tp + layer_experts;
    const double first_params = stage_layers * layer_params + vocab_params_ / tp + (L.pp == 1 ? head_params_ / tp : 0.0);
    const double last_params = stage_layers * layer_params + (head_params_ > 0 ? head_params_ : vocab_params_) / tp;
    const double params = std::max(first_params, L.pp > 1 ? last_params : 0.0);
    const bool sharded = dp > 1;
    // ZeRO shards dense parameters over dp, experts over the dp/ep ranks that hold the same experts.
    const double expert_params = stage_layers * layer_experts;
    auto shard = [&](bool on) {
      return on ? (params - expert_params) / dp + expert_params / std::max(1.0, dp / double(L.ep)) : params;
    };
    const double weights = shard(sharded && L.zero == 3) * per_param_weight_ *
                           (L.offload != Offload::none && L.zero == 3 ? 0.0 : 1.0);
    const double grads = shard(sharded && L.zero >= 2) * per_param_grad_;
    const double states = L.offload != Offload::none ? 0.0 : shard(sharded && L.zero >= 1) * per_param_states_;
    const double step_temp = L.offload != Offload::none ? 0.0 : shard(sharded && L.zero >= 1) * step_temp_per_param_;
    // Saved activations per token per layer on this rank (TP splits heads and FFN; no sequence parallelism here).
    const double saved = L.recompute == Recompute::full ? checkpoint_ : act_hidden_ + act_split_ / tp;
    const double working = act_hidden_ + act_split_ / tp;
    const double in_flight_first = L.pp > 1 ? double(std::min(L.pp, L.grad_accum)) : 1.0;
    const double acts_first = (in_flight_first * stage_layers * saved + working) * T;
    const double loss = (loss_per_vocab_ + (L.tp > 1 ? 4.0 : 0.0)) * vocab_ / tp * T;
    // torch pipelining keeps the last stage's logits of every micro-batch and concatenates them at the end.
    const double outputs = L.pp > 1 ? double(L.grad_accum) * logit_bytes_ * vocab_ / tp * T : 0.0;
    const double acts_last = (stage_layers * saved + working) * T + loss + std::max(0.0, outputs - logit_bytes_ * vocab_ / tp * T);
    const double accum = L.grad_accum > 1 ? grads : 0.0;
    // DDP's gradient buckets (a second gradient copy); FSDP2's gathered layers: the current and the prefetched one
    // under full shard, two copies each (all-gather buffer and unsharded parameters).
    const double buckets = sharded && L.zero == 0 ? params * per_param_grad_ : 0.0;
    const double gathered = sharded && L.zero == 3 ? 4.0 * layer_params * per_param_weight_ : 0.0;
    const double backward = weights + states + accum + buckets + gathered +
                            std::max(acts_first + (L.pp == 1 ? loss : 0.0), L.pp > 1 ? acts_last : 0.0);
    const double step = weights + grads + states + buckets + std::max(step_temp, 2 * outputs);
    return std::max(backward, step) + fixed_ + (L.gpus > 1 ? nccl_ : 0.0);
  }

 private:
  double layers_;
  double per_param_weight_ = 0, per_param_grad_ = 0, per_param_states_ = 0, step_temp_per_param_ = 0;
  double layer_split_ = 0, layer_replicated_ = 0, layer_experts_ = 0, vocab_params_ = 0, head_params_ = 0;
  double act_split_ = 0, act_hidden_ = 0, checkpoint_ = 0, loss_per_vocab_ = 0, logit_bytes_ = 0;
  double vocab_ = 0, hidden_ = 0, seq_ = 0, fixed_ = 0, nccl_ = 0;
};

// ---------------------------------------------------------------------------------------------------------------
// Training plan

// The micro-batches the planner tries (sequences per GPU in one forward and backward): powers of two to 16.
inline constexpr std::array<std::int64_t, 5> plan_micro_batches{1, 2, 4, 8, 16};

// The planner's default tokens per optimizer step: 4M to pre-train (Llama 2, Touvron et al. 2023, §2.2), 512K to
// fine-tune (Tulu 3's SFT, Lambert et al. 2024: 128 sequences × 4096 tokens).
inline double default_global_batch_tokens(bool fine_tune) { return fine_tune ? 524288.0 : 4.0e6; }

// The share of usable memory the planner keeps free by default: estimates are a few percent off either way, and a
// run's memory drifts (longer packed sequences, allocator state), so a setup at 100% is not one to rent.
inline constexpr double default_headroom = 0.10;

// Whether a step of `step_tokens` stays within the global batch (the planner's rule: a layout whose one step
// already overshoots it is out).
inline bool within_global_batch(double step_tokens, double global_batch_tokens) {
  return step_tokens <= global_batch_tokens * 1.0001;
}

// A full estimate over the device's usable memory with `headroom` kept free: above 1 it does not fit (the
// planner's verification).
inline double headroom_ratio(const MemoryEstimate& m, const Device& d, double headroom) {
  return m.total.in(unit::bytes) / (d.capacity().in(unit::bytes) * (1 - headroom));
}

struct TrainingPlanRequest {
  TrainingWorkload base;                  // precision, optimizer, seq, attention, profile (layout fields ignored)
  Tokens tokens{0};
  double global_batch_tokens = default_global_batch_tokens(false);  // tokens per optimizer step
  double headroom = default_headroom;     // keep this share of usable memory free
  Objective objective = Objective::cost;
  int top = 5;
  std::int64_t max_gpus = 4096;
  std::optional<Seconds> deadline;
  std::optional<Usd> budget;
  std::string provider;
  std::vector<std::string> gpus;          // accelerator ids to consider (empty: the whole catalog)
  bool spot = false;
  std::optional<double> mfu;              // a stated end-to-end MFU; default: the step-time model (step_time.h)
  std::optional<ByteRate> network;        // per GPU between nodes (default 50 GB/s)
};

struct TrainingCandidate {
  const Device* device = nullptr;
  Rental rental;                          // the instances rented (cost.h; only .offering set for nearest_memory)
  TrainingLayout layout;
  double screen_bytes = 0;                // the closed-form lower bound
  Bytes memory{0};                        // the full estimate, per GPU (after verification)
  std::string peak_phase;
  Seconds time{0};
  double compute_seconds = 0, bubble_seconds = 0, exposed_comm_seconds = 0;
  double mfu = 0;
  Usd cost{0};
};

struct TrainingPlan {
  std::vector<TrainingCandidate> best;    // verified, in objective order, one per (device, GPU count)
  std::int64_t evaluated = 0;             // (layout, offering) configurations the screen evaluated
  std::int64_t layouts = 0;               // device-independent layouts screened
  std::int64_t candidates = 0;            // configurations that passed the screen and the constraints
  std::int64_t verified = 0;              // full estimates run
  std::int64_t rejected = 0;              // of those, over the headroom
  Flops model_flops{0};
  // When nothing qualifies: the bound that failed (memory, deadline, budget or headroom) and the setup closest to
  // meeting it (for memory: the smallest screen bytes over usable memory; deadline: the fastest; budget: the
  // cheapest; headroom: the smallest full estimate).
  std::string failed_bound;
  std::optional<TrainingCandidate> closest;
  double closest_ratio = 0;                // the closest setup's value over the bound (memory: bytes / usable)
  std::vector<std::string> assumptions;
};

namespace detail {

inline double objective_value(const TrainingCandidate& c, Objective o) {
  return o == Objective::cost ? c.cost.in(unit::usd) : c.time.in(unit::seconds);
}
// Ranking: the objective, then the other one (the same cost sooner, the same time cheaper), then fewer instances
// (the same run on 128 8-GPU nodes rather than 256 4-GPU ones: fewer machines to link and to lose), then the
// simpler setup — no optimizer offload, less recomputation, a lower ZeRO stage — where it costs nothing (attention
// under flash kernels saves no memory recomputed), so that ties do not rank by the order the search met them.
inline bool ranks_before(const TrainingCandidate& a, const TrainingCandidate& b, Objective o) {
  const double x = objective_value(a, o), y = objective_value(b, o);
  if (x != y) return x < y;
  const Objective other = o == Objective::cost ? Objective::time : Objective::cost;
  if (objective_value(a, other) != objective_value(b, other)) return objective_value(a, other) < objective_value(b, other);
  return std::tuple(a.rental.instances, a.layout.offload, a.layout.recompute, a.layout.zero) <
         std::tuple(b.rental.instances, b.layout.offload, b.layout.recompute, b.layout.zero);
}


inline std::vector<std::int64_t> powers_of_two(std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t n = 1; n <= hi; n *= 2) v.push_back(n);
  return v;
}

}  // namespace detail

namespace detail {

inline void validate(const TrainingPlanRequest& req) {
  validate(req.base);
  if (req.tokens.in(unit::tokens) <= 0) throw InputError("plan train needs a positive token count (--tokens)");
  if (!(req.headroom >= 0 && req.headroom < 0.9)) throw InputError("--headroom must be between 0% and 90%");
  if (req.top < 1 || req.top > 100) throw InputError("--top must be between 1 and 100");
  if (req.max_gpus < 1 || req.max_gpus > 1'000'000) throw InputError("--max-gpus must be between 1 and 1,000,000");
  if (!(req.global_batch_tokens >= double(req.base.seq))) throw InputError("--global-batch must hold at least one sequence");
}

// A device with one of its offerings (the cheapest per instance size: the same time at a higher price never wins).
struct DeviceChoice {
  const Device* device;
  const Offering* offering;
  double peak;
  double usable;
};

inline std::vector<DeviceChoice> device_choices(const TrainingPlanRequest& req, const Catalog& cat) {
  const ComputeFormat format = compute_format(req.base.precision);
  std::vector<DeviceChoice> choices;
  for (const auto& d : cat.devices) {
    if (!req.gpus.empty() &&
        std::none_of(req.gpus.begin(), req.gpus.end(), [&](const std::string& g) { return cat.find(g) == &d; }))
      continue;
    // The pytorch profile is PyTorch's CUDA (and ROCm, the same caching allocator) stack: other accelerators
    // (TPU, Trainium, Gaudi) run other runtimes, so they are planned only when named.
    if (req.gpus.empty() && d.vendor != "NVIDIA" && d.vendor != "AMD") continue;
    const auto peak = peak_for(d, format);
    if (!peak) continue;
    // price_setup sorts cheapest first (per GPU, for one GPU of each): keep the first offering of each instance size.
    std::vector<std::pair<int, std::optional<int>>> sizes;
    for (const auto& p : price_setup(cat, d, Setup{}, req.spot, req.provider)) {
      const std::pair<int, std::optional<int>> size{p.offering->count, p.offering->max_count};
      if (std::find(sizes.begin(), sizes.end(), size) != sizes.end()) continue;
      sizes.push_back(size);
      choices.push_back({&d, p.offering, *peak, d.capacity().in(unit::bytes) * (1 - req.headroom)});
    }
  }
  for (const auto& g : req.gpus) cat.get(g);  // unknown ids are usage errors
  if (choices.empty()) throw InputError("no priced offering matches (--gpu/--provider/--spot): nothing to plan on");
  return choices;
}

// The search space: powers-of-two GPU counts × tp (inside a node of 8) × pp × ep (MoE) × micro-batch × ZeRO ×
// recomputation × optimizer offload; micro-batches per step follow from the global batch. Calls f(layout, tokens
// per micro-batch step over all data-parallel ranks).
template <class F>
void for_each_layout(const ModelSpec& s, const TrainingPlanRequest& req, F&& f) {
  const std::int64_t max_node = 8;  // tensor parallelism stays inside an NVLink domain of 8 (HGX boards)
  const double seq = double(req.base.seq);
  for (std::int64_t n : powers_of_two(req.max_gpus))
    for (std::int64_t tp : {1, 2, 4, 8}) {
      if (tp > n || tp > max_node || s.heads % tp || s.kv_heads % tp || s.intermediate % tp) continue;
      if (std::any_of(s.layer_shapes.begin(), s.layer_shapes.end(),  // layers of their own heads and FFN width
                      [&](const LayerShape& sh) { return sh.kv_heads % tp || sh.intermediate % tp; }))
        continue;
      if (s.moe.experts > 0 && s.moe.intermediate % tp) continue;
      for (std::int64_t pp = 1; tp * pp <= n && pp <= s.layers; pp *= 2) {
        const std::int64_t dp = n / (tp * pp);
        // Expert parallelism (MoE only): experts spread over ep of the data-parallel ranks.
        for (std::int64_t ep = 1; ep <= dp; ep *= 2) {
          if (ep > 1 && (s.moe.experts == 0 || s.moe.experts % ep != 0)) break;
          for (std::int64_t mb : plan_micro_batches) {
            // Micro-batches per step for the global batch; a layout whose one step already overshoots it is out.
            const double per_step = double(mb) * seq * double(dp);
            if (!within_global_batch(per_step, req.global_batch_tokens)) continue;
            const std::int64_t m = std::max<std::int64_t>(1, std::llround(req.global_batch_tokens / per_step));
            for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
              for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
                for (Offload off : {Offload::none, Offload::cpu}) {
                  // ZeRO-Offload works on ZeRO's partitions; on one GPU the whole model is the partition.
                  if (off != Offload::none && zero == 0 && dp > 1) continue;
                  f(TrainingLayout{n, tp, pp, zero, mb, m, ep, rc, off}, per_step);
                }
          }
        }
      }
    }
}

// What a layout asks of any device: optimizer steps and what one GPU's optimizer walks.
struct LayoutWork {
  double steps = 0, local_params = 0, param_tensors = 0;
};

// The model's figures the work depends on, counted once per plan.
struct ModelTotals {
  double params = 0, tensors = 0;  // trainable: every parameter, or LoRA's adapters
  ModelTotals(const ModelSpec& s, const LoraSpec& lora)
      : params(lora.rank > 0 ? lora_adapter_total(s, lora) : double(count_params(s).total.in(unit::params))),
        tensors(trainable_tensors(s, lora)) {}
};

inline LayoutWork layout_work(const ModelTotals& totals, const TrainingPlanRequest& req,
                              const TrainingLayout& L, double per_step) {
  LayoutWork k;
  k.steps = double(req.tokens.in(unit::tokens)) / (per_step * double(L.grad_accum));
  k.local_params = totals.params / double(L.tp * L.pp);
  k.param_tensors = totals.tensors / double(L.tp * L.pp);
  return k;
}

inline TrainingWorkload layout_workload(const TrainingWorkload& base, const TrainingLayout& L) {
  TrainingWorkload w = base;
  w.gpus = L.gpus;
  w.tp = L.tp;
  w.pp = L.pp;
  w.ep = L.ep;
  w.zero = int(L.zero);
  w.batch = L.micro_batch;
  w.grad_accum = L.grad_accum;
  w.recompute = L.recompute;
  w.offload_optimizer = L.offload;
  w.offload_params = L.offload != Offload::none && L.zero == 3 ? Offload::cpu : Offload::none;
  return w;
}

// A layout's micro-batch work per pipeline stage, computed once per kernel style and reused for every device.
// Stage work shared by layouts that differ only in data parallelism, ZeRO, offload and micro-batches per step.
using StageWorkCache =
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, Recompute, Kernels>, std::vector<StageWork>>;

// A layout's micro-batch work per pipeline stage and its collectives, computed once and reused for every device.
class LayoutStages {
 public:
  LayoutStages(const ModelSpec& s, TrainingWorkload w, StageWorkCache& shared) : s_(s), w_(std::move(w)), shared_(shared) {}
  const TrainingWorkload& workload() const { return w_; }
  const std::vector<StageWork>& get(Kernels k) {
    auto [it, fresh] = shared_.try_emplace({w_.tp, w_.pp, w_.ep, w_.batch, w_.recompute, k});
    if (fresh) it->second = stage_works(s_, w_, k);
    return it->second;
  }
  // Its collectives' bytes per GPU and step (parallel.h), the tensor-parallel ones for the first stage's layers.
  const std::vector<Communication>& comms(double local_params) {
    if (!comms_) {
      const PrecisionRecipe pr = recipe_of(w_.precision);
      const double el = w_.lora.rank > 0 ? 4.0 : 0.0;  // PEFT's adapters and their gradients are fp32
      comms_.emplace(std::vector<Communication>{
          data_parallel_communication(w_, local_params, el > 0 ? el : pr.weight, el > 0 ? el : pr.grad)});
      for (auto& x : model_parallel_communication(s_, w_, (s_.layers + w_.pp - 1) / w_.pp, pr.compute))
        if (x.bytes_per_gpu.in(unit::bytes) > 0) comms_->push_back(std::move(x));
    }
    return *comms_;
  }

 private:
  const ModelSpec& s_;
  TrainingWorkload w_;
  StageWorkCache& shared_;
  std::optional<std::vector<Communication>> comms_;
};

// The layout on one device's offering: time (the step-time model, step_time.h, or the model FLOPs at a stated
// --mfu) and cost in whole instances; none when the screen says it cannot fit or the offering cannot host it.
inline std::optional<TrainingCandidate> price_layout(const ModelSpec& s, const TrainingPlanRequest& req,
                                                     LayoutStages& stages, const TrainingLayout& L, double screen_bytes,
                                                     const LayoutWork& k, const DeviceChoice& ch, double model_flops) {
  if (screen_bytes > ch.usable) return std::nullopt;
  // The pricing rule (cost.h): the tensor-parallel group inside one instance, instances linked by the network.
  const auto rental = rent(*ch.offering, Setup{L.gpus, L.tp, true}, req.spot);
  if (!rental) return std::nullopt;
  const std::int64_t node = rental->gpus_per_instance;
  TrainingCandidate c;
  c.device = ch.device;
  c.rental = *rental;
  c.layout = L;
  c.screen_bytes = screen_bytes;
  if (req.mfu) {
    c.time = Seconds(model_flops / (double(L.gpus) * ch.peak * *req.mfu));
    c.compute_seconds = c.time.in(unit::seconds);
  } else {
    const TrainingWorkload& w = stages.workload();
    CommSeconds comms;  // the layout's traffic (device-independent) over this offering's links
    for (const auto& x : stages.comms(k.local_params)) {
      comms.add(x.kind, x.bytes_per_gpu.in(unit::bytes) /
                            link_bytes_per_s(*ch.device, group_spans_nodes(x, w, node), req.network));
    }
    StepInputs in;
    in.model = &s;
    in.workload = &w;
    in.device = ch.device;
    in.trainable_on_gpu = k.local_params;
    in.param_tensors = k.param_tensors;
    in.host_optimizer_seconds =
        L.offload != Offload::none ? host_optimizer_seconds(k.local_params / double(L.zero >= 1 ? L.dp() : 1), w.profile) : 0.0;
    in.comms = comms;
    TimeOptions o;
    o.network = req.network;
    const Kernels kernels = resolve_kernels(o.kernels, w, *ch.device);
    const StepTime st = time_step(stages.get(kernels), in, o, kernels);
    c.compute_seconds = k.steps * (st.compute + st.optimizer);
    c.bubble_seconds = k.steps * st.bubble;
    c.exposed_comm_seconds = k.steps * (st.tensor_comm + st.expert_comm + st.context_comm + st.data_comm + st.host_optimizer);
    c.time = Seconds(k.steps * st.total);
  }
  c.mfu = model_flops / (c.time.in(unit::seconds) * double(L.gpus) * ch.peak);
  c.cost = rental->over(c.time);
  return c;
}

// Candidates kept per (device, GPU count), and full estimates run at most: room for the rows asked for and the
// screen's optimism (candidates the full estimate drops), 24 per row, at least 64 — verification runs ~top times.
inline std::size_t kept_candidates(const TrainingPlanRequest& req) { return std::size_t(std::max(64, req.top * 24)); }

// Verification: the full estimator, best first, until `top` setups fit with the headroom; one per (device, GPU
// count) so the list shows alternatives.
inline void verify_candidates(const ModelSpec& s, const TrainingPlanRequest& req, std::vector<TrainingCandidate> ranked,
                              TrainingPlan& plan) {
  std::vector<std::pair<const Device*, std::int64_t>> seen;
  for (auto& c : ranked) {
    if (int(plan.best.size()) >= req.top || std::size_t(plan.verified) >= kept_candidates(req)) break;
    const std::pair<const Device*, std::int64_t> key{c.device, c.layout.gpus};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    const TrainingEstimate e = estimate_training_memory(s, layout_workload(req.base, c.layout));
    ++plan.verified;
    const double ratio = headroom_ratio(e.memory, *c.device, req.headroom);
    if (ratio > 1) {
      ++plan.rejected;
      if (!plan.closest || ratio < plan.closest_ratio) {
        plan.closest = c;
        plan.closest->memory = e.memory.total;
        plan.closest_ratio = ratio;
      }
      continue;
    }
    c.memory = e.memory.total;
    c.peak_phase = e.memory.peak_phase;
    seen.push_back(key);
    plan.best.push_back(c);
  }
}

inline std::vector<std::string> training_plan_assumptions(const TrainingPlanRequest& req, const TrainingPlan& plan) {
  std::vector<std::string> as;
  as.push_back("search: powers-of-two GPU counts up to " + std::to_string(req.max_gpus) +
               "; tp 1–8 inside a node; pp powers of two; expert parallelism (MoE) powers of two; ZeRO 0–3; micro-batch 1–16; recompute none/selective/full; "
               "optimizer offload to CPU; the cheapest offering per instance size");
  as.push_back("global batch " + std::to_string(std::llround(req.global_batch_tokens)) +
               " tokens per step: micro-batches per step = global batch / (micro-batch × seq × dp)");
  as.push_back(req.mfu ? "time: the model FLOPs at the stated --mfu"
                       : "time: the step-time model (step_time.h): matmuls, attention and memory-bound kernels at "
                         "calibrated shares of each device's sustained rates, the pipeline bubble (1F1B), tensor-parallel "
                         "collectives (not overlapped), data-parallel collectives beyond the compute they overlap and the "
                         "host optimizer step under offload; the implied MFU is shown per row");
  as.push_back("memory: every reported figure is the full per-GPU estimate (pytorch profile); a closed-form screen "
               "only pre-selects, and candidates over the headroom are dropped (" + std::to_string(plan.rejected) +
               " here)");
  as.push_back("cost: whole instances at the offering's " + std::string(req.spot ? "spot" : "on-demand") +
               " price, for the run's wall time; a tensor-parallel group inside one instance");
  as.push_back("runs beyond one instance use multi-GPU instances (" + std::to_string(cluster_instance_min_gpus) +
               "+ accelerators) with the network at " +
               std::to_string(std::llround((req.network ? req.network->in(unit::bytes_per_s) : default_network_bytes_per_s) / 1e9)) +
               " GB/s per GPU; single-accelerator instances only for single-instance runs");
  as.push_back(req.gpus.empty() ? "accelerators: NVIDIA and AMD (PyTorch's CUDA/ROCm stack, which the memory profile models); "
                                  "name TPUs, Trainium or Gaudi with --gpu to include them"
                                : "accelerators: the --gpu list; TPU, Trainium and Gaudi memory follows the PyTorch CUDA "
                                  "profile, not their own runtimes");
  return as;
}

}  // namespace detail

// Search space → screen (closed form, every layout × offering) → the best candidates by the objective →
// verification by the full estimator → the plan.
inline TrainingPlan plan_training(const ModelSpec& s, const TrainingPlanRequest& req, const Catalog& cat) {
  validate(s);
  detail::validate(req);
  const std::vector<detail::DeviceChoice> choices = detail::device_choices(req, cat);
  TrainingPlan plan;
  plan.model_flops = training_flops(s, req.tokens, req.base.seq, Recompute::none, req.base.lora).model;
  const TrainingMemoryScreen screen(s, req.base);
  const detail::ModelTotals totals(s, req.base.lora);
  // The setups nearest each bound, for the answer when nothing qualifies.
  std::optional<TrainingCandidate> nearest_memory, fastest_late, cheapest_over;
  double memory_ratio = 0;
  detail::StageWorkCache stage_work;

  // Keep the best candidates by the objective in bounded max-heaps, one per (device, GPU count), the list's rows:
  // each row needs room for its own candidates the full estimate drops before the first that fits (the screen's
  // optimism), however the other rows' candidates rank — with one heap for all, a GPU count whose cheaper layouts
  // all fail lost its row to the many near-ties of the others (LoRA of an 8B model on 1 of up to 8 H100s).
  const std::size_t keep = detail::kept_candidates(req);
  auto worse = [&](const TrainingCandidate& a, const TrainingCandidate& b) {
    return detail::ranks_before(a, b, req.objective);
  };
  using Heap = std::priority_queue<TrainingCandidate, std::vector<TrainingCandidate>, decltype(worse)>;
  std::map<std::pair<const Device*, std::int64_t>, Heap> heaps;
  detail::for_each_layout(s, req, [&](const TrainingLayout& L, double per_step) {
    const double bytes = screen.lower_bound(L);
    ++plan.layouts;
    const detail::LayoutWork work = detail::layout_work(totals, req, L, per_step);
    detail::LayoutStages stages(s, detail::layout_workload(req.base, L), stage_work);
    for (const auto& ch : choices) {
      ++plan.evaluated;
      if (bytes > ch.usable && (!nearest_memory || bytes / ch.usable < memory_ratio)) {
        nearest_memory.emplace();
        nearest_memory->device = ch.device;
        nearest_memory->rental.offering = ch.offering;
        nearest_memory->layout = L;
        nearest_memory->screen_bytes = bytes;
        memory_ratio = bytes / ch.usable;
      }
      auto c = detail::price_layout(s, req, stages, L, bytes, work, ch, plan.model_flops.in(unit::flop));
      if (!c) continue;
      if (req.deadline && c->time > *req.deadline) {
        if (!fastest_late || c->time < fastest_late->time) fastest_late = c;
        continue;
      }
      if (req.budget && c->cost > *req.budget) {
        if (!cheapest_over || c->cost < cheapest_over->cost) cheapest_over = c;
        continue;
      }
      ++plan.candidates;
      Heap& heap = heaps.try_emplace({ch.device, L.gpus}, worse).first->second;
      if (heap.size() < keep) heap.push(std::move(*c));
      else if (worse(*c, heap.top())) {
        heap.pop();
        heap.push(std::move(*c));
      }
    }
  });
  std::vector<TrainingCandidate> ranked;
  for (auto& [row, heap] : heaps)
    for (; !heap.empty(); heap.pop()) ranked.push_back(heap.top());
  std::stable_sort(ranked.begin(), ranked.end(), worse);
  detail::verify_candidates(s, req, std::move(ranked), plan);
  if (plan.best.empty()) {
    if (plan.closest) plan.failed_bound = "headroom";  // the screen passed, the full estimate did not
    else if (fastest_late) {
      plan.failed_bound = "deadline";
      plan.closest = fastest_late;
      plan.closest_ratio = fastest_late->time.in(unit::seconds) / req.deadline->in(unit::seconds);
    } else if (cheapest_over) {
      plan.failed_bound = "budget";
      plan.closest = cheapest_over;
      plan.closest_ratio = cheapest_over->cost.in(unit::usd) / req.budget->in(unit::usd);
    } else {
      plan.failed_bound = "memory";
      plan.closest = nearest_memory;
      plan.closest_ratio = memory_ratio;
    }
  }
  plan.assumptions = detail::training_plan_assumptions(req, plan);
  return plan;
}

// ---------------------------------------------------------------------------------------------------------------
// The micro-batch of one layout on one device: the planner's rule, and train's default when --batch is not given

struct MicroBatchChoice {
  std::int64_t micro_batch = 1;
  bool fits = false;                // within the headroom (false: none is, and the smallest is kept)
  std::int64_t larger = 0;          // the next larger micro-batch tried, over the headroom (0: none)
  Bytes larger_total{0};            // its full estimate
  bool global_batch_bound = false;  // larger micro-batches were left out because a step would pass the global batch
  TrainingEstimate estimate;        // the chosen micro-batch's full estimate
};

// The largest of the planner's micro-batches (plan_micro_batches) whose optimizer step, micro-batch ×
// `step_tokens_per_sequence` (seq × accumulation × data-parallel ranks), stays within the global batch and whose
// full estimate fits the device with `headroom` kept free: the planner's two filters (for_each_layout,
// verify_candidates) on a layout whose parallelism, recomputation and accumulation are fixed. A larger micro-batch
// amortises each GEMM's and kernel launch's fixed cost, and the optimizer step, over more tokens, so it is the one a
// user keeps, as HF Trainer's auto_find_batch_size finds it: accelerate's find_executable_batch_size decreases "the
// batch size in half after each failed run" (accelerate docs/source/usage_guides/memory.md). Memory grows with the
// micro-batch, so the walk goes down from the largest and stops at the first that fits; micro-batch 1 stands when
// none does (its estimate says by how much).
inline MicroBatchChoice choose_micro_batch(const ModelSpec& s, const TrainingWorkload& w, const Device& d,
                                           double step_tokens_per_sequence, double global_batch_tokens, double headroom) {
  MicroBatchChoice c;
  for (auto mb = plan_micro_batches.rbegin(); mb != plan_micro_batches.rend(); ++mb) {
    if (*mb > 1 && !within_global_batch(double(*mb) * step_tokens_per_sequence, global_batch_tokens)) {
      c.global_batch_bound = true;
      continue;
    }
    TrainingWorkload v = w;
    v.batch = *mb;
    TrainingEstimate e = estimate_training_memory(s, v);
    const bool fits = headroom_ratio(e.memory, d, headroom) <= 1;
    if (fits || *mb == 1) {
      c.micro_batch = *mb;
      c.fits = fits;
      c.estimate = std::move(e);
      break;
    }
    c.larger = *mb;
    c.larger_total = e.memory.total;
  }
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Serving plan: vLLM on each accelerator, tp GPUs per replica, as many replicas as the target needs

struct ServingPlanRequest {
  std::int64_t prompt_len = defaults::prompt_len;
  std::int64_t new_tokens = defaults::new_tokens;
  Precision precision = Precision::bf16;
  std::optional<double> concurrency;        // sequences served at once
  std::optional<double> tokens_per_second;  // aggregate output tokens per second
  std::optional<Seconds> latency;           // per output token, at most
  Objective objective = Objective::cost;    // cost: $ per 1M output tokens; time: per-token latency
  int top = 5;
  std::int64_t max_gpus = 1024;
  double headroom = 0.0;                    // vLLM claims its share of memory itself (gpu_memory_utilization)
  std::string provider;
  std::vector<std::string> gpus;
  bool spot = false;
  std::vector<WeightFormat> weights{WeightFormat::bf16, WeightFormat::fp8, WeightFormat::awq_int4};
  std::vector<KvDtype> kv{KvDtype::bf16, KvDtype::fp8};
  Efficiency efficiency;
  std::optional<EngineVersion> engine_version;  // vLLM's (default: the newest modelled)
};

struct ServingCandidate {
  const Device* device = nullptr;
  Rental rental;                           // the instances the replicas run on (cost.h)
  std::int64_t tp = 1, replicas = 1;
  WeightFormat weights = WeightFormat::bf16;
  KvDtype kv = KvDtype::bf16;
  Bytes weight_bytes{0};                   // per GPU
  double max_concurrency = 0;              // sequences of prompt + new tokens one replica's KV pool holds
  std::int64_t batch = 1;                  // sequences decoded together per replica
  double decode_tokens_per_s = 0;          // all replicas
  Seconds token_latency{0};
  Seconds time_to_first_token{0};
  double usd_per_million_output_tokens = 0;
};

struct ServingPlan {
  std::vector<ServingCandidate> best;
  std::int64_t evaluated = 0;
  std::vector<std::string> assumptions;
};

inline ServingPlan plan_serving(const ModelSpec& s, const ServingPlanRequest& req, const Catalog& cat) {
  validate(s);
  if (!req.concurrency && !req.tokens_per_second && !req.latency)
    throw InputError("plan infer needs a target: --concurrency, --tokens-per-second or --latency");
  if (req.concurrency && !(*req.concurrency >= 1 && *req.concurrency <= 1e7)) throw InputError("--concurrency must be between 1 and 1e7");
  if (req.tokens_per_second && !(*req.tokens_per_second > 0 && *req.tokens_per_second <= 1e9))
    throw InputError("--tokens-per-second must be positive");
  if (req.latency && !(req.latency->in(unit::seconds) > 0)) throw InputError("--latency must be positive");
  if (req.top < 1 || req.top > 100) throw InputError("--top must be between 1 and 100");
  if (req.max_gpus < 1 || req.max_gpus > 1'000'000) throw InputError("--max-gpus must be between 1 and 1,000,000");
  for (const auto& g : req.gpus) cat.get(g);
  vllm_release(req.engine_version);  // a release before the oldest modelled is a usage error
  ServingPlan plan;
  const double context = double(req.prompt_len + req.new_tokens);
  const double avg_ctx = average_decode_context(context, double(req.new_tokens));
  for (const auto& d : cat.devices) {
    if (!req.gpus.empty() &&
        std::none_of(req.gpus.begin(), req.gpus.end(), [&](const std::string& g) { return cat.find(g) == &d; }))
      continue;
    if (price_setup(cat, d, Setup{}, req.spot, req.provider).empty()) continue;  // no offering of the device
    for (std::int64_t tp : {1, 2, 4, 8}) {
      if (serving_tp_problem(s, InferenceWorkload{}, tp)) continue;  // vLLM's head divisibility
      for (WeightFormat wf : req.weights) {
        if (!serving_peak(d, wf).first || cannot_run(d, Profile::vllm, wf)) continue;  // runs_on.h
        for (KvDtype kv : req.kv) {
          ++plan.evaluated;
          InferenceWorkload w;
          w.profile = Profile::vllm;
          w.precision = req.precision;
          w.weights = wf;
          w.kv = kv;
          w.tp = tp;
          w.prompt_len = req.prompt_len;
          w.new_tokens = req.new_tokens;
          w.context = req.prompt_len + req.new_tokens;  // vLLM launched with max_model_len = the workload's
          w.device_memory = Bytes(d.capacity().in(unit::bytes) * (1 - req.headroom));
          w.cuda_total = Bytes(d.cuda_total().in(unit::bytes) * (1 - req.headroom));
          w.device_is_a100 = d.id.rfind("a100", 0) == 0;
          w.link = gpu_link_of(d.interconnect);
          w.mxfp4_kernel = mxfp4_backend(d.memory_type.rfind("HBM", 0) == 0, d.peak.fp8.has_value(), d.peak.fp4.has_value());
          w.vllm.version = req.engine_version;
          const InferenceEstimate e = estimate_inference_memory(s, w);
          const double conc = e.serving.max_concurrency.value_or(0);
          if (!e.serving.starts.value_or(false) || conc < 1) continue;
          auto speed = [&](std::int64_t b) {
            return serving_throughput(s, d, e.weights, e.weight_bytes.in(unit::bytes), e.kv_bytes_per_token.in(unit::bytes),
                                      b, req.prompt_len, avg_ctx, tp, req.efficiency, Profile::vllm);
          };
          // Sequences per replica: the target concurrency where it fits, else the pool's limit; under a latency
          // target, the largest batch whose decode step still meets it (decode time grows with the batch).
          std::int64_t b = std::max<std::int64_t>(1, std::int64_t(std::floor(conc)));
          if (req.concurrency) b = std::min<std::int64_t>(b, std::int64_t(std::ceil(*req.concurrency)));
          if (req.latency) {
            if (speed(1).decode_step > *req.latency) continue;
            std::int64_t lo = 1, hi = b;
            while (lo < hi) {
              const std::int64_t mid = (lo + hi + 1) / 2;
              if (speed(mid).decode_step <= *req.latency) lo = mid;
              else hi = mid - 1;
            }
            b = lo;
          }
          const Throughput th = speed(b);
          std::int64_t replicas = 1;
          if (req.concurrency) replicas = std::max<std::int64_t>(replicas, std::int64_t(std::ceil(*req.concurrency / double(b))));
          if (req.tokens_per_second)
            replicas = std::max<std::int64_t>(replicas, std::int64_t(std::ceil(*req.tokens_per_second / th.decode_tokens_per_s)));
          if (replicas * tp > req.max_gpus) continue;
          // The pricing rule (cost.h): each replica's tensor-parallel group inside one instance, the cheapest such.
          const auto rentals = price_setup(cat, d, Setup{replicas * tp, tp, false}, req.spot, req.provider);
          if (rentals.empty()) continue;
          ServingCandidate c;
          c.device = &d;
          c.rental = rentals.front();
          c.tp = tp;
          c.replicas = replicas;
          c.weights = e.weights;
          c.kv = e.kv;
          c.weight_bytes = e.weight_bytes;
          c.max_concurrency = conc;
          c.batch = b;
          c.decode_tokens_per_s = double(replicas) * th.decode_tokens_per_s;
          c.token_latency = th.decode_step;
          c.time_to_first_token = Seconds(th.prefill.in(unit::seconds) / double(b));  // one prompt's share
          c.usd_per_million_output_tokens = c.rental.per_hour().in(unit::usd_per_hour) / (c.decode_tokens_per_s * 3600.0) * 1e6;
          plan.best.push_back(c);
        }
      }
    }
  }
  auto value = [&](const ServingCandidate& c) {
    return req.objective == Objective::cost ? c.usd_per_million_output_tokens : c.token_latency.in(unit::seconds);
  };
  std::sort(plan.best.begin(), plan.best.end(), [&](const auto& a, const auto& b) { return value(a) < value(b); });
  // One setup per (device, weight format) so the list shows alternatives.
  std::vector<ServingCandidate> shown;
  for (const auto& c : plan.best) {
    if (int(shown.size()) >= req.top) break;
    if (std::any_of(shown.begin(), shown.end(), [&](const auto& x) { return x.device == c.device && x.weights == c.weights; }))
      continue;
    shown.push_back(c);
  }
  plan.best = std::move(shown);
  plan.assumptions.push_back("engine: vLLM " + req.engine_version.value_or(vllm_newest).str() +
                             " (profile vllm: gpu_memory_utilization 0.9 of the CUDA total, max_model_len = prompt + new "
                             "tokens, 16-token KV blocks); a replica is tp GPUs of one instance; replicas until the "
                             "target is met; only GPUs vLLM runs the weight format on (runs_on.h: FP8/MXFP4 on FP8 cores "
                             "or Marlin from sm80, AWQ from sm75, NVIDIA and AMD only)");
  plan.assumptions.push_back("throughput: roofline at " + std::to_string(int(req.efficiency.memory * 100)) +
                             "% of memory bandwidth and " + std::to_string(int(req.efficiency.compute * 100)) +
                             "% of peak FLOP/s; decode reads the cache at its average length");
  plan.assumptions.push_back("cost: the cheapest " + std::string(req.spot ? "spot" : "on-demand") +
                             " instances that hold each replica's tensor-parallel group, every GPU of them paid; $ per 1M "
                             "output tokens at the planned load");
  plan.assumptions.push_back("quantised formats change quality: compare evaluations before choosing one");
  return plan;
}

}  // namespace gpuplan
