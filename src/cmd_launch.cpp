// The import of a launch command or config (`gpuplan train|infer … -- COMMAND`, `--from FILE`): split the arguments,
// read the files the command names, translate (include/gpuplan/launch/), merge with the user's own flags.
#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <gpuplan/launch/command.h>

#include "app.h"
#include "launch_import.h"

namespace gpuplan::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t max_config_bytes = 4u << 20;  // real launch configs are a few KB

std::string read_config(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw DataError(path + ": cannot open (" + ec.message() + ")");
  if (size > max_config_bytes) throw DataError(path + ": over 4 MiB, not a launch config");
  std::ifstream f(path, std::ios::binary);
  std::string s(static_cast<std::size_t>(size), '\0');
  if (!f.read(s.data(), static_cast<std::streamsize>(size))) throw DataError(path + ": cannot read");
  return s;
}

// --from FILE: the kind by its content (DeepSpeed JSON, or a YAML by its keys).
launch::FileKind kind_of(const std::string& path, const nlohmann::json& j) {
  const auto ext = fs::path(path).extension().string();
  if (ext == ".json") return launch::FileKind::deepspeed_json;
  if (j.is_object()) {
    if (j.contains("distributed_type") || j.contains("compute_environment")) return launch::FileKind::accelerate_yaml;
    if (j.contains("base_model")) return launch::FileKind::axolotl_yaml;
    if (j.contains("model") && j["model"].is_object() && j["model"].contains("_component_"))
      return launch::FileKind::torchtune_yaml;
  }
  throw DataError(path + ": not a config gpuplan reads (DeepSpeed JSON; Accelerate, axolotl or torchtune YAML)");
}

// Reads each file in turn (a config may name another: Accelerate's deepspeed_config_file, axolotl's deepspeed).
void read_files(launch::TrainImport& t, std::vector<launch::FileRef> from, const std::vector<std::string>& overrides,
                nlohmann::json& files) {
  std::deque<launch::FileRef> queue(from.begin(), from.end());
  for (auto& f : t.im.files) queue.push_back(f);
  t.im.files.clear();
  int guard = 0;
  while (!queue.empty()) {
    launch::FileRef f = queue.front();
    queue.pop_front();
    if (++guard > 16) throw DataError(f.path + ": configs name each other more than 16 deep");
    // HF Trainer's --deepspeed also takes the config itself as a JSON string.
    const bool inline_json = f.kind == launch::FileKind::deepspeed_json && !f.path.empty() && f.path[0] == '{';
    // A path a config names: from the working directory as the tool reads it, else beside that config.
    if (!inline_json && !fs::exists(f.path) && !f.base.empty() && fs::exists(fs::path(f.base) / f.path))
      f.path = (fs::path(f.base) / f.path).string();
    const std::string bytes = inline_json ? f.path : read_config(f.path);
    const std::string name = inline_json ? "--deepspeed" : f.path;
    if (!inline_json) files.push_back(f.path);
    // --from FILE (no source yet) by its extension; a file a command names by what names it.
    const bool json_text = inline_json || fs::path(f.path).extension() == ".json" ||
                           (!f.source.empty() && f.kind == launch::FileKind::deepspeed_json);
    nlohmann::json j;
    if (json_text) {
      try {
        j = nlohmann::json::parse(bytes);
      } catch (const nlohmann::json::exception& e) {
        throw DataError(name + ": not valid JSON (" + json_problem(e) + ")");
      }
    } else {
      j = yaml_to_json(bytes, name);
    }
    const launch::FileKind kind = f.source.empty() ? kind_of(f.path, j) : f.kind;
    switch (kind) {
      case launch::FileKind::deepspeed_json: launch::read_deepspeed_config(t, j, name); break;
      case launch::FileKind::accelerate_yaml: launch::read_accelerate_config(t, j, name); break;
      case launch::FileKind::axolotl_yaml: launch::read_axolotl_config(t, j, name); break;
      case launch::FileKind::torchtune_yaml:
        for (const auto& o : overrides) launch::torchtune_override(j, o);
        launch::read_torchtune_config(t, j, name);
        break;
      case launch::FileKind::modelfile: break;
    }
    for (auto& g : t.im.files) {
      g.base = inline_json ? "" : fs::path(f.path).parent_path().string();
      queue.push_back(g);
    }
    t.im.files.clear();
  }
}

// The user's flags that a setting must not override: the same option, or one it excludes.
bool given_by_user(CLI::App& sub, const std::set<const CLI::Option*>& given, const std::string& flag,
                   std::string& which) {
  static const std::vector<std::vector<std::string>> groups{
      {"--model", "--params", "--config"}, {"--fsdp", "--zero"}, {"--grad-checkpointing", "--recompute"}};
  std::vector<std::string> names{flag};
  for (const auto& g : groups)
    if (std::find(g.begin(), g.end(), flag) != g.end()) names = g;
  for (const auto& n : names) {
    const CLI::Option* o = sub.get_option_no_throw(n);
    if (o && given.count(o)) {
      which = o->get_name();
      return true;
    }
  }
  return false;
}

}  // namespace

