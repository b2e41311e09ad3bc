// The built-in catalog and model presets, as the build parsed them from data/ (tables.h; the generated header
// builtin_tables.h holds the bytes): reading them costs a process no JSON. User catalog files are parsed here.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gpuplan/builtin_tables.h>
#include "catalog.h"
#include "error.h"
#include "model.h"
#include "model_presets.h"
#include "tables.h"
#include "units.h"

namespace gpuplan {

// Read once per process.
inline const Catalog& builtin_catalog() {
  static const Catalog cat =
      tables::read<Catalog>(detail::builtin_catalog_table, sizeof(detail::builtin_catalog_table));
  return cat;
}

// The built-in catalog with user files merged on top, in order.
inline Catalog load_catalog(const std::vector<std::string>& user_files) {
  Catalog cat = builtin_catalog();
  for (const auto& path : user_files) {
    std::ifstream f(path);
    if (!f) throw DataError(path + ": cannot open the catalog file");
    std::stringstream ss;
    ss << f.rdbuf();
    detail::merge_catalog_json(cat, detail::parse_json_file(path, ss.str()), path);
  }
  detail::check_offering_devices(cat);
  return cat;
}

// Read once per process.
inline const std::vector<ModelPreset>& builtin_presets() {
  static const std::vector<ModelPreset> presets =
      tables::read<std::vector<ModelPreset>>(detail::builtin_presets_table, sizeof(detail::builtin_presets_table));
  return presets;
}

// One preset by id or alias.
inline const ModelPreset* find_preset_or_null(const std::string& name) {
  for (const auto& p : builtin_presets())
    if (p.id == name || std::find(p.aliases.begin(), p.aliases.end(), name) != p.aliases.end()) return &p;
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
