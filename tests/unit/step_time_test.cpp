// The step-time model: its pieces against hand-computed values (a matmul's roofline, the bubble of each pipeline
// schedule, uneven pipeline stages, the FLOPs a step executes) and its calibration as a whole in tests/time.
#include "../test_support.h"

#include <catch2/catch.hpp>
#include <gpuplan/catalog.h>
#include <gpuplan/builtin.h>
#include <gpuplan/step_time.h>

using namespace gpuplan;

TEST_CASE("step time: a matmul's roofline adds its FLOPs at the tensor rate and its bytes at the memory rate", "[time]") {
  // 1000 rows through a 2000×3000 16-bit weight on 1 PFLOP/s and 1 TB/s: 2·1000·2000·3000 = 1.2e10 FLOPs → 12 µs;
  // the weight 2·6e6 B + input and output 2·1000·(2000 + 3000) B = 2.2e7 B → 22 µs.
  TrainingWorkload w;
  const ModelSpec s = find_preset("llama-3.2-1b").spec;
  const detail::WorkContext x{s, w, 1000, 2, 2, 2, 0, true, false, false};
  MicrobatchWork m;
  detail::add_matmul(m, x, 1000, 2000, 3000, 1, true);
  DeviceRates r;
  r.gemm = 1e15;
  r.bytes = 1e12;
  CHECK(pass_time(m.forward, r).gemm == Approx(12e-6 + 22e-6));
  CHECK(pass_time(m.backward, r).gemm == Approx(2 * (12e-6 + 22e-6)));  // input and weight gradients
  CHECK(m.matmul_flops == Approx(3 * 1.2e10));
  // PEFT's fp32 adapters: their CUDA-core FLOPs or the bytes they stream, the slower (4e9 FLOPs at 50 TFLOP/s =
  // 80 µs against 1e8 B at 1 TB/s = 100 µs).
  r.gemm32 = 50e12;
  PassWork adapter;
  adapter.gemm32_flops = 4e9;
  adapter.gemm32_bytes = 1e8;
  CHECK(pass_time(adapter, r).gemm == Approx(100e-6));
  // bf16 at the burst rate, H100 SXM 0.84 × 80.3 % of 989.4 TFLOP/s (MAMF), 80.3 / 68.3 above the sustained one;
  // fp8 at 0.905 of the sustained 16-bit share per unit of peak (no burst measured).
  const Device& h100 = builtin_catalog().get("h100-sxm");
  CHECK(device_rates(h100, Precision::bf16, KernelRates{}).gemm == Approx(989.4e12 * 0.84 * 0.803));
  CHECK(device_rates(h100, Precision::bf16, KernelRates{}).burst == Approx(0.803 / 0.683));
  CHECK(device_rates(h100, Precision::fp8, KernelRates{}).burst == 1);
  // HF eager kernels: 80 % of the bandwidth plus each kernel's fixed 10,000 cycles at the boost clock (the serving
  // model's KernelFloor); fused stacks 70 % with the fixed costs inside.
  const DeviceRates eager = device_rates(h100, Precision::bf16, KernelRates{}, Kernels::eager);
  CHECK(eager.bytes == Approx(3.35e12 * 0.80));
  CHECK(eager.kernel_floor == Approx(kernel_seconds(h100, 10000)));
  CHECK(device_rates(h100, Precision::bf16, KernelRates{}).bytes == Approx(3.35e12 * 0.70));
  CHECK(device_rates(h100, Precision::bf16, KernelRates{}).kernel_floor == 0);
  CHECK(device_rates(h100, Precision::fp8, KernelRates{}).gemm == Approx(1978.9e12 * 0.84 * 0.683 * 0.905));
  CHECK(device_rates(h100, Precision::fp32, KernelRates{}).gemm == Approx(67e12 * 0.75));
}

TEST_CASE("step time: idle micro-batch slots of each pipeline schedule", "[time]") {
  CHECK(bubble_microbatches(PipelineSchedule::one_f_one_b, 1, 1) == 0);
  CHECK(bubble_microbatches(PipelineSchedule::one_f_one_b, 16, 1) == 15);             // Narayanan et al. §2.2.1
  CHECK(bubble_microbatches(PipelineSchedule::interleaved, 16, 4) == Approx(15.0 / 4));  // §2.2.2
  CHECK(bubble_microbatches(PipelineSchedule::zero_bubble, 16, 1) == Approx(5));      // ZB-H1: a third
  CHECK(bubble_microbatches(PipelineSchedule::dualpipe, 16, 1) == 0);
}

