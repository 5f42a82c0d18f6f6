#!/usr/bin/env python3
"""The MNN model reader (src/model/mnn_reader.c, docs/mnn.md) through the command line.

    test_mnn_reader.py CLDIFF SOURCE_DIR

1. `cldiff inspect` on the .mnn files of testdata/mnn/ (conv_wq8: conv with
   `mnnconvert --weightQuantBits 8`, its IDST weights decoded; conv_int8: fully quantized, its int8
   ops named; unmapped: Shape/Slice-computed reshapes) (made from the .onnx beside them by
   scripts/mnn/make_models.py with the mnn wheel's mnnconvert): how many ops map onto cldiff's
   op table and which stay unchecked, op by op.
2. The models whose every op maps (conv, branches, attention and the one-op-family ops_* models:
   asymmetric pads, SAME, dilation, transposed conv, ceil pooling, padding counted, clip, unary and
   broadcast binary ops, nearest and align-corners resize, reshape 0/-1, MatMul of a transpose,
   LayerNorm over two trailing axes) run on cldiff's CPU (`cldiff run --backends
   cpu`); their outputs must match onnxruntime on the ONNX model they were converted from: this
   checks the mapping (paddings order, fused relu/relu6, pooling's count mode, interp's
   coordinate mode), not only that it parses.
   conv_wq8 on cldiff's CPU is off onnxruntime's float model by the weight quantization only.
3. Bad files: truncated, root or vtable offsets out of range, random byte flips (seeded): exit 3
   with a file offset in the message, or a clean load; never a crash (signal) or another code.
4. A .nb model still loads (the format is chosen by extension and content).
"""
import os
import random
import re
import subprocess
import sys
import tempfile

import numpy as np

CLDIFF, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "testdata", "mnn")
fails = []


