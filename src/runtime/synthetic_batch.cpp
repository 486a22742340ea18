#include "poet/runtime/synthetic_batch.h"

#include <bit>

#include "poet/graph/op_table.h"
#include "poet/kernels/rng.h"
#include "poet/util/error.h"

namespace poet::runtime {

SyntheticBatch synthetic_batch(const Graph& g, std::uint64_t seed) {
  NodeId input = 0;
  while (static_cast<std::size_t>(input) < g.size() && g.node(input).op != OpKind::Input) ++input;
  POET_CHECK(static_cast<std::size_t>(input) < g.size(), "synthetic_batch: the graph has no Input node");
  SyntheticBatch b;
  b.inputs.resize(static_cast<std::size_t>(element_count(g.node(input).shape)));
  const std::int64_t vocab = token_vocabulary(g);
  const kernels::RandomKey key{.seed = seed, .step = 0, .node = static_cast<std::uint32_t>(input)};
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    const std::uint32_t bits = kernels::random_bits(key, i);
    b.inputs[i] = vocab > 0 ? std::bit_cast<float>(static_cast<std::int32_t>(bits % static_cast<std::uint64_t>(vocab)))
                            : static_cast<float>(bits >> 8) * 0x1p-24f;
  }
  const Node& loss = g.node(g.loss());
  const std::int64_t classes = loss.shape.back();
  b.labels.resize(static_cast<std::size_t>(element_count(loss.shape) / classes));
  for (std::size_t i = 0; i < b.labels.size(); ++i) b.labels[i] = static_cast<std::int32_t>(static_cast<std::int64_t>(i) % classes);
  return b;
}

}  // namespace poet::runtime
