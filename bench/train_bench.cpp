// Training steps against the simulator's prediction (issues 6 and 7): for each model,
// profile this machine for its training graph, plan 3 strategies at 3 budgets (and
// checkpoint-all, the unconstrained reference) with that profile, time real steps of
// every plan side by side, and compare each median step with the simulator's makespan.
// After the runs it prints a Markdown table for docs/BENCHMARKS.md.
//
//   build/bench/poet_bench_train                                   # lenet5 and resnet18_cifar
//   build/bench/poet_bench_train --benchmark_filter=lenet5
//   POET_BENCH_PAGE_DIR=/mnt/sd build/bench/poet_bench_train        # page to another file system
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>

#include "poet/backward/backward.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/plan/plan.h"
#include "poet/runtime/measure_device.h"
#include "poet/train/prediction_report.h"

namespace poet {
namespace {

struct Case {
  std::string model;
  int batch_size;
  std::vector<double> budget_percents;  // of checkpoint-all's activation peak
  std::vector<std::string> strategies;
};

std::map<std::string, std::vector<train::PredictionRow>> results;  // by case, in the order run

std::string page_dir() {
  const char* dir = std::getenv("POET_BENCH_PAGE_DIR");
  return dir ? dir : ".";
}

void run(benchmark::State& state, const Case& c) {
  const Graph g = build_model_training_graph(c.model, {.batch_size = c.batch_size}, BackwardMode::Autodiff);
  runtime::MeasureOptions measure;
  measure.name = "bench-" + c.model;
  measure.storage.directory = page_dir();
  measure.use_rapl = false;  // step time is compared, not energy
  measure.cpu_power_w = 10;
  measure.storage_power_w = 2;

  train::PredictionRequest request;
  request.strategies = c.strategies;
  request.timing.page_dir = page_dir();
  std::vector<train::PredictionRow> rows;
  for (auto _ : state) {
    const GraphCosts costs = costs_for(g, runtime::measure_device(g, measure));
    const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), {});
    request.budgets.clear();
    for (double percent : c.budget_percents)
      request.budgets.push_back(
          {fmt::format("{:g}%", percent),
           all.fixed_bytes + static_cast<std::int64_t>(percent / 100 * static_cast<double>(all.peak_activation_bytes))});
    rows = train::predict_and_measure(g, costs, request);
  }
  state.counters["median_abs_error_pct"] = 100 * train::median_absolute_error(rows);
  state.counters["plans_run"] = static_cast<double>(std::ranges::count_if(rows, &train::PredictionRow::ran));
  results[c.model] = std::move(rows);
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
  for (const auto& [model, rows] : poet::results)
    fmt::print("\n{}\n{}{}\n", model, poet::train::prediction_table_markdown(rows),
               poet::train::prediction_summary(rows));
  benchmark::Shutdown();
  return 0;
}
