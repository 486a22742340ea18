#include "poet/profile/step_node_timer.h"

#include <algorithm>

#include "poet/cost/device.h"
#include "poet/runtime/executor.h"
#include "poet/runtime/synthetic_batch.h"
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
  std::vector<float> weights;  // the weights every step starts from
  runtime::SyntheticBatch batch;

  State(const Graph& g, std::uint64_t seed)
      : executor(g, checkpoint_all_plan(g), timing_options(seed)), batch(runtime::synthetic_batch(g, seed)) {
    const std::span<const float> values = executor.parameters().all_values();
    weights.assign(values.begin(), values.end());
  }
};

StepNodeTimer::StepNodeTimer(const Graph& g, std::uint64_t seed) : state_(std::make_unique<State>(g, seed)) {}
StepNodeTimer::~StepNodeTimer() = default;

float StepNodeTimer::time_step(std::vector<std::vector<double>>& samples, std::vector<double>* updates) {
  runtime::Executor& e = state_->executor;
  POET_CHECK(samples.size() == e.graph().size(), "StepNodeTimer::time_step needs one sample list per node");
  const float loss = e.train_step(state_->batch.inputs, state_->batch.labels).loss;
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
         static_cast<std::int64_t>((state_->weights.size() + state_->batch.inputs.size()) * sizeof(float));
}

}  // namespace poet::profile
