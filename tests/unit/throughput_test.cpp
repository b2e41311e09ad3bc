// Serving speed: the experts a decode step reads and the host's floor under eager generate, against values
// worked by hand.
#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/catalog.h>
#include <gpuplan/model_hf.h>
#include <gpuplan/throughput.h>

using namespace gpuplan;

TEST_CASE("experts_touched: uniform top-k routing by hand", "[throughput][moe]") {
  MoeSpec qwen;  // Qwen3-30B-A3B: 128 experts, 8 per token
  qwen.experts = 128;
  qwen.experts_per_token = 8;
  CHECK(experts_touched(qwen, 1) == Approx(8.0));
  // 8 tokens: 128 · (1 − (120/128)^8) = 128 · (1 − 0.596735) = 51.618
  CHECK(experts_touched(qwen, 8) == Approx(51.618).epsilon(1e-4));
  CHECK(experts_touched(qwen, 4096) == Approx(128.0));
  MoeSpec mixtral;  // 8 experts, 2 per token: 4 tokens touch 8 · (1 − 0.75^4) = 5.469
  mixtral.experts = 8;
  mixtral.experts_per_token = 2;
  CHECK(experts_touched(mixtral, 4) == Approx(5.46875));
  mixtral.dense_routing = true;
  CHECK(experts_touched(mixtral, 1) == Approx(8.0));
  CHECK(experts_touched(MoeSpec{}, 16) == 0.0);
}

TEST_CASE("moe_mmq_tile_waste: an expert's tokens pay whole MMQ column tiles", "[throughput][moe][llama.cpp]") {
  MoeSpec ds;  // DeepSeek-V2-Lite: 64 routed experts, 6 per token
  ds.experts = 64;
  ds.experts_per_token = 6;
  // ub 512: all 64 experts touched (64 · (1 − (58/64)^512) = 64.000), 512 · 6 / 64 = 48 tokens each, in one
  // 128-wide tile: 128 / 48 = 2.667.
  CHECK(moe_mmq_tile_waste(ds, 512) == Approx(128.0 / 48.0).epsilon(1e-6));
  // ub 32: 32-wide tiles (the ubatch rounded up to 8); 64 · (1 − (58/64)^32) = 60.21 experts share 192 pairs,
  // 3.189 each: 32 / 3.189 = 10.03.
  const double touched = 64.0 * (1.0 - std::pow(58.0 / 64.0, 32));
  CHECK(moe_mmq_tile_waste(ds, 32) == Approx(32.0 / (192.0 / touched)).epsilon(1e-6));
  // Experts whose tokens fill their tiles waste nothing: 8 experts, top-8 (every token in every expert), ub 256:
  // 256 tokens each, two 128-wide tiles.
  MoeSpec all;
  all.experts = 8;
  all.experts_per_token = 8;
  CHECK(moe_mmq_tile_waste(all, 256) == Approx(1.0));
  CHECK(moe_mmq_tile_waste(ds, 1) == 1.0);
  CHECK(moe_mmq_tile_waste(MoeSpec{}, 512) == 1.0);
}

TEST_CASE("llama_cpp_tensor_rate: the datasheet rate, capped where the catalog measures less",
          "[throughput][llama.cpp]") {
  const Catalog& c = builtin_catalog();
  // RTX 4090: no measured matmul rate in the catalog; its fp16-accumulate peak (330.3 TFLOP/s), twice the
  // fp32-accumulate one.
  CHECK(llama_cpp_tensor_rate(c.get("rtx-4090")) == Approx(330.3e12));
  // RTX A6000: no faster fp16-accumulate path and no measurement: its dense 16-bit peak, 154.8.
  CHECK(llama_cpp_tensor_rate(c.get("rtx-a6000")) == Approx(154.8e12));
  // H100 PCIe: 0.656 of its 756.5 measured (matmul_efficiency): 496.3.
  CHECK(llama_cpp_tensor_rate(c.get("h100-pcie")) == Approx(0.656 * 756.5e12));
  // H100 SXM: the burst share (0.803) before the sustained one (0.683): 0.803 · 989.4 = 794.5.
  CHECK(llama_cpp_tensor_rate(c.get("h100-sxm")) == Approx(0.803 * 989.4e12));
  // A measured share never raises the rate: a device whose measurement exceeds its peak keeps the peak.
  Device d = c.get("rtx-4090");
  d.matmul_efficiency = 1.0;  // 165.2, below the fp16-accumulate 330.3
  CHECK(llama_cpp_tensor_rate(d) == Approx(165.2e12));
  d.fp16_accumulate.fp16.reset();
  CHECK(llama_cpp_tensor_rate(d) == Approx(165.2e12));
}

