// libFuzzer: the human-size and sweep-range parsers must reject or parse any text, never crash or produce a non-finite value.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <gpuplan/parse.h>

namespace gpuplan::fuzz {

int parse(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto finite = [](double v) {
    if (!std::isfinite(v) || v < 0) std::abort();
  };
  try { finite(double(gpuplan::parse_params(text).in(gpuplan::unit::params))); } catch (const gpuplan::Error&) {}
  try { finite(double(gpuplan::parse_tokens(text).in(gpuplan::unit::tokens))); } catch (const gpuplan::Error&) {}
  try { finite(gpuplan::parse_bytes(text).in(gpuplan::unit::bytes)); } catch (const gpuplan::Error&) {}
  try { finite(gpuplan::parse_flops(text).in(gpuplan::unit::flop)); } catch (const gpuplan::Error&) {}
  try { finite(gpuplan::parse_usd(text).in(gpuplan::unit::usd)); } catch (const gpuplan::Error&) {}
  // Sweep values: sorted, unique, 1 … 1e9, at most max_sweep_points.
  try {
    const auto v = gpuplan::parse_sweep(text, "--batch");
    if (v.empty() || v.size() > gpuplan::max_sweep_points) std::abort();
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] < 1 || v[i] > 1'000'000'000 || (i > 0 && v[i] <= v[i - 1])) std::abort();
  } catch (const gpuplan::Error&) {}
  return 0;
}

}  // namespace gpuplan::fuzz
