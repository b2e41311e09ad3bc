#!/usr/bin/env bash
# Set up a fresh Debian machine for gpuplan, build it, then run it or its tests.
#   tools/bootstrap.sh run    install what is missing, build, run `gpuplan train --params 7B --precision bf16`
#   tools/bootstrap.sh test   install what is missing, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libcli11-dev nlohmann-json3-dev libfmt-dev catch2 libcurl4-openssl-dev python3 python3-jsonschema clang libclang-rt-14-dev
          emscripten chromium chromium-driver)  # the last three: the web page (web/) and its browser test
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_TESTS=ON >/dev/null
cmake --build build -j "$jobs"

case "${1:-run}" in
  run) ./build/gpuplan train --params 7B --precision bf16 ;;
  test)
    # The same tests built with clang under AddressSanitizer + UndefinedBehaviorSanitizer, plus the libFuzzer
    # targets run for a bounded time from their seed corpus. Not the benchmarks (nothing runs them here). That build
    # compiles while the Release tests run: those mostly wait on processes and on the web page's single-threaded
    # link, so the cores would idle (its log follows their results).
    # -O1 and line tables only, as the sanitizers' documentation suggests: stack traces keep file:line, and the
    # build takes ~30 % less than at RelWithDebInfo's -O2 -g (the CLI's larger unit 79 → 64 s).
    cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DGPUPLAN_SANITIZE=ON -DGPUPLAN_FUZZ=ON -DGPUPLAN_BENCH=OFF >/dev/null
    cmake --build build-asan -j "$jobs" >build-asan/build.log 2>&1 &
    asan_build=$!
    trap 'kill "$asan_build" 2>/dev/null || true' EXIT
    # The browser test reports the page's load time, so it runs once the machine is quiet again.
    ctest --test-dir build --output-on-failure -j "$jobs" -E '^web[.]browser$'
    asan_status=0
    wait "$asan_build" || asan_status=$?
    trap - EXIT
    cat build-asan/build.log
    ((asan_status == 0)) || exit "$asan_status"
    ctest --test-dir build --output-on-failure -R '^web[.]browser$'
    # Not the checks that score or print numbers the Release pass just checked (docs.*, calibration.*, time.*): the
    # golden test runs every measured case and large layouts with --tokens through the same CLI paths here, in
    # full. Nor packaging (a build of a consumer project: no sanitized code runs in it).
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '^(docs|calibration|time|packaging)[.]'
    ;;
  *) echo "usage: tools/bootstrap.sh [run|test]" >&2; exit 2 ;;
esac
