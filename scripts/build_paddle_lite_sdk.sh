#!/usr/bin/env bash
# Builds a Paddle-Lite SDK with its OpenCL backend, in the release layout cldiff's
# paddle-lite-arm / paddle-lite-opencl engines use (include/paddle_api.h,
# lib/libpaddle_light_api_shared.so), from a Paddle-Lite source tree. For users who build their
# own SDK instead of taking the ones in ../shared/paddle-lite (docs/paddle-lite.md); the
# source edits are the ones those SDKs were built with, for Paddle-Lite develop 3d329c95 (the
# 2.13 line) and compilers up to gcc 13.
#
#   scripts/build_paddle_lite_sdk.sh [--patch-only|--configure-only] x86|armv8 SRC_TREE OUT_SDK [JOBS]
#
#   x86     x86-64 Linux, full publish (x86 has no tiny publish), LITE_WITH_OPENCL, extra ops,
#           OpenBLAS instead of MKL -> the paddle-lite-opencl engine's SDK. Runs on x86-64.
#           Needs g++, cmake, make, python3, libopenblas-pthread-dev and liblapacke-dev (or
#           OPENBLAS_ROOT with include/cblas.h, include/lapacke.h and lib/libopenblas.so).
#   armv8   armlinux aarch64, tiny publish (light API), LITE_WITH_OPENCL, extra ops -> the
#           paddle-lite-arm engine's SDK (and an ARM board's OpenCL one). Needs
#           g++-aarch64-linux-gnu (Debian), cmake, make, python3.
#   SRC_TREE  a Paddle-Lite source tree with its third-party/ submodules checked out, used by
#           one target only (a build writes generated files into it): extract one copy per
#           target. The x86 build downloads xbyak, xxHash and Eigen unless their archives are
#           in $PL_THIRD_PARTY_ZIPS or SRC_TREE/../zips (xbyak-5.99.zip, xxHash-0.6.5.zip,
#           eigen.zip), as in ../shared/paddle-lite/src-3d329c95.tar.xz.
#   OUT_SDK   where the SDK goes (new, empty, or an SDK to replace).
#   JOBS      parallel compile jobs (default: nproc). An x86 build is about 40 min on 2 cores.
#   --patch-only  check the inputs and prepare SRC_TREE (edits, embedded OpenCL kernels), no build.
#   --configure-only  the same, the tool checks and Paddle-Lite's cmake configure step, no build.
#
# Exit codes: 0 built; 2 bad arguments or a missing tool/package (the message says which);
# 3 SRC_TREE is not the Paddle-Lite this recipe knows (an edit's anchor is missing); 1 the
# configure or the build failed (its log is named).
set -uo pipefail

die() { local code=$1; shift; echo "build_paddle_lite_sdk: $*" >&2; exit "$code"; }
usage() { sed -n '9,9p' "$0" | sed 's/^#  *//' >&2; echo "(scripts/build_paddle_lite_sdk.sh --help for more)" >&2; exit 2; }
note() { echo "build_paddle_lite_sdk: $*"; }

patch_only=0
case "${1:-}" in
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --patch-only) patch_only=1; shift ;;
    --configure-only) patch_only=2; shift ;;
esac
[ $# -ge 3 ] && [ $# -le 4 ] || { echo "build_paddle_lite_sdk: expected 3 or 4 arguments, got $#" >&2; usage; }
target=$1 src_arg=$2 out_arg=$3 jobs=${4:-$(nproc 2>/dev/null || echo 2)}

# ---- the arguments ----
case "$target" in
    x86|armv8) ;;
    *) die 2 "unknown target '$target': x86 (the paddle-lite-opencl SDK for x86-64) or armv8 (the paddle-lite-arm SDK)" ;;
esac
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die 2 "JOBS must be a positive whole number, got '$jobs'"
[ -d "$src_arg" ] || die 2 "SRC_TREE '$src_arg' is not a folder (a Paddle-Lite source tree: lite/, cmake/, third-party/)"
src=$(cd "$src_arg" && pwd -P)
for f in CMakeLists.txt lite/api/paddle_api.h lite/api/paddle_place.h lite/tools/cmake_tools/gen_opencl_code.py \
         lite/backends/opencl/cl_kernel; do
    [ -e "$src/$f" ] || die 2 "SRC_TREE $src is not a Paddle-Lite source tree: $f is missing"
done
nonempty() { [ -d "$1" ] && [ -n "$(ls -A "$1" 2>/dev/null)" ]; }
if [ "$target" = x86 ]; then
    for sm in third-party/protobuf-host third-party/gflags third-party/glog; do
        nonempty "$src/$sm" || die 2 "SRC_TREE $src: $sm is empty; check the submodule out (git submodule update --init $sm)"
    done
