#include <ostream>

#include "render.h"

namespace gpuplan::cli {

void render_json(const nlohmann::json& report, std::ostream& out) { out << report.dump(2) << "\n"; }

}  // namespace gpuplan::cli
