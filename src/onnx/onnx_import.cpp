// The ONNX importer: each node of the file, in its (topological) order, folded into a
// constant or mapped onto one of poet's operators, whose rules make the node.
#include "poet/onnx/onnx_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "constant_folding.h"
#include "onnx_file.h"
#include "onnx_node_reader.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"
#include "tensor_data.h"

namespace poet {
namespace onnx_import {
namespace {

// A norm's epsilon (ONNX's default is PyTorch's, 1e-5; torchvision's Inception and
// MobileNetV3 use 1e-3).
OpAttrs norm_attributes(const NodeReader& n, const std::string& path) {
  OpAttrs a;
  a.epsilon = n.get_float("epsilon", 1e-5f);
  if (!(a.epsilon > 0 && a.epsilon < 1))
    throw InputError(
        fmt::format("'{}': node '{}' ({}): epsilon {} is outside (0, 1)", path, n.label(), n.op_type(), a.epsilon));
  return a;
}

// The operators mapped onto poet's, and those computed only on constants (folded).
const std::vector<std::string>& layer_ops() {
  static const std::vector<std::string> ops = {
      "Add",     "AveragePool", "BatchNormalization", "Clip",     "Concat",  "Conv",    "Div (by a constant)",
      "Dropout", "Erf (in GELU)", "Expand (a class token)", "Flatten",  "Gather (one index)", "Gemm",
      "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity", "LayerNormalization", "MatMul", "MaxPool",
      "Mul (by a constant, or broadcast)", "Pad",
      "ReduceMean (global pooling, in layer norm)", "Relu", "Reshape", "Sigmoid", "Slice", "Softmax", "Tanh", "Transpose"};
  return ops;
}
const std::vector<std::string>& constant_ops() {
  static const std::vector<std::string> ops = {"Cast",  "Concat", "Constant", "ConstantOfShape", "Div",
                                               "Equal", "Gather", "Mul",      "Shape",           "Slice",
                                               "Squeeze", "Sub",  "Unsqueeze", "Where"};
  return ops;
}

// An ONNX value: the output of a poet node (an activation) or a constant.
struct Value {
  NodeId node = -1;
  Shape onnx_shape;  // the activation's shape as ONNX sees it (global pooling keeps 1x1)
  std::optional<ConstTensor> constant;
};

// A weight tensor and whether the file stores it transposed to poet's layout.
struct Weight {
  const ConstTensor* tensor = nullptr;
  std::string value_name;  // the name the node reads it by (an initializer, or an Identity's output)
  bool transposed = false;
};

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, const std::string& path, int batch)
      : model_(model), path_(path), batch_(batch) {}

  OnnxModel run();

 private:
  [[noreturn]] void fail(const NodeReader& n, const std::string& why) const {
    throw InputError(fmt::format("'{}': node '{}' ({}): {}", path_, n.label(), n.op_type(), why));
  }
  [[noreturn]] void unsupported(const NodeReader& n, const std::string& why) const {
    fail(n, fmt::format("{}; poet imports {} (docs/ONNX.md)", why, onnx_supported_operators()));
  }

  void read_initializers();
  NodeId add_input(const ::onnx::ValueInfoProto& v);
  void collect_inferred_shapes(const ::onnx::ModelProto& checked);
  void import_node(const NodeReader& n);
  void check_unused_outputs(const NodeReader& n);

  const Value& value(const NodeReader& n, int i);
  NodeId activation(const NodeReader& n, int i);
  // The activation with the shape ONNX sees (global pooling's [N, C] reshaped to [N, C, 1, 1]).
  NodeId activation_as_onnx(const NodeReader& n, int i);
  const ConstTensor* constant(const NodeReader& n, int i);  // null: the input is left out
  Weight weight(const NodeReader& n, int i, Shape expected_dims, const std::string& what);

  std::string unique_name(const NodeReader& n);
  NodeId make(const NodeReader& n, OpKind op, std::vector<NodeId> inputs, OpArgs args = {});
  void set_parameters(const NodeReader& n, NodeId id, const std::vector<Weight>& weights);
  void bind(const NodeReader& n, NodeId id, std::optional<Shape> onnx_shape = std::nullopt);
  // Binds value `output` (of a later node a pattern took in) to node id.
  void bind_output(const NodeReader& n, const std::string& output, NodeId id,
                   std::optional<Shape> onnx_shape = std::nullopt);
  void alias(const NodeReader& n, int input);

  // The stride and padding of a Conv or pooling node as poet's window operators take them
  // (undilated, explicit or VALID padding, one stride for both axes, each axis padded alike
  // on both sides); `pads` replaces the node's own (a Pad folded into a pool).
  struct Window {
    int stride, pad_h, pad_w;
  };
  Window window(const NodeReader& n, const char* operation, std::optional<std::vector<std::int64_t>> pads = {});
  NodeId conv(const NodeReader& n);
  NodeId gemm(const NodeReader& n);
  NodeId matmul(const NodeReader& n);
  NodeId clip(const NodeReader& n);
  NodeId batch_norm(const NodeReader& n);
  NodeId layer_norm(const NodeReader& n);
  NodeId pool(const NodeReader& n, OpKind op);
  std::optional<NodeId> reshape(const NodeReader& n);  // none: a reshape to the same shape
  NodeId dropout(const NodeReader& n);
  void pad(const NodeReader& n);
  NodeId softmax(const NodeReader& n);
  void transpose(const NodeReader& n);
  void slice(const NodeReader& n);
  void gather(const NodeReader& n);
  void scale(const NodeReader& n);  // Mul or Div by a constant scalar, or GELU's Erf pattern
  NodeId mul(const NodeReader& n);   // of two activations
  void hard_sigmoid(const NodeReader& n);
  void reduce_mean(const NodeReader& n);  // layer norm's decomposition
  void expand(const NodeReader& n);
  std::optional<NodeId> prepend_tokens(const NodeReader& n);
  NodeId add(const NodeReader& n);

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
  std::int64_t model_opset() const;

  const ::onnx::ModelProto& model_;
  const std::string& path_;
  int batch_;
  Graph g_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, std::vector<int>> readers_;  // value -> indices of the nodes reading it
  std::set<std::string> graph_outputs_;
  std::unordered_map<std::string, Shape> inferred_;  // ONNX's static shapes of the values
  std::set<std::string> names_;
  std::vector<ImportedParameters> parameters_;
  std::set<int> absorbed_;  // Add nodes folded into the MatMul before them as its bias
  // AveragePool index -> the zero padding (rows, columns) of the Pad before it, which torch
  // writes out for count_include_pad=True: poet's average pooling counts its padding so.
  std::map<int, std::pair<std::int64_t, std::int64_t>> pool_padding_;
  bool has_weights_ = true;
  std::unordered_map<std::string, int> producer_;        // value -> index of the node making it
  std::unordered_map<std::string, ConstTensor> later_;   // constants of Constant nodes read ahead
  std::set<int> taken_;                                  // nodes a pattern took in (layer norm, GELU)
  std::unordered_map<std::string, std::string> tokens_;  // Expand output -> the learned tokens' initializer
  int folded_ = 0;
  int index_ = 0;  // of the node being imported
};

// A kernel size, stride, pad or group count as the operator's int attribute: InputError
// beyond any real model's (which could not be a window over an image poet holds).
int window_attribute(const NodeReader& n, std::int64_t value, const char* what, const std::string& path) {
  if (value < 0 || value > (1 << 20))
    throw InputError(fmt::format("'{}': node '{}' ({}): {} {} is out of range", path, n.label(), n.op_type(), what,
                                 value));
  return static_cast<int>(value);
}

std::string dims_string(const Shape& s) { return s.empty() ? "a scalar" : "[" + fmt::format("{}", fmt::join(s, ", ")) + "]"; }

OnnxModel Importer::run() {
  const ::onnx::GraphProto& graph = model_.graph();
  for (const auto& o : graph.output()) graph_outputs_.insert(o.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& in : graph.node(i).input())
      if (!in.empty()) readers_[in].push_back(i);
    for (const std::string& out : graph.node(i).output()) producer_[out] = i;
  }
  read_initializers();
  g_.set_name(std::filesystem::path(path_).stem().string());

