#include <ostream>
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "format_units.h"
#include "launch_import.h"
#include "render.h"

namespace gpuplan::cli {

namespace {

bool tty = false, colour_on = false;
std::string paint(const std::string& text, const char* code) {
  return colour_on ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
}

using nlohmann::json;

void model_lines(const json& r, std::ostream& out) {
  const json& m = r["model"];
  fmt::print(out, "Model      {} ({}): {} parameters", m["name"].get<std::string>(), m["model_type"].get<std::string>(),
             grouped(m["params"].get<std::int64_t>()));
  if (m["active_params"] != m["params"]) fmt::print(out, ", {} active", grouped(m["active_params"].get<std::int64_t>()));
  fmt::print(out, "\n           {} layers, hidden {}, {} heads ({} KV, head_dim {}), FFN {}, vocab {}{}\n",
             m["num_layers"].get<std::int64_t>(), m["hidden_size"].get<std::int64_t>(), m["num_heads"].get<std::int64_t>(),
             m["num_kv_heads"].get<std::int64_t>(), m["head_dim"].get<std::int64_t>(),
             m["intermediate_size"].get<std::int64_t>(), m["vocab_size"].get<std::int64_t>(),
             m["tied_embeddings"].get<bool>() ? ", tied embeddings" : "");
  if (m.contains("layer_kinds")) {
    const json& k = m["layer_kinds"];
    fmt::print(out, "           layers: {} full attention", k["full_attention"].get<std::int64_t>());
    if (k["windowed"].get<std::int64_t>() > 0)
      fmt::print(out, ", {} {} of {} tokens", k["windowed"].get<std::int64_t>(),
                 m.contains("attention_chunk_size") ? "chunked" : "sliding-window",
                 m.value("attention_chunk_size", m.value("sliding_window", std::int64_t(0))));
    if (k["linear_attention"].get<std::int64_t>() > 0)
      fmt::print(out, ", {} linear attention (fixed state)", k["linear_attention"].get<std::int64_t>());
    fmt::print(out, "\n");
  }
  if (m.contains("layer_shapes")) {  // e.g. "25 × 8 KV heads of 256, FFN 2112; 5 × 2 KV heads of 512 (v = k), FFN 2112"
    fmt::print(out, "           layer shapes:");
    const char* sep = " ";
    for (const json& sh : m["layer_shapes"]) {
      fmt::print(out, "{}{} × {} KV heads of {}{}{}, FFN {}", sep, sh["layers"].get<std::int64_t>(),
                 sh["num_kv_heads"].get<std::int64_t>(), sh["head_dim"].get<std::int64_t>(),
                 sh["values_are_keys"].get<bool>() ? " (v = k)" : "",
                 sh["shares_kv"].get<bool>() ? " read from an earlier layer (no cache)" : "",
                 sh["intermediate_size"].get<std::int64_t>());
      sep = "; ";
    }
    fmt::print(out, "\n");
  }
  if (!m.contains("source")) return;
  const json& src = m["source"];
  if (src["kind"] != "preset" && src["kind"] != "params") {
    fmt::print(out, "Source     {} {}", src["kind"].get<std::string>(), src.value("path", src["ref"].get<std::string>()));
    if (src.contains("revision")) fmt::print(out, " @ {}", src["revision"].get<std::string>());
    fmt::print(out, "\n");
  }
  if (src.contains("checkpoint")) {
    const json& c = src["checkpoint"];
    fmt::print(out, "Checkpoint {}{}: {} tensors, language model {} ({} parameters as stored)\n",
               c["format"].get<std::string>(),
               c["quantization"].get<std::string>().empty() ? "" : ", " + c["quantization"].get<std::string>(),
               c["tensors"].get<std::int64_t>(), gib(c["language_model_bytes"].get<double>()),
               grouped(c["language_model_params"].get<std::int64_t>()));
  }
  for (const auto& n : src["notes"]) fmt::print(out, "           {}\n", n.get<std::string>());
}

void memory_table(const json& mem, std::ostream& out) {
  const double peak = mem["peak_allocated_bytes"].get<double>();
  fmt::print(out, "\nPer-GPU memory at the peak ({}, {}):\n", mem["peak_phase"].get<std::string>(),
             mem["peak_at"].get<std::string>());
  for (const char* k : {"weights", "gradients", "optimizer_states", "activations", "logits", "kv_cache", "overhead"}) {
    const double v = mem["components"][k].get<double>();
    if (v <= 0) continue;
    const double share = peak > 0 ? v / peak : 0;
    fmt::print(out, "  {:<18} {:>12}  {:5.1f}%  {}\n", k, gib(v), 100 * share,
               paint(std::string(static_cast<std::size_t>(share * 30 + 0.5), '#'), "36"));
  }
  fmt::print(out, "  {:<18} {:>12}\n", "live tensors", gib(peak));
  fmt::print(out, "  {:<18} {:>12}\n", "allocator slack", gib(mem["allocator_slack_bytes"].get<double>()));
  fmt::print(out, "  {:<18} {:>12}\n", "CUDA context", gib(mem["context_bytes"].get<double>()));
  fmt::print(out, "  {:<18} {:>12}  ({:.2f} GB)\n", "total (nvidia-smi)",
             paint(fmt::format("{:>12}", gib(mem["total_bytes"].get<double>())), "1"),
             mem["total_bytes"].get<double>() / 1e9);
  if (const double least = mem["runs_in_bytes"].get<double>(); least < mem["total_bytes"].get<double>())
    fmt::print(out, "  {:<18} {:>12}  ({:.2f} GB: a smaller GPU makes the allocator free its cached segments)\n",
               "runs in", gib(least), least / 1e9);
  fmt::print(out, "\nPeak of each phase (live tensors):\n");
  for (const auto& p : mem["phases"])
    fmt::print(out, "  {:<10} {:>12}  at {}\n", p["phase"].get<std::string>(), gib(p["allocated_bytes"].get<double>()),
               p["at"].get<std::string>());
}

void fit_lines(const json& r, std::ostream& out) {
  if (r.contains("fit")) {
    const json& f = r["fit"];
    fmt::print(out, "\nFit on {}: {}{} ({} of {} usable, {:.0f}% used, headroom {})\n", f["gpu"].get<std::string>(),
               f["fits"].get<bool>() ? paint("fits", "32") : paint("DOES NOT FIT", "31"),
               f.contains("reason") ? ": " + f["reason"].get<std::string>() : std::string(), gib(f["required_bytes"].get<double>()),
               gib(f["capacity_bytes"].get<double>()), 100 * f["used_fraction"].get<double>(),
               gib(f["headroom_bytes"].get<double>()));
    if (f.contains("host"))
      fmt::print(out, "Host memory: {} ({} of {} given)\n",
                 f["host"]["fits"].get<bool>() ? paint("fits", "32") : paint("DOES NOT FIT", "31"),
                 gib(f["host"]["required_bytes"].get<double>()), gib(f["host"]["capacity_bytes"].get<double>()));
  } else if (r.contains("fit_table")) {
    std::string one, more, none;
    for (const auto& d : r["fit_table"]["devices"]) {
      const std::string id = d["gpu"].get<std::string>();
      if (d["fits"].get<bool>()) one += (one.empty() ? "" : ", ") + id;
      else if (!d["gpus_needed"].is_null()) more += (more.empty() ? "" : ", ") + id + " ×" + std::to_string(d["gpus_needed"].get<int>());
      else none += (none.empty() ? "" : ", ") + id;
    }
    // "One" is the layout as given: one GPU, or the user's GPUs (train --gpus/--nodes, infer --tp).
    const json& w = r["workload"];
    const std::int64_t given = w.contains("gpus") ? w["gpus"].get<std::int64_t>() : w.value("tp", std::int64_t{1});
    fmt::print(out, "\n{}: {}\n", given > 1 ? fmt::format("Fits as given ({} GPUs)", given) : std::string("Fits on one"),
               one.empty() ? "none" : one);
    if (!more.empty()) fmt::print(out, "Needs more:  {}\n             ({})\n", more, r["fit_table"]["gpus_needed_means"].get<std::string>());
    if (!none.empty()) fmt::print(out, "Not within 1024 GPUs: {}\n", none);
    std::vector<const json*> priced;
    for (const auto& d : r["fit_table"]["devices"])
      if (d.contains("run_usd") && !d["run_usd"].is_null()) priced.push_back(&d);
    std::sort(priced.begin(), priced.end(), [](const json* a, const json* b) { return (*a)["run_usd"].get<double>() < (*b)["run_usd"].get<double>(); });
    if (!priced.empty()) fmt::print(out, "Cheapest runs (step-time model, the cheapest instances that hold each 8-GPU node):\n");
    for (std::size_t i = 0; i < priced.size() && i < 5; ++i) {
      const json& d = *priced[i];
      fmt::print(out, "  {:<16} ×{:<5} {:>8.1f} days  ${:>14}  {}\n", d["gpu"].get<std::string>(), d["run_gpus"].get<std::int64_t>(),
                 d["run_days"].get<double>(), grouped(static_cast<std::int64_t>(d["run_usd"].get<double>())),
                 d["run_offering"].get<std::string>());
    }
  }
}

void run_lines(const json& r, std::ostream& out) {
  if (!r.contains("compute")) return;
  const json& c = r["compute"];
  fmt::print(out, "\nCompute    {:.3g} FLOPs ({:.3g} on the hardware) for {} tokens ({})\n", c["flops"].get<double>(),
             c["hardware_flops"].get<double>(), short_count(c["tokens"].get<double>()), c["tokens_basis"].get<std::string>());
  if (r["time"].is_null()) return;
  const json& t = r["time"];
  fmt::print(out, "Time       {:.1f} days on {} × {}; {} GPU-hours; {:.0f}% MFU ({})\n", t["days"].get<double>(),
             t["gpus"].get<std::int64_t>(), t["gpu"].get<std::string>(),
             grouped(static_cast<std::int64_t>(t["gpu_hours"].get<double>())), 100 * t["mfu"].get<double>(),
             t["mfu_basis"].get<std::string>());
  fmt::print(out, "           step {:.3g} s for {} tokens = {} tokens/s per GPU", t["step_seconds"].get<double>(),
             short_count(t["tokens_per_step"].get<double>()),
             grouped(static_cast<std::int64_t>(t["tokens_per_second_per_gpu"].get<double>())));
  if (!t["hfu"].is_null()) fmt::print(out, "; {:.0f}% HFU", 100 * t["hfu"].get<double>());
  fmt::print(out, "\n");
  if (t["step"].is_object()) {
    // The step's parts, largest first, as the step-time model sees them (the slowest pipeline stage's GPU).
    std::vector<std::pair<double, std::string>> parts;
    for (const auto& [k, v] : t["step"].items())
      if (v.get<double>() > 0) parts.emplace_back(v.get<double>(), k.substr(0, k.size() - std::string("_seconds").size()));
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string line;
    for (const auto& [v, k] : parts) {
      std::string name = k;
      std::replace(name.begin(), name.end(), '_', ' ');
      line += fmt::format("{}{} {:.0f}%", line.empty() ? "" : ", ", name, 100 * v / t["step_seconds"].get<double>());
    }
    fmt::print(out, "           = {} ({} kernels{})\n", line, t["kernels"].get<std::string>(),
               t["pipeline_schedule"].is_null() ? "" : ", " + t["pipeline_schedule"].get<std::string>() + " pipeline");
  }
  if (!r["cost"].is_null()) {
    const json& k = r["cost"];
    fmt::print(out, "Cost       ${} at ${:.2f}/GPU-hour ({})\n", grouped(static_cast<std::int64_t>(k["usd"].get<double>())),
               k["usd_per_gpu_hour"].get<double>(), k["price_basis"].get<std::string>());
    const auto& alt = k["alternatives"];
    if (alt.size() > 1)
      fmt::print(out, "           {} offerings: ${} ({}) to ${} ({})\n", alt.size(),
                 grouped(static_cast<std::int64_t>(alt.front()["usd"].get<double>())), alt.front()["provider"].get<std::string>(),
                 grouped(static_cast<std::int64_t>(alt.back()["usd"].get<double>())), alt.back()["provider"].get<std::string>());
  }
  if (!r["energy"].is_null()) {
    const json& e = r["energy"];
    fmt::print(out, "Energy     {} kWh (TDP {:.0f} W × {:.2f} × PUE {:.2f}){}\n", grouped(static_cast<std::int64_t>(e["kwh"].get<double>())),
               e["tdp_watts"].get<double>(), e["power_utilization"].get<double>(), e["pue"].get<double>(),
               e["co2_kg"].is_null() ? std::string() : fmt::format(", {:.1f} t CO2", e["co2_kg"].get<double>() / 1000));
  }
}

// Fit advice (advice.cpp): the ranked changes, each with the flags that make it and its full estimate.
void advice_lines(const json& r, std::ostream& out) {
  if (!r.contains("advice")) return;
  const json& a = r["advice"];
  if (a.empty()) {
    fmt::print(out, "\nAdvice     no single change, nor a pair of changes, makes it fit (gpuplan train --help: the savers)\n");
    return;
  }
  fmt::print(out, "\nAdvice     {} change(s) that fit, best first by {}, each a full estimate (add the flags, replacing "
                  "the same ones):\n", a.size(), r["advice_objective"].get<std::string>());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const json& e = a[i];
    std::string flags;
    for (const auto& f : e["flags"]) flags += (flags.empty() ? "" : " ") + f.get<std::string>();
    const json& c = e["cost"];
    fmt::print(out, "  {:>2}. {}\n      {}\n      {} per GPU, step {:.3g} s, {:.1f} days, {}\n", i + 1,
               e["change"].get<std::string>(), flags, gib(e["total_bytes"].get<double>()), e["step_seconds"].get<double>(),
               c["days"].get<double>(),
               c["usd"].is_null() ? grouped(static_cast<std::int64_t>(c["gpu_hours"].get<double>())) + " GPU-hours"
                                  : "$" + grouped(static_cast<std::int64_t>(c["usd"].get<double>())));
  }
}

void assumptions(const json& r, std::ostream& out) {
  if (r["assumptions"].empty()) return;
  fmt::print(out, "\nAssumptions:\n");
  for (const auto& a : r["assumptions"]) fmt::print(out, "  - {}\n", a.get<std::string>());
}

}  // namespace

