#!/usr/bin/env python3
"""The op-coverage additions end to end (docs/op-coverage.md): more_gen writes ops_more.nb with
the .nb writer (every added op type in one model); cldiff reads it back (`inspect` lists every
type) and diffs it CPU vs OpenCL in fp32 and fp16: exit 0, verdict pass, every added op
compared with its OpenCL kernel (no CPU fallback) and within its local bound.

Environment: CLDIFF (the executable), MORE_GEN (the generator)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLDIFF = os.environ.get("CLDIFF", "cldiff")
GEN = os.environ.get("MORE_GEN", "more_gen")
OPS = ["sin", "cos", "tan", "asin", "acos", "atan", "pow", "greater_than", "lrn", "reduce_max", "reduce_mean",
       "expand", "expand_v2", "gather", "pixel_shuffle", "grid_sampler", "sync_batch_norm", "less_equal", "reduce_sum",
       "reduce_min", "tile", "assign_value", "top_k_v2", "unbind", "gather_nd"]
fails = 0


def ok(cond, what, detail=""):
    global fails
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else "\n     " + str(detail)[:800]))
    if not cond:
        fails += 1
    return cond


def run(args):
    env = dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
    p = subprocess.run([CLDIFF] + [str(a) for a in args], capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout + p.stderr


def main():
    work = tempfile.mkdtemp(prefix="cldiff-more-")
    try:
        model = os.path.join(work, "ops_more.nb")
        subprocess.run([GEN, model], check=True)
        rc, out = run(["inspect", model])
        ok(rc == 0, "inspect reads the written model", out[-400:])
        for t in OPS:
            ok((" %s " % t) in out, "inspect lists op type %s" % t)
        for prec in ("fp32", "fp16"):
            d = os.path.join(work, prec)
            rc, out = run([model, "--" + prec, "--out", d])
            if not ok(rc == 0, "%s: cldiff cpu vs opencl exits 0" % prec, out[-800:]):
                continue
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            ok(s.get("verdict") == "pass", "%s: verdict pass" % prec, s.get("verdict"))
            by_type = {}
            for l in s.get("layers", []):
                by_type.setdefault(l["op_type"], []).append(l)
            for t in OPS:
                ls = by_type.get(t, [])
                if not ok(ls, "%s: %s compared" % (prec, t)):
                    continue
                ok(all(l.get("where_b") == "opencl" for l in ls), "%s: %s ran its OpenCL kernel" % (prec, t),
                   [l.get("where_b") for l in ls])
                ok(all((l.get("local") or {}).get("pass") is True for l in ls),
                   "%s: %s within its local bound" % (prec, t), [l.get("local") for l in ls])
    finally:
        if fails == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept %s" % work)
    print("%s: %d failure(s)" % ("more_ops_e2e", fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
