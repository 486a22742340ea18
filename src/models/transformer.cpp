// Transformer encoders: `transformer` (1 block) and `bert` (12 blocks), sequence 512,
// hidden 768, 12 heads of 64.
//
// Reference flavor: the reference's graph, built from its fused layers (query-key-value,
// QK^T with mask and dropout, QK^T V with concatenation, linear+ReLU), with its mis-wired
// second residual, which adds the attention projection instead of the first residual. Like
// the reference it has no batch dimension, so it exists for batch size 1 only.
// Faithful flavor: a real post-norm BERT block from operators with kernels.
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"
#include "poet/util/error.h"

namespace poet::models {
namespace {

constexpr std::int64_t kSeq = 512, kHidden = 768, kHeadDim = 64, kHeads = 12;

NodeId reference_block(NetBuilder& net, NodeId x, const std::string& p) {
  const NodeId qkv = net.ref_query_key_value(x, kSeq, kHidden, kHeadDim, kHeads, p + ".qkv");
  const NodeId qkt = net.ref_qkt(qkv, kSeq, kHeadDim, kHeads, p + ".qkt");
  const NodeId qktv = net.ref_qktv(qkt, kSeq, kHeadDim, kHeads, p + ".qktv");
  const NodeId proj = net.linear(qktv, kHidden, p + ".proj");
  const NodeId res1 = net.add(x, proj, p + ".residual1");
  const NodeId ff1 = net.ref_linear_relu(res1, 4 * kHidden, p + ".ff1");
  const NodeId ff2 = net.linear(ff1, kHidden, p + ".ff2");
  return net.add(proj, ff2, p + ".residual2");  // the reference's layers[-4]: proj, not res1
}

NodeId faithful_block(NetBuilder& net, NodeId x, const std::string& p) {
  const NodeId q = net.split_heads(net.linear(x, kHidden, p + ".query"), kHeads, p + ".query.heads");
  const NodeId k = net.split_heads(net.linear(x, kHidden, p + ".key"), kHeads, p + ".key.heads");
  const NodeId v = net.split_heads(net.linear(x, kHidden, p + ".value"), kHeads, p + ".value.heads");
  const NodeId scores = net.matmul(q, k, /*transpose_b=*/true, p + ".scores");  // scaled by 1/sqrt(64)
  const NodeId probs = net.dropout(net.softmax(scores, p + ".softmax"), 0.1, p + ".attn_dropout");
  const NodeId context = net.merge_heads(net.matmul(probs, v, false, p + ".context"), p + ".context.merge");
  const NodeId proj = net.dropout(net.linear(context, kHidden, p + ".proj"), 0.1, p + ".proj_dropout");
  const NodeId ln1 = net.layer_norm(net.add(x, proj, p + ".residual1"), p + ".ln1");
  const NodeId ff1 = net.gelu(net.linear(ln1, 4 * kHidden, p + ".ff1"), p + ".gelu");
  const NodeId ff2 = net.dropout(net.linear(ff1, kHidden, p + ".ff2"), 0.1, p + ".ff2_dropout");
  return net.layer_norm(net.add(ln1, ff2, p + ".residual2"), p + ".ln2");
}

}  // namespace

Graph transformer(const ModelOptions& o, int blocks, const char* name) {
  NetBuilder net(name, o.flavor);
  if (o.flavor == ModelFlavor::Reference) {
    if (o.batch_size != 1)
      throw InputError(fmt::format("the reference's {} has no batch dimension, so its `chain` graph exists for "
                                   "batch size 1 only; use --backward autodiff for batch size {}",
                                   name, o.batch_size));
    NodeId x = net.input({kSeq, kHidden});
    for (int b = 0; b < blocks; ++b) x = reference_block(net, x, fmt::format("block{}", b));
    net.loss(x, kSeq);  // the reference's loss has one class per position
    return net.finish();
  }
  // Token embeddings come in as data; the head classifies every token into 2 classes.
  NodeId x = net.input({o.batch_size, kSeq, kHidden});
  for (int b = 0; b < blocks; ++b) x = faithful_block(net, x, fmt::format("block{}", b));
  net.loss(net.linear(x, 2, "classifier"), 2);
  return net.finish();
}

}  // namespace poet::models
