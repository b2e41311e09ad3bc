// Serving speed from the roofline: prefill is compute-bound; a decode step reads the weights its tokens use (all
// of a dense model's; of an MoE's routed experts only those the batch routes to) and the whole KV cache once
// (Kipply, "Transformer inference arithmetic"; shared reference formulas.md §B6), and cannot be shorter than the
// time the host takes to issue it (HF's eager generate).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compute.h"
#include "hardware.h"
#include "memory/engine_version.h"
#include "memory/llama_cpp.h"
#include "memory/profile.h"
#include "model.h"
#include "quant.h"
#include "runs_on.h"
#include "units.h"

namespace gpuplan {

struct Efficiency {
  // Share of peak bandwidth a decode step's reads reach once each kernel's fixed cost (KernelFloor) is counted
  // apart: fitted on the fit half of tests/data/throughput/published.jsonl (llama.cpp, vLLM and SGLang decode on 17
  // GPUs; 0.89, rounded). Without the floor, llama.cpp batch-1 decode measured 48–82 % of the roofline on RTX
  // 3090/4090 (llama.cpp PRs #4766, #4812): the rest is what the floor now counts.
  double memory = 0.90;
  // Share of dense peak FLOP/s prefill reaches: 50 %, between training MFU (~40 %) and large-GEMM efficiency
  // (~80 % of peak measured for 8192³ bf16 GEMMs on H100/H200); an assumption to override. The vLLM and SGLang
  // prefills of the fit half put it at 0.47.
  double compute = 0.50;
};

// Routed experts that `tokens` tokens visit in one MoE layer, on average under uniform top-k routing: an expert is
// missed by every token with probability (1 − k/E)^T, so E·(1 − (1 − k/E)^T) of them are read. One token reads k;
// a prefill chunk of thousands reads all. Llama 4's dense routing runs every expert for every token.
inline double experts_touched(const MoeSpec& m, double tokens) {
  if (m.experts <= 0) return 0;
  const double e = double(m.experts);
  if (m.dense_routing) return e;
  return e * (1.0 - std::pow(1.0 - double(m.experts_per_token) / e, std::max(tokens, 0.0)));
}

// Of `weight_bytes` (per GPU, as stored in format f), what a forward of `tokens` tokens reads: all but the routed
// experts, and of those the share the tokens touch; an untied input embedding is gathered, a row per token, never
// read whole (a tied one is also the lm_head, read whole). The shares come from the format's own arithmetic
// (quant.h weight_bytes), so an MXFP4 checkpoint's 4-bit experts beside bf16 attention weigh right.
struct ReadShares {
  double gathered = 0;  // the untied input embedding's share of the bytes
  double routed = 0;    // the routed experts' share
  double layers = 0;    // the decoder layers' share (routed experts included; not the embedding, head or encoder)
};
inline ReadShares read_shares(const ModelSpec& s, WeightFormat f) {
  const WeightBytes split = gpuplan::weight_bytes(s, f);
  const double total = split.total().in(unit::bytes);
  if (!(total > 0)) return {};
  return {s.tied_embeddings ? 0.0 : split.embedding.in(unit::bytes) / total, split.routed_experts.in(unit::bytes) / total,
          split.layers.in(unit::bytes) / total};
}
// The routed experts' share of the bytes that `tokens` tokens leave unread.
inline double unread_share(const ModelSpec& s, const ReadShares& r, double tokens) {
  return s.moe.experts > 0 ? r.routed * (1.0 - experts_touched(s.moe, tokens) / double(s.moe.experts)) : 0.0;
}
inline double weight_bytes_read(const ModelSpec& s, const ReadShares& r, double weight_bytes, double tokens) {
  return weight_bytes * (1.0 - r.gathered - unread_share(s, r, tokens));
}
// Of those, the decoder layers' bytes: a 4-bit checkpoint's linears, which Marlin reads (GemmTile::marlin_read_share).
inline double layer_bytes_read(const ModelSpec& s, const ReadShares& r, double weight_bytes, double tokens) {
  return weight_bytes * (r.layers - unread_share(s, r, tokens));
}
inline double weight_bytes_read(const ModelSpec& s, WeightFormat f, double weight_bytes, double tokens) {
  return weight_bytes_read(s, read_shares(s, f), weight_bytes, tokens);
}

// The host's floor under one forward, by engine. HF generate (profile pytorch) runs eagerly: every operator of a
// decoder layer is a Python call and a kernel launch, and the GPU waits when its own work is shorter. Counted in
// transformers' Llama decoder layer at decode: two RMSNorms (8 operators each), the q/k/v/o projections with their
// views and transposes (10), rotary embeddings (14), the cache's two torch.cat, SDPA with its reshapes (3), the
// MLP (5), two residual adds: 56; each further norm (Qwen3's q/k norms, Gemma's sandwich norms) 8 more; an MoE
// block's router, top-k and dispatch 10 beyond the MLP's; eager attention 7 beyond SDPA's 3 (the two products, the
// scaling, the mask's slice and add, the softmax and its cast, dropout), with gpt-oss's sinks 5 more (reshape,
// expand, cat, the row max and its subtraction; the slice before P·V). The profiler's launch counts per decode
// step (tools/measure/probes/steps_p1.jsonl, steps_p3.jsonl; fit-half cases) fix the MoE's 10: against the dense
// Llama layers' 1.19 counted operators a launch, Qwen3-MoE's and GraniteMoE's steps (861 and 1,800 launches) give
// 7.5 and 9.1 launches, 9 and 11 operators, beyond a dense MLP. What an operator costs is the host CPU's, and hosts
// differ: the median of step / operators over the fit half's host-bound decode points (the GPU's part under half the
// step) is 16.9 µs on the H100 host of tests/data/calibration/measured_g2, 21.0 on measured_g4's (another H100
// host), 20.6 and 18.0 on the H200 hosts of measured_g5 and measured_g6 (3 points each); gpt-fast's eager baseline
// on an A100 host, 25.5 tokens/s for Llama-2-7B (PyTorch blog "Accelerating Generative AI with PyTorch II: GPT,
// Fast", 2023), 22 µs. 20 µs was their mean (19.7). With the MoE, Gated DeltaNet and latent-attention counts the
// profiler gave (2026-11, below) the sets' fit-half medians are 19.9, 21.0, 20.6 and 20.1 µs (26.4 on the later
// measured_g7's), but the points spread 13.4–32.3 µs an operator, within one host too: the same workload's step
// differs by host and by run (measured_g4's Llama-3.1-8B batch 1 took 43.9 ms on an H100 host, 23.2 ms replayed
// on an H200 host: steps_p1; measured_g5's steps ran 13–32 µs an operator in one session). With the host unknown,
// the estimate takes the cost that is off by the same share either way across the fit half's spread:
// 2 / (1/13.4 + 1/32.3) = 18.9, so 19 µs (chosen as the worst-error criterion after the mean's 20 µs left a
// held-out point at +53 %: said so here). Engines that replay CUDA graphs (vLLM, SGLang, llama.cpp) pay per kernel
// and per step instead (EngineStep below).
struct HostFloor {
  static constexpr double eager_op_seconds = 19e-6;
  // The range those points span (said beside a host-bound step: the host, not the GPU, sets it).
  static constexpr double fastest_op_seconds = 13e-6, slowest_op_seconds = 32e-6;
  static constexpr double layer_ops = 56, norm_ops = 8, moe_router_ops = 10;
  static constexpr double eager_attention_ops = 7, sink_ops = 5;
  // Qwen3-Next's Gated DeltaNet without flash-linear-attention (transformers 5.17 modeling_qwen3_next.py falls back
  // to torch_chunk_gated_delta_rule and torch_recurrent_gated_delta_rule when fla is not installed, as on the
  // measured stack): counted in the code, views included as the 56 above are. Beyond the attention's 29 (q/k/v/o,
  // rotary, cache, SDPA), a layer's projections, its q/k/v/z/b/a split, the causal conv and the gated RMSNorm take
  // ~60; the recurrent rule at decode 36 (read as ~55 in the code: 5 casts, 2 l2norms, one step of 22; the
  // profiler's 939 launches a Qwen3-Next step, 1,120 operators at Llama's 1.19 a launch, leave 36 for its six Gated
  // DeltaNet layers once the MoE is counted as above: several of those ops are views); the chunked rule at prefill ~60 to
  // pad, scale and decay, then two Python loops of bare tensor ops (GatedDeltaNetLoops below), which issue faster
  // than their kernels run and are counted on the GPU's side.
  // Routers beyond a top-k softmax (the 20 above): DeepSeek-V3's and GLM-4.5's group-limited one
  // (DeepseekV3/Glm4MoeMoE.route_tokens_to_experts: sigmoid, the correction bias, the per-group top-2 sums, the group
  // top-k, its mask scattered and expanded, the masked top-k, the gather, the normalization and the scaling: 23
  // operators beyond the 4 of a softmax top-k), and shared experts (a gated MLP and its add: 6).
  static constexpr double grouped_router_ops = 19, shared_expert_ops = 6;
  // DeepSeek's multi-head latent attention (DeepseekV3Attention.forward) beyond the Llama attention's 29: its 5
  // projections, the q and kv latents' RMSNorms (8 each), 4 views and transposes, 3 splits, the rope key's view and
  // expand and the two cats that join the rope and non-rope parts make 52 with the same rotary, cache and SDPA: 23
  // more, 14 without a q latent (q_lora_rank 0: one projection and one norm fewer). The profiler's 635 launches a
  // DeepSeek-V3-shaped step (steps_p3, fit half) were 0.82 of the operators counted without them, against 1.19 for
  // Llama's layers.
  static constexpr double mla_ops = 14, mla_q_latent_ops = 9;
  // A prompt's MoE layers dispatch through grouped_mm (sort by expert, counts, offsets, gather, the sentinel fills,
  // unsort), decode's through batched_mm (above): the profiler's prefill launches exceed the decode step's by 22, 41
  // and 39 a MoE layer for Qwen3-MoE, GraniteMoE and gpt-oss (steps_p3, fit-half cases; 4 a dense Llama layer), the
  // median 39 launches, 46 operators at Llama's 1.19 a launch.
  static constexpr double moe_prefill_dispatch_ops = 46;
  static constexpr double attention_ops = 29;
  static constexpr double gdn_layer_ops = 60, gdn_recurrent_ops = 36, gdn_chunk_setup_ops = 60;
  // Of the Llama layer's 56 operators, 41 launch a kernel: the two RMSNorms (8 each), q, k and v (3), rotary (5 for
  // q, 5 for k), the two cache cats, SDPA and the copy that makes its output contiguous (2), o (1), the MLP (5) and
  // the two residual adds; the other 15 are views (view, transpose, unsqueeze, the rotate_half slices). The share is
  // taken for every operator counted above.
  static constexpr double kernel_share = 41.0 / 56.0;
};
// The chunked rule's loops: 63 rows (chunk_size − 1) of the chunk's triangular solve, 6 kernels a row (two clones,
// the product, the sum, the add, the row's copy back), then the ⌈p / 64⌉ chunks in order (the state carries from one
// to the next), 17 kernels a chunk (5 fp32 bmm, 12 elementwise). Each kernel is small and pays KernelFloor's launch
// cost; their bytes: row i clones the i × i block and multiplies and sums it, ~5·i² floats for each (sequence,
// value head, chunk), Σ over i < 64; a chunk's body ~1,330 KiB per (sequence, head) (q, k, v, the decay, the
// 128 × 128 state read and rewritten); their fp32 matmuls (no TF32 by default) 11 MFLOP per (sequence, head, chunk):
// k_β·kᵀ, the solve's two products with v_β and k_β·e^g, then q·kᵀ, two products with the state, attn·v and kᵀ·v.
struct GatedDeltaNetLoops {
  static constexpr double chunk = 64, row_kernels = 6, chunk_kernels = 17;
  static constexpr double solve_floats = 5.0 * 63.0 * 64.0 * 127.0 / 6.0;  // Σ 5·i², i = 1..63
  static constexpr double chunk_bytes = 1330.0 * 1024.0;
  static constexpr double fp32_flops = 11e6;
  static constexpr double recurrent_state_passes = 10;  // decode: the state scaled, read twice, updated, read
};
inline double gdn_chunks(double tokens) { return std::ceil(std::max(tokens, 1.0) / GatedDeltaNetLoops::chunk); }
inline bool torch_gated_deltanet(const ModelSpec& s, std::int64_t l) {
  return s.is_linear_layer(l) && s.linear.kind == LinearAttentionKind::gated_deltanet;
}
// Operators the host issues for one forward of `tokens` tokens per sequence (1 at decode).
inline double host_forward_ops(const ModelSpec& s, double tokens, bool eager_attention = false) {
  double ops = 10;  // embedding, positions, the mask, the final norm, lm_head, the sampler's argmax
  const double attention = eager_attention ? HostFloor::eager_attention_ops + (s.attn_sinks ? HostFloor::sink_ops : 0.0)
                                           : 0.0;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    ops += HostFloor::layer_ops + HostFloor::norm_ops * (double(s.norms_per_layer - 2) + (s.qk_norm ? 2.0 : 0.0));
    if (!s.is_linear_layer(l)) ops += attention;
    if (s.mla_enabled) ops += HostFloor::mla_ops + (s.mla.q_lora_rank > 0 ? HostFloor::mla_q_latent_ops : 0.0);
    if (s.is_moe_layer(l))
      ops += HostFloor::moe_router_ops + (s.moe.router_bias ? HostFloor::grouped_router_ops : 0.0) +
             (s.moe.shared_experts > 0 ? HostFloor::shared_expert_ops : 0.0) +
             (tokens > 1 && !s.moe.dense_routing ? HostFloor::moe_prefill_dispatch_ops : 0.0);
    if (torch_gated_deltanet(s, l))
      ops += HostFloor::gdn_layer_ops - HostFloor::attention_ops +
             (tokens <= 1 ? HostFloor::gdn_recurrent_ops : HostFloor::gdn_chunk_setup_ops);
  }
  return ops;
}
inline double host_forward_seconds(const ModelSpec& s, Profile engine, double tokens = 1, bool eager_attention = false) {
  return engine == Profile::pytorch ? host_forward_ops(s, tokens, eager_attention) * HostFloor::eager_op_seconds : 0.0;
}

