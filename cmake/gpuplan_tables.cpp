// Build step: parse the embedded data/**/*.json with the library's own parsers (validation included, so a
// malformed built-in file fails the build) and write them as tables (include/gpuplan/tables.h) into the generated
// header gpuplan/builtin_tables.h, which builtin.h reads at run time.
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include <gpuplan/catalog.h>
#include <gpuplan/model_presets.h>
#include <gpuplan/tables.h>

namespace {
void array(std::ostream& out, const char* name, const std::string& bytes) {
  out << "inline constexpr unsigned char " << name << "[] = {";
  static const char* hex = "0123456789abcdef";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out << (i % 32 == 0 ? "\n" : "") << "0x" << hex[b >> 4] << hex[b & 15] << ',';
  }
  out << "};\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gpuplan_tables OUT.h\n";
    return 2;
  }
  try {
    const std::string catalog = gpuplan::tables::write(gpuplan::detail::parse_builtin_catalog());
    const std::string presets = gpuplan::tables::write(gpuplan::detail::parse_presets());
    std::ofstream out(argv[1], std::ios::binary);
    out << "// Generated at build time by gpuplan_tables (cmake/gpuplan_tables.cpp) from data/**/*.json. Do not edit.\n"
           "#pragma once\n\nnamespace gpuplan::detail {\n\n";
    array(out, "builtin_catalog_table", catalog);
    array(out, "builtin_presets_table", presets);
    out << "\n}  // namespace gpuplan::detail\n";
    if (!out) throw std::runtime_error(std::string(argv[1]) + ": cannot write");
  } catch (const std::exception& e) {
    std::cerr << "gpuplan_tables: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
