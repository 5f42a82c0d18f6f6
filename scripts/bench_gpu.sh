#!/usr/bin/env bash
# OpenCL benchmark of every model on a GPU machine (used through the `device` tool; works
# anywhere with an OpenCL device): builds cldiff without tests, runs each model on OpenCL in
# fp32 and fp16 (REPEATS times, warm program cache after the first), one CPU-vs-OpenCL
# differential run per model and precision, and writes a Markdown summary.
#   scripts/bench_gpu.sh MODELS_DIR OUT_DIR [PLATFORM_SUBSTRING] [REPEATS]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
models=$1 out=$2 plat=${3:-} reps=${4:-3}
mkdir -p "$out"
inc=()
[ -d "$here/.devcarry/include" ] && inc=(-DOPENCL_INCLUDE_DIR="$here/.devcarry/include")
cmake -S "$here" -B "$here/build-bench" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_TESTS=OFF "${inc[@]}" >/dev/null || exit 1
cmake --build "$here/build-bench" -j"$(nproc)" --target cldiff >/dev/null || exit 1
cl="$here/build-bench/cldiff"
plat_args=()
[ -n "$plat" ] && plat_args=(--cl-platform "$plat")
"$cl" doctor "${plat_args[@]}" >"$out/doctor.txt" 2>&1
export XDG_CACHE_HOME="$out/cache"
args=()
for m in "$models"/${BENCH_MODELS:-*}.nb; do
  b=$(basename "$m" .nb)
  sh=$(grep "^$b.nb " "$models/shapes.txt" 2>/dev/null | cut -d' ' -f2-)
  shape=()
  for s in $sh; do shape+=(--shape "$s"); done
  [ "$b" = mask_detector_fp32_arm_meta0_7735976 ] && shape=(--shape @HUB_pyramidbox_lite_mobile_mask@image=1,3,128,128)
  for p in fp32 fp16; do
    dumps=""
    for r in $(seq 1 "$reps"); do
      d="$out/runs/$b.$p.$r"
      "$cl" run --quiet --backends opencl --$p "${plat_args[@]}" "${shape[@]}" --out "$d" "$m" >>"$out/run.log" 2>&1
      echo "$b $p run $r rc=$?" >>"$out/run.log"
      [ -f "$d/dump.h5" ] && dumps="$dumps,$d/dump.h5"
    done
    [ -n "$dumps" ] && args+=("$b $p=${dumps#,}")
    "$cl" --quiet --$p "${plat_args[@]}" "${shape[@]}" --out "$out/diff/$b.$p" "$m" >>"$out/diff.log" 2>&1
    rc=$?
    v=$(python3 -c "import json;d=json.load(open('$out/diff/$b.$p/summary.json'));f=d['first_divergence'];print(d['verdict'],d['layers_failed'],'/',d['layers_compared'],(f['layer']+' '+f['kind']) if f else '')" 2>/dev/null)
    echo "| $b | $p | $rc | $v |" >>"$out/verdicts.md"
  done
done
python3 "$here/scripts/opencl_report.py" --title "cldiff OpenCL runs" "${args[@]}" >"$out/report.md"
