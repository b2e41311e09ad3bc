// DeepSpeed: its own estimator functions reproduced exactly, and the deepspeed profile's ZeRO mechanics by hand.
#include <catch2/catch.hpp>
#include <gpuplan/memory/deepspeed.h>
#include <gpuplan/memory/training.h>
#include <gpuplan/builtin.h>

using namespace gpuplan;

namespace {
constexpr double kGiBDs = 1073741824.0;
double printed(Bytes b) { return std::round(b.in(unit::bytes) / kGiBDs * 100) / 100; }  // DeepSpeed's "{x:.2f}GB"
}  // namespace

TEST_CASE("DeepSpeed estimators: the table estimate_zero3_model_states_mem_needs_all_live prints", "[deepspeed]") {
  // t5-small (60,506,624 parameters; largest module the shared 32128×512 embedding) on 1 node × 1 GPU, as printed
  // by DeepSpeed (blog.csdn.net/u012327567/article/details/132278598):
  //   1.52GB | 0.06GB (both offloaded, zero_init 1 and 0), 1.35GB | 0.17GB (optimizer offloaded, both),
  //   0.09GB | 1.08GB (no offload, zero_init=1), 0.34GB | 1.08GB (no offload, zero_init=0).
  const auto rows = deepspeed_zero3_table(60'506'624, 32128.0 * 512, 1, 1);
  REQUIRE(rows.size() == 6);
  const double cpu[] = {1.52, 1.52, 1.35, 1.35, 0.09, 0.34}, gpu[] = {0.06, 0.06, 0.17, 0.17, 1.08, 1.08};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(printed(rows[i].cpu) == Approx(cpu[i]));
    CHECK(printed(rows[i].gpu) == Approx(gpu[i]));
  }
}

TEST_CASE("DeepSpeed estimators: a user's 7B table (deepspeedai/DeepSpeed #4527)", "[deepspeed]") {
  // "Model with 6805M total params, 131M largest layer params", 1 node × 4 GPUs, as the issue pasted it:
  //   171.13GB | 0.49GB (both offloaded, zero_init 1 and 0), 152.11GB | 3.66GB (optimizer offloaded, both),
  //   2.93GB | 29.01GB (no offload, zero_init=1), 152.11GB | 29.01GB (no offload, zero_init=0).
  // DeepSpeed prints the counts rounded to millions; 6805.4M (within that rounding) and the 32000×4096 embedding
  // reproduce every figure.
  const auto rows = deepspeed_zero3_table(6805.4e6, 32000.0 * 4096, 4, 1);
  REQUIRE(rows.size() == 6);
  const double cpu[] = {171.13, 171.13, 152.11, 152.11, 2.93, 152.11}, gpu[] = {0.49, 0.49, 3.66, 3.66, 29.01, 29.01};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(printed(rows[i].cpu) == Approx(cpu[i]));
    CHECK(printed(rows[i].gpu) == Approx(gpu[i]));
  }
}

TEST_CASE("DeepSpeed estimators: ZeRO-2 by hand from stage_1_and_2.py", "[deepspeed]") {
  // 2851M parameters on 1 node × 8 GPUs. Offloaded: 2 B/param on the GPU, max(4·8, 16)·1.5 B/param on the CPU;
  // not offloaded: 4 B/param + 16 B/param / 8 on the GPU, 4·8·1.5 B/param on the CPU.
  auto e = deepspeed_zero2_estimate(2851e6, 8, 1, true);
  CHECK(e.gpu.in(unit::bytes) == 2 * 2851e6);
  CHECK(e.cpu.in(unit::bytes) == 2851e6 * 32 * 1.5);
  e = deepspeed_zero2_estimate(2851e6, 8, 1, false);
  CHECK(e.gpu.in(unit::bytes) == 4 * 2851e6 + 16 * 2851e6 / 8);
  CHECK(e.cpu.in(unit::bytes) == 2851e6 * 4 * 8 * 1.5);
  // ZeRO-3 across nodes: the host share divides by the node count (gpus_factor = 1/nodes).
  CHECK(deepspeed_zero3_estimate(2851e6, 32e6, 8, 2, true, true, true).cpu.in(unit::bytes) == 2851e6 * 18 * 0.5 * 1.5);
}

