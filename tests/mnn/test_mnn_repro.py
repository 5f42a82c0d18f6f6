#!/usr/bin/env python3
"""The repro pack of a .mnn run (docs/mnn.md "Repro packs"): the faulty layer cut out of the user's
model by MNN itself (the runner's --extract mode), so the pack's command runs on MNN's engines.

    test_mnn_repro.py CLDIFF SOURCE_DIR FAULTINJ

A fault planted in MNN's OpenCL depthwise kernel (the fault injector layer, as mnn_planted does)
on testdata/mnn/conv.mnn, and one in MNN's batch matmul on attention.mnn (two activation inputs):
the run names the layer; the pack holds layer.mnn (one op, its inputs named like the tensors they
replace, with the run's shapes), the inputs, both outputs and the command; the command gives the
same KERNEL FAULT with the plant and PASS without it (the op alone is right on MNN's CPU).
Skips (exit 77) where no MNN SDK is found.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from mnn_common import check, finish, require_sdk

CLDIFF, SRC, FAULTINJ = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
DATA = os.path.join(SRC, "testdata", "mnn")
require_sdk(SRC)


MAD = "#define mad(a,b,c) (fma((a),(b),(c))*1.001f)\n"
CASES = [
    ("conv", "__kernel\nvoid depthwise_conv2d_c4h1w4(", "depthwise_conv2d_0", 1),
    ("attention", "__kernel void batch_matmul(", "matmul_v2_0", 2),
]
work = tempfile.mkdtemp(prefix="cldiff-mnn-repro-")
base = dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
for model, needle, layer, n_in in CASES:
    plant = dict(base, OPENCL_LAYERS=os.path.abspath(FAULTINJ), CLFI_SRC_NEEDLE=needle, CLFI_SRC_REPLACE=MAD + needle,
                 CLFI_QUIET="1")
    out = os.path.join(work, model)
    r = subprocess.run([CLDIFF, os.path.join(DATA, model + ".mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input",
                        os.path.join(DATA, model + ".input.npy"), "--out", out], capture_output=True, text=True,
                       env=plant, timeout=600)
    check(r.returncode == 1 and f"KERNEL FAULT at {layer}" in r.stdout, f"{model}: planted run names {layer} (exit {r.returncode})")
    pack = os.path.join(out, "repro")
    files = sorted(os.listdir(pack)) if os.path.isdir(pack) else []
    check("layer.mnn" in files and "layer.nb" not in files, f"{model}: the pack holds layer.mnn ({files})")
    ins = [f for f in files if re.fullmatch(r"in\d+\.npy", f)]
    check(len(ins) == n_in, f"{model}: {n_in} input file(s) ({ins})")
    if "layer.mnn" not in files:
        continue
    insp = subprocess.run([CLDIFF, "inspect", os.path.join(pack, "layer.mnn")], capture_output=True, text=True, env=base)
    m = re.search(r"MNN model: [^\n]*", insp.stdout)
    check(insp.returncode == 0 and m is not None and m.group(0).startswith("MNN model: 1 ops"),
          f"{model}: layer.mnn is one op ({m.group(0) if m else insp.stderr.strip()[:200]})")
    cmd = open(os.path.join(pack, "command.txt")).read().strip()
    check(cmd.startswith("cldiff layer.mnn ") and "--backends mnn-cpu,mnn-opencl" in cmd, f"{model}: command {cmd}")
    argv = [CLDIFF] + cmd.split()[1:]
    again = subprocess.run(argv, cwd=pack, capture_output=True, text=True, env=plant, timeout=600)
    check(again.returncode == 1 and f"KERNEL FAULT at {layer.rsplit('_', 1)[0]}_0" in again.stdout,
          f"{model}: the pack's command with the plant: KERNEL FAULT (exit {again.returncode})")
    shutil.rmtree(os.path.join(pack, "repro-out"), ignore_errors=True)
    clean = subprocess.run(argv, cwd=pack, capture_output=True, text=True, env=base, timeout=600)
    check(clean.returncode == 0 and "verdict: PASS" in clean.stdout,
          f"{model}: the pack's command without it: PASS (exit {clean.returncode})")
shutil.rmtree(work, ignore_errors=True)
finish()