// The CPU's side of a llama.cpp forward whose weights are partly in host memory (memory/llama_cpp.h placement).
// The CPU runs the ops of those weights for a ubatch under op_offload_min_batch tokens, reading them from host
// memory (a token reads the routed experts it is sent to); the GPU and the CPU take turns, so the times add. For
// larger ubatches the GPU runs them, after copying every host weight over PCIe (ggml_backend_sched's input copies).
struct HostOffload {
  double dense_bytes = 0;   // weights of layers and the output layer in host memory, read whole (not the embedding)
  double expert_bytes = 0;  // routed experts in host memory
  double bandwidth = 0;     // the host's memory, bytes/s (--host-memory-bandwidth)
  double pcie = 0;          // host to GPU, bytes/s
  // What the CPU reads of host memory in practice: 0.65 of the peak, from the one published point held
  // (tests/data/throughput/offload.jsonl: gpt-oss-120b --n-cpu-moe 36 at 25.6 tok/s on a Core i9-14900K), which
  // implies 0.64–0.78 of DDR5-5600 for the GPUs it may have run on (it names none, nor the memory speed).
  static constexpr double memory_efficiency = 0.65;
  // Pinned host-to-device copies reach ~0.8 of the PCIe link (cudaMemcpy bandwidthTest, ~25 GB/s on 4.0 x16).
  static constexpr double pcie_efficiency = 0.8;
  bool any() const { return dense_bytes + expert_bytes > 0; }
  double read(const MoeSpec& m, double tokens) const {
    const double routed = m.experts > 0 ? experts_touched(m, tokens) / double(m.experts) : 1.0;
    return dense_bytes + expert_bytes * routed;
  }
  double cpu_seconds(const MoeSpec& m, double tokens) const {
    return bandwidth > 0 ? read(m, tokens) / (bandwidth * memory_efficiency) : 0.0;
  }
  double copy_seconds() const { return pcie > 0 ? (dense_bytes + expert_bytes) / (pcie * pcie_efficiency) : 0.0; }
};

// The engine a forward runs in, as far as its speed goes: what it launches and how.
struct ServingEngine {
  Profile profile = Profile::none;
  std::optional<EngineVersion> version;  // --engine-version (llama.cpp: the build; Ollama's runner: the newest modelled)
  bool flash_attn = true;                // llama.cpp -fa
  std::int64_t ubatch = 512;             // llama.cpp -ub: prompt tokens per forward
  HostOffload offload;                   // llama.cpp: weights left in host memory
  bool eager_attention = false;          // HF: attn_implementation="eager" (the scores materialized)
  std::int64_t devices = 1;              // llama.cpp: the GPUs its split spreads the model over
  bool row_split = false;                // llama.cpp -sm row (else layer: the GPUs one after another)
  ServingEngine(Profile p = Profile::none) : profile(p) {}  // NOLINT: a profile alone names an engine
};

