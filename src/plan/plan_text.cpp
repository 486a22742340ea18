#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <utility>

#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"

namespace poet {
namespace {

constexpr std::array<std::pair<InstrKind, std::string_view>, 4> kNames{
    std::pair{InstrKind::Compute, "compute"}, std::pair{InstrKind::PageOut, "pageout"},
    std::pair{InstrKind::PageIn, "pagein"}, std::pair{InstrKind::Free, "free"}};

// The first line plan_to_text writes, a comment to any other reader: the graph the plan
// was made for, by name and Graph::structure_checksum.
constexpr std::string_view kGraphLine = "# poet plan for graph ";
constexpr std::string_view kStructure = ", structure ";

// Throws InputError when `line` is kGraphLine with a structure other than that of `g`.
void check_made_for(std::string_view line, const Graph& g, std::string_view origin) {
  const std::size_t at = line.rfind(kStructure);
  if (!line.starts_with(kGraphLine) || at == std::string_view::npos) return;
  if (line.substr(at + kStructure.size()) == g.structure_checksum_text()) return;
  throw InputError(fmt::format("plan '{}' is for another graph than '{}' (it was made for {}): other operators or "
                               "edges; make one for '{}' (poet plan -o), or give the graph the plan was made for",
                               origin, g.name(), line.substr(kGraphLine.size(), at - kGraphLine.size()), g.name()));
}

}  // namespace

std::string_view instr_name(InstrKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "unknown";
}

std::string describe(const Instruction& ins, const Graph& g) {
  const bool known = ins.node >= 0 && static_cast<std::size_t>(ins.node) < g.size();
  return fmt::format("{} '{}' ({})", instr_name(ins.kind), known ? g.node(ins.node).name : "?", ins.node);
}

std::string plan_to_text(const Plan& p, const Graph& g) {
  std::string out = fmt::format("{}'{}'{}{}\n", kGraphLine, g.name(), kStructure, g.structure_checksum_text());
  for (const auto& ins : p.instructions)
    out += fmt::format("{} {}  # {}\n", instr_name(ins.kind), ins.node, g.node(ins.node).name);
  return out;
}

Plan plan_from_text(std::string_view text, const Graph& g, std::string_view origin) {
  Plan plan;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1) check_made_for(line, g, origin);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string op;
    if (!(words >> op)) continue;
    long long node = -1;
    std::string extra;
    if (!(words >> node) || (words >> extra))
      throw InputError(fmt::format("plan '{}' line {}: expected '<compute|pageout|pagein|free> <node id>'", origin,
                                   number));
    const auto* entry = std::find_if(kNames.begin(), kNames.end(), [&](const auto& e) { return e.second == op; });
    if (entry == kNames.end())
      throw InputError(fmt::format("plan '{}' line {}: unknown instruction '{}'; expected compute, pageout, pagein "
                                   "or free",
                                   origin, number, op));
    if (node < 0 || node >= static_cast<long long>(g.size()))
      throw InputError(fmt::format("plan '{}' line {}: node {} is not in graph '{}' (ids 0..{})", origin, number,
                                   node, g.name(), g.size() - 1));
    plan.instructions.push_back({entry->first, static_cast<NodeId>(node)});
  }
  return plan;
}

Plan load_plan_text(const std::string& path, const Graph& g) {
  // The other files poet writes, given here by mistake, are named with where they go.
  InputInspector text = text_inspector("plan", path);
  bool first = true;
  const auto inspect = [&](std::string_view piece) {
    if (std::exchange(first, false)) {
      if (piece.starts_with("POET"))
        throw InputError(fmt::format("plan '{}' is a device plan (poet plan --device-plan), not a plan's text: check "
                                     "it with poet check-plan, or give the file poet plan -o wrote",
                                     path));
      if (const auto start = piece.find_first_not_of(" \t\r\n"); start != std::string_view::npos && piece[start] == '{')
        throw InputError(fmt::format("plan '{}' is JSON, not a plan's text: a schedule goes to --schedule", path));
    }
    text(piece);
  };
  return plan_from_text(read_input_file(path, "plan", kMaxInputFileBytes, inspect), g, path);
}

}  // namespace poet
