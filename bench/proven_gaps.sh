#!/usr/bin/env bash
# The proven gap on the instances of issue 13: for each, the schedule poet returns, the best
# lower bound it proves, which bound that is, and the gap between them, as a Markdown table.
# Usage: bench/proven_gaps.sh [seconds per solve, default 60] [extra `poet solve` flags...]
# e.g. `bench/proven_gaps.sh 60` (the full solve) or `bench/proven_gaps.sh 60 --heuristic`
# (the starts and the bound alone). Needs build/poet and python3 (to read the JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
instances=(
  "resnet18 m4 50%" "resnet18 a72 50%" "transformer m4 70%" "vgg16 m4 70%" "vgg16_cifar m4 70%"
  "resnet18_cifar m4 50%" "mobilenet_v2 a72 50%" "resnet50 m4 50%" "bert m4 50%"
)
echo "| instance | status | energy | bound | bound from | gap | solve time |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for instance in "${instances[@]}"; do
  read -r model platform budget <<<"$instance"
  build/poet solve -m "$model" -p "$platform" --ram-budget "$budget" --time-limit "$seconds" --json "$@" 2>/dev/null |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
status, energy, bound, source = d["status"], d["simulation"]["total_energy_j"], d["best_bound"], d["bound_source"]
gap, seconds = 100 * d["gap"], d["solve_time_s"]
print(f"| {sys.argv[1]} | {status} | {energy:.6g} J | {bound:.6g} J | {source} | {gap:.2f}% | {seconds:.1f} s |")' "$instance"
done
