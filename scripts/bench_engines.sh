#!/usr/bin/env bash
# Cost of the Paddle-Lite engines (docs/paddle-lite-engines.md "Results"): for each model, the
# median wall time of N runs of Paddle-Lite ARM alone (`cldiff run --backends paddle-lite-arm`,
# qemu here), Paddle-Lite OpenCL alone, cldiff's CPU alone, and the whole differential run
# `--backends paddle-lite-arm,paddle-lite-opencl`, interleaved, after one warm-up of each (PoCL's
# kernel cache and the Opt cache are warm then), and the ratios to the CPU run.
#
#   scripts/bench_engines.sh CLDIFF [N] [MODEL.nb[:shape] ...]
#   COLD=1 scripts/bench_engines.sh CLDIFF [N] [MODEL.nb[:shape] ...]
#
# Default models: mask_detector, ppocr_v4_mobile_cls (x=1,3,48,192), ppocr_v2.0_cls; N = 3.
# Extra cldiff options in $CLDIFF_ARGS (e.g. --backend-opt paddle-lite-opencl:vendors=DIR).
# COLD=1: every timed run starts from empty caches, a model's first run on this machine
# (docs/benchmarks.md "First runs"): a fresh CLDIFF_CACHE_DIR (Opt outputs, cldiff's OpenCL
# programs) and XDG_CACHE_HOME (PoCL's kernel cache); the Paddle-Lite runners built once per
# machine are copied in from the usual cache, so their build is not counted.
set -u
bin=$1; n=${2:-3}; shift; [ $# -gt 0 ] && shift
here="$(cd "$(dirname "$0")/.." && pwd)"
M=${MODELS:-$here/../shared/models}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=("$M/mask_detector_fp32_arm_v2.10rc.nb" "$M/ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb:x=1,3,48,192"
                                    "$M/ppocr_v2.0_cls_fp32_arm_v2.14rc.nb:x=1,3,48,192")
out=$(mktemp -d /tmp/cldiff-bench-engines-XXXXXX)
trap 'rm -rf "$out"' EXIT
runners=${CLDIFF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cldiff}/pl-runner
t() {
  local s e
  if [ "${COLD:-0}" = 1 ]; then
    rm -rf "$out/cold"; mkdir -p "$out/cold/cldiff"
    [ -d "$runners" ] && cp -r "$runners" "$out/cold/cldiff/"
    s=$(date +%s.%N); CLDIFF_CACHE_DIR=$out/cold/cldiff XDG_CACHE_HOME=$out/cold "$@" > /dev/null 2>&1; e=$(date +%s.%N)
  else
    s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N)
  fi
  python3 -c "print(f'{$e-$s:.3f}')"
}
printf '%-40s %10s %10s %10s %10s %8s %8s\n' model cpu_s arm_s ocl_s diff_s arm/cpu diff/cpu
for spec in "${models[@]}"; do
  m=${spec%%:*}; shp=(); [ "$spec" != "$m" ] && shp=(--shape "${spec#*:}")
  declare -A times=()
  for round in $(seq 0 "$n"); do
    for what in cpu paddle-lite-arm paddle-lite-opencl diff; do
      if [ "$what" = diff ]; then
        s=$(t "$bin" "$m" "${shp[@]}" --backends paddle-lite-arm,paddle-lite-opencl --out "$out/d" --no-repro ${CLDIFF_ARGS:-})
      else
        s=$(t "$bin" run --backends "$what" "$m" "${shp[@]}" --out "$out/r" ${CLDIFF_ARGS:-})
      fi
      [ "$round" -gt 0 ] && times[$what]="${times[$what]:-} $s"   # round 0 warms the caches
    done
  done
  med() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" $1; }
  c=$(med "${times[cpu]}"); a=$(med "${times[paddle-lite-arm]}"); o=$(med "${times[paddle-lite-opencl]}")
  d=$(med "${times[diff]}")
  printf '%-40s %10s %10s %10s %10s %8s %8s\n' "$(basename "$m" .nb)" "$c" "$a" "$o" "$d" \
    "$(python3 -c "print(f'{$a/$c:.1f}')")" "$(python3 -c "print(f'{$d/$c:.1f}')")"
  unset times
done
