// The executor's contract beyond bit-identity (executor_identity_test.cpp): no heap
// allocation in a step, training that learns, plans and batches rejected before they can
// do harm, a failed step that leaves the model as it was, batch-norm running statistics
// and dropout masks that survive recomputation, and evaluation in inference mode.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <thread>
#include <chrono>

#include <nlohmann/json.hpp>

#include "executor_harness.h"
#include "poet/graph/graph_json.h"
#include "poet/paging/file_pager.h"
#include "poet/paging/memory_pager.h"
#include "poet/util/error.h"

// Counting replacements of the global allocation functions, for the whole test binary.
// They count only while `counting` is set, so other tests are unaffected.
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* counted_alloc(std::size_t size, std::size_t alignment = 0) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  void* p = alignment > alignof(std::max_align_t)
                ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                : std::malloc(size);
  return p;
}
// Not inlined, so the compiler does not pair a replaced operator new with free().
[[gnu::noinline]] void counted_free(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(std::size_t size) {
  if (void* p = counted_alloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  if (void* p = counted_alloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, std::align_val_t a) {
  if (void* p = counted_alloc(size, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t a) {
  if (void* p = counted_alloc(size, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }

namespace poet::testing {
namespace {

// A plan for `fraction` of checkpoint-all's activation peak by the solver's heuristic.
Schedule poet_heuristic(const Graph& g, double fraction) {
  const SimulationResult all = simulate(g, test_costs(g), plan_from_schedule(checkpoint_all_schedule(g), g));
  SolveOptions o;
  o.ram_budget_bytes =
      all.fixed_bytes + static_cast<std::int64_t>(fraction * static_cast<double>(all.peak_activation_bytes));
  o.heuristic_only = true;
  o.progress = false;
  const SolveResult r = solve(g, test_costs(g), o);
  if (!r.schedule) throw std::runtime_error(r.message);
  return *r.schedule;
}

std::vector<float> values(const runtime::Executor& e) {
  return {e.parameters().all_values().begin(), e.parameters().all_values().end()};
}

template <typename Run>
long allocations_during(Run run) {
  allocations = 0;
  counting = true;
  run();
  counting = false;
  return allocations.load();
}

TEST(Executor, AllocationCounterSeesAnAllocation) {
  allocations = 0;
  counting = true;
  auto* v = new std::vector<int>(16);
  counting = false;
  EXPECT_GE(allocations.load(), 1);
  delete v;
}

void expect_no_allocation_after_warm_up(const Graph& g, LoweredPlan plan, Pager* pager,
                                       const std::string& what) {
  runtime::ExecutorOptions o;
  o.pager = pager;
  runtime::Executor e(g, std::move(plan), o);
  const Batch b = synthetic_batch(e, 3);
  e.train_step(b.inputs, b.labels);  // warm-up: the GEMM (oneDNN JIT-compiles its kernels) and the pager's stored copies allocate once
  const auto step = [&] { e.train_step(b.inputs, b.labels); };
  const auto evaluate = [&] { e.evaluate(b.inputs, b.labels); };
  EXPECT_EQ(allocations_during(step), 0) << what;
  EXPECT_EQ(allocations_during(step), 0) << what;
  EXPECT_EQ(allocations_during(evaluate), 0) << what << ": evaluate";
  EXPECT_EQ(allocations_during(evaluate), 0) << what << ": evaluate";
}

TEST(Executor, SecondStepAndEvaluationMakeNoHeapAllocation) {
  // Recomputation (lenet5 by Chen) and paging (resnet18_cifar by the solver at 60%), the
  // latter through the in-memory pager and through the file pager.
  const Graph lenet = training_graph("lenet5", 4);
  expect_no_allocation_after_warm_up(lenet, executable(lenet, chen_sqrt_schedule(lenet)), nullptr, "lenet5 chen");
  const Graph resnet = training_graph("resnet18_cifar", 2);
  const Schedule paging = poet_heuristic(resnet, 0.6);
  ASSERT_GT(count(executable(resnet, paging).plan, InstrKind::PageIn), 0u);
  expect_no_allocation_after_warm_up(resnet, executable(resnet, paging), nullptr, "resnet18_cifar memory pager");
  FilePagerOptions options;
  options.path = ::testing::TempDir();
  FilePager file(options);
  expect_no_allocation_after_warm_up(resnet, executable(resnet, paging), &file, "resnet18_cifar file pager");
}

// However far storage falls behind: 200 page-outs started at once queue past anything the
// warm-up (one transfer at a time) queued, and the file pager, told the step's transfers by
// the executor, had room for them all (it grew its queue on the step before: a step under
// load failed the test above once).
TEST(Executor, AFilePagerSizedForTheStepsTransfersQueuesThemWithoutAllocating) {
  FilePagerOptions options;
  options.path = ::testing::TempDir();
  FilePager pager(options);
  constexpr NodeId kTensors = 200;
  std::vector<std::vector<std::byte>> data(kTensors, std::vector<std::byte>(64, std::byte{7}));
  pager.expect_transfers_per_step(kTensors);
  for (NodeId v = 0; v < kTensors; ++v) {  // each tensor's record and slot, made once
    pager.start_page_out(v, data[static_cast<std::size_t>(v)]);
    pager.wait_all();
  }
  EXPECT_EQ(allocations_during([&] {
              for (NodeId v = 0; v < kTensors; ++v) pager.start_page_out(v, data[static_cast<std::size_t>(v)]);
              pager.wait_all();
            }),
            0);
}

TEST(Executor, TimedComputesChangeNoBitAllocateNothingAndTimeEveryComputedNode) {
  const Graph g = training_graph("lenet5", 4);
  const LoweredPlan plan = executable(g, chen_sqrt_schedule(g));  // recomputes: some nodes run twice
  runtime::Executor plain(g, plan);
  runtime::ExecutorOptions o;
  o.time_computes = true;
  runtime::Executor timed(g, plan, o);
  EXPECT_TRUE(plain.compute_seconds().empty());
  const Batch b = synthetic_batch(timed, 3);
  for (int i = 0; i < 2; ++i) {
    plain.train_step(b.inputs, b.labels);
    timed.train_step(b.inputs, b.labels);
  }
  EXPECT_EQ(values(timed), values(plain));
  EXPECT_EQ(allocations_during([&] { timed.train_step(b.inputs, b.labels); }), 0);
  ASSERT_EQ(timed.compute_seconds().size(), g.size());
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)  // Chen's plan computes every node
    EXPECT_GT(timed.compute_seconds()[static_cast<std::size_t>(v)], 0) << g.node(v).name;
  EXPECT_GT(timed.update_seconds(), 0);
}

TEST(Executor, SgdStepsReduceTheLossOnATinyDataset) {
  // Four images, each class a bright square at its own place: learnable in a few steps.
  const Graph g = training_graph("lenet5", 4);
  runtime::ExecutorOptions o;
  o.optimizer.kind = Optimizer::Momentum;
  o.optimizer.learning_rate = 0.05f;
  runtime::Executor e(g, executable(g, poet_heuristic(g, 0.97)), o);
  Batch b;
  b.inputs.assign(e.input_elements(), 0.0f);
  for (int i = 0; i < 4; ++i) {
    b.labels.push_back(i);
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 6; ++x)
        b.inputs[static_cast<std::size_t>(i * 784 + (4 + 12 * (i / 2) + y) * 28 + 4 + 12 * (i % 2) + x)] = 1.0f;
  }
  const runtime::StepResult first = e.train_step(b.inputs, b.labels);
  runtime::StepResult last = first;
  for (int step = 0; step < 30; ++step) last = e.train_step(b.inputs, b.labels);
  EXPECT_LT(last.loss, 0.25f * first.loss) << "first " << first.loss << ", last " << last.loss;
  EXPECT_EQ(last.correct, 4);
  EXPECT_EQ(e.steps_done(), 31u);
}

TEST(Executor, RejectsAPlanThatReadsAFreedTensorBeforeRunning) {
  const Graph g = training_graph("linear", 2);
  LoweredPlan p = executable(g, checkpoint_all_schedule(g));
  // Move the first free before the compute that reads the freed tensor last.
  auto& ins = p.plan.instructions;
  std::size_t free_at = 0;
  while (ins[free_at].kind != InstrKind::Free) ++free_at;
  const NodeId freed = ins[free_at].node;
  std::size_t reader = free_at;
  while (ins[reader].kind != InstrKind::Compute ||
         std::find(g.node(ins[reader].node).inputs.begin(), g.node(ins[reader].node).inputs.end(), freed) ==
             g.node(ins[reader].node).inputs.end())
    --reader;
  std::rotate(ins.begin() + static_cast<std::ptrdiff_t>(reader), ins.begin() + static_cast<std::ptrdiff_t>(free_at),
              ins.begin() + static_cast<std::ptrdiff_t>(free_at) + 1);
  try {
    runtime::Executor e(g, std::move(p));
    FAIL() << "the executor accepted a plan reading a freed tensor";
  } catch (const InvalidPlan& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(fmt::format("instruction {}", reader + 1)), std::string::npos) << message;
    EXPECT_NE(message.find(
                  fmt::format("'{}' ({}) is not in RAM: freed by instruction {}", g.node(freed).name, freed, reader)),
              std::string::npos)
        << message;
  }
}

TEST(Executor, RejectsAMemoryPlanThatSharesBytesBetweenLiveTensors) {
  const Graph g = training_graph("linear", 2);
  LoweredPlan p = executable(g, checkpoint_all_schedule(g));
  std::fill(p.memory.offsets.begin(), p.memory.offsets.end(), 0);  // everything at offset 0
  EXPECT_THROW(runtime::Executor(g, std::move(p)), InputError);
}

TEST(Executor, RejectsBuffersThatAreNotThePlans) {
  const Graph g = training_graph("linear", 2);
  LoweredPlan p = executable(g, checkpoint_all_schedule(g));
  std::swap(p.buffers[0], p.buffers[1]);
  try {
    runtime::Executor e(g, std::move(p));
    FAIL() << "the executor accepted buffers in another order than the plan makes them";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lower() makes the buffers"), std::string::npos) << e.what();
  }
}

TEST(Executor, HoldsTheFixedMemoryTheGraphCountsRunningStatisticsUntrained) {
  const Graph g = training_graph("resnet18_cifar", 1);
  for (const Optimizer kind : {Optimizer::SGD, Optimizer::Momentum, Optimizer::Adam}) {
    runtime::ExecutorOptions o;
    o.optimizer.kind = kind;
    runtime::Executor e(g, executable(g, checkpoint_all_schedule(g)), o);
    const FixedMemory held = e.parameters().bytes(), counted = g.fixed_memory(kind);
    EXPECT_EQ(held.parameter_bytes, counted.parameter_bytes);
    EXPECT_EQ(held.gradient_bytes, counted.gradient_bytes);
    EXPECT_EQ(held.optimizer_state_bytes, counted.optimizer_state_bytes);
    EXPECT_LT(counted.gradient_bytes, counted.parameter_bytes);  // batch norm's running statistics
  }
}

TEST(Executor, RejectsChainGraphsNamingTheNode) {
  const Graph g = build_model_training_graph("linear", {.batch_size = 1}, BackwardMode::Chain);
  try {
    runtime::Executor e(g, executable(g, checkpoint_all_schedule(g)));
    FAIL() << "a chain graph was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("chain_gradient"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("autodiff"), std::string::npos) << e.what();
  }
}

TEST(Executor, BadBatchIsRejectedAndLeavesTheModelUnchanged) {
  const Graph g = training_graph("lenet5", 2);
  runtime::Executor e(g, executable(g, checkpoint_all_schedule(g)));
  Batch b = synthetic_batch(e, 1);
  const std::vector<float> before = values(e);
  std::vector<float> short_inputs(b.inputs.begin(), b.inputs.end() - 1);
  EXPECT_THROW(e.train_step(short_inputs, b.labels), InputError);
  b.labels[1] = 10;
  EXPECT_THROW(e.train_step(b.inputs, b.labels), InputError);
  EXPECT_TRUE(same_bits(before, values(e)));
  EXPECT_EQ(e.steps_done(), 0u);
}

// Fails the n-th page-in (or page-out), as a storage fault would.
class FailingPager final : public Pager {
 public:
  explicit FailingPager(int fail_at, InstrKind fails = InstrKind::PageIn) : fail_at_(fail_at), fails_(fails) {}
  void start_page_out(NodeId node, std::span<const std::byte> data) override {
    if (fails_ == InstrKind::PageOut && ++transfers_ == fail_at_) throw PagerError("injected fault: disk full");
    inner_.start_page_out(node, data);
  }
  void start_page_in(NodeId node, std::span<std::byte> into) override {
    if (fails_ == InstrKind::PageIn && ++transfers_ == fail_at_) throw PagerError("injected fault: checksum mismatch");
    inner_.start_page_in(node, into);
  }
  void wait(NodeId node) override { inner_.wait(node); }
  void wait_all() override { inner_.wait_all(); }
  std::size_t bytes_paged_out() const override { return inner_.bytes_paged_out(); }
  std::size_t bytes_paged_in() const override { return inner_.bytes_paged_in(); }

 private:
  MemoryPager inner_;
  int fail_at_;
  InstrKind fails_;
  int transfers_ = 0;
};

TEST(Executor, FailedPageInStopsTheStepAndLeavesTheModelUnchanged) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const Schedule s = poet_heuristic(g, 0.6);
  FailingPager pager(3);
  runtime::ExecutorOptions o;
  o.pager = &pager;
  runtime::Executor e(g, executable(g, s), o);
  const Batch b = synthetic_batch(e, 1);  // one_step's batch
  const std::vector<float> before = values(e);
  EXPECT_THROW(e.train_step(b.inputs, b.labels), PagerError);
  EXPECT_TRUE(same_bits(before, values(e))) << "parameters or running statistics changed by a failed step";
  EXPECT_EQ(e.steps_done(), 0u);
  // A retry (the fault was transient) is exactly the step that would have run.
  e.train_step(b.inputs, b.labels);
  EXPECT_TRUE(same_bits(one_step(g, executable(g, s)).parameters, values(e)));
  EXPECT_GT(e.pager().bytes_paged_in(), 0u);
}

// A pager whose every wait takes at least a millisecond: the executor's stall is then at
// least that per wait, however fast the machine.
class SlowWaitPager final : public Pager {
 public:
  void start_page_out(NodeId node, std::span<const std::byte> data) override { inner_.start_page_out(node, data); }
  void start_page_in(NodeId node, std::span<std::byte> into) override { inner_.start_page_in(node, into); }
  void wait(NodeId node) override {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    inner_.wait(node);
  }
  void wait_all() override {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    inner_.wait_all();
  }
  std::size_t bytes_paged_out() const override { return inner_.bytes_paged_out(); }
  std::size_t bytes_paged_in() const override { return inner_.bytes_paged_in(); }
  int waits = 0;

 private:
  MemoryPager inner_;
};

TEST(Executor, StallCountsEveryWaitForATransfer) {
  const Graph g = training_graph("resnet18_cifar", 2);
  SlowWaitPager pager;
  runtime::ExecutorOptions o;
  o.pager = &pager;
  runtime::Executor e(g, executable(g, poet_heuristic(g, 0.6)), o);
  const Batch b = synthetic_batch(e, 1);
  e.train_step(b.inputs, b.labels);
  ASSERT_GT(pager.waits, 1);  // page-ins waited for, and the step's end
  EXPECT_GE(e.stall_seconds(), 1e-3 * pager.waits);
}

// A pager as asynchronous as the interface allows: transfers queue in the order started
// and run only when waited for (wait(v) runs the queue up to v's last one); a page-in fills
// its destination with NaN as soon as it is first in the queue, and the data only when it
// runs; a page-out reads its source only when it runs. An executor that read a tensor
// before its page-in ended, or reused bytes a page-out had not yet read, would compute
// something else than checkpoint-all.
class DeferredPager final : public Pager {
 public:
  void start_page_out(NodeId node, std::span<const std::byte> data) override {
    queue(node, Kind::Out, {const_cast<std::byte*>(data.data()), data.size()});
    bytes_out_ += data.size();
  }
  void start_page_in(NodeId node, std::span<std::byte> into) override {
    queue(node, Kind::In, into);
    bytes_in_ += into.size();
  }
  void wait(NodeId node) override {
    const auto last = std::find_if(queue_.rbegin(), queue_.rend(), [&](const Transfer& t) { return t.node == node; });
    for (auto n = queue_.rend() - last; n > 0; --n) run_first();
  }
  void wait_all() override {
    while (!queue_.empty()) run_first();
  }
  std::size_t bytes_paged_out() const override { return bytes_out_; }
  std::size_t bytes_paged_in() const override { return bytes_in_; }
  int deferred_completions = 0;

 private:
  enum class Kind { Out, In };
  struct Transfer {
    NodeId node;
    Kind kind;
    std::span<std::byte> ram;
  };
  void queue(NodeId node, Kind kind, std::span<std::byte> ram) {
    if (static_cast<std::size_t>(node) >= stored_.size()) stored_.resize(static_cast<std::size_t>(node) + 1);
    queue_.push_back({node, kind, ram});
    if (queue_.size() == 1) begin_first();
  }
  // The first transfer in the queue starts: a page-in's destination holds garbage from now on.
  void begin_first() {
    const Transfer& t = queue_.front();
    if (t.kind != Kind::In) return;
    std::span<float> garbage{reinterpret_cast<float*>(t.ram.data()), t.ram.size() / sizeof(float)};
    std::fill(garbage.begin(), garbage.end(), std::numeric_limits<float>::quiet_NaN());
  }
  void run_first() {
    const Transfer t = queue_.front();
    std::vector<std::byte>& stored = stored_[static_cast<std::size_t>(t.node)];
    if (t.kind == Kind::Out) stored.assign(t.ram.begin(), t.ram.end());
    if (t.kind == Kind::In) std::copy(stored.begin(), stored.end(), t.ram.begin());
    ++deferred_completions;
    queue_.erase(queue_.begin());
    if (!queue_.empty()) begin_first();
  }
  std::vector<Transfer> queue_;
  std::vector<std::vector<std::byte>> stored_;
  std::size_t bytes_out_ = 0, bytes_in_ = 0;
};

TEST(Executor, AsynchronousTransfersAreWaitedForBeforeReadsAndReuse) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const Schedule s = poet_heuristic(g, 0.6);
  DeferredPager pager;
  runtime::ExecutorOptions o;
  o.pager = &pager;
  expect_bit_identical(one_step(g, executable(g, checkpoint_all_schedule(g))), one_step(g, executable(g, s), o),
                       "deferred pager");
  EXPECT_GT(pager.deferred_completions, 0);
  EXPECT_GT(pager.bytes_paged_in(), 0u);
}

// The real file pager (its own faults are tested in file_pager_test.cpp): a paging plan
// trains through a file exactly as checkpoint-all does in RAM.
TEST(Executor, FilePagerStepMatchesCheckpointAll) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const Schedule s = poet_heuristic(g, 0.6);
  FilePagerOptions options;
  options.path = ::testing::TempDir();
  FilePager pager(options);
  runtime::ExecutorOptions o;
  o.pager = &pager;
  expect_bit_identical(one_step(g, executable(g, checkpoint_all_schedule(g))), one_step(g, executable(g, s), o),
                       "file pager");
  EXPECT_GT(pager.bytes_paged_in(), 0u);
}

TEST(Executor, RecomputedBatchNormStatisticsUpdateRunningStatisticsOnce) {
  const Graph g = training_graph("resnet18_cifar", 2);
  LoweredPlan chen = executable(g, chen_sqrt_schedule(g));
  std::vector<int> computes(g.size(), 0);
  for (const Instruction& i : chen.plan.instructions) computes[i.node] += i.kind == InstrKind::Compute;
  NodeId recomputed = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).op == OpKind::BatchNormStats && computes[v] > 1) recomputed = v;
  ASSERT_GE(recomputed, 0) << "Chen's plan recomputes no batch-norm statistics; pick another plan";

  runtime::Executor once(g, executable(g, checkpoint_all_schedule(g)));
  runtime::Executor twice(g, std::move(chen));
  const Batch b = synthetic_batch(once, 5);
  once.train_step(b.inputs, b.labels);
  twice.train_step(b.inputs, b.labels);
  // The norm fed by the recomputed statistics: its running mean moved off 0 exactly as
  // under checkpoint-all, which computes the statistics once.
  NodeId norm = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).op == OpKind::BatchNorm2d && g.node(v).inputs.at(1) == recomputed) norm = v;
  ASSERT_GE(norm, 0);
  const auto a = once.parameters().values(norm), c = twice.parameters().values(norm);
  const std::size_t channels = a.size() / 4;
  bool moved = false;
  for (std::size_t i = 2 * channels; i < 4 * channels; ++i) {
    EXPECT_EQ(std::memcmp(&a[i], &c[i], sizeof(float)), 0) << "running statistic " << i;
    moved = moved || a[i] != (i < 3 * channels ? 0.0f : 1.0f);
  }
  EXPECT_TRUE(moved);
}

