// A pasted command line, by its program: serving engines for `gpuplan infer -- …`, training launchers and
// scripts for `gpuplan train -- …`. Environment assignments before the program (NAME=value, `env`) are read too.
#pragma once
#include <array>

#include "axolotl.h"
#include "deepspeed_config.h"
#include "llama_cpp.h"
#include "ollama.h"
#include "sglang.h"
#include "torchtune.h"
#include "vllm.h"

namespace gpuplan::launch {

namespace detail {

// NAME=value words (and an `env` before them): returned, the index moved past them.
inline std::vector<std::string> environment(const std::vector<std::string>& w, std::size_t& i) {
  std::vector<std::string> env;
  for (; i < w.size(); ++i) {
    if (w[i] == "env" && env.empty()) continue;
    if (!env_assignment(w[i])) break;
    env.push_back(w[i]);
  }
  if (i == w.size()) throw InputError("the command after -- names no program");
  return env;
}

inline bool is_python(const std::string& program) {
  return program == "python" || program == "python3" || program.rfind("python3.", 0) == 0;
}

inline std::vector<std::string> tail(const std::vector<std::string>& w, std::size_t from) {
  return std::vector<std::string>(w.begin() + static_cast<std::ptrdiff_t>(std::min(from, w.size())), w.end());
}

}  // namespace detail

// `gpuplan infer -- COMMAND`: vllm serve, python -m vllm.entrypoints.openai.api_server, llama-server, llama-cli.
inline Import import_serving_command(const std::vector<std::string>& w) {
  std::size_t i = 0;
  const auto env = detail::environment(w, i);
  const std::string program = base_name(w[i]);
  Import im;
  if (program == "vllm" && i + 1 < w.size() && w[i + 1] == "serve") im = import_vllm(detail::tail(w, i + 2), true);
  else if (detail::is_python(program) && i + 2 < w.size() && w[i + 1] == "-m" &&
           (w[i + 2] == "vllm.entrypoints.openai.api_server" || w[i + 2] == "vllm.entrypoints.api_server"))
    im = import_vllm(detail::tail(w, i + 3), false);
  else if (detail::is_python(program) && i + 2 < w.size() && w[i + 1] == "-m" && w[i + 2] == "sglang.launch_server")
    im = import_sglang(detail::tail(w, i + 3));
  else if (program == "llama-server" || program == "llama-cli" || program == "server" || program == "main")
    im = import_llama_cpp(detail::tail(w, i + 1), program);
  else if (program == "ollama" && i + 1 < w.size() && (w[i + 1] == "run" || w[i + 1] == "serve"))
    return import_ollama(detail::tail(w, i + 1), env);
  else
    throw InputError("gpuplan infer -- " + w[i] + ": expected vllm serve, python -m vllm.entrypoints.openai.api_server, "
                     "python -m sglang.launch_server, llama-server, llama-cli or ollama run");
  for (const auto& e : env) im.ignore(e, "an environment variable gpuplan does not read for " + im.tool, false);
  return im;
}

namespace detail {

// torchrun / python -m torch.distributed.run: --nproc_per_node, --nnodes; the rest no effect.
inline void torchrun_flags(TrainImport& t, Argv& args, bool& module) {
  while (!args.done() && Argv::is_flag(args.peek())) {
    const auto tok = args.next();
    std::string f = respelled(tok.name, '-', '_'), src;
    if (f == "__standalone" || f == "__no_python") t.im.ignore(tok.text, no_memory_effect, false);
    else if (f == "_m" || f == "__module") module = true;
    else if (f == "__nproc_per_node") {
      const std::string v = args.value(tok, src);
      if (v == "gpu" || v == "auto") t.im.ignore(src, "every GPU of the machine: pass --gpus N to gpuplan");
      else t.im.set("--gpus", number_text(whole(v, src)), src);
    } else if (f == "__nnodes") {
      std::string v = args.value(tok, src);
      // Elastic MIN:MAX: planned at the most nodes.
      if (const auto colon = v.find(':'); colon != std::string::npos) v = v.substr(colon + 1);
      t.im.set("--nodes", number_text(whole(v, src)), src);
    } else {
      args.value(tok, src);
      t.im.ignore(src, no_memory_effect, false);
    }
  }
}

// deepspeed's launcher: --num_gpus, --num_nodes, --include host:0,1.
inline void deepspeed_launcher_flags(TrainImport& t, Argv& args, bool& module) {
  while (!args.done() && Argv::is_flag(args.peek())) {
    const auto tok = args.next();
    std::string f = respelled(tok.name, '-', '_'), src;
    if (f == "__no_python" || f == "__no_local_rank" || f == "__force_multi" || f == "__bind_cores_to_rank" ||
        f == "__elastic_training" || f == "__enable_each_rank_log")
      t.im.ignore(tok.text, no_memory_effect, false);
    else if (f == "__module") module = true;
    else if (f == "__num_gpus") t.im.set("--gpus", number_text(whole(args.value(tok, src), src)), src);
    else if (f == "__num_nodes") t.im.set("--nodes", number_text(whole(args.value(tok, src), src)), src);
    else if (f == "_i" || f == "__include") {
      // host:0,1,2[@host2:…]: the first host's GPUs.
      const std::string v = args.value(tok, src);
      const auto colon = v.find(':');
      const std::string list = v.substr(colon == std::string::npos ? 0 : colon + 1, v.find('@') - colon - 1);
      t.im.set("--gpus", number_text(1 + std::int64_t(std::count(list.begin(), list.end(), ','))), src);
    } else {
      args.value(tok, src);
      t.im.ignore(src, no_memory_effect, false);
    }
  }
}

inline void accelerate_flags(TrainImport& t, Argv& args, bool& module) {
  while (!args.done() && Argv::is_flag(args.peek())) {
    const auto tok = args.next();
    std::string f = respelled(tok.name, '-', '_'), src;
    f = undashed(f);
    static constexpr std::array<std::string_view, 9> switches{"multi_gpu", "use_deepspeed", "use_fsdp", "cpu", "debug",
                                                              "quiet", "q", "no_python", "tpu"};
    if (f == "m" || f == "module") {
      module = true;
    } else if (std::find(switches.begin(), switches.end(), f) != switches.end()) {
      const std::string v = tok.value.value_or("true");
      if (!accelerate_key(t, f, v, tok.text)) t.im.ignore(tok.text, no_memory_effect, false);
    } else if (f == "config_file") {
      t.im.files.push_back({FileKind::accelerate_yaml, args.value(tok, src), src});
    } else {
      const std::string v = args.value(tok, src);
      if (!accelerate_key(t, f, v, src)) t.im.ignore(src, "not an accelerate launch flag gpuplan knows");
    }
  }
}

// After the launcher: the script or module and its arguments.
inline void script(TrainImport& t, Argv& args, bool module) {
  if (args.done()) throw InputError("the launch command names no training script");
  const std::string target = args.next().text;
  if (module && (target == "axolotl.cli.train" || target == "axolotl.cli.main")) {
    auto rest = args.rest();
    if (!rest.empty() && rest[0] == "train") rest.erase(rest.begin());
    if (rest.empty()) throw InputError("axolotl needs its config file");
    t.im.files.push_back({FileKind::axolotl_yaml, rest[0], "-m " + target + " " + rest[0]});
    for (std::size_t k = 1; k < rest.size(); ++k) t.im.ignore(rest[k], "axolotl's command-line overrides are not read");
    return;
  }
  auto rest = args.rest();
  if (module && target == "trl" && !rest.empty() && !Argv::is_flag(rest[0])) rest.erase(rest.begin());
  read_trainer_args(t, rest);
}

// `tune run [torchrun flags] RECIPE --config CONFIG [key=value …]`.
inline void tune_run(TrainImport& t, Argv& args, std::vector<std::string>& overrides) {
  bool module = false;
  torchrun_flags(t, args, module);
  if (args.done()) throw InputError("tune run needs a recipe");
  const std::string recipe = args.next().text;
  if (recipe.find("distributed") != std::string::npos) t.im.set("--fsdp", "full_shard", "tune run " + recipe + " (FSDP2, fully sharded)");
  while (!args.done()) {
    const auto tok = args.next();
    std::string src;
    if (tok.name == "--config") t.im.files.push_back({FileKind::torchtune_yaml, args.value(tok, src), src});
    else if (!tok.flag() && tok.text.find('=') != std::string::npos) overrides.push_back(tok.text);
    else t.im.ignore(args.skip_unknown(tok), "not a tune run argument gpuplan knows");
  }
}

}  // namespace detail

// `gpuplan train -- COMMAND`: torchrun, python -m torch.distributed.run, accelerate launch, deepspeed, python
// script.py, trl sft, axolotl train, tune run. Config files the command names come back in `files`; torchtune's
// key=value overrides in `overrides` (applied to its config when it is read).
inline TrainImport import_training_command(const std::vector<std::string>& w, std::vector<std::string>& overrides) {
  std::size_t i = 0;
  const auto env = detail::environment(w, i);
  const std::string program = base_name(w[i]);
  TrainImport t;
  t.im.tool = program;
  t.im.followed = "transformers 4.57 TrainingArguments, TRL 0.23 SFTConfig/ModelConfig, torchrun (PyTorch 2.9), "
                  "Accelerate 1.10, DeepSpeed 0.17";
  Argv args(detail::tail(w, i + 1));
  bool module = false;
  if (program == "torchrun" || (detail::is_python(program) && i + 2 < w.size() && w[i + 1] == "-m" &&
                                (w[i + 2] == "torch.distributed.run" || w[i + 2] == "torch.distributed.launch"))) {
    if (program != "torchrun") args = Argv(detail::tail(w, i + 3));
    detail::torchrun_flags(t, args, module);
    detail::script(t, args, module);
  } else if (program == "accelerate" && i + 1 < w.size() && w[i + 1] == "launch") {
    args = Argv(detail::tail(w, i + 2));
    detail::accelerate_flags(t, args, module);
    detail::script(t, args, module);
  } else if (program == "deepspeed") {
    detail::deepspeed_launcher_flags(t, args, module);
    detail::script(t, args, module);
  } else if (detail::is_python(program)) {
    if (!args.done() && args.peek() == "-m") {
      args.next();
      module = true;
    }
    detail::script(t, args, module);
  } else if (program == "trl" && i + 1 < w.size()) {
    read_trainer_args(t, detail::tail(w, i + 2));
  } else if (program == "axolotl" && i + 2 < w.size() && w[i + 1] == "train") {
    t.im.files.push_back({FileKind::axolotl_yaml, w[i + 2], "axolotl train " + w[i + 2]});
    for (std::size_t k = i + 3; k < w.size(); ++k) t.im.ignore(w[k], "axolotl's command-line overrides are not read");
  } else if (program == "tune" && i + 1 < w.size() && w[i + 1] == "run") {
    args = Argv(detail::tail(w, i + 2));
    detail::tune_run(t, args, overrides);
  } else {
    throw InputError("gpuplan train -- " + w[i] + ": expected torchrun, accelerate launch, deepspeed, python, trl, "
                     "axolotl train or tune run");
  }
  for (const auto& e : env) t.im.ignore(e, "an environment variable gpuplan does not read", false);
  return t;
}

}  // namespace gpuplan::launch
