// The training estimator's named steps, each against values counted by hand or published.
#include <catch2/catch.hpp>
#include <gpuplan/memory/inference.h>
#include <gpuplan/memory/training.h>
#include <gpuplan/builtin.h>

using namespace gpuplan;

namespace {
const ModelSpec& preset(const char* id) { return find_preset(id).spec; }
PipelineStage whole(const ModelSpec& s) { return pipeline_stages(s.layers, TrainingWorkload{}).front(); }
TrainingWorkload bf16_pure(std::int64_t batch = 1, std::int64_t seq = 1024) {
  TrainingWorkload w;
  w.precision = Precision::pure_bf16;
  w.batch = batch;
  w.seq = seq;
  return w;
}
// Llama 3.1 8B by hand: hidden 4096, 32 layers, 32 heads / 8 KV heads of 128, FFN 14336, vocab 128256, untied.
constexpr double kLlama8bLayer = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2 * 4096;  // 218,112,000
constexpr double kLlama8bLinear = 32 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336);
constexpr double kLlama8b = 8'030'261'248;
}  // namespace

TEST_CASE("step 1, shard_inventory: parameters, trainable ones and optimizer-state elements", "[training][steps]") {
  const ModelSpec& s = preset("llama-3.1-8b");
  TrainingWorkload w = bf16_pure();
  ShardInventory inv = shard_inventory(s, w, whole(s));
  CHECK(inv.params == kLlama8b);
  CHECK(inv.trainable == kLlama8b);
  CHECK(inv.state_elements == 2 * kLlama8b);  // AdamW: two moments
  CHECK(inv.largest_layer == kLlama8bLayer);
  CHECK(inv.linear_params == kLlama8bLinear);
  CHECK(inv.largest_tensor == 128256.0 * 4096);  // the embedding matrix

  // LoRA r16 on q_proj, v_proj: PEFT prints "trainable params: 6,815,744" for Llama 3.1 8B:
  // 32 layers × 16 × ((4096 + 4096) + (4096 + 1024)).
  w.lora.rank = 16;
  w.lora.targets = {"q_proj", "v_proj"};
  inv = shard_inventory(s, w, whole(s));
  CHECK(inv.trainable == 6'815'744);
  CHECK(inv.state_elements == 2 * 6'815'744);
  CHECK(inv.params == kLlama8b);  // the frozen base is still held

  // Adafactor keeps row + column statistics per matrix (Shazeer & Stern 2018): far fewer than the parameters.
  w = bf16_pure();
  w.optimizer = Optimizer::adafactor;
  CHECK(shard_inventory(s, w, whole(s)).state_elements < kLlama8b / 100);
}

TEST_CASE("step 1, shard_inventory: a pipeline stage holds its layers, an expert-parallel rank its experts", "[training][steps]") {
  const ModelSpec& s = preset("llama-3.1-8b");
  TrainingWorkload w = bf16_pure();
  w.gpus = 2;
  w.pp = 2;
  const auto stages = pipeline_stages(s.layers, w);
  REQUIRE(stages.size() == 2);
  const ModelSpec first = rank_model(s, w, stages[0]);
  const ShardInventory inv = shard_inventory(first, w, stages[0]);
  CHECK(inv.params == 16 * kLlama8bLayer + 128256.0 * 4096);  // 16 layers + the embedding, no head

  // Mixtral 8x7B: 8 experts of 3 × 4096 × 14336 per layer; ep 8 leaves one per GPU.
  const ModelSpec& mx = preset("mixtral-8x7b");
  TrainingWorkload e = bf16_pure();
  e.gpus = 8;
  e.ep = 8;
  e.zero = 1;
  const double expert = 3.0 * 4096 * 14336;
  CHECK(shard_inventory(mx, e, whole(mx)).expert_params == 32 * 1 * expert);
  CHECK(shard_inventory(mx, bf16_pure(), whole(mx)).expert_params == 32 * 8 * expert);
}

