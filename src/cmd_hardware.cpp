// gpuplan hardware list|show and gpuplan prices: the catalogs.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

namespace {
std::string tflops(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v / 1e12) : "-"; }

}  // namespace

void setup_hardware(CLI::App& app, HardwareOptions& o, bool with_options) {
  auto* hw = app.add_subcommand("hardware", "The accelerator catalog (dense peak FLOPS, memory, bandwidth, sources)");
  if (!with_options) return;
  hw->require_subcommand(1);
  auto* list = hw->add_subcommand("list", "List accelerators");
  list->footer("Examples:\n  gpuplan hardware list --vendor nvidia --min-memory 80GB\n  gpuplan hardware list --format json");
  list->add_option("--vendor", o.vendor, "Only this vendor (nvidia, amd, google, aws, intel)");
  list->add_option("--min-memory", o.min_memory, "Only devices with at least this much memory (80GB, 24GiB)");
  list->add_option("--format", o.format, "table (default) | json | csv | md");
  list->add_option("--catalog", o.catalogs, "Extra catalog file(s) that add or override entries (repeatable)");
  auto* show = hw->add_subcommand("show", "Every field of one accelerator, with its sources");
  show->footer("Example:\n  gpuplan hardware show h100");
  show->add_option("id", o.show_id, "Device id or alias")->required();
  show->add_option("--format", o.format, "table (default) | json | csv | md");
  show->add_option("--catalog", o.catalogs, "Extra catalog file(s) (repeatable)");
  o.list_cmd = list;
  o.show_cmd = show;
}

void setup_prices(CLI::App& app, PricesOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("prices", "Cloud offerings: on-demand and published spot prices, with dates and sources");
  if (!with_options) return;
  cmd->footer("Examples:\n  gpuplan prices --gpu h100\n  gpuplan prices --provider aws --format json");
  cmd->add_option("--gpu", o.gpu, "Only offerings of this accelerator");
  cmd->add_option("--provider", o.provider, "Only this provider (aws, gcp, azure, lambda, coreweave, runpod, vast.ai)");
  cmd->add_option("--format", o.format, "table (default) | json | csv | md");
  cmd->add_option("--catalog", o.catalogs, "Extra catalog file(s) (repeatable)");
}

