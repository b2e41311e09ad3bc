// The planner: the memory screen against the full estimator, constraints, ranking and the time/cost arithmetic.
#include "../test_support.h"
#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/plan.h>

using namespace gpuplan;

namespace {
using gpuplan::test::b;

TrainingWorkload as_workload(const TrainingWorkload& base, const TrainingLayout& L) {
  return detail::layout_workload(base, L);
}

// One device, one offering: every number of a plan can be checked by hand.
Catalog one_device_catalog() {
  Catalog cat;
  cat.devices.push_back(builtin_catalog().get("h100"));
  Offering f;
  f.provider = "test";
  f.instance = "8x";
  f.accelerator = cat.devices.front().id;
  f.count = 8;
  f.on_demand = UsdPerHour(16.0);  // $2 per GPU-hour
  f.as_of = "2026-11";
  cat.offerings.push_back(f);
  return cat;
}
}  // namespace

TEST_CASE("TrainingMemoryScreen: a lower bound of the full estimate, and a close one", "[plan]") {
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "llama-3.2-3b"}) {
    const ModelSpec& s = find_preset(id).spec;
    TrainingWorkload base;
    base.seq = 4096;
    const TrainingMemoryScreen screen(s, base);
    std::vector<TrainingLayout> layouts{
        {8, 1, 1, 3, 1, 4, 1, Recompute::full, Offload::none},      {8, 2, 1, 1, 2, 4, 1, Recompute::selective, Offload::none},
        {16, 4, 2, 1, 1, 8, 1, Recompute::none, Offload::none},     {64, 8, 4, 1, 1, 16, 1, Recompute::full, Offload::none},
        {32, 1, 1, 3, 2, 2, 1, Recompute::none, Offload::cpu},      {4, 1, 2, 0, 1, 4, 1, Recompute::full, Offload::none},
        {1, 1, 1, 0, 1, 1, 1, Recompute::full, Offload::none}};
    for (const auto& L : layouts) {
      INFO(id << " gpus " << L.gpus << " tp " << L.tp << " pp " << L.pp << " zero " << L.zero);
      const double full = b(estimate_training_memory(s, as_workload(base, L)).memory.total);
      const double low = screen.lower_bound(L);
      CHECK(low <= full * 1.02);  // a lower bound (2 %: the screen averages layers over stages)
      // And close enough to pre-select with (small shards: the allocator's segments it leaves out weigh more).
      CHECK(low >= full * (full > 20e9 ? 0.75 : 0.60));
    }
  }
}

