#!/usr/bin/env bash
# Re-runs the evidence of docs/paddle-lite-findings.md (issue 19 point 3): Paddle-Lite's own
# OpenCL kernels (x86 SDK with OpenCL, on the first OpenCL platform: PoCL here) against its x86
# kernels and cldiff's CPU backend, layer by layer, on ppocr_v4_mobile_cls and ppocr_v2.0_cls,
# exported with the .nb's declared shapes (the two findings) and with inferred shapes (fixed);
# then the two minimal Paddle models that show the Opt behaviour behind them.
#
#   scripts/pl_findings.sh [WORK]       (default /tmp/pl_findings; prints a summary, keeps WORK)
#
# Needs: build-findings/cldiff (or $CLDIFF), .venv-pl (paddlelite wheel: Opt), .venv (numpy,
# h5py), the Debian SDK in .paddle-lite/sdk-x86_64-debian12, g++, the unversioned libOpenCL.so
# (ocl-icd-opencl-dev) and libopenblas0-pthread. A cold PoCL kernel cache makes the first OpenCL
# run of a model take minutes (about 150 s here on 2 busy cores); later runs take 3-15 s.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-/tmp/pl_findings}
CLDIFF=${CLDIFF:-$SRC/build-findings/cldiff}
PLPY=${CLDIFF_PL_PYTHON:-$SRC/.venv-pl/bin/python}
PY=$SRC/.venv/bin/python
SDK=${CLDIFF_PL_OPENCL_SDK:-$SRC/.paddle-lite/sdk-x86_64-debian12}
M=${MODELS:-$SRC/../shared/models}
unset OCL_ICD_VENDORS   # Paddle-Lite takes the first platform; here PoCL is the only one
miss=""
[ -x "$CLDIFF" ] || miss="$miss cldiff($CLDIFF)"
[ -x "$PLPY" ] || miss="$miss paddlelite-python($PLPY)"
[ -x "$PY" ] || miss="$miss .venv"
[ -f "$SDK/lib/libpaddle_light_api_shared.so" ] || miss="$miss SDK($SDK)"
[ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so ] || miss="$miss libOpenCL.so(apt install ocl-icd-opencl-dev)"
ldconfig -p | grep -q libopenblas.so.0 || miss="$miss libopenblas.so.0(apt install libopenblas0-pthread)"
[ -f "$M/ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb" ] || miss="$miss models($M)"
if [ -n "$miss" ]; then echo "pl_findings.sh: missing:$miss" >&2; exit 2; fi
mkdir -p "$W" && cd "$W" || exit 2
t() { local s e; s=$(date +%s.%N); "$@"; local rc=$?; e=$(date +%s.%N); printf '%.2f' "$(echo "$e - $s" | bc)" > .t; return $rc; }

g++ -std=c++14 -O2 -I "$SDK/include" "$SRC/probes/paddle-lite/pl_probe_runner.cc" -L "$SDK/lib" \
    -lpaddle_light_api_shared -Wl,-rpath,"$SDK/lib" -o plr || exit 2
"$PY" -c "import numpy as np,os; os.makedirs('in',exist_ok=True); np.save('in/input_0.npy', np.random.default_rng(1).standard_normal((1,3,48,192)).astype(np.float32))"

cat > cmp.py <<'EOF'
import sys, numpy as np, h5py
sys.path.insert(0, sys.argv[5]); import cldiff_dump
exp, a, b, dump = sys.argv[1:5]
f = h5py.File(dump, 'r'); run = f['runs/cpu']
cpu = {(t['op_index'], t['tensor']): run[t['dataset']][()] for t in cldiff_dump.tensors(run)}
def rel(x, y):
    if y is None or x.size != y.size: return float('nan')
    x = x.astype(np.float64).ravel(); y = y.astype(np.float64).ravel()
    return np.abs(x - y).max() / max(np.abs(y).max(), 1e-30)
first = None; worst = (0, '')
print('col  op  layer                type             x86/cpu   ocl/cpu   ocl/x86   (max|d| / max|ref|)')
for col, oi, name, typ, tensor in [l.rstrip('\n').split('\t') for l in open(exp + '/fetch.tsv')][1:]:
    x = np.load('%s/out_%s.npy' % (a, col)); y = np.load('%s/out_%s.npy' % (b, col)); c = cpu.get((int(oi), tensor))
    r = rel(y, x); flag = ''
    if r > 1e-4 and first is None: first = name; flag = '   <<< first out of bound'
    worst = max(worst, (r, name))
    print('%3s %4s %-20s %-16s %.2e  %.2e  %.2e%s' % (col, oi, name, typ, rel(x, c), rel(y, c), r, flag))
print('first layer out of bound (1e-4 of max|ref|): %s; worst %.2e at %s' % (first, worst[0], worst[1]))
EOF
cat > kernels.py <<'EOF'
import re, sys, collections
T = {1: 'host', 2: 'x86', 4: 'arm', 5: 'opencl'}
P = {0: 'unk', 1: 'float', 2: 'int8', 3: 'int32', 4: 'any', 5: 'fp16', 6: 'bool', 7: 'int64'}
L = {0: 'unk', 1: 'NCHW', 2: 'any', 3: 'NHWC', 4: 'ImageDefault', 5: 'ImageFolder', 6: 'ImageNW'}
c = collections.Counter()
for m in re.finditer(rb'([a-z0-9_]+)/([A-Za-z0-9_]+)/(\d+)/(\d+)/(\d+)', open(sys.argv[1], 'rb').read()):
    c[(m.group(1).decode(), m.group(2).decode(), T.get(int(m.group(3)), m.group(3).decode()),
       P.get(int(m.group(4)), m.group(4).decode()), L.get(int(m.group(5)), m.group(5).decode()))] += 1
