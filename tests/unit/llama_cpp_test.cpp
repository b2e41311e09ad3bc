// llama.cpp's buffers by hand, and against the numbers its start-up log printed.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include <fstream>
#include <gpuplan/model_hf.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/builtin.h>
#include <gpuplan/quant.h>

using namespace gpuplan;

namespace {
using gpuplan::test::kMiB;
InferenceWorkload llama_cpp(std::int64_t n_ctx) {
  InferenceWorkload w;
  w.profile = Profile::llama_cpp;
  w.context = n_ctx;
  return w;
}
}  // namespace

TEST_CASE("llama.cpp: -ngl counts repeating layers from the last one, then the output layer", "[llama.cpp]") {
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;
  const WeightBytes wb = weight_bytes(m, WeightFormat::q4_k_m);
  auto w = llama_cpp(4096);
  w.weights = WeightFormat::q4_k_m;
  w.llama_cpp.n_gpu_layers = 16;  // layers 16..31 on the GPU; output (and embeddings) on the host
  const auto half = estimate_inference_memory(m, w);
  double last16 = 0;
  for (int l = 16; l < 32; ++l) last16 += wb.per_layer[static_cast<std::size_t>(l)].in(unit::bytes);
  CHECK(half.memory.components.weights.in(unit::bytes) == Approx(last16));
  const double kv_layer = 4096.0 * 2 * 8 * 128 * 2;  // cells × K and V rows of 8 KV heads × 128, f16
  CHECK(half.memory.components.kv_cache.in(unit::bytes) == Approx(16 * kv_layer));
  CHECK(half.serving.host_memory->in(unit::bytes) ==
        Approx((wb.total().in(unit::bytes) - last16) + 16 * kv_layer));
  // -ngl 32 on a 32-layer model: every repeating layer, the output layer still on the host ("offloaded 32/33").
  w.llama_cpp.n_gpu_layers = 32;
  const auto all_but_output = estimate_inference_memory(m, w);
  CHECK(all_but_output.memory.components.weights.in(unit::bytes) ==
        Approx((wb.total() - wb.embedding - wb.output).in(unit::bytes)));
  w.llama_cpp.n_gpu_layers = 33;
  CHECK(estimate_inference_memory(m, w).memory.components.weights.in(unit::bytes) ==
        Approx((wb.total() - wb.embedding).in(unit::bytes)));
}

TEST_CASE("llama.cpp: KV cells padded to 256 (32 without flash attention); interleaved sliding layers get their own cache", "[llama.cpp]") {
  // n_ctx 1000 → 1024 cells: Llama 3.1 8B, 32 layers × 1024 × 2 × 1024 (8 heads × 128) × 2 B = 128 MiB.
  CHECK(estimate_inference_memory(find_preset("llama-3.1-8b").spec, llama_cpp(1000)).memory.components.kv_cache.in(
            unit::bytes) == 128 * kMiB);
  // gpt-oss-20b at n_ctx 131072, logged by llama.cpp (llama_kv_cache_unified_iswa): non-SWA 131072 cells × 12
  // layers = 3072 MiB; SWA min(131072, pad(128·1 + 512, 256)) = 768 cells × 12 layers = 18 MiB.
  CHECK(llama_cpp_cells(find_preset("gpt-oss-20b").spec, true, 0, 131072, 1, 512, /*flash_attn=*/true) == 768);
  // Without flash attention cells are padded to 32 (llama_kv_cache::get_padding: "flash_attn ? 256u : 32u"):
  // n_ctx 2528 stays 2528 cells, 2560 with it; llama.cpp's CI on an Apple M4 logs 24.00 MiB of KV for Pythia 1.4B
  // at n_ctx 128 without flash attention (128 cells × 24 layers × 2 × 2048 × 2 B).
  const ModelSpec& llama = find_preset("llama-3.1-8b").spec;
  CHECK(llama_cpp_cells(llama, false, 0, 2528, 1, 512, false) == 2528);
  CHECK(llama_cpp_cells(llama, false, 0, 2528, 1, 512, true) == 2560);
  auto no_fa = llama_cpp(128);
  no_fa.llama_cpp.flash_attn = false;
  CHECK(estimate_inference_memory(llama, no_fa).memory.components.kv_cache.in(unit::bytes) == 128.0 * 32 * 2 * 1024 * 2);
  CHECK(estimate_inference_memory(find_preset("gpt-oss-20b").spec, llama_cpp(131072)).memory.components.kv_cache.in(
            unit::bytes) == (3072 + 18) * kMiB);
  // A uniform window (Phi-3 mini declares sliding_window 2047 on every layer) runs as full attention: 4096 cells ×
  // 32 layers × 2 × 3072 × 2 B = 1536 MiB, as logged.
  CHECK(estimate_inference_memory(find_preset("phi-3-mini").spec, llama_cpp(4096)).memory.components.kv_cache.in(
            unit::bytes) == 1536 * kMiB);
}

