#!/usr/bin/env bash
# The phone route (paddle-lite-phone, docs/paddle-lite-phone.md) on the shared opencl,arm model
# as it is: ../shared/models/ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb on the armv8 SDK with
# OpenCL under qemu-aarch64 on the arm64 PoCL sysroot of scripts/setup_phone.sh ($CD_SHARED_MODELS
# names the models folder).
#   1. doctor: every piece ok, the backend usable;
#   2. --fp16: exit 4 naming cl_khr_fp16;
#   3. cpu,paddle-lite-phone: exit 1; summary.json: KERNEL FAULT at conv2d_3 (Paddle-Lite's int8
#      GEMV), the MODEL DEFECT finding at conv2d_0 (20 ops), and the same finding in junit.xml,
#      summary.md and report.html;
#   4. tests/phone/phone_check.py: every faulting layer reproduced bit for bit from the phone's own
#      inputs by the independent oracle (bytes read as int8, GEMV act fall-through, 5x5 depthwise
#      alpha, SecondInput not added);
#   5. cldiff import of the engine's own outputs stores int8 tensors as q x scale, equal to the
#      engine run's dump;
#   6. models the engine cannot load: the op and the kernel it lacks (Paddle-Lite's own message,
#      else bisection over prefixes in the load phase).
# PoCL's kernel cache is cldiff's (CLDIFF_CACHE_DIR, else ~/.cache/cldiff): the first run on a
# machine compiles the model's kernels under emulation (~80 s here), later runs take seconds.
# Skipped (exit 77) with the reason when the model, the armv8 SDK, the sysroot or the Python venv
# is missing (step 0, the model defect on the ARM engine, needs no sysroot and runs first).
#   test_phone.sh CLDIFF SOURCE_DIR
set -u
CLDIFF=$(realpath "$1")
SRC=$(realpath "$2")
MODEL=${CD_SHARED_MODELS:-$SRC/../shared/models}/ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb
PY=$SRC/.venv/bin/python
[ -f "$MODEL" ] || { echo "SKIP: $MODEL is absent (the shared models)"; exit 77; }
[ -x "$PY" ] && "$PY" -c 'import numpy, h5py' 2>/dev/null || { echo "SKIP: $PY with numpy and h5py is absent (scripts/setup.sh)"; exit 77; }
OUT=$(mktemp -d /tmp/cldiff_phone.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fails=0
check() { if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi; }

# 0. the model defect without the phone's sysroot: the writer-made int8_matmul feeds relu's float
#    output to an int8 matmul with no calib; Paddle-Lite's ARM engine reads its bytes as int8:
#    MODEL DEFECT at matmul_0 (kind model_defect, exit 1) whichever side the engine is on (before: a
#    KERNEL FAULT at matmul_0, blamed on the kernel of run B)
doc=$("$CLDIFF" doctor 2>&1)
if grep -q "=> paddle-lite-arm usable" <<<"$doc"; then
    for pair in cpu,paddle-lite-arm paddle-lite-arm,cpu; do
        "$CLDIFF" "$SRC/testdata/int8_matmul.nb" --backends $pair --out "$OUT/im-$pair" >"$OUT/im-$pair.log" 2>&1; rc=$?
        "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); d=s["model_defect"] or {}
sys.exit(0 if s["verdict_kind"] == "model_defect" and d.get("layer") == "matmul_0" and d.get("ops") == 1 else 1)' \
            "$OUT/im-$pair/summary.json" 2>/dev/null
        check "int8_matmul $pair: MODEL DEFECT at matmul_0 (exit $rc)" "$([ $? = 0 ] && [ $rc = 1 ] && echo 0 || echo 1)" \
              "$(grep verdict "$OUT/im-$pair.log")"
    done
else
    echo "skip int8_matmul: paddle-lite-arm is not usable here"
fi

#    and the minimal repro of report G (the int8 GEMV applies hard_swish(1,3,6) for hard_sigmoid):
#    conv2d_3 alone, fed its int8 input directly, on the armv8 library (no OpenCL needed)
arm_blk=$(awk '$0 == "paddle-lite-arm:" {on = 1; next} /^[^ ]/ {on = 0} on' <<<"$doc")
runner=$(sed -n 's/^  ok      runner \([^ ]*\) .*/\1/p' <<<"$arm_blk" | head -1)
if [ -n "$runner" ] && [ -x "$runner" ]; then
    mkdir -p "$OUT/gemv"
    cp "$SRC/tests/phone/data/gemv_hard_sigmoid_input_0.npy" "$OUT/gemv/input_0.npy"
    qemu-aarch64 -L "${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}" "$runner" "$SRC/tests/phone/data/gemv_hard_sigmoid.nb" \
        "$OUT/gemv" "$OUT/gemv/out" --threads 1 >"$OUT/gemv.log" 2>&1
    "$PY" "$SRC/tests/phone/repro_gemv.py" "$SRC/tests/phone/data" "$OUT/gemv/out"
    check "repro E: Paddle-Lite's int8 GEMV computes x*clip(x+3,0,6) for hard_sigmoid" $? "$(tail -2 "$OUT/gemv.log")"
else
    echo "skip repro E: no paddle-lite-arm runner (doctor: $(grep -c MISSING <<<"$arm_blk") missing pieces)"
fi

# 1. doctor
blk=$(awk '$0 == "paddle-lite-phone:" {on = 1; next} /^[^ ]/ {on = 0} on' <<<"$doc")
if ! grep -q "=> paddle-lite-phone usable" <<<"$blk"; then
    echo "$blk"
    [ $fails = 0 ] || { echo "test_phone: $fails failure(s) before the phone route"; exit 1; }
    echo "SKIP: the phone route is not usable here: $(grep MISSING <<<"$blk" | head -3 | tr -s ' ')" \
         "(scripts/setup_phone.sh builds the sysroot; scripts/setup.sh tests calls it)"
    exit 77
fi
for piece in "qemu-aarch64" "arm64 sysroot" "arm64 runtime libraries" "PoCL ICD" "PoCL kernel library" "kernel linker"; do
    grep -q "^  ok      $piece " <<<"$blk"; check "doctor: $piece" $? "$(grep "$piece" <<<"$blk")"
done

#    a missing or partial sysroot: doctor names the piece, a run is exit 4
doc2=$(CLDIFF_PHONE_SYSROOT=/nonexistent "$CLDIFF" doctor 2>&1 | awk '$0 == "paddle-lite-phone:" {on = 1; next} /^[^ ]/ {on = 0} on')
grep -q "^  MISSING arm64 sysroot: no arm64 PoCL sysroot at /nonexistent (CLDIFF_PHONE_SYSROOT=/nonexistent): run scripts/setup_phone.sh" <<<"$doc2" &&
    grep -q "=> paddle-lite-phone NOT usable" <<<"$doc2"
check "doctor: a missing sysroot named" $? "$doc2"
mkdir -p "$OUT/partial/usr/lib/aarch64-linux-gnu" && ln -s usr/lib "$OUT/partial/lib" &&
    cp "$(realpath "$(sed -n 's/^  ok      arm64 sysroot \([^ ]*\) .*/\1/p' <<<"$blk")/lib/ld-linux-aarch64.so.1")" "$OUT/partial/usr/lib/"
doc3=$(CLDIFF_PHONE_SYSROOT=$OUT/partial "$CLDIFF" doctor 2>&1 | awk '$0 == "paddle-lite-phone:" {on = 1; next} /^[^ ]/ {on = 0} on')
grep -q "^  ok      arm64 sysroot $OUT/partial" <<<"$doc3" && grep -q "^  MISSING arm64 runtime libraries: .*libc.so.6 is missing" <<<"$doc3"
check "doctor: a partial sysroot names the missing libraries" $? "$doc3"
msg=$(CLDIFF_PHONE_SYSROOT=$OUT/partial "$CLDIFF" "$MODEL" --backends cpu,paddle-lite-phone --out "$OUT/partial-run" 2>&1); rc=$?
[ $rc = 4 ] && grep -q "paddle-lite-phone: arm64 runtime libraries: .*libc.so.6 is missing" <<<"$msg"
check "run with a partial sysroot: exit 4 naming the piece" $? "exit $rc: $(tail -2 <<<"$msg")"

# 2. --fp16
msg=$("$CLDIFF" "$MODEL" --backends cpu,paddle-lite-phone --fp16 --out "$OUT/fp16" 2>&1); rc=$?
[ $rc = 4 ] && grep -q "cl_khr_fp16" <<<"$msg"; check "--fp16: exit 4 naming cl_khr_fp16" $? "exit $rc: $msg"

# 3. the run (cold: PoCL compiles; warm: cached kernels)
t0=$(date +%s.%N)
CLDIFF_PL_KEEP=1 TMPDIR="$OUT" "$CLDIFF" "$MODEL" --backends cpu,paddle-lite-phone --out "$OUT/run" >"$OUT/run.log" 2>&1; rc=$?
t1=$(date +%s.%N)
echo "phone route run: $(echo "$t1 - $t0" | bc) s wall (exit $rc)"
tail -8 "$OUT/run.log"
check "run: exit 1 (a kernel fault)" "$([ $rc = 1 ] && echo 0 || echo 1)" "exit $rc"
"$PY" - "$OUT/run/summary.json" <<'PY'; check "summary.json: kernel fault at conv2d_3, model defect at conv2d_0 (20 ops)" $? "see above"
import json, sys
s = json.load(open(sys.argv[1]))
ok = s["verdict_kind"] == "kernel_fault" and s["first_fault"]["layer"] == "conv2d_3"
d = s.get("model_defect") or {}
ok = ok and d.get("layer") == "conv2d_0" and d.get("ops") == 20 and "reads its bytes as int8" in d.get("finding", "")
print("verdict", s["verdict_kind"], s["first_fault"] and s["first_fault"]["layer"], "model_defect", d.get("layer"), d.get("ops"))
sys.exit(0 if ok else 1)
PY
grep -q 'failure message="model defect"' "$OUT/run/junit.xml"; check "junit.xml: a model defect failure" $? ""
grep -q 'id="model-defect"' "$OUT/run/report.html"; check "report.html: the model defect finding" $? ""
grep -q "MODEL DEFECT at .conv2d_0" "$OUT/run/summary.md" || grep -q "MODEL DEFECT at conv2d_0" "$OUT/run/summary.md"
check "summary.md: the model defect finding" $? ""
grep -q "MODEL DEFECT at conv2d_0" "$OUT/run.log"; check "terminal: the model defect finding" $? ""

# 4. the oracle on the phone's own tensors
"$PY" "$SRC/tests/phone/phone_check.py" "$MODEL" "$OUT/run/dump.h5"; check "phone_check: every faulting layer reproduced" $? ""

# 5. cldiff import of the engine's outputs: int8 as q x scale, as the engine run stores them
work=$(sed -n 's/^cldiff: paddle-lite-phone work folder kept: //p' "$OUT/run.log" | head -1)
# the engine names it inside --out's staging folder (OUT.tmp-<pid>, src/cli/outdir.c); the
# committed run moved it into --out with the rest
work=$(printf '%s' "$work" | sed -E 's#\.tmp-[0-9]+/#/#')
if [ -n "$work" ] && [ -d "$work/out" ]; then
    "$CLDIFF" import "$work/out" --manifest "$work/model.manifest.json" -o "$OUT/imported.h5" --model "$MODEL" >/dev/null
    "$PY" - "$OUT/imported.h5" "$OUT/run/dump.h5" <<'PY'; check "import: int8 outputs as q x scale, equal to the engine run" $? "see above"
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1], "r"); b = h5py.File(sys.argv[2], "r")
ra = a["runs/" + list(a["runs"].keys())[0]]; rb = b["runs/paddle-lite-phone"]
n = bad = 0
for k in ra.keys():
    if k not in rb: continue
    x, y = ra[k][...], rb[k][...]
    n += 1
    if x.dtype != y.dtype or x.shape != y.shape or np.abs(x.astype(np.float64) - y).max() != 0:
        bad += 1
        print("differs:", k, x.dtype, y.dtype)
