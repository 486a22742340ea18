// The step loop. Everything it touches was sized in the constructor; the loop itself only
// moves pointers, calls kernels and starts or waits for transfers.
#include "poet/runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <new>

#include "compiled_plan.h"
#include "node_kernels.h"
#include "poet/paging/memory_pager.h"
#include "poet/util/error.h"
#include "poet/util/memory_limit.h"
#include "running_statistics.h"
#include "transfer_tracker.h"

namespace poet::runtime {

// A block boundary (4096 B): a paged tensor at a block offset of the arena then moves
// between it and an O_DIRECT page file without a copy (file_pager_page_file.cpp).
constexpr std::align_val_t kArenaAlignment{4096};

// Outside the anonymous namespace: Executor::State, which has linkage, holds one.
struct ArenaDelete {
  void operator()(std::byte* p) const { ::operator delete[](p, kArenaAlignment); }
};

namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<std::byte[], ArenaDelete> allocate_arena(std::int64_t bytes, const Graph& g) {
  // The parameters, data and code are held already. Past a container's memory limit the
  // kernel would grant the arena and kill the process at its first touch, with no message.
  check_memory_for(static_cast<std::uint64_t>(bytes), fmt::format("training {}'s arena for its activations", g.name()),
                   "lower the batch size (or, to train, the RAM budget: poet then recomputes or pages more)");
  return std::unique_ptr<std::byte[], ArenaDelete>(
      new (kArenaAlignment) std::byte[static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1))]);
}

}  // namespace

struct Executor::State {
  NodeId input;  // first: finding it checks the graph before anything is built from it
  Graph graph;
  LoweredPlan plan;
  ExecutorOptions options;
  detail::CompiledPlan compiled;
  ParameterStore parameters;
  std::unique_ptr<std::byte[], ArenaDelete> arena;
  std::vector<float> scratch;
  std::vector<std::span<float>> input_tensors;  // per compute, its inputs in the arena
  std::size_t logits_tensor = 0;                 // in input_tensors: the loss's first compute's input
  std::unique_ptr<MemoryPager> own_pager;
  Pager* pager;
  detail::TransferTracker transfers;
  detail::RunningStatistics running;
  std::vector<NodeId> batch_norm_owner;  // detail::batch_norm_owners, for inference
  std::size_t input_elements;
  std::int64_t classes;  // of the loss, before label_count, which is computed from it
  std::size_t label_count;
  std::int64_t live_bytes = 0, peak_live_bytes = 0;
  std::uint64_t steps = 0;
  std::vector<double> compute_seconds;  // per node, with options.time_computes
  double update_seconds = 0, stall_seconds = 0;

  State(const Graph& g, LoweredPlan p, ExecutorOptions o)
      : input(detail::check_trainable(g)),
        graph(g),
        plan(std::move(p)),
        options(o),
        compiled(detail::compile_plan(graph, plan)),
        parameters(graph, optimizer_state_per_parameter(o.optimizer.kind), o.seed),
        arena(allocate_arena(plan.memory.arena_bytes, graph)),
        scratch(static_cast<std::size_t>(detail::scratch_elements(graph))),
        own_pager(o.pager ? nullptr : std::make_unique<MemoryPager>(graph.size())),
        pager(o.pager ? o.pager : own_pager.get()),
        transfers(*pager, graph.size()),
        running(graph),
        batch_norm_owner(detail::batch_norm_owners(graph)),
        input_elements(static_cast<std::size_t>(element_count(graph.node(input).shape))),
        classes(graph.node(graph.loss()).shape.back()),
        label_count(static_cast<std::size_t>(element_count(graph.node(graph.loss()).shape) / classes)) {
    validate(options.optimizer);
    if (options.time_computes) compute_seconds.resize(graph.size());
    pager->expect_transfers_per_step(static_cast<std::size_t>(
        std::count_if(compiled.instructions.begin(), compiled.instructions.end(), [](const auto& c) {
          return c.kind == InstrKind::PageOut || c.kind == InstrKind::PageIn;
        })));
    input_tensors.reserve(compiled.input_offsets.size());
    bool loss_seen = false;
    for (const detail::CompiledInstruction& c : compiled.instructions) {
      if (c.kind != InstrKind::Compute) continue;
      const Node& n = graph.node(c.node);
      if (c.node == graph.loss() && !loss_seen) {
        logits_tensor = input_tensors.size();
        loss_seen = true;
      }
      for (std::size_t k = 0; k < n.inputs.size(); ++k)
        input_tensors.push_back(
            tensor(compiled.input_offsets[c.first_input + k], detail::tensor_bytes(graph.node(n.inputs[k]))));
    }
  }