// Each batch norm updates its running statistics with its own momentum (an imported
// model's, MNASNet's 0.0003): the running mean, 0 before the step, becomes momentum x the
// batch's mean, so a norm given 0.5 instead of PyTorch's 0.1 holds 5 times as much; the
// other norms are untouched by the change.
TEST(Executor, EachBatchNormUpdatesItsRunningStatisticsWithItsOwnMomentum) {
  const Graph g = training_graph("resnet18_cifar", 2);
  nlohmann::json j = graph_to_json(g);
  NodeId norm = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()) && norm < 0; ++v)
    if (g.node(v).op == OpKind::BatchNorm2d) norm = v;
  ASSERT_GE(norm, 0);
  j["nodes"][static_cast<std::size_t>(norm)]["attrs"]["momentum"] = 0.5;
  const Graph changed = graph_from_json(j, "resnet18_cifar with one momentum changed");
  ASSERT_EQ(changed.node(norm).attrs.momentum, 0.5);

  runtime::Executor usual(g, executable(g, checkpoint_all_schedule(g)));
  runtime::Executor faster(changed, executable(changed, checkpoint_all_schedule(changed)));
  const Batch b = synthetic_batch(usual, 5);
  usual.train_step(b.inputs, b.labels);
  faster.train_step(b.inputs, b.labels);
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    if (g.node(v).op != OpKind::BatchNorm2d) continue;
    const auto a = usual.parameters().values(v), c = faster.parameters().values(v);
    const std::size_t channels = a.size() / 4;
    for (std::size_t i = 2 * channels; i < 3 * channels; ++i) {  // the running means
      if (v == norm) {
        EXPECT_NEAR(c[i], 5 * a[i], 1e-5 * std::abs(5 * a[i]) + 1e-12) << "running mean " << i;
      } else {
        EXPECT_EQ(std::memcmp(&a[i], &c[i], sizeof(float)), 0) << "norm " << v << ", running mean " << i;
      }
    }
  }
}

