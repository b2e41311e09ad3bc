// Built-in model presets (data/models/*.json, embedded at build time): id and aliases → ModelSpec.
#pragma once
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
inline std::vector<ModelPreset> parse_presets() {
  std::vector<ModelPreset> out;
  for (const auto& f : builtin_files) {
    if (f.path.rfind("data/models/", 0) != 0) continue;
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
      p.spec = model_from_hf_config(m["config"], ptr + "/config");
      p.spec.name = p.id;
      out.push_back(std::move(p));
    }
  }
  return out;
}
}  // namespace detail

// Parsed once per process.
inline const std::vector<ModelPreset>& builtin_presets() {
  static const std::vector<ModelPreset> presets = detail::parse_presets();
  return presets;
}

inline const ModelPreset* find_preset_or_null(const std::string& name) {
  for (const auto& p : builtin_presets()) {
    if (p.id == name) return &p;
    for (const auto& a : p.aliases)
      if (a == name) return &p;
  }
  return nullptr;
}

inline const ModelPreset& find_preset(const std::string& name) {
  if (const ModelPreset* p = find_preset_or_null(name)) return *p;
  throw InputError("unknown model \"" + name + "\" (see `gpuplan models` for the built-in presets)");
}

}  // namespace gpuplan
