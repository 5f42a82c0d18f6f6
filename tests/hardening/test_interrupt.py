#!/usr/bin/env python3
"""Interrupt test (issue 5): SIGINT / SIGTERM in the middle of a differential run.

    test_interrupt.py CLDIFF SOURCE_DIR

For each signal (SIGINT, SIGTERM) and each moment (while the CPU run is going; while the
OpenCL child is running) it starts `cldiff MODEL --out DIR` on a large model, sends the
signal and checks:
  * cldiff exits within 10 s of the signal with exit code 130;
  * DIR/dump.h5 exists, opens with h5py and has root attribute complete=0;
  * no temporary file (*.tmp-*) is left in DIR;
  * every OpenCL child process cldiff started is gone (not running, not a zombie).
What it prints about reports (written or not) is informational: it is the lead's part.

Model: pyramidbox (1024x1024) from ../shared/models, else ppocr_v3_det at 1x3x320x320.
Without either the test cannot make a run long enough to interrupt: exit 77 (skipped).
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py

CLDIFF, SRC = sys.argv[1], sys.argv[2]
MODELS = os.environ.get("CD_SHARED_MODELS", os.path.join(SRC, "..", "shared", "models"))
CANDIDATES = [
    ("pyramidbox_lite_fp32_arm_v2.10rc.nb", []),
    ("ppocr_v3_det_fp32_x86_v2.12.nb", ["--shape", "x=1,3,320,320"]),
]
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


def alive(pid):
    """True if pid exists and is not a zombie we could ignore: a zombie counts as alive
    here (nobody reaped it: cldiff did not wait for its child)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return True if fh.read() else False
    except OSError:
        return False


def run_case(model, extra, sig, moment):
    name = f"{signal.Signals(sig).name} during {moment}"
    out = tempfile.mkdtemp(prefix="cldiff_intr_")
    env = dict(os.environ, CLDIFF_NO_PROGRESS="1")
    cmd = [CLDIFF, model, *extra, "--out", out, "--timeout", "300", "--no-cache"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen_children = set()
    t0 = time.monotonic()
    fired = None
    # Wait for the moment: the CPU run has started (temporary dump exists, no child yet),
    # or an OpenCL child process exists and has run for a second.
    while p.poll() is None and time.monotonic() - t0 < 240:
        kids = children(p.pid)
        seen_children |= kids
        tmp = glob.glob(os.path.join(out, "*.tmp-*"))
        if moment == "cpu run" and tmp and not kids:
            time.sleep(0.5)
            if not children(p.pid):
                fired = time.monotonic()
                break
        if moment == "opencl run" and kids:
            time.sleep(1.0)
            seen_children |= children(p.pid)
            fired = time.monotonic()
            break
        time.sleep(0.05)
    if fired is None or p.poll() is not None:
        p.kill()
        p.communicate()
        check(False, f"{name}: the run ended or never reached the {moment} (took {time.monotonic() - t0:.1f} s)")
        return
    p.send_signal(sig)
    try:
        so, se = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        check(False, f"{name}: still running 30 s after the signal")
        return
    took = time.monotonic() - fired
    se = se.decode(errors="replace")
    check(took < 10, f"{name}: exits promptly ({took:.2f} s after the signal, limit 10 s)")
    check(p.returncode == 130, f"{name}: exit code 130 (got {p.returncode}); stderr: {se[-400:]!r}")
    dump = os.path.join(out, "dump.h5")
    if os.path.exists(dump):
        try:
            with h5py.File(dump, "r") as f:
                c = int(f.attrs.get("complete", -1))
                runs = {k: int(f["runs"][k].attrs.get("complete", -1)) for k in f.get("runs", {})}
                n = {k: len(f["runs"][k]) for k in f.get("runs", {})}
            check(c == 0, f"{name}: dump readable, root complete=0 (got {c}); runs complete={runs} tensors={n}")
        except Exception as e:  # noqa: BLE001 - any failure to read is the finding
            check(False, f"{name}: dump.h5 unreadable: {e}")
    else:
        check(False, f"{name}: dump.h5 exists in --out (files: {os.listdir(out)})")
    left = glob.glob(os.path.join(out, "*.tmp-*")) + glob.glob(os.path.join(out, ".*tmp*"))
    check(not left, f"{name}: no temporary files left ({left})")
    deadline = time.monotonic() + 2
    while any(alive(c) for c in seen_children) and time.monotonic() < deadline:
        time.sleep(0.05)
    stray = [c for c in seen_children if alive(c)]
    check(not stray, f"{name}: OpenCL child gone (children seen {sorted(seen_children)}, left {stray})")
    if moment == "opencl run":
        check(bool(seen_children), f"{name}: an OpenCL child was seen at all")
    reports = sorted(f for f in os.listdir(out) if f != "dump.h5")
    if moment == "opencl run":
        # run A finished: the reports cover the layers both runs captured before the stop
        check("summary.json" in reports and "layers.csv" in reports and "report.html" in reports,
              f"{name}: reports written for what was compared so far ({reports})")
    print(f"     note: reports written after the interrupt: {reports or 'none'}; "
          f"last stderr line: {se.strip().splitlines()[-1] if se.strip() else ''!r}", flush=True)
    subprocess.run(["rm", "-rf", out])


def main():
    pick = None
    for fname, extra in CANDIDATES:
        path = os.path.join(MODELS, fname)
        if os.path.exists(path):
            pick = (path, extra)
            break
    if not pick:
        print(f"SKIP: none of {[c[0] for c in CANDIDATES]} in {MODELS}: no model runs long enough to interrupt")
        return 77
    print(f"model: {pick[0]} {' '.join(pick[1])}")
    for sig in (signal.SIGINT, signal.SIGTERM):
        for moment in ("cpu run", "opencl run"):
            run_case(pick[0], pick[1], sig, moment)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
