#!/usr/bin/env bash
# The Paddle-Lite runners, built for real: `cldiff doctor` (in an empty runner cache) compiles
# probes/paddle-lite/pl_probe_runner.cc against each engine's SDK (the armv8 SDK with
# aarch64-linux-gnu-g++, the x86-64 OpenCL SDK with c++), runs each once with no arguments;
# then each runner is run here directly (the armv8 one under qemu-aarch64) and must answer with
# its usage and exit 2, and a second doctor takes both from the cache; with a sysroot that
# lacks libm.so.6 the armv8 runner is refused (not cached) naming the library and its package.
# An engine whose SDK, compiler or qemu is missing is skipped with the reason; exit 77 when
# both are.
#   test_pl_runners.sh CLDIFF SOURCE_DIR
set -u
CLDIFF=$(realpath "$1")
SRC=$2
CACHE=$(mktemp -d /tmp/cldiff_plrun.XXXXXX)
trap 'rm -rf "$CACHE"' EXIT
export CLDIFF_CACHE_DIR=$CACHE
fails=0 ran=0
check() { # name status message
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
# the engine's block of doctor's Paddle-Lite section
block() { awk -v e="$1:" '$0 == e {on = 1; next} /^[^ ]/ {on = 0} on' <<<"$2"; }

host=$(uname -m)
glibc=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9]*\.[0-9]*$')
ocl_sdk=sdk-x86_64-debian12
[ "${glibc#2.}" -ge 38 ] 2>/dev/null && [ -d "$SRC/.paddle-lite/sdk-x86_64-ubuntu24" ] && ocl_sdk=sdk-x86_64-ubuntu24
skip_arm="" skip_ocl=""
[ -n "${CLDIFF_PL_ARM_SDK:-}" ] || [ -d "$SRC/.paddle-lite/sdk-armv8-armlinux" ] ||
    skip_arm="no armv8 SDK: $SRC/.paddle-lite/sdk-armv8-armlinux is absent and CLDIFF_PL_ARM_SDK unset (scripts/setup.sh unpacks ../shared/paddle-lite/sdk-armv8-armlinux.tar.xz)"
if [ "$host" = x86_64 ]; then
    [ -z "$skip_arm" ] && ! command -v aarch64-linux-gnu-g++ >/dev/null &&
        skip_arm="aarch64-linux-gnu-g++ not found (apt-get install g++-aarch64-linux-gnu)"
    [ -z "$skip_arm" ] && ! command -v qemu-aarch64 >/dev/null && skip_arm="qemu-aarch64 not found (apt-get install qemu-user)"
    [ -n "${CLDIFF_PL_OPENCL_SDK:-}" ] || [ -d "$SRC/.paddle-lite/$ocl_sdk" ] ||
        skip_ocl="no x86-64 OpenCL SDK: $SRC/.paddle-lite/$ocl_sdk is absent and CLDIFF_PL_OPENCL_SDK unset (scripts/setup.sh)"
else
    [ -z "$skip_arm" ] && ! command -v c++ >/dev/null && skip_arm="c++ not found (apt-get install g++)"
    skip_ocl="the x86-64 OpenCL SDK runs on x86-64 only (this is $host)"
fi
[ -z "$skip_ocl" ] && ! command -v c++ >/dev/null && skip_ocl="c++ not found (apt-get install g++)"
[ -z "$skip_ocl" ] && [ "$host" = x86_64 ] && ! ldconfig -p | grep -q 'libopenblas.so.0 ' &&
    skip_ocl="libopenblas.so.0 not installed (apt-get install libopenblas0-pthread)"

# --cl-lib that does not exist: the OpenCL part stops at once (exit 4), the Paddle-Lite part runs
out=$(cd / && "$CLDIFF" doctor --cl-lib /nonexistent/libOpenCL.so 2>&1)
rc=$?
check "doctor: exit 4 (OpenCL part), Paddle-Lite section printed" "$([ $rc = 4 ] && grep -q '^Paddle-Lite engines' <<<"$out"; echo $?)" \
    "exit $rc: $(tail -5 <<<"$out")"
out2=$(cd / && "$CLDIFF" doctor --cl-lib /nonexistent/libOpenCL.so 2>&1)

engine() { # name skip-reason
    local name=$1 why=$2 b b2 exe pre=() got rc
    if [ -n "$why" ]; then echo "skip $name: $why"; return; fi
    ran=$((ran + 1))
    b=$(block "$name" "$out")
    exe=$(grep -o "runner $CACHE/pl-runner/[0-9a-f]*/pl_probe_runner (built now)" <<<"$b" | awk '{print $2}')
    [ -n "$exe" ] && grep -q "answers with its usage (exit 2)" <<<"$b"
    check "$name: doctor built the runner into the cache and it loads" $? "$b"
    [ -n "$exe" ] || return
    if [ "$name" = paddle-lite-arm ] && [ "$host" != aarch64 ]; then
        file_out=$(od -An -tu1 -j18 -N1 "$exe" | tr -d ' \n')
        [ "$file_out" = 183 ]; check "$name: the runner is an aarch64 executable (ELF machine $file_out)" $? ""
        pre=(qemu-aarch64 -L "${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}")
    fi
    got=$("${pre[@]}" "$exe" 2>&1)
    rc=$?
    [ $rc = 2 ] && grep -q "^usage: .*pl_probe_runner probed.nb IN_DIR OUT_DIR" <<<"$got"
    check "$name: ${pre[*]:+${pre[*]} }pl_probe_runner with no arguments: usage, exit 2" $? "exit $rc: $got"
    b2=$(block "$name" "$out2")
    grep -qF "runner $exe (cached)" <<<"$b2"
    check "$name: a second doctor takes the runner from the cache" $? "$b2"
    if [ "$name" = paddle-lite-arm ] && [ "$host" = x86_64 ]; then
        # a sysroot that lacks libm.so.6: the fresh runner does not load, is not cached, and the
        # message names the library and its package
        local fsr=$CACHE/sysroot-without-libm x
        mkdir -p "$fsr/lib"
        for x in "${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}"/lib/*; do
            case $(basename "$x") in libm.so*|libm-*) ;; *) ln -s "$x" "$fsr/lib/";; esac
        done
        b2=$(block "$name" "$(cd / && CLDIFF_CACHE_DIR=$CACHE/c2 QEMU_LD_PREFIX=$fsr "$CLDIFF" doctor --cl-lib /nonexistent/libOpenCL.so 2>&1)")
        grep -q "FAILED runner: .*does not load: libm.so.6 is missing (Debian: apt-get install libc6-arm64-cross" <<<"$b2" &&
            grep -q "=> $name NOT usable" <<<"$b2" && x=$(grep -o "$CACHE/c2/pl-runner/[0-9a-f]*/" <<<"$b2") &&
            [ -n "$x" ] && [ ! -e "${x}pl_probe_runner" ]
        check "$name: a sysroot without libm.so.6: runner refused, not cached, library and package named" $? "$b2"
    fi
    if grep -q "=> $name usable" <<<"$b"; then echo "info $name: doctor says usable"
    else echo "info $name: doctor says not usable here: $(grep -E 'MISSING|FAILED' <<<"$b" | head -3)"; fi
}
engine paddle-lite-arm "$skip_arm"
engine paddle-lite-opencl "$skip_ocl"
if [ $ran = 0 ]; then echo "SKIPPED: neither Paddle-Lite runner can be built here (reasons above)"; exit 77; fi
[ $fails = 0 ] && echo "pl_sdk_runners: all checks passed" || echo "pl_sdk_runners: $fails check(s) failed"
[ $fails = 0 ]