// Evaluation: the forward part of the plan in inference mode, changing nothing.

// Everything a step may change.
struct ModelState {
  std::vector<float> values, gradients, optimizer_state;  // values hold the running statistics
  std::uint64_t steps = 0;
};

ModelState model_state(const runtime::Executor& e) {
  const auto& p = e.parameters();
  return {{p.all_values().begin(), p.all_values().end()},
          {p.all_gradients().begin(), p.all_gradients().end()},
          {p.optimizer_state().begin(), p.optimizer_state().end()},
          e.steps_done()};
}

void expect_unchanged(const ModelState& before, const runtime::Executor& e, const std::string& what) {
  const ModelState after = model_state(e);
  EXPECT_TRUE(same_bits(before.values, after.values)) << what << ": parameters or running statistics changed";
  EXPECT_TRUE(same_bits(before.gradients, after.gradients)) << what << ": gradients changed";
  EXPECT_TRUE(same_bits(before.optimizer_state, after.optimizer_state)) << what << ": optimizer state changed";
  EXPECT_EQ(before.steps, after.steps) << what << ": the step counter moved";
}

bool same_loss(const runtime::StepResult& a, const runtime::StepResult& b) {
  return std::memcmp(&a.loss, &b.loss, sizeof(float)) == 0 && a.correct == b.correct && a.rows == b.rows;
}

