#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: once normally, and once under
# AddressSanitizer + UBSan. This is the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${POET_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/build.sh build-asan -DPOET_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
fi
