// The CLI in-process: cli::run() on argument vectors (cli_run.h), its exit status, stdout and stderr.
#include "../test_support.h"
#include <cmath>
#include <cstdlib>
#include <map>
#include <fstream>
#include <functional>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_run.h"

using gpuplan::cli::ExitCode;

using gpuplan::test::run_cli;

TEST_CASE("cli: train --format json has the documented fields", "[cli]") {
  const auto r = run_cli({"train", "--params", "7B", "--precision", "bf16", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "gpuplan/1");
  CHECK(j["memory"]["total_bytes"].get<double>() > 0);
  CHECK(j["memory"]["peak_allocated_bytes"].get<double>() > 0);
  for (const char* k : {"weights", "gradients", "optimizer_states", "activations", "logits", "kv_cache", "overhead"})
    CHECK(j["memory"]["components"][k].is_number_integer());
  CHECK(j["model"]["params"].get<std::int64_t>() > 6'500'000'000);
  CHECK(j["model"]["active_params"] == j["model"]["params"]);
  CHECK(j["workload"]["precision"] == "bf16");
  CHECK(j["model"]["num_layers"].get<int>() > 0);  // --params derives a shape, so activations are estimated
  CHECK(j["memory"]["phases"][0]["phase"] == "forward");
  CHECK(j["memory"]["phases"][0]["components"]["activations"].get<double>() > 0);
}

TEST_CASE("cli: --params 70B is Llama 3.1 70B, so --tp 8 divides its heads", "[cli]") {
  const auto r = run_cli({"train", "--params", "70B", "--gpus", "8", "--tp", "8", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["model"]["num_heads"] == 64);
  CHECK(j["model"]["num_kv_heads"] == 8);
  CHECK(j["model"]["source"]["notes"][0].get<std::string>().find("Llama 3.1 70B") != std::string::npos);
}

TEST_CASE("cli: train table names the peak and the assumptions' profile", "[cli]") {
  const auto r = run_cli({"train", "--model", "llama-3.1-8b", "--batch", "2", "--seq", "4096", "--grad-checkpointing"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("Per-GPU memory at the peak"));
  CHECK_THAT(r.out, Catch::Contains("8,030,261,248"));
  CHECK_THAT(r.out, Catch::Contains("total (nvidia-smi)"));
}

TEST_CASE("cli: the calibration contract runs", "[cli]") {
  const std::string cfg = gpuplan::test::data + "/calibration/configs/train-llama32_1b-bf16-adamw-b4-s2048-lora16all.json";
  auto r = run_cli({"train", "--config", cfg, "--batch", "4", "--seq", "2048", "--precision", "pure-bf16", "--optimizer",
                "adamw", "--lora-rank", "16", "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                "--attention", "sdpa", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["trainable_params"] == 11'272'192);
  r = run_cli({"train", "--config", cfg, "--batch", "4", "--seq", "2048", "--precision", "pure-bf16", "--optimizer", "adamw",
           "--gpus", "2", "--zero", "3", "--grad-checkpointing", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  r = run_cli({"infer", "--config", gpuplan::test::data + "/calibration/configs/infer-llama31_8b-bf16-b1-s1024-n64.json", "--batch", "1",
           "--prompt-len", "1024", "--new-tokens", "64", "--precision", "bf16", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["memory"]["kv_cache_bytes_per_token"] == 131'072);
}

TEST_CASE("cli: bad input gets one line on stderr and a documented status", "[cli]") {
  struct Case {
    std::vector<std::string> args;
    ExitCode code;
    const char* err;
  };
  const std::vector<Case> cases = {
      {{"train", "--params", "-3"}, ExitCode::usage, "--params"},
      {{"train", "--params", "7Q"}, ExitCode::usage, "7Q"},
      {{"train", "--params", "7B", "--batch", "0"}, ExitCode::usage, "--batch"},
      {{"train", "--params", "7B", "--seq", "-1"}, ExitCode::usage, "--seq"},
      {{"train", "--params", "7B", "--optimizer", "adamm"}, ExitCode::usage, "adamw-fused"},
      {{"train", "--params", "7B", "--precision", "int3"}, ExitCode::usage, "precision"},
      {{"train", "--params", "7B", "--attention", "fast"}, ExitCode::usage, "attention"},
      {{"train", "--params", "7B", "--format", "xml"}, ExitCode::usage, "format"},
      {{"train", "--params", "7B", "--model", "gpt2"}, ExitCode::usage, "excludes"},
      {{"train", "--params", "7B", "--grad-checkpointing", "--recompute", "none"}, ExitCode::usage, "excludes"},
      {{"train", "--params", "7B", "--qlora"}, ExitCode::usage, "--lora-rank"},
      {{"train", "--params", "7B", "--zero", "5"}, ExitCode::usage, "--zero"},
      {{"train", "--params", "7B", "--batch", "abc"}, ExitCode::usage, "--batch"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "6", "--tp", "4"}, ExitCode::usage, "multiple of tp"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "3", "--tp", "3"}, ExitCode::usage, "--tp 3 does not divide"},
      {{"train", "--model", "llama-3.1-8b", "--sp"}, ExitCode::usage, "--sp"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "2", "--ep", "2"}, ExitCode::usage, "mixture-of-experts"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "4", "--pp", "4", "--vpp", "2", "--grad-accum", "6"}, ExitCode::usage, "multiple of --pp"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "2", "--cp", "2", "--attention", "eager"}, ExitCode::usage, "--cp"},
      {{"train", "--model", "llama-3.1-8b", "--tp", "0"}, ExitCode::usage, "--tp"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "4", "--pp", "4", "--pp-schedule", "fast"}, ExitCode::usage, "pipeline schedule"},
      {{"train", "--model", "llama-3.1-8b", "--pp-schedule", "dualpipe"}, ExitCode::usage, "--pp-schedule needs --pp"},
      {{"train", "--model", "llama-3.1-8b", "--kernels", "turbo"}, ExitCode::usage, "kernels"},
      {{"train", "--model", "llama-3.1-8b", "--pp-first-layers", "3"}, ExitCode::usage, "--pp of 2"},
      {{"train", "--model", "llama-3.1-8b", "--gpus", "4", "--pp", "4", "--pp-first-layers", "7", "--pp-last-layers", "6"}, ExitCode::usage, "middle stages"},
      {{"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--mfu", "1.5"}, ExitCode::usage, "--mfu"},
      {{"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--objective", "best"}, ExitCode::usage, "--objective"},
      {{"train", "--model", "llama-3.1-8b", "--advise"}, ExitCode::usage, "--advise needs --gpu"},
      {{"train", "--model", "llama-3.1-8b", "--loss", "fast"}, ExitCode::usage, "loss"},
      {{"train", "--model", "llama-3.1-8b", "--loss", "fused:4"}, ExitCode::usage, "chunked:N"},
      {{"train", "--model", "llama-3.1-8b", "--loss", "chunked:0"}, ExitCode::usage, "chunked:N"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--qlora"}, ExitCode::usage, "--lora-rank"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--epochs", "2"}, ExitCode::usage, "together"},
      {{"plan"}, ExitCode::usage, ""},
      {{"plan", "train", "--model", "llama-3.1-8b", "--objective", "fast"}, ExitCode::usage, "objective"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--headroom", "120%"}, ExitCode::usage, "percentage"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--deadline", "3x"}, ExitCode::usage, "duration"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--gpu", "nope"}, ExitCode::usage, "unknown accelerator"},
      {{"plan", "train", "--model", "llama-3.1-8b", "--provider", "nobody"}, ExitCode::usage, "no priced offering"},
      {{"plan", "infer", "--model", "llama-3.1-8b"}, ExitCode::usage, "needs a target"},
      {{"plan", "infer", "--model", "llama-3.1-8b", "--concurrency", "8", "--weights", "int3"}, ExitCode::usage, "weight format"},
      {{"train"}, ExitCode::usage, "--params, --model or --config"},
      {{"train", "--model", "nope"}, ExitCode::usage, "unknown model"},
      {{"train", "--config", gpuplan::test::data + "/configs/none.json"}, ExitCode::data, "cannot open"},
      {{"train", "--config", gpuplan::test::data + "/configs/malformed.json"}, ExitCode::data, "not valid JSON"},
      {{"train", "--config", gpuplan::test::data + "/configs/missing_hidden.json"}, ExitCode::data, "hidden_size"},
      {{"train", "--config", gpuplan::test::data + "/configs/unknown_type.json"}, ExitCode::data, "model_type"},
      {{"infer", "--params", "7B", "--precision", "amp-bf16"}, ExitCode::usage, "precision"},
      {{"infer", "--params", "7B", "--prompt-len", "0"}, ExitCode::usage, "--prompt-len"},
      {{"infer", "--model", "llama-3.1-8b", "--gpu-memory", "12 apples"}, ExitCode::usage, "expected a size"},
      {{"infer", "--model", "llama-3.1-8b", "--gpu-memory", "0GB"}, ExitCode::usage, "expected a size"},
      {{"infer", "--model", "llama-3.1-8b", "--memory-bandwidth", "360GB/s"}, ExitCode::usage, "needs --gpu-memory"},
      {{"infer", "--model", "llama-3.1-8b", "--gpu-memory", "12GB", "--memory-bandwidth", "fast"}, ExitCode::usage,
       "expected a bandwidth"},
      {{"sweep", "infer", "--model", "llama-3.1-8b", "--context", "4k,8k", "--gpu", "l4", "--gpu-memory", "12GB"},
       ExitCode::usage, "without --gpu"},
      {{"frobnicate"}, ExitCode::usage, ""},
      // Names people mistype get the close ones.
      {{"trian", "--params", "7B"}, ExitCode::usage, "did you mean train?"},
      {{"plan", "trian", "--params", "7B"}, ExitCode::usage, "did you mean train?"},
      {{"train", "--params", "7B", "--sqe", "4096"}, ExitCode::usage, "did you mean --seq?"},
      {{"train", "--model", "llama-3.1-8", "--seq", "4k"}, ExitCode::usage, "did you mean llama-3.1-8b"},
      {{"train", "--params", "7B", "--gpu", "rtx-4095"}, ExitCode::usage, "rtx-4090"},
      {{"infer", "--params", "7B", "--profile", "vlm"}, ExitCode::usage, "did you mean vllm?"},
      {{"train", "--params", "7B", "--seq", "4x"}, ExitCode::usage, "4k"},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    INFO(joined);
    const auto r = run_cli(c.args);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Catch::Contains(c.err));
    CHECK(r.out.empty());
  }
}

TEST_CASE("cli: names and sizes as people type them", "[cli][names]") {
  // Any spelling of a preset and a GPU, a length in k: the same report as the ids and the number.
  const auto typed = run_cli({"train", "--model", "Llama-3.1-8B", "--seq", "4k", "--gpu", "H100 SXM", "--format", "json"});
  const auto ids = run_cli({"train", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "h100-sxm", "--format", "json"});
  REQUIRE(typed.code == ids.code);
  auto j = nlohmann::json::parse(typed.out);
  CHECK(j["model"]["source"]["ref"] == "Llama-3.1-8B");  // what was typed; all else as for the ids
  j["model"]["source"]["ref"] = "llama-3.1-8b";
  CHECK(j == nlohmann::json::parse(ids.out));
  CHECK(j["workload"]["seq"] == 4096);
  CHECK(j["fit"]["gpu"] == "h100-sxm");
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--gpu", "rtx4090", "--profile", "vLLM"}).code == ExitCode::ok);
  // A release of a preset's model, offline and not cached: the preset, and the report says so.
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  ::setenv("HF_HUB_CACHE", "/nonexistent/hf", 1);
  ::setenv("XDG_CACHE_HOME", "/nonexistent/xdg", 1);
  const auto release = run_cli({"train", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--format", "json"});
  const auto other = run_cli({"train", "--model", "nobody/never-fetched"});
  const auto pinned = run_cli({"train", "--model", "meta-llama/Llama-3.1-8B-Instruct@v9"});  // a revision: no stand-in
  ::unsetenv("HF_HUB_OFFLINE");
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("XDG_CACHE_HOME");
  REQUIRE(release.code == ExitCode::ok);
  const auto source = nlohmann::json::parse(release.out)["model"]["source"];
  CHECK(source["kind"] == "preset");
  CHECK_THAT(source["notes"][0].get<std::string>(), Catch::Contains("offline") && Catch::Contains("llama-3.1-8b"));
  CHECK(other.code == ExitCode::data);
  CHECK(pinned.code == ExitCode::data);
  CHECK_THAT(pinned.err, Catch::Contains("--model llama-3.1-8b"));
  // A config.json with a preset's architecture: the report names the presets that have it.
  const auto cfg = run_cli({"train", "--config", gpuplan::test::data + "/calibration/configs/infer-gpt2-fp16-b16-s512-n64.json",
                            "--format", "json"});
  REQUIRE(cfg.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(cfg.out)["model"]["source"]["notes"][0] == "the architecture of the built-in preset gpt2");
}

TEST_CASE("cli: every command starts from the same workload", "[cli][defaults]") {
  const auto train = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--format", "json"}).out);
  CHECK(train["workload"]["seq"] == gpuplan::defaults::seq);
  const auto infer = nlohmann::json::parse(run_cli({"infer", "--model", "llama-3.1-8b", "--format", "json"}).out);
  CHECK(infer["workload"]["prompt_len"] == gpuplan::defaults::prompt_len);
  CHECK(infer["workload"]["new_tokens"] == gpuplan::defaults::new_tokens);
  const auto plan = run_cli({"plan", "infer", "--model", "llama-3.1-8b", "--concurrency", "8", "--gpu", "h100-sxm",
                             "--format", "json"});
  REQUIRE(plan.code == ExitCode::ok);
  const auto req = nlohmann::json::parse(plan.out)["request"];
  CHECK(req["prompt_len"] == gpuplan::defaults::prompt_len);
  CHECK(req["new_tokens"] == gpuplan::defaults::new_tokens);
}

TEST_CASE("cli: a broken --max-memory says both sizes in GiB and GB", "[cli]") {
  const auto r = run_cli({"train", "--model", "llama-3.1-8b", "--max-memory", "24GB", "--quiet"});
  CHECK(r.code == ExitCode::limit);
  CHECK_THAT(r.err, Catch::Contains("GiB (") && Catch::Contains("22.35 GiB (24.00 GB)") && !Catch::Contains("e+"));
}

TEST_CASE("cli: hardware list --format json has the documented fields", "[cli][catalog]") {
  const auto r = run_cli({"hardware", "list", "--format", "json", "--min-memory", "80GB"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_array());
  CHECK(j.size() >= 15);
  for (const auto& d : j) {
    for (const char* k : {"id", "name", "aliases", "memory_bytes", "usable_memory_bytes", "memory_bandwidth_bytes_per_s",
                          "tdp_watts", "peak_flops"})
      CHECK(d.contains(k));
    for (const char* f : {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"}) CHECK(d["peak_flops"].contains(f));
    CHECK((d["memory_bytes"].get<double>() >= 80e9 || d["usable_memory_bytes"].get<double>() >= 80e9));
  }
  const auto csv = run_cli({"hardware", "list", "--vendor", "amd", "--format", "csv"});
  CHECK_THAT(csv.out, Catch::StartsWith("id,name,vendor") && Catch::Contains("mi300x"));
}

TEST_CASE("cli: prices and fit verdicts", "[cli][catalog]") {
  auto r = run_cli({"prices", "--gpu", "h100", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto p = nlohmann::json::parse(r.out);
  CHECK(p["schema"] == "gpuplan/1");
  CHECK(p["offerings"].size() >= 5);
  for (const auto& f : p["offerings"]) CHECK(f["accelerator"] == "h100-sxm");
  r = run_cli({"train", "--model", "llama-3.1-8b", "--precision", "pure-bf16", "--grad-checkpointing", "--gpu", "h100",
           "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["gpu"] == "h100-sxm");
  CHECK(j["fit"]["required_bytes"] == j["memory"]["total_bytes"]);
  CHECK(j["fit"]["fits"].get<bool>() == (j["memory"]["total_bytes"].get<double>() <= j["fit"]["capacity_bytes"].get<double>()));
  r = run_cli({"train", "--model", "llama-3.1-70b", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  bool h100_needs_more = false;
  for (const auto& d : j["fit_table"]["devices"])
    if (d["gpu"] == "h100-sxm") h100_needs_more = !d["fits"].get<bool>() && d["gpus_needed"].get<int>() > 1;
  CHECK(h100_needs_more);  // 70B with mixed-precision AdamW needs ~1.1 TB of states alone
  // Devices that can hold the run carry its time and cheapest cost at that GPU count.
  for (const auto& d : j["fit_table"]["devices"])
    if (d["gpu"] == "h100-sxm") {
      CHECK(d["run_gpus"] == d["gpus_needed"]);
      CHECK(d["run_usd"].get<double>() > 0);
      CHECK(d["run_days"].get<double>() > 0);
    }
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["fit"]["fits"] == true);  // 16 GB of bf16 weights + 1K context on 24 GB
}

TEST_CASE("cli: train with --gpu reports compute, time, cost and energy", "[cli][compute]") {
  auto r = run_cli({"train", "--model", "llama-2-7b", "--tokens", "2T", "--gpu", "a100-80gb", "--gpus", "8", "--nodes", "4",
                "--zero", "3", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["compute"]["tokens"] == 2'000'000'000'000);
  CHECK(j["compute"]["flops"].get<double>() > 8e22);
  CHECK(j["time"]["gpus"] == 32);
  CHECK(j["time"]["gpu_hours"].get<double>() == Approx(j["time"]["seconds"].get<double>() * 32 / 3600));
  CHECK(j["cost"]["usd"].get<double>() == Approx(j["time"]["gpu_hours"].get<double>() * j["cost"]["usd_per_gpu_hour"].get<double>()));
  CHECK(j["energy"]["kwh"].get<double>() == Approx(j["time"]["gpu_hours"].get<double>() * 400 * 1.2 / 1000));
  // Without --tokens the default is stated; without --gpu there is no time.
  r = run_cli({"train", "--model", "llama-3.2-1b", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["compute"]["tokens"] == 20LL * 1'235'814'400);
  CHECK_THAT(j["compute"]["tokens_basis"].get<std::string>(), Catch::Contains("default"));
  CHECK(j["time"].is_null());
  r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--price-per-gpu-hour", "2", "--mfu", "0.5", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["time"]["mfu"] == 0.5);
  CHECK(j["cost"]["usd_per_gpu_hour"] == 2.0);
  // Every part of the step is non-negative (host_bound_seconds was compute minus the kernels: −6.9e-18 here).
  r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--price-per-gpu-hour", "2", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  REQUIRE(j["time"]["step"].size() == 11);
  for (const auto& [k, v] : j["time"]["step"].items()) {
    INFO(k);
    CHECK(v.get<double>() >= 0);
  }
  CHECK(run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--mfu", "2"}).code == ExitCode::usage);
  CHECK(run_cli({"train", "--model", "llama-3.2-1b", "--tokens", "1T", "--epochs", "2"}).code == ExitCode::usage);
}

// One pricing rule (cost.h): each node of a training run, each serving replica's tensor-parallel group, inside one
// instance of a real size; the JSON names the instance.
TEST_CASE("cli: costs rest on instances that hold the setup", "[cli][cost]") {
  auto seconds_cost = [](const nlohmann::json& c, double seconds) {
    return c["instance"]["usd_per_hour"].get<double>() * c["instances"].get<double>() * seconds / 3600;
  };
  // 8 H100 training together: one 8-GPU instance, not eight single-GPU offerings.
  auto r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--gpus", "8", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["cost"]["instance"]["gpus"].get<int>() >= 8);
  CHECK(j["cost"]["instances"] == 1);
  CHECK(j["cost"]["usd"].get<double>() == Approx(seconds_cost(j["cost"], j["time"]["seconds"].get<double>())));
  for (const auto& a : j["cost"]["alternatives"]) CHECK(a["gpus_per_instance"].get<int>() >= 8);
  // 16 nodes of 8: 16 instances of 8 GPUs or more.
  r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--gpus", "8", "--nodes", "16", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"]["instance"]["gpus"] == 8);
  CHECK(j["cost"]["instances"] == 16);
  CHECK(j["cost"]["usd"].get<double>() == Approx(seconds_cost(j["cost"], j["time"]["seconds"].get<double>())));
  // 16 GPUs in one node: no H100 instance holds them; the answer says how to lay the run out on nodes.
  r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--gpus", "16", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"].is_null());
  CHECK_THAT(j["assumptions"].dump(), Catch::Contains("holds 16 GPUs in one instance") && Catch::Contains("--gpus 8 --nodes 2"));
  // A tensor-parallel pair of L40S: one instance of two GPUs or more.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--tp", "2", "--gpu", "l40s", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"]["instance"]["gpus"].get<int>() >= 2);
  CHECK(j["cost"]["instances"] == 1);
  CHECK(j["cost"]["usd_per_hour"].get<double>() == Approx(j["cost"]["instance"]["usd_per_hour"].get<double>()));
  // The user's own price rests on no instance.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--tp", "2", "--gpu", "l40s", "--price-per-gpu-hour", "1.5", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"]["usd_per_hour"] == 3.0);
  CHECK(j["cost"]["instance"].is_null());
  // A provider with no instance that holds the group prices nothing, and says why.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--tp", "2", "--gpu", "l40s", "--provider", "coreweave", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"].is_null());
  CHECK_THAT(j["assumptions"].dump(), Catch::Contains("holds 2 GPUs in one instance"));
  // vLLM cannot run FP8 weights on a V100 (no FP8 cores, Marlin from sm80): no offering is priced; the user's price is.
  r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--weights", "fp8", "--profile", "vllm", "--gpu", "v100", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["cost"].is_null());
  CHECK_THAT(j["assumptions"].dump(), Catch::Contains("no offering priced") && Catch::Contains("sm80"));
  r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--weights", "fp8", "--profile", "vllm", "--gpu", "v100",
               "--price-per-gpu-hour", "1", "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["cost"]["usd_per_hour"] == 1.0);
  // plan infer never offers a GPU the engine cannot run the format on.
  r = run_cli({"plan", "infer", "--model", "llama-3.1-8b", "--concurrency", "16", "--top", "100", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  REQUIRE(!j["best"].empty());
  for (const auto& b : j["best"]) {
    INFO(b["gpu"] << " " << b["weights"]);
    const auto& d = gpuplan::builtin_catalog().get(b["gpu"].get<std::string>());
    CHECK((d.vendor == "NVIDIA" || d.vendor == "AMD"));
    CHECK_FALSE(gpuplan::cannot_run(d, gpuplan::Profile::vllm, gpuplan::parse_enum<gpuplan::WeightFormat>(gpuplan::weight_format_names, b["weights"].get<std::string>(), "w")));
  }
}

TEST_CASE("cli: train prices plan train's setups as plan train does", "[cli][cost][plan]") {
  int compared = 0, multi = 0;
  // The whole catalog (single pods and nodes win) and one provider of 8-GPU nodes only (runs over instances win).
  for (const std::string provider : {"", "lambda"}) {
    std::vector<std::string> ask{"plan", "train", "--model", "llama-3.2-1b", "--gpu", "h100", "--top", "5", "--format", "json"};
    if (!provider.empty()) ask.insert(ask.end(), {"--provider", provider});
    auto r = run_cli(ask);
    REQUIRE(r.code == ExitCode::ok);
    const auto plan = nlohmann::json::parse(r.out);
    for (const auto& b : plan["best"]) {
      const auto& L = b["layout"];
      // train's flags below say data × tensor parallelism, ZeRO, micro-batches and recomputation.
      if (L["pipeline"] != 1 || L["expert"] != 1 || L["offload"] != "none") continue;
      INFO(b.dump());
      const std::int64_t per_node = std::min(b["gpus"].get<std::int64_t>(), b["gpus_per_instance"].get<std::int64_t>());
      std::vector<std::string> args{"train", "--model", "llama-3.2-1b", "--gpu", "h100", "--format", "json",
                                    "--tokens", std::to_string(plan["request"]["tokens"].get<std::int64_t>()),
                                    "--gpus", std::to_string(per_node),
                                    "--nodes", std::to_string(b["gpus"].get<std::int64_t>() / per_node),
                                    "--tp", std::to_string(L["tensor"].get<int>()),
                                    "--zero", std::to_string(L["zero"].get<int>()),
                                    "--batch", std::to_string(L["micro_batch"].get<int>()),
                                    "--grad-accum", std::to_string(L["grad_accum"].get<int>()),
                                    "--recompute", L["recompute"].get<std::string>()};
      if (!provider.empty()) args.insert(args.end(), {"--provider", provider});
      const auto t = run_cli(args);
      REQUIRE(t.code == ExitCode::ok);
      const auto j = nlohmann::json::parse(t.out);
      CHECK(j["cost"]["instance"]["name"] == b["instance"]);
      CHECK(j["cost"]["instance"]["gpus"] == b["gpus_per_instance"]);
      CHECK(j["cost"]["instances"] == b["instances"]);
      CHECK(j["time"]["seconds"].get<double>() == Approx(b["seconds"].get<double>()).epsilon(1e-6));
      CHECK(j["cost"]["usd"].get<double>() == Approx(b["usd"].get<double>()).epsilon(1e-6));
      ++compared;
      multi += b["instances"].get<int>() > 1;
    }
  }
  CHECK(compared >= 6);
  CHECK(multi >= 3);
}

TEST_CASE("cli: scale", "[cli][compute]") {
  auto r = run_cli({"scale", "--compute", "5.76e23", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"params", "tokens", "loss"}) CHECK(j["optimal"][k].is_number());
  for (const char* a : {"chinchilla-1", "chinchilla-2", "chinchilla-3", "epoch-2024"}) CHECK(j["approaches"].contains(a));
  CHECK(j["approaches"]["chinchilla-1"]["params"] == 67'000'000'000);
  r = run_cli({"scale", "--budget", "$1M", "--gpu", "h100", "--provider", "aws", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  // $1M at $6.88/GPU-h = 145,349 H100-hours × 989.4 TFLOP/s × 40 % MFU.
  CHECK(j["budget"]["flops"].get<double>() == Approx(1e6 / 6.88 * 3600 * 989.4e12 * 0.40).epsilon(1e-6));
  CHECK(j["budget"]["price"]["instance"]["name"] == "p5.48xlarge");  // 8-GPU nodes: not the 1-GPU p5.4xlarge
  CHECK_THAT(run_cli({"scale", "--budget", "$1M", "--gpu", "h100", "--provider", "aws"}).out,
             Catch::Contains("Price      $6.88/GPU-hour: aws p5.48xlarge (8 GPUs, $55.04/h each, on-demand), as of"));
  // A provider with no instance of an 8-GPU node prices no budget.
  CHECK(run_cli({"scale", "--budget", "$1M", "--gpu", "h100", "--provider", "runpod"}).code == ExitCode::usage);
  CHECK(run_cli({"scale"}).code == ExitCode::usage);
  CHECK(run_cli({"scale", "--budget", "1M"}).code == ExitCode::usage);
  CHECK(run_cli({"scale", "--compute", "-5"}).code == ExitCode::usage);
}

TEST_CASE("cli: infer with --gpu reports throughput and $ per token", "[cli][inference]") {
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--batch", "8", "--gpu", "h100", "--profile", "vllm", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["memory"]["components"]["kv_cache"].get<double>() > 0);
  CHECK(j["memory"]["kv_cache_bytes_per_token"] == 131'072);
  CHECK(j["throughput"]["prefill_tokens_per_s"].get<double>() > j["throughput"]["decode_tokens_per_s"].get<double>());
  CHECK(j["cost"]["usd_per_million_output_tokens"].get<double>() ==
        Approx(j["cost"]["usd_per_hour"].get<double>() / (j["throughput"]["decode_tokens_per_s"].get<double>() * 3600) * 1e6));
  CHECK(j["serving"]["kv_blocks"].get<std::int64_t>() > 0);
}

TEST_CASE("cli: --gpu-memory is a device the catalog does not list", "[cli][catalog]") {
  // An 8 GB card's 7,939 MiB: the verdict is against that capacity, and vLLM budgets from it.
  auto r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--profile", "vllm", "--gpu-memory", "7939MiB",
                    "--max-model-len", "4096", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["gpu"] == "custom");
  CHECK(j["fit"]["capacity_bytes"].get<double>() == 7939.0 * 1048576.0);
  CHECK(j["serving"]["budget_bytes"].get<double>() == Approx(0.90 * 7939.0 * 1048576.0).epsilon(1e-6));
  // No compute rate is guessed: no throughput without --memory-bandwidth, decode alone with it.
  CHECK(j["throughput"].is_null());
  r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--gpu-memory", "8GiB", "--memory-bandwidth", "272GB/s", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["throughput"]["prefill_tokens_per_s"].is_null());
  CHECK(j["throughput"]["memory_bandwidth_bytes_per_s"] == 272e9);
  // Decode reads the weights (tied: the embedding is the head, read whole) once per token and the cache at 90 % of
  // the bandwidth: under 272e9 × 0.9 / weight bytes tokens/s.
  CHECK(j["throughput"]["decode_tokens_per_s"].get<double>() < 272e9 * 0.9 / j["memory"]["weight_bytes"].get<double>());
  CHECK(j["throughput"]["decode_tokens_per_s"].get<double>() > 0.95 * 272e9 * 0.9 / j["memory"]["weight_bytes"].get<double>());
  CHECK(j["cost"].is_null());
  // With --gpu, the listed device at another capacity keeps its rates.
  r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--gpu", "rtx-4090", "--gpu-memory", "20GiB", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["capacity_bytes"].get<double>() == 20.0 * 1073741824.0);
  CHECK(j["throughput"]["peak_flops_per_gpu"].get<double>() == Approx(165.2e12));
  // train takes it too; a device with no rate gets memory only, said so.
  r = run_cli({"train", "--model", "qwen2.5-1.5b", "--gpu-memory", "24GB", "--tokens", "1B", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["capacity_bytes"].get<double>() == 24e9);
  CHECK(j["time"].is_null());
  // sweep: the one unlisted device, named by its size.
  r = run_cli({"sweep", "infer", "--model", "qwen2.5-1.5b", "--context", "4k,8k", "--gpu-memory", "8GB", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("gpu-memory 8GB"));
}

TEST_CASE("cli: a listed device without a published rate gets memory verdicts and says why no speed", "[cli][catalog]") {
  const auto r = run_cli({"infer", "--model", "qwen2.5-1.5b", "--gpu", "apple-m4-max", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["fits"] == true);
  CHECK(j["throughput"]["prefill_tokens_per_s"].is_null());  // Apple publishes no M4 Max TFLOPS
  CHECK(j["throughput"]["decode_tokens_per_s"].get<double>() > 0);
}

TEST_CASE("cli: infer solve modes", "[cli][inference]") {
  // The solved batch fits, one more does not.
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--prompt-len", "4096", "--new-tokens", "512", "--gpu", "h100",
                "--max-batch", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  const auto best = j["solve"]["max_batch"].get<std::int64_t>();
  CHECK(best > 1);
  CHECK(j["fit"]["fits"] == true);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--prompt-len", "4096", "--new-tokens", "512", "--gpu", "h100",
           "--batch", std::to_string(best + 1), "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["fit"]["fits"] == false);
  // Max context with a quantised model on a 24 GB card, llama.cpp.
  r = run_cli({"infer", "--model", "llama-2-13b", "--weights", "q4_k_m", "--profile", "llama.cpp", "--gpu", "rtx-4090",
           "--max-context", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  const auto ctx = j["solve"]["max_context"].get<std::int64_t>();
  CHECK(ctx > 1000);
  CHECK(ctx <= 4096);  // Llama 2's max_position_embeddings
  // Ollama: num_ctx by the GPU's memory (4k on a 24 GB card, 256k clamped to the model's 128k on an H100), times
  // OLLAMA_NUM_PARALLEL; --n-ctx (llama.cpp's name) and --num-ctx (Ollama's) are --context.
  for (const auto& [gpu, ctx] : {std::pair{"rtx-4090", 4096}, std::pair{"h100", 131072}}) {
    r = run_cli({"infer", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--profile", "ollama", "--gpu", gpu,
                 "--format", "json"});
    REQUIRE(r.code == ExitCode::ok);
    j = nlohmann::json::parse(r.out);
    CHECK(j["workload"]["context_tokens"] == ctx);
    CHECK(j["serving"]["engine"] == "ollama 0.21.0");
  }
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--profile", "ollama", "--num-ctx", "2048",
               "--num-parallel", "4", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["memory"]["components"]["kv_cache"] == 8192.0 * 32 * 2 * 1024 * 2);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--n-ctx", "8192", "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["workload"]["context_tokens"] == 8192);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "ollama", "--flash-attn", "maybe"}).code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--max-batch"}).code == ExitCode::usage);  // needs --gpu
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--weights", "q9"}).code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--tp", "0"}).code == ExitCode::usage);
}

TEST_CASE("cli: extreme accepted inputs give finite, positive numbers", "[cli][property]") {
  const std::vector<std::vector<std::string>> cases = {
      {"train", "--params", "1000T", "--batch", "1000000", "--seq", "10000000"},
      {"train", "--model", "deepseek-v3", "--batch", "1000000", "--seq", "10000000", "--attention", "eager"},
      {"infer", "--params", "1000T", "--batch", "1000000", "--prompt-len", "10000000", "--new-tokens", "10000000"},
      {"infer", "--model", "gpt2", "--new-tokens", "0"},
      {"train", "--model", "gpt2", "--seq", "1"},
      {"infer", "--model", "mixtral-8x22b", "--profile", "vllm", "--gpu", "t4"},
      {"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--gpu-layers", "0", "--gpu", "h100"},
      {"train", "--params", "1000T", "--gpu", "h100", "--gpus", "1000000", "--tokens", "1000000T"},
  };
  std::function<void(const nlohmann::json&)> finite = [&](const nlohmann::json& j) {
    if (j.is_number_float()) CHECK(std::isfinite(j.get<double>()));
    if (j.is_structured())
      for (const auto& v : j) finite(v);
  };
  for (auto args : cases) {
    args.push_back("--format");
    args.push_back("json");
    const auto r = run_cli(args);
    INFO(args[1] << " " << args[2]);
    REQUIRE(r.code == ExitCode::ok);
    const auto j = nlohmann::json::parse(r.out);
    finite(j);
    CHECK(j["memory"]["total_bytes"].get<double>() > 0);
  }
}

TEST_CASE("cli: check evaluates scenarios and their limits", "[cli][check]") {
  const auto r = run_cli({"check", gpuplan::test::data + "/check/spec.json", "--format", "json"});
  CHECK(r.code == ExitCode::limit);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["scenarios"].size() == 3);
  CHECK(j["scenarios"][0]["status"] == "pass");   // 8B fused + recompute: ~61 GiB on an 80 GB H100
  CHECK(j["scenarios"][1]["status"] == "fail");   // 70B bf16 weights alone are 131 GiB
  CHECK(j["scenarios"][1]["fits"] == false);
  // 1B on 100B tokens at 8 × 2048 tokens per GPU and step: 6·N·D ≈ 7.6e20 FLOPs, ~4 days on 8 H100 → ~$1,900,
  // inside both limits (at one sequence per GPU the optimizer step would outweigh the compute: 7+ days).
  CHECK(j["scenarios"][2]["status"] == "pass");
  const auto q = run_cli({"train", "--model", "llama-3.1-70b", "--gpu", "h100", "--require-fit", "--quiet"});
  CHECK(q.code == ExitCode::limit);
  CHECK(q.out.empty());
  CHECK_THAT(q.err, Catch::Contains("require_fit"));
}

TEST_CASE("cli: every command speaks table, json, csv and md", "[cli][format]") {
  const std::vector<std::vector<std::string>> commands = {
      {"train", "--model", "gpt2"}, {"infer", "--model", "gpt2", "--gpu", "l4"}, {"models"},
      {"hardware", "list"}, {"hardware", "show", "h100"}, {"prices"}, {"scale", "--compute", "1e22"},
      {"check", gpuplan::test::data + "/check/pass.json"}};
  for (const auto& c : commands) {
    INFO(c[0]);
    for (const char* f : {"table", "json", "csv", "md"}) {
      INFO(f);
      auto args = c;
      args.push_back("--format");
      args.push_back(f);
      const auto r = run_cli(args);
      CHECK(r.code == ExitCode::ok);
      CHECK(!r.out.empty());
      if (std::string(f) == "json") CHECK_NOTHROW(nlohmann::json::parse(r.out));
      if (std::string(f) == "md") CHECK_THAT(r.out, Catch::Contains("| --- |"));
      if (std::string(f) == "csv") CHECK(r.out.find('|') == std::string::npos);
    }
  }
}

TEST_CASE("cli: models lists the presets", "[cli]") {
  const auto r = run_cli({"models", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["models"].size() >= 28);
  // --search: every word, case-insensitive, over id, aliases, name and model_type
  const auto q = nlohmann::json::parse(run_cli({"models", "--search", "Qwen3 A3B", "--format", "json"}).out)["models"];
  REQUIRE(q.size() == 2);
  CHECK(q[0]["id"] == "qwen3-30b-a3b");
  CHECK(q[1]["id"] == "qwen3-next-80b-a3b");
  CHECK(nlohmann::json::parse(run_cli({"models", "--search", "llama4_text", "--format", "json"}).out)["models"].size() == 2);
  const auto none = run_cli({"models", "--search", "no-such-model"});
  CHECK(none.code == ExitCode::ok);
  CHECK_THAT(none.out, Catch::Contains("no preset matches"));
}

TEST_CASE("cli: train with tensor, pipeline and expert parallelism", "[cli][parallel]") {
  auto r = run_cli({"train", "--model", "llama-3.1-70b", "--gpus", "8", "--nodes", "4", "--tp", "8", "--sp", "--pp", "2",
                "--grad-accum", "16", "--zero", "1", "--seq", "8192", "--gpu", "h100", "--tokens", "1T", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["parallel"]["data"] == 2);
  CHECK(j["parallel"]["stage"] == 0);  // the first stage: 40 layers, 2 micro-batches in flight
  CHECK(j["parallel"]["in_flight_microbatches"] == 2.0);
  CHECK(j["parallel"]["pipeline_bubble_fraction"].get<double>() == Approx(1.0 / 16));
  CHECK(j["workload"]["tokens_per_step"] == 8192 * 16 * 2);
  std::map<std::string, nlohmann::json> by;
  for (const auto& c : j["communication"]["by_parallelism"]) by[c["parallelism"]] = c;
  REQUIRE(by.count("tensor"));
  REQUIRE(by.count("pipeline"));
  REQUIRE(by.count("data"));
  CHECK_FALSE(by["tensor"]["across_nodes"].get<bool>());  // tp 8 inside a node of 8
  CHECK(by["data"]["across_nodes"].get<bool>());           // dp replicas 16 GPUs apart
  CHECK(by["tensor"]["link"].get<std::string>().find("NVLink") != std::string::npos);
  // Each rank holds 1/8 of a layer's weights: bf16 weights of the 40 layers + embedding on stage 0.
  const double weights = j["memory"]["components"]["weights"].get<double>();
  CHECK(weights == Approx(2.0 * j["trainable_params_on_gpu"].get<double>()));
  CHECK(weights < 2.0 * 70.6e9 / 16);

  r = run_cli({"train", "--model", "mixtral-8x7b", "--gpus", "8", "--ep", "8", "--zero", "1", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  CHECK(j["trainable_params"] == j["model"]["params"]);
  CHECK(j["trainable_params_on_gpu"].get<double>() < 0.3 * j["model"]["params"].get<double>());
  CHECK(j["communication"]["by_parallelism"][1]["parallelism"] == "expert");

  r = run_cli({"train", "--model", "llama-3.1-70b", "--gpus", "16", "--tp", "8", "--pp", "2", "--grad-accum", "8"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("pipeline stage 0"));
  CHECK_THAT(r.out, Catch::Contains("Comms/step tensor"));
}

TEST_CASE("cli: plan train and plan infer", "[cli][plan]") {
  auto r = run_cli({"plan", "train", "--model", "llama-3.1-70b", "--tokens", "2T", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["command"] == "plan train");
  REQUIRE(j["best"].size() == 5);
  CHECK(j["search"]["configurations"].get<std::int64_t>() > 100000);
  for (std::size_t i = 1; i < j["best"].size(); ++i)
    CHECK(j["best"][i - 1]["usd"].get<double>() <= j["best"][i]["usd"].get<double>());
  for (const auto& b : j["best"]) {
    CHECK(b["memory_bytes"].get<double>() <= 0.9 * b["capacity_bytes"].get<double>());
    const auto& L = b["layout"];
    CHECK(L["data"].get<std::int64_t>() * L["tensor"].get<std::int64_t>() * L["pipeline"].get<std::int64_t>() ==
          b["gpus"].get<std::int64_t>());
  }
  CHECK(j["why"].get<std::string>().find("cheapest") != std::string::npos);

  // The table explains the winner in one line.
  r = run_cli({"plan", "train", "--model", "llama-3.1-8b", "--tokens", "100B", "--gpu", "h100,a100-80gb", "--max-gpus", "64"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("Why        "));
  CHECK_THAT(r.out, Catch::Contains("h100-sxm"));
  CHECK_THAT(r.out, !Catch::Contains("b200"));

  // Nothing meets the request: the report still prints, exit 1 with one line on stderr.
  r = run_cli({"plan", "train", "--model", "llama-3.1-70b", "--tokens", "2T", "--deadline", "1d", "--max-gpus", "64", "--format", "json"});
  CHECK(r.code == ExitCode::limit);
  CHECK(nlohmann::json::parse(r.out)["best"].empty());
  CHECK_THAT(r.err, Catch::Contains("no setup meets"));

  r = run_cli({"plan", "infer", "--model", "llama-3.1-8b", "--tokens-per-second", "20000", "--latency", "40ms", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  j = nlohmann::json::parse(r.out);
  REQUIRE(!j["best"].empty());
  for (const auto& b : j["best"]) {
    CHECK(b["decode_tokens_per_s"].get<double>() >= 20000);
    CHECK(b["per_token_latency_seconds"].get<double>() <= 0.040);
  }
  for (const char* f : {"csv", "md"}) {
    r = run_cli({"plan", "infer", "--model", "llama-3.1-8b", "--concurrency", "32", "--format", f});
    REQUIRE(r.code == ExitCode::ok);
    CHECK_THAT(r.out, Catch::Contains("$/1M out"));
  }
}

TEST_CASE("cli: --model that is neither a preset, a path nor a Hub id org/name[@revision]", "[cli]") {
  for (const char* bad : {"org/", "/name", "org/name/extra", "org/na me", "-org/name", "org/name@", "org/../name",
                          "org/name@re v", "org"}) {
    INFO(bad);
    const auto r = run_cli({"train", "--model", bad});
    CHECK(r.code == ExitCode::usage);
    CHECK_THAT(r.err, Catch::Contains("unknown model"));
  }
}

TEST_CASE("cli: train time is the step-time model's, or the model FLOPs at a stated --mfu", "[cli][time]") {
  const auto r = gpuplan::test::run_cli({"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                         "--zero", "3", "--batch", "2", "--seq", "4096", "--tokens", "1B", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto t = nlohmann::json::parse(r.out)["time"];
  CHECK(t["mfu_basis"] == "implied by the step-time model");
  CHECK(t["step"]["matmul_seconds"].get<double>() > 0);
  CHECK(t["seconds"].get<double>() == Approx(t["step_seconds"].get<double>() * t["steps"].get<double>()));
  CHECK(t["tokens_per_second_per_gpu"].get<double>() ==
        Approx(2.0 * 4096 * 8 / t["step_seconds"].get<double>() / 8));
  CHECK(t["mfu"].get<double>() > 0.2);
  CHECK(t["mfu"].get<double>() < 0.7);
  // --mfu 0.4: seconds = model FLOPs / (8 GPUs · 989.4 TFLOP/s · 0.4), no breakdown.
  const auto m = gpuplan::test::run_cli({"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                         "--zero", "3", "--batch", "2", "--seq", "4096", "--tokens", "1B", "--mfu", "0.4",
                                         "--format", "json"});
  REQUIRE(m.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(m.out);
  CHECK(j["time"]["seconds"].get<double>() == Approx(j["compute"]["flops"].get<double>() / (8 * 989.4e12 * 0.4)));
  CHECK(j["time"]["mfu"].get<double>() == Approx(0.4));
  CHECK(j["time"]["step"].is_null());
}

TEST_CASE("cli: vLLM answers in its own terms, with its own flag names", "[cli][inference][vllm]") {
  // Llama 3.1 8B on an H100 at 0.95 with max_model_len 16384: vLLM 0.19 logged 476,016 tokens and 29.05x.
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "16384",
                    "--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "8192", "--max-num-seqs", "1024",
                    "--engine-version", "0.19", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  const auto& sv = j["serving"];
  CHECK(sv["engine"] == "vllm 0.19.0");
  CHECK(sv["engine_version"] == "0.19.0");
  CHECK(sv["engine_defaults"] == nlohmann::json{{"block_size", 16}});
  CHECK(sv["kv_tokens"].get<double>() == Approx(476'016).epsilon(0.005));
  CHECK(sv["max_concurrent_sequences"].get<double>() == Approx(29.05).epsilon(0.005));
  CHECK(sv["starts"] == true);
  CHECK(sv["max_model_len"] == 16384);
  // Fewer profiled sequences shrink the sampler's peak and grow the pool.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "16384",
               "--gpu-memory-utilization", "0.95", "--max-num-seqs", "256", "--engine-version", "0.19", "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["serving"]["kv_tokens"].get<double>() > sv["kv_tokens"].get<double>());
  // 70B in bf16 does not start on one H100: the fit says so, and the table says why.
  r = run_cli({"infer", "--model", "llama-3.1-70b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "8192",
               "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["serving"]["starts"] == false);
  CHECK(j["fit"]["fits"] == false);
  r = run_cli({"infer", "--model", "llama-3.1-70b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "8192"});
  CHECK(r.out.find("does NOT start") != std::string::npos);
  // The budget's base is the device's CUDA total where a log gave it: an RTX 3090 prints total_gpu_memory=23.58GiB
  // (vllm-project/vllm #10517), 0.42 GiB below nvidia-smi's 24 GiB.
  r = run_cli({"infer", "--model", "llama-3.2-3b", "--profile", "vllm", "--gpu", "rtx-3090", "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["serving"]["budget_bytes"].get<double>() ==
        Approx(0.90 * 23.58 * 1073741824.0).epsilon(0.0005));
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--max-num-seqs", "-1"}).code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu-memory-utilization", "1.5"}).code ==
        ExitCode::usage);
}

TEST_CASE("cli: DeepSpeed ZeRO and FSDP2 give different answers for the same run", "[cli][training][deepspeed]") {
  const std::vector<std::string> run{"train", "--model", "llama-3.1-8b", "--gpus", "8", "--zero", "2", "--format", "json"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    REQUIRE(r.code == ExitCode::ok);
    return nlohmann::json::parse(r.out);
  };
  const auto fsdp = with({});
  const auto ds = with({"--profile", "deepspeed"});
  CHECK(fsdp["deepspeed_estimator"].is_null());
  CHECK(ds["deepspeed_estimator"]["function"] == "estimate_zero2_model_states_mem_needs");
  // DeepSpeed's own number: 4 B + 16 B / 8 per parameter.
  CHECK(ds["deepspeed_estimator"]["gpu_bytes"].get<double>() == 4.0 * 8'030'261'248 + 16.0 * 8'030'261'248 / 8);
  CHECK(ds["memory"]["total_bytes"].get<double>() != Approx(fsdp["memory"]["total_bytes"].get<double>()).epsilon(0.02));
  // A bigger reduce bucket is more memory; overlap_comm doubles the buffer.
  const auto big = with({"--profile", "deepspeed", "--reduce-bucket-size", "1e9"});
  CHECK(big["memory"]["total_bytes"].get<double>() > ds["memory"]["total_bytes"].get<double>());
  const auto two = with({"--profile", "deepspeed", "--overlap-comm", "true"});
  CHECK(two["memory"]["total_bytes"].get<double>() > ds["memory"]["total_bytes"].get<double>());
  CHECK(run_cli({"train", "--model", "llama-3.1-8b", "--profile", "deepspeed"}).code == ExitCode::usage);  // --zero 0
  CHECK(run_cli({"train", "--model", "llama-3.1-8b", "--gpus", "8", "--zero", "2", "--profile", "deepspeed",
                 "--overlap-comm", "maybe"}).code == ExitCode::usage);
}

TEST_CASE("cli: --engine-version follows an engine's release and names the defaults it implied", "[cli][engines]") {
  // vLLM 0.9 keeps every token of gpt-oss's sliding-window layers; 0.10 on gives them their own group, so a
  // 131,072-token request holds 8192 + 521 blocks of half the layers instead of 8192 of all of them.
  auto pool = [](const char* version) {
    const auto r = run_cli({"infer", "--model", "gpt-oss-20b", "--weights", "mxfp4", "--profile", "vllm", "--gpu", "h100",
                            "--max-model-len", "131072", "--engine-version", version, "--format", "json"});
    REQUIRE(r.code == ExitCode::ok);
    return nlohmann::json::parse(r.out)["serving"];
  };
  const auto v9 = pool("0.9.2"), v10 = pool("0.10.1");
  CHECK(v9["engine"] == "vllm 0.9.2");
  CHECK(v10["engine_defaults"]["max_num_seqs"] == 1024);
  CHECK(v10["max_concurrent_sequences"].get<double>() > 1.5 * v9["max_concurrent_sequences"].get<double>());
  // A development build is taken as the release it leads to (vllm --version prints 0.6.5.dev123+g…).
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--engine-version",
                    "0.6.5.dev123+gabcdef0", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["serving"]["engine"] == "vllm 0.6.5");
  // SGLang before 0.4.7: 0.88 at TP 1; 0.4.7-0.5.3: 10 GB reserved on an H100 (81,559 MiB) → 0.874.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "sglang", "--gpu", "h100", "--engine-version", "0.4.6",
                    "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["serving"]["engine_defaults"]["mem_fraction_static"] == 0.88);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "sglang", "--gpu", "h100", "--engine-version", "0.4.9",
               "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["serving"]["engine_defaults"]["mem_fraction_static"] == 0.874);
  // From 0.5.4 on an AMD GPU above 8192 tokens of context: 0.85 of the heuristic's 0.864 (aiter attention); a hybrid
  // model says how many state slots its pool gives up.
  r = run_cli({"infer", "--model", "qwen3-next-80b-a3b", "--profile", "sglang", "--gpu", "mi300x", "--tp", "4",
               "--context", "262144", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto amd = nlohmann::json::parse(r.out);
  CHECK(amd["serving"]["engine_defaults"]["mem_fraction_static"].get<double>() == Approx(0.864 * 0.85));
  CHECK_THAT(amd["assumptions"].dump(), Catch::Contains("aiter") && Catch::Contains("linear-attention state slots"));
  // llama.cpp takes a build number; Ollama a release (2048 tokens before 0.6.7).
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--profile", "llama.cpp", "--engine-version", "b5000",
               "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["serving"]["engine"] == "llama.cpp b5000");
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--profile", "ollama", "--gpu", "h100",
               "--engine-version", "0.5.7", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["workload"]["context_tokens"] == 2048);
  // Bad or unmodelled versions, or a version for HF generate: usage errors.
  for (std::vector<std::string> args : {std::vector<std::string>{"--profile", "vllm", "--engine-version", "0.1.7"},
                                        {"--profile", "vllm", "--engine-version", "zero"},
                                        {"--profile", "llama.cpp", "--engine-version", "b100"},
                                        {"--profile", "sglang", "--engine-version", "0.0.9"},
                                        {"--engine-version", "0.10"}}) {
    args.insert(args.begin(), {"infer", "--model", "llama-3.1-8b"});
    CHECK(run_cli(args).code == ExitCode::usage);
  }
  CHECK(run_cli({"plan", "infer", "--model", "llama-3.1-8b", "--concurrency", "8", "--engine-version", "0.1"}).code ==
        ExitCode::usage);
}

TEST_CASE("cli: serving verdicts as the engine gives them (issue #43)", "[cli][engines]") {
  // --tp must divide the attention heads (vLLM verify_with_parallel_config): Llama 3.1 8B has 32.
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--tp", "3"}).code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--tp", "3"}).code == ExitCode::usage);
  // It starts, but the pool holds fewer than 4096 sequences of 16k tokens: it does not fit.
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "16384",
                    "--concurrency", "4096", "--format", "json"});
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["serving"]["starts"] == true);
  CHECK(j["fit"]["fits"] == false);
  // The memory alone would fit: the verdict's line says why it does not.
  CHECK(j["fit"]["reason"].get<std::string>().find("fewer than --concurrency 4096") != std::string::npos);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "16384",
               "--concurrency", "4096"});
  CHECK(r.out.find("DOES NOT FIT: the KV pool holds") != std::string::npos);
  // A max_model_len above the model's does not start; 70B in bf16 starts at no utilization on one H100.
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--max-model-len", "200000",
               "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["serving"]["starts"] == false);
  CHECK(nlohmann::json::parse(r.out)["fit"]["reason"] == "the engine does not start (the assumptions say why)");
  r = run_cli({"infer", "--model", "llama-3.1-70b", "--profile", "vllm", "--gpu", "h100", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["serving"]["min_gpu_memory_utilization"].is_null());
  r = run_cli({"infer", "--model", "llama-3.1-70b", "--profile", "vllm", "--gpu", "h100"});
  CHECK(r.out.find("no gpu_memory_utilization starts it on this GPU") != std::string::npos);
}

TEST_CASE("cli: SGLang answers in its terms", "[cli][inference][sglang]") {
  auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "sglang", "--gpu", "h100", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["serving"]["engine"] == "sglang 0.5.4");
  CHECK(j["serving"]["kv_tokens"].get<std::int64_t>() > 100'000);
  CHECK(j["serving"]["min_mem_fraction_static"].get<double>() < 0.835);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "sglang", "--gpu", "h100"});
  CHECK(r.out.find("KV Cache #tokens") != std::string::npos);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "sglang", "--mem-fraction-static", "1.2"}).code ==
        ExitCode::usage);
}

TEST_CASE("cli: --version names the calibration and every catalog's date, alone or beside other flags", "[cli]") {
  const auto r = run_cli({"--version"});  // answered before the argument parser is built
  REQUIRE(r.code == ExitCode::ok);
  CHECK(r.out.rfind("gpuplan 0.1.0\ncalibration: PyTorch 2.11 + transformers 5.17", 0) == 0);
  CHECK(r.out.find("\n  data/hardware/nvidia.json 20") != std::string::npos);
  CHECK(r.out.find("\n  data/pricing/aws.json 20") != std::string::npos);
  CHECK(r.out.back() == '\n');
  // Through the parser (CLI11's version flag), the same text.
  const auto parsed = run_cli({"--quiet", "--version"});
  CHECK(parsed.code == ExitCode::ok);
  CHECK(parsed.out == r.out);
}

namespace {
// The user's arguments with an advice entry's flags, each replacing the same flag given before (with its value).
std::vector<std::string> with_flags(std::vector<std::string> args, const nlohmann::json& flags) {
  static const std::vector<std::string> switches{"--qlora", "--activation-offload", "--advise", "--fine-tune"};
  std::vector<std::string> add;
  for (const auto& f : flags) add.push_back(f.get<std::string>());
  for (std::size_t i = 0; i < add.size(); ++i) {
    if (add[i].rfind("--", 0) != 0) continue;
    const bool sw = std::find(switches.begin(), switches.end(), add[i]) != switches.end();
    for (std::size_t k = 0; k < args.size(); ++k)
      if (args[k] == add[i]) {
        args.erase(args.begin() + long(k), args.begin() + long(k) + (sw ? 1 : 2));
        break;
      }
  }
  args.insert(args.end(), add.begin(), add.end());
  return args;
}
}  // namespace

TEST_CASE("cli: fit advice: each entry fits, and gpuplan with its flags reproduces it", "[cli][advice]") {
  // "Can I full-fine-tune Llama 3.1 8B on one H100?" — no (158 GiB); the advice says what would fit.
  const std::vector<std::string> base{"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "4",
                                      "--fine-tune", "--format", "json"};
  auto r = run_cli(base);
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["fit"]["fits"] == false);
  REQUIRE(j["advice"].size() >= 3);
  CHECK(j["advice_objective"] == "least-change");
  std::vector<std::string> changes;
  for (const auto& a : j["advice"]) {
    for (const char* k : {"change", "flags", "total_bytes", "step_seconds", "cost"}) CHECK(a.contains(k));
    changes.push_back(a["change"].get<std::string>());
    const auto again = run_cli(with_flags(base, a["flags"]));
    INFO(a["change"].get<std::string>());
    REQUIRE(again.code == ExitCode::ok);
    const auto k = nlohmann::json::parse(again.out);
    CHECK(k["fit"]["fits"] == true);
    CHECK(k["memory"]["total_bytes"] == a["total_bytes"]);
    CHECK(k["time"]["step_seconds"] == a["step_seconds"]);
    CHECK(k["cost"]["usd"] == a["cost"]["usd"]);
    CHECK(!k.contains("advice"));  // it fits: no advice unless --advise
  }
  // LoRA is among them; the least change comes first (a micro-batch traded for accumulation changes nothing else).
  CHECK(std::any_of(changes.begin(), changes.end(), [](const std::string& c) { return c.find("LoRA") != std::string::npos; }));
  // Cheapest ranks by dollars (per token: every entry prices the same run).
  auto c = base;
  c.insert(c.end(), {"--objective", "cheapest"});
  j = nlohmann::json::parse(run_cli(c).out);
  for (std::size_t i = 1; i < j["advice"].size(); ++i)
    CHECK(j["advice"][i - 1]["cost"]["usd"].get<double>() / j["advice"][i - 1]["cost"]["tokens"].get<double>() <=
          j["advice"][i]["cost"]["usd"].get<double>() / j["advice"][i]["cost"]["tokens"].get<double>());
  // With --advise a setup that fits gets its alternatives too; the table lists them.
  r = run_cli({"train", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--advise", "--objective", "fastest"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("Advice"));
  CHECK_THAT(r.out, Catch::Contains("best first by fastest"));
}

TEST_CASE("cli: fit advice without --batch: each entry names its micro-batch, and its flags reproduce it", "[cli][advice]") {
  // The setup advised on runs at the micro-batch train chose (1: none fits); each change's rerun chooses its own,
  // which the entry states with --batch.
  const std::vector<std::string> base{"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--fine-tune", "--format", "json"};
  const auto j = nlohmann::json::parse(run_cli(base).out);
  CHECK(j["workload"]["batch"] == 1);
  CHECK(j["workload"]["batch_defaulted"] == true);
  REQUIRE(j["advice"].size() >= 3);
  bool moved = false;  // some change frees memory a larger micro-batch then uses
  for (const auto& a : j["advice"]) {
    INFO(a["change"].get<std::string>());
    const auto flags = a["flags"].get<std::vector<std::string>>();
    const auto at = std::find(flags.begin(), flags.end(), "--batch");
    REQUIRE(at != flags.end());
    REQUIRE(at + 1 != flags.end());
    moved |= *(at + 1) != "1";
    if (*(at + 1) != "1") CHECK_THAT(a["change"].get<std::string>(), Catch::Contains("micro-batch " + *(at + 1)));
    const auto k = nlohmann::json::parse(run_cli(with_flags(base, a["flags"])).out);
    CHECK(k["fit"]["fits"] == true);
    CHECK(k["workload"]["batch_defaulted"] == false);
    CHECK(k["memory"]["total_bytes"] == a["total_bytes"]);
    CHECK(k["time"]["step_seconds"] == a["step_seconds"]);
    CHECK(k["cost"]["usd"] == a["cost"]["usd"]);
    // The same entry without its --batch: train's own choice is the entry's micro-batch.
    std::vector<std::string> unpinned(flags.begin(), at);
    unpinned.insert(unpinned.end(), at + 2, flags.end());
    const auto u = nlohmann::json::parse(run_cli(with_flags(base, nlohmann::json(unpinned))).out);
    CHECK(u["workload"]["batch"].get<std::int64_t>() == std::stoll(*(at + 1)));
    CHECK(u["memory"]["total_bytes"] == a["total_bytes"]);
  }
  CHECK(moved);
}

TEST_CASE("cli: without --batch, train takes the micro-batch plan train would choose, and says so", "[cli][batch]") {
  // A 1B model on one H100: micro-batch 8 (46.7 GiB; 16 needs 80.2 GiB, over 90 % of the 79.65 GiB usable).
  auto j = nlohmann::json::parse(run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--format", "json"}).out);
  const auto& w = j["workload"];
  CHECK(w["batch"] == 8);
  CHECK(w["batch_defaulted"] == true);
  const std::string basis = w["batch_basis"].get<std::string>();
  CHECK_THAT(basis, Catch::StartsWith("micro-batch 8: the largest of 1, 2, 4, 8, 16 that fits h100-sxm with 10% of its "
                                      "memory free (16 needs "));
  CHECK_THAT(basis, Catch::EndsWith("chosen because --batch was not given (plan train's rule)"));
  CHECK(w["tokens_per_step"] == 8 * 2048);
  const double usable = j["fit"]["capacity_bytes"].get<double>();
  CHECK(j["memory"]["total_bytes"].get<double>() <= 0.9 * usable);
  // Given explicitly, the same micro-batch is the same estimate; the next one up is over the headroom.
  auto given = nlohmann::json::parse(
      run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--batch", "8", "--format", "json"}).out);
  CHECK(given["workload"]["batch_defaulted"] == false);
  CHECK(given["workload"]["batch_basis"] == "--batch");
  CHECK(given["memory"]["total_bytes"] == j["memory"]["total_bytes"]);
  CHECK(given["time"]["step_seconds"] == j["time"]["step_seconds"]);
  auto next = nlohmann::json::parse(
      run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--batch", "16", "--format", "json"}).out);
  CHECK(next["memory"]["total_bytes"].get<double>() > 0.9 * usable);
  // MFU and HFU are the chosen step's: the model FLOPs of its 16,384 tokens over its step time on the dense peak
  // (no recomputation: HFU = MFU), and more than micro-batch 1's.
  const auto& t = j["time"];
  CHECK(t["mfu"].get<double>() == Approx(t["tokens_per_step"].get<double>() * j["compute"]["flops_per_token"].get<double>() /
                                         (t["step_seconds"].get<double>() * t["peak_flops_per_gpu"].get<double>())));
  CHECK(t["hfu"].get<double>() == Approx(t["mfu"].get<double>()));
  auto one = nlohmann::json::parse(
      run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--batch", "1", "--format", "json"}).out);
  CHECK(t["mfu"].get<double>() > 1.5 * one["time"]["mfu"].get<double>());
  // plan train gives this layout (one H100, no recomputation or offload) the same micro-batch.
  auto plan = nlohmann::json::parse(run_cli({"plan", "train", "--params", "1B", "--gpu", "h100-sxm", "--max-gpus", "1",
                                             "--format", "json"}).out);
  REQUIRE(!plan["best"].empty());
  CHECK(plan["best"][0]["layout"]["micro_batch"] == 8);
  CHECK(plan["best"][0]["layout"]["recompute"] == "none");
  // The table says it under the workload line.
  CHECK_THAT(run_cli({"train", "--params", "1B", "--gpu", "h100-sxm"}).out,
             Catch::Contains("           micro-batch 8: the largest of 1, 2, 4, 8, 16 that fits h100-sxm"));
}

TEST_CASE("cli: the default micro-batch keeps plan train's global batch, and is 1 with no room or no device", "[cli][batch]") {
  // 64 data-parallel ranks × 2048 tokens: micro-batch 4 makes 524,288 tokens a step, a fine-tune's global batch.
  auto j = nlohmann::json::parse(run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--gpus", "8", "--nodes", "8",
                                          "--fine-tune", "--format", "json"}).out);
  CHECK(j["workload"]["batch"] == 4);
  CHECK(j["workload"]["tokens_per_step"] == 524288);
  CHECK_THAT(j["workload"]["batch_basis"].get<std::string>(),
             Catch::Contains("keeps a step within plan train's global batch for a fine-tune, 524.3K tokens (8 would make 1.0M)"));
  // Pre-training's is 4M tokens: micro-batch 8 (1M tokens) stays within it and is memory's limit.
  j = nlohmann::json::parse(run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--gpus", "8", "--nodes", "8",
                                     "--format", "json"}).out);
  CHECK(j["workload"]["batch"] == 8);
  // An 8B full fine-tune does not fit one H100 at any micro-batch: 1, and the verdict says by how much.
  j = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--fine-tune",
                                     "--format", "json"}).out);
  CHECK(j["workload"]["batch"] == 1);
  CHECK_THAT(j["workload"]["batch_basis"].get<std::string>(),
             Catch::StartsWith("micro-batch 1: none of 1, 2, 4, 8, 16 fits h100-sxm with 10% of its memory free"));
  CHECK(j["fit"]["fits"] == false);
  // No device: no memory to fill, defaults::batch.
  j = nlohmann::json::parse(run_cli({"train", "--params", "1B", "--format", "json"}).out);
  CHECK(j["workload"]["batch"] == 1);
  CHECK(j["workload"]["batch_defaulted"] == true);
  CHECK_THAT(j["workload"]["batch_basis"].get<std::string>(), Catch::Contains("the default without --gpu"));
  // A bad --batch is still a usage error, not a default.
  CHECK(run_cli({"train", "--params", "1B", "--gpu", "h100-sxm", "--batch", "0"}).code == ExitCode::usage);
}

TEST_CASE("cli: a fine-tune's tokens are its dataset's, else results per 1B tokens", "[cli][compute]") {
  auto j = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--gpu", "h100-sxm",
                                          "--format", "json"}).out);
  CHECK(j["compute"]["tokens"] == 1'000'000'000);
  CHECK_THAT(j["compute"]["tokens_basis"].get<std::string>(), Catch::Contains("per 1B tokens"));
  // MFU counts a LoRA step's own FLOPs (4 per frozen parameter): HFU, the same count plus recomputation, is not lower.
  CHECK(j["time"]["hfu"].get<double>() >= j["time"]["mfu"].get<double>());
  j = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--dataset-tokens", "300M",
                                     "--epochs", "3", "--format", "json"}).out);
  CHECK(j["compute"]["tokens"] == 900'000'000);
  j = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--fine-tune", "--format", "json"}).out);
  CHECK(j["compute"]["tokens"] == 1'000'000'000);
}

TEST_CASE("cli: plan train lists each GPU count that fits, whatever the others' near-ties", "[cli][plan]") {
  // "LoRA an 8B model on 300M tokens for 3 epochs: how long and what cost on 1, 2 or 8 GPUs": one H100 fits at
  // micro-batch 2 (its cheaper micro-batches 4-16 fail the full estimate), and keeps its row beside 2, 4 and 8.
  auto r = run_cli({"plan", "train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--dataset-tokens", "300M",
                    "--epochs", "3", "--gpu", "h100-sxm", "--max-gpus", "8", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::int64_t> counts;
  for (const auto& b : j["best"]) counts.push_back(b["gpus"].get<std::int64_t>());
  std::sort(counts.begin(), counts.end());
  CHECK(counts == std::vector<std::int64_t>{1, 2, 4, 8});
  // train on one H100 without --batch takes the same micro-batch the plan's 1-GPU row has.
  for (const auto& b : j["best"])
    if (b["gpus"] == 1) {
      CHECK(b["layout"]["micro_batch"] == 2);
      auto t = nlohmann::json::parse(run_cli({"train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--dataset-tokens",
                                              "300M", "--epochs", "3", "--gpu", "h100-sxm", "--format", "json"}).out);
      CHECK(t["workload"]["batch"] == 2);
    }
}

TEST_CASE("cli: plan train plans LoRA and QLoRA fine-tunes, and says which bound failed", "[cli][plan]") {
  auto r = run_cli({"plan", "train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--lora-targets", "all-linear",
                    "--dataset-tokens", "300M", "--epochs", "3", "--max-gpus", "8", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["request"]["tokens"] == 900'000'000);
  CHECK(j["request"]["lora"]["rank"] == 16);
  CHECK(j["request"]["global_batch_tokens"] == 524288);
  CHECK(!j["best"].empty());
  CHECK(j["no_setup"].is_null());
  // QLoRA of a 32B model on one 24 GB card at 4K context: not with HF's loss (the fp32 logits of a 152K vocabulary);
  // with Liger's fused loss and full recomputation, at 5 % headroom.
  r = run_cli({"plan", "train", "--model", "qwen2.5-32b", "--lora-rank", "16", "--qlora", "--seq", "4096",
               "--gpu", "rtx-4090", "--max-gpus", "1", "--format", "json"});
  CHECK(r.code == ExitCode::limit);
  r = run_cli({"plan", "train", "--model", "qwen2.5-32b", "--lora-rank", "16", "--qlora", "--seq", "4096", "--loss", "fused",
               "--headroom", "5%", "--gpu", "rtx-4090", "--max-gpus", "1", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["best"][0]["layout"]["recompute"] == "full");
  // A full fine-tune of an 8B model on one GPU: CPU offload is in the search.
  r = run_cli({"plan", "train", "--model", "llama-3.1-8b", "--fine-tune", "--gpu", "h100-sxm", "--max-gpus", "1", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  // Nothing fits: the bound and the closest setup are named.
  r = run_cli({"plan", "train", "--model", "llama-3.1-70b", "--max-gpus", "1", "--format", "json"});
  CHECK(r.code == ExitCode::limit);
  j = nlohmann::json::parse(r.out);
  CHECK(j["no_setup"]["bound"] == "memory");
  CHECK_THAT(r.err, Catch::Contains("the closest"));
  r = run_cli({"plan", "train", "--model", "llama-3.1-8b", "--tokens", "100B", "--deadline", "1h", "--max-gpus", "8"});
  CHECK(r.code == ExitCode::limit);
  CHECK_THAT(r.err, Catch::Contains("the deadline (1.0 h): the fastest setup that fits"));
}

TEST_CASE("cli: a preset is served as its checkpoint ships", "[cli][infer]") {
  // gpt-oss-120b ships its routed experts in MXFP4 (4.25 bits) and the rest in bf16: about 61 GiB, not bf16's 218.
  auto r = run_cli({"infer", "--model", "gpt-oss-120b", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["memory"]["weight_bytes"].get<double>() < 70.0 * 1073741824.0);
  CHECK_THAT(j["assumptions"].dump(), Catch::Contains("weights as the checkpoint is released: mxfp4"));
  // --weights names another format; a model without a shipped format stays 16-bit.
  r = run_cli({"infer", "--model", "gpt-oss-120b", "--weights", "bf16", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(r.out)["memory"]["weight_bytes"].get<double>() > 200.0 * 1073741824.0);
  r = run_cli({"infer", "--model", "llama-3.1-8b", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(nlohmann::json::parse(r.out)["assumptions"].dump(), !Catch::Contains("as the checkpoint is released"));
}

TEST_CASE("cli: plan infer considers the format a preset ships in", "[cli][plan]") {
  // gpt-oss-120b: MXFP4 (≈ 61 GiB) fits one 80 GB GPU, where bf16 (218 GiB) needs several.
  auto r = run_cli({"plan", "infer", "--model", "gpt-oss-120b", "--concurrency", "8", "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("\"mxfp4\""));
}

// The published offload points (tests/data/throughput/offload.jsonl), each within 15 % of its decode speed: the
// one point now is the fit half's, so this guards the constant fitted on it from drifting.
TEST_CASE("cli: llama.cpp decode with experts in host memory against published points", "[cli][offload]") {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA) + "/throughput/offload.jsonl");
  REQUIRE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto c = nlohmann::json::parse(line);
    std::vector<std::string> args{"infer"};
    for (const auto& a : c["args"]) args.push_back(a.get<std::string>());
    args.insert(args.end(), {"--format", "json"});
    const auto r = run_cli(args);
    REQUIRE(r.code == ExitCode::ok);
    const double got = nlohmann::json::parse(r.out)["throughput"]["decode_tokens_per_s"].get<double>();
    INFO(c["id"].get<std::string>() << ": " << got << " tok/s, published " << c["value"].get<double>());
    CHECK(std::abs(got / c["value"].get<double>() - 1) < 0.15);
    ++n;
  }
  CHECK(n >= 1);
}

TEST_CASE("cli: gpt-oss-120b on an RTX 4090 under llama.cpp: --fit keeps experts in host memory", "[cli][offload]") {
  const auto r = run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "llama.cpp", "--gpu", "rtx-4090",
                          "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["serving"]["gpu_layers"] == 37);
  CHECK(j["serving"]["host_expert_layers"].get<int>() > 10);
  CHECK(j["serving"]["host_memory_bytes"].get<double>() > 30e9);
  CHECK(j["fit"]["fits"] == true);
  CHECK(j["throughput"]["decode_bound"] == "host memory (weights on the CPU)");
  // Held out (yy-b7342 in tests/data/engines/collected/llama_cpp.jsonl): Qwen3-Coder-30B Q8_0 at n_ctx 65536 × 4 on
  // an A100 PCIe 40GB with "39903 MiB free" offloaded 49/49; --fit leaves such a start as it is.
  const auto held = run_cli({"infer", "--model", "qwen3-30b-a3b", "--profile", "llama.cpp", "--weights", "q8_0",
                             "--context", "65536", "--parallel", "4", "--gpu", "a100-40gb-pcie", "--gpu-free", "39903MiB",
                             "--format", "json"});
  REQUIRE(held.code == ExitCode::ok);
  const auto h = nlohmann::json::parse(held.out);
  CHECK(h["serving"]["gpu_layers"] == 49);
  CHECK(h["serving"]["host_expert_layers"] == 0);
  // --gpu-free: another process holds the rest; --fit places for what is free and the verdict is against it.
  const auto busy = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--weights", "q4_k_m",
                             "--gpu", "rtx-4090", "--gpu-free", "2GiB", "--format", "json"});
  REQUIRE(busy.code == ExitCode::ok);
  const auto b = nlohmann::json::parse(busy.out);
  CHECK(b["serving"]["gpu_layers"].get<int>() < 33);
  CHECK(b["fit"]["capacity_bytes"].get<double>() < 2.5 * 1073741824.0);
  CHECK(run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "llama.cpp", "--override-tensor", "attn_q"}).code ==
        ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--cpu-moe"}).code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "llama.cpp", "--fit", "maybe"}).code ==
        ExitCode::usage);
}

TEST_CASE("cli: llama.cpp on a Mac fits in Metal's working set; no compute rate prints decode alone", "[cli][offload]") {
  const auto j = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--gpu", "apple-m3-max",
                          "--gpu-memory", "48GiB", "--weights", "q4_k_m", "--format", "json"});
  REQUIRE(j.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(j.out)["fit"]["capacity_bytes"].get<double>() == Approx(38654.71e6).epsilon(1e-5));
  const auto t = run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "llama.cpp", "--gpu", "apple-m4",
                          "--gpu-memory", "16GiB", "--weights", "q4_k_m"});
  CHECK(t.code == ExitCode::ok);
  CHECK(t.out.find("Throughput decode at most") != std::string::npos);
}

// Ollama's own layer counts (the "offload" lines of tests/data/engines/collected/ollama.jsonl, single GPU, the
// memory.available they print as the free memory): two exact, two one layer off (phi-4: Ollama's estimate of the
// compute graph is smaller than llama.cpp's buffer; gemma-3-12b: its vision projector, 1.8 GiB, is not modelled).
TEST_CASE("cli: Ollama offloads the layers its scheduler fits to the free memory", "[cli][offload][ollama]") {
  struct Case {
    const char* model;
    const char* ctx;
    const char* parallel;
    const char* available;
    int logged, within;
  };
  for (const Case& c : {Case{"phi-4", "2048", "1", "6.9GiB", 29, 1}, Case{"gemma-3-12b", "8192", "1", "11.1GiB", 48, 1},
                        Case{"llama-3.1-8b", "2048", "4", "23.3GiB", 33, 0}, Case{"gemma-3-27b", "4096", "2", "33.6GiB", 63, 0}}) {
    const auto r = run_cli({"infer", "--model", c.model, "--profile", "ollama", "--weights", "q4_k_m", "--context", c.ctx,
                            "--parallel", c.parallel, "--gpu-memory", c.available, "--format", "json"});
    REQUIRE(r.code == ExitCode::ok);
    const int got = nlohmann::json::parse(r.out)["serving"]["gpu_layers"].get<int>();
    INFO(c.model << ": " << got << " layers, logged " << c.logged);
    CHECK(std::abs(got - c.logged) <= c.within);
  }
  // OLLAMA_GPU_OVERHEAD leaves that much more unused: fewer layers.
  const auto with = run_cli({"infer", "--model", "phi-4", "--profile", "ollama", "--weights", "q4_k_m", "--context",
                             "2048", "--gpu-memory", "6.9GiB", "--gpu-overhead", "1GiB", "--format", "json"});
  REQUIRE(with.code == ExitCode::ok);
  CHECK(nlohmann::json::parse(with.out)["serving"]["gpu_layers"].get<int>() < 28);
}

// Layers Ollama leaves on the CPU are computed there: per token the CPU reads their attention weights and the 4 of
// 128 routed experts gpt-oss-120b picks, not every expert (38 GiB at 58 GB/s would be 1.4 tokens/s; before this
// fix gpuplan said that).
TEST_CASE("cli: a MoE layer on the CPU reads only the experts a token picks", "[cli][offload][ollama]") {
  const auto r = run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "ollama", "--gpu", "rtx-4090",
                          "--format", "json"});
  REQUIRE(r.code == ExitCode::ok);
  const auto j = nlohmann::json::parse(r.out);
  const double host = j["serving"]["host_memory_bytes"].get<double>();
  CHECK(host > 30 * 1073741824.0);
  CHECK(j["throughput"]["decode_tokens_per_s"].get<double>() > 10 * 89.6e9 * 0.65 / host);
}

// --host-memory: Ollama refuses to load what needs more system memory than is free (llm/server.go); llama.cpp would
// page the rest from storage. The verdict turns at the host part's size, exit 1 under --require-fit.
TEST_CASE("cli: --host-memory checks the part left on the CPU", "[cli][offload]") {
  const auto base = run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "llama.cpp", "--gpu", "rtx-4090",
                             "--format", "json"});
  REQUIRE(base.code == ExitCode::ok);
  const double host = nlohmann::json::parse(base.out)["serving"]["host_memory_bytes"].get<double>();
  const auto at = [&](double bytes) {
    return run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "llama.cpp", "--gpu", "rtx-4090", "--format",
                    "json", "--require-fit", "--host-memory", std::to_string(std::int64_t(bytes))});
  };
  const auto enough = at(host + 1e6), short_ = at(host - 1e6);
  CHECK(enough.code == ExitCode::ok);
  CHECK(short_.code == ExitCode::limit);
  CHECK(nlohmann::json::parse(short_.out)["fit"]["host"]["fits"] == false);
  CHECK(run_cli({"infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--gpu", "h100", "--host-memory", "64GiB"})
            .code == ExitCode::usage);
  CHECK(run_cli({"infer", "--model", "gpt-oss-120b", "--profile", "ollama", "--gpu", "rtx-4090", "--host-memory",
                 "lots"}).code == ExitCode::usage);
}
