// Reports: the result structs of the estimators, assembled with the model and the workload, and their JSON
// ("schema": "gpuplan/1"). Numbers are raw: bytes, parameters, seconds, USD.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "catalog.h"
#include "hardware.h"
#include "memory/inference.h"
#include "memory/training.h"
#include "cost.h"
#include "model.h"
#include "quant.h"
#include "throughput.h"

namespace gpuplan {

inline constexpr const char* schema_id = "gpuplan/1";

namespace detail {
// Whole bytes as a JSON integer; beyond 2^62 (no device comes near) as a JSON float, never a wrapped integer.
inline nlohmann::json rounded(Bytes b) {
  const double v = std::round(b.in(unit::bytes));
  if (std::fabs(v) < 4.6e18) return static_cast<std::int64_t>(v);
  return v;
}
inline nlohmann::json add_bytes(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    const double approx = a.get<double>() + b.get<double>();
    if (std::fabs(approx) < 4.6e18) return a.get<std::int64_t>() + b.get<std::int64_t>();
  }
  return a.get<double>() + b.get<double>();
}

inline nlohmann::json components_json(const MemoryComponents& c) {
  return {{"weights", rounded(c.weights)},         {"gradients", rounded(c.gradients)},
          {"optimizer_states", rounded(c.optimizer_states)}, {"activations", rounded(c.activations)},
          {"logits", rounded(c.logits)},           {"kv_cache", rounded(c.kv_cache)},
          {"overhead", rounded(c.overhead)}};
}

// Components are rounded one by one and the totals are sums of the rounded parts, so the JSON adds up exactly.
inline nlohmann::json memory_json(const MemoryEstimate& m) {
  nlohmann::json comps = components_json(m.components);
  nlohmann::json peak = 0;
  for (const auto& [k, v] : comps.items()) peak = add_bytes(peak, v);
  const nlohmann::json slack = rounded(m.allocator_slack), ctx = rounded(m.context);
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& mo : m.moments) {
    nlohmann::json c = components_json(mo.at);
    nlohmann::json sum = 0;
    for (const auto& [k, v] : c.items()) sum = add_bytes(sum, v);
    phases.push_back({{"phase", mo.phase}, {"at", mo.what}, {"allocated_bytes", sum}, {"components", c}});
  }
  const nlohmann::json reserved = add_bytes(peak, slack);
  const nlohmann::json total = add_bytes(reserved, ctx);
  // runs_in ≤ total; equal (the same number) unless the allocator's cached segments could be freed
  const nlohmann::json runs_in = m.runs_in < m.total ? rounded(m.runs_in) : total;
  return {{"total_bytes", total},
          {"runs_in_bytes", runs_in},
          {"peak_allocated_bytes", peak},
          {"reserved_bytes", reserved},
          {"allocator_slack_bytes", slack},
          {"context_bytes", ctx},
          {"peak_phase", m.peak_phase},
          {"peak_at", m.peak_what},
          {"components", comps},
          {"phases", phases}};
}
}  // namespace detail

inline nlohmann::json model_json(const ModelSpec& s, const ParamCounts& counts) {
  nlohmann::json j{{"name", s.name},
                   {"model_type", s.model_type},
                   {"params", counts.total.in(unit::params)},
                   {"active_params", counts.active.in(unit::params)},
                   {"vocab_size", s.vocab},
                   {"hidden_size", s.hidden},
                   {"num_layers", s.layers},
                   {"num_heads", s.heads},
                   {"num_kv_heads", s.kv_heads},
                   {"head_dim", s.head_dim},
                   {"intermediate_size", s.intermediate},
                   {"tied_embeddings", s.tied_embeddings}};
  if (s.moe.experts > 0)
    j["moe"] = {{"experts", s.moe.experts},
                {"experts_per_token", s.moe.experts_per_token},
                {"expert_intermediate_size", s.moe.intermediate},
                {"shared_experts", s.moe.shared_experts}};
  if (s.sliding_window > 0) j[s.chunked_attention ? "attention_chunk_size" : "sliding_window"] = s.sliding_window;
  if (!s.sliding_layers.empty() || !s.linear_layers.empty()) {
    std::int64_t windowed = 0, linear = 0;
    for (std::int64_t l = 0; l < s.layers; ++l) {
      linear += s.is_linear_layer(l) ? 1 : 0;
      windowed += s.is_sliding_layer(l) ? 1 : 0;
    }
    j["layer_kinds"] = {{"full_attention", s.layers - windowed - linear}, {"windowed", windowed}, {"linear_attention", linear}};
  }
  if (!s.layer_shapes.empty()) {  // layers of their own attention or FFN shape (Gemma 4)
    nlohmann::json shapes = nlohmann::json::array();
    for (std::size_t i = 0; i < s.layer_shapes.size(); ++i) {
      const LayerShape& sh = s.layer_shapes[i];
      shapes.push_back({{"layers", std::count(s.shape_of.begin(), s.shape_of.end(), std::uint8_t(i))},
                        {"num_kv_heads", sh.kv_heads}, {"head_dim", sh.head_dim}, {"intermediate_size", sh.intermediate},
                        {"values_are_keys", sh.values_are_keys}, {"shares_kv", sh.shares_kv}});
    }
    j["layer_shapes"] = shapes;
  }
  return j;
}

