#!/usr/bin/env bash
# Cost of the engines (docs/paddle-lite-engines.md "Results", docs/mnn.md "Cost"): for each model,
# the median wall time of N runs of each engine alone (`cldiff run --backends E`), cldiff's CPU
# alone, and the whole differential run of the pair, interleaved, after one warm-up of each (PoCL's
# kernel cache, the Opt cache and the runners are warm then), and the ratios to the CPU run.
#
#   scripts/bench_engines.sh CLDIFF [N] [MODEL[:shape] ...]
#   COLD=1 scripts/bench_engines.sh CLDIFF [N] [MODEL[:shape] ...]
#
# Engines: $ENGINES (default "paddle-lite-arm paddle-lite-opencl"), the pair $PAIR (default the two
# engines joined by a comma). For MNN: ENGINES="mnn-cpu mnn-opencl" with .mnn models (default then:
# the models of testdata/mnn that cldiff's CPU runs whole). Default Paddle-Lite models:
# mask_detector, ppocr_v4_mobile_cls (x=1,3,48,192), ppocr_v2.0_cls; N = 3. A run that fails
# prints "fail" (its exit code) instead of a time. Extra cldiff options in $CLDIFF_ARGS (e.g.
# --backend-opt paddle-lite-opencl:vendors=DIR).
# COLD=1: every timed run starts from empty caches, a model's first run on this machine
# (docs/benchmarks.md "First runs"): a fresh CLDIFF_CACHE_DIR (Opt outputs, cldiff's OpenCL
# programs) and XDG_CACHE_HOME (PoCL's kernel cache); the engines' runners built once per
# machine are copied in from the usual cache, so their build is not counted.
# A crash and its search over model prefixes (docs/paddle-lite-engines.md "An engine that dies"):
# CLDIFF_ARGS="--backend-opt paddle-lite-opencl:fetch-2d-shared=force" makes picodet (243 ops) and
# scripts/make_deep_int8.py's 642-op model abort in Paddle-Lite OpenCL (report M).
set -u
bin=$1; n=${2:-3}; shift; [ $# -gt 0 ] && shift
here="$(cd "$(dirname "$0")/.." && pwd)"
M=${MODELS:-$here/../shared/models}
read -r -a engines <<< "${ENGINES:-paddle-lite-arm paddle-lite-opencl}"
pair=${PAIR:-$(IFS=,; echo "${engines[*]}")}
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  case "${engines[0]}" in
    mnn-*) models=("$here/testdata/mnn/conv.mnn" "$here/testdata/mnn/branches.mnn" "$here/testdata/mnn/attention.mnn") ;;
    *) models=("$M/mask_detector_fp32_arm_v2.10rc.nb" "$M/ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb:x=1,3,48,192"
               "$M/ppocr_v2.0_cls_fp32_arm_v2.14rc.nb:x=1,3,48,192") ;;
  esac
fi
out=$(mktemp -d /tmp/cldiff-bench-engines-XXXXXX)
trap 'rm -rf "$out"' EXIT
cache=${CLDIFF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cldiff}
# one timed run: seconds, or "fail:RC"
t() {
  local s e rc
  if [ "${COLD:-0}" = 1 ]; then
    rm -rf "$out/cold"; mkdir -p "$out/cold/cldiff"
    for r in pl-runner mnn-runner; do [ -d "$cache/$r" ] && cp -r "$cache/$r" "$out/cold/cldiff/"; done
    s=$(date +%s.%N); CLDIFF_CACHE_DIR=$out/cold/cldiff XDG_CACHE_HOME=$out/cold "$@" > /dev/null 2>&1; rc=$?; e=$(date +%s.%N)
  else
    s=$(date +%s.%N); "$@" > /dev/null 2>&1; rc=$?; e=$(date +%s.%N)
  fi
  # 0 pass, 1 a verdict, 10 incomplete: the run finished; anything else is a failure to report
  case $rc in 0|1|10) python3 -c "print(f'{$e-$s:.3f}')" ;; *) echo "fail:$rc" ;; esac
}
med() {
  python3 -c "
import statistics, sys
v = sys.argv[1:]
bad = [x for x in v if x.startswith('fail')]
print(bad[0] if bad else f'{statistics.median(map(float, v)):.2f}')" $1
}
ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print('-' if 'fail' in a + b else f'{float(a)/float(b):.1f}')" "$1" "$2"; }
cols=(cpu "${engines[@]}" diff)
printf '%-40s' model; for c in "${cols[@]}"; do printf ' %18s' "${c}_s"; done
for e in "${engines[@]}"; do printf ' %18s' "$e/cpu"; done; printf ' %10s\n' diff/cpu
for spec in "${models[@]}"; do
  m=${spec%%:*}; shp=(); [ "$spec" != "$m" ] && shp=(--shape "${spec#*:}")
  inp=(); [ -f "${m%.*}.input.npy" ] && inp=(--input "${m%.*}.input.npy")
  declare -A times=()
  for round in $(seq 0 "$n"); do
    for what in "${cols[@]}"; do
      if [ "$what" = diff ]; then
        s=$(t "$bin" "$m" "${shp[@]}" "${inp[@]}" --backends "$pair" --out "$out/d" --no-repro ${CLDIFF_ARGS:-})
      else
        s=$(t "$bin" run --backends "$what" "$m" "${shp[@]}" "${inp[@]}" --out "$out/r" ${CLDIFF_ARGS:-})
      fi
      [ "$round" -gt 0 ] && times[$what]="${times[$what]:-} $s"   # round 0 warms the caches
    done
  done
  name=$(basename "$m"); printf '%-40s' "${name%.*}"
  for c in "${cols[@]}"; do printf ' %18s' "$(med "${times[$c]}")"; done
  c=$(med "${times[cpu]}")
  for e in "${engines[@]}"; do printf ' %18s' "$(ratio "$(med "${times[$e]}")" "$c")"; done
  printf ' %10s\n' "$(ratio "$(med "${times[diff]}")" "$c")"
  unset times
done
