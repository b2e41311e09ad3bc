// The only exit point: maps errors to the documented exit statuses.
#include <iostream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string>
#include <vector>

#include "run.h"
#include <gpuplan/text.h>

int main(int argc, char** argv) {
  using gpuplan::cli::ExitCode;
#if defined(__GLIBC__)
  // An estimate builds and drops its allocator model's tables (megabytes for a large model); by default glibc serves
  // each from fresh mmap'd pages and returns them at free, so every estimate of a fit table pays its page faults
  // again. Kept in the heap, they are faulted once per process (2-core machine: `train --model llama-3.1-70b` 59 → 35
  // ms when the estimates kept timelines; with the allocator fed directly, `infer --model llama-3.1-405b` 23.4 →
  // 18.9 ms, 879 → 500 page faults).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return static_cast<int>(gpuplan::cli::run(args, std::cout, std::cerr));
  } catch (const std::exception& e) {
    std::cerr << "gpuplan: internal error: " << gpuplan::printable(e.what()) << "\n";
    return static_cast<int>(ExitCode::data);
  }
}