inline nlohmann::json training_json(const ModelSpec& s, const TrainingWorkload& w, const TrainingEstimate& e) {
  nlohmann::json lora = nullptr;
  if (w.lora.rank > 0) lora = {{"rank", w.lora.rank}, {"targets", w.lora.targets}, {"qlora", w.lora.qlora}};
  return {{"schema", schema_id},
          {"command", "train"},
          {"model", model_json(s, count_params(s))},
          {"workload",
           {{"batch", w.batch},
            {"seq", w.seq},
            {"grad_accum", w.grad_accum},
            {"tokens_per_step", w.batch * w.seq * w.grad_accum * w.dp()},
            {"precision", spell<Precision>(precision_names, w.precision)},
            {"optimizer", spell<Optimizer>(optimizer_names, w.optimizer)},
            {"recompute", spell<Recompute>(recompute_names, w.recompute)},
            {"attention", spell<Attention>(attention_names, w.attention)},
            {"lora", lora},
            {"gpus", w.gpus},
            {"zero", w.zero},
            {"profile", spell<Profile>(profile_names, w.profile)},
            {"loss", w.loss == Loss::chunked ? std::string("chunked:") + std::to_string(w.loss_chunks)
                                             : std::string(spell<Loss>(loss_names, w.loss))},
            {"activation_offload", w.activation_offload}}},
          {"trainable_params", e.shape.trainable.in(unit::params)},
          {"trainable_params_on_gpu", e.shape.trainable_on_gpu.in(unit::params)},
          {"memory", detail::memory_json(e.memory)},
          {"assumptions", e.assumptions}};
}

namespace detail {
// The engine settings a release implied, by the engine's own names (an object; integers as integers).
inline nlohmann::json defaults_json(const std::vector<std::pair<std::string, double>>& defaults) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : defaults)
    j[name] = value == std::floor(value) && std::abs(value) < 9e15 ? nlohmann::json(std::int64_t(value)) : nlohmann::json(value);
  return j;
}
// llama.cpp over several GPUs: each one's buffers, as its log prints them per device (null for other engines).
inline nlohmann::json llama_devices_json(const std::vector<LlamaCppDeviceBuffers>& devices) {
  if (devices.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : devices)
    out.push_back({{"model_buffer_bytes", rounded(Bytes(d.weights))},
                   {"kv_buffer_bytes", rounded(Bytes(d.kv))},
                   {"compute_buffer_bytes", rounded(Bytes(d.compute))},
                   {"total_bytes", rounded(Bytes(d.total()))}});
  return out;
}
}  // namespace detail

