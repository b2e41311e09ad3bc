// llama.cpp's own buffers, as its start-up log prints them (CUDA backend, builds of mid/late 2025:
// src/llama-model.cpp load_tensors, src/llama-kv-cache.cpp, src/llama-context.cpp graph_reserve):
//   model buffer  the tensors of the offloaded layers (-ngl counts the repeating layers from the last one back,
//                 then the output layer); token embeddings stay in host memory (CPU_Mapped)
//   KV buffer     n_ctx padded to 256 cells (32 without flash attention) × every layer's K and V rows in type_k / type_v; interleaved
//                 sliding-window layers (Gemma 2/3, gpt-oss) get their own cache of n_swa·n_seq + n_ubatch cells
//   compute       ggml's graph allocator reserves the worst ubatch: the f32 attention scores without flash
//                 attention, or the f32 logits of n_ubatch outputs, whichever is larger; with the output layer
//                 left in host memory, also a copy of its weights (the GPU still runs that matmul)
// Ollama (OllamaProfile) is the same engine with its own context, batch and flash-attention defaults.
// The buffers are the same on every ggml back end but for how a buffer type sizes a tensor and how much one
// allocation may hold (LlamaCppBackend).
// Checked against llama.cpp's logs in tests/data/engines/llama_cpp.jsonl (scored), the collected start-ups of users on
// CUDA, ROCm, Vulkan and Metal (tests/data/engines/collected/) and tests/unit/llama_cpp_test.cpp.
#pragma once
#include <algorithm>
#include <cstdint>
#include <array>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "../enum_table.h"
#include "../model.h"
#include "../quant.h"
#include "../units.h"
#include "engine_version.h"

