// gpuplan schema [NAME]: the JSON Schema of each command's --format json output (docs/schema, embedded).
#include <gpuplan/builtin_data.h>

#include "app.h"

namespace gpuplan::cli {

void setup_schema(CLI::App& app, SchemaOptions& o) {
  auto* cmd = app.add_subcommand("schema", "Print the JSON Schema of a command's JSON output (without NAME: the list)");
  cmd->footer("Examples:\n  gpuplan schema\n  gpuplan schema train > train.schema.json");
  cmd->add_option("name", o.name, "train, infer, plan-train, plan-infer, sweep, models, hardware-list, hardware-show, prices, scale, check, catalog");
}

ExitCode run_schema(const SchemaOptions& o, std::ostream& out) {
  const std::string prefix = "docs/schema/", suffix = ".schema.json";
  std::string names;
  for (const auto& f : detail::builtin_files) {
    const std::string path(f.path);
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string name = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    if (o.name.empty()) out << name << "\n";
    else if (name == o.name) {
      out << std::string(f.bytes.begin(), f.bytes.end());
      return ExitCode::ok;
    }
    names += (names.empty() ? "" : ", ") + name;
  }
  if (!o.name.empty()) throw InputError("unknown schema \"" + o.name + "\" (expected: " + names + ")");
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
