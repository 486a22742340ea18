#include "poet/train/step_timing.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>

#include "poet/paging/file_pager.h"
#include "poet/profile/profiling.h"
#include "poet/profile/step_node_timer.h"
#include "poet/runtime/synthetic_batch.h"

namespace poet::train {
namespace {

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// One plan's executor, with its own page file when it pages.
struct Run {
  std::unique_ptr<FilePager> pager;
  std::unique_ptr<runtime::Executor> executor;
  std::vector<double> seconds, cpu_shares, stalls;
  std::size_t out_before = 0, in_before = 0;
  double busy_before = 0;
};

Run make_run(const Graph& g, const LoweredPlan& plan, const StepTimingOptions& options) {
  Run run;
  if (plan_pages(plan.plan)) {
    FilePagerOptions po;
    po.path = options.page_dir;
    po.direct_io = options.direct_io;
    run.pager = std::make_unique<FilePager>(po);
  }
  runtime::ExecutorOptions eo;
  eo.seed = options.seed;
  eo.pager = run.pager.get();
  run.executor = std::make_unique<runtime::Executor>(g, plan, eo);
  return run;
}

}  // namespace

SideBySideTiming time_training_steps(const Graph& g, std::span<const LoweredPlan* const> plans,
                                     const StepTimingOptions& options, const std::function<void(int, int)>& progress) {
  // Shown before the warm-up, so that the first round's progress counts from here.
  if (progress) progress(0, options.steps);
  std::vector<Run> runs;
  for (const LoweredPlan* plan : plans) runs.push_back(make_run(g, *plan, options));
  if (runs.empty()) return {};
  std::unique_ptr<profile::StepNodeTimer> nodes;
  std::vector<std::vector<double>> node_samples(g.size());
  std::vector<double> update_samples;
  if (options.time_nodes_alongside) {
    nodes = std::make_unique<profile::StepNodeTimer>(g, options.seed);
    std::vector<std::vector<double>> warmup(g.size());
    for (int i = 0; i < options.warmup_steps; ++i) nodes->time_step(warmup);
  }

  const int per_turn = std::max(1, options.steps_per_turn);
  const runtime::SyntheticBatch batch = runtime::synthetic_batch(g, options.seed);
  const std::vector<float>& inputs = batch.inputs;
  const std::vector<std::int32_t>& labels = batch.labels;

  for (Run& run : runs) {
    for (int i = 0; i < options.warmup_steps; ++i) run.executor->train_step(inputs, labels);
    const Pager& pager = run.executor->pager();
    run.out_before = pager.bytes_paged_out();
    run.in_before = pager.bytes_paged_in();
    run.busy_before = pager.seconds_storage_busy();
  }
  for (int i = 0; i < options.steps; ++i) {
    if (nodes) {  // its turn too: node times from a first step would predict the plans' steps slow
      std::vector<std::vector<double>> untimed(g.size());
      for (int k = 1; k < per_turn; ++k) nodes->time_step(untimed);
      nodes->time_step(node_samples, &update_samples);
    }
    for (Run& run : runs) {
      for (int k = 1; k < per_turn; ++k) run.executor->train_step(inputs, labels);
      const auto began = std::chrono::steady_clock::now();
      const double cpu_began = thread_cpu_seconds();
      run.executor->train_step(inputs, labels);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      run.seconds.push_back(wall);
      // The thread's CPU clock and the wall clock tick apart: a step that never waited can
      // read 1.0004, which a share must not.
      run.cpu_shares.push_back(wall > 0 ? std::min(1.0, (thread_cpu_seconds() - cpu_began) / wall) : 1);
      run.stalls.push_back(run.executor->stall_seconds());
    }
    if (progress) progress(i + 1, options.steps);
  }

  SideBySideTiming out;
  if (nodes) {
    for (const profile::SampleSummary& s : profile::summarize_step_nodes(std::move(node_samples)))
      out.node_seconds.push_back(s.median);
    out.update_seconds = profile::summarize(update_samples).median;
  }
  for (Run& run : runs) {
    const profile::SampleSummary s = profile::summarize(run.seconds);
    const std::size_t steps_run = static_cast<std::size_t>(options.steps) * static_cast<std::size_t>(per_turn);
    const auto per_step = [&](auto total, auto before) {
      return steps_run > 0 ? (total - before) / static_cast<decltype(total)>(steps_run) : 0;
    };
    const Pager& pager = run.executor->pager();
    out.plans.push_back({.median_s = s.median,
                         .spread_s = s.spread,
                         .cpu_share = profile::summarize(run.cpu_shares).median,
                         .stall_s = profile::summarize(run.stalls).median,
                         .steps = options.steps,
                         .bytes_paged_out = per_step(pager.bytes_paged_out(), run.out_before),
                         .bytes_paged_in = per_step(pager.bytes_paged_in(), run.in_before),
                         .storage_busy_s = per_step(pager.seconds_storage_busy(), run.busy_before),
                         .peak_live_bytes = run.executor->peak_live_bytes()});
  }
  return out;
}

}  // namespace poet::train
