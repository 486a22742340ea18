// `mcu_cnn`: a CNN for Fashion-MNIST small enough to train on a Cortex-M4 in 256 KB of SRAM
// (firmware/, docs/FIRMWARE.md). A strided first convolution, then four more of 8 channels
// at 14x14, max-pooling and one linear layer: 6,346 parameters (25 KB, 50 KB with their
// gradients), but every layer keeps an equal activation for the backward pass, so
// compute-once training at batch 8 needs far more RAM than the chip has while no single
// operator does: POET's plan recomputes and pages the difference.
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"

namespace poet::models {

Graph mcu_cnn(const ModelOptions& o) {
  NetBuilder net("mcu_cnn", o.flavor);
  NodeId x = net.input({o.batch_size, 1, 28, 28});
  x = net.relu(net.conv2d(x, 8, 3, 2, 1, "conv1"), "relu1");  // 8x14x14
  for (int i = 2; i <= 5; ++i) x = net.relu(net.conv2d(x, 8, 3, 1, 1, fmt::format("conv{}", i)), fmt::format("relu{}", i));
  x = net.max_pool(x, 2, 2, "pool");  // 8x7x7
  x = net.flatten(x, "flatten");
  x = net.linear(x, 10, "fc");
  net.loss(x, 10);
  return net.finish();
}

}  // namespace poet::models
