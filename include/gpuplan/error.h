// Errors say who must fix the problem; the CLI maps them to exit statuses.
#pragma once
#include <stdexcept>
#include <string>

namespace gpuplan {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The caller passed something invalid: a flag value, an unknown name, a model config that lacks a field.
struct InputError : Error {
  using Error::Error;
};

// A data file (catalog, built-in or user) is malformed.
struct DataError : Error {
  using Error::Error;
};

// nlohmann::json's exception text without its "[json.exception.parse_error.101] " prefix, for one-line errors.
inline std::string json_problem(const std::exception& e) {
  const std::string w = e.what();
  const auto p = w.find("] ");
  return p == std::string::npos ? w : w.substr(p + 2);
}

}  // namespace gpuplan
