#!/usr/bin/env bash
# Sanitizer and valgrind runs (issue 5, docs/hardening.md).
#
#   scripts/sanitize.sh            both parts below
#   scripts/sanitize.sh --asan     1. whole project with -DCLDIFF_SANITIZE=ON (ASan + UBSan,
#                                     leaks included) in build-sanitize/, then its ctest; any
#                                     sanitizer report fails the test that printed it
#   scripts/sanitize.sh --valgrind 2. one end-to-end differential run (CPU vs OpenCL on
#                                     PoCL, fp32) of a real model under valgrind memcheck,
#                                     parent and forked OpenCL child, in build-valgrind/
#                                     (plain Debug build: valgrind cannot run ASan binaries)
# Options: --build-root DIR (default: the source folder), -- CTEST_ARGS... (passed to ctest).
# Environment: CLDIFF_VALGRIND_OPENCL=0 runs CPU vs CPU under valgrind instead (slow
# machines, no OpenCL driver); CLDIFF_VALGRIND_MODEL, CLDIFF_VALGRIND_POCL_KERNELLIB,
# CLDIFF_VALGRIND_TIMEOUT (see the valgrind part below).
# Suppressions: tests/hardening/lsan.supp (LeakSanitizer: the OpenCL driver stack) and
# tests/hardening/valgrind.supp (ocl-icd, glibc's ld.so) name only third-party code, never
# cldiff code.
# Exit: 0 clean, 1 a sanitizer/valgrind report or a failing test, 2 build failure.
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
do_asan=1 do_vg=1
root="$here"
ctest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --asan) do_vg=0 ;;
        --valgrind) do_asan=0 ;;
        --build-root) root=${2:?}; shift ;;
        --) shift; ctest_args=("$@"); break ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "sanitize.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
rc=0

if [ $do_asan = 1 ]; then
    b="$root/build-sanitize"
    echo "== ASan+UBSan build in $b"
    t0=$SECONDS
    cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=Debug -DCLDIFF_SANITIZE=ON -DCLDIFF_WERROR=ON >"$b.log" 2>&1 &&
        cmake --build "$b" -j2 >>"$b.log" 2>&1 || { echo "sanitize.sh: build failed, see $b.log" >&2; tail -20 "$b.log" >&2; exit 2; }
    echo "== ASan+UBSan build: $((SECONDS - t0)) s; ctest"
    t0=$SECONDS
    # halt_on_error + abort: a report kills the process, so the test that hit it fails.
    # detect_leaks=1 is the default on x86-64 Linux; spelled out because it is the point.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:suppressions=$here/tests/hardening/asan.supp"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$here/tests/hardening/lsan.supp:print_suppressions=0"
    # The recursive entries (the clang fuzz build, the aarch64 cross build) build and run
    # their own non-ASan binaries: they are run by the normal build's ctest instead.
    # allocator_may_return_null: HDF5 asks malloc for absurd sizes from crafted files and
    # handles the NULL (so does cldiff); ASan would otherwise abort instead of returning NULL.
    export ASAN_OPTIONS="$ASAN_OPTIONS:allocator_may_return_null=1"
    # Tests that load the OpenCL driver into an instrumented process (not into cldiff's
    # isolated child, which leaves by _exit): PoCL unloads the modules it compiled kernels
    # into before LeakSanitizer reports, so its leaks show as "<unknown module>" frames that
    # no suppression can name. They run with everything checked but leaks; cldiff's own
    # code is leak-checked by every other test, and the valgrind part below checks an
    # OpenCL run with suppressions naming the driver libraries.
    cl_tests='^(test_cl_loader)$'
    # What this pass is for: memory and UB errors on every code path, failure paths and parsers
    # first (unit tests, fuzz_regress_*, e2e_errors, e2e_faults, e2e_fault_paths, the hardening
    # tests, the engines), and the CPU ops on many shapes (oracle_test_*). Numeric sweeps that
    # repeat the same paths with other numbers run in the plain build only (docs/hardening.md):
    # fault_sweep_ci and pl_planted (dozens of graded runs; their failure-only paths are in
    # e2e_fault_paths and pl_engines), the *_poisoned oracle twins (uninitialised reads, which
    # ASan does not see; their plain twins run here), the OpenCL kernel conformance and
    # oclgrind runs (device code: the result does not depend on how the host was built), the
    # int8 verdict matrices (int8_models, int8_layers*, e2e_int8_verdicts; test_int8 runs here),
    # the Paddle-Lite export round trips and SDK runners (pl_engines, pl_backend, pl_import,
    # pl_export_* run here), e2e_planted and hardening_determinism (a second run of the paths
    # e2e_diff runs). Together 481 s of the 947 s of test time this pass had before
    # (sum over tests, loaded 2-core machine; fault_sweep_ci alone 170 s).
    plain_only='fuzz_ci|hardening_aarch64|hardening_sanitize|test_cl_loader|kernels_oclgrind|oracle_test_cl_conformance'
    plain_only="$plain_only|fault_sweep_ci|pl_planted|oracle_test_.*_poisoned|int8_models|int8_layers.*|e2e_int8_verdicts"
    plain_only="$plain_only|pl_export_roundtrip|pl_sdk_runners|e2e_planted|hardening_determinism"
    (cd "$b" && ctest --output-on-failure -j2 -E "^($plain_only)\$" \
        "${ctest_args[@]}") 2>&1 | tee "$b.ctest.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    (cd "$b" && ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" ctest --output-on-failure -j2 -R "$cl_tests" \
        "${ctest_args[@]}") 2>&1 | tee -a "$b.ctest.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    echo "== ASan+UBSan ctest: $((SECONDS - t0)) s"
    # A report inside a test that still exited 0 (e.g. in a child process whose status is
    # not checked) must fail too.
    if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$b.ctest.log"; then
        echo "sanitize.sh: sanitizer reports found in $b.ctest.log:" >&2
        grep -nE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$b.ctest.log" | head -20 >&2
        rc=1
    fi
