# The CLI's sources but main() and the Hub client: shared by the native build and the WebAssembly page (web/).
# The order makes the two unity batches of 8 (CMakeLists.txt) about equal: cmd_sweep in the second, else the
# first took 42 s and the second 31 s, and a fresh CLI build on 2 cores 66 s instead of 57 (2026-11-23).
set(GPUPLAN_CLI_SOURCES)
foreach(f app cmd_train advice cmd_infer cmd_models cmd_hardware cmd_scale cmd_plan chart cmd_sweep cmd_check cmd_generate
          cmd_schema cmd_launch render_table render_json model_source)
  list(APPEND GPUPLAN_CLI_SOURCES ${CMAKE_CURRENT_LIST_DIR}/../src/${f}.cpp)
endforeach()
