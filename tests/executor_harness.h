// Shared by the executor tests: training graphs, executable plans from each schedule
// producer, synthetic batches, and a snapshot of everything a step changes.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/revolve.h"
#include "poet/cost/device.h"
#include "poet/graph/op_table.h"
#include "poet/kernels/rng.h"
#include "poet/runtime/executor.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/solve/solve.h"

namespace poet::testing {

inline Graph training_graph(const std::string& model, int batch) {
  return build_model_training_graph(model, {.batch_size = batch}, BackwardMode::Autodiff);
}

// How many of the plan's instructions are of `kind`.
inline std::size_t count(const Plan& p, InstrKind kind) {
  std::size_t n = 0;
  for (const Instruction& i : p.instructions) n += i.kind == kind;
  return n;
}

// a72: paging is cheap enough beside compute that the solver mixes it with recomputation.
inline GraphCosts test_costs(const Graph& g) { return estimate_costs(g, builtin_platform("a72")); }

// The schedule as it is (no transfer planning), with no budget.
inline LoweredPlan executable(const Graph& g, const Schedule& s) {
  return lower(g, test_costs(g), s, {.plan_transfers = false});
}

// A node of a small hand-built forward graph: FLOPs = output elements; a dropout drops half.
inline NodeId add_forward_node(Graph& f, const char* name, OpKind op, Shape shape, std::vector<NodeId> in,
                               std::int64_t params = 0, Role role = Role::Forward) {
  Node n;
  n.name = name;
  n.op = op;
  n.role = role;
  n.shape = std::move(shape);
  n.flops = static_cast<double>(element_count(n.shape));
  n.param_count = params;
  n.inputs = std::move(in);
  if (op == OpKind::Dropout) n.attrs.dropout_p = 0.5;
  return f.add(std::move(n));
}

// A deterministic batch: inputs uniform in [-1, 1) (or token ids of the model's vocabulary),
// labels among the loss's classes.
struct Batch {
  std::vector<float> inputs;
  std::vector<std::int32_t> labels;
};

inline Batch synthetic_batch(const runtime::Executor& e, std::uint64_t seed) {
  const auto classes = static_cast<std::uint32_t>(e.graph().node(e.graph().loss()).shape.back());
  Batch b;
  const kernels::RandomKey key{seed, 0, 0xBA7C4};
  const auto vocabulary = static_cast<std::uint32_t>(token_vocabulary(e.graph()));  // 0: numbers, not token ids
  for (std::size_t i = 0; i < e.input_elements(); ++i)
    b.inputs.push_back(vocabulary > 0 ? std::bit_cast<float>(static_cast<std::int32_t>(kernels::random_bits(key, i) %
                                                                                       vocabulary))
                                      : static_cast<float>(kernels::random_bits(key, i) >> 8) / 8388608.0f - 1.0f);
  for (std::size_t i = 0; i < e.label_count(); ++i)
    b.labels.push_back(static_cast<std::int32_t>(kernels::random_bits(key, 1'000'000 + i) % classes));
  return b;
}

// Everything one step leaves behind.
struct Snapshot {
  float loss = 0;
  std::int64_t correct = 0;
  std::vector<float> parameters, gradients, optimizer_state;
};

inline Snapshot one_step(const Graph& g, LoweredPlan plan, runtime::ExecutorOptions options = {}) {
  runtime::Executor e(g, std::move(plan), options);
  const Batch b = synthetic_batch(e, 1);
  const runtime::StepResult r = e.train_step(b.inputs, b.labels);
  const auto& p = e.parameters();
  return {r.loss,
          r.correct,
          {p.all_values().begin(), p.all_values().end()},
          {p.all_gradients().begin(), p.all_gradients().end()},
          {p.optimizer_state().begin(), p.optimizer_state().end()}};
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp must not see the null data() of an empty vector (SGD keeps no state).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline void expect_bit_identical(const Snapshot& expected, const Snapshot& actual, const std::string& what) {
  EXPECT_EQ(std::memcmp(&expected.loss, &actual.loss, sizeof(float)), 0)
      << what << ": loss " << expected.loss << " vs " << actual.loss;
  EXPECT_EQ(expected.correct, actual.correct) << what;
  EXPECT_TRUE(same_bits(expected.gradients, actual.gradients)) << what << ": gradients differ";
  EXPECT_TRUE(same_bits(expected.parameters, actual.parameters)) << what << ": updated parameters differ";
  EXPECT_TRUE(same_bits(expected.optimizer_state, actual.optimizer_state)) << what << ": optimizer state differs";
}

}  // namespace poet::testing
