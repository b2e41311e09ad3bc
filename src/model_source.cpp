#include "model_source.h"
#include "hub.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include <gpuplan/model_gguf.h>
#include <gpuplan/model_hf.h>
#include <gpuplan/builtin.h>
#include <gpuplan/parse.h>

#include "app.h"
#include "format_units.h"

namespace gpuplan::cli {

namespace fs = std::filesystem;

namespace {

// Small matchers instead of std::regex (which costs ~0.3 MB of the web page's code and a parse per pattern).
bool all_of_chars(std::string_view s, bool (*ok)(char)) {
  return std::all_of(s.begin(), s.end(), ok);
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_name_char(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; }
bool is_revision_char(char c) { return is_name_char(c) || c == '/'; }
// A Hub name part: [A-Za-z0-9][A-Za-z0-9._-]*
bool hub_name(std::string_view s) { return !s.empty() && is_alnum(s[0]) && all_of_chars(s, is_name_char); }
// A full commit hash: 40 lowercase hex digits.
bool commit_hash(std::string_view s) { return s.size() == 40 && all_of_chars(s, is_hex); }


constexpr std::uintmax_t max_gguf_header_bytes = 1u << 30;  // metadata + tensor infos; 256K-token vocabularies ~ 10 MB

std::uintmax_t size_of(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  if (ec) throw DataError(p.string() + ": cannot open (" + ec.message() + ")");
  return n;
}

std::string read_prefix(const fs::path& p, std::uintmax_t n) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw DataError(p.string() + ": cannot open");
  std::string s(static_cast<std::size_t>(n), '\0');
  f.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

nlohmann::json read_json(const fs::path& p) {
  const std::uintmax_t size = size_of(p);
  if (size > max_json_bytes) throw DataError(p.string() + ": over 64 MiB, not a config or index");
  // The file's own size, not the limit: a 64 MiB buffer is 16k zeroed pages, 0.2 s of page faults per config.
  const std::string text = read_prefix(p, size);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(p.string() + ": not valid JSON (" + json_problem(e) + ")");
  }
}

safetensors::Header read_safetensors(const fs::path& p) {
  const std::uintmax_t size = size_of(p);
  const std::string head = read_prefix(p, 8);
  const std::uint64_t n = safetensors::header_length(head, p.string());
  if (8 + n > size) throw DataError(p.string() + ": safetensors header is truncated");
  return safetensors::parse_header(read_prefix(p, 8 + n).substr(8), p.string(), size);
}

// Reads more of the file until the header parses: most headers are a few MB (the vocabulary).
gguf_file::Header read_gguf_one(const fs::path& p) {
  const std::uintmax_t size = size_of(p);
  for (std::uintmax_t n = std::min<std::uintmax_t>(size, 4u << 20);; n = std::min(size, n * 4)) {
    try {
      return gguf_file::parse_header(read_prefix(p, n), p.string());
    } catch (const gguf_file::Truncated&) {
      if (n >= size) throw;
      if (n >= max_gguf_header_bytes) throw DataError(p.string() + ": GGUF header over 1 GiB");
    }
  }
}

// A split GGUF (llama.cpp gguf-split: name-00001-of-00003.gguf) is one model: the first part's metadata and every
// part's tensors.
gguf_file::Header read_gguf(const fs::path& p) {
  // name-NNNNN-of-MMMMM.gguf: the 20-character tail, five digits each.
  const std::string name = p.filename().string();
  const std::size_t n = name.size();
  if (n < 20 || name.compare(n - 5, 5, ".gguf") != 0 || name[n - 20] != '-' || name.compare(n - 14, 4, "-of-") != 0 ||
      !all_of_chars(std::string_view(name).substr(n - 19, 5), is_digit) ||
      !all_of_chars(std::string_view(name).substr(n - 10, 5), is_digit))
    return read_gguf_one(p);
  const std::string stem = name.substr(0, n - 20);
  const int parts = std::stoi(name.substr(n - 10, 5));
  if (parts < 1) throw DataError(p.string() + ": a split GGUF needs at least one part");
  std::vector<fs::path> files;
  for (int i = 1; i <= parts; ++i) {
    char part[32];
    std::snprintf(part, sizeof part, "-%05d-of-%05d.gguf", i, parts);
    files.push_back(p.parent_path() / (stem + part));
    if (!fs::exists(files.back()))
      throw DataError(files.back().string() + ": part " + std::to_string(i) + " of the split GGUF is missing");
  }
  gguf_file::Header merged;
  for (int i = 1; i <= parts; ++i) {
    gguf_file::Header h = read_gguf_one(files[std::size_t(i - 1)]);
    if (i == 1) merged = std::move(h);
    else merged.tensors.insert(merged.tensors.end(), h.tensors.begin(), h.tensors.end());
  }
  return merged;
}

// quantization_config: the method, and the bits inside packed integer tensors.
std::pair<std::string, int> quantization_of(const nlohmann::json& config) {
  const auto it = config.find("quantization_config");
  if (it == config.end() || !it->is_object()) return {"", 4};
  const auto& q = *it;
  const std::string method = q.value("quant_method", std::string());
  int bits = 4;
  if (q.contains("bits") && q["bits"].is_number_integer()) bits = q["bits"].get<int>();
  if (q.contains("config_groups") && q["config_groups"].is_object())  // compressed-tensors
    for (const auto& [name, g] : q["config_groups"].items())
      if (g.is_object() && g.contains("weights") && g["weights"].is_object() &&
          g["weights"].contains("num_bits") && g["weights"]["num_bits"].is_number_integer())
        bits = g["weights"]["num_bits"].get<int>();
  return {method, bits};
}

// The safetensors files of a Hugging Face folder: those the index names, else every *.safetensors.
std::vector<fs::path> safetensors_files(const fs::path& dir) {
  std::set<std::string> names;
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const nlohmann::json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw DataError(index.string() + ": missing weight_map");
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw DataError(index.string() + ": weight_map values must be file names");
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        throw DataError(index.string() + ": weight_map names a file outside the folder");
      names.insert(f);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") names.insert(e.path().filename().string());
  }
  std::vector<fs::path> files;
  for (const auto& n : names) files.push_back(dir / n);
  return files;
}

void attach(ModelSource& m, Checkpoint c) {
  m.stored = stored_weights(c, m.spec.layers);
  const double modelled = double(count_params(m.spec).total.in(unit::params));
  const double stored = double(m.stored->language_params.in(unit::params));
  if (modelled > 0 && std::abs(stored - modelled) > 0.005 * modelled)
    m.notes.push_back(short_count(stored) + " parameters stored for the language model, " + short_count(modelled) +
                      " in the architecture model: weights are the stored bytes, activations the architecture's");
  for (const auto& [part, b] : m.stored->other_parts)
    m.notes.push_back("also stored, not in the estimate: " + part + " (" + gib(b.in(unit::bytes)) + ")");
  m.checkpoint = std::move(c);
}

ModelSource from_folder(const fs::path& dir, ModelSource m) {
  const fs::path config = dir / "config.json";
  if (!fs::exists(config)) {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf") throw InputError(dir.string() + ": holds GGUF files: name one of them");
    throw DataError(dir.string() + ": no config.json in the folder");
  }
  const nlohmann::json j = read_json(config);
  m.spec = model_from_hf_config(j, config.string());
  if (!j.contains("_name_or_path")) m.spec.name = m.kind == "folder" ? dir.filename().string() : m.ref;
  m.path = dir.string();
  const auto files = safetensors_files(dir);
  if (files.empty()) {
    m.notes.push_back("no safetensors in the folder: weights from the architecture model");
    return m;
  }
  std::vector<safetensors::Header> headers;
  for (const auto& f : files) {
    if (!fs::exists(f)) throw DataError(f.string() + ": named by the index but missing");
    headers.push_back(read_safetensors(f));
  }
  const auto [method, bits] = quantization_of(j);
  attach(m, checkpoint_from(headers, method, bits));
  return m;
}

ModelSource from_gguf(const fs::path& p, ModelSource m) {
  const gguf_file::Header h = read_gguf(p);
  m.spec = model_from_gguf(h, p.string());
  m.path = p.string();
  attach(m, checkpoint_from(h));
  return m;
}

// org/name[@revision] → the snapshot folder in the local cache, if it is there.
std::optional<fs::path> cached_snapshot(const std::string& repo, const std::string& revision, std::string& commit) {
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  const fs::path root = fs::path(hf_cache_root()) / folder;
  if (!fs::is_directory(root)) return std::nullopt;
  commit = revision;
  if (!commit_hash(revision)) {
    const fs::path ref = root / "refs" / revision;
    if (!fs::exists(ref)) return std::nullopt;
    commit = read_prefix(ref, 64);
    commit.erase(std::remove_if(commit.begin(), commit.end(), ::isspace), commit.end());
    if (!commit_hash(commit)) throw DataError(ref.string() + ": not a commit hash");
  }
  const fs::path snap = root / "snapshots" / commit;
  if (!fs::is_directory(snap)) return std::nullopt;
  return snap;
}

// A preset's model; `note`, when given, says why a name that is not the preset's resolved to it.
ModelSource as_preset(ModelSource m, const ModelPreset& p, const std::string& note = "") {
  m.kind = "preset";
  m.spec = p.spec;
  m.revision.clear();
  if (!note.empty()) m.notes.push_back(note + " (" + p.name + ")");
  return m;
}

// A model read from a file whose architecture is a built-in preset's: the report names the presets, so a pasted
// config.json (the web page) or a Hub id says which known model it is (a distilled model can share its base's).
void note_preset_match(ModelSource& m) {
  std::string same;
  for (const auto& p : builtin_presets()) {
    ModelSpec s = m.spec;
    s.name = p.spec.name;
    if (s == p.spec) same += (same.empty() ? "" : ", ") + p.id;
  }
  if (!same.empty()) m.notes.push_back("the architecture of the built-in preset " + same);
}

}  // namespace

