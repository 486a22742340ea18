#include "poet/lower/fit_arena.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/util/units.h"

namespace poet {
namespace {

std::int64_t overrun(const LoweredPlan& p, std::int64_t budget) {
  return p.memory.arena_bytes + p.simulation.fixed_bytes - budget;
}

}  // namespace

ArenaFit lower_to_fit_arena(const Graph& g, const GraphCosts& costs, const Schedule& schedule,
                            const LowerOptions& options, const ScheduleForBudget& replan, bool progress) {
  ArenaFit out{schedule, lower(g, costs, schedule, options)};
  if (!options.simulation.ram_budget_bytes) return out;
  const std::int64_t budget = *options.simulation.ram_budget_bytes;
  out.planned_budget_bytes = budget;
  std::int64_t over = overrun(out.lowered, budget);
  out.fits = over <= 0;
  if (out.fits || !replan) return out;

  std::int64_t at = budget, last_over = over, step = over;
  for (int attempt = 1; attempt <= kMaxArenaReplans; ++attempt) {
    at -= step;
    if (at <= out.lowered.simulation.fixed_bytes) return out;
    if (progress)
      fmt::print(stderr,
                 "poet: note: the arena is {} over the RAM budget with the fixed memory; planning again at {} ({} of "
                 "{})\n",
                 format_bytes_exact(over), format_bytes_exact(at), attempt, kMaxArenaReplans);
    const std::optional<Schedule> again = replan(at);
    out.replans = attempt;
    const auto keep_the_first = [&] {
      if (progress)
        fmt::print(stderr, "no schedule at {}; keeping the plan for the RAM budget\n", format_bytes_exact(at));
      return out;
    };
    if (!again) return keep_the_first();
    LowerOptions lower_at = options;
    lower_at.simulation.ram_budget_bytes = at;
    LoweredPlan lowered;
    try {
      lowered = lower(g, costs, *again, lower_at);
    } catch (const InvalidPlan&) {  // not a schedule for that budget after all
      return keep_the_first();
    }
    over = overrun(lowered, budget);
    if (over <= 0) return {*again, std::move(lowered), at, attempt, true, out.lowered.simulation.total_energy_j()};
    // Step by what the last step bought: budget bytes per arena byte shrunk. A schedule that
    // did not change (a method's discrete choices) needs a larger step: double the cut.
    const std::int64_t shrunk = last_over - over;
    const double budget_per_arena_byte = shrunk > 0 ? static_cast<double>(step) / static_cast<double>(shrunk) : 0;
    step = shrunk > 0
               ? static_cast<std::int64_t>(static_cast<double>(over) * std::clamp(budget_per_arena_byte, 1.0, 4.0))
               : std::max(over, budget - at);
    last_over = over;
  }
  return out;
}

std::string replan_summary(const ArenaFit& fit, std::int64_t budget_bytes) {
  if (!fit.fits || fit.replans == 0) return "";
  const double energy = fit.lowered.simulation.total_energy_j();
  return fmt::format(
      "the schedule was made again at a budget of {} ({} under the RAM budget) so that the arena and the fixed memory "
      "fit: predicted energy {:+.2f}% ({} instead of {})",
      format_bytes_exact(fit.planned_budget_bytes), format_bytes_exact(budget_bytes - fit.planned_budget_bytes),
      100 * (energy / fit.first_energy_j - 1), format_joules(energy), format_joules(fit.first_energy_j));
}

}  // namespace poet
