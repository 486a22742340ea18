#include "poet/data/image_transform.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::data {
namespace {

// One axis of the resize: output pixel i (of the crop) is the weighted sum of input pixels
// first .. first + weights.size() - 1.
struct Taps {
  std::int64_t first = 0;
  std::vector<float> weights;
};

// PIL's bilinear resampling (ImagingResample): a triangle filter, stretched by the
// reduction factor when shrinking so that every input pixel contributes (antialiasing).
// `scaled` is the axis's length after the resize, `offset` the crop's first pixel in it.
std::vector<Taps> axis_taps(std::int64_t in, std::int64_t scaled, std::int64_t offset, std::int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(scaled);
  const double stretch = std::max(scale, 1.0);
  const double support = stretch;  // the triangle's half-width, 1 input pixel unstretched
  std::vector<Taps> taps(static_cast<std::size_t>(out));
  for (std::int64_t i = 0; i < out; ++i) {
    const double centre = (static_cast<double>(i + offset) + 0.5) * scale;
    const auto lo = std::max<std::int64_t>(static_cast<std::int64_t>(centre - support + 0.5), 0);
    const auto hi = std::min<std::int64_t>(static_cast<std::int64_t>(centre + support + 0.5), in);
    Taps& t = taps[static_cast<std::size_t>(i)];
    t.first = lo;
    double sum = 0;
    std::vector<double> w;
    for (std::int64_t x = lo; x < hi; ++x) {
      const double d = std::abs((static_cast<double>(x) - centre + 0.5) / stretch);
      w.push_back(d < 1 ? 1 - d : 0);
      sum += w.back();
    }
    if (sum == 0) {  // cannot happen for lo < hi around the centre; keep the nearest pixel
      t.first = std::clamp<std::int64_t>(static_cast<std::int64_t>(centre), 0, in - 1);
      t.weights = {1.0f};
      continue;
    }
    for (const double v : w) t.weights.push_back(static_cast<float>(v / sum));
  }
  return taps;
}

}  // namespace

std::vector<float> default_mean(std::int64_t channels) {
  if (channels == 1) return {(kImageNetMean[0] + kImageNetMean[1] + kImageNetMean[2]) / 3};
  return {std::begin(kImageNetMean), std::end(kImageNetMean)};
}

std::vector<float> default_std(std::int64_t channels) {
  if (channels == 1) return {(kImageNetStd[0] + kImageNetStd[1] + kImageNetStd[2]) / 3};
  return {std::begin(kImageNetStd), std::end(kImageNetStd)};
}

void check_transform(const ImageTransform& t) {
  if (t.channels != 1 && t.channels != 3)
    throw InputError(fmt::format("the model takes pictures of {} channels; pictures from a folder are RGB (3 "
                                 "channels) or greyscale (1): choose a model whose input is [batch, 3 or 1, height, "
                                 "width]",
                                 t.channels));
  if (t.height <= 0 || t.width <= 0)
    throw InputError(fmt::format("the model's pictures are {}x{}; both must be positive", t.height, t.width));
  for (const auto& [name, values] : {std::pair{"--mean", &t.mean}, std::pair{"--std", &t.std}})
    if (static_cast<std::int64_t>(values->size()) != t.channels)
      throw InputError(fmt::format("{} has {} but the model's pictures have {}; give one value a channel "
                                   "(comma-separated)",
                                   name, counted(values->size(), "value"),
                                   counted(static_cast<std::size_t>(t.channels), "channel")));
  for (const float s : t.std)
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(fmt::format("--std {} is not a positive number; each channel's standard deviation divides its "
                                   "values",
                                   s));
  for (const float m : t.mean)
    if (!std::isfinite(m)) throw InputError(fmt::format("--mean {} is not a finite number", m));
}

void image_to_sample(const RgbImage& image, const ImageTransform& t, std::span<float> out) {
  POET_CHECK(static_cast<std::int64_t>(out.size()) == t.channels * t.height * t.width,
             "the sample has room for channels x height x width values");
  POET_CHECK(image.width > 0 && image.height > 0 &&
                 static_cast<std::int64_t>(image.pixels.size()) == 3 * image.width * image.height,
             "a decoded picture holds its pixels");
  // Scaled to cover height x width, the side that fits exactly set and the other truncated
  // (torchvision's Resize), then the centre cropped (CenterCrop).
  const auto ih = static_cast<double>(image.height), iw = static_cast<double>(image.width);
  const bool by_height = static_cast<double>(t.height) / ih >= static_cast<double>(t.width) / iw;
  const std::int64_t scaled_h =
      by_height ? t.height : std::max(t.height, static_cast<std::int64_t>(static_cast<double>(t.width) * ih / iw));
  const std::int64_t scaled_w =
      by_height ? std::max(t.width, static_cast<std::int64_t>(static_cast<double>(t.height) * iw / ih)) : t.width;
  // Python's round(): halves to even (a 9-wide picture cropped to 8 starts at 0, not 1).
  const auto top = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(scaled_h - t.height) / 2));
  const auto left = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(scaled_w - t.width) / 2));
  const std::vector<Taps> rows = axis_taps(image.height, scaled_h, top, t.height);
  const std::vector<Taps> columns = axis_taps(image.width, scaled_w, left, t.width);

  // Horizontal pass over the input rows the vertical pass reads, then the vertical pass.
  const std::int64_t row_lo = rows.front().first;
  const std::int64_t row_hi = rows.back().first + static_cast<std::int64_t>(rows.back().weights.size());
  std::vector<float> wide(static_cast<std::size_t>((row_hi - row_lo) * t.width * 3));
  for (std::int64_t y = row_lo; y < row_hi; ++y)
    for (std::int64_t x = 0; x < t.width; ++x) {
      const Taps& c = columns[static_cast<std::size_t>(x)];
      float rgb[3] = {0, 0, 0};
      const std::uint8_t* p = &image.pixels[static_cast<std::size_t>(3 * (y * image.width + c.first))];
      for (std::size_t k = 0; k < c.weights.size(); ++k)
        for (int ch = 0; ch < 3; ++ch) rgb[ch] += c.weights[k] * static_cast<float>(p[3 * k + static_cast<std::size_t>(ch)]);
      std::copy_n(rgb, 3, &wide[static_cast<std::size_t>(3 * ((y - row_lo) * t.width + x))]);
    }
  const std::size_t plane = static_cast<std::size_t>(t.height * t.width);
  for (std::int64_t y = 0; y < t.height; ++y) {
    const Taps& r = rows[static_cast<std::size_t>(y)];
    for (std::int64_t x = 0; x < t.width; ++x) {
      float rgb[3] = {0, 0, 0};
      for (std::size_t k = 0; k < r.weights.size(); ++k) {
        const float* p = &wide[static_cast<std::size_t>(3 * ((r.first - row_lo + static_cast<std::int64_t>(k)) * t.width + x))];
        for (int ch = 0; ch < 3; ++ch) rgb[ch] += r.weights[k] * p[ch];
      }
      const auto at = static_cast<std::size_t>(y * t.width + x);
      if (t.channels == 1) {
        const float luma = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
        out[at] = (luma / 255.0f - t.mean[0]) / t.std[0];
      } else {
        for (std::size_t ch = 0; ch < 3; ++ch) out[ch * plane + at] = (rgb[ch] / 255.0f - t.mean[ch]) / t.std[ch];
      }
    }
  }
}

}  // namespace poet::data
