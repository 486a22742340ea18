// Training steps against the simulator's prediction (issues 6 and 7): for each model,
// profile this machine for its training graph, plan 3 strategies at 3 budgets (and
// checkpoint-all, the unconstrained reference) with that profile, time real steps of
// every plan side by side, and compare each median step with the simulator's makespan.
// A shared machine's speed drifts by tens of percent within seconds (lenet5's profile
// and steps, each taken a second apart, were seen 30% apart either way), so the node
// times the prediction is made from are taken alongside the steps (one checkpoint-all step,
// timed node by node, before each round, StepTimingOptions::time_nodes_alongside), and the
// whole is repeated in rounds, each with a fresh profile to plan with; every figure is
// the median over the rounds. After the runs it prints a Markdown table for
// docs/BENCHMARKS.md.
//
//   build/bench/poet_bench_train                                   # lenet5 and resnet18_cifar
//   build/bench/poet_bench_train --benchmark_filter=lenet5
//   POET_BENCH_ROUNDS=5 build/bench/poet_bench_train               # rounds (default 3)
//   POET_BENCH_PAGE_DIR=/mnt/sd build/bench/poet_bench_train        # page to another file system
//   POET_BENCH_STEPS_PER_TURN=1 build/bench/poet_bench_train       # StepTimingOptions::steps_per_turn
// It also writes the scatter plot of each model's medians to prediction-<model>.svg in the
// working folder.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/profile/measure_device.h"
#include "poet/train/prediction_report.h"
#include "poet/util/atomic_file.h"

namespace poet {
namespace {

struct Case {
  std::string model;
  int batch_size;
  std::vector<double> budget_percents;  // of checkpoint-all's activation peak
  std::vector<std::string> strategies;
};

struct Result {
  std::vector<train::PredictionRow> rows;  // medians over the rounds
  std::vector<double> paired_errors;       // per row that ran: the median of its rounds' errors
};
std::map<std::string, Result> results;  // by case

std::string page_dir() {
  const char* dir = std::getenv("POET_BENCH_PAGE_DIR");
  return dir ? dir : ".";
}

int rounds() {
  const char* n = std::getenv("POET_BENCH_ROUNDS");
  return n ? std::max(1, std::atoi(n)) : 3;
}

int steps_per_turn() {
  const char* n = std::getenv("POET_BENCH_STEPS_PER_TURN");
  return n ? std::max(1, std::atoi(n)) : profile::kStepsPerTurn;
}

// Row by row, the median over the rounds of each time, and the median of the rounds'
// errors as the error (a round's own prediction and measurement are side by side).
Result median_over_rounds(const std::vector<std::vector<train::PredictionRow>>& runs) {
  Result result{runs.front(), {}};
  std::vector<train::PredictionRow>& out = result.rows;
  for (std::size_t k = 0; k < out.size(); ++k) {
    train::PredictionRow& row = out[k];
    if (!row.ran) continue;
    using R = train::PredictionRow;
    for (double R::*field : {&R::predicted_s, &R::measured_s, &R::spread_s, &R::cpu_share, &R::predicted_stall_s,
                             &R::measured_stall_s, &R::predicted_storage_s, &R::measured_storage_s}) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run[k].*field);
      row.*field = profile::summarize(values).median;
    }
    std::vector<double> error;
    for (const auto& run : runs) error.push_back(run[k].relative_error());
    row.steps *= static_cast<int>(runs.size());
    result.paired_errors.push_back(profile::summarize(error).median);
    row.note = fmt::format("median of {} rounds; error per round {:+.1f}% (median) from {:+.1f}% to {:+.1f}%",
                           runs.size(), 100 * profile::summarize(error).median, 100 * *std::ranges::min_element(error),
                           100 * *std::ranges::max_element(error));
  }
  return result;
}

void run(benchmark::State& state, const Case& c) {
  const Graph g = build_model_training_graph(c.model, {.batch_size = c.batch_size}, BackwardMode::Autodiff);
  profile::MeasureOptions measure;
  measure.name = "bench-" + c.model;
  measure.storage.directory = page_dir();
  measure.use_rapl = false;  // step time is compared, not energy
  measure.cpu_power_w = 10;
  measure.storage_power_w = 2;

  train::PredictionRequest request;
  request.strategies = c.strategies;
  request.timing.page_dir = page_dir();
  request.timing.time_nodes_alongside = true;
  request.timing.steps_per_turn = steps_per_turn();
  Result result;
  for (auto _ : state) {
    std::vector<std::vector<train::PredictionRow>> runs;
    for (int round = 0; round < rounds(); ++round) {
      const DeviceProfile device = profile::measure_device(g, measure);
      // What the prediction charges for paging, round by round (docs/PROFILING.md).
      fmt::print(stderr, "{} round {}: page-out {:.1f} us + {:.0f} MB/s, page-in {:.1f} us + {:.0f} MB/s; a transfer "
                         "takes {:.1f} us + {:.1f} us/MiB of compute, x{:.2f} in a step ({})\n",
                 c.model, round + 1, 1e6 * device.pageout_latency_s, 1e-6 * device.pageout_bytes_per_s,
                 1e6 * device.pagein_latency_s, 1e-6 * device.pagein_bytes_per_s, 1e6 * device.paging_cpu_per_transfer_s,
                 1e6 * device.paging_cpu_per_byte_s * (1 << 20), device.paging_charge_scale, profile::blas_threads());
      const GraphCosts costs = costs_for(g, device);
      const BudgetScale scale = budget_scale(g, costs, {});
      request.budgets.clear();
      for (double percent : c.budget_percents) request.budgets.push_back({fmt::format("{:g}%", percent), scale.bytes_at(percent)});
      runs.push_back(train::predict_and_measure(g, costs, request));
    }
    result = median_over_rounds(runs);
  }
  std::vector<double> absolute;
  for (double e : result.paired_errors) absolute.push_back(std::fabs(e));
  state.counters["median_abs_error_pct"] = absolute.empty() ? 0 : 100 * profile::summarize(absolute).median;
  state.counters["plans_run"] = static_cast<double>(absolute.size());
  results[c.model] = std::move(result);
}

}  // namespace
}  // namespace poet

int main(int argc, char** argv) {
  using poet::Case;
  // lenet5 cannot go below 94.8% (a ReLU backward holds three 588 KiB tensors at batch 32);
  // resnet18_cifar has room down to half its peak.
  static const std::vector<Case> cases = {
      {"lenet5", 32, {100, 97, 95}, {"checkpoint_all", "poet", "dtr", "capuchin"}},
      {"resnet18_cifar", 8, {100, 70, 50}, {"checkpoint_all", "poet", "dtr", "capuchin"}},
  };
  for (const Case& c : cases)
    benchmark::RegisterBenchmark(c.model.c_str(), [&c](benchmark::State& s) { poet::run(s, c); })
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  for (const auto& [model, result] : poet::results) {
    std::vector<double> absolute;
    for (double e : result.paired_errors) absolute.push_back(std::fabs(e));
    poet::write_file_atomically(
        fmt::format("prediction-{}.svg", model),
        poet::train::prediction_scatter_svg(
            result.rows, fmt::format("{}: step time, predicted vs measured (medians of {} rounds)", model,
                                     poet::rounds())));
    fmt::print("\n{}\n{}{}\nmedian over the plans of |each plan's median paired error|: {:.1f}%\n", model,
               poet::train::prediction_table_markdown(result.rows), poet::train::prediction_summary(result.rows),
               absolute.empty() ? 0.0 : 100 * poet::profile::summarize(absolute).median);
  }
  benchmark::Shutdown();
  return 0;
}