// Instructions of `kind` before the loss is first computed: those evaluate runs.
std::size_t count_in_forward(const Graph& g, const Plan& p, InstrKind kind) {
  std::size_t n = 0;
  for (const Instruction& i : p.instructions) {
    if (i.kind == InstrKind::Compute && i.node == g.loss()) break;
    n += i.kind == kind;
  }
  return n;
}

// After an Adam step (running statistics and moments off their initial values), two
// evaluations of another batch: their result, and the bytes they paged out.
std::pair<runtime::StepResult, std::size_t> evaluate_after_a_step(const Graph& g, LoweredPlan plan,
                                                                  const std::string& what) {
  runtime::ExecutorOptions o;
  o.optimizer.kind = Optimizer::Adam;
  o.optimizer.learning_rate = 1e-3f;
  runtime::Executor e(g, std::move(plan), o);
  const Batch trained = synthetic_batch(e, 1), evaluated = synthetic_batch(e, 2);
  e.train_step(trained.inputs, trained.labels);
  const ModelState before = model_state(e);
  const std::size_t paged_out = e.pager().bytes_paged_out();
  const runtime::StepResult first = e.evaluate(evaluated.inputs, evaluated.labels);
  const runtime::StepResult again = e.evaluate(evaluated.inputs, evaluated.labels);
  expect_unchanged(before, e, what);
  EXPECT_TRUE(same_loss(first, again)) << what << ": " << first.loss << " then " << again.loss;
  EXPECT_EQ(first.rows, 2) << what;
  return {first, e.pager().bytes_paged_out() - paged_out};
}

