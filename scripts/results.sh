#!/usr/bin/env bash
# Regenerates the sweeps behind docs/RESULTS.md: every method at every budget for the
# paper's models on the paper's devices, plus the remat/paging ablation. About 40 minutes
# on 2 cores. Usage: scripts/results.sh [output-dir] (default docs/results).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/results}
scripts/build.sh build >/dev/null
for model in resnet18_cifar vgg16_cifar resnet18 bert; do
  # vgg16_cifar's MILP is small enough for CBC, which then takes up to the limit per solve:
  # its ablation would take longer than the rest together.
  ablation=(--ablation-deadlines 1:1.6:0.1 --ablation-budget 60%)
  [[ $model == vgg16_cifar ]] && ablation=()
  for platform in m0 m4 a72 jetsontx2; do
    echo "== $model on $platform"
    build/poet sweep --model "$model" --platform "$platform" --methods all --budgets 30%:100%:10% \
      "${ablation[@]}" --time-limit 60 --jobs 2 -o "$out/$model-$platform"
  done
done
