// Fashion-MNIST (Xiao et al. 2017: 60,000 training and 10,000 test images of clothing,
// 28x28 grayscale, 10 classes) from the IDX files of Debian's dataset-fashion-mnist package.
#pragma once

#include <string>
#include <vector>

#include "poet/data/dataset.h"

namespace poet::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// The pixel mean of Fashion-MNIST's training images, scaled to [0, 1]: a pixel p becomes
// p / 255 - kFashionMnistPixelMean (in fp32, as the firmware computes it too).
inline constexpr float kFashionMnistPixelMean = 0.286f;

// Reads the four IDX files (each may be gzipped: `name.gz` is tried first, then `name`)
// from `dir`. Pixels are scaled to [0, 1] and shifted by the dataset's mean, so a network
// initialised for zero-mean inputs starts well. Throws InputError naming the file and the
// fix when one is missing or malformed, or when images and labels disagree.
DatasetSplits load_fashion_mnist(const std::string& dir = kFashionMnistDir);

// Every file load_fashion_mnist may read from `dir`, each of the four gzipped and not: what
// no output may replace.
std::vector<std::string> fashion_mnist_files(const std::string& dir = kFashionMnistDir);

}  // namespace poet::data
