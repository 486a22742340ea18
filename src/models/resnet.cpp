// ResNets. The Reference flavor is the reference's ("implemented from the paper, not from
// PyTorch"), with its departures from a real ResNet: no ReLU after the stem's batch norm,
// and skips that add the first ReLU's output rather than the block's input (in resnet50
// even of another size). The Faithful flavor is the real network: a ReLU in the stem, and
// skips from the block's input, through a 1x1 convolution and batch norm where the shape
// changes.
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"

namespace poet::models {
namespace {

bool reference(const NetBuilder& net) { return net.flavor() == ModelFlavor::Reference; }

// Every convolution here feeds a batch norm, whose shift makes a bias redundant: the real
// networks (torchvision's) have none; the reference's layers do.
NodeId conv(NetBuilder& net, NodeId x, std::int64_t out_c, int k, int stride, int pad, std::string name) {
  return net.conv2d(x, out_c, k, stride, pad, std::move(name), 1, reference(net));
}

// The skip input of a real residual block: x itself, or x projected to the block's shape.
NodeId shortcut(NetBuilder& net, NodeId x, std::int64_t channels, int stride, const std::string& p) {
  if (stride == 1 && net.shape(x)[1] == channels) return x;
  const NodeId c = conv(net, x, channels, 1, stride, 0, p + ".downsample.conv");
  return net.batch_norm(c, p + ".downsample.bn");
}

// resnet18's block: conv-bn-relu-conv-bn, add(relu1, bn2), relu.
NodeId basic_block(NetBuilder& net, NodeId x, std::int64_t planes, int stride, const std::string& p) {
  const NodeId c1 = conv(net, x, planes, 3, stride, 1, p + ".conv1");
  const NodeId r1 = net.relu(net.batch_norm(c1, p + ".bn1"), p + ".relu1");
  const NodeId c2 = conv(net, r1, planes, 3, 1, 1, p + ".conv2");
  const NodeId b2 = net.batch_norm(c2, p + ".bn2");
  const NodeId skip = reference(net) ? r1 : shortcut(net, x, planes, stride, p);
  return net.relu(net.add(skip, b2, p + ".add"), p + ".relu2");
}

// resnet18_cifar's block: a main path of two convolutions and a projection path from x.
NodeId cifar_block(NetBuilder& net, NodeId x, std::int64_t planes, int stride, const std::string& p) {
  const NodeId c1 = conv(net, x, planes, 3, stride, 1, p + ".conv1");
  const NodeId r1 = net.relu(net.batch_norm(c1, p + ".bn1"), p + ".relu1");
  const NodeId c2 = conv(net, r1, planes, 3, 1, 1, p + ".conv2");
  const NodeId r2 = net.relu(net.batch_norm(c2, p + ".bn2"), p + ".relu2");
  const NodeId c3 = conv(net, x, planes, 3, stride, 1, p + ".shortcut.conv");
  const NodeId b3 = net.batch_norm(c3, p + ".shortcut.bn");
  return net.relu(net.add(r2, b3, p + ".add"), p + ".relu3");
}

// resnet50's bottleneck: 1x1, 3x3, 1x1 convolutions; the skip adds bn3 and relu1 (their
// sizes differ: the reference zero-pads the smaller).
NodeId bottleneck(NetBuilder& net, NodeId x, std::int64_t planes, std::int64_t out, int stride, const std::string& p) {
  const NodeId c1 = conv(net, x, planes, 1, stride, 0, p + ".conv1");
  const NodeId r1 = net.relu(net.batch_norm(c1, p + ".bn1"), p + ".relu1");
  const NodeId c2 = conv(net, r1, planes, 3, 1, 1, p + ".conv2");
  const NodeId r2 = net.relu(net.batch_norm(c2, p + ".bn2"), p + ".relu2");
  const NodeId c3 = conv(net, r2, out, 1, 1, 0, p + ".conv3");
  const NodeId b3 = net.batch_norm(c3, p + ".bn3");
  const NodeId skip = reference(net) ? r1 : shortcut(net, x, out, stride, p);
  return net.relu(net.add(b3, skip, p + ".add"), p + ".relu3");
}

NodeId imagenet_stem(NetBuilder& net, const ModelOptions& o) {
  NodeId x = net.input({o.batch_size, 3, 224, 224});
  x = conv(net, x, 64, 7, 2, 3, "conv1");
  x = net.batch_norm(x, "bn1");
  if (!reference(net)) x = net.relu(x, "relu1");
  return net.max_pool(x, 3, 2, "maxpool");
}

Graph finish_head(NetBuilder& net, NodeId x, int pool, std::int64_t classes) {
  x = net.avg_pool(x, pool, 1, "avgpool");
  x = net.flatten(x, "flatten");
  x = net.linear(x, classes, "fc");
  net.loss(x, classes);
  return net.finish();
}

}  // namespace

Graph resnet18(const ModelOptions& o) {
  NetBuilder net("resnet18", o.flavor);
  NodeId x = imagenet_stem(net, o);
  const std::int64_t planes[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s)
    for (int b = 0; b < 2; ++b)
      x = basic_block(net, x, planes[s], s > 0 && b == 0 ? 2 : 1, fmt::format("layer{}.{}", s + 1, b));
  return finish_head(net, x, 7, 1000);
}

Graph resnet18_cifar(const ModelOptions& o) {
  NetBuilder net("resnet18_cifar", o.flavor);
  NodeId x = net.input({o.batch_size, 3, 32, 32});
  x = conv(net, x, 16, 3, 1, 1, "conv1");
  x = net.batch_norm(x, "bn1");
  const std::int64_t planes[3] = {16, 32, 64};
  for (int s = 0; s < 3; ++s)
    for (int b = 0; b < 2; ++b)
      x = cifar_block(net, x, planes[s], s > 0 && b == 0 ? 2 : 1, fmt::format("layer{}.{}", s + 1, b));
  return finish_head(net, x, 8, 10);
}

Graph resnet50(const ModelOptions& o) {
  NetBuilder net("resnet50", o.flavor);
  NodeId x = imagenet_stem(net, o);
  const std::int64_t planes[4] = {64, 128, 256, 512};
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s)
    for (int b = 0; b < blocks[s]; ++b)
      x = bottleneck(net, x, planes[s], 4 * planes[s], s > 0 && b == 0 ? 2 : 1, fmt::format("layer{}.{}", s + 1, b));
  return finish_head(net, x, 7, 1000);
}

}  // namespace poet::models
