#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) on its committed corpus (fuzz/corpus/<target>/) for
# POET_FUZZ_SECONDS seconds each (default 20), as many at a time as there are cores, and
# fails if any target finds anything: a crash, an exception other than InputError, a
# sanitizer report, a leak, an input that takes over 10 s, or over 2 GB of memory. The
# corpus is only read; new inputs go to a temporary folder, findings to fuzz-findings/.
#
# Usage: scripts/fuzz.sh [build-dir] [target...]   (default: build-asan, every target)
# The build dir is the clang sanitizer tree scripts/test.sh builds, i.e.
#   scripts/build.sh build-asan -DCMAKE_CXX_COMPILER=clang++ -DPOET_SANITIZE=ON -DPOET_FUZZ=ON ...
# To replay one input: build-asan/fuzz/fuzz_<target> FILE
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
shift || true
seconds=${POET_FUZZ_SECONDS:-20}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for corpus in fuzz/corpus/*/; do targets+=("$(basename "$corpus")"); done
fi
for t in "${targets[@]}"; do
  if [ ! -x "$dir/fuzz/fuzz_$t" ]; then
    echo "fuzz: no $dir/fuzz/fuzz_$t; build the tree with -DPOET_FUZZ=ON (see scripts/test.sh)" >&2
    exit 2
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=$PWD/fuzz-findings
mkdir -p "$findings"
cores=$(scripts/cores.sh)
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=1
# The path in quotes: the sanitizers split their options at spaces (a clone in "~/My projects").
export LSAN_OPTIONS="suppressions='$PWD/tests/lsan.supp'"

run() {
  local t=$1
  mkdir -p "$work/$t"
  TMPDIR=$work "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/$t-" "$work/$t" "fuzz/corpus/$t" >"$work/$t.log" 2>&1
}

failed=()
pids=()
names=()
finish_one() {
  # Waits for the oldest running target and records its verdict.
  local status=0
  wait "${pids[0]}" || status=$?
  local t=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  if [ "$status" -eq 0 ]; then
    echo "fuzz: $t: ${runs:-?} inputs in ${seconds} s, no finding"
  else
    echo "fuzz: $t: FINDING (exit $status); its log:"
    grep -v '^#[0-9]' "$work/$t.log" | tail -60
    failed+=("$t")
  fi
}
for t in "${targets[@]}"; do
  [ ${#pids[@]} -ge "$cores" ] && finish_one
  run "$t" &
  pids+=($!)
  names+=("$t")
done
while [ ${#pids[@]} -gt 0 ]; do finish_one; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}; the inputs are in $findings/" >&2
  exit 1
fi
rmdir "$findings" 2>/dev/null || true
