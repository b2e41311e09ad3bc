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
  // llama.cpp's llama-quantize help lists file sizes "@ Llama-3-8B" (tools/quantize/quantize.cpp), in GiB
  // rounded to 0.01: Q8_0 7.96, Q6_K 6.14, Q5_1 5.65, Q5_K_M 5.33, Q5_0 5.21, Q4_1 4.78, Q4_K_M 4.58, Q4_K_S 4.37,
  // Q4_0 4.34, Q3_K_M 3.74, Q2_K 2.96. Every one within 0.5 % (the rounding plus the file's metadata).
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;  // same shape as Llama-3-8B
  struct Row { WeightFormat f; double gib; };
  for (const Row& r : {Row{WeightFormat::q8_0, 7.96}, Row{WeightFormat::q6_k, 6.14}, Row{WeightFormat::q5_1, 5.65},
                       Row{WeightFormat::q5_k_m, 5.33}, Row{WeightFormat::q5_0, 5.21}, Row{WeightFormat::q4_1, 4.78},
                       Row{WeightFormat::q4_k_m, 4.58}, Row{WeightFormat::q4_k_s, 4.37}, Row{WeightFormat::q4_0, 4.34},
                       Row{WeightFormat::q3_k_m, 3.74}, Row{WeightFormat::q2_k, 2.96}}) {
    INFO(spell<WeightFormat>(weight_format_names, r.f));
    CHECK(weight_bytes(m, r.f).total().in(unit::bytes) / 1073741824.0 == Approx(r.gib).epsilon(0.005));
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
  // MX FP4 and NVFP4 of a dense model: every decoder linear, norms in 16 bit (GGUF files alone keep them f32).
  CHECK(weight_bytes(m, WeightFormat::mxfp4).total().in(unit::bytes) == Approx(lin * 4.25 / 8 + (emb + norms) * 2));
  CHECK(weight_bytes(m, WeightFormat::nvfp4).total().in(unit::bytes) == Approx(lin * 4.5 / 8 + (emb + norms) * 2));
  // Quantised never needs more than unquantised.
  for (const auto& f : weight_format_names)
    if (f.value != WeightFormat::fp32) CHECK(weight_bytes(m, f.value).total() <= weight_bytes(m, WeightFormat::bf16).total());
}

TEST_CASE("weight_bytes: an MX FP4 MoE checkpoint quantizes the routed experts alone, as gpt-oss ships", "[quant]") {
  // gpt-oss-20b: 24 layers × 32 experts × (gate_up 2·2880×2880 + down 2880×2880) = 19,110,297,600 expert weights
  // in MXFP4 (4.25 bits); the other 1,804,459,584 parameters (attention, router, biases, embeddings, head) bf16:
  // 13,761,264,768 B. vLLM 0.19 logged 7.01 GiB per GPU at TP 2 against these
  // 6.41: its Hopper MXFP4 kernels' layout (tests/data/engines/vllm.jsonl).
  const ModelSpec& m = find_preset("gpt-oss-20b").spec;
  const double experts = 24.0 * 32 * 3 * 2880 * 2880, rest = 20'914'757'184.0 - experts;
  CHECK(weight_bytes(m, WeightFormat::mxfp4).total().in(unit::bytes) == Approx(experts * 4.25 / 8 + rest * 2));
}

