// Report → text. The table and the JSON come from the same report object.
#pragma once
#include <iosfwd>

#include <nlohmann/json.hpp>

namespace gpuplan::cli {

void render_json(const nlohmann::json& report, std::ostream& out);
void render_train_table(const nlohmann::json& report, std::ostream& out);
void render_infer_table(const nlohmann::json& report, std::ostream& out);

}  // namespace gpuplan::cli
