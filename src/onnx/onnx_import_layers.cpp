// The ONNX operators that become poet's layers: Conv, Gemm, MatMul, norms, pooling,
// reshape, pad, resize, softmax, dropout, additions and learned tokens.
#include <algorithm>
#include <array>
#include <cmath>

#include "constant_folding.h"
#include "importer.h"
#include "poet/graph/op_table.h"

namespace poet::onnx_import {

Importer::Window Importer::window(const NodeReader& n, const char* operation, const Shape& in,
                                  std::array<std::int64_t, 2> kernel, std::optional<std::vector<std::int64_t>> pads,
                                  bool one_row) {
  // A 1-D operator's lists, as a row's: its pads and stride on the columns, one dilation
  // for both axes (the rows' is moot with a kernel one row high).
  const auto as_row = [&](const char* name, std::vector<std::int64_t> v) {
    if (!one_row || v.empty()) return v;
    if (std::string_view(name) == "pads") return v.size() == 2 ? std::vector<std::int64_t>{0, v[0], 0, v[1]} : v;
    if (std::string_view(name) == "strides") return v.size() == 1 ? std::vector<std::int64_t>{1, v[0]} : v;
    return v.size() == 1 ? std::vector<std::int64_t>{v[0], v[0]} : v;
  };
  const std::vector<std::int64_t> dilations =
      as_row("dilations", n.get_ints("dilations").value_or(std::vector<std::int64_t>{1, 1}));
  const bool pooling = std::string_view(operation) == "pooling";
  if (pooling && std::any_of(dilations.begin(), dilations.end(), [](auto v) { return v != 1; }))
    unsupported(n, "dilated pooling (dilations other than 1) is not supported");
  if (dilations.size() != 2 || dilations[0] != dilations[1] || dilations[0] < 1)
    unsupported(n, fmt::format("poet's {} takes one dilation for both axes, not [{}]", operation,
                               fmt::join(dilations, ", ")));
  const std::vector<std::int64_t> strides =
      as_row("strides", n.get_ints("strides").value_or(std::vector<std::int64_t>{1, 1}));
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1)
    unsupported(n, fmt::format("poet's {} takes a stride per axis of an image, not [{}]", operation,
                               fmt::join(strides, ", ")));
  const int stride_h = window_attribute(n, strides[0], "stride", path_),
            stride_w = window_attribute(n, strides[1], "stride", path_),
            dilation = window_attribute(n, dilations[0], "dilation", path_);
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // ONNX's SAME (TensorFlow's): ceil(in / stride) outputs per axis, the padding they need
    // split evenly, its odd one at the end (UPPER) or the beginning (LOWER).
    pads = std::vector<std::int64_t>(4);
    for (int axis = 0; axis < 2; ++axis) {
      const std::int64_t size = in.at(2 + static_cast<std::size_t>(axis)), stride = axis == 0 ? stride_h : stride_w;
      const std::int64_t span = std::int64_t{dilation} * (kernel[axis] - 1) + 1;
      const std::int64_t total = std::max<std::int64_t>(0, ((size + stride - 1) / stride - 1) * stride + span - size);
      const std::int64_t small = total / 2, large = total - small;
      (*pads)[axis] = auto_pad == "SAME_UPPER" ? small : large;
      (*pads)[axis + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    unsupported(n, fmt::format("auto_pad {} is not an ONNX padding; export with explicit pads", auto_pad));
  }
  if (!pads) pads = as_row("pads", n.get_ints("pads").value_or(std::vector<std::int64_t>{0, 0, 0, 0}));
  const auto& p = *pads;
  if (p.size() != 4 || std::any_of(p.begin(), p.end(), [](std::int64_t v) { return v < 0; }))
    unsupported(n, fmt::format("poet's {} takes pads [top, left, bottom, right], none negative, not [{}]",
                               operation, fmt::join(p, ", ")));
  // The layer pads both sides alike, by the smaller; a Pad before it adds the rest.
  const std::int64_t rows = std::min(p[0], p[2]), columns = std::min(p[1], p[3]);
  Window w{stride_h, stride_w, window_attribute(n, rows, "pad", path_), window_attribute(n, columns, "pad", path_),
           dilation, {}};
  if (p[0] != p[2] || p[1] != p[3]) w.uneven = {0, 0, p[0] - rows, p[1] - columns, 0, 0, p[2] - rows, p[3] - columns};
  return w;
}

NodeId Importer::as_one_row(const NodeReader& n, NodeId x) {
  const Shape in = g_.node(x).shape;
  if (in.size() == 4) return x;
  OpAttrs a;
  a.dims = {in[0], in[1], 1, in[2]};
  return make(n, OpKind::Reshape, {x}, {.attrs = a});
}

// Conv, and ConvTranspose (a decoder's upsampling) whose weight is [in, out/groups, kh, kw].
NodeId Importer::conv(const NodeReader& n) {
  const bool transposed = n.op_type() == "ConvTranspose";
  const ConstTensor* w = constant(n, 1);
  // Conv1d: the same convolution over an image of one row, by a kernel one row high (the
  // same weights, in the same order).
  const bool one_row = w && w->dims.size() == 3 && value(n, 0).onnx_shape.size() == 3;
  NodeId x = one_row ? activation_as_held(n, 0) : activation_as_onnx(n, 0);
  if (one_row) x = as_one_row(n, x);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (!w || w->dims.size() != (one_row ? 3 : 4) || in.size() != 4)
    unsupported(n, transposed ? "poet's transposed convolution takes images, [N, C, H, W] by an [in, out/groups, kh, "
                                "kw] weight, and signals, [N, C, L] by an [in, out/groups, k] weight"
                              : "poet convolves images, [N, C, H, W] by an [out, in/groups, kh, kw] weight, and "
                                "signals, [N, C, L] by an [out, in/groups, k] weight");
  const int groups = window_attribute(n, n.get_int("group", 1), "group", path_);
  if (groups < 1 || in[1] != (transposed ? w->dims[0] : w->dims[1] * groups))
    fail(n, fmt::format("its weight {} with {} groups does not fit {} input channels", dims_string(w->dims), groups,
                        in[1]));
  if (transposed && n.get_string("auto_pad", "NOTSET").starts_with("SAME"))
    unsupported(n, "poet's transposed convolution takes explicit pads, not auto_pad SAME");
  OpAttrs a;
  a.kernel_h = one_row ? 1 : window_attribute(n, w->dims[2], "kernel height", path_);
  a.kernel_w = window_attribute(n, w->dims[one_row ? 2 : 3], "kernel width", path_);
  const Window geometry = window(n, transposed ? "transposed convolution" : "convolution", in,
                                 {a.kernel_h, a.kernel_w}, std::nullopt, one_row);
  if (!geometry.uneven.empty()) {
    if (transposed) unsupported(n, "poet's transposed convolution pads both sides of an axis alike");
    OpAttrs uneven;
    uneven.dims = geometry.uneven;
    x = make(n, OpKind::Pad, {x}, {.attrs = uneven});
  }
  a.stride_h = geometry.stride_h;
  a.stride_w = geometry.stride_w;
  a.pad_h = geometry.pad_h;
  a.pad_w = geometry.pad_w;
  a.groups = groups;
  a.dilation = geometry.dilation;
  a.bias = !n.input(2).empty();
  if (transposed) {
    if (n.get_ints("output_shape"))
      unsupported(n, "poet's transposed convolution takes pads and output_padding, not output_shape; export with "
                     "output_padding (torch's ConvTranspose2d writes it so)");
    std::vector<std::int64_t> extra = n.get_ints("output_padding").value_or(std::vector<std::int64_t>{});
    if (one_row && extra.size() == 1) extra.insert(extra.begin(), 0);
    if (!extra.empty() && extra.size() != 2)
      fail(n, fmt::format("its output_padding [{}] is not one value per axis", fmt::join(extra, ", ")));
    if (!extra.empty() && (extra[0] < 0 || extra[0] >= a.stride_h || extra[1] < 0 || extra[1] >= a.stride_w))
      unsupported(n, fmt::format("its output_padding [{}] is not below its strides [{}, {}]: poet's transposed "
                                 "convolution adds 0 to stride - 1 rows and columns (torch's output_padding=1 for a "
                                 "stride of 2)",
                                 fmt::join(extra, ", "), a.stride_h, a.stride_w));
    if (std::any_of(extra.begin(), extra.end(), [](std::int64_t v) { return v != 0; })) a.dims = extra;
  }
  const std::int64_t out = transposed ? w->dims[1] * groups : w->dims[0];
  const NodeId id = make(n, transposed ? OpKind::ConvTranspose2d : OpKind::Conv2d, {x}, {.attrs = a, .features = out});
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
  // Exported without constant folding, the weight is the Transpose of PyTorch's [out, in]
  // initializer: poet's layout, which export writes back by that initializer's name.
  if (const auto p = producer_.find(n.input(1)); p != producer_.end()) {
    const NodeReader t(model_.graph().node(p->second), p->second);
    const auto perm = t.get_ints("perm").value_or(std::vector<std::int64_t>{1, 0});
    const ConstTensor* source = t.op_type() == "Transpose" ? constant_named(t.input(0)) : nullptr;
    if (source && !source->name.empty() && perm == std::vector<std::int64_t>{1, 0} && source->dims.size() == 2)
      weights = Weight{.tensor = source, .value_name = t.input(0)};
  }
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
  if (lo == 0.0f && hi == 6.0f) return make(n, OpKind::ReLU6, {activation_as_held(n, 0)});
  if (lo == 0.0f && !hi) return make(n, OpKind::ReLU, {activation_as_held(n, 0)});
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
  const NodeId x = activation_as_held(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (in.size() < 2) fail(n, "it needs an [N, C, ...] input");
  const Shape c = {in[1]};
  Weight scale = weight(n, 1, c, "scale"), bias = weight(n, 2, c, "bias");
  OpAttrs a = norm_attributes(n, path_);
  a.affine = learned_or_fixed(n, scale, bias);
  const NodeId id = make(n, OpKind::BatchNorm2d, {x}, {.attrs = a});
  set_parameters(n, id, {scale, bias, weight(n, 3, c, "running mean"), weight(n, 4, c, "running variance")});
  return id;
}

NodeId Importer::layer_norm(const NodeReader& n) {
  const NodeId x = activation(n, 0);
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  std::int64_t axis = n.get_int("axis", -1);
  if (axis < 0) axis += static_cast<std::int64_t>(in.size());
  if (axis != static_cast<std::int64_t>(in.size()) - 1)
    unsupported(n, "poet's layer norm normalizes over the last axis only");
  const Shape f = {in.back()};
  Weight scale = weight(n, 1, f, "scale");
  // Without B, a fixed scale of ones is elementwise_affine=False; a learned one has no match.
  if (n.input(2).empty() && !scale.tensor->name.empty())
    unsupported(n, "poet's layer norm learns a bias (B) beside its scale; this one has none");
  Weight bias = n.input(2).empty() ? fixed_tensor(f, 0.0f) : weight(n, 2, f, "bias");
  OpAttrs a = norm_attributes(n, path_);
  a.affine = learned_or_fixed(n, scale, bias);
  const NodeId id = make(n, OpKind::LayerNorm, {x}, {.attrs = a});
  set_parameters(n, id, {scale, bias});
  return id;
}

// MaxPool1d and AvgPool1d, as Conv1d: over an image of one row.
NodeId Importer::pool(const NodeReader& n, OpKind op) {
  auto kernel = n.get_ints("kernel_shape");
  const bool one_row = kernel && kernel->size() == 1 && value(n, 0).onnx_shape.size() == 3;
  NodeId x = one_row ? activation_as_held(n, 0) : activation(n, 0);
  if (one_row) {
    x = as_one_row(n, x);
    kernel = std::vector<std::int64_t>{1, (*kernel)[0]};
  }
  const Shape in = g_.node(x).shape;  // a copy: make() may move the nodes
  if (!kernel || kernel->size() != 2 || in.size() != 4)
    unsupported(n, "poet pools images [N, C, H, W] with a 2-D kernel, and signals [N, C, L] with a 1-D one");
  std::optional<std::vector<std::int64_t>> folded_pads;
  bool counts_padding = n.get_int("count_include_pad", 0) != 0;
  if (const auto it = pool_padding_.find(index_); it != pool_padding_.end()) {  // the Pad before it, folded in
    folded_pads = {it->second.first, it->second.second, it->second.first, it->second.second};
    counts_padding = true;
  }
  OpAttrs a;
  a.kernel_h = window_attribute(n, (*kernel)[0], "kernel height", path_);
  a.kernel_w = window_attribute(n, (*kernel)[1], "kernel width", path_);
  const Window geometry = window(n, "pooling", in, {a.kernel_h, a.kernel_w}, folded_pads, one_row);
  if (op == OpKind::AvgPool2d && (geometry.pad_h > 0 || geometry.pad_w > 0) && !counts_padding)
    unsupported(n, "poet's average pooling counts the padding (count_include_pad=1); this one does not");
  a.stride_h = geometry.stride_h;
  a.stride_w = geometry.stride_w;
  a.pad_h = geometry.pad_h;
  a.pad_w = geometry.pad_w;
  if (a.kernel_h < 1 || a.kernel_w < 1 || a.pad_h >= a.kernel_h || a.pad_w >= a.kernel_w)
    unsupported(n, "poet pools with padding narrower than the kernel");
  if (!geometry.uneven.empty()) {
    // TensorFlow's SAME pads an axis's end more than its beginning. A max pool's padding
    // holds no maximum, so where both give as many windows that is ceil_mode over the
    // smaller padding: the last window, clipped to the image, takes the same elements.
    const auto windows_padded_so = [&](std::size_t axis) {
      const int kernel = axis == 0 ? a.kernel_h : a.kernel_w, stride = axis == 0 ? a.stride_h : a.stride_w,
                pad = axis == 0 ? a.pad_h : a.pad_w;
      return (in[2 + axis] + 2 * pad + geometry.uneven[6 + axis] - kernel) / stride + 1;
    };
    a.ceil_mode = true;
    const auto as_ceil_mode = [&] {  // the max pool's shape rule, rounding up
      const Shape out = apply_rules(op, {.inputs = std::span(&in, 1), .attrs = a}).shape;
      return out[2] == windows_padded_so(0) && out[3] == windows_padded_so(1);
    };
    if (op != OpKind::MaxPool2d || n.get_int("ceil_mode", 0) != 0 || geometry.uneven[2] != 0 ||
        geometry.uneven[3] != 0 || !as_ceil_mode())
      unsupported(n, "poet's pooling pads both sides of an axis alike (a max pool also where its end is padded "
                     "more, as ceil_mode would pad it)");
  }
  // ceil_mode rounds the output size up: the same as rounding down where the windows tile;
  // otherwise a last, partial window, which poet's max-pool takes (clipped to the image).
  if (n.get_int("ceil_mode", 0) != 0 &&
      ((in[2] + 2 * a.pad_h - a.kernel_h) % a.stride_h != 0 || (in[3] + 2 * a.pad_w - a.kernel_w) % a.stride_w != 0)) {
    if (op != OpKind::MaxPool2d)
      unsupported(n, "ceil_mode adds a partial window here, which poet's average pooling does not divide as "
                     "PyTorch does (export with ceil_mode=False)");
    a.ceil_mode = true;
  }
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
  // The batch: traced exports bake the example's batch into a literal target. Exported for
  // poet's batch, the literal holds as it is (a sequence-first model's tokens x batch rows
  // too); else its first dimension is taken as the batch, made ours. A target computed from
  // the Shape of a tensor is already of poet's batch.
  const bool literal_of_another_batch = !target->from_shape && file_batch_ != batch_;
  if (literal_of_another_batch && !to.empty() && to[0] != -1) to[0] = from.at(0);
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
    unsupported(n, fmt::format("it reshapes {} to {}, which does not hold its elements{}", shape_string(from),
                               dims_string(to),
                               literal_of_another_batch && file_batch_ > 0
                                   ? fmt::format(" (the file was exported for batch {} and fixes it in this shape: "
                                                 "give --batch-size {}, or export with dynamic_axes={{'{}': "
                                                 "{{0: 'batch'}}}})",
                                                 file_batch_, file_batch_, input_name_)
                                   : ""));
  OpAttrs a;
  a.dims = to;
  return make(n, OpKind::Reshape, {x}, {.attrs = a});
}

// A Pad adds nothing (torch pads with zeros before an average pool), or pads an image's
// rows and columns with zeros symmetrically for the one AveragePool that reads it, which
// then pools with that padding.
void Importer::pad(const NodeReader& n) {
  activation_as_held(n, 0);  // an activation, or refused
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
  // Rows and columns padded (an image's), or a signal's length: folded into the pool.
  const bool image = pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0 &&
                     pads[2] == pads[6] && pads[3] == pads[7] && pads[2] >= 0 && pads[3] >= 0;
  const bool signal = pads.size() == 6 && pads[0] == 0 && pads[1] == 0 && pads[3] == 0 && pads[4] == 0 &&
                      pads[2] == pads[5] && pads[2] >= 0;
  const bool constant_zeros = n.get_string("mode", "constant") == "constant" && zeros;
  if (constant_zeros && !(one_pool && (image || signal)) && pads.size() == 2 * value(n, 0).onnx_shape.size() &&
      std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p >= 0; })) {
    OpAttrs a;
    a.dims = pads;
    return bind(n, make(n, OpKind::Pad, {activation_as_onnx(n, 0)}, {.attrs = a}));
  }
  if (!constant_zeros || !one_pool || !(image || signal))
    unsupported(n, "poet pads with zeros only (mode constant), by a begin and an end not negative for each axis");
  const int pool = readers->second.front();
  const NodeReader reader(model_.graph().node(pool), pool);
  if (const auto p = reader.get_ints("pads"); p && std::any_of(p->begin(), p->end(), [](auto v) { return v != 0; }))
    unsupported(n, "the average pool after it pads as well");
  pool_padding_[pool] = signal ? std::pair<std::int64_t, std::int64_t>{0, pads[2]} : std::pair{pads[2], pads[3]};
  alias(n, 0);
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

// The constant scalar of input `slot` when it is not an initializer (torch writes `x + 0.5`
// with a Constant node), which poet adds as a fixed number; none otherwise (an initializer
// added is learned).
std::optional<float> Importer::fixed_scalar(const NodeReader& n, int slot) {
  const ConstTensor* c = value(n, slot).node < 0 ? constant(n, slot) : nullptr;
  if (!c || !c->name.empty() || !c->has_data || c->elements() != 1) return std::nullopt;
  return c->is_float ? c->floats[0] : static_cast<float>(c->ints[0]);
}

NodeId Importer::affine(const NodeReader& n, int x_slot, double scale, double shift) {
  OpAttrs a;
  a.scale = scale;
  a.shift = shift;
  return make(n, OpKind::Scale, {activation(n, x_slot)}, {.attrs = a});
}

// Two activations of one shape; an activation and a constant scalar, a fixed shift; or an
// activation and a float initializer over its trailing axes (a position embedding), which
// is learned.
NodeId Importer::add(const NodeReader& n) {
  const int p_slot = value(n, 0).node < 0 ? 0 : (value(n, 1).node < 0 ? 1 : -1);
  if (p_slot >= 0) {
    if (const auto c = fixed_scalar(n, p_slot)) return affine(n, 1 - p_slot, 1, *c);
    if (const ConstTensor* p = constant(n, p_slot); p->name.empty() && p->elements() > 1)
      return add_computed(n, 1 - p_slot, *p);
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
  // Two signals held alike as images of one row (a 1-D residual block) add as they are held.
  NodeId a = activation_as_held(n, 0), b = activation_as_held(n, 1);
  if (g_.node(a).shape != g_.node(b).shape || value(n, 0).onnx_shape != value(n, 1).onnx_shape)
    a = activation(n, 0), b = activation(n, 1);
  if (g_.node(a).shape != g_.node(b).shape)
    unsupported(n, fmt::format("it broadcasts {} and {}; poet's add takes two tensors of one shape",
                               shape_string(g_.node(a).shape), shape_string(g_.node(b).shape)));
  return make(n, OpKind::Add, {a, b});
}

// x + c with c a tensor the file computes from constants: a fixed tensor (Swin's attention
// mask: add_constant, not learned), or a learned table's elements gathered by constant
// indices (a relative position bias: add_gathered, the table learned and the indices fixed).
// c is aligned to x's trailing axes and broadcast where it has size 1.
NodeId Importer::add_computed(const NodeReader& n, int x_slot, const ConstTensor& c) {
  const NodeId x = activation_as_onnx(n, x_slot);
  const auto rank = g_.node(x).shape.size();
  if (!c.is_float || c.dims.size() > rank)
    unsupported(n, fmt::format("poet adds a computed float tensor of at most the activation's rank, not {}",
                               dims_string(c.dims)));
  OpAttrs a;
  a.dims = c.dims;
  a.dims.insert(a.dims.begin(), static_cast<std::ptrdiff_t>(rank - c.dims.size()), 1);
  if (c.table.empty()) {
    const NodeId id = make(n, OpKind::AddConstant, {x}, {.attrs = a});
    set_parameters(n, id, {Weight{.tensor = &c, .value_name = {}}});
    return id;
  }
  const ConstTensor* table = constant_named(c.table);
  if (!table) fail(n, fmt::format("the table '{}' its bias is gathered from is not a constant", c.table));
  ConstTensor index;
  index.dims = c.dims;
  index.is_float = true;
  index.has_data = !c.table_index.empty();
  index.floats.assign(c.table_index.begin(), c.table_index.end());  // exact: the table has under 2^24 values
  const NodeId id = make(n, OpKind::AddGathered, {x}, {.attrs = a, .features = c.table_elements});
  set_parameters(n, id, {Weight{.tensor = table, .value_name = c.table}, Weight{.tensor = &index, .value_name = {}}});
  return id;
}

// a - b of one shape: a + (-1) b, exact in floating point (negation only flips the sign),
// and differentiated as those two. With a constant scalar c: x - c or c - x, a scale.
NodeId Importer::subtract(const NodeReader& n) {
  if (const auto c = fixed_scalar(n, 1)) return affine(n, 0, 1, -static_cast<double>(*c));
  if (const auto c = fixed_scalar(n, 0)) return affine(n, 1, -1, *c);
  const NodeId a = activation(n, 0), b = activation(n, 1);
  if (g_.node(a).shape != g_.node(b).shape)
    unsupported(n, fmt::format("it broadcasts {} and {}; poet subtracts two tensors of one shape",
                               shape_string(g_.node(a).shape), shape_string(g_.node(b).shape)));
  OpAttrs minus;
  minus.scale = -1;
  const NodeId negated = make(n, OpKind::Scale, {b}, {.attrs = minus});
  return make(n, OpKind::Add, {a, negated});
}

// A dropout of ratio 0 drops nothing and scales by 1 / (1 - 0): its output is its input,
// bit for bit (torch writes them in training mode where a model's dropout is 0.0, as in
// torchvision's ViT, and in Swin's attention even in eval mode), so it is no node.
void Importer::dropout(const NodeReader& n) {
  float p = n.get_float("ratio", 0.5f);  // an attribute before opset 12, an input from it
  if (const ConstTensor* r = constant(n, 1)) {
    if (!r->is_float || r->elements() != 1 || !r->has_data) fail(n, "its ratio must be a float scalar");
    p = r->floats[0];
  }
  if (!(p >= 0.0f && p < 1.0f)) fail(n, fmt::format("its ratio {} is outside [0, 1)", p));
  if (p == 0.0f) return alias(n, 0);
  OpAttrs a;
  a.dropout_p = p;
  // Element by element in memory order, which a signal held as an image of one row shares.
  bind_elementwise(n, make(n, OpKind::Dropout, {activation_as_held(n, 0)}, {.attrs = a}));
}

// Resize (torch's Upsample and interpolate) by the nearest pixel, rows and columns by whole
// factors: each pixel becomes a block of copies. ONNX picks each output pixel's source by
// its coordinate rules, which give those blocks for whole factors in two cases: the floor
// of out / factor (asymmetric with floor, torch's export; tf_half_pixel_for_nn's
// (out + 0.5) / factor with floor too), and the rounded centre (out + 0.5) / factor - 0.5
// (half_pixel; never halfway for a whole factor).
void Importer::resize(const NodeReader& n) {
  if (model_opset() < 11)
    unsupported(n, fmt::format("poet reads Resize as opset 11 and later define it, not opset {}'s: export with "
                               "opset_version=11 or later",
                               model_opset()));
  const std::string mode = n.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    unsupported(n, fmt::format("mode '{}': poet resizes by the nearest pixel or bilinearly (torch's modes 'nearest' "
                               "and 'bilinear')",
                               mode));
  const bool linear = mode == "linear";
  const std::string coordinates = n.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = n.get_string("nearest_mode", "round_prefer_floor");
  const bool half_pixel = coordinates == "half_pixel" || coordinates == "pytorch_half_pixel";
  // Upsampling, both read a coordinate before the first pixel as that pixel (clamped).
  if (linear && !half_pixel)
    unsupported(n, fmt::format("poet's bilinear upsampling maps pixels by their centres, as torch's "
                               "align_corners=False ('half_pixel' or 'pytorch_half_pixel'), not "
                               "coordinate_transformation_mode '{}'; export with align_corners=False",
                               coordinates));
  if (n.get_int("antialias", 0) != 0) unsupported(n, "poet's upsampling has no antialias filter");
  const bool blocks =
      ((coordinates == "asymmetric" || coordinates == "tf_half_pixel_for_nn") && rounding == "floor") ||
      (half_pixel && (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil"));
  if (!linear && !blocks)
    unsupported(n, fmt::format("poet reads the coordinates that repeat each pixel as a block for every whole factor: "
                               "'asymmetric' (torch's export) or 'tf_half_pixel_for_nn' with nearest_mode 'floor', "
                               "'half_pixel' or 'pytorch_half_pixel' with either rounding; not "
                               "coordinate_transformation_mode '{}' with nearest_mode '{}'",
                               coordinates, rounding));
  if (n.find("axes")) unsupported(n, "poet reads scales or sizes for every axis, without an axes attribute");
  const NodeId x = activation_as_onnx(n, 0);
  const Shape in = g_.node(x).shape;
  if (in.size() != 4) unsupported(n, fmt::format("poet resizes images [N, C, H, W], not {}", shape_string(in)));
  const ConstTensor* scales = constant(n, 2);
  const ConstTensor* sizes = constant(n, 3);
  std::array<std::int64_t, 4> factor{};
  if (sizes && sizes->elements() > 0) {
    const std::vector<std::int64_t>& to = int_values(*sizes, fmt::format("node '{}' sizes", n.label()));
    if (to.size() != 4) unsupported(n, fmt::format("its sizes give {} axes for an input of 4", to.size()));
    if (to[0] != in[0])
      unsupported(n, fmt::format("its sizes fix the batch at {}, and poet imports a batch of {}: give --batch-size {}",
                                 to[0], in[0], to[0]));
    for (std::size_t d = 0; d < 4; ++d) factor[d] = to[d] % in[d] == 0 ? to[d] / in[d] : 0;
  } else if (scales && scales->elements() == 4 && scales->is_float && scales->has_data) {
    for (std::size_t d = 0; d < 4; ++d) {
      const float s = scales->floats[d];
      factor[d] = s >= 1 && s <= 1024 && s == std::floor(s) ? static_cast<std::int64_t>(s) : 0;
    }
  } else {
    unsupported(n, "it has neither sizes nor 4 float scales");
  }
  if (factor[0] != 1 || factor[1] != 1 || factor[2] < 1 || factor[3] < 1 || factor[2] > 1024 || factor[3] > 1024)
    unsupported(n, fmt::format("poet enlarges an image's rows and columns by whole factors of 1 to 1024 (2 for "
                               "nn.Upsample(scale_factor=2)), keeping its batch and channels; this Resize takes {} to {}",
                               shape_string(in),
                               sizes && sizes->elements() > 0
                                   ? dims_string(sizes->ints)
                                   : fmt::format("scales [{}]", fmt::join(scales->floats, ", "))));
  if (factor[2] == 1 && factor[3] == 1) return alias(n, 0);
  OpAttrs a;
  a.kernel_h = static_cast<int>(factor[2]);
  a.kernel_w = static_cast<int>(factor[3]);
  bind(n, make(n, linear ? OpKind::UpsampleBilinear : OpKind::UpsampleNearest, {x}, {.attrs = a}));
}

}  // namespace poet::onnx_import