// llama.cpp over several GPUs (memory/llama_cpp.h LlamaCppSplitMode). Layer split: the graph is cut per device and
// the devices run one after another, each reading its own layers at its own bandwidth, so one token costs what one
// GPU holding everything would take (identical GPUs), plus a hand-over per device boundary: the hidden state copied
// to the next device and the scheduler's event wait (ggml_backend_sched_compute_splits), on PCIe GPUs without peer
// access staged through host memory. 250 µs, fitted on the fit half of XiongjieDai's multi-GPU tg rows
// (tests/data/throughput/published.jsonl; llama.cpp b2824–b2843 on RunPod, 2–8 RTX 3090/4090, 4 of seven
// professional GPUs): the median of (t_D − t_1) / (D − 1) over the 22 fit rows whose GPU and model have a one-GPU
// row, 252 µs (116–424 µs but two outliers), and the least-squares fit of all 57 fit rows' relative error, 254 µs.
// A prompt batch (n_batch 2048 tokens) is cut into ubatches that pipeline through the devices
// (llama_cpp_pipeline_share below). Row split runs each matrix product on every GPU at once on its rows: the reads
// and FLOPs split over the GPUs; its per-product synchronization is not modelled (no published point): an upper
// bound on its speed.
struct LlamaCppSplit {
  static constexpr double boundary_seconds = 250e-6;
  // Launches a CUDA stream queues before the host thread blocks: "about 1000 kernels" (a small kernel launched
  // 10,000 times: the first ~1000 launches return at once, each later one waits for a kernel to finish; NVIDIA
  // forum thread 68937 and Stack Overflow 53970187, 2018; the CUDA_SCALE_LAUNCH_QUEUES variable of llama.cpp PR
  // #19042 below scales it).
  static constexpr double launch_queue = 1000;
};


// A kernel costs GPU time beyond its bytes and FLOPs: its launch latency, its ramp and its tail, a fixed number of
// core clock cycles (so an A100 at 1.41 GHz pays 1.8× what an RTX 4090 at 2.52 GHz does: llama.cpp decodes
// Llama 3 8B Q4_K_M at 133 and 131 tokens/s on the two, XiongjieDai/GPU-Benchmarks-on-LLM-Inference, though the
// A100 has twice the bandwidth). Cycles fitted on the fit half of tests/data/throughput/published.jsonl: 7,260 for
// a kernel replayed from a CUDA graph (~2.9 µs at 2.5 GHz, against 1.0–1.8 µs measured for empty kernels on an
// H200: real kernels add their ramp and tail), 9,975 for one launched on its own (the host's launch cost overlaps
// the previous kernel), 11,000 for the serving engines' kernels (vLLM, SGLang: their per-layer count below is
// the coarser one); the first two are kept rounded, to 7,000 and 10,000.
struct KernelFloor {
  static constexpr double graph_cycles = 7000;
  static constexpr double launched_cycles = 10000;
  static constexpr double serving_cycles = 11000;
  // A device without a boost clock in the catalog: 1.8 GHz, the middle of the catalog's (1.41–2.62 GHz).
  static constexpr double default_clock_hz = 1.8e9;
};
inline double kernel_seconds(const Device& d, double cycles) {
  return cycles / d.boost_clock_hz.value_or(KernelFloor::default_clock_hz);
}

// What HF's eager forward costs the GPU beside its GEMMs, op by op (nothing is fused), read from transformers 5.17;
// elements of `act` bytes (bf16: 2).
// - MoE experts (integrations/moe.py grouped_mm_experts_forward, the default experts implementation): each of the
//   S = tokens × top-k (token, expert) pairs gets its own copy of the hidden state, sorted by expert; per pair the
//   gather, the sentinel masked_fill_, the grouped GEMMs' input and output, the routing-weight product, the second
//   masked_fill_, the unsort and the top-k sum move 13 hidden-wide rows, and the gate_up output, the activation and
//   product and the down GEMM's input 8 intermediate-wide ones; experts with biases (gpt-oss) gather a bias row per
//   pair and add it: 4 hidden-wide and 6 intermediate-wide more. Llama 4 (dense routing) repeats every token to
//   every expert (Llama4TextMoe): 6 hidden-wide and 8 intermediate-wide rows for each of tokens × experts.
// - Eager attention (attn_implementation="eager", gpt-oss's only one: _supports_sdpa = False) materializes the
//   scores of every head, query and key (EagerScores).
// - Gated DeltaNet's torch rule (GatedDeltaNetLoops): its loops' kernels, bytes and fp32 FLOPs.
// - The cache (cache_utils.py DynamicLayer.update): each decode step's torch.cat reads every layer's keys and values
//   and writes them one token longer, two passes over the cache beside the attention's read.
// - Every kernel an operator launches (HostFloor::kernel_share of host_forward_ops) also costs the GPU its launch,
//   ramp and tail (KernelFloor::launched_cycles): hidden while the host is the slower, not when the reads are as long.
struct EagerTraffic {
  static constexpr double moe_hidden_rows = 13, moe_inter_rows = 8, bias_hidden_rows = 4, bias_inter_rows = 6;
  static constexpr double dense_routing_hidden_rows = 6, dense_routing_inter_rows = 8;
  static constexpr double cache_cat_passes = 2;
};

// What eager attention costs per score element (one head, query and key), by the kernels transformers 5.17 runs:
// - eager_attention_forward (Llama and most models): QKᵀ written in bf16 (2 bytes), scaled (4), the mask added (4),
//   cast to fp32 for softmax(dtype=float32) (6), the softmax (8), cast back (6), read by P·V (2): 32 bytes.
// - gpt-oss's, with a sink logit per head: QKᵀ written (2), scaled (4), masked (4), the sink column concatenated
//   (4), the row max (2) and its subtraction (4), a bf16 softmax (4), read by P·V through a slice (2): 26 bytes.
// These kernels are bound by what the SMs issue, not by bandwidth: the mask is broadcast and gpt-oss's rows are one
// column longer than the keys (odd), so the mask add, the casts, the concatenation and the softmax run
// unvectorized with per-element index arithmetic. Measured with torch.profiler on an H200 (step_probe.py:
// tools/measure/probes/steps_p4.jsonl, steps_p3.jsonl; fit-half cases only), the score kernels of Llama 3.2 1B
// (batch 4, prompt 4096) and Qwen3 4B (8, 2048) took 11.9 and 11.3 ps an element, 1.7× their bytes at the H200's
// bandwidth; gpt-oss 20B's (4 × 2048, 8 × 2048) 21.4 and 17.9 ps. The same gpt-oss prefill took 788 ms on an H100,
// 7 % more than the H200's 737 ms with 30 % less bandwidth and the same SMs and clock: the time follows the SMs'
// rate. Expressed in the fp32 lanes' issue slots (dense fp32 peak, 67 TFLOP/s on both): 11.6 ps × 67e12 ≈ 780 and
// 19.65 ps × 67e12 ≈ 1,320 per element; a GPU pays the slower of that and the bytes at its bandwidth.
struct EagerScores {
  double bytes;     // per score element, all passes
  double lane_ops;  // fp32 issue slots per score element, all passes
};
inline EagerScores eager_scores(const ModelSpec& s) {
  return s.attn_sinks ? EagerScores{26, 1320} : EagerScores{32, 780};
}
struct EagerForward {
  double batch = 1, tokens = 1, context = 1;  // sequences, tokens each in this forward, keys each attends
  bool eager_attention = false;
  double act = 2;          // bytes an activation element
  double cache_bytes = 0;  // decode: the cache one sequence holds (all layers), which torch.cat copies
};
inline double eager_forward_seconds(const ModelSpec& s, const Device& d, const EagerForward& x, double bandwidth,
                                    Efficiency e) {
  const double T = x.batch * x.tokens, h = double(s.hidden), I = double(s.moe.intermediate);
  const double fp32 = d.peak.fp32.value_or(0) * e.compute;
  double bytes = x.batch * x.cache_bytes * EagerTraffic::cache_cat_passes, score_elements = 0;
  double seconds =
      host_forward_ops(s, x.tokens, x.eager_attention) * HostFloor::kernel_share *
      kernel_seconds(d, KernelFloor::launched_cycles);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    if (s.is_moe_layer(l)) {
      const double pairs = T * double(s.moe.dense_routing ? s.moe.experts : s.moe.experts_per_token);
      double hr = s.moe.dense_routing ? EagerTraffic::dense_routing_hidden_rows : EagerTraffic::moe_hidden_rows;
      double ir = s.moe.dense_routing ? EagerTraffic::dense_routing_inter_rows : EagerTraffic::moe_inter_rows;
      if (s.mlp_bias) hr += EagerTraffic::bias_hidden_rows, ir += EagerTraffic::bias_inter_rows;
      bytes += pairs * (hr * h + ir * I) * x.act;
    }
    if (torch_gated_deltanet(s, l)) {
      using G = GatedDeltaNetLoops;
      const double heads = x.batch * double(s.linear.value_heads), chunks = gdn_chunks(x.tokens);
      if (x.tokens <= 1) {
        bytes += heads * double(s.linear.key_head_dim * s.linear.value_head_dim) * 4.0 *
                 G::recurrent_state_passes;
        continue;
      }
      bytes += heads * chunks * (G::solve_floats * 4.0 + G::chunk_bytes);
      seconds += ((G::chunk - 1) * G::row_kernels + chunks * G::chunk_kernels) *
                 kernel_seconds(d, KernelFloor::launched_cycles);
      if (fp32 > 0) seconds += heads * chunks * G::fp32_flops / fp32;
    } else if (x.eager_attention && !s.is_linear_layer(l)) {
      score_elements += x.batch * double(s.heads) * x.tokens * x.context;
    }
  }
  const EagerScores sc = eager_scores(s);
  const double score_seconds = std::max(score_elements * sc.bytes * x.act / 2.0 / bandwidth,
                                        fp32 > 0 ? score_elements * sc.lane_ops / d.peak.fp32.value_or(0) : 0.0);
  return seconds + bytes / bandwidth + score_seconds;
}

