#!/usr/bin/env bash
# Fault-injection tests of the OpenCL runtime: each case loads the shim (tests/clshim) with
# --cl-lib, makes it misbehave through CLSHIM_* and checks the user-facing message, the
# fallback or crash record in the dump, and the exit code.
#   test_faults.sh SHIM BUILD_DIR SOURCE_DIR
# The runs go through the real CLI: `cldiff run --backends opencl` (or cpu,opencl).
set -u
SHIM=$1
BUILD=$2
SRC=$3
CLDIFF=$BUILD/cldiff
# clrun [--also-cpu] [--out FILE.h5] ARGS... MODEL: `cldiff run` writing FILE.h5.
clrun() {
    local out="" backends=opencl args=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --also-cpu) backends=cpu,opencl ;;
            --out) out=$2; shift ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    rm -rf "$out.d"
    "$CLDIFF" run --quiet --backends "$backends" --out "$out.d" "${args[@]}"
    local rc=$?
    [ -f "$out.d/dump.h5" ] && mv "$out.d/dump.h5" "$out"
    return $rc
}
MODEL=$SRC/testdata/mobilenet_tiny.nb
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d /tmp/cldiff_faults.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME=$WORK/cache
fails=0
n=0

check() { # name condition-result message
    n=$((n + 1))
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}

run_case() { # out-name env... -- args...
    local name=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" bash -c "$(declare -f clrun); CLDIFF='$CLDIFF' clrun \"\$@\"" clrun --cl-lib "$SHIM" --out "$WORK/$name.h5" "$@" "$MODEL" >"$WORK/$name.out" 2>"$WORK/$name.err"
    echo $? >"$WORK/$name.rc"
}

expect_rc() { local rc; rc=$(cat "$WORK/$1.rc"); [ "$rc" = "$2" ]; check "$1: exit code $2" $? "got $rc; stderr: $(head -c 600 "$WORK/$1.err")"; }
expect_err() { grep -qF -- "$2" "$WORK/$1.err"; check "$1: message has '$2'" $? "stderr: $(head -c 800 "$WORK/$1.err")"; }
expect_py() { # name python-assertion-code (f = h5py.File, r = f['runs/opencl'])
    "$PY" - "$WORK/$1.h5" >"$WORK/$1.py" 2>&1 <<EOF
import sys, h5py
sys.path.insert(0, '$SRC/scripts')
import cldiff_dump
f = h5py.File(sys.argv[1], 'r')
r = f['runs/opencl']
meta = cldiff_dump.by_dataset(r)
def attr(o, k):   # a tensor's field from the run's tensors table, else an attribute
    name = o.name.rsplit('/', 1)[-1]
    if isinstance(o, h5py.Dataset) and name in meta:
        return meta[name][k]
    v = o.attrs.get(k, '')
    return v.decode() if isinstance(v, bytes) else v
$2
EOF
    check "$1: dump $3" $? "$(tail -3 "$WORK/$1.py")"
}

# 1. no platform: the message says what to install / check, exit 4
run_case no_platforms CLSHIM_NO_PLATFORMS=1 -- --no-cache
expect_rc no_platforms 4
expect_err no_platforms "reports no platform"
expect_err no_platforms "What to do"

# 2. a --cl-lib that does not exist: the dlerror text and what to do, exit 4
clrun --cl-lib "$WORK/nope/libmali.so" --out "$WORK/missing.h5" "$MODEL" >"$WORK/missing.out" 2>"$WORK/missing.err"
echo $? >"$WORK/missing.rc"
expect_rc missing 4
expect_err missing "cannot use the OpenCL library $WORK/nope/libmali.so given by --cl-lib"
expect_err missing "No such file or directory"

# 3. a kernel that fails to build: its ops run on the CPU, the dump says where and why, exit 0
run_case fail_build CLSHIM_FAIL_BUILD=pool.cl -- --no-cache --also-cpu
expect_rc fail_build 0
expect_py fail_build "
pools = [k for k in r if '_pool' in k or '_gap' in k]
assert len(pools) == 2, pools
for k in pools:
    assert attr(r[k], 'where') == 'cpu-fallback', (k, attr(r[k], 'where'))
    assert 'kernel pool (fp32) failed to build: <clshim>:1:1: error: injected build failure' in attr(r[k], 'note'), attr(r[k], 'note')