void set_terminal(bool is_tty, bool with_colour) {
  tty = is_tty;
  colour_on = is_tty && with_colour;
}
bool terminal() { return tty; }
bool colour() { return colour_on; }

void render_columns(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                    std::ostream& out) {
  // Widths in code points, so "×" and "–" count once.
  auto width = [](const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<std::size_t> w(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) w[i] = width(header[i]);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cells.size(); ++i) s += cells[i] + std::string(i + 1 < cells.size() ? w[i] - width(cells[i]) + 2 : 0, ' ');
    out << s << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

// Parallel layout, what one GPU sends per step, and the host memory offload needs.
void distributed_lines(const json& r, std::ostream& out) {
  const json& p = r["parallel"];
  const auto pp = p["pipeline"].get<std::int64_t>();
  if (r["workload"]["gpus"].get<std::int64_t>() > 1) {
    fmt::print(out, "Parallel   dp {} × tp {}{} × pp {} × cp {}, ep {}", p["data"].get<std::int64_t>(),
               p["tensor"].get<std::int64_t>(), p["sequence_parallel"].get<bool>() ? " (sequence parallel)" : "", pp,
               p["context"].get<std::int64_t>(), p["expert"].get<std::int64_t>());
    if (pp > 1)
      fmt::print(out, "; memory of pipeline stage {} ({} layers, {:.3g} micro-batches in flight), bubble {:.1f}%",
                 p["stage"].get<std::int64_t>(), p["stage_layers"].get<std::int64_t>(),
                 p["in_flight_microbatches"].get<double>(), 100 * p["pipeline_bubble_fraction"].get<double>());
    fmt::print(out, "\n");
  }
  for (const auto& c : r["communication"]["by_parallelism"]) {
    fmt::print(out, "Comms/step {:<8} {:>10} per GPU", c["parallelism"].get<std::string>(),
               gib(c["bytes_per_gpu_per_step"].get<double>()));
    if (!c["seconds_per_step"].is_null())
      fmt::print(out, ", {:.3f} s over {}", c["seconds_per_step"].get<double>(), c["link"].get<std::string>());
    fmt::print(out, " ({}; {})\n", c["collectives"].get<std::string>(), c["overlap"].get<std::string>());
  }
  const json& o = r["offload"];
  if (o["host_memory_bytes"].get<double>() > 0 || o["nvme_bytes"].get<double>() > 0)
    fmt::print(out, "Offload    host RAM {} and NVMe {} per GPU (optimizer: {}, parameters: {})\n",
               gib(o["host_memory_bytes"].get<double>()), gib(o["nvme_bytes"].get<double>()),
               o["optimizer"].get<std::string>(), o["params"].get<std::string>());
}

void render_train_table(const json& r, std::ostream& out) {
  render_from_lines(r, out);
  model_lines(r, out);
  const json& w = r["workload"];
  fmt::print(out, "Workload   batch {} × seq {} (grad-accum {}), {}, {}, recompute {}, attention {}, {} GPU(s), ZeRO {}\n",
             w["batch"].get<std::int64_t>(), w["seq"].get<std::int64_t>(), w["grad_accum"].get<std::int64_t>(),
             w["precision"].get<std::string>(), w["optimizer"].get<std::string>(), w["recompute"].get<std::string>(),
             w["attention"].get<std::string>(), w["gpus"].get<std::int64_t>(), w["zero"].get<int>());
  if (w["batch_defaulted"].get<bool>()) fmt::print(out, "           {}\n", w["batch_basis"].get<std::string>());
  if (!w["lora"].is_null())
    fmt::print(out, "           LoRA rank {}{}: {} trainable parameters\n", w["lora"]["rank"].get<std::int64_t>(),
               w["lora"]["qlora"].get<bool>() ? " (QLoRA, NF4 base)" : "", grouped(r["trainable_params"].get<std::int64_t>()));
  memory_table(r["memory"], out);
  if (r.contains("deepspeed_estimator") && !r["deepspeed_estimator"].is_null()) {
    const json& d = r["deepspeed_estimator"];
    fmt::print(out, "DeepSpeed  its own {}: {} per GPU, {} per CPU (model states only: no activations, buffers or "
                    "context)\n",
               d["function"].get<std::string>(), gib(d["gpu_bytes"].get<double>()), gib(d["cpu_bytes"].get<double>()));
  }
  distributed_lines(r, out);
  fit_lines(r, out);
  run_lines(r, out);
  advice_lines(r, out);
  assumptions(r, out);
}

void render_infer_table(const json& r, std::ostream& out) {
  render_from_lines(r, out);
  model_lines(r, out);
  const json& w = r["workload"];
  fmt::print(out, "Workload   batch {}, prompt {} + {} new tokens ({} cached per sequence), profile {}, TP {}\n",
             w["batch"].get<std::int64_t>(), w["prompt_len"].get<std::int64_t>(), w["new_tokens"].get<std::int64_t>(),
             w["context_tokens"].get<std::int64_t>(), w["profile"].get<std::string>(), w["tp"].get<std::int64_t>());
  fmt::print(out, "Formats    weights {} ({} per GPU), KV cache {} ({} bytes per token, all layers, per GPU), activations {}\n",
             w["weights"].get<std::string>(), gib(r["memory"]["weight_bytes"].get<double>()), w["kv_dtype"].get<std::string>(),
             grouped(r["memory"]["kv_cache_bytes_per_token"].get<std::int64_t>()), w["precision"].get<std::string>());
  if (r.contains("solve") && !r["solve"].is_null())
    for (const auto& [k, v] : r["solve"].items())
      if (v.is_number()) fmt::print(out, "Solved     {} = {}\n", k, grouped(v.get<std::int64_t>()));
  memory_table(r["memory"], out);
  const json& sv = r["serving"];
  if (!sv["min_mem_fraction_static"].is_null()) {
    // SGLang's start-up lines, in its own terms.
    fmt::print(out, "\n{}: static pool {} = weights {} + KV cache {}; {} left to activations and CUDA graphs\n",
               sv["engine"].get<std::string>(), gib(sv["budget_bytes"].get<double>()),
               gib(r["memory"]["components"]["weights"].get<double>()), gib(sv["kv_pool_bytes"].get<double>()),
               gib(r["memory"]["components"]["overhead"].get<double>()));
    fmt::print(out, "           KV Cache #tokens {} (max_total_num_tokens); {:.2f} concurrent sequences of {} tokens; "
                    "smallest mem_fraction_static that holds one {:.3f}\n",
               grouped(sv["kv_tokens"].get<std::int64_t>()), sv["max_concurrent_sequences"].get<double>(),
               grouped(w["context_tokens"].get<std::int64_t>()), sv["min_mem_fraction_static"].get<double>());
  } else if (!sv["budget_bytes"].is_null()) {
    // vLLM's start-up lines, in its own terms.
    fmt::print(out, "\n{}: budget {} = weights {} + activation peak {} + non-torch {} + KV pool {}; CUDA graphs {} "
                    "outside\n",
               sv["engine"].get<std::string>(), gib(sv["budget_bytes"].get<double>()),
               gib(r["memory"]["components"]["weights"].get<double>()), gib(sv["activation_peak_bytes"].get<double>()),
               gib(sv["non_torch_bytes"].get<double>()), gib(sv["kv_pool_bytes"].get<double>()),
               gib(sv["cuda_graph_bytes"].get<double>()));
    fmt::print(out, "           GPU KV cache size {} tokens ({} blocks); maximum concurrency {:.2f}x for {} tokens per "
                    "request\n",
               grouped(sv["kv_tokens"].get<std::int64_t>()), grouped(sv["kv_blocks"].get<std::int64_t>()),
               sv["max_concurrent_sequences"].get<double>(), grouped(w["context_tokens"].get<std::int64_t>()));
    const auto& least = sv["min_gpu_memory_utilization"];
    fmt::print(out, "           max_model_len {} {}; the longest that starts {}; {}\n",
               grouped(sv["max_model_len"].get<std::int64_t>()), sv["starts"].get<bool>() ? "starts" : "does NOT start",
               grouped(sv["largest_max_model_len"].get<std::int64_t>()),
               least.is_null() ? std::string("no gpu_memory_utilization starts it on this GPU")
                               : fmt::format("smallest gpu_memory_utilization that starts {:.3f}", least.get<double>()));
  }
  if (!sv["host_memory_bytes"].is_null())
    fmt::print(out, "\n{}: {} layers on the GPU{}; host memory {}\n", sv["engine"].get<std::string>(),
               sv["gpu_layers"].get<std::int64_t>(),
               sv["host_expert_layers"].is_null() || sv["host_expert_layers"].get<std::int64_t>() == 0
                   ? std::string()
                   : fmt::format(" (routed experts of {} in host memory)", sv["host_expert_layers"].get<std::int64_t>()),
               gib(sv["host_memory_bytes"].get<double>()));
  fit_lines(r, out);
  if (r.contains("throughput") && !r["throughput"].is_null() && r["throughput"]["prefill_tokens_per_s"].is_null()) {
    // A device with a bandwidth but no compute rate (Apple GPUs, --gpu-memory with --memory-bandwidth): decode's
    // lower bound alone.
    const json& t = r["throughput"];
    fmt::print(out, "\nThroughput decode at most {:.1f} tokens/s ({:.1f} ms per token at {:.0f}% of bandwidth); no compute "
                    "rate: prefill not estimated\n",
               t["decode_tokens_per_s"].get<double>(), 1000 * t["per_token_latency_seconds"].get<double>(),
               100 * t["efficiency"]["memory"].get<double>());
  } else if (r.contains("throughput") && !r["throughput"].is_null()) {
    const json& t = r["throughput"];
    fmt::print(out, "\nThroughput prefill {:.0f} tokens/s (first token after {:.3f} s); decode {:.1f} tokens/s "
                    "({:.1f} per sequence, {:.1f} ms per token, {}-bound)\n           roofline at {:.0f}% of bandwidth, "
                    "{:.0f}% of {} peak (override: --mem-efficiency, --compute-efficiency)\n",
               t["prefill_tokens_per_s"].get<double>(), t["time_to_first_token_seconds"].get<double>(),
               t["decode_tokens_per_s"].get<double>(), t["decode_tokens_per_s_per_sequence"].get<double>(),
               1000 * t["per_token_latency_seconds"].get<double>(), t["decode_bound"].get<std::string>(),
               100 * t["efficiency"]["memory"].get<double>(), 100 * t["efficiency"]["compute"].get<double>(),
               t["peak_format"].get<std::string>());
  }
  if (r.contains("cost") && !r["cost"].is_null()) {
    const json& c = r["cost"];
    fmt::print(out, "Cost       ${:.3f} per 1M input tokens, ${:.3f} per 1M output tokens (${:.2f}/h: {})\n",
               c["usd_per_million_input_tokens"].get<double>(), c["usd_per_million_output_tokens"].get<double>(),
               c["usd_per_hour"].get<double>(), c["price_basis"].get<std::string>());
  }
  assumptions(r, out);
}

}  // namespace gpuplan::cli