TEST_CASE("step time: Llama 3's 126 layers over 16 stages, one fewer on the first and the last", "[time][parallel]") {
  TrainingWorkload w;
  w.pp = 16;
  w.vpp = 4;
  w.grad_accum = 32;
  w.gpus = 16;
  w.pp_first_layers = 7;
  w.pp_last_layers = 7;
  const auto st = pipeline_stages(126, w);
  REQUIRE(st.size() == 2);
  CHECK(st[0].layers == 7);
  CHECK(st[1].layers == 7);
  CHECK(st[1].first_layer == 119);
  CHECK(stage_layer_counts(126, w) == std::vector<std::int64_t>{7, 8, 7});  // 112 layers over 14 middle stages
  w.pp_last_layers = 6;  // 113 left for 14 stages: not even
  CHECK_THROWS_AS(pipeline_stages(126, w), InputError);
  // Megatron's default for 61 layers on 16 stages: 4 on the first, an even share (3) on the last, 4 in the middle.
  TrainingWorkload d;
  d.pp = 16;
  d.gpus = 16;
  CHECK(stage_layer_counts(61, d) == std::vector<std::int64_t>{4, 4, 3});
  // The interleaved schedule no longer needs layers to be a multiple of pp × vpp: the 405B estimate runs.
  TrainingWorkload v = w;
  v.pp_last_layers = 7;
  v.tp = 8;
  v.sp = true;
  v.gpus = 128;
  v.seq = 8192;
  CHECK(estimate_training_memory(find_preset("llama-3.1-405b").spec, v).stage.layers == 7);
}

TEST_CASE("step time: a full fine-tuning step executes 6·N matmul FLOPs per token, LoRA 4·N plus its adapters", "[time]") {
  const ModelSpec& s = find_preset("llama-3.2-1b").spec;
  TrainingWorkload w;
  w.seq = 2048;
  const double tokens = 2048;
  const MicrobatchWork full = microbatch_work(s, w, tokens, true, Kernels::eager);
  // N: the weights that multiply — 6·N's parameters (PaLM) less the norms' 2·16 + 1 vectors of 2048.
  const double n = double(training_flops(s, Tokens(1), w.seq, Recompute::none).matmul_params.in(unit::params)) - 33.0 * 2048;
  CHECK(full.matmul_flops == Approx(6.0 * n * tokens).epsilon(1e-9));
  // Causal flash attention: forward 2·T·(T/2)·heads·(2·head_dim) per layer, backward 2.5× that.
  const double fwd = 16.0 * 2 * tokens * (tokens / 2) * 32 * 128;
  CHECK(full.attention_flops == Approx(3.5 * fwd));
  // Full recomputation repeats the forward: 8·N.
  w.recompute = Recompute::full;
  CHECK(microbatch_work(s, w, tokens, true, Kernels::eager).matmul_flops ==
        Approx(8.0 * n * tokens).epsilon(1e-9));
  w.recompute = Recompute::none;
  // LoRA r16 on q and v: frozen weights need no weight gradient; each adapter pair in→16→out runs all three.
  w.lora.rank = 16;
  w.lora.targets = {"q_proj", "v_proj"};
  const double adapters = 16.0 * 16 * ((2048 + 2048) + (2048 + 512)) * 2 * tokens * 3;
  const MicrobatchWork lora = microbatch_work(s, w, tokens, true, Kernels::eager);
  CHECK(lora.matmul_flops == Approx(4.0 * n * tokens + adapters).epsilon(1e-9));
}

TEST_CASE("step time: the slower host sets the pace of small steps; the GPU of large ones", "[time]") {
  const Device& d = builtin_catalog().get("h100-sxm");
  const ModelSpec& s = find_preset("llama-3.2-1b").spec;
  TrainingWorkload w;
  w.seq = 32;
  StepInputs in;
  in.model = &s;
  in.workload = &w;
  in.device = &d;
  in.trainable_on_gpu = double(count_params(s).total.in(unit::params));
  const StepTime tiny = step_time(in, TimeOptions{});
  CHECK(tiny.host_bound > 0);  // 32 tokens: launches outlast the kernels and their fixed costs
  w.batch = 8;
  w.seq = 4096;
  const StepTime big = step_time(in, TimeOptions{});
  CHECK(big.host_bound == 0);
  CHECK(big.total == Approx(big.compute + big.optimizer));
  CHECK(big.matmul > big.memory_bound);
  // The parts add up.
  CHECK(big.compute == Approx(big.matmul + big.attention + big.memory_bound + big.host_bound));
}