namespace gpuplan {

struct LlamaCppProfile {
  static constexpr std::int64_t n_ubatch = 512;  // common_params.n_ubatch default
  // Cells are padded for the flash-attention kernels: llama_kv_cache::get_padding, "flash_attn ? 256u : 32u"
  // (unchanged from b4343 through the llama_kv_cache_unified and llama_kv_cache rewrites).
  static constexpr std::int64_t kv_pad(bool flash_attn) { return flash_attn ? 256 : 32; }
  // CUDA context and cuBLAS of a plain CUDA process: about 0.3–0.4 GB (pytorch issues #107667, #109888 quote
  // ~300–400 MB with lazy loading); llama.cpp loads far fewer kernels than PyTorch.
  static constexpr Bytes cuda_context{350e6};
  // Beside the largest intermediate, the graph allocator ends up holding f32 rows per ubatch token. In the
  // attention phase two of the hidden width (the residual, the normed input) and two of the attention width
  // (heads × head_dim: Q and the attention output), read off the fitted half of the collected logs without flash
  // attention, where the scores dominate: Mistral 7B at n_ctx 2048 on CUDA (164.00 MiB), OpenLLaMA 3B on ROCm
  // (157.00), Llama 3 8B on Metal at 3904 cells (283.64), Qwen3-30B-A3B on Vulkan, whose attention width (4096) is
  // twice its hidden size (4536.75); GPT-NeoX's fused QKV output (q + k + v wide) stays live beside them. At the
  // output the normed input of the output matmul (1: Pythia 2.8B with flash attention on CUDA, 103.25 MiB, Pythia
  // 1.4B on Metal, 102.25 and 25.56 MiB; the CPU backend keeps one more, Qwen3-0.6B 300.75 MiB).
  static constexpr double attention_hidden_rows = 2, attention_width_rows = 2, output_hidden_rows = 1;
  // ggml's CUDA backend runs an operation whose weights sit in host memory on the GPU when the batch has at least
  // this many tokens (ggml_backend_cuda_device_offload_op, min_batch_size), copying the weights into the compute
  // buffer.
  static constexpr std::int64_t op_offload_min_batch = 32;
  // Several GPUs in layer mode with every layer offloaded turn on pipeline parallelism (src/llama-context.cpp:
  // "pipeline parallelism enabled (n_copies=4)"): ggml_backend_sched keeps GGML_SCHED_MAX_COPIES copies of each
  // split's inputs (the hidden state coming from the previous device, the KQ mask) in the device's compute buffer
  // (ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph, tensor_id_copy), so that up to that many ubatches of
  // a batch are in flight at once, one per device.
  static constexpr std::int64_t sched_copies = 4;
  static constexpr std::int64_t n_batch = 2048;  // common_params.n_batch default: the ubatches one batch pipelines
};

// The ggml back end that holds llama.cpp's GPU buffers. One graph and one KV layout on all of them; the buffer types
// differ (read at ggml-org/llama.cpp master of late 2025, unchanged in these functions since early 2024):
//   cuda, rocm  ggml/src/ggml-cuda/ggml-cuda.cu (HIP builds compile the same file; buffers log as ROCm0):
//               ggml_backend_cuda_buffer_type_get_alloc_size pads a quantized tensor whose rows are not a multiple
//               of MATRIX_ROW_PADDING (512) by the rest of one row, so the matmul kernels may read past its end
//               (llama_cpp_row_padding); get_alignment 128; no size limit on one allocation
//   vulkan      ggml/src/ggml-vulkan/ggml-vulkan.cpp: get_alloc_size is ggml_nbytes (no padding), get_alignment
//               minStorageBufferOffsetAlignment, get_max_size suballocation_block_size: weights and KV are split into
//               buffers of that size, but one compute tensor must fit one allocation (maxMemoryAllocationSize, until
//               PR #16354 of 2025-09-30 maxBufferSize: 4 GiB on AMD's and Intel's drivers): the f32 scores without
//               flash attention are the largest, and above it the start-up fails, "failed to allocate compute pp
//               buffers" (llama.cpp issues #15009, #12728, #18160)
//   metal       ggml/src/ggml-metal: ggml_nbytes; the model buffer maps the file from the first to the last tensor
//               it holds (ggml_backend_metal_buffer_from_ptr, rounded to pages), which is every offloaded tensor in
//               files whose token embeddings come first; recommendedMaxWorkingSetSize bounds the wired total
//               (hardware.h metal_working_set)
enum class LlamaCppBackend { cuda, rocm, vulkan, metal };
inline constexpr std::array<Spelling<LlamaCppBackend>, 4> llama_cpp_backend_names{{{LlamaCppBackend::cuda, "cuda"},
                                                                                  {LlamaCppBackend::rocm, "rocm"},
                                                                                  {LlamaCppBackend::vulkan, "vulkan"},
                                                                                  {LlamaCppBackend::metal, "metal"}}};
// As ggml's logs name them (CUDA0, ROCm0, Vulkan0, Metal).
inline const char* llama_cpp_backend_label(LlamaCppBackend b) {
  switch (b) {
    case LlamaCppBackend::rocm: return "ROCm";
    case LlamaCppBackend::vulkan: return "Vulkan";
    case LlamaCppBackend::metal: return "Metal";
    default: return "CUDA";
  }
}
// The one allocation a Vulkan compute tensor must fit: maxMemoryAllocationSize (maxBufferSize from PR #16354) as
// AMD's RADV and Intel's ANV report it, 4 GiB; ggml_vulkan logs "Requested buffer size exceeds device memory
// allocation limit" above it (issue #15009: 4,757,131,264 B on a Radeon 8060S; 0cc4m there: "we cannot allocate
// buffers larger than 4GB (on some drivers it can be even lower)").
inline constexpr double vulkan_max_allocation = 4.0 * 1073741824.0;

// Bytes ggml-cuda adds to a model buffer (ggml_backend_cuda_buffer_type_get_alloc_size): each quantized tensor whose
// row length is not a multiple of MATRIX_ROW_PADDING = 512 gets the rest of one row. GGUF stores a layer's routed
// experts as one 3-D tensor per projection (ffn_{gate,up,down}_exps), so an expert group pads once.
struct LlamaCppRowPadding {
  std::vector<double> per_layer;
  double output = 0;  // the output matrix (a tied head is the token embedding, in host memory: no padding)
};

inline LlamaCppRowPadding llama_cpp_row_padding(const ModelSpec& s, WeightFormat f) {
  constexpr std::int64_t matrix_row_padding = 512;
  const ParamInventory inv = param_inventory(s);
  const GgufTraits traits = gguf_traits(s);
  auto pad = [&](const ParamGroup& g, TensorRole role, std::int64_t layer) {
    if (!is_gguf_format(f) || !g.is_matrix() || g.in % matrix_row_padding == 0) return 0.0;
    const GgmlType t = gguf_tensor_type(f, role, layer, traits, g.in);
    if (t == GgmlType::f16) return 0.0;  // not quantized
    const double tensors = g.expert ? 1.0 : double(g.count);
    return tensors * double(matrix_row_padding - g.in % matrix_row_padding) * gguf::bits(t) / 8.0;
  };
  LlamaCppRowPadding p;
  for (std::size_t l = 0; l < inv.layers(); ++l) {
    double b = 0;
    for (const auto& g : inv.layer(l)) b += pad(g, role_of(g), static_cast<std::int64_t>(l));
    p.per_layer.push_back(b);
  }
  for (const auto& g : inv.head) p.output += pad(g, role_of(g), 0);
  return p;
}

// How llama.cpp spreads a model over several GPUs (common/arg.cpp -sm/--split-mode, -ts/--tensor-split; the
// assignment in src/llama-model.cpp load_tensors, read at ggml-org/llama.cpp master of 2026):
//   layer  (the default) whole layers per GPU: the L + 1 layers (repeating, then the output layer) that -ngl puts on
//          the GPUs are cut at the cumulative --tensor-split shares (default: each device's free memory,
//          ggml_backend_dev_memory), layer il going to the first device whose cumulative share exceeds
//          (il − i_gpu_start) / act_gpu_layers (std::upper_bound): the output layer lands on the last device. Each
//          layer's KV lives on its device (src/llama-kv-cache.cpp allocates a layer's cache with dev_layer(il)). The
//          devices run one after another (ggml_backend_sched splits the graph per device).
//   row    each GPU's buffer list starts with ggml-cuda's split buffer type (make_gpu_buft_list): the matrices of
//          every offloaded layer are cut by rows over all GPUs in the --tensor-split shares; the layer's other
//          tensors and its KV stay on the layer's device as in layer mode.
//   none   one GPU (--main-gpu): llama_prepare_model_devices keeps only that device.
enum class LlamaCppSplitMode { layer, row, none };
inline constexpr std::array<Spelling<LlamaCppSplitMode>, 3> llama_cpp_split_mode_names{
    {{LlamaCppSplitMode::layer, "layer"}, {LlamaCppSplitMode::row, "row"}, {LlamaCppSplitMode::none, "none"}}};

// The normalized cumulative split points of `devices` GPUs: --tensor-split's proportions, or equal shares (the free
// memory of identical GPUs). load_tensors: "sum and normalize the splits to get the split points".
inline std::vector<double> llama_cpp_split_points(const std::vector<double>& tensor_split, std::int64_t devices) {
  std::vector<double> points(static_cast<std::size_t>(devices), 1.0);
  if (!tensor_split.empty() && static_cast<std::int64_t>(tensor_split.size()) != devices)
    throw InputError("--tensor-split: " + std::to_string(tensor_split.size()) + " proportions for " +
                     std::to_string(devices) + " GPUs (--tp)");
  double sum = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double share = tensor_split.empty() ? 1.0 : tensor_split[i];
    if (!(share >= 0)) throw InputError("--tensor-split: proportions must be 0 or more");
    sum += share;
    points[i] = sum;
  }
  if (!(sum > 0)) throw InputError("--tensor-split: at least one proportion must be positive");
  for (double& p : points) p /= sum;
  return points;
}

