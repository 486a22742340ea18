#include "poet/train/imported_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "poet/util/error.h"

namespace poet::train {
namespace {

// The node of each imported parameter set, checked to own a slice of its size.
std::vector<NodeId> owners(const runtime::ParameterStore& store, const Graph& g,
                           const std::vector<ImportedParameters>& parameters) {
  std::unordered_map<std::string, NodeId> by_name;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).role != Role::Backward) by_name.emplace(g.node(v).name, v);
  std::vector<NodeId> ids;
  for (const ImportedParameters& p : parameters) {
    const auto it = by_name.find(p.node);
    POET_CHECK(it != by_name.end() && store.has(it->second),
               fmt::format("imported node '{}' has no parameters in the training graph", p.node));
    ids.push_back(it->second);
  }
  return ids;
}

}  // namespace

void load_imported_weights(runtime::ParameterStore& store, const Graph& g,
                           const std::vector<ImportedParameters>& parameters) {
  const std::vector<NodeId> ids = owners(store, g, parameters);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const ImportedParameters& p = parameters[i];
    const std::span<float> slice = store.values(ids[i]);
    if (p.values.empty() && !slice.empty())
      throw InputError(fmt::format("node '{}' has no weights in the ONNX file (a structure-only model): export the "
                                   "model with its weights to fine-tune it",
                                   p.node));
    POET_CHECK(p.values.size() == slice.size(), fmt::format("node '{}': {} imported values for {} parameters", p.node,
                                                            p.values.size(), slice.size()));
    if (!std::ranges::all_of(p.values, [](float v) { return std::isfinite(v); }))
      throw InputError(fmt::format("node '{}' has weights in the ONNX file that are not finite (inf or nan), which "
                                   "training cannot start from: export the model from finite weights",
                                   p.node));
    std::copy(p.values.begin(), p.values.end(), slice.begin());
  }
}

void take_trained_weights(const runtime::ParameterStore& store, const Graph& g,
                          std::vector<ImportedParameters>& parameters) {
  const std::vector<NodeId> ids = owners(store, g, parameters);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const std::span<const float> slice = store.values(ids[i]);
    parameters[i].values.assign(slice.begin(), slice.end());
  }
}

}  // namespace poet::train
