// SGLang's start-up arithmetic (include/gpuplan/memory/sglang.h), by hand and against the numbers SGLang logged
// (tests/data/engines/sglang.jsonl, tests/data/engines/collected/sglang.jsonl).
#include <catch2/catch.hpp>

#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>

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