  const ::onnx::ValueInfoProto* input = nullptr;
  std::string inputs;
  for (const auto& v : graph.input()) {
    if (values_.count(v.name())) continue;  // an initializer listed as an input (IR version 3)
    inputs += (inputs.empty() ? "'" : ", '") + v.name() + "'";
    if (input)
      throw InputError(fmt::format("'{}' has several inputs ({}); poet trains models with one input, the batch of "
                                   "samples",
                                   path_, inputs));
    input = &v;
  }
  if (!input) throw InputError(fmt::format("'{}' has no input besides its weights", path_));
  collect_inferred_shapes(checked_with_shapes(model_, input->name(), batch_, path_));
  add_input(*input);

  for (index_ = 0; index_ < graph.node_size(); ++index_) import_node(NodeReader(graph.node(index_), index_));
  add_loss();
  g_.validate();

  OnnxModel m;
  m.path = path_;
  m.forward = std::move(g_);
  m.parameters = std::move(parameters_);
  m.has_weights = has_weights_;
  m.onnx_nodes = graph.node_size();
  m.folded_nodes = folded_;
  m.opset = model_opset();
  return m;
}

std::int64_t Importer::model_opset() const {
  for (const auto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

void Importer::read_initializers() {
  for (const auto& t : model_.graph().initializer()) {
    ConstTensor c = read_tensor(t, fmt::format("'{}': initializer '{}'", path_, t.name()));
    values_[t.name()].constant = std::move(c);
  }
}

NodeId Importer::add_input(const ::onnx::ValueInfoProto& v) {
  const auto& type = v.type();
  if (!type.has_tensor_type() || type.tensor_type().elem_type() != ::onnx::TensorProto::FLOAT ||
      !type.tensor_type().has_shape())
    throw InputError(fmt::format("'{}': input '{}' must be a float32 tensor of known rank; poet trains float32 models",
                                 path_, v.name()));
  Shape shape;
  const auto& dims = type.tensor_type().shape().dim();
  for (int d = 0; d < dims.size(); ++d) {
    if (d == 0) {
      shape.push_back(batch_);  // the batch, whatever the file says (a number or a name)
      continue;
    }
    if (!dims[d].has_dim_value() || dims[d].dim_value() <= 0)
      throw InputError(fmt::format("'{}': dimension {} of input '{}' is not a fixed positive size; export the model "
                                   "with a fixed input size (only the batch may vary)",
                                   path_, d, v.name()));
    shape.push_back(dims[d].dim_value());
  }
  if (shape.size() < 2)
    throw InputError(fmt::format("'{}': input '{}' has rank {}; poet needs [batch, ...]", path_, v.name(), shape.size()));
  Node n;
  n.name = v.name().empty() ? "input" : v.name();
  names_.insert(n.name);
  n.op = OpKind::Input;
  n.shape = shape;
  const NodeId id = g_.add(std::move(n));
  values_[v.name()] = Value{.node = id, .onnx_shape = shape, .constant = std::nullopt};
  return id;
}

void Importer::collect_inferred_shapes(const ::onnx::ModelProto& checked) {
  auto take = [&](const ::onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    inferred_[v.name()] = s;
  };
  for (const auto& v : checked.graph().value_info()) take(v);
  for (const auto& v : checked.graph().output()) take(v);
}

const Value& Importer::value(const NodeReader& n, int i) {
  const std::string name = n.input(i);
  if (name.empty()) fail(n, fmt::format("input {} is missing", i));
  const auto it = values_.find(name);
  if (it == values_.end())
    fail(n, fmt::format("input '{}' is neither an initializer nor the output of an earlier node", name));
  return it->second;
}

NodeId Importer::activation(const NodeReader& n, int i) {
  const Value& v = value(n, i);
  if (v.node < 0)
    unsupported(n, fmt::format("input {} ('{}') is a constant where poet's operator takes an activation", i,
                               n.input(i)));
  return v.node;
}

NodeId Importer::activation_as_onnx(const NodeReader& n, int i) {
  const NodeId x = activation(n, i);
  const Shape seen = value(n, i).onnx_shape;
  if (g_.node(x).shape == seen) return x;
  OpAttrs a;
  a.dims = seen;
  return make(n, OpKind::Reshape, {x}, {.attrs = a});
}

const ConstTensor* Importer::constant(const NodeReader& n, int i) {
  if (n.input(i).empty()) return nullptr;
  const Value& v = value(n, i);
  if (!v.constant)
    unsupported(n, fmt::format("input {} ('{}') is computed at run time where poet needs a constant", i, n.input(i)));
  return &*v.constant;
}

Weight Importer::weight(const NodeReader& n, int i, Shape expected, const std::string& what) {
  const ConstTensor* t = constant(n, i);
  if (!t) fail(n, fmt::format("its {} (input {}) is missing", what, i));
  if (!t->is_float) fail(n, fmt::format("its {} '{}' is not a float tensor", what, n.input(i)));
  if (!expected.empty() && t->dims != expected)
    fail(n, fmt::format("its {} '{}' has dimensions {}, expected {}", what, n.input(i), dims_string(t->dims),
                        dims_string(expected)));
  return {.tensor = t, .value_name = n.input(i)};
}

std::string Importer::unique_name(const NodeReader& n) {
  std::string base = n.proto().name();
  if (base.empty()) base = fmt::format("{}_{}", n.op_type(), index_);
  std::string name = base;
  for (int k = 2; names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
  names_.insert(name);
  return name;
}

NodeId Importer::make(const NodeReader& n, OpKind op, std::vector<NodeId> inputs, OpArgs args) {
  std::vector<Shape> shapes;
  for (const NodeId in : inputs) shapes.push_back(g_.node(in).shape);
  args.inputs = shapes;
  OpResult r;
  try {
    r = apply_rules(op, args);
  } catch (const InputError& e) {
    fail(n, fmt::format("as poet's {}: {}", op_name(op), e.what()));
  }
  return g_.add(node_by_rules(unique_name(n), op, Role::Forward, std::move(r), std::move(inputs), args));
}

void Importer::set_parameters(const NodeReader& n, NodeId id, const std::vector<Weight>& weights) {
  const Node& node = g_.node(id);
  ImportedParameters p;
  p.node = node.name;
  std::int64_t offset = 0;
  bool data = true;
  for (const Weight& w : weights) {
    const ConstTensor& t = *w.tensor;
    InitializerPiece piece{.initializer = w.value_name, .offset = offset, .count = t.elements()};
    if (w.transposed) {
      piece.file_rows = t.dims.at(0);
      piece.file_cols = t.dims.at(1);
    }
    offset += t.elements();
    p.pieces.push_back(std::move(piece));
    data = data && t.has_data;
  }
  if (offset != node.param_count)
    fail(n, fmt::format("its weights hold {} values where poet's {} has {} parameters", offset, op_name(node.op),
                        node.param_count));
  if (data) {
    p.values.reserve(static_cast<std::size_t>(offset));
    for (const Weight& w : weights) {
      const std::vector<float>& v = w.tensor->floats;
      if (!w.transposed) {
        p.values.insert(p.values.end(), v.begin(), v.end());
        continue;
      }
      const std::int64_t rows = w.tensor->dims[0], cols = w.tensor->dims[1];
      for (std::int64_t c = 0; c < cols; ++c)
        for (std::int64_t r = 0; r < rows; ++r) p.values.push_back(v[static_cast<std::size_t>(r * cols + c)]);
    }
  } else {
    has_weights_ = false;
  }
  parameters_.push_back(std::move(p));
}

// Records node `id` as the value of n's first output, after checking poet's shape against
// the one ONNX's shape inference found.
void Importer::bind(const NodeReader& n, NodeId id, std::optional<Shape> onnx_shape) {
  bind_output(n, n.proto().output(0), id, std::move(onnx_shape));
}

void Importer::bind_output(const NodeReader& n, const std::string& output, NodeId id, std::optional<Shape> onnx_shape) {
  const Shape seen = onnx_shape ? *onnx_shape : g_.node(id).shape;
  const auto it = inferred_.find(output);
  if (it != inferred_.end() && it->second != seen)
    unsupported(n, fmt::format("poet's {} makes {} of it where ONNX infers {}: an attribute poet does not model",
                               op_name(g_.node(id).op), shape_string(seen), shape_string(it->second)));
  values_[output] = Value{.node = id, .onnx_shape = seen, .constant = std::nullopt};
}

void Importer::alias(const NodeReader& n, int input) {
  values_[n.proto().output(0)] = value(n, input);
  ++folded_;
}

void Importer::check_unused_outputs(const NodeReader& n) {
  for (int o = 1; o < n.proto().output_size(); ++o) {
    const std::string& out = n.proto().output(o);
    if (!out.empty() && (readers_.count(out) || graph_outputs_.count(out)))
      unsupported(n, fmt::format("its output {} ('{}') is used; poet computes only the first output of {}", o, out,
                                 n.op_type()));
  }
}

void Importer::import_node(const NodeReader& n) {
  const auto& proto = n.proto();
  if (!proto.domain().empty() && proto.domain() != "ai.onnx")
    unsupported(n, fmt::format("operator domain '{}' is not ONNX's own", proto.domain()));
  if (proto.output_size() == 0 || proto.output(0).empty()) fail(n, "it has no output");
  const std::string& op = n.op_type();
  if (taken_.count(index_)) {  // part of a pattern imported as one node (layer norm, GELU)
    ++folded_;
    return;
  }
  if (absorbed_.count(index_)) {  // a bias add folded into the MatMul before it
    const int linear = value(n, 0).node >= 0 ? 0 : 1;
    values_[proto.output(0)] = value(n, linear);
    ++folded_;
    return;
  }

  // Constant computations.
  bool all_constant = true;
  std::vector<const ConstTensor*> consts;
  for (int i = 0; i < n.input_count(); ++i) {
    if (n.input(i).empty()) {
      consts.push_back(nullptr);
      continue;
    }
    const Value& v = value(n, i);
    all_constant = all_constant && v.constant.has_value();
    consts.push_back(v.constant ? &*v.constant : nullptr);
  }
  if (op == "Shape") {
    const Value& v = value(n, 0);
    const Shape& dims = v.constant ? v.constant->dims : v.onnx_shape;
    const auto rank = static_cast<std::int64_t>(dims.size());
    auto clamp = [&](std::int64_t a) { return std::clamp(a < 0 ? a + rank : a, std::int64_t{0}, rank); };
    const std::int64_t begin = clamp(n.get_int("start", 0)), end = clamp(n.get_int("end", rank));
    ConstTensor t;
    for (std::int64_t d = begin; d < end; ++d) t.ints.push_back(dims[static_cast<std::size_t>(d)]);
    t.dims = {static_cast<std::int64_t>(t.ints.size())};
    t.from_shape = true;
    values_[proto.output(0)].constant = std::move(t);
    ++folded_;
    return;
  }
  if (op == "Expand" && consts.size() == 2 && consts[0] && consts[0]->is_float) return expand(n);
  if (all_constant && is_foldable(op)) {
    ConstTensor t;
    try {
      t = fold(n, consts);
    } catch (const InputError& e) {
      throw InputError(fmt::format("'{}': {}", path_, e.what()));
    }
    // A weight read through an Identity keeps the Identity's name, which export writes.
    t.name = op == "Identity" ? proto.output(0) : std::string();
    t.from_shape = std::any_of(consts.begin(), consts.end(), [](const ConstTensor* c) { return c && c->from_shape; });
    values_[proto.output(0)].constant = std::move(t);
    ++folded_;
    return;
  }

  check_unused_outputs(n);
  if (op == "Identity") return alias(n, 0);
  if (op == "Conv") return bind(n, conv(n));
  if (op == "Gemm") return bind(n, gemm(n));
  if (op == "MatMul") return bind(n, matmul(n));
  if (op == "Relu") return bind(n, make(n, OpKind::ReLU, {activation(n, 0)}));
  if (op == "Sigmoid") return bind(n, make(n, OpKind::Sigmoid, {activation(n, 0)}));
  if (op == "Tanh") return bind(n, make(n, OpKind::Tanh, {activation(n, 0)}));
  if (op == "Clip") return bind(n, clip(n));
  if (op == "Softmax") return bind(n, softmax(n));
  if (op == "BatchNormalization") return bind(n, batch_norm(n));
  if (op == "LayerNormalization") return bind(n, layer_norm(n));
  if (op == "MaxPool") return bind(n, pool(n, OpKind::MaxPool2d));
  if (op == "AveragePool") return bind(n, pool(n, OpKind::AvgPool2d));
  if (op == "Flatten") {
    if (n.get_int("axis", 1) != 1) unsupported(n, "poet's flatten keeps the batch axis only (axis 1)");
    return bind(n, make(n, OpKind::Flatten, {activation(n, 0)}));
  }
  if (op == "Dropout") return bind(n, dropout(n));
  if (op == "GlobalAveragePool") {
    const NodeId x = activation(n, 0);
    Shape seen = g_.node(x).shape;
    if (seen.size() < 3) unsupported(n, "it needs an [N, C, H, W] input");
    std::fill(seen.begin() + 2, seen.end(), 1);  // poet's global pooling drops the 1x1
    return bind(n, make(n, OpKind::GlobalAvgPool, {x}), seen);
  }
  if (op == "Add") return bind(n, add(n));
  if (op == "Transpose") return transpose(n);
  if (op == "Slice") return slice(n);
  if (op == "Gather") return gather(n);
  if (op == "Mul" && value(n, 0).node >= 0 && value(n, 1).node >= 0) return bind(n, mul(n));
  if (op == "Mul" || op == "Div") return scale(n);
  if (op == "HardSigmoid") return hard_sigmoid(n);
  if (op == "HardSwish") return bind(n, make(n, OpKind::HardSwish, {activation(n, 0)}));
  if (op == "ReduceMean") return reduce_mean(n);
  if (op == "Reshape") {
    if (const auto id = reshape(n)) return bind(n, *id);
    return alias(n, 0);
  }
  if (op == "Concat") {
    if (const auto id = prepend_tokens(n)) return bind(n, *id);
    std::vector<NodeId> parts;
    for (int i = 0; i < n.input_count(); ++i) parts.push_back(activation(n, i));
    const auto rank = static_cast<std::int64_t>(g_.node(parts.at(0)).shape.size());
    std::int64_t axis = n.get_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis != 1) unsupported(n, fmt::format("poet concatenates along axis 1 (channels) only, not axis {}", axis));
    return bind(n, make(n, OpKind::Concat, parts));
  }
  if (op == "Pad") return pad(n);
  if (op == "Erf") unsupported(n, "poet computes Erf only within GELU, 0.5 x (1 + erf(x / sqrt 2))");
  const bool folds_only = std::find(constant_ops().begin(), constant_ops().end(), op) != constant_ops().end();
  unsupported(n, folds_only ? fmt::format("poet computes {} only on constants (shape computations), and this one "
                                          "reads an activation",
                                          op)
                            : fmt::format("poet has no operator for ONNX's {}", op));
}

Importer::Window Importer::window(const NodeReader& n, const char* operation,
                                  std::optional<std::vector<std::int64_t>> pads) {
  if (const auto d = n.get_ints("dilations"); d && std::any_of(d->begin(), d->end(), [](auto v) { return v != 1; }))
    unsupported(n, fmt::format("dilated {} (dilations other than 1) is not supported", operation));
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    unsupported(n, fmt::format("auto_pad {} is not supported; export with explicit pads", auto_pad));
  const std::vector<std::int64_t> strides = n.get_ints("strides").value_or(std::vector<std::int64_t>{1, 1});
  if (!pads) pads = n.get_ints("pads").value_or(std::vector<std::int64_t>{0, 0, 0, 0});
  if (strides.size() != 2 || strides[0] != strides[1] || strides[0] < 1)
    unsupported(n, fmt::format("poet's {} takes one stride for both axes", operation));
  const auto& p = *pads;
  if (p.size() != 4 || p[0] != p[2] || p[1] != p[3] || p[0] < 0 || p[1] < 0)
    unsupported(n, fmt::format("poet's {} pads both sides of an axis alike", operation));
  return {window_attribute(n, strides[0], "stride", path_), window_attribute(n, p[0], "pad", path_),
          window_attribute(n, p[1], "pad", path_)};
}

NodeId Importer::conv(const NodeReader& n) {
  const NodeId x = activation_as_onnx(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  const ConstTensor* w = constant(n, 1);
  if (!w || w->dims.size() != 4 || in.size() != 4)
    unsupported(n, "poet convolves 2-D images only: an [N, C, H, W] input and an [out, in/groups, kh, kw] weight");
  const int groups = window_attribute(n, n.get_int("group", 1), "group", path_);
  if (groups < 1 || in[1] != w->dims[1] * groups)
    fail(n, fmt::format("its weight {} with {} groups does not fit {} input channels", dims_string(w->dims), groups,
                        in[1]));
  const Window geometry = window(n, "convolution");
  OpAttrs a;
  a.kernel_h = window_attribute(n, w->dims[2], "kernel height", path_);
  a.kernel_w = window_attribute(n, w->dims[3], "kernel width", path_);
  a.stride = geometry.stride;
  a.pad_h = geometry.pad_h;
  a.pad_w = geometry.pad_w;
  a.groups = groups;
  a.bias = !n.input(2).empty();
  const std::int64_t out = w->dims[0];
  const NodeId id = make(n, OpKind::Conv2d, {x}, {.attrs = a, .features = out});
  std::vector<Weight> weights = {weight(n, 1, w->dims, "weight")};
  if (a.bias) weights.push_back(weight(n, 2, {out}, "bias"));
  set_parameters(n, id, weights);
  return id;
}

NodeId Importer::gemm(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const ConstTensor* b = constant(n, 1);
  if (!b || b->dims.size() != 2) fail(n, "its B must be a 2-D weight");
  if (n.get_int("transA", 0) != 0 || n.get_float("alpha", 1) != 1.0f || n.get_float("beta", 1) != 1.0f)
    unsupported(n, "poet's linear layer is Gemm with alpha 1, beta 1 and A not transposed");
  const bool trans_b = n.get_int("transB", 0) != 0;
  const std::int64_t out = trans_b ? b->dims[0] : b->dims[1];
  const bool bias = !n.input(2).empty();
  OpAttrs a;
  a.bias = bias;
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (in.size() != 2 || in[1] != (trans_b ? b->dims[1] : b->dims[0]))
    fail(n, fmt::format("its input {} does not fit its weight {}", shape_string(in), dims_string(b->dims)));
  const NodeId id = make(n, OpKind::Linear, {x}, {.attrs = a, .features = out});
  Weight w = weight(n, 1, b->dims, "weight");
  w.transposed = !trans_b;
  std::vector<Weight> weights = {w};
  if (bias) {
    const ConstTensor* c = constant(n, 2);
    if (c->elements() != out || c->dims.size() > 2)
      unsupported(n, fmt::format("its C {} is not one bias per output ({}); poet adds a bias vector",
                                 dims_string(c->dims), out));
    weights.push_back(weight(n, 2, c->dims, "bias"));
  }
  set_parameters(n, id, weights);
  return id;
}

NodeId Importer::matmul(const NodeReader& n) {
  const Value& b = value(n, 1);
  if (b.node >= 0) {  // two activations: poet's batched matmul
    const NodeId x = activation(n, 0), y = activation(n, 1);
    return make(n, OpKind::MatMul, {x, y});
  }
  // x W with W a constant [in, out]: a linear layer, whose bias is the Add that follows
  // when that add is its only reader and adds a constant [out] vector.
  const NodeId x = activation(n, 0);
  const ConstTensor& w = *b.constant;
  if (w.dims.size() != 2) unsupported(n, "poet multiplies by a constant 2-D weight only");
  const std::int64_t out = w.dims[1];
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (in.size() < 2 || in.back() != w.dims[0])
    fail(n, fmt::format("its input {} does not fit its weight {}", shape_string(in), dims_string(w.dims)));
  std::optional<Weight> bias;
  const std::string& y = n.proto().output(0);
  const auto readers = readers_.find(y);
  if (readers != readers_.end() && readers->second.size() == 1 && !graph_outputs_.count(y)) {
    const int next = readers->second.front();
    const auto& add = model_.graph().node(next);
    if (add.op_type() == "Add" && add.input_size() == 2) {
      const std::string& other = add.input(0) == y ? add.input(1) : add.input(0);
      const auto it = values_.find(other);
      if (it != values_.end() && it->second.constant && it->second.constant->is_float &&
          it->second.constant->dims == Shape{out}) {
        bias = Weight{.tensor = &*it->second.constant, .value_name = other};
        absorbed_.insert(next);
      }
    }
  }
  OpAttrs a;
  a.bias = bias.has_value();
  const NodeId id = make(n, OpKind::Linear, {x}, {.attrs = a, .features = out});
  Weight weights = weight(n, 1, w.dims, "weight");
  weights.transposed = true;
  std::vector<Weight> all = {weights};
  if (bias) all.push_back(*bias);
  set_parameters(n, id, all);
  return id;
}

NodeId Importer::clip(const NodeReader& n) {
  // The bounds are inputs from opset 11, attributes before.
  auto bound = [&](int input, const char* attr) -> std::optional<float> {
    if (const ConstTensor* t = constant(n, input)) {
      if (!t->has_data || t->elements() != 1) fail(n, fmt::format("its {} must be a scalar", attr));
      return t->is_float ? t->floats[0] : static_cast<float>(t->ints[0]);
    }
    if (n.find(attr)) return n.get_float(attr, 0);
    return std::nullopt;
  };
  const std::optional<float> lo = bound(1, "min"), hi = bound(2, "max");
  if (lo == 0.0f && hi == 6.0f) return make(n, OpKind::ReLU6, {activation(n, 0)});
  if (lo == 0.0f && !hi) return make(n, OpKind::ReLU, {activation(n, 0)});
  unsupported(n, fmt::format("poet clips to [0, 6] (ReLU6) or [0, inf) (ReLU) only, not [{}, {}]",
                             lo ? fmt::format("{}", *lo) : "-inf", hi ? fmt::format("{}", *hi) : "inf"));
}

NodeId Importer::softmax(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const auto rank = static_cast<std::int64_t>(g_.node(x).shape.size());
  // Opset 13 on: the axis is -1 by default; before, 1 (the rows of a 2-D view).
  std::int64_t axis = n.get_int("axis", model_opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) unsupported(n, fmt::format("poet's softmax is over the last axis, not axis {}", axis));
  return make(n, OpKind::Softmax, {x});
}

NodeId Importer::batch_norm(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (in.size() < 2) fail(n, "it needs an [N, C, ...] input");
  const NodeId id = make(n, OpKind::BatchNorm2d, {x}, {.attrs = norm_attributes(n, path_)});
  const Shape c = {in[1]};
  set_parameters(n, id,
                 {weight(n, 1, c, "scale"), weight(n, 2, c, "bias"), weight(n, 3, c, "running mean"),
                  weight(n, 4, c, "running variance")});
  return id;
}

NodeId Importer::layer_norm(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  std::int64_t axis = n.get_int("axis", -1);
  if (axis < 0) axis += static_cast<std::int64_t>(in.size());
  if (axis != static_cast<std::int64_t>(in.size()) - 1)
    unsupported(n, "poet's layer norm normalizes over the last axis only");
  if (n.input(2).empty()) unsupported(n, "poet's layer norm has a bias (B); this one has none");
  const NodeId id = make(n, OpKind::LayerNorm, {x}, {.attrs = norm_attributes(n, path_)});
  const Shape f = {in.back()};
  set_parameters(n, id, {weight(n, 1, f, "scale"), weight(n, 2, f, "bias")});
  return id;
}

NodeId Importer::pool(const NodeReader& n, OpKind op) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  const auto kernel = n.get_ints("kernel_shape");
  if (!kernel || kernel->size() != 2 || in.size() != 4) unsupported(n, "poet pools 2-D images with a 2-D kernel");
  std::optional<std::vector<std::int64_t>> folded_pads;
  bool counts_padding = n.get_int("count_include_pad", 0) != 0;
  if (const auto it = pool_padding_.find(index_); it != pool_padding_.end()) {  // the Pad before it, folded in
    folded_pads = {it->second.first, it->second.second, it->second.first, it->second.second};
    counts_padding = true;
  }
  const Window geometry = window(n, "pooling", folded_pads);
  if (op == OpKind::AvgPool2d && (geometry.pad_h > 0 || geometry.pad_w > 0) && !counts_padding)
    unsupported(n, "poet's average pooling counts the padding (count_include_pad=1); this one does not");
  OpAttrs a;
  a.kernel_h = window_attribute(n, (*kernel)[0], "kernel height", path_);
  a.kernel_w = window_attribute(n, (*kernel)[1], "kernel width", path_);
  a.stride = geometry.stride;
  a.pad_h = geometry.pad_h;
  a.pad_w = geometry.pad_w;
  if (a.kernel_h < 1 || a.kernel_w < 1 || a.pad_h >= a.kernel_h || a.pad_w >= a.kernel_w)
    unsupported(n, "poet pools with padding narrower than the kernel");
  // ceil_mode rounds the output size up; poet's rule rounds down: equal when the windows tile.
  if (n.get_int("ceil_mode", 0) != 0 &&
      ((in[2] + 2 * a.pad_h - a.kernel_h) % a.stride != 0 || (in[3] + 2 * a.pad_w - a.kernel_w) % a.stride != 0))
    unsupported(n, "ceil_mode adds a partial window here; poet's pooling rounds down (export with ceil_mode=False)");
  return make(n, op, {x}, {.attrs = a});
}

std::optional<NodeId> Importer::reshape(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Value& v = value(n, 0);
  const ConstTensor* target = constant(n, 1);
  if (!target || target->is_float || !target->has_data) fail(n, "its shape must be a constant integer tensor");
  const Shape& from = v.onnx_shape;
  Shape to;
  for (std::size_t i = 0; i < target->ints.size(); ++i)
    to.push_back(target->ints[i] == 0 && i < from.size() ? from[i] : target->ints[i]);
  // The batch: traced exports bake the example's batch into a literal target; it is ours.
  // A target computed from the Shape of a tensor is already of poet's batch.
  if (!target->from_shape && !to.empty() && to[0] != -1) to[0] = from.at(0);
  const std::int64_t total = element_count(from);
  std::int64_t known = 1;
  int unknown = 0;
  for (const std::int64_t d : to) {
    if (d == -1) {
      ++unknown;
      continue;
    }
    if (d < 1 || d > total) unsupported(n, fmt::format("its target dimension {} cannot hold {} elements", d, total));
    if (known > total / d) unsupported(n, fmt::format("its target shape {} exceeds {} elements", dims_string(to), total));
    known *= d;
  }
  if (unknown == 1 && known > 0)
    for (std::int64_t& d : to)
      if (d == -1) d = total / known;
  if (to == from) return std::nullopt;
  if (to.size() == 2 && from.size() >= 2 && to[0] == from[0] && to[1] > 0 && total % to[1] == 0 &&
      total / to[1] == to[0])
    return make(n, OpKind::Flatten, {x});
  if (element_count(to) != total || std::any_of(to.begin(), to.end(), [](std::int64_t d) { return d < 1; }))
    unsupported(n, fmt::format("it reshapes {} to {}, which does not hold its elements", shape_string(from),
                               dims_string(to)));
  OpAttrs a;
  a.dims = to;
  return make(n, OpKind::Reshape, {x}, {.attrs = a});
}

// A Pad adds nothing (torch pads with zeros before an average pool), or pads an image's
// rows and columns with zeros symmetrically for the one AveragePool that reads it, which
// then pools with that padding.
void Importer::pad(const NodeReader& n) {
  activation(n, 0);
  const std::vector<std::int64_t> pads =
      n.get_ints("pads") ? *n.get_ints("pads")
                         : (constant(n, 1) ? int_values(*constant(n, 1), "pads") : std::vector<std::int64_t>{});
  if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; })) return alias(n, 0);
  const ConstTensor* fill = constant(n, 2);
  const bool zeros = !fill || (fill->has_data && fill->is_float &&
                               std::all_of(fill->floats.begin(), fill->floats.end(), [](float v) { return v == 0; }));
  const std::string& y = n.proto().output(0);
  const auto readers = readers_.find(y);
  const bool one_pool = readers != readers_.end() && readers->second.size() == 1 && !graph_outputs_.count(y) &&
                        model_.graph().node(readers->second.front()).op_type() == "AveragePool";
  const bool image = pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0 &&
                     pads[2] == pads[6] && pads[3] == pads[7] && pads[2] >= 0 && pads[3] >= 0;
  const bool constant_zeros = n.get_string("mode", "constant") == "constant" && zeros;
  if (constant_zeros && !(one_pool && image) && pads.size() == 2 * value(n, 0).onnx_shape.size() &&
      std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p >= 0; })) {
    OpAttrs a;
    a.dims = pads;
    return bind(n, make(n, OpKind::Pad, {activation_as_onnx(n, 0)}, {.attrs = a}));
  }
  if (!constant_zeros || !one_pool || !image)
    unsupported(n, "poet pads with zeros only (mode constant), by a begin and an end not negative for each axis");
  const int pool = readers->second.front();
  const NodeReader reader(model_.graph().node(pool), pool);
  if (const auto p = reader.get_ints("pads"); p && std::any_of(p->begin(), p->end(), [](auto v) { return v != 0; }))
    unsupported(n, "the average pool after it pads as well");
  pool_padding_[pool] = {pads[2], pads[3]};
  alias(n, 0);
}

