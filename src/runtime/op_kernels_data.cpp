// Kernel bindings of the input and the reshapes.
#include "op_kernel_defs.h"
#include "poet/kernels/kernels.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

// Both directions see [batch, heads, seq, head_dim] on one side: the split's output, the
// merge's input.
HeadsShape heads_shape(const Shape& split) { return {split[0], split[2], split[1], split[3]}; }
HeadsShape split_shape(const Graph&, const Node& f) { return heads_shape(f.shape); }
HeadsShape merge_shape(const Graph& g, const Node& f) { return heads_shape(input_shape(g, f)); }

// Binds a head permutation: `shape_of` its shape, `fwd` and `bwd` the kernels.
template <HeadsShape (*shape_of)(const Graph&, const Node&),
          void (*fwd)(const HeadsShape&, std::span<const float>, std::span<float>),
          void (*bwd)(const HeadsShape&, std::span<const float>, std::span<float>)>
OpKernels heads_kernels() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { fwd(shape_of(c.g, c.forward), c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy,
                               std::span<float> dx) { bwd(shape_of(c.g, c.forward), dy, dx); },
          .validate = [](const Graph& g, const Node& f) { validate(shape_of(g, f)); }};
}

}  // namespace

// The batch, copied into the arena.
OpKernels input() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { copy(c.ctx.input_batch, y); }};
}

OpKernels flatten() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { flatten_forward(c.in.at(0), y); },
          .input_gradient = [](const KernelCall&, std::span<const float> dy,
                               std::span<float> dx) { flatten_backward(dy, dx); }};
}

namespace {

// A concatenation along axis k joins rows: of each input, the floats from axis k on, one
// row for each index of the axes before it (`outer`).
std::int64_t outer_of(const Node& f) {
  std::int64_t outer = 1;
  for (int d = 0; d < f.attrs.axis; ++d) outer *= f.shape.at(static_cast<std::size_t>(d));
  return outer;
}
std::int64_t row_of(const Node& f, const Shape& s) { return element_count(s) / outer_of(f); }

// Where input `slot` of concat f starts in a row of f's output.
std::int64_t concat_offset(const Graph& g, const Node& f, int slot) {
  std::int64_t offset = 0;
  for (int i = 0; i < slot; ++i) offset += row_of(f, g.node(f.inputs[static_cast<std::size_t>(i)]).shape);
  return offset;
}

}  // namespace

OpKernels concat() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const std::int64_t outer = outer_of(c.forward), y_row = row_of(c.forward, c.forward.shape);
            std::int64_t offset = 0;
            for (std::size_t i = 0; i < c.forward.inputs.size(); ++i) {
              const std::int64_t x_row = row_of(c.forward, c.g.node(c.forward.inputs[i]).shape);
              concat_forward_part(outer, c.in.at(i), x_row, y, y_row, offset);
              offset += x_row;
            }
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const int slot = c.node.grad.slot;
            concat_backward_part(outer_of(c.forward), dy, row_of(c.forward, c.forward.shape),
                                 concat_offset(c.g, c.forward, slot), dx,
                                 row_of(c.forward, input_shape(c.g, c.forward, slot)));
          },
          .gradient_slots = static_cast<int>(kMaxInputs)};
}

OpKernels split_heads() { return heads_kernels<split_shape, kernels::split_heads, split_heads_backward>(); }
OpKernels merge_heads() { return heads_kernels<merge_shape, kernels::merge_heads, merge_heads_backward>(); }

}  // namespace poet::runtime::detail::bind
