// libFuzzer: any bytes are a GGUF header, a DataError, or Truncated (a DataError); a parsed one gives a model
// that estimates finitely and positively with the file's own weights (as `infer --model x.gguf` does), or a
// DataError naming what is missing.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <gpuplan/checkpoint.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/model_gguf.h>

namespace gpuplan::fuzz {

int gguf(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto h = gpuplan::gguf_file::parse_header(bytes, "fuzz");
    try {
      gpuplan::gguf_file::check_data(h, size + (std::uint64_t(1) << 40), "fuzz");  // as if the data followed
    } catch (const gpuplan::DataError&) {  // overlapping or unaligned: the reader refuses it; the rest still runs
    }
    const auto c = gpuplan::checkpoint_from(h);
    const gpuplan::ModelSpec s = gpuplan::model_from_gguf(h, "fuzz");
    const auto w = gpuplan::stored_weights(c, s.layers);
    if (!(w.total().in(gpuplan::unit::bytes) >= 0) || w.language_params.in(gpuplan::unit::params) < 0) std::abort();
    const auto n = gpuplan::count_params(s);
    if (n.total.in(gpuplan::unit::params) <= 0 || n.active.in(gpuplan::unit::params) > n.total.in(gpuplan::unit::params))
      std::abort();
    if (n.total.in(gpuplan::unit::params) > 2'000'000'000'000LL) return 0;  // keep runs short
    gpuplan::InferenceWorkload iw;
    iw.prompt_len = 64;
    iw.new_tokens = 4;
    iw.profile = gpuplan::Profile::llama_cpp;
    iw.stored = gpuplan::stored_language_weights(w, c);
    const auto e = gpuplan::estimate_inference_memory(s, iw);
    const double i = e.memory.total.in(gpuplan::unit::bytes);
    if (!std::isfinite(i) || i <= 0) std::abort();
  } catch (const gpuplan::Error&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
