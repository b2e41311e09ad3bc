// The page's entry points: the CLI run in-process on an argument list (so every number on the page is the CLI's),
// and a file written into Emscripten's in-memory file system (a pasted or dropped config.json for --config).
#include <emscripten/bind.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app.h"
#include "hub.h"
#include "launch_import.h"

namespace gpuplan::cli {

// No Hub from the page: a browser cannot send the Hub's range requests across origins without its CORS consent,
// and a token must not sit in a page. Presets and pasted configs cover the rest: the page is offline, so a Hub id
// of a preset's model is estimated with the preset (model_source.cpp says so in the report).
HubSettings HubSettings::from_environment(const std::string&) {
  HubSettings s;
  s.offline = true;
  return s;
}
std::string hub_snapshot(const std::string& repo, const std::string&, const HubSettings&) {
  throw DataError("the page cannot fetch " + repo + " from the Hugging Face Hub: paste or drop its config.json");
}

// No YAML parser in the page (yaml-cpp is a native library): DeepSpeed JSON and launch commands still import.
nlohmann::json yaml_to_json(const std::string&, const std::string& path) {
  throw DataError(path + ": YAML configs are read by the command-line gpuplan only");
}

}  // namespace gpuplan::cli

namespace {

// args: a JSON array of strings, as after `gpuplan` on a command line → {"code", "out", "err"}.
std::string run_cli(const std::string& args_json) {
  std::ostringstream out, err;
  int code = 0;
  try {
    const auto args = nlohmann::json::parse(args_json).get<std::vector<std::string>>();
    code = static_cast<int>(gpuplan::cli::run(args, out, err));
  } catch (const std::exception& e) {  // what main() maps to exit status 3
    err << "gpuplan: internal error: " << e.what() << "\n";
    code = static_cast<int>(gpuplan::cli::ExitCode::data);
  }
  return nlohmann::json{{"code", code}, {"out", out.str()}, {"err", err.str()}}.dump();
}

// Bounded like the CLI's own config reads (hub.h's max_json_bytes).
bool put_file(const std::string& path, const std::string& bytes) {
  if (bytes.size() > gpuplan::cli::max_json_bytes) return false;
  std::ofstream f(path, std::ios::binary);
  f << bytes;
  return bool(f);
}

// A file the CLI wrote (sweep --plot), or "" when there is none.
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

EMSCRIPTEN_BINDINGS(gpuplan) {
  emscripten::function("run", &run_cli);
  emscripten::function("putFile", &put_file);
  emscripten::function("readFile", &read_file);
}
