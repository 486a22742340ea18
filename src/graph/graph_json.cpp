#include "poet/graph/graph_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"

namespace poet {
namespace {

using nlohmann::json;

// Names appear in every message about a node; no real layer name is longer.
constexpr std::size_t kMaxNameLength = 200;

// The fields a graph file and its nodes may have (docs/FORMATS.md). Any other is refused: a
// mistyped optional field ("param_cout") would otherwise be dropped and its default taken.
const std::vector<std::string>& graph_fields() {
  static const std::vector<std::string> fields = {"format", "version", "name", "nodes", "fixed_memory"};
  return fields;
}
const std::vector<std::string>& node_fields() {
  // "cost" is what `poet graph --json` adds for a platform; it is not read back.
  static const std::vector<std::string> fields = {"id",    "name",        "op",    "role",   "shape", "element_bytes",
                                                  "bytes", "param_count", "flops", "inputs", "attrs", "grad",
                                                  "cost"};
  return fields;
}

json attrs_to_json(const OpAttrs& a) {
  const OpAttrs d;
  json j = json::object();
  if (a.kernel_h != d.kernel_h) j["kernel_h"] = a.kernel_h;
  if (a.kernel_w != d.kernel_w) j["kernel_w"] = a.kernel_w;
  if (a.stride_h == a.stride_w && a.stride_h != d.stride_h) j["stride"] = a.stride_h;  // both axes
  if (a.stride_h != a.stride_w) {
    j["stride_h"] = a.stride_h;
    j["stride_w"] = a.stride_w;
  }
  if (a.pad_h != d.pad_h) j["pad_h"] = a.pad_h;
  if (a.pad_w != d.pad_w) j["pad_w"] = a.pad_w;
  if (a.ceil_mode != d.ceil_mode) j["ceil_mode"] = a.ceil_mode;
  if (a.groups != d.groups) j["groups"] = a.groups;
  if (a.dilation != d.dilation) j["dilation"] = a.dilation;
  if (a.bias != d.bias) j["bias"] = a.bias;
  if (a.heads != d.heads) j["heads"] = a.heads;
  if (a.transpose_b != d.transpose_b) j["transpose_b"] = a.transpose_b;
  if (a.dropout_p != d.dropout_p) j["dropout_p"] = a.dropout_p;
  if (a.epsilon != d.epsilon) j["epsilon"] = a.epsilon;
  if (a.momentum != d.momentum) j["momentum"] = a.momentum;
  if (a.affine != d.affine) j["affine"] = a.affine;
  if (a.dims != d.dims) j["dims"] = a.dims;
  if (a.axis != d.axis) j["axis"] = a.axis;
  if (a.begin != d.begin) j["begin"] = a.begin;
  if (a.end != d.end) j["end"] = a.end;
  if (a.scale != d.scale) j["scale"] = a.scale;
  if (a.shift != d.shift) j["shift"] = a.shift;
  return j;
}

// Reads the fields of one node, naming the node and field in every error.
class NodeReader {
 public:
  NodeReader(const json& j, std::size_t index, std::string_view origin) : j_(j), index_(index), origin_(origin) {}

  [[noreturn]] void fail(const std::string& what) const {
    const std::string name = j_.is_object() && j_.contains("name") && j_["name"].is_string()
                                 ? fmt::format(" '{}'", text_excerpt(j_["name"].get<std::string>()))
                                 : "";
    throw InputError(fmt::format("graph '{}': node {}{}: {}", origin_, index_, name, what));
  }

  const json& field(const char* key) const {
    if (!j_.contains(key)) fail(fmt::format("missing field \"{}\"", key));
    return j_[key];
  }

  std::string string(const char* key) const {
    const json& v = field(key);
    if (!v.is_string()) fail(fmt::format("\"{}\" must be a string, not {}", key, json_excerpt(v)));
    return v.get<std::string>();
  }

  double number(const char* key) const {
    const json& v = field(key);
    if (!v.is_number()) fail(fmt::format("\"{}\" must be a number, not {}", key, json_excerpt(v)));
    return v.get<double>();
  }

  // An integer in [lo, hi]; the range check comes before any narrowing.
  std::int64_t integer(const json& v, const std::string& key, std::int64_t lo, std::int64_t hi) const {
    if (!v.is_number_integer()) fail(fmt::format("\"{}\" must be an integer, not {}", key, json_excerpt(v)));
    const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                                             : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
    if (!fits) fail(fmt::format("\"{}\" is {}; it must be {} to {}", key, json_excerpt(v), lo, hi));
    return v.get<std::int64_t>();
  }
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const {
    return integer(field(key), key, lo, hi);
  }

