#!/usr/bin/env bash
# Installs the Debian packages cldiff needs. Idempotent; run as root or with sudo.
#
#   scripts/setup.sh demo    what the build and the demo need (scripts/demo.sh): compiler,
#                            CMake, HDF5, libpng, OpenCL headers, the ICD loader and PoCL
#   scripts/setup.sh         (or `tests`) the demo set, the test toolchain below, and the
#                            Python oracles (numpy, h5py, onnx, onnxruntime) in .venv
#                            (CLDIFF_SKIP_PY=1 skips the Python part)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
what=${1:-tests}
case "$what" in
    demo|tests) ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown set '$what' (demo or tests)" >&2; exit 2 ;;
esac
# The build (CMakeLists.txt: HDF5, libpng, OpenMP from GCC, CL/cl.h) and an OpenCL device to
# run on: the ICD loader that cldiff opens at run time, and PoCL (a CPU OpenCL driver).
demo_pkgs=(build-essential cmake pkg-config libhdf5-dev libpng-dev
           opencl-c-headers ocl-icd-opencl-dev pocl-opencl-icd)
# Everything the test suite uses besides: Criterion (unit tests), h5dump, clinfo, oclgrind
# and clang (kernel checks), Python for the oracles and end-to-end tests, help2man (the
# installed man page and its test), and the hardening tools: valgrind, clang-15 (libFuzzer;
# clang-14 lacks _Float16 on x86-64) with libomp, the aarch64 cross toolchain and qemu-user
# (docs/hardening.md).
test_pkgs=(libcriterion-dev hdf5-tools clinfo oclgrind clang zlib1g-dev
           python3 python3-venv python3-pip help2man
           valgrind clang-15 libclang-common-15-dev libomp-15-dev
           gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
pkgs=("${demo_pkgs[@]}")
[ "$what" = tests ] && pkgs+=("${test_pkgs[@]}")
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
if [ "$what" = tests ] && [ "${CLDIFF_SKIP_PY:-0}" != 1 ]; then
  if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
  fi
  if ! "$here/.venv/bin/python" -c 'import onnx, onnxruntime, numpy, h5py' 2>/dev/null; then
    "$here/.venv/bin/pip" install -q --disable-pip-version-check numpy h5py onnx onnxruntime
  fi
fi
echo "setup: the $what dependencies are present"
