// The autodiff backward on small hand-made networks: each backward node must read exactly
// the forward tensors its math needs.
#include <gtest/gtest.h>

#include <set>

#include "poet/backward/backward.h"
#include "poet/util/error.h"

namespace poet {
namespace {

struct Net {
  Graph g{"hand"};
  NodeId add(const char* name, OpKind op, Shape shape, std::vector<NodeId> in, std::int64_t params = 0,
             Role role = Role::Forward) {
    Node n;
    n.name = name;
    n.op = op;
    n.role = role;
    n.shape = std::move(shape);
    n.inputs = std::move(in);
    n.param_count = params;
    n.flops = 1;
    return g.add(std::move(n));
  }
};

NodeId find(const Graph& g, const std::string& name) {
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).name == name) return v;
  ADD_FAILURE() << "no node named " << name;
  return -1;
}

std::set<std::string> input_names(const Graph& g, const std::string& node) {
  std::set<std::string> names;
  for (NodeId in : g.node(find(g, node)).inputs) names.insert(g.node(in).name);
  return names;
}

using Names = std::set<std::string>;

TEST(Autodiff, MlpReadsExactlyWhatTheMathNeeds) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {4, 8}, {});
  const NodeId fc1 = n.add("fc1", OpKind::Linear, {4, 16}, {x}, 8 * 16 + 16);
  const NodeId relu = n.add("relu", OpKind::ReLU, {4, 16}, {fc1});
  const NodeId fc2 = n.add("fc2", OpKind::Linear, {4, 3}, {relu}, 16 * 3 + 3);
  n.add("loss", OpKind::SoftmaxCrossEntropy, {4, 3}, {fc2}, 0, Role::Loss);
  const Graph g = build_autodiff_backward(n.g);

  // d logits = probabilities - labels: the loss's output only.
  EXPECT_EQ(input_names(g, "dfc2<-loss"), (Names{"loss"}));
  // dX of a linear layer needs only dY (the weights are fixed memory); dW needs its input.
  EXPECT_EQ(input_names(g, "drelu<-fc2"), (Names{"dfc2<-loss"}));
  EXPECT_EQ(input_names(g, "dparams(fc2)"), (Names{"dfc2<-loss", "relu"}));
  // ReLU's gradient reads its output.
  EXPECT_EQ(input_names(g, "dfc1<-relu"), (Names{"drelu<-fc2", "relu"}));
  EXPECT_EQ(input_names(g, "dparams(fc1)"), (Names{"dfc1<-relu", "x"}));
  // No gradient of the data.
  for (const auto& node : g.nodes()) EXPECT_NE(node.name, "dx<-fc1");
  // 5 forward + loss gradient, relu/fc1-input gradients, and two parameter gradients.
  EXPECT_EQ(g.size(), 5u + 5u);
  const Node& dw = g.node(find(g, "dparams(fc2)"));
  EXPECT_EQ(dw.op, OpKind::GradParam);
  EXPECT_EQ(dw.bytes, 0);  // it is written to the gradient region, not to activations
  EXPECT_EQ(dw.grad, (GradOf{fc2, GradOf::kParams}));
  EXPECT_EQ(g.node(find(g, "dfc1<-relu")).grad, (GradOf{relu, 0}));
  EXPECT_EQ(g.fixed_memory().gradient_bytes, (8 * 16 + 16 + 16 * 3 + 3) * 4);
}

TEST(Autodiff, ResidualBlockAccumulatesTheGradientOfATensorUsedTwice) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {1, 4, 8, 8}, {});
  const NodeId stem = n.add("stem", OpKind::Conv2d, {1, 4, 8, 8}, {x}, 4 * 4 * 9 + 4);
  const NodeId conv = n.add("conv", OpKind::Conv2d, {1, 4, 8, 8}, {stem}, 4 * 4 * 9 + 4);
  const NodeId bn = n.add("bn", OpKind::BatchNorm2d, {1, 4, 8, 8}, {conv}, 16);
  const NodeId relu = n.add("relu", OpKind::ReLU, {1, 4, 8, 8}, {bn});
  const NodeId sum = n.add("add", OpKind::Add, {1, 4, 8, 8}, {relu, stem});
  const NodeId flat = n.add("flat", OpKind::Flatten, {1, 256}, {sum});
  const NodeId fc = n.add("fc", OpKind::Linear, {1, 10}, {flat}, 2570);
  n.add("loss", OpKind::SoftmaxCrossEntropy, {1, 10}, {fc}, 0, Role::Loss);
  const Graph g = build_autodiff_backward(n.g);

  // The batch norm is lowered: its statistics are a node of their own, [channels, 2].
  EXPECT_EQ(input_names(g, "bn.stats"), (Names{"conv"}));
  EXPECT_EQ(g.node(find(g, "bn.stats")).shape, (Shape{4, 2}));
  EXPECT_EQ(input_names(g, "bn"), (Names{"conv", "bn.stats"}));
  // add's gradient reads nothing: dY flows to both inputs unchanged, with no node.
  for (const auto& node : g.nodes()) EXPECT_EQ(node.name.find("<-add"), std::string::npos) << node.name;
  // stem is read by conv and by add: its gradient is the sum of exactly those two
  // contributions, add's being d(add) itself, passed through.
  EXPECT_EQ(g.node(find(g, "dstem")).op, OpKind::GradAccumulate);
  EXPECT_EQ(input_names(g, "dstem"), (Names{"dstem<-conv", "dadd<-flat"}));
  EXPECT_EQ(input_names(g, "dbn<-relu"), (Names{"dadd<-flat", "relu"}));
  // Batch norm's backward reads its input and statistics, not its output.
  EXPECT_EQ(input_names(g, "dconv<-bn"), (Names{"dbn<-relu", "conv", "bn.stats"}));
  EXPECT_EQ(input_names(g, "dparams(bn)"), (Names{"dbn<-relu", "conv", "bn.stats"}));
  // The flatten's gradient reads only dY; conv's weight gradient its input.
  EXPECT_EQ(input_names(g, "dadd<-flat"), (Names{"dflat<-fc"}));
  EXPECT_EQ(input_names(g, "dparams(conv)"), (Names{"dconv<-bn", "stem"}));
}

