// Checkpoint-all: compute every node once and keep each activation until its last use
// (PyTorch's default). The unconstrained baseline, and the oracle for tests.
#pragma once

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"

namespace poet {

Schedule checkpoint_all_schedule(const Graph& g);

}  // namespace poet
