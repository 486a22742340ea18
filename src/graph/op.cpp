#include "poet/graph/op.h"

#include <array>
#include <utility>

namespace poet {
namespace {

struct OpNames {
  OpKind op;
  std::string_view name;
  std::string_view reference_class;  // empty where the reference has no such layer
};

constexpr std::array kOps{
    OpNames{OpKind::Input, "input", "InputLayer"},
    OpNames{OpKind::Linear, "linear", "LinearLayer"},
    OpNames{OpKind::Conv2d, "conv2d", "Conv2dLayer"},
    OpNames{OpKind::BatchNorm2d, "batch_norm2d", "BatchNorm2d"},
    OpNames{OpKind::BatchNormStats, "batch_norm_stats", ""},
    OpNames{OpKind::LayerNorm, "layer_norm", ""},
    OpNames{OpKind::LayerNormStats, "layer_norm_stats", ""},
    OpNames{OpKind::ReLU, "relu", "ReLULayer"},
    OpNames{OpKind::ReLU6, "relu6", ""},
    OpNames{OpKind::GELU, "gelu", ""},
    OpNames{OpKind::Tanh, "tanh", "TanHLayer"},
    OpNames{OpKind::Sigmoid, "sigmoid", "SigmoidLayer"},
    OpNames{OpKind::MaxPool2d, "max_pool2d", "MaxPool2d"},
    OpNames{OpKind::AvgPool2d, "avg_pool2d", "AvgPool2d"},
    OpNames{OpKind::GlobalAvgPool, "global_avg_pool", "GlobalAvgPool"},
    OpNames{OpKind::Add, "add", "SkipAddLayer"},
    OpNames{OpKind::Flatten, "flatten", "FlattenLayer"},
    OpNames{OpKind::Dropout, "dropout", "DropoutLayer"},
    OpNames{OpKind::MatMul, "matmul", ""},
    OpNames{OpKind::Softmax, "softmax", ""},
    OpNames{OpKind::Embedding, "embedding", ""},
    OpNames{OpKind::SplitHeads, "split_heads", ""},
    OpNames{OpKind::MergeHeads, "merge_heads", ""},
    OpNames{OpKind::SoftmaxCrossEntropy, "softmax_cross_entropy", "CrossEntropyLoss"},
    OpNames{OpKind::RefQueryKeyValue, "ref_query_key_value", "QueryKeyValueMatrix"},
    OpNames{OpKind::RefQKT, "ref_qkt", "QKTMatrix"},
    OpNames{OpKind::RefQKTV, "ref_qktv", "QKTVMatrix"},
    OpNames{OpKind::RefLinearReLU, "ref_linear_relu", "LinearLayerReLU"},
    OpNames{OpKind::ChainGradient, "chain_gradient", "GradientLayer"},
    OpNames{OpKind::GradInput, "grad_input", ""},
    OpNames{OpKind::GradParam, "grad_param", ""},
    OpNames{OpKind::GradAccumulate, "grad_accumulate", ""},
};

const OpNames& entry(OpKind op) {
  for (const auto& e : kOps)
    if (e.op == op) return e;
  static const OpNames unknown{op, "unknown", ""};
  return unknown;
}

constexpr std::array<std::pair<Role, std::string_view>, 3> kRoles{
    std::pair{Role::Forward, "forward"}, std::pair{Role::Loss, "loss"},
    std::pair{Role::Backward, "backward"}};

}  // namespace

std::string_view op_name(OpKind op) { return entry(op).name; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const auto& e : kOps)
    if (e.name == name) return e.op;
  return std::nullopt;
}

std::string all_op_names() {
  std::string names;
  for (const auto& e : kOps) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

std::string_view reference_class_name(OpKind op) { return entry(op).reference_class; }

std::string_view role_name(Role role) {
  for (const auto& [r, name] : kRoles)
    if (r == role) return name;
  return "unknown";
}

std::optional<Role> role_from_name(std::string_view name) {
  for (const auto& [r, n] : kRoles)
    if (n == name) return r;
  return std::nullopt;
}

}  // namespace poet
