// Patterns of ONNX nodes taken in as one poet node (layer norm's and GELU's
// decompositions, hardswish, scaling by a constant) and the layout operators (transpose,
// slice, gather, expand) whose arguments come from constants.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "constant_folding.h"
#include "importer.h"
#include "poet/graph/op_table.h"

namespace poet::onnx_import {

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
  if (p == producer_.end()) return nullptr;
  const NodeReader maker(model_.graph().node(p->second), p->second);
  if (maker.op_type() == "Constant") return &(later_[name] = constant_value(maker));
  // A constant computed from constants (torch's Unsqueeze of a Constant), folded ahead. The
  // checker has put the nodes in topological order, so this ends.
  if (!is_foldable(maker.op_type()) || maker.proto().output_size() != 1) return nullptr;
  std::vector<const ConstTensor*> inputs;
  for (int i = 0; i < maker.input_count(); ++i) {
    const ConstTensor* c = maker.input(i).empty() ? nullptr : constant_named(maker.input(i));
    if (!c && !maker.input(i).empty()) return nullptr;
    inputs.push_back(c);
  }
  return &(later_[name] = fold(maker, inputs));  // unordered_map: the address stays
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
  const NodeId x = activation_as_onnx(n, 0);
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

// Each axis sliced, by a positive step (Swin's patch merging: x[:, 0::2, 1::2]), one poet
// slice after another; the starts, ends, axes and steps are constants (inputs from opset 10).
void Importer::slice(const NodeReader& n) {
  NodeId x = activation(n, 0);
  auto list = [&](int input, const char* attr) -> std::vector<std::int64_t> {
    if (const auto a = n.get_ints(attr)) return *a;
    const ConstTensor* c = constant(n, input);
    return c ? int_values(*c, fmt::format("'{}': node '{}' {}", path_, n.label(), attr)) : std::vector<std::int64_t>{};
  };
  const auto starts = list(1, "starts"), ends = list(2, "ends"), steps = list(4, "steps");
  auto axes = list(3, "axes");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (starts.empty() || starts.size() != ends.size() || axes.size() != starts.size() ||
      (!steps.empty() && steps.size() != starts.size()))
    fail(n, "its starts, ends, axes and steps differ in number");
  if (std::any_of(steps.begin(), steps.end(), [](std::int64_t s) { return s < 1; }))
    unsupported(n, "poet slices by a positive step only");
  bool sliced = false;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const Shape in = g_.node(x).shape;
    const auto rank = static_cast<std::int64_t>(in.size());
    std::int64_t axis = axes[i];
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) fail(n, fmt::format("axis {} is outside its input {}", axes[i], shape_string(in)));
    const std::int64_t size = in[static_cast<std::size_t>(axis)], step = steps.empty() ? 1 : steps[i];
    auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + size : v, std::int64_t{0}, size); };
    const std::int64_t begin = clamp(starts[i]), end = clamp(ends[i]);
    if (begin == 0 && end == size && step == 1) continue;
    if (begin >= end) unsupported(n, "the slice is empty");
    if (step > (1 << 20)) unsupported(n, fmt::format("step {} is out of range", step));
    OpAttrs a;
    a.axis = static_cast<int>(axis);
    a.begin = begin;
    a.end = end;
    a.stride_h = a.stride_w = static_cast<int>(step);  // written to files as one "stride"
    x = make(n, OpKind::Slice, {x}, {.attrs = a});
    sliced = true;
  }
  if (!sliced) return alias(n, 0);
  bind(n, x);
}

