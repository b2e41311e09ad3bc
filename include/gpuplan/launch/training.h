// A training launch as gpuplan train flags: what the launcher (torchrun, accelerate launch, deepspeed), the
// script's Hugging Face TrainingArguments / TRL flags and the configs they name (DeepSpeed JSON, Accelerate, axolotl,
// torchtune YAML) say. The precision recipe depends on several of them at once (--bf16, the weights' load dtype,
// whether DeepSpeed keeps fp32 masters), so the parsers collect those facts and `finish` decides.
#pragma once
#include <optional>

#include "launch.h"

namespace gpuplan::launch {

template <class T>
struct Read {
  T value;
  std::string source;
};

struct TrainImport {
  Import im;
  std::optional<Read<std::string>> half;          // mixed precision asked for: "bf16" | "fp16" | "no"
  std::optional<Read<std::string>> weights_dtype;  // the model as loaded: "bf16" | "fp16" | "fp32"
  std::optional<Read<std::string>> deepspeed_half;  // DeepSpeed config: "bf16" | "fp16" | "fp32" | "auto"
  bool deepspeed = false;                          // ZeRO through DeepSpeed (its own optimizer keeps fp32 masters)
  bool hf_trainer = false;                         // TrainingArguments flags seen: its defaults apply
  std::optional<std::string> fsdp_default;         // Accelerate's FSDP without a strategy: FULL_SHARD (its source)
  std::optional<Read<std::int64_t>> processes, machines;  // Accelerate: processes over all machines
};

// A dtype name as the training tools write it → bf16 | fp16 | fp32 (nullopt: auto or unknown).
inline std::optional<std::string> dtype_name(const std::string& v) {
  const std::string s = lower(v);
  if (s == "bfloat16" || s == "bf16" || s == "torch.bfloat16") return "bf16";
  if (s == "float16" || s == "fp16" || s == "half" || s == "torch.float16") return "fp16";
  if (s == "float32" || s == "fp32" || s == "float" || s == "torch.float32") return "fp32";
  return std::nullopt;
}

// HF Trainer --optim (transformers OptimizerNames) and the tools' optimizer names → gpuplan --optimizer. bitsandbytes'
// paged 8-bit AdamW is gpuplan's paged-adamw-8bit; other paged variants keep their states in CUDA unified memory,
// paged out only under memory pressure: counted as on the GPU.
inline void map_optimizer(TrainImport& t, const std::string& name, const std::string& src) {
  std::string n = lower(name);
  // torchtune/axolotl spell classes: torch.optim.AdamW, bitsandbytes.optim.PagedAdamW8bit.
  if (const auto dot = n.rfind('.'); dot != std::string::npos) n = n.substr(dot + 1);
  const bool paged = n.rfind("paged", 0) == 0;
  if (paged) {
    n = n.substr(5);
    if (!n.empty() && n[0] == '_') n = n.substr(1);
  }
  std::string mapped;
  if (n == "adamw_torch" || n == "adamw_hf" || n == "adamw" || n == "adamw_32bit" || n == "adamw32bit") mapped = "adamw";
  else if (n == "adamw_torch_fused" || n == "adamw_apex_fused") mapped = "adamw-fused";
  else if (n == "adam") mapped = "adam";
  else if (n == "adamw_bnb_8bit" || n == "adamw_8bit" || n == "adamw8bit" || n == "adam8bit" || n == "adamw_torch_8bit")
    mapped = "adamw-8bit";
  else if (n == "adafactor") mapped = "adafactor";
  else if (n == "sgd") mapped = "sgd";
  else if (n == "lion_32bit" || n == "lion") mapped = "lion";
  if (mapped.empty()) {
    t.im.ignore(src, "an optimizer gpuplan has no model for: the estimate keeps gpuplan's --optimizer (adamw)");
    return;
  }
  if (paged && mapped == "adamw-8bit") mapped = "paged-adamw-8bit";
  t.im.set("--optimizer", mapped, src);
  if (paged && mapped != "paged-adamw-8bit")
    t.im.ignore(src + " (paged)", "paged optimizer states move to host memory only under pressure: counted on the GPU");
}

// FSDP as HF Trainer's --fsdp "full_shard auto_wrap offload" or Accelerate's sharding strategy names.
inline void map_fsdp(TrainImport& t, const std::string& text, const std::string& src) {
  std::string words = lower(text) + " ";
  bool any = false, offload = false;
  std::string strategy;
  for (std::size_t p = 0; (p = words.find_first_not_of(" ,", p)) != std::string::npos;) {
    const std::size_t e = words.find_first_of(" ,", p);
    const std::string w = words.substr(p, e - p);
    p = e;
    any = true;
    if (w == "full_shard" || w == "1") strategy = "full_shard";
    else if (w == "shard_grad_op" || w == "2") strategy = "shard_grad_op";
    else if (w == "no_shard" || w == "3") strategy = "no_shard";
    else if (w == "hybrid_shard" || w == "4") strategy = "hybrid_shard";
    else if (w == "hybrid_shard_zero2" || w == "5") {
      t.im.ignore(src, "hybrid_shard_zero2 is not modelled: estimated as shard_grad_op across all GPUs");
      strategy = "shard_grad_op";
    } else if (w == "offload") offload = true;
    else if (w == "auto_wrap" || w == "true") {
    } else if (w == "false" || w == "") return;
    else throw InputError(src + ": unknown FSDP option \"" + w + "\"");
  }
  if (!any) return;
  if (strategy.empty()) strategy = "full_shard";  // HF Trainer: "auto_wrap" or "offload" alone shard fully
  t.im.set("--fsdp", strategy, src);
  if (offload) {
    t.im.set("--offload-optimizer", "cpu", src);
    if (strategy == "full_shard" || strategy == "hybrid_shard") t.im.set("--offload-params", "cpu", src);
  }
}

// The precision recipe from the facts, then the defaults of the tools seen.
inline Import finish(TrainImport t) {
  auto source_of = [](const auto& r) { return r ? r->source : std::string(); };
  auto join = [](std::string a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + "; " + b; };
  const std::string half = t.half && t.half->value != "no" ? t.half->value : "";
  std::string recipe, src = join(source_of(t.half), source_of(t.weights_dtype));
  if (t.deepspeed) {
    // DeepSpeed's optimizer keeps fp32 masters of 16-bit weights; "auto" follows the Trainer's --bf16/--fp16.
    std::string ds = t.deepspeed_half ? t.deepspeed_half->value : "fp32";
    if (ds == "auto") ds = half.empty() ? "fp32" : half;
    if (ds == "no") ds = "fp32";
    recipe = ds;
    src = join(source_of(t.deepspeed_half), source_of(t.half));
  } else if (!half.empty()) {
    // Autocast over fp32 weights, unless the model was loaded in that 16-bit dtype (then everything is 16-bit).
    recipe = t.weights_dtype && t.weights_dtype->value == half ? "pure-" + half : "amp-" + half;
  } else if (t.weights_dtype && t.weights_dtype->value != "fp32") {
    recipe = "pure-" + t.weights_dtype->value;
  } else if (t.half || t.weights_dtype || t.deepspeed_half || t.hf_trainer) {
    recipe = "fp32";
    if (src.empty()) src = "HF TrainingArguments default (no --bf16 or --fp16)";
  }
  if (!recipe.empty()) t.im.set("--precision", recipe, src);
  if (t.fsdp_default && !t.im.find("--fsdp") && !t.deepspeed)
    t.im.set("--fsdp", "full_shard", *t.fsdp_default + " (Accelerate's default FULL_SHARD)");
  if (t.deepspeed && t.im.find("--zero") && t.im.find("--zero")->value != "0")
    t.im.set("--profile", "deepspeed", t.im.find("--zero")->source);
  if (t.processes) {
    const std::int64_t machines = t.machines ? t.machines->value : 1;
    if (machines < 1 || t.processes->value % machines != 0)
      throw InputError(t.processes->source + ": processes must be a multiple of the machines");
    t.im.set("--gpus", number_text(t.processes->value / machines), t.processes->source + " (over all machines)");
  }
  if (t.machines) t.im.set("--nodes", number_text(t.machines->value), t.machines->source);
  // TrainingArguments' own default micro-batch (transformers: per_device_train_batch_size = 8).
  if (t.hf_trainer && !t.im.find("--batch"))
    t.im.set("--batch", "8", "HF TrainingArguments default per_device_train_batch_size");
  return t.im;
}

namespace detail {

inline std::string hf_canonical(const std::string& flag) {
  // HfArgumentParser takes --per-device-train-batch-size as well as the field's own name.
  return undashed(respelled(flag, '-', '_'));
}

// TrainingArguments / TRL fields read and known not to change memory or speed.
inline bool hf_no_effect(const std::string& f) {
  static constexpr std::array<std::string_view, 63> names{
      "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "num_train_epochs", "max_steps",
      "learning_rate", "lr", "warmup_ratio", "warmup_steps", "lr_scheduler_type", "weight_decay", "logging_steps",
      "logging_dir", "logging_strategy", "logging_first_step", "save_steps", "save_strategy", "save_total_limit",
      "eval_strategy", "evaluation_strategy", "eval_steps", "report_to", "run_name", "seed", "data_seed",
      "dataset_name", "dataset_config", "dataset_config_name", "dataset_text_field", "dataset_num_proc",
      "push_to_hub", "hub_model_id", "hub_strategy", "max_grad_norm", "adam_beta1", "adam_beta2", "adam_epsilon",
      "lora_alpha", "lora_dropout", "trust_remote_code", "remove_unused_columns", "dataloader_num_workers",
      "label_names", "load_best_model_at_end", "metric_for_best_model", "train_file", "validation_file",
      "cache_dir", "preprocessing_num_workers", "tokenizer_name", "config_name", "ddp_timeout", "local_rank",
      "save_only_model", "gradient_checkpointing_kwargs", "ddp_find_unused_parameters", "tf32",
      "include_tokens_per_second", "model_revision", "low_cpu_mem_usage", "dataset_train_split"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

// One TrainingArguments / TRL / PEFT flag; false when gpuplan does not know it.
inline bool hf_flag(TrainImport& t, Argv& args, const Argv::Token& tok) {
  Import& im = t.im;
  const std::string f = hf_canonical(tok.name);
  std::string src;
  auto is_bool = [](const std::string& s) { return boolean(s).has_value(); };
  // A boolean field: --name, --name true|false, --no_name.
  auto flag_value = [&]() {
    const auto v = args.optional_value(tok, src, is_bool);
    if (v && !boolean(*v)) throw InputError(src + ": expected true or false");
    return v ? *boolean(*v) : true;
  };
  if (f == "model_name_or_path" || f == "model_name" || f == "model") {
    im.set("--model", args.value(tok, src), src);
    return true;
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> whole_fields{{
      {"per_device_train_batch_size", "--batch"}, {"train_batch_size", "--batch"},
      {"gradient_accumulation_steps", "--grad-accum"}, {"max_seq_length", "--seq"}, {"max_length", "--seq"},
      {"block_size", "--seq"}, {"model_max_length", "--seq"}, {"lora_r", "--lora-rank"}}};
  for (auto [name, flag] : whole_fields)
    if (f == name) {
      im.set(std::string(flag), number_text(whole(args.value(tok, src), "--" + f)), src);
      return true;
    }
  if (f == "bf16" || f == "fp16") {
    const bool on = flag_value();
    if (on) t.half = Read<std::string>{f, src};
    else if (!t.half) t.half = Read<std::string>{"no", src};
    return true;
  }
  if (f == "use_liger_kernel") {  // transformers' Trainer applies Liger's kernels, its fused linear cross-entropy among them
    if (!flag_value()) {
      im.ignore(src, "off: gpuplan's default", false);
      return true;
    }
    im.set("--loss", "fused", src);
    im.ignore(src + " (RMSNorm, RoPE, SwiGLU kernels)", "Liger's other kernels: their activations are not modelled");
    return true;
  }
  if (f == "gradient_checkpointing") {
    if (flag_value()) im.set("--grad-checkpointing", "", src);
    else im.ignore(src, "off: gpuplan's default", false);
    return true;
  }
  if (f == "use_peft") {
    if (flag_value() && !im.find("--lora-rank")) im.set("--lora-rank", "16", src + " (TRL ModelConfig default lora_r 16)");
    return true;
  }
  if (f == "load_in_4bit") {
    if (flag_value()) im.set("--qlora", "", src);
    return true;
  }
  if (f == "load_in_8bit") {
    if (flag_value()) im.ignore(src, "8-bit base weights (LLM.int8) are not modelled: estimated in --precision");
    return true;
  }
  if (f == "lora_target_modules") {
    // argparse nargs="+": every following word that is not a flag.
    std::string list = args.value(tok, src);
    while (!args.done() && !Argv::is_flag(args.peek())) {
      src += " " + args.peek();
      list += "," + args.next().text;
    }
    im.set("--lora-targets", list, src);
    return true;
  }
  if (f == "optim") {
    const std::string v = args.value(tok, src);
    map_optimizer(t, v, src);
    return true;
  }
  if (f == "torch_dtype" || f == "dtype") {
    const std::string v = args.value(tok, src);
    if (auto d = dtype_name(v)) t.weights_dtype = Read<std::string>{*d, src};
    else if (lower(v) == "auto") im.ignore(src, "the checkpoint's dtype: read as fp32 weights by gpuplan's recipe");
    else throw InputError(src + ": unknown dtype");
    return true;
  }
  if (f == "attn_implementation") {
    const std::string v = lower(args.value(tok, src));
    if (v.find("flash") != std::string::npos) im.set("--attention", "flash", src);
    else if (v == "sdpa" || v == "eager") im.set("--attention", v, src);
    else im.ignore(src, "an attention kernel gpuplan has no model for");
    return true;
  }
  if (f == "deepspeed") {
    im.files.push_back({FileKind::deepspeed_json, args.value(tok, src), src});
    return true;
  }
  if (f == "fsdp") {
    map_fsdp(t, args.value(tok, src), src);
    return true;
  }
  if (f == "packing" || f == "per_device_eval_batch_size" || f == "bf16_full_eval" || f == "fp16_full_eval") {
    im.ignore(args.skip_unknown(tok), f == "packing" ? "packing fills sequences to --seq: memory as at --seq"
                                                     : "evaluation runs after the training step: its peak is not modelled",
              false);
    return true;
  }
  if (f == "torch_compile" || f == "fsdp_config" || f == "use_bnb_nested_quant" ||
      f == "bnb_4bit_quant_type" || f == "neftune_noise_alpha" || f == "group_by_length") {
    im.ignore(args.skip_unknown(tok), "changes memory or speed in a way gpuplan does not model");
    return true;
  }
  if (hf_no_effect(f)) {
    im.ignore(args.skip_unknown(tok), no_memory_effect, false);
    return true;
  }
  return false;
}

}  // namespace detail

// The script's arguments (HF TrainingArguments, TRL SFTConfig/ModelConfig, PEFT script flags).
inline void read_trainer_args(TrainImport& t, const std::vector<std::string>& words) {
  Argv args(words);
  while (!args.done()) {
    const auto tok = args.next();
    if (!tok.flag()) {
      t.im.ignore(tok.text, "a word the script's argument parser reads on its own");
      continue;
    }
    if (detail::hf_flag(t, args, tok)) t.hf_trainer = true;
    else t.im.ignore(args.skip_unknown(tok), "not a TrainingArguments, TRL or PEFT flag gpuplan knows");
  }
}

}  // namespace gpuplan::launch
