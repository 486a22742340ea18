// The executor's wiring, checked against the math: the gradients a step writes match
// central finite differences of the loss it reports. Bit-identity across plans cannot
// catch a kernel fed the wrong tensor (every plan would feed it the same wrong one); this
// can. The kernels' own finite-difference tests are in kernels_*_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "executor_harness.h"

namespace poet::testing {
namespace {

// The loss at the parameters `theta`, by a step whose update is then undone.
float loss_at(runtime::Executor& e, const std::vector<float>& theta, const Batch& b) {
  auto p = e.parameters().all_values();
  std::copy(theta.begin(), theta.end(), p.begin());
  return e.train_step(b.inputs, b.labels).loss;
}

// Checks the first and the middle trained element of every `stride`-th parameter slice.
void expect_gradients_match_differences(const std::string& model, int batch, int stride) {
  const Graph g = training_graph(model, batch);
  runtime::ExecutorOptions o;
  o.optimizer.kind = Optimizer::SGD;
  runtime::Executor e(g, executable(g, chen_sqrt_schedule(g)), o);
  const Batch b = synthetic_batch(e, 11);
  const std::vector<float> theta(e.parameters().all_values().begin(), e.parameters().all_values().end());
  loss_at(e, theta, b);
  const std::vector<float> grad(e.parameters().all_gradients().begin(), e.parameters().all_gradients().end());
  const auto& slices = e.parameters().slices();
  int checked = 0;
  for (std::size_t s = 0; s < slices.size(); s += static_cast<std::size_t>(stride)) {
    for (const std::int64_t k : {std::int64_t{0}, slices[s].trainable / 2}) {
      const auto i = static_cast<std::size_t>(slices[s].offset + k);
      const float eps = 1e-3f * std::max(1.0f, std::abs(theta[i]));
      std::vector<float> plus = theta, minus = theta;
      plus[i] += eps;
      minus[i] -= eps;
      const double numeric = (static_cast<double>(loss_at(e, plus, b)) - loss_at(e, minus, b)) / (2.0 * eps);
      EXPECT_NEAR(grad[static_cast<std::size_t>(slices[s].trained_offset + k)], numeric, 2e-3 + 0.05 * std::abs(numeric))
          << model << ": parameter " << k << " of '" << g.node(slices[s].node).name << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(ExecutorGradients, Lenet5MatchesFiniteDifferences) { expect_gradients_match_differences("lenet5", 2, 1); }

TEST(ExecutorGradients, MlpMatchesFiniteDifferences) { expect_gradients_match_differences("linear", 3, 1); }

TEST(ExecutorGradients, ResidualNetworkMatchesFiniteDifferences) {
  expect_gradients_match_differences("resnet18_cifar", 2, 4);
}

}  // namespace
}  // namespace poet::testing
