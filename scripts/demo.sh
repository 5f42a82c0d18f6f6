#!/usr/bin/env bash
# Installs what the build and the demo need (scripts/setup.sh demo: no test toolchain),
# builds cldiff and runs it on the bundled MobileNet-like model: CPU vs OpenCL (PoCL here)
# layer by layer, reports in cldiff-out/.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh" demo
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release -DCLDIFF_TESTS=OFF >/dev/null
cmake --build "$here/build" -j"$(nproc)" --target cldiff
cd "$here"
./build/cldiff inspect testdata/mobilenet_tiny.nb | head -n 20
set +e
./build/cldiff testdata/mobilenet_tiny.nb --layers all --fp32 --out cldiff-out
rc=$?
set -e
echo "exit code $rc; reports in $here/cldiff-out/: $(ls cldiff-out | tr '\n' ' ')"
