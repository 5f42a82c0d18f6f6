#!/usr/bin/env python3
"""Interrupt test (issue 5): SIGINT / SIGTERM in the middle of a differential run.

    test_interrupt.py CLDIFF SOURCE_DIR HOLD_SHIM

For each signal (SIGINT, SIGTERM) and each moment (during the CPU run; during the OpenCL
run, while the OpenCL child is running) it starts `cldiff MODEL --out DIR`, sends the signal
at that moment and checks:
  * cldiff exits with exit code 130;
  * CPU run: no op after the one that was running when the signal came ran (cldiff stops
    between ops); OpenCL run: run B is incomplete and shorter than run A;
  * DIR stays as it was and DIR.partial-<time>/dump.h5 exists, opens with h5py and has root
    attribute complete=0;
  * no temporary file (*.tmp-*) is left in DIR;
  * every OpenCL child process cldiff started is gone when cldiff has exited (reaped);
  * OpenCL run: the reports for the layers compared so far are written.

The moment is an event, never a delay (issue 14: a sleep-based version failed on a loaded
machine). HOLD_SHIM (tests/hardening/hold_shim.c) is preloaded into cldiff; it holds the
process when the N-th dataset of a run's group (/runs/cpu or /runs/opencl) has been created,
reports that on a pipe, and lets it go on only once the signal has been handled. So the
signal always arrives mid-run, and when the run goes on, cldiff's stop flag is already set:
the outcome is the same on an idle machine and on a loaded one.

For the OpenCL moment, cldiff is held while it stores run B's first tensor: the OpenCL child
is still running then (it cannot finish: the ~0.6 MB of tensors it still has to send exceed
the 64 KiB pipe to the held parent), and the parent passes the signal on to it.

Model: the bundled testdata/mobilenet_tiny.nb (14 probed layers), so the test never skips.
"""
import glob
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

import h5py

CLDIFF, SRC, SHIM = sys.argv[1], sys.argv[2], sys.argv[3]
MODEL = os.path.join(SRC, "testdata", "mobilenet_tiny.nb")
# generous bounds that only turn a hang into a failure message; no check depends on them
HANG_GUARD_S = 240
# hold at this dataset of the run's group: mid-run for the CPU run (ops 1..14 are probed);
# the first tensor of the OpenCL run
HOLD_AT = {"cpu run": ("/runs/cpu", 3), "opencl run": ("/runs/opencl", 1)}
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def children(pid):
    """Direct children of pid (from /proc/PID/task/*/children)."""
    out = set()
    for f in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(f) as fh:
                out.update(int(x) for x in fh.read().split())
        except OSError:
            pass
    return out


