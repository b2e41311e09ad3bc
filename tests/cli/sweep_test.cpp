// gpuplan sweep in-process: every point is the full train/infer estimate, and the largest value that fits is
// checked against the plain commands on both sides of the boundary.
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_run.h"

using gpuplan::cli::ExitCode;

using gpuplan::test::run_cli;

namespace {
nlohmann::json sweep_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == ExitCode::ok);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("sweep infer: each point equals infer at that value; the boundary is exact", "[cli][sweep]") {
  const auto j = sweep_json({"sweep", "infer", "--model", "llama-3.1-8b", "--context", "4k..64k", "--gpu", "rtx-4090"});
  CHECK(j["schema"] == "gpuplan/1");
  CHECK(j["command"] == "sweep infer");
  CHECK(j["swept"][0]["flag"] == "--context");
  REQUIRE(j["points"].size() == 5);
  for (const auto& p : j["points"]) {
    const auto one = sweep_json({"infer", "--model", "llama-3.1-8b", "--context", std::to_string(p["--context"].get<int>())});
    CHECK(p["memory"]["total_bytes"] == one["memory"]["total_bytes"]);
    CHECK(p["memory"]["components"] == one["memory"]["components"]);
  }
  // The largest context that fits lies between two swept points (32k fits a 24 GiB card, 64k does not) and is
  // exact: infer at it fits, one token more does not.
  const auto& largest = j["devices"][0]["largest"][0];
  const std::int64_t v = largest["value"].get<std::int64_t>();
  CHECK(v > 32768);
  CHECK(v < 65536);
  auto fits = [](std::int64_t c) {
    return sweep_json({"infer", "--model", "llama-3.1-8b", "--context", std::to_string(c), "--gpu", "rtx-4090"})["fit"]["fits"]
        .get<bool>();
  };
  CHECK(fits(v));
  CHECK_FALSE(fits(v + 1));
}

TEST_CASE("sweep infer under vLLM: each GPU's own pool and defaults; fits while the pool holds the batch", "[cli][sweep]") {
  const std::vector<std::string> model = {"--model", "llama-3.1-8b", "--profile", "vllm", "--context", "8k"};
  std::vector<std::string> args = {"sweep", "infer", "--batch", "1,16,64", "--gpu", "l40s", "--gpu", "h100-sxm"};
  args.insert(args.end(), model.begin(), model.end());
  const auto j = sweep_json(args);
  REQUIRE(j["points"].size() == 3);
  for (const std::string gpu : {"l40s", "h100-sxm"}) {
    std::vector<std::string> one = {"infer", "--gpu", gpu, "--batch", "16"};
    one.insert(one.end(), model.begin(), model.end());
    const auto s = sweep_json(one)["serving"];
    const auto& e = j["points"][1]["engine"][gpu];
    CHECK(e["kv_pool_bytes"] == s["kv_pool_bytes"]);
    CHECK(e["max_concurrent_sequences"] == s["max_concurrent_sequences"]);
    // The largest batch that fits is the number of whole 8k sequences the pool holds.
    const auto& d = j["devices"][gpu == "l40s" ? 0 : 1];
    CHECK(d["largest"][0]["value"].get<std::int64_t>() == std::int64_t(s["max_concurrent_sequences"].get<double>()));
  }
  // The L40S point is profiled with the L40S's scheduler defaults (2048 tokens, 256 sequences), not an H100's
  // (8192, 1024), whose larger profiling step would leave a smaller pool.
  std::vector<std::string> h100_defaults = {"infer", "--gpu", "l40s", "--max-num-batched-tokens", "8192",
                                            "--max-num-seqs", "1024"};
  h100_defaults.insert(h100_defaults.end(), model.begin(), model.end());
  CHECK(sweep_json(h100_defaults)["serving"]["kv_pool_bytes"].get<double>() <
        j["points"][0]["engine"]["l40s"]["kv_pool_bytes"].get<double>());
  // The table shows the pool and what it holds, not a total growing past the GPU.
  const auto table = run_cli({"sweep", "infer", "--batch", "1,64", "--gpu", "l40s", "--model", "llama-3.1-8b", "--profile",
                              "vllm", "--context", "8k"});
  CHECK(table.out.find("KV pool l40s") != std::string::npos);
  CHECK(table.out.find("holds l40s") != std::string::npos);
  CHECK(table.out.find("total") == std::string::npos);
}

