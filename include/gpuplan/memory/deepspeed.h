// DeepSpeed's own model-states estimators, reproduced exactly (deepspeed/runtime/zero/stage_1_and_2.py
// estimate_zero2_model_states_mem_needs, deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs;
// unchanged from DeepSpeed 0.6 to 0.17). They count parameters, gradients and Adam states only — no activations,
// buffers or context — with a 1.5× "additional buffer factor" on host memory. gpuplan prints them beside its own
// estimate under --profile deepspeed, so a DeepSpeed user sees both the number their tool gives and the one the
// GPU will show.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../model.h"
#include "../units.h"

namespace gpuplan {

struct DeepSpeedEstimate {
  Bytes cpu{0};                 // per CPU (node): host memory
  Bytes gpu{0};                 // per GPU
  bool offload_params = false;  // ZeRO-3 offload_param=cpu
  bool offload_optimizer = false;
  bool zero_init = true;        // ZeRO-3: deepspeed.zero.Init (parameters partitioned as they are created)
};

inline constexpr double deepspeed_buffer_factor = 1.5;  // additional_buffer_factor default

// ZeRO-2: bf16/fp16 parameters 2 B each on every GPU; without offload also 2 B of gradients and, partitioned,
// 16 B (fp32 master 4, fp32 gradients 4, Adam moments 8) per parameter. Python int() truncations kept.
inline DeepSpeedEstimate deepspeed_zero2_estimate(double total_params, std::int64_t gpus_per_node, std::int64_t nodes,
                                                  bool cpu_offload) {
  const double gpus = double(gpus_per_node * nodes);
  DeepSpeedEstimate e;
  e.offload_optimizer = cpu_offload;
  if (cpu_offload) {
    e.gpu = Bytes(double(std::int64_t(2 * total_params)));
    e.cpu = Bytes(double(std::int64_t(total_params * std::max(4 * gpus, 16.0) * deepspeed_buffer_factor)));
  } else {
    e.gpu = Bytes(double(std::int64_t(4 * total_params + double(std::int64_t(16 * total_params / gpus)))));
    e.cpu = Bytes(double(std::int64_t(total_params * 4 * double(gpus_per_node) * deepspeed_buffer_factor)));
  }
  return e;
}

// ZeRO-3: the largest layer gathered in fp32 (4 B per parameter) on the GPU, plus what is not offloaded: 2 B of
// parameters (offload_optimizer only) or 18 B (no offload), partitioned over all GPUs.
inline DeepSpeedEstimate deepspeed_zero3_estimate(double total_params, double largest_layer_params,
                                                  std::int64_t gpus_per_node, std::int64_t nodes, bool cpu_offload,
                                                  bool cpu_offload_params, bool zero_init) {
  const double gpus = double(gpus_per_node * nodes), per_node = double(gpus_per_node);
  const double gpus_factor = 1.0 / double(nodes);
  const double largest_layer_memory = 4 * largest_layer_params;
  const double f = deepspeed_buffer_factor;
  DeepSpeedEstimate e;
  e.offload_optimizer = cpu_offload;
  e.offload_params = cpu_offload && cpu_offload_params;
  e.zero_init = zero_init;
  double gpu = 0, cpu = 0;
  if (cpu_offload && cpu_offload_params) {
    gpu = largest_layer_memory;
    cpu = total_params * (zero_init ? 18 * gpus_factor : std::max(4 * per_node, 18 * gpus_factor)) * f;
  } else if (cpu_offload) {
    gpu = largest_layer_memory + double(std::int64_t(2 * total_params / gpus));
    cpu = total_params * (zero_init ? 16 * gpus_factor : std::max(4 * per_node, 16 * gpus_factor)) * f;
  } else {
    gpu = largest_layer_memory + double(std::int64_t(18 * total_params / gpus));
    cpu = (zero_init ? largest_layer_params : total_params) * 4 * per_node * f;
  }
  e.gpu = Bytes(double(std::int64_t(gpu)));
  e.cpu = Bytes(double(std::int64_t(cpu)));
  return e;
}

// DeepSpeed's "largest layer": the most parameters one module holds itself (model_to_params: p.numel() of
// parameters(recurse=False)) — the embedding or head matrix, or a layer's fused experts (transformers 5 keeps them
// in one module).
inline double deepspeed_largest_layer_params(const ModelSpec& s) {
  const ParamInventory inv = param_inventory(s);
  double largest = 0;
  auto visit = [&](const std::vector<ParamGroup>& groups) {
    double experts = 0;  // one module holds all of a layer's routed experts
    for (const auto& g : groups) {
      if (g.expert) experts += double(g.numel());
      else largest = std::max(largest, double(g.out * g.in));
    }
    largest = std::max(largest, experts);
  };
  visit(inv.embedding);
  for (const auto& kind : inv.kinds) visit(kind);
  visit(inv.head);
  return largest;
}

// The rows DeepSpeed's *_all_cold helpers print: ZeRO-3 with both offloads, optimizer offload only, none, each
// with and without zero.Init.
inline std::vector<DeepSpeedEstimate> deepspeed_zero3_table(double total_params, double largest_layer_params,
                                                            std::int64_t gpus_per_node, std::int64_t nodes) {
  std::vector<DeepSpeedEstimate> rows;
  for (bool offload : {true, false})
    for (bool offload_params : {true, false}) {
      if (!offload && offload_params) continue;
      for (bool init : {true, false})
        rows.push_back(deepspeed_zero3_estimate(total_params, largest_layer_params, gpus_per_node, nodes, offload,
                                                offload_params, init));
    }
  return rows;
}

}  // namespace gpuplan
