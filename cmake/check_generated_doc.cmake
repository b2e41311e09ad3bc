# Regenerate docs/accuracy.md into OUT and fail if it differs from the committed file.
execute_process(COMMAND ${PY} ${SRC}/tools/accuracy_report.py ${BIN} ${OUT} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tools/accuracy_report.py failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${SRC}/docs/accuracy.md RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "docs/accuracy.md is out of date: run python3 tools/accuracy_report.py build/gpuplan")
endif()
