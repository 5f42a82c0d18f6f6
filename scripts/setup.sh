#!/usr/bin/env bash
# Installs the Debian packages cldiff needs. Idempotent; run as root or with sudo.
#
#   scripts/setup.sh demo    what the build and the demo need (scripts/demo.sh): compiler,
#                            CMake, HDF5, libpng, OpenCL headers, the ICD loader and PoCL
#   scripts/setup.sh         (or `tests`) the demo set, the test toolchain below, and the
#                            Python oracles (numpy, h5py, onnx, onnxruntime) in .venv
#                            (CLDIFF_SKIP_PY=1 skips the Python part), and Paddle-Lite's own
#                            runtime for the paddle-lite backend: .venv-pl with the paddlelite
#                            wheel (CLDIFF_SKIP_PL=1 skips it; docs/paddle-lite.md), and what
#                            the paddle-lite-arm / paddle-lite-opencl engines need at run time
#   Both sets unpack the Paddle-Lite SDKs ../shared/paddle-lite/sdk-*.tar.xz (CD_PL_SDK_ARCHIVES
#   names another folder) into .paddle-lite/, where cldiff looks for them by default; an SDK
#   already there is left as it is.
#   Exit 0 when everything is present, 2 for an unknown set, 3 when the disk is too full to
#   start (below).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
what=${1:-tests}
case "$what" in
    demo|tests) ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown set '$what' (demo or tests)" >&2; exit 2 ;;
esac
# Free disk first. Measured in a fresh-clone run of the test command (2026-11-29): the clone grew
# to 3.1 GB (venvs and Paddle 1.5 GB, the phone sysroot 0.55 GB, zoo and SDKs 0.25 GB, the three
# builds 0.8 GB), pip's cache takes up to 1 GB more, and the tests' temporaries under $TMPDIR
# stayed under 0.6 GB. So the test set wants 5 GiB free where the clone is (1 GiB once the venvs
# and the zoo are there) and 1 GiB under $TMPDIR; the demo 1 GiB. Running out halfway shows up
# as a truncated archive or a failed link far from the cause, so it is checked here (exit 3).
# CLDIFF_MIN_FREE_GB sets the need where the clone is (0 skips both checks).
need_gb=${CLDIFF_MIN_FREE_GB:-}
if [ -z "$need_gb" ]; then
  if [ "$what" = demo ]; then need_gb=1
  elif [ -x "$here/.venv-paddle/bin/python" ] && [ -f "$here/.zoo/manifest.jsonl" ]; then need_gb=1
  else need_gb=5; fi
fi
check_free() { # dir GiB what-for
  local avail_kb
  avail_kb=$(df -Pk "$1" 2>/dev/null | awk 'NR==2 {print $4}')
  [ -n "$avail_kb" ] || return 0
  if [ "$avail_kb" -lt $(($2 * 1024 * 1024)) ]; then
    echo "setup: only $((avail_kb / 1024)) MiB free on the file system of $1; $3 needs about $2 GiB." >&2
    echo "setup: free some space there (old build folders, leftovers of earlier runs in /tmp) and run again;" \
         "CLDIFF_MIN_FREE_GB=N sets the need (0 skips this check)." >&2
    exit 3
  fi
}
if [ "$need_gb" != 0 ]; then
  check_free "$here" "$need_gb" "the $what set (venvs, SDKs, builds)"
  [ "$what" = tests ] && check_free "${TMPDIR:-/tmp}" 1 "the tests' temporaries"
fi
# The build (CMakeLists.txt: HDF5, libpng, OpenMP from GCC, CL/cl.h) and an OpenCL device to
# run on: the ICD loader that cldiff opens at run time, and PoCL (a CPU OpenCL driver).
demo_pkgs=(build-essential cmake pkg-config libhdf5-dev libpng-dev
           opencl-c-headers ocl-icd-opencl-dev pocl-opencl-icd)
# Everything the test suite uses besides: Criterion (unit tests), h5dump, clinfo, oclgrind
# and clang (kernel checks), Python for the oracles and end-to-end tests, help2man (the
# installed man page and its test), and the hardening tools: valgrind, clang-15 (libFuzzer;
# clang-14 lacks _Float16 on x86-64) with libomp, the aarch64 cross toolchain and qemu-user
# (docs/hardening.md).
test_pkgs=(libcriterion-dev hdf5-tools clinfo oclgrind clang clang-format zlib1g-dev
           python3 python3-venv python3-pip help2man
           valgrind clang-15 libclang-common-15-dev libomp-15-dev
           gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
           g++ g++-aarch64-linux-gnu libopenblas0-pthread libgfortran5
           chromium)  # tests/html: report.html rendered headless
