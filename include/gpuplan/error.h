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

}  // namespace gpuplan
