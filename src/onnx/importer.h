// The ONNX importer's internals, shared by its files: onnx_import.cpp (reading the model,
// values, nodes, the loss), onnx_import_layers.cpp (operators that become poet's layers)
// and onnx_import_patterns.cpp (patterns of several ONNX nodes taken in as one, and the
// layout operators they use).
#pragma once

#include <fmt/format.h>

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx_file.h"
#include "onnx_node_reader.h"
#include "poet/graph/graph.h"
#include "poet/graph/op_table.h"
#include "poet/onnx/onnx_import.h"
#include "poet/util/error.h"
#include "tensor_data.h"

namespace poet::onnx_import {

// A norm's epsilon (ONNX's default is PyTorch's, 1e-5; torchvision's Inception and
// MobileNetV3 use 1e-3).
OpAttrs norm_attributes(const NodeReader& n, const std::string& path);
// The operators mapped onto poet's, and those computed only on constants (folded).
const std::vector<std::string>& layer_ops();
const std::vector<std::string>& constant_ops();
bool maps_operator(const std::string& op);  // one of layer_ops(), by its ONNX name
// A kernel size, stride, pad or group count as the operator's int attribute: InputError
// beyond any real model's (which could not be a window over an image poet holds).
int window_attribute(const NodeReader& n, std::int64_t value, const char* what, const std::string& path);
std::string dims_string(const Shape& s);

// Logits whose rows are not the batch: the model batches along another axis of its input.
class BatchNotFirst : public InputError {
 public:
  using InputError::InputError;
};

// An ONNX value: the output of a poet node (an activation) or a constant.
struct Value {
  NodeId node = -1;
  Shape onnx_shape;  // the activation's shape as ONNX sees it (global pooling keeps 1x1)
  std::optional<ConstTensor> constant;
};

// A weight tensor and whether the file stores it transposed to poet's layout.
struct Weight {
  const ConstTensor* tensor = nullptr;
  // The name the node reads it by (an initializer, or an Identity's output); empty for a
  // tensor the file computes (fixed, not written back).
  std::string value_name;
  bool transposed = false;
};

class Importer {
 public:
  // shapes_only: the parameters' values are not copied (a second import that checks shapes).
  Importer(const ::onnx::ModelProto& model, const std::string& path, const OnnxImportOptions& options,
           bool shapes_only = false)
      : model_(model), path_(path), batch_(options.batch_size), loss_(options.loss), shapes_only_(shapes_only) {}

  OnnxModel run();

 private:
  [[noreturn]] void fail(const NodeReader& n, const std::string& why) const {
    throw InputError(fmt::format("'{}': node '{}' ({}): {}", path_, n.label(), n.op_type(), why));
  }
  // Why poet cannot import node n; the operators it imports are listed only when n's is not
  // one of them (for one that is, the reason and its fix are the whole message).
  [[noreturn]] void unsupported(const NodeReader& n, const std::string& why) const {
    if (maps_operator(n.op_type())) fail(n, why + " (docs/ONNX.md)");
    fail(n, fmt::format("{}; poet imports {} (docs/ONNX.md)", why, onnx_supported_operators()));
  }

  void read_initializers();
  NodeId add_input(const ::onnx::ValueInfoProto& v);
  void check_token_ids(const std::string& input);  // an integer input: read by embeddings alone
  void collect_inferred_shapes(const ::onnx::ModelProto& checked);
  void import_node(const NodeReader& n);
  void check_unused_outputs(const NodeReader& n);

  const Value& value(const NodeReader& n, int i);
  // The activation of input i. A signal [N, C, L] that poet holds as an image of one row,
  // [N, C, 1, L] (the output of a 1-D convolution or pooling, and of the element-wise
  // layers and norms after it), is reshaped back to the signal once, for every reader.
  NodeId activation(const NodeReader& n, int i);
  // The activation as poet holds it: for the layers that take a signal as an image of one
  // row (as_one_row) and those that keep their input's layout (bind_elementwise).
  NodeId activation_as_held(const NodeReader& n, int i);
  // The activation with the shape ONNX sees (global pooling's [N, C] reshaped to [N, C, 1, 1]).
  NodeId activation_as_onnx(const NodeReader& n, int i);
  const ConstTensor* constant(const NodeReader& n, int i);  // null: the input is left out
  Weight weight(const NodeReader& n, int i, Shape expected_dims, const std::string& what);
  // Whether a norm's scale and shift are learned (initializers) or fixed: constants of ones
  // and zeros, torch's affine=False, which then are not written back. Anything else (one of
  // each, other constants) is refused.
  bool learned_or_fixed(const NodeReader& n, Weight& scale, Weight& shift);
  Weight fixed_tensor(Shape dims, float value);  // made here, for a norm the file gives none

