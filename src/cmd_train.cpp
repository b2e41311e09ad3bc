// gpuplan train: options → estimate_training_memory → report → renderer.
#include <sstream>

#include "app.h"
#include "model_source.h"
#include "render.h"

namespace gpuplan::cli {

void setup_train(CLI::App& app, TrainOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("train", "Per-GPU memory of a training step (full fine-tuning, LoRA, QLoRA)");
  cmd->footer(
      "Examples:\n"
      "  gpuplan train --params 7B --precision bf16\n"
      "  gpuplan train --model llama-3.1-8b --batch 2 --seq 4096 --grad-checkpointing --optimizer adamw-fused\n"
      "  gpuplan train --config config.json --lora-rank 16 --lora-targets q_proj,v_proj --format json");
  if (with_options) add_train_options(*cmd, o);
}

void add_train_options(CLI::App& cmd, TrainOptions& o) {
  add_model_options(cmd, o.model);
  auto& w = o.workload;
  cmd.add_option("--batch", w.batch, "Micro-batch per GPU (default 1)");
  cmd.add_option("--seq", w.seq, "Sequence length in tokens (default 2048)");
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
  cmd.add_flag("--sp", w.sp, "Megatron sequence parallelism inside the tensor-parallel group");
  cmd.add_option("--cp", w.cp, "Context-parallel degree: the sequence split across GPUs (default 1)");
  cmd.add_option("--ep", w.ep, "Expert-parallel degree (MoE; inside the data-parallel ranks; default 1)");
  auto* zero = cmd.add_option("--zero", w.zero, "ZeRO stage 0-3 across the data-parallel ranks (0 = DDP)");
  cmd.add_option("--fsdp", o.fsdp, "FSDP sharding: full_shard (= --zero 3), shard_grad_op (2), hybrid_shard (3 within "
                                    "a node), no_shard (0)")->excludes(zero);
  cmd.add_option("--offload-optimizer", o.offload_optimizer, "none | cpu | nvme: moments and master weights off the GPU");
  cmd.add_option("--offload-params", o.offload_params, "none | cpu | nvme: parameter shards off the GPU (ZeRO-3)");
  cmd.add_option("--network-bandwidth", o.network_gbps, "Per-GPU network bandwidth between nodes in GB/s (default 50)");
  add_fit_options(cmd, o.fit);
  add_limit_options(cmd, o.limits, true);
  cmd.add_option("--profile", o.profile, "Framework profile: pytorch (default) | none (tensor bytes only)");
  cmd.add_option("--format", o.format, "table (default) | json | csv | md");
  auto& r = o.run;
  cmd.add_option("--tokens", r.tokens, "Training tokens (2T, 300B); default ≈ 20 per parameter (Hoffmann et al. 2022)");
  cmd.add_option("--epochs", r.epochs, "Epochs over --dataset-tokens (instead of --tokens)");
  cmd.add_option("--dataset-tokens", r.dataset_tokens, "Dataset size in tokens, with --epochs");
  cmd.add_option("--mfu", r.mfu, "Model FLOPs utilisation for time (default by device class, printed)");
  cmd.add_option("--provider", r.provider, "Price the run on this provider's offerings only");
  cmd.add_flag("--spot", r.spot, "Use published spot/preemptible prices");
  cmd.add_option("--price-per-gpu-hour", r.price_per_gpu_hour, "Your own price in USD per GPU-hour");
  cmd.add_option("--power-utilization", r.power_utilization, "Average power draw as a share of TDP (default 1.0)");
  cmd.add_option("--pue", r.pue, "Data-centre power usage effectiveness (default 1.2)");
  cmd.add_option("--grid-intensity", r.grid_intensity, "Grid CO2 intensity in kg/kWh (for CO2)");
}

namespace {

// Tokens, FLOPs, and with a device: time, cost, energy.
void add_run_report(nlohmann::json& report, const ModelSpec& spec, const TrainingWorkload& w, const RunOptions& r,
                    const Catalog& cat, const Device* device, Params trainable_on_gpu,
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
  } else {
    tokens = Tokens(static_cast<std::int64_t>(chinchilla_tokens_per_param * double(counts.active.in(unit::params))));
    basis = "default: 20 tokens per active parameter, compute-optimal (Hoffmann et al. 2022)";
  }
  const TrainingFlops f = training_flops(spec, tokens, w.seq, w.recompute);
  report["compute"] = {{"tokens", tokens.in(unit::tokens)},
                       {"tokens_basis", basis},
                       {"flops", f.model.in(unit::flop)},
                       {"hardware_flops", f.hardware.in(unit::flop)},
                       {"flops_per_token", f.flops_per_token},
                       {"matmul_params", f.matmul_params.in(unit::params)},
                       {"formula", "6·N + 12·L·H·Q·T per token (PaLM appendix B); hardware adds recomputation"}};
  report["time"] = nullptr;
  report["cost"] = nullptr;
  report["energy"] = nullptr;
  if (!device) {
    report["assumptions"].push_back("time, cost and energy need --gpu (and --gpus/--nodes)");
    return;
  }
  const ComputeFormat format = compute_format(w.precision);
  const auto peak = peak_for(*device, format);
  if (!peak)
    throw InputError("--gpu " + device->id + " has no peak rate for --precision " +
                     std::string(spell<Precision>(precision_names, w.precision)));
  const MfuDefault def = default_mfu(*device, format);
  const double mfu = r.mfu > 0 ? r.mfu : def.mfu;
  const std::int64_t gpus = w.gpus;  // already gpus × nodes
  // Per optimizer step: the collectives on the critical path (tensor, expert), the data-parallel ones (overlapped
  // with backward up to 2/3 of the step), the host optimizer step under offload.
  double critical = 0, data = 0;
  for (const auto& c : comms) {
    if (!c.time) continue;
    if (c.kind == "tensor" || c.kind == "expert") critical += c.time->in(unit::seconds);
    if (c.kind == "data") data += c.time->in(unit::seconds);
  }
  const double host = w.offload_optimizer != Offload::none
                          ? double(trainable_on_gpu.in(unit::params)) / double(w.zero >= 1 ? w.dp() : 1) * offload_seconds_per_param
                          : 0.0;
  const double steps = double(tokens.in(unit::tokens)) / double(w.batch * w.seq * w.grad_accum * w.dp());
  const RunTime rt = run_time(f.hardware.in(unit::flop), double(gpus), *peak, mfu, pipeline_bubble(w), steps, critical,
                              data, host);
  const TrainingTime t = training_time(f.hardware, gpus, std::max<std::int64_t>(1, gpus / r.nodes), FlopRate(*peak), mfu,
                                       pipeline_bubble(w), rt.exposed);
  report["time"] = {{"seconds", t.wall.in(unit::seconds)},
                    {"compute_seconds", t.compute_seconds},
                    {"bubble_seconds", t.bubble_seconds},
                    {"exposed_communication_seconds", t.exposed_seconds},
                    {"basis", "hardware FLOPs (recomputation included) at the MFU, plus the pipeline bubble and the "
                              "communication not hidden behind compute"},
                    {"days", t.wall.in(unit::seconds) / 86400.0},
                    {"gpu_hours", t.gpu_hours},
                    {"node_hours", t.node_hours},
                    {"gpus", gpus},
                    {"gpu", device->id},
                    {"peak_flops_per_gpu", *peak},
                    {"mfu", mfu},
                    {"mfu_basis", r.mfu > 0 ? std::string("--mfu") : def.basis}};
  // Cost: the user's price, else the cheapest matching offering; every alternative is listed.
  nlohmann::json alternatives = nlohmann::json::array();
  const auto priced = price_run(cat, *device, t.gpu_hours, r.spot, r.provider);
  for (const auto& p : priced)
    alternatives.push_back({{"provider", p.offering->provider},
                            {"instance", p.offering->instance},
                            {"usd_per_gpu_hour", p.per_gpu_hour.in(unit::usd_per_hour)},
                            {"usd", p.total.in(unit::usd)},
                            {"spot", p.spot},
                            {"as_of", p.offering->as_of}});
  if (r.price_per_gpu_hour < 0) throw InputError("--price-per-gpu-hour must be positive");
  if (r.price_per_gpu_hour > 0) {
    const Usd usd = Seconds(t.gpu_hours * 3600.0) * UsdPerHour(r.price_per_gpu_hour);
    report["cost"] = {{"usd", usd.in(unit::usd)},
                      {"usd_per_gpu_hour", r.price_per_gpu_hour},
                      {"price_basis", "--price-per-gpu-hour"},
                      {"alternatives", alternatives}};
  } else if (!priced.empty()) {
    const auto& best = priced.front();
    report["cost"] = {{"usd", best.total.in(unit::usd)},
                      {"usd_per_gpu_hour", best.per_gpu_hour.in(unit::usd_per_hour)},
                      {"price_basis", best.offering->provider + " " + best.offering->instance +
                                          (r.spot ? " (spot)" : " (on-demand)") + ", as of " + best.offering->as_of},
                      {"alternatives", alternatives}};
  } else {
    report["assumptions"].push_back("no " + std::string(r.spot ? "spot" : "on-demand") + " price in the catalog for " +
                                    device->id + (r.provider.empty() ? "" : " at " + r.provider) +
                                    ": pass --price-per-gpu-hour for cost");
  }
  if (device->tdp_watts) {
    EnergyAssumptions ea;
    ea.power_utilization = r.power_utilization;
    ea.pue = r.pue;
    if (r.grid_intensity >= 0) ea.grid_kg_per_kwh = r.grid_intensity;
    const Energy e = run_energy(t.gpu_hours, *device->tdp_watts, ea);
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
  nlohmann::json report = train_report(o);
  return emit_report(report, o.limits, format, &render_train_table, out, err);
}

nlohmann::json train_report(const TrainOptions& o) {
  TrainingWorkload w = o.workload;
  w.precision = parse_enum<Precision>(precision_names, o.precision, "precision");
  w.optimizer = parse_enum<Optimizer>(optimizer_names, o.optimizer, "optimizer");
  w.attention = parse_enum<Attention>(attention_names, o.attention, "attention");
  w.profile = parse_enum<Profile>(profile_names, o.profile, "profile");
  w.recompute = o.grad_checkpointing ? Recompute::full
                : o.recompute.empty() ? Recompute::none
                                      : parse_enum<Recompute>(recompute_names, o.recompute, "recompute");
  if (!o.lora_targets.empty()) {
    std::stringstream ss(o.lora_targets);
    std::string t;
    while (std::getline(ss, t, ','))
      if (!t.empty()) w.lora.targets.push_back(t);
    if (w.lora.targets.empty()) throw InputError("--lora-targets: expected module names separated by commas");
  } else if (w.lora.rank > 0) {
    w.lora.targets = {"q_proj", "v_proj"};  // PEFT's default for Llama-family models
  }
  if (o.run.nodes < 1 || o.run.nodes > 100'000) throw InputError("--nodes must be between 1 and 100,000");
  std::int64_t shard_group = 0;  // hybrid_shard: ZeRO-3 inside a node, replicas across nodes
  if (!o.fsdp.empty()) {
    if (o.fsdp == "full_shard") w.zero = 3;
    else if (o.fsdp == "shard_grad_op") w.zero = 2;
    else if (o.fsdp == "no_shard") w.zero = 0;
    else if (o.fsdp == "hybrid_shard") { w.zero = 3; shard_group = w.gpus; }
    else throw InputError("unknown --fsdp \"" + o.fsdp + "\" (expected: full_shard, shard_grad_op, hybrid_shard, no_shard)");
  }
  w.offload_optimizer = parse_enum<Offload>(offload_names, o.offload_optimizer, "offload target");
  w.offload_params = parse_enum<Offload>(offload_names, o.offload_params, "offload target");
  if (o.network_gbps < 0) throw InputError("--network-bandwidth must be positive");
  if (w.gpus < 1 || w.gpus > 1'000'000) throw InputError("--gpus must be between 1 and 1,000,000");
  w.gpus *= o.run.nodes;
  const ModelSource source = resolve_model_source(o.model);
  const ModelSpec& spec = source.spec;
  // Hybrid sharding shards within a node: memory as ZeRO-3 over the node's GPUs.
  TrainingWorkload memory_w = w;
  if (shard_group > 0) memory_w.gpus = shard_group;
  const TrainingEstimate est = estimate_training_memory(spec, memory_w);
  nlohmann::json report = training_json(spec, w, est);
  report["model"]["source"] = source.json();
  if (source.checkpoint && !source.checkpoint->quantization.empty())
    report["assumptions"].push_back("the checkpoint is stored " + source.checkpoint->quantization +
                                    "; training memory is for weights in --precision (or NF4 with --qlora)");
  const Catalog cat = load_catalog(o.fit.catalogs);  // once per command: user files are parsed here only
  const Device* device = o.fit.gpu.empty() ? nullptr : &cat.get(o.fit.gpu);
  report["offload"] = {{"optimizer", spell<Offload>(offload_names, w.offload_optimizer)},
                       {"params", spell<Offload>(offload_names, w.offload_params)},
                       {"host_memory_bytes", est.host_memory.in(unit::bytes)},
                       {"nvme_bytes", est.nvme.in(unit::bytes)}};
  report["parallel"] = {{"data", w.dp()},       {"tensor", w.tp},  {"pipeline", w.pp}, {"virtual_stages", w.vpp},
                        {"sequence_parallel", w.sp}, {"context", w.cp}, {"expert", w.ep},
                        {"stage", est.stage.index}, {"stage_layers", est.stage.layers},
                        {"in_flight_microbatches", est.stage.in_flight},
                        {"pipeline_bubble_fraction", pipeline_bubble(w)}};
  std::vector<Communication> comms;
  {
    const PrecisionRecipe pr = recipe_of(w.precision);
    const bool lora = w.lora.rank > 0;
    comms.push_back(data_parallel_communication(w, double(est.shape.trainable_on_gpu.in(unit::params)),
                                                lora ? 4.0 : pr.weight, lora ? 4.0 : pr.grad));
    for (auto& c : model_parallel_communication(spec, w, est.stage.layers, pr.compute)) comms.push_back(std::move(c));
    const std::int64_t per_node = w.gpus / o.run.nodes;
    const std::optional<ByteRate> network =
        o.network_gbps > 0 ? std::optional<ByteRate>(ByteRate(o.network_gbps * 1e9)) : std::nullopt;
    nlohmann::json by_kind = nlohmann::json::array();
    double bytes = 0, seconds = 0;
    std::string names;
    for (auto& c : comms) {
      if (c.bytes_per_gpu.in(unit::bytes) <= 0) continue;
      if (device) time_communication(c, *device, group_spans_nodes(c, w, per_node), network);
      bytes += c.bytes_per_gpu.in(unit::bytes);
      if (c.time) seconds += c.time->in(unit::seconds);
      names += (names.empty() ? "" : "; ") + c.collectives;
      by_kind.push_back({{"parallelism", c.kind},
                         {"collectives", c.collectives},
                         {"bytes_per_gpu_per_step", c.bytes_per_gpu.in(unit::bytes)},
                         {"seconds_per_step", c.time ? nlohmann::json(c.time->in(unit::seconds)) : nlohmann::json(nullptr)},
                         {"link", c.time ? nlohmann::json(c.link) : nlohmann::json(nullptr)},
                         {"bandwidth_bytes_per_s", c.bandwidth ? nlohmann::json(c.bandwidth->in(unit::bytes_per_s))
                                                               : nlohmann::json(nullptr)},
                         {"across_nodes", c.across_nodes},
                         {"overlap", c.overlap}});
    }
    report["communication"] = {{"collectives", names.empty() ? comms.front().collectives : names},
                               {"bytes_per_gpu_per_step", bytes},
                               {"seconds_per_step", device && bytes > 0 ? nlohmann::json(seconds) : nlohmann::json(nullptr)},
                               {"by_parallelism", by_kind},
                               {"overlap", "seconds_per_step adds every collective without overlap; each entry says "
                                           "which ones frameworks hide behind compute"}};
  }

  add_run_report(report, spec, w, o.run, cat, device, est.shape.trainable_on_gpu, comms);
  if (device) {
    report["fit"] = fit_json(fit_on(*device, est.memory.total), w.gpus);
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
      return n == 1 && w.dp() == 1 ? est.memory.total : estimate_training_memory(spec, over(n)).memory.total;
    };
    auto lower = [&](std::int64_t n) { return training_memory_lower_bound(spec, over(n)); };
    auto rows = fit_table(cat.devices, est.memory.total, per_gpu, lower);
    for (auto& r : rows)
      if (r.gpus_needed) *r.gpus_needed *= replica;
    report["fit_table"] = fit_table_json(rows, "smallest power-of-two data-parallel degree (× tp·pp·cp GPUs per "
                                               "replica) with ZeRO-" + std::to_string(stage) +
                                                   " whose per-GPU estimate fits in the device's usable memory");
    // What the run would take and cost on each device that can hold it: at least as many GPUs as asked for, at
    // the device's default MFU, priced at its cheapest on-demand offering.
    const Flops flops(report["compute"]["hardware_flops"].get<double>());
    nlohmann::json options = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto& row = report["fit_table"]["devices"][i];
      const Device& d = *rows[i].device;
      const auto peak = peak_for(d, compute_format(w.precision));
      if (!rows[i].gpus_needed || !peak) continue;
      const std::int64_t n = std::max(*rows[i].gpus_needed, w.gpus);
      // Node-hours assume 8 GPUs per node (HGX/DGX boards; the catalog has no per-instance node size here).
      const TrainingTime t = training_time(flops, n, std::min<std::int64_t>(n, 8), FlopRate(*peak),
                                          o.run.mfu > 0 ? o.run.mfu : default_mfu(d, compute_format(w.precision)).mfu);
      row["run_gpus"] = n;
      row["run_days"] = t.wall.in(unit::seconds) / 86400.0;
      const auto priced = price_run(cat, d, t.gpu_hours, o.run.spot, o.run.provider);
      row["run_usd"] = priced.empty() ? nlohmann::json(nullptr) : nlohmann::json(priced.front().total.in(unit::usd));
      row["run_offering"] = priced.empty() ? nlohmann::json(nullptr)
                                           : nlohmann::json(priced.front().offering->provider + " " + priced.front().offering->instance);
    }
  }
  return report;
}

}  // namespace gpuplan::cli
