#!/usr/bin/env python3
"""Planted faults in Paddle-Lite's own OpenCL kernels are named (issue 19 point 5), the CI slice of
scripts/pl_planted.sh: two plants on mask_detector, each a source edit of one Paddle-Lite kernel
made by the fault injector (tests/faultinj, CLFI_SRC_NEEDLE) while Paddle-Lite builds its programs:
  * relu_lane (image/activation_kernel.cl, relu: lane w not clamped) -> KERNEL FAULT at relu_0;
  * fc_partial (image/fc_kernel.cl, fc: the 4th partial sum dropped) -> KERNEL FAULT at fc_0.
For each the script establishes the ground truth itself (Paddle-Lite's kernel log of the clean run,
the OpenCL tensors of the planted run against the clean run) and this test checks the grade, the
exit code, the named layer and kind in summary.json, that exactly one program was edited, and that
no layer before the planted one changed. Both needles are also checked against the SDK's embedded
kernel sources (a rewritten kernel fails loudly, not silently as "no effect").
17-21 s on 2 busy cores with a warm PoCL cache, 57 s with an empty one (every program compiles,
the two mutated ones once each).
Skips (exit 77, reason printed) where an SDK, qemu, the wheel, libfaultinj or the model is missing.
"""
import csv
import json
import os
import subprocess
import sys

from pl_lib import MASK, SKIP, SRC, Checks, need_cldiff, need_model, tmpdir
from e2e_lib import CLDIFF

SCRIPT = os.path.join(SRC, "scripts", "pl_planted.py")


def main():
    need_cldiff()
    need_model(MASK)
    fi = os.environ.get("CLDIFF_FAULTINJ") or os.path.join(os.path.dirname(CLDIFF), "tests", "libfaultinj.so")
    if not os.path.isfile(fi):
        print("SKIP: no libfaultinj.so (%s; build the faultinj target or set CLDIFF_FAULTINJ)" % fi)
        sys.exit(SKIP)
    c = Checks("pl_planted")
    d = tmpdir("pl_planted")
    c.cleanup_later(d)

    p = subprocess.run([sys.executable, SCRIPT, "--check", "--only", "relu_lane,fc_partial"],
                       capture_output=True, text=True)
    if p.returncode == 77 or "SKIP" in p.stdout:
        print(p.stdout.strip())
        sys.exit(SKIP)
    c.ok(p.returncode == 0 and p.stdout.count(" ok") == 2, "both needles fit the SDK's embedded kernels",
         p.stdout + p.stderr)

    p = subprocess.run([sys.executable, SCRIPT, "--ci", "--cldiff", CLDIFF, "--faultinj", fi, "--out", d,
                        "--timeout", "300"], capture_output=True, text=True)
    print(p.stdout[-3000:])
    if p.returncode == SKIP:
        print(p.stderr[-500:])
        sys.exit(SKIP)
    c.ok(p.returncode == 0, "pl_planted.py --ci: exit 0", p.stderr[-1500:])
    rows = {}
    path = os.path.join(d, "pl_planted.csv")
    if os.path.isfile(path):
        with open(path) as f:
            rows = {r["id"]: r for r in csv.DictReader(f)}
    for pid, layer in (("relu_lane", "relu_0"), ("fc_partial", "fc_0")):
        r = rows.get(pid, {})
        c.ok(r.get("expected") == layer, "%s: ground truth: first changed layer running the kernel is %s" % (pid, layer),
             str(r))
        c.ok(r.get("grade") == "named" and r.get("rc") == "1", "%s: KERNEL FAULT named at %s, exit 1" % (pid, layer),
             str(r))
        c.ok(r.get("first_changed") == layer, "%s: no layer before %s changed" % (pid, layer),
             str(r.get("first_changed")))
        c.ok(r.get("edits") == "1", "%s: exactly one Paddle-Lite program edited" % pid, str(r.get("edits")))
        out = os.path.join(d, "runs", pid)
        sp = os.path.join(out, "summary.json")
        s = json.load(open(sp)) if os.path.isfile(sp) else {}
        ff = s.get("first_fault") or {}
        c.ok(s.get("verdict_kind") == "kernel_fault" and ff.get("layer") == layer,
             "%s: summary.json: kernel_fault, first_fault %s" % (pid, layer), str(ff)[:300])
        try:
            ratio = float(r.get("ratio_named", "nan"))
        except ValueError:
            ratio = float("nan")
        c.ok(ratio > 10, "%s: local ratio far over the bound (%s)" % (pid, r.get("ratio_named")))
    c.done()


if __name__ == "__main__":
    main()