TEST_CASE("plan_training: time and cost arithmetic on a one-offering catalog", "[plan]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  const Catalog cat = one_device_catalog();
  TrainingPlanRequest req;
  req.base.seq = 4096;
  req.tokens = Tokens(100'000'000'000);
  req.top = 3;
  const TrainingPlan plan = plan_training(s, req, cat);
  REQUIRE(!plan.best.empty());
  CHECK(plan.evaluated == plan.layouts);  // one offering: one configuration per layout
  for (const auto& c : plan.best) {
    // The step-time model's parts add up; the MFU it implies is the model FLOPs over the time.
    CHECK(c.time.in(unit::seconds) == Approx(c.compute_seconds + c.bubble_seconds + c.exposed_comm_seconds));
    CHECK(c.mfu == Approx(plan.model_flops.in(unit::flop) / (c.time.in(unit::seconds) * double(c.layout.gpus) * 989.4e12)));
    CHECK(c.mfu > 0.2);
    CHECK(c.mfu < 0.7);
    // Whole 8-GPU instances at $2 per GPU-hour for the wall time.
    CHECK(c.rental.instances == (c.layout.gpus + 7) / 8);
    CHECK(c.rental.gpus_per_instance == 8);
    CHECK(c.cost.in(unit::usd) == Approx(double(c.rental.instances * 8) * 2.0 * c.time.in(unit::seconds) / 3600));
    // Verified: the full estimate within the 10 % headroom.
    CHECK(b(c.memory) <= 0.9 * b(cat.devices.front().capacity()));
    CHECK(b(c.memory) == b(estimate_training_memory(s, as_workload(req.base, c.layout)).memory.total));
  }
  for (std::size_t i = 1; i < plan.best.size(); ++i) CHECK(plan.best[i - 1].cost <= plan.best[i].cost);
  // A stated MFU replaces the model: model FLOPs / (GPUs × 989.4 TFLOP/s × 0.4).
  req.mfu = 0.4;
  for (const auto& c : plan_training(s, req, cat).best)
    CHECK(c.time.in(unit::seconds) ==
          Approx(plan.model_flops.in(unit::flop) / (double(c.layout.gpus) * 989.4e12 * 0.4)).epsilon(1e-9));
}

TEST_CASE("plan_training: constraints are honoured", "[plan]") {
  const ModelSpec& s = find_preset("llama-3.1-70b").spec;
  const Catalog& cat = builtin_catalog();
  TrainingPlanRequest req;
  req.tokens = Tokens(1'000'000'000'000);
  req.max_gpus = 256;
  req.gpus = {"h100", "a100-80gb"};
  req.provider = "lambda";
  req.deadline = Seconds(120 * 86400.0);
  const TrainingPlan plan = plan_training(s, req, cat);
  REQUIRE(!plan.best.empty());
  for (const auto& c : plan.best) {
    CHECK(c.layout.gpus <= 256);
    CHECK((c.device->id == "h100-sxm" || c.device->id == "a100-80gb-sxm"));
    CHECK(c.rental.offering->provider == "lambda");
    CHECK(c.time.in(unit::seconds) <= 120 * 86400.0);
  }
  // By time: the fastest first, and a budget caps the cost.
  req.objective = Objective::time;
  req.budget = Usd(5e6);
  const TrainingPlan fast = plan_training(s, req, cat);
  REQUIRE(!fast.best.empty());
  for (std::size_t i = 1; i < fast.best.size(); ++i) CHECK(fast.best[i - 1].time <= fast.best[i].time);
  for (const auto& c : fast.best) CHECK(c.cost.in(unit::usd) <= 5e6);
  // Impossible constraints leave nothing, without throwing.
  req.deadline = Seconds(3600);
  CHECK(plan_training(s, req, cat).best.empty());
  // Bad requests are usage errors.
  req.deadline.reset();
  req.gpus = {"no-such-gpu"};
  CHECK_THROWS_AS(plan_training(s, req, cat), InputError);
  req.gpus.clear();
  req.headroom = 0.95;
  CHECK_THROWS_AS(plan_training(s, req, cat), InputError);
}

TEST_CASE("plan_serving: the target is met by every setup", "[plan]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  ServingPlanRequest req;
  req.tokens_per_second = 10000;
  req.latency = Seconds(0.040);
  const ServingPlan plan = plan_serving(s, req, builtin_catalog());
  REQUIRE(!plan.best.empty());
  for (const auto& c : plan.best) {
    CHECK(c.decode_tokens_per_s >= 10000);
    CHECK(c.token_latency.in(unit::seconds) <= 0.040);
    CHECK(c.usd_per_million_output_tokens ==
          Approx(c.rental.per_hour().in(unit::usd_per_hour) / (c.decode_tokens_per_s * 3600) * 1e6));
    // Only GPUs vLLM runs the format on (runs_on.h).
    CHECK_FALSE(cannot_run(*c.device, Profile::vllm, c.weights));
    // Each replica's tensor-parallel group inside one instance; as many instances as the replicas need.
    CHECK(c.rental.gpus_per_instance >= c.tp);
    CHECK(c.rental.instances * (c.rental.gpus_per_instance / c.tp) >= c.replicas);
  }
  for (std::size_t i = 1; i < plan.best.size(); ++i)
    CHECK(plan.best[i - 1].usd_per_million_output_tokens <= plan.best[i].usd_per_million_output_tokens);
  ServingPlanRequest conc;
  conc.concurrency = 100;
  for (const auto& c : plan_serving(s, conc, builtin_catalog()).best) {
    CHECK(double(c.replicas * c.batch) >= 100);
    CHECK(double(c.batch) <= c.max_concurrency);
  }
  CHECK_THROWS_AS(plan_serving(s, ServingPlanRequest{}, builtin_catalog()), InputError);  // no target
}

TEST_CASE("plan_training: expert parallelism for MoE models", "[plan]") {
  const ModelSpec& s = find_preset("mixtral-8x7b").spec;
  TrainingWorkload base;
  base.seq = 4096;
  const TrainingMemoryScreen screen(s, base);
  for (std::int64_t ep : {1, 2, 4, 8}) {
    const TrainingLayout L{16, 1, 1, 1, 1, 4, ep, Recompute::full, Offload::none};
    const double full = b(estimate_training_memory(s, as_workload(base, L)).memory.total);
    INFO("ep " << ep);
    CHECK(screen.lower_bound(L) <= full * 1.02);
    CHECK(screen.lower_bound(L) >= full * 0.75);
  }
  // Experts split over more ranks hold fewer bytes per GPU.
  CHECK(screen.lower_bound({16, 1, 1, 1, 1, 4, 8, Recompute::full, Offload::none}) <
        screen.lower_bound({16, 1, 1, 1, 1, 4, 1, Recompute::full, Offload::none}));
  TrainingPlanRequest req;
  req.tokens = Tokens(500'000'000'000);
  req.gpus = {"h100"};
  req.top = 10;
  const TrainingPlan plan = plan_training(s, req, builtin_catalog());
  REQUIRE(!plan.best.empty());
  for (const auto& c : plan.best) {
    CHECK(s.moe.experts % c.layout.ep == 0);
    CHECK(b(c.memory) == b(estimate_training_memory(s, as_workload(req.base, c.layout)).memory.total));
  }
}

TEST_CASE("TrainingMemoryScreen: a lower bound for every optimizer", "[plan]") {
  // The screen takes the optimizer's states from the estimator's rules (8-bit AdamW's 2.03 B, Adafactor's factored
  // moments), so it stays below the full estimate for all of them.
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  for (Optimizer o : {Optimizer::adamw, Optimizer::adamw_fused, Optimizer::adamw_8bit, Optimizer::adafactor,
                      Optimizer::sgd, Optimizer::sgd_momentum, Optimizer::lion}) {
    for (Precision p : {Precision::bf16, Precision::pure_bf16}) {
      TrainingWorkload base;
      base.seq = 2048;
      base.optimizer = o;
      base.precision = p;
      const TrainingMemoryScreen screen(s, base);
      for (const TrainingLayout& L : {TrainingLayout{1, 1, 1, 0, 1, 1, 1, Recompute::full, Offload::none},
                                      TrainingLayout{8, 2, 1, 1, 1, 4, 1, Recompute::none, Offload::none}}) {
        INFO(spell<Optimizer>(optimizer_names, o) << " " << spell<Precision>(precision_names, p) << " gpus " << L.gpus);
        const double full = b(estimate_training_memory(s, as_workload(base, L)).memory.total);
        CHECK(screen.lower_bound(L) <= full * 1.02);
        CHECK(screen.lower_bound(L) >= full * 0.6);
      }
    }
  }
}

TEST_CASE("plan steps: the search space keeps only layouts the frameworks can run", "[plan][steps]") {
  const ModelSpec& s = find_preset("qwen2.5-0.5b").spec;  // 14 heads, 2 KV heads: tp ∈ {1, 2}
  TrainingPlanRequest req;
  req.tokens = Tokens(1e9);
  req.max_gpus = 16;
  req.global_batch_tokens = 1 << 20;
  std::int64_t n = 0;
  detail::for_each_layout(s, req, [&](const TrainingLayout& L, double per_step) {
    ++n;
    CHECK(s.heads % L.tp == 0);
    CHECK(s.kv_heads % L.tp == 0);
    CHECK(L.gpus % (L.tp * L.pp) == 0);
    CHECK((L.zero == 0 || L.dp() > 1));                      // ZeRO needs ranks to shard over
    // Offload works on ZeRO's partitions; on one data-parallel rank the whole model is the partition.
    CHECK((L.offload == Offload::none || L.zero > 0 || L.dp() == 1));
    CHECK(L.ep == 1);                                         // a dense model
    CHECK(per_step == double(L.micro_batch) * double(req.base.seq) * double(L.dp()));
    CHECK(per_step * double(L.grad_accum) == Approx(req.global_batch_tokens).epsilon(0.5));
  });
  CHECK(n > 100);
}

TEST_CASE("plan steps: an offering that cannot host a layout prices nothing", "[plan][steps]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  TrainingPlanRequest req;
  req.tokens = Tokens(1e10);
  const Catalog cat = one_device_catalog();
  const auto choices = detail::device_choices(req, cat);
  REQUIRE(choices.size() == 1);
  const detail::ModelTotals totals(s, LoraSpec{});
  TrainingLayout L{8, 2, 1, 1, 1, 8, 1, Recompute::none, Offload::none};
  const auto work = detail::layout_work(totals, req, L, 8.0 * 2048 * 4);
  detail::StageWorkCache cache;
  detail::LayoutStages stages(s, detail::layout_workload(req.base, L), cache);
  CHECK(detail::price_layout(s, req, stages, L, choices[0].usable * 1.01, work, choices[0], 1e20) == std::nullopt);  // does not fit
  const auto c = detail::price_layout(s, req, stages, L, choices[0].usable * 0.5, work, choices[0], 1e20);
  REQUIRE(c);
  CHECK(c->time.in(unit::seconds) > 0);
  CHECK(c->rental.instances == 1);
  CHECK(c->cost.in(unit::usd) == Approx(16.0 * c->time.in(unit::seconds) / 3600));  // one 8-GPU instance at $16/h
  L.tp = 16;  // tensor parallelism beyond one instance's GPUs
  CHECK(detail::price_layout(s, req, stages, L, 0, work, choices[0], 1e20) == std::nullopt);
}

TEST_CASE("plan steps: the same cost and time on fewer instances ranks first", "[plan][steps]") {
  TrainingCandidate a, b;
  a.cost = b.cost = Usd(100);
  a.time = b.time = Seconds(3600);
  a.rental.instances = 128;
  b.rental.instances = 256;
  CHECK(detail::ranks_before(a, b, Objective::cost));
  CHECK_FALSE(detail::ranks_before(b, a, Objective::cost));
  b.cost = Usd(99);  // cheaper still wins by cost
  CHECK(detail::ranks_before(b, a, Objective::cost));
  CHECK(detail::ranks_before(b, a, Objective::time));  // same time: the cheaper first
}

TEST_CASE("plan rules: the global batch and the headroom, by hand", "[plan][batch]") {
  CHECK(default_global_batch_tokens(true) == 524288.0);  // 128 × 4096 (Tulu 3's SFT)
  CHECK(default_global_batch_tokens(false) == 4.0e6);    // Llama 2
  CHECK(within_global_batch(524288, 524288));
  CHECK(within_global_batch(524340, 524288));  // a 1e-4 tolerance for rounding: 524,340.4
  CHECK_FALSE(within_global_batch(524341, 524288));
  // 45 GiB on 50 GiB usable with 10 % kept free: 45 / (50 × 0.9) = 1, just fits; 46 GiB does not.
  Device d;
  d.memory = Bytes(50.0 * 1073741824);
  MemoryEstimate m;
  m.total = Bytes(45.0 * 1073741824);
  CHECK(headroom_ratio(m, d, 0.10) == Approx(1.0));
  m.total = Bytes(46.0 * 1073741824);
  CHECK(headroom_ratio(m, d, 0.10) == Approx(46.0 / 45.0));
  d.usable_memory = Bytes(100.0 * 1073741824);  // the driver's total, where known, is the capacity
  CHECK(headroom_ratio(m, d, 0.10) == Approx(46.0 / 90.0));
}

TEST_CASE("choose_micro_batch: the largest of 1-16 within the global batch that fits with the headroom", "[plan][batch]") {
  const ModelSpec& s = find_preset("llama-3.2-1b").spec;
  const TrainingWorkload w;  // seq 2048, one GPU, micro-batch 1 (ignored: the choice sets it)
  auto total = [&](std::int64_t mb) {
    TrainingWorkload v = w;
    v.batch = mb;
    return estimate_training_memory(s, v).memory.total.in(unit::bytes);
  };
  for (std::int64_t mb : {1, 2, 4, 8}) CHECK(total(2 * mb) > total(mb));  // memory grows with the micro-batch
  Device d;
  d.id = "test";
  // Usable memory between micro-batch 4's and 8's estimates, 10 % kept free: 4, and 8 named as over it.
  d.memory = Bytes((total(4) + total(8)) / 2 / 0.9);
  auto c = choose_micro_batch(s, w, d, 2048.0, 4.0e6, 0.10);
  CHECK(c.micro_batch == 4);
  CHECK(c.fits);
  CHECK(c.larger == 8);
  CHECK(c.larger_total.in(unit::bytes) == total(8));
  CHECK_FALSE(c.global_batch_bound);
  CHECK(c.estimate.memory.total.in(unit::bytes) == total(4));
  // Room for 16, but a global batch of 3 sequences (6,144 tokens at 2,048 per sequence and step): 2 (4 would make
  // 8,192 tokens a step).
  d.memory = Bytes(total(16) / 0.9 * 1.01);
  c = choose_micro_batch(s, w, d, 2048.0, 6144.0, 0.10);
  CHECK(c.micro_batch == 2);
  CHECK(c.global_batch_bound);
  CHECK(c.larger == 0);
  // The same with room for 16: 16, the planner's largest.
  c = choose_micro_batch(s, w, d, 2048.0, 4.0e6, 0.10);
  CHECK(c.micro_batch == 16);
  CHECK(c.larger == 0);
  // Micro-batch 1 over the headroom: 1 all the same, not fitting, 2 named as the next.
  d.memory = Bytes(total(1) / 0.9 * 0.99);
  c = choose_micro_batch(s, w, d, 2048.0, 4.0e6, 0.10);
  CHECK(c.micro_batch == 1);
  CHECK_FALSE(c.fits);
  CHECK(c.larger == 2);
  // A step of one sequence already over the global batch (accumulation the user chose): 1, the others left out.
  d.memory = Bytes(total(16) / 0.9 * 1.01);
  c = choose_micro_batch(s, w, d, 2048.0 * 64, 65536.0, 0.10);
  CHECK(c.micro_batch == 1);
  CHECK(c.fits);
  CHECK(c.global_batch_bound);
}
