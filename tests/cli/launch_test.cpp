// Imported launch commands and configs (gpuplan train|infer … -- COMMAND, --from FILE): each estimate equals the one
// from the equivalent gpuplan flags (tests/data/launch/equivalence.jsonl, examples from the projects' own docs), and
// the report says what was read and what was ignored.
#include "../test_support.h"

#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_run.h"

using gpuplan::cli::ExitCode;
using gpuplan::test::run_cli;

namespace {

const std::string launch_data = gpuplan::test::data + "/launch";

std::vector<std::string> with_data(std::vector<std::string> args) {
  for (auto& a : args)
    for (std::size_t p; (p = a.find("{data}")) != std::string::npos;) a.replace(p, 6, launch_data);
  return args;
}

// The subcommand's arguments with --format json right after the subcommand (before any --).
nlohmann::json json_of(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin() + 1, {"--format", "json"});
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == ExitCode::ok);
  if (err) *err = r.err;
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("launch: every documented command estimates as its gpuplan flags", "[cli][launch]") {
  std::ifstream f(launch_data + "/equivalence.jsonl");
  REQUIRE(f);
  int cases = 0;
  for (std::string line; std::getline(f, line);) {
    const auto c = nlohmann::json::parse(line);
    INFO(c["name"].get<std::string>() << " — " << c["source"].get<std::string>());
    nlohmann::json imported = json_of(with_data(c["launch"].get<std::vector<std::string>>()));
    const nlohmann::json direct = json_of(c["flags"].get<std::vector<std::string>>());
    REQUIRE(imported.contains("from"));
    const nlohmann::json from = imported["from"];
    imported.erase("from");
    CHECK(imported == direct);
    // Every flag the equivalent form gives beyond the user's own is listed as read.
    std::string read;
    for (const auto& r : from["read"]) read += r["setting"].get<std::string>() + "\n";
    INFO(read);
    CHECK(!from["read"].empty());
    ++cases;
  }
  CHECK(cases >= 15);
}

TEST_CASE("launch: the report lists what was read, what was ignored and why", "[cli][launch]") {
  std::string err;
  const auto j = json_of({"infer", "--model", "llama-3.1-8b", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                          "--port", "8000", "--enforce-eager", "--frobnicate", "7", "-pp", "2"},
                         &err);
  const auto& from = j["from"];
  CHECK(from["tool"] == "vllm");
  CHECK(from["followed"].get<std::string>().find("vLLM") != std::string::npos);
  auto has = [&](const char* list, const std::string& source) {
    for (const auto& x : from[list])
      if (x["source"] == source) return true;
    return false;
  };
  CHECK(has("read", "vllm serve"));
  CHECK(has("ignored", "--port 8000"));
  CHECK(has("ignored", "--enforce-eager"));
  CHECK(has("ignored", "--frobnicate 7"));
  CHECK(has("ignored", "-pp 2"));
  // The model named by the command yields to gpuplan's own --model.
  CHECK(has("ignored", "meta-llama/Llama-3.1-8B-Instruct (the model argument)"));
  // Warnings for what changes memory and was not understood; none for the port.
  CHECK_THAT(err, Catch::Contains("warning: ignored --frobnicate 7"));
  CHECK_THAT(err, Catch::Contains("warning: ignored -pp 2"));
  CHECK_THAT(err, !Catch::Contains("--port"));
}

TEST_CASE("launch: the table shows the import", "[cli][launch]") {
  const auto r = run_cli({"infer", "--model", "llama-3.1-8b", "--", "vllm", "serve", "x/y", "--max-model-len", "8k"});
  REQUIRE(r.code == ExitCode::ok);
  CHECK_THAT(r.out, Catch::Contains("From       vllm"));
  CHECK_THAT(r.out, Catch::Contains("--max-model-len 8k"));
  CHECK_THAT(r.out, Catch::Contains("--context 8000"));
}

