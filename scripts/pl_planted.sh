#!/usr/bin/env bash
# Planted faults in Paddle-Lite's own OpenCL kernels (issue 19 point 5): each plant edits one
# kernel of Paddle-Lite's embedded OpenCL sources while Paddle-Lite builds its programs (the fault
# injector tests/faultinj, CLFI_SRC_NEEDLE/CLFI_SRC_REPLACE), runs
#   cldiff MODEL --backends paddle-lite-arm,paddle-lite-opencl
# and grades the verdict against ground truth taken from Paddle-Lite's own kernel log and the
# dumps of the clean and planted runs. A benchmark, not a test (ctest pl_planted runs 2 plants).
# Details and results: docs/paddle-lite-findings.md, "Planted faults in Paddle-Lite's kernels".
#
#   scripts/pl_planted.sh [--cldiff PATH] [--faultinj PATH] [--out DIR] [--only ID,...] [--list]
#                         [--check] [--keep] [--timeout SEC]
#
# Defaults: --cldiff $CLDIFF or build/cldiff, --faultinj $CLDIFF_FAULTINJ or
# <cldiff's folder>/tests/libfaultinj.so, --out build-pl-planted, models from $CD_SHARED_MODELS
# or ../shared/models. Writes OUT/pl_planted.csv, OUT/pl_planted.md, OUT/runs/ID.cmd (command,
# exit, output tail) and prints the table. Exit 0; 2 when a needle no longer fits the SDK's
# embedded kernels (fix PLANTS in scripts/pl_planted.py) or a prerequisite is missing.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3
exec "$PY" "$SRC/scripts/pl_planted.py" "$@"
