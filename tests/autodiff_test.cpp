// The autodiff backward on small hand-made networks: each backward node must read exactly
// the forward tensors its math needs, come in the right place, and cost what its rule says.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/graph/op_table.h"
#include "poet/models/zoo.h"
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
  NodeId loss(NodeId logits) { return add("loss", OpKind::SoftmaxCrossEntropy, g.node(logits).shape, {logits}, 0, Role::Loss); }
};

NodeId find(const Graph& g, const std::string& name) {
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).name == name) return v;
  ADD_FAILURE() << "no node named " << name;
  return 0;
}

bool has(const Graph& g, const std::string& name) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.name == name; });
}

using Names = std::set<std::string>;

Names input_names(const Graph& g, const std::string& node) {
  Names names;
  for (NodeId in : g.node(find(g, node)).inputs) names.insert(g.node(in).name);
  return names;
}

// "grad_input dfc1<-relu = d relu[0] <- drelu<-fc2, relu": one backward node, in a form a
// failing comparison prints readably.
std::string describe(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  std::vector<std::string> ins;
  for (NodeId in : n.inputs) ins.push_back(g.node(in).name);
  const std::string slot = n.grad.slot == GradOf::kParams ? "params" : std::to_string(n.grad.slot);
  return fmt::format("{} {} = d {}[{}] <- {}", op_name(n.op), n.name, g.node(n.grad.node).name, slot,
                     fmt::join(ins, ", "));
}

std::vector<std::string> backward_nodes(const Graph& g) {
  std::vector<std::string> out;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).role == Role::Backward) out.push_back(describe(g, v));
  return out;
}

std::vector<std::string> forward_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes())
    if (n.role != Role::Backward) out.push_back(n.name);
  return out;
}

// Properties every autodiff graph has, whatever the network.
void expect_well_formed(const Graph& g) {
  g.validate();
  const auto users = g.users();
  NodeId previous_target = static_cast<NodeId>(g.size());
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.role != Role::Backward) {
      EXPECT_EQ(previous_target, static_cast<NodeId>(g.size())) << n.name << ": forward nodes come first";
      continue;
    }
    // Backward nodes in reverse order of the forward nodes they differentiate, except that
    // an accumulate is placed by its contributions (checked below).
    if (n.op != OpKind::GradAccumulate) {
      EXPECT_LE(n.grad.node, previous_target) << n.name;
      previous_target = n.grad.node;
    }
    EXPECT_NE(g.node(n.grad.node).role, Role::Backward) << n.name;
    switch (n.op) {
      case OpKind::GradInput: {
        const Node& target = g.node(g.node(n.grad.node).inputs.at(static_cast<std::size_t>(n.grad.slot)));
        EXPECT_EQ(n.shape, target.shape) << n.name;
        EXPECT_EQ(n.bytes, element_count(n.shape) * n.element_bytes) << n.name;
        EXPECT_NE(target.op, OpKind::Input) << n.name << ": no gradient of the data";
        break;
      }
      case OpKind::GradParam:
        EXPECT_EQ(n.shape, (Shape{trainable_parameters(g.node(n.grad.node))})) << n.name;
        EXPECT_EQ(n.bytes, 0) << n.name;
        EXPECT_TRUE(users[v].empty()) << n.name << ": parameter gradients feed the optimizer, not the graph";
        break;
      case OpKind::GradAccumulate: {
        EXPECT_GE(n.inputs.size(), 2u) << n.name;
        EXPECT_EQ(n.shape, g.node(n.grad.node).shape) << n.name;
        // Directly after its last contribution (a flow-through contribution is older).
        const NodeId last = *std::max_element(n.inputs.begin(), n.inputs.end());
        for (NodeId between = last + 1; between < v; ++between)
          EXPECT_NE(g.node(between).op, OpKind::GradInput) << n.name << " comes after " << g.node(between).name;
        break;
      }
      default:
        ADD_FAILURE() << n.name << " has op " << op_name(n.op);
    }
  }
}