TEST_CASE("launch: the user's own flags win over the command's", "[cli][launch]") {
  const auto j = json_of({"train", "--model", "gpt2", "--batch", "3", "--zero", "1", "--gpus", "2", "--", "torchrun",
                          "--nproc_per_node", "2", "train.py", "--per_device_train_batch_size", "16", "--fsdp", "full_shard"});
  CHECK(j["workload"]["batch"] == 3);
  CHECK(j["workload"]["zero"] == 1);
  bool overridden = false;
  for (const auto& x : j["from"]["ignored"])
    overridden = overridden || (x["source"] == "--per_device_train_batch_size 16" &&
                                x["reason"].get<std::string>().find("--batch") != std::string::npos);
  CHECK(overridden);
}

TEST_CASE("launch: bad commands and configs are one-line errors with the documented status", "[cli][launch]") {
  struct Case {
    std::vector<std::string> args;
    ExitCode code;
    const char* message;
  };
  const std::vector<Case> cases{
      {{"infer", "--model", "gpt2", "--"}, ExitCode::usage, "nothing after --"},
      {{"infer", "--model", "gpt2", "--", "tgi", "serve"}, ExitCode::usage, "expected vllm serve"},
      {{"infer", "--model", "gpt2", "--", "vllm", "serve", "m", "--max-model-len", "lots"}, ExitCode::usage, "not a whole number"},
      {{"infer", "--model", "gpt2", "--", "vllm", "serve", "m", "--dtype", "float64"}, ExitCode::usage, "unknown dtype"},
      {{"infer", "--model", "gpt2", "--", "vllm", "serve", "m", "--gpu-memory-utilization"}, ExitCode::usage, "needs a value"},
      {{"infer", "--model", "gpt2", "--", "llama-server", "-c", "-5"}, ExitCode::usage, "not a whole number"},
      {{"infer", "--model", "gpt2", "--from", "/no/Modelfile"}, ExitCode::data, "cannot open"},
      {{"infer", "--model", "gpt2", "--from", gpuplan::test::data + "/launch/SOURCES.md"}, ExitCode::data, "no FROM line"},
      {{"infer", "--model", "gpt2", "--", "ollama", "run", "llama3.1:8b", "OLLAMA_NUM_PARALLEL=x"}, ExitCode::ok, ""},
      {{"infer", "--model", "gpt2", "--", "OLLAMA_KV_CACHE_TYPE=q2_k", "ollama", "run", "x"}, ExitCode::usage, "expected f16, q8_0 or q4_0"},
      {{"train", "--model", "gpt2", "--", "make", "train"}, ExitCode::usage, "expected torchrun"},
      {{"train", "--model", "gpt2", "--", "torchrun", "--nproc_per_node", "two", "t.py"}, ExitCode::usage, "not a whole number"},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--bf16", "maybe"}, ExitCode::ok, ""},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--fsdp", "quarter_shard"}, ExitCode::usage, "unknown FSDP option"},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--deepspeed", "/no/such/ds.json"}, ExitCode::data, "cannot open"},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--deepspeed", "{\"zero_optimization\": {\"stage\": 7}}"}, ExitCode::data, "expected 0, 1, 2 or 3"},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--deepspeed", "{\"bf16\": {\"enabled\": \"yes\"}}"}, ExitCode::data, "expected true, false"},
      {{"train", "--model", "gpt2", "--", "python", "t.py", "--deepspeed", "{oops"}, ExitCode::data, "not valid JSON"},
      {{"train", "--model", "gpt2", "--from", gpuplan::test::data + "/launch/Modelfile"}, ExitCode::data, "not a config gpuplan reads"},
      {{"train", "--model", "gpt2", "--from", gpuplan::test::data + "/configs/malformed.json"}, ExitCode::data, "not valid JSON"},
      {{"train", "--model", "gpt2", "--", "accelerate", "launch", "--num_processes", "3", "--num_machines", "2", "t.py"}, ExitCode::usage, "multiple of the machines"},
      {{"train", "--model", "gpt2", "--", "accelerate", "launch", "--mixed_precision", "fp4", "t.py"}, ExitCode::usage, "expected no, bf16"},
      {{"train", "--model", "gpt2", "--", "accelerate", "launch"}, ExitCode::usage, "names no training script"},
      {{"train", "--model", "gpt2", "--", "OLLAMA=1"}, ExitCode::usage, "names no program"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    INFO(c.args.back() << ": " << r.err);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Catch::Contains(c.message));
    if (c.code != ExitCode::ok) CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