// Squeeze or Unsqueeze of an activation: a reshape that drops or inserts axes of size 1
// (the axes an attribute before opset 13, an input from it).
void Importer::squeeze(const NodeReader& n) {
  const NodeId x = activation_as_onnx(n, 0);
  const Shape in = g_.node(x).shape;
  std::vector<std::int64_t> axes = n.get_ints("axes").value_or(std::vector<std::int64_t>{});
  if (const ConstTensor* c = n.input_count() > 1 ? constant(n, 1) : nullptr)
    axes = int_values(*c, fmt::format("'{}': node '{}' axes", path_, n.label()));
  const bool inserts = n.op_type() == "Unsqueeze";
  const auto rank = static_cast<std::int64_t>(in.size() + (inserts ? axes.size() : 0));
  for (std::int64_t& a : axes) {
    if (a < -rank || a >= rank) fail(n, fmt::format("axis {} is outside a rank-{} tensor", a, rank));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  OpAttrs a;
  if (inserts) {
    a.dims = in;
    for (const std::int64_t axis : axes) a.dims.insert(a.dims.begin() + axis, 1);
  } else {
    for (std::int64_t d = 0; d < rank; ++d) {
      const bool listed = std::binary_search(axes.begin(), axes.end(), d);
      if (listed && in[static_cast<std::size_t>(d)] != 1)
        fail(n, fmt::format("axis {} of {} has size {}, not 1", d, shape_string(in), in[static_cast<std::size_t>(d)]));
      if (!(listed || (axes.empty() && in[static_cast<std::size_t>(d)] == 1))) a.dims.push_back(in[static_cast<std::size_t>(d)]);
    }
  }
  if (a.dims.empty()) unsupported(n, "poet keeps at least one axis");
  bind(n, make(n, OpKind::Reshape, {x}, {.attrs = a}));
}

// Split along one axis: each output a slice of it (the whole axis: the input itself). The
// sizes come from the `split` input (opset 13 on) or attribute, or are equal parts.
void Importer::split(const NodeReader& n) {
  const NodeId x = activation_as_onnx(n, 0);
  const Shape in = g_.node(x).shape;
  const auto rank = static_cast<std::int64_t>(in.size());
  std::int64_t axis = n.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(n, fmt::format("axis {} is outside its input {}", axis, shape_string(in)));
  const std::int64_t size = in[static_cast<std::size_t>(axis)];
  const int outputs = n.proto().output_size();
  std::vector<std::int64_t> sizes = n.get_ints("split").value_or(std::vector<std::int64_t>{});
  if (const ConstTensor* s = constant(n, 1)) sizes = int_values(*s, fmt::format("'{}': node '{}' split", path_, n.label()));
  if (sizes.empty()) {
    if (size % outputs != 0)
      unsupported(n, fmt::format("it splits an axis of {} into {} parts, not equal ones; poet needs the sizes", size,
                                 outputs));
    sizes.assign(static_cast<std::size_t>(outputs), size / outputs);
  }
  std::int64_t total = 0;
  for (const std::int64_t s : sizes) {
    if (s < 0 || s > size) fail(n, fmt::format("a part of {} does not fit an axis of {}", s, size));
    total += s;
  }
  if (static_cast<int>(sizes.size()) != outputs || total != size)
    fail(n, fmt::format("its {} parts of [{}] do not make its {} outputs of an axis of {}", sizes.size(),
                        fmt::join(sizes, ", "), outputs, size));
  std::int64_t begin = 0;
  for (int o = 0; o < outputs; ++o) {
    const std::int64_t end = begin + sizes[static_cast<std::size_t>(o)];
    const std::string& out = n.proto().output(o);
    if (out.empty() || begin == end) {  // left out, or an empty part no node may read
      if (!out.empty() && (readers_.count(out) || graph_outputs_.count(out)))
        unsupported(n, fmt::format("its output {} ('{}') is empty and read", o, out));
    } else if (begin == 0 && end == size) {
      values_[out] = value(n, 0);
      ++folded_;
    } else {
      OpAttrs a;
      a.axis = static_cast<int>(axis);
      a.begin = begin;
      a.end = end;
      bind_output(n, out, make(n, OpKind::Slice, {x}, {.attrs = a}));
    }
    begin = end;
  }
}

// Gather of an activation at one constant index: the slice of that index, then, for a
// scalar index, a reshape that drops the axis (a vision transformer's class token).
// An embedding: the rows of a float [vocab, dim] initializer gathered by the token ids of
// the input (check_token_ids made sure that is what reads an integer input), trained.
void Importer::gather(const NodeReader& n) {
  if (value(n, 1).node >= 0) {
    const NodeId ids = activation(n, 1);
    const ConstTensor* table = constant(n, 0);
    if (g_.node(ids).op != OpKind::Input || !table || !table->is_float || table->dims.size() != 2)
      unsupported(n, "poet gathers by run-time indices only as an embedding: the rows of a float [vocabulary, dim] "
                     "initializer by the model's integer input (token ids)");
    const NodeId id = make(n, OpKind::Embedding, {ids}, {.features = table->dims[1], .vocabulary = table->dims[0]});
    set_parameters(n, id, {weight(n, 0, table->dims, "embedding table")});
    return bind(n, id);
  }
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;
  const ConstTensor* index = constant(n, 1);
  if (!index || index->is_float || !index->has_data || index->elements() != 1)
    unsupported(n, "poet gathers an activation at one constant index, or the rows of an embedding table by token ids");
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

// a / b of two activations, b of a's rank broadcast over a where it has size 1 (a norm's
// [N, S, D] / [N, S, 1]).
NodeId Importer::divide(const NodeReader& n) {
  const NodeId a = activation_as_onnx(n, 0), b = activation_as_onnx(n, 1);
  const Shape x = g_.node(a).shape, by = g_.node(b).shape;
  bool fits = by.size() == x.size();
  for (std::size_t d = 0; fits && d < x.size(); ++d) fits = by[d] == x[d] || by[d] == 1;
  if (!fits)
    unsupported(n, fmt::format("poet divides by a divisor of the dividend's rank broadcast over it (each axis equal "
                               "or 1), not {} by {}",
                               shape_string(x), shape_string(by)));
  return make(n, OpKind::Div, {a, b});
}

NodeId Importer::over_learned_tensor(const NodeReader& n, OpKind op, int x_slot, int p_slot,
                                     std::string_view what) {
  const NodeId x = activation_as_onnx(n, x_slot);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  const ConstTensor* p = constant(n, p_slot);
  if (!p || !p->is_float || p->name.empty() || p->dims.size() > in.size())
    unsupported(n, fmt::format("{}: a float initializer of at most the activation's rank ({}), not {}", what,
                               in.size(), p ? dims_string(p->dims) : std::string("none")));
  OpAttrs a;
  a.dims = p->dims;  // aligned to the activation's trailing axes, as ONNX broadcasts
  a.dims.insert(a.dims.begin(), static_cast<std::ptrdiff_t>(in.size() - p->dims.size()), 1);
  const NodeId id = make(n, op, {x}, {.attrs = a});
  set_parameters(n, id, {Weight{.tensor = p, .value_name = n.input(p_slot)}});
  return id;
}

std::optional<NodeId> Importer::mul_parameter(const NodeReader& n) {
  const int p_slot = value(n, 0).node < 0 ? 0 : 1;
  const ConstTensor* p = constant(n, p_slot);
  if (!p || p->elements() == 1) return std::nullopt;
  return over_learned_tensor(n, OpKind::MulParameter, 1 - p_slot, p_slot,
                             "poet multiplies an activation by a learned tensor");
}

// torch's PReLU writes its slopes as an initializer of [C, 1, 1] over an image (one per
// channel), [C] over features, or all ones for a single slope.
NodeId Importer::prelu(const NodeReader& n) {
  return over_learned_tensor(n, OpKind::PRelu, 0, 1, "poet's PReLU learns its slopes");
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

// The mean over every axis after the channels (torch's x.mean([2, 3]) of an image, x.mean(2)
// of a signal) is global average pooling. torch writes LayerNorm before opset 17 as mean =
// ReduceMean(x), d = x - mean, var = ReduceMean(d^2), y = d / Sqrt(var + eps) * weight + bias
// over the last axis: imported as one layer norm.
void Importer::reduce_mean(const NodeReader& n) {
  const Shape in = value(n, 0).onnx_shape;
  const auto rank = static_cast<std::int64_t>(in.size());
  const auto& graph = model_.graph();
  auto out = [&](int i) -> const std::string& { return graph.node(i).output(0); };
  std::vector<std::int64_t> after_channels(static_cast<std::size_t>(std::max<std::int64_t>(rank - 2, 0)));
  std::iota(after_channels.begin(), after_channels.end(), 2);
  // Over a [N, T, E] sequence the last axis is a layer norm's, when x less the mean follows.
  const bool layer_norm_mean = over_last_axis(n, rank) && sole_reader(out(index_), "Sub") >= 0;
  if (rank >= 3 && reduced_axes(n, rank) == after_channels && !layer_norm_mean) {
    Shape kept = in;
    std::fill(kept.begin() + 2, kept.end(), 1);
    const bool keeps = n.get_int("keepdims", 1) != 0;
    // A signal held as an image of one row is pooled as it is held: the same mean.
    return bind(n, make(n, OpKind::GlobalAvgPool, {activation_as_held(n, 0)}), keeps ? kept : Shape{in[0], in[1]});
  }
  auto unmatched = [&] {
    unsupported(n, "poet imports ReduceMean over every axis after the channels (global pooling: an image's rows "
                   "and columns, a signal's length), or within layer norm's decomposition over the last axis: "
                   "(x - mean) / Sqrt(mean((x - mean)^2) + eps), then * weight + bias where the norm is affine; "
                   "for a layer norm over several axes (LayerNorm([C, H, W])) use GroupNorm(1, C), which "
                   "normalizes the same values with a scale and shift per channel");
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
  const Shape features = {in.back()};
  std::optional<ScaleShift> learned = scale_and_shift(out(div), features);
  Weight weight = learned ? learned->scale : fixed_tensor(features, 1.0f);
  Weight shift = learned ? learned->shift : fixed_tensor(features, 0.0f);
  OpAttrs a;
  a.epsilon = *eps;
  if (!(a.epsilon > 0 && a.epsilon < 1)) fail(n, fmt::format("epsilon {} is outside (0, 1)", a.epsilon));
  a.affine = learned_or_fixed(n, weight, shift);
  take_in({sub, pow, variance, plus, root, div});
  if (learned) take_in({learned->mul, learned->add});
  const NodeId id = make(n, OpKind::LayerNorm, {activation(n, 0)}, {.attrs = a});
  set_parameters(n, id, {weight, shift});
  bind_output(n, out(learned ? learned->add : div), id);
}

std::optional<Importer::ScaleShift> Importer::scale_and_shift(const std::string& v, Shape expected) {
  const auto& graph = model_.graph();
  const int mul = sole_reader(v, "Mul");
  const int add = mul < 0 ? -1 : sole_reader(graph.node(mul).output(0), "Add");
  if (add < 0) return std::nullopt;
  const auto without_leading_ones = [](Shape s) {
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), [](std::int64_t d) { return d != 1; }));
    return s;
  };
  expected = without_leading_ones(std::move(expected));
  const auto per_element = [&](int node, const std::string& in) -> std::optional<Weight> {
    const std::string& name = other_input(node, in);
    const ConstTensor* t = constant_named(name);
    if (!t || !t->is_float || without_leading_ones(t->dims) != expected) return std::nullopt;
    return Weight{.tensor = t, .value_name = name};
  };
  const std::optional<Weight> scale = per_element(mul, v), shift = per_element(add, graph.node(mul).output(0));
  if (!scale || !shift) return std::nullopt;
  return ScaleShift{.mul = mul, .add = add, .scale = *scale, .shift = *shift};
}

// torch writes GroupNorm(G, C) as Reshape(x, [0, G, -1]) -> InstanceNormalization with a
// scale of ones and a bias of zeros (constants) -> Reshape back to x's shape -> Mul by its
// weight [C, 1, 1] -> Add of its bias [C, 1, 1]: one group norm, the Mul's and Add's
// tensors its gamma and beta (learned, or with affine=False constants of ones and zeros).
bool Importer::group_norm(const NodeReader& n) {
  const auto& graph = model_.graph();
  auto out = [&](int i) -> const std::string& { return graph.node(i).output(0); };
  const int norm = sole_reader(out(index_), "InstanceNormalization");
  if (norm < 0 || value(n, 0).node < 0) return false;
  const Shape x = g_.node(activation_as_onnx(n, 0)).shape;
  const ConstTensor* target = constant(n, 1);
  const std::vector<std::int64_t> to =
      target && !target->is_float && target->has_data ? target->ints : std::vector<std::int64_t>{};
  if (x.size() < 3 || to.size() != 3 || (to[0] != 0 && to[0] != x[0]) || to[1] < 1 || x[1] % to[1] != 0)
    return false;
  const std::int64_t groups = to[1];
  const NodeReader in_norm(graph.node(norm), norm);
  const auto all = [&](int slot, float v) {
    const ConstTensor* t = constant_named(in_norm.input(slot));
    return t && t->is_float && t->has_data && t->dims == Shape{groups} &&
           std::all_of(t->floats.begin(), t->floats.end(), [v](float f) { return f == v; });
  };
  // The way back: to x's shape, as a constant or (torch's) the Shape of x, computed later.
  const auto to_x = [&](const std::string& shape) {
    if (const ConstTensor* t = constant_named(shape)) return !t->is_float && t->has_data && t->ints == x;
    const auto p = producer_.find(shape);
    if (p == producer_.end()) return false;
    const auto& s = graph.node(p->second);
    return s.op_type() == "Shape" && s.input(0) == n.input(0) && s.attribute_size() == 0;
  };
  const int back = sole_reader(out(norm), "Reshape");
  if (!all(1, 1.0f) || !all(2, 0.0f) || back < 0 || !to_x(graph.node(back).input(1))) return false;
  Shape per_channel(x.size() - 1, 1);  // [C, 1, 1] for an image
  per_channel[0] = x[1];
  OpAttrs a = norm_attributes(in_norm, path_);
  a.groups = static_cast<int>(groups);
  take_in({norm, back});
  std::optional<ScaleShift> learned = scale_and_shift(out(back), per_channel);
  if (learned) take_in({learned->mul, learned->add});
  Weight gamma = learned ? learned->scale : fixed_tensor({x[1]}, 1.0f);
  Weight beta = learned ? learned->shift : fixed_tensor({x[1]}, 0.0f);
  a.affine = learned_or_fixed(n, gamma, beta);
  const NodeId id = make(n, OpKind::GroupNorm, {activation_as_onnx(n, 0)}, {.attrs = a});
  set_parameters(n, id, {gamma, beta});
  bind_output(n, out(learned ? learned->add : back), id);
  return true;
}

// nn.InstanceNorm2d: a group norm of a group per channel, its scale and bias learned
// (affine=True) or constants of ones and zeros (torch's default, affine=False).
NodeId Importer::instance_norm(const NodeReader& n) {
  const NodeId x = activation_as_onnx(n, 0);
  const Shape in = g_.node(x).shape;
  if (in.size() < 3) unsupported(n, fmt::format("poet normalizes [N, C, ...] inputs, not {}", shape_string(in)));
  Weight scale = weight(n, 1, {in[1]}, "scale"), bias = weight(n, 2, {in[1]}, "bias");
  OpAttrs a = norm_attributes(n, path_);
  a.groups = static_cast<int>(in[1]);
  a.affine = learned_or_fixed(n, scale, bias);
  const NodeId id = make(n, OpKind::GroupNorm, {x}, {.attrs = a});
  set_parameters(n, id, {scale, bias});
  return id;
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

}  // namespace poet::onnx_import
