# Prints a built file's size (the web page's gpuplan.js, wasm inlined).
file(SIZE "${FILE}" bytes)
math(EXPR kib "${bytes} / 1024")
message(STATUS "web: ${FILE} is ${kib} KiB")