TEST_CASE("sweep train: two flags make every combination; a one-value flag is fixed", "[cli][sweep]") {
  const auto j = sweep_json({"sweep", "train", "--model", "llama-3.2-1b", "--lora-rank", "16", "--seq", "1k,2k", "--batch",
                             "1..4", "--gpu", "rtx-4090", "--gpu", "h100-sxm"});
  REQUIRE(j["swept"].size() == 2);
  CHECK(j["swept"][0]["flag"] == "--seq");  // the order given: the first is the x axis
  CHECK(j["swept"][1]["values"] == nlohmann::json({1, 2, 4}));
  REQUIRE(j["points"].size() == 6);
  const auto one = sweep_json({"train", "--model", "llama-3.2-1b", "--lora-rank", "16", "--seq", "2048", "--batch", "4"});
  CHECK(j["points"][5]["memory"]["total_bytes"] == one["memory"]["total_bytes"]);
  CHECK(j["devices"].size() == 2);
  CHECK(j["devices"][1]["largest"].size() == 3);  // one per --batch value
}

TEST_CASE("sweep train: without --batch the micro-batch is held at 1, on every --gpu too", "[cli][sweep][batch]") {
  // train alone would take micro-batch 8 on an H100; a sweep moves only its swept flag.
  const auto j = sweep_json({"sweep", "train", "--params", "1B", "--seq", "1k,2k", "--gpu", "h100-sxm"});
  REQUIRE(j["points"].size() == 2);
  const auto one = nlohmann::json::parse(
      run_cli({"train", "--params", "1B", "--seq", "2048", "--batch", "1", "--format", "json"}).out);
  CHECK(j["points"][1]["memory"]["total_bytes"] == one["memory"]["total_bytes"]);
  const auto on = nlohmann::json::parse(run_cli({"train", "--params", "1B", "--seq", "2048", "--gpu", "h100-sxm",
                                                 "--format", "json"}).out);
  CHECK(on["workload"]["batch"] == 8);
}

TEST_CASE("sweep: the chart, the table's answer lines, csv", "[cli][sweep]") {
  const auto t = run_cli({"sweep", "infer", "--model", "llama-3.1-8b", "--context", "4k..64k", "--gpu", "rtx-4090", "--chart"});
  REQUIRE(t.code == ExitCode::ok);
  CHECK_THAT(t.out, Catch::Contains("◀ largest that fits on rtx-4090"));
  CHECK_THAT(t.out, Catch::Contains("KV cache"));
  CHECK_THAT(t.out, Catch::Contains("rtx-4090: largest --context that fits: "));
  const auto c = run_cli({"sweep", "infer", "--model", "llama-3.1-8b", "--batch", "1,2,3", "--format", "csv"});
  REQUIRE(c.code == ExitCode::ok);
  CHECK(std::count(c.out.begin(), c.out.end(), '\n') == 4);  // header and three points
  CHECK(c.out.rfind("--batch,weights,", 0) == 0);
}

TEST_CASE("sweep: bad input is a usage error; nothing fitting is exit 1", "[cli][sweep]") {
  const std::vector<std::string> m = {"--model", "llama-3.1-8b"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), m.begin(), m.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return run_cli(head);
  };
  struct Case {
    std::vector<std::string> head, tail;
    ExitCode code;
    const char* err;
  };
  const std::vector<Case> cases = {
      {{"sweep", "infer"}, {}, ExitCode::usage, "one or two"},
      {{"sweep", "infer"}, {"--batch", "4"}, ExitCode::usage, "one or two"},
      {{"sweep", "infer"}, {"--batch", "1,2", "--context", "1k,2k", "--new-tokens", "1,2"}, ExitCode::usage, "3 given"},
      {{"sweep", "infer"}, {"--context", "64..1"}, ExitCode::usage, "--context"},
      {{"sweep", "train"}, {"--tp", "1,3"}, ExitCode::usage, "at --tp 3"},
      {{"sweep", "train"}, {"--batch", "1..200+1", "--seq", "1k,2k"}, ExitCode::usage, "at most 256"},
      {{"sweep", "train"}, {"--batch", "1,2", "--gpu", "rtx-4090"}, ExitCode::limit, "no swept value fits"},
      {{"sweep", "infer"}, {"--batch", "1,2", "--gpu", "h900"}, ExitCode::usage, "unknown accelerator"},
      {{"sweep", "infer"}, {"--batch", "1,2", "--max-batch"}, ExitCode::usage, "--max-batch"},
      {{"sweep", "infer"}, {"--batch", "1,2", "--plot", "/nonexistent-dir/x.svg"}, ExitCode::usage, "cannot write"},
  };
  for (const auto& c : cases) {
    const auto r = with(c.head, c.tail);
    INFO(r.err);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Catch::Contains(c.err));
  }
}
