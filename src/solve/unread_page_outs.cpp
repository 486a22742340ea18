#include "unread_page_outs.h"

#include <algorithm>

namespace poet::solve_internal {

std::vector<NodeId> drop_unread_page_outs(Schedule& s) {
  // Per tensor (one stage per node), the stages of its page-outs and page-ins, in order.
  std::vector<std::vector<std::size_t>> outs(s.stages), ins(s.stages);
  for (std::size_t t = 0; t < s.stages; ++t) {
    for (NodeId i : s.M_out.row(t)) outs[static_cast<std::size_t>(i)].push_back(t);
    for (NodeId i : s.M_in.row(t)) ins[static_cast<std::size_t>(i)].push_back(t);
  }
  std::vector<NodeId> dropped;
  for (std::size_t i = 0; i < s.stages; ++i) {
    const std::vector<std::size_t>& out = outs[i];
    for (std::size_t k = 0; k < out.size(); ++k) {
      // A page-in reads this copy in stages (out[k], next page-out]: within a stage, a
      // tensor's page-in comes before its page-out (Algorithm 2).
      const std::size_t until = k + 1 < out.size() ? out[k + 1] : s.stages - 1;
      if (std::ranges::any_of(ins[i], [&](std::size_t t) { return t > out[k] && t <= until; })) continue;
      const auto node = static_cast<NodeId>(i);
      s.M_out.set(out[k], node, false);
      for (std::size_t t = out[k] + 1; t <= until; ++t) s.S_aux.set(t, node, false);
      dropped.push_back(node);
    }
  }
  return dropped;
}

}  // namespace poet::solve_internal
