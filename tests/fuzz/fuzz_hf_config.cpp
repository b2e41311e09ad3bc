// libFuzzer: any HF config text is imported or rejected with a gpuplan error; an imported one estimates finitely.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <gpuplan/memory/inference.h>
#include <gpuplan/memory/training.h>
#include <gpuplan/model_hf.h>

namespace gpuplan::fuzz {

int hf_config(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const gpuplan::ModelSpec s = gpuplan::model_from_hf_config(j, "fuzz");
    const auto n = gpuplan::count_params(s);  // validated: within 2·10^15, never negative, active ≤ total
    if (n.total.in(gpuplan::unit::params) <= 0 || n.active.in(gpuplan::unit::params) > n.total.in(gpuplan::unit::params))
      std::abort();
    if (n.total.in(gpuplan::unit::params) > 2'000'000'000'000LL) return 0;  // keep runs short
    gpuplan::TrainingWorkload w;
    w.batch = 1;
    w.seq = 64;
    const double t = gpuplan::estimate_training_memory(s, w).memory.total.in(gpuplan::unit::bytes);
    gpuplan::InferenceWorkload iw;
    iw.prompt_len = 64;
    iw.new_tokens = 4;
    const double i = gpuplan::estimate_inference_memory(s, iw).memory.total.in(gpuplan::unit::bytes);
    if (!std::isfinite(t) || !std::isfinite(i) || t <= 0 || i <= 0) std::abort();
  } catch (const gpuplan::Error&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
