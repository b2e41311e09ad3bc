// libFuzzer: any catalog text is merged or rejected with a DataError naming the problem.
#include <cstdint>
#include <string>

#include <gpuplan/catalog.h>

namespace gpuplan::fuzz {

int catalog(const std::uint8_t* data, std::size_t size) {
  gpuplan::Catalog cat;
  try {
    const auto j = gpuplan::detail::parse_json_file("fuzz.json", std::string(reinterpret_cast<const char*>(data), size));
    gpuplan::detail::merge_catalog_json(cat, j, "fuzz.json");
    for (const auto& d : cat.devices) (void)gpuplan::fit_on(d, gpuplan::gib(10));
  } catch (const gpuplan::Error&) {
  }
  return 0;
}

}  // namespace gpuplan::fuzz