int Importer::sole_reader(const std::string& v, std::string_view op) const {
  const auto it = readers_.find(v);
  if (it == readers_.end() || it->second.size() != 1 || graph_outputs_.count(v)) return -1;
  const int i = it->second.front();
  return model_.graph().node(i).op_type() == op ? i : -1;
}

const std::string& Importer::other_input(int i, const std::string& v) const {
  const auto& node = model_.graph().node(i);
  return node.input(0) == v ? node.input(1) : node.input(0);
}

const ConstTensor* Importer::constant_named(const std::string& name) {
  if (const auto it = values_.find(name); it != values_.end()) return it->second.constant ? &*it->second.constant : nullptr;
  if (const auto it = later_.find(name); it != later_.end()) return &it->second;
  const auto p = producer_.find(name);
  if (p == producer_.end() || model_.graph().node(p->second).op_type() != "Constant") return nullptr;
  return &(later_[name] = constant_value(NodeReader(model_.graph().node(p->second), p->second)));
}

std::optional<float> Importer::scalar(const std::string& name) {
  const ConstTensor* c = constant_named(name);
  if (!c || !c->has_data || c->elements() != 1) return std::nullopt;
  return c->is_float ? c->floats[0] : static_cast<float>(c->ints[0]);
}

bool Importer::is_scalar(const std::string& name, float value, float tolerance) {
  const std::optional<float> v = scalar(name);
  return v && std::abs(*v - value) <= tolerance;
}

