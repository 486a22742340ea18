// Element-wise activations and the tensor plumbing (add, flatten). Each backward reads
// what the `autodiff` gradient rules give it: a 1-bit mask of the output for ReLU and
// ReLU6, the output for tanh and sigmoid, the input for GELU. Output and input may be the
// same span (in place).
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

void relu_forward(std::span<const float> x, std::span<float> y);
void relu6_forward(std::span<const float> x, std::span<float> y);

// What the backward of ReLU and ReLU6 keeps of their output y: one bit per element, bit
// i % 8 of byte i / 8 (mask_bytes(n) bytes), set where the gradient passes: y > 0 for ReLU,
// 0 < y < 6 for ReLU6 (false for NaN). Bits past the last element are 0.
std::int64_t mask_bytes(std::int64_t elements);
void relu_mask(std::span<const float> y, std::span<std::uint8_t> mask);
void relu6_mask(std::span<const float> y, std::span<std::uint8_t> mask);
// dx = dy where the mask's bit is set, else +0: the gradient of ReLU and ReLU6 exactly as
// a select on y would give it, bit for bit.
void masked_backward(std::span<const float> dy, std::span<const std::uint8_t> mask, std::span<float> dx);

// GELU, the tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
void gelu_forward(std::span<const float> x, std::span<float> y);
void gelu_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx);

// GELU exactly, 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's default, ONNX's Erf pattern).
void gelu_erf_forward(std::span<const float> x, std::span<float> y);
void gelu_erf_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx);

// y = factor x; the backward is the same map of dy.
void scale_forward(float factor, std::span<const float> x, std::span<float> y);
// y = factor x + shift (with shift 0: scale_forward, whose -0 products stay -0).
void scale_shift_forward(float factor, float shift, std::span<const float> x, std::span<float> y);

// y = x + p, p repeated over x's leading axes (|x| a multiple of |p|); dp sums dy over the
// repeats, in order. dx is dy.
void add_parameter_forward(std::span<const float> x, std::span<const float> p, std::span<float> y);
void add_parameter_backward(std::span<const float> dy, std::span<float> dp);

// torch's hardsigmoid, relu6(x + 3) / 6 (its gradient reads the output), and hardswish,
// x hardsigmoid(x) (its gradient reads the input).
// torch's LeakyReLU: x, or slope x where x <= 0; its gradient is 1 or the slope by the sign
// of y (the slope is positive, so y has x's sign).
void leaky_relu_forward(float slope, std::span<const float> x, std::span<float> y);
void leaky_relu_backward(float slope, std::span<const float> dy, std::span<const float> y, std::span<float> dx);

// torch's ELU: x, or alpha (e^x - 1) where x <= 0; its gradient, 1 or y + alpha by the sign
// of y (alpha is positive), reads the output.
void elu_forward(float alpha, std::span<const float> x, std::span<float> y);
void elu_backward(float alpha, std::span<const float> dy, std::span<const float> y, std::span<float> dx);
// torch's Softplus (beta 1, threshold 20): ln(1 + e^x), or x above 20; its gradient, the
// logistic sigmoid of x (1 above 20), reads the input.
void softplus_forward(std::span<const float> x, std::span<float> y);
void softplus_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx);

void hard_sigmoid_forward(std::span<const float> x, std::span<float> y);
void hard_sigmoid_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx);
void hard_swish_forward(std::span<const float> x, std::span<float> y);
void hard_swish_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx);

// y = a b, b broadcast (kernel_shapes.h). da = dy b; db sums dy a over the repeats, in order.
// y = a + b, b broadcast (kernel_shapes.h): add_constant's forward.
void add_broadcast_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b,
                           std::span<float> y);
// y = x + table[index], index (integers held as floats) broadcast over x; dtable sums dy by
// the indices, in order. An index outside the table is an InternalError (the importer made them).
void add_gathered_forward(const BroadcastShape& s, std::span<const float> x, std::span<const float> table,
                          std::span<const float> index, std::span<float> y);
void add_gathered_backward(const BroadcastShape& s, std::span<const float> dy, std::span<const float> index,
                           std::span<float> dtable);
void mul_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b, std::span<float> y);
void mul_backward_a(const BroadcastShape& s, std::span<const float> dy, std::span<const float> b,
                    std::span<float> da);
void mul_backward_b(const BroadcastShape& s, std::span<const float> dy, std::span<const float> a,
                    std::span<float> db);

// torch's PReLU: y = x where x > 0, else slope x, the slopes broadcast over x (kernel_shapes.h).
// dx = dy or slope dy by the sign of x; dslope sums dy x over the repeats where x <= 0, in order.
void prelu_forward(const BroadcastShape& s, std::span<const float> x, std::span<const float> slope,
                   std::span<float> y);
void prelu_backward_input(const BroadcastShape& s, std::span<const float> dy, std::span<const float> x,
                          std::span<const float> slope, std::span<float> dx);
void prelu_backward_slope(const BroadcastShape& s, std::span<const float> dy, std::span<const float> x,
                          std::span<float> dslope);

// y = a / b, b broadcast (kernel_shapes.h). da = dy / b; db = -sum of dy a / b^2 over the
// repeats, in order.
void div_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b, std::span<float> y);
void div_backward_a(const BroadcastShape& s, std::span<const float> dy, std::span<const float> b,
                    std::span<float> da);
void div_backward_b(const BroadcastShape& s, std::span<const float> dy, std::span<const float> a,
                    std::span<const float> b, std::span<float> db);

void tanh_forward(std::span<const float> x, std::span<float> y);
void tanh_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx);

void sigmoid_forward(std::span<const float> x, std::span<float> y);
void sigmoid_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx);

// y = a + b. Its gradient flows to both inputs unchanged, so it has no backward kernel;
// the sum of several gradient contributions (GradAccumulate) is add_forward again.
void add_forward(std::span<const float> a, std::span<const float> b, std::span<float> y);

// Flatten keeps the element order, so both directions are a copy (nothing when the spans
// are the same memory).
void flatten_forward(std::span<const float> x, std::span<float> y);
void flatten_backward(std::span<const float> dy, std::span<float> dx);

// Concatenation along axis k of tensors alike but on it: each of the `rows` rows of y (one
// per index of the axes before k, the batch for k = 1; `y_row` floats) holds the rows of
// the inputs in turn. One input's share:
// its rows of `x_row` floats go to each row of y from float `y_offset` on; the gradient
// takes the same block of dY back out.
void concat_forward_part(std::int64_t rows, std::span<const float> x, std::int64_t x_row, std::span<float> y,
                         std::int64_t y_row, std::int64_t y_offset);
void concat_backward_part(std::int64_t rows, std::span<const float> dy, std::int64_t y_row, std::int64_t y_offset,
                          std::span<float> dx, std::int64_t x_row);

}  // namespace poet::kernels