TEST_CASE("at_power_limit: a measured power-bound matmul rate scales with the board's limit", "[throughput][llama.cpp]") {
  const Catalog& c = builtin_catalog();
  // H100 PCIe at 310 W of its 350 W: 0.656 · 310 / 350 = 0.58103 of the peak; llama.cpp's tensor rate with it.
  const Device h = at_power_limit(c.get("h100-pcie"), 310);
  REQUIRE(h.matmul_efficiency);
  CHECK(*h.matmul_efficiency == Approx(0.656 * 310.0 / 350.0));
  CHECK(llama_cpp_tensor_rate(h) == Approx(0.58103 * 756.5e12).epsilon(1e-4));
  CHECK(h.peak == c.get("h100-pcie").peak);  // the datasheet stays; only the measured rate moves
  // H100 SXM at 350 W of 700: both measured shares halve (0.683 → 0.3415, 0.803 → 0.4015).
  const Device s = at_power_limit(c.get("h100-sxm"), 350);
  CHECK(*s.matmul_efficiency == Approx(0.3415));
  CHECK(*s.matmul_burst_efficiency == Approx(0.4015));
  // At or above the TDP nothing changes; a device with no measurement is not taken as power-bound.
  CHECK(at_power_limit(c.get("h100-pcie"), 400) == c.get("h100-pcie"));
  CHECK(at_power_limit(c.get("rtx-3090"), 230) == c.get("rtx-3090"));
  CHECK_THROWS_AS(at_power_limit(c.get("h100-pcie"), -5), InputError);
  CHECK_THROWS_AS(at_power_limit(c.get("h100-pcie"), 0), InputError);
  Device no_tdp = c.get("rtx-3090");
  no_tdp.tdp_watts.reset();
  CHECK_THROWS_AS(at_power_limit(no_tdp, 200), InputError);
}

TEST_CASE("serving_throughput: an H100 PCIe prompt runs at half its measured matmul rate", "[throughput][llama.cpp]") {
  // A dense 8B in F16, one ubatch of 512 tokens, flash attention off, build b2843: the GEMM part of the prefill
  // scales as 1 / rate. Against the same card without the measurement, the GEMM time grows 1 / 0.656 = 1.524×.
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const double w = weight_bytes(m, WeightFormat::fp16).total().in(unit::bytes);
  ServingEngine e(Profile::llama_cpp);
  e.version = EngineVersion{2843, 0, 0};
  e.flash_attn = false;
  const Device& measured = builtin_catalog().get("h100-pcie");
  Device datasheet = measured;
  datasheet.matmul_efficiency.reset();
  auto prefill = [&](const Device& d) {
    return serving_throughput(m, d, WeightFormat::fp16, w, 0, 1, 512, 512, 1, Efficiency{}, e).prefill.in(unit::seconds);
  };
  // Weights' GEMMs: 2·N = 2 · 7.50e9 matmul parameters a token (input embedding excluded), 512 tokens: at
  // 0.5 · 756.5 = 378.25 TFLOP/s 20.3 ms, at 0.5 · 496.3 = 248.1 TFLOP/s 31.0 ms; the attention's FLOPs scale the same.
  const double n2 = 2.0 * double(training_flops(m, Tokens(1), 1, Recompute::none).matmul_params.in(unit::params));
  const double attn = 4.0 * 32 * 4096 * 512.0 * (512.0 / 2 + 512.0 / 2);  // 4·L·qdim·pairs, no flash attention
  const double flops = n2 * 512 + attn;
  CHECK(prefill(measured) - prefill(datasheet) == Approx(flops / (0.5 * 496.264e12) - flops / (0.5 * 756.5e12)).epsilon(1e-6));
}

TEST_CASE("serving_throughput: llama.cpp MoE prompts pay the tiles only in builds that size them by ubatch",
          "[throughput][moe][llama.cpp]") {
  const Device& d = builtin_catalog().get("rtx-3090");
  const ModelSpec& m = find_preset("qwen3-30b-a3b").spec;
  const double w = weight_bytes(m, WeightFormat::q4_0).total().in(unit::bytes);
  auto prompt_s = [&](int build) {
    ServingEngine e(Profile::llama_cpp);
    e.version = EngineVersion{build, 0, 0};
    return serving_throughput(m, d, WeightFormat::q4_0, w, 0, 1, 512, 512, 1, Efficiency{}, e).prefill.in(unit::seconds);
  };
  // From PR #13199 to #15525 (b5250–b6269): 512 · 8 / 128 = 32 tokens an expert in 128-wide tiles, 4× the routed
  // FLOPs; the builds on either side (same kernels otherwise) compute only the useful ones.
  const double routed = 512.0 * 2 * 3 * 2048 * 768 * 8 * 48;
  const double rate = d.fp16_accumulate.fp16.value() * 0.5;
  CHECK(prompt_s(6250) - prompt_s(6300) == Approx(routed * 3.0 / rate).epsilon(1e-6));
  CHECK(prompt_s(5300) - prompt_s(5000) == Approx(routed * 3.0 / rate).epsilon(1e-6));
}