std::vector<std::int64_t> Importer::reduced_axes(const NodeReader& n, std::int64_t rank) const {
  std::vector<std::int64_t> axes = n.get_ints("axes").value_or(std::vector<std::int64_t>{});
  if (axes.empty() && n.input_count() > 1) {  // opset 18: an input
    const auto it = values_.find(n.input(1));
    if (it != values_.end() && it->second.constant && !it->second.constant->is_float) axes = it->second.constant->ints;
  }
  for (std::int64_t& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool Importer::over_last_axis(const NodeReader& n, std::int64_t rank) const {
  return reduced_axes(n, rank) == std::vector<std::int64_t>{rank - 1} && n.get_int("keepdims", 1) == 1;
}

void Importer::take_in(std::initializer_list<int> nodes) {
  for (const int i : nodes) taken_.insert(i);
}

void Importer::transpose(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const auto rank = static_cast<std::int64_t>(g_.node(x).shape.size());
  std::vector<std::int64_t> perm = n.get_ints("perm").value_or(std::vector<std::int64_t>{});
  if (perm.empty())  // ONNX's default: the axes reversed
    for (std::int64_t d = rank; d-- > 0;) perm.push_back(d);
  for (std::int64_t& p : perm)
    if (p < 0) p += rank;
  if (std::is_sorted(perm.begin(), perm.end()) && static_cast<std::int64_t>(perm.size()) == rank) return alias(n, 0);
  OpAttrs a;
  a.dims = perm;
  bind(n, make(n, OpKind::Transpose, {x}, {.attrs = a}));
}

// One axis, step 1; the starts, ends and axes are constants (inputs from opset 10).
void Importer::slice(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;
  auto list = [&](int input, const char* attr) -> std::vector<std::int64_t> {
    if (const auto a = n.get_ints(attr)) return *a;
    const ConstTensor* c = constant(n, input);
    return c ? int_values(*c, fmt::format("'{}': node '{}' {}", path_, n.label(), attr)) : std::vector<std::int64_t>{};
  };
  const auto starts = list(1, "starts"), ends = list(2, "ends"), axes = list(3, "axes"), steps = list(4, "steps");
  if (starts.size() != 1 || ends.size() != 1 || axes.size() > 1 ||
      std::any_of(steps.begin(), steps.end(), [](std::int64_t s) { return s != 1; }))
    unsupported(n, "poet slices one axis with step 1");
  const auto rank = static_cast<std::int64_t>(in.size());
  std::int64_t axis = axes.empty() ? 0 : axes[0];
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(n, fmt::format("axis {} is outside its input {}", axes[0], shape_string(in)));
  const std::int64_t size = in[static_cast<std::size_t>(axis)];
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + size : v, std::int64_t{0}, size); };
  const std::int64_t begin = clamp(starts[0]), end = clamp(ends[0]);
  if (begin == 0 && end == size) return alias(n, 0);
  if (begin >= end) unsupported(n, "the slice is empty");
  OpAttrs a;
  a.axis = static_cast<int>(axis);
  a.begin = begin;
  a.end = end;
  bind(n, make(n, OpKind::Slice, {x}, {.attrs = a}));
}

