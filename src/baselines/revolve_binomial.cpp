// The abstract reversal: which steps to advance, where to store, when to turn.
#include <fmt/format.h>

#include <algorithm>

#include "poet/baselines/revolve.h"
#include "poet/util/error.h"

namespace poet {

std::int64_t revolve_beta(int slots, int repetitions) {
  if (slots < 0 || repetitions < 0) return 0;
  // C(s + r, s) built up as a product of exact binomials, so no intermediate overflows early.
  std::int64_t value = 1;
  for (int k = 1; k <= std::min(slots, repetitions); ++k) value = value * (slots + repetitions - k + 1) / k;
  return value;
}

std::int64_t revolve_min_forward_steps(int steps, int slots) {
  if (steps < 1 || slots < 1) throw InputError(fmt::format("revolve needs at least 1 step and 1 slot, got {} and {}",
                                                           steps, slots));
  int r = 0;
  while (revolve_beta(slots, r) < steps) ++r;
  return static_cast<std::int64_t>(r) * steps - revolve_beta(slots + 1, r - 1);
}

BinomialReversal::BinomialReversal(int steps, int max_slots) : steps_(steps) {
  if (steps < 1 || max_slots < 1)
    throw InputError(fmt::format("revolve needs at least 1 step and 1 slot, got {} and {}", steps, max_slots));
  // Slots beyond one per step cannot help, so the table stops there.
  const int max_free = std::min(max_slots, steps) - 1;
  cost_.assign(static_cast<std::size_t>(max_free) + 1, std::vector<std::int64_t>(steps + 1, 0));
  split_.assign(cost_.size(), std::vector<int>(steps + 1, 0));
  for (int l = 1; l <= steps; ++l) cost_[0][l] = static_cast<std::int64_t>(l) * (l - 1) / 2;
  for (int c = 1; c <= max_free; ++c)
    for (int l = 2; l <= steps; ++l) {
      std::int64_t best = INT64_MAX;
      for (int k = 1; k < l; ++k) {
        const std::int64_t cost = k + cost_[c - 1][l - k] + cost_[c][k];
        if (cost < best) best = cost, split_[c][l] = k;
      }
      cost_[c][l] = best;
    }
}

std::int64_t BinomialReversal::forward_steps(int slots) const {
  if (slots < 1) throw InputError(fmt::format("revolve needs at least 1 slot, got {}", slots));
  const int free_slots = std::min<int>(slots - 1, static_cast<int>(cost_.size()) - 1);
  return cost_[free_slots][steps_];
}

std::vector<RevolveAction> BinomialReversal::actions(int slots) const {
  if (slots < 1) throw InputError(fmt::format("revolve needs at least 1 slot, got {}", slots));
  std::vector<RevolveAction> out;
  emit(0, steps_, std::min<int>(slots - 1, static_cast<int>(cost_.size()) - 1), out);
  return out;
}

// Reverses steps from+1 .. to, with x_from held and free_slots more checkpoints to use.
void BinomialReversal::emit(int from, int to, int free_slots, std::vector<RevolveAction>& out) const {
  using K = RevolveAction::Kind;
  if (to - from == 1) {
    out.push_back({K::Turn, to});
    return;
  }
  if (free_slots == 0) {
    for (int turn = to; turn > from; --turn) {
      for (int k = from + 1; k < turn; ++k) out.push_back({K::Advance, k});
      out.push_back({K::Turn, turn});
    }
    return;
  }
  const int stored = from + split_[free_slots][to - from];
  for (int k = from + 1; k <= stored; ++k) out.push_back({K::Advance, k});
  out.push_back({K::Store, stored});
  emit(stored, to, free_slots - 1, out);
  out.push_back({K::Release, stored});
  emit(from, stored, free_slots, out);
}

}  // namespace poet
