#!/usr/bin/env bash
# cldiff's CPU reference against Paddle-Lite x86 on the same models, inputs and thread counts
# (docs/benchmarks.md "CPU reference vs Paddle-Lite x86").
#
#   scripts/bench_cpu.sh [--cldiff PATH] [--models DIR] [--zoo DIR] [--only a.nb,b.nb]
#                        [--rounds N] [--threads "1 2"] [--repeat N] [--warmup N] [--sdk DIR]
#                        [--work DIR] [--cpu-opt KEY=VALUE]...
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
#            --warmup W (default 3)
# and prints per model and thread count the medians and the ratios cldiff/PL (warm/warm,
# cold/first); cldiff's per-op-type and heaviest-op tables (cpu:timing=1) of each model and
# thread count are kept in the work folder (m<k>/timing_t<T>.txt). A model Paddle-Lite x86
# cannot run (an ARM-only .nb) gets "n/a" and the reason. --cpu-opt KEY=VALUE adds
# --backend-opt cpu:KEY=VALUE to cldiff's timed runs (an A/B, e.g. prepare_threads=2).
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
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
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
    -h|--help) usage 0 ;;
    *) echo "bench_cpu.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -x "$CLDIFF" ] || { echo "bench_cpu.sh: $CLDIFF not built (cmake --build build)" >&2; exit 2; }
[ -d "$MODELS" ] || { echo "bench_cpu.sh: model folder $MODELS not found (--models DIR)" >&2; exit 2; }
"$PY" -c 'import numpy, h5py' 2>/dev/null || { echo "bench_cpu.sh: $PY lacks numpy or h5py" >&2; exit 2; }
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
        -lpaddle_light_api_shared -Wl,-rpath,"$SDK/lib" -o "$WORK/pl_probe_runner" 2>"$WORK/plr_build.log"; then
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
    if "$CLDIFF" run --backends cpu "$m" $shp --layers outputs --threads "$t" --quiet "${CPUOPT[@]}" \
        --backend-opt cpu:repeat="$REPEAT" --out "$d/c$t" </dev/null >"$d/c$t.log" 2>&1; then
        "$PY" -c 'import sys,h5py; a=h5py.File(sys.argv[1],"r")["runs/cpu"].attrs; print(a["cold_ms"], a.get("warm_ms", a["cold_ms"]))' \
            "$d/c$t/dump.h5" 2>/dev/null || echo "nan nan"
    else
        echo "nan nan"
    fi
}
one_pl() { # model-index model threads warmup
    local d=$WORK/m$1 m=$2 t=$3 w=$4
    [ -n "$PLR" ] || { echo nan; return; }
    if "$PLR" "$m" "$d/in" "$d/pl" --threads "$t" --warmup "$w" </dev/null >"$d/pl$t.log" 2>&1; then
        awk '$1 == "run_ms" {print $2}' "$d/pl/run.txt"
    else
        echo nan
    fi
}

# per-op-type and heaviest-op tables of each model and thread count (cpu:timing=1), once: the
# op-by-op account of a ratio
k=0
while IFS=$'\t' read -r m shp; do
    k=$((k + 1))
    for t in $THREADS; do
        # shellcheck disable=SC2086
        "$CLDIFF" run --backends cpu "$m" $shp --layers outputs --threads "$t" --quiet "${CPUOPT[@]}" \
            --backend-opt cpu:repeat="$REPEAT" --backend-opt cpu:timing=1 --out "$WORK/m$k/tt$t" \
            </dev/null >/dev/null 2>"$WORK/m$k/timing_t$t.txt" || true
    done
done <"$LIST"

for r in $(seq 1 "$ROUNDS"); do
    k=0
    while IFS=$'\t' read -r m shp; do
        k=$((k + 1))
        for t in $THREADS; do
            read -r cc cw < <(one_cldiff "$k" "$m" "$shp" "$t")
            pf=$(one_pl "$k" "$m" "$t" 0)
            pw=$(one_pl "$k" "$m" "$t" "$WARMUP")
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$m")" "$t" "$r" "$cc" "$cw" "$pf" "$pw" >>"$RES"
        done
    done <"$LIST"
    echo "bench_cpu.sh: round $r of $ROUNDS done" >&2
