#include <catch2/catch.hpp>
#include <fstream>
#include <gpuplan/model_hf.h>
#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/quant.h>
#include <gpuplan/throughput.h>
#include <gpuplan/catalog.h>

using namespace gpuplan;

TEST_CASE("weight_bytes: GGUF files of Llama-3-8B", "[quant]") {
  // llama.cpp's llama-quantize help lists file sizes "@ Llama-3-8B" (tools/quantize/quantize.cpp), in GiB:
  // Q8_0 7.96, Q6_K 6.14, Q5_K_M 5.33, Q4_K_M 4.58, Q4_K_S 4.37, Q4_0 4.34, Q3_K_M 3.74, Q2_K 2.96.
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;  // same shape as Llama-3-8B
  struct Row { WeightFormat f; double gib; double tol; };
  for (const Row& r : {Row{WeightFormat::q8_0, 7.96, 0.01}, Row{WeightFormat::q6_k, 6.14, 0.01},
                       Row{WeightFormat::q5_k_m, 5.33, 0.01}, Row{WeightFormat::q4_k_m, 4.58, 0.01},
                       Row{WeightFormat::q4_k_s, 4.37, 0.02}, Row{WeightFormat::q4_0, 4.34, 0.01},
                       Row{WeightFormat::q3_k_m, 3.74, 0.04}, Row{WeightFormat::q2_k, 2.96, 0.01}}) {
    INFO(spell<WeightFormat>(weight_format_names, r.f));
    CHECK(weight_bytes(m, r.f).total().in(unit::bytes) / 1073741824.0 == Approx(r.gib).epsilon(r.tol));
  }
}

