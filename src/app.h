// The command line: option structs per subcommand, the CLI11 app built from them, and run().
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gpuplan/gpuplan.h>

#include "exit_code.h"
#include "run.h"

namespace gpuplan::cli {

enum class Format { table, json, csv, md };

// How the model is named: exactly one of --params, --model, --config.
struct ModelOptions {
  std::string params;
  std::string model;
  std::string config;
  std::string hf_token;  // for gated Hub models (else HF_TOKEN)
  double hub_timeout = 0;  // seconds for the command's Hub requests (0: GPUPLAN_HUB_TIMEOUT, else 300)
  bool refresh = false;    // fetch a Hub branch again even when cached
};

// CI gating on train and infer: exit status 1 when the estimate breaks a limit (the report still prints).
struct LimitOptions {
  std::string max_memory;
  bool require_fit = false;
  double max_cost = 0;
  double max_days = 0;
};
void add_limit_options(CLI::App& cmd, LimitOptions& o, bool run_limits);
// Adds report["limits"] and says each broken limit on err; returns limit or ok.
ExitCode check_limits(const LimitOptions& o, nlohmann::json& report, std::ostream& err);
// train/infer's end: the limits checked, then the report as JSON, CSV/Markdown rows or `table`'s rendering.
ExitCode emit_report(nlohmann::json& report, const LimitOptions& limits, Format format,
                     void (*table)(const nlohmann::json&, std::ostream&), std::ostream& out, std::ostream& err);

// --gpu / --catalog on train and infer: a fit verdict against a device, or a fit table over the catalog.
struct FitOptions {
  std::string gpu;
  std::string gpu_memory;        // --gpu-memory SIZE: a device the catalog does not list, or another capacity
  std::string memory_bandwidth;  // --memory-bandwidth RATE: with --gpu-memory
  std::vector<std::string> catalogs;
  bool table = true;  // without --gpu: the fits-on table over the catalog (sweep's points leave it out)
};
void add_fit_options(CLI::App& cmd, FitOptions& o);
// The device --gpu and --gpu-memory name: a catalog entry, that entry with another capacity, or an unlisted device
// known only by its memory (and bandwidth, kept in `unlisted`); nullptr when neither flag is given.
const Device* fit_device(const FitOptions& o, const Catalog& cat, std::optional<Device>& unlisted);

// Tokens, time, cost and energy of a training run (train).
struct RunOptions {
  std::string tokens;
  double epochs = 0;
  std::string dataset_tokens;
  bool fine_tune = false;  // a fine-tune: no compute-optimal token default
  double mfu = 0;
  std::int64_t nodes = 1;
  std::string provider;
  bool spot = false;
  double price_per_gpu_hour = 0;
  double power_utilization = 1.0;
  double pue = 1.2;
  double grid_intensity = -1;
};

struct TrainOptions {
  ModelOptions model;
  RunOptions run;
  LimitOptions limits;
  std::string fsdp;
  std::string offload_optimizer = "none";
  std::string offload_params = "none";
  double network_gbps = 0;
  std::string kernels = "auto";
  std::string pp_schedule;
  std::string overlap_comm;  // DeepSpeed overlap_comm: true | false (default: DeepSpeed's by stage)
  bool tp_comm_overlap = false;
  bool ep_overlap = false;
  TrainingWorkload workload;             // its batch is not read: `batch` says it
  // --batch; without it, train takes the micro-batch plan train would choose on --gpu (plan.h choose_micro_batch),
  // or defaults::batch with no device to fill.
  std::optional<std::int64_t> batch;
  std::string precision = "bf16";
  std::string optimizer = "adamw";
  std::string recompute;
  bool grad_checkpointing = false;
  std::string attention = "sdpa";
  std::string lora_targets;
  std::string profile = "pytorch";
  std::string format = "table";
  std::string loss = "eager";             // eager | chunked[:N] | fused (memory/training/tensors.h)
  bool activation_offload = false;        // saved activations in pinned host memory
  bool advise = false;                    // fit advice even when the setup fits
  std::string objective = "least-change"; // how the advice is ranked: least-change | cheapest | fastest
  FitOptions fit;
  nlohmann::json from;  // what an imported launch command or config said (src/launch_import.h), else null
};

struct InferOptions {
  ModelOptions model;
  InferenceWorkload workload;
  std::string precision = "bf16";
  std::string attention = "sdpa";
  std::string profile = "pytorch";
  std::string format = "table";
  FitOptions fit;
  std::string weights;
  std::string kv_dtype;
  std::int64_t context = 0;
  std::int64_t gpu_layers = -1;
  std::string llama_fit;  // llama.cpp --fit on|off (empty: the build's default)
  std::string gpu_free;   // llama.cpp: free memory at start
  std::string gpu_overhead;  // Ollama: OLLAMA_GPU_OVERHEAD
  std::string llama_backend;  // llama.cpp / Ollama: cuda | rocm | vulkan | metal (empty: by the device)
  std::string split_mode;     // llama.cpp / Ollama -sm: layer (default) | row | none, over --tp GPUs
  std::string tensor_split;   // llama.cpp -ts: comma-separated proportions per GPU (empty: equal)
  std::string host_memory_bandwidth;  // llama.cpp: the host's memory bandwidth (default dual-channel DDR5-5600)
  std::string host_memory;  // llama.cpp/Ollama: the host memory the part left on the CPU may take (default: not checked)
  std::int64_t n_cpu_moe = -1;
  bool cpu_moe = false;
  bool language_model_only = false;  // vLLM/SGLang: the vision encoder of a multimodal checkpoint not loaded
  std::int64_t chunked_prefill = 0;  // HF generate's prefill chunk and vLLM's max_num_batched_tokens
  std::string engine_version;
  std::string flash_attn = "on";
  bool max_batch = false;
  bool max_context = false;
  double mem_efficiency = 0;
  double compute_efficiency = 0;
  double power_limit = 0;  // the GPU's board power limit in watts (nvidia-smi -pl); 0: its TDP
  double price_per_gpu_hour = 0;
  std::string provider;
  bool spot = false;
  LimitOptions limits;
  nlohmann::json from;  // what an imported launch command said (src/launch_import.h), else null
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

struct ScaleOptions {
  std::string compute;
  std::string budget;
  double gpu_hours = 0;
  std::string gpu;
  std::string precision = "bf16";
  double mfu = 0;
  std::string provider;
  std::string approach = "epoch-2024";
  std::vector<std::string> catalogs;
  std::string format = "table";
};

// plan train / plan infer: what both searches take.
struct PlanCommon {
  ModelOptions model;
  std::string objective = "cost";
  int top = 5;
  std::int64_t max_gpus = 1024;
  std::string budget;
  std::string provider;
  std::vector<std::string> gpus;
  bool spot = false;
  std::vector<std::string> catalogs;
  std::string format = "table";
};
struct PlanOptions {
  PlanCommon train_common, infer_common;
  struct {
    std::string tokens;
    std::string dataset_tokens;
    double epochs = 0;
    bool fine_tune = false;
    std::int64_t lora_rank = 0;
    std::string lora_targets;
    bool qlora = false;
    std::string loss = "eager";
    std::int64_t seq = defaults::seq;
    std::string global_batch;  // default: 4M tokens to pre-train, 512K to fine-tune
    std::string precision = "bf16";
    std::string optimizer = "adamw";
    std::string headroom = "10%";
    std::string deadline;
    double mfu = 0;
    double network_gbps = 0;
  } train;
  struct {
    std::int64_t prompt_len = defaults::prompt_len;
    std::int64_t new_tokens = defaults::new_tokens;
    double concurrency = 0;
    double tokens_per_second = 0;
  std::string engine_version;  // vLLM release (default: the newest modelled)
    std::string latency;
    std::vector<std::string> weights;
    std::vector<std::string> kv;
  } infer;
  CLI::App* train_cmd = nullptr;
  CLI::App* infer_cmd = nullptr;
};
void setup_plan(CLI::App& app, PlanOptions& o, bool with_options);
ExitCode run_plan_train(const PlanOptions& o, std::ostream& out, std::ostream& err);
ExitCode run_plan_infer(const PlanOptions& o, std::ostream& out, std::ostream& err);

// gpuplan sweep train|infer: the train/infer options, the swept flags' range texts, the devices to fit.
struct SweepSide {
  std::vector<std::string> ranges;               // per sweepable flag (cmd_sweep.cpp's table), "" when not swept
  std::vector<const CLI::Option*> axis_options;  // the same order
  std::vector<CLI::Option*> parse_order;         // the subcommand's options as given (the first swept flag is x)
  std::vector<std::string> gpus;
  std::string plot;
  bool chart = false;
};
struct SweepOptions {
  TrainOptions train;
  InferOptions infer;
  SweepSide train_side, infer_side;
  CLI::App* train_cmd = nullptr;
  CLI::App* infer_cmd = nullptr;
};
void setup_sweep(CLI::App& app, SweepOptions& o, bool with_options);
ExitCode run_sweep(SweepOptions& o, std::ostream& out, std::ostream& err);

struct CheckOptions {
  std::string spec;
  std::string format = "table";
};
void setup_check(CLI::App& app, CheckOptions& o);
ExitCode run_check(const CheckOptions& o, std::ostream& out, std::ostream& err);

struct SchemaOptions {
  std::string name;
};
void setup_schema(CLI::App& app, SchemaOptions& o);
ExitCode run_schema(const SchemaOptions& o, std::ostream& out);

struct GenerateOptions {
  std::string what;
};
void setup_generate(CLI::App& app, GenerateOptions& o);
ExitCode run_generate(const CLI::App& app, const GenerateOptions& o, std::ostream& out);

struct ModelsOptions {
  std::string format = "table";
  std::string search;  // words that must all appear in a preset's id, aliases, name or model_type
};

void add_model_options(CLI::App& cmd, ModelOptions& o);
// A token length or count flag that takes what people write ("4k", "128k": parse_length), its help ending in
// "(default N)" when `fallback` is given (the defaults.h value the option starts from).
CLI::Option* add_length_option(CLI::App& cmd, const std::string& names, std::int64_t& v, const std::string& help,
                               std::int64_t fallback = 0);
// --lora-targets: module names separated by commas (default q_proj,v_proj, PEFT's for Llama-family models).
std::vector<std::string> split_targets(const std::string& text);
// --loss eager | chunked[:N] | fused: the kind and the chunk count (default 8).
std::pair<Loss, std::int64_t> parse_loss(const std::string& text);
ModelSpec resolve_model(const ModelOptions& o);
Format parse_format(const std::string& s);

// with_options false: the subcommand's name, help line and nested subcommands only (see run()).
void setup_train(CLI::App& app, TrainOptions& o, bool with_options);
void setup_infer(CLI::App& app, InferOptions& o, bool with_options);
void setup_models(CLI::App& app, ModelsOptions& o);
void setup_hardware(CLI::App& app, HardwareOptions& o, bool with_options);
void setup_scale(CLI::App& app, ScaleOptions& o, bool with_options);
ExitCode run_scale(const ScaleOptions& o, std::ostream& out);
void setup_prices(CLI::App& app, PricesOptions& o, bool with_options);
ExitCode run_hardware(const HardwareOptions& o, std::ostream& out);
ExitCode run_prices(const PricesOptions& o, std::ostream& out);
ExitCode run_train(const TrainOptions& o, std::ostream& out, std::ostream& err);
ExitCode run_infer(const InferOptions& o, std::ostream& out, std::ostream& err);
// The options of train/infer on any subcommand (sweep reuses them), and the report they produce (what --format json
// prints, before the limits are checked).
void add_train_options(CLI::App& cmd, TrainOptions& o);
void add_infer_options(CLI::App& cmd, InferOptions& o);
nlohmann::json train_report(const TrainOptions& o);
// The same with a catalog already loaded (null: load o.fit.catalogs).
nlohmann::json train_report_with(const TrainOptions& o, const Catalog* catalog);
// The changes that make a training setup fit its --gpu, each a full train_report, ranked by --objective (advice.cpp).
nlohmann::json train_advice(const TrainOptions& o, const nlohmann::json& report);
nlohmann::json infer_report(const InferOptions& o);
ExitCode run_models(const ModelsOptions& o, std::ostream& out);

}  // namespace gpuplan::cli
