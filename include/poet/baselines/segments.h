// The recomputation scheme Chen et al. 2016 share between their strategies: the forward
// pass keeps only segment boundaries; when the backward first needs a tensor from inside a
// segment, the segment is recomputed once from its boundary and its tensors live until
// their last backward use.
#pragma once

#include <string>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"

namespace poet {

// `boundaries`: forward nodes kept through the backward, each a segment boundary
// candidate (see articulation.h). Sources and the loss are always kept. `also_kept`: other
// forward nodes kept instead of recomputed, inside their segments (POFO keeps what the
// backward reads of a step it keeps). Throws InputError naming a boundary that is not a
// candidate.
Schedule segment_recompute_schedule(const Graph& g, const std::vector<NodeId>& boundaries, std::string method,
                                    const std::vector<NodeId>& also_kept = {});

}  // namespace poet
