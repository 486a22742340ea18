// Batch, layer and group norm. Each normalizes groups of elements: a channel across the
// batch and the positions (batch norm), a row (layer norm), or a sample's run of channels
// (group norm, a row of its own). A group can hold tens of thousands of elements: layer
// and group norm sum a row in double, batch norm a channel in float blocks added in double
// (channel_sums); all in a fixed order.
#include "poet/kernels/kernels_norm.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernel_checks.h"
#include "parallel_for.h"
#include "quad.h"

namespace poet::kernels {
namespace {

using detail::expect_size;
using detail::load_quad;
using detail::Quad;

struct Moments {
  float mean, inv_std;
};

Moments moments_of(std::span<const float> stats, std::int64_t group) {
  return {stats[2 * group], stats[2 * group + 1]};
}

void store(std::span<float> stats, std::int64_t group, double mean, double var, float eps) {
  stats[2 * group] = static_cast<float>(mean);
  stats[2 * group + 1] = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

// The input gradient of a normalization over a group of `count` elements, given the
// group's sums of g = dy x scale and of g x xhat:
//   dx = inv_std / count (count g - sum(g) - xhat sum(g xhat)).
inline float normalized_input_gradient(float g, float xhat, float inv_std, double count, double sum_g,
                                       double sum_g_xhat) {
  return static_cast<float>(static_cast<double>(inv_std) / count *
                            (count * g - sum_g - static_cast<double>(xhat) * sum_g_xhat));
}

// Batch norm walks channel c as `batch` runs of `spatial` contiguous elements.
template <typename Visit>
void for_channel(const BatchNormShape& s, std::int64_t c, Visit visit) {
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const std::int64_t base = (n * s.channels + c) * s.spatial;
    for (std::int64_t i = 0; i < s.spatial; ++i) visit(base + i);
  }
}

// The sums of term(values) over channel c's elements, in a fixed order, so every call gives
// the same bits. term takes the inputs' values at one index (x, or dy and x) and returns
// N terms. Blocks of at most kSumBlock elements of a plane are summed in float, in
// kSumLanes interleaved partial sums (element k of a block in lane k mod kSumLanes, the
// block's tail in lane 0; the lanes combined pairwise), and the blocks' sums added in
// double: rounding error bounded by the block, not the channel, which can hold tens of
// thousands of elements. Sums taken together read the channel once; each is the same bits
// as taken alone. (Summing every element in double, four partial sums, made batch norm's
// backward 15% of a resnet18_cifar step: docs/BENCHMARKS.md.)
constexpr std::int64_t kSumLanes = 8, kSumBlock = 256;

// term is called on four elements at once (Quad), the lanes k < 4 and k >= 4 of a block
// kept in two Quads. Written element by element into float lanes, GCC vectorized the loop
// over the block instead, with shuffles per element (batch norm's input gradient took 0.51
// ms on 32 x 16 x 1024 at one thread, now 0.19: bench/norm_kernels.cpp, docs/BENCHMARKS.md).
static_assert(kSumLanes == 8, "the lanes are two Quads");

template <std::size_t N, typename Term, typename... In>
std::array<double, N> channel_sums(const BatchNormShape& s, std::int64_t c, Term term, const In*... in) {
  std::array<double, N> total{};
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const std::int64_t base = (n * s.channels + c) * s.spatial;
    for (std::int64_t begin = 0; begin < s.spatial; begin += kSumBlock) {
      const std::int64_t end = std::min(begin + kSumBlock, s.spatial);
      std::array<Quad, N> low{}, high{};  // lanes 0-3 and 4-7
      std::int64_t i = begin;
      for (; i + kSumLanes <= end; i += kSumLanes) {
        const std::array<Quad, N> a = term(load_quad(in + base + i)...), b = term(load_quad(in + base + i + 4)...);
        for (std::size_t j = 0; j < N; ++j) {
          low[j] += a[j];
          high[j] += b[j];
        }
      }
      for (; i < end; ++i) {
        const std::array<float, N> v = term(in[base + i]...);
        for (std::size_t j = 0; j < N; ++j) low[j][0] += v[j];
      }
      for (std::size_t j = 0; j < N; ++j) {
        const Quad q = low[j] + high[j];  // width 4: lane k += lane k + 4
        total[j] += static_cast<double>((q[0] + q[2]) + (q[1] + q[3]));  // widths 2, 1
      }
    }
  }
  return total;
}

// The sums of dy and of dy xhat over channel c (batch norm's parameter gradient, and its
// input gradient's two means).
std::array<double, 2> gradient_sums(const BatchNormShape& s, std::int64_t c, const float* dy, const float* x,
                                    Moments m) {
  return channel_sums<2>(
      s, c, [&](auto g, auto v) { return std::array{g, g * ((v - m.mean) * m.inv_std)}; }, dy, x);
}

void check_batch_norm(const char* kernel, const BatchNormShape& s, std::span<const float> x,
                      std::span<const float> stats) {
  validate(s);
  expect_size(kernel, "x", x, s.batch * s.channels * s.spatial);
  expect_size(kernel, "stats", stats, 2 * s.channels);
}

void check_layer_norm(const char* kernel, const LayerNormShape& s, std::span<const float> x,
                      std::span<const float> stats) {
  validate(s);
  expect_size(kernel, "x", x, s.rows * s.features);
  expect_size(kernel, "stats", stats, 2 * s.rows);
}

void check_group_norm(const char* kernel, const GroupNormShape& s, std::span<const float> x,
                      std::span<const float> stats) {
  validate(s);
  expect_size(kernel, "x", x, s.batch * s.channels * s.spatial);
  expect_size(kernel, "stats", stats, 2 * s.batch * s.groups);
}

// Group norm walks row r (sample n, group g) channel by channel: visit(c, i) for channel c
// and element i of x.
template <typename Visit>
void for_group(const GroupNormShape& s, std::int64_t r, Visit visit) {
  const std::int64_t per_group = s.channels / s.groups, first = (r % s.groups) * per_group;
  for (std::int64_t c = first; c < first + per_group; ++c) {
    const std::int64_t base = ((r / s.groups) * s.channels + c) * s.spatial;
    for (std::int64_t i = base; i < base + s.spatial; ++i) visit(c, i);
  }
}

}  // namespace

