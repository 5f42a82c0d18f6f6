#!/usr/bin/env bash
# The GPU machine's batch for the zoo through Paddle-Lite's OpenCL engine (docs/zoo.md "On the
# GPU machine"). Run from the repository root with .devcarry/zoo_pack.tar.xz beside it (made by
# scripts/zoo/gpu_pack.sh, which copies this file to .devcarry/zoo_pairs.sh):
#
#   bash .devcarry/zoo_pairs.sh [--pocl]        # --pocl: PoCL instead of NVIDIA (a local test)
#   ZP_ONLY=a,b: only those zoo models (check.py --only); ZP_PYTHON: a Python with numpy and h5py
#
# Builds cldiff (no tests), unpacks the pack (zoo models, Opt outputs as a cldiff cache, the
# Ubuntu 24.04 SDK, OpenCL headers), then on NVIDIA's OpenCL: opencl,paddle-lite-opencl and
# cpu,opencl (fp32, fp16) over the packed zoo models (scripts/zoo/check.py), and the ppocr cls
# models and the report M repro through cpu,paddle-lite-opencl on NVIDIA and on PoCL, with
# Opt's placement around the op that dies. Writes at most 8 files to $OUT: summary.md,
# engines.json, cpu_opencl.json, cls.txt, build.log, doctor.txt.
set -u
R=$(pwd)
O=${OUT:-/tmp/zoo_pairs_out}
mkdir -p "$O"
NV=1
[ "${1:-}" = "--pocl" ] && NV=0
t0=$SECONDS
P=$R/.devcarry/zp
rm -rf "$P" && mkdir -p "$P" && tar -C "$P" -xJf "$R/.devcarry/zoo_pack.tar.xz" || { echo "cannot unpack .devcarry/zoo_pack.tar.xz"; exit 1; }
INC=$P/include
[ -d "$INC/CL" ] || INC=/usr/include
B=$R/build-zp
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_TESTS=OFF -DOPENCL_INCLUDE_DIR="$INC" > "$O/build.log" 2>&1 &&
    cmake --build "$B" -j"$(nproc)" --target cldiff >> "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
