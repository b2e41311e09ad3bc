// gpuplan models: the built-in presets.
#include <algorithm>
#include <cctype>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

void setup_models(CLI::App& app, ModelsOptions& o) {
  auto* cmd = app.add_subcommand("models", "List the built-in model presets");
  cmd->footer("Examples:\n  gpuplan models --search qwen3\n  gpuplan models --search \"llama 70b\" --format json");
  cmd->add_option("--search", o.search,
                  "Only presets whose id, aliases, name or model_type contain every word (case-insensitive)");
  cmd->add_option("--format", o.format, "table (default) | json | csv | md");
}

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool matches(const ModelPreset& p, const std::string& search) {
  std::string hay = p.id + " " + p.name + " " + p.spec.model_type;
  for (const auto& a : p.aliases) hay += " " + a;
  hay = lower(hay);
  std::istringstream words(lower(search));
  for (std::string w; words >> w;)
    if (hay.find(w) == std::string::npos) return false;
  return true;
}

}  // namespace

ExitCode run_models(const ModelsOptions& o, std::ostream& out) {
  const Format format = parse_format(o.format);
  // The listing as plain rows: only --format json builds a JSON document (building one for the table was half of a
  // `models` run).
  std::vector<const ModelPreset*> list;
  for (const auto& p : builtin_presets())
    if (o.search.empty() || matches(p, o.search)) list.push_back(&p);
  const auto params = [](Params p) { return static_cast<std::int64_t>(p.in(unit::params)); };
  if (format == Format::json) {
    nlohmann::json models = nlohmann::json::array();
    for (const ModelPreset* p : list)
      models.push_back({{"id", p->id},
                        {"aliases", p->aliases},
                        {"name", p->name},
                        {"model_type", p->spec.model_type},
                        {"params", p->params.in(unit::params)},
                        {"active_params", p->active_params.in(unit::params)},
                        {"source", p->source}});
    render_json({{"schema", schema_id}, {"command", "models"}, {"models", models}}, out);
    return ExitCode::ok;
  }
  if (format == Format::csv || format == Format::md) {
    std::vector<std::vector<std::string>> rows;
    for (const ModelPreset* p : list)
      rows.push_back({p->id, p->spec.model_type, std::to_string(params(p->params)), std::to_string(params(p->active_params)),
                      p->name, p->source});
    render_rows({"id", "model_type", "params", "active_params", "name", "source"}, rows, format == Format::md, out);
    return ExitCode::ok;
  }
  if (list.empty()) {
    fmt::print(out, "no preset matches \"{}\" (a Hub id org/name or a local path works with --model too)\n", o.search);
    return ExitCode::ok;
  }
  std::size_t id_w = 2, type_w = 10;
  for (const ModelPreset* p : list) {
    id_w = std::max(id_w, p->id.size());
    type_w = std::max(type_w, p->spec.model_type.size());
  }
  // Columns padded by hand (ids and types are ASCII): one write, and a third of the instructions fmt's width
  // handling took for a hundred rows.
  std::string text;
  const auto cell = [&](const std::string& v, std::size_t width, bool right) {
    const std::size_t fill = width > v.size() ? width - v.size() : 0;
    if (right) text.append(fill, ' ');
    text += v;
    if (!right) text.append(fill, ' ');
    text += "  ";
  };
  const auto row = [&](const std::string& id, const std::string& type, const std::string& n, const std::string& a,
                       const std::string& name) {
    cell(id, id_w, false);
    cell(type, type_w, false);
    // Counts up to 99 trillion with separators ("99,999,999,999,999", 18 characters) align; a larger one widens its row.
    constexpr std::size_t count_w = 18;
    cell(n, count_w, true);
    cell(a, count_w, true);
    text += name;
    text += '\n';
  };
  row("id", "model_type", "params", "active params", "name");
  for (const ModelPreset* p : list)
    row(p->id, p->spec.model_type, grouped(params(p->params)), grouped(params(p->active_params)), p->name);
  out << text;
  return ExitCode::ok;
}

}  // namespace gpuplan::cli
