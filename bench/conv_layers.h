// The convolution layers the convolution benchmarks time (resnet18_cifar's and lenet5's at
// batch 32, resnet18's 3x3 at batch 4), and their clock: bench/conv_kernels.cpp, bench/conv_onednn.cpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "poet/kernels/kernel_shapes.h"

namespace poet::bench {

// The best of `calls` runs of f, in milliseconds.
template <typename F>
double best_ms(int calls, F f) {
  double best = 1e9;
  for (int r = 0; r < calls; ++r) {
    const auto began = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
  return best * 1e3;
}

struct ConvLayer {
  const char* name;
  kernels::Conv2dShape shape;
};

inline kernels::Conv2dShape conv(int cin, int size, int cout, int kernel, int stride, int pad, bool bias,
                                 int batch = 32) {
  return {.batch = batch, .in_channels = cin, .in_h = size, .in_w = size, .out_channels = cout, .kernel_h = kernel,
          .kernel_w = kernel, .stride_h = stride, .stride_w = stride, .pad_h = pad, .pad_w = pad, .groups = 1,
          .bias = bias};
}

inline std::vector<ConvLayer> conv_layers() {
  return {
      {"resnet18_cifar 3->16 at 32x32", conv(3, 32, 16, 3, 1, 1, false)},
      {"resnet18_cifar 16->16 at 32x32", conv(16, 32, 16, 3, 1, 1, false)},
      {"resnet18_cifar 16->32 stride 2", conv(16, 32, 32, 3, 2, 1, false)},
      {"resnet18_cifar 32->32 at 16x16", conv(32, 16, 32, 3, 1, 1, false)},
      {"resnet18_cifar 32->64 stride 2", conv(32, 16, 64, 3, 2, 1, false)},
      {"resnet18_cifar 64->64 at 8x8", conv(64, 8, 64, 3, 1, 1, false)},
      {"lenet5 1->6 5x5 at 28x28", conv(1, 28, 6, 5, 1, 2, true)},
      {"lenet5 6->16 5x5 at 14x14", conv(6, 14, 16, 5, 1, 0, true)},
      {"resnet18 64->64 at 56x56 (batch 4)", conv(64, 56, 64, 3, 1, 1, false, 4)},
      {"resnet18 128->128 at 28x28 (batch 4)", conv(128, 28, 128, 3, 1, 1, false, 4)},
      {"resnet18 256->256 at 14x14 (batch 4)", conv(256, 14, 256, 3, 1, 1, false, 4)},
      {"resnet18 512->512 at 7x7 (batch 4)", conv(512, 7, 512, 3, 1, 1, false, 4)},
  };
}

}  // namespace poet::bench
