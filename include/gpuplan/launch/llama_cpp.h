// `llama-server` / `llama-cli` command lines as gpuplan infer flags (--profile llama.cpp). Flags as llama.cpp's
// common/arg.cpp defines them at b6700 (October 2025): short and long spellings, -fa taking on|off|auto (before
// b6325 a bare switch, still accepted), -ngl a number (later builds also take auto and all).
#pragma once
#include <array>
#include <string_view>

#include "launch.h"

namespace gpuplan::launch {

namespace detail {

// llama.cpp --cache-type-k/-v → gpuplan --kv-dtype (q8_0 and q4_0 are gpuplan's int8 and int4 cache types).
inline std::optional<std::string> ggml_cache_type(const std::string& v) {
  if (v == "f16") return "fp16";
  if (v == "bf16") return "bf16";
  if (v == "f32") return "fp32";
  if (v == "q8_0") return "int8";
  if (v == "q4_0") return "int4";
  return std::nullopt;
}

inline bool llama_switch(std::string_view f) {
  static constexpr std::array<std::string_view, 39> names{
      "--mlock", "--no-mmap", "--jinja", "-cnv", "-no-cnv", "--conversation", "--no-conversation", "-i",
      "--interactive", "--color", "--metrics", "--slots", "--no-slots", "--no-webui", "-cb", "--cont-batching",
      "-nocb", "--no-cont-batching", "-nkvo", "--no-kv-offload", "--verbose", "-v",
      "--log-disable", "--embedding", "--embeddings", "--reranking", "--no-warmup", "--context-shift",
      "--no-context-shift", "-kvu", "--kv-unified", "--swa-full", "-sp", "--special", "-e", "--escape",
      "--no-escape", "-st", "--single-turn"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

// Flags with a value that do not change memory or speed: server, prompt, sampling, threads, logging.
inline bool llama_no_effect_value(std::string_view f) {
  static constexpr std::array<std::string_view, 38> names{
      "--host", "--port", "-a", "--alias", "--api-key", "--chat-template", "--chat-template-file", "-p", "--prompt",
      "-f", "--file", "-sys", "--system-prompt", "-s", "--seed", "--temp", "--top-k", "--top-p", "--min-p",
      "--repeat-penalty", "--repeat-last-n", "-t", "--threads", "-tb", "--threads-batch", "--numa", "-to",
      "--timeout", "--log-file", "--path", "--api-prefix", "--reasoning-format", "--reasoning-budget", "-r",
      "--reverse-prompt", "--grammar", "--json-schema", "--cache-reuse"};
  for (auto n : names)
    if (n == f) return true;
  return false;
}

inline std::string llama_canonical(const std::string& f) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 13> aliases{{
      {"-m", "--model"}, {"-c", "--ctx-size"}, {"-n", "--n-predict"}, {"--predict", "--n-predict"},
      {"-b", "--batch-size"}, {"-ub", "--ubatch-size"}, {"-ngl", "--n-gpu-layers"}, {"--gpu-layers", "--n-gpu-layers"},
      {"-fa", "--flash-attn"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-np", "--parallel"},
      {"-hf", "--hf-repo"}}};
  for (auto [a, b] : aliases)
    if (f == a) return std::string(b);
  if (f == "-hfr") return "--hf-repo";
  return f;
}

struct LlamaCache {
  std::optional<std::string> k, v;
  std::string k_src, v_src;
  std::optional<std::int64_t> batch, ubatch;
  std::string batch_src;
};

// One llama.cpp flag; false when gpuplan does not know it.
inline bool llama_flag(Import& im, Argv& args, const Argv::Token& t, LlamaCache& c) {
  const std::string f = llama_canonical(t.name);
  std::string src;
  if (f == "--flash-attn") {
    const auto v = args.optional_value(t, src, [](const std::string& s) { return s == "on" || s == "off" || s == "auto"; });
    // auto: on where the backend supports it, as on CUDA (what gpuplan's llama.cpp profile assumes).
    im.set("--flash-attn", v && *v == "off" ? "off" : "on", src);
    return true;
  }
  if (f == "-nkvo" || f == "--no-kv-offload") {
    im.ignore(t.text, "the KV cache kept in host memory is not modelled: gpuplan counts it on the GPU");
    return true;
  }
  if (f == "--cpu-moe" || f == "-cmoe") {
    im.set("--cpu-moe", "", t.text);
    return true;
  }
  if (f == "--n-cpu-moe" || f == "-ncmoe") {
    im.set("--n-cpu-moe", number_text(whole(args.value(t, src), f)), src);
    return true;
  }
  if (f == "--override-tensor" || f == "-ot") {
    // Rules of repeated -ot flags add up (common/arg.cpp appends them); gpuplan takes one comma-separated list.
    const std::string v = args.value(t, src);
    for (auto& s : im.settings)
      if (s.flag == "--override-tensor") {
        s.value += "," + v;
        s.source += " " + src;
        return true;
      }
    im.set("--override-tensor", v, src);
    return true;
  }
  if (f == "--fit" || f == "-fit") {
    const auto v = args.optional_value(t, src, [](const std::string& s) { return s == "on" || s == "off"; });
    im.set("--fit", v.value_or("on"), src);
    return true;
  }
  if (f == "--fit-target" || f == "-fitt") {
    im.set("--fit-target", number_text(whole(args.value(t, src), f)), src);
    return true;
  }
  if (llama_switch(f)) {
    im.ignore(t.text, no_memory_effect, false);
    return true;
  }
  if (llama_no_effect_value(f)) {
    args.value(t, src);
    im.ignore(src, no_memory_effect, false);
    return true;
  }
  if (f == "--model") {
    im.set("--model", args.value(t, src), src);
    return true;
  }
  if (f == "--hf-repo" || f == "-hff" || f == "--hf-file") {
    args.value(t, src);
    im.ignore(src, "gpuplan does not download GGUF files: pass the downloaded file as --model FILE.gguf before --");
    return true;
  }
  if (f == "--ctx-size") {
    const std::int64_t v = whole(args.value(t, src), f);
    if (v == 0) im.ignore(src, "0 = the model's training context: pass --context N to gpuplan for that length");
    else im.set("--context", number_text(v), src);
    return true;
  }
  if (f == "--n-predict") {
    const std::string text = args.value(t, src);
    if (text == "-1" || text == "-2") im.ignore(src, "until the context is full: gpuplan's --new-tokens default", false);
    else im.set("--new-tokens", number_text(whole(text, f)), src);
    return true;
  }
  if (f == "--n-gpu-layers") {
    const std::string v = args.value(t, src);
    if (v == "all") im.ignore(src, "every layer on the GPU: gpuplan's default", false);
    else if (v == "auto") im.ignore(src, "llama.cpp fits the layers to the free memory (--fit), as gpuplan does", false);
    else im.set("--gpu-layers", number_text(whole(v, f)), src);
    return true;
  }
  if (f == "--parallel") {
    im.set("--parallel", number_text(whole(args.value(t, src), f)), src);
    return true;
  }
  if (f == "--batch-size" || f == "--ubatch-size") {
    const std::int64_t v = whole(args.value(t, src), f);
    if (f == "--ubatch-size") {
      c.ubatch = v;
      im.set("--ubatch", number_text(v), src);
    } else {
      c.batch = v;
      c.batch_src = src;
    }
    return true;
  }
  if (f == "--cache-type-k" || f == "--cache-type-v") {
    const std::string v = args.value(t, src);
    (f == "--cache-type-k" ? c.k : c.v) = v;
    (f == "--cache-type-k" ? c.k_src : c.v_src) = src;
    return true;
  }
  // -sm / -ts: the split over the GPUs --tp counts (the command does not say how many CUDA_VISIBLE_DEVICES holds).
  if (f == "-sm" || f == "--split-mode") {
    im.set("--split-mode", args.value(t, src), src);
    return true;
  }
  if (f == "-ts" || f == "--tensor-split") {
    im.set("--tensor-split", args.value(t, src), src);
    return true;
  }
  static constexpr std::array<std::string_view, 2> unmodelled{"-md", "--model-draft"};
  for (auto u : unmodelled)
    if (f == u) {
      args.value(t, src);
      im.ignore(src, "a placement gpuplan's llama.cpp profile does not model");
      return true;
    }
  return false;
}

// The cache types: gpuplan has one --kv-dtype for both K and V.
inline void llama_cache_types(Import& im, const LlamaCache& c) {
  const std::string k = c.k.value_or("f16"), v = c.v.value_or("f16");
  const std::string src = c.k_src + (c.k_src.empty() || c.v_src.empty() ? "" : " ") + c.v_src;
  if (!c.k && !c.v) return;
  const auto kk = ggml_cache_type(k);
  if (k != v) im.ignore(src, "K and V caches of different types: gpuplan has one --kv-dtype for both");
  else if (!kk) im.ignore(src, "a cache type gpuplan has no size for (it knows f32, f16, bf16, q8_0, q4_0)");
  else im.set("--kv-dtype", *kk, src);
}

}  // namespace detail

// words: the arguments after the program name.
inline Import import_llama_cpp(const std::vector<std::string>& words, const std::string& program) {
  Import im;
  im.tool = "llama.cpp";
  im.followed = "llama.cpp b6700 (common/arg.cpp)";
  im.set("--profile", "llama.cpp", program);
  Argv args(words);
  detail::LlamaCache cache;
  while (!args.done()) {
    const auto t = args.next();
    if (!t.flag()) {
      im.ignore(t.text, "an extra word llama.cpp would reject");
      continue;
    }
    if (!detail::llama_flag(im, args, t, cache)) im.ignore(args.skip_unknown(t), unknown_flag);
  }
  detail::llama_cache_types(im, cache);
  // llama.cpp runs ubatches of min(-b, -ub) tokens (n_ubatch is clamped to n_batch).
  if (cache.batch) {
    const std::int64_t ub = cache.ubatch.value_or(512);
    if (*cache.batch < ub) im.set("--ubatch", number_text(*cache.batch), cache.batch_src + " (ubatches are at most -b)");
    else im.ignore(cache.batch_src, "the logical batch: memory follows the ubatch (-ub)", false);
  }
  return im;
}

}  // namespace gpuplan::launch