void batch_norm_stats(const BatchNormShape& s, std::span<const float> x, std::span<float> stats) {
  check_batch_norm("batch_norm_stats", s, x, stats);
  const double count = static_cast<double>(s.batch * s.spatial);
  detail::parallel_for(s.channels, s.batch * s.spatial, [&](std::int64_t c) {
    // Two passes: the mean first, then the squared deviations, which stay accurate when
    // the mean is large against the spread.
    const double mean = channel_sums<1>(s, c, [](auto v) { return std::array{v}; }, x.data())[0] / count;
    const auto mean_f = static_cast<float>(mean);
    const double squares = channel_sums<1>(
        s, c,
        [&](auto v) {
          const auto d = v - mean_f;
          return std::array{d * d};
        },
        x.data())[0];
    store(stats, c, mean, squares / count, s.eps);
  });
}

void batch_norm_forward(const BatchNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y) {
  check_batch_norm("batch_norm_forward", s, x, stats);
  expect_size("batch_norm_forward", "gamma", gamma, s.channels);
  expect_size("batch_norm_forward", "beta", beta, s.channels);
  expect_size("batch_norm_forward", "y", y, x.size());
  detail::parallel_for(s.channels, s.batch * s.spatial, [&](std::int64_t c) {
    const Moments m = moments_of(stats, c);
    for_channel(s, c, [&](std::int64_t i) { y[i] = gamma[c] * ((x[i] - m.mean) * m.inv_std) + beta[c]; });
  });
}

void batch_norm_backward_input(const BatchNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx) {
  check_batch_norm("batch_norm_backward_input", s, x, stats);
  expect_size("batch_norm_backward_input", "dy", dy, x.size());
  expect_size("batch_norm_backward_input", "gamma", gamma, s.channels);
  expect_size("batch_norm_backward_input", "dx", dx, x.size());
  const double count = static_cast<double>(s.batch * s.spatial);
  detail::parallel_for(s.channels, s.batch * s.spatial, [&](std::int64_t c) {
    const Moments m = moments_of(stats, c);
    const float scale = gamma[c];
    // The sums of g = dy scale and of g xhat, as scale times dy's (gradient_sums).
    const auto [sum_dy, sum_dy_xhat] = gradient_sums(s, c, dy.data(), x.data(), m);
    const double sum_g = scale * sum_dy, sum_g_xhat = scale * sum_dy_xhat;
    // dx = inv_std (g - mean(g) - xhat mean(g xhat)): the means in double, per channel; the
    // per-element part in float, so that it vectorizes (a double division per element
    // made this loop 8% of a resnet18_cifar step).
    const auto mean_g = static_cast<float>(sum_g / count), mean_g_xhat = static_cast<float>(sum_g_xhat / count);
    for_channel(s, c, [&](std::int64_t i) {
      const float xhat = (x[i] - m.mean) * m.inv_std;
      dx[i] = m.inv_std * (dy[i] * scale - mean_g - xhat * mean_g_xhat);
    });
  });
}