TEST_CASE("serving_throughput: an MoE decode step reads the experts its batch routes to", "[throughput][moe]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("qwen3-30b-a3b").spec;
  const WeightBytes w = weight_bytes(m, WeightFormat::bf16);
  const double total = w.total().in(unit::bytes), experts = w.routed_experts.in(unit::bytes);
  // 48 layers × 128 experts × 3 × 2048 × 768 bf16 weights = 28.99 GB of the 61.06 GB; the untied input embedding,
  // 151,936 × 2048 bf16, is gathered a row per token.
  CHECK(experts == Approx(48.0 * 128 * 3 * 2048 * 768 * 2));
  const double embedding = 151'936.0 * 2048 * 2;
  CHECK(w.embedding.in(unit::bytes) == Approx(embedding));
  Efficiency e;
  const auto one = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 1, 16, 1, 1, e);
  CHECK(one.decode_weight_bytes == Approx(total - embedding - experts + experts * 8.0 / 128.0));
  // At batch 1 it reads ~2.5× less than the whole model, so it decodes ~2.5× faster than a dense model of its size.
  CHECK(one.decode_step.in(unit::seconds) == Approx(one.decode_weight_bytes / (0.9 * 3.35e12)));
  const auto many = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 64, 16, 1, 1, e);
  CHECK(many.decode_weight_bytes ==
        Approx(total - embedding - experts + experts * (1.0 - std::pow(120.0 / 128.0, 64))));
}

