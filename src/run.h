// The CLI's entry point, apart from the option structs (app.h): main.cpp needs nothing else, so it compiles without
// CLI11 and the library (11 s of a fresh -O3 build, 2026-11-23).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "exit_code.h"

namespace gpuplan::cli {

// Parses args (without the program name) and runs the subcommand; never exits the process.
ExitCode run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpuplan::cli
