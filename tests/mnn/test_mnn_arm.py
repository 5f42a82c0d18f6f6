#!/usr/bin/env python3
"""The engine mnn-arm (src/backends/mnn/, docs/mnn.md "mnn-arm"): MNN's ARM kernels from an
aarch64 SDK, on x86-64 under qemu-aarch64 -cpu max, on the real .mnn models of testdata/mnn/.

    test_mnn_arm.py CLDIFF SOURCE_DIR

Skips (exit 77) with the reason where no aarch64 MNN SDK is found (CLDIFF_BUILD_MNN_ARM=1
scripts/setup_mnn.sh builds one into .mnn/sdk-mnn-aarch64-debian12; CLDIFF_MNN_ARM_SDK names
another), where the x86-64 SDK of mnn-opencl is absent, or where the cross compiler or qemu-aarch64
is not installed.

1. conv, branches, attention: `--backends mnn-arm,mnn-opencl` PASS with every expected layer
   compared; the dump says the session ran on MNN's CPU (backend type 0) in fp32 under qemu; MNN's
   ARM output equals onnxruntime's within 1e-4 of its range.
2. `cpu,mnn-arm` (mnn-arm as B, each of its layers checked by cldiff's CPU on its own inputs) on
   every model of testdata/mnn/ that cldiff runs: PASS (MNN's approximate ARM exp in the bounds).
3. precision=low (--fp16): MNN's ARMv8.2 backend ran (session backend 13, compute fp16 recorded,
   cpu_kernels arm82-fp16); the verdict PASS with fp16 bounds; the output really is fp16
   arithmetic: it differs from the precision=high output by more than float rounding and less
   than half rounding allows.
   In a float32 run, precision low is OUTPUT DRIFT by design and said; winograd=0 reaches MNN.
   With MNN's Winograd, branches' conv2d_0 is held to the Winograd bound: OUTPUT DRIFT, not the
   KERNEL FAULT the direct bound gave (ratio 1.03), in a float32 run and with --fp16.
4. Errors: no aarch64 SDK at the given path, an x86-64 SDK given to mnn-arm: exit 4 saying what to
   do; a runner that dies under qemu in an op (a stand-in aarch64 runner built by a stand-in
   compiler, CLDIFF_MNN_ARM_CXX): exit 5 naming the op and its layer.
"""
import glob
import json
import os
import platform
import re
import resource
import shutil
import stat
import sys
import tempfile

import numpy as np
from mnn_common import attrs, check, find_sdk, finish
from mnn_common import run as mc_run

CLDIFF, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "testdata", "mnn")

arm_sdk = find_sdk(SRC, "aarch64", "CLDIFF_MNN_ARM_SDK")
if not arm_sdk:
    print("SKIP: no aarch64 MNN SDK (.mnn/sdk-mnn-aarch64-* or CLDIFF_MNN_ARM_SDK): build it with "
          "CLDIFF_BUILD_MNN_ARM=1 scripts/setup_mnn.sh (25-60 min)")
    sys.exit(77)
x86_sdk = find_sdk(SRC)
if not x86_sdk:
    print("SKIP: no MNN SDK for mnn-opencl (.mnn/sdk-mnn-<arch>-* or CLDIFF_MNN_SDK): run scripts/setup_mnn.sh")
    sys.exit(77)
emulated = platform.machine() != "aarch64"
if emulated:
    for tool, pkg in (("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu"), ("qemu-aarch64", "qemu-user")):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (Debian: apt-get install {pkg}, or scripts/setup.sh)")
            sys.exit(77)


def run(args, env=None, timeout=900):
    return mc_run(CLDIFF, args, env, timeout, no_core)


def no_core():
    # a guest that dies under qemu-aarch64 leaves no core file in the working folder
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


try:
    import onnxruntime as ort
except ImportError:
    ort = None

