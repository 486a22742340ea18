// The measurements behind `poet profile`: each node's compute time inside training steps, and
// the paging file's transfer times through a real FilePager. Both return raw figures; the
// cost module's measured_profile.h is what they become.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "poet/cost/measured_profile.h"
#include "poet/profile/step_node_timer.h"

namespace poet::profile {

// Median and interquartile range: robust to the odd run a timer interrupt or another
// process stretches, which a mean and standard deviation are not.
struct SampleSummary {
  double median = 0;
  double spread = 0;  // 75th - 25th percentile
};
SampleSummary summarize(std::vector<double> samples);

// Each node's times over timed steps (samples[v][k]: node v in step k, every node once a
// step), summarized for predicting whole steps: each node's median and spread, scaled so
// that the medians sum to the median over the steps of their summed node times. The plain
// medians sum below a typical step, as a VM's hiccups stretch some node in nearly every
// step and each node's median leaves them out: on resnet18_cifar (2-core VM) they summed
// 5.7-7.9% below the median step, and a mean, ruled by the rare long hiccup, 7-17% above
// (docs/BENCHMARKS.md, "Node times that sum to a typical step").
std::vector<SampleSummary> summarize_step_nodes(std::vector<std::vector<double>> samples);

// Where runs of different plans alternate (to meet a drifting machine alike), each plan's
// turn is this many consecutive steps and only the last is timed: training runs one plan's
// steps back to back, and a paging plan's first step after other plans' steps is slower
// than the next (lenet5 b32, Capuchin at 97% and 95%: the first +10-19% over its
// prediction, the second -3..+5%, on the 2-core VM; docs/BENCHMARKS.md).
inline constexpr int kStepsPerTurn = 2;

struct NodeTimingOptions {
  int warmup = 3;    // untimed steps first: caches, page faults, the BLAS's own warm-up
  int repeats = 20;  // timed steps
};

struct NodeTiming {
  SampleSummary seconds;  // per run of the node
};

struct StepTimes {
  std::vector<NodeTiming> nodes;  // in graph order
  SampleSummary update;           // the optimizer's update after the step's instructions
};

// Times every node of the timer's graph inside training steps (StepNodeTimer), and each
// step's update: `warmup` untimed steps, then `repeats` timed ones; the nodes summarized by
// summarize_step_nodes, the update by its median and spread. `progress` is called after
// each timed step with (steps done, steps).
StepTimes time_nodes(StepNodeTimer& timer, const NodeTimingOptions& options,
                     const std::function<void(int, int)>& progress = {});

// Up to `count` tensor sizes of the graph to time the storage at, from the smallest to the
// largest output (distinct, spread over the sorted sizes).
std::vector<std::int64_t> storage_sizes(const Graph& g, std::size_t count = 6);

// Transfer time = latency + bytes / throughput, fitted to (bytes, seconds) by least
// squares with each sample weighted by 1 / its time: the sizes run from a few bytes to
// megabytes, and a plain fit, ruled by the largest times, can put the latency of small
// transfers below 0 (then clamped: a plan's 76 small transfers cost nothing beyond their
// bytes in its prediction), while a fit of relative errors, ruled by the smallest, misses
// the largest by a third. A negative latency is clamped at 0. With one size, or times that
// do not grow with size (seen here: 3.9 ms for every page-out from 128 B to 512 KiB while
// other processes wrote to the disk), the time is all latency and the throughput
// kUnmeasurableBytesPerSecond.
constexpr double kUnmeasurableBytesPerSecond = 1e15;
struct TransferFit {
  double latency_s = 0;
  double bytes_per_s = 0;
};
TransferFit fit_transfers(const std::vector<std::int64_t>& bytes, const std::vector<double>& seconds);

// The compute time a transfer takes from the kernels running beside it (its copy and
// checksum on the I/O thread, its system calls, the memory bus): per transfer and per
// byte, least squares over (bytes, seconds lost per transfer), both clamped at 0.
struct PagingCpuFit {
  double per_transfer_s = 0;
  double per_byte_s = 0;
};
PagingCpuFit fit_paging_cpu(const std::vector<std::int64_t>& bytes, const std::vector<double>& lost_s);

struct StorageTimingOptions {
  std::string directory = ".";  // where the page file goes (its file system is measured)
  int repeats = 20;
  bool direct_io = true;        // ask FilePager for O_DIRECT
  // Run over and over on another thread while the transfers are timed (empty: none). A
  // training step pages while its kernels run, and on a small machine the kernels take the
  // cores, the memory bus and the caches the transfers (copies, checksums, the I/O thread)
  // also need: on this 2-core VM transfers timed alone made paging plans run 11-17% slower
  // than predicted.
  std::function<void()> compute_load;
};

struct StorageTiming {
  MeasuredStorage measured;
  TransferFit pageout, pagein;
  PagingCpuFit cpu;  // zero without a compute load
  // How the page cache was kept out of the page-ins: "O_DIRECT", "posix_fadvise
  // DONTNEED after fdatasync", or that it could not be.
  std::string cache;
};

// Pages out and back in one tensor of each size, `repeats` times, through a FilePager in
// `directory`, waiting for each transfer, while `compute_load` runs. With a load, it also
// times the load's runs, for each size kLoadRunsPerSize with no transfers and then as many
// within the size's transfers (which go on until that many whole runs fell within them),
// kLoadPairsPerSize times, the median over those pairs, and fits what a transfer takes
// from the load (PagingCpuFit). Throws IoError if the file cannot be made.
constexpr int kLoadRunsPerSize = 5;
constexpr int kLoadPairsPerSize = 5;
StorageTiming time_storage(const std::vector<std::int64_t>& sizes, const StorageTimingOptions& options,
                           const std::function<void(const StorageSample&)>& progress = {});

}  // namespace poet::profile
