#!/usr/bin/env bash
# fp16 cost benchmark (docs/benchmarks.md, "fp16 cost"; issue 20 point 4): every model of
# ../shared/models (or $MODELS) runs the default differential run `cldiff MODEL --fp32` and
# `cldiff MODEL --fp16` (--layers all, local check on) N times, fp32 and fp16 interleaved, and
# prints per model the median wall seconds and the median CPU seconds (user+sys of the process
# and its children: the OpenCL child included) of each precision and their fp16/fp32 ratios.
#
#   scripts/bench_fp16.sh [--cldiff PATH] [--base PATH [--warm-each]] [--repeat N] [--only a.nb,b.nb]
#                         [--work DIR] [--phases] [-- extra cldiff args, e.g. --cl-platform NVIDIA]
#
# --base PATH: a second binary ("before"; --cldiff is "after"), run interleaved with the first in
# every round (before fp32, before fp16, after fp32, after fp16), one table per binary. The first
# binary's untimed warm-up fills the kernel cache for both; --warm-each warms with each (when
# their kernels differ).
# --phases sets CLDIFF_PHASE_TIMES=1: cldiff prints each phase's wall and CPU ms, kept in
# WORK/<model>-<prec>-<i>-<after|before>.log, and a second table gives their medians. Exit 0
# unless an argument is wrong (2) or a run did not end with exit 0/1 (3: the table marks it). On a
# shared machine compare medians, not single runs.
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
bin=${CLDIFF:-$here/build/cldiff}
models=${MODELS:-$here/../shared/models}
repeat=3
base=""
warm_each=0
only=""
work=""
phases=0
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --cldiff) bin=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        --warm-each) warm_each=1; shift ;;
        --repeat) repeat=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        --phases) phases=1; shift ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench_fp16.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$repeat" in ''|*[!0-9]*|0) echo "bench_fp16.sh: --repeat needs a positive count, got '$repeat'" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "bench_fp16.sh: cldiff binary '$bin' not found or not executable (--cldiff PATH)" >&2; exit 2; }
