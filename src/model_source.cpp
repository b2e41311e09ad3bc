#include "model_source.h"
#include "hub.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>

#include <gpuplan/model_gguf.h>
#include <gpuplan/model_hf.h>
#include <gpuplan/builtin.h>
#include <gpuplan/parse.h>
#include <gpuplan/text.h>

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
// A Hub name part as the Hub allows it (huggingface_hub validate_repo_id): [A-Za-z0-9][A-Za-z0-9._-]*, at most 96
// characters, no "--" or ".." (the cache folder models--org--name could not tell t--a/b from t/a--b), not ending in
// '.' or '-'.
bool hub_name(std::string_view s) {
  return !s.empty() && s.size() <= 96 && is_alnum(s[0]) && all_of_chars(s, is_name_char) &&
         s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos && s.back() != '.' &&
         s.back() != '-';
}
// A revision: a branch, tag or commit of name characters in '/'-separated segments, none empty, "." or "..": it
// names a file under refs/ and a folder in the caches, and must stay inside them.
bool revision_name(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  for (std::size_t at = 0; at <= s.size();) {
    const std::size_t end = std::min(s.find('/', at), s.size());
    const std::string_view seg = s.substr(at, end - at);
    if (seg.empty() || seg == "." || seg == ".." || !all_of_chars(seg, is_name_char)) return false;
    at = end + 1;
  }
  return true;
}
// A full commit hash: 40 lowercase hex digits.
bool commit_hash(std::string_view s) { return s.size() == 40 && all_of_chars(s, is_hex); }


// What is at `p`: a file, a folder or nothing; anything the file system refuses (a symlink loop, a name too long,
// no permission) is one line that says where.
fs::file_type kind_of(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw DataError(printable(p.string(), 256) + ": cannot read (" + ec.message() + ")");
  return ec ? fs::file_type::not_found : st.type();
}

constexpr std::uintmax_t max_gguf_header_bytes = 1u << 30;  // metadata + tensor infos; 256K-token vocabularies ~ 10 MB

std::uintmax_t size_of(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  if (ec) throw DataError(printable(p.string(), 256) + ": cannot open (" + ec.message() + ")");
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
      gguf_file::Header h = gguf_file::parse_header(read_prefix(p, n), p.string());
      gguf_file::check_data(h, size, p.string());
      return h;
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
  // One model's parts (llama.cpp gguf-split writes split.no, split.count and split.tensors.count in each): each
  // says it is part i of `parts`, and together they hold the first part's tensor count, no name twice.
  gguf_file::Header merged;
  std::set<std::string> names;
  for (int i = 1; i <= parts; ++i) {
    const fs::path& f = files[std::size_t(i - 1)];
    gguf_file::Header h = read_gguf_one(f);
    const auto no = h.integer("split.no"), count = h.integer("split.count");
    if ((no && *no != i - 1) || (count && *count != parts))
      throw DataError(f.string() + ": its split.no/split.count say it is not part " + std::to_string(i) + " of " +
                      std::to_string(parts));
    for (const auto& t : h.tensors)
      if (!names.insert(t.name).second)
        throw DataError(f.string() + ": tensor " + t.name + " is in two parts of the split GGUF");
    if (i == 1) merged = std::move(h);
    else merged.tensors.insert(merged.tensors.end(), h.tensors.begin(), h.tensors.end());
  }
  if (const auto total = merged.integer("split.tensors.count"); total && *total != std::int64_t(merged.tensors.size()))
    throw DataError(p.string() + ": the parts hold " + std::to_string(merged.tensors.size()) +
                    " tensors, split.tensors.count says " + std::to_string(*total));
  return merged;
}

// quantization_config: the method, and the bits inside packed integer tensors.
std::pair<std::string, int> quantization_of(const nlohmann::json& config) {
  const auto it = config.find("quantization_config");
  if (it == config.end() || !it->is_object()) return {"", 4};
  const auto& q = *it;
  const auto mt = q.find("quant_method");
  const std::string method = mt != q.end() && mt->is_string() ? printable(mt->get<std::string>(), 64) : "";
  int bits = 4;
  if (q.contains("bits") && q["bits"].is_number_integer()) bits = q["bits"].get<int>();
  if (q.contains("config_groups") && q["config_groups"].is_object())  // compressed-tensors
    for (const auto& [name, g] : q["config_groups"].items())
      if (g.is_object() && g.contains("weights") && g["weights"].is_object() &&
          g["weights"].contains("num_bits") && g["weights"]["num_bits"].is_number_integer())
        bits = g["weights"]["num_bits"].get<int>();
  return {method, bits};
}

// One safetensors file of a folder, and the tensors the index maps to it (none listed: all of them, no index).
struct Shard {
  fs::path path;
  std::set<std::string> tensors;
};

