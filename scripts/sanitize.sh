#!/usr/bin/env bash
# Sanitizer and valgrind runs (issue 5, docs/hardening.md).
#
#   scripts/sanitize.sh            both parts below
#   scripts/sanitize.sh --asan     1. whole project with -DCLDIFF_SANITIZE=ON (ASan + UBSan,
#                                     leaks included) in build-sanitize/, then its ctest; any
#                                     sanitizer report fails the test that printed it
#   scripts/sanitize.sh --valgrind 2. one end-to-end differential run (CPU vs OpenCL) of a
#                                     real model under valgrind memcheck, in build-valgrind/
#                                     (plain Debug build: valgrind cannot run ASan binaries)
# Options: --build-root DIR (default: the source folder), -- CTEST_ARGS... (passed to ctest).
#
# Suppressions: tests/hardening/lsan.supp (LeakSanitizer) and tests/hardening/valgrind.supp
# name only the OpenCL driver stack (ocl-icd, PoCL, LLVM), never cldiff code.
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
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "sanitize.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
rc=0

if [ $do_asan = 1 ]; then
    b="$root/build-sanitize"
    echo "== ASan+UBSan build in $b"
    cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=Debug -DCLDIFF_SANITIZE=ON -DCLDIFF_WERROR=ON >"$b.log" 2>&1 &&
        cmake --build "$b" -j2 >>"$b.log" 2>&1 || { echo "sanitize.sh: build failed, see $b.log" >&2; tail -20 "$b.log" >&2; exit 2; }
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
    cl_tests='^(test_cl_loader|kernels_oclgrind|oracle_test_cl_conformance)$'
    (cd "$b" && ctest --output-on-failure -j2 -E "^(fuzz_ci|hardening_aarch64|hardening_sanitize|test_cl_loader|kernels_oclgrind|oracle_test_cl_conformance)\$" \
        "${ctest_args[@]}") 2>&1 | tee "$b.ctest.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    (cd "$b" && ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" ctest --output-on-failure -j2 -R "$cl_tests" \
        "${ctest_args[@]}") 2>&1 | tee -a "$b.ctest.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
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
    cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=Debug -DCLDIFF_TESTS=OFF >"$b.log" 2>&1 &&
        cmake --build "$b" -j2 --target cldiff >>"$b.log" 2>&1 || { echo "sanitize.sh: build failed, see $b.log" >&2; tail -20 "$b.log" >&2; exit 2; }
    model="$here/../shared/models/mask_detector_fp32_arm_v2.10rc.nb"
    [ -f "$model" ] || model="$here/testdata/mobilenet_tiny.nb"
    # Two differential runs under memcheck, both end to end (reader, plan, runs, dump,
    # comparison, isolation of the first divergence, every report):
    #  1. the real model, CPU against CPU: PoCL executes its JIT-compiled kernels ~100x
    #     slower under valgrind (a CPU-vs-OpenCL run of this model takes over 10 minutes);
    #  2. (CLDIFF_VALGRIND_OPENCL=1) the bundled model, CPU against OpenCL (the forked
    #     OpenCL child, which memcheck follows), program cache warmed natively first.
    vg_run() { # name args...
        local name=$1; shift
        local out; out=$(mktemp -d /tmp/cldiff_vg.XXXXXX)
        export XDG_CACHE_HOME="$out/cache"
        "$b/cldiff" "$@" --out "$out/warm" --quiet >/dev/null 2>&1
        rm -rf "$out/warm"
        valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --track-origins=yes --child-silent-after-fork=no \
            --suppressions="$here/tests/hardening/valgrind.supp" --gen-suppressions=all --num-callers=30 \
            --log-file="$out/valgrind.%p.log" \
            "$b/cldiff" "$@" --out "$out" --quiet --timeout 1200 >"$out/stdout" 2>"$out/stderr"
        local vrc=$?
        local errs; errs=$(grep -h "ERROR SUMMARY" "$out"/valgrind.*.log | awk '{s += $4} END {print s + 0}')
        echo "valgrind $name: cldiff exit $vrc, $(ls "$out"/valgrind.*.log | wc -l) processes, $errs errors (logs $out)"
        if [ "$vrc" != 0 ] && [ "$vrc" != 1 ] || [ "$errs" != 0 ]; then
            # exit 1 = a layer out of tolerance is a verdict, not a memory error
            rc=1
            grep -h -B2 -A25 "^==[0-9]*== [A-Z][a-z]" "$out"/valgrind.*.log | grep -v "^--" | head -80 >&2
            tail -5 "$out/stderr" >&2
        else
            rm -rf "$out"
        fi
    }
    vg_run "$(basename "$model") cpu,cpu" "$model" --backends cpu,cpu
    # The OpenCL side under memcheck takes over 10 minutes even on the bundled model (PoCL
    # JIT-compiles each work-group function at first launch, inside valgrind): opt in with
    # CLDIFF_VALGRIND_OPENCL=1. ASan+UBSan cover the OpenCL child in every CI run.
    if [ "${CLDIFF_VALGRIND_OPENCL:-0}" = 1 ]; then
        vg_run "mobilenet_tiny cpu,opencl" "$here/testdata/mobilenet_tiny.nb" --backends cpu,opencl
    fi
fi
exit $rc