TEST_CASE("weight_bytes: HF quantisation formats keep embeddings and head in 16 bit", "[quant]") {
  const ModelSpec& m = find_preset("llama-2-7b").spec;
  // Llama-2-7B: decoder linears 6,476,005,376; embeddings + head 2 × 131,072,000; norms 266,240.
  const double lin = 6'476'005'376.0, emb = 2 * 131'072'000.0, norms = 266'240.0;
  CHECK(weight_bytes(m, WeightFormat::bf16).total().in(unit::bytes) == 2 * 6'738'415'616.0);
  CHECK(weight_bytes(m, WeightFormat::nf4_dq).total().in(unit::bytes) ==
        Approx(lin * (4 + 8.0 / 64 + 32.0 / (64 * 256)) / 8 + (emb + norms) * 2));
  CHECK(weight_bytes(m, WeightFormat::awq_int4).total().in(unit::bytes) == Approx(lin * (4 + 20.0 / 128) / 8 + (emb + norms) * 2));
  // Group 32 stores four times the scales and zeros of group 128.
  CHECK(weight_bytes(m, WeightFormat::awq_int4, 32).total().in(unit::bytes) == Approx(lin * (4 + 20.0 / 32) / 8 + (emb + norms) * 2));
  // Quantised never needs more than unquantised.
  for (const auto& f : weight_format_names)
    if (f.value != WeightFormat::fp32) CHECK(weight_bytes(m, f.value).total() <= weight_bytes(m, WeightFormat::bf16).total());
}

TEST_CASE("KV cache: MLA latent under vLLM, alternating windows, quantised KV", "[memory][inference]") {
  // DeepSeek-V3 in vLLM caches (kv_lora_rank 512 + rope 64) per layer: 576 · 61 · 2 B = 70,272 B per token.
  InferenceWorkload w;
  w.profile = Profile::vllm;
  CHECK(estimate_inference_memory(find_preset("deepseek-v3").spec, w).kv_bytes_per_token.in(unit::bytes) == 576.0 * 61 * 2);
  // fp8 KV halves bf16.
  InferenceWorkload k;
  k.kv = KvDtype::fp8;
  CHECK(estimate_inference_memory(find_preset("llama-3.1-8b").spec, k).kv_bytes_per_token.in(unit::bytes) == 65'536);
  // Gemma 2 2B: 13 sliding layers (window 4096 → 4095 tokens) and 13 global; at 8191 + 1 tokens the cache is
  // b · (13·8192 + 13·4095) tokens × 2·4·256·2 B.
  InferenceWorkload g;
  g.prompt_len = 8192;
  g.new_tokens = 1;
  const auto e = estimate_inference_memory(find_preset("gemma-2-2b").spec, g);
  for (const auto& mo : e.memory.moments)
    if (mo.phase == "decode") CHECK(mo.at.kv_cache.in(unit::bytes) == (13.0 * 8192 + 13.0 * 4095) * 2 * 4 * 256 * 2);
}

TEST_CASE("serving_throughput: roofline by hand", "[throughput]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  Efficiency e;
  e.memory = 0.5;
  e.compute = 0.5;
  // Batch 1, bf16: decode reads 16.06 GB of weights + 1000 tokens × 131,072 B per step at 0.5 × 3.35 TB/s.
  const double wbytes = 2.0 * 8'030'261'248;
  const auto t = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 131'072, 1, 1000, 1000, 1, e);
  CHECK(t.decode_step.in(unit::seconds) == Approx((wbytes + 1000 * 131'072.0) / (0.5 * 3.35e12)));
  CHECK_FALSE(t.decode_compute_bound);
  // Prefill: (2·N·1000 + 2·32·1000²·4096) FLOPs at 0.5 × 989.4 TFLOP/s, N = 7,504,924,672 multiplying params.
  CHECK(t.prefill.in(unit::seconds) == Approx((2.0 * 7'504'924'672 * 1000 + 2.0 * 32 * 1e6 * 4096) / (0.5 * 989.4e12)));
  CHECK_THROWS_AS(serving_throughput(m, h100, WeightFormat::bf16, wbytes, 131'072, 1, 1000, 1000, 1, Efficiency{0, 0.5}), InputError);
}

TEST_CASE("weight_bytes: a fused attn_qkv goes up a step in the _M k-quant mixes", "[quant][llama.cpp]") {
  // Pythia 2.8B as llama.cpp's own CI quantised and loaded it (ggml-org/ci, build 4343, V100; "CUDA0 model buffer
  // size"): Q4_K_M logged 1632.95 MiB from 81 q4_K, 32 q5_K and 17 q6_K tensors. By hand: the 32 query_key_value
  // (2560 × 7680) in Q5_K (5.5 bpw) = 432,537,600 B; dense, dense_h_to_4h and the 16 dense_4h_to_h outside
  // use_more_bits in Q4_K (4.5 bpw) = 825,753,600 B; the other 16 dense_4h_to_h and embed_out in Q6_K (6.5625 bpw)
  // = 449,703,900 B; norms and biases in f32 = 4,280,320 B: 1,712,275,420 B = 1632.95 MiB (token_embd stays on the
  // host). Q5_K_M logged 1887.64 MiB (the qkv in Q6_K), Q4_0 1454.83 MiB (no mix).
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/pythia-2.8b.json");
  const ModelSpec m = model_from_hf_config(nlohmann::json::parse(f), "pythia-2.8b");
  auto on_gpu_mib = [&](WeightFormat w) {
    const WeightBytes b = weight_bytes(m, w);
    return (b.total() - b.embedding).in(unit::bytes) / 1048576.0;
  };
  CHECK(on_gpu_mib(WeightFormat::q4_k_m) == Approx(1712275420 / 1048576.0).margin(0.005));
  CHECK(on_gpu_mib(WeightFormat::q4_k_m) == Approx(1632.95).margin(0.005));
  CHECK(on_gpu_mib(WeightFormat::q5_k_m) == Approx(1887.64).margin(0.005));
  CHECK(on_gpu_mib(WeightFormat::q4_0) == Approx(1454.83).margin(0.005));
}
