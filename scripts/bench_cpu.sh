#!/usr/bin/env bash
# cldiff's CPU reference against Paddle-Lite x86 on the same models, inputs and thread counts
# (docs/benchmarks.md "CPU reference vs Paddle-Lite x86").
#
#   scripts/bench_cpu.sh [--cldiff PATH] [--models DIR] [--zoo DIR] [--only a.nb,b.nb]
#                        [--rounds N] [--threads "1 2"] [--repeat N] [--warmup N] [--sdk DIR]
#                        [--work DIR] [--cpu-opt KEY=VALUE]... [--pin CPUS] [--op-passes N]
#
# Models: every *fp32*.nb of --models (default ../shared/models) and of --zoo (optional), with
# the input shapes of shapes.txt in that folder. --zoo may also be a zoo root as scripts/zoo
# builds it (.zoo: <name>/<name>_x86.nb + info.json): then every fp32 model's x86 .nb, with the
# input name and shape of its info.json. Each model's inputs are the ones cldiff draws
# (seeded random, --seed 1), saved as .npy for the Paddle-Lite runner, so both see the same
# values. Then N rounds (default 5), interleaved (every round runs every engine and thread
# count once, so a slow phase of the machine hits all of them):
#   cldiff   cldiff run --backends cpu --layers outputs --threads T --backend-opt cpu:repeat=R
#            (default R 5): cold_ms = run 1 (backend opened, filters packed; less the dump
#            writes of its outputs, cold_probes_ms, as PL's run_ms leaves out its output fetch),
#            warm_ms = median of runs 2..R, both read from the dump's run attributes
#   PL       probes/paddle-lite/pl_probe_runner built against the Paddle-Lite x86 SDK
#            (.paddle-lite/sdk-x86_64-ubuntu24 on Ubuntu, sdk-x86_64-debian12 otherwise):
#            first = run_ms with --warmup 0 (first run after load), warm = run_ms after
#            --warmup W (default 3) --repeat R: the median of R timed runs in one process
# and prints per model and thread count the medians, the ratios cldiff/PL (warm/warm,
# cold/first) and their spread over the rounds (min-max of each side; a ratio whose spread
# holds 1.0 is marked ~: this run cannot tell it from 1.0). Then the gap op by op: once per
# model and thread count (processes of their own, so the hooks do not touch the times above)
# cldiff with cpu:timing=1 (m<k>/timing_t<T>.txt) and the runner with --op-times (the wall
# time of each Paddle-Lite instruction, median of R runs after W warm-ups:
# m<k>/plops_t<T>.txt; and its first run after load, m<k>/plops_first_t<T>.txt); instruction k
# is the model's k-th op other than feed/fetch (the op list of `cldiff inspect`,
# m<k>/inspect.txt), used only where the counts agree (said in the output where they do not).
# Per model and thread count: a table per op type (cldiff warm ms, PL warm ms, ratio, the gap in
# ms, largest first; then cldiff's cold = the type's prepare + run 1 against PL's first run) and
# the heaviest ops of both; all of it also as TSV (op_types.tsv, ops.tsv in the work folder).
# A model Paddle-Lite x86 cannot run (an ARM-only .nb) gets "n/a" and the reason. --cpu-opt
# KEY=VALUE adds --backend-opt cpu:KEY=VALUE to cldiff's timed runs (an A/B, e.g.
# prepare_threads=2). --pin CPUS runs both sides under `taskset -c CPUS` (the same CPUs for
# both; default: not pinned). --op-passes N (default 1): the op-by-op processes once before the
# rounds and N-1 times after them; the report takes, per side, the pass nearest the rounds'
# medians (a noisy machine: 2 or 3).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
CLDIFF=${CLDIFF:-$SRC/build/cldiff}
MODELS=${CD_SHARED_MODELS:-$SRC/../shared/models}
ZOO=""
ONLY=""
ROUNDS=5
THREADS="1 2"
REPEAT=5
WARMUP=3
SDK=""
WORK=""
CPUOPT=()
PIN=""
OPPASSES=1
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3