// (1) x -> fc1 -> relu -> fc2 -> loss, every backward node exactly.
TEST(Autodiff, MlpReadsExactlyWhatTheMathNeeds) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {4, 8}, {});
  const NodeId fc1 = n.add("fc1", OpKind::Linear, {4, 16}, {x}, 8 * 16 + 16);
  const NodeId relu = n.add("relu", OpKind::ReLU, {4, 16}, {fc1});
  const NodeId fc2 = n.add("fc2", OpKind::Linear, {4, 3}, {relu}, 16 * 3 + 3);
  n.loss(fc2);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  // ReLU's backward keeps a 1-bit mask of its output, made directly after it.
  EXPECT_EQ(forward_names(g), (std::vector<std::string>{"x", "fc1", "relu", "relu.relu_mask", "fc2", "loss"}));
  EXPECT_EQ(backward_nodes(g), (std::vector<std::string>{
                                   // d logits = probabilities - labels: the loss's output only, no dY.
                                   "grad_input dfc2<-loss = d loss[0] <- loss",
                                   // dW: dY and the layer input; before dX, so that the input
                                   // can be freed before dX is made.
                                   "grad_param dparams(fc2) = d fc2[params] <- dfc2<-loss, relu",
                                   // dX of a linear layer: dY only (the weights are fixed memory).
                                   "grad_input drelu<-fc2 = d fc2[0] <- dfc2<-loss",
                                   // ReLU's gradient reads the mask, not its output.
                                   "grad_input dfc1<-relu = d relu[0] <- drelu<-fc2, relu.relu_mask",
                                   // No gradient of the data x; fc1's weights read it.
                                   "grad_param dparams(fc1) = d fc1[params] <- dfc1<-relu, x",
                               }));
  EXPECT_EQ(g.node(find(g, "dfc1<-relu")).grad, (GradOf{relu, 0}));
  EXPECT_EQ(g.node(find(g, "dparams(fc1)")).grad, (GradOf{fc1, GradOf::kParams}));

  // FLOPs from the rules: loss 2 per logit; linear dX 2 x rows x in x out, dW the same plus
  // the bias (rows x out); ReLU 1 per element.
  EXPECT_EQ(g.node(find(g, "dfc2<-loss")).flops, 2 * 4 * 3);
  EXPECT_EQ(g.node(find(g, "drelu<-fc2")).flops, 2 * 4 * 16 * 3);
  EXPECT_EQ(g.node(find(g, "dparams(fc2)")).flops, 2 * 4 * 16 * 3 + 4 * 3);
  EXPECT_EQ(g.node(find(g, "dfc1<-relu")).flops, 4 * 16);
  EXPECT_EQ(g.node(find(g, "dparams(fc1)")).flops, 2 * 4 * 8 * 16 + 4 * 16);
  EXPECT_EQ(g.node(find(g, "drelu<-fc2")).bytes, 4 * 16 * 4);
}

