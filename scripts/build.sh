#!/usr/bin/env bash
# Configures and builds poet. Usage: scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
# Every core, whatever OMP_NUM_THREADS says (GNU nproc answers it; benchmarks set it to 1).
cmake --build "$dir" -j "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