  std::vector<std::int64_t> integers(const char* key, std::int64_t lo, std::int64_t hi, std::size_t max_count) const {
    const json& v = field(key);
    if (!v.is_array()) fail(fmt::format("\"{}\" must be an array of integers, not {}", key, json_excerpt(v)));
    if (v.size() > max_count)
      fail(fmt::format("\"{}\" has {} entries; at most {} are allowed", key, v.size(), max_count));
    std::vector<std::int64_t> out;
    for (std::size_t k = 0; k < v.size(); ++k) out.push_back(integer(v[k], fmt::format("{}[{}]", key, k), lo, hi));
    return out;
  }

  bool has(const char* key) const { return j_.contains(key); }

 private:
  const json& j_;
  std::size_t index_;
  std::string_view origin_;
};

OpAttrs attrs_from_json(const json& j, const NodeReader& r) {
  OpAttrs a;
  if (!j.is_object()) r.fail("\"attrs\" must be an object");
  for (const auto& [key, value] : j.items()) {
    // Kernel sizes, strides, pads, groups and heads: no real layer comes near 2^20.
    // (clang 14 cannot capture structured bindings implicitly.)
    const auto as_int = [&, &key = key, &value = value] {
      return static_cast<int>(r.integer(value, "attrs." + key, 0, 1 << 20));
    };
    if (key == "kernel_h") a.kernel_h = as_int();
    else if (key == "kernel_w") a.kernel_w = as_int();
    else if (key == "stride") a.stride_h = a.stride_w = as_int();
    else if (key == "stride_h") a.stride_h = as_int();
    else if (key == "stride_w") a.stride_w = as_int();
    else if (key == "pad_h") a.pad_h = as_int();
    else if (key == "pad_w") a.pad_w = as_int();
    else if (key == "groups") a.groups = as_int();
    else if (key == "dilation") a.dilation = as_int();
    else if (key == "heads") a.heads = as_int();
    else if (key == "bias" && value.is_boolean()) a.bias = value.get<bool>();
    else if (key == "transpose_b" && value.is_boolean()) a.transpose_b = value.get<bool>();
    else if (key == "ceil_mode" && value.is_boolean()) a.ceil_mode = value.get<bool>();
    else if (key == "affine" && value.is_boolean()) a.affine = value.get<bool>();
    else if (key == "dropout_p" && value.is_number()) {
      a.dropout_p = value.get<double>();
      if (!(a.dropout_p >= 0 && a.dropout_p < 1)) r.fail(fmt::format("attrs.dropout_p is {}; it must be in [0, 1)", a.dropout_p));
    }
    else if (key == "epsilon" && value.is_number()) {
      a.epsilon = value.get<double>();
      if (!(a.epsilon > 0 && a.epsilon < 1)) r.fail(fmt::format("attrs.epsilon is {}; it must be in (0, 1)", a.epsilon));
    }
    else if (key == "momentum" && value.is_number()) {
      a.momentum = value.get<double>();
      if (!(a.momentum >= 0 && a.momentum <= 1)) r.fail(fmt::format("attrs.momentum is {}; it must be in [0, 1]", a.momentum));
    }
    // Transpose's permutation and reshape's target: a rank or a size within any tensor's.
    else if (key == "dims" && value.is_array() && value.size() <= 16) {
      for (std::size_t k = 0; k < value.size(); ++k)
        a.dims.push_back(r.integer(value[k], fmt::format("attrs.dims[{}]", k), 0, kMaxTensorBytes));
    }
    else if (key == "axis") a.axis = static_cast<int>(r.integer(value, "attrs.axis", 0, 16));
    else if (key == "begin") a.begin = r.integer(value, "attrs.begin", 0, kMaxTensorBytes);
    else if (key == "end") a.end = r.integer(value, "attrs.end", 0, kMaxTensorBytes);
    else if (key == "scale" && value.is_number()) {
      a.scale = value.get<double>();
      if (!std::isfinite(a.scale)) r.fail("attrs.scale must be finite");
    }
    else if (key == "shift" && value.is_number()) {
      a.shift = value.get<double>();
      if (!std::isfinite(a.shift)) r.fail("attrs.shift must be finite");
    }
    else r.fail(fmt::format("unknown or mistyped attribute \"{}\"", text_excerpt(key)));
  }
  return a;
}

// Finds a cycle among the nodes' input references (which may point forward in a bad file),
// so that the message can say "cycle" and name it rather than only "not topological".
// Depth-first with an explicit stack: a chain of a million forward references is fine.
std::optional<std::vector<std::size_t>> find_cycle(const std::vector<std::vector<std::int64_t>>& inputs) {
  const std::size_t n = inputs.size();
  std::vector<int> color(n, 0);  // 0 new, 1 on the path, 2 done
  struct Frame {
    std::size_t node, next_input;
  };
  std::vector<Frame> path;
  for (std::size_t root = 0; root < n; ++root) {
    if (color[root] != 0) continue;
    color[root] = 1;
    path.push_back({root, 0});
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next_input == inputs[top.node].size()) {
        color[top.node] = 2;
        path.pop_back();
        continue;
      }
      const auto u = static_cast<std::size_t>(inputs[top.node][top.next_input++]);
      if (color[u] == 1) {  // back to a node on the path: the cycle is the path from u on
        std::vector<std::size_t> cycle;
        auto it = std::find_if(path.begin(), path.end(), [&](const Frame& f) { return f.node == u; });
        for (; it != path.end(); ++it) cycle.push_back(it->node);
        cycle.push_back(u);
        return cycle;
      }
      if (color[u] == 0) {
        color[u] = 1;
        path.push_back({u, 0});
      }
    }
  }
  return std::nullopt;
}

