// MobileNetV2 (Sandler et al. 2018) for 224x224 images and 1000 classes, width 1.0:
// inverted residual blocks of 1x1 expansion, 3x3 depthwise and 1x1 projection
// convolutions without bias, each followed by batch norm (ReLU6 after the first two).
#include <fmt/format.h>

#include "models.h"
#include "net_builder.h"

namespace poet::models {

Graph mobilenet_v2(const ModelOptions& o) {
  NetBuilder net("mobilenet_v2", o.flavor);
  NodeId x = net.input({o.batch_size, 3, 224, 224});
  x = net.relu6(net.batch_norm(net.conv2d(x, 32, 3, 2, 1, "stem.conv", 1, false), "stem.bn"), "stem.relu6");
  // (expansion t, output channels c, repeats n, first stride s), from the paper's Table 2.
  const int config[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                            {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 0;
  for (const auto& [t, c, n, s] : config) {
    for (int i = 0; i < n; ++i, ++block) {
      const std::string p = fmt::format("block{}", block);
      const std::int64_t in_c = net.shape(x)[1];
      const int stride = i == 0 ? s : 1;
      NodeId h = x;
      if (t != 1)
        h = net.relu6(net.batch_norm(net.conv2d(h, in_c * t, 1, 1, 0, p + ".expand", 1, false), p + ".expand.bn"),
                      p + ".expand.relu6");
      const std::int64_t hidden = net.shape(h)[1];
      h = net.relu6(net.batch_norm(net.conv2d(h, hidden, 3, stride, 1, p + ".depthwise", static_cast<int>(hidden), false),
                                   p + ".depthwise.bn"),
                    p + ".depthwise.relu6");
      h = net.batch_norm(net.conv2d(h, c, 1, 1, 0, p + ".project", 1, false), p + ".project.bn");
      x = stride == 1 && in_c == c ? net.add(x, h, p + ".add") : h;
    }
  }
  x = net.relu6(net.batch_norm(net.conv2d(x, 1280, 1, 1, 0, "head.conv", 1, false), "head.bn"), "head.relu6");
  x = net.global_avg_pool(x, "pool");
  x = net.dropout(x, 0.2, "dropout");
  x = net.linear(x, 1000, "classifier");
  net.loss(x, 1000);
  return net.finish();
}

}  // namespace poet::models
