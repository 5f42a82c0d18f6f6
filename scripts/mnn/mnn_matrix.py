#!/usr/bin/env python3
"""The clean matrix of the MNN engines (docs/mnn.md, "Matrix"): every test model of testdata/mnn/
that cldiff can run x A in {mnn-cpu, cpu} x mnn-opencl's precision (low/normal/high), memory
(low/normal) and OpenCL memory mode (buffer/image). No plant: every verdict must be PASS (a
KERNEL FAULT here is a false one: a bug of cldiff or of MNN to explain).

    scripts/mnn/mnn_matrix.py --cldiff build/cldiff [--out DIR] [--md TABLE.md] [--quick]

--quick: precision low/high, memory normal, both modes. Exit 1 on a non-PASS verdict.
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
MODELS = ["conv", "branches", "attention"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cldiff", required=True)
    ap.add_argument("--out", default="mnn-matrix-out")
    ap.add_argument("--md", default="")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    precs = ["low", "high"] if a.quick else ["low", "normal", "high"]
    mems = ["normal"] if a.quick else ["low", "normal"]
    rows, bad = [], 0
    for model, ref, prec, mem, mode in itertools.product(MODELS, ["mnn-cpu", "cpu"], precs, mems, ["buffer", "image"]):
        out = os.path.join(a.out, f"{model}-{ref}-{prec}-{mem}-{mode}")
        t0 = time.time()
        r = subprocess.run([a.cldiff, os.path.join(DATA, model + ".mnn"), "--backends", f"{ref},mnn-opencl",
                            "--input", os.path.join(DATA, model + ".input.npy"), "--out", out, "--no-repro",
                            "--backend-opt", f"mnn-opencl:precision={prec}", "--backend-opt",
                            f"mnn-opencl:memory={mem}", "--backend-opt", f"mnn-opencl:mode={mode}"],
                           capture_output=True, text=True, errors="replace", timeout=900,
                           env=dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1"))
        try:
            s = json.load(open(os.path.join(out, "summary.json")))
            v, n, worst = s["verdict"], s["layers_compared"], 0.0
            for l in s.get("layers", []):
                lr = (l.get("local") or {}).get("ratio")
                if isinstance(lr, (int, float)) and lr == lr:
                    worst = max(worst, lr)
        except (OSError, ValueError, KeyError):
            v, n, worst = f"exit {r.returncode}", 0, float("nan")
        ok = r.returncode == 0 and v == "pass"
        bad += not ok
        rows.append((model, ref, prec, mem, mode, v, n, f"{worst:.3g}", f"{time.time() - t0:.0f}"))
        print(f"{model:10} {ref:8} precision={prec:6} memory={mem:6} mode={mode:6} {v:14} layers={n:3} "
              f"worst local ratio={worst:.3g}" + ("" if ok else "   <-- " + r.stderr.strip()[-300:]), flush=True)
    hdr = ("model", "A", "precision", "memory", "mode", "verdict", "layers", "worst local ratio", "s")
    md = "| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr) + "\n" + "".join(
        "| " + " | ".join(str(c) for c in row) + " |\n" for row in rows)
    if a.md:
        open(a.md, "w").write(md)
    print(f"{len(rows) - bad} of {len(rows)} runs PASS")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
