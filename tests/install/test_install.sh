#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed files are checked: the
# binary answers --version and --help (run from elsewhere, so nothing depends on the build
# tree) and inspects the bundled model, the documentation pages are in place, and the man
# page is installed when help2man was found at configure time.
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
[ $fails = 0 ] && echo "install: all checks passed" || echo "install: $fails check(s) failed"
[ $fails = 0 ]
