// The kernels' threads are OpenMP's, set by OMP_NUM_THREADS. libgomp ignores a value it
// cannot read (with a warning, then runs on every core) and, asked for more threads than
// the system will start, stops the process mid-run with its own message, or crashes
// (100,000 on a 2-core machine: SIGSEGV in its first parallel region). So poet reads the
// setting itself before any work.
#pragma once

namespace poet::kernels {

// More threads than this per core only wait on each other, and far more cannot be started.
inline constexpr int kMaxThreadsPerCore = 16;

// Throws InputError naming OMP_NUM_THREADS and the fix if it is set and is not a whole
// number from 1 (OpenMP's comma list of nested levels: each), or if it asks for more than
// kMaxThreadsPerCore threads per core of this machine.
void check_thread_setting();

}  // namespace poet::kernels
