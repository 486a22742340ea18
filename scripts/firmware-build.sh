#!/usr/bin/env bash
# Builds the firmware (firmware/) with the generated headers in DIR (device_plan.h, model.h)
# into DIR/fw.elf. Usage: scripts/firmware-build.sh DIR
# make cannot take a path holding a space (or ':', '#', '%', '$', '\') in a target or a
# prerequisite, so such a DIR (a clone in "~/My projects") is built through a symlink to it
# from a fresh folder of /tmp.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "firmware-build.sh: give the folder that holds device_plan.h and model.h" >&2
  exit 2
fi
dir=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
case $dir in
  *[[:space:]:#%\$\\]*)
    alias_dir=$(mktemp -d /tmp/poet-firmware-XXXXXX)
    trap 'rm -rf "$alias_dir"' EXIT  # the link only: rm does not follow it
    ln -s "$dir" "$alias_dir/out"
    dir=$alias_dir/out
    ;;
esac
make -s -C firmware GEN="$dir" OUT="$dir"
