// Planner speed on one core (not a test; run by hand: build/bench/gpuplan_plan_bench). The targets: at
// least 1,000,000 configurations evaluated per second, and a whole-catalog plan for a 70B model under 200 ms.
#include <chrono>
#include <cstdio>

#include <gpuplan/gpuplan.h>

int main() {
  using clock = std::chrono::steady_clock;
  const gpuplan::Catalog& cat = gpuplan::builtin_catalog();
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"}) {
    const gpuplan::ModelSpec& spec = gpuplan::find_preset(id).spec;
    gpuplan::TrainingPlanRequest req;
    req.tokens = gpuplan::Tokens(2'000'000'000'000);
    const int n = 20;
    std::int64_t configs = 0, layouts = 0;
    const auto t0 = clock::now();
    for (int i = 0; i < n; ++i) {
      const auto plan = gpuplan::plan_training(spec, req, cat);
      configs += plan.evaluated;
      layouts += plan.layouts;
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    std::printf("plan train %-16s %7.1f ms per whole-catalog plan, %6.2f M configurations/s (%lld configurations, "
                "%lld layouts per plan)\n",
                id, 1000 * s / n, double(configs) / s / 1e6, (long long)(configs / n), (long long)(layouts / n));
  }
  // The screen alone: layouts per second.
  const gpuplan::ModelSpec& spec = gpuplan::find_preset("llama-3.1-70b").spec;
  gpuplan::TrainingWorkload base;
  base.seq = 4096;
  const gpuplan::TrainingMemoryScreen screen(spec, base);
  double sink = 0;
  const int m = 5'000'000;
  const auto t0 = clock::now();
  for (int i = 0; i < m; ++i) {
    gpuplan::TrainingLayout L{8 << (i % 8), 1 << (i % 4), 1 << (i % 3), i % 4, 1 + i % 8, 1 + i % 16, 1,
                              gpuplan::Recompute(i % 3), gpuplan::Offload::none};
    sink += screen.lower_bound(L);
  }
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("memory screen            %6.1f M layouts/s (%g)\n", m / s / 1e6, sink > 0 ? 1.0 : 0.0);
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b"}) {
    gpuplan::ServingPlanRequest req;
    req.concurrency = 64;
    const int n = 10;
    const auto t1 = clock::now();
    for (int i = 0; i < n; ++i) gpuplan::plan_serving(gpuplan::find_preset(id).spec, req, cat);
    std::printf("plan infer %-16s %7.1f ms per whole-catalog plan\n", id,
                1000 * std::chrono::duration<double>(clock::now() - t1).count() / n);
  }
  return 0;
}