others = [k for k in r if k not in pools and attr(r[k], 'where') == 'opencl' and 'conv' in attr(r[k], 'kernel')]
assert len(others) >= 3, 'conv layers still on OpenCL'
assert attr(r, 'complete') == 1
import numpy as np
for k in pools:   # the fallback computes what the CPU run computes (inputs from OpenCL conv)
    a, b = np.asarray(r[k], np.float64), np.asarray(f['runs/cpu'][k], np.float64)
    assert np.allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max()), k
" "marks pool layers cpu-fallback with the build log"

# 4. the compiler aborts inside clBuildProgram: crash record, layers before it kept, exit 5
run_case abort_build CLSHIM_ABORT_BUILD=pool.cl -- --no-cache
expect_rc abort_build 5
expect_err abort_build "SIGABRT in clBuildProgram of kernel pool (fp32) for op #7 pool2d_0 (pool2d)"
expect_err abort_build "6 layer(s) captured before it are kept"
expect_err abort_build "LLVM ERROR: Cannot select"
expect_py abort_build "
assert attr(r, 'crashed') == 1
assert attr(r, 'crash_signal') == 'SIGABRT'
assert attr(r, 'crash_phase') == 'build'
assert attr(r, 'crash_kernel') == 'pool'
assert attr(r, 'crash_variant') == 'fp32'
assert attr(r, 'crash_layer') == 'pool2d_0'
assert attr(r, 'crash_op_index') == 7
assert attr(r, 'complete') == 0 and attr(f, 'complete') == 0
names = sorted(r)
assert len(names) == 6 and names[0].startswith('0001_') and names[-1].startswith('0006_'), names  # feed is never probed
" "records the crash and keeps layers 1..6"

# 5. CL_OUT_OF_RESOURCES from an enqueue: that op runs on the CPU, the note names the error
# (this run also fills the program cache, so case 6 hangs in clFinish, not in a build)
run_case enqueue_oor CLSHIM_ENQUEUE_OOR=2 -- --also-cpu
expect_rc enqueue_oor 0
expect_py enqueue_oor "
fb = [k for k in r if attr(r[k], 'where') == 'cpu-fallback']
assert len(fb) == 1, fb
note = attr(r[fb[0]], 'note')
assert 'clEnqueueNDRangeKernel' in note and 'CL_OUT_OF_RESOURCES' in note, note
assert attr(r, 'complete') == 1
" "marks the op whose enqueue failed"

# 6. clFinish never returns: --timeout ends the run, crash record with phase run, exit 5.
# The shim creates a marker when the hang starts: the evidence that the run reached it (no
# wall-clock check: the message and the dump say the watchdog ended it). --timeout counts
# from the child's start; with the warm cache of case 5 the child reaches op #1's clFinish in
# ~0.2 s (Release, loaded 2-core machine), well inside the 3 s.
run_case hang_finish CLSHIM_HANG_FINISH=1 CLSHIM_HANG_MARKER="$WORK/hang_finish.hung" -- --timeout 3
expect_rc hang_finish 5
[ -e "$WORK/hang_finish.hung" ]; check "hang_finish: the run reached the hang in clFinish" $? "no marker from the shim"
expect_err hang_finish "timed out after 3 s (--timeout; the child was killed with SIGKILL) while running kernel"
expect_err hang_finish "for op #1 conv2d_0 (conv2d)"
expect_py hang_finish "
assert attr(r, 'crashed') == 1
assert attr(r, 'crash_signal') == 'timeout'
assert attr(r, 'crash_phase') == 'run'
assert attr(r, 'crash_op_index') == 1
assert len(list(r)) == 0   # op #1 is the first probed layer (feed is never probed)
" "records the hang"

