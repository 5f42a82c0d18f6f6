#!/usr/bin/env bash
# Formats the tree with .clang-format, or checks that it is formatted (issue 21 point 5).
#
#   scripts/format.sh [--check] [--clang-format PATH] [FILE...]
#
# Without FILE: every tracked *.c and *.h under src/, probes/, report/, tests/ and kernels'
# C headers are left out (OpenCL C is formatted by hand). --check changes nothing and exits 1
# naming each file that would change (with the first lines of the difference); 0 when none.
# Exit 2: a wrong argument or no clang-format.
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
check=0
cf=""
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=1; shift ;;
        --clang-format) cf=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "format.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) files+=("$1"); shift ;;
    esac
done
if [ -z "$cf" ]; then
    for c in clang-format clang-format-14 clang-format-15; do
        if command -v "$c" > /dev/null; then cf=$c; break; fi
    done
fi
[ -n "$cf" ] && command -v "$cf" > /dev/null || { echo "format.sh: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
cd "$here"
if [ ${#files[@]} -eq 0 ]; then
    if git rev-parse --git-dir > /dev/null 2>&1; then
        mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'probes/*.c' 'probes/*.h' 'report/*.c' 'report/*.h' 'tests/*.c' 'tests/*.h')
    else
        mapfile -t files < <(find src probes report tests -name '*.[ch]' | sort)
    fi
fi
if [ "$check" = 0 ]; then
    "$cf" -i --style=file "${files[@]}"
    exit $?
fi
bad=0
for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | diff -q "$f" - > /dev/null; then
        echo "format.sh: $f is not formatted as .clang-format says (scripts/format.sh $f fixes it):" >&2
        "$cf" --style=file "$f" | diff "$f" - | head -8 >&2
        bad=1
    fi
done
exit $bad