  // Every tensor as floats; one of masks or indices, whose bytes need not be a multiple
  // of 4, rounded up (its kernels view exactly its bytes; offsets are 4-byte aligned).
  std::span<float> tensor(std::int64_t offset, std::int64_t bytes) {
    return {reinterpret_cast<float*>(arena.get() + offset), (static_cast<std::size_t>(bytes) + 3) / sizeof(float)};
  }

  void add_live(std::int64_t bytes) {
    live_bytes += bytes;
    peak_live_bytes = std::max(peak_live_bytes, live_bytes);
  }

  void run(const detail::CompiledInstruction& c, std::size_t& next_input, detail::StepContext& ctx) {
    const NodeId v = c.node;
    const std::span<float> t = tensor(c.offset, c.bytes);
    switch (c.kind) {
      case InstrKind::Compute: {
        const Node& n = graph.node(v);
        const std::span<const std::span<float>> inputs(input_tensors.data() + next_input, n.inputs.size());
        next_input += n.inputs.size();
        for (NodeId u : n.inputs) transfers.before_read(u);
        if (c.overwrites >= 0) {
          transfers.before_overwrite(c.overwrites);
          live_bytes -= c.bytes;  // the input's bytes become the output's
        }
        transfers.claim(c.offset, c.offset + c.bytes);
        if (options.time_computes) {
          const Clock::time_point began = Clock::now();
          detail::run_node(graph, v, t, inputs, ctx);
          compute_seconds[static_cast<std::size_t>(v)] += std::chrono::duration<double>(Clock::now() - began).count();
        } else {
          detail::run_node(graph, v, t, inputs, ctx);
        }
        if (!ctx.inference) running.capture(v, t);
        add_live(c.bytes);
        break;
      }
      case InstrKind::PageOut:
        // Evaluation writes no copy that only the backward would read: no I/O (and no wear
        // of an SD card) for nothing. Its free then releases the bytes at once.
        if (ctx.inference && !c.read_before_loss) break;
        // A page-in of this very copy still arriving ends first: the pager keeps the order.
        pager->start_page_out(v, std::as_bytes(t).first(static_cast<std::size_t>(c.bytes)));
        transfers.started_page_out(v);
        break;
      case InstrKind::PageIn:
        // Queued behind every transfer started before it (the pager keeps the order): the
        // page-out of the copy it reads, and any still touching the bytes it fills.
        pager->start_page_in(v, std::as_writable_bytes(t).first(static_cast<std::size_t>(c.bytes)));
        transfers.started_page_in(v);
        add_live(c.bytes);
        break;
      case InstrKind::Free:
        transfers.released(v, c.offset, c.offset + c.bytes);
        live_bytes -= c.bytes;
        break;
    }
  }

  void check_batch(std::span<const float> inputs, std::span<const std::int32_t> labels) const {
    if (inputs.size() != input_elements)
      throw InputError(fmt::format("the batch has {} input values but input '{}' of shape {} takes {}", inputs.size(),
                                   graph.node(input).name, shape_string(graph.node(input).shape), input_elements));
    if (labels.size() != label_count)
      throw InputError(fmt::format("the batch has {} labels but the loss has {} rows; give one label per row",
                                   labels.size(), label_count));
    for (std::size_t i = 0; i < labels.size(); ++i)
      if (labels[i] < 0 || labels[i] >= classes)
        throw InputError(
            fmt::format("label {} of the batch is {}, outside the {} classes [0, {})", i, labels[i], classes, classes));
  }

