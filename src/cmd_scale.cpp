// gpuplan scale: compute-optimal model size and tokens for a compute, dollar or GPU-hour budget.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

void setup_scale(CLI::App& app, ScaleOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("scale", "Compute-optimal parameters and tokens for a budget (Chinchilla), with predicted loss");
  if (!with_options) return;
  cmd->footer(
      "Examples:\n"
      "  gpuplan scale --compute 5.76e23\n"
      "  gpuplan scale --budget 1M --gpu h100 --provider lambda\n"
      "  gpuplan scale --gpu-hours 100000 --gpu a100-80gb --format json");
  auto* c = cmd->add_option("--compute", o.compute, "Training compute in FLOPs (1e24)");
  auto* b = cmd->add_option("--budget", o.budget, "Dollars to spend ($1M, 250K), with --gpu");
  auto* h = cmd->add_option("--gpu-hours", o.gpu_hours, "GPU-hours to spend, with --gpu");
  c->excludes(b)->excludes(h);
  b->excludes(h);
  cmd->add_option("--gpu", o.gpu, "Accelerator that turns dollars or hours into FLOPs");
  cmd->add_option("--precision", o.precision, "Precision whose dense peak is used (default bf16)");
  cmd->add_option("--mfu", o.mfu, "Model FLOPs utilisation (default by device class, printed)");
  cmd->add_option("--provider", o.provider, "Price from this provider's offerings (with --budget)");
  cmd->add_option("--approach", o.approach, "Default approach: chinchilla-1, chinchilla-2, chinchilla-3, epoch-2024 (default)");
  cmd->add_option("--catalog", o.catalogs, "Extra catalog file(s) (repeatable)");
  cmd->add_option("--format", o.format, "table (default) | json | csv | md");
}

namespace {
nlohmann::json point_json(const ScalingPoint& p) {
  return {{"approach", p.approach},
          {"params", p.params.in(unit::params)},
          {"tokens", p.tokens.in(unit::tokens)},
          {"tokens_per_param", p.tokens_per_param},
          {"loss", p.loss_epoch},
          {"loss_chinchilla_constants", p.loss_chinchilla},
          {"loss_epoch_constants", p.loss_epoch}};
}
}  // namespace

