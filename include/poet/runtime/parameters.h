// The fixed-memory region of training: parameters, their gradients and the optimizer's
// state, each one contiguous array, with every parameterised node owning a slice at the
// same offset in all three. Kept apart from the activation arena because no plan may
// recompute or page them: they are what the step exists to update.
//
// Slice layout per operator (row-major, as the kernels expect):
//   linear      weight [out, in], then bias [out] when it has one
//   conv2d      weight [out, in / groups, kh, kw], then bias [out] when it has one
//   batch_norm  gamma [C], beta [C], running mean [C], running variance [C]
//   layer_norm  gamma [F], beta [F]
//   embedding   table [vocab, dim]
// The running statistics are state, not trained: their gradient stays 0 and the
// optimizer skips them (`trainable` counts the leading trained part of a slice).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "poet/graph/graph.h"

namespace poet::runtime {

struct ParameterSlice {
  NodeId node = -1;
  std::int64_t offset = 0;          // in floats, in the parameters
  std::int64_t count = 0;           // the node's param_count
  std::int64_t trainable = 0;       // the leading elements the optimizer updates
  std::int64_t trained_offset = 0;  // in floats, in the gradients (and each optimizer state)
};

class ParameterStore {
 public:
  // Slices for every forward node with parameters, initialised from `seed` (see
  // initialize). `state_per_parameter` floats of optimizer state per parameter (0 SGD,
  // 1 momentum, 2 Adam) per trained parameter. Throws InputError if a node's param_count disagrees with its
  // operator's layout.
  ParameterStore(const Graph& g, int state_per_parameter, std::uint64_t seed);

  // Weights uniform in +-sqrt(6 / fan_in) (He et al. 2015, for ReLU networks), biases 0,
  // norm scales 1 and shifts 0, running variance 1, embeddings uniform in +-1. The bits
  // come from the counter-based RNG keyed by (seed, node), so a parameter's initial value
  // does not depend on the other layers or on the order of initialisation.
  void initialize(std::uint64_t seed);

  bool has(NodeId node) const { return slice_index(node) >= 0; }
  const ParameterSlice& slice(NodeId node) const;
  std::span<float> values(NodeId node);
  std::span<const float> values(NodeId node) const;
  // The trained part's gradient (a GradParam node writes it whole).
  std::span<float> gradient(NodeId node);

  std::span<float> all_values() { return values_; }
  std::span<const float> all_values() const { return values_; }
  std::span<float> all_gradients() { return gradients_; }
  std::span<const float> all_gradients() const { return gradients_; }
  std::span<float> optimizer_state() { return state_; }
  std::span<const float> optimizer_state() const { return state_; }
  const std::vector<ParameterSlice>& slices() const { return slices_; }
  int state_per_parameter() const { return state_per_parameter_; }

  // Bytes of the three arrays, as the graph's FixedMemory counts them.
  FixedMemory bytes() const;

 private:
  std::int32_t slice_index(NodeId node) const;

  const Graph& graph_;
  int state_per_parameter_;
  std::vector<ParameterSlice> slices_;
  std::vector<std::int32_t> slice_of_node_;  // -1: no parameters
  std::vector<float> values_, gradients_, state_;
};

}  // namespace poet::runtime
