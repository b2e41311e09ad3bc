// Time of one training step from what each GPU executes: the matmuls at the tensor-core rate (a roofline per
// weight matrix), attention kernels, the memory-bound work (norms, activations, rotary, residuals, the loss over
// the vocabulary, the optimizer step), the host's per-kernel launch cost where it exceeds the GPU's work, and on
// top the pipeline bubble and the communication that does not hide behind compute. The model FLOPs utilisation is
// an output of this model, not an input (unless the user states one with --mfu).
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compute.h"
#include "hardware.h"
#include "memory/activations.h"
#include "memory/workload.h"
#include "model.h"
#include "parallel.h"
#include "throughput.h"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------------------------
// Kernel rates: the share of a device's peaks each kind of kernel reaches. Calibrated on the measured single-GPU
// steps (tests/data/calibration, H100/H200) and the published runs (tests/data/time/published_runs.jsonl); the
// derivation is in docs/time-accuracy.md.
struct KernelRates {
  // 16-bit matmuls in training, as a share of the device's maximum achievable matmul rate: the burst rate
  // (catalog matmul_burst_efficiency: H100/H200 80.3 % of the dense peak in the MAMF table) where the GPU's power
  // limit allows it (see gemm_power_limit), else the sustained rate (matmul_efficiency: H100/H200 68 % once clocks
  // settle at the 700 W limit, measured here; A100 SXM 86.9 % in the MAMF table). Training GEMMs run at the shapes
  // the model gives them, back to back with other kernels.
  double gemm16 = 0.84;
  // Power the memory-bound and attention kernels draw at the burst clock, as a share of the TDP: what leaves the
  // GEMMs of a step room above their sustained clock. Fitted to the fit half of the measured single-GPU steps
  // (tests/data/calibration, H100/H200, whose eager steps spend 30–60 % of their time outside GEMMs).
  double other_power = 0.60;
  // A device without a measured rate: 0.75 of the dense peak (between the sustained H100 and the A100 figures).
  double default_matmul_efficiency = 0.75;
  // FP8 matmuls (Transformer Engine, DeepGEMM): per unit of peak, 0.905 of the 16-bit share — measured sustained on
  // H100/H200: 1210–1235 of 1979 TFLOP/s fp8 against 667–678 of 989 bf16 (tests/data/time/gemm_sustained.jsonl).
  double fp8_vs_16bit = 0.905;
  // fp32 matmuls without TF32 (PyTorch's default, allow_tf32 = False): CUDA-core SGEMM.
  double gemm32 = 0.75;
  // Flash attention forward + backward, share of the 16-bit dense peak: FlashAttention-2 reaches ~35 % on H100,
  // FlashAttention-3 up to 75 % (Shah et al. 2024, §1); 0.40 for the mix of kernels frameworks pick.
  double attention = 0.40;
  // Memory-bound kernels, share of the memory bandwidth: a device-to-device copy reaches ~90 % (3.0 of 3.35 TB/s
  // on H100, 4.3 of 4.8 TB/s on H200); elementwise kernels with several inputs and reductions less. Fused stacks:
  // their fewer, larger kernels' fixed costs are inside this share.
  double memory = 0.70;
  // HF eager kernels once each kernel's fixed cost is counted apart (KernelFloor::launched_cycles, throughput.h: a
  // kernel launched on its own costs 10,000 core cycles beyond its bytes, fitted on serving's data): 0.8, fitted on
  // the fit half of the measured single-GPU steps (of 0.7, 0.8, 0.9).
  double memory_eager = 0.80;
  // Host cost of one eager PyTorch operator with autograd (Python module call, dispatcher, launch): the GPU idles
  // when its kernels finish sooner than the host issues them. Fitted to the measured single-GPU steps whose GPU work
  // is small (1B models at 1K–2K tokens per step; tests/data/calibration), where the host sets the pace.
  double host_op_seconds = 8e-6;
  // The optimizer's host loop per trainable tensor (PyTorch's foreach grouping and per-tensor bookkeeping), the
  // same fit.
  double host_tensor_seconds = 12e-6;
};

// How the framework runs the model: eager is HF transformers' unfused PyTorch modules (the stack the memory model
// is calibrated on); fused is Megatron-LM / Transformer Engine / llm-foundry style (fused norms, rotary, SwiGLU,
// cross-entropy and optimizer, grouped expert GEMMs).
enum class Kernels { auto_, eager, fused };
inline constexpr std::array<Spelling<Kernels>, 3> kernels_names{
    {{Kernels::auto_, "auto"}, {Kernels::eager, "eager"}, {Kernels::fused, "fused"}}};

// auto: model parallelism (tp, pp, cp, ep) is only done by Megatron-class frameworks, which fuse; TPUs run XLA,
// which fuses; everything else is the HF stack.
inline Kernels resolve_kernels(Kernels k, const TrainingWorkload& w, const Device& d) {
  if (k != Kernels::auto_) return k;
  if (w.tp > 1 || w.pp > 1 || w.cp > 1 || w.ep > 1 || d.id.rfind("tpu", 0) == 0) return Kernels::fused;
  return Kernels::eager;
}

// How the pipeline orders its micro-batches (--pp-schedule).
enum class PipelineSchedule { one_f_one_b, interleaved, zero_bubble, dualpipe };
inline constexpr std::array<Spelling<PipelineSchedule>, 4> schedule_names{{{PipelineSchedule::one_f_one_b, "1f1b"},
                                                                          {PipelineSchedule::interleaved, "interleaved"},
                                                                          {PipelineSchedule::zero_bubble, "zero-bubble"},
                                                                          {PipelineSchedule::dualpipe, "dualpipe"}}};