[ -z "$base" ] || [ -x "$base" ] || { echo "bench_fp16.sh: --base binary '$base' not found or not executable" >&2; exit 2; }
[ -d "$models" ] || { echo "bench_fp16.sh: model folder '$models' not found (--models DIR)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_fp16.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
keep=1
if [ -z "$work" ]; then work=$(mktemp -d /tmp/bench_fp16.XXXXXX); keep=0; fi
mkdir -p "$work"
# a private kernel cache, warmed by one untimed run per model and precision
export XDG_CACHE_HOME="$work/cache"
[ "$phases" = 1 ] && export CLDIFF_PHASE_TIMES=1

list=()
for f in "$models"/*.nb; do
    b=$(basename "$f")
    if [ -n "$only" ] && ! printf ',%s,' "$only" | grep -q ",$b,"; then continue; fi
    list+=("$b")
done
[ ${#list[@]} -gt 0 ] || { echo "bench_fp16.sh: no model matched in '$models'" >&2; exit 2; }

shape_args() {
    [ -f "$models/shapes.txt" ] || return 0
    awk -v m="$1" '$1 == m { for (i = 2; i <= NF; i++) printf "--shape\n%s\n", $i }' "$models/shapes.txt"
}

bad=0
times="$work/times.tsv"
: > "$times"
bins=("$bin"); labels=(after)
[ -n "$base" ] && { bins=("$base" "$bin"); labels=(before after); }
one() { # label binary model prec i -> appends "model prec i rc wall cpu label"
    local lb=$1 b=$2 m=$3 p=$4 i=$5 out="$work/${3%.nb}-$4"
    local -a sa
    mapfile -t sa < <(shape_args "$m")
    rm -rf "$out"
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$b" "$models/$m" --$p "${sa[@]}" --out "$out" --quiet --no-repro \
        "${extra[@]}" > "$work/${m%.nb}-$p-$i-$lb.log" 2>&1
    local rc=$?
    read -r w u s < <(tail -n 1 "$work/t")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$p" "$i" "$rc" "$w" "$(awk "BEGIN{print $u + $s}")" "$lb" >> "$times"
    [ "$rc" -le 1 ] || bad=1
}
for m in "${list[@]}"; do
    echo "== $m" >&2
    for k in "${!bins[@]}"; do   # the kernel cache, warmed by the first binary (--warm-each: each)
        [ "$k" = 0 ] || [ "$warm_each" = 1 ] || continue
        for p in fp32 fp16; do one "${labels[$k]}" "${bins[$k]}" "$m" "$p" warm; done
    done
    for i in $(seq 1 "$repeat"); do
        for k in "${!bins[@]}"; do
            for p in fp32 fp16; do one "${labels[$k]}" "${bins[$k]}" "$m" "$p" "$i"; done
        done
    done
done

python3 - "$times" "$work" "$phases" <<'PY'
import sys, statistics, re, os
allrows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
labels = []
for r in allrows:
    if r[6] not in labels: labels.append(r[6])
pat = re.compile(r"^cldiff: phase (\s*\S.*?)\s+wall\s+(\d+) ms\s+cpu\s+(\d+) ms")


def table(rows):
    models = []
    for r in rows:
        if r[0] not in models: models.append(r[0])
    print("| model | fp32 wall s | fp16 wall s | wall fp16/fp32 | fp32 CPU s | fp16 CPU s | CPU fp16/fp32 | exits (fp32/fp16) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    worst_w = worst_c = 0
    for m in models:
        med, ex = {}, {}
        for p in ("fp32", "fp16"):
            rs = [r for r in rows if r[0] == m and r[1] == p and r[2] != "warm"]
            ex[p] = ",".join(sorted(set(r[3] for r in rs)))
            med[p] = (statistics.median(float(r[4]) for r in rs), statistics.median(float(r[5]) for r in rs)) if rs else (0, 0)
        rw = med["fp16"][0] / med["fp32"][0] if med["fp32"][0] else 0
        rc = med["fp16"][1] / med["fp32"][1] if med["fp32"][1] else 0
        worst_w, worst_c = max(worst_w, rw), max(worst_c, rc)
        print("| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | %s / %s |" % (m[:-3], med["fp32"][0], med["fp16"][0], rw,
              med["fp32"][1], med["fp16"][1], rc, ex["fp32"], ex["fp16"]))
    # the goal (issue 20) is the user's wait, the wall time; CPU time is shown because cldiff's
    # own CPU runs take the idle cores of a big machine (CLDIFF_HELPER_THREADS)
    print("\nworst fp16/fp32 ratio: wall %.2fx (goal: 1.5x), CPU %.2fx" % (worst_w, worst_c))
    return models


def phases(rows, models, label):
    # per-phase medians (CLDIFF_PHASE_TIMES lines of each timed run's log): CPU ms (wall ms)
    print("\nper phase, median CPU ms (wall ms); \"B's ...\": parts of B, in B's own process")
    for m in models:
        ph, order = {}, []
        for r in rows:
            if r[0] != m or r[2] == "warm": continue
            log = os.path.join(sys.argv[2], "%s-%s-%s-%s.log" % (m[:-3], r[1], r[2], label))
            seen = {}
            for line in open(log, errors="replace"):
                g = pat.match(line)
                if not g: continue
                name = g.group(1).rstrip()
                w, c = seen.get(name, (0, 0))
                seen[name] = (w + int(g.group(2)), c + int(g.group(3)))
                if name not in order: order.append(name)
            for name, (w, c) in seen.items(): ph.setdefault((name, r[1]), []).append((w, c))
        print("\n| %s | fp32 | fp16 |\n|---|---:|---:|" % m[:-3])
        for name in order:
            cells = []
            for p in ("fp32", "fp16"):
                v = ph.get((name, p))
                cells.append("%.0f (%.0f)" % (statistics.median(c for w, c in v), statistics.median(w for w, c in v)) if v else "-")
            print("| %s | %s | %s |" % ("B's " + name.strip() if name.startswith(" ") else name, cells[0], cells[1]))


for label in labels:
    rows = [r for r in allrows if r[6] == label]
    if len(labels) > 1: print("\n### %s\n" % label)
    models = table(rows)
    if sys.argv[3] == "1": phases(rows, models, label)
PY
[ "$keep" = 1 ] || rm -rf "$work"
[ "$bad" = 0 ] || { echo "bench_fp16.sh: some run exited with neither 0 nor 1 (see the exits column)" >&2; exit 3; }
exit 0