void batch_norm_backward_params(const BatchNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta) {
  check_batch_norm("batch_norm_backward_params", s, x, stats);
  expect_size("batch_norm_backward_params", "dy", dy, x.size());
  expect_size("batch_norm_backward_params", "dgamma", dgamma, s.channels);
  expect_size("batch_norm_backward_params", "dbeta", dbeta, s.channels);
  detail::parallel_for(s.channels, s.batch * s.spatial, [&](std::int64_t c) {
    const auto [sum_dy, sum_dy_xhat] = gradient_sums(s, c, dy.data(), x.data(), moments_of(stats, c));
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    dbeta[c] = static_cast<float>(sum_dy);
  });
}

void batch_norm_update_running_stats(const BatchNormShape& s, std::span<const float> stats, float momentum,
                                     std::span<float> running_mean, std::span<float> running_var) {
  validate(s);
  expect_size("batch_norm_update_running_stats", "stats", stats, 2 * s.channels);
  expect_size("batch_norm_update_running_stats", "running_mean", running_mean, s.channels);
  expect_size("batch_norm_update_running_stats", "running_var", running_var, s.channels);
  const double count = static_cast<double>(s.batch * s.spatial);
  // With a single element per channel the unbiased variance is undefined; PyTorch then
  // refuses to train, we keep the biased one (0) rather than divide by zero.
  const double unbias = count > 1 ? count / (count - 1) : 1.0;
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const Moments m = moments_of(stats, c);
    // The statistics hold 1 / sqrt(var + eps); the variance comes back from it.
    const double inv = m.inv_std;
    const double var = std::max(0.0, 1.0 / (inv * inv) - static_cast<double>(s.eps)) * unbias;
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * static_cast<double>(m.mean));
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * var);
  }
}

void batch_norm_inference_stats(const BatchNormShape& s, std::span<const float> running_mean,
                                std::span<const float> running_var, std::span<float> stats) {
  validate(s);
  expect_size("batch_norm_inference_stats", "running_mean", running_mean, s.channels);
  expect_size("batch_norm_inference_stats", "running_var", running_var, s.channels);
  expect_size("batch_norm_inference_stats", "stats", stats, 2 * s.channels);
  for (std::int64_t c = 0; c < s.channels; ++c) store(stats, c, running_mean[c], running_var[c], s.eps);
}

void layer_norm_stats(const LayerNormShape& s, std::span<const float> x, std::span<float> stats) {
  check_layer_norm("layer_norm_stats", s, x, stats);
  const double count = static_cast<double>(s.features);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float* row = x.data() + r * s.features;
    double sum = 0.0;
    for (std::int64_t f = 0; f < s.features; ++f) sum += row[f];
    const double mean = sum / count;
    double squares = 0.0;
    for (std::int64_t f = 0; f < s.features; ++f) {
      const double d = row[f] - mean;
      squares += d * d;
    }
    store(stats, r, mean, squares / count, s.eps);
  }
}

void layer_norm_forward(const LayerNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y) {
  check_layer_norm("layer_norm_forward", s, x, stats);
  expect_size("layer_norm_forward", "gamma", gamma, s.features);
  expect_size("layer_norm_forward", "beta", beta, s.features);
  expect_size("layer_norm_forward", "y", y, x.size());
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const Moments m = moments_of(stats, r);
    const std::int64_t base = r * s.features;
    for (std::int64_t f = 0; f < s.features; ++f)
      y[base + f] = gamma[f] * ((x[base + f] - m.mean) * m.inv_std) + beta[f];
  }
}

void layer_norm_backward_input(const LayerNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx) {
  check_layer_norm("layer_norm_backward_input", s, x, stats);
  expect_size("layer_norm_backward_input", "dy", dy, x.size());
  expect_size("layer_norm_backward_input", "gamma", gamma, s.features);
  expect_size("layer_norm_backward_input", "dx", dx, x.size());
  const double count = static_cast<double>(s.features);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const Moments m = moments_of(stats, r);
    const std::int64_t base = r * s.features;
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for (std::int64_t f = 0; f < s.features; ++f) {
      const double g = static_cast<double>(dy[base + f]) * gamma[f];
      sum_g += g;
      sum_g_xhat += g * ((x[base + f] - m.mean) * m.inv_std);
    }
    for (std::int64_t f = 0; f < s.features; ++f) {
      const float xhat = (x[base + f] - m.mean) * m.inv_std;
      dx[base + f] = normalized_input_gradient(dy[base + f] * gamma[f], xhat, m.inv_std, count, sum_g, sum_g_xhat);
    }
  }
}

