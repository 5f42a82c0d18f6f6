#!/usr/bin/env python3
"""The clean matrix of the MNN engines (docs/mnn.md, "Matrix"): the test models of testdata/mnn/
x A in {mnn-cpu, cpu} x mnn-opencl's precision (low/normal/high), memory (low/normal) and OpenCL
memory mode (buffer/image). No plant: every verdict must be PASS (a KERNEL FAULT here is a false
one: a bug of cldiff or of MNN to explain); with A = cpu a model with ops cldiff's CPU has no
kernel for is refused (exit 8), by design.

    scripts/mnn/mnn_matrix.py --cldiff build/cldiff [--out DIR] [--md TABLE.md] [--quick] [--arm|--arm-only]

--quick: precision low/high, memory normal, both modes. Exit 1 on a non-PASS verdict (for mnn-arm
at precision low without --fp16: on anything but PASS or OUTPUT DRIFT).
--arm adds the rows of mnn-arm (MNN's ARM kernels under qemu-aarch64 -cpu max; docs/mnn.md
"mnn-arm"): A = mnn-arm vs B = mnn-opencl, and A = cpu vs B = mnn-arm, x mnn-arm's precision
low/normal/high x memory low/normal; precision low also with --fp16 (the runs whose plan is half,
as MNN's ARMv8.2 backend computes). --arm-only: those rows alone.

    scripts/mnn/mnn_matrix.py --cldiff build/cldiff --zoo .zoo-mnn [--only NAME,...] [--out DIR] [--md TABLE.md]

--zoo: the zoo models as .mnn (scripts/mnn/make_zoo_mnn.py) on `mnn-cpu,mnn-opencl` with the zoo's
natural input (its random one where it has none), and `cpu,mnn-opencl` where cldiff's CPU runs the whole model
(--variants: mnn-opencl's precision/memory/mode for each mnn-cpu run); the oracles of each
output: onnxruntime on the ONNX model the .mnn was converted from, MNN's Python API (its CPU,
saved by make_zoo_mnn.py); a kernel fault is false unless the oracles say the faulty side is wrong.
Exit 1 on a false kernel fault or a run that fails.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "testdata", "mnn")
MODELS = ["conv", "branches", "attention", "matmul", "eltwise", "unmapped", "conv_wq8", "ops_layernorm"]
INPUT = {"conv_wq8": "conv"}  # a model made from another's ONNX takes its input


def rel_err(y, ref):
    """max |y - ref| / max |ref| (inf when the sizes differ)."""
    import numpy as np
    y, ref = np.asarray(y, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    if y.size != ref.size:
        return float("inf")
    return float(np.abs(y - ref).max() / max(float(np.abs(ref).max()), 1e-30))


def dump_tensor(dump, run, name):
    """The last tensor of run `run` in the dump whose name is `name` (the dump escapes '/')."""
    import h5py
    with h5py.File(dump, "r") as f:
        if run not in f["runs"]:
            return None
        got = None
        for k in f["runs"][run].keys():
            if k.split("_", 1)[1].replace("%2F", "/").replace("%25", "%") == name:
                got = f["runs"][run][k][()]
        return got


def zoo_matrix(a):
    """Every zoo model as .mnn: mnn-cpu,mnn-opencl and, where cldiff's CPU can run it whole,
    cpu,mnn-opencl; each output against onnxruntime and MNN's Python API."""
    import numpy as np
    import onnxruntime as ort
    only = [s for s in a.only.split(",") if s]
    man = [json.loads(line) for line in open(os.path.join(a.zoo, "manifest.jsonl"))]
    rows, bad = [], 0
    for m in man:
        name = m["name"]
        if only and name not in only:
            continue
        if not m.get("ok"):
            rows.append((name, m.get("family", ""), "-", f"not converted ({m.get('step')})", "", "", "", "", "", "", ""))
            continue
        d = os.path.join(a.zoo, name)
        tag = "natural" if os.path.exists(os.path.join(d, "in_natural.npy")) else "random"
        x = os.path.join(d, f"in_{tag}.npy")
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: np.load(x)}
        refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
        out0 = sess.get_outputs()[0].name
        py = np.load(os.path.join(d, f"mnn_py_{tag}.npy")) if os.path.exists(
            os.path.join(d, f"mnn_py_{tag}.npy")) else None
        runs = [("mnn-cpu", v) for v in a.variants.split(",") if v] + [("cpu", a.variants.split(",")[0])]
        for A, var in runs:
            prec, mem, mode = (var.split("/") + ["high", "normal", "buffer"])[:3]
            out = os.path.join(a.out, f"zoo-{name}-{A}-{prec}-{mem}-{mode}")
            t0 = time.time()
            r = subprocess.run([a.cldiff, os.path.join(d, "model.mnn"), "--backends", f"{A},mnn-opencl", "--input", x,
                                "--out", out, "--no-repro", "--backend-opt", f"mnn-opencl:precision={prec}",
                                "--backend-opt", f"mnn-opencl:memory={mem}", "--backend-opt", f"mnn-opencl:mode={mode}"],
                               capture_output=True, text=True, errors="replace",
                               timeout=900, env=dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1"))
            A_label = A if var == "high/normal/buffer" else f"{A} (opencl {var})"
            secs = time.time() - t0
            if r.returncode == 8:
                why = ("ops cldiff's CPU cannot run" if A == "cpu" else
                       "control flow: MNN's session API does not run it" if "control flow" in r.stderr else
                       r.stderr.strip().splitlines()[-2][:120] if r.stderr.strip() else "")
                rows.append((name, m.get("family", ""), A_label, f"refused (exit 8: {why})", "", "", "", "", "", "",
                             f"{secs:.0f}"))
                print(f"{name:24} {A_label:8} refused (exit 8: {why})", flush=True)
                if A == "mnn-cpu":
                    break
                continue
            try:
                s = json.load(open(os.path.join(out, "summary.json")))
                v, ff = s.get("verdict_kind") or s["verdict"], s.get("first_fault") or {}
                n, n_only, n_chk = s["layers_compared"], s.get("layers_compared_only", 0), (
                    s.get("local_check") or {}).get("layers_checked", "")
            except (OSError, ValueError, KeyError):
                v, ff, n, n_only, n_chk = f"exit {r.returncode}", {}, 0, 0, ""
            dump = os.path.join(out, "dump.h5")
            ea = eb = float("nan")
            if os.path.exists(dump):
                ya, yb = dump_tensor(dump, A, out0), dump_tensor(dump, "mnn-opencl", out0)
                ea = rel_err(ya, refs[out0]) if ya is not None else float("nan")
                eb = rel_err(yb, refs[out0]) if yb is not None else float("nan")
            epy = rel_err(py, refs[out0]) if py is not None else float("nan")
            # a kernel fault is false unless the oracles put the faulty side (B) further from
            # onnxruntime than the other side
            false_fault = v == "kernel_fault" and not (eb > 10 * max(ea, 1e-7))
            failed = r.returncode not in (0, 1) or false_fault
            bad += failed
            layer = ff.get("layer", "") if isinstance(ff, dict) else ""
            rows.append((name, m.get("family", ""), A_label, v + (f" at {layer}" if layer else ""), n, n_chk, n_only,
                         f"{ea:.2g}", f"{eb:.2g}", f"{epy:.2g}", f"{secs:.0f}"))
            print(f"{name:24} {A_label:8} {v:14} {layer:18} layers={n:3} checked={n_chk!s:3} compared-only={n_only:3} "
                  f"A/ort={ea:.2g} opencl/ort={eb:.2g} mnn-py/ort={epy:.2g} {secs:.0f}s"
                  + ("   <-- " + (r.stderr.strip()[-300:] if r.returncode not in (0, 1) else "FALSE KERNEL FAULT")
                     if failed else ""), flush=True)
    hdr = ("model", "family", "A", "verdict", "layers", "checked", "compared only", "A vs onnxruntime",
           "mnn-opencl vs onnxruntime", "MNN Python vs onnxruntime", "s")
    md = "| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr) + "\n" + "".join(
        "| " + " | ".join(str(c) for c in row) + " |\n" for row in rows)
    if a.md:
        open(a.md, "w").write(md)
    print(md)
    print(f"{len(rows)} rows, {bad} false kernel faults or failed runs")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cldiff", required=True)
    ap.add_argument("--out", default="mnn-matrix-out")
    ap.add_argument("--md", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--arm", action="store_true")
    ap.add_argument("--arm-only", action="store_true")
    ap.add_argument("--zoo", default="", help="the zoo as .mnn (scripts/mnn/make_zoo_mnn.py): run the zoo matrix")
    ap.add_argument("--only", default="", help="--zoo: these models only (comma-separated)")
    ap.add_argument("--variants", default="high/normal/buffer",
                    help="--zoo: mnn-opencl's precision/memory/mode per mnn-cpu run, comma-separated "
                         "(e.g. high/normal/buffer,low/low/image); cpu runs the first")
    a = ap.parse_args()
    if a.zoo:
        return zoo_matrix(a)
    precs = ["low", "high"] if a.quick else ["low", "normal", "high"]
    mems = ["normal"] if a.quick else ["low", "normal"]
    rows, bad = [], 0
    # (model, A, B, the engine whose options vary, precision, memory, mode or winograd, --fp16)
    runs = [] if a.arm_only else [
        (model, ref, "mnn-opencl", "mnn-opencl", prec, mem, mode, False)
        for model, ref, prec, mem, mode in itertools.product(MODELS, ["mnn-cpu", "cpu"], precs, mems,
                                                             ["buffer", "image"])]
    if a.arm or a.arm_only:
        for model, (ea, eb), mem in itertools.product(MODELS, [("mnn-arm", "mnn-opencl"), ("cpu", "mnn-arm")], mems):
            for prec, fp16 in [(p, False) for p in precs] + [("low", True)]:
                runs.append((model, ea, eb, "mnn-arm", prec, mem, "-", fp16))
            # precision low again without MNN's Winograd 3x3 convolutions (fp16 Winograd: docs/mnn.md)
            for fp16 in (False, True):
                runs.append((model, ea, eb, "mnn-arm", "low", mem, "winograd=0", fp16))
    for model, ref, b, eng, prec, mem, mode, fp16 in runs:
        out = os.path.join(a.out, f"{model}-{ref}-{b}-{prec}-{mem}-{mode}{'-fp16' if fp16 else ''}")
        t0 = time.time()
        cmd = [a.cldiff, os.path.join(DATA, model + ".mnn"), "--backends", f"{ref},{b}", "--input",
               os.path.join(DATA, INPUT.get(model, model) + ".input.npy"), "--out", out, "--no-repro", "--backend-opt",
               f"{eng}:precision={prec}", "--backend-opt", f"{eng}:memory={mem}"]
        if mode.startswith("winograd="):
            cmd += ["--backend-opt", f"{eng}:{mode}"]
        elif mode != "-":
            cmd += ["--backend-opt", f"{eng}:mode={mode}"]
        if fp16:
            cmd += ["--fp16"]
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=900,
                           env=dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1"))
        try:
            s = json.load(open(os.path.join(out, "summary.json")))
            v, n, worst = s.get("verdict_kind") or s["verdict"], s["layers_compared"], 0.0
            for l in s.get("layers", []):
                lr = (l.get("local") or {}).get("ratio")
                if isinstance(lr, (int, float)) and lr == lr:
                    worst = max(worst, lr)
        except (OSError, ValueError, KeyError):
            v, n, worst = f"exit {r.returncode}", 0, float("nan")
        # mnn-arm at precision low in a float32 run: fp16 outputs against float32 tolerances, an
        # output drift by design (the engine says so); a kernel fault is never expected
        expect_drift = eng == "mnn-arm" and prec == "low" and not fp16
        if ref == "cpu" and r.returncode == 8:  # ops cldiff's CPU has no kernel for: refused, by design
            v, worst = "refused (exit 8)", float("nan")
        ok = (r.returncode == 0 and v == "pass") or (expect_drift and v == "output_drift") or v == "refused (exit 8)"
        bad += not ok
        rows.append((model, ref, b, prec + (" --fp16" if fp16 else ""), mem, mode, v, n, f"{worst:.3g}",
                     f"{time.time() - t0:.0f}"))
        print(f"{model:10} {ref:8} {b:10} precision={prec:6}{' --fp16' if fp16 else '':7} memory={mem:6} mode={mode:6} "
              f"{v:14} layers={n:3} "
              f"worst local ratio={worst:.3g}" + ("" if ok else "   <-- " + r.stderr.strip()[-300:]), flush=True)
    hdr = ("model", "A", "B", "precision", "memory", "mode / winograd", "verdict", "layers", "worst local ratio", "s")
    md = "| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr) + "\n" + "".join(
        "| " + " | ".join(str(c) for c in row) + " |\n" for row in rows)
    if a.md:
        open(a.md, "w").write(md)
    print(f"{len(rows) - bad} of {len(rows)} runs PASS")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
