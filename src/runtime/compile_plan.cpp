#include <fmt/format.h>

#include <algorithm>

#include "compiled_plan.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

std::string name(const Graph& g, NodeId v) { return fmt::format("'{}' ({})", g.node(v).name, v); }

struct Residency {
  std::size_t buffer = kNone;  // the RAM copy's buffer, kNone when not in RAM
  std::size_t freed_by = kNone;
  bool on_storage = false;
  bool computed = false;
};

// Index of the buffer each Compute / PageIn instruction creates.
std::vector<std::size_t> buffer_per_instruction(const LoweredPlan& p) {
  std::vector<std::size_t> of(p.plan.instructions.size(), kNone);
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const std::size_t at = p.buffers[b].created_by;
    if (at >= of.size() || of[at] != kNone)
      throw InputError(
          fmt::format("buffer {} (node {}) says instruction {} created it, which the plan of {} "
                      "instructions does not allow; build the buffers with simulate() of this plan",
                      b, p.buffers[b].node, at, of.size()));
    of[at] = b;
  }
  return of;
}

// Plan order is the executor's clock: a buffer holds its bytes from the instruction that
// creates it through the one that frees it. Buffers whose bytes meet must not overlap in
// that clock, or a step would overwrite a tensor still to be read.
void check_no_shared_bytes_while_live(const Graph& g, const LoweredPlan& p) {
  struct Span {
    std::int64_t begin, end;
    std::size_t first, last, buffer;
  };
  std::vector<Span> spans;
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const BufferLife& life = p.buffers[b];
    const std::int64_t bytes = tensor_bytes(g.node(life.node));
    if (bytes == 0) continue;
    spans.push_back({p.memory.offsets[b], p.memory.offsets[b] + bytes, life.created_by, life.released_by, b});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size() && spans[j].first <= spans[i].last; ++j) {
      const Span &a = spans[i], &b = spans[j];
      if (a.begin < b.end && b.begin < a.end)
        throw InputError(fmt::format(
            "the memory plan puts buffers {} (node {}, bytes [{}, {})) and {} (node {}, bytes [{}, {})) in shared "
            "bytes, but in plan order both are live at instruction {}; the executor runs instructions in plan "
            "order, so plan the arena from buffers whose lifetimes follow it",
            a.buffer, p.buffers[a.buffer].node, a.begin, a.end, b.buffer, p.buffers[b.buffer].node, b.begin, b.end,
            b.first));
    }
}

}  // namespace

std::int64_t tensor_bytes(const Node& n) {
  return n.op == OpKind::GradParam ? 0 : element_count(n.shape) * static_cast<std::int64_t>(sizeof(float));
}

