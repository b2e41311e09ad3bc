// vLLM 0.19's start-up arithmetic, by hand and against the numbers vLLM itself logged (tests/data/engines).
#include <catch2/catch.hpp>

#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>

using namespace gpuplan;

namespace {
constexpr double kGiB = 1073741824.0;
constexpr double kH100CudaTotal = 85'017'493'504.0;  // torch.cuda.mem_get_info() on an H100 80GB HBM3

InferenceWorkload vllm_on_h100(std::int64_t max_model_len, double util) {
  InferenceWorkload w;
  w.profile = Profile::vllm;
  w.device_memory = Bytes(85'520'809'984.0);
  w.cuda_total = Bytes(kH100CudaTotal);
  w.context = max_model_len;
  w.gpu_memory_utilization = util;
  return w;
}
}  // namespace

TEST_CASE("vLLM: scheduler defaults follow the device", "[memory][inference][vllm]") {
  // arg_utils.get_batch_defaults (vllm serve): ≥ 70 GiB and not an A100 → 8192 tokens, 1024 sequences.
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false).max_num_batched_tokens == 8192);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false).max_num_seqs == 1024);
  CHECK(vllm_batch_defaults(Bytes(79.15 * kGiB), true).max_num_batched_tokens == 2048);  // A100 80GB
  CHECK(vllm_batch_defaults(Bytes(44.5 * kGiB), false).max_num_seqs == 256);            // L40S
}