  std::string unique_name(const NodeReader& n);
  NodeId make(const NodeReader& n, OpKind op, std::vector<NodeId> inputs, OpArgs args = {});
  void set_parameters(const NodeReader& n, NodeId id, const std::vector<Weight>& weights);
  void bind(const NodeReader& n, NodeId id, std::optional<Shape> onnx_shape = std::nullopt);
  // Binds an element-wise node of input 0, whose ONNX shape is its input's (global
  // pooling's [N, C, 1, 1], which poet holds as [N, C], then Inception's dropout).
  void bind_elementwise(const NodeReader& n, NodeId id);
  // Binds value `output` (of a later node a pattern took in) to node id.
  void bind_output(const NodeReader& n, const std::string& output, NodeId id,
                   std::optional<Shape> onnx_shape = std::nullopt);
  void alias(const NodeReader& n, int input);

  // The strides, padding and dilation of a Conv or pooling node over input `in` (NCHW) with a
  // kernel of kernel[0] x kernel[1] taps, as poet's window operators take them (explicit,
  // VALID or SAME padding, a stride per axis and one dilation for both; pooling undilated);
  // `pads` replaces the node's own (a Pad folded into a pool).
  struct Window {
    int stride_h, stride_w, pad_h, pad_w, dilation;  // pads: the smaller side's
    // Where the two sides of an axis are padded differently (TensorFlow's SAME at an even
    // size): the rest, as the pads of a Pad before the layer ([0, 0, top, left, 0, 0,
    // bottom, right]); empty where they are padded alike.
    std::vector<std::int64_t> uneven;
  };
  // one_row: a 1-D operator's attributes, read as those of a kernel one row high.
  Window window(const NodeReader& n, const char* operation, const Shape& in, std::array<std::int64_t, 2> kernel,
                std::optional<std::vector<std::int64_t>> pads = {}, bool one_row = false);
  // A signal [N, C, L] as an image of one row, [N, C, 1, L], for a 1-D convolution or
  // pooling made as a 2-D one (x itself where poet holds it so already). The output is
  // held as an image of one row too (bind_one_row_or_image), so that a chain of 1-D layers
  // reshapes only where it starts and where a reader needs the signal.
  NodeId as_one_row(const NodeReader& n, NodeId x);
  // Binds the output of a layer whose input 0 may be a signal taken as an image of one row.
  void bind_one_row_or_image(const NodeReader& n, NodeId id);
  NodeId conv(const NodeReader& n);  // and ConvTranspose; a signal's as an image of one row
  NodeId gemm(const NodeReader& n);
  NodeId matmul(const NodeReader& n);
  NodeId einsum(const NodeReader& n);  // a batched matrix product, between transposes
  NodeId permuted(const NodeReader& n, NodeId x, const std::vector<std::int64_t>& perm);  // x itself for no change
  NodeId clip(const NodeReader& n);
  NodeId batch_norm(const NodeReader& n);
  NodeId layer_norm(const NodeReader& n);
  NodeId pool(const NodeReader& n, OpKind op);
  std::optional<NodeId> reshape(const NodeReader& n);  // none: a reshape to the same shape
  void dropout(const NodeReader& n);  // binds its output: a dropout node, or its input for ratio 0
  void pad(const NodeReader& n);
  void resize(const NodeReader& n);  // nearest or bilinear, rows and columns by whole factors: an upsampling
  NodeId softmax(const NodeReader& n);
  void transpose(const NodeReader& n);
  void slice(const NodeReader& n);
  void squeeze(const NodeReader& n);  // Squeeze or Unsqueeze of an activation: a reshape
  void split(const NodeReader& n);  // into slices, one per output
  void gather(const NodeReader& n);  // one index of an activation, or an embedding of token ids
  void scale(const NodeReader& n);  // Mul or Div by a constant scalar, or GELU's Erf pattern
  NodeId mul(const NodeReader& n);   // of two activations
  NodeId divide(const NodeReader& n);  // of two activations, the divisor broadcast
  // Of an activation by a float initializer of more than one element (a layer scale),
  // learned; none: the constant is a scalar (scale).
  std::optional<NodeId> mul_parameter(const NodeReader& n);
  NodeId prelu(const NodeReader& n);  // its slopes learned
  // op of the activation in x_slot and a learned tensor in p_slot (a float initializer of at
  // most its rank, repeated where it has size 1); `what` begins the refusal of another.
  NodeId over_learned_tensor(const NodeReader& n, OpKind op, int x_slot, int p_slot, std::string_view what);
  void hard_sigmoid(const NodeReader& n);
  void reduce_mean(const NodeReader& n);  // layer norm's decomposition
  // A norm's scale and shift in its decomposition: the Mul by a constant of `expected` dims
  // (broadcast alike) that alone reads v, then the Add of another that alone reads the Mul.
  struct ScaleShift {
    int mul, add;
    Weight scale, shift;
  };
  std::optional<ScaleShift> scale_and_shift(const std::string& v, Shape expected);
  // torch's GroupNorm, from the Reshape that starts its decomposition; false: no such pattern.
  bool group_norm(const NodeReader& n);
  NodeId instance_norm(const NodeReader& n);  // a group norm of a group per channel
  void expand(const NodeReader& n);
  std::optional<NodeId> prepend_tokens(const NodeReader& n);
  NodeId add(const NodeReader& n);
  NodeId add_computed(const NodeReader& n, int x_slot, const ConstTensor& c);  // a fixed or gathered tensor
  // A constant scalar that is not an initializer (added as a number, not learned); none otherwise.
  std::optional<float> fixed_scalar(const NodeReader& n, int slot);
  NodeId affine(const NodeReader& n, int x_slot, double scale, double shift);  // scale x + shift
  NodeId subtract(const NodeReader& n);  // of two activations

