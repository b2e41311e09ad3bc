// What an optimizer keeps per parameter and what its step allocates for a moment: one set of rules, used by the
// training estimator and the planner's screen alike.
#pragma once
#include "workload.h"

namespace gpuplan {

// Optimizer state elements kept for one rows×cols tensor family of `numel` elements.
inline double optimizer_state_elements(Optimizer o, double rows, double cols, double numel) {
  switch (o) {
    case Optimizer::adamw:
    case Optimizer::adamw_fused:
    case Optimizer::adam:
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw_8bit: return 2.0 * numel;  // first and second moments (Kingma & Ba 2015, Alg. 1)
    case Optimizer::sgd: return 0.0;
    case Optimizer::sgd_momentum:
    case Optimizer::lion: return numel;  // one momentum buffer (Chen et al. 2023: Lion keeps only momentum)
    case Optimizer::adafactor:
      // Factored second moment: row and column statistics per matrix, full for vectors (Shazeer & Stern 2018).
      return cols > 1 ? rows + cols : numel;
  }
  return 0.0;
}

// bitsandbytes 8-bit AdamW: two uint8 moments + an fp32 absmax per 256-element block each, per parameter
// (bitsandbytes optimizer.py Optimizer2State, blocksize 256 since PR #1365).
inline constexpr double adamw_8bit_bytes_per_param = 2.0 + 8.0 / 256.0;

// Temporaries of the optimizer step per trainable parameter (PyTorch): master-weight recipes (DeepSpeed/Megatron)
// upcast the 16-bit gradients into an fp32 buffer (DeepSpeed's estimator: "4_grads_32bit") and step with fused
// kernels; torch's multi-tensor (foreach) AdamW makes one intermediate list the size of a moment (sqrt of
// exp_avg_sq; measured on H200, 8B: foreach − fused = 16.04 GB ≈ 2 B × 8.03B). Fused kernels and in-place
// foreach updates need none; Adafactor and Lion loop per tensor (a constant, not per parameter).
inline double step_temporaries_per_param(Optimizer o, double state_bytes, double master_bytes) {
  if (master_bytes > 0) return 4.0;
  return (o == Optimizer::adamw || o == Optimizer::adam) ? state_bytes : 0.0;
}

}  // namespace gpuplan
