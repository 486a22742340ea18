// The static memory planner on the plans of the zoo: the arena against the live peak (its
// lower bound) and the time to plan it, with the order search (plan_memory_greedy's
// default) and without it (search_moves = 0: the ten greedy orders alone), side by side on
// the same buffers in one run. Prints a Markdown table for docs/BENCHMARKS.md.
//
//   build/bench/poet_bench_memory_plan            # the default instances
//   build/bench/poet_bench_memory_plan mobilenet_v2 8 poet 30   # one: model batch strategy percent
//
// Solving strategies run with a 3 s limit, so their schedules (and so the buffers) may
// differ from run to run; each row compares the two planners on the same buffers.
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/lower/lower.h"
#include "poet/models/zoo.h"
#include "poet/strategy/strategy.h"

namespace poet {
namespace {

struct Instance {
  std::string model;
  int batch;
  std::string strategy;
  double percent;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run(const Instance& in) {
  const Graph g = build_model_training_graph(in.model, {.batch_size = in.batch}, BackwardMode::Autodiff);
  const GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
  StrategyRequest request{.time_limit_s = 3};
  request.budget.ram_budget_bytes = budget_scale(g, costs, request.budget).bytes_at(in.percent);
  const StrategyResult r = schedule_for_budget(in.strategy, g, costs, request);
  const std::string name = fmt::format("{} b{} {} {}%", in.model, in.batch, in.strategy, in.percent);
  if (!r.found()) {
    fmt::print("| {} | no schedule | | | | | |\n", name);
    return;
  }
  const LoweredPlan lowered = lower(g, costs, *r.schedule, {.simulation = request.budget});
  const std::int64_t room = *request.budget.ram_budget_bytes - lowered.simulation.fixed_bytes;
  auto t = std::chrono::steady_clock::now();
  const MemoryPlan greedy = plan_memory_greedy(lowered.buffers, 16, 0);
  const double greedy_s = seconds_since(t);
  t = std::chrono::steady_clock::now();
  const MemoryPlan searched = plan_memory_greedy(lowered.buffers, 16);
  const double searched_s = seconds_since(t);
  const auto over = [&](const MemoryPlan& p) {
    return p.arena_bytes > room ? fmt::format("{} B over", p.arena_bytes - room) : std::string("fits");
  };
  fmt::print("| {} | {} | {} | +{:.2f}% ({}) | +{:.2f}% ({}) | {:.1f} ms | {:.1f} ms |\n", name, lowered.buffers.size(),
             greedy.peak_live_bytes, 100 * greedy.fragmentation(), over(greedy), 100 * searched.fragmentation(),
             over(searched), 1e3 * greedy_s, 1e3 * searched_s);
}

}  // namespace
}  // namespace poet

int main(int argc, char** argv) {
  using poet::Instance;
  std::vector<Instance> instances = {
      {"lenet5", 32, "checkpoint_all", 100},   {"resnet18_cifar", 2, "poet", 20},
      {"resnet18_cifar", 32, "poet", 20},      {"resnet18_cifar", 8, "capuchin", 50},
      {"vgg16_cifar", 1, "revolve", 70},       {"mobilenet_v2", 1, "capuchin", 30},
      {"mobilenet_v2", 2, "poet", 30},         {"mobilenet_v2", 8, "poet", 30},
      {"mobilenet_v2", 2, "capuchin", 50},     {"resnet50", 1, "checkpoint_all", 100},
      {"resnet50", 1, "dtr", 50},              {"bert", 1, "checkpoint_all", 100},
      {"bert", 1, "chen_greedy", 50},
  };
  if (argc == 5) instances = {{argv[1], std::stoi(argv[2]), argv[3], std::stod(argv[4])}};
  fmt::print("| plan | buffers | live peak (B) | greedy orders: arena above the peak | with the order search | "
             "greedy time | search time |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Instance& in : instances) {
    poet::run(in);
    std::fflush(stdout);
  }
}