  detail::StepContext context(std::span<const float> inputs, std::span<const std::int32_t> labels, bool inference) {
    return {.parameters = &parameters,
            .input_batch = inputs,
            .labels = labels,
            .scratch = scratch,
            .seed = options.seed,
            .step = steps,
            .inference = inference,
            .batch_norm_owner = batch_norm_owner};
  }

  // Runs the first `end` instructions and waits for every transfer they started.
  void run_instructions(std::size_t end, detail::StepContext& ctx) {
    transfers.reset();
    live_bytes = 0;
    std::fill(compute_seconds.begin(), compute_seconds.end(), 0.0);
    std::size_t next_input = 0;
    try {
      for (std::size_t i = 0; i < end; ++i) run(compiled.instructions[i], next_input, ctx);
      const Clock::time_point began = Clock::now();
      pager->wait_all();
      stall_seconds = transfers.waited_s() + std::chrono::duration<double>(Clock::now() - began).count();
    } catch (...) {
      // No transfer may go on touching the arena once the step is abandoned.
      try {
        pager->wait_all();
      } catch (...) {
      }
      throw;
    }
  }

  StepResult result(const detail::StepContext& ctx) const {
    return {ctx.loss, ctx.correct, static_cast<std::int64_t>(label_count)};
  }

  StepResult step(std::span<const float> inputs, std::span<const std::int32_t> labels) {
    check_batch(inputs, labels);
    detail::StepContext ctx = context(inputs, labels, false);
    running.begin_step();
    run_instructions(compiled.instructions.size(), ctx);
    // Only now, with the whole backward done, does the step change the model.
    const Clock::time_point began = Clock::now();
    running.commit(parameters);
    ++steps;
    apply_optimizer(options.optimizer, steps, parameters);
    update_seconds = std::chrono::duration<double>(Clock::now() - began).count();
    return result(ctx);
  }

  // Writes only the arena and the pager's stored copies the forward reads back, which every
  // step rewrites before it reads them: the model and the step counter stay as they are.
  StepResult evaluate(std::span<const float> inputs, std::span<const std::int32_t> labels) {
    check_batch(inputs, labels);
    detail::StepContext ctx = context(inputs, labels, true);
    run_instructions(compiled.forward_end, ctx);
    return result(ctx);
  }
};

void check_trainable(const Graph& g) { detail::check_trainable(g); }

Executor::Executor(const Graph& g, LoweredPlan plan, ExecutorOptions options)
    : state_(std::make_unique<State>(g, std::move(plan), options)) {}
Executor::~Executor() = default;

StepResult Executor::train_step(std::span<const float> inputs, std::span<const std::int32_t> labels) {
  return state_->step(inputs, labels);
}

StepResult Executor::evaluate(std::span<const float> inputs, std::span<const std::int32_t> labels) {
  return state_->evaluate(inputs, labels);
}

std::span<const float> Executor::evaluated_logits() const { return state_->input_tensors.at(state_->logits_tensor); }

void Executor::set_steps_done(std::uint64_t steps) { state_->steps = steps; }

ParameterStore& Executor::parameters() { return state_->parameters; }
const ParameterStore& Executor::parameters() const { return state_->parameters; }
const Graph& Executor::graph() const { return state_->graph; }
std::int64_t Executor::arena_bytes() const { return state_->plan.memory.arena_bytes; }
std::int64_t Executor::peak_live_bytes() const { return state_->peak_live_bytes; }
std::size_t Executor::input_elements() const { return state_->input_elements; }
std::size_t Executor::label_count() const { return state_->label_count; }
std::uint64_t Executor::steps_done() const { return state_->steps; }
const Pager& Executor::pager() const { return *state_->pager; }
std::span<const double> Executor::compute_seconds() const { return state_->compute_seconds; }
double Executor::update_seconds() const { return state_->update_seconds; }
double Executor::stall_seconds() const { return state_->stall_seconds; }

}  // namespace poet::runtime