TEST(Autodiff, AttentionGradientsReadTheOtherOperandAndSoftmaxItsOutput) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {1, 6, 8}, {});
  const NodeId q = n.add("q", OpKind::Linear, {1, 6, 8}, {x}, 72);
  const NodeId k = n.add("k", OpKind::Linear, {1, 6, 8}, {x}, 72);
  const NodeId v = n.add("v", OpKind::Linear, {1, 6, 8}, {x}, 72);
  const NodeId qh = n.add("qh", OpKind::SplitHeads, {1, 2, 6, 4}, {q});
  const NodeId kh = n.add("kh", OpKind::SplitHeads, {1, 2, 6, 4}, {k});
  const NodeId vh = n.add("vh", OpKind::SplitHeads, {1, 2, 6, 4}, {v});
  const NodeId s = n.add("scores", OpKind::MatMul, {1, 2, 6, 6}, {qh, kh});
  const NodeId p = n.add("probs", OpKind::Softmax, {1, 2, 6, 6}, {s});
  const NodeId c = n.add("ctx", OpKind::MatMul, {1, 2, 6, 4}, {p, vh});
  const NodeId m = n.add("merged", OpKind::MergeHeads, {1, 6, 8}, {c});
  const NodeId o = n.add("proj", OpKind::Linear, {1, 6, 8}, {m}, 72);
  const NodeId r = n.add("res", OpKind::Add, {1, 6, 8}, {x, o});
  const NodeId ln = n.add("ln", OpKind::LayerNorm, {1, 6, 8}, {r}, 16);
  n.add("loss", OpKind::SoftmaxCrossEntropy, {1, 6, 8}, {ln}, 0, Role::Loss);
  const Graph g = build_autodiff_backward(n.g);

  EXPECT_EQ(input_names(g, "dprobs<-ctx"), (Names{"dctx<-merged", "vh"}));
  EXPECT_EQ(input_names(g, "dvh<-ctx"), (Names{"dctx<-merged", "probs"}));
  EXPECT_EQ(input_names(g, "dscores<-probs"), (Names{"dprobs<-ctx", "probs"}));
  EXPECT_EQ(input_names(g, "dqh<-scores"), (Names{"dscores<-probs", "kh"}));
  EXPECT_EQ(input_names(g, "dkh<-scores"), (Names{"dscores<-probs", "qh"}));
  EXPECT_EQ(input_names(g, "dq<-qh"), (Names{"dqh<-scores"}));
  EXPECT_EQ(input_names(g, "dres<-ln"), (Names{"dln<-loss", "res", "ln.stats"}));
  EXPECT_EQ(g.node(find(g, "ln.stats")).shape, (Shape{6, 2}));
  // Four linear layers and the layer norm have parameters: five parameter gradients.
  int param_grads = 0;
  for (const auto& node : g.nodes()) param_grads += node.op == OpKind::GradParam;
  EXPECT_EQ(param_grads, 5);
}

TEST(Autodiff, AnOpWithoutARuleIsALoudError) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {512, 768}, {});
  const NodeId qkv = n.add("block0.qkv", OpKind::RefQueryKeyValue, {1536, 64, 12}, {x}, 100);
  n.add("loss", OpKind::SoftmaxCrossEntropy, {512}, {qkv}, 0, Role::Loss);
  try {
    build_autodiff_backward(n.g);
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no gradient rule for op 'ref_query_key_value' (node 'block0.qkv')"), std::string::npos)
        << what;
    EXPECT_NE(what.find("use --backward chain"), std::string::npos) << what;
  }
}

TEST(Autodiff, EveryZooModelValidatesAndEveryParameterGetsAGradient) {
  for (const auto& m : model_catalog()) {
    SCOPED_TRACE(m.name);
    const Graph g = build_model_training_graph(m.name, {.batch_size = 2}, BackwardMode::Autodiff);
    g.validate();
    std::set<NodeId> with_params, with_grads;
    for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
      const Node& n = g.node(v);
      if (n.role != Role::Backward && n.param_count > 0) with_params.insert(v);
      if (n.op == OpKind::GradParam) with_grads.insert(n.grad.node);
      if (n.role == Role::Backward) {
        for (NodeId in : n.inputs) EXPECT_LT(in, v);
      }
    }
    EXPECT_EQ(with_params, with_grads);
  }
}

}  // namespace
}  // namespace poet
#include <cstdlib>
#include <fstream>
namespace poet { TEST(AutodiffDump, Dump) {
  const char* out = std::getenv("AD_DUMP"); if (!out) return;
  std::ofstream f(out);
  for (const auto& m : model_catalog()) { const Graph g = build_model_training_graph(m.name, {.batch_size = 2}, BackwardMode::Autodiff);
    for (const auto& n : g.nodes()) { f << m.name << " " << n.name << " " << n.flops << " <-"; for (auto i : n.inputs) f << " " << g.node(i).name; f << "\n"; } } } }