// (2) A residual block: a tensor used twice, a flow-through add, a lowered batch norm.
TEST(Autodiff, ResidualBlockAccumulatesTheGradientOfATensorUsedTwice) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {1, 4, 8, 8}, {});
  const NodeId stem = n.add("stem", OpKind::Conv2d, {1, 4, 8, 8}, {x}, 4 * 4 * 9 + 4);
  const NodeId conv = n.add("conv", OpKind::Conv2d, {1, 4, 8, 8}, {stem}, 4 * 4 * 9 + 4);
  const NodeId bn = n.add("bn", OpKind::BatchNorm2d, {1, 4, 8, 8}, {conv}, 8);
  const NodeId relu = n.add("relu", OpKind::ReLU, {1, 4, 8, 8}, {bn});
  const NodeId sum = n.add("add", OpKind::Add, {1, 4, 8, 8}, {relu, stem});
  const NodeId flat = n.add("flat", OpKind::Flatten, {1, 256}, {sum});
  const NodeId fc = n.add("fc", OpKind::Linear, {1, 10}, {flat}, 2570);
  n.loss(fc);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  // The batch norm is lowered: its statistics, [channels, 2], come right before it.
  EXPECT_EQ(forward_names(g),
            (std::vector<std::string>{"x", "stem", "conv", "bn.stats", "bn", "relu", "relu.relu_mask", "add", "flat",
                                      "fc", "loss"}));
  EXPECT_EQ(g.node(find(g, "bn.stats")).op, OpKind::BatchNormStats);
  EXPECT_EQ(g.node(find(g, "bn.stats")).shape, (Shape{4, 2}));
  EXPECT_EQ(input_names(g, "bn.stats"), (Names{"conv"}));
  EXPECT_EQ(input_names(g, "bn"), (Names{"conv", "bn.stats"}));

  EXPECT_EQ(backward_nodes(g), (std::vector<std::string>{
                                   "grad_input dfc<-loss = d loss[0] <- loss",
                                   "grad_param dparams(fc) = d fc[params] <- dfc<-loss, flat",
                                   "grad_input dflat<-fc = d fc[0] <- dfc<-loss",
                                   "grad_input dadd<-flat = d flat[0] <- dflat<-fc",
                                   // add reads nothing and makes no node: dY passes to both inputs.
                                   "grad_input dbn<-relu = d relu[0] <- dadd<-flat, relu.relu_mask",
                                   // Batch norm reads its input and statistics, not its output.
                                   "grad_param dparams(bn) = d bn[params] <- dbn<-relu, conv, bn.stats",
                                   "grad_input dconv<-bn = d bn[0] <- dbn<-relu, conv, bn.stats",
                                   "grad_param dparams(conv) = d conv[params] <- dconv<-bn, stem",
                                   "grad_input dstem<-conv = d conv[0] <- dconv<-bn",
                                   // stem, read by conv and add: exactly those two contributions,
                                   // directly after the last one.
                                   "grad_accumulate dstem = d stem[0] <- dadd<-flat, dstem<-conv",
                                   "grad_param dparams(stem) = d stem[params] <- dstem, x",
                               }));
  EXPECT_EQ(g.node(find(g, "dstem")).flops, 4 * 8 * 8);  // one add per element
  EXPECT_EQ(g.node(find(g, "dconv<-bn")).grad, (GradOf{find(g, "bn"), 0}));
}

// (3) One attention block: matmul gradients read the other operand, softmax its output.
TEST(Autodiff, AttentionGradientsReadTheOtherOperandAndSoftmaxItsOutput) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {1, 6, 8}, {});
  const NodeId h = n.add("h", OpKind::Linear, {1, 6, 8}, {x}, 72);
  const NodeId q = n.add("q", OpKind::Linear, {1, 6, 8}, {h}, 72);
  const NodeId k = n.add("k", OpKind::Linear, {1, 6, 8}, {h}, 72);
  const NodeId v = n.add("v", OpKind::Linear, {1, 6, 8}, {h}, 72);
  const NodeId qh = n.add("qh", OpKind::SplitHeads, {1, 2, 6, 4}, {q});
  const NodeId kh = n.add("kh", OpKind::SplitHeads, {1, 2, 6, 4}, {k});
  const NodeId vh = n.add("vh", OpKind::SplitHeads, {1, 2, 6, 4}, {v});
  Node scores;
  scores.name = "scores";
  scores.op = OpKind::MatMul;
  scores.shape = {1, 2, 6, 6};
  scores.inputs = {qh, kh};
  scores.attrs.transpose_b = true;
  scores.flops = 2.0 * 2 * 6 * 6 * 4;
  const NodeId s = n.g.add(scores);
  const NodeId p = n.add("probs", OpKind::Softmax, {1, 2, 6, 6}, {s});
  const NodeId c = n.add("ctx", OpKind::MatMul, {1, 2, 6, 4}, {p, vh});
  const NodeId m = n.add("merged", OpKind::MergeHeads, {1, 6, 8}, {c});
  const NodeId o = n.add("proj", OpKind::Linear, {1, 6, 8}, {m}, 72);
  const NodeId r = n.add("res", OpKind::Add, {1, 6, 8}, {h, o});
  const NodeId ln = n.add("ln", OpKind::LayerNorm, {1, 6, 8}, {r}, 16);
  n.loss(ln);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  EXPECT_EQ(input_names(g, "dres<-ln"), (Names{"dln<-loss", "res", "ln.stats"}));
  EXPECT_EQ(input_names(g, "dparams(ln)"), (Names{"dln<-loss", "res", "ln.stats"}));
  EXPECT_EQ(g.node(find(g, "ln.stats")).op, OpKind::LayerNormStats);
  EXPECT_EQ(g.node(find(g, "ln.stats")).shape, (Shape{6, 2}));  // rows = all but the last axis
  EXPECT_EQ(input_names(g, "dmerged<-proj"), (Names{"dres<-ln"}));  // res passes dY through
  EXPECT_EQ(input_names(g, "dctx<-merged"), (Names{"dmerged<-proj"}));
  EXPECT_EQ(input_names(g, "dprobs<-ctx"), (Names{"dctx<-merged", "vh"}));
  EXPECT_EQ(input_names(g, "dvh<-ctx"), (Names{"dctx<-merged", "probs"}));
  EXPECT_EQ(input_names(g, "dscores<-probs"), (Names{"dprobs<-ctx", "probs"}));
  EXPECT_EQ(input_names(g, "dqh<-scores"), (Names{"dscores<-probs", "kh"}));
  EXPECT_EQ(input_names(g, "dkh<-scores"), (Names{"dscores<-probs", "qh"}));
  EXPECT_EQ(g.node(find(g, "dqh<-scores")).flops, scores.flops);  // dQ = dS K costs what S = Q K^T does
  EXPECT_EQ(input_names(g, "dq<-qh"), (Names{"dqh<-scores"}));
  EXPECT_EQ(input_names(g, "dparams(q)"), (Names{"dq<-qh", "h"}));
  // h feeds q, k, v and the residual: one sum of four contributions, the residual's being
  // d(res) itself.
  const Node& dh = g.node(find(g, "dh"));
  EXPECT_EQ(dh.op, OpKind::GradAccumulate);
  EXPECT_EQ(dh.grad.node, h);
  EXPECT_EQ(input_names(g, "dh"), (Names{"dres<-ln", "dh<-v", "dh<-k", "dh<-q"}));
  EXPECT_EQ(dh.flops, 3.0 * 6 * 8);
  EXPECT_EQ(input_names(g, "dparams(h)"), (Names{"dh", "x"}));
  // Five linear layers and the layer norm have parameters.
  EXPECT_EQ(std::count_if(g.nodes().begin(), g.nodes().end(), [](const Node& nd) { return nd.op == OpKind::GradParam; }),
            6);
}