for k, n in sorted(c.items()):
    print('%3d  %-34s %-22s %s/%s/%s' % ((n,) + k))
EOF

run() {  # run MODEL.nb IN OUTDIR [opencl]
    rm -rf "$3"; mkdir -p "$3"
    local a=""; [ "${4:-}" = opencl ] && a="--opencl-precision fp32"
    t ./plr "$1" "$2" "$3" $a > "$3.log" 2>&1; local rc=$?
    echo "  run $(basename "$1"): exit $rc, $(cat .t) s wall, $(grep -h run_ms "$3/run.txt" 2>/dev/null || echo 'no outputs'); $(grep -ah 'Check failed' "$3.log" | head -1 | cut -c1-160)"
}
for pair in v4:ppocr_v4_mobile_cls_fp32_arm_v2.13rc v2:ppocr_v2.0_cls_fp32_arm_v2.14rc; do
    k=${pair%%:*}; nb=$M/${pair#*:}.nb
    echo "== $k: $nb"
    t "$CLDIFF" run --backends cpu "$nb" --shape x=1,3,48,192 --input x=in/input_0.npy --layers all --out cpu.$k > cpu.$k.log 2>&1
    echo "  cldiff cpu --layers all: exit $?, $(cat .t) s"
    for mode in declared inferred; do
        extra=""; [ $mode = declared ] && extra="--declared-shapes"
        for fa in "" "--fetch-all"; do
            d=$k.$mode${fa:+.all}
            t "$CLDIFF" export "$nb" -o $d $extra $fa > $d.export.log 2>&1; echo "  export $d: exit $?, $(cat .t) s"
            for p in x86:x86 opencl,x86:ocl; do
                t "$PLPY" "$SRC/scripts/pl_ocl.py" opt $d $d.${p#*:}.nb --places ${p%%:*} > $d.${p#*:}.opt.log 2>&1
                echo "  Opt --places ${p%%:*} $d: exit $?, $(cat .t) s"
            done
            run $d.x86.nb in out.$d.x86
            run $d.ocl.nb in out.$d.ocl opencl
        done
        "$PY" kernels.py $k.$mode.ocl.nb > kernels.$k.$mode.txt
        "$CLDIFF" inspect $k.$mode.ocl.nb > inspect.$k.$mode.txt 2>&1
        if [ -f out.$k.$mode.all.ocl/out_0.npy ]; then
            "$PY" cmp.py $k.$mode.all out.$k.$mode.all.x86 out.$k.$mode.all.ocl cpu.$k/dump.h5 "$SRC/scripts" > layers.$k.$mode.txt
            echo "  $mode: $(tail -1 layers.$k.$mode.txt)"
        fi
        "$PY" -c "
import numpy as np, sys
try:
    a = np.load('out.$k.$mode.x86/out_0.npy'); b = np.load('out.$k.$mode.ocl/out_0.npy')
    print('  $mode output: x86 %s, OpenCL %s, max |diff| %.3g' % (a.ravel(), b.ravel(), np.abs(a - b).max()))
except Exception as e: print('  $mode output: OpenCL gave none (%s)' % type(e).__name__)"
    done
done

echo "== minimal models (Opt trusts declared VarDesc shapes)"
"$PY" "$SRC/scripts/pl_findings_mini.py" mini > /dev/null || exit 1
for m in fc_layout_stale fc_layout_right reshape_fold_stale reshape_fold_right fetch_folded; do
    in=mini/fc_in; case $m in reshape*|fetch*) in=mini/add_in;; esac
    for p in x86:x86 opencl,x86:ocl; do
        "$PLPY" "$SRC/scripts/pl_ocl.py" opt mini/$m mini/$m.${p#*:}.nb --places ${p%%:*} > mini/$m.${p#*:}.opt.log 2>&1
    done
    run mini/$m.x86.nb $in mini/o.$m.x86
    run mini/$m.ocl.nb $in mini/o.$m.ocl opencl
done
"$PY" -c "
import numpy as np
def show(m, ref):
    for t in ('x86', 'ocl'):
        try: y = np.load('mini/o.%s.%s/out_0.npy' % (m, t)); print('  %-20s %-4s max |diff| to expected %.3g  %s' % (m, t, np.abs(y - ref).max(), y.ravel()[:4]))
        except Exception: print('  %-20s %-4s no output (the run failed: see its exit code above)' % (m, t))
e = np.load('mini/fc_expected.npy'); print('  fc expected %s; an ImageDefault [1,200] image read as ImageFolder gives %s' % (e.ravel(), np.load('mini/fc_wrong_model.npy')))
show('fc_layout_stale', e); show('fc_layout_right', e)
e = np.load('mini/add_expected.npy'); show('reshape_fold_stale', e); show('reshape_fold_right', e); show('fetch_folded', e)"
echo "pl_findings.sh: evidence in $W (layers.*.txt, kernels.*.txt, inspect.*.txt, *.log)"
