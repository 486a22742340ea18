// The firmware's convolution and linear kernels (firmware/kernels_conv.c, kernels_linear.c,
// compiled for the host) against poet's host kernels, without QEMU: they sum in the host's
// order (firmware/host_order.h), so where oneDNN runs its AVX-512 kernels, whose order that
// is, every output is the same bits; on other CPUs oneDNN's GEMM rounds otherwise and the
// two agree within rounding (1e-6 norm-wise). The shapes: mcu_cnn's (a stride-2 first
// convolution, 8 -> 8 "same" convolutions at 14x14, the linear layer) and one of each other
// path the host takes (batch 1 over im2col, a 5x5, a 1x1, an unpadded convolution, the
// input gradient through col2im), and rows wider than the firmware's 16 columns at a time.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "poet/kernels/kernels_conv.h"
#include "poet/kernels/kernels_dense.h"

extern "C" {
#include "kernels.h"
}

namespace poet {
namespace {

bool avx512_gemm() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

// Exactly equal (bit for bit, so -0 != 0) on AVX-512, else within 1e-6 norm-wise.
void expect_same(std::span<const float> host, std::span<const float> firmware, const std::string& what) {
  ASSERT_EQ(host.size(), firmware.size()) << what;
  if (avx512_gemm()) {
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
    s.stride = c.stride;
    s.pad_h = s.pad_w = c.pad;
    const auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    const fw_conv_shape f{u(s.batch), u(s.in_channels), u(s.in_h), u(s.in_w), u(s.out_channels), u(s.out_h()),
                          u(s.out_w()), u(c.kernel), u(c.stride), u(c.pad)};
    const std::vector<float> x = random_values(s.batch * s.in_channels * s.in_h * s.in_w, rng);
    const std::vector<float> w = random_values(s.out_channels * s.in_channels * c.kernel * c.kernel, rng);
    const std::vector<float> b = random_values(s.out_channels, rng);
    const std::vector<float> dy = random_values(s.batch * s.out_channels * s.out_h() * s.out_w(), rng);
    std::vector<float> scratch(kernels::conv2d_scratch_elements(s));
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
    std::vector<float> fw_y(dy.size()), fw_dx(x.size()), fw_dw(w.size()), fw_db(b.size());
    kernels::conv2d_forward(s, x, w, b, y, scratch);
    kernels::conv2d_backward_input(s, dy, w, dx, scratch);
    kernels::conv2d_backward_params(s, dy, x, dw, db, scratch);
    fw_conv2d_forward(&f, x.data(), w.data(), b.data(), fw_y.data());
    fw_conv2d_backward_input(&f, dy.data(), w.data(), fw_dx.data());
    fw_conv2d_backward_params(&f, dy.data(), x.data(), fw_dw.data(), fw_db.data());
    const std::string shape = "batch " + std::to_string(c.batch) + ", " + std::to_string(c.in_channels) + " -> " +
                              std::to_string(c.out_channels) + " channels at " + std::to_string(c.size) + ", kernel " +
                              std::to_string(c.kernel) + ", stride " + std::to_string(c.stride) + ", padding " +
                              std::to_string(c.pad);
    expect_same(y, fw_y, "forward, " + shape);
    expect_same(dx, fw_dx, "input gradient, " + shape);
    expect_same(dw, fw_dw, "weight gradient, " + shape);
    expect_same(db, fw_db, "bias gradient, " + shape);
  }
}

TEST(FirmwareKernels, LinearLayersSumInTheHostsOrder) {
  std::mt19937 rng(17);
  for (const kernels::LinearShape& s : {kernels::LinearShape{8, 392, 10, true}, kernels::LinearShape{3, 37, 5, true}}) {
    const auto rows = static_cast<std::uint32_t>(s.rows), in = static_cast<std::uint32_t>(s.in_features),
               out = static_cast<std::uint32_t>(s.out_features);
    const std::vector<float> x = random_values(rows * in, rng), w = random_values(out * in, rng),
                             b = random_values(out, rng), dy = random_values(rows * out, rng);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
    std::vector<float> fw_y(dy.size()), fw_dx(x.size()), fw_dw(w.size()), fw_db(b.size());
    kernels::linear_forward(s, x, w, b, y);
    kernels::linear_backward_input(s, dy, w, dx);
    kernels::linear_backward_params(s, dy, x, dw, db);
    fw_linear_forward(rows, in, out, x.data(), w.data(), b.data(), fw_y.data());
    fw_linear_backward_input(rows, in, out, dy.data(), w.data(), fw_dx.data());
    fw_linear_backward_params(rows, in, out, dy.data(), x.data(), fw_dw.data(), fw_db.data());
    const std::string shape = std::to_string(rows) + " x " + std::to_string(in) + " -> " + std::to_string(out);
    expect_same(y, fw_y, "forward, " + shape);
    expect_same(dx, fw_dx, "input gradient, " + shape);
    expect_same(dw, fw_dw, "weight gradient, " + shape);
    expect_same(db, fw_db, "bias gradient, " + shape);
  }
}

}  // namespace
}  // namespace poet
