// Time per estimate on one core, by model size, recomputation and parallel layout, with the allocator replay and
// the replay-free lower bound apart (not a test; run by hand: build/bench/gpuplan_bench).
#include <chrono>
#include <cstdio>
#include <functional>

#include <gpuplan/gpuplan.h>

namespace {
using clock_type = std::chrono::steady_clock;

// Milliseconds per call of f, over enough calls to take ~0.2 s.
double ms_per_call(const std::function<double()>& f) {
  double sink = 0;
  int n = 0;
  const auto t0 = clock_type::now();
  auto elapsed = [&] { return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count(); };
  while (elapsed() < 200 || n < 3) {
    sink += f();
    ++n;
  }
  return sink >= 0 ? elapsed() / n : -1.0;
}
}  // namespace

int main() {
  using namespace gpuplan;
  struct Layout {
    const char* name;
    TrainingWorkload w;
  };
  auto layout = [](std::int64_t gpus, std::int64_t tp, std::int64_t pp, int zero, Recompute r) {
    TrainingWorkload w;
    w.gpus = gpus;
    w.tp = tp;
    w.pp = pp;
    w.zero = zero;
    w.grad_accum = pp > 1 ? 2 * pp : 1;
    w.recompute = r;
    return w;
  };
  const Layout layouts[] = {
      {"1 GPU", layout(1, 1, 1, 0, Recompute::none)},
      {"1 GPU, recompute", layout(1, 1, 1, 0, Recompute::full)},
      {"8 GPUs ZeRO-3", layout(8, 1, 1, 3, Recompute::none)},
      {"tp8 pp4 dp2, recompute", layout(64, 8, 4, 1, Recompute::full)},
  };
  std::printf("%-16s %-24s %12s %14s %12s %12s\n", "model", "layout", "estimate ms", "lower bound ms", "timeline ms",
              "replay ms");
  for (const char* id : {"llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"}) {
    const ModelSpec& s = find_preset(id).spec;
    for (const Layout& l : layouts) {
      const TrainingWorkload& w = l.w;  // a plain reference: lambdas cannot capture structured bindings in C++17
      if (s.layers < w.pp) continue;
      const PipelineStage st = pipeline_stages(s.layers, w).front();
      const ModelSpec r = rank_model(s, w, st);
      const ShardInventory inv = shard_inventory(r, w, st);
      const ModelStates m = model_states(inv, w);
      const StepTensors t = step_tensors(r, w, st, inv, m);
      const AllocationTimeline tl = training_allocations(r, w, st, inv, m, t);
      std::printf("%-16s %-24s %12.3f %14.3f %12.3f %12.3f\n", id, l.name,
                  ms_per_call([&] { return estimate_training_memory(s, w).memory.total.in(unit::bytes); }),
                  ms_per_call([&] { return training_memory_lower_bound(s, w).in(unit::bytes); }),
                  ms_per_call([&] { return double(training_allocations(r, w, st, inv, m, t).events.size()); }),
                  ms_per_call([&] { return replay_reserve(tl); }));
    }
    InferenceWorkload iw;
    iw.batch = 8;
    std::printf("%-16s %-24s %12.3f %14.3f\n", id, "serving (HF generate)",
                ms_per_call([&] { return estimate_inference_memory(s, iw).memory.total.in(unit::bytes); }),
                ms_per_call([&] { return inference_memory_lower_bound(s, iw).in(unit::bytes); }));
  }
  return 0;
}
