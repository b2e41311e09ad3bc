// Replays a caching-allocator trace recorded on a GPU (tools/measure/measure.py with TRACE=1: lines
// "action<TAB>size<TAB>address<TAB>stream" for requests over 1 MiB, their frees, and the segments the real allocator
// added and released) through gpuplan's allocator model, and prints the peak of what each reserved over the trace:
//   model <bytes> real <bytes>
// The real figure counts large-pool segments only (2 MiB segments belong to the small pool, whose requests the
// trace leaves out), added from the trace's first event on. Arguments: the sizes of blocks the process allocated and
// freed before the trace (a tied lm_head's own weight), cached in the model's segments before it replays the trace;
// its figure is what it adds beyond them, as the real one's. Exit 2 on a malformed line or argument.
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include <gpuplan/memory/allocator.h>

int main(int argc, char** argv) {
  gpuplan::ReplayedAllocations model(gpuplan::Placement::driver);  // the real sequence: blocks where the driver puts them
  for (int i = 1; i < argc; ++i) {
    std::istringstream in(argv[i]);
    double bytes = 0;
    if (!(in >> bytes) || !in.eof() || bytes <= 0) {
      std::cerr << "trace_replay: argument " << i << " is not a size in bytes\n";
      return 2;
    }
    model.free(model.malloc(bytes, 0));
  }
  const double cached = model.reserved();
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
  std::cout << "model " << std::uint64_t(model.peak_reserved() - cached) << " real " << std::uint64_t(real_peak) << "\n";
  return 0;
}
