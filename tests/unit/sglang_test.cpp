// SGLang's start-up arithmetic (include/gpuplan/memory/sglang.h), by hand and against the numbers SGLang logged
// (tests/data/engines/sglang.jsonl, tests/data/engines/collected/sglang.jsonl).
#include <catch2/catch.hpp>
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
  CHECK(p.bytes == 2914 * sglang_state_slot_bytes(next, 2, 4));
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
