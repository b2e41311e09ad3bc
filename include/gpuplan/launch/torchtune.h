// A torchtune recipe config (`tune run RECIPE --config CONFIG [key=value …]`) as gpuplan train flags. Keys as the
// torchtune 0.6 recipes read them (recipes/lora_finetune_single_device.py, full_finetune_distributed.py and their
// configs): the model builder names the model and its LoRA layers, dtype is the whole model's (pure bf16 training).
#pragma once
#include <nlohmann/json.hpp>

#include "../builtin.h"
#include "axolotl.h"

namespace gpuplan::launch {

namespace detail {

// torchtune.models.llama3_1.lora_llama3_1_8b → the preset llama3.1-8b (family digits joined by dots, then the
// size), or nullopt when gpuplan has no such preset.
inline std::optional<std::string> torchtune_preset(std::string builder, bool& qlora) {
  builder = builder.substr(builder.rfind('.') + 1);
  qlora = builder.rfind("qlora_", 0) == 0;
  if (qlora) builder = builder.substr(6);
  else if (builder.rfind("lora_", 0) == 0) builder = builder.substr(5);
  std::vector<std::string> parts;
  for (std::size_t p = 0; p <= builder.size();) {
    const std::size_t e = std::min(builder.find('_', p), builder.size());
    parts.push_back(builder.substr(p, e - p));
    p = e + 1;
  }
  std::string name = parts[0];
  std::size_t i = 1;
  for (; i < parts.size() && !parts[i].empty() && parts[i].find_first_not_of("0123456789") == std::string::npos; ++i)
    name += "." + parts[i];
  for (; i < parts.size(); ++i) {
    if (parts[i] == "base" || parts[i] == "instruct") continue;
    name += "-" + parts[i];
  }
  if (find_preset_or_null(name)) return name;
  return std::nullopt;
}

inline void torchtune_model(TrainImport& t, const nlohmann::json& m, const std::string& path,
                            const nlohmann::json& checkpointer) {
  Import& im = t.im;
  if (!m.is_object() || !m.contains("_component_") || !m["_component_"].is_string())
    throw DataError(path + ": model._component_: expected the model builder's name");
  const std::string builder = m["_component_"].get<std::string>();
  const std::string src = path + ": model._component_ = " + builder;
  bool qlora = false;
  if (const auto preset = torchtune_preset(builder, qlora)) im.set("--model", *preset, src);
  else if (checkpointer.is_object() && checkpointer.contains("checkpoint_dir") && checkpointer["checkpoint_dir"].is_string())
    im.set("--model", checkpointer["checkpoint_dir"].get<std::string>(), path + ": checkpointer.checkpoint_dir (" + builder + " is not a gpuplan preset)");
  else im.ignore(src, "not a gpuplan preset and no checkpointer.checkpoint_dir: pass --model before --");
  if (qlora) im.set("--qlora", "", src);
  std::vector<std::string> targets, mlp;  // attention first, then the MLP, whatever the keys' order
  for (const auto& [k, v] : m.items()) {
    const std::string s = path + ": model." + k + " = " + (v.is_array() ? v.dump() : scalar_text(v));
    if (k == "_component_") continue;
    if (k == "lora_rank") im.set("--lora-rank", number_text(yaml_whole(v, s)), s);
    else if (k == "lora_attn_modules") {
      // torchtune's attention projections by their Hugging Face names (output_proj is o_proj).
      for (const auto& name : v) {
        if (!name.is_string()) throw DataError(s + ": expected module names");
        targets.push_back(name == "output_proj" ? "o_proj" : name.get<std::string>());
      }
    } else if (k == "apply_lora_to_mlp") {
      if (yaml_true(v, s)) mlp = {"gate_proj", "up_proj", "down_proj"};
    } else if (k == "apply_lora_to_output") {
      if (yaml_true(v, s)) im.ignore(s, "LoRA on the output projection is not modelled");
    } else im.ignore(s, no_memory_effect, false);
  }
  targets.insert(targets.end(), mlp.begin(), mlp.end());
  if (!targets.empty()) {
    std::string list;
    for (const auto& x : targets) list += (list.empty() ? "" : ",") + x;
    im.set("--lora-targets", list, path + ": model.lora_attn_modules / apply_lora_to_mlp");
  }
}

}  // namespace detail

// `key=value` overrides of `tune run` (dotted keys into the config; values as YAML scalars: numbers, booleans).
inline void torchtune_override(nlohmann::json& j, const std::string& word) {
  if (!j.is_object()) throw DataError("a torchtune config is a mapping of keys");
  const auto eq = word.find('=');
  nlohmann::json* node = &j;
  std::string key = word.substr(0, eq);
  for (std::size_t dot; (dot = key.find('.')) != std::string::npos; key = key.substr(dot + 1)) {
    nlohmann::json& next = (*node)[key.substr(0, dot)];
    if (!next.is_object()) next = nlohmann::json::object();
    node = &next;
  }
  const std::string v = word.substr(eq + 1);
  const auto b = boolean(v);
  nlohmann::json value = v;
  if (b && (lower(v) == "true" || lower(v) == "false")) value = *b;
  else if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() < 16) value = std::stoll(v);
  (*node)[key] = value;
}

