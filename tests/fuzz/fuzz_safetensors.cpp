// libFuzzer: any bytes are a safetensors header or a DataError; a parsed one sorts into a checkpoint whose byte
// and parameter sums are finite and non-negative, and a serving estimate with those stored weights (as `infer
// --model folder` makes) is finite and positive.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <gpuplan/checkpoint.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/builtin.h>

namespace gpuplan::fuzz {

int safetensors(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto h = gpuplan::safetensors::parse_file_prefix(bytes, "fuzz", size);
    const auto c = gpuplan::checkpoint_from({h}, "gptq", 4);
    static const gpuplan::ModelSpec spec = gpuplan::find_preset("llama-3.2-1b").spec;
    const auto w = gpuplan::stored_weights(c, spec.layers);  // per-layer bytes for each of the model's layers
    if (!(w.total().in(gpuplan::unit::bytes) >= 0) || w.language_params.in(gpuplan::unit::params) < 0 ||
        w.other_params.in(gpuplan::unit::params) < 0)
      std::abort();
    gpuplan::InferenceWorkload iw;
    iw.prompt_len = 64;
    iw.new_tokens = 4;
    iw.stored = gpuplan::stored_language_weights(w, c);
    const double i = gpuplan::estimate_inference_memory(spec, iw).memory.total.in(gpuplan::unit::bytes);
    if (!std::isfinite(i) || i <= 0) std::abort();
  } catch (const gpuplan::DataError&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