// Gather of an activation at one constant index: the slice of that index, then, for a
// scalar index, a reshape that drops the axis (a vision transformer's class token).
void Importer::gather(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;
  const ConstTensor* index = constant(n, 1);
  if (!index || index->is_float || !index->has_data || index->elements() != 1)
    unsupported(n, "poet gathers an activation at one constant index (embeddings of token ids are not imported)");
  const auto rank = static_cast<std::int64_t>(in.size());
  std::int64_t axis = n.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(n, fmt::format("axis {} is outside its input {}", axis, shape_string(in)));
  const std::int64_t size = in[static_cast<std::size_t>(axis)];
  std::int64_t i = index->ints[0];
  if (i < -size || i >= size) fail(n, fmt::format("index {} is outside an axis of {}", i, size));
  if (i < 0) i += size;
  OpAttrs a;
  a.axis = static_cast<int>(axis);
  a.begin = i;
  a.end = i + 1;
  NodeId id = make(n, OpKind::Slice, {x}, {.attrs = a});
  if (index->dims.empty()) {
    OpAttrs r;
    r.dims = in;
    r.dims.erase(r.dims.begin() + axis);
    id = make(n, OpKind::Reshape, {id}, {.attrs = r});
  }
  bind(n, id);
}

// x / c or x c with c a constant scalar: poet's scale. x / sqrt 2 followed by Erf, + 1,
// x times that and 0.5 times that is the exact GELU, imported as one node.
void Importer::scale(const NodeReader& n) {
  const bool divide = n.op_type() == "Div";
  const int x_slot = !divide && value(n, 0).node < 0 ? 1 : 0;
  const NodeId x = activation(n, x_slot);
  const std::string& c = n.input(1 - x_slot);
  const std::optional<float> factor = value(n, 1 - x_slot).node < 0 ? scalar(c) : std::nullopt;
  if (!factor)
    unsupported(n, fmt::format("poet computes {} of an activation by a constant scalar only", n.op_type()));
  if (divide && std::abs(*factor - std::sqrt(2.0f)) < 1e-6f) {
    const std::string& x_name = n.input(0);
    const int erf = sole_reader(n.proto().output(0), "Erf");
    const int plus = erf < 0 ? -1 : sole_reader(model_.graph().node(erf).output(0), "Add");
    const int times = plus < 0 ? -1 : sole_reader(model_.graph().node(plus).output(0), "Mul");
    const int half = times < 0 ? -1 : sole_reader(model_.graph().node(times).output(0), "Mul");
    if (half >= 0 && is_scalar(other_input(plus, model_.graph().node(erf).output(0)), 1.0f) &&
        other_input(times, model_.graph().node(plus).output(0)) == x_name &&
        is_scalar(other_input(half, model_.graph().node(times).output(0)), 0.5f)) {
      take_in({erf, plus, times, half});
      return bind_output(n, model_.graph().node(half).output(0), make(n, OpKind::GELUErf, {x}));
    }
  }
  if (*factor == 0 && divide) fail(n, "it divides by zero");
  OpAttrs a;
  a.scale = divide ? 1.0 / static_cast<double>(*factor) : static_cast<double>(*factor);
  bind(n, make(n, OpKind::Scale, {x}, {.attrs = a}));
}