// The other rules: what each element-wise, pooling and shape op reads.
TEST(Autodiff, ConvNetRulesReadInputOutputOrNothing) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 3, 8, 8}, {});
  const NodeId c1 = n.add("c1", OpKind::Conv2d, {2, 4, 8, 8}, {x}, 112);
  const NodeId r6 = n.add("r6", OpKind::ReLU6, {2, 4, 8, 8}, {c1});
  const NodeId mp = n.add("mp", OpKind::MaxPool2d, {2, 4, 4, 4}, {r6});
  const NodeId ap = n.add("ap", OpKind::AvgPool2d, {2, 4, 2, 2}, {mp});
  const NodeId c2 = n.add("c2", OpKind::Conv2d, {2, 4, 2, 2}, {ap}, 148);
  const NodeId gap = n.add("gap", OpKind::GlobalAvgPool, {2, 4, 1, 1}, {c2});
  const NodeId fl = n.add("fl", OpKind::Flatten, {2, 4}, {gap});
  const NodeId fc = n.add("fc", OpKind::Linear, {2, 3}, {fl}, 15);
  n.loss(fc);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  EXPECT_EQ(input_names(g, "dgap<-fl"), (Names{"dfl<-fc"}));
  EXPECT_EQ(input_names(g, "dc2<-gap"), (Names{"dgap<-fl"}));
  EXPECT_EQ(input_names(g, "dap<-c2"), (Names{"dc2<-gap"}));
  EXPECT_EQ(input_names(g, "dparams(c2)"), (Names{"dc2<-gap", "ap"}));
  EXPECT_EQ(input_names(g, "dmp<-ap"), (Names{"dap<-c2"}));
  EXPECT_EQ(input_names(g, "dr6<-mp"), (Names{"dmp<-ap", "mp.max_pool_indices"}));  // max-pool: its arg-max
  EXPECT_EQ(input_names(g, "dc1<-r6"), (Names{"dr6<-mp", "r6.relu_mask"}));  // relu6: the mask of its output
  EXPECT_EQ(input_names(g, "mp.max_pool_indices"), (Names{"r6"}));  // found from the pool's input
  EXPECT_EQ(input_names(g, "r6.relu_mask"), (Names{"r6"}));
  EXPECT_EQ(input_names(g, "dparams(c1)"), (Names{"dc1<-r6", "x"}));
  EXPECT_FALSE(has(g, "dx<-c1"));
  // Convolution gradients cost what the forward convolution does.
  EXPECT_EQ(g.node(find(g, "dap<-c2")).flops, g.node(find(g, "c2")).flops);
}