usage() { sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --cldiff) CLDIFF=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --zoo) ZOO=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --sdk) SDK=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --cpu-opt) CPUOPT+=(--backend-opt "cpu:$2"); shift 2 ;;
    --pin) PIN=$2; shift 2 ;;
    --op-passes) OPPASSES=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bench_cpu.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -x "$CLDIFF" ] || { echo "bench_cpu.sh: $CLDIFF not built (cmake --build build)" >&2; exit 2; }
[ -d "$MODELS" ] || { echo "bench_cpu.sh: model folder $MODELS not found (--models DIR)" >&2; exit 2; }
"$PY" -c 'import numpy, h5py' 2>/dev/null || { echo "bench_cpu.sh: $PY lacks numpy or h5py" >&2; exit 2; }
case "$ROUNDS$REPEAT$WARMUP$OPPASSES" in *[!0-9]*) echo "bench_cpu.sh: --rounds, --repeat, --warmup and --op-passes take whole numbers" >&2; exit 2 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$REPEAT" -ge 1 ] && [ "$OPPASSES" -ge 1 ] || { echo "bench_cpu.sh: --rounds, --repeat and --op-passes must be >= 1" >&2; exit 2; }
if [ -n "$PIN" ]; then
    command -v taskset >/dev/null || { echo "bench_cpu.sh: --pin needs taskset (apt-get install util-linux)" >&2; exit 2; }
    taskset -c "$PIN" true 2>/dev/null || { echo "bench_cpu.sh: --pin $PIN: taskset cannot run on those CPUs (give a list such as 2,3 or 0-3 of this machine's CPUs)" >&2; exit 2; }
fi
# both sides' timed commands: under taskset -c CPUS with --pin
pinned() { if [ -n "$PIN" ]; then taskset -c "$PIN" "$@"; else "$@"; fi; }
if [ -z "$SDK" ]; then
    if grep -qi '^ID=ubuntu' /etc/os-release 2>/dev/null; then SDK=$SRC/.paddle-lite/sdk-x86_64-ubuntu24
    else SDK=$SRC/.paddle-lite/sdk-x86_64-debian12; fi
fi
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/bench_cpu.XXXXXX)
mkdir -p "$WORK"
RES=$WORK/results.tsv
: >"$RES"

# the Paddle-Lite runner, built once against the SDK
PLR=""
if [ -f "$SDK/include/paddle_api.h" ] && [ -f "$SDK/lib/libpaddle_light_api_shared.so" ]; then
    if g++ -O2 -std=c++11 "$SRC/probes/paddle-lite/pl_probe_runner.cc" -I"$SDK/include" -L"$SDK/lib" \
        -lpaddle_light_api_shared -Wl,-rpath,"$SDK/lib" -ldl -o "$WORK/pl_probe_runner" 2>"$WORK/plr_build.log"; then
        PLR=$WORK/pl_probe_runner
    else
        echo "bench_cpu.sh: building the Paddle-Lite runner failed: $WORK/plr_build.log (cldiff columns only)" >&2
    fi
else
    echo "bench_cpu.sh: no Paddle-Lite x86 SDK at $SDK (--sdk DIR); cldiff columns only" >&2
fi

# model list: "path<TAB>shape args"
LIST=$WORK/models.tsv
: >"$LIST"
for dir in "$MODELS" $ZOO; do
    [ -d "$dir" ] || continue
    # a zoo root (scripts/zoo): <name>/info.json with precision fp32 and <name>/<name>_x86.nb
    "$PY" - "$dir" "$ONLY" <<'EOF' >>"$LIST"
