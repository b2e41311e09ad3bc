// llama.cpp over several GPUs (-sm layer / row, -ts): which GPU holds each layer, each GPU's buffers, and the speed
// of GPUs that run one after another, all by hand.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/throughput.h>

using namespace gpuplan;

namespace {
using gpuplan::test::kMiB;
InferenceWorkload llama_cpp_over(std::int64_t gpus, std::int64_t n_ctx) {
  InferenceWorkload w;
  w.profile = Profile::llama_cpp;
  w.context = n_ctx;
  w.tp = gpus;
  w.weights = WeightFormat::q4_k_m;
  w.llama_cpp.flash_attn = false;
  w.llama_cpp.n_gpu_layers = 99;
  return w;
}
}  // namespace

TEST_CASE("llama.cpp -sm layer: layers cut at the cumulative split shares, the output layer on the last GPU",
          "[llama.cpp][multi-gpu]") {
  // 32 layers + output = 33 on the GPUs; equal shares {0.5, 1}: layer il on GPU 0 while il / 33 < 0.5, il ≤ 16.
  const auto two = llama_cpp_layer_devices(32, 33, llama_cpp_split_points({}, 2));
  REQUIRE(two.size() == 33);
  CHECK(std::count(two.begin(), two.end(), 0) == 17);
  CHECK(std::count(two.begin(), two.end(), 1) == 16);  // layers 17..31 and the output
  CHECK(two[16] == 0);
  CHECK(two[17] == 1);
  CHECK(two[32] == 1);
  // -ts 3,1: split points {0.75, 1}: il / 33 < 0.75 for il ≤ 24, 25 layers on GPU 0.
  const auto three_one = llama_cpp_layer_devices(32, 33, llama_cpp_split_points({3, 1}, 2));
  CHECK(std::count(three_one.begin(), three_one.end(), 0) == 25);
  // -ngl 20: layers 12..31 on the GPUs (i_gpu_start 12), the output on the host; (il − 12) / 20 < 0.5 for il ≤ 21.
  const auto partial = llama_cpp_layer_devices(32, 20, llama_cpp_split_points({}, 2));
  CHECK(std::count(partial.begin(), partial.end(), -1) == 13);  // layers 0..11 and the output
  CHECK(std::count(partial.begin(), partial.end(), 0) == 10);
  CHECK(std::count(partial.begin(), partial.end(), 1) == 10);
  CHECK(partial[32] == -1);
  CHECK(partial[12] == 0);
  CHECK_THROWS_AS(llama_cpp_split_points({1, 1, 1}, 2), InputError);
  CHECK_THROWS_AS(llama_cpp_split_points({0, 0}, 2), InputError);
}

TEST_CASE("llama.cpp -sm layer over two GPUs: each GPU's model, KV and compute buffers", "[llama.cpp][multi-gpu]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const WeightBytes wb = weight_bytes(m, WeightFormat::q4_k_m, 128, true);
  const auto e = estimate_inference_memory(m, llama_cpp_over(2, 8192));
  REQUIRE(e.serving.devices.size() == 2);
  double first17 = 0;
  for (int l = 0; l < 17; ++l) first17 += wb.per_layer[static_cast<std::size_t>(l)].in(unit::bytes);
  const double gpu_total = (wb.total() - wb.embedding).in(unit::bytes);
  // Llama 3's rows (4096, 14336) are multiples of 512: ggml-cuda pads nothing.
  CHECK(e.serving.devices[0].weights == Approx(first17));
  CHECK(e.serving.devices[1].weights == Approx(gpu_total - first17));  // 15 layers and the output
  // 8192 cells × K and V × 8 heads × 128 × 2 B = 32 MiB a layer: 17 and 15 layers (the log: 544.00 and 480.00 MiB).
  CHECK(e.serving.devices[0].kv / kMiB == Approx(544.0));
  CHECK(e.serving.devices[1].kv / kMiB == Approx(480.0));
  // Without flash attention: f32 scores 32 × 8192 × 512 × 4 = 512 MiB, mask 8192 × 512 × 4 = 16 MiB, rows
  // (2 × 4096 + 2 × 4096) × 512 × 4 = 32 MiB: 560 MiB (one GPU's log: 560.00); pipeline parallelism's 4 copies of the
  // hidden state and the mask, 4 × (4096 + 8192) × 512 × 4 − 16 MiB = 80 MiB (the two-GPU log: 640.01 and 640.02).
  CHECK(e.serving.devices[0].compute / kMiB == Approx(640.0));
  CHECK(e.serving.devices[1].compute / kMiB == Approx(640.0));
  // The fullest GPU (the second: the output layer's 15 layers + 1 outweigh 2 layers' KV) decides the fit.
  CHECK(e.memory.components.weights.in(unit::bytes) == Approx(gpu_total - first17));
  CHECK(e.memory.components.kv_cache.in(unit::bytes) / kMiB == Approx(480.0));
  // One GPU: no pipeline copies.
  const auto one = estimate_inference_memory(m, llama_cpp_over(1, 8192));
  CHECK(one.serving.devices.size() == 1);
  CHECK(one.memory.components.activations.in(unit::bytes) / kMiB == Approx(560.0));
  CHECK(one.memory.components.weights.in(unit::bytes) == Approx(gpu_total));
}

