#!/usr/bin/env bash
# CPU and OpenCL (PoCL) benchmark of cldiff on the shared real models. Method: docs/benchmarks.md.
#
#   scripts/bench.sh [--cldiff PATH] [--models DIR] [--only a.nb,b.nb] [--repeat N] [--threads N]
#                    [--no-opencl] [--work DIR] [--out FILE.md]
#
# For every model (input shapes from shapes.txt in the model folder) it runs, each N times
# (default 5), under /usr/bin/time -v:
#   cpu-all      cldiff run --backends cpu --threads T --quiet --layers all
#   cpu-outputs  cldiff run --backends cpu --threads T --quiet --layers outputs
#   opencl-all   cldiff run --backends opencl --quiet --layers all
#   cpu-dequant  (models with int8 kernel records) cpu-all with --int8 dequant: the float path on
#                the same layers; scripts/bench_int8.py compares the int8 layers (docs/int8.md)
# (plus $CLDIFF_BENCH_ARGS, e.g. "--compress 0"), and `cldiff inspect` once (planned shapes, for the MAC counts). scripts/bench_report.py
# then turns the timings, max RSS and the last dump of each kind into a Markdown table on
# stdout and in --out (plus a per-layer CSV next to it).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
CLDIFF=${CLDIFF:-$SRC/build/cldiff}
MODELS=${CD_SHARED_MODELS:-$SRC/../shared/models}
ONLY=""
REPEAT=5
THREADS=2
OPENCL=1
WORK=""
OUT=""
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --cldiff) CLDIFF=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --no-opencl) OPENCL=0; shift ;;
    --work) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; usage 2 ;;
    esac
done
case "$REPEAT" in '' | *[!0-9]* | 0) echo "bench.sh: --repeat expects a positive integer, got '$REPEAT'" >&2; exit 2 ;; esac
case "$THREADS" in '' | *[!0-9]* | 0) echo "bench.sh: --threads expects a positive integer, got '$THREADS'" >&2; exit 2 ;; esac
[ -x "$CLDIFF" ] || { echo "bench.sh: cldiff executable '$CLDIFF' not found (build it, or pass --cldiff PATH)" >&2; exit 2; }
[ -d "$MODELS" ] || { echo "bench.sh: model folder '$MODELS' not found (pass --models DIR)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench.sh: /usr/bin/time is missing (apt install time)" >&2; exit 2; }

KEEP_WORK=1
if [ -z "$WORK" ]; then WORK=$(mktemp -d /tmp/cldiff_bench.XXXXXX); KEEP_WORK=0; fi
mkdir -p "$WORK" || exit 6
cleanup() { [ "$KEEP_WORK" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
trap 'echo "bench.sh: interrupted" >&2; exit 130' INT TERM
# a private program cache: the first OpenCL run of a model compiles (reported as "cold"),
# later ones load binaries, as a user's second run would
export XDG_CACHE_HOME=$WORK/cache
export CLDIFF_NO_PROGRESS=1

RUNS=$WORK/runs.tsv
printf 'model\tmode\trep\trc\twall_s\tmaxrss_kb\n' >"$RUNS"

shape_args() { # model file name -> --shape arguments from shapes.txt
    # the meta-0 mask detector stores no shapes; its meta-2 twin declares [-1,3,128,128]
    [ "$1" = mask_detector_fp32_arm_meta0_7735976.nb ] && { printf -- "--shape\n@HUB_pyramidbox_lite_mobile_mask@image=1,3,128,128\n"; return 0; }
    [ -f "$MODELS/shapes.txt" ] || return 0
    awk -v m="$1" '$1 == m { for (i = 2; i <= NF; i++) printf "--shape\n%s\n", $i }' "$MODELS/shapes.txt"
}

one() { # model-name mode rep out-dir args...
    local name=$1 mode=$2 rep=$3 out=$4; shift 4
    local tv=$WORK/time.txt t0 t1 rc rss wall
    # untimed: remove the previous run's dump and flush dirty pages, so each timed run
    # creates its dump (replacing a large file costs the filesystem ~0.5 ms/MB, and
    # background writeback of the previous run would land in this one)
    rm -f "$out/dump.h5"
    sync
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$tv" "$CLDIFF" run "$@" ${CLDIFF_BENCH_ARGS:-} --quiet --out "$out" >"$WORK/last.out" 2>"$WORK/last.err"
    rc=$?
    t1=$(date +%s%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tv")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$rep" "$rc" "$wall" "${rss:-0}" >>"$RUNS"
    if [ "$rc" != 0 ]; then
        echo "bench.sh: $name $mode run $rep: exit $rc: $(tail -3 "$WORK/last.err" | tr '\n' ' ')" >&2
        cp "$WORK/last.err" "$WORK/$name.$mode.err"
    elif [ "$mode" != cpu-outputs ]; then
        # untimed: keep this run's per-op times (the report takes per-op medians over the runs)
        "$PY" "$SRC/scripts/bench_report.py" --extract "$out/dump.h5" "${mode%%-*}" >"$out/rep$rep.json" 2>/dev/null \
            || rm -f "$out/rep$rep.json"
    fi
    return "$rc"
}

n=0
for path in "$MODELS"/*.nb; do
    [ -f "$path" ] || continue
    name=$(basename "$path")
    if [ -n "$ONLY" ] && ! printf ',%s,' "$ONLY" | grep -qF ",$name,"; then continue; fi
    n=$((n + 1))
    mapfile -t SH < <(shape_args "$name")
    d=$WORK/$name
    mkdir -p "$d"
    echo "bench.sh: $name ${SH[*]}" >&2
    "$CLDIFF" inspect "$path" "${SH[@]}" >"$d/inspect.txt" 2>&1
    for rep in $(seq 1 "$REPEAT"); do
        one "$name" cpu-all "$rep" "$d/cpu-all" --backends cpu --threads "$THREADS" --layers all "$path" "${SH[@]}" || break
    done
    if grep -q '/int8_t/' "$d/inspect.txt"; then
        for rep in $(seq 1 "$REPEAT"); do
            one "$name" cpu-dequant "$rep" "$d/cpu-dequant" --backends cpu --threads "$THREADS" --layers all --int8 dequant "$path" "${SH[@]}" || break
        done
    fi
    for rep in $(seq 1 "$REPEAT"); do
        one "$name" cpu-outputs "$rep" "$d/cpu-outputs" --backends cpu --threads "$THREADS" --layers outputs "$path" "${SH[@]}" || break
    done
    if [ "$OPENCL" = 1 ]; then
        for rep in $(seq 1 "$REPEAT"); do
            one "$name" opencl-all "$rep" "$d/opencl-all" --backends opencl --layers all "$path" "${SH[@]}" || break
        done
    fi
    # keep only what the report reads: the dumps of the last run of each kind
    rm -f "$d"/*/report.html "$d"/*/*.csv
done
[ "$n" -gt 0 ] || { echo "bench.sh: no model matched in $MODELS${ONLY:+ (--only $ONLY)}" >&2; exit 2; }

"$PY" "$SRC/scripts/bench_report.py" --work "$WORK" --threads "$THREADS" --repeat "$REPEAT" \
    --cldiff "$CLDIFF" ${OUT:+--out "$OUT"}
rc=$?
"$PY" "$SRC/scripts/bench_int8.py" --work "$WORK" ${OUT:+--out "$OUT"} || rc=$?
exit $rc