ExitCode run_scale(const ScaleOptions& o, std::ostream& out) {
  const Format format = parse_format(o.format);
  const ScalingApproach* chosen = nullptr;
  std::string names;
  for (const auto& a : scaling_approaches()) {
    names += (names.empty() ? "" : ", ") + a.id;
    if (a.id == o.approach) chosen = &a;
  }
  if (!chosen) throw InputError("unknown approach \"" + o.approach + "\" (expected: " + names + ")");
  nlohmann::json report{{"schema", schema_id}, {"command", "scale"}};
  nlohmann::json assumptions = nlohmann::json::array();
  Flops budget(0);
  if (!o.compute.empty()) {
    budget = parse_flops(o.compute);
    report["budget"] = {{"flops", budget.in(unit::flop)}};
  } else {
    if (o.budget.empty() && !(o.gpu_hours > 0))
      throw InputError("give --compute FLOPs, or --budget $ or --gpu-hours with --gpu");
    if (o.gpu.empty()) throw InputError("--budget and --gpu-hours need --gpu");
    const Catalog cat = load_catalog(o.catalogs);
    const Device& d = cat.get(o.gpu);
    const ComputeFormat f = compute_format(parse_enum<Precision>(precision_names, o.precision, "precision"));
    const auto peak = peak_for(d, f);
    if (!peak) throw InputError("--gpu " + d.id + " has no peak rate for --precision " + o.precision);
    const MfuDefault def = default_mfu(d, f);
    const double mfu = o.mfu > 0 ? o.mfu : def.mfu;
    if (!(mfu > 0 && mfu <= 1)) throw InputError("--mfu must be in (0, 1]");
    double hours = o.gpu_hours;
    nlohmann::json price = nullptr;
    if (!o.budget.empty()) {
      const Usd usd = parse_usd(o.budget);
      // A compute-optimal budget is a pre-training run: priced as train prices one (cost.h) on 8-GPU nodes (the
      // HGX/DGX boards train's fit table lays runs out on), several of them linked by the network.
      const Setup run{2 * 8, 8, true};
      const auto rentals = price_setup(cat, d, run, false, o.provider);
      if (rentals.empty())
        throw InputError("no on-demand offering of " + d.id + (o.provider.empty() ? "" : " at " + o.provider) +
                         " holds an 8-GPU node in one instance");
      const auto& best = rentals.front();
      hours = usd.in(unit::usd) / best.per_gpu_hour().in(unit::usd_per_hour);
      price = {{"usd", usd.in(unit::usd)}, {"usd_per_gpu_hour", best.per_gpu_hour().in(unit::usd_per_hour)},
               {"offering", best.offering->provider + " " + best.offering->instance}, {"as_of", best.offering->as_of},
               {"instance", instance_json(best)}};
    }
    if (!(hours > 0) || hours > 1e12) throw InputError("--gpu-hours must be positive");
    budget = Flops(hours * 3600.0 * *peak * mfu);
    report["budget"] = {{"flops", budget.in(unit::flop)}, {"gpu_hours", hours}, {"gpu", d.id}, {"peak_flops_per_gpu", *peak},
                        {"mfu", mfu}, {"mfu_basis", o.mfu > 0 ? std::string("--mfu") : def.basis}, {"price", price}};
  }
  nlohmann::json approaches = nlohmann::json::object();
  for (const auto& a : scaling_approaches()) approaches[a.id] = point_json(compute_optimal(a, budget));
  report["optimal"] = approaches[chosen->id];
  report["approaches"] = approaches;
  nlohmann::json table = nlohmann::json::array();
  for (double k : {0.01, 0.1, 1.0, 10.0, 100.0}) {
    const ScalingPoint p = compute_optimal(*chosen, budget * k);
    nlohmann::json row = point_json(p);
    row["flops"] = budget.in(unit::flop) * k;
    table.push_back(row);
  }
  report["budgets"] = table;
  assumptions.push_back("C = 6·N·D; approaches 1 and 2 scale as C^0.50 and C^0.49 from their optima at Gopher's "
                        "budget (67B and 63B at 5.76e23 FLOPs, Hoffmann et al. §3); approach 3 and Epoch use the "
                        "closed form of their loss fits; loss = the Epoch AI fit unless named");
  report["assumptions"] = assumptions;
  if (format == Format::json) {
    render_json(report, out);
    return ExitCode::ok;
  }
  if (format == Format::csv || format == Format::md) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [id, p] : approaches.items())
      rows.push_back({id, std::to_string(p["params"].get<std::int64_t>()), std::to_string(p["tokens"].get<std::int64_t>()),
                      fmt::format("{:.2f}", p["tokens_per_param"].get<double>()),
                      fmt::format("{:.4f}", p["loss_chinchilla_constants"].get<double>()),
                      fmt::format("{:.4f}", p["loss_epoch_constants"].get<double>())});
    render_rows({"approach", "params", "tokens", "tokens_per_param", "loss_chinchilla", "loss_epoch"}, rows,
                format == Format::md, out);
    return ExitCode::ok;
  }
  fmt::print(out, "Budget     {:.3g} FLOPs", budget.in(unit::flop));
  if (report["budget"].contains("gpu_hours"))
    fmt::print(out, " ({:.0f} {} GPU-hours at {:.0f}% MFU)", report["budget"]["gpu_hours"].get<double>(),
               report["budget"]["gpu"].get<std::string>(), 100 * report["budget"]["mfu"].get<double>());
  fmt::print(out, "\n\n{:<14} {:>14} {:>14} {:>10} {:>8} {:>8}\n", "approach", "params", "tokens", "tok/param", "loss C", "loss E");
  for (const auto& [id, p] : approaches.items())
    fmt::print(out, "{:<14} {:>14} {:>14} {:>10.1f} {:>8.3f} {:>8.3f}{}\n", id, short_count(p["params"].get<double>()),
               short_count(p["tokens"].get<double>()), p["tokens_per_param"].get<double>(),
               p["loss_chinchilla_constants"].get<double>(), p["loss_epoch_constants"].get<double>(),
               id == chosen->id ? "  <- default" : "");
  fmt::print(out, "\nOver budgets ({}):\n{:>12} {:>14} {:>14}\n", chosen->id, "FLOPs", "params", "tokens");
  for (const auto& r : table)
    fmt::print(out, "{:>12.3g} {:>14} {:>14}\n", r["flops"].get<double>(), short_count(r["params"].get<double>()),
               short_count(r["tokens"].get<double>()));
  fmt::print(out, "\nLoss C / E: L(N, D) with Hoffmann et al. 2022 / Besiroglu et al. 2024 constants.\n");
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
