#include "device_output.h"

#include <fmt/format.h>

#include "graph_source.h"
#include "poet/plan/device_format.h"
#include "poet/plan/memory_plan.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::cli {

void DeviceOutputs::add_options(CLI::App& cmd) {
  cmd.add_option("--device-plan", device_plan,
                 "Also write the plan with its static arena offsets in the binary device format")
      ->transform(output_file());
  cmd.add_option("--c-header", c_header, "Also write the device plan as a C header for firmware")
      ->transform(output_file());
}

std::vector<FileContents> device_output_files(const Graph& g, const ArenaFit& fit, const DeviceOutputs& out,
                                              std::optional<std::int64_t> ram_budget_bytes) {
  const LoweredPlan& lowered = fit.lowered;
  const MemoryPlan& memory = lowered.memory;
  if (const auto overlap = find_overlap(lowered.buffers, memory)) POET_CHECK(false, "static memory plan overlaps: " + *overlap);
  fmt::print(stderr, "static memory plan: arena {} for a live peak of {} (+{:.2f}% fragmentation){}\n",
             format_bytes_exact(memory.arena_bytes), format_bytes_exact(memory.peak_live_bytes),
             100 * memory.fragmentation(),
             lowered.transfer_margin > 0
                 ? fmt::format("; the bytes of transfers held until they end if they take up to {:.2f}x their "
                               "predicted time",
                               lowered.transfer_margin)
                 : "");
  if (ram_budget_bytes)
    if (const std::string replanned = replan_summary(fit, *ram_budget_bytes); !replanned.empty())
      fmt::print(stderr, "{}\n", replanned);
  if (ram_budget_bytes)
    if (const auto over = arena_over_budget(memory.arena_bytes, lowered.simulation.fixed_bytes, *ram_budget_bytes))
      fmt::print(stderr, "poet: warning: {}\n", *over);
  if (!out.wanted()) return {};
  const Plan& plan = lowered.plan;
  const auto bytes = encode_device_plan(plan, lowered.buffers, memory, g.size());
  std::vector<FileContents> files;
  if (!out.device_plan.empty()) files.push_back({out.device_plan, std::string(bytes.begin(), bytes.end())});
  if (!out.c_header.empty()) files.push_back({out.c_header, device_plan_c_header(bytes, "poet_plan")});
  fmt::print(stderr, "device plan: {} bytes ({} instructions)\n", format_grouped(static_cast<double>(bytes.size())),
             plan.instructions.size());
  return files;
}

}  // namespace poet::cli
