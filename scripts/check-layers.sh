#!/usr/bin/env bash
# Checks that each module includes only itself and the modules above it in
# docs/ARCHITECTURE.md's order (the order below), so no dependency points back up.
# Prints every include that does and exits 1; exit 0 when the layering holds.
set -euo pipefail
cd "$(dirname "$0")/.."
order=(util graph models onnx backward cost schedule plan simulate budget lower report baselines solve strategy sweep kernels paging runtime profile data train cli)
rank() {
  local i
  for i in "${!order[@]}"; do [[ ${order[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo "check-layers.sh: module '$1' is not in the order; add it here and to docs/ARCHITECTURE.md" >&2
  exit 1
}
bad=0
for dir in include/poet/* src/*; do
  module=$(basename "$dir")
  mine=$(rank "$module")
  while IFS=: read -r file line used; do
    if (( $(rank "$used") > mine )); then
      echo "$file:$line: module '$module' includes '$used', which comes after it"
      bad=1
    fi
  done < <(grep -rnoE '#include "poet/[a-z_]+/' "$dir" | sed -E 's#^([^:]+):([0-9]+):\#include "poet/([a-z_]+)/#\1:\2:\3#')
done
exit $bad
