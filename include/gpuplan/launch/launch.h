// What an imported launch command or config says, as gpuplan's own flags: each setting names the gpuplan flag it
// sets and what it was read from; everything else read is listed as ignored, with the reason. The CLI appends the
// settings to the user's own flags, so an import estimates exactly what those flags would (docs/launch.md).
#pragma once
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../error.h"

namespace gpuplan::launch {

// One gpuplan flag (value "" for a bare flag such as --grad-checkpointing) and the text it came from.
struct Setting {
  std::string flag, value, source;
};

// Something read and not used: why, and whether it changes memory or speed (then the CLI warns on stderr).
struct Ignored {
  std::string source, reason;
  bool warn = true;
};

// A config file named by a command, for the caller to read and hand to its parser.
enum class FileKind { deepspeed_json, accelerate_yaml, axolotl_yaml, torchtune_yaml, modelfile };
struct FileRef {
  FileKind kind;
  std::string path, source;
  std::string base = "";  // the folder of the config that names it (set by the reader)
};

struct Import {
  std::string tool;      // the program or format read: vllm, sglang, llama.cpp, ollama, hf-trainer, deepspeed-config …
  std::string followed;  // whose argument definitions, at which version
  std::vector<Setting> settings;
  std::vector<Ignored> ignored;
  std::vector<FileRef> files;

  // A later setting of the same flag replaces the earlier one (a config file read after the flags, the last of a
  // repeated flag, as argparse keeps it); the replaced one is listed as ignored.
  // (By reference: a caller's `source` is often filled by the same call's value argument, Argv::value.)
  void set(const std::string& flag, const std::string& value, const std::string& source) {
    for (auto& s : settings)
      if (s.flag == flag && s.value == value) return;  // said again: the first place stays the source
    for (auto& s : settings)
      if (s.flag == flag) {
        ignored.push_back({s.source, "overridden by " + source + " (" + flag + ")", false});
        s = {flag, value, source};
        return;
      }
    settings.push_back({flag, value, source});
  }
  void ignore(std::string source, std::string reason, bool warn = true) {
    ignored.push_back({std::move(source), std::move(reason), warn});
  }
  const Setting* find(std::string_view flag) const {
    for (const auto& s : settings)
      if (s.flag == flag) return &s;
    return nullptr;
  }
};

// Reasons shared by the parsers.
inline constexpr const char* no_memory_effect = "does not change memory or speed";
inline constexpr const char* unknown_flag = "not a flag gpuplan knows for this program: check the spelling";

// A command line as argparse-style tokens: --name=value splits, a lone "-x" or "--name" is a flag, anything else a
// positional word.
class Argv {
 public:
  explicit Argv(std::vector<std::string> args, std::size_t start = 0) : a_(std::move(args)), i_(start) {}
  struct Token {
    std::string name;                 // the flag as written, without "=value" ("" for a positional)
    std::optional<std::string> value;  // the inline value of --name=value
    std::string text;                 // the token as written
    bool flag() const { return !name.empty(); }
  };
  bool done() const { return i_ >= a_.size(); }
  const std::string& peek() const { return a_[i_]; }
  Token next() {
    Token t{"", std::nullopt, a_[i_++]};
    if (is_flag(t.text)) {
      const auto eq = t.text.find('=');
      t.name = t.text.substr(0, eq);
      if (eq != std::string::npos) t.value = t.text.substr(eq + 1);
    }
    return t;
  }
  // The flag's value: inline, else the next token. `source` becomes "--flag value" for the report.
  std::string value(const Token& t, std::string& source) {
    if (t.value) {
      source = t.text;
      return *t.value;
    }
    if (done()) throw InputError(t.name + " needs a value");
    std::string v = a_[i_++];
    source = t.name + " " + v;
    return v;
  }
  // For a flag whose value is optional (argparse nargs="?", llama.cpp's -fa [on|off|auto]): the next token when
  // `accept` takes it.
  template <class Pred>
  std::optional<std::string> optional_value(const Token& t, std::string& source, Pred accept) {
    source = t.text;
    if (t.value) return t.value;
    if (!done() && accept(a_[i_])) {
      source += " " + a_[i_];
      return a_[i_++];
    }
    return std::nullopt;
  }
  // An unknown flag's value, guessed: the next token when it is not itself a flag.
  std::string skip_unknown(const Token& t) {
    std::string s = t.text;
    if (!t.value && !done() && !is_flag(a_[i_])) s += " " + a_[i_++];
    return s;
  }
  std::vector<std::string> rest() {
    std::vector<std::string> r(a_.begin() + static_cast<std::ptrdiff_t>(i_), a_.end());
    i_ = a_.size();
    return r;
  }
  static bool is_flag(std::string_view s) {
    if (s.size() < 2 || s[0] != '-') return false;
    // A negative number is a value ("--temp -1").
    return !(s[1] >= '0' && s[1] <= '9') && s[1] != '.';
  }

