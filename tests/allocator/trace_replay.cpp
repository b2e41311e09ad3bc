// Replays a caching-allocator trace recorded on a GPU (tools/measure/measure.py with TRACE=1: lines
// "action<TAB>size<TAB>address<TAB>stream" for requests over 1 MiB, their frees, and the segments the real allocator
// added and released) through gpuplan's allocator model, and prints the peak of what each reserved over the trace:
//   model <bytes> real <bytes>
// The real figure counts large-pool segments only (2 MiB segments belong to the small pool, whose requests the
// trace leaves out). Both start from nothing at the trace's first event. Exit 2 on a malformed line.
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include <gpuplan/memory/allocator.h>

int main() {
  gpuplan::ReplayedAllocations model;
  std::unordered_map<std::uint64_t, gpuplan::ReplayedAllocations::Id> live;  // address → the model's block
  double real = 0, real_peak = 0;
  std::string line;
  for (std::size_t n = 1; std::getline(std::cin, line); ++n) {
    std::istringstream in(line);
    std::string action;
    double size = 0;
    std::uint64_t addr = 0;
    int stream = 0;
    if (!(in >> action >> size >> addr >> stream) || size < 0) {
      std::cerr << "trace_replay: line " << n << " is not 'action size address stream'\n";
      return 2;
    }
    constexpr double small_segment = 2.0 * 1048576.0;
    if (action == "alloc") {
      live[addr] = model.malloc(size, 0);
    } else if (action == "free_completed") {
      auto it = live.find(addr);
      if (it != live.end()) {
        model.free(it->second);
        live.erase(it);
      }
    } else if (action == "segment_alloc" && size != small_segment) {
      real += size;
      real_peak = std::max(real_peak, real);
    } else if (action == "segment_free" && size != small_segment) {
      real -= size;
    }
  }
  std::cout << "model " << std::uint64_t(model.peak_reserved()) << " real " << std::uint64_t(real_peak) << "\n";
  return 0;
}
