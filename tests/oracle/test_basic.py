"""Oracle tests of the "basic" op family (src/backends/cpu/ops_basic_*.c) against
onnxruntime, or against numpy written from docs/nb-format.md §7 where ONNX has no equivalent
(Paddle's axis broadcasting is mapped to ONNX by reshaping Y; floordiv/mod use the Paddle
framework's floor semantics, which numpy shares). Every case runs in fp32 and fp16."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, finish, ort_node  # noqa: E402

rng = np.random.default_rng(20240)
PRECS = ("fp32", "fp16")


def randn(*shape, lo=None):
    a = rng.standard_normal(shape).astype(np.float32)
    return a if lo is None else (np.abs(a) + lo).astype(np.float32)


def aligned(yshape, xrank, axis):
    """Paddle §7.0: Y's dims placed at [axis, axis+rank) of X's rank, 1 elsewhere."""
    if axis == -1:
        axis = xrank - len(yshape)
    return [1] * axis + list(yshape) + [1] * (xrank - axis - len(yshape))


def onnx_binary(op_type, xshape_rank, yshape, axis, swap=False):
    """ORT reference for X op Y with Y reshaped to its aligned shape (or X when swap)."""
    def f(i):
        x, y = i["x"], i["y"]
        if swap:
            x = x.reshape(aligned(x.shape, y.ndim, axis))
        elif x.shape != y.shape:
            y = y.reshape(aligned(y.shape, x.ndim, axis))
        return ort_node(op_type, ["xa", "ya"], ["o"])({"xa": x, "ya": y})["o"]
    return f


def gelu64(v):
    """exact gelu in float64 without cancellation: 0.5 x erfc(-x/sqrt 2)"""
    return 0.5 * v * np.vectorize(math.erfc)(-np.asarray(v, np.float64) / math.sqrt(2))


def gelu_tanh64(v):
    """tanh gelu in float64; 1 + tanh(y) written as 2 / (1 + e^(-2y)) so that deep negative
    inputs keep their (tiny) value instead of cancelling to 0"""
    v = np.asarray(v, np.float64)
    y = math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)
    with np.errstate(over="ignore"):
        return v / (1 + np.exp(-2 * y))


def sum_in(v, prec):
    """The fused activation's input: the op result in the run's storage precision."""
    return (v.astype(np.float16) if prec == "fp16" else v.astype(np.float32)).astype(np.float64)


def elt(op, axis, **attrs):
    return dict(op=op, inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs=dict(axis=axis, **attrs))


# ---------------------------------------------------------------- elementwise + broadcasting
BCAST = [  # (name, X shape, Y shape, axis, Y is the lower rank?)
    ("same shape", (2, 3, 4, 5), (2, 3, 4, 5), -1, False),
    ("axis=1 [C]", (2, 3, 4, 5), (3,), 1, False),
    ("axis=-1 trailing", (2, 3, 4, 5), (4, 5), -1, False),
    ("rank mismatch axis=1 [C,H]", (2, 3, 4, 5), (3, 4), 1, False),
    ("scalar-like [1]", (2, 3, 4, 5), (1,), -1, False),
    ("both sides broadcast", (2, 1, 4, 1), (1, 3, 1, 5), -1, False),
    ("per-channel [1,C,1,1]", (2, 8, 9, 9), (1, 8, 1, 1), -1, False),
    ("X lower rank axis=1", (3,), (2, 3, 4), 1, True),
    ("big per-channel (threads path)", (1, 32, 64, 64), (32,), 1, False),
]
ONNX_OPS = {"elementwise_add": "Add", "elementwise_sub": "Sub", "elementwise_mul": "Mul",
            "elementwise_div": "Div", "elementwise_max": "Max", "elementwise_min": "Min"}
for prec in PRECS:
    for name, xs, ys, axis, swap in BCAST:
        x, y = randn(*xs), randn(*ys)
        for op, onnx_op in ONNX_OPS.items():
            if op == "elementwise_div":
                y = randn(*ys, lo=0.5) * np.where(rng.random(ys) < 0.5, -1, 1).astype(np.float32)
            check(f"{op} {name}", elt(op, axis), {"x": x, "y": y}, onnx_binary(onnx_op, len(xs), ys, axis, swap), prec)
    # pow with positive base
    check("elementwise_pow axis=1", elt("elementwise_pow", 1), {"x": randn(2, 3, 4, lo=0.2), "y": randn(3)},
          onnx_binary("Pow", 3, (3,), 1), prec)
    # floordiv / mod: floor semantics (Paddle framework), numpy agrees
    xf = (randn(4, 6) * 5).astype(np.float32)
    yf = (randn(6, lo=0.5) * np.array([1, -1, 1, -1, 1, -1], np.float32)).astype(np.float32)
    check("elementwise_mod float floor-sign", elt("elementwise_mod", -1), {"x": xf, "y": yf},
          lambda i: np.mod(i["x"], i["y"]), prec)
    check("elementwise_floordiv float", elt("elementwise_floordiv", -1), {"x": xf, "y": yf},
          lambda i: np.floor(i["x"] / i["y"]) if prec == "fp32"
          else np.floor((i["x"] / i["y"]).astype(np.float16).astype(np.float32)), prec)
    # fused activations (§7.4 act_type)
    acts = {"relu": lambda v: np.maximum(v, 0), "abs": np.abs, "tanh": np.tanh,
            "relu6": lambda v: np.clip(v, 0, 6),
            "gelu": lambda v: gelu64(v)}
    for act, f in acts.items():
        x, y = randn(2, 4, 5, 5) * 4, randn(4)
        check(f"fusion_elementwise_add_activation {act}",
              elt("fusion_elementwise_add_activation", 1, act_type=act), {"x": x, "y": y},
              lambda i, f=f: f(sum_in(i["x"] + i["y"].reshape(1, 4, 1, 1), prec)).astype(np.float32), prec)
    x, y = randn(2, 3, 4), randn(2, 3, 4)
    check("fusion_elementwise_mul_activation relu", elt("fusion_elementwise_mul_activation", -1, act_type="relu"),
          {"x": x, "y": y}, lambda i: np.maximum(i["x"] * i["y"], 0), prec)
    check("fusion_elementwise_sub_activation abs", elt("fusion_elementwise_sub_activation", -1, act_type="abs"),
          {"x": x, "y": y}, lambda i: np.abs(i["x"] - i["y"]), prec)
    # elementwise_mul fuse_scale (OpenCL fusion): relu6 clipped at alpha
    xm, ym = randn(1, 3, 4, 4), randn(3)
    # fp16: x*y is rounded to half before the affine step, so the bound scales with |1.5 x y| + 0.25
    x4m = (xm.astype(np.float16).astype(np.float32) * ym.astype(np.float16).astype(np.float32).reshape(1, 3, 1, 1))
    check("elementwise_mul fuse_scale relu6", elt("elementwise_mul", 1, fuse_scale=True, scale=1.5, bias=0.25,
                                                  activation_type="relu6", alpha=2.0),
          {"x": xm, "y": ym},
          lambda i: np.clip(1.5 * (i["x"] * i["y"].reshape(1, 3, 1, 1)) + 0.25, 0, 2.0), prec,
          mag=None if prec == "fp32" else {"o": 1.5 * np.abs(x4m) + 0.25})

# integer elementwise (exact)
xi = rng.integers(-50, 50, (3, 4)).astype(np.int32)
yi = rng.integers(1, 9, (4,)).astype(np.int32) * np.array([1, -1, 1, -1], np.int32)
for op, f in [("elementwise_add", np.add), ("elementwise_sub", np.subtract), ("elementwise_mul", np.multiply),
              ("elementwise_max", np.maximum), ("elementwise_min", np.minimum),
              ("elementwise_floordiv", np.floor_divide), ("elementwise_mod", np.mod),
              ("elementwise_div", lambda a, b: np.trunc(a / b).astype(np.int32))]:
    check(f"{op} int32", elt(op, -1), {"x": xi, "y": yi}, lambda i, f=f: f(i["x"], i["y"]), "fp32")
    check(f"{op} int64", elt(op, 1), {"x": xi.astype(np.int64).reshape(3, 4, 1), "y": yi.astype(np.int64)},
          lambda i, f=f: f(i["x"], i["y"].reshape(1, 4, 1)), "fp32")
# error paths: exit code + message
check("elementwise_add incompatible broadcast", elt("elementwise_add", 1), {"x": randn(1, 3, 4), "y": randn(4)}, None,
      "fp32", expect_error=(3, "do not broadcast with axis 1"))
check("elementwise_add bad axis", elt("elementwise_add", 3), {"x": randn(1, 3, 4), "y": randn(4)}, None,
      "fp32", expect_error=(3, "axis 3 cannot place"))
check("elementwise_div int by zero", elt("elementwise_div", -1),
      {"x": xi, "y": np.array([1, 0, 2, 3], np.int32)}, None, "fp32", expect_error=(3, "division by zero"))


# ---------------------------------------------------------------- activations
def un(op, **attrs):
    return dict(op=op, inputs=[("X", "x")], outputs=[("Out", "o")], attrs=attrs)


def sigm(v):
    return 1 / (1 + np.exp(-v.astype(np.float64)))


xa = (randn(2, 3, 8, 8) * 4).astype(np.float32)
xpos = randn(2, 3, 8, 8, lo=0.05)
erf = np.vectorize(math.erf)
for prec in PRECS:
    check("relu", un("relu"), {"x": xa}, ort_node("Relu", ["x"], ["o"]), prec)
    check("relu6 threshold 4", un("relu6", threshold=4.0), {"x": xa}, lambda i: np.clip(i["x"], 0, 4), prec)
    check("leaky_relu", un("leaky_relu", alpha=0.1), {"x": xa}, ort_node("LeakyRelu", ["x"], ["o"], alpha=0.1), prec)
    # float64 numpy, not ORT: MLAS's logistic approximation loses relative accuracy in the tails
    check("sigmoid", un("sigmoid"), {"x": xa}, lambda i: sigm(i["x"]), prec)
    check("tanh", un("tanh"), {"x": xa}, ort_node("Tanh", ["x"], ["o"]), prec)
    check("swish beta 1.5", un("swish", beta=1.5), {"x": xa}, lambda i: i["x"] * sigm(1.5 * i["x"]), prec)
    check("silu", un("silu"), {"x": xa}, lambda i: i["x"] * sigm(i["x"]), prec)
    check("hard_swish default", un("hard_swish"), {"x": xa}, ort_node("HardSwish", ["x"], ["o"], opset=14), prec)
    check("hard_swish custom", un("hard_swish", threshold=5.0, scale=7.0, offset=2.0), {"x": xa},
          lambda i: i["x"] * np.clip(i["x"] + 2.0, 0, 5.0) / 7.0, prec)
    check("hard_sigmoid 1/6", un("hard_sigmoid", slope=1 / 6, offset=0.5), {"x": xa},
          ort_node("HardSigmoid", ["x"], ["o"], alpha=1 / 6, beta=0.5), prec)
    # ORT's erf carries a few u32 of absolute error, scaled by 0.5|x| in gelu: mag = |x|
    check("gelu exact vs ORT (|x| <= 3)", un("gelu"), {"x": np.clip(xa, -3, 3)}, ort_node("Gelu", ["x"], ["o"], opset=20),
          prec, k=2, mag={"o": np.abs(np.clip(xa, -3, 3))})
    check("gelu exact tails vs float64", un("gelu"), {"x": xa}, lambda i: gelu64(i["x"]), prec)
    check("gelu tanh approx vs float64", un("gelu", approximate=True), {"x": xa}, lambda i: gelu_tanh64(i["x"]), prec)
    check("exp", un("exp"), {"x": xa / 2}, ort_node("Exp", ["x"], ["o"]), prec)
    check("sqrt", un("sqrt"), {"x": xpos}, ort_node("Sqrt", ["x"], ["o"]), prec)
    check("abs", un("abs"), {"x": xa}, ort_node("Abs", ["x"], ["o"]), prec)
    check("log", un("log"), {"x": xpos}, ort_node("Log", ["x"], ["o"]), prec)
    check("rsqrt", un("rsqrt"), {"x": xpos}, lambda i: 1 / np.sqrt(i["x"].astype(np.float64)), prec)
    check("square", un("square"), {"x": xa}, lambda i: i["x"] * i["x"], prec)
    check("reciprocal", un("reciprocal"), {"x": xpos}, ort_node("Reciprocal", ["x"], ["o"]), prec)
    check("floor", un("floor"), {"x": xa}, ort_node("Floor", ["x"], ["o"]), prec)
    check("ceil", un("ceil"), {"x": xa}, ort_node("Ceil", ["x"], ["o"]), prec)
    check("erf", un("erf"), {"x": xa}, ort_node("Erf", ["x"], ["o"]), prec)
    check("sign", un("sign"), {"x": xa}, ort_node("Sign", ["x"], ["o"]), prec)
    check("elu", un("elu", alpha=0.7), {"x": xa}, ort_node("Elu", ["x"], ["o"], alpha=0.7), prec)
    check("thresholded_relu", un("thresholded_relu", threshold=0.5), {"x": xa},
          ort_node("ThresholdedRelu", ["x"], ["o"], alpha=0.5), prec)
    check("softplus", un("softplus"), {"x": xa}, ort_node("Softplus", ["x"], ["o"]), prec)
    check("mish", un("mish"), {"x": xa}, ort_node("Mish", ["x"], ["o"], opset=18), prec)
    check("softsign", un("softsign"), {"x": xa}, ort_node("Softsign", ["x"], ["o"]), prec)
    check("clip attrs", un("clip", min=-1.0, max=2.5), {"x": xa}, lambda i: np.clip(i["x"], -1, 2.5), prec)
    check("dropout downgrade_in_infer", un("dropout", dropout_prob=0.3), {"x": xa},
          lambda i: i["x"] * np.float32(0.7) if prec == "fp32" else
          (i["x"].astype(np.float16) * np.float16(0.7)).astype(np.float32), prec)
    check("dropout upscale_in_train", un("dropout", dropout_prob=0.3, dropout_implementation="upscale_in_train"),
          {"x": xa}, lambda i: i["x"], prec)
    # prelu: all / channel / element
    for mode, ashape, rs in [("all", (1,), (1, 1, 1, 1)), ("channel", (3,), (1, 3, 1, 1)),
                             ("element", (3, 8, 8), (1, 3, 8, 8))]:
        al = (rng.random(ashape) * 0.5).astype(np.float32)
        check(f"prelu {mode}", dict(op="prelu", inputs=[("X", "x"), ("Alpha", "a", "param")], outputs=[("Out", "o")],
                                    attrs=dict(mode=mode)),
              {"x": xa, "a": al}, lambda i, rs=rs: ort_node("PRelu", ["x", "s"], ["o"])({"x": i["x"], "s": i["a"].reshape(rs)})["o"],
              prec)
    # scale (§7.10)
    check("scale bias_after_scale", un("scale", scale=0.75, bias=-0.5, bias_after_scale=True), {"x": xa},
          lambda i: i["x"] * 0.75 - 0.5, prec)
    check("scale bias_before_scale", un("scale", scale=0.75, bias=-0.5, bias_after_scale=False), {"x": xa},
          lambda i: (i["x"] - 0.5) * 0.75, prec, mag={"o": (np.abs(xa) + 0.5) * 0.75})
    check("scale + relu6 alpha 3", un("scale", scale=2.0, bias=0.5, bias_after_scale=True, activation_type="relu6",
                                      alpha=3.0), {"x": xa}, lambda i: np.clip(2 * i["x"] + 0.5, 0, 3), prec)
    check("scale + leaky_relu", un("scale", scale=2.0, bias=0.0, bias_after_scale=True, activation_type="leaky_relu",
                                   alpha=0.2), {"x": xa}, lambda i: np.where(i["x"] < 0, 0.4 * i["x"], 2 * i["x"]), prec)
check("scale int32", un("scale", scale=3.0, bias=1.0, bias_after_scale=True), {"x": xi},
      lambda i: i["x"] * 3 + 1, "fp32")
check("prelu channel bad alpha", dict(op="prelu", inputs=[("X", "x"), ("Alpha", "a", "param")], outputs=[("Out", "o")],
                                      attrs=dict(mode="channel")),
      {"x": xa, "a": np.ones(4, np.float32)}, None, "fp32", expect_error=(3, "Alpha has 4 values but X has 3 channels"))
check("scale missing bias_after_scale", un("scale", scale=1.0, bias=0.0), {"x": xa}, None, "fp32",
      expect_error=(3, "bias_after_scale"))


# ---------------------------------------------------------------- identity, calib
for op in ("io_copy", "io_copy_once", "layout", "layout_once"):
    check(op, dict(op=op, inputs=[("Input", "x")], outputs=[("Out", "o")], attrs={}), {"x": xa},
          lambda i: i["x"], "fp32")


def fakeq(v, s):
    d = (np.asarray(v, np.float32) / np.float32(s)).astype(np.float64)  # x / scale in float32, as specified
    q = np.clip(np.sign(d) * np.floor(np.abs(d) + 0.5), -127, 127)  # round half away from zero
    return (q * s).astype(np.float32)


xq = np.concatenate([xa.ravel(), np.array([0.0185, -0.0185, 0.0555, 100, -100], np.float32)])
for prec in PRECS:
    s = 0.037
    check("calib fp32_to_int8 = fake quantisation in float",
          dict(op="calib", inputs=[("Input", "x")], outputs=[("Out", "o")],
               attrs={"scale": s, "__@kernel_type_attr@__": "calib/fp32_to_int8/4/2/1"}),
          {"x": xq}, lambda i: fakeq(i["x"], s), prec)
    check("calib int8_to_fp32 on a float activation = identity",
          dict(op="calib", inputs=[("Input", "x")], outputs=[("Out", "o")],
               attrs={"scale": s, "__@kernel_type_attr@__": "calib/int8_to_fp32/4/1/1"}),
          {"x": xq}, lambda i: i["x"], prec)
check("calib fp32_to_int32 truncates", dict(op="calib", inputs=[("Input", "x")], outputs=[("Out", "o")],
                                             attrs={"__@kernel_type_attr@__": "calib/fp32_to_int32/4/3/1"}),
      {"x": np.array([1.7, -1.7, 3.0, -0.2], np.float32)}, lambda i: np.array([1, -1, 3, 0], np.int32), "fp32")
check("calib int64_to_int32", dict(op="calib", inputs=[("Input", "x")], outputs=[("Out", "o")],
                                    attrs={"__@kernel_type_attr@__": "calib/int64_to_int32/4/3/1"}),
      {"x": np.array([5, -7, 1 << 20], np.int64)}, lambda i: i["x"].astype(np.int32), "fp32")
# scale 0 is accepted as Paddle-Lite does (docs/int8.md): x * (1/0) saturates to +-127 (0 * inf = NaN -> -127),
# and the int8 value reads back as q * 0 = 0
check("calib fp32_to_int8 scale 0", dict(op="calib", inputs=[("Input", "x")], outputs=[("Out", "o")],
                                         attrs={"scale": 0.0, "__@kernel_type_attr@__": "calib/fp32_to_int8/4/2/1"}),
      {"x": xq}, lambda i: np.zeros_like(i["x"]), "fp32")

# ---------------------------------------------- interpolation (docs/nb-format.md §7.20)
xi4 = randn(2, 3, 5, 7)
INTERP = [  # (name, op, attrs, onnx Resize kwargs, output size)
    ("bilinear_v2 align_corners", "bilinear_interp_v2", dict(align_corners=True, out_h=9, out_w=11),
     dict(mode="linear", coordinate_transformation_mode="align_corners"), (9, 11)),
    ("bilinear_v2 align_mode=0 (half_pixel) up", "bilinear_interp_v2",
     dict(align_corners=False, align_mode=0, out_h=10, out_w=13),
     dict(mode="linear", coordinate_transformation_mode="half_pixel"), (10, 13)),
    ("bilinear_v2 align_mode=0 down", "bilinear_interp_v2", dict(align_corners=False, align_mode=0, out_h=3, out_w=4),
     dict(mode="linear", coordinate_transformation_mode="half_pixel"), (3, 4)),
    ("bilinear_v2 align_mode=1 (asymmetric)", "bilinear_interp_v2",
     dict(align_corners=False, align_mode=1, out_h=10, out_w=14),
     dict(mode="linear", coordinate_transformation_mode="asymmetric"), (10, 14)),
    ("bilinear v1 scale attr 2", "bilinear_interp", dict(align_corners=False, align_mode=0, scale=2.0),
     dict(mode="linear", coordinate_transformation_mode="half_pixel"), (10, 14)),
    ("nearest_v2 asymmetric floor x2", "nearest_interp_v2", dict(align_corners=False, out_h=10, out_w=14),
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), (10, 14)),
    ("nearest_v2 scale attr [2,2]", "nearest_interp_v2", dict(align_corners=False, scale=[2.0, 2.0]),
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), (10, 14)),
    ("nearest v1 down x0.5", "nearest_interp", dict(align_corners=False, out_h=2, out_w=3),
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), (2, 3)),
    ("nearest_v2 align_corners (round)", "nearest_interp_v2", dict(align_corners=True, out_h=9, out_w=13),
     dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"), (9, 13)),
]


def resize_ref(size, kw):
    def f(i):
        x = i["x"]
        sizes = np.array([x.shape[0], x.shape[1], size[0], size[1]], np.int64)
        return ort_node("Resize", ["x", "", "", "sizes"], ["o"], consts={"sizes": sizes}, **kw)(i)["o"]
    return f


def coord_mag(size, kw):
    """Magnitude for the bound: the blend of |x|, widened by the source-coordinate rounding.
    Paddle computes src = d * (in/out) in float while ORT uses d / (out/in); the two differ
    by about u32 * src (src < max(H, W)), moving each weight by that much against a
    neighbour difference of at most 2 max|x|."""
    return resize_ref(size, kw)({"x": np.abs(xi4)}) * (1 + 2 * max(xi4.shape[2:]))


for prec in PRECS:
    for name, op, attrs, kw, size in INTERP:
        check(name, dict(op=op, inputs=[("X", "x")], outputs=[("Out", "o")], attrs=dict(interp_method=op.split("_")[0],
                                                                                      **attrs)),
              {"x": xi4}, resize_ref(size, kw), prec, k=4, mag={"o": coord_mag(size, kw)})
    # OutSize tensor (known at plan time: a parameter) overrides out_h/out_w
    check("bilinear_v2 OutSize tensor", dict(op="bilinear_interp_v2", inputs=[("X", "x"), ("OutSize", "sz", "param")],
                                             outputs=[("Out", "o")],
                                             attrs=dict(align_corners=True, out_h=3, out_w=3)),
          {"x": xi4, "sz": np.array([9, 11], np.int32)},
          lambda i: resize_ref((9, 11), dict(mode="linear", coordinate_transformation_mode="align_corners"))({"x": i["x"]}),
          prec, k=4, mag={"o": coord_mag((9, 11), dict(mode="linear", coordinate_transformation_mode="align_corners"))})
check("nearest_interp no size", dict(op="nearest_interp", inputs=[("X", "x")], outputs=[("Out", "o")],
                                     attrs=dict(align_corners=False)), {"x": xi4}, None, "fp32",
      expect_error=(3, "is not positive"))

# ---------------------------------------------------------------- pad2d / pad3d
x4 = randn(2, 3, 5, 6)
for prec in PRECS:
    for mode, omode in [("constant", "constant"), ("reflect", "reflect"), ("edge", "edge")]:
        pads = [1, 2, 3, 1]  # top, bottom, left, right
        check(f"pad2d {mode}", dict(op="pad2d", inputs=[("X", "x")], outputs=[("Out", "o")],
                                    attrs=dict(paddings=pads, mode=mode, pad_value=0.5)),
              {"x": x4}, lambda i, om=omode: ort_node("Pad", ["x", "p", "v"], ["o"], mode=om,
                                                      consts={"p": np.array([0, 0, 1, 3, 0, 0, 2, 1], np.int64),
                                                              "v": np.array(0.5 if om == "constant" else 0, np.float32)})(i)["o"],
              prec)
    x5 = randn(1, 2, 3, 4, 5)
    for mode, npm in [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        pads = [1, 2, 2, 1, 1, 2]  # left, right, top, bottom, front, back
        width = [(0, 0), (0, 0), (1, 2), (2, 1), (1, 2)]
        check(f"pad3d {mode}", dict(op="pad3d", inputs=[("X", "x")], outputs=[("Out", "o")],
                                    attrs=dict(paddings=pads, mode=mode, value=-1.5)),
              {"x": x5}, lambda i, m=npm, w=width: (np.pad(i["x"], w, mode=m, constant_values=-1.5) if m == "constant"
                                                    else np.pad(i["x"], w, mode=m)), prec)
check("pad2d reflect too wide", dict(op="pad2d", inputs=[("X", "x")], outputs=[("Out", "o")],
                                     attrs=dict(paddings=[5, 0, 0, 0], mode="reflect")), {"x": x4}, None, "fp32",
      expect_error=(3, "must be smaller than dim 2"))

# ---------------------------------------------------------------- shuffle_channel, arg_max
xs6 = randn(2, 6, 3, 4)
for prec in PRECS:
    check("shuffle_channel group 3", dict(op="shuffle_channel", inputs=[("X", "x")], outputs=[("Out", "o")],
                                          attrs=dict(group=3)), {"x": xs6},
          lambda i: i["x"].reshape(2, 3, 2, 3, 4).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 4), prec)
    for axis, keep in [(1, False), (-1, True), (0, False)]:
        check(f"arg_max axis {axis} keepdims {keep}", dict(op="arg_max", inputs=[("X", "x")], outputs=[("Out", "o")],
                                                           attrs=dict(axis=axis, keepdims=keep, dtype=3)),
              {"x": xs6}, ort_node("ArgMax", ["x"], ["o"], axis=axis, keepdims=int(keep)), prec)
check("arg_max int32 out flatten", dict(op="arg_max", inputs=[("X", "x")], outputs=[("Out", "o")],
                                        attrs=dict(axis=0, flatten=True, dtype=2)), {"x": xs6},
      lambda i: np.array([np.argmax(i["x"])], np.int32), "fp32")
finish()
