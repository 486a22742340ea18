#include "poet/data/fashion_mnist.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>

#include "poet/data/idx_file.h"
#include "poet/util/error.h"

namespace poet::data {
namespace {

constexpr std::array<const char*, 4> kFileNames = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                                    "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

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

std::string locate(const std::string& dir, const std::string& name) {
  const std::filesystem::path base = std::filesystem::path(dir) / name;
  for (const std::string& candidate : {base.string() + ".gz", base.string()})
    if (std::filesystem::exists(candidate)) return candidate;
  throw InputError(
      fmt::format("Fashion-MNIST file '{}.gz' (or '{}') is missing; {}", base.string(), base.string(), fix_for(dir)));
}

Dataset load_split(const std::string& dir, const std::string& prefix) {
  const std::string fix = fix_for(dir);
  const std::string images_path = locate(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(dir, prefix + "-labels-idx1-ubyte");
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
  return {"fashion-mnist", load_split(dir, "train"), load_split(dir, "t10k"), {}};
}

std::vector<std::string> fashion_mnist_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const char* name : kFileNames) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    files.push_back(path + ".gz");
    files.push_back(path);
  }
  return files;
}

}  // namespace poet::data
