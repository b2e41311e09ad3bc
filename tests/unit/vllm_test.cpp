// vLLM 0.19's start-up arithmetic, by hand and against the numbers vLLM itself logged (tests/data/engines).
#include <catch2/catch.hpp>

#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>

using namespace gpuplan;

namespace {
constexpr double kGiB = 1073741824.0;
constexpr double kH100CudaTotal = 85'017'493'504.0;  // torch.cuda.mem_get_info() on an H100 80GB HBM3

// 1 KiB per token in every layer (the groups depend on the pages' ratios only).
std::vector<double> uniform_kv(const ModelSpec& s) { return std::vector<double>(std::size_t(s.layers), 1024.0); }

InferenceWorkload vllm_on_h100(std::int64_t max_model_len, double util) {
  InferenceWorkload w;
  w.profile = Profile::vllm;
  w.device_memory = Bytes(85'520'809'984.0);
  w.cuda_total = Bytes(kH100CudaTotal);
  w.context = max_model_len;
  w.vllm.gpu_memory_utilization = util;
  w.vllm.version = EngineVersion{0, 19, 0};  // the release of the logs these tests check
  return w;
}
}  // namespace

TEST_CASE("vLLM: scheduler defaults follow the device", "[memory][inference][vllm]") {
  // arg_utils.get_batch_defaults (vllm serve): ≥ 70 GiB and not an A100 → 8192 tokens, 1024 sequences.
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false).max_num_batched_tokens == 8192);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false).max_num_seqs == 1024);
  CHECK(vllm_batch_defaults(Bytes(79.15 * kGiB), true).max_num_batched_tokens == 2048);  // A100 80GB
  // The A800's CUDA name ("NVIDIA A800-SXM4-80GB") lacks "a100": the defaults of an H100 (its logs print
  // max_num_batched_tokens=8192 and warm the sampler up with 1024 dummy requests).
  CHECK(vllm_batch_defaults(Bytes(79.25 * kGiB), false).max_num_batched_tokens == 8192);
  CHECK(vllm_batch_defaults(Bytes(79.25 * kGiB), false).max_num_seqs == 1024);
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
  const VllmRelease& v019 = vllm_release(EngineVersion{0, 19, 0});
  CHECK(vllm_profile_peak(s, 8192, 1024, 2, 1, v019) == moe + sampler);
  CHECK((moe + sampler) / kGiB == Approx(2.47).epsilon(0.01));
  // Model Runner V2 (0.29 on for every model): no top-k/top-p in the warm-up, the fp32 copy only.
  CHECK(vllm_profile_peak(s, 8192, 1024, 2, 1, vllm_release(EngineVersion{0, 29, 0})) ==
        moe + 6.0 * 1024 * 151'936 + 2.0 * (8192 + 1024) * 2048);
  // 0.25–0.28 only dense models run it: this MoE keeps 0.19's Triton sampler.
  CHECK(vllm_profile_peak(s, 8192, 1024, 2, 1, vllm_release(EngineVersion{0, 26, 0})) == moe + sampler);
  // MXFP4 experts on Hopper's Triton kernels keep no cache: the sampler's peak alone.
  CHECK(vllm_profile_peak(s, 8192, 1024, 2, 1, v019, false, false) == sampler);
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
  low.vllm.gpu_memory_utilization -= 2e-4;
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
  w.sglang.mem_fraction_static = 0.93;
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

TEST_CASE("engine versions: X.Y[.Z], llama.cpp builds, and the release rows they pick", "[engines]") {
  CHECK(parse_engine_version("0.10", false) == EngineVersion{0, 10, 0});
  CHECK(parse_engine_version("v0.8.5.post1", false) == EngineVersion{0, 8, 5});
  CHECK(parse_engine_version("0.6.5.dev", false) == EngineVersion{0, 6, 5});
  CHECK(parse_engine_version("0.7.1.dev123+g1234abc", false) == EngineVersion{0, 7, 1});
  CHECK(parse_engine_version("b4343", true) == EngineVersion{4343, 0, 0});
  CHECK(parse_engine_version("4343", true) == EngineVersion{4343, 0, 0});
  for (const char* bad : {"", "0", "0.", "x.1", "0.1.2.3", "1..2", "0.-1", "0.6.5.de", "0.6.5.po"}) CHECK_THROWS_AS(parse_engine_version(bad, false), InputError);
  for (const char* bad : {"", "b", "b12x", "0.1"}) CHECK_THROWS_AS(parse_engine_version(bad, true), InputError);
  // A version picks the last row at or below it; before the first row is refused.
  CHECK(vllm_release(EngineVersion{0, 12, 1}).from == EngineVersion{0, 10, 0});
  CHECK(vllm_release(EngineVersion{0, 8, 5}).engine == VllmEngine::v1_early);
  CHECK(vllm_release(std::nullopt).from == vllm_newest);
  CHECK_THROWS_AS(vllm_release(EngineVersion{0, 1, 7}), InputError);
  CHECK(vllm_release(EngineVersion{0, 4, 0}).charges_context);
  CHECK_FALSE(vllm_release(EngineVersion{0, 4, 3}).charges_context);
  CHECK(sglang_release(EngineVersion{0, 5, 3}).fraction == SglangFraction::reserved_by_gpu);
  CHECK(sglang_release(EngineVersion{0, 5, 4}).fraction == SglangFraction::by_prefill_and_graphs);
}

TEST_CASE("vLLM: hybrid KV-cache groups (kv_cache_utils), blocks per request and concurrency", "[engines][vllm]") {
  const VllmRelease& now = vllm_release(std::nullopt);
  // gpt-oss-120b: 36 layers alternating 128-token sliding windows and full attention → 2 groups of 18 layers.
  const ModelSpec oss = find_preset("gpt-oss-120b").spec;
  const VllmKvGroups g = vllm_kv_groups(oss, uniform_kv(oss), now);
  CHECK(g.group_size == 18);
  CHECK(g.full_groups == 1);
  CHECK(g.window_groups == 1);
  // One max_model_len request of 131,072 tokens at 8192 batched tokens: 8192 full blocks, and
  // ⌈(128 − 1 + 8192) / 16⌉ + 1 = 521 blocks of the sliding group (SlidingWindowSpec.max_memory_usage_bytes).
  CHECK(g.request_blocks(131'072, 8192) == 8192 + 521);
  // "GPU KV cache size": blocks per group × 16; the pool is 18 tensors of num_blocks pages of 16 KiB.
  const std::int64_t blocks = g.blocks(10.0 * kGiB);
  CHECK(blocks == std::int64_t(10.0 * kGiB / (16 * 1024.0) / 18));
  CHECK(g.tokens(blocks) == blocks / 2 * 16);
  // Before 0.10 every layer counted as full attention: one group of 36.
  const VllmKvGroups old = vllm_kv_groups(oss, uniform_kv(oss), vllm_release(EngineVersion{0, 9, 2}));
  CHECK(old.group_size == 36);
  CHECK(old.request_blocks(131'072, 8192) == 8192);
  // Gemma 3 27B: 52 sliding and 10 full layers → groups of 10: 1 full and ⌈52/10⌉ = 6 sliding (8 padding layers).
  const ModelSpec& gemma3 = find_preset("gemma-3-27b").spec;
  const VllmKvGroups g3 = vllm_kv_groups(gemma3, uniform_kv(gemma3), now);
  CHECK(g3.group_size == 10);
  CHECK(g3.full_groups == 1);
  CHECK(g3.window_groups == 6);
  CHECK(g3.tokens(700) == 700 / 7 * 16);
  // gpt-oss concurrency on an H100 at 0.95 and max_model_len 131,072: the pool's blocks over 8,713 per request,
  // not its tokens over 131,072.
  InferenceWorkload w = vllm_on_h100(131'072, 0.95);
  w.weights = WeightFormat::mxfp4;
  const auto e = estimate_inference_memory(oss, w);
  CHECK(*e.serving.max_concurrency == Approx(double(*e.serving.kv_blocks) / 8713.0));
  CHECK(*e.serving.max_concurrency > 1.8 * double(*e.serving.kv_tokens) / 131'072);
  // From 0.21 the logged tokens are that concurrency × max_model_len (a 0.24.0 log: 567,978 = 4.33 × 131,072; issue
  // #43308: Gemma 4's figure grew ten-fold from 0.20.0 to 0.21.0 over the same pool); 0.20 still divides the blocks.
  w.vllm.version = EngineVersion{0, 21, 0};
  const auto e21 = estimate_inference_memory(oss, w);
  CHECK(*e21.serving.kv_tokens == std::int64_t(*e21.serving.max_concurrency * 131'072));
  w.vllm.version = EngineVersion{0, 20, 0};
  const auto e20 = estimate_inference_memory(oss, w);
  CHECK(*e20.serving.kv_tokens == *e20.serving.kv_blocks / 2 * 16);
}

TEST_CASE("vLLM: linear-attention layers are KV-cache groups of their own (hybrid manager)", "[engines][vllm]") {
  // Qwen3-Next: 12 full-attention and 36 Gated DeltaNet layers → groups of 12: 1 attention group and 3 state groups;
  // the logged tokens divide the blocks by all 4 (_report_kv_cache_config before 0.21; a 0.11.2 Kimi Linear log,
  // 7 MLA + 20 KDA layers, prints blocks ÷ 4 × 16).
  const ModelSpec next = find_preset("qwen3-next-80b-a3b").spec;
  const VllmKvGroups g = vllm_kv_groups(next, uniform_kv(next), vllm_release(EngineVersion{0, 11, 2}));
  CHECK(g.group_size == 12);
  CHECK(g.full_groups == 1);
  CHECK(g.linear_groups == 3);
  CHECK(g.tokens(4000) == 1000 * 16);
  CHECK(g.request_blocks(4096, 8192) == 256);  // only the attention group's blocks grow with the request
  // Before the hybrid manager (V0) the state was a cache of its own: one group, the attention layers'.
  CHECK(vllm_kv_groups(next, uniform_kv(next), vllm_release(EngineVersion{0, 9, 2})).groups() == 1);
}

TEST_CASE("vLLM: the vision encoder profiled on one image of the maximum feature size (profile_run)", "[engines][vllm]") {
  // Qwen3.6-35B-A3B's encoder: h 1,152, i 4,304, patches 2 × 16² × 3 channels = 1,536 pixel values, merge 2 × 2, out 2,048.
  VisionEncoderShape e;
  e.depth = 27, e.hidden = 1152, e.intermediate = 4304, e.patch = 16, e.temporal_patch = 2, e.merge = 2;
  e.out_hidden = 2048, e.position_embeddings = 2304;
  const VllmRelease& r = vllm_release(EngineVersion{0, 24, 0});
  // 16,777,216 pixels / 32² = 16,384 tokens, 65,536 patches; a budget of max(8,192, 16,384) holds 1 image.
  // Per patch: 1,536 pixels + max(9h, 3h + 10h, 3h + 2i) = 1,536 + 14,976 (attention) elements of 2 bytes.
  const VllmEncoderProfile p = vllm_encoder_profile(e, 8192, 2, 1, r);
  CHECK(p.peak == 65'536.0 * 2 * (1536 + 13 * 1152));  // 2.02 GiB
  CHECK(p.kept == 2.0 * (65'536.0 * 1536 + 16'384.0 * 2048));  // the dummy pixels and the encoder's 16,384 outputs
  // A 32,768-token budget holds 2 images; at TP 2 the attention's qkv and copies halve: 3h + 5h = 8h < 9h (the
  // position-embedding gather), and the MLP's 3h + i = 7,760 < 10,368.
  CHECK(vllm_encoder_profile(e, 32'768, 2, 1, r).peak == 2 * p.peak);
  CHECK(vllm_encoder_profile(e, 8192, 2, 2, r).peak == 65'536.0 * 2 * (1536 + 9 * 1152));
  CHECK(vllm_encoder_profile(VisionEncoderShape{}, 8192, 2, 1, r).peak == 0);        // no encoder
  CHECK(vllm_encoder_profile(e, 8192, 2, 1, vllm_release(EngineVersion{0, 6, 0})).peak == 0);  // V0: not modelled
}

TEST_CASE("vLLM: attention blocks raised until a page holds a linear layer's state (hybrid models, 0.10.2 on)",
          "[engines][vllm]") {
  const ModelSpec next = find_preset("qwen3-next-80b-a3b").spec;
  // Gated DeltaNet state as vLLM keeps it: conv window of kernel − 1 = 3 columns over q, k, v (2 × 16 × 128 +
  // 32 × 128 = 8,192 channels) in bf16, and 32 value heads × 128 × 128 in fp32: 49,152 + 2,097,152 bytes.
  CHECK(vllm_linear_state_bytes(next, 2, 1) == 2'146'304.0);
  CHECK(vllm_linear_state_bytes(next, 2, 2) == 1'073'152.0);
  // The smallest multiple of 16 tokens whose page holds it: 2,146,304 / 4,096 = 524 → 528 (vLLM 0.19.1's
  // Qwen3.5-4B log, bf16 cache of 4 KV heads × 256), / 1,024 = 2,096 (fp8, 2 KV heads), / 2,048 = 1,048 → 1,056.
  CHECK(vllm_state_block(2'146'304, 4096, false) == 528);
  CHECK(vllm_state_block(2'146'304, 1024, false) == 2096);
  CHECK(vllm_state_block(2'146'304, 2048, false) == 1056);
  CHECK(vllm_state_block(540'000, 1152, true) == 512);  // MLA aligns to 64: 468.75 → 512
  const VllmRelease& r = vllm_release(EngineVersion{0, 24, 0});
  const std::vector<double> kv(std::size_t(next.layers), 2048.0);  // bf16, 2 KV heads × 256, K and V
  const VllmKvGroups g = vllm_kv_groups(next, kv, r, 2'146'304, EngineVersion{0, 24, 0}, true);
  CHECK(g.full_block == 1056);
  CHECK(g.page == 1056.0 * 2048);
  CHECK(g.linear_pages == 2);  // prefix caching: mamba_cache_mode align
  // 12 attention + 36 GDN layers: groups of 12, 1 + 3. A 131,072-token request: ⌈131,072 / 1,056⌉ = 125 attention
  // blocks and 2 pages in each of the 3 state groups.
  CHECK(g.request_blocks(131'072, 8192) == 125 + 3 * 2);
  CHECK(vllm_kv_groups(next, kv, r, 2'146'304, EngineVersion{0, 24, 0}, false).request_blocks(131'072, 8192) == 125 + 3);
  // Align mode from 0.16 only; before 0.10.2 the state lived beside 16-token blocks.
  CHECK(vllm_kv_groups(next, kv, r, 2'146'304, EngineVersion{0, 11, 2}, true).linear_pages == 1);
  const VllmKvGroups old = vllm_kv_groups(next, kv, vllm_release(EngineVersion{0, 10, 0}), 2'146'304, EngineVersion{0, 10, 1});
  CHECK(old.linear_pages == 0);
  CHECK(old.full_block == 16);
}

TEST_CASE("vLLM: the sampler warm-up, non-torch memory and accounting by release and interconnect", "[engines][vllm]") {
  const ModelSpec s = find_preset("llama-3.1-8b").spec;
  // torch.sort top-k/top-p (before 0.17) holds 36 B per logit beside the bf16 logits, the Triton kernel 13.
  const double sort = vllm_profile_peak(s, 8192, 1024, 2, 1, vllm_release(EngineVersion{0, 11, 0}));
  const double triton = vllm_profile_peak(s, 8192, 1024, 2, 1, vllm_release(EngineVersion{0, 19, 0}));
  CHECK(sort - triton == Approx((36.0 - 13.0) * 1024 * 128'256));
  // With FlashInfer installed (the log's "Using FlashInfer for top-p & top-k sampling") 0.11's warm-up masks and
  // softmaxes the fp32 logits instead of sorting them: 12 B per logit, 24 fewer than the sort's 36 (1024 rows of
  // Llama 3.1's 128,256: 3.15 GB less).
  VllmRelease fi = vllm_release(EngineVersion{0, 11, 0});
  fi.sampler = VllmSampler::flashinfer;
  CHECK(sort - vllm_profile_peak(s, 8192, 1024, 2, 1, fi) == Approx(24.0 * 1024 * 128'256));
  // Early V1 also kept the logits of all 8192 profiled tokens.
  const double early = vllm_profile_peak(s, 8192, 1024, 2, 1, vllm_release(EngineVersion{0, 8, 4}));
  CHECK(early - sort == Approx(2.0 * 8192 * 128'256));
  // Non-torch with TP: NVSwitch (NCCL NVLS) 2.1 GiB, otherwise 0.4; one GPU 0.25.
  CHECK(vllm_non_torch_bytes(2, GpuLink::nvswitch) == Approx(2.1 * kGiB));
  CHECK(vllm_non_torch_bytes(2, GpuLink::pcie) == Approx(0.4 * kGiB));
  CHECK(vllm_non_torch_bytes(1, GpuLink::pcie) == Approx(0.25 * kGiB));
  // By release: 0.11–0.17 logged 0.13 GiB on one H100 and 0.54 at TP 2; from 0.18 0.25 and 2.1.
  CHECK(vllm_non_torch_bytes(1, GpuLink::nvswitch, vllm_release(EngineVersion{0, 17, 1})) == Approx(0.13 * kGiB));
  CHECK(vllm_non_torch_bytes(2, GpuLink::nvswitch, vllm_release(EngineVersion{0, 11, 0})) == Approx(0.54 * kGiB));
  CHECK(vllm_non_torch_bytes(1, GpuLink::nvswitch, vllm_release(EngineVersion{0, 18, 0})) == Approx(0.25 * kGiB));
  CHECK(vllm_non_torch_bytes(2, GpuLink::pcie, vllm_release(EngineVersion{0, 11, 0})) == Approx(0.4 * kGiB));
  // V0 from 0.7.0 (torch's reserved segments no longer non-torch): 0.16 GiB on one H100 (PR #12126's log); 0.6.x
  // keeps the 0.25 default.
  CHECK(vllm_non_torch_bytes(1, GpuLink::pcie, vllm_release(EngineVersion{0, 7, 3})) == Approx(0.16 * kGiB));
  CHECK(vllm_non_torch_bytes(1, GpuLink::pcie, vllm_release(EngineVersion{0, 6, 5})) == Approx(0.25 * kGiB));
  CHECK(gpu_link_of("NVLink 4 (18 links)") == GpuLink::nvswitch);
  CHECK(gpu_link_of("NVLink bridge (2 GPUs)") == GpuLink::nvlink);
  CHECK(gpu_link_of("NVLink 3 (12 links)") == GpuLink::nvlink);
  CHECK(gpu_link_of("none (no NVLink)") == GpuLink::pcie);
  // Early V1 charges the engine's CUDA context to the budget: the pool is that much smaller than 0.9's, beyond
  // the logits it keeps.
  InferenceWorkload w = vllm_on_h100(16384, 0.9);
  w.vllm.version = EngineVersion{0, 8, 5};
  const auto e8 = estimate_inference_memory(s, w);
  w.vllm.version = EngineVersion{0, 9, 0};
  const auto e9 = estimate_inference_memory(s, w);
  CHECK((e9.serving.kv_pool->in(unit::bytes) - e8.serving.kv_pool->in(unit::bytes)) ==
        Approx(0.51 * kGiB + 2.0 * 8192 * 128'256));
  // V0: 256 sequences, the whole max_model_len in one step below 32k, chunks above it.
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 6, 3}), 16384).max_num_batched_tokens == 16384);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 6, 3}), 1024).max_num_batched_tokens == 2048);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 6, 3}), 131'072).max_num_batched_tokens == 2048);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 5, 4}), 131'072).max_num_batched_tokens == 512);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 3, 3}), 131'072).max_num_batched_tokens == 131'072);
  CHECK(vllm_batch_defaults(Bytes(kH100CudaTotal), false, vllm_release(EngineVersion{0, 6, 3}), 1024).max_num_seqs == 256);
}

TEST_CASE("vLLM 0.2 with TP: the profiling step's all-reduced activations are held to its end", "[engines][vllm]") {
  // Llama 2 70B, 4096 profiled tokens in fp16: 2 × 80 row-parallel outputs + the embedding's = 161 all-reduces of
  // 4096 × 8192 × 2 B (64 MiB) = 10,804,527,104 B (10.06 GiB) on every rank, which PR #2031's total − free profiling
  // charged to the budget until TORCH_NCCL_AVOID_RECORD_STREAMS (0.2.7).
  const ModelSpec s = find_preset("llama-2-70b").spec;
  CHECK(vllm_pending_allreduce_bytes(s, 4096, 2, 4, EngineVersion{0, 2, 4}) == 10'804'527'104.0);
  CHECK(vllm_pending_allreduce_bytes(s, 4096, 2, 1, EngineVersion{0, 2, 4}) == 0.0);   // no all-reduce on one GPU
  CHECK(vllm_pending_allreduce_bytes(s, 4096, 2, 4, EngineVersion{0, 2, 7}) == 0.0);   // record_stream avoided
  // The pool shrinks by exactly that: 10.06 GiB over blocks of 80 layers × 2 × 2 KV heads × 128 × 2 B × 16 tokens
  // (1.25 MiB): 8,243 fewer blocks than 0.2.7's with the same profiling step otherwise.
  InferenceWorkload w;
  w.profile = Profile::vllm;
  w.device_memory = Bytes(80.0 * kGiB);
  w.cuda_total = Bytes(79.35 * kGiB);
  w.context = 4096;
  w.tp = 4;
  w.vllm.version = EngineVersion{0, 2, 4};
  const auto e4 = estimate_inference_memory(s, w);
  w.vllm.version = EngineVersion{0, 2, 7};
  const auto e7 = estimate_inference_memory(s, w);
  CHECK(e7.serving.kv_pool->in(unit::bytes) - e4.serving.kv_pool->in(unit::bytes) == Approx(10'804'527'104.0));
  CHECK(*e7.serving.kv_blocks - *e4.serving.kv_blocks == Approx(8243).margin(1));
}

TEST_CASE("SGLang and Ollama defaults by release", "[engines][sglang]") {
  // Before 0.4.7 (server_args.__post_init__): by TP only.
  const SglangRelease& old = sglang_release(EngineVersion{0, 4, 6});
  CHECK(sglang_defaults(81559, 1, old).mem_fraction_static == 0.88);
  CHECK(sglang_defaults(81559, 2, old).mem_fraction_static == 0.87);
  CHECK(sglang_defaults(24564, 4, old).mem_fraction_static == 0.85);
  CHECK(sglang_defaults(81559, 8, old).mem_fraction_static == 0.81);
  // The req_to_token table: pool tokens / context × 512 requests within [2048, 4096], (n + 1) × (context + 4) int32.
  CHECK(sglang_max_running_requests(300'000, 8192) == 4096);  // 18,750 capped
  CHECK(sglang_max_running_requests(10'000, 8192) == 2048);
  CHECK(sglang_req_to_token_bytes(4096, 131'072) == 4097.0 * 131'076 * 4);
  // Llama 3.1 8B on an H100 at the default context_length (the model's 131,072): ~415k pool tokens → 2048 requests
  // (the floor), a 1.07 GB table out of the share left to activations.
  InferenceWorkload w;
  w.profile = Profile::sglang;
  w.device_memory = Bytes(85'520'809'984.0);
  w.cuda_total = Bytes(kH100CudaTotal);
  const auto e = estimate_inference_memory(find_preset("llama-3.1-8b").spec, w);
  CHECK(*e.serving.kv_tokens / 131'072 * 512 < 2048);
  CHECK(e.memory.components.overhead.in(unit::bytes) == sglang_req_to_token_bytes(2048, 131'072));
  // Ollama's num_ctx: 2048, 4096 from 0.6.7, by VRAM from 0.15.5.
  const Bytes vram24(24.0 * kGiB);
  CHECK(OllamaProfile::default_num_ctx(vram24, OllamaProfile::release(EngineVersion{0, 5, 0})) == 2048);
  CHECK(OllamaProfile::default_num_ctx(vram24, OllamaProfile::release(EngineVersion{0, 6, 7})) == 4096);
  CHECK(OllamaProfile::default_num_ctx(vram24, OllamaProfile::release(EngineVersion{0, 15, 5})) == 32768);
}

TEST_CASE("vLLM: MXFP4 experts padded for the GPU's MoE kernel (Mxfp4MoEMethod.create_weights)", "[engines][vllm]") {
  const ModelSpec oss = find_preset("gpt-oss-120b").spec;  // 36 MoE layers × 128 experts, hidden 2880, width 2880
  CHECK(mxfp4_backend(true, true, false) == Mxfp4Backend::triton);           // H100
  CHECK(mxfp4_backend(false, true, false) == Mxfp4Backend::marlin);          // L40S, RTX 4090
  CHECK(mxfp4_backend(false, false, false) == Mxfp4Backend::marlin);         // A100 has HBM but no FP8
  CHECK(mxfp4_backend(true, true, true) == Mxfp4Backend::flashinfer_sm100);  // B200
  // Marlin at TP 1: width 2880 → 2944 (128), hidden 2880 → 3072 (256); 3 matrices per expert at 4.25 bits.
  CHECK(vllm_mxfp4_padding_bytes(oss, 1, false, Mxfp4Backend::marlin) ==
        Approx(36.0 * 128 * 3 * (2944.0 * 3072 - 2880.0 * 2880) * 4.25 / 8));
  // Triton: the width to 64 only: 2880 needs none, TP 2's 1440 → 1472.
  CHECK(vllm_mxfp4_padding_bytes(oss, 1, false, Mxfp4Backend::triton) == 0);
  CHECK(vllm_mxfp4_padding_bytes(oss, 2, false, Mxfp4Backend::triton) == Approx(36.0 * 128 * 3 * 32 * 2880 * 4.25 / 8));
  // Triton on Hopper also keeps the loaded scales beside their HopperMXScaleLayout copy (rows to 256, columns to 2)
  // and widens the biases to fp32. TP 1: gate_up 5,760 → 5,888 rows × 90, down 2,880 → 3,072 rows × 90, biases
  // 2 × (5,760 + 2,880) bytes: 529,920 + 276,480 + 17,280 = 823,680 bytes per expert.
  CHECK(vllm_mxfp4_triton_copy_bytes(oss, 1, false) == Approx(36.0 * 128 * 823'680));
  // TP 2: width 1,440 → 1,472; gate_up 2,944 → 3,072 rows × 90, down 3,072 rows × 46, biases 2 × (2,944 + 2,880):
  // 276,480 + 141,312 + 11,648 = 429,440.
  CHECK(vllm_mxfp4_triton_copy_bytes(oss, 2, false) == Approx(36.0 * 128 * 429'440));
}

TEST_CASE("vLLM: Gemma 4's unequal pages and shared-KV layers in the KV-cache groups", "[engines][vllm][gemma4]") {
  const VllmRelease& r = vllm_release(EngineVersion{0, 19, 0});
  // 26B A4B, bf16: a sliding layer holds 2·8·256·2 = 8 KiB per token, a full one 2·2·512·2 = 4 KiB, so
  // unify_kv_cache_spec_page_size gives the full layers blocks of 32 tokens (one 128 KiB page either way); 25
  // sliding and 5 full layers: groups of 5, 5 sliding and 1 full.
  const ModelSpec& moe = find_preset("gemma-4-26b-a4b").spec;
  InferenceWorkload w;
  w.profile = Profile::vllm;
  const InferenceTensors t = inference_tensors(moe, w, WeightFormat::bf16, KvDtype::bf16);
  const VllmKvGroups g = vllm_kv_groups(moe, t.kv_tok, r);
  CHECK(g.page == 16 * 8192.0);
  CHECK(g.full_block == 32);
  CHECK(g.window_block == 16);
  CHECK(g.group_size == 5);
  CHECK(g.full_groups == 1);
  CHECK(g.window_groups == 5);
  // A 131,072-token request at 2048 batched tokens: 131,072 / 32 full blocks and ⌈(1024 − 1 + 2048) / 16⌉ + 1 = 193
  // in each sliding group; the logged tokens: blocks ÷ 6 groups × the smallest block (16).
  CHECK(g.request_blocks(131'072, 2048) == 4096 + 5 * 193);
  CHECK(g.tokens(600) == 600 / 6 * 16);
  // vLLM holds a V slot in each full layer's qkv_proj (K loaded into both): 5 × 2·512·2816 parameters.
  CHECK(vllm_unused_kv_projection_params(moe) == 5.0 * 2 * 512 * 2816);
  // E2B: the last 20 layers read the K and V of layers 13 and 14 and join no group: 12 sliding layers of
  // 1 KiB per token (blocks of 32) and 3 full ones of 2 KiB (blocks of 16): groups of 3, 4 sliding and 1 full.
  const ModelSpec& e2b = find_preset("gemma-4-e2b").spec;
  const InferenceTensors te = inference_tensors(e2b, w, WeightFormat::bf16, KvDtype::bf16);
  const VllmKvGroups ge = vllm_kv_groups(e2b, te.kv_tok, r);
  CHECK(ge.group_size == 3);
  CHECK(ge.window_groups == 4);
  CHECK(ge.full_groups == 1);
  CHECK(ge.window_block == 32);
  CHECK(ge.full_block == 16);
  // Its shared layers keep k and v projections vLLM never loads: 16 sliding × 2·256·1536 + 4 full × 2·512·1536.
  CHECK(vllm_unused_kv_projection_params(e2b) == 16.0 * 2 * 256 * 1536 + 4.0 * 2 * 512 * 1536);
}

TEST_CASE("SDPA's kernel by layer: Gemma 4's 512-wide full-attention heads miss flash attention", "[memory][gemma4]") {
  const ModelSpec& s = find_preset("gemma-4-31b").spec;
  CHECK(detail::sdpa_backend(s, Attention::sdpa, 2.0, 0) == detail::AttentionKernel::flash);
  CHECK(detail::sdpa_backend(s, Attention::sdpa, 2.0, 5) == detail::AttentionKernel::math);  // 4 KV heads of 32
  CHECK(detail::sdpa_backend(s, Attention::sdpa, 2.0) == detail::AttentionKernel::math);     // the widest layer
}
