// Memory at the moments of a step, the peak among them, and what the caching allocator reserves on top.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../units.h"
#include "profile.h"

namespace gpuplan {

struct MemoryComponents {
  Bytes weights{0};           // parameters (+ autocast's cached 16-bit copies, + FSDP gathered layers)
  Bytes gradients{0};
  Bytes optimizer_states{0};  // moments and fp32 master weights
  Bytes activations{0};       // tensors saved for backward, and the working set of the layer being computed
  Bytes logits{0};            // output logits and the loss's fp32 copies
  Bytes kv_cache{0};
  Bytes overhead{0};          // framework buffers: cuBLAS workspaces, optimizer-step temporaries, DDP buckets
  Bytes sum() const { return weights + gradients + optimizer_states + activations + logits + kv_cache + overhead; }
};

struct Moment {
  std::string phase;  // forward, backward, optimizer; prefill, decode
  std::string what;   // where in the phase
  MemoryComponents at;
};

struct MemoryEstimate {
  MemoryComponents components;  // at the peak moment; sums to peak_allocated
  std::string peak_phase;
  std::string peak_what;
  Bytes peak_allocated{0};      // live tensors at the peak
  Bytes allocator_slack{0};     // caching-allocator reserve beyond live tensors (rounding, fragmentation)
  Bytes reserved{0};            // peak_allocated + allocator_slack
  Bytes context{0};             // CUDA context, kernels, NCCL buffers: outside the allocator
  Bytes total{0};               // reserved + context: what nvidia-smi shows for the process on a GPU with room
  // The least GPU memory it runs in: total, or less where the caching allocator, on a GPU too small for all it would
  // keep cached, frees its cached segments at a failed cudaMalloc and goes on (inference.h: least_capacity).
  Bytes runs_in{0};
  std::vector<Moment> moments;  // the peak of each phase
};

// The peak moment of live tensors, the peak of each phase, and the reserve: the caching allocator keeps freed
// blocks cached and rounds requests, so what it holds at a moment exceeds the live tensors by a share of the
// tensors that come and go (activations, logits, gradients, workspaces: weights and optimizer states are
// allocated once, exactly sized).
inline MemoryEstimate summarize(std::vector<Moment> moments, Profile profile, Bytes context,
                                std::optional<Bytes> simulated_reserve = std::nullopt,
                                bool at_least_measured_shares = false) {
  MemoryEstimate mem;
  if (moments.empty()) return mem;
  std::size_t best = 0;
  double reserved = 0;
  for (std::size_t i = 0; i < moments.size(); ++i) {
    const auto& m = moments[i].at;
    if (m.sum() > moments[best].at.sum()) best = i;
    double r = m.sum().in(unit::bytes);
    if (torch_runtime(profile)) {
      const Bytes churn = m.activations + m.logits + m.gradients + m.kv_cache + m.overhead;
      r += PytorchProfile::fragmentation * churn.in(unit::bytes);
    }
    reserved = std::max(reserved, r);
  }
  mem.components = moments[best].at;
  mem.peak_phase = moments[best].phase;
  mem.peak_what = moments[best].what;
  std::vector<std::string> phases;
  for (const auto& m : moments)
    if (std::find(phases.begin(), phases.end(), m.phase) == phases.end()) phases.push_back(m.phase);
  for (const auto& phase : phases) {
    const Moment* top = nullptr;
    for (const auto& m : moments)
      if (m.phase == phase && (!top || m.at.sum() > top->at.sum())) top = &m;
    mem.moments.push_back(*top);
  }
  mem.peak_allocated = mem.components.sum();
  if (simulated_reserve) {
    const double replayed = (mem.peak_allocated + *simulated_reserve).in(unit::bytes);
    reserved = at_least_measured_shares ? std::max(reserved, replayed) : replayed;
  }
  mem.reserved = Bytes(std::max(reserved, mem.peak_allocated.in(unit::bytes)));
  mem.allocator_slack = mem.reserved - mem.peak_allocated;
  mem.context = context;
  mem.total = mem.reserved + mem.context;
  mem.runs_in = mem.total;
  return mem;
}

}  // namespace gpuplan
