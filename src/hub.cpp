#include "hub.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gpuplan/error.h>
#include <gpuplan/safetensors.h>
#include <gpuplan/text.h>

namespace gpuplan::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t first_read_bytes = 256u << 10;  // one request holds most headers (a 70B shard's is ~70 KB)
constexpr long connect_timeout_s = 15;
constexpr long stall_timeout_s = 30;                 // abort when under 1 KB/s for this long
constexpr auto kill_grace = std::chrono::seconds(2);  // past --max-time before curl itself is killed

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

using Clock = std::chrono::steady_clock;

struct CurlRun {
  int exit_status = 0;  // curl's exit code; -1 when a signal ended it
  std::string out, err;
  bool overflow = false;  // stdout passed its bound: curl was stopped
  bool late = false;      // curl outlived its --max-time by the grace period: it was killed
};

// Runs curl with `args`, `input` on its stdin, reading at most `out_limit` bytes of its stdout. curl's own
// --max-time ends the transfer by `deadline`; should curl itself hang (a resolver that never returns), it is
// killed a little after.
CurlRun run_curl(const std::vector<std::string>& args, const std::string& input, std::size_t out_limit,
                 Clock::time_point deadline) {
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
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline + kill_grace - Clock::now());
    const int ready = left.count() <= 0 ? 0 : ::poll(fds, 2, int(std::min<std::int64_t>(left.count(), 60'000)));
    if (ready == 0 && Clock::now() >= deadline + kill_grace) {
      r.late = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (ready < 0) {
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

// curl's error line without its "curl: (N) " prefix: the last line that starts so (a TLS failure adds lines of
// advice after it), else the last line.
std::string curl_error(const CurlRun& r) {
  std::string_view e = r.err;
  while (!e.empty() && (e.back() == '\n' || e.back() == '\r')) e.remove_suffix(1);
  const std::size_t marked = e.rfind("curl: (");
  e = e.substr(marked != std::string_view::npos ? marked : e.rfind('\n') == std::string_view::npos ? 0 : e.rfind('\n') + 1);
  e = e.substr(0, e.find('\n'));
  if (e.rfind("curl: (", 0) == 0 && e.find(") ") != std::string_view::npos) e = e.substr(e.find(") ") + 2);
  return e.empty() ? "curl exited with status " + std::to_string(r.exit_status) : printable(e, 512);
}

// "bytes 0-7/16060522496" → the total (0 when absent or malformed).
std::uint64_t range_total(std::string_view v) {
  const auto slash = v.rfind('/');
  if (slash == std::string_view::npos) return 0;
  return std::strtoull(std::string(v.substr(slash + 1)).c_str(), nullptr, 10);
}

// One URL path segment or file name (RFC 3986 §2.3): unreserved characters as they are, every other byte %XX. A
// revision "refs/pr/1" becomes one segment, as the Hub expects; a file name from an index cannot add a path.
std::string url_segment(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

class Hub {
 public:
  Hub(const HubSettings& s, std::string repo, std::string revision, Clock::time_point deadline)
      : s_(s), repo_(std::move(repo)), revision_(std::move(revision)), deadline_(deadline) {}

  // GET a repository file, whole (limit bytes at most) or the byte range [from, to].
  Answer get(const std::string& file, std::size_t limit, std::uint64_t from = 0, std::uint64_t to = 0) const {
    const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    if (left <= 0) throw DataError(where(file) + ": " + too_late());
    // This request's own limit, or the command's time left when that is less.
    const bool own = s_.request_timeout_s < left;
    const auto request_deadline = own ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                           std::chrono::duration<double>(s_.request_timeout_s))
                                      : deadline_;
    const std::string url = s_.endpoint + "/" + repo_ + "/resolve/" + url_segment(revision_) + "/" + url_segment(file);
    std::vector<std::string> args = {
        curl_program, "-q",  // first: no ~/.curlrc
        "--silent", "--show-error", "--globoff", "--fail",
        "--location", "--max-redirs", "5",  // resolve/ answers with a redirect to the CDN; curl drops the
                                            // Authorization header when the host changes
        "--proto", "=http,https", "--proto-redir", "=http,https",
        "--connect-timeout", std::to_string(connect_timeout_s),
        "--max-time", std::to_string(own ? s_.request_timeout_s : left),  // the whole request, redirects included
        "--speed-limit", "1024", "--speed-time", std::to_string(stall_timeout_s),
        "--user-agent", "gpuplan",
        "--max-filesize", std::to_string(limit),  // refused up front when the answer says its length
        "--write-out", std::string(status_marker) + "%{http_code} %header{content-range}",  // curl 7.84+
        "--output", "-"};
    if (to > 0) args.insert(args.end(), {"--range", std::to_string(from) + "-" + std::to_string(to)});
    // The token goes on curl's stdin, never on its command line (which other users can read).
    std::string headers;
    if (!s_.token.empty()) {  // checked in from_environment: one line, short
      headers = "Authorization: Bearer " + s_.token + "\n";
      args.insert(args.end(), {"--header", "@-"});
    }
    args.insert(args.end(), {"--url", url});
    CurlRun r = run_curl(args, headers, limit + 256, request_deadline);  // the body, then the trailer (< 80 bytes)
    if (r.late || r.exit_status == 28)  // 28: CURLE_OPERATION_TIMEDOUT
      throw DataError(where(file) + ": " + (own ? too_late(s_.request_timeout_s, "GPUPLAN_HUB_REQUEST_TIMEOUT") : too_late()));
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

  std::string where(const std::string& file) const { return repo_ + "@" + revision_ + "/" + printable(file, 256); }
  std::string too_late() const { return too_late(s_.timeout_s, "--hub-timeout, GPUPLAN_HUB_TIMEOUT"); }
  std::string too_late(double seconds, const char* setting) const {
    return "no complete answer from " + s_.endpoint + " within " + fmt::format("{:g}", seconds) + " s (" + setting + ")";
  }

 private:
  const HubSettings& s_;
  std::string repo_, revision_;
  Clock::time_point deadline_;
};

// The cache is private (0700 folders, 0600 files): a gated repo's config and headers stay the user's.
constexpr auto private_dir = fs::perms::owner_all;
constexpr auto private_file = fs::perms::owner_read | fs::perms::owner_write;

void make_private_dirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (!ec) fs::permissions(p, private_dir, ec);
  if (ec) throw DataError(printable(p.string(), 256) + ": cannot create the cache (" + ec.message() + ")");
}

void write_file(const fs::path& p, const std::string& bytes, std::uint64_t size) {
  {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw DataError(printable(p.string(), 256) + ": cannot write the cache");
  }
  std::error_code ec;
  fs::permissions(p, private_file, ec);
  if (!ec && size > bytes.size()) fs::resize_file(p, size, ec);  // a hole of the real size: no disk, no download
  if (ec) throw DataError(printable(p.string(), 256) + ": cannot write the cache (" + ec.message() + ")");
}

// A name no other process uses: `base` + tag + pid + a random number.
fs::path unique_beside(const fs::path& base, const char* tag) {
  static std::mt19937_64 rng(std::random_device{}() ^ std::uint64_t(Clock::now().time_since_epoch().count()));
  return base.string() + tag + std::to_string(::getpid()) + "-" + std::to_string(rng() % 1'000'000'000);
}

// A folder being filled; removed unless published.
struct Staging {
  fs::path path;
  bool published = false;
  ~Staging() {
    std::error_code ec;
    if (!published) fs::remove_all(path, ec);
  }
};

// Puts the filled `tmp` at `dir`. rename() is atomic, but cannot replace a non-empty folder: an entry already there
// (a refresh) is first renamed aside and removed only once its replacement is in place.
void publish(Staging& tmp, const fs::path& dir) {
  std::error_code ec;
  fs::rename(tmp.path, dir, ec);
  if (!ec) {
    tmp.published = true;
    return;
  }
  const fs::path old = unique_beside(dir, ".old-");
  fs::rename(dir, old, ec);
  if (!ec) fs::rename(tmp.path, dir, ec);
  if (ec) throw DataError(printable(dir.string(), 256) + ": cannot write the cache (" + ec.message() + ")");
  tmp.published = true;
  fs::remove_all(old, ec);
}

// An exclusive lock on `path` (flock), held while one process fetches a snapshot: concurrent runs for the same one
// wait for it and then read what it published. Waits until `deadline`.
class CacheLock {
 public:
  CacheLock(const fs::path& path, Clock::time_point deadline, const std::string& too_late) {
    fd_.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_.fd < 0) throw DataError(printable(path.string(), 256) + ": cannot lock the cache (" + std::strerror(errno) + ")");
    while (::flock(fd_.fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR)
        throw DataError(printable(path.string(), 256) + ": cannot lock the cache (" + std::strerror(errno) + ")");
      if (Clock::now() >= deadline) throw DataError(too_late + " (another gpuplan is fetching it)");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  Fd fd_;  // closing it releases the lock
};

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
    if (files.size() > max_shards)
      throw DataError(where + ": names over " + std::to_string(max_shards) + " safetensors files");
    if (!file.is_string()) throw DataError(where + ": weight_map values must be file names");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos || f[0] == '.')
      throw DataError(where + ": weight_map names a file outside the folder");
    if (!f.ends_with(".safetensors"))  // nor config.json or the index itself, which the shard would overwrite
      throw DataError(where + ": weight_map names a file that is not .safetensors");
    files.insert(f);
  }
  return files;
}

// "scheme://host[:port][/path]" of HF_ENDPOINT; credentials in it are refused (they would be printed in errors and
// be part of the cache's folder names): the token goes in HF_TOKEN.
std::string checked_endpoint(std::string e) {
  while (!e.empty() && e.back() == '/') e.pop_back();
  const std::size_t scheme = e.find("://");
  const std::string head = e.substr(0, scheme);
  if (scheme == std::string::npos || (head != "http" && head != "https") || scheme + 3 == e.size())
    throw InputError("HF_ENDPOINT must be an http:// or https:// URL");
  const std::size_t host_end = std::min(e.find('/', scheme + 3), e.size());
  if (e.find('@', scheme + 3) < host_end)
    throw InputError("HF_ENDPOINT holds credentials (user:password@): not supported, put the token in HF_TOKEN");
  for (char c : e)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7F)
      throw InputError("HF_ENDPOINT holds spaces, control or non-ASCII characters");
  return e;
}

// A positive number of seconds from the environment, else `fallback`.
double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (*end != '\0' || !(s > 0) || s > 1e9) throw InputError(std::string(name) + " must be a positive number of seconds");
  return s;
}

}  // namespace

HubSettings HubSettings::from_environment(const std::string& token_flag) {
  HubSettings s;
  const char* endpoint = std::getenv("HF_ENDPOINT");
  s.endpoint = checked_endpoint(endpoint && *endpoint ? endpoint : "https://huggingface.co");
  const char* token = std::getenv("HF_TOKEN");
  s.token = !token_flag.empty() ? token_flag : token ? token : "";
  if (s.token.size() > max_token_bytes)
    throw InputError("the Hub token is over " + std::to_string(max_token_bytes) + " bytes");
  if (s.token.find_first_of("\r\n") != std::string::npos) throw InputError("the Hub token holds a line break");
  const char* offline = std::getenv("HF_HUB_OFFLINE");
  s.offline = offline && (std::string(offline) == "1" || std::string(offline) == "true");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : ".") / ".cache";
  s.cache = (base / "gpuplan" / "hub").string();
  s.timeout_s = env_seconds("GPUPLAN_HUB_TIMEOUT", s.timeout_s);
  s.request_timeout_s = env_seconds("GPUPLAN_HUB_REQUEST_TIMEOUT", s.request_timeout_s);
  s.max_age_s = env_seconds("GPUPLAN_HUB_MAX_AGE", s.max_age_s);
  return s;
}

