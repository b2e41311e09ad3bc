// What several test files share (one definition, so the test executable can build as unity batches).
#pragma once
#include <string>

#include <gpuplan/units.h>

namespace gpuplan::test {

// tests/data, from CMake.
inline const std::string data = GPUPLAN_TEST_DATA;

// A quantity in bytes as a double, for CHECKs against hand-computed figures.
inline double b(gpuplan::Bytes x) { return x.in(gpuplan::unit::bytes); }

// llama.cpp prints its buffers in MiB.
inline constexpr double kMiB = 1048576.0;

}  // namespace gpuplan::test