 private:
  std::vector<std::string> a_;
  std::size_t i_;
};

// A whole number as an engine reads it; `source` names the flag in the error. Optional k/m/g (×1000) and K/M/G
// (×1024) suffixes where the engine takes them (vLLM's human_readable_int).
inline std::int64_t whole(std::string_view text, const std::string& source, bool human = false) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  double mult = 1;
  if (ec == std::errc() && human && p + 1 == end) {
    switch (*p) {
      case 'k': mult = 1e3; break;
      case 'm': mult = 1e6; break;
      case 'g': mult = 1e9; break;
      case 'K': mult = 1024; break;
      case 'M': mult = 1024.0 * 1024; break;
      case 'G': mult = 1024.0 * 1024 * 1024; break;
      default: mult = 0;
    }
    if (mult != 0) ++p;
  }
  if (ec != std::errc() || p != end || v < 0 || mult == 0 || double(v) * mult > 1e15)
    throw InputError(source + ": \"" + std::string(text) + "\" is not a whole number");
  return static_cast<std::int64_t>(double(v) * mult);
}

// strtod rather than from_chars: the web page's libc++ (Emscripten 3.1) has no floating-point from_chars.
inline double real(std::string_view text, const std::string& source) {
  const std::string s(text);
  char* end = nullptr;
  const double v = s.empty() || std::isspace(static_cast<unsigned char>(s[0])) ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw InputError(source + ": \"" + s + "\" is not a number");
  return v;
}

inline std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}

// A boolean as Python's argparse helpers take it (transformers' string_to_bool, vLLM's StoreBoolean): yes/no,
// true/false, t/f, y/n, 1/0, any case; nullopt when it is not one.
inline std::optional<bool> boolean(std::string_view text) {
  const std::string s = lower(text);
  if (s == "yes" || s == "true" || s == "t" || s == "y" || s == "1" || s == "on") return true;
  if (s == "no" || s == "false" || s == "f" || s == "n" || s == "0" || s == "off") return false;
  return std::nullopt;
}

inline std::string number_text(std::int64_t v) { return std::to_string(v); }

// A flag's name with one spelling of its separators (argparse tools take --max-len and --max_len alike).
inline std::string respelled(std::string name, char from, char to) {
  for (auto& c : name)
    if (c == from) c = to;
  return name;
}

// "--max_len" → "max_len" ("" for a bare "--").
inline std::string undashed(const std::string& flag) {
  const auto p = flag.find_first_not_of("-_");
  return p == std::string::npos ? std::string() : flag.substr(p);
}

// "NAME=value" words before the program (a shell's environment assignments, or after `env`).
inline bool env_assignment(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == 0 || eq == std::string_view::npos) return false;
  for (char c : s.substr(0, eq))
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// The program's name without its folder ("/usr/bin/python3" → "python3").
inline std::string base_name(std::string_view s) {
  const auto slash = s.rfind('/');
  return std::string(slash == std::string_view::npos ? s : s.substr(slash + 1));
}

}  // namespace gpuplan::launch
