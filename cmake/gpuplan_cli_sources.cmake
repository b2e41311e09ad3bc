# The CLI's sources but main() and the Hub client: shared by the native build and the WebAssembly page (web/).
set(GPUPLAN_CLI_SOURCES)
foreach(f app cmd_train cmd_infer cmd_models cmd_hardware cmd_scale cmd_plan cmd_sweep chart cmd_check cmd_generate
          cmd_schema render_table render_json model_source)
  list(APPEND GPUPLAN_CLI_SOURCES ${CMAKE_CURRENT_LIST_DIR}/../src/${f}.cpp)
endforeach()
