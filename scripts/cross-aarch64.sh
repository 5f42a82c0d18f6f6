#!/usr/bin/env bash
# aarch64 build of cldiff, tested under qemu-user (issue 5; docs/hardening.md).
#
#   scripts/cross-aarch64.sh [--ci] [--build DIR] [--host-cldiff PATH] [--models LIST]
#
# 1. sysroot: the arm64 .debs of HDF5, libpng, zlib, Criterion, libgomp, glibc and their
#    dependencies are fetched with `apt-get download` and unpacked with `dpkg -x` into
#    DIR/sysroot (libhdf5-dev:arm64 conflicts with the amd64 one, so no multiarch install).
#    Needs the arm64 architecture in dpkg (`dpkg --add-architecture arm64; apt-get update`,
#    done here when run as root).
# 2. configure with cmake/aarch64-toolchain.cmake, build cldiff and the unit tests.
# 3. run the unit tests under `qemu-aarch64 -L DIR/sysroot` (--ci: those of architecture-
#    dependent code only: GEMM, int8, im2col, CPU ops, bounds). Criterion re-executes its test
#    binary, which needs a binfmt_misc handler for aarch64 ELF files: an existing one (e.g.
#    Debian qemu-user-binfmt) is used; otherwise, as root, a temporary one is registered
#    (mounting binfmt_misc if needed) and removed on exit, interrupts and failures included.
#    CD_TEST_NO_OPENCL_DEVICE=1 is set for them: the sysroot has the OpenCL ICD loader but
#    no driver, so the tests that need an OpenCL device skip (visibly) instead of failing.
# 4. `cldiff run --backends cpu` of the shared models (input shapes from shapes.txt) under
#    qemu, the same command with the x86-64 cldiff (--host-cldiff, default build/cldiff),
#    and `cldiff compare x86.h5 arm.h5` (fp32 layer tolerances, README "Tolerances")
#    must pass. --ci: the small models only, so the whole script stays within ~6 minutes.
# Exit: 0 pass, 1 a failure, 77 cross toolchain or qemu missing (prints the apt-get line).
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build-aarch64"
host_cldiff="$here/build/cldiff"
ci=0
models=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) ci=1 ;;
        --build) build=${2:?}; shift ;;
        --host-cldiff) host_cldiff=${2:?}; shift ;;
        --models) models=$(echo "${2:?}" | tr ',' ' '); shift ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "cross-aarch64.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
APT_LINE="apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
for t in aarch64-linux-gnu-gcc qemu-aarch64; do
    if ! command -v $t >/dev/null; then
        echo "cross-aarch64.sh: SKIP: $t not installed. Install with: $APT_LINE" >&2
        exit 77
    fi
done
shared="${CD_SHARED_MODELS:-$here/../shared/models}"
sysroot="$build/sysroot"
mkdir -p "$build"
log="$build/cross.log"
: >"$log"
fail() { echo "cross-aarch64.sh: FAIL: $*" >&2; exit 1; }

