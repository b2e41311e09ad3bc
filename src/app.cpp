#include "app.h"
#include "format_units.h"
#include "launch_import.h"
#include "model_source.h"
#include "render.h"

#include <algorithm>
#include <array>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <gpuplan/text.h>

namespace gpuplan::cli {

namespace {
constexpr const char* exit_status_help =
    "Exit status: 0 ok; 1 a requested limit fails or the workload does not fit; 2 usage error (flags, values);\n"
    "3 data error (a model config or catalog file missing or malformed).";
}

Format parse_format(const std::string& s) {
  if (s == "table") return Format::table;
  if (s == "json") return Format::json;
  if (s == "csv") return Format::csv;
  if (s == "md") return Format::md;
  throw InputError("unknown format \"" + s + "\" (expected: table, json, csv, md)");
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  auto* p = cmd.add_option("--params", o.params, "Parameter count (7B, 125M, 1.5e9): derives a standard decoder shape")
                ->check([](const std::string& v) {
                  try {
                    parse_params(v);
                    return std::string();
                  } catch (const InputError& e) {
                    return std::string(e.what());
                  }
                });
  auto* m = cmd.add_option("--model", o.model,
                           "A preset (`gpuplan models`), a config.json, a Hugging Face folder (config.json + "
                           "safetensors), a .gguf file, or a Hub id org/name[@revision] (local HF cache, then the "
                           "Hub: config and safetensors headers only)");
  auto* c = cmd.add_option("--config", o.config, "Hugging Face config.json of the model");
  cmd.add_option("--hf-token", o.hf_token, "Hugging Face token for gated models (default: $HF_TOKEN)");
  cmd.add_option("--hub-timeout", o.hub_timeout,
                 "Seconds within which every Hub request of the command must end (default: $GPUPLAN_HUB_TIMEOUT, "
                 "else 300; one request: $GPUPLAN_HUB_REQUEST_TIMEOUT, else 120)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd.add_flag("--refresh", o.refresh,
               "Fetch a Hub branch's config and headers again even when cached (cached branches older than "
               "$GPUPLAN_HUB_MAX_AGE seconds, default 86400, are fetched again anyway)");
  p->excludes(m)->excludes(c);
  m->excludes(c);
}

CLI::Option* add_length_option(CLI::App& cmd, const std::string& names, std::int64_t& v, const std::string& help,
                               std::int64_t fallback) {
  auto to_number = [](std::string& s) {
    try {
      // 0 passes: some flags mean "the default" by it (--context, --chunked-prefill); the checks of each
      // workload say which values each flag takes.
      s = std::to_string(parse_length(s, "\"" + s + "\": expected a whole number such as 4096, 4k or 128k", 0));
      return std::string();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
  };
  return cmd.add_option(names, v, fallback > 0 ? help + " (default " + std::to_string(fallback) + ")" : help)
      ->transform(CLI::Validator(to_number, "LENGTH"));
}

void add_limit_options(CLI::App& cmd, LimitOptions& o, bool run_limits) {
  cmd.add_option("--max-memory", o.max_memory, "Exit 1 when the per-GPU estimate (total) exceeds this (80GB, 79GiB)");
  cmd.add_flag("--require-fit", o.require_fit, "Exit 1 when the estimate does not fit on --gpu");
  if (run_limits) {
    cmd.add_option("--max-cost", o.max_cost, "Exit 1 when the run costs more than this many USD");
    cmd.add_option("--max-days", o.max_days, "Exit 1 when the run takes longer than this many days");
  }
}

ExitCode emit_report(nlohmann::json& report, const LimitOptions& limits, Format format,
                     void (*table)(const nlohmann::json&, std::ostream&), std::ostream& out, std::ostream& err) {
  const ExitCode status = check_limits(limits, report, err);
  if (format == Format::json) render_json(report, out);
  else if (format == Format::table) table(report, out);
  else render_report_rows(report, format == Format::md, out);
  return status;
}

ExitCode check_limits(const LimitOptions& o, nlohmann::json& report, std::ostream& err) {
  nlohmann::json limits = nlohmann::json::array();
  bool ok = true;
  // The message says each quantity the way the tables do (`say`); the JSON keeps the raw numbers.
  auto add = [&](const std::string& name, double limit, double value, std::string (*say)(double)) {
    const bool pass = value <= limit;
    limits.push_back({{"name", name}, {"limit", limit}, {"value", value}, {"ok", pass}});
    if (!pass) {
      ok = false;
      err << "gpuplan: limit " << name << " exceeded: " << say(value) << " > " << say(limit) << "\n";
    }
  };
  if (!o.max_memory.empty())
    add("max_memory", parse_bytes(o.max_memory).in(unit::bytes), report["memory"]["runs_in_bytes"].get<double>(),
        gib_and_gb);
  if (o.require_fit) {
    if (!report.contains("fit")) throw InputError("--require-fit needs --gpu");
    const bool fits = report["fit"]["fits"].get<bool>();
    limits.push_back({{"name", "require_fit"}, {"limit", true}, {"value", fits}, {"ok", fits}});
    if (!fits) {
      ok = false;
      err << "gpuplan: limit require_fit failed: the estimate does not fit on " << report["fit"]["gpu"].get<std::string>() << "\n";
    }
  }
  if (o.max_cost < 0 || o.max_days < 0) throw InputError("--max-cost and --max-days must be positive");
  if (o.max_cost > 0) {
    if (!report.contains("cost") || report["cost"].is_null() || !report["cost"].contains("usd"))
      throw InputError("--max-cost needs a price: --gpu with a catalog offering, or --price-per-gpu-hour");
    add("max_cost", o.max_cost, report["cost"]["usd"].get<double>(), [](double usd) { return fmt::format("${:.2f}", usd); });
  }
  if (o.max_days > 0) {
    if (!report.contains("time") || report["time"].is_null()) throw InputError("--max-days needs --gpu");
    add("max_days", o.max_days, report["time"]["days"].get<double>(), [](double d) { return fmt::format("{:.2f} days", d); });
  }
  if (!limits.empty()) report["limits"] = limits;
  return ok ? ExitCode::ok : ExitCode::limit;
}

void add_fit_options(CLI::App& cmd, FitOptions& o) {
  cmd.add_option("--gpu", o.gpu, "Fit verdict on this accelerator (id or alias; see `gpuplan hardware list`); "
                                 "without it, a fit table over the catalog");
  cmd.add_option("--gpu-memory", o.gpu_memory,
                 "Memory of a device the catalog does not list (24GB, 23.5GiB: what the driver reports), or another "
                 "capacity for the --gpu device");
  cmd.add_option("--memory-bandwidth", o.memory_bandwidth, "With --gpu-memory: the device's bandwidth (360GB/s), for "
                                                           "the decode throughput");
  cmd.add_option("--catalog", o.catalogs, "Extra catalog file(s) that add or override entries (repeatable)");
}

const Device* fit_device(const FitOptions& o, const Catalog& cat, std::optional<Device>& unlisted) {
  if (o.gpu_memory.empty()) {
    if (!o.memory_bandwidth.empty()) throw InputError("--memory-bandwidth needs --gpu-memory");
    // The catalog's own entry (prices are matched to it by address).
    return o.gpu.empty() ? nullptr : &cat.get(o.gpu);
  }
  const Bytes memory = parse_bytes(o.gpu_memory);
  Device d;
  if (!o.gpu.empty()) {
    d = cat.get(o.gpu);
    // The listed device with the capacity given; its CUDA total is unknown at that capacity.
    d.cuda_total_memory.reset();
  } else {
    d.id = "custom";
    d.name = "unlisted device (--gpu-memory " + o.gpu_memory + ")";
    d.unit = "per GPU";
    d.source = "--gpu-memory";
  }
  d.memory = std::max(d.memory, memory);
  d.usable_memory = memory;
  if (!o.memory_bandwidth.empty()) d.memory_bandwidth = parse_byte_rate(o.memory_bandwidth);
  unlisted = d;
  return &*unlisted;
}

ModelSpec resolve_model(const ModelOptions& o) { return resolve_model_source(o).spec; }

namespace {
// The version, the calibration it rests on and the catalogs' dates, so a report can be tied to the prices it used
// (read at build time: no catalog is parsed to answer --version).
std::string version_text() {
  std::string dates;
  for (std::string_view rest = detail::builtin_catalog_dates; !rest.empty();) {
    const auto eol = rest.find('\n');
    dates += "\n  " + std::string(rest.substr(0, eol));
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
  }
  return std::string("gpuplan 0.1.0\ncalibration: PyTorch 2.11 + transformers 5.17 on NVIDIA H200\ncatalogs:") + dates;
}
// For a command line CLI11 rejected: a word where `cmd` wants one of its subcommands, or a long option that no
// subcommand on the line has, with the names closest to it ("did you mean …"); "" when there is nothing to add.
std::string misspelt_word(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* cmd = &app;
  std::vector<const CLI::App*> chain{cmd};
  while (!cmd->get_subcommands().empty()) chain.push_back(cmd = cmd->get_subcommands().front());
  const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
  const auto at = std::find(args.begin(), args.end(), cmd->get_name());
  if (!subs.empty() && cmd != &app && at != args.end() && at + 1 != args.end() && (*(at + 1))[0] != '-') {
    std::vector<NameCandidate> known;
    for (const auto* s : subs) known.push_back({s->get_name(), {s->get_name()}});
    const std::string hint = did_you_mean(*(at + 1), known);
    return "unknown command \"" + *(at + 1) + "\" for gpuplan " + cmd->get_name() + (hint.empty() ? "" : ": " + hint);
  }
  std::vector<NameCandidate> known;
  auto has = [&](const std::string& name) {
    for (const auto* c : chain)
      for (const auto* o : c->get_options())
        for (const auto& l : o->get_lnames())
          if (l == name) return true;
    return false;
  };
  for (const auto* c : chain)
    for (const auto* o : c->get_options())
      for (const auto& l : o->get_lnames()) known.push_back({"--" + l, {l}});
  for (const auto& a : args) {
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const std::string name = a.substr(2, a.find('=') - 2);
    if (has(name)) continue;
    const std::string hint = did_you_mean(name, known);
    return "unknown option \"--" + name + "\" for gpuplan" +
           (cmd == &app ? std::string() : " " + cmd->get_name()) + (hint.empty() ? "" : ": " + hint);
  }
  return "";
}

}  // namespace

namespace {
// gpuplan's own errors as one line on err and their exit status: InputError 2, DataError 3.
template <class F>
ExitCode one_line_errors(std::ostream& err, F&& body) {
  try {
    return body();
  } catch (const InputError& e) {  // messages quote names from files and flags: printed as one safe line
    err << "gpuplan: " << printable(e.what()) << "\n";
    return ExitCode::usage;
  } catch (const DataError& e) {
    err << "gpuplan: " << printable(e.what()) << "\n";
    return ExitCode::data;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the checks before did not foresee
    err << "gpuplan: " << printable(e.path1().string(), 256) << ": cannot read (" << e.code().message() << ")\n";
    return ExitCode::data;
  }
}
}  // namespace

ExitCode run(const std::vector<std::string>& args_in, std::ostream& out, std::ostream& err) {
  // A bare --version needs no parser: CLI11 answers it by throwing, and the first exception's unwinding (its
  // tables paged in) and the parser's set-up were most of a --version process.
  if (args_in.size() == 1 && args_in[0] == "--version") {
    out << version_text() << "\n";
    return ExitCode::ok;
  }
  // A launch command after -- (or --from FILE) becomes gpuplan's own flags before parsing.
  LaunchArgs imported;
  const ExitCode import_status = one_line_errors(err, [&] {
    imported = import_launch(args_in, err);
    return ExitCode::ok;
  });
  if (import_status != ExitCode::ok) return import_status;
  const std::vector<std::string>& args = imported.args;
  CLI::App app{"gpuplan: GPU memory, time and cost of training and serving LLMs, before you rent the hardware."};
  app.footer(exit_status_help);
  // One line per error, like every other error gpuplan prints.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string("gpuplan: ") + e.what() + "\n"; });
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text);
  bool quiet = false;
  app.add_flag("--quiet,-q", quiet, "Print nothing on stdout: the exit status (and stderr) only, for CI");
  app.fallthrough();
  TrainOptions train;
  InferOptions infer;
  ModelsOptions models;
  HardwareOptions hardware;
  PricesOptions prices;
  ScaleOptions scale;
  CheckOptions check;
  GenerateOptions generate;
  SchemaOptions schema;
  PlanOptions plan;
  SweepOptions sweep;
  // Subcommands get their options only when they are the one being run (or for `generate`, which prints them all):
  // CLI11 checks every new option against the earlier ones, and setting up all of them was 70 % of a `--version`
  // (4.8 of 6.9 M instructions, callgrind, 2026-11-23). The global options are flags, so the first word without a
  // dash is the subcommand. (`models`, `check`, `schema` have two options or fewer.)
  const auto named = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.empty() || a[0] != '-'; });
  const std::string chosen = named == args.end() ? "" : *named;
  // The other subcommands are not even named when the chosen one is a known one (other than `generate`): a help
  // or error listing them is only printed without one, or for an unknown word, where all are set up.
  static constexpr std::array<std::string_view, 11> names{"train", "infer", "models", "hardware", "prices", "scale",
                                                          "plan", "sweep", "check", "schema", "generate"};
  const bool known = std::find(names.begin(), names.end(), chosen) != names.end();
  if (!chosen.empty() && !known) {
    std::vector<NameCandidate> commands;
    for (const auto name : names) commands.push_back({std::string(name), {std::string(name)}});
    const std::string hint = did_you_mean(chosen, commands);
    err << "gpuplan: unknown command \"" << chosen << "\"" << (hint.empty() ? "" : ": " + hint)
        << " (gpuplan --help lists them)\n";
    return ExitCode::usage;
  }
  const bool one = chosen != "generate" && known;
  const auto wanted = [&](const char* name) { return !one || chosen == name; };
  const auto full = [&](const char* name) { return chosen == name || chosen == "generate"; };
  if (wanted("train")) setup_train(app, train, full("train"));
  if (wanted("infer")) setup_infer(app, infer, full("infer"));
  if (wanted("models")) setup_models(app, models);
  if (wanted("hardware")) setup_hardware(app, hardware, full("hardware"));
  if (wanted("prices")) setup_prices(app, prices, full("prices"));
  if (wanted("scale")) setup_scale(app, scale, full("scale"));
  if (wanted("plan")) setup_plan(app, plan, full("plan"));
  if (wanted("sweep")) setup_sweep(app, sweep, full("sweep"));
  if (wanted("check")) setup_check(app, check);
  if (wanted("schema")) setup_schema(app, schema);
  if (wanted("generate")) setup_generate(app, generate);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (const std::string word = misspelt_word(app, args); !word.empty() && e.get_exit_code() != 0) {
      err << "gpuplan: " << word << "\n";
      return ExitCode::usage;
    }
    const int code = app.exit(e, out, err);
    return code == 0 ? ExitCode::ok : ExitCode::usage;
  }
  train.from = infer.from = imported.from;
  // Colour only for a terminal on our own stdout, never for pipes, files or in-process callers.
  set_terminal(&out == &std::cout && isatty(STDOUT_FILENO), std::getenv("NO_COLOR") == nullptr);
  std::ostringstream discard;
  std::ostream& sink = quiet ? static_cast<std::ostream&>(discard) : out;
  return one_line_errors(err, [&] {
    const auto ran = [&](const char* name) { return wanted(name) && app.got_subcommand(name); };
    if (ran("train")) return run_train(train, sink, err);
    if (ran("infer")) return run_infer(infer, sink, err);
    if (ran("check")) return run_check(check, sink, err);
    if (ran("models")) return run_models(models, sink);
    if (ran("hardware")) return run_hardware(hardware, sink);
    if (ran("prices")) return run_prices(prices, sink);
    if (ran("scale")) return run_scale(scale, sink);
    if (wanted("plan") && plan.train_cmd->parsed()) return run_plan_train(plan, sink, err);
    if (wanted("plan") && plan.infer_cmd->parsed()) return run_plan_infer(plan, sink, err);
    if (ran("sweep")) return run_sweep(sweep, sink, err);
    if (ran("schema")) return run_schema(schema, sink);
    if (ran("generate")) return run_generate(app, generate, out);
    return ExitCode::usage;
  });
}

}  // namespace gpuplan::cli
