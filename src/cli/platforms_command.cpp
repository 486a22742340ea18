#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "poet/cost/device.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_platforms_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("platforms", "List the built-in device profiles");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "Print the profiles as a JSON array, each in the device profile format --platform FILE reads");
  cmd->callback([json] {
    if (*json) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& d : builtin_platforms()) all.push_back(device_to_json(d));
      fmt::print("{}\n", json_text(all, 2));
      return;
    }
    fmt::print("{:<11} {:>12} {:>12} {:>11} {:>11} {:>12}  {}\n", "platform", "compute", "efficiency",
               "page-in", "page-out", "paging power", "description");
    for (const auto& d : builtin_platforms()) {
      fmt::print("{:<11} {:>12} {:>12} {:>11} {:>11} {:>12}  {}\n", d.name,
                 format_count(d.flops_per_second) + "FLOP/s", format_count(d.flops_per_joule) + "FLOP/J",
                 format_bytes(d.pagein_bytes_per_s) + "/s", format_bytes(d.pageout_bytes_per_s) + "/s",
                 fmt::format("{:.3g} W", d.memory_power_w), d.description);
    }
    fmt::print("\nA platform is also accepted as a path to a device profile JSON file (docs/FORMATS.md).\n");
  });
}

}  // namespace poet::cli
