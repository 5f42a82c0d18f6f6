"""Oracle tests for the "nn" op family (conv, conv_transpose, pool2d, fc, mul, matmul,
matmul_v2, batch/layer/instance norm, softmax, log_softmax) on the CPU backend, fp32 and
fp16, against onnxruntime single-node models or, where ONNX has no equivalent (adaptive
pooling, fc/mul flattening, Paddle matmul broadcasting), numpy written from docs/nb-format.md §7.

Bounds (harness.py): k = terms summed per output, mag = the same op applied to |inputs|
(so a GEMM accumulating in half is held to k * u16 * sum|terms|, not to max|r|)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, finish, ort_node  # noqa: E402

rng = np.random.default_rng(2024)
PRECS = ("fp32", "fp16")


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def f64(a):
    return np.asarray(a, dtype=np.float64)


# ------------------------------------------------------------------ conv helpers

def pads4(p):
    """Paddle paddings (2 or 4) -> [top, bottom, left, right]."""
    return [p[0], p[0], p[1], p[1]] if len(p) == 2 else list(p)


def same_pads(h, w, k, s):
    out = []
    for i, n in enumerate((h, w)):
        o = -(-n // s[i])
        tot = max((o - 1) * s[i] + k[i] - n, 0)
        out += [tot // 2, tot - tot // 2]
    return out


def conv_ref(x, w, b, strides, p4, dil, groups):
    """ONNX Conv (pads order: top, left, bottom, right)."""
    ins = ["x", "w"] + (["b"] if b is not None else [])
    node = ort_node("Conv", ins, ["y"], strides=list(strides), pads=[p4[0], p4[2], p4[1], p4[3]],
                    dilations=list(dil), group=groups)
    feeds = {"x": x, "w": w}
    if b is not None:
        feeds["b"] = b
    return node(feeds)["y"]


ACTS = {
    "relu": lambda v: np.maximum(v, 0),
    "relu6": lambda v, t=3.0: np.clip(v, 0, t),
    "leaky_relu": lambda v, a=0.1: np.where(v > 0, v, a * v),
    "sigmoid": lambda v: 1 / (1 + np.exp(-f64(v))),
    "tanh": lambda v: np.tanh(f64(v)),
    "swish": lambda v, b=1.5: f64(v) / (1 + np.exp(-1.5 * f64(v))),
    "hard_swish": lambda v: f64(v) * np.clip(f64(v) + 2.5, 0, 5.0) / 5.5,
    "hard_sigmoid": lambda v: np.clip(0.25 * f64(v) + 0.4, 0, 1),
    "abs": np.abs,
}
ACT_ATTRS = {
    "relu6": {"fuse_brelu_threshold": 3.0},
    "leaky_relu": {"leaky_relu_alpha": 0.1},
    "swish": {"swish_scale": 1.5},
    "hard_swish": {"hard_swish_threshold": 5.0, "hard_swish_scale": 5.5, "hard_swish_offset": 2.5},
    "hard_sigmoid": {"slope": 0.25, "offset": 0.4},
}


def conv_case(name, x, w, b=None, strides=(1, 1), paddings=(0, 0), dil=(1, 1), groups=1, alg=None,
              op="conv2d", act=None, threads=1, extra_attrs=None, second=None, fuse=None, prelu=None):
    attrs = {"strides": list(strides), "paddings": list(paddings), "dilations": list(dil), "groups": groups}
    if alg:
        attrs["padding_algorithm"] = alg
    if act:
        attrs.update({"with_act": True, "act_type": act})
        attrs.update(ACT_ATTRS.get(act, {}))
    if prelu is not None:
        attrs.update({"with_act": True, "act_type": "prelu", "prelu_mode": prelu[0]})
    attrs.update(extra_attrs or {})
    ins = [("Input", "x"), ("Filter", "w", "param")]
    feeds = {"x": x, "w": w}
    if b is not None:
        ins.append(("Bias", "b", "param"))
        feeds["b"] = b
    if prelu is not None:
        ins.append(("Prelu_alpha", "alpha", "param"))
        feeds["alpha"] = prelu[1]
    if second is not None:
        ins.append(("SecondInput", "s"))
        feeds["s"] = second
        attrs["fuse_elementwise_op_type"] = fuse
    spec = dict(op=op, inputs=ins, outputs=[("Output", "y")], attrs=attrs)
    H, W = x.shape[2], x.shape[3]
    kh, kw = w.shape[2], w.shape[3]
    if alg == "SAME":
        p4, d = same_pads(H, W, (kh, kw), strides), (1, 1)
    elif alg == "VALID":
        p4, d = [0, 0, 0, 0], dil
    else:
        p4, d = pads4(paddings), dil

    def ref(i):
        y = f64(conv_ref(i["x"], i["w"], i.get("b"), strides, p4, d, groups))
        if act:
            y = f64(ACTS[act](y))
        if prelu is not None:
            a = f64(i["alpha"])
            a = a.reshape(1, -1, 1, 1) if prelu[0] == "channel" else (a.reshape(1, *y.shape[1:]) if prelu[0] == "element" else a.reshape(()))
            y = np.where(y > 0, y, a * y)
        if second is not None:
            y = y + f64(i["s"])
            if fuse == "fusion_elementwise_add_activation":
                y = np.maximum(y, 0)
        return y.astype(np.float32)

    mag_feeds = {"x": np.abs(x), "w": np.abs(w)}
    mag = f64(conv_ref(mag_feeds["x"], mag_feeds["w"], None if b is None else np.abs(b), strides, p4, d, groups))
    if second is not None:
        mag = mag + np.abs(second)
    k = w.shape[1] * kh * kw + 2
    for prec in PRECS:
        check(f"{op} {name}", spec, feeds, ref, prec, k=k, mag=mag, threads=threads)


def convT_case(name, x, w, b=None, strides=(1, 1), paddings=(0, 0), dil=(1, 1), groups=1, out_pad=None,
               out_size=None, op="conv2d_transpose", act=None, threads=1, alg=None):
    attrs = {"strides": list(strides), "paddings": list(paddings), "dilations": list(dil), "groups": groups}
    if out_pad:
        attrs["output_padding"] = list(out_pad)
    if out_size:
        attrs["output_size"] = list(out_size)
    if act:
        attrs.update({"with_act": True, "act_type": act})
    if alg:
        attrs["padding_algorithm"] = alg
    ins = [("Input", "x"), ("Filter", "w", "param")]
    feeds = {"x": x, "w": w}
    if b is not None:
        ins.append(("Bias", "b", "param"))
        feeds["b"] = b
    spec = dict(op=op, inputs=ins, outputs=[("Output", "y")], attrs=attrs)
    H, W = x.shape[2], x.shape[3]
    kh, kw = w.shape[2], w.shape[3]
    if alg == "SAME":
        p4, d = same_pads(H, W, (kh, kw), strides), (1, 1)
    else:
        p4, d = pads4(paddings), dil
    base = [(H - 1) * strides[0] - p4[0] - p4[1] + d[0] * (kh - 1) + 1,
            (W - 1) * strides[1] - p4[2] - p4[3] + d[1] * (kw - 1) + 1]
    op_ = list(out_pad) if out_pad else [0, 0]
    if out_size:
        op_ = [out_size[0] - base[0], out_size[1] - base[1]]

    def run(xx, ww, bb):
        ins_ = ["x", "w"] + (["b"] if bb is not None else [])
        node = ort_node("ConvTranspose", ins_, ["y"], strides=list(strides), pads=[p4[0], p4[2], p4[1], p4[3]],
                        dilations=list(d), group=groups, output_padding=op_)
        fd = {"x": xx, "w": ww}
        if bb is not None:
            fd["b"] = bb
        return f64(node(fd)["y"])

    def ref(i):
        y = run(i["x"], i["w"], i.get("b"))
        return (ACTS[act](y) if act else y).astype(np.float32)

    mag = run(np.abs(x), np.abs(w), None if b is None else np.abs(b))
    k = (x.shape[1] // groups) * kh * kw + 2
    for prec in PRECS:
        check(f"{op} {name}", spec, feeds, ref, prec, k=k, mag=mag, threads=threads)


# ------------------------------------------------------------------ conv2d
conv_case("3x3 pad1 bias", rnd(1, 3, 11, 13), rnd(8, 3, 3, 3), rnd(8), paddings=(1, 1))
conv_case("asym pad4 stride2", rnd(2, 5, 9, 10), rnd(7, 5, 3, 2), rnd(7), strides=(2, 2), paddings=(1, 2, 0, 3))
conv_case("dilation2 stride3", rnd(1, 4, 17, 19), rnd(6, 4, 3, 3), None, strides=(3, 3), paddings=(2, 2), dil=(2, 2))
conv_case("dilation (2,3) stride (1,2)", rnd(1, 3, 12, 14), rnd(5, 3, 3, 3), rnd(5), strides=(1, 2), paddings=(1, 0, 2, 1), dil=(2, 3))
conv_case("groups2", rnd(1, 6, 8, 8), rnd(4, 3, 3, 3), rnd(4), paddings=(1, 1), groups=2)
conv_case("groups3 stride2", rnd(2, 9, 10, 7), rnd(6, 3, 3, 3), rnd(6), strides=(2, 2), paddings=(1, 1), groups=3)
conv_case("SAME stride2 (dilation forced 1)", rnd(1, 3, 10, 9), rnd(4, 3, 3, 3), rnd(4), strides=(2, 2), dil=(2, 2), alg="SAME")
conv_case("SAME 4x4 stride1", rnd(1, 2, 7, 8), rnd(3, 2, 4, 4), None, alg="SAME")
conv_case("VALID ignores paddings", rnd(1, 3, 9, 9), rnd(4, 3, 3, 3), rnd(4), paddings=(3, 3), alg="VALID")
conv_case("1x1 pointwise", rnd(2, 32, 7, 9), rnd(24, 32, 1, 1), rnd(24))
conv_case("1x1 stride2", rnd(1, 16, 9, 9), rnd(8, 16, 1, 1), rnd(8), strides=(2, 2))
conv_case("Cin1 groups1", rnd(1, 1, 13, 13), rnd(10, 1, 3, 3), rnd(10), paddings=(1, 1))
conv_case("deep K (576) threads2", rnd(1, 64, 12, 12), rnd(40, 64, 3, 3, scale=0.2), rnd(40), paddings=(1, 1), threads=2)
conv_case("7x7 stride2 pad3 threads2", rnd(1, 3, 37, 41), rnd(16, 3, 7, 7), rnd(16), strides=(2, 2), paddings=(3, 3), threads=2)
conv_case("5x1 kernel", rnd(1, 4, 11, 6), rnd(3, 4, 5, 1), rnd(3), paddings=(2, 0))
conv_case("depthwise 3x3 s2", rnd(1, 8, 15, 15), rnd(8, 1, 3, 3), rnd(8), strides=(2, 2), paddings=(1, 1), groups=8, op="depthwise_conv2d")
conv_case("depthwise multiplier2 5x5 dil2", rnd(1, 8, 16, 14), rnd(16, 1, 5, 5), rnd(16), paddings=(4, 4), dil=(2, 2), groups=8, op="depthwise_conv2d")
conv_case("depthwise asym pad s3", rnd(2, 5, 13, 11), rnd(5, 1, 3, 3), None, strides=(3, 3), paddings=(0, 2, 1, 2), groups=5, op="depthwise_conv2d", threads=2)
conv_case("depthwise 1x1", rnd(1, 6, 5, 5), rnd(6, 1, 1, 1), rnd(6), groups=6, op="depthwise_conv2d")
# the text classifiers' narrow maps: most 5x5 tap rows fall in the top/bottom padding (skipped
# by the CPU kernel), 1-row and 2-row planes, stride (2, 1), and a dilated case
conv_case("depthwise 5x5 on 1-row map", rnd(1, 12, 1, 50), rnd(12, 1, 5, 5), rnd(12), paddings=(2, 2), groups=12, op="depthwise_conv2d")
conv_case("depthwise 5x5 on 2-row map s(2,1)", rnd(1, 9, 2, 37), rnd(9, 1, 5, 5), rnd(9), strides=(2, 1), paddings=(2, 2), groups=9, op="depthwise_conv2d")
conv_case("depthwise 3x3 dil2 on 3-row map", rnd(1, 4, 3, 20), rnd(4, 1, 3, 3), None, paddings=(2, 2), dil=(2, 2), groups=4, op="depthwise_conv2d")
conv_case("depthwise SAME", rnd(1, 4, 9, 8), rnd(4, 1, 3, 3), rnd(4), strides=(2, 2), groups=4, alg="SAME", op="depthwise_conv2d")
for a in ACTS:
    conv_case(f"fused {a}", rnd(1, 4, 7, 8), rnd(6, 4, 3, 3), rnd(6), paddings=(1, 1), act=a)
conv_case("depthwise fused relu6", rnd(1, 6, 9, 9), rnd(6, 1, 3, 3), rnd(6), paddings=(1, 1), groups=6, act="relu6", op="depthwise_conv2d")
# depthwise kernel: vector interior + scalar borders, every stride path (1: contiguous,
# 2: even-lane shuffle, 3: gather), paddings wider than one vector tail, dilation, channel
# multiplier 2, rows long enough (W >= 40) for several vectors per row, 2 threads.
for (ks, st, pd, dl, hw) in [((3, 3), (1, 1), (1, 1), (1, 1), (37, 53)), ((3, 3), (2, 2), (1, 1), (1, 1), (41, 67)),
                             ((5, 5), (1, 1), (2, 2), (1, 1), (20, 40)), ((5, 5), (2, 2), (2, 2), (1, 1), (40, 40)),
                             ((3, 3), (3, 3), (0, 2, 1, 0), (1, 1), (23, 71)), ((3, 3), (1, 2), (2, 2), (2, 2), (19, 50)),
                             ((1, 7), (1, 1), (0, 3), (1, 1), (6, 90)), ((3, 3), (2, 2), (0, 0), (1, 1), (16, 33))]:
    conv_case(f"depthwise k{ks} s{st} p{pd} d{dl} {hw[0]}x{hw[1]}", rnd(2, 3, *hw), rnd(3, 1, *ks), rnd(3),
              strides=st, paddings=pd, dil=dl, groups=3, op="depthwise_conv2d", act="relu", threads=2)
conv_case("depthwise multiplier 2, 48 wide", rnd(1, 4, 12, 48), rnd(8, 1, 3, 3), rnd(8), paddings=(1, 1), groups=4,
          op="depthwise_conv2d", threads=2)
conv_case("depthwise hard_swish 2 threads big", rnd(1, 64, 40, 40), rnd(64, 1, 3, 3), rnd(64), paddings=(1, 1), groups=64,
          op="depthwise_conv2d", act="hard_swish", threads=2)
conv_case("fused prelu channel", rnd(1, 4, 6, 6), rnd(5, 4, 3, 3), rnd(5), paddings=(1, 1), prelu=("channel", rnd(5)))
conv_case("fused prelu all", rnd(1, 4, 6, 6), rnd(5, 4, 3, 3), rnd(5), paddings=(1, 1), prelu=("all", rnd(1)))
conv_case("fused prelu element", rnd(1, 4, 6, 6), rnd(3, 4, 3, 3), rnd(3), paddings=(1, 1), prelu=("element", rnd(3, 6, 6)))
conv_case("residual elementwise_add", rnd(1, 8, 6, 7), rnd(8, 8, 1, 1), rnd(8), second=rnd(1, 8, 6, 7), fuse="elementwise_add")
conv_case("residual add+act (relu after)", rnd(1, 8, 6, 7), rnd(8, 8, 1, 1), rnd(8), act="leaky_relu",
          second=rnd(1, 8, 6, 7), fuse="fusion_elementwise_add_activation")
# a bare fuse_relu (no with_act) must not activate
conv_case("fuse_relu without with_act is inert", rnd(1, 3, 6, 6), rnd(4, 3, 3, 3), rnd(4), paddings=(1, 1),
          extra_attrs={"fuse_relu": True})

# ------------------------------------------------------------------ conv2d_transpose
convT_case("3x3 s2 p1", rnd(1, 4, 5, 6), rnd(4, 3, 3, 3), rnd(3), strides=(2, 2), paddings=(1, 1))
convT_case("output_padding", rnd(1, 4, 5, 6), rnd(4, 3, 3, 3), rnd(3), strides=(2, 2), paddings=(1, 1), out_pad=(1, 1))
convT_case("output_size", rnd(1, 3, 4, 5), rnd(3, 2, 4, 4), None, strides=(3, 2), paddings=(1, 1), out_size=(12, 11))
convT_case("groups2", rnd(1, 4, 6, 5), rnd(4, 2, 3, 3), rnd(4), strides=(2, 2), paddings=(1, 1), groups=2)
convT_case("dilation2 asym pad", rnd(2, 3, 5, 5), rnd(3, 4, 3, 2), rnd(4), strides=(2, 1), paddings=(1, 0, 2, 1), dil=(2, 2))
convT_case("2x2 s2 relu (upsample)", rnd(1, 8, 7, 7), rnd(8, 5, 2, 2), rnd(5), strides=(2, 2), act="relu", threads=2)
convT_case("SAME", rnd(1, 3, 5, 6), rnd(3, 2, 3, 3), rnd(2), strides=(2, 2), alg="SAME")
# a column buffer in chunks (16*3*3 rows x 32400 pixels > 4M values: chunks of 29127 pixels start
# mid-row) with padding: col2im's per-row column ranges across a chunk edge
convT_case("chunked col2im", rnd(1, 2, 180, 180), rnd(2, 16, 3, 3), rnd(16), strides=(2, 2), paddings=(1, 1))
convT_case("depthwise", rnd(1, 4, 6, 6), rnd(4, 1, 3, 3), rnd(4), strides=(2, 2), paddings=(1, 1), groups=4,
           op="depthwise_conv2d_transpose")

# ------------------------------------------------------------------ pool2d

def pool_case(name, x, ptype, ksize, strides=(1, 1), paddings=(0, 0), exclusive=True, ceil_mode=False,
              global_pooling=False, adaptive=False, alg=None, ref=None):
    attrs = {"pooling_type": ptype, "ksize": list(ksize), "strides": list(strides), "paddings": list(paddings),
             "global_pooling": global_pooling, "exclusive": exclusive, "adaptive": adaptive, "ceil_mode": ceil_mode}
    if alg:
        attrs["padding_algorithm"] = alg
    spec = dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "y")], attrs=attrs)
    H, W = x.shape[2:]
    p4 = same_pads(H, W, ksize, strides) if alg == "SAME" else ([0] * 4 if alg == "VALID" else pads4(paddings))
    if ref is None:
        if global_pooling:
            ref = ort_node("GlobalMaxPool" if ptype == "max" else "GlobalAveragePool", ["x"], ["y"])
        elif ptype == "max":
            ref = ort_node("MaxPool", ["x"], ["y"], kernel_shape=list(ksize), strides=list(strides),
                           pads=[p4[0], p4[2], p4[1], p4[3]], ceil_mode=int(ceil_mode))
        else:
            ref = ort_node("AveragePool", ["x"], ["y"], kernel_shape=list(ksize), strides=list(strides),
                           pads=[p4[0], p4[2], p4[1], p4[3]], ceil_mode=int(ceil_mode),
                           count_include_pad=int(not exclusive))
    k = H * W if global_pooling else ksize[0] * ksize[1]
    if ptype == "avg":
        if adaptive:
            k = (-(-H // ksize[0]) + 1) * (-(-W // ksize[1]) + 1)
        for prec in PRECS:
            check(f"pool2d {name}", spec, {"x": x}, ref, prec, k=k)
    else:
        for prec in PRECS:
            check(f"pool2d {name}", spec, {"x": x}, ref, prec)


def adaptive_ref(ptype, oh, ow):
    def f(i):
        x = f64(i["x"])
        H, W = x.shape[2:]
        y = np.zeros(x.shape[:2] + (oh, ow))
        for a in range(oh):
            hs, he = a * H // oh, -(-(a + 1) * H // oh)
            for b in range(ow):
                ws, we = b * W // ow, -(-(b + 1) * W // ow)
                win = x[:, :, hs:he, ws:we]
                y[:, :, a, b] = win.max(axis=(2, 3)) if ptype == "max" else win.mean(axis=(2, 3))
        return y.astype(np.float32)
    return f


xp = rnd(2, 3, 10, 11)
pool_case("max 3x3 s2 p1", xp, "max", (3, 3), (2, 2), (1, 1))
pool_case("max 2x2 s2", xp, "max", (2, 2), (2, 2))
pool_case("max asym pad4", xp, "max", (3, 3), (2, 1), (0, 1, 1, 2))
pool_case("max ceil_mode", xp, "max", (3, 3), (2, 2), ceil_mode=True)
pool_case("avg exclusive p1", xp, "avg", (3, 3), (2, 2), (1, 1), exclusive=True)
pool_case("avg inclusive p1", xp, "avg", (3, 3), (2, 2), (1, 1), exclusive=False)
pool_case("avg inclusive asym pad", xp, "avg", (3, 3), (1, 2), (1, 0, 2, 1), exclusive=False)
pool_case("avg exclusive ceil_mode", xp, "avg", (3, 3), (2, 2), ceil_mode=True)
pool_case("avg inclusive ceil_mode p1", xp, "avg", (3, 3), (2, 2), (1, 1), exclusive=False, ceil_mode=True)
pool_case("max SAME s2", xp, "max", (3, 3), (2, 2), alg="SAME")
pool_case("avg VALID", xp, "avg", (2, 3), (2, 2), (1, 1), alg="VALID")
pool_case("global max", xp, "max", (1, 1), global_pooling=True)
pool_case("global avg", xp, "avg", (1, 1), global_pooling=True)
pool_case("adaptive avg 3x4", xp, "avg", (3, 4), adaptive=True, ref=adaptive_ref("avg", 3, 4))
pool_case("adaptive max 4x3", xp, "max", (4, 3), adaptive=True, ref=adaptive_ref("max", 4, 3))
pool_case("adaptive avg 1x1", xp, "avg", (1, 1), adaptive=True, ref=adaptive_ref("avg", 1, 1))

# fp16 average pooling accumulates in float: a global mean of 1600 values near 50 (sum
# 80000 > 65504, the half maximum) must be finite and rounded once; a half running sum
# would give Inf. k=2: one float sum, one rounding, no per-term half error.
xbig = (50 + rnd(1, 3, 40, 40)).astype(np.float32)
for prec in PRECS:
    check("pool2d global avg, sum beyond half range", dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "y")],
                                                           attrs={"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True}),
          {"x": xbig}, ort_node("GlobalAveragePool", ["x"], ["y"]), prec, k=2)
    check("pool2d avg 20x20 window, sum beyond half range", dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "y")],
                                                                 attrs={"pooling_type": "avg", "ksize": [20, 20], "strides": [20, 20]}),
          {"x": xbig}, ort_node("AveragePool", ["x"], ["y"], kernel_shape=[20, 20], strides=[20, 20]), prec, k=2)

# ------------------------------------------------------------------ fc / mul

def fc_case(name, x, w, b, ncd, op_type=None, act=None, alpha=None, threads=1):
    attrs = {"in_num_col_dims": ncd}
    if op_type:
        attrs["op_type"] = op_type
    if act:
        attrs["activation_type"] = act
    if alpha is not None:
        attrs["alpha"] = alpha
    ins = [("Input", "x"), ("W", "w", "param")] + ([("Bias", "b", "param")] if b is not None else [])
    feeds = {"x": x, "w": w}
    if b is not None:
        feeds["b"] = b
    spec = dict(op="fc", inputs=ins, outputs=[("Out", "y")], attrs=attrs)
    n = x.ndim - 1 if op_type in ("matmul", "matmul_v2") else ncd
    M = int(np.prod(x.shape[:n]))

    def ref(i, absval=False):
        f = np.abs if absval else (lambda v: v)
        y = f(f64(i["x"])).reshape(M, -1) @ f(f64(i["w"]))
        if "b" in i:
            y = y + f(f64(i["b"])).reshape(1, -1)
        if act == "relu" and not absval:
            y = np.maximum(y, 0)
        if act == "relu6" and not absval:
            y = np.clip(y, 0, alpha if alpha is not None else 6.0)
        return y.reshape(x.shape[:n] + (w.shape[1],)).astype(np.float32)

    mag = ref(feeds, True)
    for prec in PRECS:
        check(f"fc {name}", spec, feeds, ref, prec, k=w.shape[0] + 2, mag=mag, threads=threads)


fc_case("2-D", rnd(5, 20), rnd(20, 7), rnd(7), 1)
fc_case("in_num_col_dims 2", rnd(2, 3, 4, 5), rnd(20, 7), rnd(7), 2)
fc_case("in_num_col_dims 1 of 4-D", rnd(2, 3, 4, 5), rnd(60, 9), None, 1)
fc_case("op_type matmul (ncd = rank-1)", rnd(2, 3, 8), rnd(8, 5), rnd(5), 1, op_type="matmul")
fc_case("relu", rnd(4, 33), rnd(33, 17), rnd(17), 1, act="relu")
fc_case("relu6 alpha 2", rnd(4, 33), rnd(33, 17), rnd(17), 1, act="relu6", alpha=2.0)
fc_case("M=1 K=600 (K slices) threads2", rnd(1, 600, scale=0.3), rnd(600, 130, scale=0.3), rnd(130), 1, threads=2)

mx, my = rnd(3, 4, 5), rnd(20, 6)
for prec in PRECS:
    check("mul xncd1 yncd1", dict(op="mul", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                  attrs={"x_num_col_dims": 1, "y_num_col_dims": 1}),
          {"x": mx, "y": my}, lambda i: (f64(i["x"]).reshape(3, 20) @ f64(i["y"])).astype(np.float32), prec,
          k=22, mag=np.abs(f64(mx)).reshape(3, 20) @ np.abs(f64(my)))
    mx2, my2 = rnd(2, 3, 4), rnd(4, 2, 5)
    check("mul xncd2 yncd1 (out [2,3,2,5])", dict(op="mul", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                                 attrs={"x_num_col_dims": 2, "y_num_col_dims": 1}),
          {"x": mx2, "y": my2}, lambda i: (f64(i["x"]).reshape(6, 4) @ f64(i["y"]).reshape(4, 10)).reshape(2, 3, 2, 5).astype(np.float32),
          prec, k=6, mag=(np.abs(f64(mx2)).reshape(6, 4) @ np.abs(f64(my2)).reshape(4, 10)).reshape(2, 3, 2, 5))

# ------------------------------------------------------------------ matmul / matmul_v2

def np_matmul(x, y, tx, ty, alpha, v1):
    x, y = f64(x), f64(y)
    if v1 and x.ndim == 1 and y.ndim == 1 and tx and ty:
        return alpha * np.outer(x, y)
    if tx and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if ty and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    r = alpha * np.matmul(x, y)
    return np.asarray(r).reshape(r.shape if np.ndim(r) else (1,))


def mm_case(name, x, y, tx=False, ty=False, alpha=1.0, v2=False, threads=1):
    attrs = {"trans_x": tx, "trans_y": ty} if v2 else {"transpose_X": tx, "transpose_Y": ty, "alpha": alpha}
    if v2 and alpha != 1.0:
        attrs["alpha"] = alpha
    spec = dict(op="matmul_v2" if v2 else "matmul", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs=attrs)
    k = x.shape[-2] if (tx and x.ndim > 1) else x.shape[-1]
    mag = np.abs(np_matmul(np.abs(x), np.abs(y), tx, ty, alpha, not v2))
    for prec in PRECS:
        check(f"{spec['op']} {name}", spec, {"x": x, "y": y},
              lambda i: np_matmul(i["x"], i["y"], tx, ty, alpha, not v2).astype(np.float32), prec, k=k + 2, mag=mag,
              threads=threads)


mm_case("2-D", rnd(7, 9), rnd(9, 5))
mm_case("transpose_X", rnd(9, 7), rnd(9, 5), tx=True)
mm_case("transpose_Y alpha 0.5", rnd(7, 9), rnd(5, 9), ty=True, alpha=0.5)
mm_case("both transposes", rnd(3, 9, 7), rnd(3, 5, 9), tx=True, ty=True)
mm_case("batched 3-D x 3-D", rnd(4, 6, 8), rnd(4, 8, 3))
mm_case("4-D x 2-D broadcast", rnd(2, 3, 4, 5), rnd(5, 6), alpha=2.0)
mm_case("2-D x 3-D broadcast", rnd(4, 5), rnd(3, 5, 6))
mm_case("X 3-D, Y 1-D", rnd(2, 4, 5), rnd(5))
mm_case("dot 1-D x 1-D", rnd(11), rnd(11))
mm_case("outer (both transposed 1-D)", rnd(4), rnd(6), tx=True, ty=True)
mm_case("large K=300 threads2", rnd(33, 300, scale=0.3), rnd(300, 70, scale=0.3), threads=2)
mm_case("v2 2-D", rnd(7, 9), rnd(9, 5), v2=True)
mm_case("v2 trans_x trans_y", rnd(2, 9, 7), rnd(2, 5, 9), tx=True, ty=True, v2=True)
mm_case("v2 broadcast [2,1,4,5]x[3,5,6]", rnd(2, 1, 4, 5), rnd(3, 5, 6), v2=True)
mm_case("v2 X 1-D", rnd(5), rnd(3, 5, 6), v2=True)
mm_case("v2 Y 1-D", rnd(3, 4, 5), rnd(5), v2=True)
mm_case("v2 many small batches threads2", rnd(64, 4, 8), rnd(64, 8, 4), v2=True, threads=2)

# ------------------------------------------------------------------ norms
xb = rnd(2, 5, 6, 7)
sc, bi, mu, var = rnd(5), rnd(5), rnd(5), np.abs(rnd(5)) + 0.1
bn_spec = dict(op="batch_norm", inputs=[("X", "x"), ("Scale", "s", "param"), ("Bias", "b", "param"),
                                        ("Mean", "m", "param"), ("Variance", "v", "param")],
               outputs=[("Y", "y")], attrs={"epsilon": 1e-3, "momentum": 0.9, "data_layout": "NCHW", "is_test": True})
inv = 1 / np.sqrt(f64(var) + 1e-3)
bn_mag = np.abs(f64(xb) * (sc * inv).reshape(1, 5, 1, 1)) + np.abs((bi - mu * sc * inv)).reshape(1, 5, 1, 1)
for prec in PRECS:
    check("batch_norm", bn_spec, {"x": xb, "s": sc, "b": bi, "m": mu, "v": var},
          ort_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3), prec, k=3, mag=bn_mag)
x2 = rnd(6, 4)
for prec in PRECS:
    check("batch_norm 2-D [N,C]", dict(bn_spec, attrs={"epsilon": 1e-5}), {"x": x2, "s": sc[:4], "b": bi[:4], "m": mu[:4], "v": var[:4]},
          ort_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5), prec, k=3,
          mag=np.abs(x2) * 4 + 4)


def ln_ref(x, axis, eps, s=None, b=None):
    x = f64(x)
    L = int(np.prod(x.shape[:axis]))
    v = x.reshape(L, -1)
    m = v.mean(1, keepdims=True)
    var = (v * v).mean(1, keepdims=True) - m * m
    y = (v - m) / np.sqrt(var + eps)
    # x - mean rounds at the magnitude of x (and mean), not of the small difference
    mag = (np.abs(v) + np.abs(m)) / np.sqrt(var + eps) * (np.abs(f64(s)).reshape(1, -1) if s is not None else 1) + (np.abs(f64(b)).reshape(1, -1) if b is not None else 0)
    if s is not None:
        y = y * f64(s).reshape(1, -1)
    if b is not None:
        y = y + f64(b).reshape(1, -1)
    return y.reshape(x.shape), m.reshape(L), var.reshape(L), mag.reshape(x.shape)


for (shape, axis, with_sb) in (((2, 3, 8), 2, True), ((2, 3, 4, 5), 1, True), ((4, 6, 5), 1, False), ((3, 7), -1, True)):
    xl = rnd(*shape) + 0.5
    ax = axis % len(shape)
    R = int(np.prod(shape[ax:]))
    s_, b_ = (rnd(R), rnd(R)) if with_sb else (None, None)
    ins = [("X", "x")] + ([("Scale", "s", "param"), ("Bias", "b", "param")] if with_sb else [])
    feeds = {"x": xl} | ({"s": s_, "b": b_} if with_sb else {})
    spec = dict(op="layer_norm", inputs=ins, outputs=[("Y", "y"), ("Mean", "mean"), ("Variance", "var")],
                attrs={"begin_norm_axis": axis, "epsilon": 1e-5})
    _, _, _, mag = ln_ref(xl, ax, 1e-5, s_, b_)
    for prec in PRECS:
        check(f"layer_norm {list(shape)} axis {axis}{'' if with_sb else ' no Scale/Bias'}", spec, feeds,
              lambda i, ax=ax: [a.astype(np.float32) for a in ln_ref(i["x"], ax, 1e-5, i.get("s"), i.get("b"))[:3]],
              prec, k=4, mag={"y": mag, "mean": np.abs(xl).max(), "var": (xl * xl).max()})

xi = rnd(2, 3, 5, 6) * 2 + 1
si, bii = rnd(3), rnd(3)


def in_ref(i, scale=True, act=None):
    x = f64(i["x"])
    m = x.mean(axis=(2, 3), keepdims=True)
    v = x.var(axis=(2, 3), keepdims=True)
    y = (x - m) / np.sqrt(v + 1e-5)
    if scale:
        y = y * f64(i["s"]).reshape(1, -1, 1, 1) + f64(i["b"]).reshape(1, -1, 1, 1)
    if act == "relu":
        y = np.maximum(y, 0)
    return y.astype(np.float32)


for prec in PRECS:
    check("instance_norm", dict(op="instance_norm", inputs=[("X", "x"), ("Scale", "s", "param"), ("Bias", "b", "param")],
                                outputs=[("Y", "y")], attrs={"epsilon": 1e-5}),
          {"x": xi, "s": si, "b": bii}, ort_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5), prec, k=4)
    check("instance_norm no Scale/Bias", dict(op="instance_norm", inputs=[("X", "x")], outputs=[("Y", "y")], attrs={"epsilon": 1e-5}),
          {"x": xi}, lambda i: in_ref(i, False), prec, k=4)
    check("instance_norm activation relu", dict(op="instance_norm", inputs=[("X", "x"), ("Scale", "s", "param"), ("Bias", "b", "param")],
                                                outputs=[("Y", "y")], attrs={"epsilon": 1e-5, "activation_type": "relu"}),
          {"x": xi, "s": si, "b": bii}, lambda i: in_ref(i, True, "relu"), prec, k=4)

# ------------------------------------------------------------------ softmax / log_softmax
xs = rnd(2, 5, 4, 3) * 3
# fp16: d = x - max is rounded to half before exp (as the fp16 kernels do), which moves
# exp(d) by up to |d| * u16 relative: the per-element magnitude is |y| * (1 + |d|).
for axis in (-1, 1, 0, 2):
    n = xs.shape[axis]
    dmag = 1 + np.abs(xs - xs.max(axis=axis, keepdims=True))
    for prec in PRECS:
        check(f"softmax axis {axis}", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={"axis": axis}),
              {"x": xs}, ort_node("Softmax", ["x"], ["y"], axis=axis), prec, k=n + 2,
              mag=np.abs(ort_node("Softmax", ["x"], ["y"], axis=axis)({"x": xs})["y"]) * dmag)
        check(f"log_softmax axis {axis}", dict(op="log_softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={"axis": axis}),
              {"x": xs}, ort_node("LogSoftmax", ["x"], ["y"], axis=axis), prec, k=n + 2,
              mag=1 + np.abs(ort_node("LogSoftmax", ["x"], ["y"], axis=axis)({"x": xs})["y"]))
xw = rnd(3, 300) * 4
for prec in PRECS:
    check("softmax default axis, 300 wide", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={}),
          {"x": xw}, ort_node("Softmax", ["x"], ["y"], axis=-1), prec, k=302,
          mag=np.abs(ort_node("Softmax", ["x"], ["y"], axis=-1)({"x": xw})["y"]) * (1 + np.abs(xw - xw.max(axis=-1, keepdims=True))))
# The softmax denominator is summed in float: over 5000 near-equal terms a half running sum
# stalls at 2048 (every later term < 1 rounds away), giving ~1/2048 instead of ~1/5000.
# k=4 holds fp16 to a few half ulps of each output, which only a wide accumulator meets.
xl = (rnd(2, 5000) * 0.01).astype(np.float32)
for prec in PRECS:
    check("softmax 5000 wide (denominator beyond half precision)", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={}),
          {"x": xl}, ort_node("Softmax", ["x"], ["y"], axis=-1), prec, k=4,
          mag=np.abs(ort_node("Softmax", ["x"], ["y"], axis=-1)({"x": xl})["y"]))
    check("log_softmax 5000 wide", dict(op="log_softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={}),
          {"x": xl}, ort_node("LogSoftmax", ["x"], ["y"], axis=-1), prec, k=4,
          mag=np.abs(ort_node("LogSoftmax", ["x"], ["y"], axis=-1)({"x": xl})["y"]))
xe = rnd(4, 6, 1, 1)
for prec in PRECS:
    check("softmax eleminate_success [4,6,1,1]", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "y")],
                                                      attrs={"axis": 1, "eleminate_success": True}),
          {"x": xe}, ort_node("Softmax", ["x"], ["y"], axis=1), prec, k=8,
          mag=np.abs(ort_node("Softmax", ["x"], ["y"], axis=1)({"x": xe})["y"]))

# ------------------------------------------------------------------ errors (exit 3, message names the problem)
bad_conv = dict(op="conv2d", inputs=[("Input", "x"), ("Filter", "w", "param")], outputs=[("Output", "y")],
                attrs={"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1})
check("conv2d Filter/Input channel mismatch is refused", bad_conv, {"x": rnd(1, 3, 8, 8), "w": rnd(4, 16, 3, 3)}, None,
      "fp32", expect_error=(3, "Filter [4,16,3,3] has 16 input channels per group but Input [1,3,8,8] has 3 channels with groups=1"))
check("conv2d 3-value paddings refused", dict(bad_conv, attrs={"strides": [1, 1], "paddings": [1, 1, 1], "dilations": [1, 1], "groups": 1}),
      {"x": rnd(1, 3, 8, 8), "w": rnd(4, 3, 3, 3)}, None, "fp32", expect_error=(3, "paddings has 3 values"))
check("conv2d kernel larger than input refused", bad_conv, {"x": rnd(1, 3, 2, 2), "w": rnd(4, 3, 3, 3)}, None, "fp32",
      expect_error=(3, "larger than the padded input"))
check("conv2d unknown act_type refused", dict(bad_conv, attrs={"with_act": True, "act_type": "wiggle", "groups": 1}),
      {"x": rnd(1, 3, 8, 8), "w": rnd(4, 3, 3, 3)}, None, "fp32", expect_error=(8, "wiggle"))
check("pool2d bad pooling_type refused", dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "y")],
                                              attrs={"pooling_type": "median", "ksize": [2, 2]}),
      {"x": rnd(1, 2, 4, 4)}, None, "fp32", expect_error=(3, "pooling_type 'median'"))
check("fc K mismatch refused", dict(op="fc", inputs=[("Input", "x"), ("W", "w", "param")], outputs=[("Out", "y")],
                                    attrs={"in_num_col_dims": 1}),
      {"x": rnd(2, 10), "w": rnd(9, 3)}, None, "fp32", expect_error=(3, "K=10 columns but W [9,3] has 9 rows"))
check("matmul contraction mismatch refused", dict(op="matmul_v2", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                                  attrs={"trans_x": False, "trans_y": False}),
      {"x": rnd(2, 3, 4), "y": rnd(5, 6)}, None, "fp32", expect_error=(3, "contraction dims differ (4 vs 5)"))
check("matmul batch dims not broadcastable refused", dict(op="matmul_v2", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                                          attrs={"trans_x": False, "trans_y": False}),
      {"x": rnd(2, 3, 4), "y": rnd(3, 4, 6)}, None, "fp32", expect_error=(3, "do not broadcast"))
check("layer_norm Scale length refused", dict(op="layer_norm", inputs=[("X", "x"), ("Scale", "s", "param")], outputs=[("Y", "y")],
                                              attrs={"begin_norm_axis": 1, "epsilon": 1e-5}),
      {"x": rnd(2, 3, 4), "s": rnd(5)}, None, "fp32", expect_error=(3, "Scale has 5 elements; expected 12"))
check("softmax axis out of range refused", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={"axis": 3}),
      {"x": rnd(2, 3)}, None, "fp32", expect_error=(3, "axis = 3 is out of range"))

finish()
