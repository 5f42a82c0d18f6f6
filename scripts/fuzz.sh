#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) in a separate clang configuration
# (CLDIFF_FUZZ=ON: libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer) and runs them.
#
#   scripts/fuzz.sh --ci                 each fuzzer 3 s after replaying its seeds and regressions
#                                        (CI; ctest entry fuzz_ci), fails on any crash
#   scripts/fuzz.sh --long SECONDS       each fuzzer SECONDS: the real fuzzing, on demand (e.g.
#                                        --long 3600 overnight; corpora grow and persist)
#   scripts/fuzz.sh --only nb,npy ...    a subset (readers: nb dump policy npy png mnn)
#   scripts/fuzz.sh --build DIR          build folder (default build-fuzz next to the sources)
#   scripts/fuzz.sh --regress            only replay seeds + tests/fuzz/regressions/ (no fuzzing)
#
# Corpora grow in DIR/corpus/<reader> (kept between runs; seeds are copied in at configure
# time: ../shared/models/*.nb, testdata/*.nb, tests/fuzz/seeds/<reader>/). A crash leaves
# DIR/artifacts/<reader>/crash-* (also leak-*, timeout-*, oom-*); the script minimises it
# into DIR/artifacts/<reader>/min-* and prints what to do: copy it to
# tests/fuzz/regressions/<reader>/<name> so fuzz_regress_<reader> replays it on every CI run.
#
# Exit: 0 clean, 1 a fuzzer found something (or the build failed), 77 clang/libFuzzer missing.
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
mode=ci
secs=3
build="$here/build-fuzz"
only="nb dump policy npy png mnn"
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) mode=ci; secs=3 ;;
        --long) mode=long; secs=${2:?--long needs SECONDS}; shift ;;
        --regress) mode=regress ;;
        --build) build=${2:?--build needs DIR}; shift ;;
        --only) only=$(echo "${2:?--only needs readers}" | tr ',' ' '); shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "fuzz.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done

# clang >= 15: clang 14 rejects _Float16 on x86-64 ("not supported on this target"), which
# the CPU backend's half kernels use; Debian 12's clang-15 (installed with PoCL's LLVM 15)
# carries libFuzzer in libclang-common-15-dev.
cc=""
for c in ${CLDIFF_FUZZ_CC:-} clang-16 clang-15; do
    p=$(command -v "$c" 2>/dev/null) || continue
    [ -f "$("$p" --print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ] || continue
    # the CPU backend uses OpenMP: clang needs LLVM's runtime (libomp-NN-dev)
    [ -e "/usr/lib/llvm-${c##*clang-}/lib/libomp.so" ] && { cc=$p; break; }
done
if [ -z "$cc" ]; then
    echo "fuzz.sh: SKIP: no clang >= 15 with libFuzzer and libomp (Debian 12: apt-get install clang-15 libclang-common-15-dev libomp-15-dev)" >&2
    exit 77
fi

# The library and the harnesses get coverage instrumentation + ASan/UBSan; UBSan findings
# abort (no recovery) so libFuzzer records them as crashes. -O1 -g: fast and symbolised.
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
if [ ! -f "$build/CMakeCache.txt" ] || ! grep -q "CLDIFF_FUZZ:BOOL=ON" "$build/CMakeCache.txt"; then
    echo "fuzz.sh: configuring $build with $cc" >&2
    cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_C_FLAGS="$flags" -DCLDIFF_FUZZ=ON -DCLDIFF_TESTS=ON -DCLDIFF_WERROR=OFF >"$build.configure.log" 2>&1 \
        || { echo "fuzz.sh: configure failed, see $build.configure.log" >&2; tail -20 "$build.configure.log" >&2; exit 1; }
else
    # re-run configure so the seed corpora are refreshed (new models, new regressions)
    cmake "$build" >"$build.configure.log" 2>&1 || { tail -20 "$build.configure.log" >&2; exit 1; }
fi
targets=""
for r in $only; do targets="$targets fuzz_$r"; done
# shellcheck disable=SC2086
if ! cmake --build "$build" -j2 --target $targets >"$build.build.log" 2>&1; then
    echo "fuzz.sh: build failed, see $build.build.log" >&2
    grep -E "error|Error" "$build.build.log" | head -20 >&2
    exit 1
fi

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=1:symbolize=1:suppressions=$here/tests/hardening/asan.supp"
sym=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH="$sym"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$here/tests/hardening/lsan.supp:print_suppressions=0"
export HDF5_USE_FILE_LOCKING=FALSE   # private scratch files on /dev/shm: no locking needed
fails=0
summary=""
for r in $only; do
    bin="$build/tests/fuzz_$r"
    seeds="$build/fuzz-seeds/$r"
    corpus="$build/corpus/$r"
    art="$build/artifacts/$r"
    mkdir -p "$corpus" "$art"
    log="$build/fuzz_$r.log"
    supp=lsan.supp
    [ "$r" = dump ] && supp=lsan-hdf5.supp
    export LSAN_OPTIONS="suppressions=$here/tests/hardening/$supp:print_suppressions=0"
    if [ "$mode" = regress ]; then
        "$bin" -runs=0 "$seeds" "$here/tests/fuzz/regressions/$r" >"$log" 2>&1
        rc=$?
    else
        # -rss_limit_mb / -malloc_limit_mb: a reader that allocates what a hostile header
        # asks for (GBs) is a finding; -timeout: one input may not take more than 10 s.
        # Exception: inside HDF5 (dump reader), crafted metadata makes libhdf5 itself ask
        # malloc for absurd sizes (e.g. 0x6b8000000000000 in H5C_protect), which it handles
        # as a failed allocation; ASan returns NULL (allocator_may_return_null) and the rss
        # limit still catches real memory growth.
        mlimit=1024
        [ "$r" = dump ] && mlimit=1073741824
        "$bin" "$corpus" "$seeds" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
            -malloc_limit_mb=$mlimit -max_len=$([ "$r" = nb ] && echo 1048576 || echo 131072) \
            -artifact_prefix="$art/" -print_final_stats=1 >"$log" 2>&1
        rc=$?
    fi
    execs=$(grep -E "stat::number_of_executed_units" "$log" | awk '{print $2}' | tail -1)
    cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$log" | tail -1)
    if [ $rc -ne 0 ]; then
        fails=$((fails + 1))
        echo "fuzz.sh: FAIL fuzz_$r (exit $rc); log $log" >&2
        # (HDF5's refused absurd allocations print "failed to allocate" warnings: not the finding)
        grep -v "failed to allocate" "$log" | grep -E "ERROR: |runtime error|SUMMARY|Test unit written|==[0-9]+==|^ +#[0-9] " \
            | head -25 >&2
        for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
            [ -f "$a" ] || continue
            min="$art/min-$(basename "$a")"
            [ -f "$min" ] || "$bin" -minimize_crash=1 -max_total_time=60 -exact_artifact_path="$min" "$a" \
                >"$min.log" 2>&1 || true
            [ -f "$min" ] || cp "$a" "$min"
            echo "  reproduce: $bin $min" >&2
            echo "  keep it:   cp $min $here/tests/fuzz/regressions/$r/<short-name>" >&2
        done
    fi
    summary="$summary$(printf '%-7s %s executions %s%s' "$r" "${execs:-?}" "${cov:-}" "$([ $rc -ne 0 ] && echo '  FOUND A CRASH')")\n"
done
printf "fuzz.sh (%s, %ss each):\n$summary" "$mode" "$secs"
[ $fails -eq 0 ]