TEST(Autodiff, TokenNetRulesEmbeddingDropoutAndActivations) {
  Net n;
  const NodeId ids = n.add("ids", OpKind::Input, {2, 5}, {});
  const NodeId emb = n.add("emb", OpKind::Embedding, {2, 5, 8}, {ids}, 100 * 8);
  const NodeId gelu = n.add("gelu", OpKind::GELU, {2, 5, 8}, {emb});
  const NodeId th = n.add("th", OpKind::Tanh, {2, 5, 8}, {gelu});
  const NodeId sg = n.add("sg", OpKind::Sigmoid, {2, 5, 8}, {th});
  const NodeId dr = n.add("dr", OpKind::Dropout, {2, 5, 8}, {sg});
  const NodeId fc = n.add("fc", OpKind::Linear, {2, 5, 2}, {dr}, 18);
  n.loss(fc);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  EXPECT_EQ(input_names(g, "dsg<-dr"), (Names{"ddr<-fc"}));  // the mask is regenerated, not kept
  EXPECT_EQ(input_names(g, "dth<-sg"), (Names{"dsg<-dr", "sg"}));  // y (1 - y)
  EXPECT_EQ(input_names(g, "dgelu<-th"), (Names{"dth<-sg", "th"}));  // 1 - y^2
  EXPECT_EQ(input_names(g, "demb<-gelu"), (Names{"dgelu<-th", "emb"}));  // GELU reads its input
  EXPECT_EQ(input_names(g, "dparams(emb)"), (Names{"demb<-gelu", "ids"}));
  EXPECT_FALSE(has(g, "dids<-emb"));  // token ids are not differentiable
  EXPECT_EQ(g.node(find(g, "dparams(emb)")).flops, 2 * 5 * 8);
}

// An accumulate comes directly after its last contribution, even with the gradients of
// other nodes between its tensor and that tensor's first reader.
TEST(Autodiff, AccumulateComesDirectlyAfterItsLastContribution) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 4}, {});
  const NodeId h = n.add("h", OpKind::Linear, {2, 4}, {x}, 20);
  const NodeId w = n.add("w", OpKind::Linear, {2, 4}, {x}, 20);  // between h and its first reader
  const NodeId r = n.add("r", OpKind::ReLU, {2, 4}, {h});
  const NodeId s = n.add("s", OpKind::Add, {2, 4}, {r, h});
  const NodeId t = n.add("t", OpKind::Add, {2, 4}, {s, w});
  n.loss(t);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);
  EXPECT_EQ(backward_nodes(g), (std::vector<std::string>{
                                   "grad_input dt<-loss = d loss[0] <- loss",
                                   "grad_input dh<-r = d r[0] <- dt<-loss, r.relu_mask",
                                   "grad_accumulate dh = d h[0] <- dt<-loss, dh<-r",
                                   "grad_param dparams(w) = d w[params] <- dt<-loss, x",
                                   "grad_param dparams(h) = d h[params] <- dh, x",
                               }));
}

// x @ x: one gradient per slot, told apart by the slot, each reading the other operand
// (which is x itself), then summed.
TEST(Autodiff, ATensorReadInTwoSlotsGetsTwoContributions) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {3, 3}, {});
  const NodeId a = n.add("a", OpKind::Linear, {3, 3}, {x}, 12);
  const NodeId sq = n.add("sq", OpKind::MatMul, {3, 3}, {a, a});
  n.loss(sq);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);
  EXPECT_EQ(backward_nodes(g), (std::vector<std::string>{
                                   "grad_input dsq<-loss = d loss[0] <- loss",
                                   "grad_input da<-sq#0 = d sq[0] <- dsq<-loss, a",
                                   "grad_input da<-sq#1 = d sq[1] <- dsq<-loss, a",
                                   "grad_accumulate da = d a[0] <- da<-sq#0, da<-sq#1",
                                   "grad_param dparams(a) = d a[params] <- da, x",
                               }));
}

