// `python -m sglang.launch_server --model-path MODEL [flags]` as gpuplan infer flags (--profile sglang). Flags as
// SGLang 0.5 defines them (python/sglang/srt/server_args.py, ServerArgs.add_cli_args): --tp is --tp-size's short
// form, --model the --model-path alias.
#pragma once
#include <array>
#include <string_view>

#include "vllm.h"

namespace gpuplan::launch {

namespace detail {

inline bool sglang_switch(std::string_view f) {
  static constexpr std::array<std::string_view, 12> names{
      "--trust-remote-code", "--disable-cuda-graph", "--enable-torch-compile", "--enable-dp-attention",
      "--disable-radix-cache", "--enable-metrics", "--log-requests", "--skip-tokenizer-init", "--enable-mixed-chunk",
      "--disable-custom-all-reduce", "--enable-ep-moe", "--show-time-cost"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

inline bool sglang_flag(Import& im, Argv& args, const Argv::Token& t) {
  std::string f = respelled(t.name, '_', '-'), src;
  if (sglang_switch(f)) {
    const bool none = f == "--trust-remote-code" || f == "--enable-metrics" || f == "--log-requests" ||
                      f == "--show-time-cost" || f == "--skip-tokenizer-init";
    im.ignore(t.text, none ? no_memory_effect : "a switch gpuplan's SGLang profile does not model", !none);
    return true;
  }
  if (f == "--model-path" || f == "--model") {
    im.set("--model", args.value(t, src), src);
  } else if (f == "--tp-size" || f == "--tp") {
    im.set("--tp", number_text(whole(args.value(t, src), f)), src);
  } else if (f == "--mem-fraction-static") {
    const std::string v = args.value(t, src);
    real(v, src);
    im.set("--mem-fraction-static", v, src);
  } else if (f == "--context-length") {
    im.set("--context", number_text(whole(args.value(t, src), f)), src);
  } else if (f == "--chunked-prefill-size") {
    const std::string v = args.value(t, src);
    if (v == "-1") im.ignore(src, "chunked prefill off: the whole prompt at once, gpuplan's default", false);
    else im.set("--chunked-prefill", number_text(whole(v, f)), src);
  } else if (f == "--dtype") {
    const std::string v = args.value(t, src);
    if (v == "auto") im.ignore(src, "the checkpoint's dtype: gpuplan's default (the weights as stored)", false);
    else if (auto p = vllm_dtype(v)) im.set("--precision", *p, src);
    else throw InputError(src + ": unknown dtype (SGLang takes auto, half, float16, bfloat16, float, float32)");
  } else if (f == "--quantization") {
    const std::string v = args.value(t, src);
    if (auto w = vllm_quantization(v)) im.set("--weights", *w, src);
    else im.ignore(src, "a quantization gpuplan has no weight format for: the checkpoint's stored bytes are used");
  } else if (f == "--kv-cache-dtype") {
    const std::string v = args.value(t, src);
    if (v == "auto") im.ignore(src, "the activations' dtype: gpuplan's default", false);
    else if (v.rfind("fp8", 0) == 0) im.set("--kv-dtype", "fp8", src);
    else if (v == "bf16" || v == "bfloat16") im.set("--kv-dtype", "bf16", src);
    else throw InputError(src + ": unknown KV cache dtype (SGLang takes auto, fp8_e5m2, fp8_e4m3, bf16)");
  } else if (f == "--host" || f == "--port" || f == "--served-model-name" || f == "--tokenizer-path" ||
             f == "--log-level" || f == "--random-seed" || f == "--api-key" || f == "--chat-template" ||
             f == "--schedule-policy" || f == "--revision" || f == "--download-dir" || f == "--load-format" ||
             f == "--tool-call-parser" || f == "--reasoning-parser") {
    args.value(t, src);
    im.ignore(src, no_memory_effect, false);
  } else if (f == "--dp-size" || f == "--dp") {
    args.value(t, src);
    im.ignore(src, "replicas: memory per GPU is one replica's; throughput is per replica", false);
  } else if (f == "--max-running-requests" || f == "--max-total-tokens" || f == "--max-prefill-tokens" ||
             f == "--cuda-graph-max-bs" || f == "--ep-size" || f == "--pp-size" || f == "--attention-backend" ||
             f == "--schedule-conservativeness" || f == "--page-size" || f == "--speculative-algorithm") {
    args.value(t, src);
    im.ignore(src, "a setting gpuplan's SGLang profile does not model");
  } else {
    return false;
  }
  return true;
}

}  // namespace detail

inline Import import_sglang(const std::vector<std::string>& words) {
  Import im;
  im.tool = "sglang";
  im.followed = "SGLang 0.5 (python/sglang/srt/server_args.py)";
  im.set("--profile", "sglang", "sglang.launch_server");
  Argv args(words);
  while (!args.done()) {
    const auto t = args.next();
    if (!t.flag()) im.ignore(t.text, "an extra word SGLang would reject");
    else if (!detail::sglang_flag(im, args, t)) im.ignore(args.skip_unknown(t), unknown_flag);
  }
  return im;
}

}  // namespace gpuplan::launch
