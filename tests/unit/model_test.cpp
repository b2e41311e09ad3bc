#include <catch2/catch.hpp>
#include <gpuplan/model_presets.h>

using namespace gpuplan;

static std::int64_t total(const char* id) { return count_params(find_preset(id).spec).total.in(unit::params); }
static std::int64_t active(const char* id) { return count_params(find_preset(id).spec).active.in(unit::params); }

TEST_CASE("count_params: published totals", "[model]") {
  // Meta / Mistral / OpenAI model cards and sum(p.numel()) of the HF models.
  CHECK(total("llama-3.1-8b") == 8'030'261'248);
  CHECK(total("llama-3.2-1b") == 1'235'814'400);     // tied embeddings (measured: n_params in calibration data)
  CHECK(total("llama-2-7b") == 6'738'415'616);
  CHECK(total("mixtral-8x7b") == 46'702'792'704);
  CHECK(total("gpt2") == 124'439'808);              // learned positions, biases, tied head
  CHECK(total("gpt2-xl") == 1'557'611'200);
  CHECK(total("qwen2.5-0.5b") == 494'032'768);      // q/k/v biases, tied (calibration n_params)
  CHECK(total("mistral-7b") == 7'241'732'096);
}

TEST_CASE("count_params: MoE active parameters", "[model]") {
  // Mixtral 8x7B: 12.9B active (2 of 8 experts); DeepSeek-V3: 671B total, 37B activated (DeepSeek-V3 README).
  CHECK(active("mixtral-8x7b") == 12'879'925'248);
  const double ds_total = double(total("deepseek-v3")), ds_active = double(active("deepseek-v3"));
  CHECK(ds_total == Approx(671e9).epsilon(0.002));
  CHECK(ds_active == Approx(37e9).epsilon(0.02));
}

TEST_CASE("count_params: tied vs untied embeddings differ by V·h", "[model]") {
  ModelSpec s = find_preset("llama-3.2-1b").spec;
  const auto tied = count_params(s).total.in(unit::params);
  s.tied_embeddings = false;
  CHECK(count_params(s).total.in(unit::params) - tied == 128256LL * 2048LL);
}

TEST_CASE("derive_model: a standard shape near the requested count", "[model]") {
  const ModelSpec s = derive_model(Params(7'000'000'000));
  CHECK(s.hidden % 128 == 0);
  CHECK(s.head_dim == 128);
  const double n = double(count_params(s).total.in(unit::params));
  CHECK(n == Approx(7e9).epsilon(0.05));
  CHECK_THROWS_AS(derive_model(Params(2'000'000)), InputError);  // smaller than the vocabulary alone
  // Up to 1e15 parameters a shape exists and every count stays finite.
  const ModelSpec big = derive_model(Params(1'000'000'000'000'000));
  CHECK(double(count_params(big).total.in(unit::params)) == Approx(1e15).epsilon(0.05));
}

TEST_CASE("presets: every preset validates and has a source", "[model]") {
  // The presets the foundation issue lists.
  for (const char* id : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                         "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-0.5b",
                         "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b",
                         "gemma-2-2b", "gemma-2-9b", "gemma-2-27b", "phi-3-mini", "phi-3-medium", "gpt2", "gpt2-medium",
                         "gpt2-large", "gpt2-xl", "deepseek-v3"})
    CHECK_NOTHROW(find_preset(id));
  for (const auto& p : builtin_presets()) {
    INFO(p.id);
    CHECK(p.source.rfind("https://", 0) == 0);
    CHECK_NOTHROW(validate(p.spec));
  }
  CHECK(find_preset("llama3.1-8b").id == "llama-3.1-8b");  // alias
  CHECK_THROWS_AS(find_preset("llama-9"), InputError);
}