// HF generate's decode loop swaps grouped_mm for batched_mm (generation/utils.py _optimize_model_for_decode, since
// transformers PR #43126, 2026-01: "much more performant on smaller inputs"), whose experts forward indexes
// gate_up_proj[expert_ids] and down_proj[expert_ids]: every (token, expert) pair copies its expert's weights, which
// torch.bmm then reads again. A decode step moves each pair's expert 3 times (read, copy written, read by the bmm)
// instead of reading each touched expert once: at batch 16 Phi-3.5-MoE's 2 of 16 experts cost 32 copies a layer.
// 16-bit and fp32 experts only (quantized ones run their own kernels); Llama 4's experts are not dispatched through
// it (Llama4TextExperts: one bmm over every expert).
inline bool batched_mm_decode(const ModelSpec& s, WeightFormat f) {
  return s.moe.experts > 0 && !s.moe.dense_routing &&
         (f == WeightFormat::bf16 || f == WeightFormat::fp16 || f == WeightFormat::fp32);
}
inline double batched_mm_decode_bytes(const ModelSpec& s, const ReadShares& r, double weight_bytes, double batch) {
  static constexpr double passes = 3;
  return weight_bytes_read(s, r, weight_bytes, 0) +
         passes * batch * double(s.moe.experts_per_token) * weight_bytes * r.routed / double(s.moe.experts);
}

// HF Llama 4 (Llama4TextMoe) runs every token through every routed expert and scales the outputs by the router's
// scores, zero for all but the top-k: its GEMMs do all experts' FLOPs, not the k a token is routed to (2·N counts).
inline double dense_routing_extra_n2(const ModelSpec& s) {
  if (!s.moe.dense_routing) return 0;
  return 2.0 * double(s.moe_layer_count()) * double(s.moe.experts - s.moe.experts_per_token) * 3.0 *
         double(s.hidden) * double(s.moe.intermediate);
}

// Kernels llama.cpp's CUDA back end fuses, by build (ggml_cuda_can_fuse in ggml-cuda.cu).
struct LlamaCppFusions {
  bool norm_mul = false;  // RMS_NORM and its weight's MUL in one kernel (PR #14800)
  bool adds = false;      // consecutive ADDs in one kernel: an MoE's k expert outputs summed at once (PR #15631)
  bool topk_moe = false;  // the router's softmax, top-k argsort and weights' get_rows in one kernel (PRs #16130, #16649)
};

// llama.cpp's CUDA back end by build, as far as its speed goes (ggml-org/ggml mirrors ggml-cuda.cu with the
// llama.cpp PR of each change; builds inferred from dates where no log names them). Builds of 2025 by date: b6301
// shipped by 2025-08-28 (xorbitsai/xllamacpp PR #77), b6709 on 2025-10-11 (mybigday/llama.rn PR #224), b7340 on
// 2025-12-09 (geerlingguy/ai-benchmarks #43): 9–11 builds a day.
struct LlamaCppCudaBuild {
  EngineVersion from;
  bool cuda_graphs;  // batch-1 decode replayed from a CUDA graph
  bool mmq;          // quantized prompt GEMMs in MMQ (int8 tensor cores) rather than an F16 copy for cuBLAS
  bool moe_tiles_by_ubatch;  // MoE MMQ picks its tile width for the whole ubatch, not for an expert's tokens
  LlamaCppFusions fused;
  const char* source;
};
inline constexpr std::array<LlamaCppCudaBuild, 8> llama_cpp_cuda_builds{{
    {{1015, 0, 0}, false, false, false, {},
     "GGUF builds: every kernel launched on its own; a quantized matrix is dequantized to F16 for cuBLAS per prompt ubatch"},
    {{2810, 0, 0}, true, false, false, {},
     "CUDA graphs for batch-1 decode (PR #6766, merged 2024-05-08; builds 2824–2843 of 2024-05-09/11 compile with "
     "GGML_CUDA_USE_GRAPHS in XiongjieDai's logs)"},
    {{3140, 0, 0}, true, true, false, {}, "MMQ by default for quantized prompts (PR #8075, 2024-06-24; build inferred by date)"},
    {{5250, 0, 0}, true, true, true, {},
     "one MMQ launch for all of a ubatch's experts (PR #13199 'batched+noncont MMQ, refactor bs>1 MoE code', 2025-05; "
     "build inferred by date, not verified)"},
    {{5970, 0, 0}, true, true, true, {true, false, false},
     "RMS norm fused with its weight (PR #14800 'CUDA: add fused rms norm', opened 2025-07-21; build inferred by date)"},
    {{6270, 0, 0}, true, true, false, {true, false, false},
     "MoE MMQ tiles sized for the tokens an expert can get (PR #15525 'MoE helper in device code, better tile sizes', "
     "opened 2025-08-23; build inferred by date)"},
    {{6320, 0, 0}, true, true, false, {true, true, false},
     "consecutive adds fused (PR #15631 'CUDA: fuse adds, fuse add with rms norm', reviewed 2025-08-29; its 'master' "
     "column is b6300's; build inferred by date)"},
    {{6790, 0, 0}, true, true, false, {true, true, true},
     "the MoE router's softmax, top-k and get_rows fused (PR #16130, opened 2025-09-20, for softmax-then-top-k "
     "routers; PR #16649, opened 2025-10-18, for gpt-oss's top-k-then-softmax; build inferred by date)"},
}};
inline const LlamaCppCudaBuild& llama_cpp_cuda_build(const std::optional<EngineVersion>& v) {
  const LlamaCppCudaBuild* row = release_row(llama_cpp_cuda_builds, v.value_or(llama_cpp_cuda_builds.back().from));
  return row ? *row : llama_cpp_cuda_builds.front();
}

// ggml's quantized weight types (GGUF K-quants and the like), as against 16- and 32-bit floats.
inline bool llama_cpp_quantized(WeightFormat f) {
  return f != WeightFormat::fp16 && f != WeightFormat::bf16 && f != WeightFormat::fp32;
}

// Kernels one llama.cpp decoder layer launches at decode, counted in its graph (src/llama-model.cpp build_llama
// through llm_graph build_attn / build_ffn / build_moe_ffn): attention norm and its weight (2), q, k and v (3), two
// RoPEs, the K and V stores (2), flash attention (1; without it K·Q, the masked softmax, ·V and a copy: 4), o (1),
// the residual add (1), FFN norm and weight (2), the gated FFN's gate, up, SiLU, product and down (5), the residual
// add (1): 20, 23 without flash attention. Quantized weights add the q8_1 quantization of the activations before
// each of the 7 matrix-vector products (MMVQ). An MoE layer replaces the FFN's 5 by the router (1), its softmax
// (1), the top-k argsort and view (2), the weights' get_rows (1), their normalisation (2), three mul_mat_id (3) with
// their quantizations, the GLU (2), the weights' product (1) and k − 1 adds summing the experts; shared experts add
// a gated FFN. Builds fuse some of these (LlamaCppFusions): each norm with its weight (one kernel fewer, twice a
// layer), the k − 1 adds into one, the router's softmax, argsort, view and get_rows into one (three fewer).
inline double llama_cpp_layer_kernels(const ModelSpec& s, std::int64_t layer, bool quantized, bool flash_attn,
                                      const LlamaCppFusions& fused = {}) {
  const double q = quantized ? 1.0 : 0.0;
  double k = 20 + (flash_attn ? 0 : 3) + 7 * q - (fused.norm_mul ? 2 : 0);
  if (s.is_moe_layer(layer)) {
    const double adds = double(s.moe.experts_per_token - 1);
    k += -5 - 3 * q + 13 + (fused.adds ? std::min(adds, 1.0) : adds) + 3 * q - (fused.topk_moe ? 3 : 0);
    if (s.moe.shared_experts > 0) k += 5 + 3 * q;
  }
  return k;
}
inline double llama_cpp_step_kernels(const ModelSpec& s, bool quantized, bool flash_attn,
                                     const LlamaCppFusions& fused = {}) {
  double k = fused.norm_mul ? 3 : 4;  // output norm, its weight, the lm_head and its quantization
  for (std::int64_t l = 0; l < s.layers; ++l) k += llama_cpp_layer_kernels(s, l, quantized, flash_attn, fused);
  return k;
}