TEST_CASE("llama.cpp -sm row: every layer's weights cut over the GPUs, KV by layer", "[llama.cpp][multi-gpu]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const WeightBytes wb = weight_bytes(m, WeightFormat::q4_k_m, 128, true);
  auto w = llama_cpp_over(2, 8192);
  w.llama_cpp.split_mode = LlamaCppSplitMode::row;
  w.llama_cpp.tensor_split = {3, 1};
  const auto e = estimate_inference_memory(m, w);
  const double gpu_total = (wb.total() - wb.embedding).in(unit::bytes);
  CHECK(e.serving.devices[0].weights == Approx(0.75 * gpu_total));
  CHECK(e.serving.devices[1].weights == Approx(0.25 * gpu_total));
  CHECK(e.serving.devices[0].kv / kMiB == Approx(25 * 32.0));  // il / 33 < 0.75: layers 0..24
  // No pipeline parallelism in row mode: 560 MiB on the layers' GPUs.
  CHECK(e.serving.devices[0].compute / kMiB == Approx(560.0));
  // -sm none: one GPU whatever --tp says.
  w.llama_cpp.split_mode = LlamaCppSplitMode::none;
  w.llama_cpp.tensor_split.clear();
  CHECK(estimate_inference_memory(m, w).serving.devices.size() == 1);
}

