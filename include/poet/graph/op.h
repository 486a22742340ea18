// Operator kinds of a training graph, and the role a node plays in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace poet {

enum class OpKind : std::uint8_t {
  // Data.
  Input,
  // Forward operators with real kernels (the `autodiff` graphs use only these).
  Linear,
  Conv2d,          // attrs: kernel, strides, padding, groups (groups == channels: depthwise)
  BatchNorm2d,     // one node in the forward graph; its statistics are BatchNormStats in autodiff
  BatchNormStats,  // per-channel mean and inverse std of its input, kept for the backward pass
  LayerNorm,
  LayerNormStats,
  // What a backward keeps of its forward node instead of a full tensor (autodiff).
  ReLUMask,        // 1 bit per element of a ReLU's or ReLU6's output: where its gradient passes
  MaxPoolIndices,  // per output of a max-pool, its window's arg-max (uint8, uint16 or int32)
  ReLU,
  ReLU6,
  GELU,
  Tanh,
  Sigmoid,
  MaxPool2d,
  AvgPool2d,
  GlobalAvgPool,
  Add,
  Flatten,
  Dropout,
  MatMul,          // batched A x B (or A x B^T with attrs.transpose_b)
  Softmax,         // over the last axis
  Embedding,
  SplitHeads,      // [B, S, H*D] -> [B, H, S, D]
  MergeHeads,      // [B, H, S, D] -> [B, S, H*D]
  Concat,          // along axis 1 (channels, or features) of inputs alike in every other axis
  // The operators ONNX files bring (docs/ONNX.md).
  Transpose,       // attrs.dims: the permutation of the axes
  Reshape,         // attrs.dims: the target shape (same elements, same order)
  Slice,           // attrs.axis, begin, end: a block of one axis
  Scale,           // y = attrs.scale x + attrs.shift
  GELUErf,         // the exact GELU, 0.5 x (1 + erf(x / sqrt 2))
  AddParameter,    // x + a learned tensor over its trailing axes (a position embedding)
  PrependTokens,   // [B, S, D] -> [B, T + S, D]: T learned rows before each sample's (a class token)
  HardSigmoid,     // relu6(x + 3) / 6, as torch's
  HardSwish,       // x relu6(x + 3) / 6
  Mul,             // a b, b broadcast over the axes where it has size 1 (squeeze-and-excitation)
  Pad,             // zeros around x: attrs.dims, ONNX's pads (every axis's begin, then every end)
  MulParameter,    // x p, p learned, of shape attrs.dims: x's rank, size 1 where repeated (a layer scale)
  Div,             // a / b, b broadcast over the axes where it has size 1
  AddConstant,     // x + c, c fixed (not learned) of shape attrs.dims, broadcast (Swin's attention mask)
  AddGathered,     // x + t[index]: t learned (`features` values), index fixed of shape attrs.dims, broadcast
  LeakyReLU,       // x where x > 0, else attrs.scale x (the negative slope, > 0), as torch's LeakyReLU
  UpsampleNearest, // [N, C, H, W] -> [N, C, H kernel_h, W kernel_w]: each pixel repeated as a block (torch's
                   // Upsample, mode nearest, by whole factors)
  GroupNorm,       // over attrs.groups groups of channels per sample; gamma and beta per channel (torch's
                   // GroupNorm; InstanceNorm with a group per channel)
  GroupNormStats,  // [batch x groups, 2]
  ConvTranspose2d, // attrs as conv2d's, and dims: the output padding [rows, columns] (none: 0); weight
                   // [in, out / groups, kh, kw] (torch's ConvTranspose2d, a decoder's upsampling)
  UpsampleBilinear, // [N, C, H, W] -> [N, C, H kernel_h, W kernel_w]: each output pixel interpolated between its
                    // 4 nearest inputs at half-pixel centres (torch's Upsample, mode bilinear, align_corners=False)
  ELU,             // x where x > 0, else attrs.scale (e^x - 1) (alpha, > 0), as torch's ELU
  Softplus,        // ln(1 + e^x), as torch's Softplus (beta 1; x itself above 20)
  PRelu,           // x where x > 0, else p x, p learned of shape attrs.dims (x's rank, size 1 where repeated), as
                   // torch's PReLU (one slope per channel, or one for all)
  SoftmaxCrossEntropy,  // the loss; its output is the class probabilities
  MeanSquaredError,     // an autoencoder's loss: the mean of (x - target)^2 over every element, the target the
                        // model's input (inputs: x, target); its output is x - target, [batch, values per sample]
  // The reference implementation's fused transformer ops, for `chain` parity only.
  RefQueryKeyValue,
  RefQKT,
  RefQKTV,
  RefLinearReLU,
  // Backward.
  ChainGradient,   // the reference's GradientLayer (`chain` mode)
  GradInput,       // gradient of one input of a forward node (autodiff)
  GradParam,       // gradient of a forward node's parameters, written to the gradient region
  GradAccumulate,  // sum of the gradient contributions of a tensor used more than once
  // New operators go above: the operator tables size themselves by the last kind.
};

inline constexpr std::size_t kOpKindCount = static_cast<std::size_t>(OpKind::GradAccumulate) + 1;

enum class Role : std::uint8_t { Forward, Loss, Backward };

// Stable lower_snake_case names, used in JSON files and messages.
std::string_view op_name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);
std::string all_op_names();  // "input, linear, ...", for messages listing the valid names
std::string_view role_name(Role role);
std::optional<Role> role_from_name(std::string_view name);

// The class name the reference implementation uses for this op (e.g. "Conv2dLayer").
std::string_view reference_class_name(OpKind op);

}  // namespace poet