struct TimeOptions {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  Kernels kernels = Kernels::auto_;
  bool tp_overlap = false;  // TP communication overlapped with the GEMMs (Megatron --tp-comm-overlap, TE userbuffers)
  bool ep_overlap = false;  // expert all-to-all overlapped with compute (DualPipe implies it)
  std::optional<ByteRate> network;  // per GPU between nodes
  std::int64_t gpus_per_node = 8;
  KernelRates rates;
};

// ---------------------------------------------------------------------------------------------------------------
// Work of one micro-batch on one GPU of one pipeline stage.

// What one pass of a micro-batch executes on one GPU, whatever the device: FLOPs by the rate they run at, the bytes
// the memory-bound kernels and the matmuls move, and the operators the host issues.
struct PassWork {
  double gemm_flops = 0;       // matmuls at the tensor rate of the precision's format
  double gemm32_flops = 0;     // fp32 matmuls (PEFT's adapters outside autocast)
  double gemm32_bytes = 0;     // what those read and write
  double gemm_bytes = 0;       // what the matmuls read and write (weights, inputs, outputs)
  double attention_flops = 0;  // flash-attention kernels
  double memory_bytes = 0;     // memory-bound kernels
  double host_ops = 0;         // eager operators
};

struct MicrobatchWork {
  PassWork forward, backward;  // backward includes the recomputed forward
  double loop_ops = 0;         // HF MoE routing: operators whose host time does not overlap the GPU's
  double matmul_flops = 0;     // hardware FLOPs (recomputation included), for HFU
  double attention_flops = 0;
};

inline void add_scaled(PassWork& a, const PassWork& b, double n) {
  a.gemm_flops += n * b.gemm_flops;
  a.gemm32_flops += n * b.gemm32_flops;
  a.gemm32_bytes += n * b.gemm32_bytes;
  a.gemm_bytes += n * b.gemm_bytes;
  a.attention_flops += n * b.attention_flops;
  a.memory_bytes += n * b.memory_bytes;
  a.host_ops += n * b.host_ops;
}

inline void add_scaled(MicrobatchWork& a, const MicrobatchWork& b, double n) {
  add_scaled(a.forward, b.forward, n);
  add_scaled(a.backward, b.backward, n);
  a.loop_ops += n * b.loop_ops;
  a.matmul_flops += n * b.matmul_flops;
  a.attention_flops += n * b.attention_flops;
}

// One decoder layer of each kind (model.h layer_kind) at one rank's widths and micro-batch: a layout's stages reuse it.
using LayerKindWork = std::array<std::optional<MicrobatchWork>, max_layer_kinds>;

// A device's rates for a precision: FLOP/s per kind of kernel, bytes/s for memory-bound work, seconds per operator.
struct DeviceRates {
  double gemm = 0, gemm32 = 0, attention = 0, bytes = 0, host_op = 0;
  double kernel_floor = 0;  // seconds of fixed GPU cost per eager operator's kernel
  double burst = 1;  // 16-bit burst matmul rate over the sustained one: the GEMMs' power at the burst clock per TDP
  double other_power = 1;
};

inline DeviceRates device_rates(const Device& d, Precision p, const KernelRates& k, Kernels kernels = Kernels::fused) {
  const bool eager = kernels == Kernels::eager;
  const ComputeFormat f = compute_format(p);
  const double peak16 = peak_for(d, ComputeFormat::bf16).value_or(0);
  const double fp32 = peak_for(d, ComputeFormat::fp32).value_or(peak16 / 16) * k.gemm32;
  const double sustained = d.matmul_efficiency.value_or(k.default_matmul_efficiency);
  const double share16 = k.gemm16 * sustained;
  DeviceRates r;
  // A burst rate is measured for 16-bit GEMMs only: fp8 and fp32 stay at their sustained rates.
  if (f == ComputeFormat::bf16 || f == ComputeFormat::fp16)
    r.burst = std::max(1.0, d.matmul_burst_efficiency.value_or(sustained) / sustained);
  r.other_power = k.other_power;
  r.gemm = f == ComputeFormat::fp32 ? fp32
           : f == ComputeFormat::fp8 ? peak_for(d, f).value_or(peak16) * share16 * k.fp8_vs_16bit
                                     : peak16 * share16 * r.burst;
  r.gemm32 = fp32;
  r.attention = peak16 * k.attention;
  r.bytes = d.memory_bandwidth.in(unit::bytes_per_s) * (eager ? k.memory_eager : k.memory);
  // Eager operators launch a kernel or two each, one by one: each costs the serving model's fixed cycles.
  r.kernel_floor = eager ? kernel_seconds(d, KernelFloor::launched_cycles) : 0.0;
  r.host_op = k.host_op_seconds;
  return r;
}

struct PassTime {
  double gemm = 0, attention = 0, memory = 0, host = 0, floor = 0;  // floor: the kernels' fixed costs
  double gpu() const { return gemm + attention + memory + floor; }
  double wall() const { return std::max(gpu(), host); }  // the host issues ahead while the GPU is busier
  double host_excess() const { return std::max(0.0, host - gpu()); }  // wall() − gpu(), never a rounding residue
};

