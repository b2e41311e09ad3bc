#include "../test_support.h"
#include <catch2/catch.hpp>
#include <fstream>
#include <numeric>
#include <sstream>

#include <gpuplan/memory/inference.h>
#include <gpuplan/model_hf.h>

using namespace gpuplan;


// The library parses bytes it is handed; reading the file is the caller's part (the CLI's model_source.cpp).
static ModelSpec load_hf_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw DataError(path + ": cannot open the model config");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path + ": not valid JSON (" + json_problem(e) + ")");
  }
  return model_from_hf_config(j, path);
}

TEST_CASE("load_hf_config: calibration configs import with exact parameter counts", "[model_hf]") {
  // n_params as measured by sum(p.numel()) in tests/data/calibration/cases.jsonl.
  CHECK(count_params(load_hf_config(test::data + "/calibration/configs/train-gpt2-fp32-adamw-b8-s1024.json")).total.in(unit::params) == 124'439'808);
  CHECK(count_params(load_hf_config(test::data + "/calibration/configs/train-llama32_1b-bf16-adamw-b4-s2048.json")).total.in(unit::params) == 1'235'814'400);
  CHECK(count_params(load_hf_config(test::data + "/calibration/configs/train-qwen25_0.5b-bf16-adamw-b8-s1024.json")).total.in(unit::params) == 494'032'768);
}

TEST_CASE("load_hf_config: sliding windows per layer", "[model_hf]") {
  const ModelSpec m = load_hf_config(test::data + "/calibration/configs/infer-mistral_7b-bf16-b4-s8192-n16.json");
  CHECK(m.sliding_window == 4096);
  CHECK(m.is_sliding_layer(0));
  const ModelSpec q = load_hf_config(test::data + "/calibration/configs/train-qwen25_0.5b-bf16-adamw-b8-s1024.json");
  CHECK(q.sliding_window == 0);  // use_sliding_window false
  nlohmann::json g = {{"model_type", "gemma2"}, {"vocab_size", 256000}, {"hidden_size", 2304},
                      {"intermediate_size", 9216}, {"num_hidden_layers", 4}, {"num_attention_heads", 8},
                      {"num_key_value_heads", 4}, {"head_dim", 256}, {"sliding_window", 4096},
                      {"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}}};
  const ModelSpec gm = model_from_hf_config(g, "gemma2");
  CHECK(gm.is_sliding_layer(0));
  CHECK_FALSE(gm.is_sliding_layer(1));
  CHECK(gm.tied_embeddings);  // Gemma ties by default
}

TEST_CASE("load_hf_config: errors are DataErrors naming the problem", "[model_hf]") {
  CHECK_THROWS_WITH(load_hf_config(test::data + "/configs/missing_hidden.json"), Catch::Contains("hidden_size"));
  CHECK_THROWS_WITH(load_hf_config(test::data + "/configs/unknown_type.json"), Catch::Contains("mamba"));
  CHECK_THROWS_AS(load_hf_config(test::data + "/configs/malformed.json"), DataError);
  CHECK_THROWS_AS(load_hf_config(test::data + "/configs/none.json"), DataError);
  CHECK_THROWS_AS(model_from_hf_config(nlohmann::json{{"model_type", "llama"}, {"vocab_size", "x"}}, "x"), DataError);
  nlohmann::json bad = {{"model_type", "llama"}, {"vocab_size", 100}, {"hidden_size", 64}, {"intermediate_size", 128},
                        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 3}};
  CHECK_THROWS_WITH(model_from_hf_config(bad, "cfg"), Catch::Contains("multiple"));
}

TEST_CASE("model_from_hf_config: absurd shapes are refused before any per-layer work", "[model_hf]") {
  const nlohmann::json base = {{"model_type", "llama"}, {"vocab_size", 1000}, {"hidden_size", 64},
                               {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}};
  auto with = [&](nlohmann::json extra) {
    nlohmann::json j = base;
    j.update(extra);
    return j;
  };
  CHECK(count_params(model_from_hf_config(base, "cfg")).total.in(unit::params) > 0);
  // A billion layers: refused at once (a per-layer table of 10^9 entries took a minute or ended in bad_alloc).
  CHECK_THROWS_WITH(model_from_hf_config(with({{"num_hidden_layers", 1'000'000'000}}), "cfg"),
                    Catch::Contains("num_hidden_layers 1000000000 is outside"));
  CHECK_THROWS_WITH(model_from_hf_config(with({{"head_dim", std::int64_t(1) << 62}}), "cfg"), Catch::Contains("2^40"));
  CHECK_THROWS_WITH(model_from_hf_config(with({{"head_dim", 1 << 20}}), "cfg"), Catch::Contains("head_dim"));
  CHECK_THROWS_WITH(model_from_hf_config(with({{"model_type", "mixtral"}, {"num_local_experts", 0},
                                               {"num_experts_per_tok", 2}}), "cfg"),
                    Catch::Contains("num_experts must be positive"));
  CHECK_THROWS_WITH(model_from_hf_config(with({{"model_type", "mixtral"}, {"num_local_experts", 1 << 20},
                                               {"num_experts_per_tok", 2}}), "cfg"),
                    Catch::Contains("num_experts"));
  // 10^5 layers of a 10^6-wide model: every dimension allowed, 7·10^17 parameters in all.
  CHECK_THROWS_WITH(model_from_hf_config(with({{"num_hidden_layers", 100'000}, {"hidden_size", 1'000'000},
                                               {"intermediate_size", 1'000'000}, {"num_attention_heads", 1000}}), "cfg"),
                    Catch::Contains("10^15"));
  CHECK_THROWS_AS(model_from_hf_config(with({{"num_hidden_layers", 1'000'000'000}}), "cfg"), DataError);  // exit 3
}

static nlohmann::json preset_config(const std::string& file, const std::string& id) {
  std::ifstream f(test::data + "/../../data/models/" + file);
  const auto file_json = nlohmann::json::parse(f);
  for (const auto& m : file_json["models"])
    if (m["id"] == id) return m["config"];
  FAIL("no preset " << id);
  return {};
}

TEST_CASE("model_from_hf_config: each layer's attention kind", "[model_hf]") {
  // Qwen3-Next: full attention every full_attention_interval-th layer, Gated DeltaNet in between.
  const ModelSpec q = model_from_hf_config(preset_config("qwen.json", "qwen3-next-80b-a3b"), "q");
  CHECK(q.is_linear_layer(0));
  CHECK(q.is_linear_layer(2));
  CHECK_FALSE(q.is_linear_layer(3));
  CHECK(q.linear.recurrent_state() == 32 * 128 * 128);  // one 128×128 state per value head
  CHECK(q.linear.conv_state() == (2 * 16 * 128 + 32 * 128) * 4);
  // Llama 4: three chunked RoPE layers, then a global NoPE layer (no_rope_layer_interval 4).
  const ModelSpec l4 = model_from_hf_config(preset_config("meta_llama.json", "llama-4-scout"), "l4");
  CHECK(l4.chunked_attention);
  CHECK(l4.sliding_window == 8192);
  CHECK(l4.is_sliding_layer(0));
  CHECK_FALSE(l4.is_sliding_layer(3));
  CHECK(l4.moe_layer_count() == 48);
  const ModelSpec mav = model_from_hf_config(preset_config("meta_llama.json", "llama-4-maverick"), "mav");
  CHECK(mav.moe_layer_count() == 24);  // interleave_moe_layer_step 2: layers 1, 3, 5, …
  CHECK(mav.is_moe_layer(1));
  CHECK_FALSE(mav.is_moe_layer(0));
  // gpt-oss: layer_types alternate 128-token sliding and full attention.
  const ModelSpec g = model_from_hf_config(preset_config("openai.json", "gpt-oss-20b"), "g");
  CHECK(g.sliding_window == 128);
  CHECK(g.is_sliding_layer(0));
  CHECK_FALSE(g.is_sliding_layer(1));
  CHECK(g.attn_sinks);
  auto odd = preset_config("openai.json", "gpt-oss-20b");
  odd["layer_types"][3] = "mamba";
  CHECK_THROWS_WITH(model_from_hf_config(odd, "g"), Catch::Contains("unsupported layer type \"mamba\""));
  odd["layer_types"] = {"full_attention"};
  CHECK_THROWS_WITH(model_from_hf_config(odd, "g"), Catch::Contains("one entry per layer"));
}

TEST_CASE("load_hf_config: Qwen3.6-35B-A3B (qwen3_5_moe) counts as by hand", "[model_hf]") {
  // The multimodal wrapper's text_config (model_type qwen3_5_moe_text): 40 layers of hidden 2048, 3 Gated DeltaNet
  // layers then 1 gated full-attention layer, 256 experts of width 512 (top 8) and one gated shared expert of 512
  // in every layer, vocab 248,320, untied. By hand:
  //   embeddings + lm_head 2 · 248,320 · 2048                                                =  1,017,118,720
  //   full attention, ×10: q+gate 2048·2·16·256 + k, v 2·2048·2·256 + o 4096·2048 + q/k norm 2·256 = 27,263,488
  //   Gated DeltaNet, ×30: in_proj_qkvz 2048·(2·2048 + 2·4096) + in_proj_ba 2048·64 + conv1d 8192·4
  //                        + dt_bias, A_log 2·32 + norm 128 + out_proj 4096·2048                    = 33,718,464
  //   MoE, ×40: experts 256·3·2048·512 + router 2048·256 + shared 3·2048·512 + shared gate 2048   =    808,978,432
  //   layer norms 2·2048 ×40, final norm 2048
  // = 34,660,610,688 — the model card's "35B in total" with the vision tower (27 blocks of width 1152) and the MTP
  // layer, which are not part of the language model counted here.
  const ModelSpec q = load_hf_config(test::data + "/engines/configs/qwen3.6-35b-a3b.json");
  CHECK(q.model_type == "qwen3_5_moe_text");
  CHECK(count_params(q).total.in(unit::params) == 34'660'610'688);
  CHECK(q.attn_output_gate);
  CHECK(q.moe_layer_count() == 40);
  CHECK(q.is_linear_layer(0));
  CHECK_FALSE(q.is_linear_layer(3));
  CHECK(q.partial_rotary == 0.25);  // from rope_parameters
  // The text config alone (as vLLM's Qwen3_5MoeConfig hands it on) is the same model.
  std::ifstream f(test::data + "/engines/configs/qwen3.6-35b-a3b.json");
  nlohmann::json text = nlohmann::json::parse(f)["text_config"];
  CHECK(count_params(model_from_hf_config(text, "t")).total.in(unit::params) == 34'660'610'688);
  // A config that asks for no output gate loses the q_proj half that makes it: 10 layers · 2048 · 4096.
  text["attn_output_gate"] = false;
  CHECK(count_params(model_from_hf_config(text, "t")).total.in(unit::params) == 34'660'610'688 - 10LL * 2048 * 4096);
}

TEST_CASE("model_from_hf_config: both RoPE layouts and both field names give one model", "[model_hf]") {
  // transformers 4.x: rope_theta / partial_rotary_factor at the top level; 5.x: nested under rope_parameters.
  auto v4 = preset_config("zai.json", "glm-4.5-air");
  auto v5 = v4;
  v5.erase("rope_theta");
  v5.erase("partial_rotary_factor");
  v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000}, {"partial_rotary_factor", 0.5}};
  // and transformers 5's name for the routed experts
  v5["num_local_experts"] = v5["n_routed_experts"];
  v5.erase("n_routed_experts");
  const ModelSpec a = model_from_hf_config(v4, "v4"), b = model_from_hf_config(v5, "v5");
  CHECK(a.rope_theta == 1e6);
  CHECK(a.partial_rotary == 0.5);
  CHECK(b.rope_theta == a.rope_theta);
  CHECK(b.partial_rotary == a.partial_rotary);
  CHECK(b.moe.experts == 128);
  CHECK(count_params(a).total.in(unit::params) == count_params(b).total.in(unit::params));
  v5["rope_parameters"]["partial_rotary_factor"] = 2;
  CHECK_THROWS_AS(model_from_hf_config(v5, "v5"), DataError);
}

TEST_CASE("model_from_hf_config: multimodal wrappers estimate the language model", "[model_hf]") {
  // Llama 4 and Mistral 3 configs nest the text model under text_config beside a vision_config.
  const nlohmann::json wrapped = {{"model_type", "llama4"},
                                  {"text_config", preset_config("meta_llama.json", "llama-4-scout")},
                                  {"vision_config", {{"hidden_size", 1408}}}};
  const ModelSpec s = model_from_hf_config(wrapped, "scout");
  CHECK(s.model_type == "llama4_text");
  CHECK(count_params(s).total.in(unit::params) == 107'769'861'120);  // transformers' count of the text model
}

TEST_CASE("load_hf_config: Gemma 4 26B A4B (gemma4_text, MoE) per-layer shapes and counts by hand", "[model_hf][gemma4]") {
  // The released config's language-model fields (tests/data/engines/configs/gemma-4-26b-a4b.json).
  const ModelSpec s = load_hf_config(test::data + "/engines/configs/gemma-4-26b-a4b.json");
  CHECK(s.model_type == "gemma4_text");
  REQUIRE(s.layer_shapes.size() == 2);
  // Sliding layers: 8 KV heads of 256; full ones (5, 11, …, 29): global_head_dim 512, num_global_key_value_heads 2,
  // the keys as values (attention_k_eq_v).
  CHECK(s.shape(0) == LayerShape{8, 256, 2112, false, false});
  CHECK(s.shape(5) == LayerShape{2, 512, 2112, true, false});
  CHECK(s.shape(29).head_dim == 512);
  CHECK(s.kv_dim(0) == 2048);
  CHECK(s.kv_dim(5) == 1024);
  // modeling_gemma4.py, h = 2816: sliding attention q 16·256·h + k, v 8·256·h each + o 16·256·h = 34,603,008, q/k
  // norms 512; full attention q 16·512·h + k 2·512·h + o (no v_proj) = 49,020,928, norms 1,024. Every layer: the
  // dense MLP 3·h·2112 = 17,842,176, 128 experts of 3·h·704 = 761,266,176, the router 128·h + h (scale) + 128
  // (per_expert_scale) = 363,392, seven norms of h = 19,712. 25 sliding + 5 full layers = 24,494,941,440; the tied
  // embedding 262,144·h = 738,197,504 and the final norm: 25,233,141,760 (the model card: 25.2B).
  const ParamCounts c = count_params(s);
  CHECK(c.total.in(unit::params) == 25'233'141'760);
  // Active: 8 of 128 experts per token: 25,233,141,760 − 30 · 761,266,176 · 120/128 (the model card: 3.8B).
  CHECK(c.active.in(unit::params) == 3'822'530'560);
  // KV per token (bf16): 25 sliding layers × 2·8·256·2 B + 5 full × 2·2·512·2 B = 204,800 + 20,480.
  InferenceWorkload w;
  const InferenceTensors t = inference_tensors(s, w, WeightFormat::bf16, KvDtype::bf16);
  CHECK(t.kv_tok[0] == 8192);
  CHECK(t.kv_tok[5] == 4096);
  CHECK(std::accumulate(t.kv_tok.begin(), t.kv_tok.end(), 0.0) == 225'280);
  // TP 4: the full layers' 2 KV heads are replicated (one per GPU), the sliding layers' 8 split.
  w.tp = 4;
  const InferenceTensors t4 = inference_tensors(s, w, WeightFormat::bf16, KvDtype::bf16);
  CHECK(t4.kv_tok[0] == 2048);
  CHECK(t4.kv_tok[5] == 2048);
}

TEST_CASE("model_from_hf_config: Gemma 4 layers that read shared K and V keep no cache", "[model_hf][gemma4]") {
  // A cut-down E2B-like config: 10 layers, full attention every 6th and the last (Gemma4TextConfig's default
  // layer_types), the last 4 reading the K and V of the last earlier layer of their type with their FFN doubled
  // (use_double_wide_mlp), per-layer embeddings of 16.
  nlohmann::json j = {{"model_type", "gemma4_text"}, {"vocab_size", 1000}, {"hidden_size", 64},
                      {"intermediate_size", 128}, {"num_hidden_layers", 10}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 1}, {"head_dim", 16}, {"global_head_dim", 32},
                      {"sliding_window", 8}, {"num_kv_shared_layers", 4}, {"use_double_wide_mlp", true},
                      {"hidden_size_per_layer_input", 16}, {"vocab_size_per_layer_input", 1000}};
  const ModelSpec s = model_from_hf_config(j, "e2b-like");
  REQUIRE(s.layer_shapes.size() == 4);  // sliding / full × own / shared
  CHECK(s.keeps_kv(0));
  CHECK(!s.keeps_kv(6));
  CHECK(s.shape(9) == LayerShape{1, 32, 256, false, true});  // the last layer is full attention
  // Layer 0: q 4·16·64 + k, v 16·64 each + o 4·16·64 = 10,240, q/k norms 32, four norms 256, MLP 3·64·128 = 24,576,
  // per-layer gate and projection 2·16·64 = 2,048 and their norm 64: 37,216. Layer 6 (sliding, shared): q and o
  // 8,192, q_norm 16, norms 256, MLP 3·64·256 = 49,152, per-layer 2,112: 59,728.
  auto sum = [](const std::vector<ParamGroup>& v) {
    std::int64_t n = 0;
    for (const auto& g : v) n += g.numel();
    return n;
  };
  CHECK(sum(layer_params(s, 0)) == 37'216);
  CHECK(sum(layer_params(s, 6)) == 59'728);
  // Embeddings: tokens 1000·64, the per-layer table 1000·(10·16), its projection 160·64 and norm 16.
  CHECK(count_params(s).embedding.in(unit::params) == 64'000 + 160'000 + 10'240 + 16);
  // KV: the 6 own layers only (5 sliding of 2·16·2 B, 1 full of 2·32·2 B per token); HF generate's sliding layers
  // keep window − 1 = 7 tokens, the full one prompt + new − 1 = 100.
  InferenceWorkload w;
  w.prompt_len = 100;
  w.new_tokens = 1;
  const InferenceTensors t = inference_tensors(s, w, WeightFormat::bf16, KvDtype::bf16);
  CHECK(kv_layer_count(s) == 6);
  CHECK(t.kv_tok[6] == 0);
  CHECK(t.kv_final == 5 * 7 * 64.0 + 100 * 128.0);
}
