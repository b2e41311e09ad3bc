// The launch parsers (include/gpuplan/launch/): argv and config keys in → gpuplan flags, read and ignored lists.
#include <catch2/catch.hpp>

#include <gpuplan/launch/command.h>

using namespace gpuplan;
using namespace gpuplan::launch;

namespace {

std::string value_of(const Import& im, const char* flag) {
  const Setting* s = im.find(flag);
  return s ? (s->value.empty() ? "(set)" : s->value) : "(none)";
}

bool ignored(const Import& im, const std::string& source) {
  for (const auto& g : im.ignored)
    if (g.source == source) return true;
  return false;
}

Import train(const std::vector<std::string>& words) {
  std::vector<std::string> overrides;
  return finish(import_training_command(words, overrides));
}

}  // namespace

TEST_CASE("launch vllm: flags, short forms, underscores, = and human-readable lengths", "[launch]") {
  const Import im = import_serving_command({"vllm", "serve", "Qwen/Qwen3-8B", "-tp", "4", "--max_model_len=32k",
                                            "--max-num-batched-tokens", "2K", "--revision", "abc", "-q", "gptq"});
  CHECK(value_of(im, "--profile") == "vllm");
  CHECK(value_of(im, "--tp") == "4");
  CHECK(value_of(im, "--context") == "32000");                 // lowercase k: × 1000 (vLLM's human_readable_int)
  CHECK(value_of(im, "--max-num-batched-tokens") == "2048");  // uppercase K: × 1024
  CHECK(value_of(im, "--model") == "Qwen/Qwen3-8B@abc");
  CHECK(value_of(im, "--weights") == "gptq-int4");
  CHECK(import_serving_command({"vllm", "serve", "m", "--dtype", "bfloat16"}).find("--precision")->value == "bf16");
  CHECK_THROWS_AS(import_serving_command({"vllm", "serve", "m", "--max-model-len", "1x"}), InputError);
  // A switch does not swallow the model after it; an unknown flag takes the word after it as its value.
  const Import sw = import_serving_command({"vllm", "serve", "--trust-remote-code", "m", "--mystery", "3"});
  CHECK(value_of(sw, "--model") == "m");
  CHECK(ignored(sw, "--mystery 3"));
}

TEST_CASE("launch llama.cpp: -fa forms, the cache types, -b below -ub", "[launch]") {
  CHECK(value_of(import_serving_command({"llama-server", "-fa"}), "--flash-attn") == "on");
  CHECK(value_of(import_serving_command({"llama-server", "-fa", "off", "-m", "x.gguf"}), "--flash-attn") == "off");
  CHECK(value_of(import_serving_command({"llama-server", "-fa", "-m", "x.gguf"}), "--model") == "x.gguf");
  const Import both = import_serving_command({"llama-server", "-ctk", "q4_0", "-ctv", "q4_0"});
  CHECK(value_of(both, "--kv-dtype") == "int4");
  const Import k_only = import_serving_command({"llama-server", "-ctk", "q8_0"});
  CHECK(value_of(k_only, "--kv-dtype") == "(none)");  // V stays f16: gpuplan has one cache type
  CHECK(ignored(k_only, "-ctk q8_0"));
  CHECK(value_of(import_serving_command({"llama-cli", "-b", "64"}), "--ubatch") == "64");
  CHECK(value_of(import_serving_command({"llama-cli", "-b", "4096"}), "--ubatch") == "(none)");
  CHECK(value_of(import_serving_command({"llama-server", "-ngl", "all"}), "--gpu-layers") == "(none)");
  CHECK(value_of(import_serving_command({"env", "CUDA_VISIBLE_DEVICES=0", "llama-server", "-c", "0"}), "--context") == "(none)");
}

TEST_CASE("launch HF Trainer: the precision recipe from --bf16, the load dtype and DeepSpeed", "[launch]") {
  CHECK(value_of(train({"python", "t.py", "--bf16"}), "--precision") == "amp-bf16");
  CHECK(value_of(train({"python", "t.py", "--bf16", "--torch_dtype", "bfloat16"}), "--precision") == "pure-bf16");
  CHECK(value_of(train({"python", "t.py", "--fp16", "false"}), "--precision") == "fp32");
  CHECK(value_of(train({"python", "t.py", "--torch-dtype", "float16"}), "--precision") == "pure-fp16");
  // DeepSpeed keeps fp32 masters: its "auto" follows --bf16.
  std::vector<std::string> overrides;
  TrainImport t = import_training_command({"deepspeed", "t.py", "--bf16"}, overrides);
  read_deepspeed_bytes(t, R"({"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}})", "ds.json");
  const Import ds = finish(t);
  CHECK(value_of(ds, "--precision") == "bf16");
  CHECK(value_of(ds, "--zero") == "3");
  CHECK(value_of(ds, "--profile") == "deepspeed");
  CHECK(value_of(ds, "--batch") == "8");  // TrainingArguments' default per-device batch
}

TEST_CASE("launch HF Trainer: optimizers, LoRA targets, FSDP words", "[launch]") {
  const Import im = train({"python", "t.py", "--optim", "paged_adamw_32bit", "--lora_target_modules", "q_proj", "v_proj",
                           "--lora_r", "8", "--fsdp", "shard_grad_op offload"});
  CHECK(value_of(im, "--optimizer") == "adamw");
  CHECK(ignored(im, "--optim paged_adamw_32bit (paged)"));
  CHECK(value_of(im, "--lora-targets") == "q_proj,v_proj");
  CHECK(value_of(im, "--fsdp") == "shard_grad_op");
  CHECK(value_of(im, "--offload-optimizer") == "cpu");
  CHECK(value_of(im, "--offload-params") == "(none)");  // gpuplan offloads parameters from ZeRO-3 shards only
  const Import odd = train({"python", "t.py", "--optim", "ademamix"});
  CHECK(value_of(odd, "--optimizer") == "(none)");
  CHECK(ignored(odd, "--optim ademamix"));
}