TEST(Executor, EvaluationChangesNoParameterStatisticOptimizerStateOrStepCount) {
  // resnet18_cifar has batch norms; the solver's plan at 60% pages out in the forward.
  const Graph g = training_graph("resnet18_cifar", 2);
  const LoweredPlan paging = executable(g, poet_heuristic(g, 0.6));
  ASSERT_GT(count_in_forward(g, paging.plan, InstrKind::PageOut), 0u);
  const auto [all, all_bytes] = evaluate_after_a_step(g, executable(g, checkpoint_all_schedule(g)), "checkpoint-all");
  const auto [paged, paged_bytes] = evaluate_after_a_step(g, paging, "paging");
  EXPECT_EQ(all_bytes, 0u);
  // Its forward pages nothing back in: evaluation writes none of the copies the backward
  // reads (it wrote them all, for nothing, before).
  EXPECT_EQ(count_in_forward(g, paging.plan, InstrKind::PageIn), 0u);
  EXPECT_EQ(paged_bytes, 0u);
  EXPECT_TRUE(same_loss(all, paged)) << all.loss << " vs " << paged.loss;
}

// A copy the forward reads back is still written in evaluation: the input paged out and
// in again before conv1 reads it.
TEST(Executor, EvaluationPagesOutWhatTheForwardReadsBack) {
  const Graph g = training_graph("lenet5", 4);
  Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  const auto after_input = std::next(plan.instructions.begin());
  ASSERT_EQ(plan.instructions.front(), (Instruction{InstrKind::Compute, 0}));
  plan.instructions.insert(after_input, {{InstrKind::PageOut, 0}, {InstrKind::Free, 0}, {InstrKind::PageIn, 0}});
  runtime::Executor e(g, lower(g, test_costs(g), plan, {.plan_transfers = false}));
  runtime::Executor all(g, executable(g, checkpoint_all_schedule(g)));
  const Batch b = synthetic_batch(e, 1);
  EXPECT_TRUE(same_loss(all.evaluate(b.inputs, b.labels), e.evaluate(b.inputs, b.labels)));
  EXPECT_EQ(e.pager().bytes_paged_out(), static_cast<std::size_t>(g.node(0).bytes));
  EXPECT_EQ(e.pager().bytes_paged_in(), static_cast<std::size_t>(g.node(0).bytes));
}

