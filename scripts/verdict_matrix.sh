#!/usr/bin/env bash
# Clean-run evidence for docs/devices.md: every model of ../shared/models (or $MODELS) x fp32
# and fp16 through `cldiff MODEL --layers all`, one line per run with the verdict, the first
# kernel fault (layer, ratio of local error to bound), layers drifted, and every output's
# range error and cosine. Usage: scripts/verdict_matrix.sh CLDIFF OUTDIR [extra cldiff args]
# (e.g. --cl-platform NVIDIA on the GPU machine). Writes OUTDIR/matrix.md. Exit 0 always:
# this is a measurement, not a test.
set -u
bin=$1; root=$2; shift 2
here="$(cd "$(dirname "$0")/.." && pwd)"
M=${MODELS:-$here/../shared/models}
mkdir -p "$root"
py=python3
out="$root/matrix.md"
echo "| model | precision | exit | verdict | first fault (ratio) | drifted layers | outputs: range error / cosine | wall s |" > "$out"
echo "|---|---|---|---|---|---|---|---|" >> "$out"
for prec in fp32 fp16; do
  for f in "$M"/*.nb; do
    b=$(basename "$f" .nb)
    args=()
    for s in $(grep "^$b.nb " "$M/shapes.txt" 2>/dev/null | cut -d' ' -f2-); do args+=(--shape "$s"); done
    t0=$(date +%s.%N)
    "$bin" "$f" --layers all --$prec "${args[@]}" --out "$root/$b-$prec" --quiet --no-repro "$@" > "$root/$b-$prec.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    line=$($py - "$root/$b-$prec/summary.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("| (no summary) | | | |"); sys.exit()
ff = d.get("first_fault") or {}
outs = []
for o in d.get("outputs") or []:
    det = o.get("detections")
    extra = " det %s/%s/%s" % (det["ref"], det["val"], det["matched"]) if det else ""
    outs.append("%s %.2e / %.6f%s%s" % (o.get("layer"), o.get("range_err") or 0, o.get("cosine") or 0, extra,
                                       "" if o.get("pass") else " **out**"))
print("| %s | %s | %s | %s |" % (d.get("verdict_kind"), ("%s (%.3g)" % (ff["layer"], ff["ratio"])) if ff else "-",
                                 d.get("layers_drifted"), "; ".join(outs)))
PY
)
    printf "| %s | %s | %d %s %.1f |\n" "$b" "$prec" "$rc" "$line" "$(awk "BEGIN{print $t1 - $t0}")" | sed 's/ | \([0-9.]*\) |$/ | \1 |/' >> "$out"
    tail -n 1 "$out"
  done
done
