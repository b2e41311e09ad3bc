// gpuplan infer: options → estimate_inference_memory → report → renderer.
#include "app.h"
#include "render.h"

namespace gpuplan::cli {

void setup_infer(CLI::App& app, InferOptions& o) {
  auto* cmd = app.add_subcommand("infer", "Per-GPU memory for serving: weights, KV cache, prefill working set");
  cmd->footer(
      "Examples:\n"
      "  gpuplan infer --model llama-3.1-8b --batch 8 --prompt-len 4096 --new-tokens 256\n"
      "  gpuplan infer --config config.json --precision fp16 --format json");
  add_model_options(*cmd, o.model);
  auto& w = o.workload;
  cmd->add_option("--batch", w.batch, "Concurrent sequences (default 1)");
  cmd->add_option("--prompt-len", w.prompt_len, "Prompt tokens per sequence (default 1024)");
  cmd->add_option("--new-tokens", w.new_tokens, "Generated tokens per sequence (default 256)");
  cmd->add_option("--precision", o.precision, "Weights and activations: bf16 (default) | fp16 | fp32");
  cmd->add_option("--attention", o.attention, "sdpa | flash | eager (default sdpa)");
  cmd->add_option("--profile", o.profile, "Framework profile: pytorch (default, HF generate) | none");
  cmd->add_option("--format", o.format, "table (default) | json");
  add_fit_options(*cmd, o.fit);
  cmd->add_option("--gpus", o.gpus, "GPUs the model is split over for the fit verdict (weights and KV cache split "
                                    "evenly, as tensor parallelism does; default 1)");
}

ExitCode run_infer(const InferOptions& o, std::ostream& out) {
  const Format format = parse_format(o.format);
  InferenceWorkload w = o.workload;
  w.precision = parse_enum<Precision>(precision_names, o.precision, "precision");
  if (w.precision != Precision::bf16 && w.precision != Precision::fp16 && w.precision != Precision::fp32)
    throw InputError("infer --precision: expected bf16, fp16 or fp32");
  w.attention = parse_enum<Attention>(attention_names, o.attention, "attention");
  w.profile = parse_enum<Profile>(profile_names, o.profile, "profile");
  const ModelSpec spec = resolve_model(o.model);
  const InferenceEstimate est = estimate_inference_memory(spec, w);
  if (o.gpus < 1 || o.gpus > 1'000'000) throw InputError("--gpus must be between 1 and 1,000,000");
  nlohmann::json report = inference_json(spec, w, est);
  const Catalog cat = load_catalog(o.fit.catalogs);
  // Over n GPUs: weights and KV cache split evenly (tensor parallelism), the rest on every GPU.
  const auto& c = est.memory.components;
  auto per_gpu = [&](std::int64_t n) { return est.memory.total - (c.weights + c.kv_cache) + (c.weights + c.kv_cache) / double(n); };
  if (!o.fit.gpu.empty()) {
    report["fit"] = fit_json(fit_on(cat.get(o.fit.gpu), per_gpu(o.gpus)), o.gpus);
  } else {
    report["fit_table"] = fit_table_json(fit_table(cat.devices, est.memory.total, per_gpu),
                                         "smallest power-of-two tensor-parallel degree, weights and KV cache split evenly, "
                                         "whose per-GPU estimate fits in the device's usable memory");
  }
  if (format == Format::json) render_json(report, out);
  else render_infer_table(report, out);
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
