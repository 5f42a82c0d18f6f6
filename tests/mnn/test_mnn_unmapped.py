#!/usr/bin/env python3
"""MNN models with ops cldiff does not map, on MNN's engines (docs/mnn.md, "Ops cldiff does not map").

    test_mnn_unmapped.py CLDIFF SOURCE_DIR

Skips (exit 77) with the reason where no MNN SDK is found or no C++ compiler builds the runner.

1. matmul (Shape, Rank, SliceTf, Unsqueeze, reshapes to a computed shape: checked as reshape2 to the
   shape MNN gives them), eltwise (ONNX PRelu as
   LESS + Select + MUL), unmapped (a Shape/Slice-computed reshape around a softmax): `--backends
   mnn-cpu,mnn-opencl` runs them (the shape pass plans the named ops from MNN's own shapes): exit
   0, PASS, the named layers that MNN hands over listed as compared only (summary.json, the
   terminal), every mapped layer checked locally; MNN's outputs against onnxruntime.
2. conv_wq8 (IDST-quantized weights): every layer checked locally (the decoded weights are MNN's:
   the local check on MNN OpenCL's inputs passes, and cldiff's CPU run of the whole model equals
   MNN's CPU within 1e-5 of the output's size, while the quantization moves it 1e-3 and more).
3. conv_int8 (the quantization tool: int8 weights and activations): the int8 ops compared only;
   A = mnn-cpu: OUTPUT DRIFT (MNN's CPU runs integers, its OpenCL floats); B = mnn-cpu: KERNEL FAULT
   at pool2d_0, MNN 3.6.1's x86 int8 max pooling (it compares the int8 codes as unsigned: checked
   here against a numpy max of its own input taken that way).
4. cldiff's own CPU as a side: such a model is refused before anything runs (exit 8), naming the
   ops; `cldiff run --backends mnn-cpu` alone plans and runs it.
"""
import json
import os
import re
import sys
import tempfile

import numpy as np
from mnn_common import check, finish, last_output, require_sdk, tensor
from mnn_common import run as mc_run

CLDIFF, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "testdata", "mnn")

require_sdk(SRC)


def run(args, timeout=600):
    return mc_run(CLDIFF, args, None, timeout)



try:
    import onnxruntime as ort
except ImportError:
    ort = None


