#!/usr/bin/env python3
"""No local bound below the rounding of the values it judges, for every bound family, on real
model layers (issue 26 point 3).

A bound far below the float rounding of the values it judges is a bug: two correct kernels
differ by at least a rounding of their results, so such a bound turns every rounding
difference into a "kernel fault". The rnn allowance was one (`local error 3.7e-07 > bound
7.9e-36` on values near 0.1: a NaN allowance counted as 0, the bound the flush term alone).

For every layer a run checked locally (the dump's /local table), at the element the check
reported as worst (`worst_index`, where a too-small bound shows up first), with a nonzero
difference there: bound >= EPS/2 * |reference value|, EPS the unit of the judged storage (2^-24
in fp32 runs, 2^-11 in fp16 runs, whose B stores half). Exact-family layers (copies) are left
out: their bound is 0 by design and any difference is a fault; so are fp32 layers settled by
the free run (no worst element recorded). Runs, with correct kernels:
  * four ../shared/models on small inputs, fp32 and fp16 (accumulate, elementwise,
    transcendental, normalize, detection);
  * testdata/lstm_rec.nb and, with .venv-paddle, the CRNN made by Paddle 2.6.2
    (tests/recurrent/make_rnn.py; the recurrent family on a 2-layer LSTM).
The checker is first run on a fabricated row (bound 1e-35 on a value of 0.1) and must flag it.
Exit 77 (skip) without ../shared/models.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_lib import SHARED, SKIP, SRC, Checks, cldiff, need_cldiff, tmpdir  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import cldiff_dump  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PADDLE_PY = os.environ.get("CD_PADDLE_PYTHON") or os.path.join(SRC, ".venv-paddle", "bin", "python")
PL_PY = os.environ.get("CLDIFF_PL_PYTHON") or os.path.join(SRC, ".venv-pl", "bin", "python")

# (model, extra args): small inputs, each a few seconds on 2 cores
MODELS = [
    ("ppocr_v3_det_fp32_x86_v2.12.nb", ["--shape", "x=1,3,64,64"]),
    ("ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb", ["--shape", "x=1,3,48,192"]),
    ("mask_detector_fp32_arm_v2.10rc.nb", []),
    ("pyramidbox_lite_fp32_arm_v2.10rc.nb", ["--shape", "@HUB_pyramidbox_lite_mobile@image=1,3,160,160"]),
]


def violations(rows, eps):
    """rows: (layer, family, error, bound, |ref at worst|); the rows whose bound is below the
    rounding of the value it judged."""
    bad = []
    for layer, fam, err, bound, v in rows:
        if fam in ("exact", "") or not (err > 0) or not np.isfinite(v):
            continue
        if not (bound >= 0.5 * eps * v):
            bad.append("%s (%s): bound %.3g < %.3g (value %.3g, error %.3g)" % (layer, fam, bound, 0.5 * eps * v, v,
                                                                               err))
    return bad


def local_rows(dump):
    """(layer, family, error, bound, |reference value at the worst element|) of every locally
    checked layer of the dump."""
    f = h5py.File(dump, "r")
    rows = []
    for lname in f["local"]:
        t = f["local"][lname]
        ref_run = t.attrs["reference"]
        ref_run = ref_run.decode() if isinstance(ref_run, bytes) else str(ref_run)
        # the fp16 local reference (ref_local) keeps no tensors: A's run has the same values to
        # within half's rounding, which is all the magnitude needs
        by, g = {}, None
        for run in (ref_run, "cpu"):
            if run in f["runs"]:
                g = f["runs/" + run]
                by = {(int(x["op_index"]), x["tensor"]): x for x in cldiff_dump.tensors(g) if not x["stats_only"]}
                if by:
                    break
        for r in t[()]:
            if not r["checked"] or r["worst_index"] < 0:
                continue
            key = (int(r["op_index"]), r["tensor"].decode())
            if key not in by:
                continue
            ref = g[by[key]["dataset"]][()].reshape(-1)
            wi = int(r["worst_index"])
            v = abs(float(ref[wi])) if wi < ref.size else float("nan")
            rows.append((r["layer"].decode(), r["family"].decode(), float(r["error"]), float(r["bound"]), v))
    f.close()
    return rows


def crnn(c, work):
    """The CRNN made by Paddle 2.6.2 + Opt (None without the venvs)."""
    if not (os.path.exists(PADDLE_PY) and os.path.exists(PL_PY)):
        print("SKIP (part): no .venv-paddle/.venv-pl: the Paddle-made CRNN is left out")
        return None
    d = os.path.join(os.path.abspath("recurrent-models"), "crnn_l2_bi")
    if os.path.isfile(os.path.join(d, "arm.nb")):
        return d
    root = os.path.join(work, "m")
    p = subprocess.run([PADDLE_PY, os.path.join(HERE, "make_rnn.py"), root, "crnn_l2_bi"], capture_output=True,
                       text=True, timeout=600)
    d = os.path.join(root, "crnn_l2_bi")
    if p.returncode == 0:
        p = subprocess.run([PL_PY, os.path.join(SRC, "scripts", "pl_ocl.py"), "opt", d, os.path.join(d, "arm.nb"),
                            "--places", "arm"], capture_output=True, text=True, timeout=300)
    return d if c.ok(p.returncode == 0, "the CRNN made by Paddle 2.6.2 + Opt", p.stderr[-500:]) else None


def main():
    need_cldiff()
    if not os.path.isdir(SHARED):
        print("SKIP: %s not found (set CD_SHARED_MODELS)" % SHARED)
        sys.exit(SKIP)
    c = Checks("bounds above the values' rounding")
    work = tmpdir("bound_floor")
    c.cleanup_later(work)
    # the checker itself: the rnn bug's row must be flagged, a sound one not
    c.ok(len(violations([("rnn_0", "recurrent", 3.7e-7, 7.9e-36, 0.1)], 2.0 ** -24)) == 1,
         "checker flags a bound of 7.9e-36 on a value of 0.1")
    c.ok(not violations([("rnn_0", "recurrent", 3.7e-7, 1e-6, 0.1)], 2.0 ** -24), "checker passes a sound bound")

    runs = [(os.path.join(SHARED, m), a) for m, a in MODELS if os.path.isfile(os.path.join(SHARED, m))]
    runs.append((os.path.join(SRC, "testdata", "lstm_rec.nb"), []))
    d = crnn(c, work)
    if d:
        runs.append((os.path.join(d, "arm.nb"), ["--input", "x=" + os.path.join(d, "input_x.npy")]))
    fams = set()
    for model, args in runs:
        name = os.path.basename(model) if not model.endswith("arm.nb") else "crnn_l2_bi"
        for prec, eps in (("--fp32", 2.0 ** -24), ("--fp16", 2.0 ** -11)):
            o = os.path.join(work, "%s%s" % (name, prec[2:]))
            r = cldiff(model, prec, *args, "--out", o)
            dump = os.path.join(o, "dump.h5")
            if not c.ok(r.rc in (0, 1) and os.path.isfile(dump), "%s %s ran (exit %d)" % (name, prec, r.rc),
                        r.tail()):
                continue
            rows = local_rows(dump)
            fams |= {f for _, f, e, _, _ in rows if e > 0}
            bad = violations(rows, eps)
            c.ok(not bad, "%s %s: %d judged layers, no bound below the values' rounding" %
                 (name, prec, sum(1 for row in rows if row[2] > 0)), "; ".join(bad[:5]))
    c.ok({"recurrent", "accumulate", "elementwise", "normalize"} <= fams,
         "families judged: %s" % ", ".join(sorted(fams)))
    c.done()


if __name__ == "__main__":
    main()