// A matmul's roofline as a sum: its FLOPs at the tensor rate plus the bytes it moves at the memory rate, so that
// small matmuls pay for their traffic.
inline PassTime pass_time(const PassWork& p, const DeviceRates& r) {
  auto at = [](double work, double rate) { return work > 0 ? work / rate : 0.0; };  // no work takes no time
  PassTime t;
  // PEFT's fp32 adapters are skinny (rank ≪ width: ~8 FLOPs per byte at rank 16) and run on the CUDA cores, whose
  // FLOPs overlap the input they stream: the slower of the two.
  t.gemm = at(p.gemm_flops, r.gemm) + at(p.gemm_bytes, r.bytes) +
           std::max(at(p.gemm32_flops, r.gemm32), at(p.gemm32_bytes, r.bytes));
  t.attention = at(p.attention_flops, r.attention);
  t.memory = at(p.memory_bytes, r.bytes);
  t.host = p.host_ops * r.host_op;
  t.floor = p.host_ops * r.kernel_floor;
  return t;
}

// The GEMMs of one micro-batch slot under the GPU's power limit. Timed at the burst rate (a device's maximum
// achievable matmul rate in short runs at the boost clock) they draw burst × TDP; back to back they settle at the
// sustained rate, and the other kernels of the step draw other_power × TDP. With power proportional to the clock
// (fixed voltage), a GEMM's energy per FLOP does not depend on its clock, and the slot's average power meets the TDP
// when the GEMMs run at s of the burst clock with G / s + O = burst·G + other_power·O:
// 1 / s = max(1, burst − (1 − other_power) · O / G), G the GEMM time at the burst rate, O the rest.
// Returns how much slower than the burst rate the GEMMs run.
inline double gemm_power_limit(PassTime& f, PassTime& b, const DeviceRates& r) {
  const double g = f.gemm + b.gemm, other = f.attention + f.memory + b.attention + b.memory;
  if (g <= 0 || r.burst <= 1) return 1.0;
  const double slow = std::max(1.0, r.burst - (1.0 - r.other_power) * other / g);
  f.gemm *= slow;
  b.gemm *= slow;
  return slow;
}

namespace detail {

// Bytes per token the eager and fused stacks move in memory-bound kernels of one decoder layer's forward (the
// backward moves about twice as much: it reads the saved inputs and the incoming gradient and writes one).
// Eager counts HF modules' PyTorch ops: RMSNorm in fp32 (to-fp32, pow, mean, mul, to-dtype, weight: ≈ 36 bytes
// per element whatever the dtype), LayerNorm one fused kernel (read + write), residual adds (2 reads, 1 write),
// rotary on q and k (mul cos, rotate_half's slices/neg/cat, mul sin, add: ~10 passes), the attention output
// transposed to contiguous (2 passes), SwiGLU's act(gate)·up (5 passes) or GELU (2 passes), dropout (3 passes per
// site). Qwen3 / Gemma 3 / OLMo 2 RMSNorm q and k too (over head_dim or all heads: the same elements).
// Under autocast (r = 4: an fp32 model) the residual stream stays fp32: each residual add reads a 16-bit matmul
// output and the fp32 stream and writes fp32; rotary multiplies the 16-bit q and k by HF's cos/sin, which take the
// stream's dtype, so its passes run in fp32; autocast casts each linear's fp32 input (q, k, v, gate, up: 5 per
// layer) to 16 bit (read 4, write 2). Fused: one kernel per norm with its residual add, fused rotary, fused
// SwiGLU/bias-GELU.
inline double layer_forward_bytes(const ModelSpec& s, bool fused, double c, double r, double hidden_split,
                                  std::int64_t layer, bool moe) {
  const double h = double(s.hidden) / hidden_split;  // hidden-width tensors (÷tp under sequence parallelism)
  const double q = double(s.q_dim(layer)), kv = double(s.kv_dim(layer));
  const double ffn = moe ? double(s.moe.intermediate) * double(s.moe.experts_per_token) +
                               double(s.moe.shared_intermediate) * double(s.moe.shared_experts)
                         : double(s.intermediate_at(layer));
  const double norms = double(s.norms_per_layer);
  const double qk_norm_elems = s.qk_norm ? q + kv : 0.0;
  const bool linear_attn = s.is_linear_layer(layer);
  const double rot = linear_attn ? 0.0 : (q + kv) * s.partial_rotary;
  const double gated = s.mlp == MlpKind::gated ? 1.0 : 0.0;
  // GPT-2's gelu_new is written out in PyTorch ops (pow, mul, add, tanh, ...: ~20 passes); other activations are
  // one kernel (2 passes).
  const double act = !fused && s.activation == "gelu_new" ? 20.0 : 2.0;
  if (fused)
    return norms * 3 * c * h            // norm + residual add in one kernel: read x and residual, write
           + 2 * c * qk_norm_elems      // q/k norms
           + 2 * c * rot                // fused rotary
           + (2 + gated) * c * ffn;     // fused act(gate)·up or bias-GELU
  const double per_norm = s.norm == NormKind::rms ? 36.0 : 2 * c;
  const double casts = r > c ? 5 * (r + c) * h : 0.0;  // autocast's copies of the linears' fp32 inputs
  double b = norms * per_norm * h + 2 * (c + 2 * r) * h  // norms, two residual adds
             + per_norm * qk_norm_elems                  // q/k norms
             + 10 * r * rot + 2 * c * q                  // rotary, attention output to contiguous
             + (act + 3 * gated) * c * ffn + casts;      // activation (and the gate product)
  if (s.dropout > 0) b += 3 * 3 * c * h;           // attention-probability dropout is inside the kernel
  if (moe) b += 6 * c * h * double(s.moe.experts_per_token);  // gather tokens, scale, index_add per expert
  return b;
}

}  // namespace detail

