#include "poet/graph/graph.h"

#include <gtest/gtest.h>

#include "poet/util/error.h"

namespace poet {
namespace {

Node make(std::string name, OpKind op, Shape shape, std::vector<NodeId> inputs, Role role = Role::Forward) {
  Node n;
  n.name = std::move(name);
  n.op = op;
  n.role = role;
  n.shape = std::move(shape);
  n.inputs = std::move(inputs);
  return n;
}

Graph tiny_mlp() {
  Graph g("tiny");
  const NodeId x = g.add(make("input", OpKind::Input, {2, 8}, {}));
  Node fc = make("fc", OpKind::Linear, {2, 4}, {x});
  fc.param_count = 8 * 4 + 4;
  fc.flops = 2 * 36 + 4;
  const NodeId l = g.add(fc);
  g.add(make("loss", OpKind::SoftmaxCrossEntropy, {2, 4}, {l}, Role::Loss));
  return g;
}

TEST(Graph, ComputesBytesAndFixedMemory) {
  const Graph g = tiny_mlp();
  EXPECT_EQ(g.node(0).bytes, 2 * 8 * 4);
  EXPECT_EQ(g.forward_activation_bytes(), (16 + 8 + 8) * 4);
  EXPECT_EQ(g.fixed_memory().parameter_bytes, 36 * 4);
  EXPECT_EQ(g.fixed_memory(Optimizer::Adam).optimizer_state_bytes, 2 * 36 * 4);
  EXPECT_EQ(g.fixed_memory(Optimizer::Momentum).total(), 3 * 36 * 4);
  EXPECT_EQ(g.loss(), 2);
  EXPECT_EQ(g.edge_count(), 2u);
  g.validate();
}

TEST(Graph, RejectsForwardReferenceNamingTheNode) {
  Graph g("bad");
  g.add(make("input", OpKind::Input, {1}, {}));
  try {
    g.add(make("relu", OpKind::ReLU, {1}, {1}));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'relu' (1) input 0 is node 1"), std::string::npos) << e.what();
  }
}

TEST(Graph, RequiresExactlyOneLoss) {
  Graph g = tiny_mlp();
  g.add(make("loss2", OpKind::SoftmaxCrossEntropy, {2, 4}, {1}, Role::Loss));
  try {
    g.validate();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has 2 loss nodes"), std::string::npos) << e.what();
  }
}

TEST(Graph, RejectsNegativeSizes) {
  Graph g = tiny_mlp();
  Node bad = make("neg", OpKind::ReLU, {2, 4}, {1});
  bad.flops = -1;
  EXPECT_THROW(g.add(bad), InputError);  // add() checks a node's own figures
}

TEST(Graph, BackwardNodesMustPointAtForwardNodes) {
  Graph g = tiny_mlp();
  Node grad = make("dfc", OpKind::GradInput, {2, 8}, {2}, Role::Backward);
  grad.grad = {1, 3};  // fc has one input
  g.add(grad);
  try {
    g.validate();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("slot 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace poet