# ---- 1. sysroot
# ocl-icd-libopencl1: the OpenCL ICD loader, so the loader tests find a real arm64
# libOpenCL.so.1 (no driver: etc/OpenCL/vendors in the sysroot stays empty).
PKGS="libhdf5-dev libpng-dev zlib1g-dev libcriterion-dev libgomp1 libc6 libc6-dev ocl-icd-libopencl1"
EXCLUDE='^(libcurl4-gnutls-dev|libcurl4-nss-dev|libcurl3-nss|nss-plugin-pem|libnss3|libnspr4|hdf5-helpers|libhdf5-fortran|libhdf5-hl-fortran|libgfortran|libhdf5-cpp|libhdf5-hl-cpp|pkg-config|pkgconf)'
# The .complete stamp holds the recipe; a sysroot made from another package list is rebuilt.
recipe="packages: $PKGS
exclude: $EXCLUDE
vendors: empty"
if [ ! -f "$sysroot/.complete" ] || [ "$(cat "$sysroot/.complete")" != "$recipe" ]; then
    [ -f "$sysroot/.complete" ] && echo "sysroot: package list changed, rebuilding $sysroot"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        [ "$(id -u)" = 0 ] || { echo "cross-aarch64.sh: SKIP: arm64 not a dpkg architecture; run as root: dpkg --add-architecture arm64 && apt-get update" >&2; exit 77; }
        { dpkg --add-architecture arm64 && apt-get update; } >>"$log" 2>&1 || fail "cannot add the arm64 architecture (see $log)"
    fi
    # Every arm64 package the list depends on, minus alternatives nobody links against
    # (the other libcurl flavours, Fortran/C++ HDF5 bindings, pkg-config tools).
    deps=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
               --no-enhances $(for p in $PKGS; do echo "$p:arm64"; done) 2>/dev/null |
           grep -E '^[a-z0-9].*:arm64$' | sort -u |
           grep -vE "$EXCLUDE")
    [ -n "$deps" ] || fail "apt-cache found no arm64 packages (apt-get update after dpkg --add-architecture arm64?)"
    rm -rf "$build/debs"   # no stale versions unpacked over the current ones
    mkdir -p "$build/debs"
    (cd "$build/debs" && apt-get download $deps) >>"$log" 2>&1 || fail "apt-get download failed (see $log)"
    rm -rf "$sysroot"
    mkdir -p "$sysroot"
    for d in "$build"/debs/*.deb; do dpkg -x "$d" "$sysroot" || fail "dpkg -x $d"; done
    # absolute symlinks inside the sysroot (e.g. libz.so -> /lib/...) must point into it
    find "$sysroot" -type l | while read -r l; do
        t=$(readlink "$l")
        case "$t" in /*) ln -sf "$sysroot$t" "$l" ;; esac
    done
    # qemu-user -L looks up absolute paths in the sysroot first: an empty vendors folder
    # there hides the host's x86-64 ICD files (/etc/OpenCL/vendors/*.icd) from the arm64
    # loader, which then reports no platform.
    mkdir -p "$sysroot/etc/OpenCL/vendors"
    printf '%s\n' "$recipe" >"$sysroot/.complete"
fi
echo "sysroot: $sysroot ($(du -sh "$sysroot" | cut -f1))"

# ---- 2. build
b="$build/build"
if ! cmake -S "$here" -B "$b" -DCMAKE_TOOLCHAIN_FILE="$here/cmake/aarch64-toolchain.cmake" \
        -DCD_AARCH64_SYSROOT="$sysroot" -DOPENCL_INCLUDE_DIR=/usr/include -DCMAKE_BUILD_TYPE=Release -DCLDIFF_TESTS=ON -DCLDIFF_WERROR=ON >>"$log" 2>&1; then
    tail -20 "$log" >&2; fail "configure failed (see $log)"
fi
units=$(cd "$here/tests/unit" && ls test_*.c | sed 's/\.c$//')
if [ $ci = 1 ]; then
    # --ci: the unit tests of code that differs by architecture (the NEON GEMM and int8 kernels,
    # im2col, the CPU ops, the bounds' floating-point arithmetic, which GCC contracts into FMA on
    # aarch64); the readers and writers are checked below end to end (aarch64 reads the .nb and
    # writes the dump that x86-64 compares), the rest is architecture-neutral C that x86-64 runs.
    # Running all 23 under qemu was 123 s of this test's 311 s (loaded 2-core machine), these 6
    # took 63 s of it; the other 17 programs were also built for nothing.
    ci_units=""
    for u in test_gemm test_conv_regress test_int8 test_ops_basic test_ops_detect test_bounds; do
        [ -f "$here/tests/unit/$u.c" ] && ci_units="$ci_units $u"
    done
    units=$ci_units
fi
if ! cmake --build "$b" -j2 --target cldiff $units >>"$log" 2>&1; then
    grep -E "error" "$log" | head -20 >&2; fail "build failed (see $log)"
fi
file "$b/cldiff" | grep -q "ARM aarch64" || fail "$b/cldiff is not an aarch64 executable"
echo "built: $(file -b "$b/cldiff" | cut -d, -f1-2)"
export QEMU_LD_PREFIX="$sysroot"
Q="qemu-aarch64 -L $sysroot"
# the CPU backend's hand-written NEON GEMM kernel must be what runs there
ver=$($Q "$b/cldiff" --version 2>&1)
echo "under qemu: $ver"
case "$ver" in *"fp32 neon"*) ;; *) fail "aarch64 cldiff does not pick the NEON GEMM kernel: $ver" ;; esac

# ---- 3. unit tests under qemu
fails=0
# Criterion runs each test in a child it spawns by re-executing the test binary; an aarch64
# ELF can only be exec'd from inside qemu-user when the kernel has a binfmt_misc handler for
# it. Use one that exists (any name, e.g. qemu-user-binfmt's qemu-aarch64), else register a
# temporary one as root and remove it again however the script ends.
BINFMT=/proc/sys/fs/binfmt_misc
# ELF64, little endian, e_machine 0xb7 (EM_AARCH64), executable or shared object
AARCH64_MAGIC='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
AARCH64_MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
binfmt_name="" binfmt_mounted=0
# A lasting aarch64 handler (e.g. qemu-user-binfmt's). Another run's temporary handler
# (cldiff-aarch64-*) does not count: that run removes it when it ends, maybe while this one
# still needs it (two CI runs on one machine), so this run registers its own beside it.
have_aarch64_handler() {
    grep -qx enabled "$BINFMT/status" 2>/dev/null || return 1
    local f
    for f in "$BINFMT"/*; do
        case "${f##*/}" in register|status|cldiff-aarch64-*) continue ;; esac
        grep -qx enabled "$f" 2>/dev/null &&
            grep -qx 'magic 7f454c460201010000000000000000000200b700' "$f" && return 0
    done
    return 1
}
child=""
# run_child LOG CMD...: runs CMD in the background (output to LOG) and waits for it, so that
# an interrupt is acted on at once (bash runs traps only after a foreground command ends)
# and the child is stopped too.
run_child() {
    local out=$1
    shift
    "$@" >"$out" 2>&1 &
    child=$!
    wait "$child"
    local rc=$?
    child=""
    return $rc
}
on_exit() {
    # timeout(1) passes the TERM on to its command's process group (qemu, Criterion's workers)
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
    binfmt_cleanup
}
# every way out: normal exit, failure, SIGINT/SIGTERM/SIGHUP
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
binfmt_cleanup() {
    if [ -n "$binfmt_name" ] && [ -e "$BINFMT/$binfmt_name" ]; then
        echo -1 >"$BINFMT/$binfmt_name" 2>/dev/null && echo "binfmt: removed temporary handler $binfmt_name"
    fi
    binfmt_name=""
    # unmount only what this script mounted, and only if nothing else registered meanwhile
    if [ $binfmt_mounted = 1 ]; then
        local f others=0
        for f in "$BINFMT"/*; do
            case "${f##*/}" in register|status|'*') ;; *) others=1 ;; esac
        done
        [ $others = 0 ] && umount "$BINFMT" 2>/dev/null
    fi
    binfmt_mounted=0
}
binfmt_why=""
if have_aarch64_handler; then
    echo "binfmt: using the existing aarch64 handler"