namespace detail {

struct WorkContext {  // what every part of a micro-batch's work needs to know
  const ModelSpec& r;
  const TrainingWorkload& w;
  double tokens, c, stream, weight_bytes, recompute_fwd;
  bool full_ft, autocast, fused;
};

// One weight matrix (count copies) over `rows` rows: forward, the input gradient, the weight gradient if trained.
inline void add_matmul(MicrobatchWork& m, const WorkContext& x, double rows, double out, double in, double count,
                       bool trainable) {
  const double flops = count * 2.0 * rows * out * in;
  const double bytes = count * (x.weight_bytes * out * in + x.c * rows * (out + in));
  const double backward = 1.0 + x.recompute_fwd + (trainable ? 1.0 : 0.0);
  m.forward.gemm_flops += flops;
  m.forward.gemm_bytes += bytes;
  m.backward.gemm_flops += flops * backward;
  m.backward.gemm_bytes += bytes * backward;
  m.matmul_flops += flops * (1.0 + backward);
}

// PEFT's adapter on a targeted linear: x → dropout → A (in→r) → B (r→out) → ×scale → added to the base output.
// PEFT keeps adapters in fp32: outside autocast x is cast up (c + 4 bytes per input element), the matmuls run at the
// fp32 rate and the fp32 sum is cast back (12 + c per output element); under autocast lora_A casts its input (the
// fp32 stream, or PEFT's fp32 copy of a 16-bit input) to 16 bit (r + c) and the scaled 16-bit output is added to the
// base output (5c).
inline void add_lora(MicrobatchWork& m, const WorkContext& x, double n, double rows, double out, double in) {
  const double rank = double(x.w.lora.rank);
  const double flops = 2.0 * n * rows * rank * (in + out);
  const double bytes = 4.0 * n * (rank * (in + out) + rows * (in + 2 * rank + out));
  const double casts = n * rows * (x.autocast ? in * (x.stream + x.c) + out * 5 * x.c : in * (x.c + 4) + out * (3 * 4 + x.c));
  PassWork& f = m.forward;
  PassWork& b = m.backward;
  (x.autocast ? f.gemm_flops : f.gemm32_flops) += flops;
  (x.autocast ? b.gemm_flops : b.gemm32_flops) += flops * (2.0 + x.recompute_fwd);
  (x.autocast ? f.gemm_bytes : f.gemm32_bytes) += bytes;
  (x.autocast ? b.gemm_bytes : b.gemm32_bytes) += bytes * (2.0 + x.recompute_fwd);
  m.forward.memory_bytes += casts;
  m.backward.memory_bytes += casts * (2.0 + x.recompute_fwd);
  m.matmul_flops += flops * (3.0 + x.recompute_fwd);
  m.forward.host_ops += n * 6;  // dropout, cast, A, B, scale, add
  m.backward.host_ops += n * 8;
}

// QLoRA's NF4 base weights (bitsandbytes 0.45, MatMul4Bit): every use of a weight in a matmul first dequantizes it
// to bf16 (dequantize_4bit: read the packed 4-bit codes, 0.5 B, and the blockwise absmax, write 2 B), then the
// matmul reads the bf16 copy; forward once, backward once more for the input gradient (and once more in the
// recomputed forward). Memory-bound: ~2.5 bytes per weight per use, and two operators.
inline void add_dequantize(MicrobatchWork& m, const WorkContext& x, double weights) {
  const double bytes = weights * (0.5 + 2.0 + 4.0 / 64.0);
  m.forward.memory_bytes += bytes;
  m.backward.memory_bytes += bytes * (1.0 + x.recompute_fwd);
  m.forward.host_ops += 2;
  m.backward.host_ops += 2 * (1.0 + x.recompute_fwd);
}

// `n` decoder layers of the kind of layer `l`: their matmuls, memory-bound kernels and host operators.
inline void add_layers(MicrobatchWork& m, const WorkContext& x, std::int64_t l, double n, double local_experts) {
  const ModelSpec& r = x.r;
  const bool moe = r.is_moe_layer(l);
  for (const ParamGroup& g : layer_params(r, l)) {
    if (!g.linear) continue;
    double rows = x.tokens, count = double(g.count);
    if (g.expert) {  // the GPU's experts each see ep·tokens·k/E rows (balanced routing)
      count = local_experts;
      rows = r.moe.dense_routing ? x.tokens * double(x.w.ep)
                                 : x.tokens * double(r.moe.experts_per_token) * double(x.w.ep) / double(r.moe.experts);
    }
    add_matmul(m, x, rows, double(g.out), double(g.in), n * count, x.full_ft);
    if (x.w.lora.qlora) add_dequantize(m, x, double(g.out) * double(g.in) * n * count);
    if (!x.full_ft && !g.expert && lora_targets_module(x.w.lora, g.module))
      add_lora(m, x, n, rows, double(g.out), double(g.in));
  }
  const double hidden_split = x.w.sp ? double(x.w.tp) : 1.0;
  const double fwd_bytes = n * x.tokens * layer_forward_bytes(r, x.fused, x.c, x.stream, hidden_split, l, moe);
  m.forward.memory_bytes += fwd_bytes;
  m.backward.memory_bytes += (2.0 + x.recompute_fwd) * fwd_bytes;
  // HF eager, counted in the Llama-family module code: ~45 operators forward (two RMSNorms of 6–8 ops, 4 projections
  // with their views and transposes, rotary ~14, SDPA and its reshapes, the MLP's 5, two residual adds) and ~60
  // backward (autograd nodes, some with two kernels); Gemma's two extra norms and q/k norms add theirs.
  const double extra_norms = double(r.norms_per_layer - 2) + (r.qk_norm ? 2.0 : 0.0);
  m.forward.host_ops += n * (45 + 4 * extra_norms);
  m.backward.host_ops += n * (60 + 5 * extra_norms);
  if (moe && !x.fused && !r.moe.dense_routing)
    // HF's MoE blocks route in eager PyTorch: router, top-k, one-hot masks and the per-expert dispatch are hundreds
    // of small operators, and their data-dependent shapes (nonzero/where) make the host wait for the GPU, so host
    // and GPU time add. Operator counts fitted to the measured MoE steps (tests/data/calibration: Mixtral,
    // Qwen2-MoE, DeepSeek-V3, gpt-oss, Granite-MoE, Qwen3-Next, GLM-4.5-Air shapes, 8–512 experts): ~250 per
    // layer and ~3.5 per local expert, forward and backward together.
    m.loop_ops += n * (250.0 + 3.5 * local_experts) * (1.0 + x.recompute_fwd / 2.0);
}

// The attention core, softmax(QKᵀ)V, of the full-attention and sliding-window layers.
inline void add_attention(MicrobatchWork& m, const WorkContext& x) {
  const ModelSpec& r = x.r;
  const TrainingWorkload& w = x.w;
  const double layers = double(r.layers) - double(std::count(r.linear_layers.begin(), r.linear_layers.end(), true));
  if (layers <= 0) return;
  // Keys a query sees on average: half the sequence (causal), or the window. Context parallelism splits the
  // queries; each GPU still attends over the whole sequence's keys (load-balanced ring: half on average).
  const double full_span = double(w.seq) / 2.0;
  const double win_span = r.sliding_window > 0 ? std::min(full_span, double(r.sliding_window)) : full_span;
  // Σ over the attention layers of the keys a query sees × its q·k and p·v widths (each layer's own head_dim).
  double span_dims = 0;
  for (std::int64_t l = 0; l < r.layers; ++l) {
    if (r.is_linear_layer(l)) continue;
    const double hd = double(r.shape(l).head_dim);
    const double dqk = r.mla_enabled ? double(r.mla.qk_nope_head_dim + r.mla.qk_rope_head_dim) : hd;
    const double dv = r.mla_enabled ? double(r.mla.v_head_dim) : hd;
    span_dims += (r.is_sliding_layer(l) ? win_span : full_span) * (dqk + dv);
  }
  const double heads = double(r.heads);
  const double fwd = 2.0 * x.tokens * heads * span_dims;
  const AttentionKernel kernel = sdpa_backend(r, w.attention, x.c);
  if (kernel == AttentionKernel::eager || kernel == AttentionKernel::math) {
    // Eager / math attention computes the full square (masked after) and moves the score matrix: QKᵀ written,
    // scale/mask, softmax (fp32), read by P·V; backward about twice (Gemma 2's soft-cap and dropout: more passes).
    const double full = 2.0 * fwd;
    const double elems = layers * x.tokens * heads * double(w.seq);
    const double passes = 8.0 + (r.attn_logit_softcap > 0 ? 4.0 : 0.0) + (r.dropout > 0 ? 3.0 : 0.0);
    m.forward.gemm_flops += full;
    m.backward.gemm_flops += 2.0 * full * (1.0 + x.recompute_fwd / 2.0);
    m.forward.memory_bytes += elems * passes * x.c;
    m.backward.memory_bytes += elems * passes * x.c * (2.0 + x.recompute_fwd);
    m.attention_flops += full * (3.0 + x.recompute_fwd);
    m.forward.host_ops += layers * 6;
    m.backward.host_ops += layers * 8;
  } else {
    // Flash attention: backward recomputes the scores: 2.5× the forward's FLOPs (FlashAttention-2, §3.1.2).
    m.forward.attention_flops += fwd;
    m.backward.attention_flops += (2.5 + x.recompute_fwd) * fwd;
    m.attention_flops += (3.5 + x.recompute_fwd) * fwd;
  }
}

// The output layer and the loss over the vocabulary.
inline void add_head(MicrobatchWork& m, const WorkContext& x) {
  const double V = double(x.r.vocab), H = double(x.r.hidden);
  add_matmul(m, x, x.tokens, V, H, 1, x.full_ft);  // lm_head (tied or not: it multiplies either way)
  // Eager cross-entropy (HF ForCausalLMLoss, PyTorch 2.11 kernels), bytes per logit: the upcast to fp32 (read c,
  // write 4); log-softmax over a row too long for shared memory (the max, the sum of exponentials and the output
  // pass each read the row: 3 × 4 read, 4 written); backward NLL's zeroed gradient (4), log-softmax backward (the
  // sum of the incoming gradient, then gradient and output read, input gradient written: 16) and the cast back
  // (read 4, write c): 22 + c forward, 26 + c backward (Gemma 2's final soft-cap: tanh and scales, 24 more).
  // torchtune's chunked loss runs the same passes chunk by chunk (it saves memory, not traffic). Fused (Megatron's
  // vocab-parallel cross-entropy, Liger's Triton kernel): read the logits twice, write the gradient in place: 4c.
  const bool fused = x.fused || x.w.loss == Loss::fused;
  const double softcap = x.r.final_logit_softcap > 0 ? 24.0 : 0.0;
  const double fwd_logit = fused ? 2 * x.c : 22 + x.c + softcap * 0.5;
  const double bwd_logit = fused ? 2 * x.c : 26 + x.c + softcap * 0.5;
  m.forward.memory_bytes += x.tokens * V * fwd_logit;
  m.backward.memory_bytes += x.tokens * V * bwd_logit;
  m.forward.host_ops += 12;  // lm_head, upcast, shift, view, cross_entropy's own ops; as many backward
  m.backward.host_ops += 12;
}

}  // namespace detail