TEST_CASE("weight_bytes: a ModelOpt MIXED_PRECISION checkpoint, each module in its own format", "[quant]") {
  // Qwen3-30B-A3B with its routed experts and lm_head in NVFP4 (4.5 bits) and the attention projections in FP8 (8
  // bits + an fp32 scale per output row over the input width), everything unlisted (embedding, routers, norms) bf16.
  nlohmann::json q = {{"quant_method", "modelopt"}, {"quant_algo", "MIXED_PRECISION"}};
  for (int l = 0; l < 48; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    q["quantized_layers"][p + "mlp.experts"] = {{"quant_algo", "NVFP4"}};
    for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) q["quantized_layers"][p + "self_attn." + m] = {{"quant_algo", "FP8"}};
  }
  q["quantized_layers"]["lm_head"] = {{"quant_algo", "W4A16_NVFP4"}};
  q["quantized_layers"]["mtp.layers.0.mlp.experts"] = {{"quant_algo", "FP8"}};  // the MTP head: not loaded, skipped
  const auto mixed = module_formats_from_config(nlohmann::json{{"quantization_config", q}}, "t");
  REQUIRE(mixed);
  CHECK(mixed->rules.size() == 48 * 5 + 1);
  const ModelSpec& m = find_preset("qwen3-30b-a3b").spec;
  // 48 layers × 128 experts × 3 × 2048 × 768; q and o 4096 × 2048, k and v 512 × 2048 per layer; head 151,936 × 2048.
  const double experts = 48.0 * 128 * 3 * 2048 * 768, qk_v = 48.0 * (4096 + 512 + 512) * 2048, o = 48.0 * 2048 * 4096;
  const double head = 151'936.0 * 2048, rest = 30'532'122'624.0 - experts - qk_v - o - head;
  CHECK(weight_bytes(m, WeightFormat::bf16, 128, false, &*mixed).total().in(unit::bytes) ==
        Approx((experts + head) * 4.5 / 8 + qk_v * (8 + 32.0 / 2048) / 8 + o * (8 + 32.0 / 4096) / 8 + rest * 2));
  // Checkpoint names against gpuplan's groups: Qwen's singular shared_expert, the Gated DeltaNet's split projections.
  ModuleFormats n{{{"linear_attn.in_proj_qkv", WeightFormat::fp8}, {"mlp.shared_expert.up_proj", WeightFormat::nvfp4}}, ""};
  CHECK(n.format_of(ParamGroup{"in_proj_qkvz", 12288, 2048, 1, true}) == WeightFormat::fp8);
  CHECK(n.format_of(ParamGroup{"shared_experts.up_proj", 512, 2048, 1, true}) == WeightFormat::nvfp4);
  CHECK(n.format_of(ParamGroup{"in_proj_ba", 64, 2048, 1, true}) == WeightFormat::bf16);
  CHECK(ModuleFormats::local_name("model.language_model.layers.12.mlp.experts") == "mlp.experts");
  // One format for every linear is --weights' business; an algorithm gpuplan does not know is a data error.
  CHECK_FALSE(module_formats_from_config(nlohmann::json{{"quantization_config", {{"quant_method", "awq"}}}}, "t"));
  q["quantized_layers"]["lm_head"] = {{"quant_algo", "INT3"}};
  CHECK_THROWS_AS(module_formats_from_config(nlohmann::json{{"quantization_config", q}}, "t"), DataError);
}