EXPECT = {"conv": 7, "branches": 8, "attention": 14}
with tempfile.TemporaryDirectory() as d:
    # 1. mnn-arm as A, mnn-opencl as B
    for name, n_layers in EXPECT.items():
        out = os.path.join(d, name)
        x = os.path.join(DATA, name + ".input.npy")
        rc, so, se = run([os.path.join(DATA, name + ".mnn"), "--backends", "mnn-arm,mnn-opencl", "--input", x,
                          "--out", out, "--no-repro"])
        check(rc == 0, f"{name}: mnn-arm,mnn-opencl exit 0 (got {rc}: {se.strip()[-400:]})")
        if rc:
            continue
        s = json.load(open(os.path.join(out, "summary.json")))
        check(s["verdict"] == "pass", f"{name}: verdict pass (got {s['verdict']})")
        check(s["layers_compared"] == n_layers, f"{name}: {n_layers} layers compared (got {s['layers_compared']})")
        a, y_arm = attrs(os.path.join(out, "dump.h5"), "mnn-arm")
        check(a.get("mnn_session_backend") == "cpu 0" and a.get("compute") == "fp32" and
              a.get("mnn_cpu_kernels") == "arm64-fp32",
              f"{name}: mnn-arm ran on MNN's CPU backend in fp32 ({a.get('mnn_session_backend')}, "
              f"{a.get('compute')}, {a.get('mnn_cpu_kernels')})")
        check(not emulated or "under qemu-aarch64 -cpu max" in a.get("device", ""),
              f"{name}: the device says qemu ({a.get('device')})")
        check(a.get("mnn_options", "").startswith("precision=high,memory=normal,power=normal,threads="),
              f"{name}: options recorded ({a.get('mnn_options')})")
        if ort:
            ref = ort.InferenceSession(os.path.join(DATA, name + ".onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
            da = float(np.abs(y_arm.reshape(ref.shape) - ref).max())
            tol = 1e-4 * float(np.abs(ref).max())
            check(da <= tol, f"{name}: MNN ARM output vs onnxruntime {da:.3g} <= {tol:.3g}")

    # 2. mnn-arm as B: checked layer by layer by cldiff's CPU on its own inputs, on every model
    # cldiff runs (eltwise, matmul and unmapped hold ops that stay named: refused, exit 8). MNN's ARM exp
    # (softmax, exp, tanh, sigmoid) is a degree-4 polynomial, 918 u off on attention's softmax and
    # 1.8e-5 on ops_unary's tanh: the bounds take mnn-arm's exp_rel (it was a false KERNEL FAULT)
    for mn in sorted(glob.glob(os.path.join(DATA, "*.mnn"))):
        name = os.path.basename(mn)[:-4]
        x = os.path.join(DATA, name + ".input.npy")
        if not os.path.exists(x) or name in ("eltwise", "matmul", "unmapped"):
            continue
        rc, so, se = run([mn, "--backends", "cpu,mnn-arm", "--input", x, "--out", os.path.join(d, "ca-" + name),
                          "--no-repro"])
        m = re.search(r"PASS \((\d+) layers checked locally", so)
        check(rc == 0 and m and int(m.group(1)) >= 1,
              f"cpu,mnn-arm {name}: PASS, {m and m.group(1)} layers checked locally (exit {rc}: "
              f"{(so + se).strip()[-300:] if rc else ''})")

    # 3. precision low: MNN's ARMv8.2 fp16 backend, recorded and judged as fp16 arithmetic
    y, half = {}, True
    for prec in ("high", "low"):
        out = os.path.join(d, "p-" + prec)
        rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "cpu,mnn-arm", "--fp16", "--input",
                          os.path.join(DATA, "conv.input.npy"), "--out", out, "--no-repro", "--backend-opt",
                          f"mnn-arm:precision={prec}"])
        v = json.load(open(os.path.join(out, "summary.json")))["verdict"] if rc == 0 else f"exit {rc}"
        check(rc == 0 and v == "pass" and "verdict: PASS" in so,
              f"--fp16 cpu,mnn-arm precision={prec}: PASS (got {v}: {se.strip()[-300:]})")
        if rc:
            continue
        a, y[prec] = attrs(os.path.join(out, "dump.h5"), "mnn-arm")
        # qemu -cpu max offers half arithmetic; a native aarch64 CPU may not (then precision low is fp32)
        half = emulated or a.get("mnn_cpu_fp16arith") == "1"
        check(not emulated or a.get("mnn_cpu_fp16arith") == "1",
              f"precision={prec}: qemu -cpu max offers half arithmetic (cpu_fp16arith {a.get('mnn_cpu_fp16arith')})")
        want = ("cpu 13", "fp16", "arm82-fp16") if prec == "low" and half else ("cpu 0", "fp32", "arm64-fp32")
        got = (a.get("mnn_session_backend"), a.get("compute"), a.get("mnn_cpu_kernels"))
        check(got == want, f"precision={prec}: session backend, compute, kernels {got} == {want}")
    if len(y) == 2 and half:
        hi, lo = y["high"].astype(np.float64), y["low"].astype(np.float64)
        r = float(np.abs(hi).max())
        dd = float(np.abs(hi - lo).max())
        # --fp16 stores both in half: beyond a few half ulps only when the arithmetic was half too
        check(2e-3 * r < dd < 5e-2 * r,
              f"precision=low really computed in fp16: max |low - high| {dd:.3g} within ({2e-3 * r:.3g}, {5e-2 * r:.3g})")

    # 3b. precision low in a float32 run: half bounds on the layers, float32 tolerances on the
    # outputs (drift by design, said before the verdict); winograd=0 reaches MNN (its fp16
    # Winograd conv2d_0 of branches is 18x the direct kernel's error, docs/mnn.md)
    out = os.path.join(d, "low-fp32")
    rc, so, se = run([os.path.join(DATA, "branches.mnn"), "--backends", "cpu,mnn-arm", "--input",
                      os.path.join(DATA, "branches.input.npy"), "--out", out, "--no-repro", "--backend-opt",
                      "mnn-arm:precision=low", "--backend-opt", "mnn-arm:winograd=0"])
    s = json.load(open(os.path.join(out, "summary.json"))) if os.path.exists(os.path.join(out, "summary.json")) else {}
    check(rc == 1 and s.get("verdict_kind") == "output_drift" and "computed in fp16" in se,
          f"precision=low in a float32 run: OUTPUT DRIFT, said (exit {rc}, {s.get('verdict_kind')})")
    conv = [l for l in s.get("layers", []) if l.get("layer") == "conv2d_0"]
    lr = (conv[0].get("local") or {}).get("ratio") if conv else None
    check(isinstance(lr, (int, float)) and lr < 0.5, f"winograd=0: conv2d_0 within half its fp16 bound (ratio {lr})")
    if rc in (0, 1):
        a, _ = attrs(os.path.join(out, "dump.h5"), "mnn-arm")
        check(a.get("mnn_winograd") == "0" and a.get("compute") == "fp16",
              f"winograd=0 and compute fp16 recorded ({a.get('mnn_winograd')}, {a.get('compute')})")

    # 3c. the same with MNN's Winograd (docs/verdicts.md "Winograd convolutions"): conv2d_0's fp16
    # Winograd was a false KERNEL FAULT under the direct bound (ratio 1.03); the Winograd bound
    # holds it, in a float32 run and with --fp16 (OUTPUT DRIFT there too: the output really drifts)
    for extra in ([], ["--fp16"]):
        out = os.path.join(d, "wino" + "".join(extra))
        rc, so, se = run([os.path.join(DATA, "branches.mnn"), "--backends", "cpu,mnn-arm", "--input",
                          os.path.join(DATA, "branches.input.npy"), "--out", out, "--no-repro", "--backend-opt",
                          "mnn-arm:precision=low"] + extra)
        p = os.path.join(out, "summary.json")
        s = json.load(open(p)) if os.path.exists(p) else {}
        conv = [l for l in s.get("layers", []) if l.get("layer") == "conv2d_0"]
        loc = (conv[0].get("local") or {}) if conv else {}
        lr = loc.get("ratio")
        print(f"precision=low {' '.join(extra) or 'float32'} with MNN's Winograd: conv2d_0 local ratio {lr} "
              f"({loc.get('note', '')[:60]})")
        check(rc == 1 and s.get("verdict_kind") == "output_drift",
              f"precision=low{' --fp16' if extra else ''}, MNN's Winograd: OUTPUT DRIFT, no KERNEL FAULT "
              f"(exit {rc}, {s.get('verdict_kind')})")
        check(isinstance(lr, (int, float)) and lr < 0.5 and "winograd tile" in loc.get("note", ""),
              f"conv2d_0 held to the Winograd bound, within half of it (ratio {lr}, {loc.get('note', '')[:80]})")

    # 4. errors
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "cpu,mnn-arm", "--out", os.path.join(d, "e1"),
                      "--backend-opt", "mnn-arm:sdk=" + os.path.join(d, "nowhere")])
    check(rc == 4 and "does not exist" in se, f"no SDK at the path: exit 4 (got {rc}: {se.strip()[-200:]})")
    rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "cpu,mnn-arm", "--out", os.path.join(d, "e2"),
                      "--backend-opt", "mnn-arm:sdk=" + x86_sdk])
    check(rc == 4 and "needs an aarch64 SDK" in se and "CLDIFF_BUILD_MNN_ARM=1" in se,
          f"an x86-64 SDK for mnn-arm: exit 4 saying what to do (got {rc}: {se.strip()[-300:]})")
    if emulated:
        # a runner that dies by SIGSEGV under qemu in op c1 (conv.mnn's first Convolution)
        stub = os.path.join(d, "stub.c")
        with open(stub, "w") as f:
            f.write("""#include <signal.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argv;
    if (argc < 4) { fprintf(stderr, "usage: stand-in runner\\n"); return 2; }
    fprintf(stderr, "mnn_probe_runner: phase run\\nmnn_probe_runner: op Convolution c1\\n");
    fflush(stderr);
    raise(SIGSEGV);
    return 0;
}
""")
        cxx = os.path.join(d, "fake-cxx")
        with open(cxx, "w") as f:
            f.write(f"""#!/bin/bash
# stands in for aarch64-linux-gnu-g++: builds the stand-in runner as the -o file
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
exec aarch64-linux-gnu-gcc -O1 -o "$out" {stub}
""")
        os.chmod(cxx, os.stat(cxx).st_mode | stat.S_IXUSR)
        rc, so, se = run([os.path.join(DATA, "conv.mnn"), "--backends", "cpu,mnn-arm", "--out",
                          os.path.join(d, "crash")],
                         env={"CLDIFF_MNN_ARM_CXX": cxx, "CLDIFF_CACHE_DIR": os.path.join(d, "cache")})
        check(rc == 5 and "SIGSEGV in op 'c1' (Convolution, layer conv2d_0)" in se,
              f"a crash under qemu: exit 5 naming the op and the layer (got {rc}: {se.strip()[-400:]})")

finish()