std::string hf_cache_root() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return (fs::path(h) / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "huggingface" / "hub").string();
}

namespace {
ModelSource resolve(const ModelOptions& o) {
  ModelSource m;
  if (!o.config.empty()) {
    m.kind = "config", m.ref = m.path = o.config;
    m.spec = model_from_hf_config(read_json(o.config), o.config);
    return m;
  }
  if (!o.params.empty()) {
    m.kind = "params", m.ref = o.params;
    SizedModel sized = model_of_size(parse_params(o.params));
    m.spec = std::move(sized.spec);
    m.notes.push_back(std::move(sized.note));
    return m;
  }
  if (o.model.empty()) throw InputError("name the model with --params, --model or --config");
  m.ref = o.model;
  const fs::path p(o.model);
  // A preset by its id or an alias as written, or spelled otherwise ("Llama-3.1-8B") where no such file exists.
  if (const ModelPreset* preset = find_preset_or_null(o.model);
      preset && (preset->id == o.model || !fs::exists(p) ||
                 std::find(preset->aliases.begin(), preset->aliases.end(), o.model) != preset->aliases.end()))
    return as_preset(std::move(m), *preset);
  if (fs::is_directory(p)) return m.kind = "folder", from_folder(p, m);
  if (fs::is_regular_file(p) && p.extension() == ".gguf") return m.kind = "gguf", from_gguf(p, m);
  if (fs::is_regular_file(p)) {
    m.kind = "config", m.path = o.model;
    m.spec = model_from_hf_config(read_json(p), o.model);
    return m;
  }
  // org/name[@revision]: two Hub name parts, a revision of name characters and slashes, no "..".
  const std::string_view id(o.model);
  const std::size_t at = id.find('@'), slash = id.find('/');
  const std::string_view repo_part = id.substr(0, at);
  const bool is_hub = slash != std::string_view::npos && slash < repo_part.size() &&
                      hub_name(repo_part.substr(0, slash)) && hub_name(repo_part.substr(slash + 1)) &&
                      (at == std::string_view::npos ||
                       (at + 1 < id.size() && all_of_chars(id.substr(at + 1), is_revision_char))) &&
                      id.find("..") == std::string_view::npos;
  const ModelPreset* base = find_base_preset_or_null(std::string(repo_part));
  if (!is_hub) {
    if (base) return as_preset(std::move(m), *base, o.model + ": estimated as the built-in preset " + base->id);
    const std::string hint = preset_suggestion(o.model);
    throw InputError("unknown model \"" + o.model + "\"" + (hint.empty() ? "" : ": " + hint) +
                     " (not a preset from `gpuplan models`, a file or folder, or a Hugging Face id org/name[@revision])");
  }
  const std::string repo(repo_part);
  m.revision = at == std::string_view::npos ? "main" : std::string(id.substr(at + 1));
  std::string commit;
  if (const auto snap = cached_snapshot(repo, m.revision, commit)) {
    m.kind = "hf-cache";
    if (commit != m.revision) m.revision += " (" + commit.substr(0, 12) + ")";
    return from_folder(*snap, m);
  }
  m.kind = "hub";
  const HubSettings hub = HubSettings::from_environment(o.hf_token);
  try {
    return from_folder(hub_snapshot(repo, m.revision, hub), m);
  } catch (const DataError& e) {
    // A release of a preset's model: offline, the preset answers (and the report says so) unless a revision was
    // named; online, the Hub's error stands (gated, no such revision, unreachable), naming the preset.
    if (!base) throw;
    if (hub.offline && at == std::string_view::npos)
      return as_preset(std::move(m), *base,
                       o.model + ": offline and not in the local cache: estimated as the built-in preset " + base->id +
                           ", the same architecture");
    throw DataError(std::string(e.what()) + " (the built-in preset " + base->id + " has its architecture: --model " +
                    base->id + ")");
  }
}
}  // namespace

