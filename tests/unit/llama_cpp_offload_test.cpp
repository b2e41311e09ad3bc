// llama.cpp's placement of layers and experts: the flags (-ngl by build, --n-cpu-moe, -ot) and --fit, by hand.
#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/quant.h>
#include <gpuplan/catalog.h>
#include <gpuplan/throughput.h>

using namespace gpuplan;

namespace {
constexpr double kGiBytes = 1073741824.0;
InferenceWorkload offload_workload(WeightFormat f, std::int64_t n_ctx = 4096) {
  InferenceWorkload w;
  w.profile = Profile::llama_cpp;
  w.context = n_ctx;
  w.weights = f;
  return w;
}
double experts_bytes(const WeightBytes& wb, std::int64_t from, std::int64_t to) {
  double b = 0;
  for (std::int64_t l = from; l < to; ++l) b += wb.per_layer_experts[static_cast<std::size_t>(l)].in(unit::bytes);
  return b;
}
}  // namespace

TEST_CASE("GGUF MXFP4_MOE: experts in MXFP4, the rest in Q8_0", "[llama.cpp][offload]") {
  // llama-bench's size column: "gpt-oss 20B MXFP4 MoE | 11.27 GiB" (ggml-org/llama.cpp PR #16991) and
  // "gpt-oss 120B MXFP4 MoE | 59.02 GiB" (the ggml-org/gpt-oss-120b-GGUF file, 63.39 GB).
  const auto b20 = weight_bytes(find_preset("gpt-oss-20b").spec, WeightFormat::mxfp4, 128, true);
  const auto b120 = weight_bytes(find_preset("gpt-oss-120b").spec, WeightFormat::mxfp4, 128, true);
  CHECK(b20.total().in(unit::bytes) / kGiBytes == Approx(11.27).epsilon(0.01));
  CHECK(b120.total().in(unit::bytes) / kGiBytes == Approx(59.02).epsilon(0.01));
  CHECK(b120.routed_experts.in(unit::bytes) == Approx(experts_bytes(b120, 0, 36)));
}

TEST_CASE("llama.cpp: experts kept in host memory by --n-cpu-moe and -ot rules", "[llama.cpp][offload]") {
  const ModelSpec& m = find_preset("gpt-oss-120b").spec;
  auto w = offload_workload(WeightFormat::mxfp4);
  const auto all = estimate_inference_memory(m, w);
  const auto wb = weight_bytes(m, WeightFormat::mxfp4, 128, true);
  w.llama_cpp.n_cpu_moe = 10;  // the first 10 layers' experts
  const auto ten = estimate_inference_memory(m, w);
  CHECK(ten.serving.gpu_layers == 37);
  CHECK(ten.serving.host_expert_layers == 10);
  CHECK(all.memory.components.weights.in(unit::bytes) - ten.memory.components.weights.in(unit::bytes) ==
        Approx(experts_bytes(wb, 0, 10)));
  CHECK(ten.serving.host_memory->in(unit::bytes) - all.serving.host_memory->in(unit::bytes) ==
        Approx(experts_bytes(wb, 0, 10)));
  // The same as a rule; one tensor of three (ffn_down) is a third of a layer's experts; the first rule that
  // matches decides.
  w.llama_cpp.n_cpu_moe.reset();
  w.llama_cpp.override_tensor = {"blk\\.[0-9]\\.ffn_(up|down|gate)_exps=CPU"};
  CHECK(estimate_inference_memory(m, w).memory.components.weights.in(unit::bytes) ==
        Approx(all.memory.components.weights.in(unit::bytes) - experts_bytes(wb, 0, 10)));
  const auto shares = llama_cpp_override_shares({"blk\\.0\\.=CUDA0", "blk\\.1\\.ffn_down_exps=CPU", "exps=CPU"}, 3);
  CHECK(shares[0] == 0.0);
  CHECK(shares[1] == Approx(1.0));
  CHECK(shares[2] == Approx(1.0));
  CHECK(llama_cpp_override_shares({"blk\\.1\\.ffn_down_exps=CPU"}, 3)[1] == Approx(1.0 / 3.0));
  CHECK_THROWS_AS(llama_cpp_override_shares({"exps"}, 3), InputError);
  CHECK_THROWS_AS(llama_cpp_override_shares({"attn_q=CPU"}, 3), InputError);  // no expert tensor named
  CHECK_THROWS_AS(llama_cpp_override_shares({"blk\\.(=CPU"}, 3), InputError);
  auto dense = offload_workload(WeightFormat::q4_k_m);
  dense.llama_cpp.n_cpu_moe = 4;
  CHECK_THROWS_AS(estimate_inference_memory(find_preset("llama-3.1-8b").spec, dense), InputError);
}

TEST_CASE("llama.cpp: -ngl by build when no flag places the layers", "[llama.cpp][offload]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  auto w = offload_workload(WeightFormat::q4_k_m);
  w.llama_cpp.version = EngineVersion{6000, 0, 0};  // before b6646: n_gpu_layers defaulted to 0
  CHECK(estimate_inference_memory(m, w).serving.gpu_layers == 0);
  w.llama_cpp.version = EngineVersion{6646, 0, 0};  // llama_model_default_params: 999
  CHECK(estimate_inference_memory(m, w).serving.gpu_layers == 33);
  w.llama_cpp.version.reset();  // the newest: --fit, but without a device nothing to fit to
  CHECK(estimate_inference_memory(m, w).serving.gpu_layers == 33);
}

