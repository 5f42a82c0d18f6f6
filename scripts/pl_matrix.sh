#!/usr/bin/env bash
# The Paddle-Lite engine matrix (docs/paddle-lite-engines.md): every model of ../shared/models
# (or $MODELS) and the writer-made testdata/*.nb, fp32, through the backend pairs given (default:
# paddle-lite-arm,cpu  paddle-lite-arm,paddle-lite-opencl  opencl,paddle-lite-opencl), one row per
# run: exit code, verdict, first kernel fault (layer, ratio) or crash op, worst model output
# (range error / cosine), wall time, and for the OpenCL engine what Opt placed.
#
#   scripts/pl_matrix.sh CLDIFF OUTDIR [--pairs "A,B C,D"] [-- extra cldiff args]
#
# Writes OUTDIR/matrix.md and OUTDIR/matrix.tsv. Exit 0 always: a measurement, not a test.
set -u
bin=$1; root=$2; shift 2
pairs="paddle-lite-arm,cpu paddle-lite-arm,paddle-lite-opencl opencl,paddle-lite-opencl"
if [ "${1:-}" = --pairs ]; then pairs=$2; shift 2; fi
[ "${1:-}" = -- ] && shift
here="$(cd "$(dirname "$0")/.." && pwd)"
M=${MODELS:-$here/../shared/models}
mkdir -p "$root"
out="$root/matrix.md"; tsv="$root/matrix.tsv"
echo "| model | backends | exit | verdict | first fault / crash | worst output: range error / cosine | wall s | OpenCL placement |" > "$out"
echo "|---|---|---|---|---|---|---|---|" >> "$out"
printf 'model\tbackends\texit\tverdict\tfirst\toutput\twall_s\n' > "$tsv"
models=("$M"/*.nb)
[ -n "${NO_TESTDATA:-}" ] || models+=("$here"/testdata/*.nb)
for pair in $pairs; do
  for f in "${models[@]}"; do
    [ -f "$f" ] || continue
    b=$(basename "$f" .nb)
    args=()
    for s in $(grep "^$b.nb " "$M/shapes.txt" 2>/dev/null | cut -d' ' -f2-); do args+=(--shape "$s"); done
    d="$root/$b-${pair/,/-vs-}"
    t0=$(date +%s.%N)
    "$bin" "$f" --backends "$pair" --fp32 "${args[@]}" --out "$d" --no-repro "$@" > "$d.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    wall=$(python3 -c "print($t1 - $t0)")
    line=$(python3 - "$d/summary.json" "$d.log" <<'PY'
import json, re, sys
log = open(sys.argv[2], errors="replace").read()
place = ""
m = re.search(r"paddle-lite-opencl: cldiff export.*?: (\d+ ops on opencl, \d+ on arm/x86, \d+ on host)", log)
if m:
    place = m.group(1)
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    last = [x for x in log.strip().splitlines() if x.startswith("cldiff:")][-1:] or ["(no summary)"]
    print("\t".join(["-", last[0][:300].replace("|", "/"), "-", place]))
    sys.exit()
ff = d.get("first_fault") or {}
first = "%s (%.3g)" % (ff["layer"], ff["ratio"]) if ff else "-"
if d.get("verdict") == "crash":
    m = re.search(r"at op #(\d+) (\S+) \(", log)
    first = "crash at op #%s %s" % (m.group(1), m.group(2)) if m else "crash (op unknown)"
worst = None
for o in d.get("outputs") or []:
    if worst is None or (o.get("range_err") or 0) > (worst.get("range_err") or 0):
        worst = o
w = "%s %.2e / %.6f" % (worst.get("layer"), worst.get("range_err") or 0, worst.get("cosine") or 0) if worst else "-"
print("\t".join([str(d.get("verdict_kind") or d.get("verdict")), first, w, place]))
PY
)
    IFS=$'\t' read -r verdict first outp place <<< "$line"
    echo "| $b | $pair | $rc | $verdict | $first | $outp | $(printf %.1f "$wall") | $place |" >> "$out"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n' "$b" "$pair" "$rc" "$verdict" "$first" "$outp" "$wall" >> "$tsv"
    echo "pl_matrix: $b $pair exit $rc $verdict $first ($(printf %.1f "$wall") s)"
  done
done
echo "pl_matrix: $out"
