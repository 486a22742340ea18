#include "poet/profile/paging_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "poet/baselines/capuchin.h"
#include "poet/budget/budget.h"
#include "poet/cost/cost_model.h"
#include "poet/lower/lower.h"
#include "poet/paging/file_pager.h"
#include "poet/runtime/executor.h"
#include "poet/runtime/synthetic_batch.h"
#include "poet/schedule/checkpoint_all.h"

namespace poet::profile {

double charge_scale(double measured_extra_s, double predicted_extra_s, double charged_s) {
  if (charged_s <= 0) return 1;
  return std::clamp((measured_extra_s - (predicted_extra_s - charged_s)) / charged_s, 0.0, kMaxPagingChargeScale);
}

std::optional<PagingCalibration> calibrate_paging_charge(const Graph& g, const DeviceProfile& device,
                                                         const NodeTimingOptions& options,
                                                         const StorageTimingOptions& storage,
                                                         const std::function<void(int, int)>& progress) {
  DeviceProfile uncalibrated = device;  // the charge as the storage phase measured it
  uncalibrated.paging_charge_scale = 1;
  const GraphCosts costs = costs_for(g, uncalibrated);
  const BudgetScale scale = budget_scale(g, costs, {});
  std::optional<LoweredPlan> paging;
  PagingCalibration out;
  for (const double percent : kCalibrationBudgetsPercent) {
    const SimulationOptions budget{.ram_budget_bytes = scale.bytes_at(percent)};
    const BaselineResult r = capuchin_for_budget(g, costs, budget);
    if (!r.found() || r.simulation->pageouts == 0) continue;
    paging = lower(g, costs, *r.schedule, {.simulation = budget});
    out.plan = fmt::format("Capuchin at {:g}% of the activation peak", percent);
    break;
  }
  if (!paging) return std::nullopt;
  const LoweredPlan all = lower(g, costs, checkpoint_all_schedule(g));
  out.transfers = static_cast<int>(paging->simulation.pageouts + paging->simulation.pageins);
  for (const Instruction& i : paging->plan.instructions)
    if (i.kind == InstrKind::PageOut || i.kind == InstrKind::PageIn) out.bytes += costs.nodes[static_cast<std::size_t>(i.node)].bytes;
  out.predicted_extra_s = paging->simulation.makespan_s - all.simulation.makespan_s;
  out.charged_s = paging->simulation.paging_cpu_s;

  FilePagerOptions pager_options;
  pager_options.path = storage.directory;
  pager_options.direct_io = storage.direct_io;
  FilePager pager(pager_options);
  runtime::ExecutorOptions paged_options;
  paged_options.pager = &pager;
  runtime::Executor with_paging(g, *paging, paged_options);
  runtime::Executor without(g, all, {});
  const runtime::SyntheticBatch batch = runtime::synthetic_batch(g, 0);
  const auto step_s = [&](runtime::Executor& e) {
    for (int k = 1; k < kStepsPerTurn; ++k) e.train_step(batch.inputs, batch.labels);
    const auto began = std::chrono::steady_clock::now();
    e.train_step(batch.inputs, batch.labels);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  for (int i = 0; i < options.warmup; ++i) step_s(with_paging), step_s(without);
  // Paired, alternating turns (kStepsPerTurn): the machine's speed drifts by tens of percent
  // within seconds, less within a pair.
  std::vector<double> extra;
  for (int i = 0; i < options.repeats; ++i) {
    const double paged = step_s(with_paging);
    extra.push_back(paged - step_s(without));
    if (progress) progress(i + 1, options.repeats);
  }
  out.pairs = options.repeats;
  out.measured_extra_s = summarize(extra).median;
  out.scale = charge_scale(out.measured_extra_s, out.predicted_extra_s, out.charged_s);
  return out;
}

}  // namespace poet::profile
