#include "graph_source.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "commands.h"
#include "poet/backward/backward.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/graph/graph_json.h"
#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::cli {

CLI::Validator number_in(double lo, double hi, bool whole) {
  const std::string range = fmt::format("{} from {} to {}", whole ? "a whole number" : "a number", lo, hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = parse_decimal(text);
        if (v && *v >= lo && *v <= hi && (!whole || *v == std::floor(*v))) return {};
        return fmt::format("'{}' is not {}", text_excerpt(text), range);
      },
      range);
}

void GraphSource::add_options(CLI::App& cmd) {
  model = kDefaultModel;
  platform = kDefaultPlatform;
  cmd.add_option("-m,--model", model, "Zoo model (see 'poet models')")->capture_default_str();
  cmd.add_option("-g,--graph", graph_file, "Load a training graph JSON file instead of a zoo model");
  cmd.add_option("-p,--platform", platform, "Built-in platform (see 'poet platforms') or a device JSON file")
      ->capture_default_str();
  cmd.add_option("-b,--batch-size", batch_size, "Batch size for zoo models")
      ->capture_default_str()
      ->check(number_in(1, kMaxBatchSize, true));
  cmd.add_option("--backward", backward,
                 "Backward construction: autodiff (the real backward graph) or chain (the reference's)")
      ->capture_default_str()
      ->check(CLI::IsMember({"autodiff", "chain"}));
}

Graph GraphSource::load() const {
  if (!graph_file.empty()) return load_graph(graph_file);
  const auto mode = backward_mode_from_name(backward);
  POET_CHECK(mode.has_value(), "--backward is checked by CLI11");
  return build_model_training_graph(model, {.batch_size = batch_size}, *mode);
}

void ScheduleSource::add_options(CLI::App& cmd) {
  cmd.add_option("-s,--schedule", schedule_file, "Schedule JSON file to use (docs/FORMATS.md)");
  cmd.add_option("--strategy", strategy, "Strategy that makes the schedule when no --schedule is given")
      ->capture_default_str()
      ->check(CLI::IsMember({"checkpoint_all"}));
}

Schedule ScheduleSource::load(const Graph& g) const {
  if (schedule_file.empty()) return checkpoint_all_schedule(g);
  return load_schedule(schedule_file, g);
}

void BudgetOptions::add_options(CLI::App& cmd) {
  cmd.add_option("--ram-budget", ram_budget,
                 "RAM budget: bytes (3000000, 3MB, 2.5MiB), or 70%: fixed memory + 70% of the unconstrained activation peak");
  cmd.add_flag("--count-gradients", count_gradients,
               "Count gradients and optimizer state as fixed memory (the reference counts parameters only)");
  cmd.add_option("--optimizer", optimizer, "Optimizer whose state --count-gradients counts")
      ->capture_default_str()
      ->check(CLI::IsMember(optimizer_names()));
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "momentum", "adam"};
  return names;
}

Optimizer optimizer_named(const std::string& name) {
  return name == "adam" ? Optimizer::Adam : name == "momentum" ? Optimizer::Momentum : Optimizer::SGD;
}

std::int64_t parse_ram_budget(const std::string& text, const Graph& g, const GraphCosts& costs,
                              const SimulationOptions& counting) {
  if (text.empty() || text.back() != '%') return parse_bytes(text, "--ram-budget");
  const double percent = parse_percent(text, "--ram-budget");
  SimulationOptions unbounded = counting;
  unbounded.ram_budget_bytes.reset();
  const auto r = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), unbounded);
  return r.fixed_bytes +
         static_cast<std::int64_t>(std::floor(static_cast<double>(r.peak_activation_bytes) * percent / 100));
}

SimulationOptions BudgetOptions::resolve(const Graph& g, const GraphCosts& costs) const {
  SimulationOptions options;
  options.count_gradients = count_gradients;
  options.optimizer = optimizer_named(optimizer);
  if (!ram_budget.empty()) options.ram_budget_bytes = parse_ram_budget(ram_budget, g, costs, options);
  return options;
}

}  // namespace poet::cli
