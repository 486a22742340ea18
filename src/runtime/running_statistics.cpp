#include "running_statistics.h"

#include <algorithm>
#include <cstring>

#include "poet/kernels/kernels_norm.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {

using namespace kernels;  // the kernels this module binds to operators

RunningStatistics::RunningStatistics(const Graph& g) : norm_of_stats_(g.size(), -1) {
  std::int64_t floats = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.op != OpKind::BatchNorm2d || n.role == Role::Backward) continue;
    const Shape& x = g.node(n.inputs.at(0)).shape;
    norm_of_stats_[static_cast<std::size_t>(n.inputs.at(1))] = static_cast<std::int32_t>(norms_.size());
    norms_.push_back({v, floats,
                      {.batch = x[0],
                       .channels = x[1],
                       .spatial = element_count(x) / (x[0] * x[1]),
                       .eps = static_cast<float>(n.attrs.epsilon)},
                      static_cast<float>(n.attrs.momentum)});
    floats += 2 * x[1];
  }
  captured_.assign(static_cast<std::size_t>(floats), 0.0f);
  seen_.assign(norms_.size(), 0);
}

void RunningStatistics::begin_step() { std::fill(seen_.begin(), seen_.end(), 0); }

void RunningStatistics::capture(NodeId v, std::span<const float> stats) {
  const std::int32_t i = norm_of_stats_[static_cast<std::size_t>(v)];
  if (i < 0 || seen_[static_cast<std::size_t>(i)]) return;
  std::memcpy(captured_.data() + norms_[static_cast<std::size_t>(i)].offset, stats.data(), stats.size_bytes());
  seen_[static_cast<std::size_t>(i)] = 1;
}

void RunningStatistics::commit(ParameterStore& parameters) const {
  for (std::size_t i = 0; i < norms_.size(); ++i) {
    const Norm& n = norms_[i];
    POET_CHECK(seen_[i], "a batch-norm statistics node was never computed in the step");
    const std::span<float> p = parameters.values(n.norm);  // gamma, beta, running mean, running variance
    const auto c = static_cast<std::size_t>(n.shape.channels);
    const auto batch = std::span<const float>(captured_).subspan(static_cast<std::size_t>(n.offset), 2 * c);
    batch_norm_update_running_stats(n.shape, batch, n.momentum, p.subspan(2 * c, c), p.subspan(3 * c, c));
  }
}

}  // namespace poet::runtime::detail