// "fixed_memory" is written for people and other tools; poet computes it from the nodes'
// param_count. One that disagrees means an edited file whose nodes say otherwise.
template <typename Bad>
void check_fixed_memory(const json& written, const FixedMemory& computed, const Bad& bad) {
  const std::vector<std::pair<std::string, std::int64_t>> fields = {{"parameter_bytes", computed.parameter_bytes},
                                                                    {"gradient_bytes", computed.gradient_bytes}};
  if (!written.is_object())
    throw bad(fmt::format("\"fixed_memory\" must be an object, not {}", json_excerpt(written)));
  if (const auto unknown = unknown_field_of(written, {"parameter_bytes", "gradient_bytes"}))
    throw bad("\"fixed_memory\": " + *unknown);
  for (const auto& [key, bytes] : fields)
    if (written.contains(key) && written[key] != bytes)
      throw bad(fmt::format("\"fixed_memory\".\"{}\" is {}, but the nodes' param_count make {} B; poet counts "
                            "the nodes: fix their param_count, or remove \"fixed_memory\"",
                            key, json_excerpt(written[key]), bytes));
}

}  // namespace

json graph_to_json(const Graph& g) {
  json nodes = json::array();
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Node& n = g.node(id);
    json j = {{"id", id},
              {"name", n.name},
              {"op", op_name(n.op)},
              {"role", role_name(n.role)},
              {"shape", n.shape},
              {"element_bytes", n.element_bytes},
              {"bytes", n.bytes},
              {"flops", n.flops},
              {"param_count", n.param_count},
              {"inputs", n.inputs}};
    if (json a = attrs_to_json(n.attrs); !a.empty()) j["attrs"] = std::move(a);
    if (n.role == Role::Backward && n.grad.node >= 0) j["grad"] = {{"node", n.grad.node}, {"slot", n.grad.slot}};
    nodes.push_back(std::move(j));
  }
  const FixedMemory fixed = g.fixed_memory();
  return {{"format", "poet-graph"},
          {"version", 1},
          {"name", g.name()},
          {"nodes", std::move(nodes)},
          {"fixed_memory", {{"parameter_bytes", fixed.parameter_bytes}, {"gradient_bytes", fixed.gradient_bytes}}}};
}