// The safetensors files of a Hugging Face folder: those the index names, else every *.safetensors; each real file
// once (a shard that is a symlink to another is the same bytes), at most max_shards.
std::vector<Shard> safetensors_files(const fs::path& dir) {
  std::map<std::string, std::set<std::string>> named;  // file name → its tensors
  const fs::path index = dir / "model.safetensors.index.json";
  const bool indexed = kind_of(index) != fs::file_type::not_found;
  if (indexed) {
    const nlohmann::json j = read_json(index);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw DataError(index.string() + ": missing weight_map");
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw DataError(index.string() + ": weight_map values must be file names");
      const std::string f = file.get<std::string>();
      if (f.empty() || f[0] == '.' || f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        throw DataError(index.string() + ": weight_map names a file outside the folder");
      if (!f.ends_with(".safetensors")) throw DataError(index.string() + ": weight_map names a file that is not .safetensors");
      named[f].insert(tensor);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") named[e.path().filename().string()];
  }
  if (named.size() > max_shards)
    throw DataError(dir.string() + ": " + std::to_string(named.size()) + " safetensors files, over the " +
                    std::to_string(max_shards) + " supported");
  std::map<fs::path, Shard> by_file;
  for (const auto& [name, tensors] : named) {
    const fs::path f = dir / name;
    if (kind_of(f) != fs::file_type::regular)
      throw DataError(f.string() + (indexed ? ": named by the index but missing" : ": not a regular file"));
    Shard& s = by_file[fs::canonical(f)];
    s.path = f;
    s.tensors.insert(tensors.begin(), tensors.end());
  }
  std::vector<Shard> files;
  for (auto& [real, s] : by_file) files.push_back(std::move(s));
  return files;
}

// A shard's header, kept to the tensors the index maps to it; every mapped tensor must be there.
safetensors::Header read_shard(const Shard& s) {
  safetensors::Header h = read_safetensors(s.path);
  if (s.tensors.empty()) return h;
  std::erase_if(h.tensors, [&](const safetensors::Tensor& t) { return !s.tensors.count(t.name); });
  if (h.tensors.size() != s.tensors.size())
    throw DataError(s.path.string() + ": lacks tensors the index maps to it");
  return h;
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
  if (kind_of(config) == fs::file_type::not_found) {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf") throw InputError(dir.string() + ": holds GGUF files: name one of them");
    throw DataError(dir.string() + ": no config.json in the folder");
  }
  const nlohmann::json j = read_json(config);
  m.spec = model_from_hf_config(j, config.string());
  if (!j.contains("_name_or_path")) m.spec.name = printable(m.kind == "folder" ? dir.filename().string() : m.ref);
  m.path = dir.string();
  const auto files = safetensors_files(dir);
  if (files.empty()) {
    m.notes.push_back("no safetensors in the folder: weights from the architecture model");
    return m;
  }
  std::vector<safetensors::Header> headers;
  for (const auto& f : files) headers.push_back(read_shard(f));
  const auto [method, bits] = quantization_of(j);
  attach(m, checkpoint_from(headers, method, bits, dir.string()));
  return m;
}

ModelSource from_gguf(const fs::path& p, ModelSource m) {
  const gguf_file::Header h = read_gguf(p);
  m.spec = model_from_gguf(h, p.string());
  m.path = p.string();
  attach(m, checkpoint_from(h, p.string()));
  return m;
}

// `p`, resolved, lies inside `root`, resolved: a ref or snapshot reached through a symlink may not leave the cache.
bool inside(const fs::path& p, const fs::path& root) {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec), base = ec ? fs::path() : fs::canonical(root, ec);
  if (ec) throw DataError(printable(p.string(), 256) + ": cannot read (" + ec.message() + ")");
  const auto [a, b] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
  return a == base.end();
}

// org/name[@revision] → the snapshot folder in the local cache, if it is there. The revision is a checked name
// (revision_name): refs/<revision> is a file under refs/, and both it and the snapshot must resolve inside the cache.
std::optional<fs::path> cached_snapshot(const std::string& repo, const std::string& revision, std::string& commit) {
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  const fs::path root = fs::path(hf_cache_root()) / folder;
  if (kind_of(root) != fs::file_type::directory) return std::nullopt;
  commit = revision;
  if (!commit_hash(revision)) {
    const fs::path ref = root / "refs" / revision;
    const fs::file_type k = kind_of(ref);
    if (k == fs::file_type::not_found) return std::nullopt;
    if (k != fs::file_type::regular || !inside(ref, root / "refs"))
      throw DataError(ref.string() + ": not a file of the cache's refs/");
    commit = read_prefix(ref, 64);
    commit.erase(std::remove_if(commit.begin(), commit.end(), ::isspace), commit.end());
    if (!commit_hash(commit)) throw DataError(ref.string() + ": not a commit hash");
  }
  const fs::path snap = root / "snapshots" / commit;
  if (kind_of(snap) != fs::file_type::directory) return std::nullopt;
  if (!inside(snap, root / "snapshots")) throw DataError(snap.string() + ": leaves the cache's snapshots/");
  return snap;
}

