// A DeepSpeed config (ds_config.json) as gpuplan train flags: ZeRO stage, offload targets, bucket sizes,
// overlap_comm, bf16/fp16, micro-batch and accumulation. Keys as DeepSpeed 0.17 reads them
// (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py and offload_config.py); "auto" is the HF
// Trainer's placeholder, filled from its own flags.
#pragma once
#include <nlohmann/json.hpp>

#include "training.h"

namespace gpuplan::launch {

namespace detail {

// A key's value as a number (or "auto", then nullopt); DataError naming the file and the key otherwise.
inline std::optional<double> ds_number(const nlohmann::json& v, const std::string& where) {
  if (v.is_string() && v.get<std::string>() == "auto") return std::nullopt;
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw DataError(where + ": expected a number or \"auto\", got " + v.dump());
  return v.get<double>();
}

inline std::optional<bool> ds_bool(const nlohmann::json& v, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string() && v.get<std::string>() == "auto") return std::nullopt;
  throw DataError(where + ": expected true, false or \"auto\", got " + v.dump());
}

inline void ds_offload(TrainImport& t, const nlohmann::json& o, const std::string& where, const char* flag) {
  if (!o.is_object()) throw DataError(where + ": expected an object");
  for (const auto& [k, v] : o.items()) {
    const std::string key = where + "." + k;
    if (k == "device") {
      if (!v.is_string()) throw DataError(key + ": expected \"cpu\", \"nvme\" or \"none\"");
      const std::string d = v.get<std::string>();
      if (d != "cpu" && d != "nvme" && d != "none") throw DataError(key + ": expected \"cpu\", \"nvme\" or \"none\"");
      t.im.set(flag, d, key + " = " + d);
    } else {
      t.im.ignore(key + " = " + v.dump(), k == "pin_memory" ? "pinned host memory: not GPU memory" : no_memory_effect, false);
    }
  }
}

inline void ds_zero(TrainImport& t, const nlohmann::json& z, const std::string& where) {
  if (!z.is_object()) throw DataError(where + ": expected an object");
  for (const auto& [k, v] : z.items()) {
    const std::string key = where + "." + k, src = key + " = " + v.dump();
    if (k == "stage") {
      const auto s = ds_number(v, key);
      if (!s || *s != std::floor(*s) || *s > 3) throw DataError(key + ": expected 0, 1, 2 or 3");
      t.im.set("--zero", number_text(std::int64_t(*s)), src);
    } else if (k == "offload_optimizer") {
      ds_offload(t, v, key, "--offload-optimizer");
    } else if (k == "offload_param") {
      ds_offload(t, v, key, "--offload-params");
    } else if (k == "reduce_bucket_size" || k == "stage3_prefetch_bucket_size") {
      const auto n = ds_number(v, key);
      if (n && *n < 1 && k == "reduce_bucket_size")
        t.im.ignore(src, "a bucket of no elements: gpuplan keeps DeepSpeed's default 5e8");
      else if (n)  // whole element counts as whole numbers (2e8 → 200000000)
        t.im.set(k == "reduce_bucket_size" ? "--reduce-bucket-size" : "--prefetch-bucket-size",
                 *n == std::floor(*n) && *n <= 1e15 ? number_text(std::int64_t(*n)) : nlohmann::json(*n).dump(), src);
      else
        t.im.ignore(src, "the HF Trainer fills it from the model (hidden_size² and 0.9 × hidden_size²): pass "
                         "--reduce-bucket-size / --prefetch-bucket-size for it; gpuplan keeps DeepSpeed's default");
    } else if (k == "overlap_comm") {
      if (const auto b = ds_bool(v, key)) t.im.set("--overlap-comm", *b ? "true" : "false", src);
      else t.im.ignore(src, "auto: DeepSpeed's default by stage", false);
    } else if (k == "allgather_bucket_size" || k == "stage3_max_live_parameters" || k == "stage3_max_reuse_distance" ||
               k == "stage3_param_persistence_threshold" || k == "sub_group_size") {
      t.im.ignore(src, "a ZeRO buffer gpuplan's DeepSpeed profile does not model");
    } else {
      t.im.ignore(src, no_memory_effect, false);
    }
  }
}

inline void ds_half(TrainImport& t, const nlohmann::json& v, const std::string& key, const char* dtype) {
  if (!v.is_object()) throw DataError(key + ": expected an object");
  if (!v.contains("enabled")) return;
  const auto on = ds_bool(v["enabled"], key + ".enabled");
  const std::string src = key + ".enabled = " + v["enabled"].dump();
  if (!on) t.deepspeed_half = Read<std::string>{"auto", src};
  else if (*on) t.deepspeed_half = Read<std::string>{dtype, src};
}

}  // namespace detail

inline void read_deepspeed_config(TrainImport& t, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw DataError(path + ": a DeepSpeed config is a JSON object");
  t.deepspeed = true;
  for (const auto& [k, v] : j.items()) {
    const std::string key = path + ": " + k, src = key + " = " + v.dump();
    if (k == "zero_optimization") detail::ds_zero(t, v, key);
    else if (k == "bf16" || k == "bfloat16") detail::ds_half(t, v, key, "bf16");
    else if (k == "fp16") detail::ds_half(t, v, key, "fp16");
    else if (k == "train_micro_batch_size_per_gpu" || k == "gradient_accumulation_steps") {
      if (const auto n = detail::ds_number(v, key)) {
        if (*n < 1 || *n != std::floor(*n)) throw DataError(key + ": expected a whole number of 1 or more");
        t.im.set(k == "gradient_accumulation_steps" ? "--grad-accum" : "--batch", number_text(std::int64_t(*n)), src);
      } else {
        t.im.ignore(src, "auto: the HF Trainer's own flag", false);
      }
    } else if (k == "optimizer") {
      const auto type = v.is_object() && v.contains("type") && v["type"].is_string() ? v["type"].get<std::string>() : "";
      if (type.empty()) throw DataError(key + ".type: expected the optimizer's name");
      map_optimizer(t, type, key + ".type = " + type);
    } else if (k == "activation_checkpointing") {
      t.im.ignore(src, "Megatron-style activation checkpointing settings: the model's own checkpointing is "
                       "--gradient_checkpointing");
    } else {
      t.im.ignore(src, k == "train_batch_size" ? "the global batch: micro-batch × accumulation × data-parallel GPUs"
                                               : no_memory_effect,
                  false);
    }
  }
}

// The same from the file's bytes.
inline void read_deepspeed_bytes(TrainImport& t, std::string_view bytes, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path + ": not valid JSON (" + json_problem(e) + ")");
  }
  read_deepspeed_config(t, j, path);
}

}  // namespace gpuplan::launch
