// Where a forward graph can be cut into segments for Chen-style recomputation.
#pragma once

#include <vector>

#include "poet/graph/graph.h"

namespace poet {

// Articulation points of the forward part (forward and loss nodes), taken as an undirected
// graph: the nodes whose removal disconnects it. Ascending. Checkmate restricts Chen's
// segment boundaries to these on DAGs such as residual networks.
std::vector<NodeId> forward_articulation_points(const Graph& g);

// The articulation points that can end a segment: not a source (inputs are always kept),
// not the loss, and crossed by no forward edge in the execution order (no u -> w with
// u < v < w, u not a source). The second condition is what recomputing the segment after v
// from v alone needs; it can fail for an articulation point when a side branch is placed
// late in the order. Ascending.
std::vector<NodeId> segment_boundary_candidates(const Graph& g);

}  // namespace poet
