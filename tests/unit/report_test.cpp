#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/report.h>

using namespace gpuplan;

TEST_CASE("training_json: components add up to peak_allocated_bytes, total = reserved + context", "[report]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  TrainingWorkload w;
  w.batch = 2;
  w.seq = 4096;
  const auto j = training_json(s, w, estimate_training_memory(s, w));
  CHECK(j["schema"] == "gpuplan/1");
  std::int64_t sum = 0;
  for (const auto& [k, v] : j["memory"]["components"].items()) sum += v.get<std::int64_t>();
  CHECK(sum == j["memory"]["peak_allocated_bytes"].get<std::int64_t>());
  CHECK(j["memory"]["total_bytes"].get<std::int64_t>() ==
        j["memory"]["reserved_bytes"].get<std::int64_t>() + j["memory"]["context_bytes"].get<std::int64_t>());
  for (const char* k : {"weights", "gradients", "optimizer_states", "activations", "logits", "kv_cache", "overhead"})
    CHECK(j["memory"]["components"].contains(k));
  CHECK(j["model"]["params"] == 8'030'261'248);
}
