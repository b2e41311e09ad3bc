// Training, steps 1 and 2: what one GPU holds. Its parameters (the pipeline stage's layers, its tensor-parallel
// slice, experts/ep), which of them train and how many optimizer-state elements they need (the inventory); then
// their bytes at rest under the precision recipe, ZeRO / FSDP sharding and offload (the model states).
#pragma once
#include <algorithm>
#include <cstdint>

#include "../../model.h"
#include "../../parallel.h"
#include "../activations.h"
#include "../optimizer.h"
#include "../workload.h"

namespace gpuplan {

inline double lora_adapter_params(const ParamGroup& g, std::int64_t rank) {
  return double(rank) * double(g.in + g.out);  // A: r×in, B: out×r
}

// Whether a parameter group trains: every group in full fine-tuning; under LoRA the targeted decoder linears
// (their adapters train, the base stays frozen).
inline bool trains(const ParamGroup& g, bool in_layer, const LoraSpec& lora) {
  return lora.rank == 0 || (in_layer && g.linear && !g.expert && detail::lora_targets_module(lora, g.module));
}

// Step 1. Parameter counts on one GPU before ZeRO.
struct ShardInventory {
  ParamInventory groups;       // this GPU's parameter groups: embedding/head only on their stage, experts/ep
  double params = 0;           // parameters on this GPU
  double expert_params = 0;    // of which routed-expert weights (ZeRO shards them over dp/ep)
  double linear_params = 0;    // of which decoder linears (autocast caches their casts; QLoRA quantizes them)
  double trainable = 0;        // trainable parameters (LoRA: the adapters)
  double trainable_expert = 0;
  double state_elements = 0;   // optimizer-state elements of the trainable parameters
  double state_expert = 0;
  double largest_tensor = 0;   // elements of the largest matrix (per-tensor optimizer loops)
  double largest_layer = 0;    // parameters of the largest decoder layer (FSDP gathers a layer at a time)
};

inline ShardInventory shard_inventory(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st) {
  ShardInventory inv;
  inv.groups = param_inventory(s);
  if (!st.embedding) inv.groups.embedding.clear();
  if (!st.head) inv.groups.head.clear();
  for (auto& kind : inv.groups.kinds)
    for (auto& g : kind)
      if (g.expert) g.count /= w.ep;  // expert parallelism: experts/ep of each MoE layer live on this GPU
  double dense = 0;
  for (const auto* groups : {&inv.groups.embedding, &inv.groups.head})
    for (const auto& g : *groups) dense += double(g.numel());
  for (std::size_t l = 0; l < inv.groups.layers(); ++l) {
    double layer = 0;
    for (const auto& g : inv.groups.layer(l)) {
      (g.expert ? inv.expert_params : dense) += double(g.numel());
      if (g.linear) inv.linear_params += double(g.numel());
      layer += double(g.numel());
    }
    inv.largest_layer = std::max(inv.largest_layer, layer);
  }
  inv.params = dense + inv.expert_params;

  const bool lora = w.lora.rank > 0;
  double adapters = 0;
  auto states = [&](double rows, double cols, double numel) { return optimizer_state_elements(w.optimizer, rows, cols, numel); };
  auto visit = [&](const std::vector<ParamGroup>& groups, bool in_layer) {
    for (const auto& g : groups) {
      inv.largest_tensor = std::max(inv.largest_tensor, double(g.out * g.in));
      if (!trains(g, in_layer, w.lora)) continue;
      if (lora) {  // adapters A (r×in) and B (out×r)
        adapters += lora_adapter_params(g, w.lora.rank);
        inv.state_elements += states(double(w.lora.rank), double(g.in), double(w.lora.rank * g.in)) +
                              states(double(g.out), double(w.lora.rank), double(g.out * w.lora.rank));
      } else {
        const double numel = double(g.numel());
        const double elements = double(g.count) * states(double(g.out), double(g.in), double(g.out * g.in));
        inv.trainable += numel;
        inv.state_elements += elements;
        if (g.expert) { inv.trainable_expert += numel; inv.state_expert += elements; }
      }
    }
  };
  visit(inv.groups.embedding, false);
  for (std::size_t l = 0; l < inv.groups.layers(); ++l) visit(inv.groups.layer(l), true);
  visit(inv.groups.head, false);
  if (lora) inv.trainable = adapters;
  return inv;
}

// Step 2. Bytes of the model states on this GPU: at rest (after ZeRO), and what offload moves off the GPU.
struct ModelStates {
  // Element sizes: the recipe's, or fp32 adapters, gradients and moments under LoRA (PEFT casts adapters to fp32
  // by default: autocast_adapter_dtype=True); master = fp32 master weights kept by the optimizer (0: none).
  double grad_el = 0, state_el = 0, master = 0;
  double weights = 0;          // every parameter this GPU computes with (base + adapters), unsharded
  double adapters = 0;         // LoRA adapters (fp32)
  double weights_at_rest = 0;  // after ZeRO-3 / FSDP parameter sharding
  double grads = 0;            // after ZeRO-2 sharding
  double states = 0;           // moments and master weights, after ZeRO-1 sharding
  double ddp_buckets = 0;      // DDP's gradient buckets: a second copy of every gradient
  // The share of a full replica one rank keeps: dense over the dp ranks, experts over the dp/ep ranks that hold
  // the same experts (Megatron's expert-data-parallel group).
  double train_share = 1, state_share = 1, param_share = 1;
  bool sharded = false;        // more than one data-parallel rank
  // Offload (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021).
  double gpu_params = 0, gpu_states = 0;  // what stays on the GPU
  double host = 0, nvme = 0;               // what moved off it
};

inline ModelStates model_states(const ShardInventory& inv, const TrainingWorkload& w) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  const bool lora = w.lora.rank > 0;
  const bool pytorch = w.profile == Profile::pytorch;
  const double N = double(w.dp());
  const double Ne = std::max(1.0, N / double(w.ep));
  auto zero_share = [&](double total, double expert) { return total > 0 ? ((total - expert) / N + expert / Ne) / total : 1.0; };
  ModelStates m;
  m.sharded = N > 1;
  m.grad_el = lora ? 4.0 : pr.grad;
  m.state_el = lora ? 4.0 : pr.state;
  m.master = lora ? 0.0 : pr.master;
  // The frozen base keeps the workload's weight dtype, or NF4 + double quantization for QLoRA:
  // 4 + 8/64 + 32/(64·256) = 4.127 bits (QLoRA paper §3) on the decoder linears.
  double base = inv.params * pr.weight;
  if (lora && w.lora.qlora)
    base = (inv.params - inv.linear_params) * 2.0 + inv.linear_params * (4.0 + 8.0 / 64 + 32.0 / (64 * 256)) / 8.0;
  m.adapters = lora ? inv.trainable * 4.0 : 0.0;
  m.weights = base + m.adapters;
  m.grads = inv.trainable * m.grad_el;
  m.states = inv.state_elements * m.state_el + inv.trainable * m.master;
  if (is_adamw_8bit(w.optimizer)) m.states = inv.trainable * (adamw_8bit_bytes_per_param + m.master);

