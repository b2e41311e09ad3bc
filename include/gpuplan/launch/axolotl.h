// An axolotl config (the YAML of `axolotl train config.yml`) as gpuplan train flags. Keys as axolotl 0.12 documents
// them (docs/config-reference.qmd; src/axolotl/utils/schemas/config.py): bf16 also loads the model in bf16
// (its torch_dtype), so bf16 without DeepSpeed is pure bf16.
#pragma once
#include <array>
#include <nlohmann/json.hpp>

#include "accelerate.h"

namespace gpuplan::launch {

namespace detail {

inline bool yaml_true(const nlohmann::json& v, const std::string& src) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    if (v.get<std::string>() == "auto") return true;  // axolotl's bf16: auto = on where the GPU has bf16
    if (const auto b = boolean(v.get<std::string>())) return *b;
  }
  throw DataError(src + ": expected true or false");
}

inline std::int64_t yaml_whole(const nlohmann::json& v, const std::string& src) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw DataError(src + ": expected a whole number");
  return v.get<std::int64_t>();
}

inline std::string yaml_list(const nlohmann::json& v, const std::string& src) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw DataError(src + ": expected a list of names");
  std::string r;
  for (const auto& e : v) {
    if (!e.is_string()) throw DataError(src + ": expected a list of names");
    r += (r.empty() ? "" : ",") + e.get<std::string>();
  }
  return r;
}

inline bool axolotl_no_effect(const std::string& k) {
  static constexpr std::array<std::string_view, 49> names{
      "datasets", "dataset_prepared_path", "val_set_size", "output_dir", "num_epochs", "max_steps", "learning_rate",
      "lr_scheduler", "warmup_steps", "warmup_ratio", "logging_steps", "saves_per_epoch", "evals_per_epoch",
      "eval_steps", "save_steps", "weight_decay", "special_tokens", "wandb_project", "wandb_entity", "wandb_watch",
      "wandb_name", "wandb_log_model", "hub_model_id", "strict", "chat_template", "train_on_inputs", "seed",
      "resume_from_checkpoint", "local_rank", "max_grad_norm", "base_model_config", "model_type", "tokenizer_type",
      "trust_remote_code", "is_llama_derived_model", "lora_alpha", "lora_dropout", "tf32", "early_stopping_patience",
      "logging_dir", "save_total_limit", "lora_fan_in_fan_out", "pad_to_sequence_len", "sample_packing",
      "eval_sample_packing", "lora_model_dir", "loss_watchdog_threshold", "loss_watchdog_patience", "debug"};
  for (auto n : names)
    if (n == k) return true;
  return false;
}

// One axolotl key; false when gpuplan does not know it.
inline bool axolotl_key(TrainImport& t, const std::string& k, const nlohmann::json& v, const std::string& src) {
  Import& im = t.im;
  if (v.is_null()) {
    im.ignore(src, "empty: the tool's default", false);
  } else if (k == "base_model") {
    if (!v.is_string()) throw DataError(src + ": expected a model id or path");
    im.set("--model", v.get<std::string>(), src);
  } else if (k == "adapter") {
    if (!v.is_string() || (v != "lora" && v != "qlora")) throw DataError(src + ": expected lora or qlora");
    if (!im.find("--lora-rank")) im.set("--lora-rank", "8", src + " (axolotl's default lora_r 8)");
    if (v == "qlora") im.set("--qlora", "", src);
  } else if (k == "lora_r") {
    im.set("--lora-rank", number_text(yaml_whole(v, src)), src);
  } else if (k == "lora_target_modules") {
    im.set("--lora-targets", yaml_list(v, src), src);
  } else if (k == "lora_target_linear") {
    if (yaml_true(v, src)) im.set("--lora-targets", "all-linear", src);
  } else if (k == "load_in_4bit") {
    if (yaml_true(v, src)) im.set("--qlora", "", src);
  } else if (k == "load_in_8bit") {
    if (yaml_true(v, src)) im.ignore(src, "8-bit base weights (LLM.int8) are not modelled: estimated in --precision");
  } else if (k == "sequence_len") {
    im.set("--seq", number_text(yaml_whole(v, src)), src);
  } else if (k == "micro_batch_size") {
    im.set("--batch", number_text(yaml_whole(v, src)), src);
  } else if (k == "gradient_accumulation_steps") {
    im.set("--grad-accum", number_text(yaml_whole(v, src)), src);
  } else if (k == "bf16" || k == "fp16") {
    if (yaml_true(v, src)) {
      t.half = Read<std::string>{k, src};
      t.weights_dtype = Read<std::string>{k, src + " (the model loaded in " + k + ")"};
    }
  } else if (k == "gradient_checkpointing") {
    if (v.is_string() && v.get<std::string>() != "true") im.ignore(src, "offloaded checkpoints are not modelled");
    else if (yaml_true(v, src)) im.set("--grad-checkpointing", "", src);
  } else if (k == "optimizer") {
    if (!v.is_string()) throw DataError(src + ": expected an optimizer name");
    map_optimizer(t, v.get<std::string>(), src);
  } else if (k == "flash_attention" || k == "sdp_attention") {
    if (yaml_true(v, src)) im.set("--attention", k == "flash_attention" ? "flash" : "sdpa", src);
  } else if (k == "deepspeed") {
    if (!v.is_string()) throw DataError(src + ": expected the path of a DeepSpeed JSON config");
    im.files.push_back({FileKind::deepspeed_json, v.get<std::string>(), src});
  } else if (k == "fsdp") {
    map_fsdp(t, yaml_list(v, src), src);
  } else if (k == "fsdp_config") {
    if (!v.is_object()) throw DataError(src + ": expected a mapping");
    for (const auto& [k2, v2] : v.items()) {
      // axolotl takes Accelerate's fsdp_ keys, and from 0.10 the same names without the prefix.
      const std::string key = k2.rfind("fsdp_", 0) == 0 ? k2 : "fsdp_" + k2;
      const std::string s2 = src.substr(0, src.find(" = ")) + "." + k2 + " = " + scalar_text(v2);
      if (!accelerate_key(t, key, scalar_text(v2), s2)) im.ignore(s2, unknown_flag);
    }
  } else if (k == "cut_cross_entropy" || k == "liger_fused_linear_cross_entropy" || k == "unsloth_lora_mlp" ||
             k == "group_by_length" ||
             k == "gradient_checkpointing_kwargs" || k == "xformers_attention" || k == "torch_compile") {
    im.ignore(src, "changes memory or speed in a way gpuplan does not model");
  } else if (axolotl_no_effect(k) || k.rfind("wandb_", 0) == 0 || k.rfind("liger_", 0) == 0) {
    im.ignore(src, no_memory_effect, false);
  } else {
    return false;
  }
  return true;
}

}  // namespace detail

inline void read_axolotl_config(TrainImport& t, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw DataError(path + ": an axolotl config is a mapping of keys");
  for (const auto& [k, v] : j.items()) {
    const std::string src = path + ": " + k + " = " + (v.is_object() || v.is_array() ? v.dump() : detail::scalar_text(v));
    if (!detail::axolotl_key(t, k, v, src)) t.im.ignore(src, "not an axolotl key gpuplan knows");
  }
}

}  // namespace gpuplan::launch
