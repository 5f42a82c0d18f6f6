#!/usr/bin/env bash
# Planted-bug benchmark: plants known bugs into copies of kernels/*.cl and checks that cldiff
# fails and names the layer each one is in. Details: docs/planted-bugs.md.
#
#   scripts/planted.sh [--cldiff PATH] [--only ID,...] [--out DIR] [--models DIR]
#                      [--no-repeat] [--keep-dumps] [--timeout SEC] [--list] [--check]
#
# Defaults: --cldiff $CLDIFF or build/cldiff, --out build-planted, --models $CD_SHARED_MODELS
# or ../shared/models. Writes OUT/planted.csv and OUT/planted.md and prints the table.
# Exit 0 (a benchmark, not a test); 2 when a needle no longer occurs exactly once in its
# kernel (the kernels changed: update MUTATIONS in scripts/planted.py) or nothing can run.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3
exec "$PY" "$SRC/scripts/planted.py" "$@"