TEST_CASE("step time: QLoRA dequantizes its NF4 base per use; offload's host step by implementation", "[time]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  TrainingWorkload w;
  w.seq = 2048;
  w.lora.rank = 16;
  w.lora.targets = {"all-linear"};
  const MicrobatchWork lora = microbatch_work(s, w, 2048, true, Kernels::eager);
  w.lora.qlora = true;
  const MicrobatchWork qlora = microbatch_work(s, w, 2048, true, Kernels::eager);
  // The same FLOPs; forward and backward each read the packed codes and write a bf16 copy of every decoder linear:
  // 32 layers × 218,103,808 weights × (0.5 + 2 + 1/16) B.
  CHECK(qlora.matmul_flops == lora.matmul_flops);
  const double linears = 32.0 * 218'103'808;
  CHECK(qlora.forward.memory_bytes - lora.forward.memory_bytes == Approx(linears * 2.5625));
  CHECK(qlora.backward.memory_bytes - lora.backward.memory_bytes == Approx(linears * 2.5625));
  // DeepSpeed's CPUAdam runs 5–7× torch's CPU AdamW (DeepSpeed docs): a 1B shard's host step is ~0.7 s, not 4.1.
  CHECK(host_optimizer_seconds(1e9, Profile::pytorch) == Approx(4.1));
  CHECK(host_optimizer_seconds(1e9, Profile::deepspeed) == Approx(0.625 + 2.0 / 32));
}

TEST_CASE("step time: GEMMs run at the burst rate as far as the power limit allows", "[time]") {
  // burst 1.2 × TDP for the GEMMs, the rest at 0.6: 1/s = max(1, 1.2 − 0.4 · O/G).
  DeviceRates r;
  r.burst = 1.2;
  r.other_power = 0.6;
  auto slowed = [&](double gemm, double other) {
    PassTime f, b;
    f.gemm = gemm / 2, b.gemm = gemm / 2, f.memory = other / 2, b.attention = other / 2;
    gemm_power_limit(f, b, r);
    return f.gemm + b.gemm;
  };
  CHECK(slowed(1.0, 0.0) == Approx(1.2));    // GEMMs back to back: the sustained rate
  CHECK(slowed(1.0, 0.25) == Approx(1.1));   // 1.2 − 0.4 · 0.25
  CHECK(slowed(1.0, 1.0) == Approx(1.0));    // light kernels half the time: the burst rate holds
  r.burst = 1;                               // no burst measured: nothing changes
  CHECK(slowed(1.0, 0.0) == Approx(1.0));
}

TEST_CASE("step time: the eager loss's passes over the logits, chunked or not; a fused kernel's", "[time]") {
  // bf16 logits: forward 22 + 2 bytes per logit (upcast, log-softmax), backward 26 + 2 (NLL's zeroed gradient,
  // log-softmax backward, the cast back); Liger / Megatron: 2c each way.
  const ModelSpec s = find_preset("llama-3.2-1b").spec;
  const double logits = 1000.0 * double(s.vocab);
  for (Loss loss : {Loss::eager, Loss::chunked, Loss::fused}) {
    TrainingWorkload w;
    w.loss = loss;
    const detail::WorkContext x{s, w, 1000, 2, 2, 2, 0, true, false, false};
    MicrobatchWork m;
    detail::add_head(m, x);
    const bool fused = loss == Loss::fused;
    CHECK(m.forward.memory_bytes == Approx(logits * (fused ? 4 : 24)));
    CHECK(m.backward.memory_bytes == Approx(logits * (fused ? 4 : 28)));
  }
}

TEST_CASE("step time: q/k norms and autocast's fp32 residual stream in a layer's memory-bound bytes", "[time]") {
  ModelSpec s = find_preset("qwen3-30b-a3b").spec;
  s.moe = {};
  const double h = double(s.hidden), q = double(s.q_dim()), kv = double(s.kv_dim());
  const double with = detail::layer_forward_bytes(s, false, 2, 2, 1, 0, false);
  s.qk_norm = false;
  const double without = detail::layer_forward_bytes(s, false, 2, 2, 1, 0, false);
  CHECK(with - without == Approx(36 * (q + kv)));  // HF's RMSNorm: ~36 bytes per element
  // Autocast (fp32 stream): residual adds read 2 + 4 and write 4 (+8 per hidden element over two adds), rotary's
  // 10 passes in fp32 (+20 per rotated element), five casts of fp32 linear inputs (6 bytes each).
  const double amp = detail::layer_forward_bytes(s, false, 2, 4, 1, 0, false);
  CHECK(amp - without == Approx(8 * h + 20 * (q + kv) * s.partial_rotary + 30 * h));
}
