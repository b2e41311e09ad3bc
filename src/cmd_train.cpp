// gpuplan train: options → estimate_training_memory → report → renderer.
#include <cmath>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "app.h"
#include "format_units.h"
#include "model_source.h"
#include "render.h"

namespace gpuplan::cli {

void setup_train(CLI::App& app, TrainOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("train", "Per-GPU memory of a training step (full fine-tuning, LoRA, QLoRA)");
  cmd->footer(
      "Examples:\n"
      "  gpuplan train --params 7B --precision bf16\n"
      "  gpuplan train --model llama-3.1-8b --batch 2 --seq 4096 --grad-checkpointing --optimizer adamw-fused\n"
      "  gpuplan train --config config.json --lora-rank 16 --lora-targets q_proj,v_proj --format json\n"
      "  gpuplan train --gpu h100 -- torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-3.1-8B \\\n"
      "      --per_device_train_batch_size 4 --bf16 --gradient_checkpointing --deepspeed ds_config.json\n"
      "  gpuplan train --model llama-3.1-8b --from axolotl.yml\n"
      "After --, a launch command (torchrun, accelerate launch, deepspeed, python, trl, axolotl train, tune run) is read\n"
      "into the flags above, with the configs it names; gpuplan's own flags win. docs/launch.md lists what maps.");
  if (with_options) {
    add_train_options(*cmd, o);
    cmd->add_option("--from", "A DeepSpeed JSON, Accelerate, axolotl or torchtune YAML config to read (repeatable)");
  }
}

void add_train_options(CLI::App& cmd, TrainOptions& o) {
  add_model_options(cmd, o.model);
  auto& w = o.workload;
  cmd.add_option_function<std::int64_t>(
      "--batch", [&o](const std::int64_t& v) { o.batch = v; },
      "Micro-batch per GPU (default: the largest of 1, 2, 4, 8, 16 that fits --gpu with 10% free, as plan train "
      "chooses it; " + std::to_string(defaults::batch) + " without --gpu)");
  add_length_option(cmd, "--seq", w.seq, "Sequence length in tokens (4096, 4k)", defaults::seq);
  cmd.add_option("--grad-accum", w.grad_accum, "Gradient-accumulation steps (default 1)");
  cmd.add_option("--precision", o.precision,
                  "fp32 | bf16 | fp16 (16-bit weights, fp32 master + moments) | amp-bf16 | amp-fp16 (fp32 weights, "
                  "autocast) | pure-bf16 | pure-fp16 | fp8 (default bf16)");
  cmd.add_option("--optimizer", o.optimizer,
                  "adamw | adamw-fused | adam | sgd | sgd-momentum | adafactor | lion | adamw-8bit (default adamw)");
  auto* gc = cmd.add_flag("--grad-checkpointing", o.grad_checkpointing, "Recompute every decoder layer (= --recompute full)");
  cmd.add_option("--recompute", o.recompute, "none | selective | full (default none)")->excludes(gc);
  cmd.add_option("--attention", o.attention, "sdpa | flash | eager (default sdpa)");
  cmd.add_option("--lora-rank", w.lora.rank, "LoRA rank (PEFT; adapters in fp32)");
  cmd.add_option("--lora-targets", o.lora_targets, "Comma-separated target modules (default q_proj,v_proj), or all-linear");
  cmd.add_flag("--qlora", w.lora.qlora, "Base weights in NF4 with double quantization (needs --lora-rank)");
  cmd.add_option("--gpus", w.gpus, "GPUs per node (default 1)");
  cmd.add_option("--nodes", o.run.nodes, "Nodes (default 1); data parallelism spans gpus × nodes / (tp × pp × cp)");
  cmd.add_option("--tp", w.tp, "Tensor-parallel degree (Megatron: heads, FFN and vocabulary split; default 1)");
  cmd.add_option("--pp", w.pp, "Pipeline-parallel stages (1F1B; --grad-accum = micro-batches per step; default 1)");
  cmd.add_option("--vpp", w.vpp, "Model chunks per GPU for the interleaved pipeline schedule (default 1)");
  cmd.add_option("--pp-first-layers", w.pp_first_layers, "Layers on the first pipeline stage (default ceil(layers/pp))");
  cmd.add_option("--pp-last-layers", w.pp_last_layers, "Layers on the last pipeline stage (default: an even share)");
  cmd.add_option("--pp-schedule", o.pp_schedule,
                 "1f1b | interleaved | zero-bubble | dualpipe (default: interleaved with --vpp > 1, else 1f1b)");
  cmd.add_flag("--sp", w.sp, "Megatron sequence parallelism inside the tensor-parallel group");
  cmd.add_option("--cp", w.cp, "Context-parallel degree: the sequence split across GPUs (default 1)");
  cmd.add_option("--ep", w.ep, "Expert-parallel degree (MoE; inside the data-parallel ranks; default 1)");
  auto* zero = cmd.add_option("--zero", w.zero, "ZeRO stage 0-3 across the data-parallel ranks (0 = DDP)");
  cmd.add_option("--fsdp", o.fsdp, "FSDP sharding: full_shard (= --zero 3), shard_grad_op (2), hybrid_shard (3 within "
                                    "a node), no_shard (0)")->excludes(zero);
  cmd.add_option("--offload-optimizer", o.offload_optimizer, "none | cpu | nvme: moments and master weights off the GPU");
  cmd.add_option("--offload-params", o.offload_params, "none | cpu | nvme: parameter shards off the GPU (ZeRO-3)");
  cmd.add_option("--network-bandwidth", o.network_gbps, "Per-GPU network bandwidth between nodes in GB/s (default 50)");
  cmd.add_option("--kernels", o.kernels,
                 "Time model: eager (HF transformers modules) | fused (Megatron/TE-style fused kernels) | auto (default: "
                 "fused with tp/pp/cp/ep > 1 or on TPUs, else eager)");
  cmd.add_flag("--tp-comm-overlap", o.tp_comm_overlap, "Tensor-parallel collectives overlap the GEMMs (Megatron --tp-comm-overlap)");
  cmd.add_flag("--ep-overlap", o.ep_overlap, "Expert all-to-alls overlap compute (implied by --pp-schedule dualpipe)");
  add_fit_options(cmd, o.fit);
  add_limit_options(cmd, o.limits, true);
  cmd.add_option("--profile", o.profile,
                 "Framework profile: pytorch (default; ZeRO stages as FSDP2) | deepspeed (DeepSpeed ZeRO 1-3) | none "
                 "(tensor bytes only)");
  cmd.add_option("--reduce-bucket-size", w.deepspeed.reduce_bucket_size,
                 "DeepSpeed reduce_bucket_size in elements (default 5e8; HF Trainer's \"auto\" is hidden²)");
  cmd.add_option("--prefetch-bucket-size", w.deepspeed.prefetch_bucket_size,
                 "DeepSpeed stage3_prefetch_bucket_size in elements (default 5e7)");
  cmd.add_option("--overlap-comm", o.overlap_comm, "DeepSpeed overlap_comm: true | false (default: true at ZeRO-3)");
  cmd.add_option("--loss", o.loss,
                 "eager (default: HF's full fp32 logits) | chunked[:N] (torchtune's chunked cross-entropy, N = 8) | "
                 "fused (Liger's fused linear cross-entropy)");
  cmd.add_flag("--activation-offload", o.activation_offload,
               "Saved activations in pinned host memory (torch save_on_cpu, torchtune's activation offloading)");
  cmd.add_flag("--advise", o.advise, "List the changes that make the setup fit --gpu, ranked, even when it fits");
  cmd.add_option("--objective", o.objective, "How the advice is ranked: least-change (default) | cheapest | fastest");
  cmd.add_option("--format", o.format, "table (default) | json | csv | md");
  auto& r = o.run;
  cmd.add_option("--tokens", r.tokens, "Training tokens (2T, 300B); default: ≈ 20 per parameter (Hoffmann et al. 2022) "
                                       "for pre-training, per 1B tokens for a fine-tune (LoRA, QLoRA, --fine-tune)");
  cmd.add_flag("--fine-tune", r.fine_tune, "A full fine-tune of a trained model: time and cost per 1B tokens unless "
                                           "--dataset-tokens/--epochs or --tokens say how many");
  cmd.add_option("--epochs", r.epochs, "Epochs over --dataset-tokens (instead of --tokens)");
  cmd.add_option("--dataset-tokens", r.dataset_tokens, "Dataset size in tokens, with --epochs");
  cmd.add_option("--mfu", r.mfu, "State the end-to-end model FLOPs utilisation instead of the step-time model's (printed either way)");
  cmd.add_option("--provider", r.provider, "Price the run on this provider's offerings only");
  cmd.add_flag("--spot", r.spot, "Use published spot/preemptible prices");
  cmd.add_option("--price-per-gpu-hour", r.price_per_gpu_hour, "Your own price in USD per GPU-hour");
  cmd.add_option("--power-utilization", r.power_utilization, "Average power draw as a share of TDP (default 1.0)");
  cmd.add_option("--pue", r.pue, "Data-centre power usage effectiveness (default 1.2)");
  cmd.add_option("--grid-intensity", r.grid_intensity, "Grid CO2 intensity in kg/kWh (for CO2)");
}

std::pair<Loss, std::int64_t> parse_loss(const std::string& text) {
  const auto colon = text.find(':');
  const Loss loss = parse_enum<Loss>(loss_names, text.substr(0, colon), "loss");
  if (colon == std::string::npos) return {loss, 8};  // torchtune's num_output_chunks default
  if (loss != Loss::chunked) throw InputError("--loss: only chunked takes a chunk count (chunked:N)");
  const double n = detail::parse_count(text.substr(colon + 1), "--loss chunked:N");
  if (n != std::floor(n) || n > 65536) throw InputError("--loss chunked:N needs a whole N between 1 and 65536");
  return {loss, static_cast<std::int64_t>(n)};
}

std::vector<std::string> split_targets(const std::string& text) {
  if (text.empty()) return {"q_proj", "v_proj"};  // PEFT's default for Llama-family models
  std::vector<std::string> targets;
  std::stringstream ss(text);
  std::string t;
  while (std::getline(ss, t, ','))
    if (!t.empty()) targets.push_back(t);
  if (targets.empty()) throw InputError("--lora-targets: expected module names separated by commas");
  return targets;
}

namespace {

// The matmul rate the step ran at, as the assumptions say it: the burst rate where the power limit allowed it, or
// the sustained one, as a share of the dense peak.
std::string matmul_rate_note(const Device& d, Precision p, const KernelRates& k, double slowdown) {
  const DeviceRates r = device_rates(d, p, k);
  const double peak = peak_for(d, compute_format(p)).value_or(0);
  if (peak <= 0) return "no matmul rate for this device";
  const auto pct = [&](double rate) { return fmt::format("{:.0f}%", 100 * rate / peak); };
  if (r.burst <= 1)
    return "matmuls at " + pct(r.gemm) + " of the dense peak" +
           (d.matmul_efficiency ? "" : ", no measured rate for this device");
  return "matmuls at " + pct(r.gemm / slowdown) + " of the dense peak: " + pct(r.gemm) + " in bursts, " +
         pct(r.gemm / r.burst) + " back to back at the power limit";
}

// The step-time model's inputs for a layout on a device.
StepInputs step_inputs(const ModelSpec& spec, const TrainingWorkload& w, const Device& d, Params trainable_on_gpu, double host_optimizer_seconds, const std::vector<Communication>& comms) {
  StepInputs in;
  in.model = &spec;
  in.workload = &w;
  in.device = &d;
  in.trainable_on_gpu = double(trainable_on_gpu.in(unit::params));
  in.param_tensors = trainable_tensors(spec, w.lora) / double(w.tp * w.pp);
  in.host_optimizer_seconds = host_optimizer_seconds;
  in.comms = comm_seconds(comms);
  return in;
}

// Every collective of a layout, timed on the device's links.
std::vector<Communication> training_comms(const ModelSpec& spec, const TrainingWorkload& w, std::int64_t stage_layers,
                                          Params trainable_on_gpu, const Device* device, std::int64_t per_node,
                                          std::optional<ByteRate> network) {
  const PrecisionRecipe pr = recipe_of(w.precision);
  const bool lora = w.lora.rank > 0;
  std::vector<Communication> comms;
  comms.push_back(data_parallel_communication(w, double(trainable_on_gpu.in(unit::params)), lora ? 4.0 : pr.weight,
                                              lora ? 4.0 : pr.grad));
  for (auto& c : model_parallel_communication(spec, w, stage_layers, pr.compute)) comms.push_back(std::move(c));
  if (device)
    for (auto& c : comms)
      if (c.bytes_per_gpu.in(unit::bytes) > 0) time_communication(c, *device, group_spans_nodes(c, w, per_node), network);
  return comms;
}

// The micro-batch, its full estimate and why it is that one.
struct MicroBatch {
  std::int64_t batch = defaults::batch;
  TrainingEstimate estimate;
  std::string basis;
};

// --batch as given. Without it, the micro-batch plan train would choose for this layout on --gpu (plan.h
// choose_micro_batch: the largest that fits with the planner's headroom, within its global batch), so that a run's
// time is what a user who fills the GPU gets rather than micro-batch 1's; with no device to fill, defaults::batch.
// `memory_w` is the workload the memory is estimated for (hybrid sharding: one node's shard group).
MicroBatch micro_batch(const TrainOptions& o, const ModelSpec& spec, const TrainingWorkload& w,
                       const TrainingWorkload& memory_w, const Device* device) {
  MicroBatch m;
  TrainingWorkload v = memory_w;
  if (o.batch || !device) {
    m.batch = v.batch = o.batch.value_or(defaults::batch);
    m.estimate = estimate_training_memory(spec, v);
    m.basis = o.batch ? "--batch"
                      : fmt::format("micro-batch {}: the default without --gpu (with --gpu, the largest that fits it)",
                                    m.batch);
    return m;
  }
  const bool fine_tune = o.run.fine_tune || w.lora.rank > 0;  // plan train's rule for its global batch
  const double global = default_global_batch_tokens(fine_tune);
  const double per_sequence = double(w.seq * w.grad_accum * w.dp());
  const std::int64_t headroom_pct = std::llround(100 * default_headroom);
  MicroBatchChoice c = choose_micro_batch(spec, v, *device, per_sequence, global, default_headroom);
  m.batch = c.micro_batch;
  m.estimate = std::move(c.estimate);
  const std::string because = ", chosen because --batch was not given (plan train's rule)";
  if (!c.fits) {
    m.basis = fmt::format("micro-batch 1: none of 1, 2, 4, 8, 16 fits {} with {}% of its memory free, so the "
                          "smallest{}", device->id, headroom_pct, because);
    return m;
  }
  // What stopped the next larger micro-batch: its memory, or the global batch its step would pass.
  std::string bound;
  if (c.larger > 0)
    bound = fmt::format(" ({} needs {})", c.larger, gib(c.larger_total.in(unit::bytes)));
  else if (c.global_batch_bound)
    bound = fmt::format(" and keeps a step within plan train's global batch for a {}, {} tokens ({} would make {})",
                        fine_tune ? "fine-tune" : "pre-training", short_count(global), 2 * m.batch,
                        short_count(double(2 * m.batch) * per_sequence));
  m.basis = fmt::format("micro-batch {}: the largest of 1, 2, 4, 8, 16 that fits {} with {}% of its memory free{}{}",
                        m.batch, device->id, headroom_pct, bound, because);
  return m;
}

// A run of `tokens` on a device: the step-time model, or the model FLOPs at a stated MFU.
struct RunEstimate {
  StepTime step_model;
  double step = 0, steps = 0, seconds = 0, tokens_per_step = 0, mfu = 0, hfu = 0, gpu_hours = 0;
};

RunEstimate estimate_run(const ModelSpec& spec, const TrainingWorkload& w, const Device& d, const TimeOptions& time,
                         Params trainable_on_gpu, const std::vector<Communication>& comms, double tokens,
                         const TrainingFlops& f, double peak, double stated_mfu) {
  RunEstimate e;
  const double host = w.offload_optimizer != Offload::none
                          ? host_optimizer_seconds(double(trainable_on_gpu.in(unit::params)) / double(w.zero >= 1 ? w.dp() : 1), w.profile)
                          : 0.0;
  e.step_model = step_time(step_inputs(spec, w, d, trainable_on_gpu, host, comms), time);
  e.tokens_per_step = double(w.batch * w.seq * w.grad_accum * w.dp());
  e.steps = tokens / e.tokens_per_step;
  const double model_per_step = f.flops_per_token * e.tokens_per_step, gpus = double(w.gpus);
  e.step = stated_mfu > 0 ? model_per_step / (gpus * peak * stated_mfu) : e.step_model.total;
  e.seconds = e.step * e.steps;
  e.mfu = model_per_step / (e.step * gpus * peak);
  // HFU counts the same FLOPs as MFU plus what recomputation runs again (compute.h training_flops), so HFU ≥ MFU.
  const double hardware_per_token = f.model.in(unit::flop) > 0 ? f.hardware.in(unit::flop) / f.model.in(unit::flop) : 1.0;
  e.hfu = e.mfu * hardware_per_token;
  e.gpu_hours = e.seconds * gpus / 3600.0;
  return e;
}

// Tokens, FLOPs, and with a device: time, cost, energy.
void add_run_report(nlohmann::json& report, const ModelSpec& spec, const TrainingWorkload& w, const RunOptions& r,
                    const TimeOptions& time, const Catalog& cat, const Device* device, Params trainable_on_gpu,
                    const std::vector<Communication>& comms) {
  if (!r.tokens.empty() && (r.epochs > 0 || !r.dataset_tokens.empty()))
    throw InputError("--tokens excludes --epochs/--dataset-tokens");
  if ((r.epochs > 0) != !r.dataset_tokens.empty()) throw InputError("--epochs and --dataset-tokens go together");
  if (r.epochs < 0 || r.epochs > 1e6) throw InputError("--epochs must be between 0 and 1e6");
  Tokens tokens(0);
  std::string basis;
  const ParamCounts counts = count_params(spec);
  if (!r.tokens.empty()) {
    tokens = parse_tokens(r.tokens);
    basis = "--tokens";
  } else if (r.epochs > 0) {
    tokens = Tokens(static_cast<std::int64_t>(std::llround(r.epochs * double(parse_tokens(r.dataset_tokens).in(unit::tokens)))));
    basis = "--epochs × --dataset-tokens";
  } else if (w.lora.rank > 0 || r.fine_tune) {
    // A fine-tune's tokens are its dataset's, not a compute-optimal count: without them, results per 1B tokens.
    tokens = Tokens(fine_tune_default_tokens);
    basis = "per 1B tokens: a fine-tune has no compute-optimal token count (pass --dataset-tokens and --epochs)";
  } else {
    tokens = Tokens(static_cast<std::int64_t>(chinchilla_tokens_per_param * double(counts.active.in(unit::params))));
    basis = "default: 20 tokens per active parameter, compute-optimal for pre-training (Hoffmann et al. 2022; "
            "--fine-tune for a fine-tune)";
  }
  const TrainingFlops f = training_flops(spec, tokens, w.seq, w.recompute, w.lora);
  report["compute"] = {{"tokens", tokens.in(unit::tokens)},
                       {"tokens_basis", basis},
                       {"flops", f.model.in(unit::flop)},
                       {"hardware_flops", f.hardware.in(unit::flop)},
                       {"flops_per_token", f.flops_per_token},
                       {"matmul_params", f.matmul_params.in(unit::params)},
                       {"adapter_params", f.adapter_params.in(unit::params)},
                       {"formula", w.lora.rank > 0 ? "4·N (frozen base: forward and input gradients) + 6 per adapter "
                                                     "parameter + 12·L·H·Q·T per token; hardware adds recomputation"
                                                   : "6·N + 12·L·H·Q·T per token (PaLM appendix B); hardware adds "
                                                     "recomputation"}};
  report["time"] = nullptr;
  report["cost"] = nullptr;
  report["energy"] = nullptr;
  if (!device) {
    report["assumptions"].push_back("time, cost and energy need --gpu (and --gpus/--nodes)");
    return;
  }
  const ComputeFormat format = compute_format(w.precision);
  const auto peak = peak_for(*device, format);
  if (!peak) {
    // Not guessed: Apple M3/M4 and GB10 publish no such rate, a --gpu-memory device has none.
    report["assumptions"].push_back("no dense " + std::string(spell<Precision>(precision_names, w.precision)) +
                                    " peak for " + device->id + ": time, cost and energy not computed");
    return;
  }
  if (r.mfu != 0 && !(r.mfu > 0 && r.mfu <= 1)) throw InputError("--mfu must be in (0, 1]");
  const std::int64_t gpus = w.gpus;  // already gpus × nodes
  const RunEstimate run = estimate_run(spec, w, *device, time, trainable_on_gpu, comms, double(tokens.in(unit::tokens)),
                                       f, *peak, r.mfu);
  const StepTime& st = run.step_model;
  const double seconds = run.seconds, steps = run.steps, step = run.step, gpu_hours = run.gpu_hours;
  const double exposed = st.tensor_comm + st.expert_comm + st.context_comm + st.data_comm + st.host_optimizer;
  report["assumptions"].push_back(
      r.mfu > 0 ? "time: the model FLOPs at the stated --mfu"
                : "time: step-time model with " + std::string(spell<Kernels>(kernels_names, st.kernels)) +
                      " kernels (" + matmul_rate_note(*device, w.precision, time.rates, st.gemm_slowdown) +
                      "); the MFU is what it implies (docs/time-accuracy.md)");
  nlohmann::json parts = nullptr;
  if (r.mfu <= 0)
    parts = {{"matmul_seconds", st.matmul},           {"attention_seconds", st.attention},
             {"memory_bound_seconds", st.memory_bound}, {"host_bound_seconds", st.host_bound},
             {"optimizer_seconds", st.optimizer},     {"tensor_parallel_seconds", st.tensor_comm},
             {"expert_parallel_seconds", st.expert_comm}, {"context_parallel_seconds", st.context_comm},
             {"data_parallel_seconds", st.data_comm}, {"pipeline_bubble_seconds", st.bubble},
             {"host_optimizer_seconds", st.host_optimizer}};
  report["time"] = {{"seconds", seconds},
                    {"compute_seconds", r.mfu > 0 ? seconds : (st.compute + st.optimizer) * steps},
                    {"bubble_seconds", r.mfu > 0 ? 0.0 : st.bubble * steps},
                    {"exposed_communication_seconds", r.mfu > 0 ? 0.0 : exposed * steps},
                    {"basis", r.mfu > 0 ? "model FLOPs at the stated --mfu"
                                        : "step-time model: matmuls, attention and memory-bound kernels at calibrated "
                                          "shares of the device's peaks, the host's launch cost, the pipeline bubble and "
                                          "communication not hidden behind compute (docs/time-accuracy.md)"},
                    {"step_seconds", step},
                    {"steps", steps},
                    {"tokens_per_step", run.tokens_per_step},
                    {"tokens_per_second_per_gpu", run.tokens_per_step / (step * double(gpus))},
                    {"step", parts},
                    {"kernels", spell<Kernels>(kernels_names, st.kernels)},
                    {"pipeline_schedule", w.pp > 1 ? nlohmann::json(spell<PipelineSchedule>(schedule_names, time.schedule))
                                                   : nlohmann::json(nullptr)},
                    {"days", seconds / 86400.0},
                    {"gpu_hours", gpu_hours},
                    {"node_hours", gpu_hours / double(std::max<std::int64_t>(1, gpus / r.nodes))},
                    {"gpus", gpus},
                    {"gpu", device->id},
                    {"peak_flops_per_gpu", *peak},
                    {"mfu", run.mfu},
                    {"hfu", r.mfu > 0 ? nlohmann::json(nullptr) : nlohmann::json(run.hfu)},
                    {"mfu_basis", r.mfu > 0 ? std::string("--mfu") : std::string("implied by the step-time model")}};
  // Cost: the user's price, else the cheapest instances that hold each node of the run whole (cost.h: the node is
  // what the time above put on one NVLink domain); every alternative is listed.
  const Setup setup{gpus, gpus / r.nodes, true};
  const auto rentals = price_setup(cat, *device, setup, r.spot, r.provider);
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& p : rentals)
    alternatives.push_back({{"provider", p.offering->provider},
                            {"instance", p.offering->instance},
                            {"instances", p.instances},
                            {"gpus_per_instance", p.gpus_per_instance},
                            {"usd_per_gpu_hour", p.per_gpu_hour().in(unit::usd_per_hour)},
                            {"usd", p.over(Seconds(seconds)).in(unit::usd)},
                            {"spot", p.spot},
                            {"as_of", p.offering->as_of}});
  if (r.price_per_gpu_hour < 0) throw InputError("--price-per-gpu-hour must be positive");
  if (r.price_per_gpu_hour > 0) {
    const Usd usd = Seconds(gpu_hours * 3600.0) * UsdPerHour(r.price_per_gpu_hour);
    report["cost"] = {{"usd", usd.in(unit::usd)},
                      {"usd_per_gpu_hour", r.price_per_gpu_hour},
                      {"price_basis", "--price-per-gpu-hour"},
                      {"instance", nullptr},
                      {"instances", nullptr},
                      {"alternatives", alternatives}};
  } else if (!rentals.empty()) {
    const auto& best = rentals.front();
    report["cost"] = {{"usd", best.over(Seconds(seconds)).in(unit::usd)},
                      {"usd_per_gpu_hour", best.per_gpu_hour().in(unit::usd_per_hour)},
                      {"price_basis", rental_text(best)},
                      {"instance", instance_json(best)},
                      {"instances", best.instances},
                      {"alternatives", alternatives}};
  } else {
    report["assumptions"].push_back("no " + std::string(r.spot ? "spot" : "on-demand") + " offering in the catalog for " +
                                    device->id + (r.provider.empty() ? "" : " at " + r.provider) + " holds " +
                                    std::to_string(setup.group) + " GPUs in one instance" +
                                    (setup.group > 8 ? " (--gpus counts one node's GPUs: --gpus 8 --nodes " +
                                                           std::to_string((gpus + 7) / 8) + " lays the run out on 8-GPU nodes)"
                                                     : std::string()) +
                                    ": pass --price-per-gpu-hour for cost");
  }
  if (device->tdp_watts) {
    EnergyAssumptions ea;
    ea.power_utilization = r.power_utilization;
    ea.pue = r.pue;
    if (r.grid_intensity >= 0) ea.grid_kg_per_kwh = r.grid_intensity;
    const Energy e = run_energy(gpu_hours, *device->tdp_watts, ea);
    report["energy"] = {{"kwh", e.kwh},
                        {"co2_kg", e.co2_kg ? nlohmann::json(*e.co2_kg) : nlohmann::json(nullptr)},
                        {"tdp_watts", *device->tdp_watts},
                        {"power_utilization", ea.power_utilization},
                        {"pue", ea.pue}};
  } else {
    report["assumptions"].push_back("no TDP in the catalog for " + device->id + ": energy not computed");
  }
}

}  // namespace