# 7. corrupt program cache: entries are rejected, rebuilt, and the results do not change
rm -rf "$XDG_CACHE_HOME/cldiff"   # only this precision's entries, so every one is read back
run_case cache_fill -- --fp16
expect_rc cache_fill 0
for e in "$XDG_CACHE_HOME"/cldiff/*.clbin; do
    sz=$(stat -c %s "$e")
    printf '\x42\x42\x42\x42' | dd of="$e" bs=1 seek=$((sz - 64)) conv=notrunc status=none
done
run_case cache_corrupt -- --fp16
expect_rc cache_corrupt 0
"$PY" - "$WORK/cache_fill.h5" "$WORK/cache_corrupt.h5" >"$WORK/cmp.py" 2>&1 <<'EOF'
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1])['runs/opencl']; b = h5py.File(sys.argv[2])['runs/opencl']
assert sorted(a) == sorted(b)
for k in a:
    assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), k
    assert a[k].dtype == np.float16 or a[k].size == 0 or a[k].dtype.kind != 'f', (k, a[k].dtype)
EOF
check "cache_corrupt: identical fp16 results after rebuilding corrupt entries" $? "$(tail -3 "$WORK/cmp.py")"
"$PY" - "$XDG_CACHE_HOME/cldiff" >"$WORK/entries.py" 2>&1 <<'EOF'
import sys, os, hashlib
d = sys.argv[1]
names = [n for n in os.listdir(d) if n.endswith('.clbin')]
assert names, 'no cache entries'
for n in names:
    data = open(os.path.join(d, n), 'rb').read()
    head, _, payload = data.partition(b'\n\n')
    fields = dict(l.split(b' ', 1) for l in head.split(b'\n')[1:])
    assert int(fields[b'size']) == len(payload), n
    assert hashlib.sha256(payload).hexdigest().encode() == fields[b'sha256'], n + ' still corrupt'
EOF
check "cache_corrupt: every entry rewritten with a valid checksum" $? "$(tail -3 "$WORK/entries.py")"

# 8. doctor: a build that aborts is a table row, not a crash of the tool; exit 5
CLSHIM_ABORT_BUILD=pool.cl CLSHIM_FAIL_BUILD=softmax.cl "$CLDIFF" doctor --cl-lib "$SHIM" >"$WORK/doctor.err" 2>&1
echo $? >"$WORK/doctor.rc"
expect_rc doctor 5
expect_err doctor "[found]  $SHIM (--cl-lib)"
expect_err doctor "cl_khr_fp16:"
grep -qE "pool.cl +fp32 +CRASHED with SIGABRT in the driver" "$WORK/doctor.err"; check "doctor: pool row crashed" $? "$(grep pool "$WORK/doctor.err")"
grep -qE "softmax.cl +fp16 +FAILED: <clshim>:1:1: error: injected build failure" "$WORK/doctor.err"; check "doctor: softmax row failed with log" $? "$(grep softmax "$WORK/doctor.err")"
grep -qE "conv.cl +fp16 +ok" "$WORK/doctor.err"; check "doctor: conv row ok" $? "$(grep conv "$WORK/doctor.err")"
expect_err doctor "driver: LLVM ERROR: Cannot select"
CLSHIM_FAIL_BUILD=softmax.cl "$CLDIFF" doctor --cl-lib "$SHIM" >"$WORK/doctor_fail.err" 2>&1
echo $? >"$WORK/doctor_fail.rc"
expect_rc doctor_fail 8
CLSHIM_NO_PLATFORMS=1 "$CLDIFF" doctor --cl-lib "$SHIM" >"$WORK/doctor_none.err" 2>&1
echo $? >"$WORK/doctor_none.rc"
expect_rc doctor_none 4
expect_err doctor_none "reports no platform"
"$CLDIFF" doctor --cl-device no-such-gpu >"$WORK/doctor_dev.err" 2>&1
echo $? >"$WORK/doctor_dev.rc"
expect_rc doctor_dev 2
expect_err doctor_dev "--cl-device no-such-gpu matches no OpenCL device"

echo "$((n - fails))/$n checks passed"
[ "$fails" = 0 ]
