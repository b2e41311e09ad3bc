#include "hub.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string_view>
#include <type_traits>

#include <dlfcn.h>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <gpuplan/error.h>
#include <gpuplan/safetensors.h>

namespace gpuplan::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t first_read_bytes = 256u << 10;  // one request holds most headers (a 70B shard's is ~70 KB)
constexpr long connect_timeout_s = 15;
constexpr long stall_timeout_s = 30;                 // abort when under 1 KB/s for this long

struct Answer {
  long status = 0;
  std::string body;
  std::uint64_t total = 0;  // the whole file's size, from Content-Range (206 answers)
};

struct Transfer {
  std::string body;
  std::size_t limit = 0;
  bool overflow = false;
  std::uint64_t total = 0;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t bytes = size * n;
  if (t->body.size() + bytes > t->limit) {
    t->overflow = true;
    return 0;  // stops the transfer: an answer larger than anything this reader expects
  }
  t->body.append(data, bytes);
  return bytes;
}

// "Content-Range: bytes 0-7/16060522496" → the total; every response of a redirect chain resets it.
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view key = "content-range:";
  if (line.size() > key.size()) {
    std::string head(line.substr(0, key.size()));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == key) {
      const auto slash = line.rfind('/');
      if (slash != std::string_view::npos) t->total = std::strtoull(std::string(line.substr(slash + 1)).c_str(), nullptr, 10);
    }
  }
  if (line.rfind("HTTP/", 0) == 0) t->total = 0;
  return size * n;
}

// libcurl is opened when the Hub is first asked, not linked: linked, it and the ~30 libraries it depends on (TLS,
// Kerberos, LDAP, ...) cost every gpuplan process some 15 ms of dynamic loading that only a Hub fetch needs. The
// soname libcurl.so.4 is the ABI every libcurl 7.16+ and 8.x keeps; the declarations come from its own header.
struct Curl {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

const Curl& curl_library() {
  static const Curl api = [] {
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw DataError("the Hub needs libcurl (libcurl.so.4, Debian package libcurl4): cannot load it");
    auto symbol = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) throw DataError(std::string("libcurl.so.4 has no ") + name);
    };
    Curl c{};
    symbol(c.global_init, "curl_global_init");
    symbol(c.easy_init, "curl_easy_init");
    symbol(c.easy_cleanup, "curl_easy_cleanup");
    symbol(c.easy_setopt, "curl_easy_setopt");
    symbol(c.easy_perform, "curl_easy_perform");
    symbol(c.easy_getinfo, "curl_easy_getinfo");
    symbol(c.easy_strerror, "curl_easy_strerror");
    symbol(c.slist_append, "curl_slist_append");
    symbol(c.slist_free_all, "curl_slist_free_all");
    if (c.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw DataError("cannot initialise libcurl");
    return c;
  }();
  return api;
}

std::string percent_encode_slashes(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '/' ? std::string("%2F") : std::string(1, c);
  return out;
}

class Hub {
 public:
  Hub(const HubSettings& s, std::string repo, std::string revision)
      : s_(s), repo_(std::move(repo)), revision_(std::move(revision)), curl_(curl_library()) {}

  // GET a repository file, whole (limit bytes at most) or the byte range [from, to].
  Answer get(const std::string& file, std::size_t limit, std::uint64_t from = 0, std::uint64_t to = 0) const {
    const std::string url = s_.endpoint + "/" + repo_ + "/resolve/" + percent_encode_slashes(revision_) + "/" + file;
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_.easy_init(), curl_.easy_cleanup);
    if (!curl) throw DataError("cannot initialise libcurl");
    Transfer t;
    t.limit = limit;
    curl_slist* headers = nullptr;
    const std::string auth = "Authorization: Bearer " + s_.token;
    if (!s_.token.empty()) headers = curl_.slist_append(headers, auth.c_str());
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_.slist_free_all);
    const std::string range = std::to_string(from) + "-" + std::to_string(to);
    CURL* c = curl.get();
    curl_.easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);  // resolve/ answers with a redirect to the CDN
    curl_.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);       // (libcurl drops Authorization when the host changes)
    curl_.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, connect_timeout_s);
    curl_.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall_timeout_s);
    curl_.easy_setopt(c, CURLOPT_USERAGENT, "gpuplan");
    curl_.easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
    curl_.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_.easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_.easy_setopt(c, CURLOPT_HEADERDATA, &t);
    if (to > 0) curl_.easy_setopt(c, CURLOPT_RANGE, range.c_str());
    const CURLcode rc = curl_.easy_perform(c);
    Answer a;
    curl_.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    if (a.status >= 400) return a;  // its body (an error page) is not read
    if (t.overflow) throw DataError(where(file) + ": the answer is over " + std::to_string(limit) + " bytes");
    if (rc != CURLE_OK)
      throw DataError(where(file) + ": cannot reach " + s_.endpoint + " (" + curl_.easy_strerror(rc) + ")");
    a.body = std::move(t.body);
    a.total = t.total;
    return a;
  }

  // 2xx, or one line that says what the Hub refused.
  void check(const Answer& a, const std::string& file) const {
    if (a.status >= 200 && a.status < 300) return;
    if (a.status == 401 || a.status == 403)
      throw DataError(repo_ + ": gated or private on the Hub (HTTP " + std::to_string(a.status) +
                      "): set HF_TOKEN or --hf-token, and accept the model's terms on its page");
    if (a.status == 404) throw DataError(repo_ + "@" + revision_ + ": no such model or revision on the Hub (" + file + ")");
    throw DataError(where(file) + ": HTTP " + std::to_string(a.status));
  }

  // A safetensors file's 8-byte length and JSON header, and the file's size.
  std::pair<std::string, std::uint64_t> safetensors_head(const std::string& file) const {
    Answer a = get(file, first_read_bytes, 0, first_read_bytes - 1);
    check(a, file);
    if (a.status != 206 || a.total == 0) throw DataError(where(file) + ": the server ignored the Range request");
    const std::uint64_t n = safetensors::header_length(std::string_view(a.body).substr(0, 8), where(file));  // refuses > 100 MB before fetching
    if (8 + n > a.total) throw DataError(where(file) + ": safetensors header is truncated");
    if (a.body.size() < 8 + n) {
      Answer rest = get(file, static_cast<std::size_t>(8 + n - a.body.size()), a.body.size(), 8 + n - 1);
      check(rest, file);
      a.body += rest.body;
    }
    if (a.body.size() < 8 + n) throw DataError(where(file) + ": safetensors header is truncated");
    a.body.resize(static_cast<std::size_t>(8 + n));
    return {a.body, a.total};
  }

  std::string where(const std::string& file) const { return repo_ + "@" + revision_ + "/" + file; }

 private:
  const HubSettings& s_;
  std::string repo_, revision_;
  const Curl& curl_;
};