// The device of each of the L + 1 layers (the output layer last): -1 for host memory, else load_tensors'
// get_layer_buft_list, upper_bound of (il − i_gpu_start) / act_gpu_layers in the split points, with i_gpu_start =
// max(L − n_gpu_layers, 0) and act_gpu_layers = min(n_gpu_layers, L + 1): -ngl counts repeating layers from the last,
// then the output layer (on a GPU only when n_gpu_layers > L), as the logs of the partly offloaded collected
// start-ups show ("offloaded 20/33 layers": 20 repeating layers' KV on the GPU).
inline std::vector<int> llama_cpp_layer_devices(std::int64_t layers, std::int64_t gpu_layers,
                                                const std::vector<double>& points) {
  const std::int64_t act = std::min(gpu_layers, layers + 1), start = std::max<std::int64_t>(layers - gpu_layers, 0);
  std::vector<int> dev(static_cast<std::size_t>(layers + 1), -1);
  for (std::int64_t il = start; il <= layers && il - start < act; ++il) {
    const auto at = std::upper_bound(points.begin(), points.end(), double(il - start) / double(act));
    dev[static_cast<std::size_t>(il)] = static_cast<int>(std::min<std::ptrdiff_t>(at - points.begin(), std::ptrdiff_t(points.size()) - 1));
  }
  return dev;
}