else
    nonempty "$src/third-party/flatbuffers" ||
        die 2 "SRC_TREE $src: third-party/flatbuffers is empty; check it out (git submodule update --init third-party/flatbuffers)"
fi
marker=$src/.cldiff-sdk-target
if [ -f "$marker" ] && [ "$(cat "$marker")" != "$target" ]; then
    die 2 "SRC_TREE $src was prepared for the $(cat "$marker") SDK; a build writes generated files into its source tree, so build $target from a separate copy"
fi
if [ -e "$out_arg" ]; then
    [ -d "$out_arg" ] || die 2 "OUT_SDK '$out_arg' exists and is not a folder"
    if nonempty "$out_arg" && ! [ -f "$out_arg/include/paddle_api.h" ]; then
        die 2 "OUT_SDK '$out_arg' is a folder with other files in it (not an SDK to replace); give a new or empty folder"
    fi
else
    parent=$(dirname "$out_arg")
    [ -d "$parent" ] && [ -w "$parent" ] || die 2 "OUT_SDK '$out_arg': its parent folder $parent does not exist or is not writable"
fi

# ---- the tools (--patch-only: python3 only) ----
need() { command -v "$1" >/dev/null || die 2 "$1 not found on PATH (Debian: apt-get install $2)"; }
need python3 python3
host=$(uname -m)
if [ $patch_only = 1 ]; then
    :
elif [ "$target" = x86 ]; then
    need cmake cmake
    need make make
    [ "$host" = x86_64 ] || die 2 "the x86 SDK is built natively on x86-64 (this machine is $host)"
    need g++ g++
    need strip binutils
    strip_tool=strip
    if [ -n "${OPENBLAS_ROOT:-}" ]; then
        for f in include/cblas.h include/lapacke.h; do
            [ -f "$OPENBLAS_ROOT/$f" ] || die 2 "OPENBLAS_ROOT=$OPENBLAS_ROOT has no $f"
        done
    else
        [ -f /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] ||
            die 2 "OpenBLAS headers not found (/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h): apt-get install libopenblas-pthread-dev, or set OPENBLAS_ROOT"
        # without lapacke.h Paddle-Lite's cmake does not fail: it plans a git clone of OpenBLAS instead
        [ -f /usr/include/lapacke.h ] ||
            die 2 "/usr/include/lapacke.h not found: apt-get install liblapacke-dev (without it Paddle-Lite's cmake tries to download and build OpenBLAS)"
    fi
else
    need cmake cmake
    need make make
    # Paddle-Lite's armlinux toolchain file picks aarch64-linux-gnu-gcc/g++ itself
    need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
    need aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
    need aarch64-linux-gnu-strip binutils-aarch64-linux-gnu
    strip_tool=aarch64-linux-gnu-strip
fi

# Paddle-Lite's cmake helpers import their own module named ast.py; Python 3.12's start-up
# imports the standard one first unless site is skipped, so every python they run is python3 -S.
bld=$src/build.cldiff.$target
tools=$bld/.tools
mkdir -p "$tools" || die 2 "cannot write into SRC_TREE $src"
printf '#!/bin/sh\nexec python3 -S "$@"\n' >"$tools/python"
chmod +x "$tools/python"
export PATH=$tools:$PATH

# ---- source preparation (each edit idempotent; its anchor missing -> exit 3) ----
# replace_line FILE OLD NEW WHAT: the exact line OLD (fixed string) becomes NEW
replace_line() {
    local file=$1 old=$2 new=$3 what=$4
    [ -f "$src/$file" ] || die 3 "$what: $file is missing from SRC_TREE (not the Paddle-Lite this recipe knows)"
    if grep -qxF -- "$new" "$src/$file"; then note "ok (already) $what"; return; fi
    grep -qxF -- "$old" "$src/$file" || die 3 "$what: the line to edit is not in $file (not the Paddle-Lite this recipe knows)"
    OLD=$old NEW=$new python3 - "$src/$file" <<'PY' || die 3 "$what: editing failed"
import os, sys
p = sys.argv[1]
lines = open(p, encoding="utf-8").read().split("\n")
old, new = os.environ["OLD"], os.environ["NEW"]
open(p, "w", encoding="utf-8").write("\n".join(new if l == old else l for l in lines))
PY
    note "ok (edited)  $what"
}

