#include "poet/profile/step_node_timer.h"

#include <algorithm>
#include <bit>

#include "poet/cost/device.h"
#include "poet/graph/op_table.h"
#include "poet/kernels/rng.h"
#include "poet/runtime/executor.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/util/error.h"

namespace poet::profile {
namespace {

// Checkpoint-all pages nothing, so the costs it is lowered with (which place transfers)
// change nothing in its plan.
LoweredPlan checkpoint_all_plan(const Graph& g) {
  return lower(g, estimate_costs(g, builtin_platform("a72")), checkpoint_all_schedule(g), {.plan_transfers = false});
}

runtime::ExecutorOptions timing_options(std::uint64_t seed) {
  runtime::ExecutorOptions o;
  o.seed = seed;
  o.time_computes = true;
  return o;
}

}  // namespace

struct StepNodeTimer::State {
  runtime::Executor executor;
  std::vector<float> weights, batch;  // the weights every step starts from
  std::vector<std::int32_t> labels;

  State(const Graph& g, std::uint64_t seed) : executor(g, checkpoint_all_plan(g), timing_options(seed)) {
    const std::span<const float> values = executor.parameters().all_values();
    weights.assign(values.begin(), values.end());
    fill_batch(seed);
  }

  // Uniform inputs in [0, 1), or token ids below the vocabulary; labels cycling through the
  // classes. A kernel's time does not depend on the values, as long as they are ordinary
  // numbers (no NaNs, no denormals).
  void fill_batch(std::uint64_t seed) {
    const Graph& g = executor.graph();
    batch.resize(executor.input_elements());
    const std::int64_t vocab = token_vocabulary(g);
    const kernels::RandomKey key{.seed = seed, .step = 0, .node = 0};
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::uint32_t bits = kernels::random_bits(key, i);
      batch[i] = vocab > 0 ? std::bit_cast<float>(static_cast<std::int32_t>(bits % static_cast<std::uint64_t>(vocab)))
                           : static_cast<float>(bits >> 8) * 0x1p-24f;
    }
    const auto classes = static_cast<std::int32_t>(g.node(g.loss()).shape.back());
    labels.resize(executor.label_count());
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i) % classes;
  }
};

StepNodeTimer::StepNodeTimer(const Graph& g, std::uint64_t seed) : state_(std::make_unique<State>(g, seed)) {}
StepNodeTimer::~StepNodeTimer() = default;

float StepNodeTimer::time_step(std::vector<std::vector<double>>& samples, std::vector<double>* updates) {
  runtime::Executor& e = state_->executor;
  POET_CHECK(samples.size() == e.graph().size(), "StepNodeTimer::time_step needs one sample list per node");
  const float loss = e.train_step(state_->batch, state_->labels).loss;
  const std::span<const double> seconds = e.compute_seconds();
  for (std::size_t v = 0; v < samples.size(); ++v) samples[v].push_back(seconds[v]);
  if (updates) updates->push_back(e.update_seconds());
  std::ranges::copy(state_->weights, e.parameters().all_values().begin());
  e.set_steps_done(0);
  return loss;
}

const Graph& StepNodeTimer::graph() const { return state_->executor.graph(); }

std::int64_t StepNodeTimer::bytes_held() const {
  const runtime::Executor& e = state_->executor;
  return e.arena_bytes() + e.parameters().bytes().total() +
         static_cast<std::int64_t>((state_->weights.size() + state_->batch.size()) * sizeof(float));
}

}  // namespace poet::profile
