// Folding the constant computations of an ONNX graph, as whole tensors (at most 2^24
// elements): the Shape / Gather / Unsqueeze / Concat chains torch emits to compute a
// reshape's target, Swin's attention masks (Range, ScatterND, Slice, Transpose, arithmetic),
// Constant nodes, and Identity and Cast of constants. Each folded node's output is a
// constant; the elements of a learned table gathered by constant indices remember which
// they are (ConstTensor::table), so that the importer adds the table, not a copy.
#pragma once

#include <optional>
#include <vector>

#include "onnx_node_reader.h"
#include "tensor_data.h"

namespace poet::onnx_import {

// Whether `op_type` is computed here when all its inputs are constants.
bool is_foldable(const std::string& op_type);

// The output of node `n` (a foldable op) on constant `inputs` (null for an input the node
// leaves out). Throws InputError naming the node when the inputs do not fit the operator.
ConstTensor fold(const NodeReader& n, const std::vector<const ConstTensor*>& inputs);

// The constant a Constant node holds.
ConstTensor constant_value(const NodeReader& n);

}  // namespace poet::onnx_import
