// Text from files and the network made safe to print: names in configs, tensor names, GGUF metadata and paths
// reach a terminal and JSON, where an escape sequence could rewrite the screen and invalid UTF-8 stops a JSON
// writer. Valid UTF-8 passes unchanged, except control characters (C0, DEL, C1), which are written as \xNN; each
// byte of an invalid sequence becomes U+FFFD. The result is one line.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace gpuplan {

namespace detail {

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, surrogates or values past U+10FFFF), 0 if
// none.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace detail

// At most `max_bytes` of the input are shown; a longer text ends in "…".
inline std::string printable(std::string_view s, std::size_t max_bytes = 4096) {
  std::string out;
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  static constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = detail::utf8_sequence(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;  // U+0080 … U+009F
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else if (c < 0x20 || c == 0x7F || c1) {
      const auto v = c1 ? static_cast<unsigned char>(s[i + 1]) : c;
      out += "\\x";
      out += hex[v >> 4];
      out += hex[v & 15];
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  if (cut) out += "…";
  return out;
}

}  // namespace gpuplan
