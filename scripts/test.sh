#!/usr/bin/env bash
# Installs dependencies, builds with warnings as errors, and runs the whole test suite
# (unit tests, ONNX Runtime oracles, OpenCL conformance on PoCL, end-to-end tests).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
build="${CLDIFF_BUILD_DIR:-$here/build}"
t0=$SECONDS
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_WERROR=ON -DCLDIFF_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
t_build=$((SECONDS - t0))
# Tests run in parallel with each other: OpenMP threads that spin while they wait would
# steal the cores the other tests need (users on shared machines want the same setting).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
cd "$build"
rc=0
t0=$SECONDS
ctest --output-on-failure -j"$(nproc)" "$@" || rc=1
t_ctest=$((SECONDS - t0))
# The same suite again in an AddressSanitizer + UndefinedBehaviorSanitizer build (leaks
# included), and a differential run of a real model under valgrind memcheck (issue 5).
# CLDIFF_SKIP_SANITIZE=1 skips this second half for a quick local run.
t0=$SECONDS
if [ "${CLDIFF_SKIP_SANITIZE:-0}" != 1 ]; then
    "$here/scripts/sanitize.sh" --build-root "$(dirname "$build")" || rc=1
fi
echo "test.sh: build ${t_build} s, ctest ${t_ctest} s, sanitizers and valgrind $((SECONDS - t0)) s; exit $rc"
exit $rc
