// gpuplan models: the built-in presets.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

void setup_models(CLI::App& app, ModelsOptions& o) {
  auto* cmd = app.add_subcommand("models", "List the built-in model presets");
  cmd->footer("Example:\n  gpuplan models --format json");
  cmd->add_option("--format", o.format, "table (default) | json | csv | md");
}

ExitCode run_models(const ModelsOptions& o, std::ostream& out) {
  const Format format = parse_format(o.format);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : builtin_presets()) {
    const ParamCounts c = count_params(p.spec);
    list.push_back({{"id", p.id},
                    {"aliases", p.aliases},
                    {"name", p.name},
                    {"model_type", p.spec.model_type},
                    {"params", c.total.in(unit::params)},
                    {"active_params", c.active.in(unit::params)},
                    {"source", p.source}});
  }
  if (format == Format::json) {
    render_json({{"schema", schema_id}, {"command", "models"}, {"models", list}}, out);
    return ExitCode::ok;
  }
  if (format == Format::csv || format == Format::md) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : list)
      rows.push_back({m["id"].get<std::string>(), m["model_type"].get<std::string>(), std::to_string(m["params"].get<std::int64_t>()),
                      std::to_string(m["active_params"].get<std::int64_t>()), m["name"].get<std::string>(), m["source"].get<std::string>()});
    render_rows({"id", "model_type", "params", "active_params", "name", "source"}, rows, format == Format::md, out);
    return ExitCode::ok;
  }
  fmt::print(out, "{:<16} {:<13} {:>18} {:>18}  {}\n", "id", "model_type", "params", "active params", "name");
  for (const auto& m : list)
    fmt::print(out, "{:<16} {:<13} {:>18} {:>18}  {}\n", m["id"].get<std::string>(), m["model_type"].get<std::string>(),
               grouped(m["params"].get<std::int64_t>()), grouped(m["active_params"].get<std::int64_t>()),
               m["name"].get<std::string>());
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
