#!/bin/sh
# Compile-checks every kernels/*.cl (with the kernels/common.h.cl prelude and the kernel-kind
# header generated from src/engine/op_list.def prepended, as the runtime builds them) in the
# three precision variants with clang's OpenCL C front end:
#   fp32          -DCD_FP32
#   fp16          -DCD_FP16          (half storage, float arithmetic; no extension needed)
#   fp16-compute  -DCD_FP16_COMPUTE  with cl_khr_fp16 enabled
# Usage: scripts/check_kernels.sh [KERNEL_DIR [KINDS_HEADER]]   (default: kernels/ next to this
# script; the header as the build writes it, BUILD/generated/op_kinds.h.cl, or made here from
# src/engine/op_list.def by scripts/embed_kernels.cmake)
# Exit status: 0 when every file builds in every variant, 1 otherwise (each failure listed).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/kernels}
clang=${CLANG:-}
if [ -z "$clang" ]; then
    for c in clang-14 clang-15 clang-16 clang; do
        if command -v "$c" >/dev/null 2>&1; then clang=$c; break; fi
    done
fi
if [ -z "$clang" ]; then
    echo "check_kernels: no clang found (install Debian 'clang' or set CLANG=/path/to/clang)" >&2
    exit 1
fi
prelude=$dir/common.h.cl
if [ ! -f "$prelude" ]; then
    echo "check_kernels: prelude $prelude is missing" >&2
    exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
kinds=${2:-}
if [ -z "$kinds" ]; then
    kinds=$tmp/op_kinds.h.cl
    if ! cmake -DOP_LIST="$here/src/engine/op_list.def" -DKINDS_OUT="$kinds" -P "$here/scripts/embed_kernels.cmake"; then
        echo "check_kernels: cannot generate the kernel-kind header from src/engine/op_list.def" >&2
        exit 1
    fi
fi
fail=0
count=0
for f in "$dir"/*.cl; do
    [ "$f" = "$prelude" ] && continue
    name=$(basename "$f" .cl)
    for v in FP32 FP16 FP16_COMPUTE; do
        ext=""
        [ "$v" = FP16_COMPUTE ] && ext="-Xclang -cl-ext=+cl_khr_fp16"
        # one file, as the runtime builds it: prelude, kinds, then the family source
        cat "$prelude" "$kinds" "$f" > "$tmp/$name.$v.cl"
        # shellcheck disable=SC2086
        if ! "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header $ext -DCD_$v -Werror \
                -fsyntax-only "$tmp/$name.$v.cl" > "$tmp/log" 2>&1; then
            echo "FAIL $name.cl ($v):"
            sed "s|$tmp/$name.$v.cl|$name.cl+prelude|g" "$tmp/log"
            fail=1
        fi
        count=$((count + 1))
    done
done
if [ "$count" -eq 0 ]; then
    echo "check_kernels: no kernel sources in $dir" >&2
    exit 1
fi
[ "$fail" -eq 0 ] && echo "check_kernels: $count builds (files x 3 variants) OK with $clang"
exit $fail
