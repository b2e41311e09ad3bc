// gpuplan infer: options → estimate_inference_memory (+ throughput, cost, solve modes) → report → renderer.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "app.h"
#include "format_units.h"
#include "model_source.h"
#include "render.h"

namespace gpuplan::cli {

void setup_infer(CLI::App& app, InferOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("infer", "Serving: weights by format, KV cache, engine overhead, throughput, $ per token");
  cmd->footer(
      "Examples:\n"
      "  gpuplan infer --model llama-3.1-8b --batch 8 --prompt-len 4096 --new-tokens 256\n"
      "  gpuplan infer --model llama-3.1-70b --weights awq-int4 --kv-dtype fp8 --profile vllm --gpu h100 --tp 2\n"
      "  gpuplan infer --model llama-3.1-8b --weights q4_k_m --profile llama.cpp --gpu rtx-4090 --max-context\n"
      "  gpuplan infer --config config.json --precision fp16 --format json\n"
      "  gpuplan infer --gpu h100 -- vllm serve Qwen/Qwen3-8B --max-model-len 32768 --gpu-memory-utilization 0.9\n"
      "  gpuplan infer --gpu rtx-4090 -- OLLAMA_NUM_PARALLEL=2 OLLAMA_KV_CACHE_TYPE=q8_0 ollama run llama3.1:8b\n"
      "After --, a serving command (vllm serve, python -m vllm.entrypoints.openai.api_server, python -m\n"
      "sglang.launch_server, llama-server, llama-cli, ollama run with its OLLAMA_* environment) is read into the flags\n"
      "above; gpuplan's own flags win. docs/launch.md lists what maps.");
  if (with_options) {
    add_infer_options(*cmd, o);
    cmd->add_option("--from", "An Ollama Modelfile to read (FROM and PARAMETER lines)");
  }
}

void add_infer_options(CLI::App& cmd, InferOptions& o) {
  add_model_options(cmd, o.model);
  auto& w = o.workload;
  cmd.add_option("--batch,--concurrency", w.batch, "Concurrent sequences (default " + std::to_string(defaults::batch) + ")");
  add_length_option(cmd, "--prompt-len", w.prompt_len, "Prompt tokens per sequence (1024, 1k)", defaults::prompt_len);
  add_length_option(cmd, "--new-tokens", w.new_tokens, "Generated tokens per sequence", defaults::new_tokens);
  add_length_option(cmd, "--context,--max-model-len,--n-ctx,--ctx-size,--num-ctx", o.context,
                 "KV tokens per sequence to plan for (default prompt + new tokens; vLLM: max_model_len, default the "
                 "model's; llama.cpp: -c, the total over --parallel; Ollama: num_ctx per request, default by GPU memory)");
  cmd.add_option("--precision", o.precision, "Activations (and default weights): bf16 (default) | fp16 | fp32");
  cmd.add_option("--weights,--quant", o.weights,
                  "Weight format: fp32, bf16, fp16, fp8, int8, gptq-int4, awq-int4, nf4, nf4-dq, q8_0, q6_k, q5_k_m, "
                  "q4_k_m, q4_k_s, q4_0, q3_k_m, q2_k, q5_1, q5_0, q4_1, mxfp4, nvfp4 (default: --precision)");
  cmd.add_option("--group-size", w.group_size, "GPTQ/AWQ quantisation group size (default 128)");
  cmd.add_option("--kv-dtype", o.kv_dtype, "KV cache: fp16 | bf16 | fp32 | fp8 | int8 | int4 (default: --precision)");
  cmd.add_option("--attention", o.attention, "sdpa | flash | eager (default sdpa)");
  cmd.add_option("--profile", o.profile, "Engine: pytorch (default, HF generate) | vllm | sglang | llama.cpp | ollama | none");
  cmd.add_option("--tp,--gpus", w.tp, "Tensor-parallel GPUs: weights and KV heads split across them (default 1; "
                                      "llama.cpp/Ollama: the GPUs --split-mode spreads the model over)");
  cmd.add_option("--split-mode,--sm", o.split_mode,
                 "llama.cpp -sm over --tp GPUs: layer (default: whole layers per GPU, run one after another) | row "
                 "(matrices cut by rows over the GPUs) | none (one GPU)");
  cmd.add_option("--tensor-split,--ts", o.tensor_split,
                 "llama.cpp -ts: proportions per GPU, comma-separated (e.g. 3,1; default: equal, identical GPUs' free memory)");
  cmd.add_option("--engine-version", o.engine_version,
                 "The engine release whose defaults and arithmetic to follow: X.Y[.Z] for vLLM (0.2 on), SGLang (0.4 on) "
                 "and Ollama; a build (b1015 on; memory as b4343 before it) for llama.cpp (default: the newest modelled)");
  add_length_option(cmd, "--chunked-prefill,--max-num-batched-tokens", o.chunked_prefill,
                    "Prefill in chunks of N tokens (vLLM: max_num_batched_tokens, default by release and GPU: 8192 on ≥70 GiB "
                    "GPUs but A100, else 2048; V0: the whole max_model_len)");
  cmd.add_option("--mem-fraction-static", w.sglang.mem_fraction_static,
                 "SGLang: share of the free memory for weights + token pool (default: its release's, for the GPU and TP)");
  cmd.add_option("--max-running-requests", w.sglang.max_running_requests,
                 "SGLang: rows of the req_to_token table (default: by the pool, 2048–4096)");
  cmd.add_option("--max-num-seqs", w.vllm.max_num_seqs, "vLLM: max_num_seqs (default 1024 on ≥70 GiB GPUs but A100, else 256)");
  cmd.add_option("--gpu-memory-utilization", w.vllm.gpu_memory_utilization, "vLLM's share of the CUDA total (default 0.90)");
  cmd.add_flag("--enable-expert-parallel", w.vllm.enable_expert_parallel,
               "vLLM: experts whole on each rank instead of sliced over --tp");
  cmd.add_flag("--language-model-only", o.language_model_only,
               "vLLM/SGLang: a multimodal checkpoint's vision encoder is not loaded (vLLM's --language-model-only, or "
               "--limit-mm-per-prompt with every modality 0); by default it is, in 16 bit, beside the language model");
  cmd.add_flag("--enable-prefix-caching", w.vllm.enable_prefix_caching,
               "vLLM: prefix caching on; for hybrid (linear-attention) models from 0.16 each linear layer keeps two "
               "state pages per request (mamba_cache_mode align); it is opt-in for them");
  cmd.add_flag("--flashinfer-sampler", w.vllm.flashinfer_sampler,
               "vLLM V1: FlashInfer installed and VLLM_USE_FLASHINFER_SAMPLER not 0 (its log says 'Using FlashInfer for "
               "top-p & top-k sampling'): the sampler warm-up runs FlashInfer's top-k/top-p");
  cmd.add_option("--gpu-layers,--n-gpu-layers", o.gpu_layers,
                 "llama.cpp -ngl: repeating layers on the GPU counted from the last, then the output layer (default by "
                 "build: --fit's from b7437 with --gpu, all from b6646, none before)");
  cmd.add_option("--fit", o.llama_fit, "llama.cpp --fit: on (default from b7437) places layers and experts for the free memory | off");
  cmd.add_option("--fit-target", w.llama_cpp.fit_target_mib, "llama.cpp --fit-target: MiB --fit leaves free (default 1024)");
  cmd.add_option("--gpu-free", o.gpu_free, "llama.cpp: the GPU's free memory at start (default: its total less the "
                                           "CUDA context), what --fit places for");
  cmd.add_option("--gpu-overhead", o.gpu_overhead, "Ollama OLLAMA_GPU_OVERHEAD: memory its scheduler leaves unused "
                                                   "(bytes or a size; default 0)");
  cmd.add_option("--n-cpu-moe", o.n_cpu_moe, "llama.cpp --n-cpu-moe: routed experts of the first N layers in host memory");
  cmd.add_option("--host-memory-bandwidth", o.host_memory_bandwidth,
                 "llama.cpp: the host's memory bandwidth for weights left there (default 89.6GB/s: dual-channel "
                 "DDR5-5600, 2 × 64 bit × 5600 MT/s)");
  cmd.add_option("--host-memory", o.host_memory,
                 "llama.cpp/Ollama: the host's free memory (Ollama: free RAM + free swap) for what stays on the CPU; "
                 "the setup does not fit when that part needs more (default: not checked)");
  cmd.add_flag("--cpu-moe", o.cpu_moe, "llama.cpp --cpu-moe: every layer's routed experts in host memory");
  cmd.add_option("--override-tensor", w.llama_cpp.override_tensor,
                 "llama.cpp -ot PATTERN=CPU (repeatable, or comma-separated): tensors matching PATTERN in host memory "
                 "(gpuplan places routed experts, e.g. exps=CPU)")
      ->delimiter(',');
  add_length_option(cmd, "--ubatch", w.llama_cpp.n_ubatch, "llama.cpp -ub: tokens per compute ubatch (default 512)");
  cmd.add_option("--flash-attn", o.flash_attn,
                 "llama.cpp -fa / OLLAMA_FLASH_ATTENTION: on (default: both engines' auto enables it on CUDA) | off");
  cmd.add_option("--backend", o.llama_backend,
                 "llama.cpp / Ollama ggml back end: cuda | rocm | vulkan | metal (default by --gpu: AMD rocm, Apple "
                 "metal, else cuda)");
  cmd.add_option("--parallel,--num-parallel", w.llama_cpp.n_parallel,
                 "llama.cpp -np / OLLAMA_NUM_PARALLEL: sequences sharing the context (default 1)");
  auto* mb = cmd.add_flag("--max-batch", o.max_batch, "Solve for the largest batch that fits on --gpu");
  auto* mc = cmd.add_flag("--max-context", o.max_context, "Solve for the longest context that fits on --gpu");
  mb->excludes(mc);
  // The defaults said are the library's own (throughput.h Efficiency).
  cmd.add_option("--mem-efficiency", o.mem_efficiency,
                 "Share of peak bandwidth decode reaches (default " + detail::decimal(Efficiency{}.memory, 2) + ")");
  cmd.add_option("--compute-efficiency", o.compute_efficiency,
                 "Share of peak FLOP/s prefill reaches (default " + detail::decimal(Efficiency{}.compute, 2) + ")");
  cmd.add_option("--power-limit", o.power_limit,
                 "The GPU's board power limit in W where set below its TDP (nvidia-smi -pl): a matmul rate measured "
                 "power-bound scales with it");
  cmd.add_option("--price-per-gpu-hour", o.price_per_gpu_hour, "Your own price in USD per GPU-hour");
  cmd.add_option("--provider", o.provider, "Price on this provider's offerings only");
  cmd.add_flag("--spot", o.spot, "Use published spot prices");
  cmd.add_option("--format", o.format, "table (default) | json | csv | md");
  add_fit_options(cmd, o.fit);
  add_limit_options(cmd, o.limits, false);
}

ExitCode run_infer(const InferOptions& o, std::ostream& out, std::ostream& err) {
  const Format format = parse_format(o.format);
  nlohmann::json report = infer_report(o);
  if (!o.from.is_null()) report["from"] = o.from;
  return emit_report(report, o.limits, format, &render_infer_table, out, err);
}

namespace {

// --host-memory: the part llama.cpp or Ollama leaves on the CPU (weights, KV of layers there) against what the host can
// give. Ollama refuses to load past free RAM + free swap ("model requires more system memory (…) than is available
// (…)", llm/server.go, v0.12–0.20, not on macOS); llama.cpp maps the file (mmap) and would read the rest from storage
// at every token, a speed gpuplan does not model: both are "does not fit".
void host_fit(const std::string& given, Profile profile, const InferenceEstimate& est, nlohmann::json& report) {
  if (!llama_cpp_engine(profile)) throw InputError("--host-memory applies to --profile llama.cpp and ollama");
  const Bytes capacity = parse_bytes(given);
  const Bytes required = est.serving.host_memory.value_or(Bytes(0));
  const bool fits = required <= capacity;
  report["fit"]["host"] = {{"capacity_bytes", capacity.in(unit::bytes)}, {"required_bytes", required.in(unit::bytes)},
                           {"fits", fits}};
  report["fit"]["fits"] = report["fit"]["fits"].get<bool>() && fits;
  if (!fits)
    report["assumptions"].push_back(
        profile == Profile::ollama
            ? std::string("Ollama refuses to load: the model requires more system memory than --host-memory gives")
            : std::string("llama.cpp would map the rest of the file and read it from storage at every token (not "
                          "modelled): more host memory than --host-memory gives"));
}

// -ts 3,1 (llama.cpp also takes 3/1): one non-negative proportion per GPU; checked against --tp by the estimate.
std::vector<double> parse_tensor_split(const std::string& text) {
  std::vector<double> shares;
  if (text.empty()) return shares;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find_first_of(",/", start), text.size());
    const std::string item = text.substr(start, end - start);
    char* rest = nullptr;
    const double v = std::strtod(item.c_str(), &rest);
    if (item.empty() || rest != item.c_str() + item.size() || !(v >= 0) || !std::isfinite(v))
      throw InputError("--tensor-split " + text + ": expected non-negative proportions separated by commas (3,1)");
    shares.push_back(v);
    start = end + 1;
  }
  return shares;
}

}  // namespace

