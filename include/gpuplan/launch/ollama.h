// `ollama run MODEL` (or `ollama serve`) with the server's OLLAMA_* environment, and a Modelfile's FROM and
// PARAMETER lines, as gpuplan infer flags (--profile ollama). Names as Ollama 0.12 reads them (envconfig/config.go;
// docs/modelfile.md's valid parameters); a library model NAME[:TAG] becomes the gpuplan preset NAME-SIZE, its
// weights the tag's quantization (the library's default tags are Q4_K_M).
#pragma once
#include <array>

#include <algorithm>

#include "../builtin.h"
#include "../quant.h"
#include "llama_cpp.h"

namespace gpuplan::launch {

namespace detail {

// "llama3.1:8b-instruct-q8_0" → preset llama3.1-8b (or llama-3.1-8b) and weights q8_0.
inline void ollama_model(Import& im, const std::string& ref, const std::string& src) {
  if (ref.find('/') != std::string::npos && ref.find(".gguf") != std::string::npos) {
    im.set("--model", ref, src);
    return;
  }
  const auto colon = ref.find(':');
  const std::string name = lower(ref.substr(0, colon)), tag = colon == std::string::npos ? "" : lower(ref.substr(colon + 1));
  std::string size, quant = "q4_k_m";
  for (std::size_t p = 0; p <= tag.size();) {
    const std::size_t e = std::min(tag.find('-', p), tag.size());
    const std::string part = tag.substr(p, e - p);
    p = e + 1;
    if (size.empty() && !part.empty() && (part.back() == 'b' || part.back() == 'm') &&
        part.find_first_not_of("0123456789.x") == part.size() - 1)
      size = part;
    else if (part == "fp16" || part == "f16") quant = "fp16";
    else if (part.rfind("q", 0) == 0 && part.find('_') != std::string::npos) quant = part;
  }
  std::string dashed;  // "gemma3" → "gemma-3": the presets' spelling
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (i > 0 && name[i] >= '0' && name[i] <= '9' && name[i - 1] >= 'a' && name[i - 1] <= 'z') dashed += '-';
    dashed += name[i];
  }
  std::optional<std::string> preset;
  for (const std::string& base : {name, dashed})
    for (const std::string& c : {size.empty() ? base : base + "-" + size, base})
      if (!preset && find_preset_or_null(c)) preset = c;
  if (preset) im.set("--model", *preset, src);
  else im.ignore(src, "not a gpuplan preset (NAME-SIZE): pass --model before --");
  const bool known = std::any_of(weight_format_names.begin(), weight_format_names.end(),
                                 [&](const auto& s) { return s.name == quant; });
  if (!known) {
    im.ignore(src, "a quantization gpuplan has no weight format for: pass --weights before --");
    return;
  }
  im.set("--weights", quant, src + (tag.find('q') == std::string::npos && quant == "q4_k_m" ? " (the library's default Q4_K_M)" : ""));
}

inline void ollama_env(Import& im, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string k = assignment.substr(0, eq), v = assignment.substr(eq + 1);
  if (k == "OLLAMA_NUM_PARALLEL") im.set("--parallel", number_text(whole(v, k)), assignment);
  else if (k == "OLLAMA_CONTEXT_LENGTH") im.set("--context", number_text(whole(v, k)), assignment);
  else if (k == "OLLAMA_FLASH_ATTENTION") {
    const auto b = boolean(v);
    if (!b) throw InputError(assignment + ": expected 1, 0, true or false");
    im.set("--flash-attn", *b ? "on" : "off", assignment);
  } else if (k == "OLLAMA_KV_CACHE_TYPE") {
    const auto t = ggml_cache_type(lower(v));
    if (!t) throw InputError(assignment + ": expected f16, q8_0 or q4_0");
    im.set("--kv-dtype", *t, assignment);
  } else if (k == "OLLAMA_GPU_OVERHEAD") {
    im.set("--gpu-overhead", number_text(whole(v, k)), assignment);  // bytes (envconfig.GpuOverhead)
  } else if (k == "OLLAMA_SCHED_SPREAD" || k == "OLLAMA_NEW_ENGINE") {
    im.ignore(assignment, "a setting gpuplan's Ollama profile does not model");
  } else {
    im.ignore(assignment, k.rfind("OLLAMA_", 0) == 0 ? no_memory_effect : "an environment variable Ollama does not read",
              false);
  }
}

}  // namespace detail

