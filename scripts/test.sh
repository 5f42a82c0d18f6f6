#!/usr/bin/env bash
# Installs dependencies, builds with warnings as errors, and runs the whole test suite
# (unit tests, ONNX Runtime oracles, OpenCL conformance on PoCL, end-to-end tests), then the
# sanitizer and valgrind pass (scripts/sanitize.sh).
#
# The three parts are independent chains of builds and tests and run at the same time, so
# that one chain's single-threaded stretches (configure steps, the one long compile that
# ends a build, the last long test, memcheck's one thread) leave no core idle:
#   main       this build ($CLDIFF_BUILD_DIR, default build/), then its ctest -j2
#   asan       sanitize.sh --asan: build-sanitize/ (ASan + UBSan), then its ctest -j2
#   valgrind   sanitize.sh --valgrind: build-valgrind/ (Debug), then one run under memcheck
# All three at the same priority: the asan chain is as long as the main one and starts with
# its longest compiles (gemm.c and gemm_f16.c at -O3 under ASan + UBSan), so a lower priority would only
# make it finish last. Their output is kept in <build root>/sanitize-{asan,valgrind}.out
# and printed once the main ctest is done.
# CLDIFF_SKIP_SANITIZE=1 skips the asan and valgrind chains for a quick local run.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
build="${CLDIFF_BUILD_DIR:-$here/build}"
root="$(dirname "$build")"
# Tests run in parallel with each other: OpenMP threads that spin while they wait would
# steal the cores the other tests need (users on shared machines want the same setting).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
t_all=$SECONDS

# The sanitizer chains, each in its own process group (stopped with it if this script ends
# first). `--` passes this script's ctest arguments on to the ASan ctest, as before.
lanes=()
declare -A lane_pid lane_out
stop_lanes() {
    local l
    for l in "${lanes[@]}"; do
        kill -0 "${lane_pid[$l]}" 2>/dev/null && kill -TERM -- "-${lane_pid[$l]}" 2>/dev/null
    done
    return 0
}
trap stop_lanes EXIT
start_lane() { # name sanitize.sh-args...
    local l=$1
    shift
    lane_out[$l]="$root/sanitize-$l.out"
    mkdir -p "$root"
    # bash's SECONDS starts at 0 in the new shell: the chain's own wall time
    setsid -w bash -c '"$0" --build-root "$@"; rc=$?; echo "sanitize.sh: chain finished after $SECONDS s, exit $rc"; exit $rc' \
        "$here/scripts/sanitize.sh" "$root" "$@" >"${lane_out[$l]}" 2>&1 </dev/null &
    lane_pid[$l]=$!
    lanes+=("$l")
}
if [ "${CLDIFF_SKIP_SANITIZE:-0}" != 1 ]; then
    start_lane asan --asan -- "$@"
    start_lane valgrind --valgrind
fi

t0=$SECONDS
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_WERROR=ON -DCLDIFF_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
t_build=$((SECONDS - t0))
cd "$build"
rc=0
t0=$SECONDS
ctest --output-on-failure -j"$(nproc)" "$@" || rc=1
t_ctest=$((SECONDS - t0))

t0=$SECONDS
times=""
for l in "${lanes[@]}"; do
    lrc=0
    wait "${lane_pid[$l]}" || lrc=$?
    echo "==== sanitize.sh --$l (output of the chain that ran beside the main ctest)"
    cat "${lane_out[$l]}"
    echo "==== sanitize.sh --$l: exit $lrc"
    [ "$lrc" = 0 ] || rc=1
    times="$times, $l chain $(sed -n 's/^sanitize.sh: chain finished after \([0-9]*\) s.*/\1/p' "${lane_out[$l]}" | tail -1) s"
done
trap - EXIT
echo "test.sh: build ${t_build} s, ctest ${t_ctest} s${times}; waited $((SECONDS - t0)) s for the sanitizer chains; total $((SECONDS - t_all)) s; exit $rc"
exit $rc
