#!/usr/bin/env bash
# Disk-fault tests (issue 5): a full disk and an unwritable --out must give exit 6 with a
# clear message, and never leave a dump that claims to be complete.
#   test_disk.sh CLDIFF SOURCE_DIR
# Cases (all with the bundled testdata model, whose dump is ~1.2 MB):
#   1. --out on a 200 KiB tmpfs (disk full while writing the dump), run and diff commands
#   2. --out on a tmpfs remounted read-only (existing folder; folder to be created)
#   3. --out under /proc (cannot create a folder there even as root): always available
#   4. --out naming an existing regular file
#   5. scripts/setup.sh on a disk with too little free space (exit 3)
# Cases 1-2 need mount(2) (root with CAP_SYS_ADMIN). Without it they are reported as
# skipped on stdout; when nothing but the fallback could run the script exits 77.
set -u
CLDIFF=$1
SRC=$2
MODEL=$SRC/testdata/mobilenet_tiny.nb
PY=$SRC/.venv/bin/python
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d /tmp/cldiff_disk.XXXXXX)
MNT=$WORK/mnt
mkdir -p "$MNT"
mounted=0
cleanup() {
    [ $mounted = 1 ] && umount "$MNT" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
fails=0
n=0
skipped=0

check() { # name result message
    n=$((n + 1))
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}

# Runs cldiff; leaves rc in $WORK/NAME.rc, stderr in $WORK/NAME.err
run() { # name args...
    local name=$1; shift
    CLDIFF_NO_PROGRESS=1 timeout 120 "$CLDIFF" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    echo $? >"$WORK/$name.rc"
}
expect_rc() { local rc; rc=$(cat "$WORK/$1.rc"); [ "$rc" = "$2" ]; check "$1: exit code $2" $? "got $rc; stderr: $(head -c 600 "$WORK/$1.err")"; }
expect_err() { grep -qiE -- "$2" "$WORK/$1.err"; check "$1: message matches '$2'" $? "stderr: $(head -c 600 "$WORK/$1.err")"; }
# No dump under the final name, or one whose root attribute complete is 0; no temporary left.
expect_no_complete_dump() { # name dir
    local d=$2 res=0 msg=""
    if [ -f "$d/dump.h5" ]; then
        msg=$("$PY" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); c=int(f.attrs.get('complete',-1)); print('complete=%d'%c); sys.exit(0 if c==0 else 1)" "$d/dump.h5" 2>&1)
        res=$?
    fi
    check "$1: no dump presented as complete" $res "dump.h5 present: $msg"
    local tmp
    tmp=$(ls "$d" 2>/dev/null | grep -c '\.tmp-')
    [ "$tmp" = 0 ]; check "$1: no temporary files left in --out" $? "$(ls "$d")"
}

if mount -t tmpfs -o size=200k,mode=0755 tmpfs "$MNT" 2>"$WORK/mount.err"; then
    mounted=1
    # 1. disk full
    run full_run run --backends cpu "$MODEL" --out "$MNT/run"
    expect_rc full_run 6
    expect_err full_run "no space left|disk full"
    expect_no_complete_dump full_run "$MNT/run"
    rm -rf "${MNT:?}"/*
    run full_diff "$MODEL" --out "$MNT/diff"
    expect_rc full_diff 6
    expect_err full_diff "no space left|disk full"
    expect_no_complete_dump full_diff "$MNT/diff"
    rm -rf "${MNT:?}"/*
    # 1b. the local check's scratch record on the full disk, the dump elsewhere
    CLDIFF_SCRATCH_MEM=0 CLDIFF_SCRATCH_DIR="$MNT" run full_scratch "$MODEL" --out "$WORK/scratch_out"
    expect_rc full_scratch 6
    expect_err full_scratch "local-check scratch file.*(no space left|disk full)"
    expect_no_complete_dump full_scratch "$WORK/scratch_out"
    rm -rf "${MNT:?}"/*
    # 2. read-only file system: an existing folder and one that must be created
    mkdir -p "$MNT/existing"
    if mount -o remount,ro "$MNT" 2>>"$WORK/mount.err"; then
        run ro_existing run --backends cpu "$MODEL" --out "$MNT/existing"
        expect_rc ro_existing 6
        expect_err ro_existing "read-only file system"
        expect_no_complete_dump ro_existing "$MNT/existing"
        run ro_create run --backends cpu "$MODEL" --out "$MNT/new/sub"
        expect_rc ro_create 6
        expect_err ro_create "read-only file system"
        run ro_diff "$MODEL" --out "$MNT/existing"
        expect_rc ro_diff 6
    else
        echo "SKIP read-only cases: remount,ro not permitted: $(cat "$WORK/mount.err")"
        skipped=$((skipped + 1))
    fi
else
    echo "SKIP tmpfs cases (disk full, read-only): mount not permitted here: $(cat "$WORK/mount.err")"
    skipped=$((skipped + 2))
fi

# 3. a folder that cannot be created even by root
run proc_out run --backends cpu "$MODEL" --out /proc/cldiff-out-test
expect_rc proc_out 6
expect_err proc_out "cannot create output folder"
# 3b. a scratch folder that cannot hold a file (the dump itself is writable)
CLDIFF_SCRATCH_MEM=0 CLDIFF_SCRATCH_DIR=/proc run proc_scratch "$MODEL" --out "$WORK/proc_scratch_out"
expect_rc proc_scratch 6
expect_err proc_scratch "cannot create the local-check scratch file in '/proc'"
expect_no_complete_dump proc_scratch "$WORK/proc_scratch_out"
# 3c. a scratch memory budget that is not a byte count: usage error, named
CLDIFF_SCRATCH_MEM=lots run bad_scratch_mem "$MODEL" --out "$WORK/bad_mem_out"
expect_rc bad_scratch_mem 2
expect_err bad_scratch_mem "CLDIFF_SCRATCH_MEM='lots' is not a number of bytes"
# 4. --out is a regular file
: >"$WORK/plainfile"
run file_out run --backends cpu "$MODEL" --out "$WORK/plainfile"
expect_rc file_out 6
expect_err file_out "not a folder|not a directory"
# 5. the test set's setup on a disk too full to start: exit 3 before installing anything,
#    naming the folder, the free space and what to do (a CI machine once ran out halfway
#    through unpacking a sysroot, and the run failed far from the cause)
CLDIFF_MIN_FREE_GB=1000000 timeout 60 bash "$SRC/scripts/setup.sh" tests >"$WORK/setup_full.out" 2>"$WORK/setup_full.err"
echo $? >"$WORK/setup_full.rc"
expect_rc setup_full 3
expect_err setup_full "only [0-9]+ MiB free on the file system of .*needs about 1000000 GiB"
expect_err setup_full "free some space there"

echo "$((n - fails))/$n checks passed, $fails failed, $skipped case group(s) skipped"
[ $fails -eq 0 ] || exit 1
[ $skipped -eq 2 ] && exit 77
exit 0
