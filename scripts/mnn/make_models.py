#!/usr/bin/env python3
"""Makes small ONNX models and converts them to .mnn with the PyPI `mnn` wheel's mnnconvert
(docs/mnn.md). Run in .venv-mnn (scripts/setup_mnn.sh):

    .venv-mnn/bin/python scripts/mnn/make_models.py OUT_DIR [--only NAME,...]

Writes OUT_DIR/<name>.onnx and OUT_DIR/<name>.mnn for every model below, and
OUT_DIR/<name>.input.npy (a fixed random input, seed 0). Models:
  conv      conv 3x3 + relu + depthwise 3x3 + relu6(clip) + conv 1x1 + maxpool + avgpool
  branches  conv, two branches concatenated, resize (bilinear x2), softmax over channels
  matmul    reshape to 2-D, MatMul with a constant, add bias, sigmoid
  eltwise   add / mul / sub / max of two convs, prelu, transpose (permute)
  attention 1x1 convs as q, k, v; reshape, transpose, MatMul of two activations, softmax, add
  unmapped  conv, a reshape to [N, C, -1] by a shape computed at run time (Shape, Slice, Concat:
            ops cldiff does not map), softmax over the last axis, the reshape back, max pooling
  argmax    ArgMax over the channels of a [1,5,8,8] input (the repro of MNN's OpenCL buffer
            ArgMax, docs/mnn-findings.md); argmax_odd the same on [1,5,7,7] (the control)
  conv_wq8  conv.onnx converted with --weightQuantBits 8 (IDST-quantized weights)
  conv_int8 conv.mnn fully quantized by the wheel's quantization tool (int8 weights and activations,
            KL calibration on 8 seeded images drawn like the test input: N(0,1) as pixels
            127.5 + 42.5 x; MNN's CPU then runs int8 kernels, its OpenCL float ones)
  ops_*     one small model per mapped op variant (asymmetric pads, SAME, groups, leaky relu,
            transposed conv, ceil pooling, padding counted, global pooling, clip, unary and
            binary ops with broadcasting, nearest and align-corners resize, reshape 0/-1,
            MatMul of a transpose, layer normalization): `--only ops` makes only these
"""
import argparse
import json
import os
import struct
import zlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def W(name, shape, rng, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def model(nodes, inits, in_shape, outs, name):
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="cldiff-mnn")
    m.ir_version = 7
    return m


