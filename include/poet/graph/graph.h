// The training graph: a DAG of operators in one fixed topological execution order.
//
// Nodes are stored in execution order; a node's inputs always come before it, so the
// index is both the node's id and its position in the order. Every node has exactly one
// output tensor (its activation, or a gradient), whose size is `bytes`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/graph/op.h"

namespace poet {

using NodeId = std::int32_t;
using Shape = std::vector<std::int64_t>;

// Limits of what a graph may hold: far above any real model's (the zoo's largest tensor is
// 12 MiB, its largest node 7.4 GFLOP), they keep every count within NodeId and every sum of
// bytes exact in int64 and in a double (which the MILP and the simulator use).
inline constexpr std::size_t kMaxNodes = std::size_t{1} << 24;              // 16.7 M nodes
inline constexpr std::size_t kMaxInputs = 256;                              // inputs one node lists
inline constexpr int kMaxInputRepeats = 4;                                  // times one node lists one input
inline constexpr int kMaxElementBytes = 16;                                 // complex128
inline constexpr std::int64_t kMaxTensorBytes = std::int64_t{1} << 48;      // 256 TiB: one tensor's bytes
inline constexpr std::int64_t kMaxGraphBytes = std::int64_t{1} << 52;       // 4 PiB: all tensors + fixed memory
inline constexpr double kMaxNodeFlops = 1e21;                               // one node's work

// The element count if no dimension is negative and the count is at most 2^48
// (kMaxTensorBytes), else none: for shapes a file asks for, before anything multiplies
// them out in int64.
std::optional<std::int64_t> bounded_element_count(const Shape& shape);
std::int64_t element_count(const Shape& shape);
std::string shape_string(const Shape& shape);  // "1x3x32x32"

// Operator attributes; only the ones an op uses are meaningful.
struct OpAttrs {
  int kernel_h = 0, kernel_w = 0;
  int stride_h = 1, stride_w = 1;  // windows: between rows, between columns; slice: stride_h is the step
  int pad_h = 0, pad_w = 0;
  bool ceil_mode = false;  // max-pool: the output size rounds up (a last, partial window)
  int groups = 1;
  int dilation = 1;  // conv: the spacing of the kernel's taps, both axes
  bool bias = true;  // linear / conv: the layer has a bias vector
  int heads = 0;
  bool transpose_b = false;
  double dropout_p = 0.0;
  double epsilon = 1e-5;  // batch and layer norm (and their statistics): var + epsilon; PyTorch's default
  double momentum = 0.1;  // batch norm: running = (1 - momentum) running + momentum batch; PyTorch's default
  bool affine = true;     // norms: scale and shift are learned; false: fixed at 1 and 0 (torch's affine=False)
  std::vector<std::int64_t> dims;  // transpose: the permutation; reshape: the target shape; pad: the pads
  int axis = 0;                    // slice: the axis, and [begin, end) along it, every stride_h-th
  std::int64_t begin = 0, end = 0;
  double scale = 1.0;              // scale: the factor; leaky_relu: the negative slope; elu: alpha
  double shift = 0.0;              // scale: the addend, y = scale x + shift
  bool operator==(const OpAttrs&) const = default;
};

// For a backward node: which forward node it differentiates, and what.
struct GradOf {
  static constexpr int kParams = -1;  // slot value of a parameter gradient
  NodeId node = -1;                   // the forward node
  int slot = 0;                       // input slot of `node`, or kParams
  bool operator==(const GradOf&) const = default;
};

struct Node {
  std::string name;
  OpKind op = OpKind::Input;
  Role role = Role::Forward;
  Shape shape;                  // output shape
  int element_bytes = 4;        // fp32
  std::int64_t bytes = 0;       // output bytes held in activation memory
  double flops = 0.0;           // work of one evaluation
  std::int64_t param_count = 0; // parameters owned by this node (elements)
  std::vector<NodeId> inputs;   // in argument order; may repeat (the reference's quirks)
  OpAttrs attrs;
  GradOf grad;                  // meaningful for Role::Backward only
};

// Memory that stays resident for the whole step, outside the activation budget's
// reach of remat and paging. The reference counts parameters only.
struct FixedMemory {
  std::int64_t parameter_bytes = 0;        // every parameter, batch norm's running statistics included
  std::int64_t gradient_bytes = 0;         // one per trained parameter (op_table.h's trainable_parameters)
  std::int64_t optimizer_state_bytes = 0;  // for the optimizer asked for, per trained parameter
  std::int64_t total() const { return parameter_bytes + gradient_bytes + optimizer_state_bytes; }
};

enum class Optimizer { SGD, Momentum, Adam };

class Graph {
 public:
  // Names (the graph's, each node's) are kept on one line (util/quoting.h's one_line): they
  // come from files of any origin and go into messages, plans and terminals.
  Graph() = default;
  explicit Graph(std::string name) { set_name(std::move(name)); }

  // Appends a node and returns its id. Throws InputError naming the node if an input is
  // not an earlier node (which would break the topological order), or if a size, count or
  // cost is negative, not finite or beyond the limits above. When node.bytes is 0 and the
  // node is not a parameter gradient, bytes default to elements x element_bytes.
  NodeId add(Node node);

  const std::string& name() const { return name_; }
  void set_name(std::string name);
  std::size_t size() const { return nodes_.size(); }
  const Node& node(NodeId id) const;
  const std::vector<Node>& nodes() const { return nodes_; }

  // Full validation, as done on every loaded graph: topological order, indices in range,
  // exactly one loss, backward nodes pointing at forward ones, all bytes within kMaxGraphBytes
  // (add() has checked each node's own figures).
  // Throws InputError naming the offending node or edge.
  void validate() const;

  NodeId loss() const;                       // the single Role::Loss node
  std::size_t edge_count() const;            // counts repeated inputs
  std::vector<std::vector<NodeId>> users() const;  // users[v]: nodes that read v
  bool has_backward() const;
  // A checksum of what a schedule depends on: each node's operator, role and inputs, in
  // order. Names and shapes are left out: a schedule carries over to another batch size,
  // and to the same network under other names.
  std::uint32_t structure_checksum() const;
  // The checksum as schedule and plan files keep it: 8 hex digits.
  std::string structure_checksum_text() const;

  FixedMemory fixed_memory(Optimizer optimizer = Optimizer::SGD) const;
  std::int64_t forward_activation_bytes() const;  // sum over forward and loss nodes
  double total_flops() const;
  // The node whose output and distinct inputs take the most bytes (less the input it may
  // be computed over in place): every schedule holds them at once, so no activation budget
  // below `bytes` can work.
  struct Footprint {
    NodeId node = 0;
    std::int64_t bytes = 0;
  };
  Footprint largest_footprint() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
};

}  // namespace poet