// A preset's model; `note`, when given, says why a name that is not the preset's resolved to it.
ModelSource as_preset(ModelSource m, const ModelPreset& p, const std::string& note = "") {
  m.kind = "preset";
  m.spec = p.spec;
  m.shipped_weights = p.shipped_weights;
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
    const nlohmann::json j = read_json(o.config);
    m.spec = model_from_hf_config(j, o.config);
    m.module_formats = module_formats_from_config(j, o.config);
    m.vision_params = qwen_vision_params(j);
    m.vision = qwen_vision_shape(j);
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
  const fs::file_type k = kind_of(p);
  // A preset by its id or an alias as written, or spelled otherwise ("Llama-3.1-8B") where no such file exists.
  if (const ModelPreset* preset = find_preset_or_null(o.model);
      preset && (preset->id == o.model || k == fs::file_type::not_found ||
                 std::find(preset->aliases.begin(), preset->aliases.end(), o.model) != preset->aliases.end()))
    return as_preset(std::move(m), *preset);
  if (k == fs::file_type::directory) return m.kind = "folder", from_folder(p, m);
  if (k == fs::file_type::regular && p.extension() == ".gguf") return m.kind = "gguf", from_gguf(p, m);
  if (k == fs::file_type::regular) {
    m.kind = "config", m.path = o.model;
    const nlohmann::json j = read_json(p);
    m.spec = model_from_hf_config(j, o.model);
    m.module_formats = module_formats_from_config(j, o.model);
    m.vision_params = qwen_vision_params(j);
    m.vision = qwen_vision_shape(j);
    return m;
  }
  // org/name[@revision]: two Hub name parts and a revision of name segments.
  const std::string_view id(o.model);
  const std::size_t at = id.find('@'), slash = id.find('/');
  const std::string_view repo_part = id.substr(0, at);
  const bool is_hub = slash != std::string_view::npos && slash < repo_part.size() &&
                      hub_name(repo_part.substr(0, slash)) && hub_name(repo_part.substr(slash + 1)) &&
                      (at == std::string_view::npos || revision_name(id.substr(at + 1)));
  const ModelPreset* base = find_base_preset_or_null(std::string(repo_part));
  if (!is_hub) {
    // A preset's model named without a revision answers as the preset; a revision gpuplan refuses (".", "..", an
    // absolute path) stays an error.
    if (base && at == std::string_view::npos)
      return as_preset(std::move(m), *base, o.model + ": estimated as the built-in preset " + base->id);
    const std::string hint = preset_suggestion(o.model);
    throw InputError("unknown model \"" + printable(o.model, 256) + "\"" + (hint.empty() ? "" : ": " + hint) +
                     " (not a preset from `gpuplan models`, a file or folder, or a Hugging Face id org/name[@revision])");
  }
  const std::string repo(repo_part);
  m.revision = at == std::string_view::npos ? "main" : std::string(id.substr(at + 1));
  std::string commit;
  const bool branch = !commit_hash(m.revision);
  if (const auto snap = o.refresh && branch ? std::nullopt : cached_snapshot(repo, m.revision, commit)) {
    m.kind = "hf-cache";
    if (commit != m.revision) m.revision += " (" + commit.substr(0, 12) + ")";
    return from_folder(*snap, m);
  }
  m.kind = "hub";
  HubSettings hub = HubSettings::from_environment(o.hf_token);
  if (o.hub_timeout > 0) hub.timeout_s = o.hub_timeout;
  hub.refresh = o.refresh;
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
  // A config that names each module's format: its bytes by that arithmetic; the format of its largest group of
  // parameters (the routed experts, for the MoE checkpoints that do this) taken as the nearest.
  if (module_formats && !checkpoint) {
    const WeightBytes b = weight_bytes(spec, WeightFormat::bf16, 128, false, &*module_formats);
    WeightFormat nearest = WeightFormat::bf16;
    std::int64_t largest = 0;
    for (const auto& kind : param_inventory(spec).kinds)
      for (const auto& g : kind)
        if (g.is_matrix() && g.numel() > largest) largest = g.numel(), nearest = module_formats->format_of(g);
    return StoredWeightBytes{b, nearest, module_formats->label};
  }
  if (!stored || !checkpoint) return std::nullopt;
  return stored_language_weights(*stored, *checkpoint);
}

nlohmann::json ModelSource::json() const {
  nlohmann::json j{{"kind", kind}, {"ref", printable(ref)}};  // the user's text and paths: any bytes
  if (!path.empty()) j["path"] = printable(path);
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
