#!/usr/bin/env bash
# Fault sweep: every op type of every shared and writer-made model, fp32 and fp16, under
# injected output faults (tests/faultinj, an OpenCL loader layer), graded against what was
# injected. Details and results: docs/planted-bugs.md, "Fault injection by op type".
#
#   scripts/fault_sweep.sh --cldiff build/cldiff --faultinj build/tests/libfaultinj.so [--out DIR]
#                          [--only-models a,b] [--prec fp32,fp16] [--shapes s,..] [--ladder] [--pins] [--ci]
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3
exec "$PY" "$SRC/scripts/fault_sweep.py" "$@"
