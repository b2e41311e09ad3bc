// The CLI in-process for tests: cli::run() on an argument vector, its exit status, stdout and stderr.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "app.h"

namespace gpuplan::test {

struct CliResult {
  cli::ExitCode code;
  std::string out, err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const cli::ExitCode code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace gpuplan::test
