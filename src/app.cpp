#include "app.h"

#include <algorithm>
#include <iostream>

namespace gpuplan::cli {

namespace {
constexpr const char* exit_status_help =
    "Exit status: 0 ok; 1 a requested limit fails or the workload does not fit; 2 usage error (flags, values);\n"
    "3 data error (a model config or catalog file missing or malformed).";
}

Format parse_format(const std::string& s) {
  if (s == "table") return Format::table;
  if (s == "json") return Format::json;
  throw InputError("unknown format \"" + s + "\" (expected: table, json)");
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
  auto* m = cmd.add_option("--model", o.model, "Built-in model preset (see `gpuplan models`)");
  auto* c = cmd.add_option("--config", o.config, "Hugging Face config.json of the model");
  p->excludes(m)->excludes(c);
  m->excludes(c);
}

void add_fit_options(CLI::App& cmd, FitOptions& o) {
  cmd.add_option("--gpu", o.gpu, "Fit verdict on this accelerator (id or alias; see `gpuplan hardware list`); "
                                 "without it, a fit table over the catalog");
  cmd.add_option("--catalog", o.catalogs, "Extra catalog file(s) that add or override entries (repeatable)");
}

ModelSpec resolve_model(const ModelOptions& o) {
  if (!o.config.empty()) return load_hf_config(o.config);
  if (!o.model.empty()) return find_preset(o.model).spec;
  if (!o.params.empty()) return derive_model(parse_params(o.params));
  throw InputError("name the model with --params, --model or --config");
}

ExitCode run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"gpuplan: GPU memory, time and cost of training and serving LLMs, before you rent the hardware."};
  app.footer(exit_status_help);
  // One line per error, like every other error gpuplan prints.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string("gpuplan: ") + e.what() + "\n"; });
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gpuplan ") + "0.1.0");
  TrainOptions train;
  InferOptions infer;
  ModelsOptions models;
  HardwareOptions hardware;
  PricesOptions prices;
  ScaleOptions scale;
  setup_train(app, train);
  setup_infer(app, infer);
  setup_models(app, models);
  setup_hardware(app, hardware);
  setup_prices(app, prices);
  setup_scale(app, scale);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? ExitCode::ok : ExitCode::usage;
  }
  try {
    if (app.got_subcommand("train")) return run_train(train, out);
    if (app.got_subcommand("infer")) return run_infer(infer, out);
    if (app.got_subcommand("models")) return run_models(models, out);
    if (app.got_subcommand("hardware")) return run_hardware(hardware, out);
    if (app.got_subcommand("prices")) return run_prices(prices, out);
    if (app.got_subcommand("scale")) return run_scale(scale, out);
  } catch (const InputError& e) {
    err << "gpuplan: " << e.what() << "\n";
    return ExitCode::usage;
  } catch (const DataError& e) {
    err << "gpuplan: " << e.what() << "\n";
    return ExitCode::data;
  }
  return ExitCode::usage;
}

}  // namespace gpuplan::cli