// One micro-batch of `tokens` tokens (b·s/cp) through `r`, the part of the model one GPU holds (rank_model: TP-split
// widths, the stage's layers), with or without the loss.
inline MicrobatchWork microbatch_work(const ModelSpec& r, const TrainingWorkload& w, double tokens, bool has_head,
                                      Kernels kernels, LayerKindWork* layers = nullptr) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  const ComputeFormat f = compute_format(w.precision);
  // Weight bytes a matmul reads: the stored dtype, the 16-bit copy autocast caches for the step, or fp8 copies.
  const double wb = f == ComputeFormat::fp8 ? 1.0 : pr.autocast ? 2.0 : pr.weight;
  const detail::WorkContext x{r, w, tokens, pr.compute, pr.stream, wb, w.recompute == Recompute::full ? 1.0 : 0.0,
                              w.lora.rank == 0, pr.autocast, kernels == Kernels::fused};
  MicrobatchWork m;
  const double local_experts = r.moe.experts > 0 ? double(r.moe.experts) / double(w.ep) : 0.0;
  LayerKindWork local;
  LayerKindWork& cache = layers ? *layers : local;
  for (const auto& [l, count] : layer_kinds(r)) {
    auto& one = cache[static_cast<std::size_t>(layer_kind(r, l))];
    if (!one) detail::add_layers(one.emplace(), x, l, 1.0, local_experts);
    add_scaled(m, *one, double(count));
  }
  detail::add_attention(m, x);
  m.forward.memory_bytes += tokens * double(r.hidden) * x.c * 2;  // embedding lookup (and its gradient's scatter)
  if (has_head) detail::add_head(m, x);
  m.forward.host_ops += 10;  // embedding, masks, positions
  m.backward.host_ops += 10;
  return m;
}