elif [ "$(id -u)" != 0 ]; then
    binfmt_why="not root (registering a binfmt_misc handler needs root)"
else
    if [ ! -e "$BINFMT/register" ]; then
        if mount -t binfmt_misc binfmt_misc "$BINFMT" 2>>"$log"; then binfmt_mounted=1
        else binfmt_why="binfmt_misc cannot be mounted on $BINFMT (see $log)"; fi
    fi
    if [ -z "$binfmt_why" ] && ! grep -qx enabled "$BINFMT/status" 2>/dev/null; then
        binfmt_why="binfmt_misc is disabled ($BINFMT/status)"
    fi
    if [ -z "$binfmt_why" ] && have_aarch64_handler; then   # seen once mounted
        echo "binfmt: using the existing aarch64 handler"
    elif [ -z "$binfmt_why" ]; then
        binfmt_name="cldiff-aarch64-$$-$(date +%s)"
        # removed by on_exit (EXIT trap) and, should this shell be SIGKILLed (e.g. by a ctest
        # timeout), by a detached watcher that removes the handler once this process is gone.
        setsid -f sh -c "while kill -0 $$ 2>/dev/null; do sleep 1; done; [ -e '$BINFMT/$binfmt_name' ] && echo -1 >'$BINFMT/$binfmt_name'" \
            </dev/null >/dev/null 2>&1
        # F: the kernel opens the interpreter now, so it also works inside mount namespaces
        if printf ':%s:M::%s:%s:%s:F' "$binfmt_name" "$AARCH64_MAGIC" "$AARCH64_MASK" \
                "$(command -v qemu-aarch64)" >"$BINFMT/register" 2>>"$log" && [ -e "$BINFMT/$binfmt_name" ]; then
            echo "binfmt: registered temporary handler $BINFMT/$binfmt_name -> $(command -v qemu-aarch64) (removed on exit)"
        else
            binfmt_name=""
            binfmt_why="writing $BINFMT/register failed (see $log)"
            binfmt_cleanup
        fi
    fi
fi
if [ -n "$binfmt_why" ]; then
    echo "SKIP unit tests under qemu: no binfmt_misc handler for aarch64 and none can be registered: $binfmt_why."
    echo "     Criterion re-executes its test binary, which needs one. Run this script as root (it registers a"
    echo "     temporary handler), or install qemu-user-binfmt on the host. The CPU model runs below still run."
    units_run=""
else
    units_run=$units