// Launches a prompt ubatch puts in a device's CUDA stream for one layer: a decode step's kernels
// (llama_cpp_layer_kernels) plus what cuBLAS costs around its GEMMs. Weight products over MMQ_MAX_BATCH_SIZE tokens
// (32) ran cuBLAS (ggml-cuda.cu ggml_cuda_op_mul_mat_cublas) for 16-bit weights, and for quantized ones before MMQ
// became the default: the activations converted to F16 and the F16 result back to F32 around each GEMM, two
// launches more (a quantized matrix's dequantization to F16 takes the place of the q8_1 quantization). Without
// flash attention K·Q and ·V are batched cuBLAS GEMMs (ggml_cuda_mul_mat_batched_cublas): the F16 copy of the
// activations, a kernel writing the per-head pointers (grouped-query heads broadcast: cublasGemmBatchedEx) and the
// F32 result, three more each. Counted for q, k, v, o and a dense FFN's gate, up and down; MoE experts as at decode.
inline double llama_cpp_prompt_layer_launches(const ModelSpec& s, std::int64_t layer, bool quantized,
                                              const ServingEngine& e) {
  static constexpr std::int64_t mmq_max_batch = 32;
  const LlamaCppCudaBuild& build = llama_cpp_cuda_build(e.profile == Profile::ollama ? std::nullopt : e.version);
  double k = llama_cpp_layer_kernels(s, layer, quantized, e.flash_attn, build.fused);
  const bool cublas = !quantized || (!build.mmq && e.ubatch > mmq_max_batch);
  if (cublas) k += 2.0 * (s.is_moe_layer(layer) ? 4.0 : 7.0);
  if (!e.flash_attn && !s.is_linear_layer(layer)) k += 2.0 * 3.0;
  return k;
}
// The launches of the busiest device, its layers as load_tensors places them (llama_cpp_layer_devices, equal shares:
// Llama 3 70B on 4 GPUs 21, 20, 20 and 19 layers, the output layer on the last).
inline double llama_cpp_device_launches(const ModelSpec& s, WeightFormat f, const ServingEngine& e) {
  const bool quantized = llama_cpp_quantized(f);
  const std::int64_t D = std::max<std::int64_t>(e.devices, 1);
  const std::vector<int> dev = llama_cpp_layer_devices(s.layers, s.layers + 1, llama_cpp_split_points({}, D));
  std::vector<double> k(static_cast<std::size_t>(D), 0.0);
  for (std::int64_t l = 0; l < s.layers; ++l)
    k[static_cast<std::size_t>(dev[static_cast<std::size_t>(l)])] += llama_cpp_prompt_layer_launches(s, l, quantized, e);
  return *std::max_element(k.begin(), k.end());
}

// A prompt batch (n_batch 2048 tokens) is cut into ubatches that pipeline through the layer split's devices:
// ggml_backend_sched_compute_splits queues each device's part of a ubatch on its stream, waiting on an event for the
// previous device's output, and goes on to the next ubatch without waiting (n_copies 4 in flight:
// LlamaCppProfile::sched_copies; the input copies of ubatch u wait for ubatch u − 4 on that device). With unlimited
// queues U ubatches over D devices take U + D − 1 stages of 1/D of a ubatch's time instead of U·D. But one host
// thread queues every device's launches, and a stream holds about LlamaCppSplit::launch_queue of them: a device
// whose part of a ubatch has more launches than its queue holds (`queue` below 1, in stages) blocks the host until it
// has run all but a queue's worth, so the host queues the next ubatch's first stage only as the last device nears
// its end; with room for one stage but not two it still blocks on the later devices, whose queued stages wait for
// the pipeline to fill. llama.cpp PR #19042 (2026-01) names this: "With pipeline parallelism, during prompt
// processing, the CPU-side CUDA command buffer gets full, stalling the CPU ... resulting in bubbles in the GPU
// timeline" (fixed by CUDA_SCALE_LAUNCH_QUEUES=4x; reverted by PR #19227 and left as advice). Returns the stages,
// of one device's share of a ubatch each, until the last device ends: every stage takes the same time, the queue
// drains continuously. XiongjieDai's b2824–b2843 rows (cuBLAS prompt GEMMs, no flash attention): Llama 3 70B's 21
// layers on the first of 4 GPUs queue 1,050 launches in Q4_K_M, 903 in F16, so only F16 pipelines there (the
// README's pp1024, 2 ubatches, on 4 GPUs: 1.42–1.55× pp512's rate in F16, 1.6 modelled; 1.07–1.16× in Q4_K_M, the
// A100 PCIe's 1.27 aside, 1.13 modelled; on 2 GPUs, 41 layers: 1.08 and 1.10, 1.14 modelled), as do Q4_K_M on 6
// and 8 GPUs (700 and 550 launches: 1.62× and 1.64×, 1.71 and 1.78 modelled) and 8B on 2 to 8 (850 to 250).
// A single GPU runs pp1024 at 0.97× its pp512 rate (the longer attention). 1,050 against about 1,000 is close (the
// scores of published.jsonl's multi-GPU rows barely move for a queue of 950 to 1,024), as the A100 PCIe box shows.
inline double llama_cpp_pipeline_stages(std::int64_t ubatches, std::int64_t devices, double queue) {
  const std::size_t U = std::size_t(std::max<std::int64_t>(ubatches, 1)), D = std::size_t(std::max<std::int64_t>(devices, 1));
  const std::size_t copies = std::size_t(LlamaCppProfile::sched_copies);
  std::vector<double> start(U * D), end(U * D);  // stage (u, d) at u·D + d
  double host = 0;  // when the host thread is free to queue the next stage
  for (std::size_t u = 0; u < U; ++u)
    for (std::size_t d = 0; d < D; ++d) {
      if (u >= copies) host = std::max(host, end[(u - copies) * D + d]);
      const double s = std::max({host, u > 0 ? end[(u - 1) * D + d] : 0.0, d > 0 ? end[u * D + d - 1] : 0.0});
      start[u * D + d] = s;
      end[u * D + d] = s + 1;
      // The host has queued this stage's last launch once the device has done all but `queue` stages of its work.
      const double owed = double(u + 1) - queue;
      if (owed > 0) {
        const std::size_t j = std::size_t(std::ceil(owed)) - 1;
        host = std::max(host, start[j * D + d] + (owed - double(j)));
      }
    }
  return end.back();
}
// A prompt's time under the layer split over its time on one GPU: batches of n_batch tokens, each pipelined on its
// own (a decode call's ubatches), the stages counted in D-ths of a ubatch.
inline double llama_cpp_pipeline_share(const ModelSpec& s, WeightFormat f, double tokens, const ServingEngine& e) {
  if (e.devices <= 1 || e.row_split || e.offload.any()) return 1.0;
  const double D = double(e.devices), ub = double(std::max<std::int64_t>(e.ubatch, 1));
  const double n_batch = double(LlamaCppProfile::n_batch);
  const double queue = LlamaCppSplit::launch_queue / llama_cpp_device_launches(s, f, e);
  const double per_batch = std::ceil(std::min(n_batch, tokens) / ub);
  const double batches = std::ceil(std::max(tokens, 1.0) / n_batch);
  const double last = std::ceil((std::max(tokens, 1.0) - (batches - 1) * n_batch) / ub);
  const double ubatches = (batches - 1) * per_batch + last;
  const double stages = (batches - 1) * llama_cpp_pipeline_stages(std::int64_t(per_batch), e.devices, queue) +
                        llama_cpp_pipeline_stages(std::int64_t(last), e.devices, queue);
  return stages / D / ubatches;
}