if [ "$target" = x86 ]; then
    # 1. gcc >= 12 rejects the old protobuf's non-const comparator used by std::sort
    replace_line third-party/protobuf-host/src/google/protobuf/compiler/java/java_file.cc \
        '  bool operator ()(const FieldDescriptor* f1, const FieldDescriptor* f2) {' \
        '  bool operator ()(const FieldDescriptor* f1, const FieldDescriptor* f2) const {' \
        "protobuf 3.3 comparator made const (gcc >= 12)"
    # 2. -Werror in the common flags: gcc 12 reports a maybe-uninitialized value in cl_half.cc
    if awk '/^set\(COMMON_FLAGS/ {b=1} b && /^\)/ {b=0} b && $0 ~ /^ *-Werror *$/ {f=1} END {exit !f}' "$src/cmake/flags.cmake"; then
        awk '/^set\(COMMON_FLAGS/ {b=1} b && /^\)/ {b=0} !(b && $0 ~ /^ *-Werror *$/)' "$src/cmake/flags.cmake" >"$bld/flags.cmake.new" &&
            mv "$bld/flags.cmake.new" "$src/cmake/flags.cmake" || die 3 "editing cmake/flags.cmake failed"
        note "ok (edited)  -Werror dropped from COMMON_FLAGS in cmake/flags.cmake (cl_half.cc, gcc 12)"
    elif grep -q '^set(COMMON_FLAGS' "$src/cmake/flags.cmake"; then
        note "ok (already) -Werror dropped from COMMON_FLAGS in cmake/flags.cmake"
    else
        die 3 "cmake/flags.cmake has no set(COMMON_FLAGS (not the Paddle-Lite this recipe knows)"
    fi
    # 3. without MKL: search_fc.h includes mklml.h unconditionally
    f=lite/backends/x86/math/search_fc.h
    if grep -q '^#ifdef PADDLE_WITH_MKLML$' "$src/$f"; then
        note "ok (already) mklml.h include in $f guarded by PADDLE_WITH_MKLML"
    elif grep -qxF '#include "lite/backends/x86/mklml.h"' "$src/$f"; then
        python3 - "$src/$f" <<'PY' || die 3 "editing $f failed"
import sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
inc = '#include "lite/backends/x86/mklml.h"'
s = s.replace(inc, "#ifdef PADDLE_WITH_MKLML\n" + inc + "\n#endif", 1)
open(p, "w", encoding="utf-8").write(s)
PY
        note "ok (edited)  mklml.h include in $f guarded by PADDLE_WITH_MKLML (built without MKL)"
    else
        die 3 "$f does not include lite/backends/x86/mklml.h where expected (not the Paddle-Lite this recipe knows)"
    fi
    # 4. third-party archives from local copies when there are some, else cmake downloads them
    zips=${PL_THIRD_PARTY_ZIPS:-$(cd "$src/.." && pwd -P)/zips}
    if [ -f "$zips/xbyak-5.99.zip" ] && [ -f "$zips/xxHash-0.6.5.zip" ] && [ -f "$zips/eigen.zip" ]; then
        set_url() { # file pattern-in-the-URL local-zip
            local file=$src/$1 remote
            remote=$(grep -v '^ *#' "$file" | grep "URL .*$2" | grep -vF "URL             $3")
            if [ -z "$remote" ]; then
                grep -v '^ *#' "$file" | grep -qF "URL             $3" ||
                    die 3 "$1 has no URL line for $2 (not the Paddle-Lite this recipe knows)"
                note "ok (already) $1 takes $3"
                return
            fi
            sed -i "/^ *#/! s#^\( *\)URL .*$2.*#\1URL             $3#" "$file" || die 3 "editing $1 failed"
            note "ok (edited)  $1 takes $3"
        }
        set_url cmake/external/xbyak.cmake 'xbyak-5.99\.zip' "$zips/xbyak-5.99.zip"
        set_url cmake/external/xxhash.cmake 'xxHash-0.6.5\.zip' "$zips/xxHash-0.6.5.zip"
        set_url cmake/external/eigen.cmake 'eigen-git-mirror.*\.zip' "$zips/eigen.zip"
    else
        note "no third-party archives in $zips (xbyak-5.99.zip, xxHash-0.6.5.zip, eigen.zip): cmake downloads them"
    fi
fi
# The OpenCL kernels (.cl) are compiled into the library as strings; Paddle-Lite's own build
# scripts generate that file before cmake runs, and so does this one.
"$tools/python" "$src/lite/tools/cmake_tools/gen_opencl_code.py" "$src/lite/backends/opencl/cl_kernel" \
    "$src/lite/backends/opencl/opencl_kernels_source.cc" || die 1 "gen_opencl_code.py failed"
[ -s "$src/lite/backends/opencl/opencl_kernels_source.cc" ] || die 1 "gen_opencl_code.py wrote no opencl_kernels_source.cc"
note "ok           OpenCL kernels embedded: $(find "$src/lite/backends/opencl/cl_kernel" -name '*.cl' | wc -l) .cl files into lite/backends/opencl/opencl_kernels_source.cc"
# files the cmake step expects in the build folder
mkdir -p "$bld/lite/gen_code" "$bld/lite/tools/debug"
[ -f "$bld/lite/gen_code/__generated_code__.cc" ] || : >"$bld/lite/gen_code/__generated_code__.cc"
cp "$src/lite/tools/debug/analysis_tool.py" "$bld/lite/tools/debug/" 2>/dev/null || true
echo "$target" >"$marker"
if [ $patch_only = 1 ]; then
    note "--patch-only: $src is prepared for the $target SDK; no build"
    exit 0
