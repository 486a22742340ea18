#include "poet/data/fashion_mnist.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <utility>

#include "poet/data/idx_file.h"
#include "poet/util/error.h"

namespace poet::data {
namespace {

// Each split's two files are "<split><suffix>".
constexpr std::array<const char*, 2> kSplits = {"train", "t10k"};
constexpr const char* kImages = "-images-idx3-ubyte";
constexpr const char* kLabels = "-labels-idx1-ubyte";

// What to do about a file missing or malformed: Debian's package for its own folder, the
// files unchanged for a folder of the user's.
std::string fix_for(const std::string& dir) {
  if (std::filesystem::path(dir).lexically_normal() == std::filesystem::path(kFashionMnistDir))
    return "install Debian's dataset-fashion-mnist package (scripts/install-deps.sh, or apt-get install "
           "dataset-fashion-mnist), which puts the files in /usr/share/datasets/fashion-mnist";
  return fmt::format("the folder '{}' should hold Fashion-MNIST's four IDX files as published (gzipped or not); "
                     "Debian's dataset-fashion-mnist package installs them in {}, where they are read by default",
                     dir, kFashionMnistDir);
}

// The paths a file may have, gzipped first.
std::array<std::string, 2> candidates(const std::string& dir, const std::string& name) {
  const std::string base = (std::filesystem::path(dir) / name).string();
  return {base + ".gz", base};
}

std::string locate(const std::string& dir, const std::string& name) {
  const auto paths = candidates(dir, name);
  for (const std::string& candidate : paths)
    if (std::filesystem::exists(candidate)) return candidate;
  const std::string& base = paths[1];
  throw InputError(
      fmt::format("Fashion-MNIST file '{}.gz' (or '{}') is missing; {}", base, base, fix_for(dir)));
}

Dataset load_split(const std::string& dir, const std::string& prefix) {
  const std::string fix = fix_for(dir);
  const std::string images_path = locate(dir, prefix + kImages);
  const std::string labels_path = locate(dir, prefix + kLabels);
  const IdxArray images = read_idx_file(images_path, fix);
  const IdxArray labels = read_idx_file(labels_path, fix);
  if (images.dims.size() != 3)
    throw InputError(fmt::format("'{}' has {} dimensions; Fashion-MNIST images have 3 (count, rows, columns); {}",
                                 images_path, images.dims.size(), fix));
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0])
    throw InputError(fmt::format("'{}' does not hold one label for each of the {} images of '{}'; {}", labels_path,
                                 images.dims[0], images_path, fix));
  Dataset d;
  d.classes = 10;
  d.sample_shape = {1, images.dims[1], images.dims[2]};
  d.inputs.reserve(images.values.size());
  for (const std::uint8_t p : images.values) d.inputs.push_back(static_cast<float>(p) / 255.0f - kFashionMnistPixelMean);
  d.labels.reserve(labels.values.size());
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    if (labels.values[i] >= d.classes)
      throw InputError(fmt::format("'{}': label {} is {}, outside Fashion-MNIST's 10 classes; {}", labels_path, i,
                                   labels.values[i], fix));
    d.labels.push_back(labels.values[i]);
  }
  return d;
}

}  // namespace

DatasetSplits load_fashion_mnist(const std::string& dir) {
  return {"fashion-mnist", load_split(dir, kSplits[0]), load_split(dir, kSplits[1]), {}};
}

std::vector<std::string> fashion_mnist_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string split : kSplits)
    for (const char* suffix : {kImages, kLabels})
      for (std::string& path : candidates(dir, split + suffix)) files.push_back(std::move(path));
  return files;
}

}  // namespace poet::data