TEST_CASE("llama.cpp and Ollama: Gemma 4's caches (own K/V per full and sliding layer, none for shared-KV layers)", "[llama.cpp][ollama]") {
  // No single-GPU llama.cpp start-up of a Gemma 4 GGUF with its buffer lines was found; these are hand-computed from
  // llama.cpp's source (src/llama-kv-cache-iswa.cpp size_swa = min(size_base, GGML_PAD(n_swa·n_seq + n_ubatch,
  // 256)); src/models/gemma4.cpp: layers from n_layer_kv_from_start = n_layer − shared_kv_layers on keep no cache,
  // "filtered" in the log) and the numbers llama.cpp printed for an E4B on three GPUs (ggml-org/llama.cpp issue
  // #21730, heislera763): "size = 2048.00 MiB (131072 cells, 4 layers, 1/1 seqs)" for the full-attention layers and
  // "creating SWA KV cache, size = 1024 cells".
  const ModelSpec& e4b = find_preset("gemma-4-e4b").spec;  // 42 layers, the last 18 share KV; layers 5, 11, 17, 23 full
  CHECK(kv_layer_count(e4b) == 24);
  CHECK(llama_cpp_cells(e4b, true, 0, 131072, 1, 512, true) == 1024);
  CHECK(llama_cpp_cells(e4b, true, 5, 131072, 1, 512, true) == 131072);
  const double full = 4 * 131072.0 * 2 * 2 * 512 * 2;   // 4 layers × cells × K and V of 2 heads × 512, f16
  const double sliding = 20 * 1024.0 * 2 * 2 * 256 * 2;  // 20 layers × 1024 cells × K and V of 2 heads × 256
  CHECK(full == 2048 * kMiB);
  CHECK(estimate_inference_memory(e4b, llama_cpp(131072)).memory.components.kv_cache.in(unit::bytes) == full + sliding);
  // E2B at n_ctx 4096: 15 layers keep KV (35 − 20 shared), 3 of them full (4, 9, 14), one KV head.
  const double e2b = 3 * 4096.0 * 2 * 512 * 2 + 12 * 1024.0 * 2 * 256 * 2;
  CHECK(estimate_inference_memory(find_preset("gemma-4-e2b").spec, llama_cpp(4096)).memory.components.kv_cache.in(unit::bytes) == e2b);
  // 31B, values that are the keys: the full layers' cache still holds K and V (4 global heads × 512).
  const ModelSpec& b31 = find_preset("gemma-4-31b").spec;
  const double b31_kv = 10 * 8192.0 * 2 * 4 * 512 * 2 + 50 * 1536.0 * 2 * 16 * 256 * 2;
  CHECK(estimate_inference_memory(b31, llama_cpp(8192)).memory.components.kv_cache.in(unit::bytes) == b31_kv);
  // Ollama's engine keeps 4096 cells per sequence of a gemma4 sliding layer (NewSWAMemCache(window, 4096)) plus a
  // batch, and the whole context once that is no less than num_ctx.
  CHECK(ollama_swa_memory(b31) == 4096);
  CHECK(ollama_swa_memory(find_preset("gemma-3-12b").spec) == 0);
  CHECK(llama_cpp_cells(b31, true, 0, 32768, 1, 512, true, 4096) == 4608);
  CHECK(llama_cpp_cells(b31, true, 0, 4 * 32768, 4, 512, true, 4096) == 4 * 4096 + 512);
  CHECK(llama_cpp_cells(b31, true, 0, 4096, 1, 512, true, 4096) == 4096);
  // The compute buffer reserves the widest layer's attention: the full layers' heads × 512.
  auto no_fa = llama_cpp(8192);
  no_fa.llama_cpp.flash_attn = false;
  const double ub = 512, cells = 8192;
  const double attention = 32 * cells * ub * 4 + cells * ub * 4 + (2 * 5376.0 + 2 * 32 * 512.0) * ub * 4;
  const double logits = (262144.0 + 5376) * ub * 4;
  CHECK(estimate_inference_memory(b31, no_fa).memory.components.activations.in(unit::bytes) == Approx(std::max(attention, logits)));
}

