// gpuplan check SPEC.json: named scenarios, each a train/infer command with its limits; a pass/fail table for CI.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

void setup_check(CLI::App& app, CheckOptions& o) {
  auto* cmd = app.add_subcommand("check", "Evaluate a file of named scenarios with limits; exit 1 if any fails (for CI)");
  cmd->footer(
      "SPEC.json:\n"
      "  {\"scenarios\": [{\"name\": \"8B LoRA fits an H100\", \"command\": \"train\",\n"
      "                  \"args\": [\"--model\", \"llama-3.1-8b\", \"--lora-rank\", \"16\", \"--gpu\", \"h100\"],\n"
      "                  \"limits\": {\"max_memory\": \"75GiB\", \"require_fit\": true}}]}\n"
      "Limits: max_memory (size), require_fit (bool), max_cost (USD, train), max_days (train).\n"
      "Example:\n  gpuplan check ci/gpuplan.json --format json");
  cmd->add_option("spec", o.spec, "Scenario file (JSON)")->required();
  cmd->add_option("--format", o.format, "table (default) | json | csv | md");
}

ExitCode run_check(const CheckOptions& o, std::ostream& out, std::ostream& err) {
  const Format format = parse_format(o.format);
  std::ifstream f(o.spec);
  if (!f) throw InputError(o.spec + ": cannot open the scenario file");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {  // syntax errors, and numbers beyond double range
    throw InputError(o.spec + ": not valid JSON (" + json_problem(e) + ")");
  }
  if (!spec.is_object() || !spec.contains("scenarios") || !spec["scenarios"].is_array() || spec["scenarios"].empty())
    throw InputError(o.spec + ": /scenarios: expected a non-empty array");
  nlohmann::json results = nlohmann::json::array();
  int worst = 0;
  for (std::size_t i = 0; i < spec["scenarios"].size(); ++i) {
    const auto& sc = spec["scenarios"][i];
    const std::string ptr = o.spec + ": /scenarios/" + std::to_string(i);
    if (!sc.is_object() || !sc.contains("name") || !sc["name"].is_string()) throw InputError(ptr + "/name: expected a string");
    if (!sc.contains("command") || !sc["command"].is_string() ||
        (sc["command"] != "train" && sc["command"] != "infer"))
      throw InputError(ptr + "/command: expected \"train\" or \"infer\"");
    std::vector<std::string> args{sc["command"].get<std::string>()};
    if (sc.contains("args")) {
      if (!sc["args"].is_array()) throw InputError(ptr + "/args: expected an array of strings");
      for (const auto& a : sc["args"]) {
        if (!a.is_string()) throw InputError(ptr + "/args: expected an array of strings");
        args.push_back(a.get<std::string>());
      }
    }
    if (sc.contains("limits")) {
      const auto& l = sc["limits"];
      if (!l.is_object()) throw InputError(ptr + "/limits: expected an object");
      for (const auto& [k, v] : l.items()) {
        if (k == "max_memory" && v.is_string()) args.insert(args.end(), {"--max-memory", v.get<std::string>()});
        else if (k == "require_fit" && v.is_boolean()) { if (v.get<bool>()) args.push_back("--require-fit"); }
        else if ((k == "max_cost" || k == "max_days") && v.is_number())
          args.insert(args.end(), {k == "max_cost" ? "--max-cost" : "--max-days", fmt::format("{}", v.get<double>())});
        else throw InputError(ptr + "/limits/" + k + ": unknown limit or wrong type");
      }
    }
    args.insert(args.end(), {"--format", "json"});
    std::ostringstream sout, serr;
    const ExitCode code = run(args, sout, serr);
    nlohmann::json r{{"name", sc["name"]}, {"exit_code", static_cast<int>(code)}};
    if (code == ExitCode::ok || code == ExitCode::limit) {
      const auto rep = nlohmann::json::parse(sout.str());
      r["status"] = code == ExitCode::ok ? "pass" : "fail";
      r["memory_total_bytes"] = rep["memory"]["total_bytes"];
      r["limits"] = rep.value("limits", nlohmann::json::array());
      if (rep.contains("fit")) r["fits"] = rep["fit"]["fits"];
    } else {
      r["status"] = "error";
      std::string e = serr.str();
      while (!e.empty() && e.back() == '\n') e.pop_back();
      r["error"] = e;
    }
    worst = std::max(worst, static_cast<int>(code));
    results.push_back(r);
  }
  const nlohmann::json report{{"schema", schema_id}, {"command", "check"}, {"scenarios", results}};
  if (format == Format::json) {
    render_json(report, out);
  } else if (format == Format::csv || format == Format::md) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : results) {
      std::string lim;
      for (const auto& l : r.value("limits", nlohmann::json::array()))
        lim += (lim.empty() ? "" : "; ") + l["name"].get<std::string>() + (l["ok"].get<bool>() ? " ok" : " FAILED");
      rows.push_back({r["name"].get<std::string>(), r["status"].get<std::string>(),
                      r.contains("memory_total_bytes") ? r["memory_total_bytes"].dump() : "",
                      r["status"] == "error" ? r["error"].get<std::string>() : lim});
    }
    render_rows({"scenario", "status", "memory_total_bytes", "limits"}, rows, format == Format::md, out);
  } else {
    fmt::print(out, "{:<40} {:<6} {:>12}  {}\n", "scenario", "status", "memory", "limits");
    for (const auto& r : results) {
      std::string lim;
      for (const auto& l : r.value("limits", nlohmann::json::array()))
        lim += (lim.empty() ? "" : ", ") + l["name"].get<std::string>() + (l["ok"].get<bool>() ? " ok" : " FAILED");
      if (r["status"] == "error") lim = r["error"].get<std::string>();
      fmt::print(out, "{:<40} {:<6} {:>12}  {}\n", r["name"].get<std::string>().substr(0, 40), r["status"].get<std::string>(),
                 r.contains("memory_total_bytes") ? gib(r["memory_total_bytes"].get<double>()) : std::string("-"), lim);
    }
  }
  if (worst > 1) err << "gpuplan: a scenario could not be evaluated (see its error)\n";
  return static_cast<ExitCode>(worst);
}

}  // namespace gpuplan::cli
