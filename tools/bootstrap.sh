#!/usr/bin/env bash
# Set up a fresh Debian machine for gpuplan, build it, then run it or its tests.
#   tools/bootstrap.sh run    install what is missing, build, run `gpuplan train --params 7B --precision bf16`
#   tools/bootstrap.sh test   install what is missing, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libcli11-dev nlohmann-json3-dev libfmt-dev libyaml-cpp-dev catch2 curl python3 python3-jsonschema clang libclang-rt-14-dev
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

case "${1:-run}" in
  run)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build -j "$jobs" --target gpuplan_cli
    ./build/gpuplan train --params 7B --precision bf16 ;;
  test)
    # Two trees built and tested side by side, each with every core: the work is CPU-bound, and either one alone
    # leaves cores idle in its single-threaded links, the web page's optimiser and its longest tests.
    #   build/       Release: the binary, the benchmarks, the web page, and every test of the binary as a process
    #                (accuracy, generated docs, golden outputs, schema, packaging, bad input, the page in Chromium).
    #   build-asan/  clang with AddressSanitizer + UndefinedBehaviorSanitizer: the Catch2 suite (built only here:
    #                sanitized, it checks more than it would in Release), the golden outputs in-process, the CLI's
    #                process tests, and the libFuzzer targets for a bounded time from their seed corpus.
    # Both compile the CLI as one unit (the least CPU). The sanitizer tree at -O1 with line tables only, as the
    # sanitizers' documentation suggests: stack traces keep file:line, and it builds ~30 % faster than at -O2 -g.
    # It leaves to the Release tree the checks that score, print or validate numbers (docs.*, calibration.*,
    # time.*, engines.*, schema.*): its golden outputs run every measured case, the engine profiles and large
    # layouts with --tokens through the same CLI paths, in full, and its unit tests every engine's estimator. Nor
    # packaging (a build of a consumer project: no sanitized code runs in it).
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_TESTS=ON -DGPUPLAN_UNIT_TESTS=OFF -DGPUPLAN_CLI_UNITS=1 \
      >/dev/null
    cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DGPUPLAN_SANITIZE=ON -DGPUPLAN_FUZZ=ON \
      -DGPUPLAN_UNIT_TESTS=ON -DGPUPLAN_BENCH=OFF -DGPUPLAN_CLI_UNITS=1 >/dev/null
    echo "building and testing build/ and build-asan/ side by side (logs: build/test.log, build-asan/test.log)"
    (cmake --build build -j "$jobs" && ctest --test-dir build --output-on-failure -j "$jobs") >build/test.log 2>&1 &
    release=$!
    (cmake --build build-asan -j "$jobs" &&
      ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '^(docs|calibration|time|engines|schema|packaging|throughput)[.]') \
      >build-asan/test.log 2>&1 &
    asan=$!
    trap 'kill "$release" "$asan" 2>/dev/null || true' EXIT
    release_status=0 asan_status=0
    wait "$release" || release_status=$?
    wait "$asan" || asan_status=$?
    trap - EXIT
    echo "== build/ (Release)"; cat build/test.log
    echo "== build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer)"; cat build-asan/test.log
    ((release_status == 0)) || exit "$release_status"
    exit "$asan_status"
    ;;
  *) echo "usage: tools/bootstrap.sh [run|test]" >&2; exit 2 ;;
esac
