// A decoded picture made into a model's input sample, as torchvision's evaluation
// transform on PIL images does it: Resize (antialiased bilinear, PIL's filter, so that
// shrinking a large photo averages its pixels instead of skipping them) of the picture so
// that it covers the model's height x width with its aspect ratio kept, CenterCrop to
// height x width, ToTensor (values / 255), Normalize(mean, std) per channel.
//
// With the output size equal to the crop, the resize scales the shorter side (of a square
// input) to the model's size: torchvision's Resize(224) + CenterCrop(224). Values are
// computed in float from the 8-bit pixels (PIL rounds to 8 bits after each pass, so the two
// differ by at most about one level in 255).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "poet/data/image_decode.h"

namespace poet::data {

// ImageNet's per-channel statistics (torchvision's reference scripts), the default for 3
// channels; for 1 channel (a greyscale model) the mean of the three.
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};

struct ImageTransform {
  std::int64_t channels = 3;  // 3: RGB; 1: luma (ITU-R 601, as PIL's convert("L"))
  std::int64_t height = 0, width = 0;
  std::vector<float> mean, std;  // one a channel
};

// ImageNet's statistics for 1 or 3 channels (see above).
std::vector<float> default_mean(std::int64_t channels);
std::vector<float> default_std(std::int64_t channels);

// Throws InputError unless channels is 1 or 3, height and width are positive, and mean and
// std have one value a channel with every std positive and finite.
void check_transform(const ImageTransform& t);

// Writes channels x height x width values (CHW) into `out`, which must hold that many.
void image_to_sample(const RgbImage& image, const ImageTransform& t, std::span<float> out);

}  // namespace poet::data
