// gpuplan plan train | plan infer: options → plan_training / plan_serving → report → renderer.
#include <algorithm>
#include <functional>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "model_source.h"
#include "render.h"

namespace gpuplan::cli {

namespace {

void add_common(CLI::App& cmd, PlanCommon& o) {
  add_model_options(cmd, o.model);
  cmd.add_option("--objective", o.objective, "cost (default) | time");
  cmd.add_option("--top", o.top, "Setups to list (default 5)");
  cmd.add_option("--max-gpus", o.max_gpus, "At most this many GPUs");
  cmd.add_option("--budget", o.budget, "At most this many dollars ($2M, 500K)");
  cmd.add_option("--provider", o.provider, "Only this provider's offerings");
  cmd.add_option("--gpu", o.gpus, "Only these accelerators (comma-separated or repeated)")->delimiter(',');
  cmd.add_flag("--spot", o.spot, "Spot/preemptible prices (where published)");
  cmd.add_option("--catalog", o.catalogs, "Extra catalog file(s) (repeatable)");
  cmd.add_option("--format", o.format, "table (default) | json | csv | md");
}

std::string layout_text(const TrainingLayout& L) {
  return fmt::format("dp {} tp {} pp {}{} ZeRO-{} mb {}×{} recompute {}{}", L.dp(), L.tp, L.pp,
                     L.ep > 1 ? fmt::format(" ep {}", L.ep) : std::string(), L.zero, L.micro_batch, L.grad_accum,
                     spell<Recompute>(recompute_names, L.recompute),
                     L.offload != Offload::none ? " +CPU offload" : "");
}

std::string money(double usd) { return "$" + grouped(std::llround(usd)); }

// Days for long runs, hours for short ones.
std::string duration(double seconds) {
  return seconds >= 2 * 86400 ? fmt::format("{:.1f} d", seconds / 86400) : fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

void setup_plan(CLI::App& app, PlanOptions& o, bool with_options) {
  auto* plan = app.add_subcommand("plan", "The cheapest or fastest setups that fit: training or serving, across the catalogs");
  plan->require_subcommand(1);
  auto* t = plan->add_subcommand("train", "Search accelerators × GPUs × parallel layout × micro-batch × recomputation × offload × offering");
  t->footer("Examples:\n"
            "  gpuplan plan train --model llama-3.1-70b --tokens 2T\n"
            "  gpuplan plan train --model llama-3.1-8b --tokens 100B --objective time --budget 50K --deadline 7d\n"
            "  gpuplan plan train --params 13B --gpu h100,a100-80gb --provider lambda --format json");
  auto* i = plan->add_subcommand("infer", "Search accelerators × tensor parallelism × weight format × KV dtype × replicas (vLLM)");
  o.train_cmd = t;
  o.infer_cmd = i;
  if (!with_options) return;
  add_common(*t, o.train_common);
  auto& tr = o.train;
  t->add_option("--tokens", tr.tokens, "Training tokens (default: ≈ 20 per parameter, Hoffmann et al. 2022, to pre-train; "
                                       "per 1B tokens to fine-tune)");
  t->add_option("--dataset-tokens", tr.dataset_tokens, "Dataset size in tokens, with --epochs (instead of --tokens)");
  t->add_option("--epochs", tr.epochs, "Epochs over --dataset-tokens");
  t->add_flag("--fine-tune", tr.fine_tune, "A full fine-tune of a trained model (no compute-optimal token default)");
  t->add_option("--lora-rank", tr.lora_rank, "Plan a LoRA fine-tune of this rank (PEFT; adapters in fp32)");
  t->add_option("--lora-targets", tr.lora_targets, "Comma-separated target modules (default q_proj,v_proj), or all-linear");
  t->add_flag("--qlora", tr.qlora, "QLoRA: the frozen base in NF4 (needs --lora-rank)");
  t->add_option("--loss", tr.loss, "eager (default) | chunked[:N] | fused: the cross-entropy's kernels (as train --loss)");
  add_length_option(*t, "--seq", tr.seq, "Sequence length in tokens (4096, 4k)", defaults::seq);
  t->add_option("--global-batch", tr.global_batch,
                "Tokens per optimizer step (default 4M to pre-train, as Llama 2; 512K to fine-tune, as Tulu 3's SFT: "
                "128 × 4096)");
  t->add_option("--precision", tr.precision, "bf16 (default) | fp16 | fp8 | amp-bf16 | pure-bf16 | fp32 | ...");
  t->add_option("--optimizer", tr.optimizer, "adamw (default) | adamw-fused | adamw-8bit | paged-adamw-8bit | sgd | ...");
  t->add_option("--headroom", tr.headroom, "Usable memory to keep free (default 10%)");
  t->add_option("--deadline", tr.deadline, "Finish within this time (30d, 72h)");
  t->add_option("--mfu", tr.mfu, "State the end-to-end model FLOPs utilisation instead of the step-time model's");
  t->add_option("--network-bandwidth", tr.network_gbps, "Per-GPU network bandwidth between nodes in GB/s (default 50)");
  i->footer("Examples:\n"
            "  gpuplan plan infer --model llama-3.1-70b --concurrency 64 --prompt-len 4096 --new-tokens 512\n"
            "  gpuplan plan infer --model llama-3.1-8b --tokens-per-second 20000 --latency 40ms\n"
            "  gpuplan plan infer --model qwen2.5-72b --concurrency 16 --objective time --format json");
  add_common(*i, o.infer_common);
  auto& in = o.infer;
  add_length_option(*i, "--prompt-len", in.prompt_len, "Prompt tokens per request (1024, 1k)", defaults::prompt_len);
  add_length_option(*i, "--new-tokens", in.new_tokens, "Generated tokens per request", defaults::new_tokens);
  i->add_option("--concurrency", in.concurrency, "Requests served at once");
  i->add_option("--tokens-per-second", in.tokens_per_second, "Aggregate output tokens per second");
  i->add_option("--latency", in.latency, "Time per output token, at most (50ms)");
  i->add_option("--weights", in.weights,
                 "Weight formats to consider (default bf16,fp8,awq-int4 and the format the checkpoint ships in)")
      ->delimiter(',');
  i->add_option("--kv-dtype", in.kv, "KV-cache dtypes to consider (default bf16,fp8)")->delimiter(',');
  i->add_option("--engine-version", in.engine_version, "vLLM release X.Y[.Z] to plan with (default: the newest modelled)");
}

namespace {

nlohmann::json request_common(const PlanCommon& c, const ModelSpec& spec) {
  return {{"model", spec.name}, {"objective", c.objective}, {"top", c.top}, {"max_gpus", c.max_gpus},
          {"budget_usd", c.budget.empty() ? nlohmann::json(nullptr) : nlohmann::json(parse_usd(c.budget).in(unit::usd))},
          {"provider", c.provider.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.provider)},
          {"gpus", c.gpus}, {"spot", c.spot}};
}

ExitCode emit(const nlohmann::json& report, Format format, std::ostream& out, std::ostream& err,
              const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
              const std::function<void()>& table, const std::string& why_none = {}) {
  if (format == Format::json) render_json(report, out);
  else if (format == Format::table) table();
  else render_rows(header, rows, format == Format::md, out);
  if (report["best"].empty()) {
    err << "gpuplan: no setup meets the request"
        << (why_none.empty() ? " (see the constraints; relax --budget, --deadline, --max-gpus or the filters)"
                             : ": " + why_none)
        << "\n";
    return ExitCode::limit;
  }
  return ExitCode::ok;
}

// Nothing qualified: which bound failed and the setup closest to meeting it.
std::string why_none(const TrainingPlan& plan, const TrainingPlanRequest& req) {
  if (plan.failed_bound.empty()) return {};
  const auto& c = plan.closest;
  std::string closest = !c ? std::string()
                           : fmt::format("{} × {} ({})", c->layout.gpus, c->device->id, layout_text(c->layout));
  if (plan.failed_bound == "deadline")
    return fmt::format("the deadline ({}): the fastest setup that fits, {}, takes {}", duration(req.deadline->in(unit::seconds)),
                       closest, duration(c->time.in(unit::seconds)));
  if (plan.failed_bound == "budget")
    return fmt::format("the budget ({}): the cheapest setup that fits, {}, costs {}", money(req.budget->in(unit::usd)),
                       closest, money(c->cost.in(unit::usd)));
  if (plan.failed_bound == "headroom")
    return fmt::format("memory with {:.0f}% headroom: the closest, {}, needs {:.1f} GiB ({:.0f}% of the usable memory)",
                       100 * req.headroom, closest, c->memory.in(unit::bytes) / 1073741824.0, 100 * plan.closest_ratio);
  if (!c) return fmt::format("no offering can host a layout within --max-gpus {}", req.max_gpus);
  return fmt::format("memory within --max-gpus {}: the closest, {}, needs at least {:.1f} GiB per GPU, {:.0f}% of the "
                     "usable memory (a larger --max-gpus, or a memory saver: gpuplan train --gpu ... --advise)",
                     req.max_gpus, closest, c->screen_bytes / 1073741824.0, 100 * plan.closest_ratio);
}

}  // namespace

ExitCode run_plan_train(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  const PlanCommon& c = o.train_common;
  const Format format = parse_format(c.format);
  const ModelSpec spec = resolve_model(c.model);
  const auto& tr = o.train;
  TrainingPlanRequest req;
  req.base.precision = parse_enum<Precision>(precision_names, tr.precision, "precision");
  req.base.optimizer = parse_enum<Optimizer>(optimizer_names, tr.optimizer, "optimizer");
  req.base.seq = tr.seq;
  req.base.lora.rank = tr.lora_rank;
  req.base.lora.qlora = tr.qlora;
  std::tie(req.base.loss, req.base.loss_chunks) = parse_loss(tr.loss);
  if (tr.lora_rank > 0) req.base.lora.targets = split_targets(tr.lora_targets);
  else if (!tr.lora_targets.empty()) throw InputError("--lora-targets and --qlora need --lora-rank");
  const bool fine_tune = tr.fine_tune || tr.lora_rank > 0;
  std::string tokens_basis;
  if (!tr.tokens.empty() && (tr.epochs != 0 || !tr.dataset_tokens.empty()))
    throw InputError("--tokens excludes --epochs/--dataset-tokens");
  if ((tr.epochs != 0) != !tr.dataset_tokens.empty()) throw InputError("--epochs and --dataset-tokens go together");
  if (tr.epochs < 0 || tr.epochs > 1e6) throw InputError("--epochs must be between 0 and 1e6");
  if (!tr.tokens.empty()) {
    req.tokens = parse_tokens(tr.tokens);
    tokens_basis = "--tokens";
  } else if (tr.epochs > 0) {
    req.tokens = Tokens(std::llround(tr.epochs * double(parse_tokens(tr.dataset_tokens).in(unit::tokens))));
    tokens_basis = "--epochs × --dataset-tokens";
  } else if (fine_tune) {
    req.tokens = Tokens(fine_tune_default_tokens);
    tokens_basis = "per 1B tokens: a fine-tune has no compute-optimal token count (pass --dataset-tokens and --epochs)";
  } else {
    req.tokens = Tokens(std::llround(chinchilla_tokens_per_param * double(count_params(spec).active.in(unit::params))));
    tokens_basis = "default: 20 tokens per active parameter, compute-optimal for pre-training (Hoffmann et al. 2022)";
  }
  req.global_batch_tokens =
      !tr.global_batch.empty() ? double(parse_tokens(tr.global_batch).in(unit::tokens)) : default_global_batch_tokens(fine_tune);
  req.headroom = parse_fraction(tr.headroom);
  req.objective = parse_enum<Objective>(objective_names, c.objective, "objective");
  req.top = c.top;
  req.max_gpus = c.max_gpus;
  if (!tr.deadline.empty()) req.deadline = parse_duration(tr.deadline);
  if (!c.budget.empty()) req.budget = parse_usd(c.budget);
  req.provider = c.provider;
  req.gpus = c.gpus;
  req.spot = c.spot;
  if (tr.mfu != 0) {
    if (!(tr.mfu > 0 && tr.mfu <= 1)) throw InputError("--mfu must be in (0, 1]");
    req.mfu = tr.mfu;
  }
  if (tr.network_gbps < 0) throw InputError("--network-bandwidth must be positive");
  if (tr.network_gbps > 0) req.network = ByteRate(tr.network_gbps * 1e9);
  const Catalog cat = load_catalog(c.catalogs);
  const TrainingPlan plan = plan_training(spec, req, cat);

  nlohmann::json request = request_common(c, spec);
  request.update({{"tokens", req.tokens.in(unit::tokens)},
                  {"tokens_basis", tokens_basis},
                  {"lora", tr.lora_rank > 0 ? nlohmann::json{{"rank", tr.lora_rank}, {"targets", req.base.lora.targets},
                                                             {"qlora", tr.qlora}}
                                            : nlohmann::json(nullptr)},
                  {"seq", req.base.seq},
                  {"global_batch_tokens", req.global_batch_tokens},
                  {"precision", tr.precision},
                  {"optimizer", tr.optimizer},
                  {"headroom", req.headroom},
                  {"deadline_seconds", req.deadline ? nlohmann::json(req.deadline->in(unit::seconds)) : nlohmann::json(nullptr)}});
  nlohmann::json best = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (std::size_t k = 0; k < plan.best.size(); ++k) {
    const auto& b = plan.best[k];
    const auto& L = b.layout;
    const double cap = b.device->capacity().in(unit::bytes);
    best.push_back({{"rank", k + 1},
                    {"gpu", b.device->id},
                    {"provider", b.rental.offering->provider},
                    {"instance", b.rental.offering->instance},
                    {"gpus", L.gpus},
                    {"instances", b.rental.instances},
                    {"gpus_per_instance", b.rental.gpus_per_instance},
                    {"layout", {{"data", L.dp()}, {"tensor", L.tp}, {"pipeline", L.pp}, {"expert", L.ep}, {"zero", L.zero},
                                {"micro_batch", L.micro_batch}, {"grad_accum", L.grad_accum},
                                {"recompute", spell<Recompute>(recompute_names, L.recompute)},
                                {"offload", spell<Offload>(offload_names, L.offload)}}},
                    {"memory_bytes", b.memory.in(unit::bytes)},
                    {"capacity_bytes", cap},
                    {"headroom_fraction", 1 - b.memory.in(unit::bytes) / cap},
                    {"peak_phase", b.peak_phase},
                    {"seconds", b.time.in(unit::seconds)},
                    {"compute_seconds", b.compute_seconds},
                    {"bubble_seconds", b.bubble_seconds},
                    {"exposed_communication_seconds", b.exposed_comm_seconds},
                    {"mfu", b.mfu},
                    {"usd_per_gpu_hour", b.rental.per_gpu_hour().in(unit::usd_per_hour)},
                    {"usd", b.cost.in(unit::usd)},
                    {"cost", {{"usd", b.cost.in(unit::usd)}, {"instance", instance_json(b.rental)}, {"instances", b.rental.instances}}},
                    {"price_as_of", b.rental.offering->as_of}});
    rows.push_back({std::to_string(k + 1), b.device->id, std::to_string(L.gpus),
                    instances_text(b.rental), layout_text(L),
                    fmt::format("{:.1f}/{:.1f}", b.memory.in(unit::bytes) / 1073741824.0, cap / 1073741824.0),
                    duration(b.time.in(unit::seconds)), money(b.cost.in(unit::usd))});
  }
  std::string why;
  if (!plan.best.empty()) {
    const auto& w = plan.best.front();
    why = fmt::format("{} × {} on {} is the {} setup that fits with {:.0f}% headroom ({}): {} over {}", w.layout.gpus,
                      w.device->id, w.rental.offering->provider, req.objective == Objective::cost ? "cheapest" : "fastest",
                      100 * (1 - w.memory.in(unit::bytes) / w.device->capacity().in(unit::bytes)), layout_text(w.layout),
                      money(w.cost.in(unit::usd)), duration(w.time.in(unit::seconds)));
    why += fmt::format(" ({} at ${:.2f}/h each, as of {})", instances_text(w.rental), w.rental.per_instance.in(unit::usd_per_hour),
                       w.rental.offering->as_of);
    if (plan.best.size() > 1) {
      const auto& n = plan.best[1];
      why += req.objective == Objective::cost
                 ? fmt::format("; the next ({} × {}) costs {:.0f}% more", n.layout.gpus, n.device->id,
                               100 * (n.cost.in(unit::usd) / w.cost.in(unit::usd) - 1))
                 : fmt::format("; the next ({} × {}) takes {:.0f}% longer", n.layout.gpus, n.device->id,
                               100 * (n.time.in(unit::seconds) / w.time.in(unit::seconds) - 1));
    }
  }
  const nlohmann::json report{{"schema", schema_id},
                              {"command", "plan train"},
                              {"request", request},
                              {"search", {{"configurations", plan.evaluated}, {"layouts", plan.layouts},
                                          {"candidates", plan.candidates}, {"verified", plan.verified},
                                          {"rejected_by_full_estimate", plan.rejected}}},
                              {"model_flops", plan.model_flops.in(unit::flop)},
                              {"best", best},
                              {"why", best.empty() ? nlohmann::json(nullptr) : nlohmann::json(why)},
                              {"no_setup", plan.failed_bound.empty() ? nlohmann::json(nullptr)
                                                                     : nlohmann::json{{"bound", plan.failed_bound},
                                                                                      {"closest", why_none(plan, req)}}},
                              {"assumptions", plan.assumptions}};
  const std::vector<std::string> header{"rank", "gpu", "gpus", "offering", "layout", "memory GiB (used/usable)", "time", "cost"};
  return emit(report, format, out, err, header, rows, [&] {
    fmt::print(out, "Plan       {} {} on {} tokens ({} precision, {} optimizer, seq {}, global batch {} tokens), by {}\n",
               tr.lora_rank > 0 ? fmt::format("{} rank {}", tr.qlora ? "QLoRA" : "LoRA", tr.lora_rank) : std::string("train"),
               spec.name, short_count(double(req.tokens.in(unit::tokens))), tr.precision, tr.optimizer, req.base.seq,
               short_count(req.global_batch_tokens), c.objective);
    fmt::print(out, "Tokens     {}\n", tokens_basis);
    render_columns(header, rows, out);
    if (!why.empty()) fmt::print(out, "\nWhy        {}\n", why);
    fmt::print(out, "Searched   {} configurations ({} layouts); {} within the screen and constraints; {} checked with the "
                    "full estimator, {} dropped over the headroom\n",
               grouped(plan.evaluated), grouped(plan.layouts), grouped(plan.candidates), plan.verified, plan.rejected);
    fmt::print(out, "\nAssumptions:\n");
    for (const auto& a : plan.assumptions) fmt::print(out, "  - {}\n", a);
  }, why_none(plan, req));
}

ExitCode run_plan_infer(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  const PlanCommon& c = o.infer_common;
  const Format format = parse_format(c.format);
  const ModelSource source = resolve_model_source(c.model);
  const ModelSpec& spec = source.spec;
  const auto& in = o.infer;
  ServingPlanRequest req;
  req.prompt_len = in.prompt_len;
  req.new_tokens = in.new_tokens;
  if (req.prompt_len < 1 || req.prompt_len > 10'000'000) throw InputError("--prompt-len must be between 1 and 10,000,000");
  if (req.new_tokens < 1 || req.new_tokens > 10'000'000) throw InputError("--new-tokens must be between 1 and 10,000,000");
  if (in.concurrency != 0) req.concurrency = in.concurrency;
  if (in.tokens_per_second != 0) req.tokens_per_second = in.tokens_per_second;
  if (!in.latency.empty()) req.latency = parse_duration(in.latency);
  if (!in.engine_version.empty()) req.engine_version = parse_engine_version(in.engine_version, false);
  req.objective = parse_enum<Objective>(objective_names, c.objective, "objective");
  req.top = c.top;
  req.max_gpus = c.max_gpus;
  req.provider = c.provider;
  req.gpus = c.gpus;
  req.spot = c.spot;
  if (!in.weights.empty()) {
    req.weights.clear();
    for (const auto& w : in.weights) req.weights.push_back(parse_enum<WeightFormat>(weight_format_names, w, "weight format"));
  } else if (!source.shipped_weights.empty()) {  // the format the checkpoint is released in is a candidate too
    const WeightFormat shipped = parse_enum<WeightFormat>(weight_format_names, source.shipped_weights, "weight format");
    if (std::find(req.weights.begin(), req.weights.end(), shipped) == req.weights.end()) req.weights.push_back(shipped);
  }
  if (!in.kv.empty()) {
    req.kv.clear();
    for (const auto& k : in.kv) req.kv.push_back(parse_enum<KvDtype>(kv_dtype_names, k, "KV dtype"));
  }
  const Catalog cat = load_catalog(c.catalogs);
  ServingPlan plan = plan_serving(spec, req, cat);
  std::optional<Usd> budget;
  if (!c.budget.empty()) budget = parse_usd(c.budget);  // per hour of serving
  if (budget)
    std::erase_if(plan.best, [&](const ServingCandidate& s) { return s.rental.per_hour().in(unit::usd_per_hour) > budget->in(unit::usd); });

  nlohmann::json request = request_common(c, spec);
  request["budget_meaning"] = "USD per hour of serving";
  request.update({{"prompt_len", req.prompt_len},
                  {"new_tokens", req.new_tokens},
                  {"concurrency", req.concurrency ? nlohmann::json(*req.concurrency) : nlohmann::json(nullptr)},
                  {"tokens_per_second", req.tokens_per_second ? nlohmann::json(*req.tokens_per_second) : nlohmann::json(nullptr)},
                  {"latency_seconds", req.latency ? nlohmann::json(req.latency->in(unit::seconds)) : nlohmann::json(nullptr)}});
  nlohmann::json best = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (std::size_t k = 0; k < plan.best.size(); ++k) {
    const auto& b = plan.best[k];
    best.push_back({{"rank", k + 1},
                    {"gpu", b.device->id},
                    {"provider", b.rental.offering->provider},
                    {"instance", b.rental.offering->instance},
                    {"tp", b.tp},
                    {"replicas", b.replicas},
                    {"gpus", b.tp * b.replicas},
                    {"instances", b.rental.instances},
                    {"weights", spell<WeightFormat>(weight_format_names, b.weights)},
                    {"kv_dtype", spell<KvDtype>(kv_dtype_names, b.kv)},
                    {"weight_bytes_per_gpu", b.weight_bytes.in(unit::bytes)},
                    {"max_concurrency_per_replica", b.max_concurrency},
                    {"batch_per_replica", b.batch},
                    {"decode_tokens_per_s", b.decode_tokens_per_s},
                    {"per_token_latency_seconds", b.token_latency.in(unit::seconds)},
                    {"usd_per_hour", b.rental.per_hour().in(unit::usd_per_hour)},
                    {"usd_per_million_output_tokens", b.usd_per_million_output_tokens},
                    {"cost", {{"usd_per_hour", b.rental.per_hour().in(unit::usd_per_hour)}, {"instance", instance_json(b.rental)},
                              {"instances", b.rental.instances}}},
                    {"price_as_of", b.rental.offering->as_of}});
    rows.push_back({std::to_string(k + 1), b.device->id, fmt::format("{}×{}", b.replicas, b.tp),
                    instances_text(b.rental),
                    std::string(spell<WeightFormat>(weight_format_names, b.weights)) + "/" +
                        std::string(spell<KvDtype>(kv_dtype_names, b.kv)),
                    fmt::format("{:.0f}", b.decode_tokens_per_s), fmt::format("{:.1f}", 1000 * b.token_latency.in(unit::seconds)),
                    fmt::format("{:.2f}", b.rental.per_hour().in(unit::usd_per_hour)), fmt::format("{:.3f}", b.usd_per_million_output_tokens)});
  }
  std::string why;
  if (!plan.best.empty()) {
    const auto& w = plan.best.front();
    why = fmt::format("{} replica(s) of {} × {} ({} weights, {} KV) on {}: {:.0f} output tokens/s at {:.1f} ms per token, "
                      "${:.3f} per 1M output tokens",
                      w.replicas, w.tp, w.device->id, spell<WeightFormat>(weight_format_names, w.weights),
                      spell<KvDtype>(kv_dtype_names, w.kv), w.rental.offering->provider, w.decode_tokens_per_s,
                      1000 * w.token_latency.in(unit::seconds), w.usd_per_million_output_tokens);
    why += fmt::format(" ({} at ${:.2f}/h each, as of {})", instances_text(w.rental), w.rental.per_instance.in(unit::usd_per_hour),
                       w.rental.offering->as_of);
  }
  const nlohmann::json report{{"schema", schema_id},
                              {"command", "plan infer"},
                              {"request", request},
                              {"search", {{"configurations", plan.evaluated}}},
                              {"best", best},
                              {"why", best.empty() ? nlohmann::json(nullptr) : nlohmann::json(why)},
                              {"assumptions", plan.assumptions}};
  const std::vector<std::string> header{"rank", "gpu", "replicas×tp", "offering", "weights/KV", "tokens/s", "ms/token", "$/hour", "$/1M out"};
  return emit(report, format, out, err, header, rows, [&] {
    fmt::print(out, "Plan       serve {} ({} + {} tokens per request), by {}\n", spec.name, req.prompt_len, req.new_tokens,
               c.objective);
    render_columns(header, rows, out);
    if (!why.empty()) fmt::print(out, "\nWhy        {}\n", why);
    fmt::print(out, "Searched   {} configurations\n\nAssumptions:\n", grouped(plan.evaluated));
    for (const auto& a : plan.assumptions) fmt::print(out, "  - {}\n", a);
  });
}

}  // namespace gpuplan::cli
