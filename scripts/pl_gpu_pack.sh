#!/usr/bin/env bash
# Packs what scripts/pl_gpu_probe.sh needs to run the paddlelite wheel on the GPU machine
# (Ubuntu 24.04, python3.12, no package registry; the wheel is cp38/cp310 only): a relocatable
# CPython 3.10 (the pyenv build here, stdlib trimmed), the wheel's files, numpy<2, and Opt's
# x86/OpenCL models of two shared models with their inputs. Output: .plcarry/plocl.tar.xz and
# .plcarry/models/ (ignored by git). Carry with the run tool: carry [".plcarry"] (64 MiB limit).
#   usage: scripts/pl_gpu_pack.sh [VENV (default .venv-pl-ocl)] [CPYTHON PREFIX (default pyenv 3.10.13)]
set -euo pipefail
VENV=${1:-.venv-pl-ocl}
PREFIX=${2:-/root/.pyenv/versions/3.10.13}
SP=$(ls -d "$VENV"/lib/python3.10/site-packages)
[ -f "$SP/paddlelite/lite.so" ] || { echo "no paddlelite in $VENV" >&2; exit 2; }
T=$(mktemp -d)
mkdir -p "$T/python/bin" "$T/python/lib" "$T/site-packages" .plcarry/models
cp "$PREFIX/bin/python3.10" "$T/python/bin/"
cp "$PREFIX/lib/libpython3.10.so.1.0" "$T/python/lib/"
strip --strip-unneeded "$T/python/lib/libpython3.10.so.1.0" "$T/python/bin/python3.10" 2>/dev/null || true
# stdlib without tests, GUI, build tools and installed packages
tar -C "$PREFIX/lib" --exclude='python3.10/test' --exclude='python3.10/site-packages' --exclude='python3.10/idlelib' \
    --exclude='python3.10/tkinter' --exclude='python3.10/turtledemo' --exclude='python3.10/ensurepip' \
    --exclude='python3.10/lib2to3' --exclude='python3.10/config-3.10-*' --exclude='__pycache__' \
    --exclude='python3.10/distutils/tests' --exclude='python3.10/unittest/test' -cf - python3.10 | tar -C "$T/python/lib" -xf -
cp -r "$SP/paddlelite" "$SP/numpy" "$T/site-packages/"
[ -d "$SP/numpy.libs" ] && cp -r "$SP/numpy.libs" "$T/site-packages/"
find "$T" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$T" -cf - . | xz -T2 -6 > .plcarry/plocl.tar.xz
rm -rf "$T"
# Opt's models of two shared models (from cldiff export), with their inputs
W=${PL_PACK_WORK:-/tmp/plw}
for m in ppocr_v3_det_fp32_x86_v2.12 mask_detector_fp32_arm_v2.10rc; do
  for k in x86 opencl; do [ -f "$W/$m/pl_$k.nb" ] && cp "$W/$m/pl_$k.nb" ".plcarry/models/${m}_$k.nb"; done
  [ -f "$W/$m/in0.npy" ] && cp "$W/$m/in0.npy" ".plcarry/models/${m}_in0.npy"
done
du -sh .plcarry/plocl.tar.xz .plcarry
echo "carry: [\".plcarry\"] (total must stay under 64 MiB)"