// Bytes the optimizer step moves per trainable parameter (on this GPU's shard). PyTorch's foreach AdamW runs ~9
// elementwise passes over the parameter list (lerp, mul, addcmul, sqrt, div, add, addcdiv, weight decay: ≈ 22
// tensor reads/writes); fused AdamW one pass (read p, g, m, v; write p, m, v). With fp32 master weights (mixed
// precision), the update runs on the master copy plus a 16-bit copy back (6 bytes).
inline double optimizer_bytes_per_param(const TrainingWorkload& w, Kernels kernels) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  const double state = pr.master > 0 ? pr.master : pr.weight;  // the width the update runs in
  const bool fused = kernels == Kernels::fused || w.optimizer == Optimizer::adamw_fused;
  double passes = 0;
  switch (w.optimizer) {
    case Optimizer::adamw:
    case Optimizer::adam:
    case Optimizer::adamw_fused: passes = fused ? 7 : 22; break;
    case Optimizer::sgd: passes = fused ? 3 : 3; break;
    case Optimizer::sgd_momentum: passes = fused ? 5 : 8; break;
    case Optimizer::lion: passes = fused ? 6 : 12; break;
    case Optimizer::adafactor: passes = 30; break;  // HF Adafactor: row/column factors, RMS, several ops
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw_8bit: return 10.0;  // bitsandbytes fused: 2-byte p/g, 1-byte states
  }
  return passes * state + (pr.master > 0 ? 6.0 : 0.0);
}

// Trainable tensors the optimizer's host loop walks: every parameter tensor, or LoRA's A and B per targeted linear.
inline double trainable_tensors(const ModelSpec& s, const LoraSpec& lora) {
  double n = 0;
  for (const auto& [l, count] : layer_kinds(s))
    for (const ParamGroup& g : layer_params(s, l))
      n += double(count) * (lora.rank == 0 ? 1.0 : (g.linear && !g.expert && detail::lora_targets_module(lora, g.module)) ? 2.0 : 0.0);
  return lora.rank == 0 ? n + 3 : n;  // embedding, final norm, lm_head
}

// ZeRO-Offload's optimizer step on the host, per step, for `params` parameters of this GPU's shard, by the
// implementation that runs it:
// - pytorch (FSDP2 CPUOffloadPolicy: torch's CPU AdamW plus the parameter and gradient copies over PCIe): measured
//   on 2 × H200, 6.6 s of a 6.9 s step for 1.6B parameters per GPU (tests/data/calibration/measured_d1.jsonl):
//   4.1 ns per parameter, copies included;
// - deepspeed (DeepSpeedCPUAdam, AVX-512, fused with the copy back of the 16-bit parameters): "between 5x to 7x
//   speedup over torch.optim.adam(W)" (DeepSpeed's optimizer documentation; ZeRO-Offload, Ren et al. 2021 §5.1):
//   torch's CPU AdamW alone is ~3.75 ns per parameter of that measurement (less ~12 B per parameter over PCIe),
//   so 3.75 / 6 ≈ 0.6 ns, plus the 16-bit parameters back over PCIe 5 (the fp32 gradients' copy overlaps backward).
inline constexpr double torch_cpu_offload_seconds_per_param = 4.1e-9;
inline constexpr double deepspeed_cpu_adam_seconds_per_param = 3.75e-9 / 6.0;

inline double host_optimizer_seconds(double params, Profile profile) {
  if (profile == Profile::deepspeed) return params * (deepspeed_cpu_adam_seconds_per_param + 2.0 / pcie5_x16_bytes_per_s);
  return params * torch_cpu_offload_seconds_per_param;
}

