# Embed every data/**/*.json and the output schemas in docs/schema into a generated header at configure time, as bytes (no string-literal limits,
# no #embed in C++20). Editing a data file re-runs configure.
file(GLOB_RECURSE gpuplan_data CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/data/*.json" "${PROJECT_SOURCE_DIR}/docs/schema/*.json")
list(SORT gpuplan_data)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${gpuplan_data})
set(GPUPLAN_ARRAYS "")
set(GPUPLAN_TABLE "")
foreach(path IN LISTS gpuplan_data)
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${path}")
  string(MAKE_C_IDENTIFIER "${rel}" id)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND GPUPLAN_ARRAYS "inline constexpr unsigned char ${id}[] = {${hex}};\n")
  string(APPEND GPUPLAN_TABLE "    EmbeddedFile{\"${rel}\", std::span<const unsigned char>(${id}, sizeof(${id}))},\n")
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/builtin_data.h.in"
               "${PROJECT_BINARY_DIR}/generated/include/gpuplan/builtin_data.h" @ONLY)