TEST_CASE("llama.cpp: the compute buffer is the larger of the f32 scores and the f32 logits", "[llama.cpp]") {
  // Qwen3-0.6B, n_ctx 4096, n_ubatch 512, flash attention off: the logits 151,936 × 512 × 4 B = 296.75 MiB and the
  // normed input row (1024 × 512 × 4 B = 2 MiB) beat the scores (16 heads × 4096 × 512 × 4 B = 128 MiB): 298.75 MiB
  // on a GPU; its CPU-only run logged 300.75 MiB (the CPU backend keeps one more row).
  const ModelSpec& q = find_preset("qwen3-0.6b").spec;
  CHECK(llama_cpp_compute_bytes(q, 4096, 512, false, 0.0) == 298.75 * kMiB);
  CHECK(llama_cpp_compute_bytes(q, 4096, 512, false, 0.0) == Approx(300.75 * kMiB).epsilon(0.01));
  // Mistral 7B, n_ctx 8192, n_ubatch 256, flash attention off; logged 280.00 MiB: the scores 32 × 8192 × 256 × 4 B
  // = 256 MiB, the f32 mask 8 MiB and two hidden and two attention-width f32 rows (4096 wide) 16 MiB.
  CHECK(llama_cpp_compute_bytes(find_preset("mistral-7b").spec, 8192, 256, false, 0.0) == 280 * kMiB);
  // With flash attention the scores are never materialised; with the output layer on the host and ubatches below 32
  // tokens (not offloaded) the GPU holds no logits.
  CHECK(llama_cpp_compute_bytes(q, 4096, 16, true, 1e9) < 1 * kMiB);
  // Output on the host, ubatch 512: the GPU runs the output matmul on a copy of its weights. Pythia 2.8B Q4_0 at
  // -ngl 10 (llama.cpp's CI, b4343, V100): Q6_K output 105,638,400 B + logits 50,304 × 512 × 4 B + the 2560-wide
  // input row = 213,903,872 B = 203.99 MiB, as logged with and without flash attention.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/pythia-2.8b.json");
  const ModelSpec pythia = model_from_hf_config(nlohmann::json::parse(f), "pythia-2.8b");
  auto w = llama_cpp(2048);
  w.weights = WeightFormat::q4_0;
  w.llama_cpp.n_gpu_layers = 10;
  for (bool fa : {false, true}) {
    w.llama_cpp.flash_attn = fa;
    CHECK(estimate_inference_memory(pythia, w).memory.components.activations.in(unit::bytes) == 213'903'872.0);
  }
}