// Of two activations, the smaller broadcast over the larger where it has size 1 (torch's
// squeeze-and-excitation: [N, C, H, W] by [N, C, 1, 1]).
NodeId Importer::mul(const NodeReader& n) {
  NodeId a = activation_as_onnx(n, 0), b = activation_as_onnx(n, 1);
  if (element_count(g_.node(a).shape) < element_count(g_.node(b).shape)) std::swap(a, b);
  return make(n, OpKind::Mul, {a, b});
}

// torch's hardsigmoid (alpha 1/6, beta 1/2); followed by the Mul of its input by it, the
// hardswish torch writes before opset 14, imported as one node.
void Importer::hard_sigmoid(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  if (std::abs(n.get_float("alpha", 0.2f) - 1.0f / 6) > 1e-6f || n.get_float("beta", 0.5f) != 0.5f)
    unsupported(n, fmt::format("poet's hard sigmoid is torch's, alpha 1/6 and beta 1/2, not alpha {} and beta {}",
                               n.get_float("alpha", 0.2f), n.get_float("beta", 0.5f)));
  const int times = sole_reader(n.proto().output(0), "Mul");
  if (times >= 0 && other_input(times, n.proto().output(0)) == n.input(0)) {
    take_in({times});
    return bind_output(n, model_.graph().node(times).output(0), make(n, OpKind::HardSwish, {x}));
  }
  bind(n, make(n, OpKind::HardSigmoid, {x}));
}

