// Constant tensors of an ONNX file (initializers, Constant nodes and what folding makes
// of them), read from their protobuf form with every size checked against the data.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "poet/graph/graph.h"

namespace poet::onnx_import {

struct ConstTensor {
  std::string name;  // the initializer's name; empty for a folded value
  Shape dims;
  bool is_float = false;  // float32; otherwise an integer tensor (int64, int32, bool...)
  bool has_data = true;   // false: a structure-only file's initializer (dimensions, no data)
  // Computed from a Shape (of the batch poet imports with): a reshape's target that needs
  // no guess where the batch is.
  bool from_shape = false;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  // Elements gathered from a float initializer (a learned table, as a relative position
  // bias) by constant indices, then moved by layout operators: its name and elements, and
  // which of them each element is (empty when the indices have no data).
  std::string table;
  std::int64_t table_elements = 0;
  std::vector<std::int64_t> table_index;

  std::int64_t elements() const { return element_count(dims); }
};

// Reads `t` (float32, float64 as float32, or any integer type as int64). Throws InputError
// naming `what` for negative or overflowing dimensions, data that do not match them,
// external data not read in yet (onnx_file.h), or an element type poet cannot use.
ConstTensor read_tensor(const ::onnx::TensorProto& t, const std::string& what);

// Far above any real model's tensor, and small enough that every byte count fits in int64.
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 36;

// `t`'s dimensions; InputError naming `what` if one is negative or they hold more than
// kMaxTensorElements.
Shape checked_dims(const ::onnx::TensorProto& t, const std::string& what);

// Bytes an element of ONNX type `type` takes in raw_data: for the types read_tensor reads
// (float, double, the integers, bool); 0 for any other.
std::size_t raw_element_bytes(int type);

// A tensor without data counts as structure-only when it has elements: a file stripped
// of its weights to stay small.
bool is_structure_only(const ::onnx::TensorProto& t);

// The tensor's values, as integers (what shape computations read); InputError naming
// `what` for a float tensor or one without data.
const std::vector<std::int64_t>& int_values(const ConstTensor& t, const std::string& what);

}  // namespace poet::onnx_import