// Without batch norm or dropout, inference computes what training does: evaluate gives
// the loss and predictions of the train_step that follows it, bit for bit.
TEST(Executor, EvaluationWithoutBatchNormOrDropoutIsTheStepsForwardPass) {
  const Graph g = training_graph("lenet5", 4);
  for (const auto& [what, s] : {std::pair<std::string, Schedule>{"checkpoint-all", checkpoint_all_schedule(g)},
                                {"chen", chen_sqrt_schedule(g)}}) {
    runtime::Executor e(g, executable(g, s));
    for (const std::uint64_t seed : {1u, 2u}) {
      const Batch b = synthetic_batch(e, seed);
      const runtime::StepResult evaluated = e.evaluate(b.inputs, b.labels);
      const runtime::StepResult trained = e.train_step(b.inputs, b.labels);
      EXPECT_TRUE(same_loss(evaluated, trained)) << what << ": " << evaluated.loss << " vs " << trained.loss;
    }
  }
}

// input [4, 3, 2, 2] -> dropout 0.5 -> batch norm -> global average pool -> loss [4, 3]
Graph dropout_norm_graph() {
  Graph f("dropout_norm");
  const NodeId x = add_forward_node(f, "input", OpKind::Input, {4, 3, 2, 2}, {});
  const NodeId d = add_forward_node(f, "dropout", OpKind::Dropout, {4, 3, 2, 2}, {x});
  const NodeId bn = add_forward_node(f, "bn", OpKind::BatchNorm2d, {4, 3, 2, 2}, {d}, 4 * 3);
  const NodeId pool = add_forward_node(f, "pool", OpKind::GlobalAvgPool, {4, 3}, {bn});
  add_forward_node(f, "loss", OpKind::SoftmaxCrossEntropy, {4, 3}, {pool}, 0, Role::Loss);
  return build_autodiff_backward(f);
}