Graph graph_from_json(const json& j, std::string_view origin) {
  const auto bad = [&](const std::string& what) { return InputError(fmt::format("graph '{}': {}", origin, what)); };
  if (!j.is_object() || !j.contains("format") || j["format"] != "poet-graph")
    throw bad("not a poet graph (expected \"format\": \"poet-graph\"; see docs/FORMATS.md)");
  if (const auto problem = version_problem(j, 1)) throw bad(*problem);
  if (!j.contains("nodes")) throw bad("missing \"nodes\" (an array)");
  if (!j["nodes"].is_array()) throw bad(fmt::format("\"nodes\" is {}; it must be an array", json_excerpt(j["nodes"])));
  if (j.contains("name") && (!j["name"].is_string() || j["name"].get<std::string>().size() > kMaxNameLength))
    throw bad(fmt::format("\"name\" must be a string of at most {} characters, not {}", kMaxNameLength,
                          json_excerpt(j["name"])));
  if (const auto unknown = unknown_field_of(j, graph_fields())) throw bad(*unknown);
  const json& nodes = j["nodes"];
  if (nodes.size() > kMaxNodes) throw bad(fmt::format("it has {} nodes; poet plans graphs of up to {}", nodes.size(), kMaxNodes));
  const auto last_id = static_cast<std::int64_t>(nodes.size()) - 1;

  // Read every node first, so that a cycle can be told apart from a mere misordering.
  std::vector<Node> read;
  std::vector<std::vector<std::int64_t>> inputs;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeReader r(nodes[i], i, origin);
    if (!nodes[i].is_object()) r.fail("must be an object");
    if (const auto unknown = unknown_field_of(nodes[i], node_fields())) r.fail(*unknown);
    // Inputs name nodes by position: an "id" that is not the position would mean another node.
    if (r.has("id") && r.integer(nodes[i]["id"], "id", 0, last_id) != static_cast<std::int64_t>(i))
      r.fail(fmt::format("\"id\" is {}, but it is node {} of the list; inputs and \"grad\" name nodes by their "
                         "position, so renumber the ids (or leave them out)",
                         json_excerpt(nodes[i]["id"]), i));
    Node n;
    n.name = r.string("name");
    if (n.name.size() > kMaxNameLength)
      r.fail(fmt::format("\"name\" has {} characters; at most {} are allowed", n.name.size(), kMaxNameLength));
    const std::string op = r.string("op");
    const auto kind = op_from_name(op);
    if (!kind) r.fail(fmt::format("unknown op '{}'; expected one of {}", text_excerpt(op), all_op_names()));
    n.op = *kind;
    const std::string role = r.string("role");
    const auto parsed_role = role_from_name(role);
    if (!parsed_role) r.fail(fmt::format("unknown role '{}'; expected forward, loss or backward", text_excerpt(role)));
    n.role = *parsed_role;
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    // Graph::add checks the sizes against the graph's limits; here only what fits the fields.
    n.shape = r.integers("shape", 0, kMax, 8);
    n.element_bytes = static_cast<int>(r.has("element_bytes") ? r.integer("element_bytes", 1, kMaxElementBytes) : 4);
    n.flops = r.number("flops");
    n.param_count = r.has("param_count") ? r.integer("param_count", 0, kMax) : 0;
    n.bytes = r.has("bytes") ? r.integer("bytes", 0, kMax) : 0;
    if (r.has("attrs")) n.attrs = attrs_from_json(nodes[i]["attrs"], r);
    if (r.has("grad")) {
      const json& gr = nodes[i]["grad"];
      if (!gr.is_object() || !gr.contains("node") || !gr.contains("slot"))
        r.fail("\"grad\" must be {\"node\": <id>, \"slot\": <input slot or -1 for parameters>}");
      n.grad = {static_cast<NodeId>(r.integer(gr["node"], "grad.node", 0, last_id)),
                static_cast<int>(r.integer(gr["slot"], "grad.slot", GradOf::kParams, kMaxInputs - 1))};
    }
    inputs.push_back(r.integers("inputs", std::numeric_limits<std::int64_t>::min(), kMax, kMaxInputs));
    for (std::size_t s = 0; s < inputs.back().size(); ++s) {
      const std::int64_t in = inputs.back()[s];
      if (in < 0 || in > last_id)
        r.fail(fmt::format("input {} is node {}, which does not exist (ids 0..{})", s, in, last_id));
    }
    read.push_back(std::move(n));
  }
  if (const auto cycle = find_cycle(inputs)) {
    std::string path;
    for (std::size_t k = cycle->size(); k-- > 0;)
      path += fmt::format("{}'{}' ({})", path.empty() ? "" : " -> ", read[(*cycle)[k]].name, (*cycle)[k]);
    throw bad(fmt::format("cycle: {}; a training graph must be acyclic", path));
  }
  // Built under the file's name, so that every error names the file; renamed when valid.
  Graph g{std::string(origin)};
  for (std::size_t i = 0; i < read.size(); ++i) {
    for (std::int64_t in : inputs[i]) {
      if (in >= static_cast<std::int64_t>(i))
        throw bad(fmt::format("node {} '{}' uses node {} '{}', which comes after it; list nodes in execution "
                              "(topological) order",
                              i, read[i].name, in, read[static_cast<std::size_t>(in)].name));
      read[i].inputs.push_back(static_cast<NodeId>(in));
    }
    g.add(std::move(read[i]));
  }
  g.validate();
  if (j.contains("fixed_memory")) check_fixed_memory(j["fixed_memory"], g.fixed_memory(), bad);
  if (j.contains("name")) g.set_name(j["name"].get<std::string>());
  return g;
}

Graph load_graph(const std::string& path) {
  const json j = read_json_file(path, "graph");
  return convert_json("graph", path, [&] { return graph_from_json(j, path); });
}

void save_graph(const Graph& g, const std::string& path) {
  write_file_atomically(path, json_text(graph_to_json(g), 1) + "\n");
}

}  // namespace poet
