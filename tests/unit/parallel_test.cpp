// Model parallelism: the rank's share of the model, Korthikanti et al.'s activation formulas, 1F1B in-flight
// micro-batches, the pipeline bubble and the model-parallel traffic, against hand-computed values.
#include "../test_support.h"
#include <cmath>

#include <catch2/catch.hpp>
#include <gpuplan/memory/training.h>
#include <gpuplan/builtin.h>
#include <gpuplan/parallel.h>

using namespace gpuplan;

namespace {
using gpuplan::test::b;

// A GPT-3-style layer as Korthikanti et al. 2022 model it: LayerNorm, plain GeLU MLP of width 4h, dropout,
// 16-bit activations, attention that materialises its scores.
ModelSpec gpt3_like(std::int64_t layers) {
  ModelSpec s;
  s.name = "gpt3-like";
  s.model_type = "gpt2";
  s.family = Family::gpt2;
  s.vocab = 51200;
  s.hidden = 4096;
  s.layers = layers;
  s.heads = 32;
  s.kv_heads = 32;
  s.head_dim = 128;
  s.intermediate = 4 * 4096;
  s.mlp = MlpKind::plain;
  s.activation = "gelu";
  s.norm = NormKind::layer;
  s.tied_embeddings = true;
  s.learned_positions = 2048;
  s.dropout = 0.1;
  return s;
}

TrainingWorkload fp16_eager() {
  TrainingWorkload w;
  w.precision = Precision::fp16;
  w.attention = Attention::eager;
  w.profile = Profile::none;
  w.batch = 1;
  w.seq = 2048;
  return w;
}

double per_layer_token(const ModelSpec& s, const TrainingWorkload& w) {
  return b(estimate_training_memory(s, w).shape.activation_bytes_per_token_per_layer);
}
}  // namespace

TEST_CASE("activations under tensor and sequence parallelism: Korthikanti et al. 2022 Table 2", "[parallel]") {
  const ModelSpec s = gpt3_like(4);
  const double h = double(s.hidden);
  TrainingWorkload w = fp16_eager();
  // No parallelism: 34·s·b·h + 5·a·s²·b per layer (§4.1); the s² part is kept out of the per-token figure.
  CHECK(per_layer_token(s, w) == Approx(34 * h));
  for (std::int64_t t : {2, 4, 8}) {
    w.tp = w.gpus = t;
    w.sp = false;
    CHECK(per_layer_token(s, w) == Approx((10 + 24.0 / double(t)) * h));  // tensor parallel: sbh(10 + 24/t)
    w.sp = true;
    CHECK(per_layer_token(s, w) == Approx(34 * h / double(t)));  // + sequence parallel: 34·sbh/t
  }
}

TEST_CASE("rank_model: tensor parallelism splits heads, FFN and vocabulary", "[parallel]") {
  const ModelSpec& llama = find_preset("llama-2-7b").spec;
  TrainingWorkload w;
  w.tp = 2;
  w.gpus = 2;
  const ModelSpec r = rank_model(llama, w, PipelineStage{0, 0, 32, true, true, 1});
  CHECK(r.heads == 16);
  CHECK(r.kv_heads == 16);
  CHECK(r.intermediate == 5504);
  CHECK(r.vocab == 16000);
  CHECK(r.hidden == 4096);
  // Per layer: attention 4h²/2, MLP 3·h·11008/2, two norms replicated.
  std::int64_t layer = 0;
  for (const auto& g : layer_params(r, 0)) layer += g.numel();
  CHECK(layer == 33'554'432 + 67'633'152 + 8192);
  w.tp = 3;
  CHECK_THROWS_AS(rank_model(llama, w, PipelineStage{}), InputError);  // 32 heads are not divisible by 3
}