TEST_CASE("llama.cpp back ends: ggml-cuda pads quantized rows, Vulkan's one allocation, Ollama's Metal reserve", "[llama.cpp]") {
  // OpenLLaMA 3B (hidden 3200, FFN 8640) in Q4_0, as Ollama's orca-mini on a ROCm 7900 XTX logged it (1832.60 MiB):
  // q, k, v, o, gate and up have rows of 3200 = 6 × 512 + 128, each padded by 384 Q4_0 weights (216 B); down's rows
  // of 8640 by 64 (36 B); the output (Q6_K falls back to Q8_0 for rows of 3200) by 384 Q8_0 weights (408 B).
  std::ifstream f(std::string(GPUPLAN_TEST_DATA) + "/engines/configs/open-llama-3b.json");
  const ModelSpec m = model_from_hf_config(nlohmann::json::parse(f), "open-llama-3b");
  const LlamaCppRowPadding pad = llama_cpp_row_padding(m, WeightFormat::q4_0);
  REQUIRE(pad.per_layer.size() == 26);
  CHECK(pad.per_layer[0] == 6 * 216.0 + 36.0);
  CHECK(pad.output == 408.0);
  auto w = llama_cpp(2048);
  w.weights = WeightFormat::q4_0;
  w.llama_cpp.n_gpu_layers = 27;
  const double cuda = estimate_inference_memory(m, w).memory.components.weights.in(unit::bytes);
  w.llama_cpp.backend = LlamaCppBackend::metal;  // ggml-metal sizes a tensor by ggml_nbytes
  const double metal = estimate_inference_memory(m, w).memory.components.weights.in(unit::bytes);
  CHECK(cuda - metal == 26 * (6 * 216.0 + 36.0) + 408.0);
  CHECK(cuda / kMiB == Approx(1832.60).epsilon(1e-5));
  // Vulkan: Qwen3-30B-A3B at 70016 cells without flash attention holds 32 × 70016 × 512 × 4 B = 4.27 GiB of scores in
  // one tensor, above the 4 GiB one allocation may hold: the start-up fails (llama.cpp issue #15009).
  auto v = llama_cpp(70000);
  v.llama_cpp.flash_attn = false;
  v.llama_cpp.backend = LlamaCppBackend::vulkan;
  CHECK(estimate_inference_memory(find_preset("qwen3-30b-a3b").spec, v).serving.starts == false);
  v.llama_cpp.flash_attn = true;
  CHECK(!estimate_inference_memory(find_preset("qwen3-30b-a3b").spec, v).serving.starts);
  // Ollama keeps 512 MiB of a Mac's working set free (metalMinimumMemory), 457 MiB of a CUDA or ROCm GPU.
  CHECK(OllamaProfile::minimum_memory_for(LlamaCppBackend::metal) == 512 * kMiB);
  CHECK(OllamaProfile::minimum_memory_for(LlamaCppBackend::rocm) == 457 * kMiB);
}

TEST_CASE("llama.cpp: bad engine knobs are refused", "[llama.cpp]") {
  auto w = llama_cpp(4096);
  w.llama_cpp.n_ubatch = 0;
  CHECK_THROWS_AS(estimate_inference_memory(find_preset("qwen3-0.6b").spec, w), InputError);
  w = llama_cpp(4096);
  w.llama_cpp.n_parallel = 0;
  CHECK_THROWS_AS(estimate_inference_memory(find_preset("qwen3-0.6b").spec, w), InputError);
}

TEST_CASE("ollama: num_ctx by GPU memory, clamped to the model, times OLLAMA_NUM_PARALLEL", "[llama.cpp][ollama]") {
  // docs/context-length.mdx (Ollama 0.21): 4k below 24 GiB, 32k up to 48 GiB, 256k above.
  CHECK(OllamaProfile::default_num_ctx(std::nullopt) == 4096);
  CHECK(OllamaProfile::default_num_ctx(Bytes(16.0 * 1073741824)) == 4096);
  CHECK(OllamaProfile::default_num_ctx(Bytes(24.0 * 1073741824)) == 32768);
  CHECK(OllamaProfile::default_num_ctx(Bytes(80.0 * 1073741824)) == 262144);
  const ModelSpec& m = find_preset("llama-3.1-8b").spec;  // trained context 131072
  InferenceWorkload w;
  w.profile = Profile::ollama;
  w.device_memory = Bytes(80.0 * 1073741824);
  w.llama_cpp.n_parallel = 2;
  const InferenceWorkload r = ollama_runner_workload(m, w);
  CHECK(*r.context == 2 * 131072);  // 256k clamped to the model's 128k, two slots
  CHECK(r.llama_cpp.n_ubatch == 512);
  w.context = 300;  // num_ctx below the batch: the batch shrinks to it
  CHECK(ollama_runner_workload(m, w).llama_cpp.n_ubatch == 300);
  // The runner's KV buffer: 2 × 300 cells padded to 768 with flash attention (608 without), 32 layers × K and V of
  // 8 × 128 f16.
  w.weights = WeightFormat::q4_k_m;
  CHECK(estimate_inference_memory(m, w).memory.components.kv_cache.in(unit::bytes) == 768.0 * 32 * 2 * 1024 * 2);
  w.llama_cpp.flash_attn = false;
  CHECK(estimate_inference_memory(m, w).memory.components.kv_cache.in(unit::bytes) == 608.0 * 32 * 2 * 1024 * 2);
}