CompiledPlan compile_plan(const Graph& g, const LoweredPlan& p) {
  const auto& ins = p.plan.instructions;
  if (p.memory.offsets.size() != p.buffers.size())
    throw InputError(fmt::format("the memory plan has {} offsets for {} buffers; build it from these buffers",
                                 p.memory.offsets.size(), p.buffers.size()));
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const BufferLife& life = p.buffers[b];
    if (life.node < 0 || static_cast<std::size_t>(life.node) >= g.size())
      throw InputError(
          fmt::format("buffer {} belongs to node {}, which graph '{}' does not have", b, life.node, g.name()));
    const std::int64_t bytes = tensor_bytes(g.node(life.node)), offset = p.memory.offsets[b];
    if (life.bytes < bytes || offset < 0 || offset % static_cast<std::int64_t>(sizeof(float)) != 0 ||
        (bytes > 0 && offset + bytes > p.memory.arena_bytes))
      throw InputError(
          fmt::format("buffer {} of node {} ({} bytes at offset {}) does not hold the {} bytes of its "
                      "tensor inside the {}-byte arena; plan the memory for this graph's buffers",
                      b, name(g, life.node), life.bytes, offset, bytes, p.memory.arena_bytes));
  }
  const std::vector<std::size_t> created = buffer_per_instruction(p);

  CompiledPlan out;
  out.instructions.reserve(ins.size());
  std::vector<std::pair<std::size_t, std::size_t>> frees;  // (instruction, buffer), checked after the walk
  std::vector<Residency> state(g.size());
  const NodeId loss = g.loss();
  auto invalid = [&](std::size_t i, const std::string& why) {
    throw InvalidPlan(fmt::format("instruction {} ({}): {}; the executor runs only plans the simulator accepts", i,
                                  describe(ins[i], g), why));
  };
  auto absent = [&](NodeId v) {
    const Residency& s = state[v];
    if (!s.computed) return std::string("it has not been computed yet");
    if (s.freed_by != kNone) return fmt::format("freed by instruction {}", s.freed_by);
    return std::string("it is not resident");
  };
  auto take_buffer = [&](std::size_t i, NodeId v) {
    const std::size_t b = created[i];
    if (b == kNone || p.buffers[b].node != v)
      throw InputError(
          fmt::format("instruction {} ({}) makes a RAM copy, but no buffer of the memory plan belongs "
                      "to it; the buffers and memory plan must come from simulate() of this plan",
                      i, describe(ins[i], g)));
    state[v].buffer = b;
    state[v].freed_by = kNone;
    return p.memory.offsets[b];
  };

  for (std::size_t i = 0; i < ins.size(); ++i) {
    const NodeId v = ins[i].node;
    if (v < 0 || static_cast<std::size_t>(v) >= g.size())
      throw InvalidPlan(fmt::format("instruction {}: node {} is not in graph '{}'", i, v, g.name()));
    CompiledInstruction c{ins[i].kind, v, 0, tensor_bytes(g.node(v)), 0};
    Residency& s = state[v];
    switch (ins[i].kind) {
      case InstrKind::Compute: {
        c.first_input = static_cast<std::uint32_t>(out.input_offsets.size());
        for (NodeId u : g.node(v).inputs) {
          if (state[u].buffer == kNone) invalid(i, fmt::format("input {} is not in RAM: {}", name(g, u), absent(u)));
          out.input_offsets.push_back(p.memory.offsets[state[u].buffer]);
        }
        if (s.buffer != kNone) invalid(i, fmt::format("{} is already in RAM", name(g, v)));
        c.offset = take_buffer(i, v);
        s.computed = true;
        if (v == loss && out.forward_end == 0) out.forward_end = i + 1;
        break;
      }
      case InstrKind::PageOut:
        if (s.buffer == kNone) invalid(i, fmt::format("{} is not in RAM: {}", name(g, v), absent(v)));
        c.offset = p.memory.offsets[s.buffer];
        s.on_storage = true;
        break;
      case InstrKind::PageIn:
        if (!s.on_storage) invalid(i, fmt::format("{} was never paged out", name(g, v)));
        if (s.buffer != kNone) invalid(i, fmt::format("{} is already in RAM", name(g, v)));
        c.offset = take_buffer(i, v);
        break;
      case InstrKind::Free:
        if (s.buffer == kNone) invalid(i, fmt::format("{} is not in RAM: {}", name(g, v), absent(v)));
        c.offset = p.memory.offsets[s.buffer];
        frees.push_back({i, s.buffer});
        s.buffer = kNone;
        s.freed_by = i;
        break;
    }
    out.instructions.push_back(c);
  }
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (!state[v].computed)
      throw InvalidPlan(
          fmt::format("the plan never computes {}; every node of the training graph must be computed", name(g, v)));
  // The plan's own faults are reported first (above); now that it is sound, its buffers
  // must be the ones simulate() made for it.
  for (const auto& [i, b] : frees)
    if (p.buffers[b].released_by != i)
      throw InputError(
          fmt::format("instruction {} ({}) frees buffer {}, which the buffers say instruction {} "
                      "releases; the buffers must come from simulate() of this plan",
                      i, describe(ins[i], g), b, p.buffers[b].released_by));
  check_no_shared_bytes_while_live(g, p);
  return out;
}

}  // namespace poet::runtime::detail