# The Paddle-Lite engines (src/backends/paddlelite/pl_sdk.h): the runner is compiled per SDK
# with g++ (x86-64 SDK) or g++-aarch64-linux-gnu (armv8 SDK, run under qemu-user with the
# libc6/libstdc++6 arm64 cross runtime as sysroot); the x86-64 library links libopenblas.so.0
# and libgfortran.so.5 and dlopens the unversioned libOpenCL.so (ocl-icd-opencl-dev, in the
# demo set).
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
# The paddle-lite backend (docs/paddle-lite.md): the paddlelite wheel exists on PyPI only for
# CPython 3.7-3.10 on x86-64 (2.13rc0: cp38, cp310; 2.12: cp37; 2.10: cp39), so .venv-pl is made
# with such a Python where this machine has one: pyenv's versions, a python3.X on PATH, or
# Debian's python3 if it is one of them. numpy<2: the wheel's from_numpy feeds garbage under
# numpy 2 (pl_bridge.py checks every input it hands over). No such Python: the backend says
# it is unavailable (exit 4) and what to install.
pl_python() {
  local v c
  for v in 3.10 3.8 3.7 3.9; do
    for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python "$(command -v "python$v" || true)"; do
      [ -x "$c" ] && "$c" -c 'import venv' 2>/dev/null && { echo "$v $c"; return 0; }
    done
  done
  c=$(command -v python3 || true)
  if [ -n "$c" ]; then
    v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    case "$v" in 3.7|3.8|3.9|3.10) echo "$v $c"; return 0 ;; esac
  fi
  return 1
}
if [ "$what" = tests ] && [ "${CLDIFF_SKIP_PL:-0}" != 1 ] && [ "$(uname -m)" = x86_64 ]; then
  # h5py: the export round-trip test (tests/plexport) reads cldiff's dumps in the same Python
  if ! "$here/.venv-pl/bin/python" -c 'import paddlelite.lite, numpy, h5py; assert numpy.__version__ < "2"' 2>/dev/null; then
    if found=$(pl_python); then
      pv=${found%% *}; py=${found#* }
      case "$pv" in 3.7) plv=2.12 ;; 3.9) plv=2.10 ;; *) plv=2.13rc0 ;; esac
      [ -x "$here/.venv-pl/bin/python" ] || "$py" -m venv "$here/.venv-pl"
      "$here/.venv-pl/bin/pip" install -q --disable-pip-version-check "paddlelite==$plv" 'numpy<2' h5py \
        || echo "setup: note: pip could not install paddlelite==$plv into .venv-pl; the paddle-lite backend stays unavailable" >&2
    else
      echo "setup: note: no CPython 3.7-3.10 found (pyenv versions, python3.X, Debian python3): the paddle-lite" \
           "backend stays unavailable; install one (e.g. pyenv install 3.10) and run setup.sh again" >&2
    fi
  fi
fi
[ "$what" = tests ] && "$here/scripts/setup_zoo.sh"  # the model zoo (docs/zoo.md): .venv-paddle, .zoo/
# The Paddle-Lite SDKs (include/ + lib/, release layout) beside the project, unpacked once into
# .paddle-lite/ (git ignores it): each archive holds one folder named like the archive.
pl_archives=${CD_PL_SDK_ARCHIVES:-$here/../shared/paddle-lite}
for a in "$pl_archives"/sdk-*.tar.xz; do
  [ -f "$a" ] || continue
  name=$(basename "$a" .tar.xz)
  dest=$here/.paddle-lite/$name
  [ -f "$dest/lib/libpaddle_light_api_shared.so" ] && [ -f "$dest/include/paddle_api.h" ] && continue
  mkdir -p "$here/.paddle-lite"
  tmp=$(mktemp -d "$here/.paddle-lite/.unpack.XXXXXX")
  if tar -xJf "$a" -C "$tmp" && [ -f "$tmp/$name/lib/libpaddle_light_api_shared.so" ]; then
    rm -rf "$dest"
    mv "$tmp/$name" "$dest"
    echo "setup: unpacked $a into $dest"
  else
    echo "setup: note: $a did not unpack into $name/lib/libpaddle_light_api_shared.so; left out" >&2
  fi
  rm -rf "$tmp"
done
bash "$here/scripts/setup_mnn.sh"  # MNN SDKs into .mnn/, .venv-mnn (docs/mnn.md)
[ "$what" = tests ] && [ "$(uname -m)" = x86_64 ] && { "$here/scripts/setup_phone.sh" || echo "setup: note: the arm64 PoCL sysroot of paddle-lite-phone was not built (scripts/setup_phone.sh); its test is skipped" >&2; }
echo "setup: the $what dependencies are present"