// What a step costs besides its bytes and FLOPs, by engine. vLLM and SGLang replay each decode step from a CUDA
// graph: ~11 kernels a decoder layer (fused add-and-norm, qkv, rotary, cache store, attention and its split-KV
// combine, o, add-and-norm, gate-up, SiLU-and-mul, down), and between steps the host schedules, samples and
// prepares inputs while the GPU waits: 1.4 ms a step fitted on vLLM 0.6.3's A100 rows of the Qwen2.5 speed page
// (fit half; V0, sequential with the GPU; V1 releases are taken to pay the same: not measured), 0.6 ms on SGLang
// 0.4.6's H20 rows of the Qwen3 speed page (fit half, once their FP8 and AWQ GEMMs are tiled (GemmTile): 0.6 gives
// the half's lowest worst error, 35 %, its median 6.8 % within 0.2 of the lowest; with those GEMMs read-bound it
// was 1.0 ms; the benchmark's --enable-mixed-chunk keeps the scheduler sequential, not overlapped). Tensor parallelism adds two all-reduces a layer at the latency of a
// small message: 30 µs fitted on the fit half's TP 2 and 4 A100 rows. llama.cpp's host builds and launches the
// graph while the GPU runs: only its kernels count.
struct EngineStep {
  double host = 0;           // sequential host time per forward
  double decode_kernels = 0;  // kernel floor of one decode step
  double prompt_kernels = 0;  // kernel floor of one prompt forward (launched one by one)
  double collectives = 0;     // tensor-parallel all-reduces per forward
  static constexpr double vllm_host_seconds = 1.4e-3, sglang_host_seconds = 0.6e-3;
  static constexpr double serving_layer_kernels = 11, allreduce_seconds = 30e-6;
  // vLLM's MoE block in place of the gated MLP's 3 kernels (gate-up, SiLU-and-mul, down), counted in
  // model_executor/layers/fused_moe/fused_moe.py (fused_moe in v0.4.x, fused_experts since; the same launches): the
  // router's GEMM, topk_softmax, moe_align_block_size, the gate-up fused_moe_kernel, silu_and_mul, the down
  // fused_moe_kernel and the sum of the k outputs: 7. A shared expert adds its own gate-up, SiLU-and-mul and down
  // and the add onto the routed sum: 4; Qwen2-MoE's sigmoid gate on it (models/qwen2_moe.py
  // Qwen2MoeSparseMoeBlock.forward: shared_expert_gate, sigmoid, the product): 3 more. SGLang's fused_moe_triton
  // launches the same, but counting them there moves its TP 8 Qwen3-235B-A22B rows on H20s from +3..+6 % to
  // +17..+23 % (its TP 1 Qwen3-30B-A3B rows from −19..−34 % to −3..−24 %): those rows pay 94 × 2 all-reduces at
  // the 30 µs fitted on vLLM's A100 rows, where SGLang's custom all-reduce over NVSwitch is faster and not modelled,
  // so SGLang keeps the dense count until that is.
  static constexpr double moe_block_kernels = 7, dense_mlp_kernels = 3, shared_expert_kernels = 4,
                          shared_gate_kernels = 3;
  // vLLM before 0.5.0 ran the tensor-parallel workers of one node as Ray actors and scheduled each a remote task
  // every step (executor/ray_gpu_executor.py _run_workers at v0.4.2: execute_method.remote per worker, the driver's
  // own step, then ray.get); PR #4894 (in 0.5.0) made the workers loop on the driver's broadcast instead. Its
  // predecessor PR #3763 measured the cost on 2 × A100 80GB: Llama-2-7B, one request of 2,000 tokens at TP 2,
  // 24.2 s with the per-step tasks and 20.2 s without, 2.0 ms a step (and ~5 % of a Llama-2-70B step at TP 4).
  // What Ray costs beyond that against multiprocessing (17.0 s there) is not modelled.
  static constexpr double vllm_ray_task_seconds = 2.0e-3;
  static constexpr EngineVersion vllm_worker_loop{0, 5, 0};
};
// Kernels a serving engine's decoder layer launches (EngineStep's counts).
inline double serving_layer_kernels(const ModelSpec& s, std::int64_t layer, Profile engine) {
  double k = EngineStep::serving_layer_kernels;
  if (engine != Profile::vllm || !s.is_moe_layer(layer)) return k;
  k += EngineStep::moe_block_kernels - EngineStep::dense_mlp_kernels;
  if (s.moe.shared_experts > 0) k += EngineStep::shared_expert_kernels;
  if (s.moe.shared_gate) k += EngineStep::shared_gate_kernels;
  return k;
}
inline EngineStep engine_step(const ModelSpec& s, const Device& d, WeightFormat f, const ServingEngine& e, std::int64_t tp) {
  EngineStep c;
  const double L = double(s.layers);
  if (e.profile == Profile::vllm || e.profile == Profile::sglang) {
    double kernels = 0;
    for (std::int64_t l = 0; l < s.layers; ++l) kernels += serving_layer_kernels(s, l, e.profile);
    c.host = e.profile == Profile::vllm ? EngineStep::vllm_host_seconds : EngineStep::sglang_host_seconds;
    if (e.profile == Profile::vllm && tp > 1 && e.version && *e.version < EngineStep::vllm_worker_loop)
      c.host += EngineStep::vllm_ray_task_seconds;
    c.decode_kernels = kernels * kernel_seconds(d, KernelFloor::serving_cycles);
    c.prompt_kernels = kernels * kernel_seconds(d, KernelFloor::launched_cycles);
    c.collectives = tp > 1 ? 2.0 * L * EngineStep::allreduce_seconds : 0.0;
  } else if (llama_cpp_engine(e.profile)) {
    const bool quantized = llama_cpp_quantized(f);
    const LlamaCppCudaBuild& build = llama_cpp_cuda_build(e.profile == Profile::ollama ? std::nullopt : e.version);
    const double kernels = llama_cpp_step_kernels(s, quantized, e.flash_attn, build.fused);
    const bool graphs = build.cuda_graphs;
    c.decode_kernels = kernels * kernel_seconds(d, graphs ? KernelFloor::graph_cycles : KernelFloor::launched_cycles);
    c.prompt_kernels = kernels * kernel_seconds(d, KernelFloor::launched_cycles);
  }
  return c;
}

// A tensor-core GEMM computes whole tiles: a decode batch smaller than a tile's rows costs the tile's FLOPs. The
// serving engines' 16-bit GEMMs on Hopper run wgmma, whose smallest instruction is 64 rows (cuBLAS and CUTLASS keep
// 64-row tiles for a batch of 1); their fused-MoE kernels (vLLM and SGLang fused_moe.py get_default_config) block
// each expert's tokens by 16 at small batch. A 64-row tile does 64 FLOPs for each 16-bit weight byte it reads:
// hidden under the read on GPUs with more FLOP/s per byte/s (an H100: 295), not on the H20 (148 TFLOP/s for
// 4.0 TB/s: 37), where Qwen3-8B to 32B in bf16 decode a token in the time of 2·N·64 FLOPs, 1.35 TB/s of weights
// (the Qwen3 speed page's SGLang rows). FP8 linears block M by 64 too, at the FP8 rate: Qwen3's block-FP8 ones run
// DeepGEMM (on by default on sm90 from SGLang 0.4.6, PR #5628) or w8a8_block_fp8_matmul, whose default config (no
// tuned file for Qwen3's shapes) has BLOCK_SIZE_M 64 and one warpgroup (vLLM fp8_utils.py, SGLang fp8_kernel.py);
// per-channel FP8 runs CUTLASS scaled_mm, whose smallest tiles are 64 rows.
// 4-bit AWQ and GPTQ checkpoints run Marlin (vLLM's awq_marlin and gptq_marlin on sm80 and newer; the Qwen3 speed
// page runs SGLang 0.4.6 with --quantization awq_marlin): 16-row tiles of Ampere's mma.sync m16n8k16, dequantizing
// the 4-bit weights in registers, 64 FLOPs for each weight byte at batch 1 (2·16 per half-byte weight), under the
// read on Ampere and Ada but above it on the H20. Hopper's full tensor rate needs wgmma: its mma.sync tops out near
// 63 % of the peak (Hazy Research, "GPUs Go Brrr", 2024-05-12: "without [WGMMA] the GPU seems to top out around 63%
// of its peak utilization"). The lm_head stays 16-bit in these checkpoints and runs as a 64-row tile.
struct GemmTile {
  static constexpr double rows = 64, moe_rows = 16, marlin_rows = 16;
  // Share of the peak such a 64-row GEMM reaches: 0.7, fitted on the fit half's H20 bf16 rows (0.65–0.75 within a
  // point of each other), between prefill's 0.5 and the ~0.8 of 8192³ GEMMs. Marlin's tiles are taken at the same.
  static constexpr double efficiency = 0.7;
  static constexpr double hopper_mma_sync_share = 0.63;  // "GPUs Go Brrr" above
  // Marlin streams the 4-bit weights at a lower share of the bandwidth than the 16-bit GEMV does at batch 1: 0.83
  // of it (0.75 of the peak with Efficiency::memory's 0.90), fitted on the fit half's vLLM 4-bit rows
  // (tests/data/throughput/published.jsonl, the Qwen2.5 speed page's A100 AWQ and GPTQ-Int4 rows, awq_marlin and
  // gptq_marlin under vLLM 0.6.3): 0.75–0.78 of the peak minimise their median and rms error (3.65 %, 12.0 %, from
  // 5.0 %, 12.8 % at 0.90). Marlin's own benchmark agrees in direction: batch 1 at 1,159 GB/s, 3.12× the fp16
  // matmul of the same matrix, which reads about 4× the bytes at 1,485 GB/s: 0.78 of its rate (vLLM PR #2497, comment of
  // 2024-01-24, IST-DASLab/marlin bench.py).
  static constexpr double marlin_read_share = 0.83;
};
enum class DecodeGemmKernel { none, tiled16bit, tiled_fp8, marlin };
// Marlin from sm80 (vLLM marlin_utils.py check_marlin_supported); older GPUs run AWQ's and GPTQ's own kernels,
// taken at 2·N per token.
inline DecodeGemmKernel decode_gemm_kernel(Profile engine, WeightFormat f, const Device& d) {
  if (engine != Profile::vllm && engine != Profile::sglang) return DecodeGemmKernel::none;
  if (f == WeightFormat::bf16 || f == WeightFormat::fp16) return DecodeGemmKernel::tiled16bit;
  if (f == WeightFormat::fp8 && d.peak.fp8) return DecodeGemmKernel::tiled_fp8;  // else FP8 Marlin, 2·N as before
  const bool four_bit = f == WeightFormat::awq_int4 || f == WeightFormat::gptq_int4;
  return four_bit && d.vendor == "NVIDIA" && tensor_generation(d).sm80 ? DecodeGemmKernel::marlin
                                                                       : DecodeGemmKernel::none;
}
// Hopper told apart by the catalog as vllm.h mxfp4_backend does: HBM with FP8 tensor cores but not FP4.
inline double mma_sync_share(const Device& d) {
  const bool hbm = d.memory_type.find("HBM") != std::string::npos;
  return d.vendor == "NVIDIA" && hbm && d.peak.fp8 && !d.peak.fp4 ? GemmTile::hopper_mma_sync_share : 1.0;
}
// The weights' FLOPs of one decode step of `batch` tokens (n2 = 2·N per token), tiles of `rows` counted whole.
inline double tiled_decode_flops(const ModelSpec& s, double n2, double batch, double rows = GemmTile::rows) {
  if (s.moe.experts <= 0 || s.moe.dense_routing) return std::max(batch, rows) * n2;
  const double per_expert = 2.0 * 3.0 * double(s.hidden) * double(s.moe.intermediate);  // gate, up, down
  const double layers = double(s.moe_layer_count()), k = double(s.moe.experts_per_token);
  const double touched = experts_touched(s.moe, batch);
  return std::max(batch, rows) * (n2 - layers * k * per_expert) +
         layers * touched * std::max(batch * k / touched, GemmTile::moe_rows) * per_expert;
}
// The decode GEMMs' time as FLOPs at `rate_share` of the peak of the format's cores (serving_peak: FP8's for fp8, else
// 16-bit), the rate serving_throughput divides by: the tiles' FLOPs at GemmTile::efficiency, Marlin's further at the
// device's mma.sync share. Other kernels: 2·N per token.
inline double decode_gemm_flops(const ModelSpec& s, const Device& d, DecodeGemmKernel k, double n2, double batch,
                                double rate_share) {
  const double scale = rate_share / GemmTile::efficiency;
  if (k == DecodeGemmKernel::tiled16bit) return tiled_decode_flops(s, n2, batch) * scale;
  if (k == DecodeGemmKernel::none) return batch * n2;
  const double head = 2.0 * double(s.vocab) * double(s.hidden);  // the 16-bit lm_head
  if (k == DecodeGemmKernel::tiled_fp8) {  // rate is the FP8 peak's: the 16-bit head costs fp8 / 16-bit peak more
    const double fp8 = d.peak.fp8.value_or(1), sixteen = d.peak.bf16 ? *d.peak.bf16 : d.peak.fp16.value_or(fp8);
    return (tiled_decode_flops(s, n2 - head, batch) + std::max(batch, GemmTile::rows) * head * fp8 / sixteen) * scale;
  }
  return (tiled_decode_flops(s, n2 - head, batch, GemmTile::marlin_rows) / mma_sync_share(d) +
          std::max(batch, GemmTile::rows) * head) * scale;
}

