// libFuzzer: the launch parsers (include/gpuplan/launch/) take any command line and any config and either translate
// it or throw gpuplan's own errors; never crash, hang or set a flag without a name. The input's first byte picks
// the form; the rest is the command's words (split at NUL or newline) or the config's JSON text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <gpuplan/launch/command.h>

namespace gpuplan::fuzz {

namespace {

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s) {
    if (c == '\0' || c == '\n') {
      w.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  w.push_back(cur);
  return w;
}

void check(const launch::Import& im) {
  for (const auto& s : im.settings)
    if (s.flag.size() < 3 || s.flag.rfind("--", 0) != 0) std::abort();
}

}  // namespace

int launch(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 7) {
      case 0: check(launch::import_serving_command(words(rest))); break;
      case 6: check(launch::import_modelfile(rest, "Modelfile")); break;
      case 1: {
        std::vector<std::string> overrides;
        launch::TrainImport t = launch::import_training_command(words(rest), overrides);
        nlohmann::json j = nlohmann::json::object();
        for (const auto& o : overrides) launch::torchtune_override(j, o);
        check(launch::finish(std::move(t)));
        break;
      }
      default: {
        const auto j = nlohmann::json::parse(rest, nullptr, false);
        if (j.is_discarded()) return 0;
        launch::TrainImport t;
        if (data[0] % 7 == 2) launch::read_deepspeed_config(t, j, "f");
        else if (data[0] % 7 == 3) launch::read_accelerate_config(t, j, "f");
        else if (data[0] % 7 == 4) launch::read_axolotl_config(t, j, "f");
        else launch::read_torchtune_config(t, j, "f");
        check(launch::finish(std::move(t)));
      }
    }
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
