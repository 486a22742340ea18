// A plan checked and resolved for execution: for each instruction, the arena offset of
// the tensor it writes or moves, and for each compute the offsets of its inputs. Built
// once before any step: the simulator judges the plan (a plan reading a freed tensor fails
// with its words), its buffers must be the ones lower() made, and no two buffers live at
// once in plan order may share bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/runtime/executor.h"

namespace poet::runtime::detail {

struct CompiledInstruction {
  InstrKind kind = InstrKind::Compute;
  NodeId node = -1;
  std::int64_t offset = 0;       // arena byte offset of the node's tensor
  std::int64_t bytes = 0;        // its bytes as the kernels see them (elements x element bytes)
  std::uint32_t first_input = 0; // compute: its inputs at input_offsets[first_input ...]
  // Compute: the input it writes its output over (in place), -1 for none. That input's free
  // then has 0 bytes: they are the output's now.
  NodeId overwrites = -1;
  // Page-out: its copy is paged back in before the loss. Evaluation, which runs the forward
  // alone, starts only these: the others' copies would be read by the backward only.
  bool read_before_loss = false;
};

struct CompiledPlan {
  std::vector<CompiledInstruction> instructions;
  std::vector<std::int64_t> input_offsets;  // per compute, in the node's input order
  // One past the first compute of the loss: the forward pass, which evaluation runs alone.
  std::size_t forward_end = 0;
};

// Bytes of v's output tensor as the kernels read and write it: fp32, or the element type
// its operator stores (mask bytes, indices); 0 for a parameter gradient, which goes to the
// fixed region.
std::int64_t tensor_bytes(const Node& n);

// Throws InvalidPlan naming the instruction for a plan that cannot run, InputError for
// buffers or a memory plan that do not fit it.
CompiledPlan compile_plan(const Graph& g, const LoweredPlan& p);

}  // namespace poet::runtime::detail