nlohmann::json infer_report(const InferOptions& o) {
  InferenceWorkload w = o.workload;
  w.precision = parse_enum<Precision>(precision_names, o.precision, "precision");
  if (w.precision != Precision::bf16 && w.precision != Precision::fp16 && w.precision != Precision::fp32)
    throw InputError("infer --precision: expected bf16, fp16 or fp32");
  w.hf.attention = parse_enum<Attention>(attention_names, o.attention, "attention");
  w.profile = parse_enum<Profile>(profile_names, o.profile, "profile");
  w.hf.prefill_chunk = o.chunked_prefill;
  w.vllm.max_num_batched_tokens = o.chunked_prefill;
  if (!o.engine_version.empty()) {
    if (w.profile == Profile::pytorch || w.profile == Profile::none || w.profile == Profile::deepspeed)
      throw InputError("--engine-version applies to the serving engines (--profile vllm, sglang, llama.cpp, ollama)");
    const EngineVersion v = parse_engine_version(o.engine_version, w.profile == Profile::llama_cpp);
    w.vllm.version = w.sglang.version = w.llama_cpp.version = v;
  }
  if (!o.weights.empty()) w.weights = parse_enum<WeightFormat>(weight_format_names, o.weights, "weight format");
  if (!o.kv_dtype.empty()) w.kv = parse_enum<KvDtype>(kv_dtype_names, o.kv_dtype, "KV dtype");
  if (o.context < 0) throw InputError("--context must be positive");
  if (o.context > 0) w.context = o.context;
  if (o.gpu_layers >= 0) w.llama_cpp.n_gpu_layers = o.gpu_layers;
  if (o.flash_attn != "on" && o.flash_attn != "off") throw InputError("--flash-attn: expected on or off");
  w.llama_cpp.flash_attn = o.flash_attn == "on";
  if (o.gpu_layers < -1) throw InputError("--gpu-layers must be 0 or more");
  if (!o.llama_fit.empty()) {
    if (o.llama_fit != "on" && o.llama_fit != "off") throw InputError("--fit: expected on or off");
    w.llama_cpp.fit = o.llama_fit == "on";
  }
  if (!o.llama_backend.empty())
    w.llama_cpp.backend = parse_enum<LlamaCppBackend>(llama_cpp_backend_names, o.llama_backend, "backend");
  if (!o.split_mode.empty() || !o.tensor_split.empty()) {
    if (!llama_cpp_engine(w.profile)) throw InputError("--split-mode / --tensor-split apply to --profile llama.cpp and ollama");
    if (!o.split_mode.empty())
      w.llama_cpp.split_mode = parse_enum<LlamaCppSplitMode>(llama_cpp_split_mode_names, o.split_mode, "split mode");
    w.llama_cpp.tensor_split = parse_tensor_split(o.tensor_split);
  }
  if (!(w.llama_cpp.fit_target_mib >= 0 && w.llama_cpp.fit_target_mib <= 1e7)) throw InputError("--fit-target must be 0 or more MiB");
  if (!o.gpu_free.empty()) w.llama_cpp.gpu_free = parse_bytes(o.gpu_free);
  if (!o.gpu_overhead.empty()) w.llama_cpp.gpu_overhead_bytes = parse_bytes(o.gpu_overhead).in(unit::bytes);
  if (o.n_cpu_moe < -1) throw InputError("--n-cpu-moe must be 0 or more");
  if (o.n_cpu_moe >= 0) w.llama_cpp.n_cpu_moe = o.n_cpu_moe;
  if (o.cpu_moe) w.llama_cpp.n_cpu_moe = std::numeric_limits<std::int64_t>::max();
  // Dual-channel DDR5-5600: 2 channels × 64 bit × 5600 MT/s = 89.6 GB/s (JEDEC JESD79-5 speed bin), a desktop's.
  const ByteRate host_bandwidth = o.host_memory_bandwidth.empty() ? ByteRate(89.6e9) : parse_byte_rate(o.host_memory_bandwidth);
  if (!(host_bandwidth.in(unit::bytes_per_s) > 0)) throw InputError("--host-memory-bandwidth must be positive");
  const ModelSource source = resolve_model_source(o.model);
  const ModelSpec& spec = source.spec;
  w.stored = source.stored_language();
  // vLLM and SGLang load a multimodal checkpoint's vision encoder unless told not to (bf16, as stored).
  const bool loads_encoder = (w.profile == Profile::vllm || w.profile == Profile::sglang) && !o.language_model_only;
  if (loads_encoder) w.vision_encoder = Bytes(2.0 * double(source.vision_params)), w.vision = source.vision;
  // A preset is served as its checkpoint ships (gpt-oss in MXFP4, DeepSeek-V3 in FP8) unless --weights says otherwise.
  const bool as_shipped = !w.weights && !w.stored && !source.shipped_weights.empty();
  if (as_shipped) w.weights = parse_enum<WeightFormat>(weight_format_names, source.shipped_weights, "weight format");
  const Catalog cat = load_catalog(o.fit.catalogs);
  std::optional<Device> unlisted;
  const Device* device = fit_device(o.fit, cat, unlisted);
  // On a Mac, llama.cpp's Metal back end may take recommendedMaxWorkingSetSize of the unified memory, not all of it.
  std::optional<Device> metal;
  if (device && device->vendor == "Apple" && llama_cpp_engine(w.profile)) {
    metal = *device;
    metal->usable_memory = metal_working_set(device->capacity());
    device = &*metal;
  }
  if (device) {
    w.device_memory = device->capacity();
    w.cuda_total = device->cuda_total_memory;
    w.device_is_a100 = device->id.rfind("a100", 0) == 0;
    w.device_is_rocm = device->vendor == "AMD";
    // llama.cpp's back end for the device unless --backend names one: HIP on AMD, Metal on a Mac, else CUDA.
    if (!w.llama_cpp.backend)
      w.llama_cpp.backend = device->vendor == "AMD"     ? LlamaCppBackend::rocm
                            : device->vendor == "Apple" ? LlamaCppBackend::metal
                                                        : LlamaCppBackend::cuda;
    w.link = gpu_link_of(device->interconnect);
    w.mxfp4_kernel = mxfp4_backend(device->memory_type.rfind("HBM", 0) == 0, device->peak.fp8.has_value(),
                                   device->peak.fp4.has_value());
  }
  if ((o.max_batch || o.max_context) && !device) throw InputError("--max-batch and --max-context need --gpu");

  // Solve modes: the largest batch or context whose per-GPU estimate fits the device (vLLM: its pool's capacity).
  nlohmann::json solve = nullptr;
  auto fits = [&](const InferenceWorkload& v) {
    const auto e = estimate_inference_memory(spec, v);
    if (v.profile == Profile::vllm || v.profile == Profile::sglang)
      return e.serving.starts.value_or(false) && *e.serving.max_concurrency >= double(v.batch);
    return e.memory.runs_in <= device->capacity();
  };
  if (o.max_batch) {
    const std::int64_t best = largest_fitting(1'000'000, [&](std::int64_t b) { InferenceWorkload v = w; v.batch = b; return fits(v); });
    if (best == 0) throw InputError("even one sequence does not fit on " + device->id);
    solve = {{"max_batch", best}};
    w.batch = best;
  }
  if (o.max_context) {
    const std::int64_t cap = std::max<std::int64_t>(spec.max_positions > 0 ? spec.max_positions : 10'000'000, 1);
    const std::int64_t best = largest_fitting(cap, [&](std::int64_t c) {
      InferenceWorkload v = w;
      v.context = c;
      v.prompt_len = std::min<std::int64_t>(w.prompt_len, c);
      return fits(v);
    });
    if (best == 0) throw InputError("no context fits on " + device->id + " at batch " + std::to_string(w.batch));
    solve = {{"max_context", best}, {"limit", spec.max_positions > 0 ? "the model's max_position_embeddings" : "10M tokens"}};
    w.context = best;
    w.prompt_len = std::min<std::int64_t>(w.prompt_len, best);
  }

  const InferenceEstimate est = estimate_inference_memory(spec, w);
  nlohmann::json report = inference_json(spec, w, est);
  report["model"]["source"] = source.json();
  if (loads_encoder && source.vision_params > 0)
    report["assumptions"].push_back("the vision encoder is loaded beside the language model: " +
                                    std::to_string(source.vision_params) + " parameters in bf16, " +
                                    detail::decimal(2.0 * double(source.vision_params) / 1073741824.0, 2) +
                                    " GiB (--language-model-only leaves it out)");
  if (as_shipped)
    report["assumptions"].push_back("weights as the checkpoint is released: " + source.shipped_weights +
                                    " (--weights bf16 for the 16-bit model)");
  report["solve"] = solve;
  if (metal)
    report["assumptions"].push_back("Metal: llama.cpp's buffers may take recommendedMaxWorkingSetSize, " +
                                    detail::decimal(metal->capacity().in(unit::bytes) / 1073741824.0, 2) +
                                    " GiB of the unified memory (3/4 from 36 GB, 2/3 below; raised by "
                                    "sysctl iogpu.wired_limit_mb)");
  // --gpu-free: other processes hold the rest. llama.cpp measures it after creating its CUDA context, Ollama before
  // starting its runner.
  std::optional<Device> shared;
  if (device && w.llama_cpp.gpu_free && llama_cpp_engine(w.profile)) {
    shared = *device;
    const Bytes own = w.profile == Profile::ollama ? Bytes(0) : LlamaCppProfile::cuda_context;
    shared->usable_memory = std::min(device->capacity(), *w.llama_cpp.gpu_free + own);
    device = &*shared;
    report["assumptions"].push_back("--gpu-free: the verdict is against " +
                                    detail::decimal(device->capacity().in(unit::bytes) / 1073741824.0, 2) +
                                    " GiB, the free memory" + (own.in(unit::bytes) > 0 ? " and the CUDA context" : ""));
  }
  // --power-limit: a board held below its TDP (hardware.h at_power_limit).
  std::optional<Device> limited;
  if (o.power_limit != 0) {
    if (!device) throw InputError("--power-limit needs --gpu");
    limited = at_power_limit(*device, o.power_limit);
    const double share = std::min(1.0, o.power_limit / *device->tdp_watts);
    report["assumptions"].push_back(
        "--power-limit " + detail::decimal(o.power_limit, 0) + " W of the " + detail::decimal(*device->tdp_watts, 0) +
        " W TDP: " +
        (device->matmul_efficiency || device->matmul_burst_efficiency
             ? "the measured matmul rate at " + detail::decimal(share * 100, 1) + " % (a GEMM's energy per FLOP fixed)"
             : "no measured matmul rate to scale: not taken as power-bound"));
    device = &*limited;
  }
  if (device) {
    FitVerdict fit = fit_on(*device, est.memory.runs_in);
    // vLLM and SGLang: the setup fits when the engine starts (its pool holds one max_model_len request) and the
    // pool holds the requested concurrency at this context.
    std::string reason;  // why the engine's verdict differs from the memory's, said on the verdict's own line
    if (est.serving.starts) {
      const bool served = *est.serving.starts && est.serving.max_concurrency.value_or(0) >= double(w.batch);
      if (fit.fits && !*est.serving.starts) reason = "the engine does not start (the assumptions say why)";
      else if (fit.fits && !served)
        reason = "the KV pool holds " + detail::decimal(*est.serving.max_concurrency, 2) + " sequences of " +
                 std::to_string(est.context_tokens) + " tokens, fewer than --concurrency " + std::to_string(w.batch);
      fit.fits = fit.fits && served;
      if (*est.serving.starts && !served)
        report["assumptions"].push_back("the pool holds " + detail::decimal(*est.serving.max_concurrency, 2) +
                                        " sequences of " + std::to_string(est.context_tokens) + " tokens, fewer than " +
                                        "--concurrency " + std::to_string(w.batch) + ": it does not fit");
    }
    report["fit"] = fit_json(fit, w.tp);
    if (!reason.empty()) report["fit"]["reason"] = reason;
    if (!o.host_memory.empty()) host_fit(o.host_memory, w.profile, est, report);
    Efficiency eff;
    if (o.mem_efficiency != 0) eff.memory = o.mem_efficiency;
    if (o.compute_efficiency != 0) eff.compute = o.compute_efficiency;
    // Decode reads each sequence's own cache at its average length over the generation, not what the engine reserves.
    const double avg_ctx = sequence_decode_context(double(w.prompt_len), double(w.new_tokens), double(est.context_tokens));
    // A rate the catalog does not have (Apple M3/M4, GB10 beyond FP4, a --gpu-memory device) is not guessed: with
    // the bandwidth alone, decode's memory time (its step's lower bound); with neither, no speed at all.
    if (!(eff.memory > 0 && eff.memory <= 1)) throw InputError("efficiency factors must be in (0, 1]");
    const auto [peak, peak_format] = serving_peak(*device, est.weights);
    const double bandwidth = device->memory_bandwidth.in(unit::bytes_per_s);
    if (!peak) {
      report["cost"] = nullptr;
      report["throughput"] = nullptr;
      if (bandwidth > 0) {
        const double read = weight_bytes_read(spec, est.weights, est.weight_bytes.in(unit::bytes), double(w.batch));
        const double step = decode_read_seconds(*device, read, est.kv_bytes_per_token.in(unit::bytes), w.batch,
                                                avg_ctx, eff);
        report["throughput"] = {{"prefill_tokens_per_s", nullptr},
                                {"decode_tokens_per_s", double(w.batch) / step},
                                {"decode_tokens_per_s_per_sequence", 1.0 / step},
                                {"time_to_first_token_seconds", nullptr},
                                {"per_token_latency_seconds", step},
                                {"decode_bound", "memory bandwidth (no compute rate: the step's lower bound)"},
                                {"peak_flops_per_gpu", nullptr},
                                {"peak_format", peak_format},
                                {"memory_bandwidth_bytes_per_s", bandwidth},
                                {"efficiency", {{"memory", eff.memory}, {"compute", nullptr}}}};
      }
      report["assumptions"].push_back("no " + peak_format + " peak for " + device->id + ": " +
                                      (bandwidth > 0 ? "decode from the bandwidth alone (an upper bound on its speed); "
                                                       "prefill, time to first token and cost not estimated"
                                                     : "throughput and cost not estimated (--memory-bandwidth gives decode)"));
      return report;
    }
    ServingEngine engine(w.profile);
    engine.version = w.llama_cpp.version;
    engine.flash_attn = w.llama_cpp.flash_attn;
    engine.ubatch = w.llama_cpp.n_ubatch;
    engine.eager_attention = w.hf.attention == Attention::eager;
    if (llama_cpp_engine(w.profile)) {
      engine.devices = llama_cpp_devices(w);
      engine.row_split = w.llama_cpp.split_mode == LlamaCppSplitMode::row;
    }
    const ServingDetails& sv = est.serving;
    if (sv.host_dense_weights && sv.host_expert_weights) {
      engine.offload.dense_bytes = sv.host_dense_weights->in(unit::bytes);
      engine.offload.expert_bytes = sv.host_expert_weights->in(unit::bytes);
      engine.offload.bandwidth = host_bandwidth.in(unit::bytes_per_s);
      engine.offload.pcie = pcie_x16_bytes_per_s(device->pcie_gen.value_or(4));
    }
    const Throughput t = serving_throughput(spec, *device, est.weights, est.weight_bytes.in(unit::bytes),
                                            est.kv_bytes_per_token.in(unit::bytes), w.batch, w.prompt_len, avg_ctx,
                                            w.tp, eff, engine);
    if (t.decode_overhead.in(unit::seconds) > 0)
      report["assumptions"].push_back(
          "decode step " + detail::decimal(t.decode_step.in(unit::seconds) * 1e3, 2) + " ms, of it " +
          detail::decimal(t.decode_overhead.in(unit::seconds) * 1e3, 2) +
          " ms the engine's own: each kernel's fixed cost in cycles at " +
          (device->boost_clock_hz ? detail::decimal(*device->boost_clock_hz / 1e9, 2) + " GHz"
                                  : "an assumed 1.8 GHz (no boost clock in the catalog)") +
          (w.profile == Profile::vllm || w.profile == Profile::sglang
               ? ", the host's scheduling and sampling between steps" + std::string(w.tp > 1 ? ", the all-reduces" : "")
               : "") +
          " (fitted on published tables: tests/data/throughput)");
    if (t.decode_host_bound) {
      const double ops = host_forward_ops(spec, 1, w.hf.attention == Attention::eager);
      auto ms = [&](double op) { return detail::decimal(ops * op * 1e3, 1) + " ms"; };
      report["assumptions"].push_back(
          "decode is host-bound: HF's eager generate issues ~" + grouped(std::llround(ops)) +
          " operators a step, at " + detail::decimal(HostFloor::eager_op_seconds * 1e6, 0) + " µs each (" +
          ms(HostFloor::eager_op_seconds) + "); measured hosts took " +
          detail::decimal(HostFloor::fastest_op_seconds * 1e6, 0) + "–" +
          detail::decimal(HostFloor::slowest_op_seconds * 1e6, 0) + " µs an operator (" +
          ms(HostFloor::fastest_op_seconds) + "–" + ms(HostFloor::slowest_op_seconds) +
          "), as fast as the CPU; CUDA graphs (torch.compile, vLLM, SGLang) remove this floor");
    }
    if (engine.devices > 1)
      report["assumptions"].push_back(
          engine.row_split
              ? "-sm row over " + std::to_string(engine.devices) +
                    " GPUs: each reads and multiplies its rows of every matrix at once; the synchronization after "
                    "each product is not modelled (no published point): an upper bound on the speed"
              : "-sm layer over " + std::to_string(engine.devices) +
                    " GPUs: they run one after another (decode no faster than one GPU holding it all), " +
                    detail::decimal(LlamaCppSplit::boundary_seconds * 1e3, 2) + " ms a token per hand-over (" +
                    std::to_string(engine.devices - 1) +
                    "); a prompt batch's ubatches pipelined through the GPUs (" +
                    detail::decimal(1.0 / llama_cpp_pipeline_share(spec, est.weights, double(w.batch * w.prompt_len), engine), 2) +
                    "× one GPU's prompt rate here), as far as CUDA's launch queue lets the host run ahead (the busiest "
                    "GPU's part of a ubatch: " +
                    detail::decimal(llama_cpp_device_launches(spec, est.weights, engine), 0) +
                    " launches; a stream holds about " + detail::decimal(LlamaCppSplit::launch_queue, 0) + ")");
    if (engine.offload.any())
      report["assumptions"].push_back(
          "weights in host memory (" + detail::decimal((engine.offload.dense_bytes + engine.offload.expert_bytes) / 1073741824.0, 2) +
          " GiB): the CPU reads them at decode from host memory at " +
          detail::decimal(engine.offload.bandwidth / 1e9, 1) + " GB/s" +
          (o.host_memory_bandwidth.empty() ? " (dual-channel DDR5-5600; --host-memory-bandwidth)" : "") + " × " +
          detail::decimal(HostOffload::memory_efficiency, 2) + " (" +
          detail::decimal(t.decode_host_memory.in(unit::seconds) * 1e3, 2) +
          " ms a token); prompt ubatches of 32+ tokens copy them to the GPU over PCIe " +
          std::to_string(device->pcie_gen.value_or(4)) + ".0 x16 (" + detail::decimal(engine.offload.pcie / 1e9, 1) +
          " GB/s × " + detail::decimal(HostOffload::pcie_efficiency, 2) + ")");
    report["throughput"] = {{"prefill_tokens_per_s", t.prefill_tokens_per_s},
                            {"decode_tokens_per_s", t.decode_tokens_per_s},
                            {"decode_tokens_per_s_per_sequence", t.decode_tokens_per_s / double(w.batch)},
                            {"time_to_first_token_seconds", t.prefill.in(unit::seconds)},
                            {"per_token_latency_seconds", t.decode_step.in(unit::seconds)},
                            {"decode_bound", t.decode_host_memory_bound ? "host memory (weights on the CPU)"
                                             : t.decode_host_bound       ? "host (eager operators)"
                                             : t.decode_overhead_bound ? "engine overhead (kernels, host step)"
                                             : t.decode_compute_bound  ? "compute"
                                                                       : "memory bandwidth"},
                            {"decode_overhead_seconds", t.decode_overhead.in(unit::seconds)},
                            {"decode_weight_bytes_read", t.decode_weight_bytes},
                            {"peak_flops_per_gpu", t.peak.in(unit::flop_per_s)},
                            {"peak_format", t.peak_format},
                            {"memory_bandwidth_bytes_per_s", device->memory_bandwidth.in(unit::bytes_per_s)},
                            {"efficiency", {{"memory", t.efficiency.memory}, {"compute", t.efficiency.compute}}}};
    // Cost per token: the hourly price of the instance that holds the tensor-parallel group (cost.h) over the
    // tokens it produces in that hour.
    std::optional<double> per_hour;
    std::string basis;
    nlohmann::json instance = nullptr, instances = nullptr;
    // An engine that cannot run the format on this GPU is offered nowhere (runs_on.h); the user's own price stands.
    const auto unrunnable = cannot_run(*device, w.profile, est.weights);
    if (o.price_per_gpu_hour < 0) throw InputError("--price-per-gpu-hour must be positive");
    if (o.price_per_gpu_hour > 0) {
      per_hour = o.price_per_gpu_hour * double(w.tp);
      basis = "--price-per-gpu-hour";
    } else if (!unrunnable) {
      const auto rentals = price_setup(cat, *device, Setup{w.tp, w.tp, false}, o.spot, o.provider);
      if (!rentals.empty()) {
        per_hour = rentals.front().per_hour().in(unit::usd_per_hour);
        basis = rental_text(rentals.front());
        instance = instance_json(rentals.front());
        instances = rentals.front().instances;
      }
    }
    if (per_hour) {
      report["cost"] = {{"usd_per_hour", *per_hour},
                        {"usd_per_million_input_tokens", *per_hour / (t.prefill_tokens_per_s * 3600.0) * 1e6},
                        {"usd_per_million_output_tokens", *per_hour / (t.decode_tokens_per_s * 3600.0) * 1e6},
                        {"price_basis", basis},
                        {"instance", instance},
                        {"instances", instances}};
    } else {
      report["cost"] = nullptr;
      report["assumptions"].push_back(
          unrunnable ? "no offering priced: " + *unrunnable
                     : "no " + std::string(o.spot ? "spot" : "on-demand") + " offering in the catalog for " + device->id +
                           (o.provider.empty() ? "" : " at " + o.provider) + " holds " + std::to_string(w.tp) +
                           (w.tp == 1 ? " GPU" : " GPUs") + " in one instance: pass --price-per-gpu-hour");
    }
  } else {
    report["throughput"] = nullptr;
    report["cost"] = nullptr;
    report["assumptions"].push_back("throughput and cost need --gpu");
  }
  if (!device && o.fit.table) {
    // How many GPUs of each kind: tensor parallelism over n GPUs.
    auto over = [&](std::int64_t n) {
      InferenceWorkload v = w;
      v.tp = n;
      return v;
    };
    // A tensor-parallel size the engine refuses (heads not divisible) fits nowhere.
    const Bytes never(std::numeric_limits<double>::infinity());
    auto per_gpu = [&](std::int64_t n) {
      if (serving_tp_problem(spec, w, n)) return never;
      return n == w.tp ? est.memory.runs_in : estimate_inference_memory(spec, over(n)).memory.runs_in;
    };
    auto lower = [&](std::int64_t n) {
      return serving_tp_problem(spec, w, n) ? never : inference_memory_lower_bound(spec, over(n));
    };
    // The engines modelled here run on CUDA and ROCm GPUs only: vLLM's and SGLang's TPU and Neuron back ends, and
    // llama.cpp's, are other code with other memory; PyTorch runs everywhere the catalog lists.
    std::vector<Device> devices;
    for (const auto& d : cat.devices)
      if (torch_runtime(w.profile) || w.profile == Profile::none || d.vendor == "NVIDIA" || d.vendor == "AMD")
        devices.push_back(d);
    report["fit_table"] = fit_table_json(fit_table(devices, est.memory.runs_in, per_gpu, lower, 64),
                                         llama_cpp_engine(w.profile)
                                             ? "smallest power-of-two number of GPUs (up to 64) whose fullest GPU fits "
                                               "in the device's usable memory, llama.cpp's --split-mode spreading the model"
                                             : "smallest power-of-two tensor-parallel degree (up to 64) whose per-GPU "
                                               "estimate fits in the device's usable memory");
  }
  return report;
}

}  // namespace gpuplan::cli
