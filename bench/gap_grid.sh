#!/usr/bin/env bash
# Issue 13's grid: `poet solve` on every combination of models, platforms, budgets and
# deadlines given, one Markdown row each (status, energy, bound and its source, proven gap,
# solve time), then how many rows meet the targets: a proven gap <= 1% (<= 0.1% on the
# chains linear, vgg16, vgg16_cifar), counting "infeasible" (proven) as met.
# Usage: bench/gap_grid.sh SECONDS "MODELS" "PLATFORMS" "BUDGETS" "DEADLINES"
# e.g.   bench/gap_grid.sh 60 "lenet5 resnet18" "m4 a72" "90% 70% 50% 40% 30%" "none 1.2"
# Needs build/poet (or the binary in $POET) and python3 (to read the JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=$1 models=$2 platforms=$3 budgets=$4 deadlines=$5
verdicts=$(mktemp)  # one line per row: met or missed, from the unrounded gap
trap 'rm -f "$verdicts"' EXIT
echo "| model | platform | budget | deadline | status | energy | bound | bound from | gap | solve time |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for model in $models; do
  for platform in $platforms; do
    for budget in $budgets; do
      for deadline in $deadlines; do
        flags=()
        [[ $deadline != none ]] && flags=(--runtime-budget "$deadline")
        "${POET:-build/poet}" solve -m "$model" -p "$platform" --ram-budget "$budget" "${flags[@]}" --time-limit "$seconds" \
          --json 2>/dev/null || true
        echo
      done | python3 -c '
import json, sys
model, platform, budget = sys.argv[1:4]
deadlines = sys.argv[4].split()
target = 0.001 if model in {"linear", "vgg16", "vgg16_cifar"} else 0.01
chunks = [c for c in sys.stdin.read().split("\n\n") if c.strip()]
for deadline, chunk in zip(deadlines, chunks):
    d = json.loads(chunk)
    sim = d.get("simulation") or {}
    status, source, seconds = d["status"], d["bound_source"], d["solve_time_s"]
    energy = "%.6g J" % sim["total_energy_j"] if sim else "-"
    gap = "%.2f%%" % (100 * d["gap"]) if sim else "-"
    bound = "%.6g J" % d["best_bound"] if sim else "-"
    print(f"| {model} | {platform} | {budget} | {deadline} | {status} | {energy} | {bound} | {source} | {gap} | {seconds:.1f} s |")
    met = status == "infeasible" or (bool(sim) and d["gap"] <= target)
    print("met" if met else "missed", file=open(sys.argv[5], "a"))
' "$model" "$platform" "$budget" "$deadlines" "$verdicts"
    done
  done
done
echo
echo "$(grep -c '^met' "$verdicts" || true) of $(wc -l <"$verdicts") rows meet the target gap (1%; 0.1% on chains; a proven infeasible budget counts as met)"
