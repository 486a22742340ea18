#include "poet/models/zoo.h"

#include <fmt/format.h>

#include <functional>

#include "models.h"
#include "poet/util/error.h"

namespace poet {
namespace {

struct ZooEntry {
  ModelInfo info;
  std::function<Graph(const ModelOptions&)> build;
};

const std::vector<ZooEntry>& zoo() {
  using namespace models;
  static const std::vector<ZooEntry> entries{
      {{"linear", "MLP 784-10-120-100-200-10-10 with ReLU (28x28 inputs)", true}, linear_mlp},
      {{"vgg16", "VGG16, 224x224 RGB, 1000 classes", true}, [](const auto& o) { return vgg16(o, 1000, 224); }},
      {{"vgg16_cifar", "VGG16, 32x32 RGB, 10 classes", true}, [](const auto& o) { return vgg16(o, 10, 32); }},
      {{"resnet18", "ResNet-18, 224x224 RGB, 1000 classes", true}, resnet18},
      {{"resnet18_cifar", "ResNet-18 for CIFAR-10 (16-32-64 channels), 32x32 RGB", true}, resnet18_cifar},
      {{"resnet50", "ResNet-50, 224x224 RGB, 1000 classes", true}, resnet50},
      {{"transformer", "1 transformer encoder block, sequence 512, hidden 768, 12 heads", true},
       [](const auto& o) { return transformer(o, 1, "transformer"); }},
      {{"bert", "BERT-base encoder: 12 blocks, sequence 512, hidden 768, 12 heads", true},
       [](const auto& o) { return transformer(o, 12, "bert"); }},
      {{"mobilenet_v2", "MobileNetV2 1.0, 224x224 RGB, 1000 classes", false}, mobilenet_v2},
      {{"lenet5", "LeNet-5, 28x28 grayscale, 10 classes", false}, lenet5},
      {{"mcu_cnn",
        "CNN of five 3x3 conv8 (the first strided), max-pool, linear; 28x28 grayscale, 10 classes: trains in 256 KB "
        "(firmware/)",
        false},
       mcu_cnn},
  };
  return entries;
}

}  // namespace

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> catalog = [] {
    std::vector<ModelInfo> c;
    for (const auto& e : zoo()) c.push_back(e.info);
    return c;
  }();
  return catalog;
}

Graph build_forward_graph(std::string_view model, const ModelOptions& options) {
  if (options.batch_size < 1)
    throw InputError(fmt::format("batch size {} is not valid: it must be at least 1", options.batch_size));
  std::string names;
  for (const auto& e : zoo()) {
    if (e.info.name == model) {
      Graph g = e.build(options);
      g.validate();
      return g;
    }
    names += (names.empty() ? "" : ", ") + e.info.name;
  }
  throw InputError(fmt::format("unknown model '{}': expected one of {}", model, names));
}

}  // namespace poet
