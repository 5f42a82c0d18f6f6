#!/usr/bin/env python3
"""The Paddle-made model zoo (.zoo/, scripts/zoo) as MNN models (docs/mnn.md, "Zoo models"), in
.venv-mnn (the PyPI mnn wheel: mnnconvert and MNN's Python API):

    .venv-mnn/bin/python scripts/mnn/make_zoo_mnn.py [--zoo .zoo] [--out .zoo-mnn]
        [--paddle2onnx .venv-p2o/bin/paddle2onnx] [--only NAME,...] [--setup-p2o] [--quantize NAME,...]

For every zoo model with a Paddle inference model (model.pdmodel + model.pdiparams): paddle2onnx
(opset 13) -> OUT/<name>/model.onnx, mnnconvert -> OUT/<name>/model.mnn, the zoo's inputs copied
(in_random.npy, in_natural.npy) and MNN's own Python API (an oracle of MNN's CPU, independent of
cldiff's runner) run on each: OUT/<name>/mnn_py_<input>.npy (its first output). A model that does
not convert is recorded with the step and the message. OUT/manifest.jsonl: one line per model.

paddle2onnx lives in its own venv (.venv-p2o: `--setup-p2o` makes it: paddle2onnx 1.3.1, which
reads Paddle 2.x .pdmodel files, with .venv-paddle's paddle on its path through a .pth file;
nothing is installed into .venv-paddle). Large files stay out of git: .zoo-mnn/ is ignored.

--quantize (default resnet18,mobilenet_v2,seg_bilinear): each such converted model is also fully
quantized by the wheel's quantization tool into OUT/<name>_mnnq8/ (int8 weights and activations,
KL calibration on 8 pictures made from the zoo's natural input: the picture itself, its mirror
images and shifts, pixels = input x std + mean as the zoo normalised them).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from make_models import quantize  # noqa: E402


def setup_p2o(venv):
    """.venv-p2o: paddle2onnx 1.3.1 with .venv-paddle's site-packages on its path."""
    paddle_py = os.path.join(ROOT, ".venv-paddle", "bin", "python")
    if not os.path.exists(paddle_py):
        sys.exit("no .venv-paddle (scripts/setup.sh makes it): paddle2onnx needs Paddle to read the models")
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        subprocess.run([paddle_py, "-m", "venv", venv], check=True)
    r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "paddle2onnx==1.3.1"])
    if r.returncode:
        sys.exit("pip could not install paddle2onnx 1.3.1 into " + venv)
    site = subprocess.run([paddle_py, "-c", "import paddle, os; print(os.path.dirname(os.path.dirname("
                                            "paddle.__file__)))"], capture_output=True, text=True).stdout.strip()
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for d in os.listdir(os.path.join(venv, "lib")):
        pyver = d
    with open(os.path.join(venv, "lib", pyver, "site-packages", "venv_paddle.pth"), "w") as f:
        f.write(site + "\n")


def mnn_py_output(mnn_path, x):
    """MNN's Python API on MNN's CPU: the model's first output for input x (NCHW float32)."""
    import MNN
    import MNN.expr as F
    net = MNN.nn.load_module_from_file(mnn_path, [], [])
    info = net.get_info()
    inp = F.const(x, list(x.shape), F.NCHW)
    if info and info.get("inputs"):
        fmt = info["inputs"][0].data_format
        if fmt == F.NC4HW4:
            inp = F.convert(inp, F.NC4HW4)
    out = net.forward([inp])
    y = out[0] if isinstance(out, (list, tuple)) else out
    if y.data_format == F.NC4HW4:
        y = F.convert(y, F.NCHW)
    return np.array(y.read(), dtype=np.float32)