// llama.cpp flags that change memory, under its names (n_ctx is the workload's context; Ollama passes its own
// num_gpu, num_batch, OLLAMA_NUM_PARALLEL and OLLAMA_FLASH_ATTENTION to the runner as these).
struct LlamaCppSettings {
  std::optional<EngineVersion> version;      // --engine-version: the build (b4343), or Ollama's release
  std::optional<std::int64_t> n_gpu_layers;  // -ngl: repeating layers from the last, then the output (default by build)
  std::int64_t n_ubatch = LlamaCppProfile::n_ubatch;  // -ub
  bool flash_attn = true;                    // -fa (auto turns it on for CUDA)
  std::int64_t n_parallel = 1;               // -np: sequences sharing n_ctx
  std::optional<bool> fit;                   // --fit on|off (default by build: on from b7437)
  double fit_target_mib = 1024;              // --fit-target: MiB --fit leaves free (common/arg.cpp default 1024)
  std::optional<std::int64_t> n_cpu_moe;     // --n-cpu-moe N: routed experts of the first N layers in host memory
  std::vector<std::string> override_tensor;  // -ot PATTERN=CPU rules (regex_search on tensor names, first match wins)
  std::optional<Bytes> gpu_free;             // the device's free memory at start (default: its total less the context)
  double gpu_overhead_bytes = 0;             // Ollama: OLLAMA_GPU_OVERHEAD, memory its scheduler leaves unused
  // Ollama's own engine (runner --ollama-engine): cells per sequence a sliding layer keeps beyond its window
  // (kvcache.NewSWAMemCache(window, 4096) for gemma4 and gpt-oss, model/models/*/model.go); 0: the window alone
  // (llama.cpp, and Ollama's NewSWACache models such as gemma3). ollama_swa_memory.
  std::int64_t swa_memory = 0;
  std::optional<LlamaCppBackend> backend;    // --backend (default by the device: AMD rocm, Apple metal, else cuda)
  LlamaCppSplitMode split_mode = LlamaCppSplitMode::layer;  // -sm, over --tp GPUs
  std::vector<double> tensor_split;          // -ts: proportions per GPU (default: equal, the free memory of each)
  LlamaCppBackend backend_or_default() const { return backend.value_or(LlamaCppBackend::cuda); }
};

// One GPU's buffers as llama.cpp's log prints them: "CUDA<n> model buffer size", "KV buffer size", "compute buffer size".
struct LlamaCppDeviceBuffers {
  double weights = 0, kv = 0, compute = 0;
  double total() const { return weights + kv + compute; }
};

struct LlamaCppRelease {
  EngineVersion from;  // build number in major
  bool all_layers;     // -ngl not given: every layer on the GPU (else none: the CPU runs the model)
  bool fit;            // --fit on by default: layers and experts placed for the free memory
  const char* source;
};

