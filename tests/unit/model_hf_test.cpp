#include <catch2/catch.hpp>
#include <gpuplan/model_hf.h>

using namespace gpuplan;

static const std::string data = GPUPLAN_TEST_DATA;

TEST_CASE("load_hf_config: calibration configs import with exact parameter counts", "[model_hf]") {
  // n_params as measured by sum(p.numel()) in tests/data/calibration/cases.jsonl.
  CHECK(count_params(load_hf_config(data + "/calibration/configs/train-gpt2-fp32-adamw-b8-s1024.json")).total.in(unit::params) == 124'439'808);
  CHECK(count_params(load_hf_config(data + "/calibration/configs/train-llama32_1b-bf16-adamw-b4-s2048.json")).total.in(unit::params) == 1'235'814'400);
  CHECK(count_params(load_hf_config(data + "/calibration/configs/train-qwen25_0.5b-bf16-adamw-b8-s1024.json")).total.in(unit::params) == 494'032'768);
}

TEST_CASE("load_hf_config: sliding windows per layer", "[model_hf]") {
  const ModelSpec m = load_hf_config(data + "/calibration/configs/infer-mistral_7b-bf16-b4-s8192-n16.json");
  CHECK(m.sliding_window == 4096);
  CHECK(m.is_sliding_layer(0));
  const ModelSpec q = load_hf_config(data + "/calibration/configs/train-qwen25_0.5b-bf16-adamw-b8-s1024.json");
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
  CHECK_THROWS_WITH(load_hf_config(data + "/configs/missing_hidden.json"), Catch::Contains("hidden_size"));
  CHECK_THROWS_WITH(load_hf_config(data + "/configs/unknown_type.json"), Catch::Contains("mamba"));
  CHECK_THROWS_AS(load_hf_config(data + "/configs/malformed.json"), DataError);
  CHECK_THROWS_AS(load_hf_config(data + "/configs/none.json"), DataError);
  CHECK_THROWS_AS(model_from_hf_config(nlohmann::json{{"model_type", "llama"}, {"vocab_size", "x"}}, "x"), DataError);
  nlohmann::json bad = {{"model_type", "llama"}, {"vocab_size", 100}, {"hidden_size", 64}, {"intermediate_size", 128},
                        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 3}};
  CHECK_THROWS_WITH(model_from_hf_config(bad, "cfg"), Catch::Contains("multiple"));
}