TEST_CASE("weight_bytes: an FP8 checkpoint's config, block scales and the modules it leaves 16 bit", "[quant]") {
  // Qwen3-Next-80B-A3B-Instruct-FP8 as tests/data/engines/configs/qwen3-next-80b-a3b-instruct-fp8.json reconstructs
  // it: weight_block_size [128, 128] (8 bits + an fp32 scale per 16,384 weights), the Gated DeltaNet's projections
  // (in_proj_qkvz, in_proj_ba, out_proj) and the routers 16 bit, embeddings and lm_head 16 bit as they are for every
  // FP8 config. By hand, the FP8 matrices: experts 48 × 512 × 3 × 2048 × 512 = 77,309,411,328, shared experts 48 × 3 ×
  // 2048 × 512 = 150,994,944, gated q 12 × 8192 × 2048 = 201,326,592, k and v 12 × 2 × 512 × 2048 = 25,165,824, o 12 ×
  // 2048 × 4096 = 100,663,296: 77,787,561,984 weights at 1 + 4 / 16,384 B instead of 2 B. bf16: 2 × 79,674,391,296 B.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/qwen3-next-80b-a3b-instruct-fp8.json");
  const nlohmann::json config = nlohmann::json::parse(f);
  const auto fp8 = module_formats_from_config(config, "t");
  REQUIRE(fp8);
  CHECK(fp8->otherwise == WeightFormat::fp8);
  CHECK(fp8->fp8_scale_block == 16'384);
  CHECK(fp8->format_of(ParamGroup{"in_proj_qkvz", 12288, 2048, 1, true}) == WeightFormat::bf16);
  CHECK(fp8->format_of(ParamGroup{"out_proj", 2048, 4096, 1, true}) == WeightFormat::bf16);
  CHECK(fp8->format_of(ParamGroup{"o_proj", 2048, 4096, 1, true}) == WeightFormat::fp8);
  const ModelSpec s = model_from_hf_config(config, "t");
  CHECK(count_params(s).total.in(unit::params) == 79'674'391'296);
  const double fp8_weights = 77'787'561'984.0;
  CHECK(weight_bytes(s, WeightFormat::bf16, 128, false, &*fp8).total().in(unit::bytes) ==
        Approx(2 * 79'674'391'296.0 - fp8_weights * (2 - (1 + 4.0 / 16'384))));
  // Without a list every Linear is FP8 (scale per output row without weight_block_size); the embedding is not one.
  const auto all = module_formats_from_config(nlohmann::json{{"quantization_config", {{"quant_method", "fp8"}}}}, "t");
  REQUIRE(all);
  CHECK(all->format_of(ParamGroup{"embed_tokens", 151'936, 2048, 1, false}) == WeightFormat::bf16);
  CHECK(all->bits(WeightFormat::fp8, ParamGroup{"out_proj", 2048, 4096, 1, true}, 0, GgufTraits{}, 128) == 8 + 32.0 / 4096);
  CHECK_THROWS_AS(module_formats_from_config(
                      nlohmann::json{{"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {128}}}}}, "t"),
                  DataError);
  CHECK_THROWS_AS(module_formats_from_config(
                      nlohmann::json{{"quantization_config", {{"quant_method", "fp8"}, {"modules_to_not_convert", "lm_head"}}}}, "t"),
                  DataError);
}

TEST_CASE("qwen_vision_params: the vision encoder of Qwen3.6-35B-A3B by hand", "[quant]") {
  // vision_config: depth 27, hidden 1152, intermediate 4304, 3 channels, patches 2 × 16 × 16, 2304 positions,
  // merge 2 × 2, out 2048, no deepstack.
  const nlohmann::json c = {{"vision_config",
                             {{"depth", 27}, {"hidden_size", 1152}, {"intermediate_size", 4304}, {"in_channels", 3},
                              {"patch_size", 16}, {"temporal_patch_size", 2}, {"num_position_embeddings", 2304},
                              {"out_hidden_size", 2048}, {"spatial_merge_size", 2},
                              {"deepstack_visual_indexes", nlohmann::json::array()}}}};
  const std::int64_t patch = 3 * 2 * 16 * 16 * 1152 + 1152;  // 1,770,624
  const std::int64_t pos = 2304 * 1152;                       // 2,654,208
  // LayerNorms 4·1152, qkv 1152·3456 + 3456, proj 1152² + 1152, fc1 1152·4304 + 4304, fc2 4304·1152 + 1152.
  const std::int64_t block = 4608 + 3'984'768 + 1'328'256 + 4'962'512 + 4'959'360;  // 15,239,504
  const std::int64_t merger = 2304 + (4608 * 4608 + 4608) + (4608 * 2048 + 2048);   // 30,679,808
  CHECK(block == 15'239'504);
  CHECK(qwen_vision_params(c) == patch + pos + 27 * block + merger);
  CHECK(qwen_vision_params(c) == 446'571'248);  // 0.83 GiB in bf16
  const VisionEncoderShape e = qwen_vision_shape(c);
  CHECK((e.depth == 27 && e.hidden == 1152 && e.intermediate == 4304 && e.patch == 16 && e.temporal_patch == 2));
  CHECK((e.merge == 2 && e.in_channels == 3 && e.out_hidden == 2048 && e.position_embeddings == 2304 && e.deepstack == 0));
  CHECK(qwen_vision_shape(nlohmann::json{{"vision_config", {{"depth", 27}}}}).depth == 0);
  CHECK(qwen_vision_params(nlohmann::json{{"vision_config", {{"depth", 27}}}}) == 0);  // not one gpuplan reads
  CHECK(qwen_vision_params(nlohmann::json::object()) == 0);
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
  // Batch 1, bf16: decode reads the 16.06 GB of weights but the untied input embedding (128,256 × 4,096, gathered a
  // row per token) + 1000 tokens × 131,072 B per step at 0.5 × 3.35 TB/s.
  const double wbytes = 2.0 * 8'030'261'248, embedding = 2.0 * 128'256 * 4'096;
  const auto t = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 131'072, 1, 1000, 1000, 1, e);
  CHECK(t.decode_weight_bytes == Approx(wbytes - embedding));
  CHECK(t.decode_step.in(unit::seconds) == Approx((wbytes - embedding + 1000 * 131'072.0) / (0.5 * 3.35e12)));
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

TEST_CASE("gguf_tensor_type: llama_tensor_get_type's choices", "[quant][llama.cpp]") {
  using T = GgmlType;
  using R = TensorRole;
  const GgufTraits l32{32, 1, false}, gqa4{32, 4, false}, l70b{80, 8, true};
  // Q3_K_M: ffn_down Q5_K in the first sixteenth, Q4_K everywhere else (Q3_K only for Falcon); attn_v Q5_K in the
  // first two layers.
  CHECK(gguf_tensor_type(WeightFormat::q3_k_m, R::ffn_down, 1, l32, 10240) == T::q5_k);
  CHECK(gguf_tensor_type(WeightFormat::q3_k_m, R::ffn_down, 10, l32, 10240) == T::q4_k);
  CHECK(gguf_tensor_type(WeightFormat::q3_k_m, R::attn_v, 1, l32, 4096) == T::q5_k);
  CHECK(gguf_tensor_type(WeightFormat::q3_k_m, R::other_linear, 10, l32, 4096) == T::q3_k);
  // Q2_K: attn_v Q4_K only with 4 or more query heads per KV head, else Q3_K.
  CHECK(gguf_tensor_type(WeightFormat::q2_k, R::attn_v, 5, l32, 4096) == T::q3_k);
  CHECK(gguf_tensor_type(WeightFormat::q2_k, R::attn_v, 5, gqa4, 4096) == T::q4_k);
  // Q4_K_S: attn_v Q5_K in the first four layers.
  CHECK(gguf_tensor_type(WeightFormat::q4_k_s, R::attn_v, 3, l32, 4096) == T::q5_k);
  CHECK(gguf_tensor_type(WeightFormat::q4_k_s, R::attn_v, 4, l32, 4096) == T::q4_k);
  // LLM_TYPE_70B: an attn_v that would be Q3_K or Q4_K is Q5_K (8 query heads share it).
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::attn_v, 40, l70b, 8192) == T::q5_k);
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::attn_v, 10, l32, 8192) == T::q4_k);
  CHECK(gguf_traits(find_preset("llama-3.1-70b").spec).type_70b);
  CHECK_FALSE(gguf_traits(find_preset("llama-3.1-8b").spec).type_70b);
  CHECK(gguf_traits(find_preset("llama-3.1-8b").spec).gqa == 4);
  // 8 experts (Mixtral): attn_k and attn_v in Q8_0 whatever the file type (llama.cpp #4495 lists Mixtral's
  // "blk.31.attn_k.weight q8_0" and "attn_v.weight q8_0" beside q3_K/q4_K tensors), attn_output Q5_K in the low
  // k-quant mixes; other roles as for a dense model. The role of a k_proj is attn_k.
  const GgufTraits mixtral = gguf_traits(find_preset("mixtral-8x7b").spec);
  CHECK(mixtral.experts == 8);
  for (WeightFormat f : {WeightFormat::q4_0, WeightFormat::q4_k_m, WeightFormat::q6_k, WeightFormat::q2_k}) {
    CHECK(gguf_tensor_type(f, R::attn_v, 9, mixtral, 4096) == T::q8_0);
    CHECK(gguf_tensor_type(f, R::attn_k, 9, mixtral, 4096) == T::q8_0);
    CHECK(gguf_tensor_type(f, R::attn_k, 9, gqa4, 4096) == gguf_tensor_type(f, R::other_linear, 9, gqa4, 4096));
  }
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::attn_output, 9, mixtral, 4096) == T::q5_k);
  CHECK(gguf_tensor_type(WeightFormat::q5_k_m, R::attn_output, 9, mixtral, 4096) == T::q5_k);  // its own type
  CHECK(gguf_tensor_type(WeightFormat::q4_0, R::attn_output, 9, mixtral, 4096) == T::q4_0);
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::other_linear, 9, mixtral, 4096) == T::q4_k);
  CHECK(role_of(ParamGroup{"k_proj", 1024, 4096, 1, true, false}) == R::attn_k);
  // Legacy types: the output in Q6_K, everything else in the file's type.
  CHECK(gguf_tensor_type(WeightFormat::q5_1, R::output, 0, l32, 4096) == T::q6_k);
  CHECK(gguf_tensor_type(WeightFormat::q5_1, R::ffn_down, 0, l32, 4096) == T::q5_1);
  // Rows a k-quant super-block (256) does not divide fall back (Qwen2.5-0.5B: hidden 896).
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::other_linear, 5, l32, 896) == T::q5_0);
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::output, 0, l32, 896) == T::q8_0);
  CHECK(gguf_tensor_type(WeightFormat::q5_k_m, R::other_linear, 5, l32, 896) == T::q5_1);
  CHECK(gguf_tensor_type(WeightFormat::q2_k, R::other_linear, 5, l32, 896) == T::iq4_nl);
  CHECK(gguf_tensor_type(WeightFormat::q4_k_m, R::other_linear, 5, l32, 100) == T::f16);
}

