// The command line: option structs per subcommand, the CLI11 app built from them, and run().
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gpuplan/gpuplan.h>

#include "exit_code.h"

namespace gpuplan::cli {

enum class Format { table, json };

// How the model is named: exactly one of --params, --model, --config.
struct ModelOptions {
  std::string params;
  std::string model;
  std::string config;
};

// --gpu / --catalog on train and infer: a fit verdict against a device, or a fit table over the catalog.
struct FitOptions {
  std::string gpu;
  std::vector<std::string> catalogs;
};
void add_fit_options(CLI::App& cmd, FitOptions& o);

struct TrainOptions {
  ModelOptions model;
  TrainingWorkload workload;
  std::string precision = "bf16";
  std::string optimizer = "adamw";
  std::string recompute;
  bool grad_checkpointing = false;
  std::string attention = "sdpa";
  std::string lora_targets;
  std::string profile = "pytorch";
  std::string format = "table";
  FitOptions fit;
};

struct InferOptions {
  ModelOptions model;
  InferenceWorkload workload;
  std::string precision = "bf16";
  std::string attention = "sdpa";
  std::string profile = "pytorch";
  std::string format = "table";
  FitOptions fit;
  std::int64_t gpus = 1;
};

struct HardwareOptions {
  std::string vendor;
  std::string min_memory;
  std::string show_id;
  std::string format = "table";
  std::vector<std::string> catalogs;
  CLI::App* list_cmd = nullptr;
  CLI::App* show_cmd = nullptr;
};

struct PricesOptions {
  std::string gpu;
  std::string provider;
  std::string format = "table";
  std::vector<std::string> catalogs;
};

struct ModelsOptions {
  std::string format = "table";
};

void add_model_options(CLI::App& cmd, ModelOptions& o);
ModelSpec resolve_model(const ModelOptions& o);
Format parse_format(const std::string& s);

void setup_train(CLI::App& app, TrainOptions& o);
void setup_infer(CLI::App& app, InferOptions& o);
void setup_models(CLI::App& app, ModelsOptions& o);
void setup_hardware(CLI::App& app, HardwareOptions& o);
void setup_prices(CLI::App& app, PricesOptions& o);
ExitCode run_hardware(const HardwareOptions& o, std::ostream& out);
ExitCode run_prices(const PricesOptions& o, std::ostream& out);
ExitCode run_train(const TrainOptions& o, std::ostream& out);
ExitCode run_infer(const InferOptions& o, std::ostream& out);
ExitCode run_models(const ModelsOptions& o, std::ostream& out);

// Parses args (without the program name) and runs the subcommand; never exits the process.
ExitCode run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuplan::cli