LaunchArgs import_launch(const std::vector<std::string>& args, std::ostream& err) {
  LaunchArgs r{args, nullptr};
  const auto sub_at = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.empty() || a[0] != '-'; });
  if (sub_at == args.end() || (*sub_at != "train" && *sub_at != "infer")) return r;
  const bool train = *sub_at == "train";
  const auto dashes = std::find(sub_at, args.end(), "--");
  // The user's own flags, without --from FILE.
  std::vector<std::string> own(args.begin(), dashes);
  std::vector<launch::FileRef> from;
  for (std::size_t i = 0; i < own.size();) {
    if (own[i] == "--from" || own[i].rfind("--from=", 0) == 0) {
      const bool inline_value = own[i].size() > 6;
      if (!inline_value && i + 1 >= own.size()) throw InputError("--from needs a file");
      const std::string path = inline_value ? own[i].substr(7) : own[i + 1];
      from.push_back({launch::FileKind::deepspeed_json, path, ""});
      own.erase(own.begin() + static_cast<std::ptrdiff_t>(i), own.begin() + static_cast<std::ptrdiff_t>(i + (inline_value ? 1 : 2)));
    } else {
      ++i;
    }
  }
  if (dashes == args.end() && from.empty()) return r;

  const std::vector<std::string> command(dashes == args.end() ? args.end() : dashes + 1, args.end());
  if (dashes != args.end() && command.empty()) throw InputError("nothing after --: paste the launch command there");

  nlohmann::json files = nlohmann::json::array();
  launch::Import im;
  if (train) {
    std::vector<std::string> overrides;
    launch::TrainImport t;
    if (!command.empty()) t = launch::import_training_command(command, overrides);
    else t.im.tool = "config";
    if (t.im.followed.empty())
      t.im.followed = "DeepSpeed 0.17, Accelerate 1.10, axolotl 0.12, torchtune 0.6 config keys";
    read_files(t, from, overrides, files);
    im = launch::finish(std::move(t));
  } else {
    if (!command.empty()) im = launch::import_serving_command(command);
    // An Ollama Modelfile: its FROM and PARAMETERs over what the command and the environment say.
    for (const auto& f : from) {
      const launch::Import mf = launch::import_modelfile(read_config(f.path), f.path);
      files.push_back(f.path);
      if (im.tool.empty()) im.tool = mf.tool, im.followed = mf.followed;
      else if (im.tool != "ollama") throw InputError("infer --from " + f.path + ": a Modelfile goes with ollama run");
      for (const auto& s : mf.settings) im.set(s.flag, s.value, s.source);
      im.ignored.insert(im.ignored.end(), mf.ignored.begin(), mf.ignored.end());
    }
  }

  // Which of the user's flags are given: an imported setting of the same option yields to them.
  CLI::App scratch;
  TrainOptions to;
  InferOptions io;
  if (train) setup_train(scratch, to, true);
  else setup_infer(scratch, io, true);
  CLI::App& sub = *scratch.get_subcommand(train ? "train" : "infer");
  std::set<const CLI::Option*> given;
  for (auto it = own.begin() + (sub_at - args.begin()) + 1; it != own.end(); ++it)
    if (it->size() > 1 && (*it)[0] == '-')
      if (const CLI::Option* o = sub.get_option_no_throw(it->substr(0, it->find('=')))) given.insert(o);

  nlohmann::json read = nlohmann::json::array(), ignored = nlohmann::json::array();
  r.args = own;
  for (const auto& s : im.settings) {
    std::string which;
    const std::string setting = s.flag + (s.value.empty() ? "" : " " + s.value);
    if (given_by_user(sub, given, s.flag, which)) {
      ignored.push_back({{"source", s.source}, {"reason", "gpuplan's own " + which + " given: it wins over " + setting}});
      continue;
    }
    read.push_back({{"source", s.source}, {"setting", setting}});
    r.args.push_back(s.value.empty() ? s.flag : s.flag + "=" + s.value);
  }
  for (const auto& g : im.ignored) {
    ignored.push_back({{"source", g.source}, {"reason", g.reason}});
    if (g.warn) err << "gpuplan: warning: ignored " << g.source << ": " << g.reason << "\n";
  }
  r.from = {{"tool", im.tool}, {"followed", im.followed}, {"command", command}, {"files", files},
            {"read", read}, {"ignored", ignored}};
  return r;
}

void render_from_lines(const nlohmann::json& r, std::ostream& out) {
  if (!r.contains("from") || r["from"].is_null()) return;
  const auto& f = r["from"];
  fmt::print(out, "From       {} ({})\n", f["tool"].get<std::string>(), f["followed"].get<std::string>());
  for (const auto& x : f["read"])
    fmt::print(out, "  read     {:<44} → {}\n", x["source"].get<std::string>(), x["setting"].get<std::string>());
  for (const auto& x : f["ignored"])
    fmt::print(out, "  ignored  {:<44} ({})\n", x["source"].get<std::string>(), x["reason"].get<std::string>());
}

}  // namespace gpuplan::cli