// One buffer arithmetic from the oldest build checked against logs to the newest read: the buffers are unchanged
// across the llama_kv_cache_unified and llama_kv_cache rewrites. Builds from GGUF's first (b1015) on are accepted
// for the speed of their CUDA back end (throughput.h llama_cpp_cuda_builds, scored against published tables of
// 2023–24); their memory is taken as b4343's, which no log of theirs was checked against. What changed later is
// where the weights go when no flag says: every layer from b6646, placed for the free memory from b7437.
inline constexpr std::array<LlamaCppRelease, 4> llama_cpp_releases{{
    {{1015, 0, 0}, false, false, "GGUF files (2023-08): memory as b4343, not checked against these builds' logs"},
    {{4343, 0, 0}, false, false,
     "src/llama-kv-cache.cpp get_padding (flash_attn ? 256 : 32); src/llama-context.cpp graph_reserve; "
     "src/llama-model.cpp load_tensors — ggml-org/ci logs of b4343 and b4822, users' early-2025 builds"},
    {{6646, 0, 0}, true, false, "src/llama-model.cpp llama_model_default_params: n_gpu_layers 999 (all layers)"},
    {{7437, 0, 0}, true, true,
     "common/arg.cpp --fit on, --fit-target 1024 MiB: llama_params_fit lowers the layers on the GPU, keeping an MoE's "
     "experts in host memory first, until the projected buffers leave the target free"},
}};

// Where llama.cpp keeps each tensor: the last `gpu_layers` of the L + 1 layers (repeating layers from the last,
// then the output layer) on the GPU, token embeddings in host memory, and of each repeating layer the share of its
// routed experts (gate, up and down: thirds of equal size) overridden to host memory by --n-cpu-moe, -ot or --fit.
struct LlamaCppPlacement {
  std::int64_t gpu_layers = 0;
  std::vector<double> host_expert_share;  // per repeating layer: 0, 1/3, 2/3 or 1
  std::int64_t host_expert_layers() const {
    return std::count_if(host_expert_share.begin(), host_expert_share.end(), [](double x) { return x > 0; });
  }
};

