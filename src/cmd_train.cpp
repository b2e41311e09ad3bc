// gpuplan train: options → estimate_training_memory → report → renderer.
#include <sstream>

#include "app.h"
#include "render.h"

namespace gpuplan::cli {

void setup_train(CLI::App& app, TrainOptions& o) {
  auto* cmd = app.add_subcommand("train", "Per-GPU memory of a training step (full fine-tuning, LoRA, QLoRA)");
  cmd->footer(
      "Examples:\n"
      "  gpuplan train --params 7B --precision bf16\n"
      "  gpuplan train --model llama-3.1-8b --batch 2 --seq 4096 --grad-checkpointing --optimizer adamw-fused\n"
      "  gpuplan train --config config.json --lora-rank 16 --lora-targets q_proj,v_proj --format json");
  add_model_options(*cmd, o.model);
  auto& w = o.workload;
  cmd->add_option("--batch", w.batch, "Micro-batch per GPU (default 1)");
  cmd->add_option("--seq", w.seq, "Sequence length in tokens (default 2048)");
  cmd->add_option("--grad-accum", w.grad_accum, "Gradient-accumulation steps (default 1)");
  cmd->add_option("--precision", o.precision,
                  "fp32 | bf16 | fp16 (16-bit weights, fp32 master + moments) | amp-bf16 | amp-fp16 (fp32 weights, "
                  "autocast) | pure-bf16 | pure-fp16 | fp8 (default bf16)");
  cmd->add_option("--optimizer", o.optimizer,
                  "adamw | adamw-fused | adam | sgd | sgd-momentum | adafactor | lion | adamw-8bit (default adamw)");
  auto* gc = cmd->add_flag("--grad-checkpointing", o.grad_checkpointing, "Recompute every decoder layer (= --recompute full)");
  cmd->add_option("--recompute", o.recompute, "none | selective | full (default none)")->excludes(gc);
  cmd->add_option("--attention", o.attention, "sdpa | flash | eager (default sdpa)");
  cmd->add_option("--lora-rank", w.lora.rank, "LoRA rank (PEFT; adapters in fp32)");
  cmd->add_option("--lora-targets", o.lora_targets, "Comma-separated target modules (default q_proj,v_proj), or all-linear");
  cmd->add_flag("--qlora", w.lora.qlora, "Base weights in NF4 with double quantization (needs --lora-rank)");
  cmd->add_option("--gpus", w.gpus, "Data-parallel GPUs (default 1)");
  cmd->add_option("--zero", w.zero, "ZeRO stage 0-3 across --gpus (0 = DDP)");
  add_fit_options(*cmd, o.fit);
  cmd->add_option("--profile", o.profile, "Framework profile: pytorch (default) | none (tensor bytes only)");
  cmd->add_option("--format", o.format, "table (default) | json");
}

ExitCode run_train(const TrainOptions& o, std::ostream& out) {
  const Format format = parse_format(o.format);
  TrainingWorkload w = o.workload;
  w.precision = parse_enum<Precision>(precision_names, o.precision, "precision");
  w.optimizer = parse_enum<Optimizer>(optimizer_names, o.optimizer, "optimizer");
  w.attention = parse_enum<Attention>(attention_names, o.attention, "attention");
  w.profile = parse_enum<Profile>(profile_names, o.profile, "profile");
  w.recompute = o.grad_checkpointing ? Recompute::full
                : o.recompute.empty() ? Recompute::none
                                      : parse_enum<Recompute>(recompute_names, o.recompute, "recompute");
  if (!o.lora_targets.empty()) {
    std::stringstream ss(o.lora_targets);
    std::string t;
    while (std::getline(ss, t, ','))
      if (!t.empty()) w.lora.targets.push_back(t);
    if (w.lora.targets.empty()) throw InputError("--lora-targets: expected module names separated by commas");
  } else if (w.lora.rank > 0) {
    w.lora.targets = {"q_proj", "v_proj"};  // PEFT's default for Llama-family models
  }
  const ModelSpec spec = resolve_model(o.model);
  const TrainingEstimate est = estimate_training_memory(spec, w);
  nlohmann::json report = training_json(spec, w, est);
  const Catalog cat = load_catalog(o.fit.catalogs);
  if (!o.fit.gpu.empty()) {
    report["fit"] = fit_json(fit_on(cat.get(o.fit.gpu), est.memory.total), w.gpus);
  } else {
    // How many GPUs of each kind: the same workload data-parallel over n GPUs with ZeRO-3 (FSDP full shard),
    // or with the stage the user chose.
    const int stage = w.zero > 0 ? w.zero : 3;
    auto per_gpu = [&](std::int64_t n) {
      TrainingWorkload v = w;
      v.gpus = n;
      v.zero = stage;
      return estimate_training_memory(spec, v).memory.total;
    };
    report["fit_table"] = fit_table_json(fit_table(cat.devices, est.memory.total, per_gpu),
                                         "smallest power-of-two data-parallel degree with ZeRO-" + std::to_string(stage) +
                                             " whose per-GPU estimate fits in the device's usable memory");
  }
  if (format == Format::json) render_json(report, out);
  else render_train_table(report, out);
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
