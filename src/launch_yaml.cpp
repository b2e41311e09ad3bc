// YAML configs (Accelerate, axolotl, torchtune) → JSON, through yaml-cpp (Debian's libyaml-cpp-dev).
#include <charconv>
#include <cmath>

#include <yaml-cpp/yaml.h>

#include <gpuplan/error.h>

#include "launch_import.h"

namespace gpuplan::cli {

namespace {

// A plain scalar as PyYAML (YAML 1.1) types it, which the tools that read these files use; quoted ones stay text.
nlohmann::json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;
  static const char* const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* y : yes)
    if (s == y) return true;
  for (const char* f : no)
    if (s == f) return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i); ec == std::errc() && p == s.data() + s.size())
    return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      ec == std::errc() && p == s.data() + s.size() && std::isfinite(d))
    return d;
  return s;
}

nlohmann::json convert(const YAML::Node& n, int depth, const std::string& path) {
  if (depth > 64) throw DataError(path + ": YAML nested deeper than 64 levels");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: return scalar(n);
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& e : n) a.push_back(convert(e, depth + 1, path));
      return a;
    }
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) throw DataError(path + ": a YAML key that is not a name");
        o[kv.first.Scalar()] = convert(kv.second, depth + 1, path);
      }
      return o;
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json yaml_to_json(const std::string& bytes, const std::string& path) {
  try {
    return convert(YAML::Load(bytes), 0, path);
  } catch (const YAML::Exception& e) {
    throw DataError(path + ": not valid YAML (" + e.msg + " at line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace gpuplan::cli