// Activation offloading's copies per micro-batch: every saved tensor to the host in forward and back in backward,
// over PCIe 5. PyTorch's torch.autograd.graph.save_on_cpu (torch 2.11 autograd/graph.py: pack_to_cpu's copy_ into
// pinned memory, unpack's .to(device) on the current stream) copies on the compute stream, so the copies add to the
// step (measured_f1s: a 3B model's step 2.6 s against 0.5 s without); torchtune's OffloadActivations can overlap
// them on a side stream, which this does not assume.
inline double activation_offload_seconds(const ModelSpec& s, const TrainingWorkload& w, double tokens) {
  if (!w.activation_offload) return 0.0;
  const PrecisionRecipe pr = recipe_of(w.precision);
  double per_token = 0;
  if (w.recompute == Recompute::full) per_token = pr.stream * double(s.hidden) * double(s.layers);
  else {
    const detail::LayerActivationModel act(s, w, {pr.compute, pr.stream, pr.autocast});
    for (std::int64_t l = 0; l < s.layers; ++l) per_token += act.layer(l).per_token;
  }
  // This GPU's share: its pipeline stage's layers, its tensor-parallel slice (the hidden-width tensors too, as
  // under sequence parallelism: a bound from below where they are replicated).
  const double share = 1.0 / double(w.pp * w.tp);
  return 2.0 * per_token * share * tokens / pcie5_x16_bytes_per_s;
}

// ---------------------------------------------------------------------------------------------------------------
// The step

// Micro-batch slots the pipeline's slowest stage idles per step, beyond the m it computes:
//   1F1B (p − 1); interleaved with v chunks (p − 1)/v (Narayanan et al. 2021 §2.2); zero-bubble ZB-H1 a third of
//   1F1B's (Qi et al. 2024, backward split into input- and weight-gradient passes); DualPipe (DeepSeek-V3 §3.2.1,
//   Table 2) (p/2 − 1)(F&B + B − 3W) = 0 with the weight-gradient pass a third of backward.
inline double bubble_microbatches(PipelineSchedule sch, std::int64_t pp, std::int64_t vpp) {
  if (pp <= 1) return 0;
  const double p = double(pp);
  switch (sch) {
    case PipelineSchedule::one_f_one_b: return p - 1;
    case PipelineSchedule::interleaved: return (p - 1) / double(std::max<std::int64_t>(1, vpp));
    case PipelineSchedule::zero_bubble: return (p - 1) / (3.0 * double(std::max<std::int64_t>(1, vpp)));
    case PipelineSchedule::dualpipe: return 0;
  }
  return p - 1;
}

struct StepTime {
  // Seconds per optimizer step on the slowest pipeline stage's GPUs; total is their sum.
  double compute = 0;         // m micro-batches: matmuls, attention, memory-bound work (host-bound where slower)
  // compute, by what limits it (memory_bound includes every kernel's fixed cost, KernelRates::memory_eager)
  double matmul = 0, attention = 0, memory_bound = 0, host_bound = 0;
  double tensor_comm = 0;     // tensor-parallel collectives on the critical path
  double expert_comm = 0;     // expert-parallel all-to-all on the critical path
  double context_comm = 0;    // ring-attention exchange beyond the attention it overlaps
  double bubble = 0;          // pipeline fill and drain
  double optimizer = 0;       // the optimizer step (on the GPU)
  double data_comm = 0;       // data-parallel collectives beyond the compute they overlap
  double host_optimizer = 0;  // the optimizer step on the host under ZeRO-Offload
  double total = 0;
  double hardware_flops = 0;  // per GPU per step (matmuls + attention, recomputation included)
  double gemm_slowdown = 1;   // the GEMMs' time over their time at the burst rate (the power limit)
  std::int64_t slowest_stage = 0;
  Kernels kernels = Kernels::eager;
};

// The stages' layer counts: Megatron puts ceil(L/pp) on the first stage unless told (--pp-first-layers,
// --pp-last-layers: Megatron's --decoder-first/last-pipeline-num-layers), the rest evenly.
inline std::vector<std::int64_t> stage_layer_counts(std::int64_t layers, const TrainingWorkload& w) {
  std::vector<std::int64_t> out;
  const auto st = pipeline_stages(layers, w);
  for (const auto& s : st) out.push_back(s.layers);
  if (w.pp > 2) {
    const std::int64_t middle_total = layers - st.front().layers - st.back().layers;
    out.insert(out.begin() + 1, (middle_total + w.pp - 3) / (w.pp - 2));  // the fullest middle stage
  }
  return out;
}

// One micro-batch's work on each pipeline stage worth timing (the first, the fullest middle one, the last, which
// has the loss), whatever the device.
struct StageWork {
  std::int64_t stage = 0;
  MicrobatchWork work;
};

inline std::vector<StageWork> stage_works(const ModelSpec& s, const TrainingWorkload& w, Kernels kernels) {
  LayerKindWork layers;  // the stages share the rank's widths: each kind of layer is worked out once
  const double tokens = double(w.batch) * std::ceil(double(w.seq) / double(w.cp));
  const auto counts = stage_layer_counts(s.layers, w);
  const auto ends = pipeline_stages(s.layers, w);
  std::vector<StageWork> out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const bool last = i + 1 == counts.size();
    PipelineStage st = last ? ends.back() : ends.front();
    if (i > 0 && !last) {  // a middle stage: no embedding, no head
      st.embedding = false;
      st.first_layer = ends.front().layers;
    }
    st.layers = counts[i];
    const ModelSpec r = rank_model(s, w, st);
    out.push_back({last ? w.pp - 1 : std::int64_t(i), microbatch_work(r, w, tokens, st.head, kernels, &layers)});
  }
  return out;
}

// Seconds per step of each kind of collective at its link's bandwidth (parallel.h), before overlap.
struct CommSeconds {
  double tensor = 0, expert = 0, context = 0, data = 0;
  bool has_expert = false;
  void add(CommKind kind, double seconds) {
    switch (kind) {
      case CommKind::tensor: tensor += seconds; break;
      case CommKind::expert: expert += seconds, has_expert = true; break;
      case CommKind::context: context += seconds; break;
      case CommKind::data: data += seconds; break;
      case CommKind::pipeline: break;  // its time is the bubble's, modelled separately
    }
  }
};

