// The ONNX importer: each node of the file, in its (topological) order, folded into a
// constant or mapped onto one of poet's operators, whose rules make the node.
#include "poet/onnx/onnx_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "constant_folding.h"
#include "importer.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"
#include "tensor_data.h"

namespace poet {
namespace onnx_import {

// A norm's epsilon (ONNX's default is PyTorch's, 1e-5; torchvision's Inception and
// MobileNetV3 use 1e-3).
OpAttrs norm_attributes(const NodeReader& n, const std::string& path) {
  OpAttrs a;
  a.epsilon = n.get_float("epsilon", 1e-5f);
  if (!(a.epsilon > 0 && a.epsilon < 1))
    throw InputError(
        fmt::format("'{}': node '{}' ({}): epsilon {} is outside (0, 1)", path, n.label(), n.op_type(), a.epsilon));
  // ONNX's momentum keeps that much of the running statistics (running = momentum running +
  // (1 - momentum) batch), PyTorch's and poet's takes that much of the batch: torch exports
  // BatchNorm2d(momentum=m) as 1 - m (MNASNet's 0.0003 as 0.9997).
  const float kept = n.get_float("momentum", 0.9f);
  if (!(kept >= 0 && kept <= 1))
    throw InputError(
        fmt::format("'{}': node '{}' ({}): momentum {} is outside [0, 1]", path, n.label(), n.op_type(), kept));
  a.momentum = 1.0 - static_cast<double>(kept);
  return a;
}

// The operators mapped onto poet's, and those computed only on constants (folded).
const std::vector<std::string>& layer_ops() {
  static const std::vector<std::string> ops = {
      "Add (two activations, a learned tensor, or a constant scalar)", "AveragePool", "BatchNormalization", "Clip",
      "Concat", "Conv", "ConvTranspose", "Div (by a constant, or of two activations)", "Dropout",
      "Einsum (a batched matrix product)", "Elu", "Erf (in GELU)",
      "Expand (a class token)", "Flatten", "Gather (one index, or embeddings of token ids)", "Gemm",
      "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity",
      "InstanceNormalization (scale and bias learned, or fixed at ones and zeros; within GroupNorm's decomposition)", "LayerNormalization",
      "LeakyRelu", "MatMul", "MaxPool", "Mul (by a constant, a learned tensor, or broadcast)", "Pad", "PRelu",
      "ReduceMean (global pooling, in layer norm)", "Relu", "Reshape", "Resize (nearest or linear, by whole factors)",
      "Sigmoid", "Slice", "Softmax", "Softplus", "Split", "Squeeze", "Sub (of two activations, or a constant scalar)",
      "Tanh", "Transpose", "Unsqueeze"};
  return ops;
}
bool maps_operator(const std::string& op) {
  return std::ranges::any_of(layer_ops(),
                             [&](const std::string& known) { return known.substr(0, known.find(' ')) == op; });
}

const std::vector<std::string>& constant_ops() {
  static const std::vector<std::string> ops = {
      "Cast", "Ceil", "Concat", "Constant", "ConstantOfShape", "Div", "Equal", "Expand", "Floor", "Gather", "Mod",
      "Mul", "Neg", "Not", "Pow", "Range", "Reshape", "ScatterND", "Shape", "Slice", "Sqrt", "Squeeze", "Sub",
      "Transpose", "Unsqueeze", "Where"};
  return ops;
}

// A kernel size, stride, pad or group count as the operator's int attribute: InputError
// beyond any real model's (which could not be a window over an image poet holds).
int window_attribute(const NodeReader& n, std::int64_t value, const char* what, const std::string& path) {
  if (value < 0 || value > (1 << 20))
    throw InputError(fmt::format("'{}': node '{}' ({}): {} {} is out of range", path, n.label(), n.op_type(), what,
                                 value));
  return static_cast<int>(value);
}

namespace {

// torch folds into one constant what it computes from weights alone, and names it so
// ("onnx::Conv_26" for a convolution's): a batch norm after a convolution in an eval-mode
// export (TrainingMode.EVAL, torch.onnx.export's default), or a weight norm. Such a file
// imports, its folded weights trained as one: seldom what a user who trains meant.
std::optional<std::string> folded_weights_note(const ::onnx::GraphProto& graph, const std::string& path) {
  std::vector<std::string> folded;
  for (const auto& node : graph.node())
    if (node.op_type() == "Conv" && node.input_size() > 1 && node.input(1).starts_with("onnx::Conv_"))
      folded.push_back("'" + node.input(1) + "'");
  if (folded.empty()) return std::nullopt;
  const std::size_t shown = std::min<std::size_t>(folded.size(), 3);
  return fmt::format(
      "{} of the convolutions of '{}' read weights torch computed at export ({}{}): torch folds into one weight what "
      "it computes from weights alone, such as a batch norm after a convolution in an eval-mode export (TrainingMode."
      "EVAL, torch.onnx.export's default) or a weight norm, and poet trains the weights as the file has them. To "
      "train the batch norms as PyTorch does, export with training=torch.onnx.TrainingMode.PRESERVE (docs/ONNX.md)",
      folded.size(), path, fmt::join(folded.begin(), folded.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
      folded.size() > shown ? ", ..." : "");
}

}  // namespace

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
                                   "samples: if the others are the model's weights (torch.onnx.export with "
                                   "export_params=False makes them inputs), export with export_params=True, the "
                                   "default",
                                   path_, inputs));
    input = &v;
  }
  if (!input) throw InputError(fmt::format("'{}' has no input besides its weights", path_));
  input_name_ = input->name();
  if (input->type().tensor_type().shape().dim_size() > 0)
    file_batch_ = input->type().tensor_type().shape().dim(0).dim_value();
  collect_inferred_shapes(checked_with_shapes(model_, input_name_, batch_, path_));
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
  if (auto note = folded_weights_note(graph, path_)) m.notes.push_back(std::move(*note));
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
  const auto element = type.has_tensor_type() ? type.tensor_type().elem_type() : 0;
  const bool ids = element == ::onnx::TensorProto::INT64 || element == ::onnx::TensorProto::INT32;
  if ((element != ::onnx::TensorProto::FLOAT && !ids) || !type.tensor_type().has_shape())
    throw InputError(fmt::format("'{}': input '{}' must be a float32 tensor of known rank, or integer token ids that "
                                 "embeddings read; poet trains float32 models",
                                 path_, v.name()));
  if (ids) check_token_ids(v.name());
  Shape shape;
  const auto& dims = type.tensor_type().shape().dim();
  for (int d = 0; d < dims.size(); ++d) {
    if (d == 0) {
      shape.push_back(batch_);  // the batch, whatever the file says (a number or a name)
      continue;
    }
    if (d == 1 && dims[0].has_dim_value() && dims[1].has_dim_param())
      throw InputError(fmt::format("'{}': input '{}' varies along axis 1 ('{}') and not along axis 0: it takes the batch "
                                   "second, as torch.nn.TransformerEncoder and MultiheadAttention do with "
                                   "batch_first=False ([seq, batch, dim]); poet feeds the batch as the input's first "
                                   "axis: export the model with batch_first=True",
                                   path_, v.name(), dims[1].dim_param()));
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

// An integer input is token ids: every node reading it must be an embedding, a Gather of
// rows (axis 0) of a float [vocab, dim] initializer by it.
void Importer::check_token_ids(const std::string& input) {
  const auto readers = readers_.find(input);
  if (readers == readers_.end())
    throw InputError(fmt::format("'{}': input '{}' is not read by any node", path_, input));
  for (const int i : readers->second) {
    const NodeReader n(model_.graph().node(i), i);
    const auto table = values_.find(n.input(0));
    const bool embedding = n.op_type() == "Gather" && n.input_count() == 2 && n.input(1) == input &&
                           n.input(0) != input && table != values_.end() && table->second.constant &&
                           table->second.constant->is_float && table->second.constant->dims.size() == 2 &&
                           n.get_int("axis", 0) == 0;
    if (!embedding)
      throw InputError(fmt::format("'{}': input '{}' holds integers, and node '{}' ({}) reads it; poet takes an "
                                   "integer input only as token ids, each node reading it an embedding: a Gather "
                                   "(axis 0) of the rows of a float [vocabulary, dim] initializer (torch's "
                                   "nn.Embedding)",
                                   path_, input, n.label(), n.op_type()));
  }
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

NodeId Importer::activation_as_held(const NodeReader& n, int i) {
  const Value& v = value(n, i);
  if (v.node < 0)
    unsupported(n, fmt::format("input {} ('{}') is a constant where poet's operator takes an activation", i,
                               n.input(i)));
  return v.node;
}

NodeId Importer::activation(const NodeReader& n, int i) {
  const NodeId x = activation_as_held(n, i);
  const Shape held = g_.node(x).shape, seen = value(n, i).onnx_shape;  // copies: make() may move the nodes
  const bool signal_in_one_row = held.size() == 4 && seen.size() == 3 && held[2] == 1 && held[0] == seen[0] &&
                                 held[1] == seen[1] && held[3] == seen[2];
  if (!signal_in_one_row) return x;
  if (const auto it = signal_of_row_.find(x); it != signal_of_row_.end()) return it->second;
  OpAttrs a;
  a.dims = seen;
  return signal_of_row_[x] = make(n, OpKind::Reshape, {x}, {.attrs = a});
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

bool Importer::learned_or_fixed(const NodeReader& n, Weight& scale, Weight& shift) {
  const bool scale_learned = !scale.tensor->name.empty(), shift_learned = !shift.tensor->name.empty();
  if (scale_learned && shift_learned) return true;
  const auto all = [](const ConstTensor& t, float v) {
    return t.has_data && std::all_of(t.floats.begin(), t.floats.end(), [v](float f) { return f == v; });
  };
  if (scale_learned || shift_learned)
    unsupported(n, fmt::format("its {} '{}' is learned (an initializer) and its {} '{}' a constant: poet's norm learns "
                               "both its scale and shift, or neither (affine=False); export the norm with both as "
                               "parameters",
                               scale_learned ? "scale" : "shift", scale_learned ? scale.value_name : shift.value_name,
                               scale_learned ? "shift" : "scale", scale_learned ? shift.value_name : scale.value_name));
  if (!all(*scale.tensor, 1.0f) || !all(*shift.tensor, 0.0f))
    unsupported(n, fmt::format("its scale '{}' and shift '{}' are constants other than ones and zeros, or computed "
                               "from parameters: poet keeps a norm's scale and shift fixed only at 1 and 0 "
                               "(affine=False), and learns them from initializers; export them as learned parameters "
                               "(affine=True, do_constant_folding=True)",
                               scale.value_name, shift.value_name));
  scale.value_name.clear();
  shift.value_name.clear();
  return false;
}

Weight Importer::fixed_tensor(Shape dims, float value) {
  ConstTensor& t = made_.emplace_back();
  t.is_float = true;
  t.floats.assign(static_cast<std::size_t>(element_count(dims)), value);
  t.dims = std::move(dims);
  return {.tensor = &t, .value_name = {}};
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
    // One weight read by two layers is a module called twice (PyTorch sums its gradients):
    // poet keeps a node's parameters apart, so it would train two copies and export one.
    // (torch's Identity of equal tensors gives each layer its own value: no share.)
    if (!w.value_name.empty())
      if (const auto [owner, first] = weight_owner_.try_emplace(w.value_name, node.name); !first)
        fail(n, fmt::format("its weight '{}' is also the weight of node '{}': the model uses one layer in two places "
                            "(shared weights), which poet would train as two separate copies; export a model that "
                            "gives each use its own layer",
                            w.value_name, owner->second));
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
  if (data && !shapes_only_) {
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

void Importer::bind_elementwise(const NodeReader& n, NodeId id) { bind(n, id, value(n, 0).onnx_shape); }

void Importer::bind_one_row_or_image(const NodeReader& n, NodeId id) {
  if (value(n, 0).onnx_shape.size() != 3) return bind(n, id);
  const Shape out = g_.node(id).shape;
  bind(n, id, Shape{out[0], out[1], out[3]});
}

void Importer::bind_output(const NodeReader& n, const std::string& output, NodeId id, std::optional<Shape> onnx_shape) {
  const Shape seen = onnx_shape ? *onnx_shape : g_.node(id).shape;
  const auto it = inferred_.find(output);
  // `x.view(x.size(0), -1)` exported without dynamic axes: the export's batch is a constant
  // of the target shape, which poet takes as the batch and ONNX as it is.
  if (it != inferred_.end() && it->second != seen && !seen.empty() && seen[0] == batch_ &&
      it->second.size() == seen.size() && it->second[0] != batch_)
    fail(n, fmt::format("ONNX makes {} of it where poet makes {} for --batch-size {}: the file was exported with a "
                        "fixed batch of {} (a constant in its target shape, as x.view(x.size(0), -1) exports); export "
                        "it again with dynamic_axes={{'{}': {{0: 'batch'}}}}, or give --batch-size {}",
                        shape_string(it->second), shape_string(seen), batch_, it->second[0], input_name_,
                        it->second[0]));
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
  // A float initializer expanded over the batch: learned tokens (a class token); other
  // constants expanded are folded.
  if (op == "Expand" && consts.size() == 2 && consts[0] && consts[0]->is_float && !consts[0]->name.empty())
    return expand(n);
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

  if (op == "Split") return split(n);  // several outputs, each used
  // An operator poet has not (LSTM, whose state outputs a model uses) is named as such, not
  // for its outputs: a user who rewrote the model to read only the first would still be refused.
  if (maps_operator(op)) check_unused_outputs(n);
  if (op == "Identity") return alias(n, 0);
  if (op == "Conv" || op == "ConvTranspose") return bind_one_row_or_image(n, conv(n));
  if (op == "Gemm") return bind(n, gemm(n));
  if (op == "MatMul") return bind(n, matmul(n));
  if (op == "Einsum") return bind(n, einsum(n));
  if (op == "Relu") return bind_elementwise(n, make(n, OpKind::ReLU, {activation_as_held(n, 0)}));
  if (op == "Sigmoid") return bind_elementwise(n, make(n, OpKind::Sigmoid, {activation_as_held(n, 0)}));
  if (op == "Tanh") return bind_elementwise(n, make(n, OpKind::Tanh, {activation_as_held(n, 0)}));
  if (op == "LeakyRelu") {
    OpAttrs a;
    a.scale = n.get_float("alpha", 0.01f);  // ONNX's default, and torch's negative_slope
    if (!(a.scale > 0))
      unsupported(n, fmt::format("its negative slope (alpha) is {}; poet's leaky ReLU takes a positive one (0: use "
                                 "Relu)",
                                 a.scale));
    return bind_elementwise(n, make(n, OpKind::LeakyReLU, {activation_as_held(n, 0)}, {.attrs = a}));
  }
  if (op == "Elu") {
    OpAttrs a;
    a.scale = n.get_float("alpha", 1.0f);  // ONNX's default, and torch's
    if (!(a.scale > 0))
      unsupported(n, fmt::format("its alpha is {}; poet's ELU takes a positive one (0: use Relu)", a.scale));
    return bind_elementwise(n, make(n, OpKind::ELU, {activation_as_held(n, 0)}, {.attrs = a}));
  }
  if (op == "Softplus") return bind_elementwise(n, make(n, OpKind::Softplus, {activation_as_held(n, 0)}));
  if (op == "PRelu") return bind(n, prelu(n));
  if (op == "Clip") return bind_elementwise(n, clip(n));
  if (op == "Softmax") return bind(n, softmax(n));
  if (op == "BatchNormalization") return bind_elementwise(n, batch_norm(n));
  if (op == "LayerNormalization") return bind(n, layer_norm(n));
  if (op == "MaxPool") return bind_one_row_or_image(n, pool(n, OpKind::MaxPool2d));
  if (op == "AveragePool") return bind_one_row_or_image(n, pool(n, OpKind::AvgPool2d));
  if (op == "Flatten") {
    if (n.get_int("axis", 1) != 1) unsupported(n, "poet's flatten keeps the batch axis only (axis 1)");
    return bind(n, make(n, OpKind::Flatten, {activation_as_held(n, 0)}));  // every layout flattens alike
  }
  if (op == "Dropout") return dropout(n);
  if (op == "GlobalAveragePool") {
    Shape seen = value(n, 0).onnx_shape;
    if (seen.size() < 3) unsupported(n, "it needs an [N, C, H, W] input");
    std::fill(seen.begin() + 2, seen.end(), 1);  // poet's global pooling drops the 1x1
    return bind(n, make(n, OpKind::GlobalAvgPool, {activation_as_held(n, 0)}), seen);
  }
  if (op == "Add") {
    const NodeId sum = add(n);  // of two activations: their shape as ONNX sees it
    return g_.node(sum).op == OpKind::Add ? bind_elementwise(n, sum) : bind(n, sum);
  }
  if (op == "Sub") return bind(n, subtract(n));
  if (op == "Transpose") return transpose(n);
  if (op == "Slice") return slice(n);
  if (op == "Squeeze" || op == "Unsqueeze") return squeeze(n);
  if (op == "Gather") return gather(n);
  if (op == "Mul" && value(n, 0).node >= 0 && value(n, 1).node >= 0) return bind(n, mul(n));
  if (op == "Mul")
    if (const auto id = mul_parameter(n)) return bind(n, *id);
  if (op == "Div" && value(n, 0).node >= 0 && value(n, 1).node >= 0) return bind(n, divide(n));
  if (op == "Mul" || op == "Div") return scale(n);
  if (op == "HardSigmoid") return hard_sigmoid(n);
  if (op == "HardSwish") return bind_elementwise(n, make(n, OpKind::HardSwish, {activation_as_held(n, 0)}));
  if (op == "ReduceMean") return reduce_mean(n);
  if (op == "InstanceNormalization") return bind(n, instance_norm(n));
  if (op == "Reshape") {
    if (group_norm(n)) return;
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
    if (axis < 1 || axis >= rank)
      unsupported(n, fmt::format("poet concatenates along an axis besides the batch's, not axis {} of rank {}", axis,
                                 rank));
    OpAttrs a;
    a.axis = static_cast<int>(axis);
    return bind(n, make(n, OpKind::Concat, parts, {.attrs = a}));
  }
  if (op == "Pad") return pad(n);
  if (op == "Resize") return resize(n);
  if (op == "Erf") unsupported(n, "poet computes Erf only within GELU, 0.5 x (1 + erf(x / sqrt 2))");
  if (op == "LogSoftmax" && graph_outputs_.count(proto.output(0)))
    fail(n, "the model's output is a log-softmax, and poet's loss takes the logits (softmax cross-entropy, as "
            "nn.CrossEntropyLoss does): export the model without its final log_softmax");
  const bool folds_only = std::find(constant_ops().begin(), constant_ops().end(), op) != constant_ops().end();
  unsupported(n, folds_only ? fmt::format("poet computes {} only on constants (shape computations), and this one "
                                          "reads an activation",
                                          op)
                            : fmt::format("poet has no operator for ONNX's {}", op));
}

std::string Importer::batch_not_first(const std::string& output, const Shape& logits) const {
  return fmt::format("'{}': output '{}' has shape {} for a batch of {}: its rows are not the input's first axis. poet "
                     "feeds the batch as the input's first axis; a model that takes it elsewhere (torch.nn."
                     "TransformerEncoder or MultiheadAttention with batch_first=False: [seq, batch, dim]) imports "
                     "wrongly: export it with batch_first=True",
                     path_, output, shape_string(logits), batch_);
}

void Importer::add_loss() {
  const auto& outputs = model_.graph().output();
  if (outputs.size() != 1) {
    std::vector<std::string> names;
    for (const auto& o : outputs) names.push_back("'" + o.name() + "'");
    throw InputError(fmt::format("'{}' has {} outputs ({}); poet trains a model with one output, the logits: export "
                                 "a wrapper whose forward returns the logits alone (an auxiliary head's output left "
                                 "out)",
                                 path_, outputs.size(), fmt::join(names, ", ")));
  }
  const auto it = values_.find(outputs[0].name());
  if (it == values_.end() || it->second.node < 0)
    throw InputError(fmt::format("'{}': output '{}' is not computed from the input", path_, outputs[0].name()));
  if (loss_ == TrainingLoss::reconstruction) return add_reconstruction_loss(outputs[0].name(), it->second.node);
  const Node& logits = g_.node(it->second.node);
  if (logits.shape.size() != 2)
    throw InputError(fmt::format("'{}': output '{}' has shape {}; trained by cross-entropy, the output is [batch, "
                                 "classes] logits (an autoencoder's reconstruction of its input: --loss "
                                 "reconstruction)",
                                 path_, outputs[0].name(), shape_string(logits.shape)));
  if (logits.op == OpKind::Softmax)
    throw InputError(fmt::format("'{}': output '{}' is a softmax; poet's loss takes the logits: export the model "
                                 "without its final softmax",
                                 path_, outputs[0].name()));
  if (logits.shape[0] != batch_) throw BatchNotFirst(batch_not_first(outputs[0].name(), logits.shape));
  const Shape in = logits.shape;
  add_loss_node(OpKind::SoftmaxCrossEntropy, {it->second.node},
                apply_rules(OpKind::SoftmaxCrossEntropy, {.inputs = std::span(&in, 1), .features = in[1]}));
}

void Importer::add_loss_node(OpKind op, std::vector<NodeId> inputs, const OpResult& r) {
  Node loss;
  loss.name = names_.count("loss") ? "loss_" + std::to_string(names_.size()) : "loss";
  loss.op = op;
  loss.role = Role::Loss;
  loss.shape = r.shape;
  loss.flops = r.flops;
  loss.inputs = std::move(inputs);
  g_.add(std::move(loss));
}

void Importer::add_reconstruction_loss(const std::string& output, NodeId x) {
  NodeId input = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g_.size()); ++v)
    if (g_.node(v).op == OpKind::Input) input = v;
  const Shape out = g_.node(x).shape, in = g_.node(input).shape;  // copies: add() may move the nodes
  if (element_count(out) != element_count(in) || out.empty() || out[0] != batch_)
    throw InputError(fmt::format("'{}': output '{}' has shape {} and the input {}; a reconstruction has the input's "
                                 "values, batch first (or train a classifier's logits with --loss cross_entropy)",
                                 path_, output, shape_string(out), shape_string(in)));
  const Shape inputs[] = {out, in};
  add_loss_node(OpKind::MeanSquaredError, {x, input},
                apply_rules(OpKind::MeanSquaredError, {.inputs = std::span(inputs)}));
}

}  // namespace onnx_import

std::string onnx_supported_operators() {
  using namespace onnx_import;
  return fmt::format("{}; and on constants only (folded): {}", fmt::join(layer_ops(), ", "),
                     fmt::join(constant_ops(), ", "));
}

std::vector<std::string> onnx_external_data_files(const std::string& path) {
  return onnx_import::external_data_files(path);
}

OnnxModel import_onnx(const std::string& path, const OnnxImportOptions& options) {
  if (options.batch_size < 1)
    throw InputError(fmt::format("batch size {} is not valid: it must be at least 1", options.batch_size));
  const ::onnx::ModelProto model = onnx_import::read_model_file(path);
  OnnxModel m = onnx_import::Importer(model, path, options).run();
  m.bytes = model.ByteSizeLong();
  // The logits' rows follow the batch (add_loss checks them) unless the batch asked for
  // happens to equal the size of the axis a sequence-first model really batches on: the
  // structure imported again with another batch tells. A file whose shapes fix its batch
  // elsewhere may not import with another one; only the rows of one that does count.
  try {
    OnnxImportOptions other = options;
    other.batch_size = options.batch_size > 1 ? options.batch_size - 1 : 2;
    onnx_import::Importer(model, path, other, /*shapes_only=*/true).run();
  } catch (const onnx_import::BatchNotFirst&) {
    throw;
  } catch (const InputError&) {  // another batch does not fit the file: nothing to tell
  }
  return m;
}

}  // namespace poet
