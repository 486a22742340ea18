// Bilinear upsampling by whole factors, as torch computes it with align_corners=False: an
// output index o maps back to the source coordinate (o + 0.5) / factor - 0.5, clamped at 0;
// it reads that coordinate's pixel and the next (the last pixel stands for the one beyond
// the edge), weighted by how far between them it falls.
#include <algorithm>

#include "kernel_checks.h"
#include "parallel_for.h"
#include "poet/kernels/kernels_layout.h"

namespace poet::kernels {
namespace {

// Where output index o reads along one axis of `in` pixels.
struct Tap {
  std::int64_t first, second;  // second == first at the last pixel
  float far;                   // the second's weight; the first's is 1 - far
};

Tap tap(std::int64_t o, std::int64_t factor, std::int64_t in) {
  const float scale = 1.0f / static_cast<float>(factor);
  const float source = std::max(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
  const auto first = static_cast<std::int64_t>(source);
  return {first, first < in - 1 ? first + 1 : first, std::clamp(source - static_cast<float>(first), 0.0f, 1.0f)};
}

}  // namespace

void upsample_bilinear_forward(const UpsampleShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  const std::int64_t out_h = s.in_h * s.factor_h, out_w = s.in_w * s.factor_w;
  detail::expect_size("upsample_bilinear_forward", "x", x, s.planes * s.in_h * s.in_w);
  detail::expect_size("upsample_bilinear_forward", "y", y, s.planes * out_h * out_w);
  detail::parallel_for(s.planes, out_h * out_w, [&](std::int64_t p) {
    const float* in = x.data() + p * s.in_h * s.in_w;
    float* out = y.data() + p * out_h * out_w;
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      const Tap r = tap(oy, s.factor_h, s.in_h);
      const float* top = in + r.first * s.in_w;
      const float* bottom = in + r.second * s.in_w;
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        const Tap c = tap(ox, s.factor_w, s.in_w);
        out[oy * out_w + ox] = (1.0f - r.far) * ((1.0f - c.far) * top[c.first] + c.far * top[c.second]) +
                               r.far * ((1.0f - c.far) * bottom[c.first] + c.far * bottom[c.second]);
      }
    }
  });
}

void upsample_bilinear_backward(const UpsampleShape& s, std::span<const float> dy, std::span<float> dx) {
  validate(s);
  const std::int64_t out_h = s.in_h * s.factor_h, out_w = s.in_w * s.factor_w;
  detail::expect_size("upsample_bilinear_backward", "dy", dy, s.planes * out_h * out_w);
  detail::expect_size("upsample_bilinear_backward", "dx", dx, s.planes * s.in_h * s.in_w);
  detail::parallel_for(s.planes, out_h * out_w, [&](std::int64_t p) {
    float* in = dx.data() + p * s.in_h * s.in_w;
    const float* out = dy.data() + p * out_h * out_w;
    std::fill(in, in + s.in_h * s.in_w, 0.0f);
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      const Tap r = tap(oy, s.factor_h, s.in_h);
      float* top = in + r.first * s.in_w;
      float* bottom = in + r.second * s.in_w;
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        const Tap c = tap(ox, s.factor_w, s.in_w);
        const float g = out[oy * out_w + ox], upper = (1.0f - r.far) * g, lower = r.far * g;
        top[c.first] += (1.0f - c.far) * upper;
        top[c.second] += c.far * upper;
        bottom[c.first] += (1.0f - c.far) * lower;
        bottom[c.second] += c.far * lower;
      }
    }
  });
}

}  // namespace poet::kernels