TEST_CASE("launch launchers: GPUs and nodes", "[launch]") {
  const Import tr = train({"torchrun", "--nnodes=1:4", "--nproc_per_node", "8", "--standalone", "t.py"});
  CHECK(value_of(tr, "--gpus") == "8");
  CHECK(value_of(tr, "--nodes") == "4");
  CHECK(value_of(train({"deepspeed", "--include", "localhost:0,1,2", "t.py"}), "--gpus") == "3");
  const Import acc = train({"accelerate", "launch", "--num_processes", "16", "--num-machines", "2", "--use_fsdp", "t.py"});
  CHECK(value_of(acc, "--gpus") == "8");
  CHECK(value_of(acc, "--nodes") == "2");
  CHECK(value_of(acc, "--fsdp") == "full_shard");
}

TEST_CASE("launch configs: DeepSpeed JSON keys and errors", "[launch]") {
  TrainImport t;
  read_deepspeed_bytes(t, R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"},
      "reduce_bucket_size": "auto", "overlap_comm": false}, "fp16": {"enabled": true},
      "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto"})", "ds.json");
  const Import im = finish(t);
  CHECK(value_of(im, "--zero") == "2");
  CHECK(value_of(im, "--offload-optimizer") == "nvme");
  CHECK(value_of(im, "--overlap-comm") == "false");
  CHECK(value_of(im, "--precision") == "fp16");
  CHECK(value_of(im, "--batch") == "4");
  CHECK(ignored(im, "ds.json: zero_optimization.reduce_bucket_size = \"auto\""));
  TrainImport bad;
  CHECK_THROWS_AS(read_deepspeed_bytes(bad, R"({"zero_optimization": {"offload_param": {"device": "gpu"}}})", "d"), DataError);
  CHECK_THROWS_AS(read_deepspeed_bytes(bad, "[1]", "d"), DataError);
}

TEST_CASE("launch configs: Accelerate, axolotl and torchtune keys", "[launch]") {
  TrainImport a;
  read_accelerate_config(a, nlohmann::json::parse(R"({"distributed_type": "DEEPSPEED", "mixed_precision": "bf16",
      "deepspeed_config": {"zero_stage": 3, "offload_param_device": "cpu", "offload_optimizer_device": "cpu"},
      "num_processes": 8})"), "a.yaml");
  const Import ai = finish(a);
  CHECK(value_of(ai, "--precision") == "bf16");  // inline DeepSpeed takes mixed_precision
  CHECK(value_of(ai, "--offload-params") == "cpu");
  CHECK(value_of(ai, "--profile") == "deepspeed");

  TrainImport x;
  read_axolotl_config(x, nlohmann::json::parse(R"({"adapter": "qlora", "load_in_4bit": true, "lora_target_linear": true,
      "deepspeed": null, "fp16": true, "micro_batch_size": 1})"), "x.yml");
  const Import xi = finish(x);
  CHECK(value_of(xi, "--qlora") == "(set)");
  CHECK(value_of(xi, "--lora-rank") == "8");
  CHECK(value_of(xi, "--lora-targets") == "all-linear");
  CHECK(value_of(xi, "--precision") == "pure-fp16");

  bool qlora = false;
  CHECK(launch::detail::torchtune_preset("torchtune.models.llama3_1.qlora_llama3_1_8b", qlora) == std::optional<std::string>("llama3.1-8b"));
  CHECK(qlora);
  CHECK(launch::detail::torchtune_preset("torchtune.models.qwen2_5.lora_qwen2_5_7b_instruct", qlora) == std::optional<std::string>("qwen2.5-7b"));
  CHECK(!launch::detail::torchtune_preset("torchtune.models.phi9.phi9_mini", qlora));
  nlohmann::json cfg = nlohmann::json::parse(R"({"tokenizer": {"max_seq_len": null}})");
  torchtune_override(cfg, "tokenizer.max_seq_len=4096");
  torchtune_override(cfg, "enable_activation_checkpointing=True");
  CHECK(cfg["tokenizer"]["max_seq_len"] == 4096);
  CHECK(cfg["enable_activation_checkpointing"] == true);
}

TEST_CASE("launch llama.cpp and Ollama: where the weights go", "[launch][offload]") {
  const Import ot = import_serving_command({"llama-server", "-ot", "blk\\.1\\.ffn_.*_exps=CPU", "-ot", "exps=CPU"});
  CHECK(value_of(ot, "--override-tensor") == "blk\\.1\\.ffn_.*_exps=CPU,exps=CPU");  // repeated rules add up
  CHECK(ot.ignored.empty());
  CHECK(value_of(import_serving_command({"llama-server", "-ncmoe", "12"}), "--n-cpu-moe") == "12");
  CHECK(value_of(import_serving_command({"llama-server", "-cmoe"}), "--cpu-moe") == "(set)");
  CHECK(value_of(import_serving_command({"llama-server", "--fit", "off", "-fitt", "2048"}), "--fit") == "off");
  CHECK(value_of(import_serving_command({"llama-server", "--fit", "off", "-fitt", "2048"}), "--fit-target") == "2048");
  CHECK(value_of(import_serving_command({"OLLAMA_GPU_OVERHEAD=536870912", "ollama", "serve"}), "--gpu-overhead") ==
        "536870912");
}
