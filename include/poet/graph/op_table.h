// The operator table: every operator defined once, with what the graph-level modules need
// to know about it - its names, its shape rule, its FLOPs and parameter count, and its
// gradient rule. The model builder makes nodes from the rules, the autodiff backward
// differentiates with the gradient rules, and the runtime binds its kernels to the same
// OpKind (runtime/op_kernels.h), in the manner of TensorFlow Lite Micro's registrations.
//
// Bytes are not a rule: every operator's output holds elements x element_bytes
// (Graph::add), parameter gradients excepted. Elements are the model's number type (fp32)
// except where an operator's element_bytes rule says otherwise (indices, packed bits).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "poet/graph/graph.h"

namespace poet {

// What an operator's rules see when a node is made: the shapes of its inputs, its
// attributes, and the sizes neither of them carries.
struct OpArgs {
  std::span<const Shape> inputs = {};
  OpAttrs attrs = {};
  // Linear and ref_linear_relu: out features; conv2d, conv_transpose2d: out channels; embedding: the vector
  // size; the loss: classes.
  std::int64_t features = 0;
  std::int64_t vocabulary = 0;  // embedding: rows of the table
  // The reference's fused transformer layers, which have no attributes: their sizes.
  std::int64_t seq = 0, hidden = 0, head_dim = 0, heads = 0;
  // The reference implementation's formulas and quirks (the Reference model flavor), where
  // they differ from what the operator really computes.
  bool reference = false;

  // Input i's shape; InputError if the node has fewer inputs.
  const Shape& input(std::size_t i = 0) const;
};

// What a gradient computation reads besides the incoming gradient dY.
struct Needs {
  bool output = false;        // the forward node's own output (ReLU, softmax, loss probabilities)
  bool same_input = false;    // the input whose gradient is taken (GELU, max-pool)
  bool other_inputs = false;  // the other operands (matmul)
  bool all_inputs = false;    // every input (the weight gradient of linear and conv: x)
  bool stats = false;         // the saved normalization statistics (batch / layer norm)
  bool saved = false;         // the compact tensor the operator keeps for it (OpDef::saved)
};

// What an operator's backward keeps instead of a full tensor: a node of operator `op`,
// reading the forward node's output (ReLU: a 1-bit mask), placed directly after it, or its
// input (max-pool: the arg-max indices), placed directly before it (so that no forward
// edge skips over the forward node, which stays a possible checkpoint of a chain). The gradient reads it (Needs::saved) and neither
// the output nor the input, which can then be freed as soon as the forward pass is done.
// The op's rules see the forward node's output shape and attributes: it keeps a little
// per element of the output.
struct SavedForBackward {
  OpKind op = OpKind::Input;
  bool reads_output = false;
};

// How the `autodiff` backward differentiates an operator.
struct GradientRule {
  // For the gradient of an input: a flow-through op passes dY on unchanged (add), so no
  // node is made for it and dY itself is the contribution.
  bool flows_through = false;
  Needs input = {};               // for the gradient of each differentiable input
  Needs params = {};              // for the parameter gradient (ops with parameters)
  int differentiable_slots = -1;  // -1: every input slot; otherwise only slots below this
  // The input's gradient is element by element of dY (dx[k] from dy[k] and what the rule
  // reads at k), so its kernel may write it over dY's own bytes (see in_place_input).
  bool in_place = false;
  // FLOPs of one input gradient and of the parameter gradient, from the forward node and
  // the input's shape.
  double (*input_flops)(const Node& forward, const Node& input) = nullptr;
  double (*param_flops)(const Node& forward, const Node& input) = nullptr;
};

struct OpDef {
  OpKind op = OpKind::Input;
  std::string_view name = {};        // stable lower_snake_case, used in JSON files and messages
  std::string_view reference_class = {};  // the reference implementation's class; empty if it has none
  // The rules a node is made with; null where nodes of the op are not made from inputs
  // (the input, backward nodes). `shape` throws InputError, naming the op, if the inputs
  // do not fit the operator.
  Shape (*shape)(const OpArgs& args) = nullptr;
  double (*flops)(const OpArgs& args, const Shape& output) = nullptr;
  std::int64_t (*params)(const OpArgs& args, const Shape& output) = nullptr;
  // Of a node's parameters, those kept but not trained (batch norm's running statistics:
  // PyTorch's buffers); null: none.
  std::int64_t (*untrained)(const Node& node) = nullptr;
  // The autodiff backward's rule; none: the op cannot be differentiated, and saying so is
  // an error, never a guess.
  std::optional<GradientRule> gradient = {};
  // A norm: the statistics operator it is lowered into for the backward pass, whose output
  // the gradient reads instead of recomputing it.
  std::optional<OpKind> statistics = {};
  // What the backward keeps instead of a full tensor (autodiff adds the node); none: it
  // reads what `gradient` says.
  std::optional<SavedForBackward> saved = {};
  // The output is element by element of input 0 (y[k] from x[k] and the other inputs at
  // k), so its kernel may write it over input 0's own bytes (see in_place_input).
  bool in_place = false;
  // The bytes of one output element, when they are not the model's number (fp32): indices
  // and packed bits (1, whose shape then counts bytes); null: the model's.
  int (*element_bytes)(const OpAttrs& attrs) = nullptr;
};

// Every operator, in OpKind order; op_table()[k].op == OpKind(k).
std::span<const OpDef> op_table();
// The entry of `op`; InternalError for a value outside the enumeration.
const OpDef& op_def(OpKind op);

// The node's output shape, FLOPs and parameters by op's rules (InternalError for an op
// without rules). Throws InputError naming the op if the inputs do not fit it.
struct OpResult {
  Shape shape;
  double flops = 0;
  std::int64_t params = 0;
  int element_bytes = 0;  // 0: the model's number type
};
OpResult apply_rules(OpKind op, const OpArgs& args);
// The node those rules describe: `r` is apply_rules(op, args) for the same args.
Node node_by_rules(std::string name, OpKind op, Role role, OpResult r, std::vector<NodeId> inputs,
                   const OpArgs& args);

// The bytes of one output element the operator of `n` stores: its element_bytes rule, or
// `model` (the model's number type) where it has none.
int stored_element_bytes(const Node& n, int model = 4);

// The parameters the optimizer trains: of a node, and over a graph's forward nodes. What
// PyTorch counts as a model's parameters (its buffers, such as running statistics, not).
std::int64_t trainable_parameters(const Node& n);
std::int64_t trainable_parameters(const Graph& g);

// The vocabulary of the embeddings that read the graph's input straight (the smallest, if
// several), or 0: the input then holds token ids (the bits of int32 values in its 4-byte
// elements), each below it; with 0 it holds the model's numbers.
std::int64_t token_vocabulary(const Graph& g);

// The input whose bytes node v's output may be computed over, in place: input 0 of a
// forward node whose operator says so (OpDef::in_place), dY of an input gradient whose
// rule says so (GradientRule::in_place), or the first part a gradient sum (GradAccumulate)
// adds to, when it has the output's bytes (which the costs copy: the simulator, the MILP,
// the bounds and the heuristics take this one rule). Only a plan that frees it right after
// v, with no page-out of it still to start, takes it (simulator.h); none: v always gets
// bytes of its own.
std::optional<NodeId> in_place_input(const Graph& g, NodeId v);

// "linear, conv2d, ...": the operators that have a gradient rule, in OpKind order.
std::string ops_with_gradient_rules();

}  // namespace poet
