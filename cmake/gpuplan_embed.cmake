# Embed every data/**/*.json and the output schemas in docs/schema into a generated header at configure time, as bytes (no string-literal limits,
# no #embed in C++20). Editing a data file re-runs configure.
get_filename_component(gpuplan_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)  # also when web/ includes this file
file(GLOB_RECURSE gpuplan_data CONFIGURE_DEPENDS "${gpuplan_root}/data/*.json" "${gpuplan_root}/docs/schema/*.json")
list(SORT gpuplan_data)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${gpuplan_data})
set(GPUPLAN_ARRAYS "")
set(GPUPLAN_TABLE "")
set(GPUPLAN_CATALOG_DATES "")
foreach(path IN LISTS gpuplan_data)
  file(RELATIVE_PATH rel "${gpuplan_root}" "${path}")
  string(MAKE_C_IDENTIFIER "${rel}" id)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND GPUPLAN_ARRAYS "inline constexpr unsigned char ${id}[] = {${hex}};\n")
  # The catalogs' "as_of" dates, so `gpuplan --version` can name them without parsing the catalogs at run time.
  if(rel MATCHES "^data/(hardware|pricing)/")
    file(READ "${path}" text)
    string(JSON as_of ERROR_VARIABLE no_date GET "${text}" as_of)
    if(NOT no_date)
      string(APPEND GPUPLAN_CATALOG_DATES "${rel} ${as_of}\\n")
    endif()
  endif()
  string(APPEND GPUPLAN_TABLE "    EmbeddedFile{\"${rel}\", std::span<const unsigned char>(${id}, sizeof(${id}))},\n")
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/builtin_data.h.in"
               "${PROJECT_BINARY_DIR}/generated/include/gpuplan/builtin_data.h" @ONLY)