// The mean over an image's rows and columns (torch's x.mean([2, 3])) is global average
// pooling. torch writes LayerNorm before opset 17 as mean = ReduceMean(x), d = x - mean,
// var = ReduceMean(d^2), y = d / Sqrt(var + eps) * weight + bias over the last axis:
// imported as one layer norm.
void Importer::reduce_mean(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;
  const auto rank = static_cast<std::int64_t>(in.size());
  if (rank == 4 && reduced_axes(n, rank) == std::vector<std::int64_t>{2, 3}) {
    const bool keeps = n.get_int("keepdims", 1) != 0;
    return bind(n, make(n, OpKind::GlobalAvgPool, {x}), keeps ? Shape{in[0], in[1], 1, 1} : Shape{in[0], in[1]});
  }
  const auto& graph = model_.graph();
  auto out = [&](int i) -> const std::string& { return graph.node(i).output(0); };
  auto unmatched = [&] {
    unsupported(n, "poet imports ReduceMean over an image's rows and columns (global pooling), or within layer "
                   "norm's decomposition over the last axis: (x - mean) / Sqrt(mean((x - mean)^2) + eps) * weight + bias");
  };
  if (!over_last_axis(n, rank)) unmatched();
  const int sub = sole_reader(out(index_), "Sub");
  if (sub < 0 || graph.node(sub).input(0) != n.input(0)) unmatched();
  const auto centered = readers_.find(out(sub));
  if (centered == readers_.end() || centered->second.size() != 2 || graph_outputs_.count(out(sub))) unmatched();
  int pow = centered->second[0], div = centered->second[1];
  if (graph.node(pow).op_type() != "Pow") std::swap(pow, div);
  if (graph.node(pow).op_type() != "Pow" || graph.node(div).op_type() != "Div" ||
      graph.node(pow).input(0) != out(sub) || !is_scalar(graph.node(pow).input(1), 2.0f) ||
      graph.node(div).input(0) != out(sub))
    unmatched();
  const int variance = sole_reader(out(pow), "ReduceMean");
  if (variance < 0 || !over_last_axis(NodeReader(graph.node(variance), variance), rank)) unmatched();
  const int plus = sole_reader(out(variance), "Add");
  const std::optional<float> eps = plus < 0 ? std::nullopt : scalar(other_input(plus, out(variance)));
  const int root = plus < 0 ? -1 : sole_reader(out(plus), "Sqrt");
  if (!eps || root < 0 || sole_reader(out(root), "Div") != div) unmatched();
  const int mul = sole_reader(out(div), "Mul");
  const int bias = mul < 0 ? -1 : sole_reader(out(mul), "Add");
  if (bias < 0) unsupported(n, "poet's layer norm has a weight and a bias; this decomposition has none");
  const Shape features = {in.back()};
  auto learned = [&](int node, const std::string& v) {
    const std::string& name = other_input(node, v);
    const ConstTensor* t = constant_named(name);
    if (!t || !t->is_float || t->dims != features)
      unsupported(n, fmt::format("the layer norm's '{}' is not a float vector of {} features", name, in.back()));
    return Weight{.tensor = t, .value_name = name};
  };
  const Weight weight = learned(mul, out(div)), shift = learned(bias, out(mul));
  OpAttrs a;
  a.epsilon = *eps;
  if (!(a.epsilon > 0 && a.epsilon < 1)) fail(n, fmt::format("epsilon {} is outside (0, 1)", a.epsilon));
  take_in({sub, pow, variance, plus, root, div, mul, bias});
  const NodeId id = make(n, OpKind::LayerNorm, {x}, {.attrs = a});
  set_parameters(n, id, {weight, shift});
  bind_output(n, out(bias), id);
}