struct Throughput {
  Seconds prefill{0};            // the whole batch's prompts (time to first token)
  Seconds decode_step{0};        // one token for every sequence
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;  // aggregate over the batch
  bool decode_compute_bound = false;
  bool decode_host_bound = false;  // the host issues the step slower than the GPU runs it (eager generate)
  bool decode_overhead_bound = false;  // the engine's per-step costs (EngineStep) outweigh the step's reads
  double decode_weight_bytes = 0;  // weights a decode step reads (an MoE's touched experts only)
  Seconds decode_overhead{0};      // of decode_step: kernels, the host's step and all-reduces (EngineStep)
  Seconds decode_host_memory{0};   // of decode_step: the CPU reading the weights left in host memory (HostOffload)
  bool decode_host_memory_bound = false;  // that outweighs the GPU's part
  FlopRate peak{0};
  std::string peak_format;
  Efficiency efficiency;
};

// The format whose tensor-core rate the GEMMs run at: fp8 weights on fp8 cores where the device has them,
// everything else dequantised to 16 bit (or fp32 for fp32 models).
inline std::pair<std::optional<double>, std::string> serving_peak(const Device& d, WeightFormat f) {
  if ((f == WeightFormat::fp8 || f == WeightFormat::nvfp4 || f == WeightFormat::mxfp4) && d.peak.fp8) return {d.peak.fp8, "fp8"};
  if (f == WeightFormat::fp32) return {d.peak.fp32, "fp32"};
  return {d.peak.bf16 ? d.peak.bf16 : d.peak.fp16, "bf16"};
}

// The cache length decode reads on average over a generation of new_tokens that ends at `context` tokens.
inline double average_decode_context(double context, double new_tokens) {
  return std::max(1.0, context - new_tokens / 2.0);
}
// Of a sequence of `prompt` tokens generating `new_tokens`: the cache it holds is its own, whatever the engine
// reserves (--context is vLLM's max_model_len, SGLang's context_length, llama.cpp's n_ctx).
inline double sequence_decode_context(double prompt, double new_tokens, double context) {
  return average_decode_context(std::min(context, prompt + new_tokens), new_tokens);
}

// A decode step's memory time: the weights it reads (weight_bytes_read) and every sequence's cache (`context`
// tokens) once, at the share `e.memory` of the device's bandwidth. Alone (a device with no compute rate) it is the step's lower bound.
inline double decode_read_seconds(const Device& d, double weight_bytes, double kv_bytes_per_token, std::int64_t batch,
                                  double context, Efficiency e) {
  return (weight_bytes + double(batch) * context * kv_bytes_per_token) / (d.memory_bandwidth.in(unit::bytes_per_s) * e.memory);
}

// The shape of one forward's work, shared by the prefill models below.
struct ForwardShape {
  double n2 = 0;    // FLOPs per token of the weights' matmuls, 2·N (N: the active multiplying parameters)
  double qdim = 0;  // heads × head_dim
  double layers = 0;
  double routed_n2 = 0;  // of n2, the routed experts' (k of them a token in each MoE layer)
};

// llama.cpp's prompt: ubatches of -ub tokens, each a forward over every layer. A ubatch of one token is a decode
// step (matrix-vector kernels, the weights read once per token). Larger ones run the GEMMs at half the tensor
// rate of llama_cpp_tensor_rate: 0.5 fitted on the fit half's pp rows (GPUs from the RTX 3070 to the H100; 0.525
// before the measured rates capped it; with them 0.5 gives the fit half's pp rows a median |error| of 12.4 %,
// 0.475 and 0.525 13.1 and 13.4 %). Before MMQ became the default a quantized matrix was first dequantized to F16 (written and read again,
// 4 bytes a weight) per ubatch; MMQ is taken at the same rate (not measured apart). Without flash attention each
// ubatch writes the f32 scores of all its cached keys, and the softmax reads and writes them (16 bytes a score,
// 17.3 fitted), and computes the masked half too.
// llama.cpp's MMQ runs all of a ubatch's routed experts in one launch, each expert's tokens in column tiles of
// mmq_x; builds from PR #13199 to PR #15525 chose mmq_x to cover the ubatch's tokens (ncols_max: all of them could
// go to one expert), the widest tile for any ubatch of 128 tokens or more, so an expert's few tokens pay a whole
// tile (PR #15525: "a tighter bound for the maximum number of columns ... so there is less waste"). 128 is MMQ's
// widest tile on GPUs with int8 MMA (ggml-cuda/mmq.cuh get_mmq_x_max_host, Turing and later); widths are multiples
// of 8. Returns the routed experts' GEMM FLOPs of a ubatch of `ub` tokens as computed, padding included, over
// their useful FLOPs (1 where the tiles fit): the `touched` experts share ub·k (token, expert) pairs evenly.
inline double moe_mmq_tile_waste(const MoeSpec& m, double ub) {
  static constexpr double widest = 128, granule = 8;
  if (m.experts <= 0 || m.dense_routing || ub <= 1) return 1.0;
  const double tile = std::min(widest, std::ceil(ub / granule) * granule);
  const double touched = experts_touched(m, ub), per_expert = ub * double(m.experts_per_token) / touched;
  return std::ceil(per_expert / tile) * tile / per_expert;
}

// The tensor rate ggml's cuBLAS GEMMs (CUBLAS_COMPUTE_16F) start from: the fp16-accumulate peak where the GPU has a
// faster one (GeForce), else the dense 16-bit peak, but no more than the catalog's measured matmul rate where it
// has one (matmul_burst_efficiency, else matmul_efficiency): a GPU held by its power limit below the clock its
// datasheet counts the peak at (the H100 PCIe, a 300–350 W board: 65.6 % of its peak in a short bf16 burst, against
// 80 % on the 700 W H100 SXM with the same script) does not reach the peak in any GEMM.
inline double llama_cpp_tensor_rate(const Device& d) {
  const double peak = d.fp16_accumulate.fp16.value_or(d.peak.fp16.value_or(d.peak.bf16.value_or(0)));
  const std::optional<double> measured = d.matmul_burst_efficiency ? d.matmul_burst_efficiency : d.matmul_efficiency;
  const double peak16 = d.peak.bf16.value_or(d.peak.fp16.value_or(0));
  return measured ? std::min(peak, *measured * peak16) : peak;
}

