#!/usr/bin/env bash
# Prints how many cores builds, tests and fuzzers may use: every one this process may run
# on, whatever OMP_NUM_THREADS says (GNU nproc answers it, and the benchmarks set it to 1).
exec env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc
