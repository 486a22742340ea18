#!/usr/bin/env bash
# Trains on an emulated microcontroller: plans mcu_cnn at batch 8 with poet for the 256 KB of
# SRAM of a Cortex-M4 (parameters, gradients, the arena and the stack), builds the firmware
# (firmware/) with the plan, and trains it in QEMU (mps2-an386) on Fashion-MNIST: one epoch
# of 6,000 images, then the accuracy on 1,000 test images. The firmware prints progress and
# its memory figures, and last one JSON line. See docs/FIRMWARE.md.
#
# Usage: scripts/firmware-train.sh [--steps N] [--train N] [--test N] [--out DIR] [--poet PATH]
#                                  [--time-limit S] [--budget B]
#   --steps N   stop after N steps (default: the whole epoch, train / batch)
#   --out DIR   where the plan, headers, data, firmware and weights.bin go (build/firmware)
#   --poet PATH the host tool (build/poet; scripts/build.sh makes it)
#   --time-limit S  seconds poet's solve may take (60)
#   --budget B  poet's budget (256000B); a smaller one gives a smaller arena
#   --trace     write the weights after every step to weights.bin, not only the last
set -euo pipefail
cd "$(dirname "$0")/.."
steps=0 train=6000 test=1000 out=build/firmware poet=build/poet
model=mcu_cnn batch=8 seed=0 lr=0.01 time_limit=60 trace=0
# poet's budget: parameters + gradients + activations. The firmware's 256 KiB (262,144 B)
# also hold its 2 KiB stack and about 1.3 KB of other state (firmware/Makefile, link.ld); an
# arena that does not fit beside them fails at the link.
budget=256000B
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --train) train=$2; shift 2 ;;
    --test) test=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --poet) poet=$2; shift 2 ;;
    --time-limit) time_limit=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --trace) trace=1; shift ;;
    *) echo "firmware-train.sh: unknown argument '$1'; see the usage at the top of $0" >&2; exit 2 ;;
  esac
done
for tool in clang ld.lld qemu-system-arm make; do
  if ! command -v "$tool" >/dev/null; then
    echo "firmware-train.sh: '$tool' is not installed; run scripts/install-deps.sh" >&2
    exit 2
  fi
done
if [ ! -x "$poet" ]; then
  echo "firmware-train.sh: no poet at '$poet'; build it with scripts/build.sh, or give --poet PATH" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "== planning $model (batch $batch) for a budget of $budget with poet"
"$poet" plan --model "$model" --batch-size "$batch" --platform m4 --strategy poet --time-limit "$time_limit" \
  --ram-budget "$budget" --count-gradients --device-plan "$out/plan.bin" --c-header "$out/device_plan.h" -o "$out/plan.txt"
"$poet" firmware --model "$model" --batch-size "$batch" --plan "$out/plan.bin" --header "$out/model.h" \
  --seed "$seed" --lr "$lr" --samples-dir "$out" --train-samples "$train" --test-samples "$test"

echo "== building the firmware"
scripts/firmware-build.sh "$out"

echo "== training in QEMU (mps2-an386, Cortex-M4)"
rm -f "$out/weights.bin" "$out/pages.bin"
args="train=$train test=$test trace=$trace"
if [ "$steps" -gt 0 ]; then args+=" steps=$steps"; fi
started=$(date +%s)
# Semihosting's files (train.bin, test.bin, pages.bin, weights.bin) are relative to here.
(cd "$out" && qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
  -semihosting-config enable=on,target=native -kernel fw.elf -append "$args")
# On stderr: the firmware's JSON line stays the last line of stdout.
echo "QEMU ran $(( $(date +%s) - started )) s" >&2
