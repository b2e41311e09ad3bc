// The only exit point: maps errors to the documented exit statuses.
#include <iostream>
#include <string>
#include <vector>

#include "app.h"

int main(int argc, char** argv) {
  using gpuplan::cli::ExitCode;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return static_cast<int>(gpuplan::cli::run(args, std::cout, std::cerr));
  } catch (const std::exception& e) {
    std::cerr << "gpuplan: internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::data);
  }
}
