#!/usr/bin/env bash
# Regenerates the sweeps behind docs/RESULTS.md: every method at every budget for the
# paper's models on the paper's devices, plus the remat/paging ablation. Usage:
# scripts/results.sh [output-dir] (default docs/results).
# It takes hours now (42 minutes on 2026-11-23, when POET's answer on the large graphs was
# its starts): POET's solves (poet, poet_remat, poet_paging) and Checkmate's take their full
# minute wherever they do not prove optimality. Measured 2026-11-26 on 2 cores: the first of
# the 16 sweeps, resnet18_cifar on m0, was at 33 of its 109 tasks after 301 s (its estimate:
# 994 s in all), so about 4.5 hours for the 16.
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
