// Kernel bindings of the GEMM operators: linear layers, batched matmul, the embedding.
#include <cmath>

#include "op_kernel_defs.h"
#include "poet/kernels/kernels.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

LinearShape linear_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  return {.rows = element_count(x) / x.back(), .in_features = x.back(), .out_features = f.shape.back(),
          .bias = f.attrs.bias};
}

// Weights [out, in], then the bias if the layer has one.
std::size_t linear_bias_floats(const Node& f) { return f.attrs.bias ? static_cast<std::size_t>(f.shape.back()) : 0; }

// Scores A B^T are scaled by 1 / sqrt(k) (scaled dot-product attention); the graph has no
// scale attribute, so transpose_b is what marks a matmul as attention scores.
MatMulShape matmul_shape(const Graph& g, const Node& f) {
  const Shape& a = input_shape(g, f, 0);
  const std::int64_t m = a[a.size() - 2], k = a.back();
  return {.batch = element_count(a) / (m * k), .m = m, .k = k, .n = f.shape.back(),
          .transpose_b = f.attrs.transpose_b,
          .alpha = f.attrs.transpose_b ? 1.0f / std::sqrt(static_cast<float>(k)) : 1.0f};
}

EmbeddingShape embedding_shape(const Graph& g, const Node& f) {
  const std::int64_t dim = f.shape.back();
  return {.tokens = element_count(input_shape(g, f)), .vocab = f.param_count / dim, .dim = dim};
}

// Token ids travel in the arena as the bit patterns of int32 values in 4-byte elements.
std::span<const std::int32_t> as_ids(std::span<const float> t) {
  return {reinterpret_cast<const std::int32_t*>(t.data()), t.size()};
}

}  // namespace

OpKernels linear() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const auto [w, b] = split_tail(c.parameters(), linear_bias_floats(c.forward));
            linear_forward(linear_shape(c.g, c.forward), c.in.at(0), w, b, y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const auto weight = split_tail(c.parameters(), linear_bias_floats(c.forward)).head;
            linear_backward_input(linear_shape(c.g, c.forward), dy, weight, dx);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            const auto [dw, db] = split_tail(grad, linear_bias_floats(c.forward));
            linear_backward_params(linear_shape(c.g, c.forward), dy, c.forward_input(0), dw, db);
          },
          .validate = [](const Graph& g, const Node& f) { validate(linear_shape(g, f)); },
          .parameters = [](const Graph& g, const Node& f) {
            const std::int64_t in = input_shape(g, f).back(), out = f.shape.back();
            return he_uniform(in * out, f.attrs.bias ? out : 0, in);
          }};
}

OpKernels matmul() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            matmul_forward(matmul_shape(c.g, c.forward), c.in.at(0), c.in.at(1), y);
          },
          // The gradient of A reads B; the gradient of B reads A.
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const MatMulShape s = matmul_shape(c.g, c.forward);
            if (c.node.grad.slot == 0) return matmul_backward_a(s, dy, c.forward_input(1), dx);
            matmul_backward_b(s, dy, c.forward_input(0), dx);
          },
          .gradient_slots = 2,
          .validate = [](const Graph& g, const Node& f) { validate(matmul_shape(g, f)); }};
}

OpKernels embedding() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            embedding_forward(embedding_shape(c.g, c.forward), as_ids(c.in.at(0)), c.parameters(), y);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            embedding_backward_table(embedding_shape(c.g, c.forward), as_ids(c.forward_input(0)), dy, grad);
          },
          .validate = [](const Graph& g, const Node& f) { validate(embedding_shape(g, f)); },
          // vocab x dim, uniform in +-1; the shape check is validate's.
          .parameters = [](const Graph&, const Node& f) {
            return ParameterLayout{
                .count = f.param_count, .trainable = f.param_count, .weights = f.param_count, .bound = 1.0f};
          }};
}

}  // namespace poet::runtime::detail::bind