inline nlohmann::json inference_json(const ModelSpec& s, const InferenceWorkload& w, const InferenceEstimate& e) {
  nlohmann::json mem = detail::memory_json(e.memory);
  mem["kv_cache_bytes_per_token"] = detail::rounded(e.kv_bytes_per_token);
  mem["weight_bytes"] = detail::rounded(e.weight_bytes);
  auto opt_bytes = [](const std::optional<Bytes>& b) { return b ? nlohmann::json(detail::rounded(*b)) : nlohmann::json(nullptr); };
  auto opt = [](const auto& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  const ServingDetails& sv = e.serving;
  const nlohmann::json serving{{"engine", sv.engine.empty() ? nlohmann::json(nullptr) : nlohmann::json(sv.engine)},
                               {"budget_bytes", opt_bytes(sv.budget)},
                               {"activation_peak_bytes", opt_bytes(sv.activation_peak)},
                               {"non_torch_bytes", opt_bytes(sv.non_torch)},
                               {"cuda_graph_bytes", opt_bytes(sv.cuda_graphs)},
                               {"kv_pool_bytes", opt_bytes(sv.kv_pool)},
                               {"kv_blocks", opt(sv.kv_blocks)},
                               {"kv_tokens", opt(sv.kv_tokens)},
                               {"max_concurrent_sequences", opt(sv.max_concurrency)},
                               {"max_num_batched_tokens", opt(sv.max_num_batched_tokens)},
                               {"max_num_seqs", opt(sv.max_num_seqs)},
                               {"max_model_len", opt(sv.max_model_len)},
                               {"starts", opt(sv.starts)},
                               {"largest_max_model_len", opt(sv.largest_max_model_len)},
                               {"min_gpu_memory_utilization", opt(sv.min_gpu_memory_utilization)},
                               {"min_mem_fraction_static", opt(sv.min_mem_fraction_static)},
                               {"host_memory_bytes", opt_bytes(sv.host_memory)},
                               {"gpu_layers", opt(sv.gpu_layers)},
                               {"host_expert_layers", opt(sv.host_expert_layers)},
                               {"devices", detail::llama_devices_json(sv.devices)},
                               {"engine_version", sv.engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(sv.engine_version)},
                               {"engine_defaults", detail::defaults_json(sv.implied_defaults)}};
  return {{"schema", schema_id},
          {"command", "infer"},
          {"model", model_json(s, count_params(s))},
          {"workload",
           {{"batch", w.batch},
            {"prompt_len", w.prompt_len},
            {"new_tokens", w.new_tokens},
            {"context_tokens", e.context_tokens},
            {"precision", spell<Precision>(precision_names, w.precision)},
            {"weights", spell<WeightFormat>(weight_format_names, e.weights)},
            {"kv_dtype", spell<KvDtype>(kv_dtype_names, e.kv)},
            {"tp", w.tp},
            {"attention", spell<Attention>(attention_names, w.hf.attention)},
            {"profile", spell<Profile>(profile_names, w.profile)}}},
          {"memory", mem},
          {"serving", serving},
          {"assumptions", e.assumptions}};
}

inline nlohmann::json flops_json(const PeakFlops& p) {
  auto v = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  return {{"fp64", v(p.fp64)}, {"fp32", v(p.fp32)}, {"tf32", v(p.tf32)}, {"bf16", v(p.bf16)},
          {"fp16", v(p.fp16)}, {"fp8", v(p.fp8)},   {"int8", v(p.int8)}, {"fp4", v(p.fp4)}};
}

inline nlohmann::json device_json(const Device& d) {
  auto opt = [](const auto& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  nlohmann::json acc = nullptr;
  if (d.fp16_accumulate.fp16 || d.fp16_accumulate.fp8)
    acc = {{"fp16", opt(d.fp16_accumulate.fp16)}, {"fp8", opt(d.fp16_accumulate.fp8)}};
  return {{"id", d.id},
          {"name", d.name},
          {"aliases", d.aliases},
          {"vendor", d.vendor},
          {"segment", d.segment},
          {"unit", d.unit},
          {"memory_bytes", d.memory.in(unit::bytes)},
          {"usable_memory_bytes", d.usable_memory ? nlohmann::json(d.usable_memory->in(unit::bytes)) : nlohmann::json(nullptr)},
          {"memory_type", d.memory_type},
          {"memory_bandwidth_bytes_per_s", d.memory_bandwidth.in(unit::bytes_per_s)},
          {"tdp_watts", opt(d.tdp_watts)},
          {"boost_clock_hz", opt(d.boost_clock_hz)},
          {"peak_flops", flops_json(d.peak)},
          {"fp16_accumulate_flops", acc},
          {"interconnect",
           {{"kind", d.interconnect},
            {"bandwidth_bytes_per_s", d.interconnect_bandwidth ? nlohmann::json(d.interconnect_bandwidth->in(unit::bytes_per_s)) : nlohmann::json(nullptr)},
            {"direction", "bidirectional, per GPU"}}},
          {"pcie_gen", opt(d.pcie_gen)},
          {"form_factor", d.form_factor},
          {"launch_year", opt(d.launch_year)},
          {"price_usd", opt(d.price_usd)},
          {"price_note", d.price_note},
          {"source", d.source},
          {"verification", d.verification}};
}

inline nlohmann::json offering_json(const Offering& f) {
  auto usd = [](const std::optional<UsdPerHour>& x) { return x ? nlohmann::json(x->in(unit::usd_per_hour)) : nlohmann::json(nullptr); };
  return {{"provider", f.provider},
          {"instance", f.instance},
          {"accelerator", f.accelerator},
          {"count", f.count},
          {"max_count", f.max_count ? nlohmann::json(*f.max_count) : nlohmann::json(nullptr)},
          {"on_demand_usd_per_hour", usd(f.on_demand)},
          {"on_demand_usd_per_accelerator_hour", usd(f.per_accelerator_on_demand())},
          {"spot_usd_per_hour", usd(f.spot)},
          {"region", f.region},
          {"as_of", f.as_of},
          {"source", f.source},
          {"status", f.status}};
}

// cost.instance: the instance a price rests on, its size as rented, its price per hour and date.
inline nlohmann::json instance_json(const Rental& r) {
  return {{"provider", r.offering->provider},
          {"name", r.offering->instance},
          {"gpus", r.gpus_per_instance},
          {"usd_per_hour", r.per_instance.in(unit::usd_per_hour)},
          {"spot", r.spot},
          {"as_of", r.offering->as_of}};
}

// "2 × aws g6e.12xlarge" (a pod larger than its listed unit: "2 × runpod Secure A100 80GB SXM ×4"): a plan row's
// offering.
inline std::string instances_text(const Rental& r) {
  return std::to_string(r.instances) + " × " + r.offering->provider + " " + r.offering->instance +
         (r.gpus_per_instance != r.offering->count ? " ×" + std::to_string(r.gpus_per_instance) : "");
}

// "2 × aws g6e.12xlarge (4 GPUs, $10.49/h each, on-demand), as of 2026-09-24": the price basis a cost rests on.
inline std::string rental_text(const Rental& r) {
  char usd[32];
  std::snprintf(usd, sizeof usd, "%.2f", r.per_instance.in(unit::usd_per_hour));
  return instances_text(r) + " (" + std::to_string(r.gpus_per_instance) + (r.gpus_per_instance == 1 ? " GPU, $" : " GPUs, $") +
         usd + "/h each, " + (r.spot ? "spot" : "on-demand") + "), as of " + r.offering->as_of;
}

inline nlohmann::json fit_json(const FitVerdict& v, std::int64_t gpus) {
  return {{"gpu", v.device},
          {"gpus", gpus},
          {"capacity_bytes", v.capacity.in(unit::bytes)},
          {"required_bytes", v.required.in(unit::bytes)},
          {"fits", v.fits},
          {"headroom_bytes", v.headroom.in(unit::bytes)},
          {"used_fraction", v.used_fraction}};
}

inline nlohmann::json fit_table_json(const std::vector<FitRow>& rows, const std::string& how) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows)
    a.push_back({{"gpu", r.device->id},
                 {"capacity_bytes", r.single.capacity.in(unit::bytes)},
                 {"fits", r.single.fits},
                 {"used_fraction", r.single.used_fraction},
                 {"gpus_needed", r.gpus_needed ? nlohmann::json(*r.gpus_needed) : nlohmann::json(nullptr)},
                 // The share at gpus_needed, so a table showing both shows one layout (used_fraction: as given).
                 {"used_fraction_at_gpus_needed",
                  r.gpus_needed ? nlohmann::json(r.needed_used_fraction) : nlohmann::json(nullptr)}});
  return {{"gpus_needed_means", how}, {"devices", a}};
}

}  // namespace gpuplan