fi
configure_only() { # after a successful configure
    [ $patch_only = 2 ] || return 0
    note "--configure-only: configured in $bld (log $log); no build"
    exit 0
}

# ---- configure and build ----
export CMAKE_POLICY_VERSION_MINIMUM=3.5   # CMake 4 refuses Paddle-Lite's old minimum otherwise
flags=(-DCMAKE_BUILD_TYPE=Release -DWITH_TESTING=OFF -DLITE_WITH_OPENCL=ON -DLITE_BUILD_EXTRA=ON
       -DLITE_WITH_LOG=ON -DLITE_WITH_PYTHON=OFF -DPYTHON_EXECUTABLE="$tools/python"
       -DCMAKE_POLICY_VERSION_MINIMUM=3.5
       "-DCMAKE_CXX_FLAGS=-include cstdint")   # gcc 13 no longer brings <cstdint> in implicitly
log=$bld/cldiff-build.log
note "configuring and building in $bld with $jobs jobs (log: $log)"
cd "$bld" || die 1 "cannot enter $bld"
if [ "$target" = x86 ]; then
    ob=${OPENBLAS_ROOT:-}
    if [ -z "$ob" ]; then
        ob=$bld/openblas
        mkdir -p "$ob/include"
        ln -sf /usr/include/x86_64-linux-gnu/openblas-pthread/* /usr/include/lapacke*.h "$ob/include/"
        ln -sfn /usr/lib/x86_64-linux-gnu/openblas-pthread "$ob/lib"
    fi
    cmake "$src" "${flags[@]}" -DLITE_WITH_X86=ON -DLITE_WITH_ARM=OFF -DWITH_MKL=OFF -DWITH_MKLDNN=OFF \
          -DOPENBLAS_ROOT="$ob" >"$log" 2>&1 || die 1 "configuring the x86 build failed; the end of $log: $(tail -5 "$log")"
    configure_only
    { make -j"$jobs" extern_protobuf extern_gflags extern_glog extern_eigen3 extern_xbyak extern_xxhash &&
      make -j"$jobs" paddle_light_api_shared paddle_full_api_shared; } >>"$log" 2>&1 ||
        die 1 "the x86 build failed; the end of $log: $(tail -5 "$log")"
else
    # CC/CXX must stay unset: the armlinux toolchain file chooses the cross compilers
    env -u CC -u CXX cmake "$src" "${flags[@]}" -DLITE_WITH_ARM=ON -DLITE_WITH_X86=OFF -DARM_TARGET_ARCH_ABI=armv8 \
        -DARM_TARGET_OS=armlinux -DARM_TARGET_LANG=gcc -DLITE_WITH_CV=OFF -DLITE_ON_TINY_PUBLISH=ON >"$log" 2>&1 ||
        die 1 "configuring the armv8 build failed; the end of $log: $(tail -5 "$log")"
    configure_only
    { make fbs_headers && make -j"$jobs" paddle_light_api_shared; } >>"$log" 2>&1 ||
        die 1 "the armv8 build failed; the end of $log: $(tail -5 "$log")"
fi

# ---- the SDK: headers and stripped libraries ----
mkdir -p "$out_arg/include" "$out_arg/lib" || die 1 "cannot write $out_arg"
out=$(cd "$out_arg" && pwd -P)
cp "$src"/lite/api/paddle_api.h "$src"/lite/api/paddle_place.h "$src"/lite/api/paddle_lite_factory_helper.h "$out/include/" ||
    die 1 "copying the API headers failed"
for h in "$src"/lite/api/paddle_use_*.h; do [ -f "$h" ] && cp "$h" "$out/include/"; done
n=0
while IFS= read -r lib; do
    "$strip_tool" --strip-unneeded -o "$out/lib/$(basename "$lib")" "$lib" || die 1 "stripping $lib failed"
    n=$((n + 1))
done < <(find "$bld" -name 'libpaddle_*_api_shared.so' -type f)
[ -f "$out/lib/libpaddle_light_api_shared.so" ] || die 1 "the build made no libpaddle_light_api_shared.so (see $log)"
ls -l "$out/lib"
case "$target" in
    x86) note "done: $out (use it with CLDIFF_PL_OPENCL_SDK=$out or --backend-opt paddle-lite-opencl:sdk=$out)" ;;
    armv8) note "done: $out (use it with CLDIFF_PL_ARM_SDK=$out or --backend-opt paddle-lite-arm:sdk=$out)" ;;
esac
