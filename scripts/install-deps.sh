#!/usr/bin/env bash
# Installs poet's build and test dependencies from Debian 12 packages.
# Idempotent: installs only what is missing. Works as root or through sudo.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-libcbc-dev libdnnl-dev zlib1g-dev libisal-dev
  libonnx-dev libprotobuf-dev
  # Image-folder datasets: PNG and JPEG decoding (src/data/image_decode.cpp). The reference
  # decoders, fuzzed continuously by OSS-Fuzz (stb_image, libstb-dev, has a record of CVEs on
  # hostile files); 0.82 ms of CPU a picture to 3x224x224 (docs/BENCHMARKS.md, "Image folders").
  libpng-dev libjpeg62-turbo-dev
  dataset-fashion-mnist
  clang libclang-rt-14-dev libomp-dev
  # The firmware (firmware/): built by clang for Cortex-M4, linked by lld, run on QEMU.
  lld qemu-system-arm
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