void write_file(const fs::path& p, const std::string& bytes, std::uint64_t size) {
  {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw DataError(p.string() + ": cannot write the cache");
  }
  std::error_code ec;
  if (size > bytes.size()) fs::resize_file(p, size, ec);  // a hole of the real size: no disk, no download
  if (ec) throw DataError(p.string() + ": cannot write the cache (" + ec.message() + ")");
}

// The shard files an index names (plain names in the folder only).
std::set<std::string> shards_of(const std::string& index_text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(index_text);
  } catch (const nlohmann::json::exception&) {
    throw DataError(where + ": not valid JSON");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw DataError(where + ": missing weight_map");
  std::set<std::string> files;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw DataError(where + ": weight_map values must be file names");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos || f[0] == '.')
      throw DataError(where + ": weight_map names a file outside the folder");
    files.insert(f);
  }
  return files;
}

}  // namespace

HubSettings HubSettings::from_environment(const std::string& token_flag) {
  HubSettings s;
  const char* endpoint = std::getenv("HF_ENDPOINT");
  s.endpoint = endpoint && *endpoint ? endpoint : "https://huggingface.co";
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  const char* token = std::getenv("HF_TOKEN");
  s.token = !token_flag.empty() ? token_flag : token ? token : "";
  const char* offline = std::getenv("HF_HUB_OFFLINE");
  s.offline = offline && (std::string(offline) == "1" || std::string(offline) == "true");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".cache";
  s.cache = (base / "gpuplan" / "hub").string();
  return s;
}

std::string hub_snapshot(const std::string& repo, const std::string& revision, const HubSettings& hub) {
  // The endpoint is part of the key: a test server's answers never stand in for the Hub's.
  const std::string host = hub.endpoint.substr(hub.endpoint.find("://") == std::string::npos ? 0 : hub.endpoint.find("://") + 3);
  const fs::path dir = fs::path(hub.cache) / percent_encode_slashes(host) /
                       ("models--" + repo.substr(0, repo.find('/')) + "--" + repo.substr(repo.find('/') + 1)) /
                       percent_encode_slashes(revision);
  if (fs::exists(dir / ".complete")) return dir.string();
  if (hub.offline)
    throw DataError(repo + "@" + revision + ": not in the local Hugging Face cache or gpuplan's, and HF_HUB_OFFLINE=1");

  const Hub h(hub, repo, revision);
  const Answer config = h.get("config.json", max_json_bytes);
  h.check(config, "config.json");
  const Answer index = h.get("model.safetensors.index.json", max_json_bytes);
  if (index.status != 404) h.check(index, "model.safetensors.index.json");
  const std::set<std::string> shards =
      index.status == 404 ? std::set<std::string>{"model.safetensors"} : shards_of(index.body, h.where("model.safetensors.index.json"));

  // Fetch everything first, then publish the folder at once: an interrupted run leaves no half cache.
  const fs::path tmp = dir.string() + ".partial";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw DataError(tmp.string() + ": cannot create the cache (" + ec.message() + ")");
  write_file(tmp / "config.json", config.body, 0);
  if (index.status != 404) write_file(tmp / "model.safetensors.index.json", index.body, 0);
  for (const auto& shard : shards) {
    if (index.status == 404) {  // a single-file model, or none: config only
      const Answer probe = h.get(shard, 8, 0, 7);
      if (probe.status == 404) break;
      h.check(probe, shard);
    }
    const auto [head, size] = h.safetensors_head(shard);
    write_file(tmp / shard, head, size);
  }
  write_file(tmp / ".complete", "", 0);
  fs::remove_all(dir, ec);
  fs::create_directories(dir.parent_path(), ec);
  fs::rename(tmp, dir, ec);
  if (ec) throw DataError(dir.string() + ": cannot write the cache (" + ec.message() + ")");
  return dir.string();
}

}  // namespace gpuplan::cli