namespace {

// A complete snapshot at `dir` that may be used: a commit never changes; a branch is used until it is max_age_s
// old, or not at all with --refresh (offline, any complete one).
bool usable(const fs::path& dir, bool commit, const HubSettings& hub) {
  std::error_code ec;
  const auto written = fs::last_write_time(dir / ".complete", ec);
  if (ec) return false;
  if (commit || hub.offline) return true;
  const double age = std::chrono::duration<double>(fs::file_time_type::clock::now() - written).count();
  return !hub.refresh && age <= hub.max_age_s;
}

// Fetches config, index and every shard's header into `tmp`.
void fetch_into(const Hub& h, const fs::path& tmp) {
  const Answer config = h.get("config.json", max_json_bytes);
  h.check(config, "config.json");
  const Answer index = h.get("model.safetensors.index.json", max_json_bytes);
  if (index.status != 404) h.check(index, "model.safetensors.index.json");
  const std::set<std::string> shards =
      index.status == 404 ? std::set<std::string>{"model.safetensors"} : shards_of(index.body, h.where("model.safetensors.index.json"));
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
}

}  // namespace

std::string hub_snapshot(const std::string& repo, const std::string& revision, const HubSettings& hub) {
  // The endpoint, scheme included, is part of the key: a test server's or a plain-http mirror's answers never
  // stand in for the Hub's.
  const bool commit = revision.size() == 40 && revision.find_first_not_of("0123456789abcdef") == std::string::npos;
  const fs::path endpoint_dir = fs::path(hub.cache) / url_segment(hub.endpoint);
  const fs::path repo_dir =
      endpoint_dir / ("models--" + repo.substr(0, repo.find('/')) + "--" + repo.substr(repo.find('/') + 1));
  const fs::path dir = repo_dir / url_segment(revision);
  if (usable(dir, commit, hub)) return dir.string();
  if (hub.offline)
    throw DataError(repo + "@" + revision + ": not in the local Hugging Face cache or gpuplan's, and HF_HUB_OFFLINE=1");

  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(hub.timeout_s));
  const Hub h(hub, repo, revision, deadline);
  make_private_dirs(endpoint_dir);
  make_private_dirs(repo_dir);
  const CacheLock lock(dir.string() + ".lock", deadline, repo + "@" + revision + ": " + h.too_late());
  // Fetched meanwhile by another run that held the lock (a refresh fetches again).
  if (!hub.refresh && usable(dir, commit, hub)) return dir.string();
  if (!hub.token.empty() && hub.endpoint.rfind("http://", 0) == 0)
    std::cerr << "gpuplan: warning: the Hub token goes to " << hub.endpoint << " over plain http (HF_ENDPOINT)\n";

  // Fetch everything first, then publish the folder at once: an interrupted run leaves no half cache.
  Staging tmp{unique_beside(dir, ".partial-")};
  make_private_dirs(tmp.path);
  fetch_into(h, tmp.path);
  publish(tmp, dir);
  return dir.string();
}

}  // namespace gpuplan::cli