// ReLU keeps 1 bit per element, max-pool one index per output of the smallest type its
// window needs: the footprint of their backward is dY, dX and these, not a full tensor more.
TEST(Autodiff, ReluAndMaxPoolKeepOnlyTheirMaskAndArgmax) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 3, 8, 8}, {});
  const NodeId c1 = n.add("c1", OpKind::Conv2d, {2, 4, 8, 8}, {x}, 112);
  Node pool;
  pool.name = "mp";
  pool.op = OpKind::MaxPool2d;
  pool.shape = {2, 4, 4, 4};
  pool.inputs = {n.add("r", OpKind::ReLU, {2, 4, 8, 8}, {c1})};
  pool.attrs = OpAttrs{};
  pool.attrs.kernel_h = pool.attrs.kernel_w = pool.attrs.stride_h = pool.attrs.stride_w = 2;
  const NodeId pool_id = n.g.add(pool);
  pool.name = "big";  // 17x17 windows: 289 positions need two bytes
  pool.shape = {2, 4, 1, 1};
  pool.inputs = {pool_id};
  pool.attrs.kernel_h = pool.attrs.kernel_w = 17;
  pool.attrs.stride_h = pool.attrs.stride_w = 1;
  pool.attrs.pad_h = pool.attrs.pad_w = 7;
  const NodeId big = n.g.add(pool);
  const NodeId fl = n.add("fl", OpKind::Flatten, {2, 4}, {big});
  n.loss(n.add("fc", OpKind::Linear, {2, 3}, {fl}, 15));
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);

  const NodeId r = find(g, "r"), mp = find(g, "mp");  // their ids in the training graph
  const Node& mask = g.node(find(g, "r.relu_mask"));
  EXPECT_EQ(mask.op, OpKind::ReLUMask);
  EXPECT_EQ(mask.bytes, 2 * 4 * 8 * 8 / 8);  // 1 bit per element: 1/32 of the fp32 output
  EXPECT_EQ(mask.bytes * 32, g.node(r).bytes);
  EXPECT_EQ(find(g, "r.relu_mask"), find(g, "r") + 1);  // after the ReLU, reading its output
  EXPECT_EQ(find(g, "mp.max_pool_indices"), find(g, "mp") - 1);  // before the pool, reading its input
  const Node& indices = g.node(find(g, "mp.max_pool_indices"));
  EXPECT_EQ(indices.shape, (Shape{2, 4, 4, 4}));
  EXPECT_EQ(indices.element_bytes, 1);
  EXPECT_EQ(indices.bytes, 2 * 4 * 4 * 4);
  EXPECT_EQ(indices.attrs, g.node(mp).attrs);
  EXPECT_EQ(g.node(find(g, "big.max_pool_indices")).element_bytes, 2);
  // Neither the ReLU's output nor the pool's input is read by any backward node.
  for (const Node& b : g.nodes())
    if (b.role == Role::Backward && b.op != OpKind::GradParam) {
      EXPECT_EQ(std::count(b.inputs.begin(), b.inputs.end(), r), 0) << b.name;
      EXPECT_EQ(std::count(b.inputs.begin(), b.inputs.end(), mp), 0) << b.name;
    }
  // The ReLU's backward holds dY, dX and the mask: two fp32 tensors and 1/32 of one.
  const Node& dr = g.node(find(g, "dc1<-r"));
  std::int64_t footprint = dr.bytes;
  for (NodeId in : dr.inputs) footprint += g.node(in).bytes;
  EXPECT_EQ(footprint, 2 * g.node(r).bytes + mask.bytes);
}

// Only what leads to parameters and reaches the loss is differentiated.
TEST(Autodiff, NoGradientForDataOnlyPathsOrForWhatMissesTheLoss) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 4}, {});
  const NodeId pre = n.add("pre", OpKind::ReLU, {2, 4}, {x});     // no parameters before it
  const NodeId fc = n.add("fc", OpKind::Linear, {2, 4}, {pre}, 20);
  n.add("side", OpKind::Linear, {2, 4}, {fc}, 20);  // a dead end
  n.loss(fc);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);
  EXPECT_EQ(backward_nodes(g), (std::vector<std::string>{
                                   "grad_input dfc<-loss = d loss[0] <- loss",
                                   "grad_param dparams(fc) = d fc[params] <- dfc<-loss, pre",
                               }));
}

