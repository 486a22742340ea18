// Algorithm 2 of the paper, with frees placed by liveness: a RAM copy of a tensor lives from
// the instruction that creates it (compute or page-in) to its last use (a compute reading
// it, or a page-out writing it) before the next instruction that creates it again.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "poet/plan/plan.h"
#include "poet/util/error.h"

namespace poet {

Plan plan_from_schedule(const Schedule& s, const Graph& g) {
  check_schedule_shape(s, g);

  // Pass 1: the instructions that do work, in Algorithm 2's order.
  // Node by node within a stage: a merge of the stage's three sorted rows (baselines such
  // as Capuchin plan thousands of candidate schedules, so this is linear in the entries).
  std::vector<Instruction> work;
  for (std::size_t t = 0; t < s.stages; ++t) {
    const SparseRow &in = s.M_in.row(t), &computed = s.R.row(t), &out = s.M_out.row(t);
    auto i = in.begin(), c = computed.begin(), o = out.begin();
    while (i != in.end() || c != computed.end() || o != out.end()) {
      NodeId k = std::numeric_limits<NodeId>::max();
      if (i != in.end()) k = std::min(k, *i);
      if (c != computed.end()) k = std::min(k, *c);
      if (o != out.end()) k = std::min(k, *o);
      if (i != in.end() && *i == k) work.push_back({InstrKind::PageIn, k}), ++i;
      if (c != computed.end() && *c == k) work.push_back({InstrKind::Compute, k}), ++c;
      if (o != out.end() && *o == k) work.push_back({InstrKind::PageOut, k}), ++o;
    }
  }

  // Pass 2: for each RAM copy, the position of its last use (or of its creation if unused).
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> last_touch(g.size(), kNone);  // of the current copy
  std::vector<std::vector<NodeId>> free_after(work.size());
  const auto close_copy = [&](NodeId v) {
    if (last_touch[v] != kNone) free_after[last_touch[v]].push_back(v);
    last_touch[v] = kNone;
  };
  for (std::size_t p = 0; p < work.size(); ++p) {
    const Instruction& ins = work[p];
    if (ins.kind == InstrKind::Compute) {
      for (NodeId in : g.node(ins.node).inputs) last_touch[in] = p;
      close_copy(ins.node);  // a recompute replaces the old copy
      last_touch[ins.node] = p;
    } else if (ins.kind == InstrKind::PageIn) {
      close_copy(ins.node);
      last_touch[ins.node] = p;
    } else {
      last_touch[ins.node] = p;
    }
  }
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) close_copy(v);

  Plan plan;
  plan.instructions.reserve(work.size() * 2);
  for (std::size_t p = 0; p < work.size(); ++p) {
    plan.instructions.push_back(work[p]);
    auto& frees = free_after[p];
    std::sort(frees.begin(), frees.end());
    frees.erase(std::unique(frees.begin(), frees.end()), frees.end());
    for (NodeId v : frees) plan.instructions.push_back({InstrKind::Free, v});
  }
  return plan;
}

std::string schedule_entry_of(const Schedule& s, const Plan& plan, std::size_t instruction) {
  if (instruction >= plan.instructions.size()) return "";
  // The plan holds the schedule's entries in stage order, each stage's page-ins, computes and
  // page-outs together, with frees between: the k-th instruction that is no free is in the
  // stage whose entries first reach k.
  std::size_t work = 0;
  for (std::size_t p = 0; p < instruction; ++p) work += plan.instructions[p].kind != InstrKind::Free;
  const Instruction& ins = plan.instructions[instruction];
  std::size_t stage = 0;
  for (std::size_t before = 0; stage < s.stages; ++stage) {
    before += s.M_in.row(stage).size() + s.R.row(stage).size() + s.M_out.row(stage).size();
    if (before > work || (ins.kind == InstrKind::Free && before == work)) break;
  }
  if (ins.kind == InstrKind::Free) return fmt::format("a free after stage {}", stage);
  const bool in = ins.kind == InstrKind::PageIn, computed = ins.kind == InstrKind::Compute;
  const char* matrix = in ? "M_in" : computed ? "R" : "M_out";
  const char* does = in ? "pages in" : computed ? "computes" : "pages out";
  return fmt::format("{}[{}] (stage {} {} node {})", matrix, stage, stage, does, ins.node);
}

bool plan_pages(const Plan& p) {
  return std::ranges::any_of(p.instructions, [](const Instruction& i) { return i.kind == InstrKind::PageOut; });
}

std::vector<std::uint64_t> paged_tensor_bytes(const Plan& p, const Graph& g) {
  std::vector<std::uint64_t> bytes;
  std::vector<bool> seen(g.size());
  for (const Instruction& ins : p.instructions)
    if (ins.kind == InstrKind::PageOut && !seen[static_cast<std::size_t>(ins.node)]) {
      seen[static_cast<std::size_t>(ins.node)] = true;
      bytes.push_back(static_cast<std::uint64_t>(g.node(ins.node).bytes));
    }
  return bytes;
}

}  // namespace poet