fi

if [ $do_vg = 1 ]; then
    command -v valgrind >/dev/null || { echo "sanitize.sh: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
    b="$root/build-valgrind"
    echo "== valgrind memcheck, plain Debug build in $b"
    t0=$SECONDS
    cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=Debug -DCLDIFF_TESTS=OFF >"$b.log" 2>&1 &&
        cmake --build "$b" -j2 --target cldiff >>"$b.log" 2>&1 || { echo "sanitize.sh: build failed, see $b.log" >&2; tail -20 "$b.log" >&2; exit 2; }
    echo "== valgrind build: $((SECONDS - t0)) s"
    model="${CLDIFF_VALGRIND_MODEL:-$here/../shared/models/mask_detector_fp32_arm_v2.10rc.nb}"
    [ -f "$model" ] || model="$here/testdata/mobilenet_tiny.nb"
    # One differential run of a real model, CPU against OpenCL (PoCL) in fp32, end to end
    # under memcheck: reader, plan, the CPU run in the parent, the OpenCL run in the forked
    # child (src/engine/isolate.c; the default CLI path, which memcheck follows into the
    # fork), dump, comparison, and (tolerances 0, so the first layer fails on purpose) the
    # isolation of the first divergence in a second forked OpenCL child, the repro pack and
    # every report. Exit 1 (a layer out of tolerance) is that verdict, not a memory error.
    #
    # Speed: PoCL JIT-compiles every kernel with LLVM at first launch, which under memcheck
    # takes over 10 minutes. A plain run of the same command first fills both kernel caches
    # (cldiff's program binaries in XDG_CACHE_HOME/cldiff, PoCL's compiled work-group
    # functions in POCL_CACHE_DIR), so under valgrind neither calls LLVM. Both caches are
    # private to this script ($b/valgrind-cache). PoCL keys its cache by the target CPU,
    # and valgrind's virtual CPU lacks AVX-512: on an AVX-512 host PoCL would pick
    # "skylake-avx512" natively and "haswell" under valgrind, miss the cache and compile
    # everything again. POCL_KERNELLIB_NAME (Debian's PoCL) pins the kernel library, and
    # with it the target CPU, for both runs: avx2 where the host has AVX2 (valgrind
    # emulates AVX2), else PoCL's own choice. CLDIFF_VALGRIND_POCL_KERNELLIB overrides it.
    # The script checks afterwards that nothing was compiled under valgrind.
    #
    # CLDIFF_VALGRIND_OPENCL=0 (slow machines, no OpenCL driver): the same model CPU
    # against CPU instead (no OpenCL code runs then). CLDIFF_VALGRIND_TIMEOUT (default
    # 900 s) bounds each OpenCL child (cldiff --timeout). CLDIFF_VALGRIND_MODEL picks
    # another model (the bundled testdata/mobilenet_tiny.nb when ../shared is absent).
    vg_run() { # name expect_opencl args...
        local name=$1 want_cl=$2; shift 2
        local out="$b/valgrind-run" cache="$b/valgrind-cache"
        rm -rf "$out"
        mkdir -p "$out" "$cache/xdg" "$cache/pocl"
        export XDG_CACHE_HOME="$cache/xdg" POCL_CACHE_DIR="$cache/pocl"
        # libgomp threads that spin while they wait cost much more under valgrind (it runs
        # one thread at a time): 107 s instead of 55 s for the OpenCL run below (2 cores)
        export OMP_WAIT_POLICY=PASSIVE
        # program binaries in cldiff's cache even on PoCL (docs/opencl.md "Program cache"): a
        # warm run then loads them and never calls PoCL's compiler, not even to hash a source
        export CLDIFF_CL_BINARIES=1
        if [ "$want_cl" = 1 ]; then
            local kl="${CLDIFF_VALGRIND_POCL_KERNELLIB:-}"
            [ -n "$kl" ] || ! grep -qw avx2 /proc/cpuinfo || kl=avx2
            if [ -n "$kl" ]; then export POCL_KERNELLIB_NAME="$kl"; else unset POCL_KERNELLIB_NAME; fi
        fi
        local t0=$SECONDS
        if [ "$want_cl" = 1 ]; then
            "$b/cldiff" "$@" --out "$out/warm" --quiet >"$out/warm.log" 2>&1
            local wrc=$?
            echo "valgrind $name: cache-warming run without valgrind: exit $wrc, $((SECONDS - t0)) s"
            if [ "$wrc" != 0 ] && [ "$wrc" != 1 ]; then
                echo "sanitize.sh: the run without valgrind already fails (exit $wrc):" >&2
                tail -5 "$out/warm.log" >&2
                rc=1
                return
            fi
            rm -rf "$out/warm"
        fi
        touch "$out/stamp"
        t0=$SECONDS
        valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --track-origins=yes --keep-debuginfo=yes \
            --child-silent-after-fork=no --trace-children=no \
            --suppressions="$here/tests/hardening/valgrind.supp" --gen-suppressions=all --num-callers=40 \
            --log-file="$out/valgrind.%p.log" \
            "$b/cldiff" "$@" --out "$out/run" --quiet --timeout "${CLDIFF_VALGRIND_TIMEOUT:-900}" \
            >"$out/stdout" 2>"$out/stderr" &
        local main=$!
        wait $main
        local vrc=$? secs=$((SECONDS - t0)) bad=0 errs=0 nchild=0 bad_logs=()
        echo "valgrind $name: cldiff exit $vrc, $secs s under memcheck (logs: $out/valgrind.*.log)"
        # One log per process: the cldiff parent, each forked OpenCL child ("Parent PID"
        # is the parent), and a header-only log for any program PoCL exec()s (its linker,
        # only when it compiles a kernel; --trace-children=no leaves those uninstrumented).
        local f pid role e
        for f in "$out"/valgrind.*.log; do
            pid=${f##*/valgrind.}; pid=${pid%.log}
            if [ "$pid" = "$main" ]; then role="parent (cldiff)"
            elif grep -q "Parent PID: $main\$" "$f" && grep -q "ERROR SUMMARY" "$f"; then
                role="forked OpenCL child"; nchild=$((nchild + 1))
            else role="exec'd by a child, not instrumented"; fi
            e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -1)
            if [ -n "$e" ]; then
                local lost; lost=$(sed -n 's/^==[0-9]*== *\(definitely lost: .*\)/\1/p' "$f")
                echo "  pid $pid, $role: $(sed -n 's/^==[0-9]*== \(ERROR SUMMARY: .*\)/\1/p' "$f");" \
                     "${lost:-definitely lost: 0 (all heap blocks freed)}"
                errs=$((errs + e))
                [ "$e" = 0 ] || bad_logs+=("$f")
            else
                echo "  pid $pid, $role: $(sed -n 's/^==[0-9]*== Command: //p' "$f" | cut -c1-100)"
            fi
        done
        if [ "$want_cl" = 1 ]; then
            # the OpenCL side really ran, in a process memcheck instrumented
            local why
            why=$(python3 - "$out/run/summary.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no summary.json: %s" % e); sys.exit()
env = d.get("environment", {})
if env.get("backend_b") != "opencl": print("run B is %r, not opencl" % env.get("backend_b"))
elif not d.get("layers_compared"): print("no layer compared")
EOF
)
            [ -z "$why" ] || { echo "sanitize.sh: valgrind $name: the OpenCL run did not happen: $why" >&2; bad=1; }
            [ "$nchild" -ge 1 ] || { echo "sanitize.sh: valgrind $name: no instrumented OpenCL child log" >&2; bad=1; }
            local jit
            jit=$(find "$POCL_CACHE_DIR" "$XDG_CACHE_HOME" -newer "$out/stamp" \( -name '*.so' -o -name '*.clbin' \) | wc -l)
            [ "$jit" = 0 ] || echo "sanitize.sh: warning: $jit kernel(s) were compiled under valgrind (the warm" \
                "caches missed; slow): set CLDIFF_VALGRIND_POCL_KERNELLIB to the kernel library PoCL picks" \
                "under valgrind (see docs/hardening.md)" >&2
        fi
        if [ "$vrc" != 0 ] && [ "$vrc" != 1 ] || [ "$errs" != 0 ] || [ "$bad" != 0 ]; then
            rc=1
            for f in "${bad_logs[@]}"; do   # the reports, each with its suppression text
                echo "---- $f" >&2
                sed -n '/^==[0-9]*== Parent PID/,$p' "$f" | head -150 >&2
            done
            echo "---- cldiff stderr (tail)" >&2
            tail -5 "$out/stderr" >&2
        else
            echo "valgrind $name: clean ($errs errors in $(ls "$out"/valgrind.*.log | wc -l) process log(s))"
            rm -rf "$out/run"   # the logs stay until the next run
        fi
    }
    if [ "${CLDIFF_VALGRIND_OPENCL:-1}" = 0 ]; then
        vg_run "$(basename "$model") cpu,cpu" 0 "$model" --backends cpu,cpu
    else
        vg_run "$(basename "$model") cpu,opencl fp32" 1 "$model" --backends cpu,opencl --fp32 --atol 0 --rtol 0
    fi
fi
exit $rc