// (4)
TEST(Autodiff, AnOpWithoutARuleIsALoudError) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {512, 768}, {});
  const NodeId qkv = n.add("block0.qkv", OpKind::RefQueryKeyValue, {1536, 64, 12}, {x}, 100);
  n.add("loss", OpKind::SoftmaxCrossEntropy, {512}, {qkv}, 0, Role::Loss);
  try {
    build_autodiff_backward(n.g);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no gradient rule for op 'ref_query_key_value' (node 'block0.qkv')"), std::string::npos)
        << what;
    EXPECT_NE(what.find("supports only linear, conv2d, batch_norm2d"), std::string::npos) << what;
    EXPECT_EQ(what.find("ref_qkt"), std::string::npos) << what;
    EXPECT_NE(what.find("use --backward chain"), std::string::npos) << what;
  }
}

TEST(Autodiff, RejectsAGraphWithBackwardOrWithoutLoss) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 4}, {});
  n.add("fc", OpKind::Linear, {2, 4}, {x}, 20);
  EXPECT_THROW(build_autodiff_backward(n.g), InputError);  // no loss
  n.loss(1);
  const Graph once = build_autodiff_backward(n.g);
  EXPECT_THROW(build_autodiff_backward(once), InputError);
}

// (5) One parameter gradient per node with parameters, in the gradient region.
TEST(Autodiff, EveryParametricNodeGetsOneParameterGradientOfZeroActivationBytes) {
  Net n;
  const NodeId x = n.add("x", OpKind::Input, {2, 3, 4, 4}, {});
  const NodeId c = n.add("c", OpKind::Conv2d, {2, 4, 4, 4}, {x}, 112);
  const NodeId bn = n.add("bn", OpKind::BatchNorm2d, {2, 4, 4, 4}, {c}, 8);
  const NodeId fl = n.add("fl", OpKind::Flatten, {2, 64}, {bn});
  const NodeId fc = n.add("fc", OpKind::Linear, {2, 5}, {fl}, 325);
  n.loss(fc);
  const Graph g = build_autodiff_backward(n.g);
  expect_well_formed(g);
  std::vector<NodeId> targets;
  std::int64_t grad_elements = 0;
  for (const auto& node : g.nodes()) {
    if (node.op != OpKind::GradParam) continue;
    targets.push_back(node.grad.node);
    EXPECT_EQ(node.bytes, 0) << node.name;
    grad_elements += node.shape.at(0);
  }
  EXPECT_EQ(targets, (std::vector<NodeId>{find(g, "fc"), find(g, "bn"), find(g, "c")}));
  EXPECT_EQ(grad_elements * 4, g.fixed_memory().gradient_bytes);
  EXPECT_EQ(g.fixed_memory().parameter_bytes, n.g.fixed_memory().parameter_bytes);  // stats own none
}

// (6) Every zoo model's Faithful forward graph differentiates into a valid training graph.
TEST(Autodiff, EveryZooModelValidatesAndEveryParameterGetsAGradient) {
  for (const auto& m : model_catalog()) {
    SCOPED_TRACE(m.name);
    const Graph forward = build_forward_graph(m.name, {.batch_size = 1, .flavor = ModelFlavor::Faithful});
    const Graph g = build_autodiff_backward(forward);
    expect_well_formed(g);
    std::set<NodeId> with_params, with_grads;
    for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
      const Node& n = g.node(v);
      if (n.role != Role::Backward && n.param_count > 0) with_params.insert(v);
      if (n.op == OpKind::GradParam) {
        EXPECT_TRUE(with_grads.insert(n.grad.node).second) << n.name;
      }
    }
    EXPECT_EQ(with_params, with_grads);
  }
  // The dispatcher builds the same graph.
  const Graph forward = build_forward_graph("resnet18_cifar", {.batch_size = 2, .flavor = ModelFlavor::Faithful});
  const Graph a = build_autodiff_backward(forward);
  const Graph b = build_model_training_graph("resnet18_cifar", {.batch_size = 2}, BackwardMode::Autodiff);
  EXPECT_EQ(backward_nodes(a), backward_nodes(b));
}

}  // namespace
}  // namespace poet