TEST_CASE("serving_throughput: eager generate is never faster than its host issues operators", "[throughput]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("llama-3.2-1b").spec;  // tied embeddings: the head reads the matrix whole
  Efficiency e;
  const double wbytes = 2.0 * 1'235'814'400;
  // 16 layers × 56 operators + 10 at 19 µs = 17.21 ms: above the 0.82 ms the weights take at 0.9 × 3.35 TB/s.
  const auto hf = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 32'768, 1, 16, 100, 1, e, Profile::pytorch);
  CHECK(hf.decode_step.in(unit::seconds) == Approx(0.017214));
  CHECK(hf.decode_host_bound);
  CHECK_FALSE(hf.decode_compute_bound);
  // vLLM replays the step from a CUDA graph: no eager host, but 16 layers × 11 kernels × 11,000 cycles at the
  // H100 SXM's 1.98 GHz boost clock (0.98 ms) and the host's 1.4 ms between steps.
  const auto graphs = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 32'768, 1, 16, 100, 1, e, Profile::vllm);
  CHECK_FALSE(graphs.decode_host_bound);
  CHECK(graphs.decode_overhead.in(unit::seconds) == Approx(1.4e-3 + 16 * 11 * 11'000 / 1.98e9));
  CHECK(graphs.decode_step.in(unit::seconds) ==
        Approx((wbytes + 100 * 32'768.0) / (0.9 * 3.35e12) + 1.4e-3 + 16 * 11 * 11'000 / 1.98e9));
  CHECK(graphs.decode_overhead_bound);  // 2.38 ms of overhead against 0.82 ms of reads
}

TEST_CASE("serving_throughput: eager decode copies the cache and pays each kernel's floor", "[throughput]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("llama-3.2-1b").spec;  // 16 layers: 906 operators, 41 of each layer's 56 kernels
  Efficiency e;
  const double wbytes = 2.0 * 1'235'814'400, kv = 32'768;  // bytes a token's cache takes
  // Batch 64 at 32,768 tokens: the attention reads the 68.7 GB cache and DynamicLayer's torch.cat reads and writes
  // it again (3 passes: 206 GB, 68 ms at 0.9 × 3.35 TB/s), far above the host's 18.12 ms; each of the 663 kernels
  // (906 × 41 / 56) adds 10,000 cycles at 1.98 GHz (3.35 ms).
  const auto hf = serving_throughput(m, h100, WeightFormat::bf16, wbytes, kv, 64, 16, 32'768, 1, e, Profile::pytorch);
  CHECK_FALSE(hf.decode_host_bound);
  const double kernels = host_forward_ops(m, 1) * 41.0 / 56.0;
  CHECK(host_forward_ops(m, 1) == Approx(906));
  CHECK(hf.decode_step.in(unit::seconds) ==
        Approx((wbytes + 3.0 * 64 * 32'768 * kv) / (0.9 * 3.35e12) + kernels * 10'000 / 1.98e9));
  // vLLM's paged cache is written a token at a time: its step reads the cache once.
  const auto vllm = serving_throughput(m, h100, WeightFormat::bf16, wbytes, kv, 64, 16, 32'768, 1, e, Profile::vllm);
  CHECK(vllm.decode_step.in(unit::seconds) ==
        Approx((wbytes + 64 * 32'768 * kv) / (0.9 * 3.35e12) + vllm.decode_overhead.in(unit::seconds)));
}

TEST_CASE("eager_forward_seconds: eager attention's score passes, issue-bound on an H100, bandwidth-bound on a 4090",
          "[throughput]") {
  const ModelSpec& m = find_preset("llama-3.2-1b").spec;  // 16 layers of 32 heads, no sinks
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const Device& rtx = builtin_catalog().get("rtx-4090");
  Efficiency e;
  // Batch 4, prompt 4096: 16 × 32 × 4 × 4096² = 3.436e10 score elements.
  const double elements = 16.0 * 32 * 4 * 4096.0 * 4096.0;
  const auto scores = [&](const Device& d) {
    const double bw = d.memory_bandwidth.in(unit::bytes_per_s) * e.memory;
    return eager_forward_seconds(m, d, {4, 4096, 4096, true, 2.0}, bw, e) -
           eager_forward_seconds(m, d, {4, 4096, 4096, false, 2.0}, bw, e);
  };
  // Each layer's 7 operators beyond SDPA's launch 7 × 41/56 kernels at 10,000 cycles each.
  const double floors = 16 * 7 * 41.0 / 56 * 10'000;
  // H100: 780 fp32 issue slots an element at 67 TFLOP/s (0.400 s) beat 32 bytes at 0.9 × 3.35 TB/s (0.365 s).
  CHECK(scores(h100) == Approx(elements * 780 / 67e12 + floors / 1.98e9));
  // RTX 4090: 32 bytes at 0.9 × 1.008 TB/s (1.212 s) beat 780 slots at 82.6 TFLOP/s (0.324 s).
  CHECK(scores(rtx) == Approx(elements * 32 / (0.9 * 1.008e12) + floors / 2.52e9));
  // gpt-oss's sink column: 1,320 slots an element (24 layers × 64 heads, batch 1, prompt 2048: 6.44e9 elements),
  // and 12 operators a layer beyond SDPA's.
  const ModelSpec& oss = find_preset("gpt-oss-20b").spec;
  const double bw = 3.35e12 * e.memory;
  CHECK(eager_forward_seconds(oss, h100, {1, 2048, 2048, true, 2.0}, bw, e) -
            eager_forward_seconds(oss, h100, {1, 2048, 2048, false, 2.0}, bw, e) ==
        Approx(24.0 * 64 * 2048.0 * 2048.0 * 1320 / 67e12 + 24 * 12 * 41.0 / 56 * 10'000 / 1.98e9));
}

TEST_CASE("sequence_decode_context: a sequence reads its own cache, not what the engine reserves", "[throughput]") {
  // One prompt token and 2048 new under SGLang's context_length 140000: the cache averages 1 + 2048 − 1024 tokens.
  CHECK(sequence_decode_context(1, 2048, 140'000) == Approx(1025.0));
  // A context below the sequence (a truncated cache) bounds it.
  CHECK(sequence_decode_context(4096, 512, 2048) == Approx(2048 - 256.0));
}

TEST_CASE("llama_cpp_layer_kernels: a layer's kernels counted in llama.cpp's graph", "[throughput][llama.cpp]") {
  const ModelSpec& llama = find_preset("llama-3.1-8b").spec;
  // 20 ops with flash attention; Q4_0 adds the q8_1 quantization of the activations before each of the 7 mat-vecs.
  CHECK(llama_cpp_layer_kernels(llama, 0, false, true) == 20);
  CHECK(llama_cpp_layer_kernels(llama, 0, true, true) == 27);
  CHECK(llama_cpp_layer_kernels(llama, 0, false, false) == 23);  // K·Q, softmax, ·V and a copy for attention
  // Qwen3-30B-A3B: the FFN's 5 (and its 3 quantizations) become 13 routing/expert kernels, 7 adds summing 8 experts
  // and 3 quantizations: 27 − 8 + 13 + 7 + 3 = 42; 48 such layers and the output's 4.
  const ModelSpec& moe = find_preset("qwen3-30b-a3b").spec;
  CHECK(llama_cpp_layer_kernels(moe, 0, true, true) == 42);
  CHECK(llama_cpp_step_kernels(moe, true, true) == 48 * 42 + 4);
  // Fused: each norm with its weight (−2 a layer, −1 at the output), the 7 adds into one (−6), the router's softmax,
  // argsort, view and get_rows into one (−3): 42 − 11 = 31; the dense layer only loses the norms' 2.
  const LlamaCppFusions all{true, true, true};
  CHECK(llama_cpp_layer_kernels(moe, 0, true, true, all) == 31);
  CHECK(llama_cpp_step_kernels(moe, true, true, all) == 48 * 31 + 3);
  CHECK(llama_cpp_layer_kernels(llama, 0, true, true, all) == 25);
  // By build: b6250 fuses the norms only, b6860 all three.
  CHECK(llama_cpp_cuda_build(EngineVersion{6250, 0, 0}).fused.norm_mul);
  CHECK_FALSE(llama_cpp_cuda_build(EngineVersion{6250, 0, 0}).fused.adds);
  CHECK(llama_cpp_cuda_build(EngineVersion{6860, 0, 0}).fused.topk_moe);
  CHECK_FALSE(llama_cpp_cuda_build(EngineVersion{2824, 0, 0}).fused.norm_mul);
}

TEST_CASE("serving_throughput: llama.cpp's kernels cost cycles, fewer from a CUDA graph", "[throughput][llama.cpp]") {
  const Device& rtx4090 = builtin_catalog().get("rtx-4090");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  REQUIRE(rtx4090.boost_clock_hz);
  CHECK(*rtx4090.boost_clock_hz == Approx(2.52e9));
  const double wbytes = weight_bytes(m, WeightFormat::q4_0, 128, true).total().in(unit::bytes);
  Efficiency e;
  ServingEngine engine(Profile::llama_cpp);
  // 32 × 27 + 4 = 868 kernels: 868 × 10,000 cycles at 2.52 GHz = 3.444 ms launched one by one (a January 2024
  // build), 868 × 7,000 = 2.411 ms replayed from a CUDA graph (from b2810).
  engine.version = EngineVersion{1800, 0, 0};
  const auto launched = serving_throughput(m, rtx4090, WeightFormat::q4_0, wbytes, 0, 1, 1, 1, 1, e, engine);
  CHECK(launched.decode_overhead.in(unit::seconds) == Approx(868 * 10'000 / 2.52e9));
  engine.version = EngineVersion{2824, 0, 0};
  const auto graphs = serving_throughput(m, rtx4090, WeightFormat::q4_0, wbytes, 0, 1, 1, 1, 1, e, engine);
  CHECK(graphs.decode_overhead.in(unit::seconds) == Approx(868 * 7'000 / 2.52e9));
  CHECK(graphs.decode_step.in(unit::seconds) ==
        Approx(graphs.decode_weight_bytes / (0.9 * 1.008e12) + 868 * 7'000 / 2.52e9));
  // A prompt in ubatches of one token is that many decode steps over a cache growing to it (llama-bench -ub 1):
  // 512 × (2.411 ms + the weights' read) + ½ · 512² · 131,072 B at 0.9 × 1.008 TB/s.
  engine.ubatch = 1;
  const auto ub1 = serving_throughput(m, rtx4090, WeightFormat::q4_0, wbytes, 131'072, 1, 512, 1, 1, e, engine);
  CHECK(ub1.prefill.in(unit::seconds) ==
        Approx(512 * (868 * 7'000 / 2.52e9 + graphs.decode_weight_bytes / (0.9 * 1.008e12)) +
               0.5 * 512 * 512 * 131'072 / (0.9 * 1.008e12)));
}

TEST_CASE("serving_throughput: tensor parallelism pays two all-reduces a layer", "[throughput]") {
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  Efficiency e;
  const double wbytes = 2.0 * 8'030'261'248;
  // 32 layers × 11 kernels × 11,000 cycles at 1.41 GHz = 2.746 ms, the host's 1.4 ms, and at TP 2 64 all-reduces of 30 µs.
  const auto one = serving_throughput(m, a100, WeightFormat::bf16, wbytes, 0, 1, 1, 1, 1, e, Profile::vllm);
  CHECK(one.decode_overhead.in(unit::seconds) == Approx(32 * 11 * 11'000 / 1.41e9 + 1.4e-3));
  const auto two = serving_throughput(m, a100, WeightFormat::bf16, wbytes / 2, 0, 1, 1, 1, 2, e, Profile::vllm);
  CHECK(two.decode_overhead.in(unit::seconds) == Approx(32 * 11 * 11'000 / 1.41e9 + 1.4e-3 + 64 * 30e-6));
}

TEST_CASE("serving_throughput: HF decode of an MoE copies each pair's expert (batched_mm)", "[throughput][moe]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("phi-3.5-moe").spec;  // 32 layers, 16 experts of 4096 × 6400, top-2
  const WeightBytes w = weight_bytes(m, WeightFormat::bf16);
  const double total = w.total().in(unit::bytes), experts = w.routed_experts.in(unit::bytes);
  const double expert = 3.0 * 4096 * 6400 * 2;  // one expert's gate, up and down in bf16
  CHECK(experts == Approx(32 * 16 * expert));
  Efficiency e;
  // Batch 16: 32 (token, expert) pairs a layer, each expert read, copied and read again by the bmm: 3 × 32 × 32
  // layers × 157 MB = 483 GB, against the 80.5 GB of experts that vLLM would read once.
  const auto hf = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 16, 16, 1, 1, e, Profile::pytorch);
  const double rest = total - experts - (m.tied_embeddings ? 0.0 : w.embedding.in(unit::bytes));
  CHECK(hf.decode_weight_bytes == Approx(rest + 3.0 * 16 * 2 * 32 * expert));
  const auto vllm = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 16, 16, 1, 1, e, Profile::vllm);
  CHECK(vllm.decode_weight_bytes == Approx(rest + experts * (1.0 - std::pow(14.0 / 16.0, 16))));
}

TEST_CASE("serving_throughput: a decode GEMM computes whole 64-row tiles", "[throughput]") {
  // The H20's 148 TFLOP/s against 4.0 TB/s: Qwen3-32B in bf16 at batch 1 costs 64 × 2·N FLOPs at 0.7 of the peak
  // (above the 65.5 GB read at 0.9 × 4.0 TB/s); on an H100 the same tile hides under the read.
  const Device& h20 = builtin_catalog().get("h20");
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("qwen3-32b").spec;
  const double wbytes = weight_bytes(m, WeightFormat::bf16).total().in(unit::bytes);
  const double n2 = 2.0 * double(training_flops(m, Tokens(1), 1, Recompute::none).matmul_params.in(unit::params));
  CHECK(tiled_decode_flops(m, n2, 1) == Approx(64 * n2));
  CHECK(tiled_decode_flops(m, n2, 100) == Approx(100 * n2));
  Efficiency e;
  const auto slow = serving_throughput(m, h20, WeightFormat::bf16, wbytes, 0, 1, 1, 1, 1, e, Profile::sglang);
  CHECK(slow.decode_compute_bound);
  CHECK(slow.decode_step.in(unit::seconds) ==
        Approx(64 * n2 / (148e12 * 0.7) + slow.decode_overhead.in(unit::seconds)).epsilon(1e-3));
  const auto fast = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 0, 1, 1, 1, 1, e, Profile::sglang);
  CHECK_FALSE(fast.decode_compute_bound);
}

TEST_CASE("serving_throughput: Marlin's 16-row tiles at Hopper's mma.sync share", "[throughput]") {
  // Qwen3-32B-AWQ on the H20: the 4-bit linears in 16-row tiles at 0.7 × 0.63 of 148 TFLOP/s, the 16-bit lm_head in
  // a 64-row tile at 0.7; compute-bound, above the ~18 GB read. On an A100 (Ampere: mma.sync at full rate) the same
  // tiles hide under the read.
  const Device& h20 = builtin_catalog().get("h20");
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const ModelSpec& m = find_preset("qwen3-32b").spec;
  CHECK(mma_sync_share(h20) == Approx(0.63));
  CHECK(mma_sync_share(a100) == Approx(1.0));
  CHECK(decode_gemm_kernel(Profile::sglang, WeightFormat::awq_int4, h20) == DecodeGemmKernel::marlin);
  CHECK(decode_gemm_kernel(Profile::vllm, WeightFormat::gptq_int4, a100) == DecodeGemmKernel::marlin);
  CHECK(decode_gemm_kernel(Profile::vllm, WeightFormat::awq_int4, builtin_catalog().get("t4")) ==
        DecodeGemmKernel::none);  // Turing: AWQ's own kernel, no Marlin
  CHECK(decode_gemm_kernel(Profile::pytorch, WeightFormat::awq_int4, h20) == DecodeGemmKernel::none);
  const double n2 = 2.0 * double(training_flops(m, Tokens(1), 1, Recompute::none).matmul_params.in(unit::params));
  const double head = 2.0 * double(m.vocab) * double(m.hidden);
  CHECK(decode_gemm_flops(m, h20, DecodeGemmKernel::marlin, n2, 1, 0.7) ==
        Approx(16 * (n2 - head) / 0.63 + 64 * head));
  CHECK(decode_gemm_flops(m, h20, DecodeGemmKernel::none, n2, 3, 0.5) == Approx(3 * n2));
  const double wbytes = weight_bytes(m, WeightFormat::awq_int4).total().in(unit::bytes);
  Efficiency e;
  const auto slow = serving_throughput(m, h20, WeightFormat::awq_int4, wbytes, 0, 1, 1, 1, 1, e, Profile::sglang);
  CHECK(slow.decode_compute_bound);
  CHECK(slow.decode_step.in(unit::seconds) ==
        Approx((16 * (n2 - head) / 0.63 + 64 * head) / (148e12 * 0.7) + slow.decode_overhead.in(unit::seconds))
            .epsilon(1e-3));
  const auto fast = serving_throughput(m, a100, WeightFormat::awq_int4, wbytes, 0, 1, 1, 1, 1, e, Profile::vllm);
  CHECK_FALSE(fast.decode_compute_bound);
}

TEST_CASE("serving_throughput: FP8 decode GEMMs in 64-row tiles at the FP8 rate", "[throughput]") {
  // Qwen3-32B-FP8 on the H20: the FP8 linears in 64-row tiles at 0.7 of 296 TFLOP/s, the bf16 lm_head's 64-row tile
  // at the bf16 rate (twice the time per FLOP); compute-bound above the ~33 GB read. An A100 has no FP8 cores: its
  // FP8 weights (Marlin) stay at 2·N per token.
  const Device& h20 = builtin_catalog().get("h20");
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const ModelSpec& m = find_preset("qwen3-32b").spec;
  CHECK(decode_gemm_kernel(Profile::sglang, WeightFormat::fp8, h20) == DecodeGemmKernel::tiled_fp8);
  CHECK(decode_gemm_kernel(Profile::vllm, WeightFormat::fp8, a100) == DecodeGemmKernel::none);
  const double n2 = 2.0 * double(training_flops(m, Tokens(1), 1, Recompute::none).matmul_params.in(unit::params));
  const double head = 2.0 * double(m.vocab) * double(m.hidden);
  CHECK(decode_gemm_flops(m, h20, DecodeGemmKernel::tiled_fp8, n2, 1, 0.7) == Approx(64 * (n2 - head) + 64 * head * 2));
  const double wbytes = weight_bytes(m, WeightFormat::fp8).total().in(unit::bytes);
  Efficiency e;
  const auto t = serving_throughput(m, h20, WeightFormat::fp8, wbytes, 0, 1, 1, 1, 1, e, Profile::sglang);
  CHECK(t.decode_compute_bound);
  CHECK(t.decode_step.in(unit::seconds) ==
        Approx((64 * (n2 - head) + 128 * head) / (296e12 * 0.7) + t.decode_overhead.in(unit::seconds)).epsilon(1e-3));
}

TEST_CASE("host_forward_ops: Gated DeltaNet layers and group-limited routers in eager generate", "[throughput]") {
  const ModelSpec& next = find_preset("qwen3-next-80b-a3b").spec;  // 48 layers, 36 Gated DeltaNet, all MoE
  // Each layer 56 + 2 q/k norms × 8, MoE routing 10 and a shared expert 6; a Gated DeltaNet layer trades the
  // attention's 29 for its own 60 and, at decode, the recurrent rule's 36 (the prefill's chunk loops are the GPU's).
  const double base = 10 + 48 * (56 + 16 + 10 + 6);
  CHECK(host_forward_ops(next, 1) == Approx(base + 36 * (60 - 29 + 36)));
  // Eager attention: 7 operators beyond SDPA's on each of the 12 attention layers.
  CHECK(host_forward_ops(next, 1, true) == Approx(base + 36 * (60 - 29 + 36) + 12 * 7));
  // A prompt's MoE layers dispatch through grouped_mm: 46 operators more each.
  CHECK(host_forward_ops(next, 4096) == Approx(base + 48 * 46 + 36 * (60 - 29 + 60)));
  // DeepSeek-V3's latent attention: 23 operators beyond Llama's attention a layer (q_lora_rank 1536).
  const ModelSpec& v3 = find_preset("deepseek-v3").spec;
  ModelSpec plain = v3;
  plain.mla_enabled = false;
  CHECK(host_forward_ops(v3, 1) - host_forward_ops(plain, 1) == Approx(61 * 23));
  CHECK(gdn_chunks(4096) == 64);
  CHECK(gdn_chunks(4097) == 65);
}

TEST_CASE("serving_layer_kernels: vLLM's MoE block launches its router, its fused_moe and its shared expert",
          "[throughput][moe]") {
  // Qwen2-57B-A14B: every layer an MoE block of 64 experts, top-8, with a gated shared expert of width 20480.
  const ModelSpec qwen = model_from_hf_config(nlohmann::json::parse(R"({
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_act": "silu", "hidden_size": 3584,
    "intermediate_size": 18944, "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
    "num_experts": 64, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "norm_topk_prob": false,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 151936,
    "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})"),
                                              "qwen2-57b-a14b");
  REQUIRE(qwen.moe.shared_gate);
  // 11 − the MLP's 3 + router GEMM, topk_softmax, moe_align_block_size, 2 fused_moe kernels, silu_and_mul, the sum
  // (7) + the shared expert's gate-up, SiLU-and-mul, down and add (4) + its gate GEMV, sigmoid and product (3) = 22.
  CHECK(serving_layer_kernels(qwen, 0, Profile::vllm) == 22);
  CHECK(serving_layer_kernels(qwen, 0, Profile::sglang) == 11);  // SGLang keeps the dense count (see EngineStep)
  // Mixtral: no shared expert, 11 − 3 + 7 = 15; a dense model's layer stays at 11.
  CHECK(serving_layer_kernels(find_preset("mixtral-8x7b").spec, 0, Profile::vllm) == 15);
  CHECK(serving_layer_kernels(find_preset("llama-3.1-8b").spec, 0, Profile::vllm) == 11);
  // The A100 (1.41 GHz): 28 layers × 22 kernels × 11,000 cycles = 4.806 ms a decode step, 28 × 22 × 10,000 cycles
  // = 4.369 ms a prompt forward.
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const EngineStep c = engine_step(qwen, a100, WeightFormat::bf16, Profile::vllm, 2);
  CHECK(c.decode_kernels == Approx(28.0 * 22 * 11'000 / 1.41e9));
  CHECK(c.prompt_kernels == Approx(28.0 * 22 * 10'000 / 1.41e9));
}

TEST_CASE("serving_throughput: Marlin reads a 4-bit checkpoint's layers at its own share", "[throughput]") {
  // Llama-3.1-8B AWQ on an A100 under vLLM (awq_marlin): the decoder layers' 4-bit bytes stream at 0.83 of the 0.90
  // share, the 16-bit lm_head at 0.90; the untied embedding is gathered. Memory-bound: the 16-row tiles hide.
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const WeightBytes w = weight_bytes(m, WeightFormat::awq_int4);
  const double total = w.total().in(unit::bytes), layers = w.layers.in(unit::bytes), head = w.output.in(unit::bytes);
  CHECK(layer_bytes_read(m, read_shares(m, WeightFormat::awq_int4), total, 1) == Approx(layers));
  Efficiency e;
  const auto t = serving_throughput(m, a100, WeightFormat::awq_int4, total, 0, 1, 1, 1, 1, e, Profile::vllm);
  CHECK_FALSE(t.decode_compute_bound);
  CHECK(t.decode_step.in(unit::seconds) - t.decode_overhead.in(unit::seconds) ==
        Approx((layers / 0.83 + head) / (0.9 * 2.039e12)));
  // The bf16 checkpoint (no Marlin) streams every byte it reads at 0.90.
  const auto bf = serving_throughput(m, a100, WeightFormat::bf16, weight_bytes(m, WeightFormat::bf16).total().in(unit::bytes),
                                     0, 1, 1, 1, 1, e, Profile::vllm);
  CHECK(bf.decode_step.in(unit::seconds) - bf.decode_overhead.in(unit::seconds) ==
        Approx(bf.decode_weight_bytes / (0.9 * 2.039e12)));
}

TEST_CASE("engine_step: vLLM before 0.5.0 schedules a Ray task on each tensor-parallel worker every step",
          "[throughput]") {
  const Device& a100 = builtin_catalog().get("a100-80gb-sxm");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  auto host = [&](std::optional<EngineVersion> v, std::int64_t tp) {
    ServingEngine e(Profile::vllm);
    e.version = v;
    return engine_step(m, a100, WeightFormat::bf16, e, tp).host;
  };
  // 0.4.2 at TP 2: the 1.4 ms host step and the 2.0 ms of Ray tasks (PR #3763: 24.2 s − 20.2 s over 2,000 steps).
  CHECK(host(EngineVersion{0, 4, 2}, 2) == Approx(1.4e-3 + 2.0e-3));
  CHECK(host(EngineVersion{0, 3, 3}, 8) == Approx(3.4e-3));
  CHECK(host(EngineVersion{0, 4, 2}, 1) == Approx(1.4e-3));  // one GPU: no workers
  CHECK(host(EngineVersion{0, 5, 0}, 2) == Approx(1.4e-3));  // PR #4894: the workers loop on the broadcast
  CHECK(host(std::nullopt, 2) == Approx(1.4e-3));            // the newest modelled release
}
