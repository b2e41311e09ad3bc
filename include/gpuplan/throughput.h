// Serving speed from the roofline: prefill is compute-bound; a decode step reads the weights its tokens use (all
// of a dense model's; of an MoE's routed experts only those the batch routes to) and the whole KV cache once
// (Kipply, "Transformer inference arithmetic"; shared reference formulas.md §B6), and cannot be shorter than the
// time the host takes to issue it (HF's eager generate).
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "compute.h"
#include "hardware.h"
#include "memory/profile.h"
#include "model.h"
#include "quant.h"
#include "units.h"

namespace gpuplan {

struct Efficiency {
  // Share of peak bandwidth decode reaches: llama.cpp batch-1 decode measured at 48–82 % of the bandwidth
  // roofline on RTX 3090/4090 (llama.cpp PRs #4766, #4812), median about 70 %.
  double memory = 0.70;
  // Share of dense peak FLOP/s prefill reaches: 50 %, between training MFU (~40 %) and large-GEMM efficiency
  // (~80 % of peak measured for 8192³ bf16 GEMMs on H100/H200); an assumption to override.
  double compute = 0.50;
};

// Routed experts that `tokens` tokens visit in one MoE layer, on average under uniform top-k routing: an expert is
// missed by every token with probability (1 − k/E)^T, so E·(1 − (1 − k/E)^T) of them are read. One token reads k;
// a prefill chunk of thousands reads all. Llama 4's dense routing runs every expert for every token.
inline double experts_touched(const MoeSpec& m, double tokens) {
  if (m.experts <= 0) return 0;
  const double e = double(m.experts);
  if (m.dense_routing) return e;
  return e * (1.0 - std::pow(1.0 - double(m.experts_per_token) / e, std::max(tokens, 0.0)));
}

// Of `weight_bytes` (per GPU, as stored in format f), what a forward of `tokens` tokens reads: all but the routed
// experts, and of those the share the tokens touch. The experts' share of the bytes comes from the format's own
// arithmetic (quant.h weight_bytes), so an MXFP4 checkpoint's 4-bit experts beside bf16 attention weigh right.
inline double weight_bytes_read(const ModelSpec& s, WeightFormat f, double weight_bytes, double tokens) {
  if (s.moe.experts <= 0) return weight_bytes;
  const WeightBytes split = gpuplan::weight_bytes(s, f);
  const double share = split.routed_experts.in(unit::bytes) / split.total().in(unit::bytes);
  return weight_bytes * (1.0 - share + share * experts_touched(s.moe, tokens) / double(s.moe.experts));
}

// The host's floor under one forward, by engine. HF generate (profile pytorch) runs eagerly: every operator of a
// decoder layer is a Python call and a kernel launch, and the GPU waits when its own work is shorter. Counted in
// transformers' Llama decoder layer at decode: two RMSNorms (8 operators each), the q/k/v/o projections with their
// views and transposes (10), rotary embeddings (14), the cache's two torch.cat, SDPA with its reshapes (3), the
// MLP (5), two residual adds: 56; each further norm (Qwen3's q/k norms, Gemma's sandwich norms) 8 more; an MoE
// block's router, top-k and dispatch ~20 beyond the MLP's. What an operator costs is the host CPU's: measured on
// two H100 hosts (tests/data/calibration/measured_g2 and measured_g4, Llama, OLMo 2 and Qwen3-MoE shapes at batch
// 1–64, where the step hardly moves with the batch), 14 and 23 µs; gpt-fast's eager baseline on an A100 host, 25.5
// tokens/s for Llama-2-7B (PyTorch blog "Accelerating Generative AI with PyTorch II: GPT, Fast", 2023), 22 µs. 20 µs
// is their mean; a host can be a third faster or slower. Engines that replay CUDA graphs (vLLM, SGLang,
// llama.cpp) get no floor here: theirs is not modelled.
struct HostFloor {
  static constexpr double eager_op_seconds = 20e-6;
  static constexpr double layer_ops = 56, norm_ops = 8, moe_router_ops = 20;
};
inline double host_forward_seconds(const ModelSpec& s, Profile engine) {
  if (engine != Profile::pytorch) return 0;
  double ops = 10;  // embedding, positions, the mask, the final norm, lm_head, the sampler's argmax
  for (std::int64_t l = 0; l < s.layers; ++l) {
    ops += HostFloor::layer_ops + HostFloor::norm_ops * (double(s.norms_per_layer - 2) + (s.qk_norm ? 2.0 : 0.0));
    if (s.is_moe_layer(l)) ops += HostFloor::moe_router_ops;
  }
  return ops * HostFloor::eager_op_seconds;
}

struct Throughput {
  Seconds prefill{0};            // the whole batch's prompts (time to first token)
  Seconds decode_step{0};        // one token for every sequence
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;  // aggregate over the batch
  bool decode_compute_bound = false;
  bool decode_host_bound = false;  // the host issues the step slower than the GPU runs it (eager generate)
  double decode_weight_bytes = 0;  // weights a decode step reads (an MoE's touched experts only)
  FlopRate peak{0};
  std::string peak_format;
  Efficiency efficiency;
};

// The format whose tensor-core rate the GEMMs run at: fp8 weights on fp8 cores where the device has them,
// everything else dequantised to 16 bit (or fp32 for fp32 models).
inline std::pair<std::optional<double>, std::string> serving_peak(const Device& d, WeightFormat f) {
  if ((f == WeightFormat::fp8 || f == WeightFormat::nvfp4 || f == WeightFormat::mxfp4) && d.peak.fp8) return {d.peak.fp8, "fp8"};
  if (f == WeightFormat::fp32) return {d.peak.fp32, "fp32"};
  return {d.peak.bf16 ? d.peak.bf16 : d.peak.fp16, "bf16"};
}

// The cache length decode reads on average over a generation of new_tokens that ends at `context` tokens.
inline double average_decode_context(double context, double new_tokens) {
  return std::max(1.0, context - new_tokens / 2.0);
}

// A decode step's memory time: the weights it reads (weight_bytes_read) and every sequence's cache (`context`
// tokens) once, at the share `e.memory` of the device's bandwidth. Alone (a device with no compute rate) it is the step's lower bound.
inline double decode_read_seconds(const Device& d, double weight_bytes, double kv_bytes_per_token, std::int64_t batch,
                                  double context, Efficiency e) {
  return (weight_bytes + double(batch) * context * kv_bytes_per_token) / (d.memory_bandwidth.in(unit::bytes_per_s) * e.memory);
}

// batch sequences, prompt tokens each, the cache at `context` tokens on average during decode; `weight_bytes` and
// `kv_bytes_per_token` per GPU, tp GPUs each doing 1/tp of the FLOPs.
inline Throughput serving_throughput(const ModelSpec& s, const Device& d, WeightFormat f, double weight_bytes,
                                     double kv_bytes_per_token, std::int64_t batch, std::int64_t prompt,
                                     double context, std::int64_t tp, Efficiency e, Profile engine = Profile::none) {
  if (!(e.memory > 0 && e.memory <= 1) || !(e.compute > 0 && e.compute <= 1))
    throw InputError("efficiency factors must be in (0, 1]");
  const auto [peak, name] = serving_peak(d, f);
  if (!peak) throw InputError(d.id + " has no peak rate for " + std::string(name));
  Throughput t;
  t.peak = FlopRate(*peak);
  t.peak_format = name;
  t.efficiency = e;
  const TrainingFlops per = training_flops(s, Tokens(1), 1, Recompute::none);
  const double n2 = 2.0 * double(per.matmul_params.in(unit::params));  // forward FLOPs per token, 2·N
  const double qdim = double(s.heads) * double(s.head_dim), L = double(s.layers);
  const double b = double(batch), p = double(prompt), tpd = double(tp);
  // Prefill: 2·N per token + causal attention, QKᵀ and P·V at 2·p²·(heads·head_dim) per layer, halved by the mask.
  const double prefill_flops = b * (n2 * p + 2.0 * L * p * p * qdim);
  const double host = host_forward_seconds(s, engine);
  t.prefill = Seconds(std::max(prefill_flops / (tpd * *peak * e.compute), host));
  t.prefill_tokens_per_s = b * p / t.prefill.in(unit::seconds);
  // Decode step: read the weights the batch's tokens use and every sequence's cache once; 2·N (active) +
  // 4·L·context·qdim FLOPs per sequence; never faster than the host issues it.
  t.decode_weight_bytes = weight_bytes_read(s, f, weight_bytes, b);
  const double mem_time = decode_read_seconds(d, t.decode_weight_bytes, kv_bytes_per_token, batch, context, e);
  const double flop_time = b * (n2 + 4.0 * L * context * qdim) / (tpd * *peak * e.compute);
  t.decode_compute_bound = flop_time > mem_time && flop_time >= host;
  t.decode_host_bound = host > std::max(mem_time, flop_time);
  t.decode_step = Seconds(std::max({mem_time, flop_time, host}));
  t.decode_tokens_per_s = b / t.decode_step.in(unit::seconds);
  return t;
}

}  // namespace gpuplan