  // Patterns: the node that alone reads value `v`, if it is an `op` (-1 otherwise).
  int sole_reader(const std::string& v, std::string_view op) const;
  // The other input of node i besides value `v`.
  const std::string& other_input(int i, const std::string& v) const;
  // The constant of value `name`, also when the Constant node making it comes later.
  const ConstTensor* constant_named(const std::string& name);
  std::optional<float> scalar(const std::string& name);
  bool is_scalar(const std::string& name, float value, float tolerance = 0);
  // The axes a ReduceMean averages, from 0 and sorted; and whether it is over the last one alone, keeping it.
  std::vector<std::int64_t> reduced_axes(const NodeReader& n, std::int64_t rank) const;
  bool over_last_axis(const NodeReader& n, std::int64_t rank) const;
  void take_in(std::initializer_list<int> nodes);  // folded into a pattern's node
  void add_loss();
  // The mean squared error of output `output` (node x) against the model's input.
  void add_reconstruction_loss(const std::string& output, NodeId x);
  void add_loss_node(OpKind op, std::vector<NodeId> inputs, const OpResult& rules);
  // The error for logits whose rows are not the batch (a sequence-first model).
  std::string batch_not_first(const std::string& output, const Shape& logits) const;
  std::int64_t model_opset() const;

  const ::onnx::ModelProto& model_;
  const std::string& path_;
  int batch_;
  TrainingLoss loss_;
  bool shapes_only_;
  Graph g_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<NodeId, NodeId> signal_of_row_;  // a signal held as one row -> its reshape back
  std::unordered_map<std::string, std::vector<int>> readers_;  // value -> indices of the nodes reading it
  std::set<std::string> graph_outputs_;
  std::unordered_map<std::string, Shape> inferred_;  // ONNX's static shapes of the values
  std::set<std::string> names_;
  std::vector<ImportedParameters> parameters_;
  std::string input_name_;  // the model's input (the batch), for messages
  std::int64_t file_batch_ = 0;  // the batch the file was exported for; 0 if symbolic (dynamic_axes)
  std::unordered_map<std::string, std::string> weight_owner_;  // a weight's value -> the node it is a parameter of
  std::set<int> absorbed_;  // Add nodes folded into the MatMul before them as its bias
  // AveragePool index -> the zero padding (rows, columns) of the Pad before it, which torch
  // writes out for count_include_pad=True: poet's average pooling counts its padding so.
  std::map<int, std::pair<std::int64_t, std::int64_t>> pool_padding_;
  bool has_weights_ = true;
  std::unordered_map<std::string, int> producer_;        // value -> index of the node making it
  std::unordered_map<std::string, ConstTensor> later_;   // constants read ahead (Constant nodes, folded)
  std::deque<ConstTensor> made_;                         // fixed_tensor's
  std::set<int> taken_;                                  // nodes a pattern took in (layer norm, GELU)
  std::unordered_map<std::string, std::string> tokens_;  // Expand output -> the learned tokens' initializer
  int folded_ = 0;
  int index_ = 0;  // of the node being imported
};

}  // namespace poet::onnx_import
