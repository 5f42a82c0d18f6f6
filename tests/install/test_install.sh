#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed files are checked: the
# binary answers --version and --help (run from elsewhere, so nothing depends on the build
# tree) and inspects the bundled model, the documentation pages are in place, and the man
# page is installed when help2man was found at configure time. The helpers of the Paddle-Lite
# backends are installed under share/cldiff and found there by the installed binary, and a
# cldiff outside its source tree (the build's binary copied elsewhere, as an out-of-tree build
# is) finds them in the source tree it was built from (CLDIFF_SOURCE_DIR): both as
# `cldiff doctor` reports them.
#   test_install.sh BUILD_DIR SOURCE_DIR MAN_PAGE   (MAN_PAGE empty: built without help2man)
set -u
BUILD=$1
SRC=$2
MAN=${3:-}
PREFIX=$(mktemp -d /tmp/cldiff_install.XXXXXX)
trap 'rm -rf "$PREFIX"' EXIT
fails=0
check() { # name status message
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}

cmake --install "$BUILD" --prefix "$PREFIX" >"$PREFIX.log" 2>&1
rc=$?
check "cmake --install into $PREFIX" $rc "$(tail -5 "$PREFIX.log")"
rm -f "$PREFIX.log"
bin=$PREFIX/bin/cldiff
[ -x "$bin" ]; check "bin/cldiff installed" $? "$(cd "$PREFIX" && find . | head -20)"

want=$("$BUILD/cldiff" --version 2>&1)
got=$(cd / && "$bin" --version 2>&1)
rc=$?
[ $rc = 0 ] && [ "$got" = "$want" ] && [[ "$got" == "cldiff "[0-9]* ]]
check "installed cldiff --version: exit 0, '$got'" $? "exit $rc, got '$got', the build's says '$want'"

help=$(cd / && "$bin" --help 2>&1)
rc=$?
[ $rc = 0 ] && grep -q "^usage: cldiff MODEL.nb" <<<"$help" && grep -q -- "--layers SPEC" <<<"$help" &&
    grep -q "^exit codes:" <<<"$help"
check "installed cldiff --help: exit 0, usage, options and exit codes" $? "exit $rc: $(head -3 <<<"$help")"

out=$(cd / && "$bin" inspect "$SRC/testdata/mobilenet_tiny.nb" 2>&1)
rc=$?
[ $rc = 0 ] && grep -q "conv2d" <<<"$out"
check "installed cldiff inspect of the bundled model" $? "exit $rc: $(head -3 <<<"$out")"

doc=$PREFIX/share/doc/cldiff
missing=""
[ -f "$doc/README.md" ] || missing="$missing README.md"
for p in "$SRC"/docs/*.md; do
    [ -f "$doc/docs/$(basename "$p")" ] || missing="$missing docs/$(basename "$p")"
done
[ -z "$missing" ]; check "docs in share/doc/cldiff (README.md, docs/*.md)" $? "missing:$missing"

man=$PREFIX/share/man/man1/cldiff.1
if [ -n "$MAN" ]; then
    [ -f "$man" ] && grep -q '^\.TH CLDIFF' "$man" && grep -q 'layers' "$man"
    check "man page share/man/man1/cldiff.1 (help2man)" $? "$(ls "$PREFIX/share/man/man1" 2>&1)"
else
    echo "skip man page: help2man was not found when the build was configured"
    [ ! -e "$man" ]; check "no man page without help2man" $? "$man exists"
fi
# Paddle-Lite helpers: installed under share/cldiff, found there by the installed cldiff (doctor
# with a missing --cl-lib: the OpenCL part stops at once, exit 4, the Paddle-Lite part follows).
share=$PREFIX/share/cldiff
helpers="scripts/pl_bridge.py scripts/pl_ocl.py scripts/cldiff_dump.py probes/paddle-lite/pl_probe_runner.cc"
missing=""
for h in $helpers; do [ -f "$share/$h" ] || missing="$missing $h"; done
[ -z "$missing" ]; check "Paddle-Lite helpers in share/cldiff" $? "missing:$missing"
export CLDIFF_CACHE_DIR=$PREFIX/cache   # runners built by doctor go here, not into ~/.cache
doc_out=$(cd / && "$bin" doctor --cl-lib /nonexistent/libOpenCL.so 2>&1)
rc=$?
bad=""
for h in scripts/pl_bridge.py scripts/pl_ocl.py probes/paddle-lite/pl_probe_runner.cc; do
    grep -qF "helper  $h: $share/$h" <<<"$doc_out" || bad="$bad $h"
done
[ $rc = 4 ] && [ -z "$bad" ] && grep -q "^paddle-lite-arm:" <<<"$doc_out" && grep -q "^paddle-lite-opencl:" <<<"$doc_out"
check "installed cldiff doctor finds the helpers in $share" $? \
    "exit $rc (want 4), not found there:$bad; $(grep -A4 'Paddle-Lite engines' <<<"$doc_out")"
# the same binary outside both the source tree and an install prefix: the source tree's helpers
OOT=$(mktemp -d /tmp/cldiff_oot.XXXXXX)
trap 'rm -rf "$PREFIX" "$OOT"' EXIT
oot=$OOT/build
mkdir -p "$oot"
cp "$BUILD/cldiff" "$oot/cldiff"
src_real=$(cd "$SRC" && pwd -P)
doc_out=$(cd / && "$oot/cldiff" doctor --cl-lib /nonexistent/libOpenCL.so 2>&1)
rc=$?
bad=""
for h in scripts/pl_bridge.py scripts/pl_ocl.py probes/paddle-lite/pl_probe_runner.cc; do
    grep -qF "helper  $h: $src_real/$h" <<<"$doc_out" || bad="$bad $h"
done
[ $rc = 4 ] && [ -z "$bad" ]
check "cldiff outside its source tree finds the helpers in $src_real (CLDIFF_SOURCE_DIR)" $? \
    "exit $rc (want 4), not found there:$bad; $(grep -A4 'Paddle-Lite engines' <<<"$doc_out")"
if [ -d "$SRC/.paddle-lite/sdk-armv8-armlinux" ]; then
    grep -qF "SDK $src_real/.paddle-lite/sdk-armv8-armlinux (default: " <<<"$doc_out"
    check "cldiff outside its source tree finds the source tree's armv8 SDK" $? "$(grep -A2 '^paddle-lite-arm:' <<<"$doc_out")"
else
    echo "skip SDK lookup: $SRC/.paddle-lite/sdk-armv8-armlinux is absent (scripts/setup.sh unpacks it from ../shared/paddle-lite)"
fi
[ $fails = 0 ] && echo "install: all checks passed" || echo "install: $fails check(s) failed"
[ $fails = 0 ]
