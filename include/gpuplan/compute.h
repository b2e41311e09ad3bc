// Training compute: FLOPs per token and per run, compute-optimal sizing (Chinchilla), and time at a given MFU.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "error.h"
#include "hardware.h"
#include "memory/activations.h"
#include "memory/workload.h"
#include "model.h"
#include "units.h"

namespace gpuplan {

// 6·N·D: forward 2N, backward 4N FLOPs per token and parameter (Kaplan et al. 2020 §2.1).
inline Flops dense_training_flops(Params n, Tokens d) {
  return Flops(6.0 * double(n.in(unit::params)) * double(d.in(unit::tokens)));
}

struct TrainingFlops {
  Flops model{0};     // what the model needs: MFU basis (6·N + attention) · tokens, recomputation excluded
  Flops hardware{0};  // what the GPUs execute: + the recomputed forward (HFU basis)
  Params matmul_params{0};  // N in 6·N: active parameters that take part in matmuls (input embeddings excluded)
  Params adapter_params{0};  // LoRA's A and B over the targeted linears (0 in full training)
  double flops_per_token = 0;
};

// LoRA adapter parameters (A: r×in, B: out×r) over the decoder linears PEFT targets (routed experts are not).
inline double lora_adapter_total(const ModelSpec& s, const LoraSpec& lora) {
  double n = 0;
  if (lora.rank == 0) return n;
  for (const auto& [l, count] : layer_kinds(s))
    for (const ParamGroup& g : layer_params(s, l))
      if (g.linear && !g.expert && detail::lora_targets_module(lora, g.module))
        n += double(count) * double(g.count) * double(lora.rank) * double(g.in + g.out);
  return n;
}

// PaLM appendix B (Chowdhery et al. 2022): 6·N + 12·L·H·Q·T per token, N the active parameters that multiply
// (the input-embedding lookup is not a matmul; a tied lm_head is), L layers, H heads, Q head dim, T sequence.
// MoE counts the routed experts a token visits (experts_per_token of them) plus the router. Full recomputation
// runs the forward twice: hardware FLOPs (2N + 4·L·H·Q·T) per token more (MosaicML llm-foundry: 8·N·D).
// LoRA freezes the base: its backward computes the input gradients (2N) but no weight gradients, so the step
// needs 4·N for the base and 6 per adapter parameter (forward, input and weight gradient) — the model FLOPs a LoRA
// step must do, so that its MFU compares with full training's and HFU (what runs, recomputation added) ≥ MFU.
inline TrainingFlops training_flops(const ModelSpec& s, Tokens tokens, std::int64_t seq, Recompute recompute,
                                   const LoraSpec& lora = {}) {
  const ParamCounts c = count_params(s);
  double n = double(c.active.in(unit::params)) - double(c.embedding.in(unit::params));
  if (s.tied_embeddings) n += double(s.vocab) * double(s.hidden);  // the shared matrix still multiplies at lm_head
  const double attn = 12.0 * double(s.layers) * double(s.heads) * double(s.head_dim) * double(seq);
  const double adapters = lora_adapter_total(s, lora);
  TrainingFlops f;
  f.matmul_params = Params(static_cast<std::int64_t>(n));
  f.adapter_params = Params(static_cast<std::int64_t>(adapters));
  f.flops_per_token = (lora.rank > 0 ? 4.0 * n + 6.0 * adapters : 6.0 * n) + attn;
  f.model = Flops(f.flops_per_token * double(tokens.in(unit::tokens)));
  double per_token_hw = f.flops_per_token;
  if (recompute == Recompute::full) per_token_hw += 2.0 * (n + adapters) + attn / 3.0;
  else if (recompute == Recompute::selective) per_token_hw += attn / 3.0;  // attention core recomputed
  f.hardware = Flops(per_token_hw * double(tokens.in(unit::tokens)));
  return f;
}

// ---------------------------------------------------------------------------------------------------------------
// Compute-optimal sizing (Hoffmann et al. 2022) and the parametric loss.

// L(N, D) = E + A / N^α + B / D^β
struct LossFit {
  std::string name;
  double E, A, B, alpha, beta;
  double loss(double n, double d) const { return E + A / std::pow(n, alpha) + B / std::pow(d, beta); }
  // Minimising L under C = 6·N·D (Hoffmann et al. eq. 4): N = G·(C/6)^a, D = (C/6)^b / G,
  // G = (α·A / (β·B))^(1/(α+β)), a = β/(α+β), b = α/(α+β).
  double optimal_params(double c) const {
    const double g = std::pow(alpha * A / (beta * B), 1.0 / (alpha + beta));
    return g * std::pow(c / 6.0, beta / (alpha + beta));
  }
};

// Hoffmann et al. 2022, appendix D.2.
inline const LossFit chinchilla_fit{"Hoffmann et al. 2022 (approach 3)", 1.69, 406.4, 410.7, 0.34, 0.28};
// Besiroglu et al. 2024 (Epoch AI replication, arXiv 2404.10102), fitted to the points of Chinchilla's figure 4.
inline const LossFit epoch_fit{"Besiroglu et al. 2024 (Epoch AI replication)", 1.8172, 482.01, 2085.43, 0.3478, 0.3658};

struct ScalingApproach {
  std::string id;
  std::string description;
  double a;  // N_opt ∝ C^a (Hoffmann et al. Table 2)
  // Anchor: the approach's own compute-optimal size at Gopher's budget, 5.76e23 FLOPs (Hoffmann et al. §3:
  // approach 1 gives 67B (Table 3), approach 2 63B); 0 for closed-form approaches.
  double anchor_params;
  const LossFit* fit;  // closed form, when the approach is a parametric fit
};

inline constexpr double gopher_budget_flops = 5.76e23;

inline const std::vector<ScalingApproach>& scaling_approaches() {
  static const std::vector<ScalingApproach> approaches = {
      {"chinchilla-1", "Hoffmann et al. approach 1: minimum over training curves", 0.50, 67e9, nullptr},
      {"chinchilla-2", "Hoffmann et al. approach 2: IsoFLOP profiles", 0.49, 63e9, nullptr},
      {"chinchilla-3", "Hoffmann et al. approach 3: parametric loss fit", 0.46, 0, &chinchilla_fit},
      {"epoch-2024", "Besiroglu et al. 2024: replication of approach 3", 0.3658 / (0.3478 + 0.3658), 0, &epoch_fit},
  };
  return approaches;
}

struct ScalingPoint {
  std::string approach;
  Params params{0};
  Tokens tokens{0};
  double tokens_per_param = 0;
  double loss_chinchilla = 0;  // predicted by each published constant set
  double loss_epoch = 0;
};

inline ScalingPoint compute_optimal(const ScalingApproach& a, Flops budget) {
  const double c = budget.in(unit::flop);
  if (!(c > 0) || !std::isfinite(c)) throw InputError("compute budget must be a positive number of FLOPs");
  const double n = a.fit ? a.fit->optimal_params(c) : a.anchor_params * std::pow(c / gopher_budget_flops, a.a);
  const double d = c / (6.0 * n);
  ScalingPoint p;
  p.approach = a.id;
  p.params = Params(static_cast<std::int64_t>(std::llround(n)));
  p.tokens = Tokens(static_cast<std::int64_t>(std::llround(d)));
  p.tokens_per_param = d / n;
  p.loss_chinchilla = chinchilla_fit.loss(n, d);
  p.loss_epoch = epoch_fit.loss(n, d);
  return p;
}

// Default token count when the user gives none: about 20 tokens per parameter (Hoffmann et al. Table 3).
inline constexpr double chinchilla_tokens_per_param = 20.0;
// A fine-tune has no compute-optimal token count: without its dataset size, time and cost are per 1B tokens.
inline constexpr std::int64_t fine_tune_default_tokens = 1'000'000'000;

// ---------------------------------------------------------------------------------------------------------------
// Time at a model-FLOPs utilisation.

enum class ComputeFormat { fp32, bf16, fp16, fp8 };

// The tensor format a precision recipe runs its matmuls in (fp32 counts the plain fp32 rate: PyTorch uses TF32
// tensor cores for fp32 matmuls only when allow_tf32 is set).
inline ComputeFormat compute_format(Precision p) {
  switch (p) {
    case Precision::fp32: return ComputeFormat::fp32;
    case Precision::fp16:
    case Precision::amp_fp16:
    case Precision::pure_fp16: return ComputeFormat::fp16;
    case Precision::fp8: return ComputeFormat::fp8;
    default: return ComputeFormat::bf16;
  }
}

inline std::optional<double> peak_for(const Device& d, ComputeFormat f) {
  switch (f) {
    case ComputeFormat::fp32: return d.peak.fp32;
    case ComputeFormat::bf16: return d.peak.bf16 ? d.peak.bf16 : d.peak.fp16;
    case ComputeFormat::fp16: return d.peak.fp16 ? d.peak.fp16 : d.peak.bf16;
    case ComputeFormat::fp8: return d.peak.fp8;
  }
  return std::nullopt;
}

struct MfuDefault {
  double mfu;
  std::string basis;
};

// An end-to-end MFU by device class and format, for `scale` (a GPU-hour budget into FLOPs, with no model to time):
// from published large runs (train and plan time runs with the step-time model, step_time.h):
// - datacenter GPUs, 16-bit: 0.40 — Llama 3 405B on H100: 38–43 % (Llama 3 paper, Table 4); MosaicML MPT on
//   H100: 40–46 %; our H200 measurements of HF eager training: 39–40 %.
// - fp8: 0.30 of the fp8 peak — MosaicML amp_fp8 3B on H100: 27.7 %; DeepSeek-V3 implies ~17 % of fp8 peak.
// - TPUs: 0.45 — PaLM 540B on TPU v4: 46.2 %.
// - consumer and workstation cards: 0.35 — no published large runs; single-node runs lose to PCIe and smaller
//   batches (assumption, override with --mfu).
inline MfuDefault default_mfu(const Device& d, ComputeFormat f) {
  if (f == ComputeFormat::fp8) return {0.30, "fp8 runs reach 17–28 % of the fp8 peak (MosaicML, DeepSeek-V3); 30 %"};
  if (d.id.rfind("tpu", 0) == 0) return {0.45, "PaLM 540B on TPU v4: 46.2 % MFU"};
  if (d.segment == "consumer" || d.segment == "workstation")
    return {0.35, "assumption for single-node consumer/workstation cards (no published large runs)"};
  return {0.40, "Llama 3 405B on H100: 38–43 % MFU; MosaicML on H100: 40–46 %"};
}


}  // namespace gpuplan
