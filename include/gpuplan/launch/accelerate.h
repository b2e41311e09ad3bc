// Accelerate's settings, from `accelerate launch` flags or its config YAML (default_config.yaml), as gpuplan train
// flags. Keys as Accelerate 1.10 names them (accelerate/commands/launch.py, commands/config/config_args.py): the
// YAML's top-level keys, its deepspeed_config and fsdp_config sections, and the launch flags of the same names.
#pragma once
#include <nlohmann/json.hpp>

#include "training.h"

namespace gpuplan::launch {

namespace detail {

inline bool accelerate_true(const std::string& v, const std::string& src) {
  const auto b = boolean(v);
  if (!b) throw InputError(src + ": expected true or false");
  return *b;
}

// One Accelerate setting (a launch flag without its dashes, or a YAML key with its section's keys flattened);
// false when gpuplan does not know it.
inline bool accelerate_key(TrainImport& t, const std::string& k, const std::string& v, const std::string& src) {
  Import& im = t.im;
  if (k == "num_processes") t.processes = Read<std::int64_t>{whole(v, src), src};
  else if (k == "num_machines") t.machines = Read<std::int64_t>{whole(v, src), src};
  else if (k == "mixed_precision") {
    const std::string m = lower(v);
    if (m != "no" && m != "bf16" && m != "fp16" && m != "fp8") throw InputError(src + ": expected no, bf16, fp16 or fp8");
    if (m == "fp8") im.set("--precision", "fp8", src);
    else t.half = Read<std::string>{m, src};
  } else if (k == "distributed_type") {
    const std::string d = lower(v);
    if (d == "deepspeed") t.deepspeed = true;
    else if (d == "fsdp") t.fsdp_default = src;
    else if (d != "no" && d != "multi_gpu" && d != "multi_cpu")
      im.ignore(src, "a backend gpuplan does not model (it knows NO, MULTI_GPU, FSDP and DEEPSPEED)");
  } else if (k == "use_deepspeed") t.deepspeed = accelerate_true(v, src);
  else if (k == "use_fsdp") {
    if (accelerate_true(v, src)) t.fsdp_default = src;
  } else if (k == "multi_gpu" || k == "gpu_ids" || k == "machine_rank" || k == "main_process_ip" ||
             k == "main_process_port" || k == "rdzv_backend" || k == "same_network" || k == "main_training_function" ||
             k == "compute_environment" || k == "use_cpu" || k == "debug" || k == "downcast_bf16" ||
             k == "num_cpu_threads_per_process" || k == "tpu_env" || k == "tpu_use_cluster" ||
             k == "tpu_use_sudo" || k == "enable_cpu_affinity" || k == "quiet" || k == "dynamo_backend" ||
             k == "deepspeed_multinode_launcher" || k == "zero3_save_16bit_model" || k == "gradient_clipping" ||
             k == "fsdp_state_dict_type" || k == "fsdp_auto_wrap_policy" || k == "fsdp_backward_prefetch" ||
             k == "fsdp_forward_prefetch" || k == "fsdp_sync_module_states" || k == "fsdp_use_orig_params" ||
             k == "fsdp_transformer_layer_cls_to_wrap" || k == "fsdp_cpu_ram_efficient_loading" ||
             k == "fsdp_backward_prefetch_policy" || k == "fsdp_min_num_params")
    im.ignore(src, no_memory_effect, false);
  else if (k == "zero_stage") {
    t.deepspeed = true;
    const std::int64_t s = whole(v, src);
    if (s > 3) throw InputError(src + ": expected 0, 1, 2 or 3");
    im.set("--zero", number_text(s), src);
  } else if (k == "offload_optimizer_device" || k == "offload_param_device") {
    const std::string d = lower(v);
    if (d != "none" && d != "cpu" && d != "nvme") throw InputError(src + ": expected none, cpu or nvme");
    im.set(k == "offload_param_device" ? "--offload-params" : "--offload-optimizer", d, src);
  } else if (k == "gradient_accumulation_steps") im.set("--grad-accum", number_text(whole(v, src)), src);
  else if (k == "zero3_init_flag") im.ignore(src, "gpuplan's ZeRO-3 estimate assumes zero.Init (parameters created sharded)", false);
  else if (k == "deepspeed_config_file") {
    t.deepspeed = true;
    im.files.push_back({FileKind::deepspeed_json, v, src});
  } else if (k == "fsdp_sharding_strategy") map_fsdp(t, v, src);
  else if (k == "fsdp_reshard_after_forward") {
    // FSDP2 (fsdp_version 2): resharding after forward is FULL_SHARD, keeping the gathered weights SHARD_GRAD_OP.
    map_fsdp(t, accelerate_true(v, src) ? "full_shard" : "shard_grad_op", src);
  } else if (k == "fsdp_offload_params") {
    if (accelerate_true(v, src)) {
      im.set("--offload-optimizer", "cpu", src);
      im.set("--offload-params", "cpu", src);
    }
  } else if (k == "fsdp_activation_checkpointing") {
    if (accelerate_true(v, src)) im.set("--grad-checkpointing", "", src);
  } else if (k == "fsdp_version") {
    im.ignore(src, "FSDP1 and FSDP2 shard the same bytes: gpuplan models ZeRO stages as FSDP2", false);
  } else {
    return false;
  }
  return true;
}

inline std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  return v.dump();
}

}  // namespace detail

// The config as JSON (the CLI converts YAML); path names it in errors and the report.
inline void read_accelerate_config(TrainImport& t, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw DataError(path + ": an Accelerate config is a mapping of keys");
  for (const auto& [k, v] : j.items()) {
    if ((k == "deepspeed_config" || k == "fsdp_config") && v.is_object()) {
      for (const auto& [k2, v2] : v.items()) {
        const std::string src = path + ": " + k + "." + k2 + " = " + detail::scalar_text(v2);
        if (v2.is_null()) t.im.ignore(src, "empty: Accelerate's default", false);
        else if (v2.is_object() || v2.is_array()) t.im.ignore(src, "a nested setting gpuplan does not read");
        else if (!detail::accelerate_key(t, k2, detail::scalar_text(v2), src)) t.im.ignore(src, unknown_flag);
      }
      if (k == "deepspeed_config") t.deepspeed = true;
      continue;
    }
    const std::string src = path + ": " + k + " = " + detail::scalar_text(v);
    if (v.is_null() || v.is_object() || v.is_array()) t.im.ignore(src, no_memory_effect, false);
    else if (!detail::accelerate_key(t, k, detail::scalar_text(v), src)) t.im.ignore(src, unknown_flag);
  }
  // Inline DeepSpeed settings take their precision from mixed_precision.
  if (t.deepspeed && !t.deepspeed_half && t.half) t.deepspeed_half = t.half;
}

}  // namespace gpuplan::launch