ExitCode run_hardware(const HardwareOptions& o, std::ostream& out) {
  const Catalog cat = load_catalog(o.catalogs);
  if (o.show_cmd && o.show_cmd->parsed()) {
    const Device& d = cat.get(o.show_id);
    auto j = device_json(d);
    if (o.format == "json") {
      j["schema"] = schema_id;
      render_json(j, out);
      return ExitCode::ok;
    }
    const Format f = parse_format(o.format);
    if (f == Format::table) {
      for (const auto& [k, v] : j.items()) fmt::print(out, "{:<30} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    } else {
      std::vector<std::vector<std::string>> rows;
      for (const auto& [k, v] : j.items()) rows.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
      render_rows({"field", "value"}, rows, f == Format::md, out);
    }
    return ExitCode::ok;
  }
  std::optional<Bytes> min_memory;
  if (!o.min_memory.empty()) min_memory = parse_bytes(o.min_memory);
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<const Device*> rows;
  for (const auto& d : cat.devices) {
    if (!o.vendor.empty() && lower(d.vendor).rfind(lower(o.vendor), 0) != 0) continue;
    if (min_memory && d.memory < *min_memory && d.capacity() < *min_memory) continue;
    rows.push_back(&d);
  }
  if (o.format == "json") {
    nlohmann::json a = nlohmann::json::array();
    for (const auto* d : rows) a.push_back(device_json(*d));
    render_json(a, out);
  } else if (o.format == "csv" || o.format == "md") {
    std::vector<std::vector<std::string>> cells;
    for (const auto* d : rows)
      cells.push_back({d->id, d->name, d->vendor, fmt::format("{:.0f}", d->memory.in(unit::bytes)),
                    d->usable_memory ? fmt::format("{:.0f}", d->usable_memory->in(unit::bytes)) : "",
                    fmt::format("{:.0f}", d->memory_bandwidth.in(unit::bytes_per_s)),
                    d->peak.bf16 ? fmt::format("{:.0f}", *d->peak.bf16) : "", d->peak.fp8 ? fmt::format("{:.0f}", *d->peak.fp8) : "",
                    d->tdp_watts ? fmt::format("{:.0f}", *d->tdp_watts) : ""});
    render_rows({"id", "name", "vendor", "memory_bytes", "usable_memory_bytes", "memory_bandwidth_bytes_per_s", "bf16_flops",
                 "fp8_flops", "tdp_watts"}, cells, o.format == "md", out);
  } else if (o.format == "table") {
    fmt::print(out, "{:<18} {:<44} {:>9} {:>10} {:>8} {:>9} {:>9} {:>6}\n", "id", "name", "memory", "usable", "TB/s",
               "bf16 TF", "fp8 TF", "TDP W");
    // Memory in GiB, the unit DRAM and HBM come in (an "80 GB" H100 is 80 GiB), so usable never reads above it.
    for (const auto* d : rows)
      fmt::print(out, "{:<18} {:<44} {:>9} {:>10} {:>8.2f} {:>9} {:>9} {:>6}\n", d->id, d->name.substr(0, 44),
                 fmt::format("{:.0f} GiB", d->memory.in(unit::bytes) / 1073741824.0),
                 d->usable_memory ? gib(d->usable_memory->in(unit::bytes)) : "-",
                 d->memory_bandwidth.in(unit::bytes_per_s) / 1e12, tflops(d->peak.bf16), tflops(d->peak.fp8),
                 d->tdp_watts ? fmt::format("{:.0f}", *d->tdp_watts) : "-");
    fmt::print(out, "\nDense peaks (no 2:4 sparsity); GeForce rates with fp32 accumulate. `gpuplan hardware show ID` for sources.\n");
  } else {
    throw InputError("unknown format \"" + o.format + "\" (expected: table, json, csv, md)");
  }
  return ExitCode::ok;
}

ExitCode run_prices(const PricesOptions& o, std::ostream& out) {
  const Catalog cat = load_catalog(o.catalogs);
  const Device* gpu = o.gpu.empty() ? nullptr : &cat.get(o.gpu);
  std::vector<const Offering*> rows;
  for (const auto& f : cat.offerings) {
    if (gpu && cat.find(f.accelerator) != gpu) continue;
    if (!o.provider.empty() && f.provider != o.provider) continue;
    rows.push_back(&f);
  }
  std::sort(rows.begin(), rows.end(), [](const Offering* a, const Offering* b) {
    const double x = a->per_accelerator_on_demand() ? a->per_accelerator_on_demand()->in(unit::usd_per_hour) : 1e9;
    const double y = b->per_accelerator_on_demand() ? b->per_accelerator_on_demand()->in(unit::usd_per_hour) : 1e9;
    return x < y;
  });
  auto usd = [](const std::optional<UsdPerHour>& x) { return x ? fmt::format("{:.3f}", x->in(unit::usd_per_hour)) : std::string("-"); };
  if (o.format == "json") {
    nlohmann::json a = nlohmann::json::array();
    for (const auto* f : rows) a.push_back(offering_json(*f));
    render_json({{"schema", schema_id}, {"command", "prices"}, {"offerings", a}}, out);
  } else if (o.format == "csv" || o.format == "md") {
    std::vector<std::vector<std::string>> cells;
    for (const auto* f : rows)
      cells.push_back({f->provider, f->instance, f->accelerator, std::to_string(f->count),
                       f->max_count ? std::to_string(*f->max_count) : std::string(), usd(f->on_demand), usd(f->spot),
                       f->region, f->as_of, f->source});
    render_rows({"provider", "instance", "accelerator", "count", "max_count", "on_demand_usd_per_hour", "spot_usd_per_hour",
                 "region", "as_of", "source"}, cells, o.format == "md", out);
  } else if (o.format == "table") {
    fmt::print(out, "{:<10} {:<38} {:<16} {:>4} {:>10} {:>10} {:>8}  {}\n", "provider", "instance", "accelerator", "n",
               "$/h", "$/GPU-h", "spot $/h", "as of");
    for (const auto* f : rows)
      fmt::print(out, "{:<10} {:<38} {:<16} {:>4} {:>10} {:>10} {:>8}  {}\n", f->provider, f->instance.substr(0, 38),
                 f->accelerator, f->max_count ? fmt::format("{}-{}", f->count, *f->max_count) : std::to_string(f->count),
                 usd(f->on_demand), usd(f->per_accelerator_on_demand()), usd(f->spot), f->as_of);
    fmt::print(out, "\nSpot only where the provider publishes it; n: GPUs per instance (1-8: a pod of 1 to 8 at the price per "
                    "GPU). Prices change: check the date and `--format json` for sources.\n");
  } else {
    throw InputError("unknown format \"" + o.format + "\" (expected: table, json, csv, md)");
  }
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
