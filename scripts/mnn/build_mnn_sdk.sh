#!/usr/bin/env bash
# Builds an MNN SDK in release layout (include/MNN/*.hpp, lib/libMNN.so) from MNN's source, for
# cldiff's MNN engines (docs/mnn.md, "SDKs"). The recipe of ../shared/mnn/README.md:
#
#   scripts/mnn/build_mnn_sdk.sh x86_64|aarch64 SRC OUT_SDK [--jobs N] [--configure-only]
#                                [--objects N]
#
# SRC: an MNN source tree, or a git directory without a work tree (the search tool's fetch of
# github:alibaba/MNN gives one: /work/.mirror/alibaba+MNN/repo): then the folders the build needs
# (CMakeLists.txt cmake include source schema 3rd_party express tools LICENSE.txt) are extracted
# from HEAD, skipping blobs the mirror lacks (it lacks a few large ones; the build needs none).
# Options: -DMNN_OPENCL=ON -DMNN_SEP_BUILD=OFF -DMNN_BUILD_TOOLS=OFF -DMNN_BUILD_CONVERTER=OFF,
# Release; aarch64 cross-compiles with aarch64-linux-gnu-g++ (Debian: g++-aarch64-linux-gnu),
# MNN_ARM82=ON (the ARMv8.2 fp16 kernels precision=low uses; qemu-aarch64 -cpu max runs them),
# KleidiAI off (it is fetched from the network). ccache is used when present (CCACHE_BASEDIR
# defaults to the temporary build folder, so a rebuild hits the cache).
# One local edit: MNN's OpenCL runtime asks the first platform for GPU devices only; PoCL offers
# a CPU device, so unedited MNN finds none and silently runs on its CPU. The edit asks for
# CL_DEVICE_TYPE_ALL (on a machine whose first platform has a GPU it changes nothing).
# --objects N builds only the first N objects and prints the time (a measurement of a full
# build's cost on a loaded machine). Exit 0 ok, 2 usage, 1 a failed step.
set -eu
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 3 ] || usage
arch=$1 src=$2 out=$3
shift 3
jobs=2 configure_only=0 objects=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --objects) objects=$2; shift 2 ;;
    *) usage ;;
  esac
done
case "$arch" in x86_64|aarch64) ;; *) echo "build_mnn_sdk: arch must be x86_64 or aarch64" >&2; exit 2 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/mnn-sdk-build.XXXXXX")
tree=$src
if [ ! -f "$src/CMakeLists.txt" ]; then
  # a git directory without a work tree: extract what the build needs from HEAD
  git --git-dir="$src" rev-parse HEAD >/dev/null || { echo "build_mnn_sdk: $src is neither an MNN tree nor a git directory" >&2; exit 2; }
  tree=$work/src
  mkdir -p "$tree"
  git --git-dir="$src" ls-tree -r HEAD -- CMakeLists.txt cmake include source schema 3rd_party express tools LICENSE.txt \
    | awk '$2 == "blob" {print $3 "\t" $4}' > "$work/blobs"
  python3 - "$src" "$tree" "$work/blobs" <<'PY'
import os, subprocess, sys
git, tree, lst = sys.argv[1:4]
rows = [l.rstrip("\n").split("\t", 1) for l in open(lst) if "\t" in l]
p = subprocess.Popen(["git", "--git-dir", git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
missing = 0
for sha, path in rows:
    p.stdin.write((sha + "\n").encode()); p.stdin.flush()
    head = p.stdout.readline().decode().split()
    if len(head) < 3 or head[1] == "missing":
        missing += 1
        continue
    data = p.stdout.read(int(head[2])); p.stdout.read(1)
    dst = os.path.join(tree, path)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    open(dst, "wb").write(data)
p.stdin.close(); p.wait()
print(f"build_mnn_sdk: extracted {len(rows) - missing} files, {missing} blobs missing from the mirror")
PY
  git --git-dir="$src" log -1 --format='build_mnn_sdk: MNN source %h (%cd)' --date=short
fi
rt=$tree/source/backend/opencl/core/runtime/OpenCLRuntime.cpp
if grep -q 'getDevices(CL_DEVICE_TYPE_GPU, &gpuDevices)' "$rt"; then
  sed -i 's/getDevices(CL_DEVICE_TYPE_GPU, &gpuDevices)/getDevices(CL_DEVICE_TYPE_ALL, \&gpuDevices)/' "$rt"
  echo "build_mnn_sdk: OpenCL runtime edited to take any device type of the first platform (PoCL)"
fi
opts=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMNN_OPENCL=ON -DMNN_SEP_BUILD=OFF -DMNN_BUILD_TOOLS=OFF
      -DMNN_BUILD_CONVERTER=OFF -DMNN_BUILD_DEMO=OFF -DMNN_BUILD_TEST=OFF -DMNN_KLEIDIAI=OFF)
if command -v ccache >/dev/null; then
  opts+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # the tree and build folder live in a new temporary folder each time: paths relative to it
  # let a second build hit what the first one cached
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$work}
fi
if [ "$arch" = aarch64 ] && [ "$(uname -m)" != aarch64 ]; then
  command -v aarch64-linux-gnu-g++ >/dev/null || { echo "build_mnn_sdk: aarch64-linux-gnu-g++ missing (Debian: g++-aarch64-linux-gnu)" >&2; exit 1; }
  opts+=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc
         -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DMNN_ARM82=ON)
fi
bld=$work/build
t0=$(date +%s)
cmake -S "$tree" -B "$bld" "${opts[@]}" > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
echo "build_mnn_sdk: configured in $(( $(date +%s) - t0 )) s ($work/configure.log)"
[ "$configure_only" = 1 ] && { echo "build_mnn_sdk: build folder $bld"; exit 0; }
total=$(ninja -C "$bld" -t targets all 2>/dev/null | grep -c '\.o: ' || true)
t1=$(date +%s)
if [ "$objects" -gt 0 ]; then
  objs=$(ninja -C "$bld" -t targets all | grep '\.o: ' | cut -d: -f1 | head -n "$objects")
  # shellcheck disable=SC2086
  nice ninja -C "$bld" -j "$jobs" $objs > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
  dt=$(( $(date +%s) - t1 ))
  echo "build_mnn_sdk: $objects of $total objects in $dt s with -j $jobs (load average $(cut -d' ' -f1 /proc/loadavg)): a full build would take about $(( dt * total / objects / 60 )) min here"
  exit 0
fi
nice ninja -C "$bld" -j "$jobs" MNN > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
echo "build_mnn_sdk: built $total objects in $(( $(date +%s) - t1 )) s with -j $jobs"
mkdir -p "$out/include" "$out/lib"
cp -r "$tree/include/MNN" "$out/include/"
cp "$bld/libMNN.so" "$out/lib/"
strip_bin=strip
[ "$arch" = aarch64 ] && [ "$(uname -m)" != aarch64 ] && strip_bin=aarch64-linux-gnu-strip
"$strip_bin" "$out/lib/libMNN.so" || true
echo "build_mnn_sdk: SDK in $out ($(du -sh "$out/lib/libMNN.so" | cut -f1) libMNN.so); pack it as sdk-mnn-$arch-<os>.tar.xz for ../shared/mnn"
rm -rf "$work"
