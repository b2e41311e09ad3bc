#pragma once

namespace gpuplan::cli {

// Documented in --help, the README and docs: the only statuses gpuplan exits with.
enum class ExitCode : int {
  ok = 0,     // success, every requested limit holds
  limit = 1,  // estimate computed, but a requested limit fails / does not fit
  usage = 2,  // bad flag or value, unknown name, conflicting flags
  data = 3,   // a model config or catalog file missing or malformed; internal errors
};

}  // namespace gpuplan::cli
