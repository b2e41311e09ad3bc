// Does Llama 3.1 8B full fine-tuning fit on an H100? The library alone: no CLI, no fmt.
#include <cstdio>

#include <gpuplan/gpuplan.h>

int main() {
  const gpuplan::ModelSpec& spec = gpuplan::find_preset("llama-3.1-8b").spec;
  gpuplan::TrainingWorkload w;
  w.precision = gpuplan::Precision::pure_bf16;
  w.optimizer = gpuplan::Optimizer::adamw_fused;
  w.recompute = gpuplan::Recompute::full;
  const auto est = gpuplan::estimate_training_memory(spec, w);
  const auto fit = gpuplan::fit_on(gpuplan::builtin_catalog().get("h100"), est.memory.total);
  std::printf("llama-3.1-8b needs %.2f GiB per GPU: %s on an H100\n",
              est.memory.total.in(gpuplan::unit::bytes) / 1073741824.0, fit.fits ? "fits" : "does not fit");
  return fit.fits ? 0 : 1;
}
