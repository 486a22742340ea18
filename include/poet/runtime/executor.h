// The training runtime: runs a plan (Compute / PageOut / PageIn / Free, plan.h) on real
// tensors, one instruction at a time, with every activation in one arena of exactly the
// static memory plan's size at the planned offsets, and parameters, gradients and
// optimizer state in their own fixed region (parameters.h).
//
// A step does no heap allocation: the arena, the kernels' scratch and every table the step
// reads are sized at construction. Because the kernels are deterministic and every plan
// computes each value from the same inputs in the same way, a step under any valid plan
// gives gradients and updated weights bit-identical to checkpoint-all's; dropout masks are
// keyed by (seed, step, node) so a recomputation regenerates them, and batch-norm running
// statistics are committed once per step, after the backward, with the weights.
// Evaluation runs the same plan's forward part in inference mode and changes nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/lower/lower.h"
#include "poet/paging/pager.h"
#include "poet/runtime/optimizer.h"
#include "poet/runtime/parameters.h"
#include "poet/simulate/simulator.h"

namespace poet::runtime {

struct ExecutorOptions {
  std::uint64_t seed = 0;  // initial parameters and dropout masks
  OptimizerConfig optimizer;
  // Where paged tensors go; not owned, must outlive the executor. None: an in-memory
  // pager of the executor's own (memory_pager.h).
  Pager* pager = nullptr;
  // Time every Compute instruction (two clock reads each) into compute_seconds(): node
  // times taken inside a real step, with its arena, caches and kernels' scratch as they
  // are, which is what `poet profile` and the step-time predictions are made from.
  bool time_computes = false;
};

struct StepResult {
  float loss = 0;            // mean over the loss's rows
  std::int64_t correct = 0;  // rows whose most probable class is the label
  std::int64_t rows = 0;
};

// Throws InputError naming the node if the runtime cannot train `g` (an op without kernels,
// a shape its operator does not make): what an Executor checks first, for those that run the
// graph elsewhere (the firmware's export).
void check_trainable(const Graph& g);

class Executor {
 public:
  // Checks everything a step relies on before any step runs, and throws InputError (or
  // InvalidPlan for the plan itself) naming the node, instruction or buffer:
  //  - every node has a kernel and fp32 shapes that fit it; exactly one Input node;
  //  - the simulator accepts the plan (it computes every node, reads only tensors in
  //    RAM, pages in only what it paged out, frees only what is resident);
  //  - the buffers are the ones lower() made for the plan, each with an offset inside the
  //    arena, and no two buffers that are live at once in plan order share bytes.
  // Copies the graph and plan; allocates the arena, scratch and fixed region.
  Executor(const Graph& g, LoweredPlan plan, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One training step: the Input node's elements (NCHW, row-major) and one label per row
  // of the loss. Runs the plan, then commits the batch-norm running statistics and
  // applies the optimizer. Throws InputError for inputs of the wrong size or a label out
  // of range, PagerError if a transfer fails; in either case the parameters, running
  // statistics and optimizer state are exactly as before the call.
  StepResult train_step(std::span<const float> inputs, std::span<const std::int32_t> labels);

  // The loss and predictions of a batch in inference mode, as after model.eval(): batch
  // norm normalizes with its running statistics and dropout is the identity. Runs the
  // plan's instructions up to and including the loss's first compute (the forward pass,
  // with its page-outs and frees) and waits for their transfers. Commits no running
  // statistics, runs no optimizer and leaves steps_done as it is, so the parameters,
  // running statistics and optimizer state are bit for bit as before; allocates nothing.
  // Throws as train_step does: InputError for a bad batch, PagerError if a transfer fails.
  StepResult evaluate(std::span<const float> inputs, std::span<const std::int32_t> labels);
  // The loss's input - the model's logits - as the last evaluate() computed them: the
  // forward pass ends with the loss, so they are still in the arena where the loss read
  // them. Valid until the next step or evaluation.
  std::span<const float> evaluated_logits() const;

  // The steps run so far, which key the dropout masks and Adam's bias correction. A run
  // resumed from a checkpoint sets it to the checkpoint's count, so its next step is the
  // one the interrupted run would have taken.
  void set_steps_done(std::uint64_t steps);

  ParameterStore& parameters();
  const ParameterStore& parameters() const;
  const Graph& graph() const;
  std::int64_t arena_bytes() const;
  // The most activation bytes live at once during the steps and evaluations so far, counted as
  // instructions run (not aligned): at most arena_bytes.
  std::int64_t peak_live_bytes() const;
  std::size_t input_elements() const;
  std::size_t label_count() const;
  std::uint64_t steps_done() const;
  const Pager& pager() const;
  // With ExecutorOptions::time_computes, per node: the seconds its Compute instructions
  // took in the last step or evaluation (summed where a plan recomputes it; 0 for nodes
  // it did not compute); empty otherwise.
  std::span<const double> compute_seconds() const;
  // The seconds the last step spent after its instructions: committing the batch-norm
  // running statistics and applying the optimizer. Timed in every step.
  double update_seconds() const;
  // The seconds the last step's or evaluation's instructions waited for transfers: for a
  // page-in still arriving, for a page-out still reading bytes about to be reused, and at
  // the end for the last ones. What the simulator calls stall. Timed in every step.
  double stall_seconds() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace poet::runtime
