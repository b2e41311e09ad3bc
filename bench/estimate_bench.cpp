// Estimates per second on one core: training and serving, small and large models (not a test; run by hand:
// build/bench/gpuplan_bench).
#include <chrono>
#include <cstdio>

#include <gpuplan/gpuplan.h>

int main() {
  using clock = std::chrono::steady_clock;
  for (const char* id : {"gpt2", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "deepseek-v3"}) {
    const gpuplan::ModelSpec& spec = gpuplan::find_preset(id).spec;
    gpuplan::TrainingWorkload w;
    w.batch = 2;
    w.seq = 4096;
    gpuplan::InferenceWorkload iw;
    double sink = 0;
    const int n = 200;
    auto t0 = clock::now();
    for (int i = 0; i < n; ++i) {
      w.batch = 1 + i % 4;
      sink += gpuplan::estimate_training_memory(spec, w).memory.total.in(gpuplan::unit::bytes);
    }
    auto t1 = clock::now();
    for (int i = 0; i < n; ++i) {
      iw.batch = 1 + i % 8;
      sink += gpuplan::estimate_inference_memory(spec, iw).memory.total.in(gpuplan::unit::bytes);
    }
    auto t2 = clock::now();
    const double train_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / n;
    const double infer_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / n;
    std::printf("%-16s train %7.3f ms/estimate   infer %7.3f ms/estimate   (%g)\n", id, train_ms, infer_ms, sink > 0 ? 1.0 : 0.0);
  }
  return 0;
}
