#!/usr/bin/env bash
# End-to-end checks of the poet CLI: exit codes and the messages users see.
set -uo pipefail
poet=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

expect() {  # expect <exit-code> <substring> -- <args...>
  local code=$1 text=$2
  shift 3
  local out
  out=$("$poet" "$@" 2>&1)
  local got=$?
  if [ "$got" -ne "$code" ] || [[ "$out" != *"$text"* ]]; then
    echo "FAIL: poet $* -> exit $got, expected $code and '$text'; output:"
    echo "$out" | head -20
    failures=$((failures + 1))
  fi
}

expect 0 "resnet18_cifar" -- models
expect 0 "jetsontx2" -- platforms
expect 0 "graph       resnet18_cifar on a72" -- graph
expect 0 "nodes       133" -- graph --model resnet18_cifar --platform a72 --backward chain
expect 2 "unknown model 'resnet19'" -- graph --model resnet19
expect 2 "unknown platform 'pi5'" -- graph --platform pi5
expect 2 "--batch-size" -- graph --batch-size 0
expect 2 "backward" -- graph --backward magic
expect 0 "wrote " -- graph --model lenet5 --json "$tmp/lenet5.json"
expect 0 "graph       lenet5" -- graph --graph "$tmp/lenet5.json"
echo '{"format":"poet-graph","version":1,"nodes":[' > "$tmp/broken.json"
expect 2 "broken.json" -- graph --graph "$tmp/broken.json"
expect 0 "Usage" -- graph --help
expect 2 "" -- frobnicate

echo "cli_smoke: $failures failure(s)"
[ "$failures" -eq 0 ]