done

"$PY" - "$RES" "$WORK" "$REPEAT" "$WARMUP" "$ROUNDS" <<'EOF'
import math, sys, statistics
res, work, repeat, warmup, rounds = sys.argv[1:6]
rows = {}
for line in open(res):
    m, t, r, cc, cw, pf, pw = line.rstrip("\n").split("\t")
    rows.setdefault((m, int(t)), []).append([float(x) for x in (cc, cw, pf, pw)])
def med(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.median(v) if v else float("nan")
def f(x, p=1):
    return "n/a" if math.isnan(x) else f"{x:.{p}f}"
print(f"# cldiff CPU vs Paddle-Lite x86: medians of {rounds} interleaved rounds (ms); cldiff cpu:repeat={repeat}, "
      f"PL warm after --warmup {warmup}")
print("# cldiff cold = cold_ms: backend open + prepare (filters packed) + run 1, less the dump writes of its outputs "
      "(cold_probes_ms); PL first = run_ms of its first Run() (PrepareForRun inside; load, input copy and output "
      "fetch outside): docs/cpu-backend.md \"Timing\"")
print("| model | threads | cldiff cold | cldiff warm | PL first | PL warm | warm ratio cldiff/PL | cold ratio cldiff/PL first |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (m, t), v in sorted(rows.items()):
    cc, cw, pf, pw = (med([x[i] for x in v]) for i in range(4))
    print(f"| {m} | {t} | {f(cc, 2)} | {f(cw, 2)} | {f(pf, 2)} | {f(pw, 2)} | {f(cw / pw, 2)} | {f(cc / pf, 2)} |")
print(f"(work folder: {work}; a n/a PL column: see m*/pl<T>.log there; cldiff's per-op-type and heaviest-op "
      f"tables: m<k>/timing_t<T>.txt, m<k> being line k of {work}/models.tsv)")
# where each cold run went: the parts cpu:timing=1 printed (one process per model and thread count)
import glob, os, re
names = [os.path.basename(l.split("\t")[0]) for l in open(os.path.join(work, "models.tsv")) if l.strip()]
num = r"(-?[0-9.]+)"
pats = {"cold": r"cold " + num + r" ms \(open", "open": r"cold = open " + num, "prep": r"\+ prepare " + num + r" \(",
        "pool": r"prepare: pool " + num, "hooks": r"op hooks \(attributes, packed filters\) " + num,
        "ops": r"\+ ops " + num, "wops": r"warm ops " + num, "exe": r"\+ executor " + num,
        "fp": r"open \+ prepare (\d+), run 1", "fr": r"run 1 (\d+),"}
parts = []
for k, name in enumerate(names, 1):
    for tf in sorted(glob.glob(os.path.join(work, f"m{k}", "timing_t*.txt"))):
        txt = open(tf).read()
        got = {key: re.search(p, txt) for key, p in pats.items()}
        if all(got.values()):
            parts.append((name, tf.rsplit("_t", 1)[1][:-4], {key: float(g.group(1)) for key, g in got.items()}))
if parts:
    print()
    print("# cldiff's cold run in parts (ms; one process each, cpu:timing=1: m<k>/timing_t<T>.txt): prepare = the "
          "pool's fill + the op hooks (attributes, packed filters; summed over threads) + setup; page faults of "
          "prepare and of run 1")
    print("| model | threads | cold | open | prepare | pool | op hooks | ops cold | ops warm | executor | page faults |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, t, v in parts:
        print(f"| {name} | {t} | {v['cold']:.2f} | {v['open']:.3f} | {v['prep']:.3f} | {v['pool']:.3f} | "
              f"{v['hooks']:.3f} | {v['ops']:.3f} | {v['wops']:.3f} | {v['exe']:.3f} | {int(v['fp'])} + {int(v['fr'])} |")
EOF