# the SDK where cldiff looks for it (.paddle-lite/ beside the executable's parents), the cache with
# Opt's outputs (no Opt here), and an ICD folder with NVIDIA's library alone for Paddle-Lite
# (it takes the first OpenCL platform, PoCL there)
mkdir -p .paddle-lite && tar -C .paddle-lite -xJf "$P/sdk-x86_64-ubuntu24.tar.xz"
export CLDIFF_CACHE_DIR=$P/cache
CLP=()
ENG=()
MACHINE='H200 (NVIDIA OpenCL)'
if [ $NV = 1 ]; then
    nv=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
    [ -z "$nv" ] && nv=$(find / -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
    mkdir -p /tmp/icd-nv && echo "$nv" > /tmp/icd-nv/nvidia.icd
    echo "NVIDIA OpenCL library: ${nv:-not found}"
    CLP=(--cl-platform NVIDIA)
    ENG=(--backend-opt paddle-lite-opencl:vendors=/tmp/icd-nv)
else
    MACHINE='PoCL (x86 CPU)'
fi
"$B/cldiff" doctor "${CLP[@]}" > "$O/doctor.txt" 2>&1
printf '#!/bin/sh\nexec %s/cldiff "$@" %s\n' "$B" "${CLP[*]}" > "$B/cldiff-zp" && chmod +x "$B/cldiff-zp"
PY=${ZP_PYTHON:-python3}
ONLY=()
[ -n "${ZP_ONLY:-}" ] && ONLY=(--only "$ZP_ONLY")
J=$(( $(nproc) / 3 )); [ $J -lt 2 ] && J=2; [ $J -gt 6 ] && J=6
S=$O/summary.md
echo "# zoo pairs on $MACHINE ($(date -u +%F' '%H:%M) UTC)" > "$S"
# the three parts run side by side (16 cores, one GPU), each under a time limit so that the whole
# stays under 9 minutes; check.py writes its check.json at its end
# 1. the engine pair on the zoo models of the pack
(
    timeout 330 "$PY" scripts/zoo/check.py --zoo "$P/zoo" --targets none --pairs 'opencl,paddle-lite-opencl' \
        --precisions fp32 --inputs natural,random --cldiff "$B/cldiff-zp" --pair-args="${ENG[*]}" \
        --machine "$MACHINE" --out "$P/eng" --jobs $J "${ONLY[@]}" > "$P/eng.log" 2>&1
    echo "engine pair rc $? $((SECONDS - t0)) s"
    cp "$P/eng/check.json" "$O/engines.json" 2>/dev/null
) &
# 2. cldiff's own OpenCL on them
(
    timeout 330 "$PY" scripts/zoo/check.py --zoo "$P/zoo" --targets none --pairs 'cpu,opencl' --precisions fp32,fp16 \
        --inputs natural,random --cldiff "$B/cldiff-zp" --machine "$MACHINE" --out "$P/ocl" --jobs $J "${ONLY[@]}" \
        > "$P/ocl.log" 2>&1
    echo "cpu,opencl rc $? $((SECONDS - t0)) s"
    cp "$P/ocl/check.json" "$O/cpu_opencl.json" 2>/dev/null
) &
# 3. the ppocr cls models (NVIDIA: CL_INVALID_MEM_OBJECT at fc_0) and report M's repro, on the
# engine's NVIDIA platform and on PoCL; the kept work folder's Opt output around the op that dies
C=$O/cls.txt
: > "$C"
one() { # label anchor-op model [args...]
    local label=$1 anchor=$2 nb=$3; shift 3
    # force: every probed tensor fetched, a crash isolated by bisection (the Opt output kept);
    # 1 (cldiff's default): after an abort at target_wrapper.cc:278, once more without 2-D fetches
    for run in nvidia:force nvidia:1 pocl:force; do
        local plat=${run%%:*} f2=${run#*:}
        [ $plat = nvidia ] && [ $NV = 0 ] && continue
        local eo=()
        [ $plat = nvidia ] && eo=("${ENG[@]}")
        local od=$P/cls_${label}_${plat}_$f2
        timeout 100 "$B/cldiff" "$nb" --backends cpu,paddle-lite-opencl "$@" "${eo[@]}" \
            --backend-opt paddle-lite-opencl:keep=1 --backend-opt "paddle-lite-opencl:fetch-2d-shared=$f2" \
            --out "$od" --no-repro > "$od.log" 2>&1
        local rc=$?
        {
            echo "=== $label on $plat, fetch-2d-shared=$f2: exit $rc"
            grep -E "^verdict|crashed:|died with|isolated|report M" "$od.log" | cut -c1-900
            local w
            w=$(sed -n 's/.*work folder kept: \(.*\)$/\1/p' "$od.log" | head -1)
            [ -n "$w" ] && [ -d "$od/$(basename "$w")" ] && w=$od/$(basename "$w")
            if [ -n "$w" ] && [ -f "$w/model.nb" ]; then
                echo "--- Opt's output (whole model), from 8 ops before $anchor to the end:"
                "$B/cldiff" inspect "$w/model.nb" 2>&1 | grep -A1 -E "^ +[0-9]+ " | grep -v "^--" |
                    grep -B16 -A60 -m1 -E "^ +[0-9]+ $anchor " | cut -c1-220 | head -90
            fi
        } >> "$C"
    done
}
(
    for f in ppocr_v2.0_cls_fp32_arm_v2.14rc ppocr_v4_mobile_cls_fp32_arm_v2.13rc; do
        [ -f "$P/models/$f.nb" ] && one "$f" fc_0 "$P/models/$f.nb" --shape x=1,3,48,192
    done
    [ -f "$P/repro/fetch2d_arm.nb" ] && one fetch2d hard_swish_0 "$P/repro/fetch2d_arm.nb" --input "x=$P/repro/x.npy"
    echo "cls and repro $((SECONDS - t0)) s"
) &
wait
{
    echo "## opencl,paddle-lite-opencl"; echo '```'; grep -E "paddle-lite|runs," "$P/eng.log"; echo '```'
    echo "## cpu,opencl"; echo '```'; grep -E "cpu,opencl|runs," "$P/ocl.log"; echo '```'
} >> "$S"
{
    echo "## ppocr cls and report M's repro (cpu,paddle-lite-opencl)"; echo '```'
    grep -E "^===|^verdict|isolated|report M" "$C" | cut -c1-400; echo '```'
} >> "$S"
echo "total $((SECONDS - t0)) s" | tee -a "$S"
cat "$S"
