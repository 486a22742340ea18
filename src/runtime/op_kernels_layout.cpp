// Kernel bindings of the layout operators ONNX files bring: transpose, reshape, slice,
// prepended tokens, padding and nearest-neighbour upsampling.
#include <fmt/format.h>

#include "op_kernel_defs.h"
#include "poet/kernels/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

PermuteShape permute_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  if (x.size() > static_cast<std::size_t>(kMaxPermuteRank) || f.attrs.dims.size() != x.size())
    throw InputError(fmt::format("transpose: the runtime permutes tensors of rank 1 to {} by a permutation of "
                                 "their axes, not {} by [{}]",
                                 kMaxPermuteRank, shape_string(x), fmt::join(f.attrs.dims, ", ")));
  PermuteShape s;
  s.rank = static_cast<int>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    s.dims[i] = x[i];
    s.perm[i] = static_cast<int>(f.attrs.dims[i]);
  }
  return s;
}

SliceShape slice_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  const auto axis = static_cast<std::size_t>(f.attrs.axis);
  if (axis >= x.size()) throw InputError(fmt::format("slice: axis {} is outside {}", axis, shape_string(x)));
  SliceShape s{.length = x[axis], .begin = f.attrs.begin, .end = f.attrs.end, .step = f.attrs.stride_h};
  for (std::size_t d = 0; d < axis; ++d) s.outer *= x[d];
  for (std::size_t d = axis + 1; d < x.size(); ++d) s.inner *= x[d];
  return s;
}

TokensShape tokens_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  if (x.size() != 3 || f.shape.size() != 3)
    throw InputError(fmt::format("prepend_tokens: needs a [batch, seq, dim] input, not {}", shape_string(x)));
  return {.batch = x[0], .tokens = f.shape[1] - x[1], .seq = x[1], .dim = x[2]};
}

PadShape pad_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  if (x.size() > static_cast<std::size_t>(kMaxPermuteRank) || f.attrs.dims.size() != 2 * x.size())
    throw InputError(fmt::format("pad: the runtime pads tensors of rank 1 to {} with a begin and an end per axis, "
                                 "not {} by [{}]",
                                 kMaxPermuteRank, shape_string(x), fmt::join(f.attrs.dims, ", ")));
  PadShape s;
  s.rank = static_cast<int>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    s.dims[i] = x[i];
    s.begin[i] = f.attrs.dims[i];
    s.end[i] = f.attrs.dims[i + x.size()];
  }
  return s;
}

UpsampleShape upsample_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  if (x.size() != 4)
    throw InputError(
        fmt::format("{}: the runtime upsamples [N, C, H, W] tensors, not {}", op_name(f.op), shape_string(x)));
  return {.planes = x[0] * x[1],
          .in_h = x[2],
          .in_w = x[3],
          .factor_h = f.attrs.kernel_h,
          .factor_w = f.attrs.kernel_w};
}

}  // namespace

namespace {

using Upsample = void (*)(const UpsampleShape&, std::span<const float>, std::span<float>);

template <Upsample forward, Upsample backward>
OpKernels upsample() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            forward(upsample_shape(c.g, c.forward), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            backward(upsample_shape(c.g, c.forward), dy, dx);
          },
          .validate = [](const Graph& g, const Node& f) { validate(upsample_shape(g, f)); }};
}

}  // namespace

OpKernels upsample_nearest() { return upsample<upsample_nearest_forward, upsample_nearest_backward>(); }
OpKernels upsample_bilinear() { return upsample<upsample_bilinear_forward, upsample_bilinear_backward>(); }

OpKernels pad() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { pad_forward(pad_shape(c.g, c.forward), c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy,
                               std::span<float> dx) { pad_backward(pad_shape(c.g, c.forward), dy, dx); },
          .validate = [](const Graph& g, const Node& f) { validate(pad_shape(g, f)); }};
}

OpKernels transpose() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { permute(permute_shape(c.g, c.forward), c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy,
                               std::span<float> dx) { permute(inverse(permute_shape(c.g, c.forward)), dy, dx); },
          .validate = [](const Graph& g, const Node& f) { validate(permute_shape(g, f)); }};
}

// The elements keep their order: a copy each way, as flatten.
OpKernels reshape() { return flatten(); }

OpKernels slice() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { slice_forward(slice_shape(c.g, c.forward), c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy,
                               std::span<float> dx) { slice_backward(slice_shape(c.g, c.forward), dy, dx); },
          .validate = [](const Graph& g, const Node& f) { validate(slice_shape(g, f)); }};
}

OpKernels prepend_tokens() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            prepend_tokens_forward(tokens_shape(c.g, c.forward), c.in.at(0), c.parameters(), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            prepend_tokens_backward_input(tokens_shape(c.g, c.forward), dy, dx);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            prepend_tokens_backward_tokens(tokens_shape(c.g, c.forward), dy, grad);
          },
          .validate = [](const Graph& g, const Node& f) { validate(tokens_shape(g, f)); },
          .parameters = small_learned_tensor};
}

}  // namespace poet::runtime::detail::bind