  // Sharding across data-parallel ranks (ZeRO paper §5; FSDP full_shard = 3, shard_grad_op = 2).
  m.train_share = zero_share(inv.trainable, inv.trainable_expert);
  m.state_share = is_adamw_8bit(w.optimizer) ? m.train_share : zero_share(inv.state_elements, inv.state_expert);
  m.param_share = zero_share(inv.params, inv.expert_params);
  if (m.sharded) {
    if (w.zero >= 1) m.states *= m.state_share;
    if (w.zero >= 2) m.grads *= m.train_share;
    // DDP: gradient buckets are a second copy of every trainable gradient, allocated at wrap time
    // (torch DistributedDataParallel, gradient_as_bucket_view=False).
    if (w.zero == 0 && pytorch) m.ddp_buckets = inv.trainable * m.grad_el;
  }
  // ZeRO-3 shards the parameters; under the pytorch profile stage 2 is FSDP2 shard_grad_op, which shards them at
  // rest too (and keeps them gathered between forward and backward).
  m.weights_at_rest = (m.sharded && (w.zero == 3 || (w.zero == 2 && pytorch))) ? m.weights * m.param_share : m.weights;

  // Optimizer offload keeps the moments and fp32 master weights in host memory (or NVMe) and runs the update on
  // the CPU; the host also holds an fp32 copy of the gradient shard to update from. Parameter offload (ZeRO-3)
  // keeps the parameter shards there too; the GPU holds only the layers being computed (gathered).
  m.gpu_params = m.weights_at_rest;
  m.gpu_states = m.states;
  if (w.offload_optimizer != Offload::none) {
    (w.offload_optimizer == Offload::cpu ? m.host : m.nvme) += m.states + m.grads / m.grad_el * 4.0;
    m.gpu_states = 0;
  }
  // bitsandbytes' paged optimizers (v0.45, bitsandbytes/functional.py get_paged) allocate their states with
  // cudaMallocManaged: unified memory, outside PyTorch's caching allocator, which the driver evicts to host memory
  // page by page when the GPU runs short and pages back in for the step. gpuplan counts them evictable: not in the
  // GPU's peak, and in host memory (where they live when the GPU needs the room).
  if (w.optimizer == Optimizer::paged_adamw_8bit && w.offload_optimizer == Offload::none) {
    const double paged = inv.trainable * adamw_8bit_bytes_per_param * (m.sharded && w.zero >= 1 ? m.state_share : 1.0);
    m.host += paged;
    m.gpu_states -= paged;  // the fp32 master weights, where the recipe keeps them, stay
  }
  if (w.offload_params != Offload::none) {
    (w.offload_params == Offload::cpu ? m.host : m.nvme) += m.weights_at_rest;
    m.gpu_params = 0;
  }
  return m;
}

}  // namespace gpuplan
