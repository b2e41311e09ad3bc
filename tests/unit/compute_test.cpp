#include <catch2/catch.hpp>
#include <gpuplan/catalog.h>
#include <gpuplan/compute.h>
#include <gpuplan/cost.h>
#include <gpuplan/builtin.h>

using namespace gpuplan;

TEST_CASE("dense_training_flops: published budgets", "[compute]") {
  // GPT-3 175B on 300B tokens: 3.14e23 FLOPs (Brown et al. 2020); Chinchilla 70B on 1.4T tokens: 5.76e23
  // (Hoffmann et al. 2022; 6·N·D with N = 70B gives 5.88e23, 2 % above the paper's count).
  CHECK(dense_training_flops(Params(175'000'000'000), Tokens(300'000'000'000)).in(unit::flop) == Approx(3.14e23).epsilon(0.005));
  CHECK(dense_training_flops(Params(70'000'000'000), Tokens(1'400'000'000'000)).in(unit::flop) == Approx(5.76e23).epsilon(0.025));
}

TEST_CASE("training_flops: attention term, MoE active parameters, recomputation", "[compute]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const Tokens d(1'000'000);
  const auto f = training_flops(m, d, 8192, Recompute::none);
  // N: 8,030,261,248 − input embedding 128256·4096 = 7,504,924,672; attention 12·32·32·128·8192 per token.
  CHECK(f.matmul_params.in(unit::params) == 7'504'924'672);
  CHECK(f.flops_per_token == Approx(6.0 * 7'504'924'672 + 12.0 * 32 * 32 * 128 * 8192));
  // Full recomputation re-runs the forward: +2N + 4·L·H·Q·T per token on the hardware, model FLOPs unchanged.
  const auto r = training_flops(m, d, 8192, Recompute::full);
  CHECK(r.model.in(unit::flop) == f.model.in(unit::flop));
  CHECK(r.hardware.in(unit::flop) / 1e6 == Approx(f.flops_per_token + 2.0 * 7'504'924'672 + 4.0 * 32 * 32 * 128 * 8192));
  // Mixtral 8x7B: 2 of 8 experts per token, so about 12.9B active parameters multiply, not 46.7B.
  const auto mx = training_flops(find_preset("mixtral-8x7b").spec, d, 128, Recompute::none);
  CHECK(mx.matmul_params.in(unit::params) == 12'879'925'248 - 32000LL * 4096);
}

TEST_CASE("compute_optimal: the Chinchilla paper's table (approach 1)", "[compute]") {
  // Hoffmann et al. 2022 Table 3: 1B ↔ 1.21e20 FLOPs, 20.2B tokens; 10B ↔ 1.23e22, 205.1B; 175B ↔ 3.85e24,
  // 3.7T; 1T ↔ 1.27e26, 21.2T.
  const ScalingApproach& a1 = scaling_approaches().front();
  struct Row { double c, n, d; };
  for (const Row& r : {Row{1.21e20, 1e9, 20.2e9}, Row{1.23e22, 10e9, 205.1e9}, Row{3.85e24, 175e9, 3.7e12}, Row{1.27e26, 1e12, 21.2e12}}) {
    const auto p = compute_optimal(a1, Flops(r.c));
    CHECK(double(p.params.in(unit::params)) == Approx(r.n).epsilon(0.04));
    CHECK(double(p.tokens.in(unit::tokens)) == Approx(r.d).epsilon(0.04));
  }
}

TEST_CASE("compute_optimal: parametric fits and their loss", "[compute]") {
  // Closed form of Hoffmann et al. eq. 4 with their constants: G = (αA/βB)^(1/(α+β)) = 1.3452…,
  // N = G·(C/6)^(β/(α+β)); at C = 5.76e23 that is 32.2B (the paper's rounded constants, not its reported 40B).
  const auto p = compute_optimal(scaling_approaches()[2], Flops(5.76e23));
  const double g = std::pow(0.34 * 406.4 / (0.28 * 410.7), 1.0 / 0.62);
  CHECK(double(p.params.in(unit::params)) == Approx(g * std::pow(5.76e23 / 6, 0.28 / 0.62)));
  // L(70B, 1.4T) with the Chinchilla constants: 1.69 + 406.4/70e9^0.34 + 410.7/1.4e12^0.28 = 1.937.
  CHECK(chinchilla_fit.loss(70e9, 1.4e12) == Approx(1.69 + 406.4 / std::pow(70e9, 0.34) + 410.7 / std::pow(1.4e12, 0.28)));
  CHECK(chinchilla_fit.loss(70e9, 1.4e12) == Approx(1.937).epsilon(0.001));
  // Epoch's fit gives about 20 tokens per parameter at large budgets (Besiroglu et al. 2024).
  const auto e = compute_optimal(scaling_approaches()[3], Flops(1e24));
  CHECK(e.tokens_per_param == Approx(20).epsilon(0.15));
  CHECK_THROWS_AS(compute_optimal(scaling_approaches()[0], Flops(-1)), InputError);
}

TEST_CASE("training_flops: Llama 2 7B's 184,320 A100-hours imply 44.5 % MFU", "[compute]") {
  // Meta's model card: Llama 2 7B, 2T tokens, 184,320 A100-80GB GPU-hours. Per token: 6·(6,738,415,616 −
  // 131,072,000 embedding) + 12·32·32·128·4096 (its 4096-token context) = 46,086,512,640 FLOPs; × 2e12 tokens
  // / (184,320 h · 3600 s · 312e12 FLOP/s dense bf16) = 0.4452 MFU (plain 6·N·D would say 39 %).
  const ModelSpec& m = find_preset("llama-2-7b").spec;
  const auto f = training_flops(m, Tokens(2'000'000'000'000), 4096, Recompute::none);
  const double implied = f.model.in(unit::flop) / (184320.0 * 3600.0 * 312e12);
  CHECK(implied == Approx(0.4452).epsilon(0.001));
}

TEST_CASE("run_energy", "[cost]") {
  // 1000 GPU-hours at 700 W × 1.0 × PUE 1.2 = 840 kWh; at 0.4 kg/kWh 336 kg CO2.
  EnergyAssumptions a;
  a.grid_kg_per_kwh = 0.4;
  const Energy e = run_energy(1000, 700, a);
  CHECK(e.kwh == Approx(840));
  CHECK(*e.co2_kg == Approx(336));
  a.pue = 0.5;
  CHECK_THROWS_AS(run_energy(1000, 700, a), InputError);
}

TEST_CASE("price_setup: a group inside one instance, replicas on as many as they need", "[cost]") {
  Catalog c;
  Device d;
  d.id = "gpu";
  c.devices = {d};
  auto offer = [](const char* name, int count, double usd, std::optional<int> max_count = std::nullopt) {
    Offering o;
    o.provider = name[0] == 'p' ? "pods" : "cloud";
    o.instance = name;
    o.accelerator = "gpu";
    o.count = count;
    o.max_count = max_count;
    o.on_demand = UsdPerHour(usd);
    return o;
  };
  // A 1-GPU VM at $2/h, an 8-GPU instance at $24/h ($3 a GPU), pods of 1–8 GPUs at $2.50 a GPU.
  c.offerings = {offer("vm1", 1, 2.0), offer("node8", 8, 24.0), offer("pod", 1, 2.5, 8)};
  auto prices = [&](Setup s, const std::string& provider = "") {
    std::vector<std::pair<std::string, double>> out;  // instance × count, $/h of the whole setup
    for (const auto& r : price_setup(c, c.devices[0], s, false, provider))
      out.push_back({std::to_string(r.instances) + "x" + r.offering->instance + ":" + std::to_string(r.gpus_per_instance),
                     r.per_hour().in(unit::usd_per_hour)});
    return out;
  };
  using P = std::vector<std::pair<std::string, double>>;
  // One GPU: the VM ($2), a pod of one ($2.50), the whole 8-GPU instance ($24).
  CHECK(prices({1, 1, false}) == P{{"1xvm1:1", 2.0}, {"1xpod:1", 2.5}, {"1xnode8:8", 24.0}});
  // A tensor-parallel pair cannot be split over two VMs: a pod of 2 ($5), else the 8-GPU instance.
  CHECK(prices({2, 2, false}) == P{{"1xpod:2", 5.0}, {"1xnode8:8", 24.0}});
  // Three independent replicas: three VMs ($6), a pod of 3 ($7.50), one 8-GPU instance.
  CHECK(prices({3, 1, false}) == P{{"3xvm1:1", 6.0}, {"1xpod:3", 7.5}, {"1xnode8:8", 24.0}});
  // Training on 2 nodes of 8: two pods of 8 ($40) or two instances ($48); VMs hold no node.
  CHECK(prices({16, 8, true}) == P{{"2xpod:8", 40.0}, {"2xnode8:8", 48.0}});
  // Eight linked data-parallel GPUs: not over eight single-GPU VMs (no cluster network), but in one pod or node.
  CHECK(prices({8, 1, true}) == P{{"1xpod:8", 20.0}, {"1xnode8:8", 24.0}});
  // More than a pod holds, linked: pods of 8 (the largest), 3 of them for 20 GPUs.
  CHECK(prices({20, 4, true}) == P{{"3xpod:8", 60.0}, {"3xnode8:8", 72.0}});
  // A group larger than any instance: nothing to rent.
  CHECK(prices({16, 16, true}).empty());
  CHECK(prices({1, 1, false}, "pods") == P{{"1xpod:1", 2.5}});
  // Spot only where published.
  CHECK(price_setup(c, c.devices[0], {1, 1, false}, true).empty());
  // Every GPU of a rented instance is paid: a pair on the 8-GPU instance costs $24/h, $3 per GPU it holds.
  const Rental r = *rent(c.offerings[1], {2, 2, false}, false);
  CHECK(r.per_gpu_hour().in(unit::usd_per_hour) == Approx(3.0));
  CHECK(r.over(Seconds(1800)).in(unit::usd) == Approx(12.0));
}

TEST_CASE("price_setup on the built-in catalog: 8 H100 in one node", "[cost]") {
  const Catalog& cat = builtin_catalog();
  // At AWS: p5.48xlarge ($55.04 for 8); the 1-GPU p5.4xlarge holds no 8-GPU node.
  const auto aws = price_setup(cat, cat.get("h100-sxm"), {8, 8, true}, false, "aws");
  REQUIRE(aws.size() == 1);
  CHECK(aws.front().offering->instance == "p5.48xlarge");
  CHECK(aws.front().per_hour().in(unit::usd_per_hour) == Approx(55.04));
  CHECK(aws.front().per_gpu_hour().in(unit::usd_per_hour) == Approx(6.88));
  // Every offering that holds it, cheapest first.
  const auto all = price_setup(cat, cat.get("h100-sxm"), {8, 8, true}, false);
  REQUIRE(all.size() >= 3);
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].per_hour() <= all[i].per_hour());
  for (const auto& r : all) CHECK(r.gpus_per_instance >= 8);
  CHECK(price_setup(cat, cat.get("h100-sxm"), {1, 1, false}, true, "aws").empty());
}

TEST_CASE("price_setup: an offering is a device's when the catalog's first match for its name is that device", "[cost]") {
  Catalog c;
  Device a, b;
  a.id = "gpu-a";
  a.aliases = {"shared"};
  b.id = "gpu-b";
  b.aliases = {"Shared", "bee"};
  c.devices = {a, b};
  auto offer = [](const char* accelerator, double usd) {
    Offering o;
    o.provider = "p";
    o.accelerator = accelerator;
    o.on_demand = UsdPerHour(usd);
    return o;
  };
  c.offerings = {offer("GPU-A", 1), offer("SHARED", 2), offer("Bee", 3), offer("gpu-b", 4)};
  const auto for_a = price_setup(c, c.devices[0], Setup{}, false);
  const auto for_b = price_setup(c, c.devices[1], Setup{}, false);
  // Names ignore case; "shared" answers to both devices, and the catalog's first match (gpu-a) takes it.
  REQUIRE(for_a.size() == 2);
  CHECK(for_a[0].per_gpu_hour().in(unit::usd_per_hour) == 1);
  CHECK(for_a[1].per_gpu_hour().in(unit::usd_per_hour) == 2);
  REQUIRE(for_b.size() == 2);
  CHECK(for_b[0].per_gpu_hour().in(unit::usd_per_hour) == 3);
  CHECK(for_b[1].per_gpu_hour().in(unit::usd_per_hour) == 4);
}

TEST_CASE("training_flops: a LoRA step needs 4 FLOPs per frozen parameter and 6 per adapter parameter", "[compute]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  LoraSpec lora;
  lora.rank = 16;
  lora.targets = {"q_proj", "v_proj"};
  const auto f = training_flops(m, Tokens(1), 2048, Recompute::full, lora);
  // Adapters: 32 layers × 16 × ((4096 + 4096) + (4096 + 1024)) = 6,815,744 (PEFT's count for q_proj, v_proj).
  CHECK(f.adapter_params.in(unit::params) == 6'815'744);
  const double n = 7'504'924'672, attn = 12.0 * 32 * 32 * 128 * 2048;
  CHECK(f.flops_per_token == Approx(4 * n + 6 * 6'815'744.0 + attn));
  // Recomputation runs the forward again, adapters included: hardware ≥ model.
  CHECK(f.hardware.in(unit::flop) == Approx(f.flops_per_token + 2 * (n + 6'815'744.0) + attn / 3));
}