ModelSource resolve_model_source(const ModelOptions& o) {
  ModelSource m = resolve(o);
  if (m.kind != "preset" && m.kind != "params") note_preset_match(m);
  return m;
}

std::optional<StoredWeightBytes> ModelSource::stored_language() const {
  if (!stored || !checkpoint) return std::nullopt;
  return stored_language_weights(*stored, *checkpoint);
}

nlohmann::json ModelSource::json() const {
  nlohmann::json j{{"kind", kind}, {"ref", ref}};
  if (!path.empty()) j["path"] = path;
  if (!revision.empty()) j["revision"] = revision;
  if (checkpoint && stored) {
    nlohmann::json parts = nlohmann::json::object(), dtypes = nlohmann::json::object();
    auto bytes = [](Bytes b) { return std::llround(b.in(unit::bytes)); };  // sums of whole tensors' bytes
    for (const auto& [k, b] : stored->other_parts) parts[k] = bytes(b);
    for (const auto& [k, b] : stored->by_dtype) dtypes[k] = bytes(b);
    j["checkpoint"] = {{"format", checkpoint->format},
                       {"quantization", checkpoint->quantization},
                       {"tensors", checkpoint->tensors.size()},
                       {"language_model_bytes", bytes(stored->language.total())},
                       {"language_model_params", stored->language_params.in(unit::params)},
                       {"other_bytes", bytes(stored->other)},
                       {"other_params", stored->other_params.in(unit::params)},
                       {"other_parts", parts},
                       {"bytes_by_dtype", dtypes}};
  }
  j["notes"] = notes;
  return j;
}

}  // namespace gpuplan::cli
