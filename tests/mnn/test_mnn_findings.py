#!/usr/bin/env python3
"""The two MNN 3.6.1 bugs of docs/mnn-findings.md, as cldiff names them (PoCL here).

    test_mnn_findings.py CLDIFF SOURCE_DIR FAULTINJ_LIB

Skips (exit 77) with the reason where no MNN SDK is found or no C++ compiler builds the runner.

1. MNN's OpenCL buffer ArgMax (report M1): testdata/mnn/argmax.mnn (ArgMax over the 5 channels of
   a [1,5,8,8] input; 64 = H*W a multiple of 4, so MNN runs argmax_v4_buf) on mnn-cpu,mnn-opencl:
   KERNEL FAULT at arg_max_0 (exit 1); MNN CPU's output is numpy's argmax; MNN OpenCL's first 16
   (H*W/4) indices are right and every wrong one lies at 16 or after (the work-items that the
   kernel's bound check sends away); in image mode (MNN has no image ArgMax: its CPU runs it) PASS;
   argmax_odd.mnn (7x7 = 49: argmax_buf) PASS; and with the fix of the report applied to the kernel
   source MNN hands to the driver (the fault injector layer's source edit) argmax.mnn PASSes.
2. MNN's x86 int8 max pooling (report M2): conv_int8.mnn with mnn-cpu as B is named at pool2d_0
   (tests/mnn/test_mnn_unmapped.py); here, MNN CPU's pool2d_0 equals the kernel's arithmetic
   replayed on the bytes MNN's x86 int8 keeps (code + 128 as uint8, compared as int8), and with the
   aarch64 SDK under qemu (mnn-arm, signed bytes and smax) the same layer passes with local error 0.
"""
import glob
import json
import os
import platform
import re
import shutil
import sys
import tempfile

import numpy as np
from mnn_common import check, finish, require_sdk, tensor
from mnn_common import run as mc_run

CLDIFF, SRC, FAULTINJ = sys.argv[1], sys.argv[2], sys.argv[3]
DATA = os.path.join(SRC, "testdata", "mnn")

require_sdk(SRC)

# The bound check of argmax_v4_buf as MNN 3.6.1 embeds it (argmax_buf_mnn_cl.cpp) and the fix
# of docs/mnn-findings.md: compare the work-item's own id, not the shifted element index.
NEEDLE = (" const int y=get_global_id(1) << 2; // inside\n const int z=get_global_id(2); // outside\n \n"
          " DEAL_NON_UNIFORM_DIM3(x,y,z);")
FIX = NEEDLE.replace("DEAL_NON_UNIFORM_DIM3(x,y,z);", "DEAL_NON_UNIFORM_DIM3(x,(int)get_global_id(1),z);")


def run(args, env=None, timeout=600):
    return mc_run(CLDIFF, args, env, timeout)


def tail(rc, se):
    """The end of cldiff's stderr where it did not reach a verdict (exit 0 or 1)."""
    return "" if rc in (0, 1) else se.strip()[-300:]


def summary(out):
    p = os.path.join(out, "summary.json")
    return json.load(open(p)) if os.path.exists(p) else {}