TEST_CASE("llama.cpp --fit: the most the free memory less --fit-target holds", "[llama.cpp][offload]") {
  SECTION("everything fits: no change") {
    auto w = offload_workload(WeightFormat::q4_k_m);
    w.device_memory = Bytes(24 * kGiBytes);
    const auto e = estimate_inference_memory(find_preset("llama-3.1-8b").spec, w);
    CHECK(e.serving.gpu_layers == 33);
    CHECK(e.serving.host_expert_layers == 0);
  }
  SECTION("a dense model: whole layers from the last") {
    const ModelSpec& m = find_preset("llama-3.1-70b").spec;
    auto w = offload_workload(WeightFormat::q4_k_m);
    w.device_memory = Bytes(24 * kGiBytes);
    const auto e = estimate_inference_memory(m, w);
    const std::int64_t n = *e.serving.gpu_layers;
    CHECK(n > 20);
    CHECK(n < 81);
    const double target = 24 * kGiBytes - LlamaCppProfile::cuda_context.in(unit::bytes) - 1024 * 1048576.0;
    CHECK(e.memory.total.in(unit::bytes) - LlamaCppProfile::cuda_context.in(unit::bytes) <= target);
    w.llama_cpp.n_gpu_layers = n + 1;  // one more layer would not leave the target free
    CHECK(estimate_inference_memory(m, w).memory.total.in(unit::bytes) -
              LlamaCppProfile::cuda_context.in(unit::bytes) > target);
  }
  SECTION("an MoE: every dense part on the GPU, experts of the first layers back on it") {
    const ModelSpec& m = find_preset("gpt-oss-120b").spec;
    auto w = offload_workload(WeightFormat::mxfp4);
    w.device_memory = Bytes(24 * kGiBytes);  // an RTX 4090
    const auto e = estimate_inference_memory(m, w);
    CHECK(e.serving.gpu_layers == 37);
    const auto& share = e.serving.placement->host_expert_share;
    const std::int64_t host = *e.serving.host_expert_layers;
    CHECK(host > 10);
    CHECK(host < 36);
    CHECK(share.front() == 0.0);  // the first layers keep their experts
    CHECK(share.back() == 1.0);   // the last ones leave them in host memory
    const double used = e.memory.total.in(unit::bytes) - LlamaCppProfile::cuda_context.in(unit::bytes);
    const double target = 24 * kGiBytes - LlamaCppProfile::cuda_context.in(unit::bytes) - 1024 * 1048576.0;
    CHECK(used <= target);
    // A third of one more layer's experts would not fit.
    const auto wb = weight_bytes(m, WeightFormat::mxfp4, 128, true);
    CHECK(used + experts_bytes(wb, 35, 36) / 3.0 > target);
    // --fit off: the build's default, every layer (and the GPU overfull); a flag placing layers turns --fit off too.
    w.llama_cpp.fit = false;
    CHECK(estimate_inference_memory(m, w).serving.host_expert_layers == 0);
    w.llama_cpp.fit.reset();
    w.llama_cpp.n_gpu_layers = 37;
    CHECK(estimate_inference_memory(m, w).serving.host_expert_layers == 0);
  }
}

TEST_CASE("llama.cpp offload speed: the CPU reads the experts it routes to, prompts copy them over PCIe",
          "[llama.cpp][offload][throughput]") {
  const Device& gpu = builtin_catalog().get("rtx-4090");
  const ModelSpec& m = find_preset("qwen3-30b-a3b").spec;
  const double total = weight_bytes(m, WeightFormat::q8_0, 128, true).total().in(unit::bytes);
  Efficiency e;
  ServingEngine engine(Profile::llama_cpp);
  const auto on_gpu = serving_throughput(m, gpu, WeightFormat::q8_0, total, 0, 1, 512, 1, 1, e, engine);
  engine.offload = {1e9, 16e9, 89.6e9, pcie_x16_bytes_per_s(4)};  // 1 GB of whole layers, 16 GB of experts
  const auto off = serving_throughput(m, gpu, WeightFormat::q8_0, total, 0, 1, 512, 1, 1, e, engine);
  // Decode: 1 GB + 8 of 128 experts' 16 GB read by the CPU at 0.65 × 89.6 GB/s, after the GPU reads the rest.
  const double host_read = 1e9 + 16e9 * 8.0 / 128.0;
  CHECK(off.decode_host_memory.in(unit::seconds) == Approx(host_read / (0.65 * 89.6e9)));
  CHECK(off.decode_step.in(unit::seconds) - off.decode_host_memory.in(unit::seconds) <
        on_gpu.decode_step.in(unit::seconds));
  CHECK(off.decode_host_memory_bound);
  // A 512-token prompt is one ubatch: the GPU runs it after copying all 17 GB over PCIe 4.0 x16 (31.5 GB/s × 0.8).
  CHECK(pcie_x16_bytes_per_s(4) == Approx(16e9 * 16 * 128.0 / 130 / 8));  // 31.5 GB/s
  CHECK(off.prefill.in(unit::seconds) - on_gpu.prefill.in(unit::seconds) == Approx(17e9 / (0.8 * pcie_x16_bytes_per_s(4))));
}

TEST_CASE("Metal: recommendedMaxWorkingSetSize as the logs print it", "[llama.cpp][offload]") {
  // ggml_metal_init lines in tests/data/engines/collected/llama_cpp.jsonl: a 16 GB M4 and a 48 GB M3 Max.
  CHECK(metal_working_set(Bytes(16 * kGiBytes)).in(unit::bytes) / 1e6 == Approx(11453.25).epsilon(1e-5));
  CHECK(metal_working_set(Bytes(48 * kGiBytes)).in(unit::bytes) / 1e6 == Approx(38654.71).epsilon(1e-5));
}
