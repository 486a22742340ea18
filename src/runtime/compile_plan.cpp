#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "compiled_plan.h"
#include "poet/graph/op_table.h"
#include "poet/plan/memory_plan.h"
#include "poet/simulate/simulator.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {
namespace {

std::string name(const Graph& g, NodeId v) { return fmt::format("'{}' ({})", g.node(v).name, v); }

// The plan's faults are the simulator's to find, with its rules and words: the one state
// machine of residency. Costs play no part in them, so none are given.
SimulationResult judge(const Graph& g, const Plan& plan) {
  GraphCosts none;
  none.nodes.resize(g.size());
  return simulate(g, none, plan);
}

// The buffers and the memory plan must be those lower() made for this plan: the
// simulator's buffers in plan order, one offset each.
void check_buffers_are_the_plans(const Graph& g, const LoweredPlan& p, const SimulationResult& judged) {
  const std::vector<BufferLife> expected = in_plan_order(judged.buffers);
  const auto refuse = [](const std::string& why) {
    throw InputError(why + "; lower() makes the buffers and memory plan of a plan");
  };
  if (p.buffers.size() != expected.size())
    refuse(fmt::format("the plan makes {} RAM copies, but {} buffers are given", expected.size(), p.buffers.size()));
  if (p.memory.offsets.size() != p.buffers.size())
    refuse(fmt::format("the memory plan has {} offsets for {} buffers", p.memory.offsets.size(), p.buffers.size()));
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const BufferLife &got = p.buffers[b], &want = expected[b];
    if (got.node != want.node || got.created_by != want.created_by || got.released_by != want.released_by ||
        got.in_place_of != want.in_place_of)
      refuse(fmt::format("buffer {} is node {} from instruction {} to {}, where the plan makes node {} from "
                         "instruction {} to {}",
                         b, got.node, got.created_by, got.released_by, want.node, want.created_by, want.released_by));
    const std::int64_t bytes = tensor_bytes(g.node(got.node)), offset = p.memory.offsets[b];
    if (got.bytes < bytes || offset < 0 || offset % static_cast<std::int64_t>(sizeof(float)) != 0 ||
        (bytes > 0 && offset + bytes > p.memory.arena_bytes))
      refuse(fmt::format("buffer {} of node {} ({} bytes at offset {}) does not hold its {}-byte fp32 tensor inside "
                         "the {}-byte arena",
                         b, name(g, got.node), got.bytes, offset, bytes, p.memory.arena_bytes));
    if (const auto taken = got.in_place_of;
        taken && !in_place_placement_ok(offset, bytes, p.memory.offsets[*taken],
                                        tensor_bytes(g.node(p.buffers[*taken].node))))
      refuse(fmt::format("buffer {} of node {} is computed in place over buffer {}, but the memory plan puts them "
                         "at offsets {} and {}, neither the same nor apart",
                         b, name(g, got.node), *taken, offset, p.memory.offsets[*taken]));
  }
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
      if (p.buffers[b.buffer].in_place_of == a.buffer) continue;  // b takes a's bytes as a's life ends
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
  return n.op == OpKind::GradParam ? 0 : element_count(n.shape) * stored_element_bytes(n);
}

CompiledPlan compile_plan(const Graph& g, const LoweredPlan& p) {
  check_buffers_are_the_plans(g, p, judge(g, p.plan));
  check_no_shared_bytes_while_live(g, p);

  // The simulator accepted the plan, so each instruction finds the RAM copies it needs:
  // the latest buffer of each node, made in plan order.
  const auto& ins = p.plan.instructions;
  std::vector<std::size_t> made_at(ins.size(), p.buffers.size());  // instruction -> the buffer it makes
  for (std::size_t b = 0; b < p.buffers.size(); ++b) made_at[p.buffers[b].created_by] = b;
  std::vector<std::int64_t> offset_of(g.size(), -1);  // node -> its RAM copy's offset now
  std::vector<char> handed_over(g.size(), 0);          // node -> its bytes went to a compute in place
  CompiledPlan out;
  out.instructions.reserve(ins.size());
  const NodeId loss = g.loss();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const NodeId v = ins[i].node;
    CompiledInstruction c{ins[i].kind, v, 0, tensor_bytes(g.node(v)), 0};
    if (made_at[i] < p.buffers.size()) offset_of[v] = p.memory.offsets[made_at[i]];
    if (c.kind == InstrKind::Compute) {
      if (made_at[i] < p.buffers.size())
        if (const auto taken = p.buffers[made_at[i]].in_place_of) {
          c.overwrites = p.buffers[*taken].node;
          handed_over[static_cast<std::size_t>(c.overwrites)] = 1;
        }
      c.first_input = static_cast<std::uint32_t>(out.input_offsets.size());
      for (NodeId u : g.node(v).inputs) out.input_offsets.push_back(offset_of[u]);
      if (v == loss && out.forward_end == 0) out.forward_end = i + 1;
    }
    c.offset = offset_of[v];
    if (c.kind == InstrKind::Free && std::exchange(handed_over[static_cast<std::size_t>(v)], 0)) c.bytes = 0;
    out.instructions.push_back(c);
  }
  std::vector<std::size_t> last_pageout(g.size(), ins.size());  // node -> its latest page-out so far
  for (std::size_t i = 0; i < out.forward_end; ++i) {
    const auto v = static_cast<std::size_t>(ins[i].node);
    if (ins[i].kind == InstrKind::PageOut) last_pageout[v] = i;
    if (ins[i].kind == InstrKind::PageIn && last_pageout[v] < ins.size())
      out.instructions[last_pageout[v]].read_before_loss = true;
  }
  return out;
}

}  // namespace poet::runtime::detail
