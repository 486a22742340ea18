// POFO's model (pofo.h): played out directly, and optimized by dynamic programming over
// the chain's checkpoints (the activations not dropped) from left to right.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "poet/baselines/pofo.h"
#include "poet/util/error.h"

namespace poet {
namespace {

void check_chain(const PofoChain& c) {
  const std::size_t n = c.size.size();
  POET_CHECK(n >= 2 && c.forward_s.size() == n && c.backward_s.size() == n && c.gradient.size() == n &&
                 c.transfer_s.size() == n && c.reads_output.size() == n,
             "pofo: chain vectors of different lengths");
}

// The compute that hides the offload of x_c, whose segment ends at checkpoint d: the
// forward after x_c's forward read, and the backward of the steps after d.
double hiding_window(const PofoChain& chain, int c, int d) {
  double window = 0;
  for (int k = c + 2; k <= chain.steps(); ++k) window += chain.forward_s[k];
  for (int k = d + 1; k <= chain.steps(); ++k) window += chain.backward_s[k];
  return window;
}

double exposed_transfer(const PofoChain& chain, int c, int d) {
  return std::max(0.0, chain.transfer_s[c] - hiding_window(chain, c, d));
}

}  // namespace

PofoEvaluation pofo_evaluate(const PofoChain& chain, const std::vector<PofoFate>& fate) {
  check_chain(chain);
  const int L = chain.steps();
  if (static_cast<int>(fate.size()) != L + 1 || fate[0] != PofoFate::Keep || fate[L] != PofoFate::Keep)
    throw InputError(fmt::format("pofo: {} fates for a chain of {} steps; x_0 and x_L must be kept", fate.size(), L));
  const auto& a = chain.size;
  const auto next_checkpoint = [&](int k) {
    int d = k + 1;
    while (fate[d] == PofoFate::Drop) ++d;
    return d;
  };
  PofoEvaluation e;
  for (int k = 1; k <= L; ++k) e.time_s += chain.forward_s[k] + chain.backward_s[k];
  for (int k = 1; k < L; ++k) {
    if (fate[k] == PofoFate::Drop) e.time_s += chain.forward_s[k];
    if (fate[k] == PofoFate::Offload) e.time_s += exposed_transfer(chain, k, next_checkpoint(k));
  }

  std::vector<bool> in_ram(L + 1, false);
  std::int64_t used = 0;
  const auto bring = [&](int k) {
    in_ram[k] = true;
    used += a[k];
  };
  const auto drop = [&](int k) {
    in_ram[k] = false;
    used -= a[k];
  };
  bring(0);
  e.peak = used;
  for (int k = 1; k <= L; ++k) {
    e.peak = std::max(e.peak, used + a[k]);
    bring(k);
    if (k - 1 > 0 && fate[k - 1] != PofoFate::Keep) drop(k - 1);
  }
  for (int k = L; k >= 1; --k) {
    if (in_ram[k] && !chain.reads_output[k]) drop(k);  // its last reader was step k + 1
    if (!in_ram[k - 1]) {
      if (fate[k - 1] == PofoFate::Offload) {
        bring(k - 1);
      } else {
        int c = k - 2;
        while (fate[c] == PofoFate::Drop) --c;
        if (!in_ram[c]) bring(c);  // offloaded: paged in to recompute from
        for (int j = c + 1; j < k; ++j) {
          e.peak = std::max(e.peak, used + a[j]);
          bring(j);
        }
      }
    }
    e.peak = std::max(e.peak, used + chain.gradient[k]);
    if (in_ram[k]) drop(k);
  }
  return e;
}

std::optional<PofoSolution> pofo_optimum(const PofoChain& chain, std::int64_t memory) {
  check_chain(chain);
  const int L = chain.steps();
  const auto& a = chain.size;
  std::int64_t total = 0;
  for (std::int64_t s : a) total += s;
  // State: checkpoint c with fate f (Keep 0, Offload 1) and K = bytes of kept checkpoints
  // before c; value: time beyond the plain forward and backward.
  // Ties in time go to fewer offloads and recomputations: they cost energy the time
  // objective does not see.
  struct Entry {
    double cost = std::numeric_limits<double>::infinity();
    int moves = 0;
    int from = -1, from_fate = 0;
    std::int64_t from_kept = 0;
    bool better_than(const Entry& o) const { return cost < o.cost || (cost == o.cost && moves < o.moves); }
  };
  // A transition writes only kept bytes within its own peak, so within `memory`.
  const std::int64_t most_kept = std::min(total, std::max<std::int64_t>(memory, 0));
  const auto width = static_cast<std::size_t>(most_kept + 1);
  // One block, not a vector per row: rows of about 128 KiB each came from mmap and were
  // faulted in afresh by every call, which was most of a call's time.
  std::vector<Entry> table(static_cast<std::size_t>(L + 1) * 2 * width);
  const auto dp = [&](int c, int f, std::int64_t kept) -> Entry& {
    const auto row = static_cast<std::size_t>(c) * 2 + static_cast<std::size_t>(f);
    return table[row * width + static_cast<std::size_t>(kept)];
  };
  dp(0, 0, 0).cost = 0;
  Entry best_end;
  for (int c = 0; c < L; ++c)
    for (int f = 0; f < 2; ++f)
      for (std::int64_t kept = 0; kept <= most_kept; ++kept) {
        const Entry& here = dp(c, f, kept);
        if (!std::isfinite(here.cost)) continue;
        const std::int64_t kept_after = kept + (f == 0 ? a[c] : 0);  // kept checkpoints before any d > c
        // Peaks of the transition to d, grown with d: the forward computes c+1 .. d and the
        // backward steps c+1 .. d of segment (c, d). Step k holds x_c .. x_{k-1}, x_k if it
        // reads it, and its working set; the recomputations before it hold less.
        std::int64_t forward_peak = kept + a[c] + a[c + 1], backward_peak = 0, below = a[c];
        double recompute = 0;
        for (int d = c + 1; d <= L; ++d) {
          if (d > c + 1) forward_peak = std::max(forward_peak, kept_after + a[d - 1] + a[d]);
          backward_peak =
              std::max(backward_peak, kept + below + (chain.reads_output[d] ? a[d] : 0) + chain.gradient[d]);
          below += a[d];
          if (d > c + 1) recompute += chain.forward_s[d - 1];
          if (std::max(forward_peak, backward_peak) > memory) break;  // only grows with d
          const double cost = here.cost + recompute + (f == 1 ? exposed_transfer(chain, c, d) : 0.0);
          const int moves = here.moves + (d - c - 1) + f;
          const Entry next{cost, moves, c, f, kept};
          if (d == L) {
            if (next.better_than(best_end)) best_end = next;
            continue;
          }
          for (int next_fate = 0; next_fate < 2; ++next_fate)
            if (next.better_than(dp(d, next_fate, kept_after))) dp(d, next_fate, kept_after) = next;
        }
      }
  if (!std::isfinite(best_end.cost)) return std::nullopt;

  PofoSolution s;
  s.fate.assign(L + 1, PofoFate::Drop);
  s.fate[L] = PofoFate::Keep;
  Entry at = best_end;
  while (at.from >= 0) {
    s.fate[at.from] = at.from_fate == 0 ? PofoFate::Keep : PofoFate::Offload;
    at = dp(at.from, at.from_fate, at.from_kept);
  }
  s.evaluation = pofo_evaluate(chain, s.fate);
  double plain = 0;
  for (int k = 1; k <= L; ++k) plain += chain.forward_s[k] + chain.backward_s[k];
  POET_CHECK(s.evaluation.peak <= memory && std::abs(s.evaluation.time_s - plain - best_end.cost) <=
                                                1e-9 * std::max(1.0, s.evaluation.time_s),
             fmt::format("pofo: the DP's value {} and peak bound {} disagree with its fates' {} and {}",
                         plain + best_end.cost, memory, s.evaluation.time_s, s.evaluation.peak));
  return s;
}

}  // namespace poet
