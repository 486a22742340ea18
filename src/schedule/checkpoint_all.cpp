#include "poet/schedule/checkpoint_all.h"

namespace poet {

Schedule checkpoint_all_schedule(const Graph& g) {
  const std::size_t n = g.size();
  Schedule s(n, "checkpoint_all");
  // last_use[i]: the last stage that reads node i (its own stage if none does).
  std::vector<std::size_t> last_use(n);
  for (std::size_t i = 0; i < n; ++i) last_use[i] = i;
  for (std::size_t j = 0; j < n; ++j)
    for (NodeId i : g.node(static_cast<NodeId>(j)).inputs) last_use[i] = std::max(last_use[i], j);
  for (std::size_t t = 0; t < n; ++t) {
    s.R.set(t, static_cast<NodeId>(t));
    for (std::size_t i = 0; i < t; ++i)
      if (last_use[i] >= t) s.S_ram.set(t, static_cast<NodeId>(i));
  }
  return s;
}

}  // namespace poet