TEST_CASE("DeepSpeed's largest layer: the biggest module, as model_to_params counts it", "[deepspeed]") {
  CHECK(deepspeed_largest_layer_params(find_preset("llama-3.1-8b").spec) == 128'256.0 * 4096);  // embed_tokens
  // Qwen3-30B-A3B: one layer's 128 fused experts (gate_up 2·768 + down 768 rows of 2048) outweigh the embedding.
  CHECK(deepspeed_largest_layer_params(find_preset("qwen3-30b-a3b").spec) == 128.0 * 3 * 768 * 2048);
}

namespace {
TrainingWorkload zero_on_8(int stage, Profile profile) {
  TrainingWorkload w;
  w.gpus = 8;
  w.zero = stage;
  w.profile = profile;
  w.seq = 1024;
  return w;
}
double phase_max(const MemoryEstimate& m, const std::string& phase, Bytes MemoryComponents::*c) {
  double x = 0;
  for (const auto& mo : m.moments)
    if (mo.phase == phase) x = std::max(x, (mo.at.*c).in(unit::bytes));
  return x;
}
}  // namespace

TEST_CASE("profile deepspeed: ZeRO-2 keeps whole 16-bit weights and reduces through IPG buckets", "[deepspeed][memory]") {
  const ModelSpec s = find_preset("llama-3.1-8b").spec;
  const double P = 8'030'261'248.0, ws = 32 * 1048576.0 * 2;  // parameters; cuBLAS + cuBLASLt workspaces
  const auto ds = estimate_training_memory(s, zero_on_8(2, Profile::deepspeed)).memory;
  const auto fsdp = estimate_training_memory(s, zero_on_8(2, Profile::pytorch)).memory;
  // DeepSpeed: 2 B per parameter on every rank at every moment; FSDP2 shard_grad_op gathers them (two copies) only
  // between forward and backward, so the two profiles give different answers for the same run.
  CHECK(phase_max(ds, "optimizer", &MemoryComponents::weights) == 2 * P);
  CHECK(phase_max(fsdp, "optimizer", &MemoryComponents::weights) < 2 * P / 4);
  CHECK(ds.total.in(unit::bytes) != Approx(fsdp.total.in(unit::bytes)).epsilon(0.02));
  // The IPG buffer (reduce_bucket_size 5e8 × 2 B, one buffer: overlap_comm is off below stage 3) exists in
  // backward only; the step adds the fp32 gradient partition (4 B × P / 8).
  CHECK(phase_max(ds, "backward", &MemoryComponents::overhead) == 5e8 * 2 + ws);
  CHECK(phase_max(ds, "forward", &MemoryComponents::overhead) == ws);
  CHECK(phase_max(ds, "optimizer", &MemoryComponents::overhead) == Approx(ws + 4 * P / 8));
  auto w = zero_on_8(2, Profile::deepspeed);
  w.deepspeed.overlap_comm = true;  // two buffers
  CHECK(phase_max(estimate_training_memory(s, w).memory, "backward", &MemoryComponents::overhead) == 2 * 5e8 * 2 + ws);
}

TEST_CASE("profile deepspeed: ZeRO-3 gathers a module and the prefetch bucket; one reduce bucket stays", "[deepspeed][memory]") {
  const ModelSpec s = find_preset("llama-3.1-8b").spec;
  const double P = 8'030'261'248.0, ws = 32 * 1048576.0 * 2;
  const auto m = estimate_training_memory(s, zero_on_8(3, Profile::deepspeed)).memory;
  // Weights at the step: this rank's partition (an eighth). In forward: the largest matrix in use (the 128256×4096
  // head) and 5e7 prefetched elements, 2 B each.
  CHECK(phase_max(m, "optimizer", &MemoryComponents::weights) == Approx(2 * P / 8));
  CHECK(phase_max(m, "forward", &MemoryComponents::weights) == Approx(2 * P / 8 + (128'256.0 * 4096 + 5e7) * 2));
  CHECK(phase_max(m, "forward", &MemoryComponents::overhead) == 5e8 * 2 + ws);
}

TEST_CASE("profile deepspeed: what it does not model is refused", "[deepspeed]") {
  const ModelSpec s = find_preset("llama-3.2-1b").spec;
  CHECK_THROWS_AS(estimate_training_memory(s, zero_on_8(0, Profile::deepspeed)), InputError);
  auto w = zero_on_8(2, Profile::deepspeed);
  w.tp = 2;
  CHECK_THROWS_AS(estimate_training_memory(s, w), InputError);
  w = zero_on_8(2, Profile::deepspeed);
  w.deepspeed.reduce_bucket_size = 0;
  CHECK_THROWS_AS(estimate_training_memory(s, w), InputError);
}
