#include "../test_support.h"
#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/memory/training.h>
#include <gpuplan/parse.h>
#include <gpuplan/parallel.h>
#include <gpuplan/catalog.h>

using namespace gpuplan;

namespace {
const Moment& phase(const TrainingEstimate& e, const std::string& p) {
  for (const auto& m : e.memory.moments)
    if (m.phase == p) return m;
  FAIL("no phase " << p);
  return e.memory.moments.front();
}
using gpuplan::test::b;
TrainingWorkload workload(Precision p, Optimizer o, std::int64_t batch, std::int64_t seq) {
  TrainingWorkload w;
  w.precision = p;
  w.optimizer = o;
  w.batch = batch;
  w.seq = seq;
  return w;
}
const ModelSpec& llama1b() { return find_preset("llama-3.2-1b").spec; }
constexpr double N1b = 1'235'814'400;  // Llama-3.2-1B parameters
constexpr double V = 128256, h = 2048;
}  // namespace

TEST_CASE("estimate_training_memory: weights, gradients and AdamW states by precision", "[memory][training]") {
  // pure bf16: 2 + 2 + 2·2 bytes per parameter (calibration: state_after_step − weights = 4.943 GB = 4 B/param).
  auto e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw, 1, 512));
  const auto& opt = phase(e, "optimizer").at;
  CHECK(b(opt.weights) == 2 * N1b);
  CHECK(b(opt.gradients) == 2 * N1b);
  CHECK(b(opt.optimizer_states) == 4 * N1b);
  // fp32: 4 + 4 + 8 = 16 B/param (HF model memory anatomy).
  e = estimate_training_memory(llama1b(), workload(Precision::fp32, Optimizer::adamw, 1, 512));
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 8 * N1b);
  // mixed bf16 (ZeRO paper §3.1): 2 + 2 + 12 (fp32 master + two moments).
  e = estimate_training_memory(llama1b(), workload(Precision::bf16, Optimizer::adamw, 1, 512));
  CHECK(b(phase(e, "optimizer").at.weights) == 2 * N1b);
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 12 * N1b);
  // SGD keeps no state, SGD with momentum one buffer.
  e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::sgd, 1, 512));
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 0);
  e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::sgd_momentum, 1, 512));
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 2 * N1b);
  // bitsandbytes 8-bit AdamW: 2 + 8/256 bytes per parameter.
  e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw_8bit, 1, 512));
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == Approx(N1b * (2 + 8.0 / 256)));
}

TEST_CASE("estimate_training_memory: foreach AdamW needs one moment-sized temporary, fused none", "[memory][training]") {
  const auto foreach = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw, 1, 512));
  const auto fused = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw_fused, 1, 512));
  // Measured on H200 (8B): foreach − fused = 16.04 GB ≈ 2 B × 8.03B parameters.
  CHECK(b(phase(foreach, "optimizer").at.overhead) - b(phase(fused, "optimizer").at.overhead) == 2 * N1b);
}

TEST_CASE("estimate_training_memory: Adafactor factors matrices into rows + columns", "[memory][training]") {
  ModelSpec s;
  s.name = "tiny";
  s.vocab = 1000; s.hidden = 64; s.intermediate = 128; s.layers = 1; s.heads = 4; s.kv_heads = 4; s.head_dim = 16;
  TrainingWorkload w = workload(Precision::pure_bf16, Optimizer::adafactor, 1, 16);
  w.profile = Profile::none;
  // embed 1000×64 → 1064; q,k,v,o 64×64 → 4·128; gate, up 128×64 → 2·192; down 64×128 → 192;
  // three norm vectors (full) 3·64; lm_head 1000×64 → 1064. 3408 elements × 2 B (bf16 state).
  const auto e = estimate_training_memory(s, w);
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 3408 * 2);
}

