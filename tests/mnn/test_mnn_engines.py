#!/usr/bin/env python3
"""The MNN engines mnn-cpu and mnn-opencl (src/backends/mnn/, docs/mnn.md "Engines") on the real
.mnn models of testdata/mnn/ (made with mnnconvert from the ONNX models beside them).

    test_mnn_engines.py CLDIFF SOURCE_DIR

Skips (exit 77) with the reason where no MNN SDK is found (scripts/setup_mnn.sh unpacks one into
.mnn/; CLDIFF_MNN_SDK names another) or no C++ compiler builds the runner.

1. conv, branches, attention (convolutions, pooling, concat, bilinear resize, softmax, MatMul of
   two activations): `--backends mnn-cpu,mnn-opencl` PASS, every expected layer compared, the
   checked ones within their bounds; MNN's CPU output equals onnxruntime's (the runner hands real
   values over); the dump records what MNN used (session backend, options).
   The one-op-family models testdata/mnn/ops_*: PASS (ops_pool_ceil: MNN's CPU dies at session
   creation on mnnconvert's stride 0, contained as exit 5).
2. MNN's options reach MNN: precision=low, memory=low, mode=image recorded; a wrong value exit 2.
3. OpenCL unusable (OCL_ICD_VENDORS at an empty folder): MNN moves the session to its CPU and the
   run is refused, exit 4, saying so, never a pass; `cldiff doctor` runs a real session and says
   mnn-opencl is usable (session on OpenCL) or not (moved to the CPU).
4. A runner that dies in an op (a stand-in runner built by a stand-in compiler, CLDIFF_MNN_CXX:
   it says an op, an OpenCL program that does not build, and kills itself): exit 5 naming the op
   and the program.
5. mnn-cpu on a .nb: exit 2.
"""
import glob
import json
import os
import re
import stat
import sys
import tempfile

import numpy as np
from mnn_common import attrs, check, find_sdk, finish, require_sdk
from mnn_common import run as mc_run

CLDIFF, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "testdata", "mnn")

require_sdk(SRC)
sdk = find_sdk(SRC)


def run(args, env=None, timeout=600):
    return mc_run(CLDIFF, args, env, timeout)


try:
    import onnxruntime as ort
except ImportError:
    ort = None

