// The kernel bindings of the runtime's operator table (op_kernels.h), one function per
// operator, grouped into one file per family: op_kernels_<family>.cpp.
#pragma once

#include "op_kernels.h"

namespace poet::runtime::detail::bind {

// op_kernels_data.cpp: the input and the reshapes.
OpKernels input();
OpKernels flatten();
OpKernels split_heads();
OpKernels merge_heads();
OpKernels concat();
// op_kernels_layout.cpp: the layout operators of ONNX files.
OpKernels transpose();
OpKernels reshape();
OpKernels slice();
OpKernels prepend_tokens();
OpKernels pad();
OpKernels upsample_nearest();
OpKernels upsample_bilinear();
// op_kernels_dense.cpp
OpKernels linear();
OpKernels matmul();
OpKernels embedding();
// op_kernels_conv.cpp: convolution and pooling.
OpKernels conv2d();
OpKernels conv_transpose2d();
OpKernels max_pool2d();
OpKernels max_pool_indices();
OpKernels avg_pool2d();
OpKernels global_avg_pool();
// op_kernels_norm.cpp
OpKernels batch_norm2d();
OpKernels batch_norm_stats();
OpKernels layer_norm();
OpKernels layer_norm_stats();
OpKernels group_norm();
OpKernels group_norm_stats();
// op_kernels_elementwise.cpp: activations, add, dropout, softmax and the loss.
OpKernels relu();
OpKernels relu6();
OpKernels relu_mask();
OpKernels gelu();
OpKernels tanh();
OpKernels sigmoid();
OpKernels add();
OpKernels dropout();
OpKernels softmax();
OpKernels softmax_cross_entropy();
OpKernels mean_squared_error();
OpKernels gelu_erf();
OpKernels scale();
OpKernels add_parameter();
OpKernels hard_sigmoid();
OpKernels leaky_relu();
OpKernels elu();
OpKernels softplus();
OpKernels prelu();
OpKernels hard_swish();
OpKernels mul();
OpKernels mul_parameter();
OpKernels add_constant();
OpKernels add_gathered();
OpKernels div();

}  // namespace poet::runtime::detail::bind
