#!/usr/bin/env bash
# Installs every Debian package cldiff's build, demo and tests need, and the Python
# oracles (onnx, onnxruntime, numpy, h5py) into .venv. Idempotent; run as root or with sudo.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
pkgs=(build-essential cmake pkg-config libhdf5-dev hdf5-tools libpng-dev libcriterion-dev
      opencl-c-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo oclgrind clang
      python3 python3-venv python3-pip zlib1g-dev
      valgrind clang-15 libclang-common-15-dev libomp-15-dev
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
# valgrind, clang-15 (libFuzzer; clang-14 lacks _Float16 on x86-64), the aarch64 cross
# toolchain and qemu-user serve the hardening tests (docs/hardening.md).
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "${CLDIFF_SKIP_PY:-0}" != 1 ]; then
  if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
  fi
  if ! "$here/.venv/bin/python" -c 'import onnx, onnxruntime, numpy, h5py' 2>/dev/null; then
    "$here/.venv/bin/pip" install -q --disable-pip-version-check numpy h5py onnx onnxruntime
  fi
fi
echo "setup: all dependencies present"