TEST_CASE("vLLM: Llama 3.1 8B on an H100 at 0.95, by hand and as vLLM logged it", "[memory][inference][vllm]") {
  const auto e = estimate_inference_memory(find_preset("llama-3.1-8b").spec, vllm_on_h100(16384, 0.95));
  // Weights 8,030,261,248 × 2 B plus the rotary cos/sin cache 131,072 positions × 128 × 2 B.
  const double weights = 8'030'261'248.0 * 2 + 131'072.0 * 128 * 2;
  CHECK(e.memory.components.weights.in(unit::bytes) == weights);
  // Profiling peak: the sampler over 1024 rows × 128,256 logits at 15 B, beside the step's hidden states
  // (8192 + 1024 rows × 4096 × 2 B); the widest FFN moment (8192 × 2 B × (3·14336 + 4·4096)) is smaller.
  const double peak = 15.0 * 1024 * 128'256 + 2.0 * (8192 + 1024) * 4096;
  CHECK(e.serving.activation_peak->in(unit::bytes) == peak);
  const double pool = 0.95 * kH100CudaTotal - weights - peak - 0.25 * kGiB;
  CHECK(e.serving.kv_pool->in(unit::bytes) == Approx(pool));
  CHECK(*e.serving.kv_blocks == std::int64_t(pool / (16 * 131'072.0)));
  CHECK(*e.serving.kv_tokens == *e.serving.kv_blocks * 16);
  CHECK(*e.serving.max_concurrency == Approx(double(*e.serving.kv_tokens) / 16384));
  // vLLM 0.19 logged: weights 14.99 GiB, torch peak 1.89 GiB, Available KV cache memory 58.11 GiB, 476,016 tokens,
  // 29.05x (llm-d-planner accuracy/results/v0.19.0 logs; its total was 79.19 GiB, ours 79.18).
  CHECK(e.memory.components.weights.in(unit::bytes) / kGiB == Approx(14.99).epsilon(0.005));
  CHECK(e.serving.activation_peak->in(unit::bytes) / kGiB == Approx(1.89).epsilon(0.02));
  CHECK(double(*e.serving.kv_tokens) == Approx(476'016).epsilon(0.005));
  CHECK(*e.serving.max_concurrency == Approx(29.05).epsilon(0.005));
  // The engine's own budget lines: CUDA context and graphs outside the budget.
  CHECK(e.memory.total.in(unit::bytes) == Approx(0.51 * kGiB + 0.95 * kH100CudaTotal + 0.84 * kGiB));
}

TEST_CASE("vLLM: fused MoE keeps its caches while the sampler runs", "[memory][inference][vllm]") {
  // Qwen1.5-MoE-A2.7B: top-4 of 60 experts of width 1408, hidden 2048, vocab 151,936. Caches per routed token:
  // max(2·1408, 2048) + 1408 elements; vLLM 0.19 logged a torch peak of 2.47 GiB.
  ModelSpec s = find_preset("qwen3-30b-a3b").spec;
  s.hidden = 2048;
  s.vocab = 151'936;
  s.moe.experts = 60;
  s.moe.experts_per_token = 4;
  s.moe.intermediate = 1408;
  s.moe.shared_experts = 1;
  s.moe.shared_intermediate = 5632;
  const double moe = 8192.0 * 4 * 2 * (2816 + 1408);
  const double sampler = 15.0 * 1024 * 151'936 + 2.0 * (8192 + 1024) * 2048;
  CHECK(vllm_profile_peak(s, 8192, 1024, 2, 1) == moe + sampler);
  CHECK((moe + sampler) / kGiB == Approx(2.47).epsilon(0.01));
}

TEST_CASE("vLLM: whether it starts, the longest max_model_len and the smallest utilization", "[memory][inference][vllm]") {
  const ModelSpec s = find_preset("llama-3.1-70b").spec;  // 141 GB of bf16 weights: not on one H100
  auto e = estimate_inference_memory(s, vllm_on_h100(8192, 0.95));
  CHECK_FALSE(*e.serving.starts);
  CHECK(e.serving.kv_pool->in(unit::bytes) < 0);
  // Llama 3.1 8B: the smallest utilization is the non-KV memory plus one max_model_len request, over the total.
  e = estimate_inference_memory(find_preset("llama-3.1-8b").spec, vllm_on_h100(8192, 0.95));
  const double non_kv = e.memory.components.weights.in(unit::bytes) + e.serving.activation_peak->in(unit::bytes) +
                        e.serving.non_torch->in(unit::bytes);
  CHECK(*e.serving.min_gpu_memory_utilization == Approx((non_kv + 8192.0 * 131'072) / kH100CudaTotal));
  auto low = vllm_on_h100(8192, *e.serving.min_gpu_memory_utilization + 1e-4);
  CHECK(*estimate_inference_memory(find_preset("llama-3.1-8b").spec, low).serving.starts);
  low.gpu_memory_utilization -= 2e-4;
  CHECK_FALSE(*estimate_inference_memory(find_preset("llama-3.1-8b").spec, low).serving.starts);
  // The longest max_model_len that starts is the pool's tokens, capped by the model's 131,072 positions.
  auto tight = vllm_on_h100(8192, 0.30);
  const auto t = estimate_inference_memory(find_preset("llama-3.1-8b").spec, tight);
  CHECK(*t.serving.largest_max_model_len == *t.serving.kv_tokens);
  CHECK(*t.serving.largest_max_model_len < 131'072);
}

TEST_CASE("SGLang: mem_fraction_static by its heuristic, the token pool by profile_max_num_token", "[sglang]") {
  // server_args._handle_gpu_memory_settings, H100 (nvidia-smi 81,559 MiB): chunked prefill 8192, CUDA graphs up to
  // batch 256 (TP < 4) → reserved 512 + 1.5·8192 + 2·256 + 1/8·1024 = 13,440 MB → round(68,119 / 81,559, 3).
  CHECK(sglang_defaults(81559, 1).mem_fraction_static == Approx(0.835));
  // TP 4: batch 512 and 4/8·1024 → 14,336 MB → 0.824. RTX 4090 (24,564 MiB): 2048 and 24 → 3,760 MB → 0.847.
  CHECK(sglang_defaults(81559, 4).mem_fraction_static == Approx(0.824));
  CHECK(sglang_defaults(24564, 1).mem_fraction_static == Approx(0.847));
  // Qwen3-235B-A22B FP8 on 4 × H100 at 0.93 (vllm issue #21348): SGLang logged 367,404 tokens, K size 8.23 GB.
  InferenceWorkload w;
  w.profile = Profile::sglang;
  w.tp = 4;
  w.weights = WeightFormat::fp8;
  w.mem_fraction_static = 0.93;
  w.device_memory = Bytes(85'520'809'984.0);
  w.cuda_total = Bytes(kH100CudaTotal);
  const auto e = estimate_inference_memory(find_preset("qwen3-235b-a22b").spec, w);
  // One token: 94 layers × K and V × 1 KV head per GPU (4 over TP 4) × 128 × 2 B.
  CHECK(e.kv_bytes_per_token.in(unit::bytes) == 94.0 * 2 * 128 * 2);
  CHECK(double(*e.serving.kv_tokens) == Approx(367'404).epsilon(0.02));
  const double free0 = kH100CudaTotal - 0.51 * kGiB - (2.1 - 0.25) * kGiB;
  CHECK(e.serving.kv_pool->in(unit::bytes) ==
        Approx(0.93 * free0 - e.memory.components.weights.in(unit::bytes)));
}
