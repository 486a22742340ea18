// The optimizer's targets (issues 4 and 13), as Google Benchmarks: wall time of solve() per
// instance, with what it found as counters. After the runs it prints a Markdown table of
// medians for docs/BENCHMARKS.md, with the proven gap, where the bound came from and the
// time of each part of the solve.
//
//   build/bench/poet_bench_solve --benchmark_filter='^(Reference|Zoo|Large)/'  # issue 4's suites
//   build/bench/poet_bench_solve --benchmark_filter=Reference --benchmark_repetitions=3
//   build/bench/poet_bench_solve --benchmark_filter=Issue13/      # issue 13's instances
//   build/bench/poet_bench_solve --benchmark_filter='Grid/resnet18/m4/'   # a slice of the grid
// The grid (every zoo model x 4 platforms x 5 budgets x 2 deadlines, 60 s each) takes hours.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/solve/solve.h"

namespace poet {
namespace {

struct Instance {
  std::string name, model, platform;
  BackwardMode backward = BackwardMode::Autodiff;
  Accounting accounting = Accounting::Strict;
  std::int64_t budget_bytes = 0;  // or, when 0, `budget_percent` of the activation peak
  double budget_percent = 0;
  double deadline_multiple = 0;  // 0: none
  double time_limit_s = 60;
  std::string reference;  // the reference's result, in words
};

struct Outcome {
  std::vector<double> seconds;
  SolveResult last;
};
std::map<std::string, Outcome> outcomes;  // by instance name, in the order run
std::vector<std::string> order;

void run(benchmark::State& state, const Instance& in) {
  const Graph g = build_model_training_graph(in.model, {}, in.backward);
  const GraphCosts costs = estimate_costs(g, builtin_platform(in.platform));
  SolveOptions o;
  o.accounting = in.accounting;
  o.time_limit_s = in.time_limit_s;
  o.progress = false;
  o.ram_budget_bytes = in.budget_bytes;
  if (in.budget_bytes == 0) o.ram_budget_bytes = budget_scale(g, costs, o.counting()).bytes_at(in.budget_percent);
  if (in.deadline_multiple > 0) o.deadline_s = in.deadline_multiple * costs.total_compute_time_s;
  SolveResult r;
  for (auto _ : state) r = solve(g, costs, o);
  if (!outcomes.count(in.name)) order.push_back(in.name);
  outcomes[in.name].seconds.push_back(r.solve_time_s);
  state.counters["energy_J"] = r.simulation ? r.simulation->total_energy_j() : 0;
  state.counters["gap_pct"] = r.simulation ? 100 * r.gap : -1;
  state.counters["variables"] = r.variables;
  state.counters["bound_source"] = static_cast<double>(r.bound_source);
  outcomes[in.name].last = std::move(r);
}

std::vector<Instance> reference_instances() {
  // The reference's own solves, measured on this machine class (tests/data/reference).
  std::vector<Instance> out;
  std::ifstream file(POET_REFERENCE_DIR "/poet-solves.jsonl");
  for (std::string line; std::getline(file, line);) {
    const auto j = nlohmann::json::parse(line);
    Instance in;
    in.model = j["model"];
    in.platform = j["platform"];
    in.backward = BackwardMode::Chain;
    in.accounting = Accounting::Reference;
    in.budget_bytes = static_cast<std::int64_t>(j["ram_budget"].get<double>());
    in.deadline_multiple = j["runtime_budget"].get<double>();
    in.time_limit_s = 60;
    in.name = "Reference/" + j["run_id"].get<std::string>();
    const double seconds = j["poet_solve_time_s"].get<double>();
    const std::string status = j["status"];
    in.reference = j["objective"].is_number()
                       ? fmt::format("{} {:.7g} J, {:.1f} s", status, j["objective"].get<double>(), seconds)
                   : j["cbc_lower_bound"].is_number()
                       ? fmt::format("{} (LP bound {} J), {:.0f} s", status, j["cbc_lower_bound"].get<double>(), seconds)
                       : fmt::format("{}, {:.1f} s", status, seconds);
    out.push_back(in);
  }
  return out;
}

std::vector<Instance> zoo_instances() {
  std::vector<Instance> out;
  for (const auto& m : model_catalog())
    for (const char* platform : {"m4", "a72"})
      for (const double percent : {70.0, 50.0}) {
        Instance in;
        in.model = m.name;
        in.platform = platform;
        in.budget_percent = percent;
        in.name = fmt::format("Zoo/{}/{}/{:.0f}%", m.name, platform, percent);
        out.push_back(in);
      }
  return out;
}

// Issue 13: the instances it measured, then the grid its targets name.
std::vector<Instance> issue13_instances() {
  std::vector<Instance> out;
  const auto add = [&](const char* model, const char* platform, double percent) {
    Instance in;
    in.model = model;
    in.platform = platform;
    in.budget_percent = percent;
    in.name = fmt::format("Issue13/{}/{}/{:.0f}%", model, platform, percent);
    out.push_back(in);
  };
  add("resnet18", "m4", 50);
  add("resnet18", "a72", 50);
  add("transformer", "m4", 70);
  add("vgg16", "m4", 70);
  add("vgg16_cifar", "m4", 70);
  add("resnet18_cifar", "m4", 50);
  add("mobilenet_v2", "a72", 50);
  Instance chain;
  chain.model = "resnet18_cifar";
  chain.platform = "m4";
  chain.backward = BackwardMode::Chain;
  chain.accounting = Accounting::Reference;
  chain.budget_bytes = 737719;
  chain.deadline_multiple = 1.5;
  chain.name = "Issue13/resnet18_cifar/m4/737719B/1.5x/reference-chain";
  out.push_back(chain);
  return out;
}

std::vector<Instance> grid_instances() {
  std::vector<Instance> out;
  for (const auto& m : model_catalog())
    for (const char* platform : {"m0", "m4", "a72", "jetsontx2"})
      for (const double percent : {90.0, 70.0, 50.0, 40.0, 30.0})
        for (const double deadline : {0.0, 1.2}) {
          Instance in;
          in.model = m.name;
          in.platform = platform;
          in.budget_percent = percent;
          in.deadline_multiple = deadline;
          in.name = fmt::format("Grid/{}/{}/{:.0f}%/{}", m.name, platform, percent,
                                deadline > 0 ? fmt::format("{}x", deadline) : std::string("no-deadline"));
          out.push_back(in);
        }
  return out;
}

std::vector<Instance> large_instances() {
  std::vector<Instance> out;
  for (const char* model : {"resnet50", "bert"}) {
    Instance in;
    in.model = model;
    in.platform = "a72";
    in.budget_percent = 50;
    in.time_limit_s = 300;
    in.name = fmt::format("Large/{}/a72/50%", model);
    out.push_back(in);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void print_table(const std::map<std::string, std::string>& references) {
  fmt::print("\n| instance | status | energy | bound (source) | gap | variables | median solve time (runs) | "
             "starts / search / bound / model / CBC | reference |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  int certified = 0, solved = 0;
  for (const auto& name : order) {
    const Outcome& o = outcomes.at(name);
    const SolveResult& r = o.last;
    const auto ref = references.find(name);
    fmt::print("| {} | {} | {} | {} | {} | {} | {:.2f} s ({}) | {:.1f} / {:.1f} / {:.1f} / {:.1f} / {:.1f} s | {} |\n",
               name, solve_status_name(r.status),
               r.simulation ? fmt::format("{:.7g} J", r.simulation->total_energy_j()) : "-",
               r.simulation ? fmt::format("{:.7g} J ({})", r.best_bound, bound_source_name(r.bound_source)) : "-",
               r.simulation ? fmt::format("{:.3f}%", 100 * r.gap) : "-", r.variables, median(o.seconds), o.seconds.size(),
               r.starts_time_s, r.search_time_s, r.bound_time_s, r.model_time_s, r.cbc_time_s,
               ref == references.end() ? "" : ref->second);
    solved += r.simulation ? 1 : 0;
    certified += r.simulation && r.gap <= 0.01 ? 1 : 0;
  }
  fmt::print("\n{} instances, {} with a schedule, {} of them with a proven gap <= 1%\n", order.size(), solved, certified);
}

}  // namespace
}  // namespace poet

int main(int argc, char** argv) {
  using namespace poet;
  std::map<std::string, std::string> references;
  for (auto group : {reference_instances(), zoo_instances(), large_instances(), issue13_instances(), grid_instances()})
    for (const Instance& in : group) {
      benchmark::RegisterBenchmark(in.name.c_str(), [in](benchmark::State& s) { run(s, in); })
          ->Iterations(1)
          ->UseRealTime()
          ->Unit(benchmark::kSecond);
      if (!in.reference.empty()) references[in.name] = in.reference;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_table(references);
  return 0;
}