// words: after `ollama`; env: NAME=value assignments (the server's environment).
inline Import import_ollama(const std::vector<std::string>& words, const std::vector<std::string>& env) {
  Import im;
  im.tool = "ollama";
  im.followed = "Ollama 0.12 (envconfig/config.go, docs/modelfile.md)";
  im.set("--profile", "ollama", "ollama " + (words.empty() ? std::string() : words[0]));
  for (const auto& e : env) detail::ollama_env(im, e);
  Argv args(std::vector<std::string>(words.begin() + (words.empty() ? 0 : 1), words.end()));
  bool model = false;
  while (!args.done()) {
    const auto t = args.next();
    if (!t.flag() && !model && !words.empty() && words[0] == "run") {
      model = true;
      detail::ollama_model(im, t.text, t.text + " (the model argument)");
    } else if (!t.flag()) {
      im.ignore(t.text, "the prompt: does not change memory", false);
    } else {
      std::string s = t.text;
      if (t.name == "--keepalive" || t.name == "--format") s = args.skip_unknown(t);
      im.ignore(s, no_memory_effect, false);
    }
  }
  return im;
}

// A Modelfile: FROM and PARAMETER lines; TEMPLATE, SYSTEM and the rest read and ignored.
inline Import import_modelfile(std::string_view text, const std::string& path) {
  Import im;
  im.tool = "ollama";
  im.followed = "Ollama 0.12 (docs/modelfile.md)";
  im.set("--profile", "ollama", path);
  bool in_quotes = false, from = false;
  std::size_t n = 0;
  for (std::size_t p = 0; p < text.size();) {
    const std::size_t e = std::min(text.find('\n', p), text.size());
    std::string line(text.substr(p, e - p));
    p = e + 1;
    ++n;
    const bool toggles = (line.find("\"\"\"") != std::string::npos) &&
                         (line.find("\"\"\"") == line.rfind("\"\"\""));  // one triple quote opens or closes a block
    if (in_quotes) {
      if (toggles) in_quotes = false;
      continue;
    }
    if (toggles) in_quotes = true;
    const std::size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    std::string rest = line.substr(a);
    while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ' || rest.back() == '\t')) rest.pop_back();
    const std::size_t sp = rest.find_first_of(" \t");
    const std::string word = lower(rest.substr(0, sp));
    const std::string arg = sp == std::string::npos ? "" : rest.substr(rest.find_first_not_of(" \t", sp));
    const std::string src = path + ":" + std::to_string(n) + ": " + rest;
    if (word == "from") {
      if (arg.empty()) throw DataError(src + ": FROM needs a model");
      from = true;
      detail::ollama_model(im, arg, src);
    } else if (word == "parameter") {
      const std::size_t s2 = arg.find_first_of(" \t");
      const std::string key = arg.substr(0, s2);
      const std::string v = s2 == std::string::npos ? "" : arg.substr(arg.find_first_not_of(" \t", s2));
      try {
        if (key == "num_ctx") im.set("--context", number_text(whole(v, key)), src);
        else if (key == "num_gpu") im.set("--gpu-layers", number_text(whole(v, key)), src);
        else if (key == "num_batch") im.set("--ubatch", number_text(whole(v, key)), src);
        else if (key == "num_predict") {
          if (v == "-1" || v == "-2") im.ignore(src, "until the context is full: gpuplan's --new-tokens default", false);
          else im.set("--new-tokens", number_text(whole(v, key)), src);
        } else im.ignore(src, no_memory_effect, false);
      } catch (const InputError& e) {
        throw DataError(e.what());
      }
    } else if (word == "adapter") {
      im.ignore(src, "LoRA adapters' memory in serving is not modelled");
    } else {
      im.ignore(src, no_memory_effect, false);
    }
  }
  if (!from) throw DataError(path + ": no FROM line: not an Ollama Modelfile");
  return im;
}

}  // namespace gpuplan::launch
