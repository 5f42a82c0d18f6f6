#!/usr/bin/env bash
# Installs dependencies, builds with warnings as errors, and runs the whole test suite
# (unit tests, ONNX Runtime oracles, OpenCL conformance on PoCL, end-to-end tests).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
build="${CLDIFF_BUILD_DIR:-$here/build}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_WERROR=ON -DCLDIFF_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# Tests run in parallel with each other: OpenMP threads that spin while they wait would
# steal the cores the other tests need (users on shared machines want the same setting).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