TEST_CASE("estimate_training_memory: weights on the most-loaded GPU under TP × PP", "[parallel]") {
  // Llama-2-7B, tp 2, pp 2, pure bf16: stage 0 holds 16 layers of 101,195,776 parameters and half the embedding
  // (16,000 × 4096): 1,684,668,416 parameters; stage 1 the same layers, the final norm and half of lm_head:
  // 1,684,672,512 (Megatron's theoretical memory: (layers/pp + embedding)/tp on the most-loaded shard).
  const ModelSpec& llama = find_preset("llama-2-7b").spec;
  TrainingWorkload w;
  w.precision = Precision::pure_bf16;
  w.profile = Profile::none;
  w.tp = 2;
  w.pp = 2;
  w.gpus = 4;
  w.grad_accum = 4;
  const auto stages = pipeline_stages(llama.layers, w);
  REQUIRE(stages.size() == 2);
  const TrainingEstimate first = detail::estimate_stage(llama, w, stages[0]);
  const TrainingEstimate last = detail::estimate_stage(llama, w, stages[1]);
  CHECK(b(first.memory.moments.back().at.weights) == 2.0 * 1'684'668'416);
  CHECK(b(last.memory.moments.back().at.weights) == 2.0 * 1'684'672'512);
  // The first stage keeps pp = 2 micro-batches' activations in flight, the last one: its logits instead.
  CHECK(stages[0].in_flight == 2);
  CHECK(stages[1].in_flight == 1);
  const TrainingEstimate e = estimate_training_memory(llama, w);
  CHECK(b(e.memory.total) == std::max(b(first.memory.total), b(last.memory.total)));
  CHECK(e.shape.trainable.in(unit::params) == count_params(llama).total.in(unit::params));
  CHECK(e.shape.trainable_on_gpu.in(unit::params) == (e.stage.index == 0 ? 1'684'668'416 : 1'684'672'512));
}

TEST_CASE("pipeline: in-flight micro-batches and bubble (Narayanan et al. 2021)", "[parallel]") {
  // 1F1B: rank r holds min(pp − r, m).
  CHECK(in_flight_microbatches(0, 4, 1, 8) == 4);
  CHECK(in_flight_microbatches(3, 4, 1, 8) == 1);
  CHECK(in_flight_microbatches(0, 4, 1, 2) == 2);
  // Interleaved, pp 4, v 2: the first rank holds 2·3 + 4 + 1 = 11 chunks = 5.5 stages = 4 · (1 + 3/8), Megatron's
  // interleaving penalty.
  CHECK(in_flight_microbatches(0, 4, 2, 8) == Approx(5.5));
  CHECK(in_flight_microbatches(0, 4, 2, 8) == Approx(4 * (1 + 3.0 / 8)));
  TrainingWorkload w;
  w.pp = 4;
  w.grad_accum = 8;
  CHECK(pipeline_bubble(w) == Approx(3.0 / 8));
  w.vpp = 2;
  CHECK(pipeline_bubble(w) == Approx(3.0 / 16));
  // Uneven split: 80 layers over 3 stages → 27 on the first (ceil), an even share of the other 53 on the last (26),
  // the middle stage the remaining 27.
  w.pp = 3;
  w.vpp = 1;
  const auto st = pipeline_stages(80, w);
  CHECK(st[0].layers == 27);
  CHECK(st[1].first_layer == 54);
  CHECK(st[1].layers == 26);
}

TEST_CASE("model_parallel_communication: bytes per GPU per step", "[parallel]") {
  const ModelSpec& llama = find_preset("llama-2-7b").spec;
  TrainingWorkload w;
  w.batch = 1;
  w.seq = 4096;
  w.tp = 8;
  w.gpus = 8;
  // TP: 4 all-reduces of s·b·h·2 B per layer, each moving 2·7/8 of it: 32 · 4 · 1.75 · 33,554,432 B.
  auto c = model_parallel_communication(llama, w, 32, 2.0);
  REQUIRE(c.size() == 1);
  CHECK(c[0].kind == CommKind::tensor);
  CHECK(b(c[0].bytes_per_gpu) == Approx(32 * 4 * 1.75 * 33'554'432.0));
  w.recompute = Recompute::full;  // recomputation repeats the forward's two
  CHECK(b(model_parallel_communication(llama, w, 32, 2.0)[0].bytes_per_gpu) == Approx(32 * 6 * 1.75 * 33'554'432.0));
  // PP: activation forward and gradient back per micro-batch, per chunk.
  w = TrainingWorkload{};
  w.seq = 4096;
  w.pp = 4;
  w.gpus = 4;
  w.grad_accum = 8;
  c = model_parallel_communication(llama, w, 8, 2.0);
  REQUIRE(c.size() == 1);
  CHECK(b(c[0].bytes_per_gpu) == Approx(8 * 2 * 33'554'432.0));
  // CP 2: K and V blocks (2 · 2048 tokens · 4096 · 2 B) three times per layer, once around a ring of 2.
  w = TrainingWorkload{};
  w.seq = 4096;
  w.cp = 2;
  w.gpus = 2;
  c = model_parallel_communication(llama, w, 32, 2.0);
  CHECK(b(c[0].bytes_per_gpu) == Approx(32 * 3 * 1 * (2048.0 * 2 * 4096 * 2)));
  // EP 8 on Mixtral (top-2, 32 MoE layers): 4 all-to-alls of 7/8 of 2 · 4096 tokens · 4096 · 2 B per layer.
  const ModelSpec& mixtral = find_preset("mixtral-8x7b").spec;
  w = TrainingWorkload{};
  w.seq = 4096;
  w.ep = 8;
  w.gpus = 8;
  c = model_parallel_communication(mixtral, w, 32, 2.0);
  REQUIRE(c.size() == 1);
  CHECK(c[0].kind == CommKind::expert);
  CHECK(b(c[0].bytes_per_gpu) == Approx(32 * 4 * 7.0 / 8 * (4096.0 * 2 * 4096 * 2)));
}

TEST_CASE("expert parallelism: experts and their states split over ep", "[parallel]") {
  const ModelSpec& mixtral = find_preset("mixtral-8x7b").spec;
  TrainingWorkload w;
  w.precision = Precision::pure_bf16;
  w.profile = Profile::none;
  w.seq = 512;
  const double all = b(estimate_training_memory(mixtral, w).memory.moments.back().at.weights);
  w.ep = 8;
  w.gpus = 8;
  const double split = b(estimate_training_memory(mixtral, w).memory.moments.back().at.weights);
  // Mixtral: 32 layers × 8 experts × 3 × 4096 × 14336 expert parameters; one GPU keeps one expert per layer.
  const double experts = 32.0 * 8 * 3 * 4096 * 14336;
  CHECK(all - split == Approx(2.0 * experts * 7 / 8));
  // ZeRO-1 over 8 data-parallel ranks with ep 8: dense states split 8 ways, expert states not again (each expert
  // lives on one rank of the 8).
  w.zero = 1;
  w.precision = Precision::bf16;
  const auto e = estimate_training_memory(mixtral, w);
  const double dense = double(count_params(mixtral).total.in(unit::params)) - experts;
  CHECK(b(e.memory.moments.back().at.optimizer_states) == Approx(12.0 * (dense / 8 + experts / 8)));
}

TEST_CASE("model parallelism: bad layouts are usage errors", "[parallel]") {
  const ModelSpec& llama = find_preset("llama-3.1-8b").spec;
  TrainingWorkload w;
  w.tp = 2;
  w.gpus = 3;  // not a multiple of tp
  CHECK_THROWS_AS(estimate_training_memory(llama, w), InputError);
  w.gpus = 2;
  w.tp = 1;
  w.sp = true;  // sequence parallelism needs tp
  CHECK_THROWS_AS(estimate_training_memory(llama, w), InputError);
  w.sp = false;
  w.ep = 2;  // a dense model has no experts to split
  CHECK_THROWS_AS(estimate_training_memory(llama, w), InputError);
  w.ep = 1;
  w.cp = 2;
  w.attention = Attention::eager;  // ring attention needs flash / memory-efficient kernels
  CHECK_THROWS_AS(estimate_training_memory(llama, w), InputError);
  w = TrainingWorkload{};
  w.pp = 2;
  w.vpp = 2;
  w.gpus = 2;
  w.grad_accum = 3;  // interleaving needs m a multiple of pp
  CHECK_THROWS_AS(estimate_training_memory(llama, w), InputError);
  w.grad_accum = 4;
  CHECK_NOTHROW(estimate_training_memory(llama, w));
}

TEST_CASE("loss buffers under tensor and pipeline parallelism (2 × H200 mechanisms)", "[parallel]") {
  const ModelSpec& llama = find_preset("llama-3.2-1b").spec;  // V = 128,256: the loss is the backward peak
  TrainingWorkload w;
  w.precision = Precision::pure_bf16;
  w.profile = Profile::none;
  w.batch = 2;
  w.seq = 1024;
  const double T = 2048, V = 128256;
  auto loss_logits = [&](const TrainingEstimate& e) {
    for (const auto& m : e.memory.moments)
      if (m.phase == "backward" && m.what == "loss") return b(m.at.logits);
    return -1.0;
  };
  // Backward through the loss: bf16 logits, two fp32 buffers, the bf16 grad: 12 B per [token, vocab] element.
  CHECK(loss_logits(estimate_training_memory(llama, w)) == Approx(12 * V * T));
  // Vocabulary-parallel loss: half the vocabulary per rank, plus one fp32 shifted-logits tensor: 16 B · V/2 · T.
  w.tp = w.gpus = 2;
  CHECK(loss_logits(detail::estimate_stage(llama, w, pipeline_stages(llama.layers, w)[0])) == Approx(16 * V / 2 * T));
  // Pipeline (pytorch profile): the last stage keeps every micro-batch's bf16 logits until the step ends.
  w = TrainingWorkload{};
  w.precision = Precision::pure_bf16;
  w.batch = 2;
  w.seq = 1024;
  w.pp = w.gpus = 2;
  w.grad_accum = 4;
  const auto last = detail::estimate_stage(llama, w, pipeline_stages(llama.layers, w)[1]);
  CHECK(b(last.memory.moments.back().at.logits) == Approx(4 * 2 * V * T));
  w.profile = Profile::none;  // a framework behaviour, not tensor arithmetic
  CHECK(b(detail::estimate_stage(llama, w, pipeline_stages(llama.layers, w)[1]).memory.moments.back().at.logits) == 0);
}

TEST_CASE("FSDP2 with CPU offload on a tied-embedding model (a replay crash, fixed)", "[parallel][training]") {
  // The replay once replaced "the first gradient" when the tied matrix's gradients were summed; under offload no
  // gradient stays on the GPU and that access crashed.
  TrainingWorkload w;
  w.precision = Precision::pure_bf16;
  w.gpus = 2;
  w.zero = 3;
  w.offload_optimizer = Offload::cpu;
  w.offload_params = Offload::cpu;
  w.recompute = Recompute::full;
  const auto e = estimate_training_memory(find_preset("llama-3.2-1b").spec, w);
  CHECK(std::isfinite(b(e.memory.total)));
  CHECK(b(e.memory.total) > 0);
  CHECK(b(e.host_memory) > 0);
}

TEST_CASE("estimate_training_memory: every combination of layout, sharding, offload and recipe gives a finite estimate",
          "[parallel][training][property]") {
  // A sweep over the flags that interact in the replay (the crash above hid in one such combination).
  int checked = 0;
  for (const char* id : {"llama-3.2-1b", "qwen2.5-0.5b", "gpt2", "mixtral-8x7b"}) {
    const ModelSpec& s = find_preset(id).spec;
    for (Precision p : {Precision::bf16, Precision::amp_bf16, Precision::pure_bf16})
      for (int zero : {0, 1, 2, 3})
        for (Offload off : {Offload::none, Offload::cpu})
          for (Recompute rc : {Recompute::none, Recompute::full})
            for (auto [tp, pp] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 2}}) {
              if (off != Offload::none && zero == 0) continue;
              if (s.heads % tp || s.kv_heads % tp) continue;
              TrainingWorkload w;
              w.precision = p;
              w.zero = zero;
              w.offload_optimizer = off;
              w.offload_params = zero == 3 ? off : Offload::none;
              w.recompute = rc;
              w.tp = tp;
              w.pp = pp;
              w.gpus = 2 * tp * pp;
              w.grad_accum = pp;
              w.seq = 256;
              INFO(id << " " << spell<Precision>(precision_names, p) << " zero " << zero << " tp " << tp << " pp " << pp);
              const auto e = estimate_training_memory(s, w);
              CHECK(std::isfinite(b(e.memory.total)));
              CHECK(b(e.memory.total) >= b(e.memory.peak_allocated));
              CHECK(b(e.memory.peak_allocated) > 0);
              ++checked;
            }
  }
  CHECK(checked > 500);
}
