// A device holds its whole static arena and the fixed memory for the whole run, but a
// schedule is made for a budget of live bytes (the simulator's peak). The arena can be
// larger: by fragmentation the memory planner's search leaves, by alignment, and by the
// lifetimes in plan order (transfers' bytes held until they end), longer than in the
// simulator's time order. Measured: mobilenet_v2 at batch 1, Capuchin at 30%, an arena at
// its live peak and 359,164 B over the budget with the parameters. The fix is to make the
// schedule again for a budget lower by what the arena is over, until the arena fits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "poet/lower/lower.h"

namespace poet {

// The schedule a method makes for a RAM budget in bytes, or none if it finds none.
using ScheduleForBudget = std::function<std::optional<Schedule>(std::int64_t ram_budget_bytes)>;

struct ArenaFit {
  Schedule schedule;  // the kept one
  LoweredPlan lowered;
  std::int64_t planned_budget_bytes = 0;  // the budget the kept schedule was made for
  int replans = 0;                        // schedules made again at lower budgets
  bool fits = true;                       // the kept plan's arena + fixed memory is within the budget
  double first_energy_j = 0;              // after a replan: the predicted energy of the first plan
};

// How many times lower_to_fit_arena makes a schedule again. The first lower budget is
// below by the overrun; each next one steps by the overrun times how many budget bytes the
// last step took per arena byte it shrank (at least 1, at most 4), or, when the arena did
// not shrink, doubles the cut.
inline constexpr int kMaxArenaReplans = 4;

// Lowers `schedule`, made for options.simulation.ram_budget_bytes. While the arena with the
// fixed memory is over that budget, asks `replan` for a schedule at a lower budget and
// lowers it under that lower budget; keeps the first plan that fits. If none fits (or
// `replan` finds none, or its plan's lowering fails), keeps the first plan, `fits` false.
// Without a budget, or with no `replan`, this is lower(). With `progress`, says on stderr
// each time it plans again, and why.
ArenaFit lower_to_fit_arena(const Graph& g, const GraphCosts& costs, const Schedule& schedule,
                            const LowerOptions& options, const ScheduleForBudget& replan, bool progress = false);

// After a replan that fits: the budget the kept schedule was made for and what that cost in
// predicted energy, in a sentence; else empty. `budget_bytes` is the budget asked for.
std::string replan_summary(const ArenaFit& fit, std::int64_t budget_bytes);

}  // namespace poet