def m_conv(rng):
    n = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8,
                         strides=[2, 2]),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["c3"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p1"], ["y"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                         count_include_pad=0),
    ]
    i = [W("w1", (8, 3, 3, 3), rng), W("b1", (8,), rng), W("w2", (8, 1, 3, 3), rng), W("b2", (8,), rng),
         W("w3", (16, 8, 1, 1), rng), W("b3", (16,), rng),
         numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
         numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    return model(n, i, [1, 3, 32, 32], ["y"], "conv"), (1, 3, 32, 32)


def m_branches(rng):
    n = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["a"], kernel_shape=[1, 1]),
        helper.make_node("Conv", ["r1", "w3", "b3"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
        helper.make_node("Resize", ["cat", "", "scales"], ["up"], mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Softmax", ["up"], ["y"], axis=1),
    ]
    i = [W("w1", (8, 3, 3, 3), rng), W("b1", (8,), rng), W("w2", (4, 8, 1, 1), rng), W("b2", (4,), rng),
         W("w3", (4, 8, 3, 3), rng), W("b3", (4,), rng),
         numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    return model(n, i, [1, 3, 16, 16], ["y"], "branches"), (1, 3, 16, 16)


def m_matmul(rng):
    n = [
        helper.make_node("Reshape", ["x", "shp"], ["x2"]),
        helper.make_node("MatMul", ["x2", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["ab"]),
        helper.make_node("Sigmoid", ["ab"], ["s"]),
        helper.make_node("MatMul", ["s", "w2"], ["y"]),
    ]
    i = [numpy_helper.from_array(np.array([4, 48], np.int64), "shp"), W("w", (48, 32), rng), W("b", (32,), rng),
         W("w2", (32, 10), rng)]
    return model(n, i, [4, 3, 4, 4], ["y"], "matmul"), (4, 3, 4, 4)


def m_eltwise(rng):
    n = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w2", "b2"], ["b"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Mul", ["s", "a"], ["m"]),
        helper.make_node("Sub", ["m", "b"], ["d"]),
        helper.make_node("Max", ["d", "a"], ["mx"]),
        helper.make_node("PRelu", ["mx", "slope"], ["p"]),
        helper.make_node("Transpose", ["p"], ["y"], perm=[0, 2, 3, 1]),
    ]
    i = [W("w1", (6, 3, 3, 3), rng), W("b1", (6,), rng), W("w2", (6, 3, 1, 1), rng), W("b2", (6,), rng),
         numpy_helper.from_array((rng.random((6, 1, 1)) * 0.5).astype(np.float32), "slope")]
    return model(n, i, [1, 3, 12, 12], ["y"], "eltwise"), (1, 3, 12, 12)


def m_attention(rng):
    # scores = softmax(q k^T / 4), out = scores v, with q, k, v 1x1 convolutions of x reshaped to
    # [N, C, HW]: MatMul of two activations (MNN's MatMul / BatchMatMul with two inputs)
    n = [
        helper.make_node("Conv", ["x", "wq", "bq"], ["q4"], kernel_shape=[1, 1]),
        helper.make_node("Conv", ["x", "wk", "bk"], ["k4"], kernel_shape=[1, 1]),
        helper.make_node("Conv", ["x", "wv", "bv"], ["v4"], kernel_shape=[1, 1]),
        helper.make_node("Reshape", ["q4", "s3"], ["q"]),
        helper.make_node("Reshape", ["k4", "s3"], ["k"]),
        helper.make_node("Reshape", ["v4", "s3"], ["v"]),
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["qt", "k"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("Transpose", ["p"], ["pt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["v", "pt"], ["o"]),
        helper.make_node("Reshape", ["o", "s4"], ["o4"]),
        helper.make_node("Add", ["o4", "x"], ["y"]),
    ]
    i = [W("wq", (8, 8, 1, 1), rng), W("bq", (8,), rng), W("wk", (8, 8, 1, 1), rng), W("bk", (8,), rng),
         W("wv", (8, 8, 1, 1), rng), W("bv", (8,), rng),
         numpy_helper.from_array(np.array([1, 8, 36], np.int64), "s3"),
         numpy_helper.from_array(np.array([1, 8, 6, 6], np.int64), "s4"),
         numpy_helper.from_array(np.array(0.25, np.float32), "scale")]
    return model(n, i, [1, 8, 6, 6], ["y"], "attention"), (1, 8, 6, 6)


def single(op_nodes, inits, shape, name):
    return model(op_nodes, inits, list(shape), ["y"], name), tuple(shape)


def op_models():
    """One small model per mapped op variant (the `ops_*` models): each checks one mapping of
    src/model/mnn_map.c against onnxruntime (tests/mnn/test_mnn_reader.py)."""
    rng = np.random.default_rng(7)
    f = numpy_helper.from_array
    m = {}
    m["ops_conv_asym"] = single([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[0, 1, 2, 1],
                                                  strides=[2, 1], dilations=[1, 2])],
                                [W("w", (4, 3, 3, 3), rng)], (1, 3, 11, 12), "ops_conv_asym")
    m["ops_conv_same"] = single([helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                                                  auto_pad="SAME_UPPER", strides=[2, 2])],
                                [W("w", (4, 3, 3, 3), rng), W("b", (4,), rng)], (1, 3, 9, 10), "ops_conv_same")
    m["ops_conv_group"] = single([helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1], group=2),
                                  helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1)],
                                 [W("w", (6, 2, 1, 1), rng)], (1, 4, 5, 5), "ops_conv_group")
    m["ops_deconv"] = single([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                                               strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
                             [W("w", (4, 3, 3, 3), rng), W("b", (3,), rng)], (1, 4, 6, 6), "ops_deconv")
    m["ops_pool_ceil"] = single([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                                                  ceil_mode=1),
                                 helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1],
                                                  count_include_pad=1)], [], (1, 3, 10, 10), "ops_pool_ceil")
    m["ops_gap"] = single([helper.make_node("GlobalAveragePool", ["x"], ["g"]),
                           helper.make_node("Clip", ["g", "lo", "hi"], ["y"])],
                          [f(np.array(-0.2, np.float32), "lo"), f(np.array(0.3, np.float32), "hi")], (1, 5, 7, 6),
                          "ops_gap")
    m["ops_unary"] = single([helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Sqrt", ["a"], ["s"]),
                             helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Tanh", ["x"], ["t"]),
                             helper.make_node("Sigmoid", ["x"], ["h"]), helper.make_node("Add", ["s", "e"], ["u"]),
                             helper.make_node("Mul", ["t", "h"], ["v"]), helper.make_node("Sub", ["u", "v"], ["y"])],
                            [], (1, 4, 5, 6), "ops_unary")
    m["ops_binary"] = single([helper.make_node("Div", ["x", "d"], ["a"]), helper.make_node("Min", ["a", "x"], ["b"]),
                              helper.make_node("Max", ["b", "c"], ["y"])],
                             [f((rng.random((1, 4, 1, 1)) + 0.5).astype(np.float32), "d"),
                              f((rng.standard_normal((5, 6)) * 0.3).astype(np.float32), "c")], (2, 4, 5, 6),
                             "ops_binary")
    m["ops_resize_nearest"] = single([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest",
                                                       coordinate_transformation_mode="asymmetric",
                                                       nearest_mode="floor")],
                                     [f(np.array([1, 1, 2, 2], np.float32), "sc")], (1, 3, 5, 4), "ops_resize_nearest")
    m["ops_resize_align"] = single([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear",
                                                     coordinate_transformation_mode="align_corners")],
                                   [f(np.array([1, 1, 2, 2], np.float32), "sc")], (1, 3, 5, 4), "ops_resize_align")
    m["ops_reshape_softmax"] = single([helper.make_node("Reshape", ["x", "s"], ["r"]),
                                       helper.make_node("Softmax", ["r"], ["y"], axis=1)],
                                      [f(np.array([0, -1, 4], np.int64), "s")], (2, 3, 4, 4), "ops_reshape_softmax")
    # LayerNormalization over the last two axes (opset 17), with scale and bias: MNN's LayerNorm
    ln, _ = single([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-2, epsilon=1e-5)],
                   [W("g", (4, 6), rng), W("b", (4, 6), rng)], (2, 3, 4, 6), "ops_layernorm")
    ln.opset_import[0].version = 17
    m["ops_layernorm"] = (ln, (2, 3, 4, 6))
    m["ops_matmul_t"] = single([helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                                helper.make_node("MatMul", ["xt", "x"], ["y"])], [], (2, 5, 3), "ops_matmul_t")
    return m


