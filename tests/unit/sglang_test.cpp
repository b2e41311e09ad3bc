// SGLang's start-up arithmetic (include/gpuplan/memory/sglang.h), by hand and against the numbers SGLang logged
// (tests/data/engines/sglang.jsonl, tests/data/engines/collected/sglang.jsonl).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/model_hf.h>

using namespace gpuplan;

namespace {
constexpr double kSglangGiB = 1073741824.0;
}

TEST_CASE("SGLang: hybrid models share the pool between state slots and full-attention tokens", "[engines][sglang]") {
  const ModelSpec next = find_preset("qwen3-next-80b-a3b").spec;
  // One slot at TP 4, 36 Gated DeltaNet layers: conv (2·16·128 + 32·128) × (4 − 1) × 2 B / 4 = 12,288 B and the
  // fp32 state 32 × 128 × 128 × 4 B / 4 = 524,288 B a layer. Issue #12419 logged 2914 slots holding conv 1.20 GB
  // (442,170 B a slot) and ssm 51.24 GB (18,880,xxx B a slot).
  CHECK(sglang_state_slot_bytes(next, 2, 4) == 36.0 * (12'288 + 524'288));
  // Its pool: K + V 2 × 29.13 GB and the state 1.20 + 51.24 GB. With radix cache the state takes 0.9 / 1.9 of it in
  // whole slots: 2914.
  const double rest = (2 * 29.13 + 1.20 + 51.24) * kSglangGiB;
  const SglangStatePool p = sglang_state_pool(rest, sglang_state_slot_bytes(next, 2, 4), true, 0);
  CHECK(p.slots == 2914);
  CHECK(p.reserved == 2914 * sglang_state_slot_bytes(next, 2, 4));  // what the KV pool's sizing takes out
  CHECK(p.bytes == 2915 * sglang_state_slot_bytes(next, 2, 4));     // and the padding slot MambaPool adds
  CHECK(p.bytes * 524'288 / (524'288 + 12'288) == Approx(51.24 * kSglangGiB).epsilon(0.001));  // its ssm part
  // Radix cache off (Kimi Linear): one slot per running request, 512 when not given.
  CHECK(sglang_state_pool(rest, 1e6, false, 4).slots == 4);
  CHECK(sglang_state_pool(rest, 1e6, false, 0).slots == 512);
  CHECK(sglang_state_pool(rest, 0, true, 0).slots == 0);  // not a hybrid model
  // End to end at TP 2 on an 80 GB A100 at 0.98: the KV pool is 1 / 1.9 of what the weights leave, the state the rest.
  InferenceWorkload w;
  w.profile = Profile::sglang;
  w.tp = 2;
  w.context = 128'000;
  w.sglang.mem_fraction_static = 0.98;
  w.sglang.version = EngineVersion{0, 5, 5};
  w.device_memory = Bytes(80.0 * kSglangGiB);
  const auto e = estimate_inference_memory(next, w);
  const double kv = e.serving.kv_pool->in(unit::bytes);
  const double state = e.memory.components.kv_cache.in(unit::bytes) - kv;
  CHECK(state / kv == Approx(0.9).epsilon(0.05));
  CHECK(double(*e.serving.kv_tokens) * e.kv_bytes_per_token.in(unit::bytes) <= kv);
}

TEST_CASE("SGLang 0.5.5: the KV pool is the rest less max_mamba_cache_size slots, the padding slot beyond it",
          "[engines][sglang]") {
  const ModelSpec next = find_preset("qwen3-next-80b-a3b").spec;
  // A slot at TP 2: 36 layers × (conv 8192 × 3 × 2 B / 2 = 24,576 + state 32 × 128 × 128 × 4 B / 2 = 1,048,576) =
  // 38,633,472 B (the log: 31 slots, ssm 1.09 GB + conv 0.03 GB); at TP 1 twice that.
  CHECK(sglang_state_slot_bytes(next, 2, 2) == 38'633'472.0);
  CHECK(sglang_state_slot_bytes(next, 2, 1) == 77'266'944.0);
  // yuy4o/llm's 0.5.5 A800 logs, from their own figures: rest = avail after weights − (1 − 0.98) × avail at start.
  // TP 2: 3.92 − 0.02 × 78.54 = 2.3492 GiB; × 0.9 / 1.9 / 38,633,472 → 30 slots (logged 30); less 30 slots, 1.2697
  // GiB / 12,288 B = 110,956 tokens (logged 110,539; 31 slots would leave 107,812).
  auto tokens = [](double rest, const SglangStatePool& p, double per_token) { return std::floor((rest - p.reserved) / per_token); };
  const double rest2 = (3.92 - 0.02 * 78.54) * kSglangGiB;
  const SglangStatePool tp2 = sglang_state_pool(rest2, 38'633'472.0, true, 4);
  CHECK(tp2.slots == 30);
  CHECK(tokens(rest2, tp2, 12'288) == 110'956);
  // TP 1 (the FP8 checkpoint): 2.61 − 0.02 × 78.67 = 1.0366 GiB → 6 slots (logged 6), 26,425 tokens of 24,576 B
  // (logged 26,216; 7 slots would leave 23,281).
  const double rest1 = (2.61 - 0.02 * 78.67) * kSglangGiB;
  const SglangStatePool tp1 = sglang_state_pool(rest1, 77'266'944.0, true, 4);
  CHECK(tp1.slots == 6);
  CHECK(tokens(rest1, tp1, 24'576) == 26'425);
  // Without the radix cache the fixed slots are what the pool gives up: --max-running-requests of them.
  CHECK(sglang_rest_for(1e9, 1e6, false, 4) == 1e9 + 4e6);
}

TEST_CASE("SGLang: what the weights' share holds beside the weights", "[engines][sglang]") {
  // RoPE cos/sin cache: fp32 on CUDA, the model's dtype on ROCm.
  CHECK(sglang_rotary_element_bytes(false, 2) == 4);
  CHECK(sglang_rotary_element_bytes(true, 2) == 2);
  // Qwen3-Next's routers, 48 × 512 × 2048 bf16 = 100,663,296 B, whole on each rank: half of it more at TP 2, three
  // quarters at TP 4; none for a dense model or at TP 1.
  const ModelSpec next = find_preset("qwen3-next-80b-a3b").spec;
  CHECK(sglang_replicated_router_bytes(next, 2, 2) == 50'331'648.0);
  CHECK(sglang_replicated_router_bytes(next, 2, 4) == 75'497'472.0);
  CHECK(sglang_replicated_router_bytes(next, 2, 1) == 0);
  CHECK(sglang_replicated_router_bytes(find_preset("qwen3-14b").spec, 2, 4) == 0);
}

TEST_CASE("model types the SGLang logs bring: seed_oss", "[engines][sglang][model_hf]") {
  // Seed-OSS 36B (tests/data/engines/configs/seed-oss-36b-instruct.json): Llama's block with q/k/v biases and no
  // o_proj bias (attention_out_bias false). By hand: untied embeddings 2 × 155,136 × 5120; a layer q 5120 × 10,240
  // + 10,240, k and v 5120 × 1024 + 1024 each, o 10,240 × 5120, gated MLP 3 × 5120 × 27,648, two norms of 5120.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/seed-oss-36b-instruct.json");
  const ModelSpec s = model_from_hf_config(nlohmann::json::parse(f), "seed-oss");
  CHECK(s.qkv_bias);
  CHECK_FALSE(s.o_bias);
  const std::int64_t layer = (5120 * 10240 + 10240) + 2 * (5120 * 1024 + 1024) + 10240 * 5120 + 3 * 5120 * 27648 + 2 * 5120;
  CHECK(count_params(s).total.in(unit::params) == 2 * 155136LL * 5120 + 64 * layer + 5120);
  // K and V of 64 layers × 8 heads × 128 × 2 B: the held-out yuy4o/llm log's K size, 4.92 GB over 40,322 tokens, is half.
  InferenceWorkload w;
  w.profile = Profile::sglang;
  w.context = 128'000;
  w.sglang.mem_fraction_static = 0.98;
  w.device_memory = Bytes(80.0 * kSglangGiB);
  CHECK(estimate_inference_memory(s, w).kv_bytes_per_token.in(unit::bytes) == 262'144.0);
}

TEST_CASE("SGLang: mem_fraction_static in its three eras", "[engines][sglang]") {
  // Before 0.4.7: by TP (0.88 at TP 1), chunked prefill 2048 and CUDA graphs to batch 8 under 25,000 MB, as the
  // RTX 3090 log of 0.4.2 prints (tests/data/engines/collected: s-jerryzsj-3090-r1-distill-qwen-7b).
  const SglangRelease& tp_table = sglang_release(EngineVersion{0, 4, 2});
  CHECK(tp_table.fraction == SglangFraction::by_tp);
  const SglangDefaults rtx3090 = sglang_defaults(24576, 1, tp_table);
  CHECK(rtx3090.mem_fraction_static == 0.88);
  CHECK(rtx3090.chunked_prefill_size == 2048);
  CHECK(rtx3090.cuda_graph_max_bs == 8);
  CHECK(sglang_defaults(81559, 1, tp_table).chunked_prefill_size == 8192);
  // 0.4.7-0.5.3 (PR #7054): GBs reserved by GPU class. H100 (81,559 MiB): 9.5 + 1/2 GB at TP 1 → 0.874; 9.5 + 8/2
  // at TP 8 → 0.831, which a public Grok-2 start-up of 2025-09-11 on 8 × 80 GB prints (server_args
  // mem_fraction_static=0.831, tp_size=8; search-index file 45518106035) where the TP table gives 0.81 and PR #10975
  // 0.818. RTX 4090 (24,564 MiB): 2.8 + 0.1 GB → 0.879. H200 (143,771 MiB): 12.5 GB → 0.911. MI300X: 32 GB.
  const SglangRelease& by_gpu = sglang_release(EngineVersion{0, 5, 0});
  CHECK(sglang_defaults(81559, 1, by_gpu).mem_fraction_static == Approx(0.874));
  CHECK(sglang_defaults(81559, 8, by_gpu).mem_fraction_static == Approx(0.831));
  CHECK(sglang_defaults(24564, 1, by_gpu).mem_fraction_static == Approx(0.879));
  CHECK(sglang_defaults(143771, 1, by_gpu).mem_fraction_static == Approx(0.911));
  CHECK(sglang_defaults(143771, 1, by_gpu).cuda_graph_max_bs == 256);
  CHECK(sglang_defaults(196288, 1, by_gpu).mem_fraction_static == Approx(0.833));
  // From 0.5.4 (PR #10975): under 20 GB chunked prefill 2048 and CUDA graphs to 8 → 512 + 3072 + 16 + 128 MB of a
  // 16 GB card (16,376 MiB) → 0.772. On ROCm, aiter attention above 8192 tokens takes 0.85 of it: the MI300X at TP 4
  // (reserved 512 + 24,576 + 1024 + 512 MB → 0.864) → 0.7344.
  CHECK(sglang_defaults(16376, 1).mem_fraction_static == Approx(0.772));
  CHECK(sglang_defaults(196288, 4).mem_fraction_static == Approx(0.864));
  CHECK(sglang_defaults(196288, 4, sglang_releases.back(), true).mem_fraction_static == Approx(0.864 * 0.85));
}

TEST_CASE("model types the SGLang logs bring: kimi_linear", "[engines][sglang][model_hf]") {
  // Kimi Linear 48B-A3B (tests/data/engines/configs/kimi-linear-48b-a3b-instruct.json): KDA in 20 layers, MLA in the
  // 7 listed in full_attn_layers (numbered from 1), 256 experts of 1024 + 1 shared after one dense layer.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/kimi-linear-48b-a3b-instruct.json");
  const ModelSpec s = model_from_hf_config(nlohmann::json::parse(f), "kimi-linear");
  CHECK(kv_layer_count(s) == 7);
  CHECK_FALSE(s.is_linear_layer(3));  // layer 4 of the config
  CHECK(s.is_linear_layer(0));
  CHECK(s.linear.kind == LinearAttentionKind::kda);
  CHECK(s.mla_enabled);
  // Layer 0 by hand: q, k, v 3 × 2304 × 4096, their convs 3 × 4096 × 4, the decay gate 2304 × 128 + 128 × 4096, beta
  // 2304 × 32, A_log 32, dt_bias 4096, the output gate 2304 × 128 + 128 × 4096 + 4096, o_norm 128, o_proj 4096 × 2304;
  // two norms of 2304 and the dense MLP 3 × 2304 × 9216.
  std::int64_t layer0 = 0;
  for (const auto& g : layer_params(s, 0)) layer0 += g.numel();
  CHECK(layer0 == 39'518'368 + 2 * 2304 + 3 * 2304 * 9216);
  // SGLang at TP 4 on 40 GB A100s (the held-out yuy4o/llm log): MLA caches 512 + 64 values a token in 7 layers,
  // 8064 B, as its 14.98 GB over 1,995,088 tokens shows; the radix cache is off, so one state slot per running
  // request (4) and the padding slot.
  InferenceWorkload w;
  w.profile = Profile::sglang;
  w.tp = 4;
  w.context = 4096;
  w.sglang.mem_fraction_static = 0.98;
  w.sglang.max_running_requests = 4;
  w.device_memory = Bytes(40.0 * kSglangGiB);
  const auto e = estimate_inference_memory(s, w);
  CHECK(e.kv_bytes_per_token.in(unit::bytes) == 8064.0);
  CHECK(e.memory.components.kv_cache.in(unit::bytes) - e.serving.kv_pool->in(unit::bytes) ==
        Approx(5 * sglang_state_slot_bytes(s, 2, 4)));
}

TEST_CASE("SGLang: the static share and what it leaves add up to the device, never past it", "[engines][sglang]") {
  // MI300X (rocm-smi 205,825,570,243 B) at TP 4: mem_fraction_static of the free memory holds weights and pools, the
  // rest goes to activations and the table; in fractional bytes the sum came out 1e-13 over and "did not fit".
  const double mi300x = 205'825'570'243.0;
  for (const char* model : {"llama-3.1-8b", "qwen3-next-80b-a3b"}) {
    InferenceWorkload w;
    w.profile = Profile::sglang;
    w.tp = 4;
    w.context = 32'768;
    w.device_memory = Bytes(mi300x);
    w.device_is_rocm = true;
    const auto e = estimate_inference_memory(find_preset(model).spec, w);
    CHECK(e.memory.runs_in.in(unit::bytes) <= mi300x);
    CHECK(e.memory.runs_in.in(unit::bytes) == Approx(mi300x));
  }
}
