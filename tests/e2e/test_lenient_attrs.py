"""Attribute values Paddle-Lite computes with, which cldiff used to refuse (docs/int8.md §1:
refuse only what Paddle-Lite refuses or would crash on): the writer-made testdata/lenient_attrs.nb
(scripts/gen_testdata.c) has one branch per relaxed rule. cldiff must run it in fp32 and fp16,
give a clean verdict (both sides compute the same Inf/NaN), and run A's values must be the IEEE
results Paddle-Lite's formulas give (numpy, float32).
"""
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from e2e_lib import SRC, Checks, cldiff, load_json, tmpdir  # noqa: E402
import cldiff_dump  # noqa: E402

F = np.float32
MODEL = os.path.join(SRC, "testdata", "lenient_attrs.nb")
c = Checks("e2e_lenient_attrs")

r = cldiff("inspect", MODEL)
c.rc(r, 0, "inspect plans every op (no refusal)")
c.ok("shapes could not be planned" not in r.out, "no planning warning", r.out[-300:])

for prec, extra in (("fp32", []), ("fp16", []), ("fp32", ["--int8-placement", "gpu"])):
    tag = prec + (" --int8-placement gpu" if extra else "")
    out = tmpdir("lenient_" + prec + ("_gpu" if extra else ""))
    c.cleanup_later(out)
    r = cldiff(MODEL, "--layers", "all", "--" + prec, "--no-repro", "--quiet", "--out", out, *extra)
    c.rc(r, 0, "%s: runs, clean verdict" % tag)
    s = load_json(os.path.join(out, "summary.json"))
    c.ok(s.get("verdict_kind") == "pass", "%s: verdict_kind pass" % tag, str(s.get("verdict_kind")))
    c.ok(s.get("layers_compared") == 13, "%s: all 13 outputs compared" % tag, str(s.get("layers_compared")))
    if prec != "fp32" or extra:
        continue
    with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
        run = f["runs/cpu"]
        got = {t["tensor"]: np.asarray(run[t["dataset"]][()], F) for t in cldiff_dump.tensors(run)}
        x = np.asarray(f["inputs"]["x"][()], F)

    def same(name, want, what):
        g = got.get(name)
        ok = g is not None and g.shape == want.shape and bool(np.all((g == want) | (np.isnan(g) & np.isnan(want))))
        detail = "" if ok else "got %s want %s" % (None if g is None else g.ravel()[:6], want.ravel()[:6])
        c.ok(ok, "%s: %s" % (name, what), detail)

    with np.errstate(all="ignore"):
        same("softplus.out", np.full_like(x, np.inf), "softplus beta 0 -> log(2)/0 = +Inf")
        same("clip.out", np.full_like(x, -1), "clip min 1 > max -1 -> min(max(x, 1), -1) = -1")
        same("dropout.out", x * (F(1) - F(1.5)), "dropout prob 1.5 -> x * -0.5")
        same("dropout2.out", x * (F(1) - F(0.25)), "dropout implementation 'bogus' -> x * (1 - p)")
        t = np.minimum(np.maximum(x + F(3), F(0)), F(6))
        same("hswish.out", (x * t) / F(0), "hard_swish scale 0 -> x * t / 0")
        same("leaky.out", np.where(x < 0, F(np.nan), x), "leaky_relu alpha NaN -> NaN where x < 0")
        w = np.array([[1, -2], [0.5, 0], [-1, 3]], F)
        mm = got.get("matmul.out")
        want_mm = np.where(np.matmul(x, w) == 0, F(np.nan), np.sign(np.matmul(x, w)) * F(np.inf)).astype(F)
        same("matmul.out", want_mm, "matmul_v2 alpha +Inf -> +-Inf")
        same("emul.out", np.full_like(x, np.nan), "elementwise_mul fuse_scale NaN -> NaN")
        bn = x.copy()
        bn[:, :2] = np.nan
        same("bn.out", bn, "batch_norm epsilon -1 -> NaN where var + eps < 0, x elsewhere")
        lrn = got.get("lrn.out")
        c.ok(lrn is not None and bool(np.all(lrn == 0)), "lrn alpha +Inf -> x / Inf = 0", str(None if lrn is None else lrn.ravel()[:6]))
        same("calib.out", np.where(x > 0, F(0), F(-0.0)), "calib scale 0 -> q(x * Inf) * 0 = +-0")
        boxes = got.get("prior.boxes")
        c.ok(boxes is not None and boxes.shape == (2, 3, 4, 4), "prior_box: 4 priors per cell (ratios 1, 0, Inf)",
             str(None if boxes is None else boxes.shape))
        if boxes is not None:
            want0 = np.array([(-0.5 - 1) / 3, (-0.5 - 1) / 2, (-0.5 + 1) / 3, (-0.5 + 1) / 2], F)
            c.ok(bool(np.allclose(boxes[0, 0, 0], want0, atol=1e-6)),
                 "prior_box step -1: the first cell's centre at -0.5 (min size 2 box)", str(boxes[0, 0, 0]))
c.done()