def state(pid):
    """The process state letter (R, S, D, Z, ...), or None when the process is gone. A zombie
    is not gone: its parent did not reap it."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_for_hold(p, rfd):
    """Blocks until the shim reports the hold (returns its line) or every writer of the pipe
    is gone, i.e. cldiff ended without reaching the moment (returns None)."""
    buf = b""
    while b"\n" not in buf:
        ready, _, _ = select.select([rfd], [], [], HANG_GUARD_S)
        if not ready:
            return None
        chunk = os.read(rfd, 4096)
        if not chunk:
            return None
        buf += chunk
    return buf.split(b"\n", 1)[0].decode(errors="replace")


def op_index(dataset):
    """Op index from a dump dataset name NNNN_<tensor>."""
    return int(dataset.split("_", 1)[0])


def run_case(sig, moment):
    name = f"{signal.Signals(sig).name} during {moment}"
    group, at = HOLD_AT[moment]
    out = tempfile.mkdtemp(prefix="cldiff_intr_")
    rfd, wfd = os.pipe()
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, CLDIFF_NO_PROGRESS="1", LD_PRELOAD=SHIM, CDHOLD_GROUP=group, CDHOLD_AT=str(at),
               CDHOLD_FD=str(wfd),
               # the ASan build's cldiff: the shim is preloaded ahead of the ASan runtime
               ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0")
    cmd = [CLDIFF, MODEL, "--out", out, "--timeout", "300", "--no-cache"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, pass_fds=(wfd,))
    os.close(wfd)
    held = wait_for_hold(p, rfd)
    os.close(rfd)
    if held is None:
        p.kill()
        so, se = p.communicate()
        check(False, f"{name}: cldiff ended (exit {p.returncode}) without reaching the {moment}; "
                     f"stderr: {se.decode(errors='replace')[-400:]!r}")
        return
    held_ds = held.rsplit("/", 1)[1]
    kids = children(p.pid)
    live_kids = {k for k in kids if state(k) not in (None, "Z")}
    if moment == "opencl run":
        check(bool(live_kids), f"{name}: the OpenCL child is running at the moment of the signal "
                               f"(children {sorted(kids)})")
    t_sig = time.monotonic()
    p.send_signal(sig)
    try:
        so, se = p.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        check(False, f"{name}: still running {HANG_GUARD_S} s after the signal (hung)")
        return
    took = time.monotonic() - t_sig
    se = se.decode(errors="replace")
    # reaped by cldiff before it exited: gone now, not a zombie and not still running
    stray = {k: state(k) for k in kids if state(k) is not None}
    check(p.returncode == 130, f"{name}: exit code 130 (got {p.returncode}); stderr: {se[-400:]!r}")
    # --out stays as it was (here: empty); the interrupted run's files are in OUT.partial-<time>
    # (issue 27: --out always holds one consistent run)
    parts = glob.glob(out + ".partial-*")
    check(len(parts) == 1 and os.listdir(out) == [],
          f"{name}: --out untouched, the partial run in OUT.partial-<time> ({os.listdir(out)}, {parts})")
    kept = parts[0] if parts else out
    dump = os.path.join(kept, "dump.h5")
    if os.path.exists(dump):
        try:
            with h5py.File(dump, "r") as f:
                c = int(f.attrs.get("complete", -1))
                runs = {k: int(f["runs"][k].attrs.get("complete", -1)) for k in f.get("runs", {})}
                names = {k: sorted(f["runs"][k]) for k in f.get("runs", {})}
            n = {k: len(v) for k, v in names.items()}
            check(c == 0, f"{name}: dump readable, root complete=0 (got {c}); runs complete={runs} tensors={n}")
            if moment == "cpu run":
                cpu = names.get("cpu", [])
                late = [d for d in cpu if op_index(d) > op_index(held_ds)]
                check(held_ds in cpu and not late and runs.get("cpu") == 0,
                      f"{name}: no op after the signal ran (held at {held_ds}; later tensors: {late}; "
                      f"run cpu complete={runs.get('cpu')})")
                check("opencl" not in names, f"{name}: the OpenCL run never started ({sorted(names)})")
            else:
                check(runs.get("cpu") == 1 and runs.get("opencl") == 0 and n.get("opencl", 0) < n.get("cpu", 0),
                      f"{name}: run B stopped before its end (runs complete={runs}, tensors={n})")
        except Exception as e:  # noqa: BLE001 - any failure to read is the finding
            check(False, f"{name}: dump.h5 unreadable: {e}")
    else:
        check(False, f"{name}: dump.h5 exists in the partial run's folder (files: {os.listdir(kept)})")
    left = glob.glob(os.path.join(kept, "*.tmp-*")) + glob.glob(os.path.join(kept, ".*tmp*")) + glob.glob(out + ".tmp-*")
    check(not left, f"{name}: no temporary files left ({left})")
    check(not stray, f"{name}: OpenCL child reaped (children at the signal {sorted(kids)}, left {stray})")
    reports = sorted(f for f in os.listdir(kept) if f != "dump.h5")
    if moment == "opencl run":
        # run A finished: the reports cover the layers both runs captured before the stop
        check("summary.json" in reports and "layers.csv" in reports and "report.html" in reports,
              f"{name}: reports written for what was compared so far ({reports})")
    print(f"     note: {held}; exited {took:.2f} s after the signal; reports written after the "
          f"interrupt: {reports or 'none'}; last stderr line: "
          f"{se.strip().splitlines()[-1] if se.strip() else ''!r}", flush=True)
    subprocess.run(["rm", "-rf", out] + parts)


def main():
    if not os.path.exists(MODEL):
        print(f"FAIL: {MODEL} missing (generated by the build: scripts/gen_testdata.cmake)")
        return 1
    print(f"model: {MODEL}")
    for sig in (signal.SIGINT, signal.SIGTERM):
        for moment in ("cpu run", "opencl run"):
            run_case(sig, moment)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
