// VGG16 as the reference builds it: 13 3x3 convolutions with ReLU (no batch norm), five
// 2x2 max-pools, and three linear layers with dropout.
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"

namespace poet::models {

Graph vgg16(const ModelOptions& o, std::int64_t classes, std::int64_t image) {
  NetBuilder net(image == 224 ? "vgg16" : "vgg16_cifar", o.flavor);
  NodeId x = net.input({o.batch_size, 3, image, image});
  const int stages[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  int conv = 1;
  for (int s = 0; s < 5; ++s) {
    for (int k = 0; k < stages[s][1]; ++k, ++conv) {
      x = net.conv2d(x, stages[s][0], 3, 1, 1, fmt::format("conv{}", conv));
      x = net.relu(x, fmt::format("relu{}", conv));
    }
    x = net.max_pool(x, 2, 2, fmt::format("pool{}", s + 1));
  }
  x = net.flatten(x, "flatten");
  x = net.linear(x, 4096, "fc1");
  x = net.relu(x, "fc1.relu");
  x = net.dropout(x, 0.5, "fc1.dropout");
  x = net.linear(x, 4096, "fc2");
  x = net.relu(x, "fc2.relu");
  x = net.dropout(x, 0.5, "fc2.dropout");
  x = net.linear(x, classes, "fc3");
  net.loss(x, classes);
  return net.finish();
}

}  // namespace poet::models