ExitCode run_train(const TrainOptions& o, std::ostream& out, std::ostream& err) {
  const Format format = parse_format(o.format);
  if (o.objective != "least-change" && o.objective != "cheapest" && o.objective != "fastest")
    throw InputError("unknown --objective \"" + o.objective + "\" (expected: least-change, cheapest, fastest)");
  nlohmann::json report = train_report(o);
  if (o.advise && !report.contains("fit")) throw InputError("--advise needs --gpu (advice is about fitting a device)");
  if (report.contains("fit") && (o.advise || !report["fit"]["fits"].get<bool>())) {
    report["advice"] = train_advice(o, report);
    report["advice_objective"] = o.objective;
  }
  if (!o.from.is_null()) report["from"] = o.from;
  return emit_report(report, o.limits, format, &render_train_table, out, err);
}

nlohmann::json train_report(const TrainOptions& o) { return train_report_with(o, nullptr); }

nlohmann::json train_report_with(const TrainOptions& o, const Catalog* catalog) {
  TrainingWorkload w = o.workload;
  w.precision = parse_enum<Precision>(precision_names, o.precision, "precision");
  w.optimizer = parse_enum<Optimizer>(optimizer_names, o.optimizer, "optimizer");
  w.attention = parse_enum<Attention>(attention_names, o.attention, "attention");
  w.profile = parse_enum<Profile>(profile_names, o.profile, "profile");
  std::tie(w.loss, w.loss_chunks) = parse_loss(o.loss);
  w.activation_offload = o.activation_offload;
  w.recompute = o.grad_checkpointing ? Recompute::full
                : o.recompute.empty() ? Recompute::none
                                      : parse_enum<Recompute>(recompute_names, o.recompute, "recompute");
  if (!o.lora_targets.empty() || w.lora.rank > 0) w.lora.targets = split_targets(o.lora_targets);
  if (o.run.nodes < 1 || o.run.nodes > 100'000) throw InputError("--nodes must be between 1 and 100,000");
  std::int64_t shard_group = 0;  // hybrid_shard: ZeRO-3 inside a node, replicas across nodes
  if (!o.fsdp.empty()) {
    if (o.fsdp == "full_shard") w.zero = 3;
    else if (o.fsdp == "shard_grad_op") w.zero = 2;
    else if (o.fsdp == "no_shard") w.zero = 0;
    else if (o.fsdp == "hybrid_shard") { w.zero = 3; shard_group = w.gpus; }
    else throw InputError("unknown --fsdp \"" + o.fsdp + "\" (expected: full_shard, shard_grad_op, hybrid_shard, no_shard)");
  }
  if (!o.overlap_comm.empty()) {
    if (o.overlap_comm != "true" && o.overlap_comm != "false") throw InputError("--overlap-comm: expected true or false");
    w.deepspeed.overlap_comm = o.overlap_comm == "true";
  }
  w.offload_optimizer = parse_enum<Offload>(offload_names, o.offload_optimizer, "offload target");
  w.offload_params = parse_enum<Offload>(offload_names, o.offload_params, "offload target");
  if (o.network_gbps < 0) throw InputError("--network-bandwidth must be positive");
  if (w.gpus < 1 || w.gpus > 1'000'000) throw InputError("--gpus must be between 1 and 1,000,000");
  w.gpus *= o.run.nodes;
  TimeOptions time;
  time.kernels = parse_enum<Kernels>(kernels_names, o.kernels, "kernels");
  time.schedule = !o.pp_schedule.empty() ? parse_enum<PipelineSchedule>(schedule_names, o.pp_schedule, "pipeline schedule")
                  : w.vpp > 1           ? PipelineSchedule::interleaved
                                        : PipelineSchedule::one_f_one_b;
  if (!o.pp_schedule.empty() && w.pp < 2) throw InputError("--pp-schedule needs --pp of 2 or more");
  time.tp_overlap = o.tp_comm_overlap;
  time.ep_overlap = o.ep_overlap;
  const ModelSource source = resolve_model_source(o.model);
  const ModelSpec& spec = source.spec;
  std::optional<Catalog> own;  // once per command (the advice hands its estimates the one it loaded)
  const Catalog& cat = catalog ? *catalog : own.emplace(load_catalog(o.fit.catalogs));
  std::optional<Device> unlisted;
  const Device* device = fit_device(o.fit, cat, unlisted);
  // Hybrid sharding shards within a node: memory as ZeRO-3 over the node's GPUs.
  TrainingWorkload memory_w = w;
  if (shard_group > 0) memory_w.gpus = shard_group;
  const MicroBatch mb = micro_batch(o, spec, w, memory_w, device);
  w.batch = memory_w.batch = mb.batch;
  const TrainingEstimate& est = mb.estimate;
  nlohmann::json report = training_json(spec, w, est);
  report["workload"]["batch_defaulted"] = !o.batch.has_value();
  report["workload"]["batch_basis"] = mb.basis;
  report["model"]["source"] = source.json();
  report["deepspeed_estimator"] = nullptr;
  if (w.profile == Profile::deepspeed && w.zero >= 2) {
    const std::int64_t per_node = w.gpus / o.run.nodes;
    const double total = double(count_params(spec).total.in(unit::params));
    const double largest = deepspeed_largest_layer_params(spec);
    const bool offload = w.offload_optimizer != Offload::none;
    const DeepSpeedEstimate e =
        w.zero == 2 ? deepspeed_zero2_estimate(total, per_node, o.run.nodes, offload)
                    : deepspeed_zero3_estimate(total, largest, per_node, o.run.nodes, offload,
                                               w.offload_params != Offload::none, /*zero_init=*/true);
    report["deepspeed_estimator"] = {
        {"function", w.zero == 2 ? "estimate_zero2_model_states_mem_needs" : "estimate_zero3_model_states_mem_needs"},
        {"gpu_bytes", e.gpu.in(unit::bytes)},
        {"cpu_bytes", e.cpu.in(unit::bytes)},
        {"total_params", total},
        {"largest_layer_params", w.zero == 3 ? nlohmann::json(largest) : nlohmann::json(nullptr)},
        {"counts", "parameters, gradients and optimizer states only (no activations, buffers or CUDA context); host "
                   "memory with DeepSpeed's 1.5x buffer factor"}};
  }
  if (source.checkpoint && !source.checkpoint->quantization.empty())
    report["assumptions"].push_back("the checkpoint is stored " + source.checkpoint->quantization +
                                    "; training memory is for weights in --precision (or NF4 with --qlora)");
  report["offload"] = {{"optimizer", spell<Offload>(offload_names, w.offload_optimizer)},
                       {"params", spell<Offload>(offload_names, w.offload_params)},
                       {"host_memory_bytes", est.host_memory.in(unit::bytes)},
                       {"nvme_bytes", est.nvme.in(unit::bytes)}};
  report["parallel"] = {{"data", w.dp()},       {"tensor", w.tp},  {"pipeline", w.pp}, {"virtual_stages", w.vpp},
                        {"sequence_parallel", w.sp}, {"context", w.cp}, {"expert", w.ep},
                        {"stage", est.stage.index}, {"stage_layers", est.stage.layers},
                        {"in_flight_microbatches", est.stage.in_flight},
                        {"pipeline_bubble_fraction", pipeline_bubble(w)}};
  const std::int64_t per_node = w.gpus / o.run.nodes;
  std::optional<ByteRate> network;
  if (o.network_gbps > 0) network.emplace(o.network_gbps * 1e9);
  const std::vector<Communication> comms =
      training_comms(spec, w, est.stage.layers, est.shape.trainable_on_gpu, device, per_node, network);
  {
    nlohmann::json by_kind = nlohmann::json::array();
    double bytes = 0, seconds = 0;
    std::string names;
    for (const auto& c : comms) {
      if (c.bytes_per_gpu.in(unit::bytes) <= 0) continue;
      bytes += c.bytes_per_gpu.in(unit::bytes);
      if (c.time) seconds += c.time->in(unit::seconds);
      names += names.empty() ? "" : "; ";
      names += c.collectives;
      by_kind.push_back({{"parallelism", comm_kind_name(c.kind)},
                         {"collectives", c.collectives},
                         {"bytes_per_gpu_per_step", c.bytes_per_gpu.in(unit::bytes)},
                         {"seconds_per_step", c.time ? nlohmann::json(c.time->in(unit::seconds)) : nlohmann::json(nullptr)},
                         {"link", c.time ? nlohmann::json(c.link) : nlohmann::json(nullptr)},
                         {"bandwidth_bytes_per_s", c.bandwidth ? nlohmann::json(c.bandwidth->in(unit::bytes_per_s))
                                                               : nlohmann::json(nullptr)},
                         {"across_nodes", c.across_nodes},
                         {"overlap", c.overlap}});
    }
    report["communication"] = {{"collectives", names.empty() ? std::string(comms.front().collectives) : names},
                               {"bytes_per_gpu_per_step", bytes},
                               {"seconds_per_step", device && bytes > 0 ? nlohmann::json(seconds) : nlohmann::json(nullptr)},
                               {"by_parallelism", by_kind},
                               {"overlap", "seconds_per_step adds every collective without overlap; each entry says "
                                           "which ones frameworks hide behind compute"}};
  }

  add_run_report(report, spec, w, o.run, time, cat, device, est.shape.trainable_on_gpu, comms);
  if (device) {
    report["fit"] = fit_json(fit_on(*device, est.memory.runs_in), w.gpus);
  } else if (o.fit.table) {
    // How many GPUs of each kind: the same workload data-parallel over n GPUs with ZeRO-3 (FSDP full shard),
    // or with the stage the user chose.
    // With model parallelism each data-parallel replica is tp × pp × cp GPUs.
    const int stage = w.zero > 0 ? w.zero : 3;
    const std::int64_t replica = w.tp * w.pp * w.cp;
    auto over = [&](std::int64_t n) {
      TrainingWorkload v = w;
      v.gpus = n * replica;
      v.zero = n > 1 ? stage : w.zero;
      v.ep = n % w.ep == 0 ? w.ep : 1;
      return v;
    };
    // (One replica is the workload as given when it has no data parallelism: its estimate is already made.)
    auto per_gpu = [&](std::int64_t n) {
      return n == 1 && w.dp() == 1 ? est.memory.runs_in : estimate_training_memory(spec, over(n)).memory.runs_in;
    };
    auto lower = [&](std::int64_t n) { return training_memory_lower_bound(spec, over(n)); };
    auto rows = fit_table(cat.devices, est.memory.runs_in, per_gpu, lower);
    for (auto& r : rows)
      if (r.gpus_needed) *r.gpus_needed *= replica;
    report["fit_table"] = fit_table_json(rows, "smallest power-of-two data-parallel degree (× tp·pp·cp GPUs per "
                                               "replica) with ZeRO-" + std::to_string(stage) +
                                                   " whose per-GPU estimate fits in the device's usable memory");
    // What the run would take and cost on each device that can hold it: at least as many GPUs as asked for, timed
    // by the step-time model (or the stated --mfu), priced at its cheapest on-demand offering.
    const double tokens = report["compute"]["tokens"].get<double>();
    const TrainingFlops per_token = training_flops(spec, Tokens(1), w.seq, w.recompute, w.lora);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto& row = report["fit_table"]["devices"][i];
      const Device& d = *rows[i].device;
      const auto peak = peak_for(d, compute_format(w.precision));
      if (!rows[i].gpus_needed || !peak) continue;
      const std::int64_t n = std::max(*rows[i].gpus_needed, w.gpus);
      // The layout of the row on 8-GPU nodes (HGX/DGX boards), priced on instances that hold such a node.
      const TrainingWorkload v = over(n / replica);
      const auto c = training_comms(spec, v, est.stage.layers, est.shape.trainable_on_gpu, &d, 8, network);
      const RunEstimate run = estimate_run(spec, v, d, time, est.shape.trainable_on_gpu, c, tokens, per_token, *peak, o.run.mfu);
      row["run_gpus"] = n;
      row["run_days"] = run.seconds / 86400.0;
      const auto rentals = price_setup(cat, d, Setup{n, std::min<std::int64_t>(n, 8), true}, o.run.spot, o.run.provider);
      row["run_usd"] = rentals.empty() ? nlohmann::json(nullptr) : nlohmann::json(rentals.front().over(Seconds(run.seconds)).in(unit::usd));
      row["run_offering"] = rentals.empty() ? nlohmann::json(nullptr) : nlohmann::json(rental_text(rentals.front()));
    }
  }
  return report;
}

}  // namespace gpuplan::cli