print("import: %d tensors compared, %d differ" % (n, bad))
sys.exit(0 if n > 100 and not bad else 1)
PY
else
    check "import: the kept work folder" 1 "no work folder in the run's log"
fi
# 6. a model the engine cannot load: the op and the kernel it lacks, in the load phase
#    a. Paddle-Lite says which (the model's ARM records rewritten to x86: the armv8 library has no
#       x86 kernels): the first op that needs it, its kernel record and Paddle-Lite's sentence
x86nb=$OUT/x86rec.nb
"$CLDIFF" instrument "${MODEL%/*}/mask_detector_fp32_arm_v2.10rc.nb" --retarget x86 --layers outputs -o "$x86nb" >/dev/null 2>&1
msg=$("$CLDIFF" "$x86nb" --backends cpu,paddle-lite-phone --out "$OUT/x86" 2>&1); rc=$?
grep -q "no kernel for 'conv2d', first needed by op #1 conv2d_0 (conv2d, Input \[[0-9,]*\], kernel record def/x86/float/NCHW); Paddle-Lite said: .*kernel for 'conv2d' is not supported" <<<"$msg"
check "load: the kernel the library lacks, from Paddle-Lite's own log (exit $rc)" "$([ $? = 0 ] && [ $rc = 5 ] && echo 0 || echo 1)" "$(grep died <<<"$msg" | cut -c1-300)"
#    b. no message (a segfault while loading the writer-made LSTM model): bisection over prefixes
#       in the load phase isolates the op (before: "could not be isolated: 1 bisection runs")
msg=$("$CLDIFF" "$SRC/testdata/lstm_rec.nb" --backends cpu,paddle-lite-phone --out "$OUT/lstm" 2>&1); rc=$?
grep -q "in its load at op #7 fill_constant_0 (fill_constant, kernel record def/host/any/any), the first op whose model prefix does not load (ops 0-6 load and run; [0-9]* bisection runs)" <<<"$msg"
check "load: bisection names the op that does not load (exit $rc)" "$([ $? = 0 ] && [ $rc = 5 ] && echo 0 || echo 1)" "$(grep died <<<"$msg" | cut -c1-300)"
echo "test_phone: $fails failure(s)"
[ $fails = 0 ]
