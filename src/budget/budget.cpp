#include "poet/budget/budget.h"

#include <fmt/format.h>

#include <cmath>

#include "poet/schedule/checkpoint_all.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

std::int64_t BudgetScale::bytes_at(double percent) const {
  return fixed_bytes + static_cast<std::int64_t>(std::floor(static_cast<double>(activation_peak_bytes) * percent / 100));
}

double BudgetScale::percent_of(std::int64_t bytes) const {
  return activation_peak_bytes == 0 ? 0
                                    : 100.0 * static_cast<double>(bytes - fixed_bytes) / static_cast<double>(activation_peak_bytes);
}

BudgetScale budget_scale(const Graph& g, const GraphCosts& costs, const SimulationOptions& counting) {
  SimulationOptions unbounded = counting;
  unbounded.ram_budget_bytes.reset();
  const SimulationResult r = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), unbounded);
  return {r.fixed_bytes, r.peak_activation_bytes};
}

std::int64_t parse_ram_budget(std::string_view text, const BudgetScale& scale, std::string_view what) {
  // An unset shell variable: neither no budget nor a size.
  if (trim_spaces(text).empty())
    throw InputError(fmt::format("{} is empty; give bytes (3000000, 3MB) or a percent (70%)", what));
  if (!text.empty() && text.back() == '%') return scale.bytes_at(parse_percent(text, what));
  const std::int64_t bytes = parse_bytes(text, what);
  // A bare 0.5 is more likely a share meant as 50% than half a byte.
  const std::optional<double> bare = parse_decimal(text);
  if (bare && *bare != std::floor(*bare))
    throw InputError(fmt::format("{}: '{}' is not a whole number of bytes; for a share of the activation peak write a "
                                 "percent, e.g. {:g}%",
                                 what, text_excerpt(text), *bare < 1 ? *bare * 100 : 70.0));
  if (bytes == 0)
    throw InputError(fmt::format("{}: a budget of 0 B holds nothing; give bytes (3MB) or a percent (70%)", what));
  return bytes;
}

BudgetFloor smallest_workable_budget(const Graph& g, const SimulationOptions& counting) {
  if (g.size() == 0) return {counted_fixed_bytes(g, counting), 0};
  const Graph::Footprint largest = g.largest_footprint();
  return {largest.bytes + counted_fixed_bytes(g, counting), largest.node};
}

}  // namespace poet