def run(*args, timeout=120):
    r = subprocess.run([CLDIFF, *args], capture_output=True, text=True, errors="replace", timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


# 1. inspect: mapped / unchecked counts and the mapping of named ops
EXPECT = {
    "conv": (7, 0, [("c1", "Convolution", "conv2d"), ("c2", "ConvolutionDepthwise", "depthwise_conv2d"),
                    ("p1", "Pooling", "pool2d"), ("x___tr4c1", "ConvertTensor", "assign")]),
    "branches": (8, 0, [("cat", "Concat", "concat"), ("up", "Interp", "bilinear_interp_v2"),
                        ("y", "Softmax", "softmax")]),
    "matmul": (14, 12, [("x2", "Reshape", "reshape2"), ("s", "UnaryOp", "sigmoid"), ("Shape15", "Shape", "unchecked"),
                        ("ab", "Reshape", "unchecked")]),
    "attention": (18, 0, [("s", "MatMul", "matmul_v2"), ("qt", "Permute", "transpose2"), ("q", "Reshape", "reshape2"),
                          ("p", "Softmax", "softmax")]),
    "conv_wq8": (7, 0, [("c1", "Convolution", "conv2d"), ("c2", "ConvolutionDepthwise", "depthwise_conv2d"),
                        ("p1", "Pooling", "pool2d")]),
    "conv_int8": (1, 6, [("c1", "Convolution", "unchecked"), ("p1", "Pooling", "pool2d"), ("y", "Pooling", "unchecked"),
                         ("x___tr4c1", "ConvertTensor", "unchecked")]),
    "unmapped": (8, 4, [("shp", "Shape", "unchecked"), ("r", "Reshape", "unchecked"), ("s", "Softmax", "softmax"),
                        ("y", "Pooling", "pool2d")]),
    "eltwise": (11, 2, [("s", "BinaryOp", "elementwise_add"), ("mx", "BinaryOp", "elementwise_max"),
                        ("Select12", "Select", "unchecked"), ("y", "Permute", "transpose2")]),
}
for name, (n_map, n_un, ops) in EXPECT.items():
    rc, out, err = run("inspect", os.path.join(DATA, name + ".mnn"))
    check(rc == 0, f"inspect {name}.mnn exits 0 (got {rc}: {err.strip()[-300:]})")
    m = re.search(r"checked locally by cldiff's CPU: (\d+) ops", out)
    u = re.search(r"compared only, unchecked: +(\d+) ops", out)
    check(m and int(m.group(1)) == n_map, f"{name}: {n_map} ops mapped (got {m and m.group(1)})")
    check(u and int(u.group(1)) == n_un, f"{name}: {n_un} ops unchecked (got {u and u.group(1)})")
    for mname, mtype, cop in ops:
        pat = rf"^\s+\d+\s+{re.escape(mname)}\s+{re.escape(mtype)}\s+{re.escape(cop)}\b"
        check(re.search(pat, out, re.M) is not None, f"{name}: op {mname} ({mtype}) -> {cop}")
    check("input 0: x float32" in out, f"{name}: input x listed with its type")

# 2. fully mapped models on cldiff's CPU against onnxruntime
try:
    import h5py
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIP part 2: {e} (the test runs in .venv: scripts/setup.sh)")
    ort = None
FULL = ["conv", "branches", "attention", "ops_binary", "ops_conv_asym", "ops_conv_same", "ops_deconv", "ops_gap", "ops_conv_group",
        "ops_matmul_t", "ops_layernorm", "ops_pool_ceil", "ops_reshape_softmax", "ops_resize_align", "ops_resize_nearest", "ops_unary"]
for name in FULL if ort else ():
    rc, out, err = run("inspect", os.path.join(DATA, name + ".mnn"))
    check(re.search(r"compared only, unchecked: +0 ops", out) is not None, f"{name}: every op maps")
    x = np.load(os.path.join(DATA, name + ".input.npy"))
    ref = ort.InferenceSession(os.path.join(DATA, name + ".onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = run("run", "--backends", "cpu", os.path.join(DATA, name + ".mnn"), "--input",
                           os.path.join(DATA, name + ".input.npy"), "--out", d, "--quiet")
        check(rc == 0, f"run {name}.mnn on cldiff's CPU exits 0 (got {rc}: {err.strip()[-300:]})")
        if rc == 0:
            with h5py.File(os.path.join(d, "dump.h5"), "r") as f:
                last = sorted(f["runs/cpu"].keys())[-1]
                got = f["runs/cpu"][last][()]
            diff = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
            tol = 1e-5 * float(np.abs(ref).max()) + 1e-6
            check(diff <= tol, f"{name}: cldiff CPU vs onnxruntime max |diff| {diff:.3g} <= {tol:.3g} "
                  f"(shape {got.shape} vs {ref.shape})")

# a model with named ops is refused before anything runs, naming them (exit 8)
with tempfile.TemporaryDirectory() as d:
    rc, out, err = run(os.path.join(DATA, "eltwise.mnn"), "--backends", "cpu,opencl", "--out", d)
    check(rc == 8 and "2 MNN ops of this model have no counterpart" in err and "'Select12' (Select" in err
          and "MNN's engines can (--backends mnn-cpu,mnn-opencl" in err,
          f"eltwise.mnn: exit 8 naming its unmapped ops and the engines that run them (got {rc}: {err.strip()[-300:]})")
rc, out, err = run("inspect", os.path.join(DATA, "conv_wq8.mnn"))
check(out.count("weights dequantized from IDSTQuan type 1 (asymmetric") == 3,
      "conv_wq8 (mnnconvert --weightQuantBits 8): its 3 IDST-quantized convolutions decoded (asymmetric scales)")
rc, out, err = run("inspect", os.path.join(DATA, "conv_int8.mnn"))
check("runs in int8 (quantized activations, output scale" in out and "int8 (QuantizedFloatParam)" in out,
      "conv_int8 (the quantization tool): int8 ops named with why")
# the decoded weights are the quantized ones: cldiff's CPU on conv_wq8 is off onnxruntime's float
# model by the quantization (1e-3..2e-2 here), not by 1e-6 (float weights) nor by garbage
if ort:
    x = np.load(os.path.join(DATA, "conv.input.npy"))
    ref = ort.InferenceSession(os.path.join(DATA, "conv.onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = run("run", "--backends", "cpu", os.path.join(DATA, "conv_wq8.mnn"), "--input",
                           os.path.join(DATA, "conv.input.npy"), "--out", d, "--quiet")
        check(rc == 0, f"run conv_wq8.mnn on cldiff's CPU exits 0 (got {rc}: {err.strip()[-300:]})")
        if rc == 0:
            with h5py.File(os.path.join(d, "dump.h5"), "r") as f:
                got = f["runs/cpu"][sorted(f["runs/cpu"].keys())[-1]][()].reshape(ref.shape)
            diff = float(np.abs(got - ref).max())
            check(1e-3 <= diff <= 2e-2, f"conv_wq8: cldiff CPU (dequantized weights) vs onnxruntime (float) "
                  f"{diff:.3g}: the size of 8-bit weight quantization")

# 3. bad files
src = open(os.path.join(DATA, "conv.mnn"), "rb").read()
with tempfile.TemporaryDirectory() as d:
    def bad(tag, data, want_re):
        p = os.path.join(d, tag + ".mnn")
        open(p, "wb").write(data)
        rc, out, err = run("inspect", p)
        check(rc == 3, f"{tag}: exit 3 (got {rc})")
        check(re.search(want_re, err) is not None, f"{tag}: message matches /{want_re}/: {err.strip()[-240:]}")
        check("file offset" in err, f"{tag}: message gives the file offset")

    bad("truncated_11", src[:11], r"smaller than the minimum 12")
    for cut in (len(src) // 4, len(src) // 2, len(src) - 64):
        bad(f"truncated_{cut}", src[:cut], r"corrupt MNN Net FlatBuffer")
    b = bytearray(src)
    b[0:4] = (0x7FFFFFF0).to_bytes(4, "little")
    bad("root_offset", bytes(b), r"root offset \d+ points outside the buffer")
    b = bytearray(src)
    root = int.from_bytes(src[0:4], "little")
    b[root:root + 4] = (-0x10000).to_bytes(4, "little", signed=True)
    bad("vtable_offset", bytes(b), r"vtable \(at \d+\) lies outside the buffer")

    # a 3 KB file claiming 3 million unnamed tensors (found by fuzz_mnn: the loader declared
    # them all, seconds of work, before the damage further on was found)
    huge = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "regressions", "mnn",
                             "tensor_number_huge.mnn"), "rb").read()
    bad("tensor_number_huge", huge, r"tensorNumber 3080192 is more than this 3176-byte file can describe")

    rng = random.Random(28)
    codes = {}
    for i in range(150):
        b = bytearray(src)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        p = os.path.join(d, "flip.mnn")
        open(p, "wb").write(b)
        rc, out, err = run("inspect", p)
        codes[rc] = codes.get(rc, 0) + 1
        if rc not in (0, 3, 8):
            check(False, f"byte flips #{i}: exit {rc} (signal or unexpected code): {err.strip()[-300:]}")
            break
        if rc == 3 and "offset" not in err and "tensor" not in err:
            check(False, f"byte flips #{i}: exit 3 without a place in the message: {err.strip()}")
            break
    check(set(codes) <= {0, 3, 8} and codes.get(3, 0) > 0, f"150 byte-flipped files: exit codes {codes}")

# 4. the format by content: an MNN file without the .mnn extension
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "model.bin")
    open(p, "wb").write(open(os.path.join(DATA, "conv.mnn"), "rb").read())
    rc, out, err = run("inspect", p)
    check(rc == 0 and "MNN model: 7 ops" in out, f"an MNN model named model.bin is read as MNN (exit {rc})")

# .nb still loads
nb = os.path.join(SRC, "testdata", "mobilenet_tiny.nb")
if os.path.exists(nb):
    rc, out, err = run("inspect", nb)
    check(rc == 0 and "MNN model" not in out, f"a .nb model still loads as Paddle-Lite (exit {rc})")

print(f"{len(fails)} failed" if fails else "all passed")
sys.exit(1 if fails else 0)