TEST_CASE("step 2, model_states: the ZeRO paper's bytes per parameter", "[training][steps]") {
  // ZeRO paper (Rajbhandari et al. 2020) Figure 1: mixed-precision Adam keeps 2Ψ + 2Ψ + 12Ψ; over Nd ranks
  // ZeRO-1 keeps 2Ψ + 2Ψ + 12Ψ/Nd, ZeRO-2 2Ψ + (2 + 12)Ψ/Nd, ZeRO-3 (2 + 2 + 12)Ψ/Nd.
  const ModelSpec& s = preset("llama-3.1-8b");
  TrainingWorkload w;  // bf16 mixed precision, AdamW
  w.gpus = 64;
  const double P = kLlama8b, Nd = 64;
  const auto states = [&](int zero) {
    w.zero = zero;
    return model_states(shard_inventory(s, w, whole(s)), w);
  };
  ModelStates m = states(1);
  CHECK(m.weights_at_rest == Approx(2 * P));
  CHECK(m.grads == Approx(2 * P));
  CHECK(m.states == Approx(12 * P / Nd));
  m = states(2);  // (under the pytorch profile stage 2 is FSDP2 shard_grad_op: parameters sharded at rest too)
  CHECK(m.grads == Approx(2 * P / Nd));
  CHECK(m.states == Approx(12 * P / Nd));
  m = states(3);
  CHECK(m.weights_at_rest == Approx(2 * P / Nd));
  CHECK(m.grads == Approx(2 * P / Nd));
  CHECK(m.states == Approx(12 * P / Nd));
  m = states(0);  // DDP: a second bf16 copy of the gradients in its buckets
  CHECK(m.ddp_buckets == Approx(2 * P));
  CHECK(m.states == Approx(12 * P));

  // ZeRO-Offload: moments + master weights and an fp32 gradient copy go to the host (Ren et al. 2021 §4).
  w.zero = 2;
  w.offload_optimizer = Offload::cpu;
  m = model_states(shard_inventory(s, w, whole(s)), w);
  CHECK(m.gpu_states == 0);
  CHECK(m.host == Approx(12 * P / Nd + 4 * P / Nd));
}

