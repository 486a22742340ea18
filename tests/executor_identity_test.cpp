// The paper's "mathematically value preserving" claim, tested: one training step under any
// plan a strategy produces (recomputation, paging, both) gives the loss, gradients,
// updated weights and optimizer state of checkpoint-all, bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "executor_harness.h"
#include "poet/onnx/onnx_import.h"
#include "onnx_fixture.h"
#include "work_limit.h"

namespace poet::testing {
namespace {

struct Strategy {
  std::string name;
  Schedule schedule;
};

// Budgets as fractions of checkpoint-all's activation peak, over fixed memory as the
// solver's strict accounting counts it. lenet5's first max-pool gradient makes the least
// any schedule needs 87% of its peak, and the MLP's first layer's most of its, so their
// fractions are of the way from that least to the peak instead.
struct Budgets {
  bool of_range = false;
  std::vector<double> heuristic;
  double milp = 0;  // 0: no MILP run
};

std::int64_t budget(const Graph& g, double fraction, bool of_range) {
  const SimulationResult all = simulate(g, test_costs(g), plan_from_schedule(checkpoint_all_schedule(g), g));
  if (!of_range)
    return all.fixed_bytes + static_cast<std::int64_t>(fraction * static_cast<double>(all.peak_activation_bytes));
  SolveOptions o;
  o.heuristic_only = true;
  o.progress = false;
  const std::int64_t least = *solve(g, test_costs(g), o).smallest_feasible_budget;
  return least + static_cast<std::int64_t>(fraction * static_cast<double>(all.peak_bytes - least));
}

std::optional<Schedule> poet_schedule(const Graph& g, double fraction, bool of_range, bool heuristic_only) {
  SolveOptions o;
  o.ram_budget_bytes = budget(g, fraction, of_range);
  o.heuristic_only = heuristic_only;
  limit_by_work(o, 5000);
  o.progress = false;
  const SolveResult r = solve(g, test_costs(g), o);
  if (!r.schedule)
    ADD_FAILURE() << g.name() << " at " << fraction << ": " << r.message;
  else
    std::cout << fmt::format("[ budget   ] {}: {:.0f}% of {}: {} B: {}, {} CBC nodes\n", g.name(), 100 * fraction,
                             of_range ? "the way from the least to the peak" : "the activation peak",
                             o.ram_budget_bytes, solve_status_name(r.status), r.nodes);
  return r.schedule;
}

std::vector<Strategy> strategies(const Graph& g, const Budgets& budgets) {
  std::vector<Strategy> s;
  s.push_back({"chen_sqrt", chen_sqrt_schedule(g)});
  for (const int slots : {2, 3}) {
    BaselineResult r = revolve_schedule(g, slots);
    if (r.found()) s.push_back({fmt::format("revolve({} slots)", slots), *r.schedule});
  }
  for (const double fraction : budgets.heuristic)
    if (auto p = poet_schedule(g, fraction, budgets.of_range, true))
      s.push_back({fmt::format("poet heuristic {:.0f}%", 100 * fraction), *p});
  if (budgets.milp > 0)
    if (auto p = poet_schedule(g, budgets.milp, budgets.of_range, false))
      s.push_back({fmt::format("poet milp {:.0f}%", 100 * budgets.milp), *p});
  return s;
}

// Runs every strategy and compares with checkpoint-all; reports what each plan did.
void expect_all_identical(const Graph& g, const Budgets& budgets) {
  const std::string model = g.name();
  LoweredPlan all = executable(g, checkpoint_all_schedule(g));
  const std::int64_t all_arena = all.memory.arena_bytes;
  const Snapshot expected = one_step(g, std::move(all));
  ASSERT_TRUE(std::isfinite(expected.loss));
  std::size_t paging_plans = 0, recomputing_plans = 0;
  for (const Strategy& s : strategies(g, budgets)) {
    LoweredPlan p = executable(g, s.schedule);
    const std::size_t pageins = count(p.plan, InstrKind::PageIn);
    const std::size_t computes = count(p.plan, InstrKind::Compute);
    paging_plans += pageins > 0;
    recomputing_plans += computes > g.size();
    std::cout << fmt::format(
        "[ plan     ] {} {}: arena {} B ({:.0f}% of checkpoint-all's {} B), {} recomputes, {} "
        "page-ins\n",
        model, s.name, p.memory.arena_bytes,
        100.0 * static_cast<double>(p.memory.arena_bytes) / static_cast<double>(all_arena), all_arena,
        computes - g.size(), pageins);
    expect_bit_identical(expected, one_step(g, std::move(p)), model + " " + s.name);
  }
  EXPECT_GT(recomputing_plans, 0u) << model << ": no strategy recomputed anything; the test proves little";
  std::cout << fmt::format("[ plan     ] {}: {} plans page, {} recompute\n", model, paging_plans, recomputing_plans);
}

TEST(ExecutorIdentity, Lenet5AllStrategiesMatchCheckpointAll) {
  expect_all_identical(training_graph("lenet5", 4), {true, {0.2, 0.6}, 0.4});
}

TEST(ExecutorIdentity, MlpAllStrategiesMatchCheckpointAll) {
  expect_all_identical(training_graph("linear", 4), {true, {0.2, 0.6}});
}

TEST(ExecutorIdentity, ResidualNetworkAllStrategiesMatchCheckpointAll) {
  expect_all_identical(training_graph("resnet18_cifar", 2), {false, {0.6, 0.8}});
}

// An autoencoder's loss reads the model's input, its target, at the end of the forward: the
// input is then held, paged or loaded again like any tensor.
TEST(ExecutorIdentity, AutoencoderTrainedByReconstructionMatchesCheckpointAll) {
  const OnnxModel m = import_onnx(onnx_fixture("tiny_autoencoder.onnx"),
                                  {.batch_size = 4, .loss = TrainingLoss::reconstruction});
  expect_all_identical(build_training_graph(m.forward, BackwardMode::Autodiff), {false, {0.6, 0.8}, 0.7});
}

// Several steps in a row: the step counter (Adam's bias correction, dropout keys), the
// optimizer state and the running statistics carry over identically too.
TEST(ExecutorIdentity, ThreeAdamStepsUnderPagingMatchCheckpointAll) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const auto p = poet_schedule(g, 0.6, false, true);
  ASSERT_TRUE(p);
  runtime::ExecutorOptions o;
  o.optimizer.kind = Optimizer::Adam;
  o.optimizer.learning_rate = 1e-3f;
  runtime::Executor all(g, executable(g, checkpoint_all_schedule(g)), o);
  runtime::Executor paged(g, executable(g, *p), o);
  for (std::uint64_t step = 0; step < 3; ++step) {
    const Batch b = synthetic_batch(all, 100 + step);
    const runtime::StepResult x = all.train_step(b.inputs, b.labels), y = paged.train_step(b.inputs, b.labels);
    EXPECT_EQ(std::memcmp(&x.loss, &y.loss, sizeof(float)), 0) << "step " << step;
  }
  const auto& a = all.parameters();
  const auto& q = paged.parameters();
  EXPECT_TRUE(
      same_bits({a.all_values().begin(), a.all_values().end()}, {q.all_values().begin(), q.all_values().end()}));
  EXPECT_TRUE(same_bits({a.optimizer_state().begin(), a.optimizer_state().end()},
                        {q.optimizer_state().begin(), q.optimizer_state().end()}));
  EXPECT_GT(paged.pager().bytes_paged_in(), 0u);
}

// Every free moved to the end of the plan: no compute is then the last reader of an input
// it could take the bytes of, so nothing is computed in place.
LoweredPlan without_in_place(const Graph& g, const Schedule& s) {
  Plan p = plan_from_schedule(s, g);
  std::stable_partition(p.instructions.begin(), p.instructions.end(),
                        [](const Instruction& i) { return i.kind != InstrKind::Free; });
  return lower(g, test_costs(g), std::move(p), {.plan_transfers = false});
}

std::size_t computed_in_place(const LoweredPlan& p) {
  return static_cast<std::size_t>(
      std::count_if(p.buffers.begin(), p.buffers.end(), [](const BufferLife& b) { return b.in_place_of.has_value(); }));
}

// ReLUs and their gradients (lenet5); also adds and gradient sums (the residual network);
// GELU, dropout and their gradients (the transformer): the same bits computed in place.
TEST(ExecutorIdentity, ComputingInPlaceChangesNoBit) {
  for (const auto& [model, batch] : {std::pair{"lenet5", 4}, {"resnet18_cifar", 2}, {"transformer", 1}}) {
    const Graph g = training_graph(model, batch);
    LoweredPlan in_place = executable(g, checkpoint_all_schedule(g));
    LoweredPlan apart = without_in_place(g, checkpoint_all_schedule(g));
    EXPECT_GT(computed_in_place(in_place), 0u) << model;
    EXPECT_EQ(computed_in_place(apart), 0u) << model;
    EXPECT_LT(in_place.memory.arena_bytes, apart.memory.arena_bytes) << model;
    std::cout << fmt::format("[ in place ] {}: {} computes in place, arena {} B against {} B\n", model,
                             computed_in_place(in_place), in_place.memory.arena_bytes, apart.memory.arena_bytes);
    expect_bit_identical(one_step(g, std::move(apart)), one_step(g, std::move(in_place)), model);
  }
}

// The additions of a fixed or learned tensor the ONNX importer makes: Swin's attention mask
// (add_constant) and relative position bias (add_gathered), ViT's position embedding
// (add_parameter), each computed over its input's bytes, the same bits as apart.
TEST(ExecutorIdentity, ImportedAdditionsComputedInPlaceChangeNoBit) {
  for (const auto& [fixture, op] : {std::pair{"tiny_swin", OpKind::AddConstant},
                                    {"tiny_swin", OpKind::AddGathered},
                                    {"tiny_vit", OpKind::AddParameter}}) {
    const OnnxModel m = import_onnx(onnx_fixture(std::string(fixture) + ".onnx"), {.batch_size = 2});
    const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
    const std::string what = fmt::format("{}'s {}", fixture, op_name(op));
    LoweredPlan in_place = executable(g, checkpoint_all_schedule(g));
    const OpKind added = op;  // clang before 16 cannot capture a structured binding
    const auto of_op = std::count_if(in_place.buffers.begin(), in_place.buffers.end(), [&](const BufferLife& b) {
      return b.in_place_of && g.node(b.node).op == added;
    });
    EXPECT_GT(of_op, 0) << what;
    std::cout << fmt::format("[ in place ] {}: {} computed in place\n", what, of_op);
    expect_bit_identical(one_step(g, without_in_place(g, checkpoint_all_schedule(g))), one_step(g, std::move(in_place)),
                         what);
  }
}

// Adam and plain SGD keep the identity too (the other tests use momentum).
TEST(ExecutorIdentity, Lenet5WithAdamAndSgdMatchesCheckpointAll) {
  const Graph g = training_graph("lenet5", 2);
  const auto p = poet_schedule(g, 0.2, true, true);
  ASSERT_TRUE(p);
  for (const Optimizer kind : {Optimizer::SGD, Optimizer::Adam}) {
    runtime::ExecutorOptions o;
    o.optimizer.kind = kind;
    o.seed = 7;
    expect_bit_identical(one_step(g, executable(g, checkpoint_all_schedule(g)), o), one_step(g, executable(g, *p), o),
                         kind == Optimizer::Adam ? "adam" : "sgd");
  }
}

}  // namespace
}  // namespace poet::testing