inline void read_torchtune_config(TrainImport& t, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw DataError(path + ": a torchtune config is a mapping of keys");
  Import& im = t.im;
  const nlohmann::json none;
  for (const auto& [k, v] : j.items()) {
    const std::string src = path + ": " + k + " = " + (v.is_object() || v.is_array() ? v.dump() : detail::scalar_text(v));
    if (v.is_null()) im.ignore(src, "empty: the recipe's default", false);
    else if (k == "model") detail::torchtune_model(t, v, path, j.contains("checkpointer") ? j["checkpointer"] : none);
    else if (k == "batch_size") im.set("--batch", number_text(detail::yaml_whole(v, src)), src);
    else if (k == "gradient_accumulation_steps") im.set("--grad-accum", number_text(detail::yaml_whole(v, src)), src);
    else if (k == "enable_activation_checkpointing") {
      if (detail::yaml_true(v, src)) im.set("--grad-checkpointing", "", src);
    } else if (k == "dtype") {
      if (!v.is_string() || !dtype_name(v.get<std::string>())) throw DataError(src + ": expected bf16 or fp32");
      t.weights_dtype = Read<std::string>{*dtype_name(v.get<std::string>()), src};
    } else if (k == "optimizer") {
      if (!v.is_object() || !v.contains("_component_") || !v["_component_"].is_string())
        throw DataError(src + ": expected optimizer._component_");
      std::string name = v["_component_"].get<std::string>();
      if (lower(name.substr(name.rfind('.') + 1)) == "adamw" && v.contains("fused") && v["fused"] == true)
        name = "adamw_torch_fused";
      map_optimizer(t, name, path + ": optimizer._component_ = " + v["_component_"].get<std::string>());
    } else if (k == "tokenizer") {
      if (v.is_object() && v.contains("max_seq_len") && !v["max_seq_len"].is_null())
        im.set("--seq", number_text(detail::yaml_whole(v["max_seq_len"], src)), path + ": tokenizer.max_seq_len = " + v["max_seq_len"].dump());
      else im.ignore(src, "no max_seq_len: the samples' own lengths; gpuplan plans for --seq (default 2048)");
    } else if (k == "fsdp_cpu_offload") {
      if (detail::yaml_true(v, src)) {
        im.set("--offload-optimizer", "cpu", src);
        im.set("--offload-params", "cpu", src);
      }
    } else if (k == "enable_activation_offloading" && detail::yaml_true(v, src)) {
      im.set("--activation-offload", "", src);
    } else if (k == "loss" && v.is_object() && v.contains("_component_") && v["_component_"].is_string() &&
               v["_component_"].get<std::string>().find("CEWithChunkedOutputLoss") != std::string::npos) {
      im.set("--loss", "chunked", src);  // torchtune 0.6: 8 chunks, each chunk's logits upcast on its own
    } else if (k == "enable_activation_offloading" || k == "optimizer_in_bwd" || k == "compile" || k == "loss") {
      im.ignore(src, "changes memory or speed in a way gpuplan does not model",
                !(v.is_boolean() && !v.get<bool>()));
    } else {
      im.ignore(src, no_memory_effect, false);
    }
  }
}

}  // namespace gpuplan::launch