TEST_CASE("weight_bytes: Pythia 2.8B as Q3_K_M, tallied from the tensor types llama.cpp logged", "[quant][llama.cpp]") {
  // ggml-org/ci (b4343, V100) pythia_2_8b-tg-q3_k.log: "type q3_K: 33, q4_K: 94, q5_K: 2, q6_K: 1" and
  // "CUDA0 model buffer size = 1354.83 MiB". By hand: 32 qkv (7680×2560), 32 dense (2560²) and 30 of the 32
  // dense_4h_to_h (2560×10240) in Q4_K (144 B / 256) = 914,227,200 B; the first 2 dense_4h_to_h in Q5_K (176 / 256)
  // = 36,044,800 B; 32 dense_h_to_4h in Q3_K (110 / 256) = 360,448,000 B; embed_out in Q6_K (210 / 256) =
  // 105,638,400 B; norms and biases in f32 = 4,280,320 B; total 1,420,638,720 B (token_embd, Q3_K, stays on the host).
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/pythia-2.8b.json");
  const ModelSpec m = model_from_hf_config(nlohmann::json::parse(f), "pythia-2.8b");
  const WeightBytes b = weight_bytes(m, WeightFormat::q3_k_m);
  CHECK((b.total() - b.embedding).in(unit::bytes) == Approx(1'420'638'720.0));
  CHECK((b.total() - b.embedding).in(unit::bytes) / 1048576.0 == Approx(1354.83).margin(0.005));
  // An F16 GGUF file keeps the 1-D tensors in f32: 1,070,080 of them, 2 bytes more each than fp16.
  const double hf = (weight_bytes(m, WeightFormat::fp16).total() - weight_bytes(m, WeightFormat::fp16).embedding).in(unit::bytes);
  const WeightBytes g = weight_bytes(m, WeightFormat::fp16, 128, /*gguf_file=*/true);
  CHECK((g.total() - g.embedding).in(unit::bytes) - hf == Approx(1'070'080.0 * 2));
  CHECK((g.total() - g.embedding).in(unit::bytes) / 1048576.0 == Approx(5049.71).margin(0.005));
}
