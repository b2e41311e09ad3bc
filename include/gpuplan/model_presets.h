// Built-in model presets (data/models/*.json, embedded at build time): id and aliases → ModelSpec.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpuplan/builtin_data.h>
#include "error.h"
#include "model_hf.h"

namespace gpuplan {

struct ModelPreset {
  std::string id;
  std::vector<std::string> aliases;
  std::string name;
  std::string source;
  ModelSpec spec;
};

namespace detail {
// One embedded file's presets, or with `only` just the preset whose id or alias it is: building a spec from its
// config is most of the cost (all presets: ~9 M instructions, a third of a small estimate).
inline void parse_preset_file(const EmbeddedFile& f, std::vector<ModelPreset>& out, const std::string* only = nullptr) {
  const std::string where(f.path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f.bytes.begin(), f.bytes.end());
  } catch (const nlohmann::json::exception& e) {  // syntax errors, and numbers beyond double range
    throw DataError(where + ": not valid JSON (" + json_problem(e) + ")");
  }
  if (!j.contains("models") || !j["models"].is_array()) throw DataError(where + ": /models: expected an array");
  for (std::size_t i = 0; i < j["models"].size(); ++i) {
    const auto& m = j["models"][i];
    const std::string ptr = where + ": /models/" + std::to_string(i);
    for (const char* k : {"id", "name", "source"})
      if (!m.contains(k) || !m[k].is_string()) throw DataError(ptr + "/" + k + ": expected a string");
    if (!m.contains("config")) throw DataError(ptr + "/config: missing");
    ModelPreset p;
    p.id = m["id"].get<std::string>();
    p.name = m["name"].get<std::string>();
    p.source = m["source"].get<std::string>();
    if (m.contains("aliases"))
      for (const auto& a : m["aliases"]) p.aliases.push_back(a.get<std::string>());
    if (only && p.id != *only && std::find(p.aliases.begin(), p.aliases.end(), *only) == p.aliases.end()) continue;
    p.spec = model_from_hf_config(m["config"], ptr + "/config");
    p.spec.name = p.id;
    out.push_back(std::move(p));
  }
}

inline bool is_preset_file(const EmbeddedFile& f) { return f.path.rfind("data/models/", 0) == 0; }

inline std::vector<ModelPreset> parse_presets() {
  std::vector<ModelPreset> out;
  for (const auto& f : builtin_files)
    if (is_preset_file(f)) parse_preset_file(f, out);
  return out;
}
}  // namespace detail

// Parsed once per process.
inline const std::vector<ModelPreset>& builtin_presets() {
  static const std::vector<ModelPreset> presets = detail::parse_presets();
  return presets;
}

// One preset by id or alias, building only its spec (the files that cannot name it, their bytes lacking the
// quoted name, are not parsed). Found presets are kept for the process, so the reference stays valid.
inline const ModelPreset* find_preset_or_null(const std::string& name) {
  static std::vector<std::unique_ptr<ModelPreset>> found;
  static std::mutex mutex;  // the library may be called from several threads
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& p : found)
    if (p->id == name || std::find(p->aliases.begin(), p->aliases.end(), name) != p->aliases.end()) return p.get();
  const std::string quoted = "\"" + name + "\"";
  for (const auto& f : detail::builtin_files) {
    if (!detail::is_preset_file(f) ||
        std::search(f.bytes.begin(), f.bytes.end(), quoted.begin(), quoted.end()) == f.bytes.end())
      continue;
    std::vector<ModelPreset> one;
    detail::parse_preset_file(f, one, &name);
    if (!one.empty()) return found.emplace_back(std::make_unique<ModelPreset>(std::move(one.front()))).get();
  }
  return nullptr;
}

inline const ModelPreset& find_preset(const std::string& name) {
  if (const ModelPreset* p = find_preset_or_null(name)) return *p;
  throw InputError("unknown model \"" + name + "\" (see `gpuplan models` for the built-in presets)");
}

// --params N names a model by its size. At the sizes where one model is the standard, its shape is used, so the
// heads and the count are the ones people know (7B and 13B: Llama 2; 8B, 70B and 405B: Llama 3.1, with 8 KV
// heads); any other count gets derive_model's shape. `note` says which, for the output.
struct SizedModel {
  ModelSpec spec;
  std::string note;
};

inline SizedModel model_of_size(Params requested) {
  static constexpr struct {
    std::int64_t nominal;
    const char* preset;
  } standard[] = {{7'000'000'000, "llama-2-7b"},
                  {13'000'000'000, "llama-2-13b"},
                  {8'000'000'000, "llama-3.1-8b"},
                  {70'000'000'000, "llama-3.1-70b"},
                  {405'000'000'000, "llama-3.1-405b"}};
  const auto n = requested.in(unit::params);
  for (const auto& s : standard)
    if (std::abs(double(n - s.nominal)) <= 0.005 * double(s.nominal)) {  // "7B", "7e9", "7000M"
      const ModelPreset& p = find_preset(s.preset);
      return {p.spec, "--params: the shape of " + p.name + " (" + p.id + "), the standard model of this size"};
    }
  const ModelSpec d = derive_model(requested);
  return {d, "--params: no standard model of this size; a Llama-2-style decoder sized to the count (hidden/layers "
             "about 128, SwiGLU 8/3 h, heads in multiples of 8, vocab 32000; see README)"};
}

}  // namespace gpuplan