// A float initializer [1, T, D] expanded over the batch and read only by a Concat: learned
// tokens that the Concat puts before each sample's (torchvision's ViT class token).
void Importer::expand(const NodeReader& n) {
  const ConstTensor* t = constant(n, 0);
  const std::string& y = n.proto().output(0);
  const auto readers = readers_.find(y);
  const bool one_concat = readers != readers_.end() && readers->second.size() == 1 && !graph_outputs_.count(y) &&
                          model_.graph().node(readers->second.front()).op_type() == "Concat";
  if (!one_concat || t->dims.size() != 3 || t->dims[0] != 1)
    unsupported(n, "poet expands only a [1, tokens, dim] weight over the batch, for the Concat that reads it "
                   "(a class token)");
  tokens_[y] = n.input(0);
  values_[y] = Value{};  // neither an activation nor a constant: the Concat reads it
  ++folded_;
}

std::optional<NodeId> Importer::prepend_tokens(const NodeReader& n) {
  const auto t = tokens_.find(n.input(0));
  if (t == tokens_.end()) return std::nullopt;
  const NodeId x = n.input_count() == 2 ? activation(n, 1) : -1;
  const Shape in = x < 0 ? Shape{} : g_.node(x).shape;
  const ConstTensor& tokens = *values_.at(t->second).constant;
  std::int64_t axis = n.get_int("axis", 1);
  if (axis < 0) axis += 3;
  if (x < 0 || axis != 1 || in.size() != 3 || in[2] != tokens.dims[2])
    unsupported(n, fmt::format("poet puts learned tokens {} before a [batch, seq, dim] activation along axis 1",
                               dims_string(tokens.dims)));
  const NodeId id = make(n, OpKind::PrependTokens, {x}, {.features = tokens.dims[1]});
  set_parameters(n, id, {Weight{.tensor = &tokens, .value_name = t->second}});
  return id;
}

// Two activations of one shape; or an activation and a float initializer over its trailing
// axes (a position embedding), which is learned.
NodeId Importer::add(const NodeReader& n) {
  const int p_slot = value(n, 0).node < 0 ? 0 : (value(n, 1).node < 0 ? 1 : -1);
  if (p_slot >= 0) {
    const NodeId x = activation(n, 1 - p_slot);
    const Shape in = g_.node(x).shape;
    const ConstTensor* p = constant(n, p_slot);
    Shape trailing = p->dims;
    while (!trailing.empty() && trailing.front() == 1) trailing.erase(trailing.begin());
    if (!p->is_float || trailing.size() > in.size() || !std::equal(trailing.rbegin(), trailing.rend(), in.rbegin()))
      unsupported(n, fmt::format("poet adds a learned tensor over an activation's trailing axes; {} does not fit {}",
                                 dims_string(p->dims), shape_string(in)));
    const NodeId id = make(n, OpKind::AddParameter, {x}, {.features = p->elements()});
    set_parameters(n, id, {Weight{.tensor = p, .value_name = n.input(p_slot)}});
    return id;
  }
  const NodeId a = activation(n, 0), b = activation(n, 1);
  if (g_.node(a).shape != g_.node(b).shape)
    unsupported(n, fmt::format("it broadcasts {} and {}; poet's add takes two tensors of one shape",
                               shape_string(g_.node(a).shape), shape_string(g_.node(b).shape)));
  return make(n, OpKind::Add, {a, b});
}

NodeId Importer::dropout(const NodeReader& n) {
  float p = n.get_float("ratio", 0.5f);  // an attribute before opset 12, an input from it
  if (const ConstTensor* r = constant(n, 1)) {
    if (!r->is_float || r->elements() != 1 || !r->has_data) fail(n, "its ratio must be a float scalar");
    p = r->floats[0];
  }
  if (!(p >= 0.0f && p < 1.0f)) fail(n, fmt::format("its ratio {} is outside [0, 1)", p));
  OpAttrs a;
  a.dropout_p = p;
  return make(n, OpKind::Dropout, {activation(n, 0)}, {.attrs = a});
}

void Importer::add_loss() {
  const auto& outputs = model_.graph().output();
  if (outputs.size() != 1)
    throw InputError(fmt::format("'{}' has {} outputs; poet trains a model with one output, the logits", path_,
                                 outputs.size()));
  const auto it = values_.find(outputs[0].name());
  if (it == values_.end() || it->second.node < 0)
    throw InputError(fmt::format("'{}': output '{}' is not computed from the input", path_, outputs[0].name()));
  const Node& logits = g_.node(it->second.node);
  if (logits.shape.size() != 2)
    throw InputError(fmt::format("'{}': output '{}' has shape {}; poet trains classifiers, whose output is "
                                 "[batch, classes] logits",
                                 path_, outputs[0].name(), shape_string(logits.shape)));
  if (logits.op == OpKind::Softmax)
    throw InputError(fmt::format("'{}': output '{}' is a softmax; poet's loss takes the logits: export the model "
                                 "without its final softmax",
                                 path_, outputs[0].name()));
  const Shape in = logits.shape;
  OpResult r = apply_rules(OpKind::SoftmaxCrossEntropy, {.inputs = std::span(&in, 1), .features = in[1]});
  Node loss;
  loss.name = names_.count("loss") ? "loss_" + std::to_string(names_.size()) : "loss";
  loss.op = OpKind::SoftmaxCrossEntropy;
  loss.role = Role::Loss;
  loss.shape = r.shape;
  loss.flops = r.flops;
  loss.inputs = {it->second.node};
  g_.add(std::move(loss));
}

}  // namespace
}  // namespace onnx_import

std::string onnx_supported_operators() {
  using namespace onnx_import;
  return fmt::format("{}; and on constants only (folded): {}", fmt::join(layer_ops(), ", "),
                     fmt::join(constant_ops(), ", "));
}

OnnxModel import_onnx(const std::string& path, const OnnxImportOptions& options) {
  if (options.batch_size < 1)
    throw InputError(fmt::format("batch size {} is not valid: it must be at least 1", options.batch_size));
  const ::onnx::ModelProto model = onnx_import::read_model_file(path);
  return onnx_import::Importer(model, path, options.batch_size).run();
}

}  // namespace poet