import glob, json, os, sys
root, only = sys.argv[1], [x for x in sys.argv[2].split(",") if x]
for info in sorted(glob.glob(os.path.join(root, "*", "info.json"))):
    d = os.path.dirname(info)
    name = os.path.basename(d)
    nb = os.path.join(d, name + "_x86.nb")
    try:
        j = json.load(open(info))
    except (OSError, ValueError):
        continue
    if j.get("precision") != "fp32" or not os.path.isfile(nb):
        continue
    if only and os.path.basename(nb) not in only:
        continue
    shp = j.get("input_shape")
    arg = f" --shape {j.get('input_name', 'x')}={','.join(str(v) for v in shp)}" if shp else ""
    print(f"{nb}\t{arg}")
EOF
    for m in "$dir"/*fp32*.nb; do
        [ -f "$m" ] || continue
        b=$(basename "$m")
        if [ -n "$ONLY" ] && ! printf ',%s,' "$ONLY" | grep -q ",$b,"; then continue; fi
        shp=""
        if [ -f "$dir/shapes.txt" ]; then
            line=$(grep -v '^#' "$dir/shapes.txt" | awk -v f="$b" '$1 == f' | head -1)
            for kv in $(echo "$line" | cut -d' ' -f2-); do
                [ "$kv" = "$b" ] || shp="$shp --shape $kv"
            done
        fi
        printf '%s\t%s\n' "$m" "$shp" >>"$LIST"
    done
done
[ -s "$LIST" ] || { echo "bench_cpu.sh: no *fp32*.nb models in $MODELS $ZOO" >&2; exit 2; }

# inputs: cldiff's own (seeded) draw, saved as input_<k>.npy in feed order for the runner
k=0
while IFS=$'\t' read -r m shp; do
    k=$((k + 1))
    d=$WORK/m$k
    mkdir -p "$d/in" "$d/pl"
    # shellcheck disable=SC2086
    "$CLDIFF" run --backends cpu "$m" $shp --layers outputs --threads 1 --quiet --out "$d/ref" </dev/null >"$d/ref.log" 2>&1
    # the op list (instruction k of Paddle-Lite = op k other than feed/fetch)
    # shellcheck disable=SC2086
    "$CLDIFF" inspect "$m" $shp </dev/null >"$d/inspect.txt" 2>&1
    "$PY" - "$d/ref/dump.h5" "$d/in" "$CLDIFF" "$m" "$shp" <<'EOF' >>"$d/ref.log" 2>&1
import subprocess, sys, h5py, numpy as np
dump, out, cldiff, model, shp = sys.argv[1:6]
f = h5py.File(dump, "r")
names = list(f["inputs"].keys())
# feed order: the order `cldiff inspect` lists the inputs in (HDF5 sorts names)
try:
    txt = subprocess.run([cldiff, "inspect", model] + shp.split(), capture_output=True, text=True).stdout
    pos = {n: txt.find(n) for n in names}
    names.sort(key=lambda n: pos[n] if pos[n] >= 0 else 1 << 30)
except OSError:
    pass
for i, n in enumerate(names):
    np.save(f"{out}/input_{i}.npy", np.ascontiguousarray(f["inputs"][n][()]))
EOF
done <"$LIST"

one_cldiff() { # model-index threads
    local d=$WORK/m$1 m=$2 shp=$3 t=$4
    # shellcheck disable=SC2086
    if pinned "$CLDIFF" run --backends cpu "$m" $shp --layers outputs --threads "$t" --quiet "${CPUOPT[@]}" \
        --backend-opt cpu:repeat="$REPEAT" --out "$d/c$t" </dev/null >"$d/c$t.log" 2>&1; then
        "$PY" -c 'import sys,h5py; a=h5py.File(sys.argv[1],"r")["runs/cpu"].attrs; print(a["cold_ms"], a.get("warm_ms", a["cold_ms"]))' \
            "$d/c$t/dump.h5" 2>/dev/null || echo "nan nan"
    else
        echo "nan nan"
    fi
}
one_pl() { # model-index model threads warmup repeat: "run_ms min max" (the median of the timed runs)
    local d=$WORK/m$1 m=$2 t=$3 w=$4 n=$5
    [ -n "$PLR" ] || { echo "nan nan nan"; return; }
    rm -f "$d/pl/run.txt"
    if pinned "$PLR" "$m" "$d/in" "$d/pl" --threads "$t" --warmup "$w" --repeat "$n" </dev/null >"$d/pl$t.log" 2>&1; then
        awk '$1 == "run_ms" {v = $2} $1 == "run_ms_min" {lo = $2} $1 == "run_ms_max" {hi = $2}
             END {if (v == "") print "nan nan nan"; else print v, (lo == "" ? v : lo), (hi == "" ? v : hi)}' "$d/pl/run.txt"
    else
        echo "nan nan nan"
    fi
}

# per-op-type and heaviest-op tables of each model and thread count (cpu:timing=1), and Paddle-Lite's
# time per instruction (--op-times), in processes of their own: the op-by-op account of a ratio. Pass 1
# before the rounds (files m<k>/timing_t<T>.txt, plops_t<T>.txt, plops_first_t<T>.txt), passes 2..N
# after them (the same names with .p<N> before .txt); the report takes, per side, the pass closest
# to the rounds' medians.
hooked_pass() { # suffix
    local k=0 m shp t
    while IFS=$'\t' read -r m shp; do
        k=$((k + 1))
        for t in $THREADS; do
            # shellcheck disable=SC2086
            pinned "$CLDIFF" run --backends cpu "$m" $shp --layers outputs --threads "$t" --quiet "${CPUOPT[@]}" \
                --backend-opt cpu:repeat="$REPEAT" --backend-opt cpu:timing=1 --out "$WORK/m$k/tt$t" \
                </dev/null >/dev/null 2>"$WORK/m$k/timing_t$t$1.txt" || true
            rm -f "$WORK/m$k/plops_t$t$1.txt" "$WORK/m$k/plops_first_t$t$1.txt"
            [ -n "$PLR" ] && { pinned "$PLR" "$m" "$WORK/m$k/in" "$WORK/m$k/plo" --threads "$t" --warmup "$WARMUP" \
                --repeat "$REPEAT" --op-times "$WORK/m$k/plops_t$t$1.txt" </dev/null >"$WORK/m$k/plops_t$t$1.log" 2>&1 || true; }
            # the first run after load, op by op (each kernel's PrepareForRun runs inside its first launch)
            [ -n "$PLR" ] && { pinned "$PLR" "$m" "$WORK/m$k/in" "$WORK/m$k/plo" --threads "$t" --warmup 0 \
                --op-times "$WORK/m$k/plops_first_t$t$1.txt" </dev/null >"$WORK/m$k/plops_first_t$t$1.log" 2>&1 || true; }
        done
    done <"$LIST"
}
hooked_pass ""

for r in $(seq 1 "$ROUNDS"); do
    k=0
    while IFS=$'\t' read -r m shp; do
        k=$((k + 1))
        for t in $THREADS; do
            read -r cc cw < <(one_cldiff "$k" "$m" "$shp" "$t")
            read -r pf _ _ < <(one_pl "$k" "$m" "$t" 0 1)
            read -r pw pwlo pwhi < <(one_pl "$k" "$m" "$t" "$WARMUP" "$REPEAT")
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$m")" "$t" "$r" "$cc" "$cw" "$pf" "$pw" \
                "$pwlo" "$pwhi" >>"$RES"
        done
    done <"$LIST"
    echo "bench_cpu.sh: round $r of $ROUNDS done" >&2
done
for p in $(seq 2 "$OPPASSES"); do hooked_pass ".p$p"; done

# the tables (scripts/bench_cpu_report.py): summary with spreads, cold parts, the gap op by op
"$PY" "$SRC/scripts/bench_cpu_report.py" "$RES" "$WORK" "$REPEAT" "$WARMUP" "$ROUNDS" "$PIN"
