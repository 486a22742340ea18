#include "poet/baselines/forward_part.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/util/error.h"

namespace poet {

std::size_t forward_part_size(const Graph& g, std::string_view method) {
  const NodeId loss = g.loss();
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const bool backward = g.node(v).role == Role::Backward;
    if (backward != (v > loss))
      throw InputError(fmt::format("{} needs every forward node before the loss and every backward node after it, "
                                   "but '{}' ({}) is a {} node on the other side of the loss '{}' ({}); reorder "
                                   "the graph or build it with `poet graph`",
                                   method, g.node(v).name, v, backward ? "backward" : "forward",
                                   g.node(loss).name, loss));
  }
  return static_cast<std::size_t>(loss) + 1;
}

void fill_ram_by_liveness(Schedule& s, const Graph& g) {
  constexpr std::size_t kNever = static_cast<std::size_t>(-1);
  std::vector<std::size_t> computed_at(g.size(), kNever);
  std::vector<std::size_t> marked_until(g.size(), kNever);  // last stage already set for this copy
  for (std::size_t t = 0; t < s.stages; ++t) {
    const SparseRow& row = s.R.row(t);
    for (NodeId j : row)
      for (NodeId i : g.node(j).inputs) {
        // A node computed in this stage is computed before its readers (index order), so
        // they read the new copy; only a read of an older copy makes i resident at t.
        if (std::binary_search(row.begin(), row.end(), i)) continue;
        const std::size_t from = marked_until[i] == kNever ? computed_at[i] + 1 : marked_until[i] + 1;
        for (std::size_t u = from; u <= t; ++u) s.S_ram.set(u, i);
        marked_until[i] = t;
      }
    for (NodeId j : row) computed_at[j] = t, marked_until[j] = kNever;
  }
}

}  // namespace poet
