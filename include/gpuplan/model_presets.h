// Built-in model presets (data/models/*.json): id and aliases → ModelSpec, parsed at build time (builtin.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpuplan/builtin_data.h>
#include "error.h"
#include "model_hf.h"
#include "quant.h"

namespace gpuplan {

struct ModelPreset {
  std::string id;
  std::vector<std::string> aliases;
  std::string name;
  std::string source;
  ModelSpec spec;
  // The released checkpoint's weight format where it is not the config's 16-bit dtype ("mxfp4": gpt-oss; "fp8":
  // DeepSeek-V3/R1, Kimi K2): what serving estimates load unless --weights names another. "" = 16-bit.
  std::string shipped_weights;
  // count_params(spec), counted when the preset is parsed: for the built-in presets at build time, so listing them
  // counts nothing (it was a quarter of a `models` run).
  Params params{0}, active_params{0};
  bool operator==(const ModelPreset&) const = default;
};

namespace detail {
// One embedded file's presets.
inline void parse_preset_file(const EmbeddedFile& f, std::vector<ModelPreset>& out) {
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
    if (m.contains("weights")) {
      if (!m["weights"].is_string()) throw DataError(ptr + "/weights: expected a weight format");
      p.shipped_weights = m["weights"].get<std::string>();
      try {
        parse_enum<WeightFormat>(weight_format_names, p.shipped_weights, "weight format");
      } catch (const InputError& e) {
        throw DataError(ptr + "/weights: " + e.what());
      }
    }
    p.spec = model_from_hf_config(m["config"], ptr + "/config");
    p.spec.name = p.id;
    const ParamCounts counts = count_params(p.spec);
    p.params = counts.total;
    p.active_params = counts.active;
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

}  // namespace gpuplan
