// The built-in catalog and model presets, as the build parsed them from data/ (tables.h; the generated header
// builtin_tables.h holds the bytes): reading them costs a process no JSON. User catalog files are parsed here.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gpuplan/builtin_tables.h>
#include "catalog.h"
#include "error.h"
#include "model.h"
#include "model_presets.h"
#include "names.h"
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

// One preset by id or alias, ignoring case and punctuation ("Llama-3.1-8B", "llama3.1:8b").
inline const ModelPreset* find_preset_or_null(const std::string& name) {
  const std::string k = name_key(name);
  auto same = [&](const std::string& x) { return name_key(x) == k; };
  for (const auto& p : builtin_presets())
    if (same(p.id) || std::any_of(p.aliases.begin(), p.aliases.end(), same)) return &p;
  return nullptr;
}

namespace detail {
// The Hub repository a preset's config came from: "https://huggingface.co/ORG/NAME/blob/..." → "ORG/NAME".
inline std::string preset_repo(const ModelPreset& p) {
  constexpr std::string_view hub = "https://huggingface.co/";
  if (p.source.rfind(hub, 0) != 0) return "";
  const std::string rest = p.source.substr(hub.size());
  const std::size_t org = rest.find('/');
  return org == std::string::npos ? "" : rest.substr(0, rest.find('/', org + 1));
}

// A model's name without the release's variant words at its end, which keep the base model's architecture
// ("Llama-3.1-8B-Instruct", "gemma-3-4b-it", "Llama-2-7b-hf") and without its Hub organisation: a name key.
inline std::string base_model_key(std::string_view name) {
  if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  static constexpr std::string_view variants[] = {"instruct", "it", "hf", "chat", "base", "pt"};
  for (bool stripped = true; stripped;) {
    stripped = false;
    const std::size_t cut = name.find_last_of("-_ :");
    if (cut == std::string_view::npos) break;
    std::string word = name_key(name.substr(cut + 1));
    for (auto v : variants)
      if (word == v) name = name.substr(0, cut), stripped = true;
  }
  return name_key(name);
}
}  // namespace detail

// The preset whose architecture a named release shares: its id, an alias or the Hub repository its config came
// from, once the organisation and the variant words are set aside ("meta-llama/Llama-3.1-8B-Instruct" →
// llama-3.1-8b). Used where the release's own config cannot be read, and said so.
inline const ModelPreset* find_base_preset_or_null(const std::string& name) {
  const std::string k = detail::base_model_key(name);
  if (k.empty()) return nullptr;
  auto same = [&](const std::string& x) { return detail::base_model_key(x) == k; };
  for (const auto& p : builtin_presets())
    if (same(p.id) || std::any_of(p.aliases.begin(), p.aliases.end(), same) || same(detail::preset_repo(p)))
      return &p;
  return nullptr;
}

// "did you mean …" over the presets' ids and aliases, or "".
inline std::string preset_suggestion(const std::string& name) {
  std::vector<NameCandidate> known;
  for (const auto& p : builtin_presets()) {
    known.push_back({p.id, p.aliases});
    known.back().spellings.push_back(p.id);
  }
  return did_you_mean(name, known);
}

inline const ModelPreset& find_preset(const std::string& name) {
  if (const ModelPreset* p = find_preset_or_null(name)) return *p;
  const std::string hint = preset_suggestion(name);
  throw InputError("unknown model \"" + name + "\"" + (hint.empty() ? "" : ": " + hint) +
                   " (see `gpuplan models` for the built-in presets)");
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
