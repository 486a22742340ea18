// An execution plan: the ordered instructions a device runs (the paper's Algorithm 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"

namespace poet {

enum class InstrKind : std::uint8_t { Compute, PageOut, PageIn, Free };

struct Instruction {
  InstrKind kind;
  NodeId node;
  bool operator==(const Instruction&) const = default;
};

struct Plan {
  std::vector<Instruction> instructions;
  bool operator==(const Plan&) const = default;
};

// Compute and page-in put a tensor in a new RAM buffer; page-out and free do not.
inline bool creates_buffer(InstrKind kind) { return kind == InstrKind::Compute || kind == InstrKind::PageIn; }

std::string_view instr_name(InstrKind kind);  // "compute", "pageout", "pagein", "free"
std::string describe(const Instruction& ins, const Graph& g);  // "compute 'conv1' (3)"

// Algorithm 2: stage by stage, node by node: page-in, compute, page-out; then every tensor
// in RAM that no later instruction needs is freed at once (after its page-out, if any).
// A tensor is "needed" while a later compute reads it, a later page-out writes it, or the
// schedule keeps it in RAM into the next stage (S_RAM) - the last only if still used later.
Plan plan_from_schedule(const Schedule& s, const Graph& g);

// Where instruction `instruction` of plan_from_schedule(s, g) comes from in the schedule, for
// a message about a hand-edited file: "M_in[10] (stage 10 pages in node 3)"; for a free,
// "a free after stage 10". Empty if the index is past the plan.
std::string schedule_entry_of(const Schedule& s, const Plan& plan, std::size_t instruction);

// Whether the plan pages anything out (and so needs a pager with storage behind it).
bool plan_pages(const Plan& p);

// The bytes of each tensor the plan pages out, once per tensor: what storage holds when
// every one has its copy there (a tensor paged out again replaces its copy).
std::vector<std::uint64_t> paged_tensor_bytes(const Plan& p, const Graph& g);

// Text form, one instruction a line: "compute 3", "pageout 3", ... (for files and tests).
// `#` starts a comment. The first line plan_to_text writes names the graph and its
// structure_checksum; plan_from_text refuses (InputError) a plan whose first line names
// another structure, and reads a plan without that line as it is.
std::string plan_to_text(const Plan& p, const Graph& g);
Plan plan_from_text(std::string_view text, const Graph& g, std::string_view origin);
Plan load_plan_text(const std::string& path, const Graph& g);

}  // namespace poet
