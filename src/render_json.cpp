#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "render.h"

namespace gpuplan::cli {

// Strings in a report were made printable where they came from files; replace is the last guard against a byte
// that is not UTF-8 (which dump would throw on).
void render_json(const nlohmann::json& report, std::ostream& out) {
  out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void render_rows(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows, bool markdown,
                 std::ostream& out) {
  auto csv_cell = [](const std::string& c) {
    if (c.find_first_of(",\"\n") == std::string::npos) return c;
    std::string q = "\"";
    for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  auto md_cell = [](const std::string& c) {
    std::string e;
    for (char ch : c) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return e;
  };
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (markdown) out << "| " << md_cell(cells[i]) << " ";
      else out << (i ? "," : "") << csv_cell(cells[i]);
    }
    out << (markdown ? "|\n" : "\n");
  };
  line(header);
  if (markdown) {
    for (std::size_t i = 0; i < header.size(); ++i) out << "| --- ";
    out << "|\n";
  }
  for (const auto& r : rows) line(r);
}

void render_report_rows(const nlohmann::json& r, bool markdown, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  auto num = [](const nlohmann::json& v) { return v.is_number_integer() ? std::to_string(v.get<std::int64_t>()) : v.dump(); };
  for (const auto& [k, v] : r["memory"]["components"].items()) rows.push_back({"memory.components." + k, num(v), "bytes"});
  for (const char* k : {"peak_allocated_bytes", "reserved_bytes", "context_bytes", "total_bytes"})
    rows.push_back({std::string("memory.") + k, num(r["memory"][k]), "bytes"});
  auto maybe = [&](const char* obj, const char* key, const char* unit) {
    if (r.contains(obj) && r[obj].is_object() && r[obj].contains(key) && r[obj][key].is_number())
      rows.push_back({std::string(obj) + "." + key, num(r[obj][key]), unit});
  };
  maybe("compute", "flops", "FLOPs");
  maybe("compute", "tokens", "tokens");
  maybe("time", "seconds", "s");
  maybe("time", "gpu_hours", "GPU-hours");
  maybe("cost", "usd", "USD");
  maybe("energy", "kwh", "kWh");
  maybe("throughput", "prefill_tokens_per_s", "tokens/s");
  maybe("throughput", "decode_tokens_per_s", "tokens/s");
  maybe("cost", "usd_per_million_output_tokens", "USD");
  if (r.contains("fit")) rows.push_back({"fit.fits", r["fit"]["fits"].get<bool>() ? "true" : "false", r["fit"]["gpu"].get<std::string>()});
  if (markdown)
    out << "**" << r["model"]["name"].get<std::string>() << "**: `gpuplan " << r["command"].get<std::string>() << "`\n\n";
  render_rows({"quantity", "value", "unit"}, rows, markdown, out);
}

}  // namespace gpuplan::cli