with tempfile.TemporaryDirectory() as d:
    # 1. MNN's OpenCL buffer ArgMax
    mn, xin = os.path.join(DATA, "argmax.mnn"), os.path.join(DATA, "argmax.input.npy")
    ref = np.load(xin).argmax(1).reshape(-1)
    out = os.path.join(d, "buf")
    rc, so, se = run([mn, "--backends", "mnn-cpu,mnn-opencl", "--input", xin, "--out", out, "--no-repro"])
    ff = summary(out).get("first_fault") or {}
    check(rc == 1 and isinstance(ff, dict) and ff.get("layer") == "arg_max_0",
          f"argmax buffer mode: KERNEL FAULT at arg_max_0 (exit {rc}, {ff}: {tail(rc, se)})")
    dump = os.path.join(out, "dump.h5")
    a = tensor(dump, "mnn-cpu", "y") if os.path.exists(dump) else None
    b = tensor(dump, "mnn-opencl", "y") if os.path.exists(dump) else None
    if a is not None and b is not None:
        a, b = a.reshape(-1), b.reshape(-1)
        bad = np.nonzero(b != ref)[0]
        check(np.array_equal(a, ref), "argmax: MNN CPU's indices are numpy's argmax")
        check(np.array_equal(b[:16], ref[:16]), "argmax: MNN OpenCL's first 16 (H*W/4) indices are right")
        check(len(bad) > 0 and bad.min() >= 16,
              f"argmax: MNN OpenCL's wrong indices all at 16 or after ({len(bad)} of 64, first {bad[:1]})")
    else:
        check(False, "argmax: MNN CPU's and MNN OpenCL's y in the dump")

    rc, so, se = run([mn, "--backends", "mnn-cpu,mnn-opencl", "--input", xin, "--out", os.path.join(d, "img"),
                      "--no-repro", "--backend-opt", "mnn-opencl:mode=image"])
    check(rc == 0 and "verdict: PASS" in so, f"argmax image mode: PASS (exit {rc}: {tail(rc, se)})")

    rc, so, se = run([os.path.join(DATA, "argmax_odd.mnn"), "--backends", "mnn-cpu,mnn-opencl", "--input",
                      os.path.join(DATA, "argmax_odd.input.npy"), "--out", os.path.join(d, "odd"), "--no-repro"])
    check(rc == 0 and "verdict: PASS" in so,
          f"argmax_odd (7x7, argmax_buf) buffer mode: PASS (exit {rc}: {tail(rc, se)})")

    log = os.path.join(d, "fix.clfi.log")
    env = {"OPENCL_LAYERS": os.path.abspath(FAULTINJ), "CLFI_SRC_NEEDLE": NEEDLE, "CLFI_SRC_REPLACE": FIX,
           "CLFI_LOG": log, "CLFI_QUIET": "1"}
    rc, so, se = run([mn, "--backends", "mnn-cpu,mnn-opencl", "--input", xin, "--out", os.path.join(d, "fix"),
                      "--no-repro"], env=env)
    applied = os.path.exists(log) and "source_edit" in open(log).read()
    check(applied, "argmax: the fix's source edit applied to MNN's argmax_buf program")
    check(rc == 0 and "verdict: PASS" in so,
          f"argmax buffer mode with the fixed bound check: PASS (exit {rc}: {tail(rc, se)})")

    # 2. MNN's x86 int8 max pooling, replayed on its stored bytes; right on MNN's ARM kernels
    conv, x = os.path.join(DATA, "conv_int8.mnn"), os.path.join(DATA, "conv.input.npy")
    out = os.path.join(d, "i8")
    rc, so, se = run([conv, "--backends", "mnn-opencl,mnn-cpu", "--input", x, "--out", out, "--no-repro"])
    ff = summary(out).get("first_fault") or {}
    check(rc == 1 and isinstance(ff, dict) and ff.get("layer") == "pool2d_0",
          f"conv_int8 B=mnn-cpu: KERNEL FAULT at pool2d_0 (exit {rc}, {ff}: {tail(rc, se)})")
    dump = os.path.join(out, "dump.h5")
    c3 = tensor(dump, "mnn-cpu", "c3") if os.path.exists(dump) else None
    p1 = tensor(dump, "mnn-cpu", "p1") if os.path.exists(dump) else None
    if c3 is not None and p1 is not None and platform.machine() == "x86_64":
        v = np.unique(np.abs(c3.astype(np.float64)))
        code = np.rint(c3 / np.diff(v).min()).astype(np.int32)  # one scale: the values are code * scale
        scale = float((c3 * code).sum() / (code * code).sum())
        check(np.abs(code * scale - c3).max() < 1e-5 and code.min() >= -127 and code.max() <= 127,
              f"conv_int8: c3 is int8 codes times one scale {scale:.6g}")
        w = code.reshape(16, 8, 2, 8, 2).transpose(0, 1, 3, 2, 4).reshape(16, 8, 8, 4)
        stored = (w + 128).astype(np.uint8)  # _SSE/_AVX_MNNFloat2Int8: code + 128, packed unsigned
        kern = stored.view(np.int8).max(-1).view(np.uint8).astype(np.int32) - 128  # MNNMaxPoolInt8_: int8 max
        dk = float(np.abs(kern * scale - p1.reshape(16, 8, 8)).max())
        dt = float(np.abs(w.max(-1) * scale - p1.reshape(16, 8, 8)).max())
        check(dk < 1e-5 and dt > 0.1, f"conv_int8: MNN CPU's p1 is the int8 max of code + 128 (off {dk:.3g}), "
              f"not the max (off {dt:.3g})")
    elif platform.machine() == "x86_64":
        check(False, "conv_int8: MNN CPU's c3 and p1 in the dump")
    arm_sdk = next(iter(sorted(glob.glob(os.path.join(SRC, ".mnn", "sdk-mnn-aarch64-*")))), None)
    if arm_sdk and os.path.exists(os.path.join(arm_sdk, "lib", "libMNN.so")) and (
            shutil.which("qemu-aarch64") or platform.machine() == "aarch64"):
        out = os.path.join(d, "i8arm")
        rc, so, se = run([conv, "--backends", "mnn-opencl,mnn-arm", "--input", x, "--out", out, "--no-repro"])
        m = re.search(r"^5 +pool2d_0 +pool2d .* 0 *$", so, re.M)
        check(rc in (0, 1) and not summary(out).get("first_fault") and m is not None,
              f"conv_int8 B=mnn-arm: no kernel fault, pool2d_0 local error 0 (exit {rc}: {tail(rc, se)})")
    else:
        print("note: no aarch64 MNN SDK or qemu-aarch64: MNN's ARM int8 max pooling not run")

finish()
