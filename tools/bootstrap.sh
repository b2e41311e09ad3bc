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

case "${1:-run}" in
  run)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build -j "$jobs" --target gpuplan_cli
    ./build/gpuplan train --params 7B --precision bf16 ;;
  test)
    # Two builds at once, each with every core: the Release build (the product, the benchmarks, and the tests that
    # run its binary: accuracy, docs, golden outputs, packaging, the web page) and the same code built with clang
    # under AddressSanitizer + UndefinedBehaviorSanitizer (the Catch2 suite, the CLI tests again, and the libFuzzer
    # targets run for a bounded time from their seed corpus). The Catch2 suite is built once, there: sanitized, it
    # checks more than it would in Release. Running both builds together keeps the cores busy through each one's
    # single-threaded links and the web page's optimiser.
    # -O1 and line tables only, as the sanitizers' documentation suggests: stack traces keep file:line, and the
    # build takes ~30 % less than at RelWithDebInfo's -O2 -g (the CLI's larger unit 79 → 64 s).
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_TESTS=ON -DGPUPLAN_UNIT_TESTS=OFF >/dev/null
    cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DGPUPLAN_SANITIZE=ON -DGPUPLAN_FUZZ=ON -DGPUPLAN_UNIT_TESTS=ON -DGPUPLAN_BENCH=OFF >/dev/null
    cmake --build build -j "$jobs" >build/build.log 2>&1 &
    release_build=$!
    cmake --build build-asan -j "$jobs" >build-asan/build.log 2>&1 &
    asan_build=$!
    trap 'kill "$release_build" "$asan_build" 2>/dev/null || true' EXIT
    status=0
    wait "$release_build" || status=$?
    cat build/build.log
    ((status == 0)) || exit "$status"
    ctest --test-dir build --output-on-failure -j "$jobs"
    wait "$asan_build" || status=$?
    trap - EXIT
    cat build-asan/build.log
    ((status == 0)) || exit "$status"
    # Not the checks that score, print or validate numbers the Release pass just checked (docs.*, calibration.*,
    # time.*, engines.*, schema.*): the golden outputs run every measured case, the engine profiles and large
    # layouts with --tokens through the same CLI paths here, in full, and the unit tests every engine's estimator.
    # Nor packaging (a build of a consumer project: no sanitized code runs in it).
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '^(docs|calibration|time|engines|schema|packaging)[.]'
    ;;
  *) echo "usage: tools/bootstrap.sh [run|test]" >&2; exit 2 ;;
esac