TEST_CASE("step 2, model_states: QLoRA's NF4 base and fp32 adapters", "[training][steps]") {
  const ModelSpec& s = preset("llama-3.1-8b");
  TrainingWorkload w = bf16_pure();
  w.lora.rank = 16;
  w.lora.targets = {"q_proj", "v_proj"};
  w.lora.qlora = true;
  const ModelStates m = model_states(shard_inventory(s, w, whole(s)), w);
  // Decoder linears at 4 + 8/64 + 32/(64·256) bits (QLoRA §3), everything else bf16: 5,702,295,552 B.
  CHECK(m.weights - m.adapters == Approx(5'702'295'552.0));
  CHECK(m.adapters == 4.0 * 6'815'744);
  CHECK(m.grads == 4.0 * 6'815'744);
  CHECK(m.states == 8.0 * 6'815'744);  // two fp32 moments, no master copy
}

TEST_CASE("step 3, step_tensors: loss buffers, checkpoints, gradients, optimizer temporaries", "[training][steps]") {
  const ModelSpec& s = preset("llama-3.2-1b");
  const double V = 128256, h = 2048, T = 1024;
  TrainingWorkload w = bf16_pure(1, 1024);
  auto tensors = [&] {
    const PipelineStage st = whole(s);
    const ShardInventory inv = shard_inventory(s, w, st);
    return step_tensors(s, w, st, inv, model_states(inv, w));
  };
  StepTensors t = tensors();
  // HF ForCausalLMLoss with bf16 logits: forward keeps logits (2), their fp32 upcast (4), log-softmax (4) per
  // vocabulary entry and token; backward 12 B (measured on H200).
  CHECK(t.loss.forward == 10 * V * T);
  CHECK(t.loss.backward == 12 * V * T);
  // Tokens outside the layers: int64 ids + labels + two shifted label copies, and the final norm's input.
  CHECK(t.outside >= 32 * T);
  // Gradients appear per layer: one bf16 copy of each layer's parameters; tied embeddings' at lm_head.
  const double layer = 2.0 * 2048 * 2048 + 2.0 * 2048 * 512 + 3.0 * 2048 * 8192 + 2 * 2048;
  CHECK(t.layers[0].grad == 2 * layer);
  CHECK(t.head_grad == 2 * (V * h + h));
  CHECK(t.emb_grad == 0);
  // torch's foreach AdamW makes one moment-sized temporary: 2 B per parameter in pure bf16.
  CHECK(t.step_temp == 2.0 * 1'235'814'400);
  w.optimizer = Optimizer::adamw_fused;
  CHECK(tensors().step_temp == 0);
  // Full recomputation keeps each layer's input only (bf16 residual stream).
  w.recompute = Recompute::full;
  t = tensors();
  CHECK(t.layers[3].saved == 2 * h * T);
  CHECK(t.layers[3].full > 10 * t.layers[3].saved);
}

TEST_CASE("step 4, training_moments: the optimizer step holds weights, gradients, states and temporaries", "[training][steps]") {
  const ModelSpec& s = preset("gpt2");
  TrainingWorkload w;
  w.precision = Precision::fp32;
  w.optimizer = Optimizer::sgd;
  w.seq = 512;
  const PipelineStage st = whole(s);
  const ShardInventory inv = shard_inventory(s, w, st);
  const ModelStates m = model_states(inv, w);
  const auto moments = training_moments(s, w, st, inv, m, step_tensors(s, w, st, inv, m));
  REQUIRE(moments.back().phase == "optimizer");
  // Plain SGD, fp32: 4 B weights + 4 B gradients per parameter (GPT-2 small: 124,439,808), no states, cuBLAS
  // workspaces as overhead.
  const auto& at = moments.back().at;
  CHECK(at.weights.in(unit::bytes) == 4.0 * 124'439'808);
  CHECK(at.gradients.in(unit::bytes) == 4.0 * 124'439'808);
  CHECK(at.optimizer_states.in(unit::bytes) == 0);
  CHECK(at.overhead == PytorchProfile::cublas_workspaces);
  // Backward walks every layer once, top first.
  int layers = 0;
  for (const auto& mo : moments) layers += mo.what.rfind("layer ", 0) == 0;
  CHECK(layers == s.layers);
}

TEST_CASE("step 5, training_allocations: a balanced timeline in phases, replayed by the allocator", "[training][steps]") {
  const ModelSpec& s = preset("llama-3.2-1b");
  TrainingWorkload w = bf16_pure(2, 1024);
  w.gpus = 2;
  w.zero = 3;
  const PipelineStage st = whole(s);
  const ShardInventory inv = shard_inventory(s, w, st);
  const ModelStates m = model_states(inv, w);
  const AllocationTimeline t = training_allocations(s, w, st, inv, m, step_tensors(s, w, st, inv, m));
  using Phase = AllocationTimeline::Phase;
  std::vector<int> live(t.allocations, 0);
  int optimizer_allocs_first = 0, optimizer_allocs_later = 0, steps = 0, rs_stream = 0;
  Phase last = Phase::setup;
  for (const auto& e : t.events) {
    if (e.phase == Phase::forward && last == Phase::optimizer) ++steps;
    if (e.alloc) {
      REQUIRE(live[e.id] == 0);
      live[e.id] = 1;
      if (e.phase == Phase::optimizer) (steps == 0 ? optimizer_allocs_first : optimizer_allocs_later) += 1;
      if (e.stream == 1) ++rs_stream;
    } else {
      REQUIRE(live[e.id] == 1);  // frees only what is allocated
      live[e.id] = 0;
    }
    last = e.phase;
  }
  CHECK(steps == 2);  // three steps
  // The moments (two per parameter tensor) and temporaries appear in the first optimizer step only; later steps
  // allocate temporaries alone.
  CHECK(optimizer_allocs_first > optimizer_allocs_later);
  // FSDP2: every gradient shard comes from the reduce-scatter stream's pool: one per tensor per step, plus the tied
  // matrix's second gradient (lm_head's, then the embedding's) and their sum.
  std::size_t tensors = inv.groups.embedding.size() + inv.groups.head.size();
  for (std::size_t l = 0; l < inv.groups.layers(); ++l) tensors += inv.groups.layer(l).size();
  CHECK(rs_stream == int(3 * (tensors + 2)));
  // The replay's reserve equals driving the allocator by hand with the same events.
  CachingAllocatorModel A;
  std::vector<CachingAllocatorModel::Handle> h(t.allocations);
  for (const auto& e : t.events) e.alloc ? void(h[e.id] = A.malloc(e.bytes, e.stream)) : A.free(h[e.id]);
  CHECK(replay_reserve(t) == A.peak_reserved() - A.peak_allocated());
  CHECK(replay_reserve(t) > 0);
  // The estimate feeds the allocator directly, keeping no timeline: the same reserve.
  CHECK(training_allocator_reserve(s, w, st, inv, m, step_tensors(s, w, st, inv, m)) == replay_reserve(t));
}

TEST_CASE("serving steps: inference_tensors' KV cache and generate's balanced timeline", "[inference][steps]") {
  const ModelSpec& s = preset("llama-3.1-8b");
  InferenceWorkload w;
  w.batch = 4;
  w.prompt_len = 1000;
  w.new_tokens = 25;
  const InferenceTensors t = inference_tensors(s, w, WeightFormat::bf16, KvDtype::bf16);
  // K and V: 8 KV heads × 128 × 2 B each, per layer: 4 KiB; 32 layers: 128 KiB per token (vLLM's figure).
  CHECK(t.kv_tok[0] == 4096);
  CHECK(t.len == 1024);  // HF generate caches prompt + new − 1 tokens
  CHECK(t.kv_final == 4 * 1024 * 4096.0 * 32);
  CHECK(t.kv_after_prefill == 4 * 1000 * 4096.0 * 32);
  const AllocationTimeline a = generate_allocations(s, w, t);
  std::vector<int> live(a.allocations, 0);
  int decode_allocs = 0;
  for (const auto& e : a.events) {
    REQUIRE(live[e.id] == (e.alloc ? 0 : 1));
    live[e.id] = e.alloc ? 1 : 0;
    decode_allocs += e.alloc && e.phase == AllocationTimeline::Phase::backward;
  }
  // Each of the 24 decode steps grows every layer's keys and values (torch.cat) and makes a hidden state and logits.
  CHECK(decode_allocs == 24 * (2 * 32 + 2));
  // The estimate feeds the allocator directly, keeping no timeline: the same reserve.
  CHECK(generate_allocations<ReplayedAllocations>(s, w, t).reserve() == replay_reserve(a));
  CHECK(replay_reserve(a) > 0);
}
