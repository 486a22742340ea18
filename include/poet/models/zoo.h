// The model zoo: forward graphs (inputs through the loss) of the networks poet knows.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "poet/graph/graph.h"

namespace poet {

// Reference: exactly the reference implementation's layers, shapes, FLOP formulas and
//   quirks (for `chain`-mode parity). Faithful: the network as it really computes, built
//   only from operators with kernels and gradient rules (for `autodiff`). The two differ
//   only where the reference's structure is not a real network (its fused transformer ops
//   and mis-wired residual).
enum class ModelFlavor { Reference, Faithful };

struct ModelOptions {
  int batch_size = 1;
  ModelFlavor flavor = ModelFlavor::Faithful;
};

struct ModelInfo {
  std::string name;
  std::string description;
  bool in_reference;  // the reference implementation ships it
};

const std::vector<ModelInfo>& model_catalog();

// Builds the forward graph. Throws InputError for an unknown name (listing the valid ones)
// or a batch size below 1.
Graph build_forward_graph(std::string_view model, const ModelOptions& options);

}  // namespace poet
