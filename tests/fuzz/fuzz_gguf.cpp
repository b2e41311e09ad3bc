// libFuzzer: any bytes are a GGUF header, a DataError, or Truncated (a DataError); a parsed one gives a model
// that estimates finitely, or a DataError naming what is missing.
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
    const auto w = gpuplan::stored_weights(gpuplan::checkpoint_from(h), 4);
    if (w.total().in(gpuplan::unit::bytes) < 0) std::abort();
    const gpuplan::ModelSpec s = gpuplan::model_from_gguf(h, "fuzz");
    if (gpuplan::count_params(s).total.in(gpuplan::unit::params) > 2'000'000'000'000LL) return 0;  // keep runs short
    gpuplan::InferenceWorkload iw;
    iw.prompt_len = 64;
    iw.new_tokens = 4;
    iw.profile = gpuplan::Profile::llama_cpp;
    const double i = gpuplan::estimate_inference_memory(s, iw).memory.total.in(gpuplan::unit::bytes);
    if (!std::isfinite(i) || i <= 0) std::abort();
  } catch (const gpuplan::Error&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
