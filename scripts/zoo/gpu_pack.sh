#!/usr/bin/env bash
# Packs what the GPU machine needs to run the zoo through Paddle-Lite's OpenCL engine there
# (docs/zoo.md "On the GPU machine"): that machine has the Paddle-Lite SDK's library but no Opt
# (no paddlelite wheel, no package registry), and cldiff's paddle-lite-opencl engine needs Opt's
# output for the exported model and, to isolate a crash by bisection, for model prefixes.
# Opt's outputs are cached by the hash of the exported program, its parameters and the places
# (<cache>/pl-opt/<sha256>.nb, src/backends/paddlelite/pl_sdk_engines.c make_model), so they are
# made here, into a fresh cache, by running each model once through cpu,paddle-lite-opencl with
# CLDIFF_PL_OPT_PREFIXES naming the ops a crash is likely at (each op with a 2-D output:
# report M's pattern; the op where it crashed here): the prefixes the bisection runs for a crash
# at one of them are made too, and the export without such 2-D fetches (what cldiff runs after
# an abort at target_wrapper.cc:278). Packed into .devcarry/zoo_pack.tar.xz (gitignored) with the zoo
# models (arm .nb, inputs, Paddle's outputs), the shared ppocr cls models, the report M repro,
# the Ubuntu 24.04 SDK and the OpenCL headers; .devcarry/zoo_pairs.sh is the batch to run there.
#
#   scripts/zoo/gpu_pack.sh [--models a,b,...] [--cldiff build/cldiff] [--budget-mb 40] [--fresh]
#   (--fresh: drop the Opt outputs of an earlier pack; else they are kept and reused)
#
# Needs: .zoo/ (scripts/zoo/build.py), .venv-pl (Opt), .venv-paddle (the report M repro),
# ../shared/paddle-lite/sdk-x86_64-ubuntu24.tar.xz and ../shared/models. Takes 5-20 minutes on
# 2 shared cores (one Opt per prefix). Exit 1 when the pack is over the budget.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
MODELS=mobilenet_v3_small,mobilenet_v2,shufflenet_v2,pplcnet,ocr_cls,ocr_cls_int8,ocr_det_db,rec_svtr,rec_gru1_uni,rec_lstm2_bi,picodet,yolo,yolo_swish,ssd_face,seg_bilinear,keypoint,face_landmark,transformer_pre_ln
CLDIFF=build/cldiff
BUDGET=40
FRESH=0
while [ $# -gt 0 ]; do
    case "$1" in
        --models) MODELS=$2; shift 2 ;;
        --cldiff) CLDIFF=$2; shift 2 ;;
        --budget-mb) BUDGET=$2; shift 2 ;;
        --fresh) FRESH=1; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu_pack.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
CLDIFF=$(cd "$(dirname "$CLDIFF")" && pwd)/$(basename "$CLDIFF")
SH=$here/../shared
[ -d "$SH/models" ] || SH=/work/shared
SDK=$SH/paddle-lite/sdk-x86_64-ubuntu24.tar.xz
for f in "$CLDIFF" .zoo/manifest.jsonl "$SDK" .venv-pl/bin/python; do
    [ -e "$f" ] || { echo "gpu_pack.sh: $f not found (build cldiff, scripts/setup.sh, ../shared)" >&2; exit 2; }