namespace poet::testing {
namespace {

// input [4, 16] -> linear 32 -> dropout 0.5 -> relu -> linear 10 -> loss: a chain, so
// revolve with one slot recomputes the dropout from the input in the backward.
Graph dropout_chain() {
  Graph f("dropout_chain");
  const NodeId x = add_forward_node(f, "input", OpKind::Input, {4, 16}, {});
  const NodeId l1 = add_forward_node(f, "fc1", OpKind::Linear, {4, 32}, {x}, 17 * 32);
  const NodeId d = add_forward_node(f, "dropout", OpKind::Dropout, {4, 32}, {l1});
  const NodeId r = add_forward_node(f, "relu", OpKind::ReLU, {4, 32}, {d});
  const NodeId l2 = add_forward_node(f, "fc2", OpKind::Linear, {4, 10}, {r}, 33 * 10);
  add_forward_node(f, "loss", OpKind::SoftmaxCrossEntropy, {4, 10}, {l2}, 0, Role::Loss);
  return build_autodiff_backward(f);
}

TEST(ExecutorIdentity, RecomputedDropoutRegeneratesItsMask) {
  const Graph g = dropout_chain();
  const BaselineResult revolve = revolve_schedule(g, 1);
  ASSERT_TRUE(revolve.found()) << revolve.reason;
  LoweredPlan p = executable(g, *revolve.schedule);
  NodeId dropout = 2;
  ASSERT_EQ(g.node(dropout).op, OpKind::Dropout);
  int computes = 0;
  for (const Instruction& i : p.plan.instructions) computes += i.kind == InstrKind::Compute && i.node == dropout;
  ASSERT_GT(computes, 1) << "the plan does not recompute the dropout";
  const Snapshot expected = one_step(g, executable(g, checkpoint_all_schedule(g)));
  expect_bit_identical(expected, one_step(g, std::move(p)), "revolve(1 slot)");
  // Another seed draws another mask (and other initial weights): the dropout is live.
  runtime::ExecutorOptions other;
  other.seed = 99;
  EXPECT_FALSE(same_bits(expected.gradients, one_step(g, executable(g, checkpoint_all_schedule(g)), other).gradients));
}

// The operators only these models use (depthwise convolution, ReLU6; layer norm,
// attention, GELU, dropout), under recomputation, at batch 1 (2-3 s each). Chen's plan,
// because the solver's heuristic finds no plan for them at the budgets tried.
void expect_chen_identical(const std::string& model) {
  const Graph g = training_graph(model, 1);
  LoweredPlan chen = executable(g, chen_sqrt_schedule(g));
  ASSERT_GT(count(chen.plan, InstrKind::Compute), g.size()) << model << ": Chen's plan recomputes nothing";
  expect_bit_identical(one_step(g, executable(g, checkpoint_all_schedule(g))), one_step(g, std::move(chen)), model);
}

TEST(ExecutorIdentity, MobilenetV2ChenMatchesCheckpointAll) { expect_chen_identical("mobilenet_v2"); }

TEST(ExecutorIdentity, TransformerChenMatchesCheckpointAll) { expect_chen_identical("transformer"); }

}  // namespace
}  // namespace poet::testing
