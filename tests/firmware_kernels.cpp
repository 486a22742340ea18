// The firmware's convolution and linear kernels (firmware/kernels_conv.c, kernels_linear.c,
// compiled for the host) against poet's host kernels, without QEMU: they sum in the host's
// order (firmware/host_order.h), so where oneDNN runs its AVX-512 kernels, whose order that
// is, every output is the same bits; on other CPUs oneDNN's GEMM rounds otherwise and the
// two agree within rounding (1e-6 norm-wise). The shapes: mcu_cnn's (a stride-2 first
// convolution, 8 -> 8 "same" convolutions at 14x14, the linear layer) and one of each other
// path the host takes (batch 1 over im2col, a 5x5, a 1x1, an unpadded convolution, the
// input gradient through col2im), and rows wider than the firmware's 16 columns at a time.
// Then the softmax (kernels.c over host_double.c): glibc's expf and the host's double sum,
// the same bits where glibc runs its FMA expf; and the integer double arithmetic under it
// against the CPU's, exactly, everywhere.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "poet/kernels/kernels_conv.h"
#include "poet/kernels/kernels_dense.h"
#include "poet/kernels/kernels_loss.h"
#include "firmware_host_order.h"

extern "C" {
#include "host_double.h"
#include "kernels.h"
}

namespace poet {
namespace {

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

// Exactly equal (bit for bit, so -0 != 0) where the host sums in the firmware's order, else
// within 1e-6 norm-wise.
void expect_same(std::span<const float> host, std::span<const float> firmware, const std::string& what) {
  ASSERT_EQ(host.size(), firmware.size()) << what;
  if (host_sums_in_firmware_order()) {
    std::size_t differing = 0;
    for (std::size_t i = 0; i < host.size(); ++i) differing += std::memcmp(&host[i], &firmware[i], sizeof(float)) != 0;
    EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << host.size() << " values differ";
    return;
  }
  double squares = 0, differences = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    squares += static_cast<double>(host[i]) * host[i];
    differences += (static_cast<double>(host[i]) - firmware[i]) * (static_cast<double>(host[i]) - firmware[i]);
  }
  EXPECT_LE(std::sqrt(differences / squares), 1e-6) << what;
}

// A layer's forward output and gradients, each side's.
struct LayerOutputs {
  std::vector<float> y, dx, dw, db;
  LayerOutputs(std::size_t y_size, std::size_t x_size, std::size_t w_size, std::size_t b_size)
      : y(y_size), dx(x_size), dw(w_size), db(b_size) {}
};

void expect_same_layer(const LayerOutputs& host, const LayerOutputs& firmware, const std::string& shape) {
  expect_same(host.y, firmware.y, "forward, " + shape);
  expect_same(host.dx, firmware.dx, "input gradient, " + shape);
  expect_same(host.dw, firmware.dw, "weight gradient, " + shape);
  expect_same(host.db, firmware.db, "bias gradient, " + shape);
}

struct ConvCase {
  int batch, in_channels, size, out_channels, kernel, stride, pad;
};

TEST(FirmwareKernels, ConvolutionsSumInTheHostsOrder) {
  std::mt19937 rng(17);
  const ConvCase cases[] = {{8, 1, 28, 8, 3, 2, 1}, {8, 8, 14, 8, 3, 1, 1}, {1, 8, 14, 8, 3, 1, 1},
                            {3, 4, 9, 6, 3, 2, 1},  {8, 6, 12, 4, 5, 1, 2}, {8, 4, 10, 4, 1, 1, 0},
                            {8, 2, 10, 5, 3, 1, 0}, {8, 3, 20, 3, 3, 1, 1}, {2, 2, 37, 3, 3, 2, 1}};
  for (const ConvCase& c : cases) {
    kernels::Conv2dShape s;
    s.batch = c.batch;
    s.in_channels = c.in_channels;
    s.in_h = s.in_w = c.size;
    s.out_channels = c.out_channels;
    s.kernel_h = s.kernel_w = c.kernel;
    s.stride_h = s.stride_w = c.stride;
    s.pad_h = s.pad_w = c.pad;
    const auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    const fw_conv_shape f{u(s.batch), u(s.in_channels), u(s.in_h), u(s.in_w), u(s.out_channels), u(s.out_h()),
                          u(s.out_w()), u(c.kernel), u(c.stride), u(c.pad)};
    const std::vector<float> x = random_values(s.batch * s.in_channels * s.in_h * s.in_w, rng);
    const std::vector<float> w = random_values(s.out_channels * s.in_channels * c.kernel * c.kernel, rng);
    const std::vector<float> b = random_values(s.out_channels, rng);
    const std::vector<float> dy = random_values(s.batch * s.out_channels * s.out_h() * s.out_w(), rng);
    std::vector<float> scratch(kernels::conv2d_scratch_elements(s));
    LayerOutputs host(dy.size(), x.size(), w.size(), b.size()), fw(dy.size(), x.size(), w.size(), b.size());
    kernels::conv2d_forward(s, x, w, b, host.y, scratch);
    kernels::conv2d_backward_input(s, dy, w, host.dx, scratch);
    kernels::conv2d_backward_params(s, dy, x, host.dw, host.db, scratch);
    fw_conv2d_forward(&f, x.data(), w.data(), b.data(), fw.y.data());
    fw_conv2d_backward_input(&f, dy.data(), w.data(), fw.dx.data());
    fw_conv2d_backward_params(&f, dy.data(), x.data(), fw.dw.data(), fw.db.data());
    const std::string shape = "batch " + std::to_string(c.batch) + ", " + std::to_string(c.in_channels) + " -> " +
                              std::to_string(c.out_channels) + " channels at " + std::to_string(c.size) + ", kernel " +
                              std::to_string(c.kernel) + ", stride " + std::to_string(c.stride) + ", padding " +
                              std::to_string(c.pad);
    expect_same_layer(host, fw, shape);
  }
}

TEST(FirmwareKernels, LinearLayersSumInTheHostsOrder) {
  std::mt19937 rng(17);
  for (const kernels::LinearShape& s : {kernels::LinearShape{8, 392, 10, true}, kernels::LinearShape{3, 37, 5, true}}) {
    const auto rows = static_cast<std::uint32_t>(s.rows), in = static_cast<std::uint32_t>(s.in_features),
               out = static_cast<std::uint32_t>(s.out_features);
    const std::vector<float> x = random_values(rows * in, rng), w = random_values(out * in, rng),
                             b = random_values(out, rng), dy = random_values(rows * out, rng);
    LayerOutputs host(dy.size(), x.size(), w.size(), b.size()), fw(dy.size(), x.size(), w.size(), b.size());
    kernels::linear_forward(s, x, w, b, host.y);
    kernels::linear_backward_input(s, dy, w, host.dx);
    kernels::linear_backward_params(s, dy, x, host.dw, host.db);
    fw_linear_forward(rows, in, out, x.data(), w.data(), b.data(), fw.y.data());
    fw_linear_backward_input(rows, in, out, dy.data(), w.data(), fw.dx.data());
    fw_linear_backward_params(rows, in, out, dy.data(), x.data(), fw.dw.data(), fw.db.data());
    expect_same_layer(host, fw, std::to_string(rows) + " x " + std::to_string(in) + " -> " + std::to_string(out));
  }
}

TEST(FirmwareKernels, DoubleArithmeticInIntegersIsTheCpus) {
  std::mt19937_64 rng(17);
  // Normal doubles of random sign and significand, exponents within 2^-60 .. 2^60.
  const auto random_double = [&] {
    const std::uint64_t sign = rng() & 1u, exponent = 1023 - 60 + rng() % 121, fraction = rng() >> 12;
    return std::bit_cast<double>(sign << 63 | exponent << 52 | fraction);
  };
  const auto bits = [](double d) { return std::bit_cast<fw_double>(d); };
  int differing = 0;
  for (int i = 0; i < 200'000; ++i) {
    const double a = random_double(), b = random_double();
    // Every third addend nearly cancels the product, the hard case of a fused multiply-add.
    const double c = i % 3 == 0 ? -a * b * (1 + std::ldexp(static_cast<double>(rng() % 5), -50)) : random_double();
    differing += fw_double_fma(bits(a), bits(b), bits(c)) != bits(std::fma(a, b, c));
    differing += fw_double_add(bits(a), bits(c)) != bits(a + c);
    differing += fw_double_reciprocal(bits(std::fabs(a))) != bits(1.0 / std::fabs(a));
    const double power = std::ldexp(1.0, static_cast<int>(rng() % 121) - 60);  // a sum of 1.0 and nothing else
    differing += fw_double_reciprocal(bits(power)) != bits(1.0 / power);
    // Down to the subnormal floats and below them.
    const double small = std::ldexp(std::fabs(a), -static_cast<int>(rng() % 160));
    differing += std::bit_cast<std::uint32_t>(fw_double_to_float(bits(small))) !=
                 std::bit_cast<std::uint32_t>(static_cast<float>(small));
    const float narrowed = static_cast<float>(small);
    differing += fw_double_from_float(narrowed) != bits(static_cast<double>(narrowed));
  }
  EXPECT_EQ(differing, 0);
}

TEST(FirmwareKernels, ExpfIsGlibcs) {
  if (!host_sums_in_firmware_order()) GTEST_SKIP() << "glibc's expf here may be another variant than its FMA one";
  // Every 997th float of [-110, 0) (the softmax takes x - max <= 0), and the edges.
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -0x1.9fe368p6f, std::nextafter(-0x1.9fe368p6f, 0.0f), -87.3f, -103.5f,
                           -std::numeric_limits<float>::infinity()};
  for (std::uint32_t u = std::bit_cast<std::uint32_t>(-110.0f); u > 0x80000000u; u -= 997)
    xs.push_back(std::bit_cast<float>(u));
  int differing = 0;
  for (const float x : xs)
    differing += std::bit_cast<std::uint32_t>(fw_host_expf(x)) != std::bit_cast<std::uint32_t>(std::exp(x));
  EXPECT_EQ(differing, 0) << "of " << xs.size();
}

TEST(FirmwareKernels, SoftmaxIsTheHostsBits) {
  std::mt19937 rng(17);
  const std::int64_t rows = 8, cols = 10;
  std::normal_distribution<float> logit(0.0f, 4.0f);
  std::vector<float> host, firmware;
  for (int batch = 0; batch < 500; ++batch) {
    std::vector<float> logits(rows * cols), p(logits.size()), fw_p(logits.size());
    std::vector<std::int32_t> labels(rows);
    for (float& v : logits) v = logit(rng);
    if (batch % 10 == 0) logits[batch % logits.size()] += 120.0f;  // exponentials that underflow
    for (std::int32_t& l : labels) l = static_cast<std::int32_t>(rng() % cols);
    kernels::softmax_cross_entropy_forward({rows, cols}, logits, labels, p);
    std::uint32_t correct = 0;
    fw_softmax_cross_entropy_forward(rows, cols, logits.data(), labels.data(), fw_p.data(), &correct);
    host.insert(host.end(), p.begin(), p.end());
    firmware.insert(firmware.end(), fw_p.begin(), fw_p.end());
  }
  expect_same(host, firmware, "softmax probabilities");
}

}  // namespace
}  // namespace poet