done
ST=.devcarry/zoo_stage
# Opt's outputs of an earlier pack stay (keyed by their content: a re-run skips those Opts)
[ "$FRESH" = 1 ] && rm -rf "$ST"
rm -rf "$ST/zoo" "$ST/models" "$ST/repro" "$ST/include" "$ST"/*.tar.xz
mkdir -p "$ST/zoo" "$ST/models" "$ST/cache/pl-opt" "$ST/repro" .devcarry
# the runner (pl-runner) is built once per machine; borrow this machine's so no compile here
CACHE=${CLDIFF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cldiff}
WORK=$(mktemp -d /tmp/zoo_pack.XXXXXX)
mkdir -p "$WORK/cache"
[ -d "$CACHE/pl-runner" ] && ln -s "$CACHE/pl-runner" "$WORK/cache/pl-runner"
ln -s "$here/$ST/cache/pl-opt" "$WORK/cache/pl-opt"

# candidates: ops with a 2-D output (report M) and any op named in $2 (comma list)
cands() {
    "$CLDIFF" inspect "$1" $3 2>/dev/null | python3 -c '
import re, sys
extra = [x for x in sys.argv[1].split(",") if x]
names, cur = [], None
for line in sys.stdin:
    m = re.match(r"^ +(\d+) (\S+) +(\S+) +\[", line)
    if m:
        cur = (m.group(2), m.group(3))
        continue
    if cur and "->" in line:
        outs = re.findall(r"(\w+)=[^ \[]+\[([-0-9,]*)\]", line.split("->", 1)[1])
        if cur[1] not in ("feed", "fetch", "shape", "slice", "fill_constant") and \
                any(k != "XShape" and len(o.split(",")) == 2 for k, o in outs if o):
            names.append(cur[0])
        cur = None
print(",".join(dict.fromkeys(extra + names)))' "$2"
}

run_one() { # name nb input-args... : fills the Opt cache for the model and its candidate prefixes
    local name=$1 nb=$2 crash=$3; shift 3
    local c
    c=$(cands "$nb" "$crash" "$(echo " $* " | grep -o -- '--shape [^ ]*' || true)" || true)
    echo "[pack $(date +%T)] $name: prefixes for a crash at ${c:-nothing}"
    CLDIFF_CACHE_DIR=$WORK/cache CLDIFF_PL_OPT_PREFIXES="$c" nice "$CLDIFF" "$nb" \
        --backends cpu,paddle-lite-opencl "$@" --out "$WORK/run_$name" --no-repro > "$WORK/$name.log" 2>&1 || true
    grep -E "^verdict" "$WORK/$name.log" | cut -c1-160 || tail -2 "$WORK/$name.log"
    # a machine where Paddle-Lite aborts at a fetched 2-D tensor (report M) runs the model again
    # without such fetches (fetch-2d-shared=0): that export's Opt output too
    if [ -n "$c" ]; then
        CLDIFF_CACHE_DIR=$WORK/cache nice "$CLDIFF" "$nb" --backends cpu,paddle-lite-opencl "$@" \
            --backend-opt paddle-lite-opencl:fetch-2d-shared=0 --out "$WORK/run2_$name" --no-repro \
            > "$WORK/${name}_2d.log" 2>&1 || true
    fi
}

IFS=, read -ra MS <<< "$MODELS"
for m in "${MS[@]}"; do
    d=.zoo/$m
    [ -f "$d/info.json" ] || { echo "gpu_pack.sh: no zoo model $m" >&2; exit 2; }
    mkdir -p "$ST/zoo/$m"
    cp "$d/info.json" "$d/${m}_arm.nb" "$ST/zoo/$m/"
    cp "$d"/in_*.npy "$d"/paddle_*.npy "$ST/zoo/$m/" 2>/dev/null || true
    grep "\"name\": \"$m\"" .zoo/manifest.jsonl >> "$ST/zoo/manifest.jsonl"
    in=$d/in_natural.npy; [ -f "$in" ] || in=$d/in_random.npy
    # the op it crashes at here, if it does
    crash=$(CLDIFF_CACHE_DIR=$WORK/cache nice "$CLDIFF" "$d/${m}_arm.nb" --backends cpu,paddle-lite-opencl \
        --input "x=$in" --out "$WORK/pre_$m" --no-repro 2>&1 | sed -n 's/.*crashed: .* at op #[0-9]* \([^ ]*\) (.*/\1/p' | head -1 || true)
    run_one "$m" "$d/${m}_arm.nb" "$crash" --input "x=$in"
done
# the shared ppocr cls models (NVIDIA's CL_INVALID_MEM_OBJECT at fc_0) and the report M repro
for f in ppocr_v2.0_cls_fp32_arm_v2.14rc ppocr_v4_mobile_cls_fp32_arm_v2.13rc; do
    cp "$SH/models/$f.nb" "$ST/models/"
    run_one "$f" "$SH/models/$f.nb" fc_0 --shape x=1,3,48,192
done
if [ -x .venv-paddle/bin/python ]; then
    nice .venv-paddle/bin/python scripts/zoo/repro/fetch_2d_layout.py "$WORK/f2d" > "$WORK/f2d.log" 2>&1 || true
    if [ -f "$WORK/f2d/fetch2d_arm.nb" ]; then
        cp "$WORK/f2d/fetch2d_arm.nb" "$WORK/f2d/x.npy" "$ST/repro/"
        run_one fetch2d "$WORK/f2d/fetch2d_arm.nb" hard_swish_0 --input "x=$WORK/f2d/x.npy"
    fi
fi
cp "$SDK" "$ST/"
if [ -d /work/main/.devcarry/include/CL ]; then
    cp -r /work/main/.devcarry/include "$ST/"
elif [ -d /usr/include/CL ]; then
    mkdir -p "$ST/include" && cp -r /usr/include/CL "$ST/include/"
fi
rm -f "$WORK/cache/pl-opt" "$WORK/cache/pl-runner"
n=$(ls "$ST/cache/pl-opt" | wc -l)
echo "[pack $(date +%T)] $n Opt outputs, $(du -sh "$ST/cache/pl-opt" | cut -f1); zoo $(du -sh "$ST/zoo" | cut -f1)"
tar -C "$ST" -cf - . | xz -T2 -6 > .devcarry/zoo_pack.tar.xz
cp scripts/zoo/zoo_pairs.sh .devcarry/zoo_pairs.sh
rm -rf "$WORK"
mb=$(( $(stat -c %s .devcarry/zoo_pack.tar.xz) / 1048576 ))
echo "[pack $(date +%T)] .devcarry/zoo_pack.tar.xz: $mb MiB (budget $BUDGET MiB); carry [\".devcarry/zoo_pack.tar.xz\", \".devcarry/zoo_pairs.sh\"]"
[ "$mb" -le "$BUDGET" ]
