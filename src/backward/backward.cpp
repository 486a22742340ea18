#include "poet/backward/backward.h"

#include <fmt/format.h>

namespace poet {

std::string_view backward_mode_name(BackwardMode mode) {
  return mode == BackwardMode::Chain ? "chain" : "autodiff";
}

std::optional<BackwardMode> backward_mode_from_name(std::string_view name) {
  if (name == "chain") return BackwardMode::Chain;
  if (name == "autodiff") return BackwardMode::Autodiff;
  return std::nullopt;
}

Graph build_training_graph(const Graph& forward, BackwardMode mode) {
  return mode == BackwardMode::Chain ? build_chain_backward(forward) : build_autodiff_backward(forward);
}

Graph build_model_training_graph(std::string_view model, ModelOptions options, BackwardMode mode) {
  options.flavor = mode == BackwardMode::Chain ? ModelFlavor::Reference : ModelFlavor::Faithful;
  Graph graph = build_training_graph(build_forward_graph(model, options), mode);
  graph.validate();
  return graph;
}

}  // namespace poet