// The loss worked out by hand in double: every element kept, normalized per channel c by
// gamma (x - running mean) / sqrt(running variance + 1e-5) + beta, averaged per channel.
double inference_loss(const Batch& b, std::span<const float> norm) {
  constexpr int kRows = 4, kChannels = 3, kSpatial = 4;
  double loss = 0;
  for (int n = 0; n < kRows; ++n) {
    double logits[kChannels], sum_exp = 0;
    for (int c = 0; c < kChannels; ++c) {
      const double gamma = norm[c], beta = norm[3 + c], mean = norm[6 + c], var = norm[9 + c];
      logits[c] = 0;
      for (int i = 0; i < kSpatial; ++i)
        logits[c] += gamma * (b.inputs[static_cast<std::size_t>((n * kChannels + c) * kSpatial + i)] - mean) /
                         std::sqrt(var + 1e-5) + beta;
      logits[c] /= kSpatial;
      sum_exp += std::exp(logits[c]);
    }
    loss += std::log(sum_exp) - logits[b.labels[static_cast<std::size_t>(n)]];
  }
  return loss / kRows;
}

TEST(Executor, EvaluationNormalizesWithTheRunningStatisticsAndDropsNothing) {
  const Graph g = dropout_norm_graph();
  NodeId norm = 0;
  while (g.node(norm).op != OpKind::BatchNorm2d) ++norm;
  runtime::Executor e(g, executable(g, checkpoint_all_schedule(g)));
  // gamma, beta, running mean and running variance of the three channels, none the default.
  const std::vector<float> statistics = {2.0f, 1.0f, 0.5f, 0.1f, 0.0f, -0.3f, 0.5f, -1.0f, 2.0f, 4.0f, 0.25f, 9.0f};
  std::ranges::copy(statistics, e.parameters().values(norm).begin());
  const Batch b = synthetic_batch(e, 4);
  const double expected = inference_loss(b, statistics);
  EXPECT_NEAR(e.evaluate(b.inputs, b.labels).loss, expected, 1e-5);
  // Training normalizes with the batch's statistics and drops about half the elements.
  EXPECT_GT(std::abs(e.train_step(b.inputs, b.labels).loss - expected), 1e-3);
}

