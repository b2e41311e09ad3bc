// A libFuzzer binary for one target, named by GPUPLAN_FUZZ_TARGET (tests/CMakeLists.txt): the targets themselves are
// the functions in fuzz_*.cpp, compiled once for all five binaries.
#include <cstddef>
#include <cstdint>

namespace gpuplan::fuzz {
int GPUPLAN_FUZZ_TARGET(const std::uint8_t* data, std::size_t size);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpuplan::fuzz::GPUPLAN_FUZZ_TARGET(data, size);
}
