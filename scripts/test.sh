#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: once normally (gcc), and once under
# AddressSanitizer + UBSan (clang), whose tree also holds the fuzz targets, which then run
# for POET_FUZZ_SECONDS each (scripts/fuzz.sh). This is the command CI runs.
set -euo pipefail
# Under `bash -x` (CI), each step is logged with its start time. Set here: bash does not
# take PS4 from the environment when run as root.
PS4='+ [$(date -u +%T)] '
cd "$(dirname "$0")/.."
cores=$(scripts/cores.sh)
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$cores"
if [ "${POET_SKIP_SANITIZERS:-0}" != 1 ]; then
  # POET_TEST_REDUCED: the heaviest randomized tests draw fewer cases here (tests/test_scale.h).
  # One clang tree serves the sanitizer tests and the fuzzers (libFuzzer is clang's). The
  # compiler is named on the command line, so that a build-asan left by gcc is reconfigured.
  # -O1, as the sanitizers' own documentation advises: at -O0 the tests ran several times
  # slower, and CI longer than its 30 minutes.
  scripts/build.sh build-asan -DCMAKE_CXX_COMPILER=clang++ -DPOET_SANITIZE=ON -DPOET_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DPOET_BUILD_BENCH=OFF
  # The path in quotes: the sanitizers split their options at spaces (a clone in "~/My projects").
  POET_TEST_REDUCED=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS="suppressions='$PWD/tests/lsan.supp'" \
    ctest --test-dir build-asan --output-on-failure -j "$cores"
  scripts/fuzz.sh build-asan
fi
