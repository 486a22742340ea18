// LeNet-5 for 28x28 grayscale images (MNIST-style), with ReLU and max-pooling: the first
// convolution pads by 2 so that the classic 32x32 geometry is kept.
#include "models.h"
#include "net_builder.h"

namespace poet::models {

Graph lenet5(const ModelOptions& o) {
  NetBuilder net("lenet5", o.flavor);
  NodeId x = net.input({o.batch_size, 1, 28, 28});
  x = net.max_pool(net.relu(net.conv2d(x, 6, 5, 1, 2, "conv1"), "relu1"), 2, 2, "pool1");   // 6x14x14
  x = net.max_pool(net.relu(net.conv2d(x, 16, 5, 1, 0, "conv2"), "relu2"), 2, 2, "pool2");  // 16x5x5
  x = net.flatten(x, "flatten");
  x = net.relu(net.linear(x, 120, "fc1"), "relu3");
  x = net.relu(net.linear(x, 84, "fc2"), "relu4");
  x = net.linear(x, 10, "fc3");
  net.loss(x, 10);
  return net.finish();
}

}  // namespace poet::models