# 1. models with named ops: name -> (compared-only layers, at least this many checked locally)
EXPECT = {
    "matmul": ([], 6),  # its two reshapes to computed shapes checked as reshape2 to MNN's shapes
    "eltwise": (["mnn_BinaryOp_0", "mnn_Select_0"], 11),
    "unmapped": ([], 7),
}
with tempfile.TemporaryDirectory() as d:
    for name, (only, n_checked) in EXPECT.items():
        out = os.path.join(d, name)
        x = os.path.join(DATA, name + ".input.npy")
        rc, so, se = run([os.path.join(DATA, name + ".mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input", x,
                          "--out", out, "--no-repro"])
        check(rc == 0, f"{name}: mnn-cpu,mnn-opencl exit 0 (got {rc}: {se.strip()[-400:]})")
        if rc:
            continue
        check("planned from MNN's own shapes" in se, f"{name}: the shape pass noted")
        if name == "matmul":
            check("2 reshapes to a shape computed at run time checked as reshape2" in se and
                  re.search(r"^26 +mnn_Reshape_1 +reshape2 .* 0 output$", so, re.M) is not None,
                  "matmul: its output reshape (shape computed at run time) checked as reshape2, local error 0")
        s = json.load(open(os.path.join(out, "summary.json")))
        check(s["verdict"] == "pass", f"{name}: verdict pass (got {s['verdict']})")
        got_only = sorted(c["layer"] if isinstance(c, dict) else c for c in s.get("compared_only", []))
        check(got_only == sorted(only), f"{name}: compared only {sorted(only)} (got {got_only})")
        check(s.get("layers_compared_only") == len(only),
              f"{name}: layers_compared_only {len(only)} (got {s.get('layers_compared_only')})")
        m = re.search(r"PASS \((\d+) layers checked locally", so)
        check(m is not None and int(m.group(1)) >= n_checked,
              f"{name}: at least {n_checked} layers checked locally (got {m and m.group(1)})")
        for layer in only:
            check(re.search(rf"compared only, not checkable locally:.*{layer}", so) is not None,
                  f"{name}: the terminal names {layer} as compared only")
        if ort:
            ref = ort.InferenceSession(os.path.join(DATA, name + ".onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
            dump = os.path.join(out, "dump.h5")
            tol = 1e-4 * float(np.abs(ref).max())
            for rn in ("mnn-cpu", "mnn-opencl"):
                y = last_output(dump, rn).reshape(ref.shape)
                dd = float(np.abs(y - ref).max())
                check(dd <= tol, f"{name}: {rn}'s output vs onnxruntime {dd:.3g} <= {tol:.3g}")

    # 1b. --fp16: no golden run (cldiff's CPU cannot run the named ops in float32), still a verdict
    rc, so, se = run([os.path.join(DATA, "matmul.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--fp16", "--input",
                      os.path.join(DATA, "matmul.input.npy"), "--out", os.path.join(d, "fp16"), "--no-repro"])
    check(rc == 0 and "verdict: PASS" in so and "no golden run" in se,
          f"matmul --fp16: PASS without the golden run (exit {rc}: {se[-300:]})")

    # 2. conv_wq8: every layer checked; cldiff's CPU equals MNN's CPU on the whole model
    out = os.path.join(d, "wq8")
    x = os.path.join(DATA, "conv.input.npy")
    rc, so, se = run([os.path.join(DATA, "conv_wq8.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input", x,
                      "--out", out, "--no-repro"])
    s = json.load(open(os.path.join(out, "summary.json"))) if rc == 0 else {}
    check(rc == 0 and s.get("verdict") == "pass" and s.get("layers_compared_only") == 0 and
          "7 layers checked locally" in so,
          f"conv_wq8: PASS with all 7 layers checked locally (exit {rc}: {so[-300:]}{se.strip()[-300:]})")
    rc1, _, e1 = run(["run", "--backends", "cpu", os.path.join(DATA, "conv_wq8.mnn"), "--input", x,
                      "--out", os.path.join(d, "wq8cpu"), "--quiet"])
    rc2, _, e2 = run(["run", "--backends", "mnn-cpu", os.path.join(DATA, "conv_wq8.mnn"), "--input", x,
                      "--out", os.path.join(d, "wq8mnn"), "--quiet"])
    check(rc1 == 0 and rc2 == 0, f"conv_wq8: cldiff run on cpu and on mnn-cpu exit 0 ({rc1}, {rc2}: {e1[-200:]}"
          f"{e2[-200:]})")
    if rc1 == 0 and rc2 == 0:
        a = last_output(os.path.join(d, "wq8cpu", "dump.h5"), "cpu")
        b = last_output(os.path.join(d, "wq8mnn", "dump.h5"), "mnn-cpu").reshape(a.shape)
        dd, ymax = float(np.abs(a - b).max()), float(np.abs(b).max())
        check(dd <= 1e-5 * ymax, f"conv_wq8: cldiff's CPU (decoded weights) vs MNN's CPU {dd:.3g} <= {1e-5 * ymax:.3g}")
        if ort:
            ref = ort.InferenceSession(os.path.join(DATA, "conv.onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
            dq = float(np.abs(b.reshape(ref.shape) - ref).max())
            check(dq >= 1e-3, f"conv_wq8: the quantization itself moves MNN's output {dq:.3g} from the float model "
                  f"(so the match above is the decoded weights', not float ones')")

    # 3. conv_int8: int8 ops compared only; MNN's CPU int8 max pooling named when MNN's CPU is B
    out = os.path.join(d, "i8a")
    rc, so, se = run([os.path.join(DATA, "conv_int8.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input", x,
                      "--out", out, "--no-repro"])
    s = json.load(open(os.path.join(out, "summary.json"))) if rc in (0, 1) else {}
    check(rc == 1 and s.get("verdict_kind") == "output_drift" and not s.get("first_fault"),
          f"conv_int8 A=mnn-cpu: OUTPUT DRIFT, no kernel fault (exit {rc}, {s.get('verdict_kind')}: {se[-300:]})")
    check(s.get("layers_compared_only", 0) >= 4, f"conv_int8: the int8 layers compared only "
          f"({s.get('layers_compared_only')})")
    out = os.path.join(d, "i8b")
    rc, so, se = run([os.path.join(DATA, "conv_int8.mnn"), "--backends", "mnn-opencl,mnn-cpu", "--input", x,
                      "--out", out, "--no-repro"])
    s = json.load(open(os.path.join(out, "summary.json"))) if rc in (0, 1) else {}
    ff = s.get("first_fault") or {}
    check(rc == 1 and isinstance(ff, dict) and ff.get("layer") == "pool2d_0",
          f"conv_int8 B=mnn-cpu: KERNEL FAULT at pool2d_0 (exit {rc}, {ff}: {se[-300:]})")
    dump = os.path.join(out, "dump.h5")
    c3, p1 = tensor(dump, "mnn-cpu", "c3"), tensor(dump, "mnn-cpu", "p1")
    if c3 is not None and p1 is not None:
        w = c3.reshape(16, 8, 2, 8, 2).transpose(0, 1, 3, 2, 4).reshape(16, 8, 8, 4)
        neg = np.where(w < 0, w, -np.inf).max(-1)
        unsigned_max = np.where(np.isfinite(neg), neg, w.max(-1))
        du, ds = float(np.abs(unsigned_max - p1.reshape(16, 8, 8)).max()), float(np.abs(w.max(-1) - p1.reshape(
            16, 8, 8)).max())
        check(du == 0 and ds > 0.1, f"conv_int8: MNN's CPU max pooling is the unsigned-code max of its input "
              f"(off {du:.3g}) and not the max (off {ds:.3g}): the fault is MNN's")
    else:
        check(False, "conv_int8: MNN CPU's c3 and p1 in the dump")

    # 4. cldiff's CPU cannot run named ops: refused, naming them; one MNN engine alone runs
    rc, so, se = run([os.path.join(DATA, "matmul.mnn"), "--backends", "cpu,mnn-opencl", "--out",
                      os.path.join(d, "refused")])
    check(rc == 8 and "'Shape15' (Shape" in se and "MNN's engines can" in se,
          f"matmul: cpu,mnn-opencl refused, exit 8, naming the ops (got {rc}: {se.strip()[-300:]})")
    rc, so, se = run(["run", "--backends", "mnn-cpu", os.path.join(DATA, "matmul.mnn"), "--input",
                      os.path.join(DATA, "matmul.input.npy"), "--out", os.path.join(d, "one")])
    check(rc == 0 and "planned from MNN's own shapes" in se,
          f"matmul: `cldiff run --backends mnn-cpu` plans and runs it (got {rc}: {se.strip()[-300:]})")

finish()
