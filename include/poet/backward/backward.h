// Backward construction: forward graph -> training graph (forward + loss + backward).
#pragma once

#include <optional>
#include <string_view>

#include "poet/graph/graph.h"
#include "poet/models/zoo.h"

namespace poet {

// chain: the reference implementation's construction, for like-for-like comparison:
//   gradient node k depends on the two adjacent forward activations and the previous
//   gradient; skip connections are not followed backward.
// autodiff: the real backward graph from the per-operator gradient rules; each backward
//   node reads exactly the forward tensors its math needs. This is what the runtime runs.
enum class BackwardMode { Chain, Autodiff };

std::string_view backward_mode_name(BackwardMode mode);
std::optional<BackwardMode> backward_mode_from_name(std::string_view name);

Graph build_chain_backward(const Graph& forward);
Graph build_autodiff_backward(const Graph& forward);
Graph build_training_graph(const Graph& forward, BackwardMode mode);

// A zoo model with its backward, built from the flavor the mode is defined on
// (chain: Reference, autodiff: Faithful). options.flavor is ignored.
Graph build_model_training_graph(std::string_view model, ModelOptions options, BackwardMode mode);

}  // namespace poet
