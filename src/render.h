// Report → text. The table and the JSON come from the same report object.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuplan::cli {

// Whether stdout is a terminal, and colour for tables: on only on a terminal with NO_COLOR unset
// (https://no-color.org); set by run().
void set_terminal(bool tty, bool colour);
bool terminal();
bool colour();

void render_json(const nlohmann::json& report, std::ostream& out);
void render_train_table(const nlohmann::json& report, std::ostream& out);
void render_infer_table(const nlohmann::json& report, std::ostream& out);

// A header and rows of cells as CSV (RFC 4180 quoting) or a Markdown table.
void render_rows(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows, bool markdown,
                 std::ostream& out);
// The same rows as aligned text columns (tables), widths from the widest cell.
void render_columns(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                    std::ostream& out);
// train/infer reports as CSV or Markdown: one row per memory component, then the totals and the key results.
void render_report_rows(const nlohmann::json& report, bool markdown, std::ostream& out);

}  // namespace gpuplan::cli