# 1. three real models
EXPECT = {"conv": 7, "branches": 8, "attention": 14}
with tempfile.TemporaryDirectory() as d:
    for name, n_layers in EXPECT.items():
        out = os.path.join(d, name)
        x = os.path.join(DATA, name + ".input.npy")
        rc, so, se = run([os.path.join(DATA, name + ".mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input", x,
                          "--out", out])
        check(rc == 0, f"{name}: mnn-cpu,mnn-opencl exit 0 (got {rc}: {se.strip()[-400:]})")
        if rc:
            continue
        s = json.load(open(os.path.join(out, "summary.json")))
        check(s["verdict"] == "pass", f"{name}: verdict pass (got {s['verdict']})")
        check(s["layers_compared"] == n_layers, f"{name}: {n_layers} layers compared (got {s['layers_compared']})")
        m = re.search(r"PASS \((\d+) layers checked locally", so)
        check(m and int(m.group(1)) >= n_layers - 3, f"{name}: checked locally by cldiff's CPU: {m and m.group(1)}")
        a, y_cpu = attrs(os.path.join(out, "dump.h5"), "mnn-cpu")
        b, y_ocl = attrs(os.path.join(out, "dump.h5"), "mnn-opencl")
        check(b.get("mnn_session_backend", "").startswith("opencl"),
              f"{name}: mnn-opencl's session was on OpenCL ({b.get('mnn_session_backend')})")
        check(b.get("mnn_options") == "precision=high,memory=normal,power=normal,mode=buffer,tuning=none",
              f"{name}: options recorded ({b.get('mnn_options')})")
        check(a.get("engine_version", "").startswith("3."), f"{name}: MNN version recorded ({a.get('engine_version')})")
        if ort:
            ref = ort.InferenceSession(os.path.join(DATA, name + ".onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
            dc = float(np.abs(y_cpu - ref).max())
            do = float(np.abs(y_ocl - ref).max())
            tol = 1e-4 * float(np.abs(ref).max())
            check(dc <= tol and do <= tol,
                  f"{name}: MNN CPU / OpenCL outputs vs onnxruntime {dc:.3g} / {do:.3g} <= {tol:.3g}")

    # 1b. the one-op-family models: PASS; ops_pool_ceil's stride 0 (mnnconvert) kills MNN's CPU
    # while it creates the session: contained (exit 5) as long as MNN has that bug
    for mn in sorted(glob.glob(os.path.join(DATA, "ops_*.mnn"))):
        name = os.path.basename(mn)[:-4]
        rc, so, se = run([mn, "--backends", "mnn-cpu,mnn-opencl", "--input", os.path.join(DATA, name + ".input.npy"),
                          "--out", os.path.join(d, name), "--no-repro"])
        if name == "ops_pool_ceil" and rc == 5:
            check("while creating the session" in se and "before any op ran" in se,
                  f"{name}: MNN's crash at session creation contained and said: {se.strip()[-200:]}")
            continue
        check(rc == 0 and "verdict: PASS" in so, f"{name}: mnn-cpu,mnn-opencl PASS (exit {rc}: {se.strip()[-300:]})")

    # 1c. --fp16: MNN's float32 outputs kept in the plan's half (never an empty comparison)
    out = os.path.join(d, "fp16")
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--fp16", "--input",
                      os.path.join(DATA, "conv.input.npy"), "--out", out, "--no-repro"])
    n = json.load(open(os.path.join(out, "summary.json")))["layers_compared"] if rc == 0 else -1
    check(rc == 0 and n == 7, f"--fp16: exit 0 with 7 layers compared (got exit {rc}, {n} layers)")

    # 2. options
    out = os.path.join(d, "opts")
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--out", out,
                      "--backend-opt", "mnn-opencl:precision=low", "--backend-opt", "mnn-opencl:memory=low",
                      "--backend-opt", "mnn-opencl:mode=image", "--backend-opt", "mnn-cpu:precision=normal"])
    check(rc == 0, f"options: exit 0 (got {rc}: {se.strip()[-300:]})")
    if rc == 0:
        b, _ = attrs(os.path.join(out, "dump.h5"), "mnn-opencl")
        a, _ = attrs(os.path.join(out, "dump.h5"), "mnn-cpu")
        check(b.get("mnn_options") == "precision=low,memory=low,power=normal,mode=image,tuning=none",
              f"options: mnn-opencl recorded {b.get('mnn_options')}")
        check(a.get("mnn_precision") == "normal", f"options: mnn-cpu precision recorded ({a.get('mnn_precision')})")
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--out", out,
                      "--backend-opt", "mnn-opencl:precision=medium"])
    check(rc == 2 and "precision=medium: expected low, normal or high" in se, f"bad precision: exit 2 (got {rc})")

    # 3. no usable OpenCL: MNN moves the session to its CPU, the run is refused
    empty = os.path.join(d, "no-vendors")
    os.mkdir(empty)
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--out",
                      os.path.join(d, "nocl")], env={"OCL_ICD_VENDORS": empty})
    check(rc == 4 and "MNN moved the session to its cpu backend" in se,
          f"OpenCL unusable: exit 4 naming the move to the CPU (got {rc}: {se.strip()[-300:]})")

    # 3b. doctor runs a real MNN OpenCL session and says where it landed
    rc, so, se = run(["doctor"])
    check("runs on backend opencl 3" in so and "=> mnn-opencl usable" in so,
          f"doctor: mnn-opencl usable, session on OpenCL: {so[so.find('mnn-opencl:'):][:400]}")
    rc, so, se = run(["doctor"], env={"OCL_ICD_VENDORS": empty})
    check("=> mnn-opencl NOT usable" in so and "MNN moved the session to its cpu backend" in so,
          "doctor without a usable OpenCL: mnn-opencl NOT usable, saying MNN moved the session to its CPU")

    # 4. a runner that dies in an op: contained, exit 5, the op and the program named
    cxx = os.path.join(d, "fake-cxx")
    with open(cxx, "w") as f:
        f.write("""#!/bin/bash
# stands in for c++: writes, as the -o file, a runner that dies in op c1 after a failed build
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
cat > "$out" <<'R'
#!/bin/bash
[ $# -lt 3 ] && { echo "usage: fake runner" >&2; exit 2; }
echo "mnn_probe_runner: phase run" >&2
echo "mnn_probe_runner: op Convolution c1" >&2
echo "Build program failed: conv_2d.cl -DFLOAT=half -DFLOAT4=half4 (CL_BUILD_PROGRAM_FAILURE)"
kill -SEGV $$
R
chmod +x "$out"
""")
    os.chmod(cxx, os.stat(cxx).st_mode | stat.S_IXUSR)
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "cpu,mnn-opencl", "--out", os.path.join(d, "crash"),
                      "--backend-opt", "mnn-opencl:precision=low"],
                     env={"CLDIFF_MNN_CXX": cxx, "CLDIFF_CACHE_DIR": os.path.join(d, "cache")})
    check(rc == 5, f"crash: exit 5 (got {rc}: {se.strip()[-300:]})")
    check("op 'c1' (Convolution, layer conv2d_0)" in se and "conv_2d.cl -DFLOAT=half" in se and "SIGSEGV" in se,
          f"crash: names the op, the layer, the program and its options: {se.strip()[-500:]}")

    # 5. not an MNN model
    nb = os.path.join(SRC, "testdata", "mobilenet_tiny.nb")
    rc, so, se = run([nb, "--backends", "cpu,mnn-opencl", "--out", os.path.join(d, "nb")])
    check(rc == 2 and "runs MNN models" in se, f"mnn-opencl on a .nb: exit 2 (got {rc}: {se.strip()[-200:]})")

finish()
