#include "poet/baselines/segments.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/baselines/articulation.h"
#include "poet/baselines/forward_part.h"
#include "poet/util/error.h"

namespace poet {

Schedule segment_recompute_schedule(const Graph& g, const std::vector<NodeId>& boundaries, std::string method,
                                    const std::vector<NodeId>& also_kept) {
  const std::size_t forward = forward_part_size(g, method);
  const auto candidates = segment_boundary_candidates(g);
  std::vector<bool> kept(forward, false);
  for (NodeId b : boundaries) {
    if (!std::binary_search(candidates.begin(), candidates.end(), b))
      throw InputError(fmt::format("{}: node {} cannot be a segment boundary: it must be a forward articulation "
                                   "point that no forward edge skips over (see segment_boundary_candidates)",
                                   method, b));
    kept[b] = true;
  }
  kept[g.loss()] = true;
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v)
    if (g.node(v).inputs.empty()) kept[v] = true;

  // segment[v]: how many boundaries come before v, so a segment's nodes share a number.
  std::vector<int> segment(forward, 0);
  for (NodeId v = 1; v < static_cast<NodeId>(forward); ++v)
    segment[v] = segment[v - 1] + (kept[v - 1] && !g.node(v - 1).inputs.empty() ? 1 : 0);
  for (NodeId v : also_kept) kept[v] = true;  // after the numbering: kept, but no boundaries

  // What the backward reads from inside segments, closed over the inputs the recomputation
  // needs (inside the same segment by the choice of boundaries).
  std::vector<bool> recompute(forward, false);
  for (std::size_t t = forward; t < g.size(); ++t)
    for (NodeId f : g.node(static_cast<NodeId>(t)).inputs)
      if (static_cast<std::size_t>(f) < forward && !kept[f]) recompute[f] = true;
  for (NodeId v = static_cast<NodeId>(forward) - 1; v >= 0; --v)
    if (recompute[v])
      for (NodeId in : g.node(v).inputs)
        if (!kept[in]) recompute[in] = true;

  Schedule s(g.size(), std::move(method));
  for (std::size_t t = 0; t < forward; ++t) s.R.set(t, static_cast<NodeId>(t));
  std::vector<bool> segment_done(static_cast<std::size_t>(segment.back()) + 1, false);
  for (std::size_t t = forward; t < g.size(); ++t) {
    for (NodeId f : g.node(static_cast<NodeId>(t)).inputs) {
      if (static_cast<std::size_t>(f) >= forward || kept[f] || segment_done[segment[f]]) continue;
      segment_done[segment[f]] = true;
      for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v)
        if (recompute[v] && segment[v] == segment[f]) s.R.set(t, v);
    }
    s.R.set(t, static_cast<NodeId>(t));
  }
  fill_ram_by_liveness(s, g);
  return s;
}

}  // namespace poet
