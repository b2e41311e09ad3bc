// Serving speed from the roofline: prefill is compute-bound, decode reads every weight and the whole KV cache
// once per step (Kipply, "Transformer inference arithmetic"; shared reference formulas.md §B6).
#pragma once
#include <algorithm>
#include <optional>
#include <string>

#include "compute.h"
#include "hardware.h"
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

struct Throughput {
  Seconds prefill{0};            // the whole batch's prompts (time to first token)
  Seconds decode_step{0};        // one token for every sequence
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;  // aggregate over the batch
  bool decode_compute_bound = false;
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

// A decode step's memory time: every weight and every sequence's cache (`context` tokens) read once at the share
// `e.memory` of the device's bandwidth. Alone (a device with no compute rate) it is the step's lower bound.
inline double decode_read_seconds(const Device& d, double weight_bytes, double kv_bytes_per_token, std::int64_t batch,
                                  double context, Efficiency e) {
  return (weight_bytes + double(batch) * context * kv_bytes_per_token) / (d.memory_bandwidth.in(unit::bytes_per_s) * e.memory);
}

// batch sequences, prompt tokens each, the cache at `context` tokens on average during decode; `weight_bytes` and
// `kv_bytes_per_token` per GPU, tp GPUs each doing 1/tp of the FLOPs.
inline Throughput serving_throughput(const ModelSpec& s, const Device& d, WeightFormat f, double weight_bytes,
                                     double kv_bytes_per_token, std::int64_t batch, std::int64_t prompt,
                                     double context, std::int64_t tp, Efficiency e) {
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
  t.prefill = Seconds(prefill_flops / (tpd * *peak * e.compute));
  t.prefill_tokens_per_s = b * p / t.prefill.in(unit::seconds);
  // Decode step: read every weight and every sequence's cache once; 2·N + 4·L·context·qdim FLOPs per sequence.
  const double mem_time = decode_read_seconds(d, weight_bytes, kv_bytes_per_token, batch, context, e);
  const double flop_time = b * (n2 + 4.0 * L * context * qdim) / (tpd * *peak * e.compute);
  t.decode_compute_bound = flop_time > mem_time;
  t.decode_step = Seconds(std::max(mem_time, flop_time));
  t.decode_tokens_per_s = b / t.decode_step.in(unit::seconds);
  return t;
}

}  // namespace gpuplan