def m_unmapped(rng):
    n = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["c"], ["shp"]),
        helper.make_node("Slice", ["shp", "s0", "s2"], ["nc"]),
        helper.make_node("Concat", ["nc", "m1"], ["flat"], axis=0),
        helper.make_node("Reshape", ["c", "flat"], ["r"]),
        helper.make_node("Softmax", ["r"], ["s"], axis=-1),
        helper.make_node("Reshape", ["s", "shp"], ["b"]),
        helper.make_node("MaxPool", ["b"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    i = [W("w1", (8, 3, 3, 3), rng), W("b1", (8,), rng),
         numpy_helper.from_array(np.array([0], np.int64), "s0"),
         numpy_helper.from_array(np.array([2], np.int64), "s2"),
         numpy_helper.from_array(np.array([-1], np.int64), "m1")]
    return model(n, i, [1, 3, 16, 16], ["y"], "unmapped"), (1, 3, 16, 16)


def m_argmax(rng, h=8, w=8, name="argmax"):
    """ArgMax over the channels of the input alone (keepdims 0: one MNN op): the repro of MNN's OpenCL buffer
    ArgMax (docs/mnn-findings.md). H x W = 64 is a multiple of 4, so MNN takes its argmax_v4_buf
    kernel; argmax_odd (7 x 7 = 49) takes argmax_buf and is the control."""
    n = [helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)]
    return model(n, [], [1, 5, h, w], ["y"], name), (1, 5, h, w)


MODELS = {"attention": m_attention, "conv": m_conv, "branches": m_branches, "matmul": m_matmul, "eltwise": m_eltwise,
          "unmapped": m_unmapped, "argmax": m_argmax,
          "argmax_odd": lambda rng: m_argmax(rng, 7, 7, "argmax_odd")}
# models converted again from another model's ONNX with more mnnconvert options: name -> (source, options)
VARIANTS = {"conv_wq8": ("conv", ["--weightQuantBits", "8"])}


def png(path, a):
    """An 8-bit RGB PNG of a (h, w, 3) uint8 array (no imaging package needed)."""
    h, w, _ = a.shape
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def quantize(src, dst, work, size, images=None, mean=(127.5,) * 3, normal=(1 / 42.5,) * 3):
    """The wheel's quantization tool (its `mnnquant` script hands the tool its arguments the wrong
    way in MNN 3.6.1, so the tool is called as the script means to: an argv list). images: (h, w, 3)
    uint8 calibration pictures (default: 8 seeded ones drawn as 127.5 + 42.5 N(0,1)); size: (h, w)
    or one number; the tool feeds the model (pixel - mean) x normal."""
    img = os.path.join(work, "calib")
    os.makedirs(img, exist_ok=True)
    h, w = (size, size) if isinstance(size, int) else size
    if images is None:
        rng = np.random.default_rng(1)
        images = [np.clip(127.5 + 42.5 * rng.standard_normal((h, w, 3)), 0, 255).round().astype(np.uint8)
                  for _ in range(8)]
    for i, px in enumerate(images):
        png(os.path.join(img, f"i{i}.png"), px)
    cfg = os.path.join(work, "quant.json")
    json.dump({"format": "RGB", "mean": list(mean), "normal": list(normal), "width": w, "height": h,
               "path": img + "/", "used_image_num": len(images), "feature_quantize_method": "KL",
               "weight_quantize_method": "MAX_ABS"}, open(cfg, "w"))
    code = ("import sys, _tools; _tools.mnnquant(['mnnquant', sys.argv[1], sys.argv[2], sys.argv[3]])")
    return subprocess.run([sys.executable, "-c", code, src, dst, cfg], capture_output=True, text=True)


def mnnconvert():
    exe = os.path.join(os.path.dirname(sys.executable), "mnnconvert")
    return exe if os.access(exe, os.X_OK) else shutil.which("mnnconvert")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    conv = mnnconvert()
    if not conv:
        sys.exit("mnnconvert not found: run scripts/setup_mnn.sh (it installs the PyPI mnn wheel in .venv-mnn)")
    only = [s for s in a.only.split(",") if s]
    todo = [(n, fn) for n, fn in MODELS.items()] + [(n, v) for n, v in op_models().items()]
    for name, fn in todo:
        if only and name not in only and not ("ops" in only and name.startswith("ops_")):
            continue
        rng = np.random.default_rng(sum(map(ord, name)))
        m, shape = fn(rng) if callable(fn) else fn
        on = os.path.join(a.out, name + ".onnx")
        mn = os.path.join(a.out, name + ".mnn")
        onnx.save(m, on)
        np.save(os.path.join(a.out, name + ".input.npy"),
                np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        r = subprocess.run([conv, "-f", "ONNX", "--modelFile", on, "--MNNModel", mn, "--bizCode", "cldiff"],
                           capture_output=True, text=True)
        if r.returncode or not os.path.exists(mn):
            sys.exit(f"mnnconvert failed for {name} (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        print(f"{name}: {mn} ({os.path.getsize(mn)} bytes)")
    for name, (src, opts) in VARIANTS.items():
        on, mn = os.path.join(a.out, src + ".onnx"), os.path.join(a.out, name + ".mnn")
        if (only and name not in only) or not os.path.exists(on):
            continue
        r = subprocess.run([conv, "-f", "ONNX", "--modelFile", on, "--MNNModel", mn, "--bizCode", "cldiff"] + opts,
                           capture_output=True, text=True)
        if r.returncode or not os.path.exists(mn):
            sys.exit(f"mnnconvert failed for {name} (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        print(f"{name}: {mn} ({os.path.getsize(mn)} bytes, {' '.join(opts)})")
    src, dst = os.path.join(a.out, "conv.mnn"), os.path.join(a.out, "conv_int8.mnn")
    if os.path.exists(src) and (not only or "conv_int8" in only):
        work = os.path.join(a.out, "conv_int8.work")
        r = quantize(src, dst, work, 32)
        shutil.rmtree(work, ignore_errors=True)
        if os.path.exists(dst + ".json"):
            os.remove(dst + ".json")
        if r.returncode or not os.path.exists(dst):
            sys.exit(f"the quantization tool failed for conv_int8 (exit {r.returncode}):\n{r.stdout[-2000:]}"
                     f"{r.stderr[-2000:]}")
        print(f"conv_int8: {dst} ({os.path.getsize(dst)} bytes, quantized)")


if __name__ == "__main__":
    main()
