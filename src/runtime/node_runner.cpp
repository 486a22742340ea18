#include "poet/runtime/node_runner.h"

#include <algorithm>
#include <vector>

#include "node_kernels.h"
#include "poet/graph/op_table.h"
#include "poet/runtime/parameters.h"
#include "poet/runtime/synthetic_batch.h"
#include "poet/util/error.h"

namespace poet::runtime {

namespace {

// Output floats of a node; a parameter gradient writes into the parameter store instead.
std::size_t output_floats(const Node& n) {
  return n.op == OpKind::GradParam ? 0 : static_cast<std::size_t>(element_count(n.shape));
}

}  // namespace

struct NodeRunner::State {
  NodeId input;  // first: finding it checks the graph before anything is built from it
  Graph graph;
  ParameterStore parameters;
  std::vector<std::vector<float>> outputs;  // per node
  std::vector<std::vector<std::span<float>>> inputs;  // per node, its inputs' outputs
  std::vector<float> scratch, batch;
  std::vector<std::int32_t> labels;
  detail::StepContext ctx;

  State(const Graph& g, std::uint64_t seed) : input(detail::check_trainable(g)), graph(g), parameters(graph, 0, seed) {
    for (const Node& n : graph.nodes()) outputs.emplace_back(output_floats(n));
    for (const Node& n : graph.nodes()) {
      std::vector<std::span<float>>& in = inputs.emplace_back();
      for (NodeId u : n.inputs) in.push_back(outputs[static_cast<std::size_t>(u)]);
    }
    scratch.resize(static_cast<std::size_t>(detail::scratch_elements(graph)));
    SyntheticBatch synthetic = synthetic_batch(graph, seed);
    batch = std::move(synthetic.inputs);
    labels = std::move(synthetic.labels);
    ctx = {.parameters = &parameters, .input_batch = batch, .labels = labels, .scratch = scratch, .seed = seed};
    for (NodeId v = 0; v < static_cast<NodeId>(graph.size()); ++v) run(v);
  }

  void run(NodeId v) {
    const auto i = static_cast<std::size_t>(v);
    detail::run_node(graph, v, outputs[i], inputs[i], ctx);
  }
};

NodeRunner::NodeRunner(const Graph& g, std::uint64_t seed) : state_(std::make_unique<State>(g, seed)) {}
NodeRunner::~NodeRunner() = default;

void NodeRunner::run(NodeId v) {
  POET_CHECK(v >= 0 && static_cast<std::size_t>(v) < state_->graph.size(), "NodeRunner::run: no such node");
  state_->run(v);
}

const Graph& NodeRunner::graph() const { return state_->graph; }

std::int64_t NodeRunner::bytes_held() const {
  std::size_t floats = state_->scratch.size() + state_->batch.size();
  for (const auto& o : state_->outputs) floats += o.size();
  const FixedMemory fixed = state_->parameters.bytes();
  return static_cast<std::int64_t>(floats * sizeof(float)) + fixed.total();
}

}  // namespace poet::runtime
