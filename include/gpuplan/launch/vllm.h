// `vllm serve MODEL [flags]` and `python -m vllm.entrypoints.openai.api_server --model MODEL [flags]` as gpuplan
// infer flags. Flags as vLLM 0.11 defines them (vllm/engine/arg_utils.py EngineArgs.add_cli_args, the OpenAI
// server's vllm/entrypoints/openai/cli_args.py): the short forms -tp, -pp, -dp, -q; FlexibleArgumentParser also
// takes each long flag with underscores (--max_model_len) and --flag=value.
#pragma once
#include <array>
#include <string_view>

#include "launch.h"

namespace gpuplan::launch {

namespace detail {

// vLLM --dtype → gpuplan --precision (auto: the checkpoint's own dtype, which gpuplan reads from its headers).
inline std::optional<std::string> vllm_dtype(const std::string& v) {
  if (v == "half" || v == "float16") return "fp16";
  if (v == "bfloat16") return "bf16";
  if (v == "float" || v == "float32") return "fp32";
  return std::nullopt;
}

// vLLM --quantization → gpuplan --weights, where gpuplan has the format.
inline std::optional<std::string> vllm_quantization(const std::string& v) {
  if (v == "awq" || v == "awq_marlin") return "awq-int4";
  if (v == "gptq" || v == "gptq_marlin") return "gptq-int4";
  if (v == "fp8" || v == "fbgemm_fp8" || v == "ptpc_fp8") return "fp8";
  if (v == "bitsandbytes") return "nf4";  // vLLM's in-flight bitsandbytes quantisation is 4-bit NF4
  if (v == "mxfp4") return "mxfp4";
  if (v == "modelopt_fp4") return "nvfp4";
  return std::nullopt;
}

// Flags that take no value (store_true and vLLM's --flag / --no-flag booleans): must not swallow the next word.
inline bool vllm_switch(std::string_view f) {
  static constexpr std::array<std::string_view, 24> names{
      "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--no-enable-prefix-caching",
      "--enable-chunked-prefill", "--no-enable-chunked-prefill", "--enable-expert-parallel",
      "--no-enable-expert-parallel", "--disable-log-requests", "--disable-log-stats", "--enable-auto-tool-choice",
      "--enable-lora", "--disable-custom-all-reduce", "--enable-sleep-mode", "--disable-frontend-multiprocessing",
      "--enable-log-requests", "--headless", "--async-scheduling", "--skip-tokenizer-init", "--enable-eplb",
      "--disable-sliding-window", "--disable-cascade-attn", "--enable-reasoning", "--enable-server-load-tracking"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

// Flags read and known not to change memory or speed (serving, tokenizer, logging, sampling defaults).
inline bool vllm_no_effect(std::string_view f) {
  static constexpr std::array<std::string_view, 33> names{
      "--host", "--port", "--served-model-name", "--api-key", "--trust-remote-code", "--download-dir",
      "--tokenizer", "--tokenizer-mode", "--seed", "--disable-log-requests", "--disable-log-stats",
      "--uvicorn-log-level", "--chat-template", "--tool-call-parser", "--enable-auto-tool-choice",
      "--reasoning-parser", "--generation-config", "--response-role", "--ssl-keyfile", "--ssl-certfile",
      "--allowed-origins", "--root-path", "--middleware", "--load-format", "--config-format", "--tokenizer-revision",
      "--code-revision", "--enable-log-requests", "--max-log-len", "--disable-frontend-multiprocessing",
      "--enable-server-load-tracking", "--enable-reasoning", "--hf-token"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

inline std::string vllm_canonical(const std::string& flag) {
  const std::string name = respelled(flag, '_', '-');
  if (name == "-tp") return "--tensor-parallel-size";
  if (name == "-pp") return "--pipeline-parallel-size";
  if (name == "-dp") return "--data-parallel-size";
  if (name == "-q") return "--quantization";
  return name;
}

// One vLLM flag; false when gpuplan does not know it.
inline bool vllm_flag(Import& im, Argv& args, const Argv::Token& t, std::string& model, std::string& revision) {
  const std::string f = vllm_canonical(t.name);
  std::string src;
  if (vllm_switch(f)) {
    src = t.text;
    if (f == "--enforce-eager")
      im.ignore(src, "CUDA graphs off: gpuplan's vLLM profile counts their memory (it has no setting for eager mode)");
    else if (f == "--enable-expert-parallel")
      im.ignore(src, "expert parallelism is not modelled for serving: experts are split as tensor parallel");
    else if (f == "--no-enable-chunked-prefill" || f == "--enable-chunked-prefill")
      im.ignore(src, "vLLM's V1 engine always chunks prefill; the chunk is --max-num-batched-tokens", false);
    else if (f == "--enable-lora")
      im.ignore(src, "LoRA adapters' memory in serving is not modelled");
    else if (f == "--enable-prefix-caching")
      im.set("--enable-prefix-caching", "", src);  // a hybrid model's linear layers keep two state pages a request
    else
      im.ignore(src, vllm_no_effect(f) ? no_memory_effect : "a switch gpuplan's vLLM profile does not model",
                !vllm_no_effect(f) && f != "--no-enable-prefix-caching");
    return true;
  }
  if (vllm_no_effect(f)) {
    args.value(t, src);
    im.ignore(src, no_memory_effect, false);
    return true;
  }
  if (f == "--model") {
    model = args.value(t, src);
    im.set("--model", model, src);
    return true;
  }
  if (f == "--revision") {
    revision = args.value(t, src);
    im.ignore(src, "read with the model: --model MODEL@REVISION", false);
    return true;
  }
  if (f == "--dtype") {
    const std::string v = args.value(t, src);
    if (v == "auto") im.ignore(src, "the checkpoint's dtype: gpuplan's default (the weights as stored)", false);
    else if (auto p = vllm_dtype(v)) im.set("--precision", *p, src);
    else throw InputError(src + ": unknown dtype (vLLM takes auto, half, float16, bfloat16, float, float32)");
    return true;
  }
  if (f == "--quantization") {
    const std::string v = args.value(t, src);
    if (auto w = vllm_quantization(v)) im.set("--weights", *w, src);
    else im.ignore(src, "a quantization gpuplan has no weight format for: the checkpoint's stored bytes are used");
    return true;
  }
  if (f == "--kv-cache-dtype") {
    const std::string v = args.value(t, src);
    if (v == "auto") im.ignore(src, "the activations' dtype: gpuplan's default", false);
    else if (v == "fp8" || v == "fp8_e4m3" || v == "fp8_e5m2" || v == "fp8_inc") im.set("--kv-dtype", "fp8", src);
    else if (v == "bfloat16") im.set("--kv-dtype", "bf16", src);
    else throw InputError(src + ": unknown KV cache dtype (vLLM takes auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2)");
    return true;
  }
  struct Mapped {
    std::string_view vllm, gpuplan;
    bool human;  // vLLM reads it with human_readable_int (32k, 1M)
  };
  static constexpr std::array<Mapped, 5> whole_flags{{{"--tensor-parallel-size", "--tp", false},
                                                      {"--max-model-len", "--context", true},
                                                      {"--max-num-seqs", "--max-num-seqs", false},
                                                      {"--max-num-batched-tokens", "--max-num-batched-tokens", true},
                                                      {"--block-size", "", false}}};
  for (const auto& m : whole_flags)
    if (f == m.vllm) {
      const std::int64_t v = whole(args.value(t, src), f, m.human);
      if (m.gpuplan.empty()) im.ignore(src, "gpuplan's vLLM profile keeps the default block of 16 tokens");
      else im.set(std::string(m.gpuplan), number_text(v), src);
      return true;
    }
  if (f == "--gpu-memory-utilization") {
    const std::string v = args.value(t, src);
    real(v, src);
    im.set("--gpu-memory-utilization", v, src);
    return true;
  }
  if (f == "--pipeline-parallel-size" || f == "--data-parallel-size") {
    const std::int64_t v = whole(args.value(t, src), f);
    if (v > 1)
      im.ignore(src, f == "--data-parallel-size" ? "replicas: memory per GPU is one replica's; throughput is per replica"
                                                 : "pipeline parallelism is not modelled for serving",
                f != "--data-parallel-size");
    else im.ignore(src, "1: the default", false);
    return true;
  }
  static constexpr std::array<std::string_view, 10> unmodelled{
      "--cpu-offload-gb", "--swap-space", "--kv-cache-memory", "--num-gpu-blocks-override", "--max-seq-len-to-capture",
      "--compilation-config", "--speculative-config", "--limit-mm-per-prompt", "--max-lora-rank", "--max-loras"};
  for (auto u : unmodelled)
    if (f == u) {
      args.value(t, src);
      im.ignore(src, f == "--swap-space" ? "host memory for preempted sequences: not GPU memory"
                                         : "a setting gpuplan's vLLM profile does not model",
                f != "--swap-space");
      return true;
    }
  return false;
}

}  // namespace detail

// args: the words after `vllm` (starting at "serve") or after `-m vllm.entrypoints.openai.api_server`.
inline Import import_vllm(const std::vector<std::string>& words, bool serve) {
  Import im;
  im.tool = "vllm";
  im.followed = "vLLM 0.11 (vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py)";
  im.set("--profile", "vllm", serve ? "vllm serve" : "vllm.entrypoints.openai.api_server");
  Argv args(words);
  std::string model, revision;
  while (!args.done()) {
    const auto t = args.next();
    if (!t.flag()) {
      if (serve && model.empty()) {
        model = t.text;
        im.set("--model", model, t.text + " (the model argument)");
      } else {
        im.ignore(t.text, "an extra word vLLM would reject");
      }
      continue;
    }
    if (!detail::vllm_flag(im, args, t, model, revision)) im.ignore(args.skip_unknown(t), unknown_flag);
  }
  if (!revision.empty() && !model.empty()) im.set("--model", model + "@" + revision, "--model " + model + " --revision " + revision);
  return im;
}

}  // namespace gpuplan::launch