TEST_CASE("estimate_training_memory: activations per token per layer, Llama SDPA", "[memory][training]") {
  // pure bf16: two RMSNorms (fp32 input 4h + normalised 2h + output 2h) = 16h; q 2h, k/v 2·2·512, O 2h,
  // LSE 4·32; SwiGLU 4·2·8192. = 108,672 B; measured on H200 108,680 B (calibration, b4 s2048 vs checkpointed).
  const auto e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw, 4, 2048));
  CHECK(b(e.shape.activation_bytes_per_token_per_layer) == 16 * h + 2 * h + 4 * 512 + 2 * h + 4 * 32 + 8 * 8192);
  CHECK(b(e.shape.activation_bytes_per_token_per_layer) == 108'672);
  // Under autocast (probed with saved_tensors_hooks on H200): the normalised tensors are fp32 (2 × 2h more) and
  // q, k, v, gate and up each cast the fp32 norm output into their own bf16 copy (5 × 2h instead of 2 × 2h).
  const auto amp = estimate_training_memory(llama1b(), workload(Precision::amp_bf16, Optimizer::adamw, 4, 2048));
  CHECK(b(amp.shape.activation_bytes_per_token_per_layer) - 108'672 == 2 * 2 * h + 3 * 2 * h);
  // PEFT LoRA on q and v (pure bf16): frozen norms keep only their fp32 input, frozen linears nothing; each
  // adapter casts its input to fp32 (2 × 4h) and keeps lora_A's fp32 output (2 × 4·16); the MLP product goes.
  auto lw = workload(Precision::pure_bf16, Optimizer::adamw, 4, 2048);
  lw.lora.rank = 16;
  lw.lora.targets = {"q_proj", "v_proj"};
  const auto lora = estimate_training_memory(llama1b(), lw);
  CHECK(b(lora.shape.activation_bytes_per_token_per_layer) ==
        2 * 4 * h + 2 * 4 * h + 2 * 4 * 16 + 2 * h + 4 * 512 + 2 * h + 4 * 32 + 3 * 2 * 8192);
}

TEST_CASE("LayerActivationModel: a layer's saved tensors depend on the layer only through its kind", "[memory][training]") {
  // layer_tensors computes each kind of layer once; every preset's every layer must give the same tensors as the
  // first layer of its kind (hybrids: linear-attention layers, dense layers before MoE ones), full and LoRA.
  auto lw = workload(Precision::amp_bf16, Optimizer::adamw, 1, 512);
  lw.lora.rank = 8;
  lw.lora.targets = {"q_proj", "v_proj", "gate_proj", "down_proj", "query_key_value", "c_attn", "in_proj_qkvz"};
  for (const auto& w : {workload(Precision::amp_bf16, Optimizer::adamw, 1, 512), lw}) {
    for (const auto& p : builtin_presets()) {
      INFO(p.id << (w.lora.rank ? " (LoRA)" : ""));
      const detail::LayerActivationModel act(p.spec, w, detail::ActivationDtypes{2.0, 2.0, true});
      std::array<std::optional<detail::LayerActivation>, max_layer_kinds> first;
      for (std::int64_t l = 0; l < p.spec.layers; ++l) {
        auto& f = first[std::size_t(layer_kind(p.spec, l))];
        const detail::LayerActivation a = act.layer(l);
        if (!f) { f = a; continue; }
        CHECK(a.per_token == f->per_token);
        CHECK(a.score_element == f->score_element);
        CHECK(a.tensors == f->tensors);
      }
    }
  }
}

TEST_CASE("estimate_training_memory: loss buffers, forward and backward", "[memory][training]") {
  const double T = 4 * 2048;
  const auto e = estimate_training_memory(llama1b(), workload(Precision::pure_bf16, Optimizer::adamw, 4, 2048));
  // forward: bf16 logits 2V + fp32 upcast 4V + log-softmax 4V; backward: 12V (measured: +2V·T over forward).
  CHECK(b(phase(e, "forward").at.logits) == 10 * V * T);
  CHECK(b(e.memory.components.logits) == 12 * V * T);
  CHECK(e.memory.peak_phase == "backward");
  // fp32 logits need no upcast: forward 8V.
  const auto f = estimate_training_memory(llama1b(), workload(Precision::fp32, Optimizer::sgd, 4, 512));
  CHECK(b(phase(f, "forward").at.logits) == 8 * V * 4 * 512);
}

TEST_CASE("estimate_training_memory: full recomputation keeps only layer inputs", "[memory][training]") {
  auto w = workload(Precision::pure_bf16, Optimizer::adamw, 4, 2048);
  const auto none = estimate_training_memory(llama1b(), w);
  w.recompute = Recompute::full;
  const auto full = estimate_training_memory(llama1b(), w);
  const double T = 4 * 2048;
  // At the loss: 16 checkpoints of 2h bytes per token instead of 16 full layers.
  CHECK(b(phase(none, "forward").at.activations) - b(phase(full, "forward").at.activations) ==
        Approx(16 * (108'672 - 2 * h) * T));
}

TEST_CASE("estimate_training_memory: LoRA trainable parameters (PEFT counts)", "[memory][training]") {
  auto w = workload(Precision::pure_bf16, Optimizer::adamw, 1, 512);
  w.lora.rank = 16;
  w.lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  // r·(in + out) per adapted linear: 1B = 11,272,192, 8B = 41,943,040 (PEFT print_trainable_parameters).
  CHECK(estimate_training_memory(llama1b(), w).shape.trainable.in(unit::params) == 11'272'192);
  CHECK(estimate_training_memory(find_preset("llama-3.1-8b").spec, w).shape.trainable.in(unit::params) == 41'943'040);
  // LitGPT resource tables: Llama-2-7B, r = 8 on q and v: 4,194,304.
  w.lora.rank = 8;
  w.lora.targets = {"q_proj", "v_proj"};
  const auto e = estimate_training_memory(find_preset("llama-2-7b").spec, w);
  CHECK(e.shape.trainable.in(unit::params) == 4'194'304);
  // Adapters, their grads and AdamW moments are fp32 (16 B per trainable parameter); base weights stay bf16.
  CHECK(b(phase(e, "optimizer").at.gradients) == 4.0 * 4'194'304);
  CHECK(b(phase(e, "optimizer").at.optimizer_states) == 8.0 * 4'194'304);
  CHECK(b(phase(e, "optimizer").at.weights) == 2.0 * 6'738'415'616 + 4.0 * 4'194'304);
}

TEST_CASE("estimate_training_memory: QLoRA stores decoder linears at 4.127 bits", "[memory][training]") {
  auto w = workload(Precision::pure_bf16, Optimizer::adamw, 1, 512);
  w.lora.rank = 8;
  w.lora.targets = {"q_proj", "v_proj"};
  w.lora.qlora = true;
  const auto q = estimate_training_memory(find_preset("llama-2-7b").spec, w);
  // Llama-2-7B: decoder linears 32·(4·4096² + 3·4096·11008) = 6,476,005,376; the rest (embeddings, head, norms)
  // 262,410,240 stays bf16.
  const double lin = 6'476'005'376.0, rest = 6'738'415'616.0 - lin;
  CHECK(b(phase(q, "optimizer").at.weights) == Approx(rest * 2 + lin * 4.127 / 8 + 4.0 * 4'194'304).epsilon(1e-4));
}

TEST_CASE("estimate_training_memory: ZeRO paper 7.5B on 64 GPUs", "[memory][training][parallel]") {
  // Rajbhandari et al. 2019, Fig. 1: 120 GB baseline; 31.4 / 16.6 / 1.9 GB per GPU for stages 1 / 2 / 3.
  const ModelSpec s = derive_model(Params(7'500'000'000));
  const double psi = double(count_params(s).total.in(unit::params));
  REQUIRE(psi == Approx(7.5e9).epsilon(0.02));
  auto states = [&](int stage) {
    TrainingWorkload w = workload(Precision::bf16, Optimizer::adamw_fused, 1, 512);
    w.gpus = 64;
    w.zero = stage;
    w.profile = Profile::none;
    const TrainingEstimate e = estimate_training_memory(s, w);
    const auto& m = phase(e, "optimizer").at;
    return b(m.weights + m.gradients + m.optimizer_states) * 7.5e9 / psi;  // scale to exactly 7.5B
  };
  CHECK(states(1) == Approx(31.4e9).epsilon(0.01));
  CHECK(states(2) == Approx(16.6e9).epsilon(0.01));
  CHECK(states(3) == Approx(1.9e9).epsilon(0.03));
}

TEST_CASE("estimate_training_memory: properties", "[memory][training][property]") {
  // Live tensors never decrease with batch or sequence; ZeRO-3 per-GPU memory never increases with GPUs. The
  // allocator's reserve depends on how blocks happen to fit, as PyTorch's does, so totals may wobble by a fraction
  // of a percent, never more.
  auto check_increasing = [](const std::vector<TrainingEstimate>& es) {
    for (std::size_t i = 1; i < es.size(); ++i) {
      CHECK(b(es[i].memory.peak_allocated) >= b(es[i - 1].memory.peak_allocated));
      CHECK(b(es[i].memory.total) >= 0.995 * b(es[i - 1].memory.total));
    }
  };
  std::vector<TrainingEstimate> by_batch, by_seq, by_model;
  for (std::int64_t batch : {1, 2, 3, 4, 8, 16})
    by_batch.push_back(estimate_training_memory(llama1b(), workload(Precision::bf16, Optimizer::adamw, batch, 1024)));
  for (std::int64_t seq : {128, 512, 1000, 2048, 4096, 8192})
    by_seq.push_back(estimate_training_memory(llama1b(), workload(Precision::bf16, Optimizer::adamw, 1, seq)));
  for (const char* p : {"1B", "3B", "7B", "13B", "70B"})
    by_model.push_back(estimate_training_memory(derive_model(parse_params(p)), workload(Precision::bf16, Optimizer::adamw, 1, 2048)));
  check_increasing(by_batch);
  check_increasing(by_seq);
  check_increasing(by_model);
  double last = 1e300;
  for (std::int64_t g : {2, 4, 8, 64, 1024}) {
    auto w = workload(Precision::bf16, Optimizer::adamw, 1, 1024);
    w.gpus = g;
    w.zero = 3;
    const double t = b(estimate_training_memory(find_preset("llama-3.1-8b").spec, w).memory.peak_allocated);
    CHECK(t <= last);
    last = t;
  }
}

TEST_CASE("validate(TrainingWorkload): rejects impossible workloads", "[memory][training]") {
  auto w = workload(Precision::bf16, Optimizer::adamw, 0, 512);
  CHECK_THROWS_AS(estimate_training_memory(llama1b(), w), InputError);
  w.batch = 1;
  w.zero = 4;
  CHECK_THROWS_AS(estimate_training_memory(llama1b(), w), InputError);
  w.zero = 0;
  w.lora.qlora = true;  // without a rank
  CHECK_THROWS_AS(estimate_training_memory(llama1b(), w), InputError);
}

TEST_CASE("offload: moments and master weights move to host memory (ZeRO-Offload)", "[memory][training][parallel]") {
  auto w = workload(Precision::bf16, Optimizer::adamw, 1, 512);
  w.profile = Profile::none;
  const auto on_gpu = estimate_training_memory(llama1b(), w);
  w.offload_optimizer = Offload::cpu;
  const auto off = estimate_training_memory(llama1b(), w);
  // Host: fp32 master + two fp32 moments (12 B/param) and an fp32 copy of the gradients (4 B/param).
  CHECK(off.host_memory.in(unit::bytes) == Approx(16 * N1b));
  CHECK(b(phase(off, "optimizer").at.optimizer_states) == 0);
  CHECK(b(phase(on_gpu, "optimizer").at.optimizer_states) == 12 * N1b);
  CHECK(off.memory.peak_allocated < on_gpu.memory.peak_allocated);
  w.offload_params = Offload::nvme;  // needs ZeRO-3
  CHECK_THROWS_AS(estimate_training_memory(llama1b(), w), InputError);
  w.gpus = 8;
  w.zero = 3;
  const auto inf = estimate_training_memory(llama1b(), w);
  CHECK(inf.nvme.in(unit::bytes) == Approx(2 * N1b / 8));  // the bf16 parameter shard
  CHECK(b(phase(inf, "optimizer").at.weights) == 0);
}

TEST_CASE("data_parallel_communication: ring collectives per GPU", "[parallel]") {
  TrainingWorkload w;
  w.gpus = 8;
  // DDP: all-reduce of 1e9 bf16 gradients = 2 · 7/8 · 2 GB = 3.5 GB per GPU.
  CHECK(data_parallel_communication(w, 1e9, 2, 2).bytes_per_gpu.in(unit::bytes) == Approx(3.5e9));
  // ZeRO-2: reduce-scatter + all-gather, the same volume; ZeRO-3: 1.5× (ZeRO paper §7).
  w.zero = 2;
  CHECK(data_parallel_communication(w, 1e9, 2, 2).bytes_per_gpu.in(unit::bytes) == Approx(3.5e9));
  w.zero = 3;
  CHECK(data_parallel_communication(w, 1e9, 2, 2).bytes_per_gpu.in(unit::bytes) == Approx(5.25e9));
  // On H100 NVLink (900 GB/s bidirectional = 450 one way): 5.25 GB in 11.67 ms.
  Communication c = data_parallel_communication(w, 1e9, 2, 2);
  time_communication(c, builtin_catalog().get("h100"), false, std::nullopt);
  CHECK(c.time->in(unit::seconds) == Approx(5.25e9 / 450e9));
  time_communication(c, builtin_catalog().get("h100"), true, std::nullopt);  // across nodes: 50 GB/s per GPU
  CHECK(c.time->in(unit::seconds) == Approx(5.25e9 / 50e9));
  w.gpus = 1;
  CHECK(data_parallel_communication(w, 1e9, 2, 2).bytes_per_gpu.in(unit::bytes) == 0);
}

TEST_CASE("estimate_training_memory: the memory savers (chunked and fused loss, paged 8-bit AdamW, activation offload)",
          "[memory][training]") {
  auto w = workload(Precision::pure_bf16, Optimizer::adamw, 2, 2048);
  const auto eager = estimate_training_memory(llama1b(), w);
  const double T = 2 * 2048;
  // Eager HF loss, backward: bf16 logits + two fp32 buffers + the bf16 gradient = 12 B per logit (tensors.h).
  CHECK(b(phase(eager, "backward").at.logits) >= 12 * V * T);
  // torchtune's chunked loss: the bf16 logits stay, the fp32 buffers of one chunk of 8: 2 + (8 + 2)/8 B per logit.
  w.loss = Loss::chunked;
  const auto chunked = estimate_training_memory(llama1b(), w);
  double most = 0;
  for (const auto& m : chunked.memory.moments) most = std::max(most, b(m.at.logits));
  CHECK(most == Approx((2.0 + 10.0 / 8) * V * T));
  // Liger's fused linear cross-entropy: no [T, V] tensor; the hidden states' gradient (T × h, bf16) and one chunk
  // of next_pow2(⌈4096 / ⌈128256/2048⌉⌉) = next_pow2(66) = 128 tokens' logits.
  w.loss = Loss::fused;
  const auto fused = estimate_training_memory(llama1b(), w);
  most = 0;
  for (const auto& m : fused.memory.moments) most = std::max(most, b(m.at.logits));
  CHECK(most == Approx(2 * T * h + 2 * 128 * V));
  CHECK(b(fused.memory.total) < b(chunked.memory.total));
  CHECK(b(chunked.memory.total) < b(eager.memory.total));
  // Paged 8-bit AdamW: the 2.03 B per parameter of states leave the GPU's peak for host memory (unified memory).
  w = workload(Precision::pure_bf16, Optimizer::adamw_8bit, 1, 512);
  const auto bnb = estimate_training_memory(llama1b(), w);
  w.optimizer = Optimizer::paged_adamw_8bit;
  const auto paged = estimate_training_memory(llama1b(), w);
  CHECK(b(phase(bnb, "optimizer").at.optimizer_states) == Approx(N1b * (2 + 8.0 / 256)));
  CHECK(b(phase(paged, "optimizer").at.optimizer_states) == 0);
  CHECK(b(paged.host_memory) == Approx(N1b * (2 + 8.0 / 256)));
  // Activation offload: between layers nothing saved stays, so the backward peak loses the saved activations.
  w = workload(Precision::pure_bf16, Optimizer::adamw, 4, 2048);
  const auto kept = estimate_training_memory(llama1b(), w);
  w.activation_offload = true;
  const auto offloaded = estimate_training_memory(llama1b(), w);
  CHECK(b(phase(offloaded, "forward").at.activations) < 0.2 * b(phase(kept, "forward").at.activations));
}
