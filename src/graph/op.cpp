// Operator and role names. The operators' names live in the operator table (op_table.h).
#include "poet/graph/op.h"

#include <array>
#include <utility>

#include "poet/graph/op_table.h"

namespace poet {
namespace {

constexpr std::array<std::pair<Role, std::string_view>, 3> kRoles{
    std::pair{Role::Forward, "forward"}, std::pair{Role::Loss, "loss"},
    std::pair{Role::Backward, "backward"}};

// The table's entry, or null for a value outside the enumeration (a corrupted byte).
const OpDef* entry(OpKind op) {
  const auto k = static_cast<std::size_t>(op);
  return k < op_table().size() ? &op_table()[k] : nullptr;
}

}  // namespace

std::string_view op_name(OpKind op) { return entry(op) ? entry(op)->name : "unknown"; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const OpDef& d : op_table())
    if (d.name == name) return d.op;
  return std::nullopt;
}

std::string all_op_names() {
  std::string names;
  for (const OpDef& d : op_table()) {
    if (!names.empty()) names += ", ";
    names += d.name;
  }
  return names;
}

std::string_view reference_class_name(OpKind op) { return entry(op) ? entry(op)->reference_class : ""; }

std::string_view role_name(Role role) {
  for (const auto& [r, name] : kRoles)
    if (r == role) return name;
  return "unknown";
}

std::optional<Role> role_from_name(std::string_view name) {
  for (const auto& [r, n] : kRoles)
    if (n == name) return r;
  return std::nullopt;
}

}  // namespace poet