TEST(Executor, EvaluationErrorsLeaveTheModelUnchanged) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const LoweredPlan paging = executable(g, poet_heuristic(g, 0.6));
  ASSERT_GE(count_in_forward(g, paging.plan, InstrKind::PageOut), 2u);
  FailingPager pager(2, InstrKind::PageOut);
  runtime::ExecutorOptions o;
  o.pager = &pager;
  runtime::Executor e(g, paging, o);
  Batch b = synthetic_batch(e, 1);
  const ModelState before = model_state(e);
  // Evaluation starts none of the forward's page-outs (nothing before the loss reads them
  // back), so the pager's fault does not reach it; a training step meets it.
  runtime::Executor all(g, executable(g, checkpoint_all_schedule(g)));
  EXPECT_TRUE(same_loss(all.evaluate(b.inputs, b.labels), e.evaluate(b.inputs, b.labels)));
  expect_unchanged(before, e, "evaluation");
  EXPECT_THROW(e.train_step(b.inputs, b.labels), PagerError);
  b.labels[0] = 10;
  EXPECT_THROW(e.evaluate(b.inputs, b.labels), InputError);
  EXPECT_THROW(e.evaluate(std::span(b.inputs).first(b.inputs.size() - 1), b.labels), InputError);
  expect_unchanged(before, e, "bad batch");
}

}  // namespace
}  // namespace poet::testing
