// `linear`: the reference's MLP on flattened 28x28 images: 784-10-120-100-200-10-10, each
// linear layer followed by a ReLU.
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"

namespace poet::models {

Graph linear_mlp(const ModelOptions& o) {
  NetBuilder net("linear", o.flavor);
  NodeId x = net.input({o.batch_size, 784});
  int i = 1;
  for (const std::int64_t width : {10, 120, 100, 200, 10, 10}) {
    x = net.linear(x, width, fmt::format("fc{}", i));
    x = net.relu(x, fmt::format("relu{}", i));
    ++i;
  }
  net.loss(x, 10);
  return net.finish();
}

}  // namespace poet::models