def quantized(name, info, od, out):
    """<name>_mnnq8: od/model.mnn fully quantized, calibrated on pictures of the natural input."""
    qd = os.path.join(out, name + "_mnnq8")
    os.makedirs(qd, exist_ok=True)
    row = {"name": name + "_mnnq8", "family": info.get("family", ""), "precision": "int8 (MNN quantization tool)",
           "input_name": info.get("input_name", "x"), "input_shape": info.get("input_shape"), "ok": False,
           "float_model": name}
    x = np.load(os.path.join(od, "in_natural.npy"))[0]  # (3, h, w)
    mean = np.array(info.get("mean", [0.5] * 3), np.float32)[:, None, None]
    std = np.array(info.get("std", [0.5] * 3), np.float32)[:, None, None]
    pic = np.clip((x * std + mean) * 255, 0, 255).round().astype(np.uint8).transpose(1, 2, 0)
    pics = [pic, pic[:, ::-1], pic[::-1], pic[::-1, ::-1]] + [np.roll(pic, s, axis=(0, 1)) for s in (3, 7, 11, 17)]
    t0 = time.time()
    r = quantize(os.path.join(od, "model.mnn"), os.path.join(qd, "model.mnn"), os.path.join(qd, "work"),
                 pic.shape[:2], [np.ascontiguousarray(p) for p in pics], (mean.ravel() * 255).tolist(),
                 (1 / (std.ravel() * 255)).tolist())
    shutil.rmtree(os.path.join(qd, "work"), ignore_errors=True)
    if os.path.exists(os.path.join(qd, "model.mnn.json")):
        os.remove(os.path.join(qd, "model.mnn.json"))
    row["convert_s"] = round(time.time() - t0, 1)
    if r.returncode or not os.path.exists(os.path.join(qd, "model.mnn")):
        last = (r.stdout + r.stderr).strip().splitlines()
        row.update(step="quantization tool", error=f"exit {r.returncode} ({'signal ' + str(-r.returncode) if r.returncode < 0 else 'status'}) "
                   f"after: {last[-1] if last else 'no output'}")
        return row
    shutil.copy(os.path.join(od, "model.onnx"), os.path.join(qd, "model.onnx"))  # the float model: the oracle
    row.update(ok=True, mnn_bytes=os.path.getsize(os.path.join(qd, "model.mnn")), inputs=[])
    for tag in ("natural", "random"):
        src = os.path.join(od, f"in_{tag}.npy")
        if os.path.exists(src):
            shutil.copy(src, os.path.join(qd, f"in_{tag}.npy"))
            row["inputs"].append(tag)
            try:
                np.save(os.path.join(qd, f"mnn_py_{tag}.npy"), mnn_py_output(os.path.join(qd, "model.mnn"),
                                                                            np.load(src)))
            except Exception as e:
                row[f"mnn_py_{tag}_error"] = str(e)[-300:]
    print(f"{name + '_mnnq8':26} {'ok (quantized)':24} {row['convert_s']:6.1f} s", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo", default=os.path.join(ROOT, ".zoo"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".zoo-mnn"))
    ap.add_argument("--paddle2onnx", default=os.path.join(ROOT, ".venv-p2o", "bin", "paddle2onnx"))
    ap.add_argument("--only", default="")
    ap.add_argument("--setup-p2o", action="store_true")
    ap.add_argument("--quantize", default="resnet18,mobilenet_v2,seg_bilinear")
    a = ap.parse_args()
    if a.setup_p2o:
        setup_p2o(os.path.dirname(os.path.dirname(a.paddle2onnx)))
    if not os.path.exists(a.paddle2onnx):
        sys.exit(f"no paddle2onnx at {a.paddle2onnx}: run with --setup-p2o (makes .venv-p2o)")
    conv = os.path.join(os.path.dirname(sys.executable), "mnnconvert")
    if not os.access(conv, os.X_OK):
        conv = shutil.which("mnnconvert")
    if not conv:
        sys.exit("mnnconvert not found: run this in .venv-mnn (scripts/setup_mnn.sh)")
    only = [s for s in a.only.split(",") if s]
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for name in sorted(os.listdir(a.zoo)):
        zd = os.path.join(a.zoo, name)
        if not os.path.exists(os.path.join(zd, "model.pdmodel")) or (only and name not in only):
            continue
        info = json.load(open(os.path.join(zd, "info.json"))) if os.path.exists(os.path.join(zd, "info.json")) else {}
        od = os.path.join(a.out, name)
        os.makedirs(od, exist_ok=True)
        row = {"name": name, "family": info.get("family", ""), "precision": info.get("precision", "fp32"),
               "input_name": info.get("input_name", "x"), "input_shape": info.get("input_shape"), "ok": False}
        t0 = time.time()
        on, mn = os.path.join(od, "model.onnx"), os.path.join(od, "model.mnn")
        r = subprocess.run([a.paddle2onnx, "--model_dir", zd, "--model_filename", "model.pdmodel", "--params_filename",
                            "model.pdiparams", "--save_file", on, "--opset_version", "13"],
                           capture_output=True, text=True, errors="replace", timeout=600)
        if r.returncode or not os.path.exists(on):
            msg = [ln for ln in (r.stdout + r.stderr).splitlines() if "not supported yet" in ln]
            row.update(step="paddle2onnx", error=(msg[0] if msg else (r.stdout + r.stderr).strip())[-400:])
        else:
            r = subprocess.run([conv, "-f", "ONNX", "--modelFile", on, "--MNNModel", mn, "--bizCode", "cldiff"],
                               capture_output=True, text=True, errors="replace", timeout=600)
            if r.returncode or not os.path.exists(mn):
                row.update(step="mnnconvert", error=(r.stdout + r.stderr).strip()[-400:])
            else:
                row.update(ok=True, onnx_bytes=os.path.getsize(on), mnn_bytes=os.path.getsize(mn))
        row["convert_s"] = round(time.time() - t0, 1)
        if row["ok"]:
            row["inputs"] = []
            for tag in ("natural", "random"):
                src = os.path.join(zd, f"in_{tag}.npy")
                if not os.path.exists(src):
                    continue
                shutil.copy(src, os.path.join(od, f"in_{tag}.npy"))
                row["inputs"].append(tag)
                try:
                    np.save(os.path.join(od, f"mnn_py_{tag}.npy"), mnn_py_output(mn, np.load(src)))
                except Exception as e:  # an oracle that cannot run is recorded, not fatal
                    row[f"mnn_py_{tag}_error"] = str(e)[-300:]
        rows.append(row)
        if row["ok"] and name in a.quantize.split(",") and "natural" in row.get("inputs", []):
            rows.append(quantized(name, info, od, a.out))
        print(f"{name:26} {'ok' if row['ok'] else 'FAILED at ' + row['step']:24} {row['convert_s']:6.1f} s"
              + ("" if row["ok"] else "  " + row["error"].splitlines()[-1][:160]), flush=True)
    man = os.path.join(a.out, "manifest.jsonl")
    done = {r["name"] for r in rows}
    kept = [json.loads(ln) for ln in open(man)] if os.path.exists(man) else []
    rows = sorted([r for r in kept if r["name"] not in done] + rows, key=lambda r: r["name"])
    with open(man, "w") as f:  # the models not made this time keep their lines
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} zoo models in {a.out} converted to .mnn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
