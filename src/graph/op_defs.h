// The definitions behind the operator table, one function per operator (TFLM's
// Register_<OP>), grouped into one file per family: ops_<family>.cpp. The helpers below are
// the rules several families share.
#pragma once

#include "poet/graph/op_table.h"

namespace poet::ops {

// ops_data.cpp: the input, the reshapes, and the backward nodes (which have no rules).
OpDef input();
OpDef flatten();
OpDef split_heads();
OpDef merge_heads();
OpDef concat();
OpDef chain_gradient();
OpDef grad_input();
OpDef grad_param();
OpDef grad_accumulate();
// ops_dense.cpp
OpDef linear();
OpDef matmul();
OpDef embedding();
// ops_conv.cpp
OpDef conv2d();
OpDef conv_transpose2d();
OpDef max_pool2d();
OpDef max_pool_indices();
OpDef avg_pool2d();
OpDef global_avg_pool();
// ops_norm.cpp
OpDef batch_norm2d();
OpDef batch_norm_stats();
OpDef layer_norm();
OpDef layer_norm_stats();
OpDef group_norm();
OpDef group_norm_stats();
// ops_elementwise.cpp
OpDef relu();
OpDef relu6();
OpDef relu_mask();
OpDef gelu();
OpDef tanh();
OpDef sigmoid();
OpDef add();
OpDef dropout();
OpDef softmax();
OpDef softmax_cross_entropy();
OpDef mean_squared_error();
// ops_layout.cpp: the layout operators of ONNX files.
OpDef transpose();
OpDef reshape();
OpDef slice();
OpDef prepend_tokens();
OpDef pad();
OpDef upsample_nearest();
OpDef upsample_bilinear();
// ops_elementwise.cpp, for ONNX files.
OpDef scale();
OpDef gelu_erf();
OpDef add_parameter();
OpDef hard_sigmoid();
OpDef leaky_relu();
OpDef elu();
OpDef softplus();
OpDef prelu();
OpDef hard_swish();
OpDef mul();
OpDef mul_parameter();
OpDef div();
OpDef add_constant();
OpDef add_gathered();
// ops_reference.cpp: the reference's fused transformer layers.
OpDef ref_query_key_value();
OpDef ref_qkt();
OpDef ref_qktv();
OpDef ref_linear_relu();

// Shared rules.
double elements(const Shape& s);
Shape same_shape(const OpArgs& a);  // the output has the input's shape
std::int64_t no_params(const OpArgs&, const Shape&);
void require(bool ok, std::string_view op, std::string_view what);  // InputError "op: what"

// Gradient FLOPs. `in` is the input whose gradient is made (for a parameter gradient,
// input 0). Element-wise gradients cost a few FLOPs per element of the input.
double grad_per_input_1(const Node&, const Node& in);
double grad_per_input_2(const Node&, const Node& in);
double grad_per_input_4(const Node&, const Node& in);
double grad_per_input_8(const Node&, const Node& in);
double grad_per_input_15(const Node&, const Node& in);
double grad_no_flops(const Node&, const Node&);
// Convolution and matmul: each gradient is a GEMM the size of the forward one (dX is the
// transposed convolution, dW the correlation of X with dY; dA = dC B^T, dB = A^T dC).
double grad_like_forward(const Node& f, const Node&);

// An operator without parameters, made by `shape` and `flops` and differentiated by
// `gradient` (none: not differentiated).
OpDef parameterless(OpKind op, std::string_view name, std::string_view reference_class, Shape (*shape)(const OpArgs&),
                    double (*flops)(const OpArgs&, const Shape&), std::optional<GradientRule> gradient);

// A rule for an op whose gradient is dY through an element-wise derivative, reading `needs`
// and costing `flops` per element.
GradientRule elementwise_gradient(Needs needs, double (*flops)(const Node&, const Node&));
// The same, for a gradient computed element by element of dY, which may overwrite it
// (GradientRule::in_place): its kernel reads dy[k] and what it needs at k before writing dx[k].
GradientRule in_place_gradient(Needs needs, double (*flops)(const Node&, const Node&));

}  // namespace poet::ops