inline double llama_cpp_prompt_seconds(const ModelSpec& s, const Device& d, WeightFormat f, const ServingEngine& e,
                                       const ForwardShape& w, double batch, double prompt, double kv_bytes_per_token,
                                       double read_one, double bandwidth, const EngineStep& cost) {
  const double tokens = batch * prompt;
  const double ub = std::min(double(e.ubatch), tokens), ubatches = std::ceil(tokens / ub);
  const HostOffload& host = e.offload;
  if (ub <= 1)  // token by token, each a decode step: the weights each time, the cache growing to the prompt
    return tokens * (cost.decode_kernels + (read_one - host.read(s.moe, 1)) / bandwidth + host.cpu_seconds(s.moe, 1)) +
           batch * prompt * prompt / 2.0 * kv_bytes_per_token / bandwidth;
  static constexpr double gemm_share = 0.5, score_bytes = 16;
  const double rate = llama_cpp_tensor_rate(d) * gemm_share;
  if (!(rate > 0)) return 0;
  // Keys each prompt token meets, over its sequence: causal ½·P² with flash attention; without it every ubatch
  // scores all keys cached so far and its own, ½·P² + ½·P·ub.
  const double pairs = batch * (e.flash_attn ? prompt * prompt / 2.0 : prompt * prompt / 2.0 + prompt * ub / 2.0);
  double t = ubatches * cost.prompt_kernels + (w.n2 * tokens + 4.0 * w.layers * w.qdim * pairs) / rate;
  if (!e.flash_attn) t += w.layers * double(s.heads) * pairs * score_bytes / bandwidth;
  const bool quantized = llama_cpp_quantized(f);
  const LlamaCppCudaBuild& build = llama_cpp_cuda_build(e.profile == Profile::ollama ? std::nullopt : e.version);
  if (quantized && !build.mmq)
    t += ubatches * (w.n2 / 2.0) * 4.0 / bandwidth;
  if (quantized && build.mmq && build.moe_tiles_by_ubatch)  // the routed experts' padding (moe_mmq_tile_waste)
    t += tokens * w.routed_n2 * (moe_mmq_tile_waste(s.moe, ub) - 1.0) / rate;
  if (host.any())
    t += ubatches * (ub >= double(LlamaCppProfile::op_offload_min_batch) ? host.copy_seconds() : host.cpu_seconds(s.moe, ub));
  return t;
}

// batch sequences, prompt tokens each, the cache at `context` tokens on average during decode; `weight_bytes` and
// `kv_bytes_per_token` per GPU, tp GPUs each doing 1/tp of the FLOPs. Decode: the weights the batch's tokens use
// and every sequence's cache read once, 2·N (active) + 4·L·context·qdim FLOPs per sequence, never faster than an
// eager host issues it, plus the engine's per-step costs (EngineStep). Prefill: 2·N per token + causal attention,
// QKᵀ and P·V at 2·p²·qdim per layer (halved by the mask); serving engines add their step costs and read the
// weights at least once; llama.cpp by ubatch (llama_cpp_prompt_seconds).
inline Throughput serving_throughput(const ModelSpec& s, const Device& d, WeightFormat f, double weight_bytes,
                                     double kv_bytes_per_token, std::int64_t batch, std::int64_t prompt,
                                     double context, std::int64_t tp, Efficiency e, const ServingEngine& engine = {}) {
  if (!(e.memory > 0 && e.memory <= 1) || !(e.compute > 0 && e.compute <= 1))
    throw InputError("efficiency factors must be in (0, 1]");
  const auto [peak, name] = serving_peak(d, f);
  if (!peak) throw InputError(d.id + " has no peak rate for " + std::string(name));
  Throughput t;
  t.peak = FlopRate(*peak);
  t.peak_format = name;
  t.efficiency = e;
  const TrainingFlops per = training_flops(s, Tokens(1), 1, Recompute::none);
  ForwardShape w;
  w.n2 = 2.0 * double(per.matmul_params.in(unit::params)) +
         (engine.profile == Profile::pytorch ? dense_routing_extra_n2(s) : 0.0);
  w.qdim = double(s.heads) * double(s.head_dim);
  w.layers = double(s.layers);
  w.routed_n2 = 2.0 * 3.0 * double(s.hidden) * double(s.moe.intermediate) * double(s.moe.experts_per_token) *
                double(s.moe_layer_count());  // gate, up and down of each routed expert
  // llama.cpp: its layer split reads every byte at one GPU's bandwidth and rate in turn (LlamaCppSplit); its row
  // split cuts each GPU's share of the matrices. The weights it is given are the whole model's.
  const bool llama = llama_cpp_engine(engine.profile);
  const std::int64_t par = llama ? (engine.row_split ? engine.devices : 1) : tp;
  if (llama) weight_bytes /= double(par);
  const double b = double(batch), p = double(prompt), rate = double(par) * *peak * e.compute;
  const double bandwidth = d.memory_bandwidth.in(unit::bytes_per_s) * e.memory;
  const double host = host_forward_seconds(s, engine.profile, 1, engine.eager_attention);
  // HF eager: its unfused ops beside the GEMMs (eager_forward_seconds), in the activation dtype.
  const bool eager = engine.profile == Profile::pytorch;
  const double act = f == WeightFormat::fp32 ? 4.0 : 2.0;
  const EngineStep cost = engine_step(s, d, f, engine, tp);
  const ReadShares shares = read_shares(s, f);
  const double prefill_flops = b * (w.n2 * p + 2.0 * w.layers * p * p * w.qdim);
  double prefill = prefill_flops / rate;
  if (eager)
    prefill = std::max(prefill + eager_forward_seconds(s, d, {b, p, p, engine.eager_attention, act}, bandwidth, e),
                       host_forward_seconds(s, engine.profile, p, engine.eager_attention));
  if (engine.profile == Profile::vllm || engine.profile == Profile::sglang)
    prefill = cost.host + cost.prompt_kernels + cost.collectives +
              std::max(prefill_flops / rate, weight_bytes_read(s, shares, weight_bytes, b * p) / bandwidth);
  else if (llama_cpp_engine(engine.profile))
    prefill = llama_cpp_prompt_seconds(s, d, f, engine, w, b, p, kv_bytes_per_token,
                                       weight_bytes_read(s, shares, weight_bytes, 1.0), bandwidth, cost) *
              llama_cpp_pipeline_share(s, f, b * p, engine);
  t.prefill = Seconds(prefill);
  t.prefill_tokens_per_s = b * p / t.prefill.in(unit::seconds);
  t.decode_weight_bytes = eager && batched_mm_decode(s, f) ? batched_mm_decode_bytes(s, shares, weight_bytes, b)
                                                            : weight_bytes_read(s, shares, weight_bytes, b);
  const HostOffload& offload = engine.offload;
  const double host_read = offload.any() ? offload.read(s.moe, b) : 0.0;
  // Marlin's 4-bit linears stream at its own share (GemmTile::marlin_read_share): their bytes' extra time.
  const DecodeGemmKernel gemm = decode_gemm_kernel(engine.profile, f, d);
  const double marlin_slower = gemm == DecodeGemmKernel::marlin
                                   ? layer_bytes_read(s, shares, weight_bytes, b) / bandwidth *
                                         (1.0 / GemmTile::marlin_read_share - 1.0)
                                   : 0.0;
  const double mem_time =
      marlin_slower + decode_read_seconds(d, t.decode_weight_bytes - host_read, kv_bytes_per_token, batch, context, e) +
      (eager ? eager_forward_seconds(s, d, {b, 1, context, engine.eager_attention, act, context * kv_bytes_per_token},
                                     bandwidth, e)
             : 0.0);
  // rate is at e.compute; a tiled decode GEMM runs at GemmTile::efficiency instead.
  const double gemm_flops = decode_gemm_flops(s, d, gemm, w.n2, b, e.compute);
  const double flop_time = (gemm_flops + b * 4.0 * w.layers * context * w.qdim) / rate;
  const double handovers = llama && !engine.row_split ? double(engine.devices - 1) * LlamaCppSplit::boundary_seconds : 0.0;
  const double overhead = cost.host + cost.decode_kernels + cost.collectives + handovers;
  t.decode_compute_bound = flop_time > mem_time && flop_time >= host;
  t.decode_host_bound = host > std::max(mem_time, flop_time);
  t.decode_overhead_bound = overhead > std::max({mem_time, flop_time, host});
  t.decode_overhead = Seconds(overhead);
  t.decode_host_memory = Seconds(offload.any() ? offload.cpu_seconds(s.moe, b) : 0.0);
  t.decode_step = Seconds(std::max({mem_time, flop_time, host}) + overhead + t.decode_host_memory.in(unit::seconds));
  t.decode_host_memory_bound = t.decode_host_memory.in(unit::seconds) > std::max({mem_time, flop_time, host}) + overhead;
  t.decode_tokens_per_s = b / t.decode_step.in(unit::seconds);
  return t;
}

}  // namespace gpuplan