void layer_norm_backward_params(const LayerNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta) {
  check_layer_norm("layer_norm_backward_params", s, x, stats);
  expect_size("layer_norm_backward_params", "dy", dy, x.size());
  expect_size("layer_norm_backward_params", "dgamma", dgamma, s.features);
  expect_size("layer_norm_backward_params", "dbeta", dbeta, s.features);
  std::fill(dgamma.begin(), dgamma.end(), 0.0f);
  std::fill(dbeta.begin(), dbeta.end(), 0.0f);
  // Row by row, accumulating in fp32 so that no scratch is needed; the order is fixed.
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const Moments m = moments_of(stats, r);
    const std::int64_t base = r * s.features;
    for (std::int64_t f = 0; f < s.features; ++f) {
      dgamma[f] += dy[base + f] * ((x[base + f] - m.mean) * m.inv_std);
      dbeta[f] += dy[base + f];
    }
  }
}

// Group norm shares its rows (a sample's group) between the threads, and the parameter
// gradients its channels; each is computed whole by one thread, in a fixed order.
void group_norm_stats(const GroupNormShape& s, std::span<const float> x, std::span<float> stats) {
  check_group_norm("group_norm_stats", s, x, stats);
  const LayerNormShape row{.rows = 1, .features = s.group_elements(), .eps = s.eps};
  const auto n = static_cast<std::size_t>(row.features);
  detail::parallel_for(s.batch * s.groups, row.features, [&](std::int64_t r) {
    const auto i = static_cast<std::size_t>(r);
    layer_norm_stats(row, x.subspan(i * n, n), stats.subspan(2 * i, 2));
  });
}

void group_norm_forward(const GroupNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y) {
  check_group_norm("group_norm_forward", s, x, stats);
  expect_size("group_norm_forward", "gamma", gamma, s.channels);
  expect_size("group_norm_forward", "beta", beta, s.channels);
  expect_size("group_norm_forward", "y", y, x.size());
  detail::parallel_for(s.batch * s.groups, s.group_elements(), [&](std::int64_t r) {
    const Moments m = moments_of(stats, r);
    for_group(s, r, [&](std::int64_t c, std::int64_t i) { y[i] = gamma[c] * ((x[i] - m.mean) * m.inv_std) + beta[c]; });
  });
}

void group_norm_backward_input(const GroupNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx) {
  check_group_norm("group_norm_backward_input", s, x, stats);
  expect_size("group_norm_backward_input", "dy", dy, x.size());
  expect_size("group_norm_backward_input", "gamma", gamma, s.channels);
  expect_size("group_norm_backward_input", "dx", dx, x.size());
  const double count = static_cast<double>(s.group_elements());
  detail::parallel_for(s.batch * s.groups, s.group_elements(), [&](std::int64_t r) {
    const Moments m = moments_of(stats, r);
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for_group(s, r, [&](std::int64_t c, std::int64_t i) {
      const double g = static_cast<double>(dy[i]) * gamma[c];
      sum_g += g;
      sum_g_xhat += g * ((x[i] - m.mean) * m.inv_std);
    });
    for_group(s, r, [&](std::int64_t c, std::int64_t i) {
      const float xhat = (x[i] - m.mean) * m.inv_std;
      dx[i] = normalized_input_gradient(dy[i] * gamma[c], xhat, m.inv_std, count, sum_g, sum_g_xhat);
    });
  });
}

void group_norm_backward_params(const GroupNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta) {
  check_group_norm("group_norm_backward_params", s, x, stats);
  expect_size("group_norm_backward_params", "dy", dy, x.size());
  expect_size("group_norm_backward_params", "dgamma", dgamma, s.channels);
  expect_size("group_norm_backward_params", "dbeta", dbeta, s.channels);
  // Channel by channel over the batch, in double: a channel's sums need no scratch.
  const std::int64_t per_group = s.channels / s.groups;
  detail::parallel_for(s.channels, s.batch * s.spatial, [&](std::int64_t c) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (std::int64_t n = 0; n < s.batch; ++n) {
      const Moments m = moments_of(stats, n * s.groups + c / per_group);
      const std::int64_t base = (n * s.channels + c) * s.spatial;
      for (std::int64_t i = base; i < base + s.spatial; ++i) {
        sum_dy += dy[i];
        sum_dy_xhat += static_cast<double>(dy[i]) * ((x[i] - m.mean) * m.inv_std);
      }
    }
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    dbeta[c] = static_cast<float>(sum_dy);
  });
}

}  // namespace poet::kernels