TEST_CASE("serving_throughput: llama.cpp's layer split runs the GPUs one after another, a batch's ubatches pipelined",
          "[throughput][llama.cpp][multi-gpu]") {
  const Device& rtx4090 = builtin_catalog().get("rtx-4090");
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const double wbytes = weight_bytes(m, WeightFormat::q4_k_m, 128, true).total().in(unit::bytes);
  Efficiency e;
  ServingEngine one(Profile::llama_cpp);
  one.version = EngineVersion{2824, 0, 0};
  one.flash_attn = false;
  ServingEngine two = one;
  two.devices = 2;
  const auto t1 = serving_throughput(m, rtx4090, WeightFormat::q4_k_m, wbytes, 131'072, 1, 4096, 1, 1, e, one);
  const auto t2 = serving_throughput(m, rtx4090, WeightFormat::q4_k_m, wbytes, 131'072, 1, 4096, 1, 2, e, two);
  // Decode: the same bytes at one GPU's bandwidth, plus one hand-over.
  CHECK(t2.decode_step.in(unit::seconds) ==
        Approx(t1.decode_step.in(unit::seconds) + LlamaCppSplit::boundary_seconds));
  // 4096 tokens = 2 batches of 4 ubatches: (4 + 1) stages of half a ubatch each, 2 × 5 / 2 = 5 ubatch times for 8.
  CHECK(llama_cpp_pipeline_share(m, WeightFormat::q4_k_m, 4096, two) == Approx(5.0 / 8.0));
  CHECK(t2.prefill.in(unit::seconds) == Approx(t1.prefill.in(unit::seconds) * 5.0 / 8.0));
  // One ubatch (pp512) gains nothing; 8 GPUs over 4 ubatches: 11 stages of an eighth, 11 / 32 of 4.
  CHECK(llama_cpp_pipeline_share(m, WeightFormat::q4_k_m, 512, two) == Approx(1.0));
  ServingEngine eight = one;
  eight.devices = 8;
  CHECK(llama_cpp_pipeline_share(m, WeightFormat::q4_k_m, 2048, eight) == Approx(11.0 / 8.0 / 4.0));
  // Row split: each GPU reads half the weights.
  ServingEngine row = two;
  row.row_split = true;
  const auto r2 = serving_throughput(m, rtx4090, WeightFormat::q4_k_m, wbytes, 0, 1, 1, 1, 2, e, row);
  const auto r1 = serving_throughput(m, rtx4090, WeightFormat::q4_k_m, wbytes, 0, 1, 1, 1, 1, e, one);
  CHECK(r2.decode_weight_bytes == Approx(r1.decode_weight_bytes / 2));
}

TEST_CASE("llama_cpp_pipeline_stages: the host thread blocks on a device whose queue is full", "[throughput][llama.cpp][multi-gpu]") {
  // Unlimited queues: U + D − 1 stages.
  CHECK(llama_cpp_pipeline_stages(4, 4, 1e9) == Approx(7.0));
  // D = 2, U = 2, a queue of half a stage: the host queues (0,0) once GPU 0 is half-way (0.5), (0,1) once GPU 1,
  // which starts at 1, is half-way (1.5); (1,0) runs 1.5–2.5, the host free at 2; (1,1) waits for (1,0): 2.5–3.5.
  CHECK(llama_cpp_pipeline_stages(2, 2, 0.5) == Approx(3.5));
  // D = 3, U = 3, room for a stage and a half: queueing (1,2) waits until GPU 2 is half-way through (0,2), 2.5, so
  // (2,0) starts at 2.5, not 2; the half-stage bubble reaches the end: 5.5 for 5.
  CHECK(llama_cpp_pipeline_stages(3, 3, 1.5) == Approx(5.5));
}

TEST_CASE("llama.cpp layer split: Llama 3 70B Q4_K_M's ubatches do not pipeline over 4 GPUs at b2824, F16's do",
          "[throughput][llama.cpp][multi-gpu]") {
  const ModelSpec& m = find_preset("llama-3.1-70b").spec;  // 80 layers, the shapes of Llama 3 70B
  ServingEngine four(Profile::llama_cpp);
  four.version = EngineVersion{2824, 0, 0};
  four.flash_attn = false;
  four.devices = 4;
  // A layer's prompt launches: 23 kernels without flash attention, 7 dequantizations, 2 × 7 F16/F32 conversions
  // around the cuBLAS GEMMs, 2 × 3 around the batched K·Q and ·V: 50; F16 weights 43.
  CHECK(llama_cpp_prompt_layer_launches(m, 0, true, four) == Approx(50));
  CHECK(llama_cpp_prompt_layer_launches(m, 0, false, four) == Approx(43));
  // From MMQ (b3140) a quantized GEMM is a q8_1 quantization and the MMQ kernel, as at decode: 30 + 6.
  ServingEngine mmq = four;
  mmq.version = EngineVersion{3140, 0, 0};
  CHECK(llama_cpp_prompt_layer_launches(m, 0, true, mmq) == Approx(36));
  // GPU 0 holds layers 0–20 (il / 81 < 0.25): 21 × 50 = 1,050 launches, 903 in F16.
  CHECK(llama_cpp_device_launches(m, WeightFormat::q4_k_m, four) == Approx(1050));
  CHECK(llama_cpp_device_launches(m, WeightFormat::fp16, four) == Approx(903));
  // pp1024, 2 ubatches, a queue of 1000 / 1050 = 20/21 stage: each (0,d) is queued 1/21 into its run, so (1,0)
  // starts at 3 + 1/21 and the last device ends at 7 + 1/21 of 8 stages; F16 has room: 5 of 8.
  CHECK(llama_cpp_pipeline_share(m, WeightFormat::q4_k_m, 1024, four) == Approx((7.0 + 1.0 / 21.0) / 8.0));
  CHECK(llama_cpp_pipeline_share(m, WeightFormat::fp16, 1024, four) == Approx(5.0 / 8.0));
}