fi
for u in $units_run; do
    t0=$(date +%s)
    # CD_TEST_NO_OPENCL_DEVICE=1: the sysroot has the ICD loader but no OpenCL driver, so the
    # tests needing a device skip (Criterion prints the reason) instead of failing
    # shellcheck disable=SC2086
    if run_child "$build/$u.log" env -C "$b/tests" CD_SHARED_MODELS="$shared" CD_TEST_NO_OPENCL_DEVICE=1 \
            timeout 300 $Q ./"$u" --jobs 1 --verbose; then
        plain=$(sed 's/\x1b\[[0-9;]*m//g' "$build/$u.log")
        summary=$(echo "$plain" | grep -E "Synthesis:" | tail -1 | sed 's/.*Synthesis: //; s/ *$//')
        echo "ok   unit $u ($(( $(date +%s) - t0 )) s): $summary | Skipped: $(echo "$plain" | grep -c '^\[SKIP\]')"
        echo "$plain" | grep -E '^\[SKIP\]|^\[gemm\]' | sed 's/^/       /'
    else
        why=$(sed 's/\x1b\[[0-9;]*m//g' "$build/$u.log" | grep -E 'FAIL|CRASH|Assertion|Synthesis|criterion:|qemu:' | head -20)
        echo "FAIL unit $u: ${why:-$(tail -5 "$build/$u.log")}"
        fails=$((fails + 1))
    fi
done

# ---- 4. CPU runs of the shared models, x86-64 vs aarch64
if [ -z "$models" ]; then
    if [ $ci = 1 ]; then
        models="mask_detector_fp32_arm_v2.10rc.nb mask_detector_fp32_arm_meta0_7735976.nb ppocr_v2.0_cls_fp32_arm_v2.14rc.nb ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb"
    else
        models=$(cd "$shared" 2>/dev/null && ls *.nb)
    fi
fi
[ -x "$host_cldiff" ] || fail "x86-64 cldiff '$host_cldiff' missing (--host-cldiff PATH)"
[ -d "$shared" ] || { echo "note: $shared absent: using testdata models"; shared="$here/testdata"; models="mobilenet_tiny.nb multi_input.nb"; }
for m in $models; do
    [ -f "$shared/$m" ] || { echo "note: $m absent"; continue; }
    shape=$(awk -v m="$m" '$1 == m { for (i = 2; i <= NF; i++) printf "--shape %s ", $i }' "$shared/shapes.txt" 2>/dev/null)
    # the meta-0 file declares no shapes and has no line in shapes.txt; MANIFEST.md: same
    # network as its meta-2 twin, input [-1,3,128,128] (as tests/e2e/e2e_lib.py does)
    [ -z "$shape" ] && [ "$m" = mask_detector_fp32_arm_meta0_7735976.nb ] && shape="--shape @HUB_pyramidbox_lite_mobile_mask@image=1,3,128,128"
    ox="$build/out/$m.x86" oa="$build/out/$m.arm"
    rm -rf "$ox" "$oa"
    # shellcheck disable=SC2086
    "$host_cldiff" run --backends cpu "$shared/$m" $shape --threads 2 --out "$ox" --quiet >"$build/$m.x86.log" 2>&1
    rx=$?
    t0=$(date +%s)
    # shellcheck disable=SC2086
    run_child "$build/$m.arm.log" timeout 600 $Q "$b/cldiff" run --backends cpu "$shared/$m" $shape --threads 2 --out "$oa" --quiet
    ra=$?
    ta=$(( $(date +%s) - t0 ))
    if [ $rx != $ra ]; then
        echo "FAIL $m: exit $rx on x86-64, $ra on aarch64: $(tail -3 "$build/$m.arm.log")"; fails=$((fails + 1)); continue
    fi
    if [ $rx != 0 ]; then
        # the same refusal on both (e.g. exit 8 for an op cldiff cannot run): consistent, noted
        echo "ok   $m: both refuse with exit $rx ($(grep -m1 cldiff: "$build/$m.arm.log"))"; continue
    fi
    "$host_cldiff" compare "$ox/dump.h5" "$oa/dump.h5" --out "$build/out/$m.cmp" >"$build/$m.cmp.log" 2>&1
    rc=$?
    summary=$(grep -m1 -E "^(PASS|FAIL)" "$build/$m.cmp.log")
    if [ $rc = 0 ]; then
        echo "ok   $m: aarch64 (qemu, $ta s) matches x86-64 within fp32 tolerances: $summary"
    else
        echo "FAIL $m: compare exit $rc: $(head -20 "$build/$m.cmp.log")"; fails=$((fails + 1))
    fi
done
echo "cross-aarch64.sh: $fails failure(s)"
[ $fails = 0 ]
