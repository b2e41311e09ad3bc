#include "hub.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

// Each GET runs the curl program (Debian package curl). gpuplan is linked statically (CMakeLists.txt says why), and
// a static program can neither link libcurl (its ~30 shared libraries) nor safely dlopen it (the copy of libc that
// would come with it cannot start curl's resolver threads).
constexpr const char* curl_program = "curl";
constexpr std::size_t max_token_bytes = 1024;  // Hub tokens are ~40 characters
constexpr std::string_view status_marker = "\ngpuplan-status ";  // begins the trailer --write-out prints after the body
constexpr std::size_t max_error_bytes = 64u << 10;  // of curl's stderr (one line is expected)

// A file descriptor that closes itself.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Pipe {
  Fd read, write;
  Pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw DataError(std::string("cannot start curl (pipe: ") + std::strerror(errno) + ")");
    read.fd = p[0];
    write.fd = p[1];
  }
};

struct CurlRun {
  int exit_status = 0;  // curl's exit code; -1 when a signal ended it
  std::string out, err;
  bool overflow = false;  // stdout passed its bound: curl was stopped
};

// Runs curl with `args`, `input` on its stdin, reading at most `out_limit` bytes of its stdout.
CurlRun run_curl(const std::vector<std::string>& args, const std::string& input, std::size_t out_limit) {
  Pipe in, out, err;
  // The input is written before curl starts: it fits in the pipe's buffer (the caller keeps it under PIPE_BUF
  // bytes), so writing never blocks and curl reads it whole.
  static_assert(max_token_bytes + 64 <= PIPE_BUF);  // the token and "Authorization: Bearer \n"
  if (!input.empty() && ::write(in.write.fd, input.data(), input.size()) != static_cast<ssize_t>(input.size()))
    throw DataError(std::string("cannot start curl (write: ") + std::strerror(errno) + ")");
  in.write.reset();

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.read.fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out.write.fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err.write.fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // nothing else of gpuplan's is curl's
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, curl_program, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (spawned == ENOENT) throw DataError("the Hub needs the curl program (Debian package curl): not found on PATH");
  if (spawned != 0) throw DataError(std::string("cannot start curl (") + std::strerror(spawned) + ")");
  in.read.reset();
  out.write.reset();
  err.write.reset();

  CurlRun r;
  char buf[1 << 16];
  while (out.read.fd >= 0 || err.read.fd >= 0) {
    pollfd fds[2] = {{out.read.fd, POLLIN, 0}, {err.read.fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ::kill(pid, SIGTERM);  // not read any more, curl could block on a full pipe: stop it before waiting
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Fd& fd = i == 0 ? out.read : err.read;
      const ssize_t n = ::read(fd.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fd.reset();
        continue;
      }
      std::string& to = i == 0 ? r.out : r.err;
      const std::size_t bound = i == 0 ? out_limit : max_error_bytes;
      if (to.size() + std::size_t(n) > bound) {
        if (i == 0) {  // an answer larger than anything the caller expects: stop curl
          r.overflow = true;
          ::kill(pid, SIGTERM);
        }
        fd.reset();
        continue;
      }
      to.append(buf, std::size_t(n));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// curl's last error line without its "curl: (N) " prefix.
std::string curl_error(const CurlRun& r) {
  std::string e = r.err;
  while (!e.empty() && (e.back() == '\n' || e.back() == '\r')) e.pop_back();
  e = e.substr(e.rfind('\n') == std::string::npos ? 0 : e.rfind('\n') + 1);
  if (e.rfind("curl: (", 0) == 0 && e.find(") ") != std::string::npos) e = e.substr(e.find(") ") + 2);
  return e.empty() ? "curl exited with status " + std::to_string(r.exit_status) : e;
}

// "bytes 0-7/16060522496" → the total (0 when absent or malformed).
std::uint64_t range_total(std::string_view v) {
  const auto slash = v.rfind('/');
  if (slash == std::string_view::npos) return 0;
  return std::strtoull(std::string(v.substr(slash + 1)).c_str(), nullptr, 10);
}

std::string percent_encode_slashes(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '/' ? std::string("%2F") : std::string(1, c);
  return out;
}

class Hub {
 public:
  Hub(const HubSettings& s, std::string repo, std::string revision)
      : s_(s), repo_(std::move(repo)), revision_(std::move(revision)) {}

  // GET a repository file, whole (limit bytes at most) or the byte range [from, to].
  Answer get(const std::string& file, std::size_t limit, std::uint64_t from = 0, std::uint64_t to = 0) const {
    const std::string url = s_.endpoint + "/" + repo_ + "/resolve/" + percent_encode_slashes(revision_) + "/" + file;
    std::vector<std::string> args = {
        curl_program, "-q",  // first: no ~/.curlrc
        "--silent", "--show-error", "--globoff", "--fail",
        "--location", "--max-redirs", "5",  // resolve/ answers with a redirect to the CDN; curl drops the
                                            // Authorization header when the host changes
        "--proto", "=http,https", "--proto-redir", "=http,https",
        "--connect-timeout", std::to_string(connect_timeout_s),
        "--speed-limit", "1024", "--speed-time", std::to_string(stall_timeout_s),
        "--user-agent", "gpuplan",
        "--max-filesize", std::to_string(limit),  // refused up front when the answer says its length
        "--write-out", std::string(status_marker) + "%{http_code} %header{content-range}",  // curl 7.84+
        "--output", "-"};
    if (to > 0) args.insert(args.end(), {"--range", std::to_string(from) + "-" + std::to_string(to)});
    // The token goes on curl's stdin, never on its command line (which other users can read).
    std::string headers;
    if (!s_.token.empty()) {
      if (s_.token.size() > max_token_bytes)
        throw InputError("the Hub token is over " + std::to_string(max_token_bytes) + " bytes");
      if (s_.token.find_first_of("\r\n") != std::string::npos) throw InputError("the Hub token holds a line break");
      headers = "Authorization: Bearer " + s_.token + "\n";
      args.insert(args.end(), {"--header", "@-"});
    }
    args.insert(args.end(), {"--url", url});
    CurlRun r = run_curl(args, headers, limit + 256);  // the body, then the trailer (under 80 bytes)
    const auto mark = r.out.rfind(status_marker);  // the last one: a body may hold the marker too
    const bool marked = !r.overflow && mark != std::string::npos;
    Answer a;
    if (marked) {
      std::string_view trailer = std::string_view(r.out).substr(mark + status_marker.size());
      a.status = std::strtol(std::string(trailer.substr(0, trailer.find(' '))).c_str(), nullptr, 10);
      a.total = trailer.find(' ') == std::string_view::npos ? 0 : range_total(trailer.substr(trailer.find(' ') + 1));
    }
    if (a.status >= 400) return a;  // --fail: its body (an error page) is not read
    if (r.overflow || r.exit_status == 63)  // 63: CURLE_FILESIZE_EXCEEDED
      throw DataError(where(file) + ": the answer is over " + std::to_string(limit) + " bytes");
    if (r.exit_status != 0 || !marked)
      throw DataError(where(file) + ": cannot reach " + s_.endpoint + " (" + curl_error(r) + ")");
    r.out.resize(mark);
    if (r.out.size() > limit) throw DataError(where(file) + ": the answer is over " + std::to_string(limit) + " bytes");
    a.body = std::move(r.out);
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
