#include <gtest/gtest.h>

#include "poet/backward/backward.h"
#include "poet/graph/op_table.h"
#include "poet/models/zoo.h"
#include "poet/util/error.h"

namespace poet {
namespace {

std::int64_t total_params(const Graph& g) {
  std::int64_t p = 0;
  for (const auto& n : g.nodes()) p += n.param_count;
  return p;
}

TEST(Models, EveryModelBuildsInBothFlavorsAndValidates) {
  for (const auto& m : model_catalog()) {
    for (const int batch : {1, 4}) {
      SCOPED_TRACE(m.name + " batch " + std::to_string(batch));
      const Graph f = build_forward_graph(m.name, {.batch_size = batch, .flavor = ModelFlavor::Faithful});
      f.validate();
      EXPECT_EQ(f.node(static_cast<NodeId>(f.size() - 1)).role, Role::Loss);
      EXPECT_EQ(f.node(0).shape.front(), batch);
      const bool batchless_reference = m.name == "transformer" || m.name == "bert";
      if (batch == 1 || !batchless_reference)
        build_forward_graph(m.name, {.batch_size = batch, .flavor = ModelFlavor::Reference}).validate();
    }
  }
}

TEST(Models, Lenet5ByHand) {
  const Graph g = build_forward_graph("lenet5", {.batch_size = 1});
  // conv1 5x5x1x6 + 6, conv2 5x5x6x16 + 16, fc 400x120 + 120, 120x84 + 84, 84x10 + 10.
  EXPECT_EQ(total_params(g), 156 + 2416 + 48120 + 10164 + 850);
  EXPECT_EQ(total_params(g), 61706);
  const std::vector<std::pair<const char*, Shape>> shapes{
      {"conv1", {1, 6, 28, 28}}, {"pool1", {1, 6, 14, 14}}, {"conv2", {1, 16, 10, 10}},
      {"pool2", {1, 16, 5, 5}},  {"flatten", {1, 400}},     {"fc3", {1, 10}}};
  for (const auto& [name, shape] : shapes) {
    bool found = false;
    for (const auto& n : g.nodes())
      if (n.name == name) {
        EXPECT_EQ(n.shape, shape) << name;
        found = true;
      }
    EXPECT_TRUE(found) << name;
  }
}

TEST(Models, FaithfulModelsTrainTorchvisionsParameterCounts) {
  // sum(p.numel() for p in torchvision.models.<name>().parameters()), torchvision 0.14.
  const std::pair<const char*, std::int64_t> torchvision[] = {
      {"resnet18", 11'689'512}, {"resnet50", 25'557'032}, {"mobilenet_v2", 3'504'872}, {"vgg16", 138'357'544}};
  for (const auto& [model, parameters] : torchvision) {
    const Graph g = build_forward_graph(model, {.batch_size = 1, .flavor = ModelFlavor::Faithful});
    EXPECT_EQ(trainable_parameters(g), parameters) << model;
  }
  // Batch norm also keeps its running mean and variance (PyTorch's buffers): memory, not
  // trained. mobilenet_v2 has 17,056 channels through batch norms.
  const Graph g = build_forward_graph("mobilenet_v2", {.batch_size = 1});
  EXPECT_EQ(total_params(g), 3'504'872 + 2 * 17'056);
  EXPECT_EQ(g.node(static_cast<NodeId>(g.size() - 2)).shape, (Shape{1, 1000}));
}

TEST(Models, ReferenceTransformerKeepsTheMiswiredResidualFaithfulDoesNot) {
  const Graph ref = build_forward_graph("transformer", {.flavor = ModelFlavor::Reference});
  const Node& res2 = ref.node(8);
  EXPECT_EQ(res2.name, "block0.residual2");
  EXPECT_EQ(ref.node(res2.inputs[0]).name, "block0.proj");  // the reference's layers[-4]
  const Graph real = build_forward_graph("transformer", {.flavor = ModelFlavor::Faithful});
  bool found = false;
  for (const auto& n : real.nodes()) {
    if (n.name != "block0.residual2") continue;
    EXPECT_EQ(real.node(n.inputs[0]).name, "block0.ln1");
    found = true;
  }
  EXPECT_TRUE(found);
}

TEST(Models, UnknownNamesAndBadBatchSizesAreRejected) {
  try {
    build_forward_graph("resnet19", {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown model 'resnet19': expected one of linear, vgg16, vgg16_cifar, resnet18, resnet18_cifar, "
                 "resnet50, transformer, bert, mobilenet_v2, lenet5, mcu_cnn");
  }
  EXPECT_THROW(build_forward_graph("lenet5", {.batch_size = 0}), InputError);
  try {
    build_model_training_graph("bert", {.batch_size = 2}, BackwardMode::Chain);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch size 1 only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace poet
