#include <catch2/catch.hpp>
#include <fstream>

#include <gpuplan/builtin.h>

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
  for (const std::int64_t n : {125'000'000LL, 1'500'000'000LL, 7'500'000'000LL, 34'000'000'000LL, 175'000'000'000LL}) {
    const ModelSpec s = derive_model(Params(n));
    CAPTURE(n, s.hidden, s.heads, s.kv_heads, s.layers);
    CHECK(s.heads % 8 == 0);  // --tp 8 divides the heads
    CHECK(s.kv_heads % 8 == 0);
    CHECK(s.heads * s.head_dim == s.hidden);
    CHECK(double(count_params(s).total.in(unit::params)) == Approx(double(n)).epsilon(0.05));
  }
  // 34B: Code Llama 34B's width and GQA (hidden 8192 would be 48 layers; 7168 × 63 lands closer to the count).
  CHECK(derive_model(Params(34'000'000'000)).kv_heads == 8);
  CHECK_THROWS_AS(derive_model(Params(2'000'000)), InputError);  // smaller than the vocabulary alone
  // Up to 1e15 parameters a shape exists and every count stays finite.
  const ModelSpec big = derive_model(Params(1'000'000'000'000'000));
  CHECK(double(count_params(big).total.in(unit::params)) == Approx(1e15).epsilon(0.05));
}

TEST_CASE("model_of_size: the standard model at the sizes people name", "[model]") {
  // Published counts: Llama 2 7B 6.74B (Touvron et al. 2023, Table 1 lists "7B"); Llama 3.1 70B 70.6B (model card).
  const SizedModel l7 = model_of_size(Params(7'000'000'000));
  CHECK(count_params(l7.spec).total.in(unit::params) == 6'738'415'616);
  CHECK(l7.note.find("Llama 2 7B") != std::string::npos);
  const SizedModel l70 = model_of_size(Params(70'000'000'000));
  CHECK(l70.spec.heads == 64);
  CHECK(l70.spec.kv_heads == 8);
  CHECK(l70.spec.layers == 80);
  CHECK(model_of_size(Params(13'000'000'000)).spec.hidden == 5120);
  CHECK(model_of_size(Params(8'000'000'000)).spec.vocab == 128256);
  CHECK(model_of_size(Params(405'000'000'000)).spec.layers == 126);
  // Near, not at, a standard size: the derived shape, and the note says so.
  const SizedModel other = model_of_size(Params(7'200'000'000));
  CHECK(other.spec.model_type == "derived");
  CHECK(other.note.find("no standard model") != std::string::npos);
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

TEST_CASE("presets: every count equals transformers' own", "[model]") {
  // tests/data/preset_params.json: sum(p.numel()) of each preset built by transformers 5.17 on the meta device.
  // transformers keeps DeepSeek-V3-style routers' e_score_correction_bias as a buffer; gpuplan counts it (it is
  // stored in the checkpoint and held in memory): one value per routed expert of each MoE layer.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/preset_params.json");
  const auto j = nlohmann::json::parse(f);
  std::size_t checked = 0;
  for (const auto& p : builtin_presets()) {
    INFO(p.id);
    REQUIRE(j["presets"].contains(p.id));
    const auto buffers = p.spec.moe.router_bias ? p.spec.moe_layer_count() * p.spec.moe.experts : 0;
    CHECK(count_params(p.spec).total.in(unit::params) - buffers == j["presets"][p.id].get<std::int64_t>());
    // The counts the built-in tables carry (counted at build time, listed by `models`) are today's count_params.
    CHECK(p.params == count_params(p.spec).total);
    CHECK(p.active_params == count_params(p.spec).active);
    ++checked;
  }
  CHECK(checked == j["presets"].size());
}

TEST_CASE("presets: today's lineup against the model cards", "[model]") {
  // Totals and active counts as the model cards state them (rounded there, so within the rounding).
  struct Card { const char* id; double total, active, eps; };
  for (const Card& c : {Card{"qwen3-0.6b", 0.6e9, 0, 0.01}, Card{"qwen3-8b", 8.2e9, 0, 0.01},
                        Card{"qwen3-32b", 32.8e9, 0, 0.01}, Card{"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02},
                        Card{"qwen3-235b-a22b", 235e9, 22e9, 0.01}, Card{"llama-3.3-70b", 70.6e9, 0, 0.01},
                        Card{"llama-4-maverick", 400e9, 17e9, 0.02}, Card{"phi-3.5-moe", 41.9e9, 6.6e9, 0.01},
                        Card{"glm-4.5-air", 106e9, 0, 0.01}, Card{"kimi-k2", 1.03e12, 32e9, 0.03},
                        Card{"gemma-3-1b", 1.0e9, 0, 0.01}, Card{"phi-4", 14.7e9, 0, 0.01},
                        Card{"granite-3.3-8b", 8.17e9, 0, 0.01}, Card{"olmo-2-7b", 7.3e9, 0, 0.01}}) {
    INFO(c.id);
    CHECK(double(total(c.id)) == Approx(c.total).epsilon(c.eps));
    if (c.active > 0) CHECK(double(active(c.id)) == Approx(c.active).epsilon(0.03));
  }
  // gpt-oss model card (arXiv 2508.10925, Table 1): 20.91B / 116.83B total; 3.61B / 5.13B active, which excludes
  // the 201,088 × 2,880 unembedding.
  CHECK(total("gpt-oss-20b") == 20'914'757'184);
  CHECK(double(active("gpt-oss-20b") - 201'088LL * 2'880) == Approx(3.61e9).epsilon(0.002));
  CHECK(double(total("gpt-oss-120b")) == Approx(116.83e9).epsilon(0.0005));
  CHECK(double(active("gpt-oss-120b") - 201'088LL * 2'880) == Approx(5.13e9).epsilon(0.002));
  // Gemma 4 model cards (huggingface.co/google/gemma-4-31B-it and siblings, "Total Parameters", read 2026-11-29;
  // the language model, the vision and audio encoders listed apart): 31B 30.7B; 26B A4B 25.2B, 3.8B active;
  // E2B 2.3B effective, E4B 4.5B effective, "effective" leaving out the per-layer embedding table, and 5.1B / 8B
  // "with embeddings", which add the ~0.15B vision and ~0.3B audio encoders.
  CHECK(double(total("gemma-4-31b")) == Approx(30.7e9).epsilon(0.002));
  CHECK(double(total("gemma-4-26b-a4b")) == Approx(25.2e9).epsilon(0.002));
  CHECK(double(active("gemma-4-26b-a4b")) == Approx(3.8e9).epsilon(0.01));
  const auto per_layer_table = [](const char* id) {
    const ModelSpec& s = find_preset(id).spec;
    return s.per_layer_vocab * s.layers * s.per_layer_input;
  };
  CHECK(per_layer_table("gemma-4-e2b") == 262'144LL * 35 * 256);
  CHECK(double(total("gemma-4-e2b") - per_layer_table("gemma-4-e2b")) == Approx(2.3e9).epsilon(0.01));
  CHECK(double(total("gemma-4-e2b")) + 0.45e9 == Approx(5.1e9).epsilon(0.01));
  // E4B counts 4.64B without its table, 3 % above the card's 4.5B (the card's rounding of it is not published).
  CHECK(double(total("gemma-4-e4b") - per_layer_table("gemma-4-e4b")) == Approx(4.5e9).epsilon(0.035));
  CHECK(double(total("gemma-4-e4b")) + 0.45e9 == Approx(8.0e9).epsilon(0.02));
}

TEST_CASE("param_inventory and count_params: each kind of layer once equals every layer's own groups", "[model]") {
  // Every preset, hybrids included (linear-attention layers, dense layers before the MoE ones, interleaved MoE).
  auto same = [](const ParamGroup& a, const ParamGroup& b) {
    return a.module == b.module && a.out == b.out && a.in == b.in && a.count == b.count && a.linear == b.linear &&
           a.expert == b.expert;
  };
  for (const auto& p : builtin_presets()) {
    INFO(p.id);
    const ParamInventory inv = param_inventory(p.spec);
    REQUIRE(inv.layers() == std::size_t(p.spec.layers));
    std::int64_t total = 0, active = 0;
    for (const auto* part : {&inv.embedding, &inv.head}) {
      total += detail::sum_numel(*part, false, p.spec.moe);
      active += detail::sum_numel(*part, true, p.spec.moe);
    }
    for (std::int64_t l = 0; l < p.spec.layers; ++l) {
      const auto own = layer_params(p.spec, l);
      const auto& shared = inv.layer(std::size_t(l));
      REQUIRE(own.size() == shared.size());
      for (std::size_t i = 0; i < own.size(); ++i) CHECK(same(own[i], shared[i]));
      total += detail::sum_numel(own, false, p.spec.moe);
      active += detail::sum_numel(own, true, p.spec.moe);
    }
    const ParamCounts c = count_params(p.spec);
    CHECK(c.total.in(unit::params) == total);
    CHECK(c.active.in(unit::params) == active);
  }
}

TEST_CASE("find_preset: every preset by its id and each alias, as in the full list", "[model]") {
  for (const auto& p : builtin_presets()) {
    for (const std::string& name : [&] { auto n = p.aliases; n.push_back(p.id); return n; }()) {
      INFO(name);
      const ModelPreset* found = find_preset_or_null(name);
      REQUIRE(found != nullptr);
      CHECK(found->id == p.id);
      CHECK(count_params(found->spec).total == count_params(p.spec).total);
    }
  }
  CHECK(find_preset_or_null("llama-9") == nullptr);
  CHECK(find_preset_or_null("models") == nullptr);  // a word in every file, but no preset's name
}

TEST_CASE("presets: names as people type them and releases of a preset's model", "[model][names]") {
  REQUIRE(find_preset_or_null("Llama-3.1-8B") != nullptr);
  CHECK(find_preset_or_null("Llama-3.1-8B")->id == "llama-3.1-8b");
  CHECK(find_preset_or_null("llama3.1:8b")->id == "llama-3.1-8b");
  CHECK(find_preset_or_null("Qwen2.5 7B")->id == "qwen2.5-7b");
  CHECK(find_preset_or_null("Llama-3.1-8B-Instruct") == nullptr);  // a release, not the preset's own name
  for (const auto& [release, id] : std::vector<std::pair<std::string, std::string>>{
           {"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"}, {"meta-llama/Llama-2-7b-hf", "llama-2-7b"},
           {"google/gemma-3-4b-it", "gemma-3-4b"}, {"Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"},
           {"allenai/OLMo-2-1124-7B", "olmo-2-7b"}, {"microsoft/Phi-3-mini-4k-instruct", "phi-3-mini"},
           {"Llama-3.1-8B-Instruct", "llama-3.1-8b"}}) {
    INFO(release);
    const ModelPreset* p = find_base_preset_or_null(release);
    REQUIRE(p != nullptr);
    CHECK(p->id == id);
  }
  // A different release is not a preset's model: Mistral 7B v0.3 has another vocabulary than v0.1.
  CHECK(find_base_preset_or_null("mistralai/Mistral-7B-Instruct-v0.3") == nullptr);
  CHECK(find_base_preset_or_null("someone/unrelated-model") == nullptr);
  CHECK_THROWS_WITH(find_preset("llama-3.1-8"), Catch::Contains("did you mean llama-3.1-8b"));
}
