# Regenerate a generated doc (SCRIPT writes it to OUT) and fail if it differs from the committed DOC.
execute_process(COMMAND ${PY} ${SRC}/${SCRIPT} ${BIN} ${OUT} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${SRC}/${DOC} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "${DOC} is out of date: run python3 ${SCRIPT} build/gpuplan")
endif()
