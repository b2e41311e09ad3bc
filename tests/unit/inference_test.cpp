#include <catch2/catch.hpp>
#include <gpuplan/model_hf.h>
#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>

using namespace gpuplan;

static InferenceWorkload workload(std::int64_t batch, std::int64_t prompt, std::int64_t fresh) {
  InferenceWorkload w;
  w.batch = batch;
  w.prompt_len = prompt;
  w.new_tokens = fresh;
  return w;
}

TEST_CASE("KV cache bytes per token", "[memory][inference]") {
  // bf16: Llama-3.1-8B (GQA 8×128, 32 layers) = 2·32·8·128·2 = 131,072 B; Llama-2-7B (MHA 32×128) = 524,288 B.
  CHECK(estimate_inference_memory(find_preset("llama-3.1-8b").spec, workload(1, 16, 1)).kv_bytes_per_token.in(unit::bytes) == 131'072);
  CHECK(estimate_inference_memory(find_preset("llama-2-7b").spec, workload(1, 16, 1)).kv_bytes_per_token.in(unit::bytes) == 524'288);
  // DeepSeek-V3 under transformers 5.17 caches the compressed latent (512) and the rope key (64), as vLLM does:
  // 576·61·2 B (measured_m1's DeepSeek-V3-tiny generate left exactly its 288-element latent per layer and token).
  CHECK(estimate_inference_memory(find_preset("deepseek-v3").spec, workload(1, 16, 1)).kv_bytes_per_token.in(unit::bytes) ==
        576.0 * 61 * 2);
}

TEST_CASE("KV cache of HF generate: prompt + new − 1 tokens", "[memory][inference]") {
  // Calibration (H200): Llama-3.1-8B, b1, prompt 1024, 64 new tokens: kv_cache_bytes = 142,475,264 = 1087 × 131,072.
  const auto e = estimate_inference_memory(find_preset("llama-3.1-8b").spec, workload(1, 1024, 64));
  const Moment* decode = nullptr;
  for (const auto& m : e.memory.moments)
    if (m.phase == "decode") decode = &m;
  REQUIRE(decode);
  CHECK(decode->at.kv_cache.in(unit::bytes) == 142'475'264);
}

TEST_CASE("KV cache: sliding-window layers keep window − 1 tokens", "[memory][inference]") {
  // Calibration: Mistral-7B (window 4096), b4, prompt 8192 + 16: kv_cache_bytes = 4·4095·131,072 = 2,146,959,360.
  const auto e = estimate_inference_memory(find_preset("mistral-7b").spec, workload(4, 8192, 16));
  for (const auto& m : e.memory.moments)
    if (m.phase == "decode") CHECK(m.at.kv_cache.in(unit::bytes) == 2'146'959'360.0);
}

TEST_CASE("inference weights by dtype", "[memory][inference]") {
  auto w = workload(1, 16, 1);
  const auto bf = estimate_inference_memory(find_preset("llama-3.1-8b").spec, w);
  w.precision = Precision::fp32;
  const auto f = estimate_inference_memory(find_preset("llama-3.1-8b").spec, w);
  CHECK(bf.memory.components.weights.in(unit::bytes) == 2.0 * 8'030'261'248);
  CHECK(f.memory.components.weights.in(unit::bytes) == 4.0 * 8'030'261'248);
}

TEST_CASE("KV cache: linear-attention layers keep a fixed state, not tokens", "[memory][inference]") {
  // Qwen3-Next-80B-A3B: 12 of 48 layers attend (2 KV heads × 256): 12·2·2·256·2 B = 24,576 B per token. Each of the
  // 36 Gated DeltaNet layers keeps per sequence a conv window over q, k, v ((2·16·128 + 32·128)·4 bf16 = 65,536 B)
  // and 32 fp32 128×128 states (2,097,152 B).
  const ModelSpec s = find_preset("qwen3-next-80b-a3b").spec;
  InferenceWorkload w = workload(2, 1000, 1);
  w.profile = Profile::none;
  const auto e = estimate_inference_memory(s, w);
  CHECK(e.kv_bytes_per_token.in(unit::bytes) == 24'576);
  const double state = 36.0 * (65'536 + 2'097'152);
  CHECK(e.memory.components.kv_cache.in(unit::bytes) == Approx(2 * (1000 * 24'576.0 + state)));
  // The state does not grow with the context: 1000 more tokens add only the attention layers' KV.
  w.context = 2000;
  for (const auto& m : estimate_inference_memory(s, w).memory.moments)
    if (m.phase == "decode") CHECK(m.at.kv_cache.in(unit::bytes) == Approx(2 * (2000 * 24'576.0 + state)));
}

TEST_CASE("HF generate replays every decode step", "[memory][inference]") {
  // Each step grows every layer's K and V by one token (2 requests a layer), plus its hidden state and logits: a
  // long generation keeps adding segments at every step, so none may be skipped (measured_g1: a 1B model at
  // batch 64 reserved 70 GiB for 7.6 GiB of tensors over 2,048 new tokens).
  const ModelSpec& s = find_preset("llama-3.2-1b").spec;
  const InferenceWorkload w = workload(4, 512, 300);
  const InferenceEstimate e = estimate_inference_memory(s, w);
  const InferenceTensors t = inference_tensors(s, w, e.weights, e.kv);
  const AllocationTimeline a = generate_allocations(s, w, t);
  std::int64_t decode_requests = 0;
  for (const auto& ev : a.events)
    if (ev.alloc && ev.phase == AllocationTimeline::Phase::backward) ++decode_requests;
  CHECK(decode_requests == (300 - 1) * (2 * 16 + 2));
}

TEST_CASE("HF generate on a GPU too small for its cached segments frees them and runs", "[memory][inference]") {
  // Llama-2-7B (MHA), batch 32, 300 + 1,500 tokens: measured on an H200 (measured_g1), 41.2 GiB of tensors, the
  // allocator filled the GPU, freed its cached segments 26 times and finished.
  const ModelSpec& s = find_preset("llama-2-7b").spec;
  InferenceWorkload w = workload(32, 300, 1500);
  const InferenceEstimate roomy = estimate_inference_memory(s, w);
  const MemoryEstimate& m = roomy.memory;
  CHECK(m.total > 10 * m.runs_in);  // with room it keeps every segment it added
  CHECK(m.runs_in >= m.peak_allocated + m.context);
  CHECK(m.runs_in <= (m.peak_allocated + m.context) * 1.05);
  // The least capacity found runs; a capacity below the live peak does not.
  const InferenceTensors t = inference_tensors(s, w, roomy.weights, roomy.kv);
  const std::int64_t stride = replay_generate(s, w, t).stride;
  auto runs = [&](Bytes capacity) {
    return !generate_allocations(s, w, t, ReplayedAllocations((capacity - m.context).in(unit::bytes)), stride)
                .out_of_memory();
  };
  CHECK(runs(m.runs_in));
  CHECK_FALSE(runs(m.peak_allocated + m.context - Bytes(1 << 30)));
  // On the H200 (140.40 GiB usable): it fills the GPU, frees its segments 26 times, runs in the same.
  w.device_memory = Bytes(140.40 * 1073741824.0);
  const InferenceEstimate h200 = estimate_inference_memory(s, w);
  CHECK(h200.memory.total <= *w.device_memory);
  CHECK(h200.memory.total > *w.device_memory * 0.99);
  CHECK(h200.memory.runs_in == m.runs_in);
  CHECK(std::any_of(h200.assumptions.begin(), h200.assumptions.end(),
                    [](const std::string& a) { return a.find("frees its cached ones 26 times") != std::string::npos; }));
}

TEST_CASE("HF generate that keeps little cached runs in its total", "[memory][inference]") {
  // Llama-3.1-8B, batch 1, 1024 + 256: the reserve beyond the live peak is well under a tenth of it.
  const MemoryEstimate m = estimate_inference_memory(find_preset("llama-3.1-8b").spec, workload(1, 1024, 256)).memory;
  CHECK(m.runs_in == m.total);
}

TEST_CASE("HF generate's runs_in moves with the batch, not by the measured shares' floor", "[memory][inference]") {
  // GPT-2 AWQ at batch ~950, 1024 + 256: the allocator keeps ~8 GiB cached beyond 58 GiB of replayed tensors, and
  // the measured shares put the total near 85 GiB. At batch 947 no capacity below the replay's own peak finishes;
  // its runs_in is still the replay's (live peak + replayed reserve), as at 946 and 948, not the floored total.
  const ModelSpec& s = find_preset("gpt2").spec;
  auto runs_in = [&](std::int64_t batch) {
    InferenceWorkload w = workload(batch, 1024, 256);
    w.weights = WeightFormat::awq_int4;
    const MemoryEstimate m = estimate_inference_memory(s, w).memory;
    CHECK(m.runs_in < m.total);
    return m.runs_in.in(unit::bytes);
  };
  const double a = runs_in(946), b = runs_in(947), c = runs_in(948);
  CHECK(b > a);
  CHECK(b < a * 1.03);  // one sequence more, and the replay's reserve differs by a few hundred MiB at most
  CHECK(c < b * 1.03);
}

TEST_CASE("HF generate's replay coarsens its decode steps only where that changes nothing", "[memory][inference]") {
  auto replay = [](const char* model, std::int64_t batch, std::int64_t prompt, std::int64_t fresh) {
    const ModelSpec& s = find_preset(model).spec;
    const InferenceWorkload w = workload(batch, prompt, fresh);
    const InferenceEstimate e = estimate_inference_memory(s, w);
    const InferenceTensors t = inference_tensors(s, w, e.weights, e.kv);
    return std::pair{replay_generate(s, w, t), generate_allocations<ReplayedAllocations>(s, w, t, {}, 1)};
  };
  // Llama-3.1-8B at batch 1, 1024 + 256: the decode never outgrows the prefill's segments; steps of 8 tokens
  // reserve what token-by-token steps do.
  const auto [small, exact] = replay("llama-3.1-8b", 1, 1024, 256);
  CHECK(small.coarsened);
  CHECK(small.stride == 8);
  CHECK(small.allocations.peak_reserved() == Approx(exact.peak_reserved()).epsilon(0.001));
  // Llama-3.2-1B at batch 64, 512 + 2048 (measured_g1: 70.9 GiB reserved for 7.6 GiB of tensors): every step adds
  // segments, and steps of 32 and 64 tokens disagree, so it keeps decode_stride's 4.
  const auto [large, unused] = replay("llama-3.2-1b", 64, 512, 2048);
  CHECK_FALSE(large.coarsened);
  CHECK(large.stride == 4);
}

TEST_CASE("Qwen3's prefill normalises q and k through fp32 copies", "[memory][inference]") {
  // Qwen3-0.6B (16 heads × 128, 28 layers) at batch 32 × 1024 tokens: q is 2048 wide, so each q-norm makes three
  // fp32 blocks of 4 × 2048 × 32,768 = 256 MiB (the copy, its square, the normalised), as the allocator trace on an
  // H200 shows (measured_g1); without the q/k norm no request has that size.
  ModelSpec s = find_preset("qwen3-0.6b").spec;
  const InferenceWorkload w = workload(32, 1024, 2);
  auto fp32_q_blocks = [&](const ModelSpec& spec) {
    const InferenceEstimate e = estimate_inference_memory(spec, w);
    const AllocationTimeline a = generate_allocations(spec, w, inference_tensors(spec, w, e.weights, e.kv));
    return std::count_if(a.events.begin(), a.events.end(),
                         [](const AllocationTimeline::Event& ev) { return ev.alloc && ev.bytes == 256.0 * 1048576; });
  };
  CHECK(fp32_q_blocks(s) == 3 * 28);
  s.qk_norm = false;
  CHECK(fp32_q_blocks(s) == 0);
}
