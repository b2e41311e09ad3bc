// `gpuplan train|infer [flags] [--from FILE …] -- COMMAND`: the command and the config files it names (or --from
// names) read into gpuplan's own flags (include/gpuplan/launch/), appended to the user's, and what was read for the
// report's `from`. The user's own flags win over the imported ones.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuplan::cli {

struct LaunchArgs {
  std::vector<std::string> args;  // what CLI11 parses: the user's flags and the imported ones
  nlohmann::json from;            // null without an import
};

// args as run() gets them. Warns on err about each ignored flag or key that changes memory or speed.
LaunchArgs import_launch(const std::vector<std::string>& args, std::ostream& err);

// The YAML bytes of a config as JSON (PyYAML's YAML 1.1 scalars: yes/no/on/off are booleans); DataError naming
// `path` when it is not YAML. Not in the web page (web/gpuplan_web.cpp says so).
nlohmann::json yaml_to_json(const std::string& bytes, const std::string& path);

// The table's lines for report["from"] (nothing without one).
void render_from_lines(const nlohmann::json& report, std::ostream& out);

}  // namespace gpuplan::cli
