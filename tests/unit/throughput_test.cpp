// Serving speed: the experts a decode step reads and the host's floor under eager generate, against values
// worked by hand.
#include <catch2/catch.hpp>
#include <gpuplan/builtin.h>
#include <gpuplan/catalog.h>
#include <gpuplan/throughput.h>

using namespace gpuplan;

TEST_CASE("experts_touched: uniform top-k routing by hand", "[throughput][moe]") {
  MoeSpec qwen;  // Qwen3-30B-A3B: 128 experts, 8 per token
  qwen.experts = 128;
  qwen.experts_per_token = 8;
  CHECK(experts_touched(qwen, 1) == Approx(8.0));
  // 8 tokens: 128 · (1 − (120/128)^8) = 128 · (1 − 0.596735) = 51.618
  CHECK(experts_touched(qwen, 8) == Approx(51.618).epsilon(1e-4));
  CHECK(experts_touched(qwen, 4096) == Approx(128.0));
  MoeSpec mixtral;  // 8 experts, 2 per token: 4 tokens touch 8 · (1 − 0.75^4) = 5.469
  mixtral.experts = 8;
  mixtral.experts_per_token = 2;
  CHECK(experts_touched(mixtral, 4) == Approx(5.46875));
  mixtral.dense_routing = true;
  CHECK(experts_touched(mixtral, 1) == Approx(8.0));
  CHECK(experts_touched(MoeSpec{}, 16) == 0.0);
}

TEST_CASE("serving_throughput: an MoE decode step reads the experts its batch routes to", "[throughput][moe]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("qwen3-30b-a3b").spec;
  const WeightBytes w = weight_bytes(m, WeightFormat::bf16);
  const double total = w.total().in(unit::bytes), experts = w.routed_experts.in(unit::bytes);
  // 48 layers × 128 experts × 3 × 2048 × 768 bf16 weights = 28.99 GB of the 61.06 GB.
  CHECK(experts == Approx(48.0 * 128 * 3 * 2048 * 768 * 2));
  Efficiency e;
  const auto one = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 1, 16, 1, 1, e);
  CHECK(one.decode_weight_bytes == Approx(total - experts + experts * 8.0 / 128.0));
  // At batch 1 it reads ~2.4× less than the whole model, so it decodes ~2.4× faster than a dense model of its size.
  CHECK(one.decode_step.in(unit::seconds) == Approx(one.decode_weight_bytes / (0.7 * 3.35e12)));
  const auto many = serving_throughput(m, h100, WeightFormat::bf16, total, 0, 64, 16, 1, 1, e);
  CHECK(many.decode_weight_bytes == Approx(total - experts + experts * (1.0 - std::pow(120.0 / 128.0, 64))));
}

TEST_CASE("serving_throughput: eager generate is never faster than its host issues operators", "[throughput]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const ModelSpec& m = find_preset("llama-3.2-1b").spec;
  Efficiency e;
  const double wbytes = 2.0 * 1'235'814'400;
  // 16 layers × 56 operators + 10 at 20 µs = 18.12 ms: above the 1.05 ms the weights take at 0.7 × 3.35 TB/s.
  const auto hf = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 32'768, 1, 16, 100, 1, e, Profile::pytorch);
  CHECK(hf.decode_step.in(unit::seconds) == Approx(0.01812));
  CHECK(hf.decode_host_bound);
  CHECK_FALSE(hf.decode_compute_bound);
  const auto graphs = serving_throughput(m, h100, WeightFormat::bf16, wbytes, 32'768, 1, 16, 100, 1, e, Profile::vllm);
  CHECK_FALSE(graphs.decode_host_bound);
  CHECK(graphs.decode_step.in(unit::seconds) == Approx((wbytes + 100 * 32'768.0) / (0.7 * 3.35e12)));
}