// Expert shares in host memory from -ot rules. Each rule is PATTERN=BUFFER, matched (std::regex_search, ECMAScript,
// as src/llama-model-loader.cpp) against every tensor name, the first matching rule deciding; gpuplan models host
// buffers ("CPU") for the routed experts' tensors blk.N.ffn_{gate,up,down}_exps.weight (--n-cpu-moe N is the rule
// blk\.(0..N-1)\.ffn_(up|down|gate)_exps=CPU, --cpu-moe the rule for every layer: common/arg.cpp).
inline std::vector<double> llama_cpp_override_shares(const std::vector<std::string>& rules, std::int64_t layers) {
  struct Rule {
    std::regex pattern;
    bool host;
  };
  std::vector<Rule> parsed;
  for (const auto& r : rules) {
    const auto eq = r.rfind('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--override-tensor " + r + ": expected PATTERN=BUFFER");
    const std::string buffer = r.substr(eq + 1);
    if (buffer != "CPU" && buffer.rfind("CUDA", 0) != 0)
      throw InputError("--override-tensor " + r + ": gpuplan places tensors on CPU (host memory) or the GPU (CUDA0)");
    try {
      parsed.push_back({std::regex(r.substr(0, eq)), buffer == "CPU"});
    } catch (const std::regex_error&) {
      throw InputError("--override-tensor " + r + ": not a regular expression");
    }
  }
  std::vector<double> share(static_cast<std::size_t>(layers), 0.0);
  bool matched = false;
  for (std::int64_t l = 0; l < layers; ++l)
    for (const char* kind : {"gate", "up", "down"}) {
      const std::string name = "blk." + std::to_string(l) + ".ffn_" + kind + "_exps.weight";
      for (const auto& rule : parsed)
        if (std::regex_search(name, rule.pattern)) {
          matched = true;
          if (rule.host) share[static_cast<std::size_t>(l)] += 1.0 / 3.0;
          break;
        }
    }
  if (!parsed.empty() && !matched)
    throw InputError("--override-tensor: no rule names a routed-expert tensor (blk.N.ffn_{gate,up,down}_exps), the "
                     "only tensors gpuplan places by rule");
  return share;
}

// Ollama runs llama.cpp with its own defaults: num_ctx by release (2048; 4096 from v0.6.7, its release notes; from
// v0.15.5, 2026-02-03, by the GPU's memory: docs/context-length.mdx at 948f693), clamped to the model's trained
// context; the KV cache holds num_ctx × OLLAMA_NUM_PARALLEL (default 1) cells; batch min(num_batch 512, num_ctx);
// flash attention auto (on where the model supports it since late 2025: ollama/ollama #12473, #13448;
// OLLAMA_FLASH_ATTENTION=0 turns it off).
struct OllamaRelease {
  EngineVersion from;
  std::int64_t num_ctx;   // the default; 0: by the GPU's memory
  const char* source;
};

inline constexpr std::array<OllamaRelease, 3> ollama_releases{{
    {{0, 1, 0}, 2048, "docs/modelfile.md: num_ctx default 2048"},
    {{0, 6, 7}, 4096, "release v0.6.7: default context length 4096 (commit 44b466e)"},
    {{0, 15, 5}, 0, "docs/context-length.mdx: 4k below 24 GiB of VRAM, 32k up to 48 GiB, 256k above"},
}};
inline constexpr EngineVersion ollama_newest{0, 21, 0};  // the newest read (llm/server.go LoadRequest at 0.21)

struct OllamaProfile {
  static constexpr std::int64_t num_batch = 512;
  // The scheduler offloads the most layers whose buffers leave this much of a CUDA or ROCm GPU's free memory
  // (discover/gpu.go cudaMinimumMemory and rocmMinimumMemory, 457 MiB, from 0.1 through 0.12), plus
  // OLLAMA_GPU_OVERHEAD. On a Mac 512 MiB (gpu/gpu_darwin.go, later discover/gpu_darwin.go, metalMinimumMemory,
  // since ollama/ollama PR #4068 "metal: add 512MiB to minimum memory"), of a total and free memory that are both
  // recommendedMaxWorkingSetSize (getRecommendedMaxVRAM).
  static constexpr double minimum_memory = 457 * 1048576.0;
  static constexpr double metal_minimum_memory = 512 * 1048576.0;
  static double minimum_memory_for(LlamaCppBackend b) { return b == LlamaCppBackend::metal ? metal_minimum_memory : minimum_memory; }
  static const OllamaRelease& release(const std::optional<EngineVersion>& v) {
    return pick_release(ollama_releases, v ? v : std::optional(ollama_newest), "Ollama");
  }
  // Default num_ctx: the release's, or by VRAM: 4k below 24 GiB, 32k up to 48 GiB, 256k above.
  static std::int64_t default_num_ctx(std::optional<Bytes> vram, const OllamaRelease& r = ollama_releases.back()) {
    if (r.num_ctx > 0) return r.num_ctx;
    if (!vram) return 4096;
    const double gib = vram->in(unit::bytes) / 1073741824.0;
    return gib < 24 ? 4096 : gib < 48 ? 32768 : 262144;
  }
};

inline std::int64_t llama_cpp_pad(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

// Whether llama.cpp gives the model's windowed layers a cache of their own: only models that interleave windowed
// and full layers (a uniform window, as Mistral 7B v0.1 or Phi-3 declare, is run as full attention).
inline bool llama_cpp_iswa(const ModelSpec& s) {
  bool sliding = false, full = false;
  for (std::int64_t l = 0; l < s.layers; ++l) (s.is_sliding_layer(l) ? sliding : full) = true;
  return sliding && full && !s.chunked_attention;
}

// Cells of a layer's cache for a context of n_ctx tokens (and n_seq sequences sharing it); `iswa`:
// llama_cpp_iswa(s), computed once per model. A sliding layer keeps its window per sequence and one ubatch
// (src/llama-kv-cache-iswa.cpp: size_swa = min(size_base, GGML_PAD(n_swa·n_seq + n_ubatch, n_pad))); Ollama's engine
// keeps `swa_memory` cells per sequence where that is more than the window, and the whole context where that is not
// less than one sequence's (kvcache/causal.go Init: cacheSize = maxSequences·swaMemorySize + maxBatch, or
// maxSequences·capacity once swaMemorySize reaches capacity).
inline double llama_cpp_cells(const ModelSpec& s, bool iswa, std::int64_t layer, std::int64_t n_ctx,
                              std::int64_t n_seq, std::int64_t ubatch, bool flash_attn, std::int64_t swa_memory = 0) {
  const std::int64_t pad = LlamaCppProfile::kv_pad(flash_attn);
  const std::int64_t base = llama_cpp_pad(n_ctx, pad);
  if (!iswa || !s.is_sliding_layer(layer)) return double(base);
  const std::int64_t kept = std::max(s.sliding_window, swa_memory);
  if (swa_memory > 0 && kept >= n_ctx / std::max<std::int64_t>(n_seq, 1)) return double(base);
  return double(std::min(base, llama_cpp_pad(kept * n_seq + ubatch, pad)));
}

// What Ollama's engine keeps per sequence of a sliding layer (LlamaCppSettings::swa_memory): gemma4 and gpt-oss
// build their caches with kvcache.NewSWAMemCache(window, 4096, ...) (ollama model/models/gemma4/model.go,
// model/models/gptoss/model.go, 0.20/0.21); the other models it runs keep the window.
inline std::int64_t ollama_swa_memory(const ModelSpec& s) {
  const std::string& t = s.model_type;
  return t == "gemma4_text" || t == "gemma4" || t == "gpt_oss" || t == "gpt-oss" ? 4096 : 0;
}

// The compute buffer of the GPU (f32 graph of one ubatch). `host_output_bytes`: the output layer's weights when they
// stay in host memory (0 when the GPU holds them): for ubatches of op_offload_min_batch tokens or more the GPU still
// runs the output matmul, on a copy of those weights (Pythia 2.8B Q4_0 at -ngl 10: 100.74 MiB of Q6_K output, the
// 98.25 MiB of logits and a 5 MiB row = the logged 203.99 MiB, with or without flash attention).
// `layers_here`: the GPU holds repeating layers (with -ngl 0 it only runs offloaded matmuls); `output_here`: it runs
// the output layer (over several GPUs, the last one: the others reserve their attention phase alone).
inline double llama_cpp_compute_bytes(const ModelSpec& s, double cells, std::int64_t ubatch, bool flash_attn,
                                      double host_output_bytes, bool layers_here = true, bool output_here = true) {
  const double ub = double(ubatch), h = double(s.hidden);
  const double scores = flash_attn ? 0.0 : double(s.heads) * cells * ub * 4.0;
  // The KQ mask is an f32 input [n_kv, n_tokens] (src/llama-graph.cpp, llm_graph_input_attn_kv: GGML_TYPE_F32);
  // flash attention takes an f16 cast of it beside ("self_kq_mask_cnv = cparams.flash_attn ? ggml_cast(..., F16)").
  const double mask = cells * ub * (flash_attn ? 4.0 + 2.0 : 4.0);
  const double fused_qkv = s.family == Family::gpt_neox ? double(s.q_dim() + 2 * s.kv_dim()) : 0.0;
  // The widest layer's attention (Gemma 4's full-attention layers: global_head_dim, twice the sliding ones').
  std::int64_t q_dim = s.q_dim();
  for (const LayerShape& sh : s.layer_shapes) q_dim = std::max(q_dim, s.heads * sh.head_dim);
  // Gemma 4 E2B/E4B: the per-layer inputs, f32 [per_layer_input, n_tokens, n_layer], are built before the first
  // layer and read by every one (src/models/gemma4.cpp project_per_layer_inputs), so they stay live beside it.
  const double per_layer_inputs = double(s.per_layer_input) * double(s.layers) * ub * 4.0;
  const double rows = LlamaCppProfile::attention_hidden_rows * h +
                      LlamaCppProfile::attention_width_rows * double(q_dim) + fused_qkv;
  const double attention = layers_here ? scores + mask + rows * ub * 4.0 + per_layer_inputs : 0.0;
  const double logits = double(s.vocab) * ub * 4.0 + LlamaCppProfile::output_hidden_rows * h * ub * 4.0;
  if (!output_here) return attention;  // another GPU of a split runs the output layer
  if (host_output_bytes <= 0) return std::max(attention, logits);
  if (ubatch < LlamaCppProfile::op_offload_min_batch) return attention;
  return std::max(attention, host_output_bytes + logits);
}

}  // namespace gpuplan