inline CommSeconds comm_seconds(const std::vector<Communication>& comms) {
  CommSeconds c;
  for (const auto& x : comms)
    if (x.time) c.add(x.kind, x.time->in(unit::seconds));
  return c;
}

struct StepInputs {
  const ModelSpec* model = nullptr;
  const TrainingWorkload* workload = nullptr;
  const Device* device = nullptr;
  double trainable_on_gpu = 0;   // parameters this GPU's optimizer updates before ZeRO sharding
  double param_tensors = 0;      // trainable tensors (the host loops over them in the optimizer)
  double host_optimizer_seconds = 0;
  CommSeconds comms;
};

// The step on a device from the stages' work: the slowest stage paces every micro-batch slot.
inline StepTime time_step(const std::vector<StageWork>& stages, const StepInputs& in, const TimeOptions& o, Kernels kernels) {
  const TrainingWorkload& w = *in.workload;
  const Device& d = *in.device;
  const DeviceRates rates = device_rates(d, w.precision, o.rates, kernels);
  StepTime t;
  t.kernels = kernels;
  double slot = -1;
  double host = 0;  // of the slot: the host's time beyond the GPU's (eager launches, the Python loop)
  PassTime fwd, bwd;
  for (const auto& sw : stages) {
    PassTime f = pass_time(sw.work.forward, rates), b = pass_time(sw.work.backward, rates);
    const double slowdown = gemm_power_limit(f, b, rates);
    const double this_slot = f.wall() + b.wall() + sw.work.loop_ops * rates.host_op;
    if (this_slot > slot) {
      slot = this_slot;
      host = f.host_excess() + b.host_excess() + sw.work.loop_ops * rates.host_op;
      fwd = f;
      bwd = b;
      t.slowest_stage = sw.stage;
      t.gemm_slowdown = slowdown;
      t.hardware_flops = sw.work.matmul_flops + sw.work.attention_flops;
    }
  }
  // Activation offloading's copies, on the compute stream (counted with the host's share: not a kernel's FLOPs).
  const double offload =
      in.model ? activation_offload_seconds(*in.model, w, double(w.batch) * std::ceil(double(w.seq) / double(w.cp))) : 0.0;
  slot += offload;
  const double m = double(w.grad_accum);
  // Hiding the expert all-to-all behind compute takes streaming multiprocessors from the compute kernels: DeepSeek-V3
  // dedicates 20 of the H800's 132 SMs to communication (technical report §3.2.2): compute runs 132/112 as long.
  const bool ep_hidden = (o.ep_overlap || o.schedule == PipelineSchedule::dualpipe) && in.comms.has_expert;
  const double slowdown = ep_hidden ? 132.0 / (132.0 - 20.0) : 1.0;
  slot *= slowdown;
  t.compute = m * slot;
  t.matmul = m * slowdown * (fwd.gemm + bwd.gemm);
  t.attention = m * slowdown * (fwd.attention + bwd.attention);
  t.memory_bound = m * slowdown * (fwd.memory + bwd.memory + fwd.floor + bwd.floor);
  // From its own non-negative parts, not compute minus the rest (whose rounding left −7e-18 s).
  t.host_bound = m * slowdown * (host + offload);
  t.hardware_flops *= m;
  // Communication per step, by how it overlaps.
  t.tensor_comm = o.tp_overlap ? 0.0 : in.comms.tensor;
  t.expert_comm = ep_hidden ? 0.0 : in.comms.expert;
  const double ctx = in.comms.context, dp = in.comms.data;
  t.context_comm = std::max(0.0, ctx - t.attention);
  const double per_slot_comm = (t.tensor_comm + t.expert_comm + t.context_comm) / m;
  t.bubble = bubble_microbatches(o.schedule, w.pp, w.vpp) * (slot + per_slot_comm);
  // The optimizer over this GPU's shard of the trainable parameters (ZeRO ≥ 1 shards it over dp); the host walks
  // the tensor list (KernelRates::host_tensor_seconds).
  const double shard = in.trainable_on_gpu / double(w.zero >= 1 ? w.dp() : 1);
  if (w.offload_optimizer == Offload::none) {
    const double host = kernels == Kernels::fused ? 0.0 : in.param_tensors * o.rates.host_tensor_seconds;
    t.optimizer = std::max(shard * optimizer_bytes_per_param(w, kernels) / rates.bytes, host);
  }
  t.host_optimizer = in.host_optimizer_seconds;
  // Data-parallel collectives hide behind the compute that runs beside them: ZeRO-3/FSDP prefetches parameters
  // through the whole step; otherwise gradients reduce during the last micro-batch's backward and ZeRO-1/2's
  // parameter all-gather overlaps the next forward (Megatron distributed optimizer, DeepSpeed overlap_comm).
  const double window = w.zero == 3 ? t.compute : w.zero >= 1 ? fwd.gpu() + bwd.gpu() : bwd.gpu();
  t.data_comm = std::max(0.0, dp - window);
  t.total = t.compute + t.tensor_comm + t.expert_comm + t.context_comm + t.bubble + t.optimizer + t.data_comm +
            t.host_optimizer;
  return t;
}

inline StepTime step_time(const StepInputs& in, const TimeOptions& o) {
  const Kernels kernels = resolve_kernels(o.kernels, *in.workload, *in.device);
  return time_step(stage_works(*in.model, *in.workload, kernels), in, o, kernels);
}

}  // namespace gpuplan
