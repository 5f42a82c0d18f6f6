"""Oracle tests of the op-coverage additions (src/backends/cpu/ops_more_*.c) against
onnxruntime, or numpy written from Paddle's op definitions where ONNX has no equivalent
(expand's tiling, Paddle's axis broadcasting of greater_than, gather's Axis tensor,
sync_batch_norm). Data movement and comparisons are checked bit-exact; trigonometric ops, pow,
lrn, grid_sampler and reduce_mean with the harness bounds (docs/oracle.md)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, finish, ort_node  # noqa: E402

rng = np.random.default_rng(4242)
PRECS = ("fp32", "fp16")


def u(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def lrn_ref(x, n, k, alpha, beta):
    """Paddle's lrn: channels [c - (n-1)//2, c - (n-1)//2 + n), alpha not divided by n."""
    x = x.astype(np.float64)
    C = x.shape[1]
    out = np.empty_like(x)
    for c in range(C):
        lo = max(c - (n - 1) // 2, 0)
        hi = min(c - (n - 1) // 2 + n, C)
        out[:, c] = x[:, c] * (k + alpha * (x[:, lo:hi] ** 2).sum(axis=1)) ** -beta
    return out.astype(np.float32)


def one(op, attrs, extra=(), out="Out", slot_in="X"):
    return dict(op=op, inputs=[(slot_in, "x")] + list(extra), outputs=[(out, "o")], attrs=attrs)


for prec in PRECS:
    # ---------------------------------------------------------------- trigonometric
    for op, onnx_op, lo, hi in [("sin", "Sin", -6, 6), ("cos", "Cos", -6, 6), ("tan", "Tan", -1.4, 1.4),
                                ("asin", "Asin", -1, 1), ("acos", "Acos", -1, 1), ("atan", "Atan", -8, 8)]:
        check(f"{op}", one(op, {}), {"x": u(2, 3, 7, 5, lo=lo, hi=hi)}, ort_node(onnx_op, ["x"], ["o"]), prec)
    # ---------------------------------------------------------------- pow
    check("pow factor 2.5", one("pow", {"factor": 2.5}), {"x": u(3, 4, 9, lo=0.0, hi=3.0)},
          ort_node("Pow", ["x", "e"], ["o"], consts={"e": np.array(2.5, np.float32)}), prec)
    check("pow factor 3 (negative base)", one("pow", {"factor": 3.0}), {"x": u(3, 4, 9, lo=-2, hi=2)},
          ort_node("Pow", ["x", "e"], ["o"], consts={"e": np.array(3.0, np.float32)}), prec)
    check("pow default factor 1", one("pow", {}), {"x": u(5, 6)}, lambda i: i["x"], prec)
    check("pow FactorTensor overrides", one("pow", {"factor": 9.0}, extra=[("FactorTensor", "f", "param")]),
          {"x": u(4, 5, lo=0.1, hi=2.0), "f": np.array([0.5], np.float32)},
          lambda i: np.power(i["x"].astype(np.float64), 0.5).astype(np.float32), prec)
    # ---------------------------------------------------------------- greater_than (bool out)
    gx = u(2, 3, 4, 5)
    check("greater_than same shape", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                          attrs={"axis": -1}),
          {"x": gx, "y": u(2, 3, 4, 5)}, ort_node("Greater", ["x", "y"], ["o"]), prec)
    check("greater_than axis 1", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                      attrs={"axis": 1}),
          {"x": gx, "y": u(3, 4)}, lambda i: i["x"] > i["y"].reshape(1, 3, 4, 1), prec)
    check("greater_than trailing, Y param", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y", "param")],
                                                 outputs=[("Out", "o")], attrs={}),
          {"x": gx, "y": u(5)}, lambda i: i["x"] > i["y"], prec)
    # ---------------------------------------------------------------- the other comparisons (ties on purpose)
    qx, qy = np.round(u(2, 3, 4, 5) * 4) / 4, np.round(u(2, 3, 4, 5) * 4) / 4
    for op, onnx_op in [("greater_equal", "GreaterOrEqual"), ("less_than", "Less"), ("less_equal", "LessOrEqual"),
                        ("equal", "Equal")]:
        check(f"{op} same shape", dict(op=op, inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs={}),
              {"x": qx, "y": qy}, ort_node(onnx_op, ["x", "y"], ["o"]), prec)
    check("not_equal axis 1", dict(op="not_equal", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                   attrs={"axis": 1}),
          {"x": qx, "y": qy[0, :, :, 0]}, lambda i: i["x"] != i["y"].reshape(1, 3, 4, 1), prec)
    check("less_equal NaN unordered", dict(op="less_equal", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                           attrs={}),
          {"x": np.array([np.nan, 1.0, 2.0], np.float32), "y": np.array([1.0, np.nan, 2.0], np.float32)},
          lambda i: i["x"] <= i["y"], prec)
    # ---------------------------------------------------------------- lrn (alpha not divided by n)
    # ONNX LRN divides alpha by size and takes odd sizes only; its window matches Paddle's
    for n, k, alpha, beta in [(5, 2.0, 1e-4, 0.75), (3, 1.0, 0.5, 0.6)]:
        check(f"lrn n{n} k{k} alpha{alpha} beta{beta}",
              one("lrn", {"n": n, "k": k, "alpha": alpha, "beta": beta}, out="Out"),
              {"x": u(2, 7, 5, 6, lo=-2, hi=2)},
              ort_node("LRN", ["x"], ["o"], size=n, alpha=alpha * n, beta=beta, bias=k), prec, k=n + 2)
    check("lrn n4 (even, numpy)", one("lrn", {"n": 4, "k": 1.5, "alpha": 0.2, "beta": 1.0}),
          {"x": u(2, 7, 5, 6, lo=-2, hi=2)}, lambda i: lrn_ref(i["x"], 4, 1.5, 0.2, 1.0), prec, k=6)
    # ---------------------------------------------------------------- reduce_max / reduce_mean
    rx = u(2, 3, 4, 5, lo=-3, hi=3)
    for dims, keep in [([1], False), ([0, 2], True), ([-1], False), ([1, 3], False)]:
        ax = [d % 4 for d in dims]
        check(f"reduce_max dim {dims} keep {keep}", one("reduce_max", {"dim": dims, "keep_dim": keep}), {"x": rx},
              ort_node("ReduceMax", ["x"], ["o"], axes=ax, keepdims=int(keep)), prec)
        kk = int(np.prod([rx.shape[a] for a in ax]))
        check(f"reduce_mean dim {dims} keep {keep}", one("reduce_mean", {"dim": dims, "keep_dim": keep}), {"x": rx},
              ort_node("ReduceMean", ["x"], ["o"], axes=ax, keepdims=int(keep)), prec, k=kk,
              mag=np.abs(rx).mean(axis=tuple(ax), keepdims=keep))
    check("reduce_max reduce_all -> [1]", one("reduce_max", {"dim": [0], "reduce_all": True}), {"x": rx},
          lambda i: np.array([i["x"].max()]), prec)
    check("reduce_mean empty dim keep_dim", one("reduce_mean", {"keep_dim": True}), {"x": rx},
          lambda i: i["x"].astype(np.float64).mean(keepdims=True).astype(np.float32), prec, k=rx.size,
          mag=np.abs(rx).mean(keepdims=True))
    check("reduce_sum dim [1, 2] (ORT)", one("reduce_sum", {"dim": [1, 2]}), {"x": rx},
          ort_node("ReduceSum", ["x", "a"], ["o"], consts={"a": np.array([1, 2], np.int64)}, keepdims=0), prec, k=12,
          mag=np.abs(rx).sum(axis=(1, 2)))
    check("reduce_sum keep_dim", one("reduce_sum", {"dim": [-1], "keep_dim": True}), {"x": rx},
          ort_node("ReduceSum", ["x", "a"], ["o"], consts={"a": np.array([3], np.int64)}, keepdims=1), prec, k=5,
          mag=np.abs(rx).sum(axis=3, keepdims=True))
    check("reduce_min dim [0, 3]", one("reduce_min", {"dim": [0, 3]}), {"x": rx},
          ort_node("ReduceMin", ["x"], ["o"], axes=[0, 3], keepdims=0), prec)
    # ---------------------------------------------------------------- tile, assign_value
    check("tile repeat [2,1,3]", one("tile", {"repeat_times": [2, 1, 3]}), {"x": u(2, 1, 3)},
          lambda i: np.tile(i["x"], (2, 1, 3)), prec)
    check("tile shorter repeat [2]", one("tile", {"repeat_times": [2]}), {"x": u(2, 3)},
          lambda i: np.tile(i["x"], (2,)), prec)
    check("tile longer repeat [2,1,2] on 2-D", one("tile", {"repeat_times": [2, 1, 2]}), {"x": u(2, 3)},
          lambda i: np.tile(i["x"], (2, 1, 2)), prec)
    check("tile RepeatTimes tensor", one("tile", {"repeat_times": [1]}, extra=[("RepeatTimes", "r", "param")]),
          {"x": u(3, 2), "r": np.array([1, 3], np.int32)}, lambda i: np.tile(i["x"], (1, 3)), prec)
    av = [0.5, -1.25, 3.0, 0.1, 2.0, -0.7]
    check("assign_value fp32", dict(op="assign_value", inputs=[], outputs=[("Out", "o")],
                                    attrs={"shape": [2, 3], "dtype": 5, "fp32_values": ("floats", av)}),
          {}, lambda i: np.array(av, np.float32).reshape(2, 3), prec)
    # ---------------------------------------------------------------- expand / expand_v2
    ex = u(2, 1, 3)
    check("expand times [2,3,1]", one("expand", {"expand_times": [2, 3, 1]}), {"x": ex},
          lambda i: np.tile(i["x"], (2, 3, 1)), prec)
    check("expand ExpandTimes tensor", one("expand", {"expand_times": [1, 1, 1]}, extra=[("ExpandTimes", "t", "param")]),
          {"x": ex, "t": np.array([1, 4, 2], np.int32)}, lambda i: np.tile(i["x"], (1, 4, 2)), prec)
    check("expand_v2 shape [4,2,5,3]", one("expand_v2", {"shape": [4, 2, 5, 3]}), {"x": ex},
          ort_node("Expand", ["x", "s"], ["o"], consts={"s": np.array([4, 2, 5, 3], np.int64)}), prec)
    check("expand_v2 -1 keeps dims", one("expand_v2", {"shape": [-1, 6, -1]}), {"x": ex},
          lambda i: np.broadcast_to(i["x"], (2, 6, 3)), prec)
    check("expand_v2 Shape tensor", one("expand_v2", {"shape": [1]}, extra=[("Shape", "s", "param")]),
          {"x": ex, "s": np.array([3, 2, 2, 3], np.int64)}, lambda i: np.broadcast_to(i["x"], (3, 2, 2, 3)), prec)
    # ---------------------------------------------------------------- gather
    gxx = u(5, 4, 3)
    for axis, idx in [(0, np.array([4, 0, 2, 2], np.int64)), (1, np.array([3, 1], np.int32)),
                      (2, np.array([0, 2, 1, 0, 2], np.int64))]:
        check(f"gather axis {axis} {idx.dtype}", dict(op="gather", inputs=[("X", "x"), ("Index", "i")],
                                                     outputs=[("Out", "o")], attrs={"axis": axis}),
              {"x": gxx, "i": idx}, ort_node("Gather", ["x", "i"], ["o"], axis=axis), prec)
    check("gather Index [N,1], no axis attr", dict(op="gather", inputs=[("X", "x"), ("Index", "i")],
                                                   outputs=[("Out", "o")], attrs={}),
          {"x": gxx, "i": np.array([[1], [3]], np.int32)}, lambda i: i["x"][[1, 3]], prec)
    check("gather Axis tensor overrides", dict(op="gather", inputs=[("X", "x"), ("Index", "i"), ("Axis", "a", "param")],
                                               outputs=[("Out", "o")], attrs={"axis": 0}),
          {"x": gxx, "i": np.array([2, 0], np.int64), "a": np.array([-1], np.int32)},
          lambda i: i["x"][:, :, [2, 0]], prec)
    gn = u(4, 5, 3)
    for idx in (np.array([[[1, 2], [3, 0], [0, 4]], [[2, 2], [1, 1], [3, 4]]], np.int64),
                np.array([[3], [0], [2]], np.int32), np.array([[1, 4, 2], [3, 0, 0]], np.int64)):
        check(f"gather_nd Index {list(idx.shape)} {idx.dtype}",
              dict(op="gather_nd", inputs=[("X", "x"), ("Index", "i")], outputs=[("Out", "o")], attrs={}),
              {"x": gn, "i": idx}, ort_node("GatherND", ["x", "i64"], ["o"], consts={"i64": idx.astype(np.int64)}), prec)
    # ---------------------------------------------------------------- pixel_shuffle
    for r, shape in [(2, (2, 8, 3, 5)), (3, (1, 18, 4, 2))]:
        check(f"pixel_shuffle r{r}", one("pixel_shuffle", {"upscale_factor": r}), {"x": u(*shape)},
              ort_node("DepthToSpace", ["x"], ["o"], blocksize=r, mode="CRD"), prec)
    # ---------------------------------------------------------------- grid_sampler
    gsx = u(2, 3, 6, 7, lo=-2, hi=2)
    grid = u(2, 5, 4, 2, lo=-1.3, hi=1.3)
    for mode in ("bilinear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for align in (True, False):
                check(f"grid_sampler {mode} {pad} align {int(align)}",
                      dict(op="grid_sampler", inputs=[("X", "x"), ("Grid", "g")], outputs=[("Output", "o")],
                           attrs={"mode": mode, "padding_mode": pad, "align_corners": align}),
                      {"x": gsx, "g": grid},
                      ort_node("GridSample", ["x", "g"], ["o"], opset=16, mode=mode, padding_mode=pad,
                               align_corners=int(align)), prec, k=4)
    # ---------------------------------------------------------------- top_k, top_k_v2, unbind
    tk = u(2, 3, 37)
    for largest, axis, k in [(True, -1, 5), (False, 1, 2), (True, 0, 1)]:
        check(f"top_k_v2 k{k} axis {axis} largest {largest}",
              dict(op="top_k_v2", inputs=[("X", "x")], outputs=[("Out", "v"), ("Indices", "i")],
                   attrs={"k": k, "axis": axis, "largest": largest, "sorted": True}),
              {"x": tk}, ort_node("TopK", ["x", "k"], ["v", "i"], consts={"k": np.array([k], np.int64)}, axis=axis,
                                  largest=int(largest), sorted=1), prec)
    check("top_k (v1) K tensor", dict(op="top_k", inputs=[("X", "x"), ("K", "k", "param")],
                                      outputs=[("Out", "v"), ("Indices", "i")], attrs={"k": 1}),
          {"x": tk, "k": np.array([4], np.int32)},
          ort_node("TopK", ["x", "kk"], ["v", "i"], consts={"kk": np.array([4], np.int64)}, axis=-1), prec)
    tie = np.round(u(3, 16) * 3) / 3
    check("top_k_v2 ties: lower index first", dict(op="top_k_v2", inputs=[("X", "x")],
                                                   outputs=[("Out", "v"), ("Indices", "i")], attrs={"k": 6}),
          {"x": tie}, lambda i: [np.take_along_axis(i["x"], np.argsort(-i["x"], axis=-1, kind="stable")[:, :6], -1),
                                 np.argsort(-i["x"], axis=-1, kind="stable")[:, :6].astype(np.int64)], prec)
    ub = u(2, 3, 4)
    check("unbind axis 1", dict(op="unbind", inputs=[("X", "x")], outputs=[("Out", "a"), ("Out", "b"), ("Out", "c")],
                                attrs={"axis": 1}), {"x": ub}, lambda i: [i["x"][:, 0], i["x"][:, 1], i["x"][:, 2]], prec)
    check("unbind axis -1", dict(op="unbind", inputs=[("X", "x")],
                                 outputs=[("Out", "a"), ("Out", "b"), ("Out", "c"), ("Out", "d")], attrs={"axis": -1}),
          {"x": ub}, lambda i: [i["x"][..., j] for j in range(4)], prec)
    # ---------------------------------------------------------------- sync_batch_norm (inference)
    bx = u(2, 4, 3, 5)
    sc, bi, mu, var = u(4), u(4), u(4), u(4, lo=0.2, hi=2.0)
    check("sync_batch_norm", dict(op="sync_batch_norm", inputs=[("X", "x"), ("Scale", "s", "param"),
                                                                ("Bias", "b", "param"), ("Mean", "m", "param"),
                                                                ("Variance", "v", "param")],
                                  outputs=[("Y", "o")], attrs={"epsilon": 1e-5, "is_test": True}),
          {"x": bx, "s": sc, "b": bi, "m": mu, "v": var},
          ort_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["o"], epsilon=1e-5), prec, k=4)

# integer data through the exact ops (plan-time shape chains use them)
ii = rng.integers(-1000, 1000, (4, 3)).astype(np.int64)
check("gather int64 X", dict(op="gather", inputs=[("X", "x"), ("Index", "i")], outputs=[("Out", "o")], attrs={}),
      {"x": ii, "i": np.array([3, 1], np.int32)}, lambda i: i["x"][[3, 1]], "fp32")
check("expand_v2 int32", one("expand_v2", {"shape": [2, 4, 3]}), {"x": ii.astype(np.int32)},
      lambda i: np.broadcast_to(i["x"], (2, 4, 3)), "fp32")
check("greater_than int64", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                 attrs={"axis": -1}),
      {"x": ii, "y": np.array([0, 5, -7], np.int64)}, lambda i: i["x"] > i["y"], "fp32")
check("reduce_max int32", one("reduce_max", {"dim": [0]}), {"x": ii.astype(np.int32)},
      lambda i: i["x"].max(axis=0), "fp32")
check("assign_value int64", dict(op="assign_value", inputs=[], outputs=[("Out", "o")],
                                 attrs={"shape": [3], "dtype": 3, "int64_values": ("longs", [2**40 + 1, -5, 7])}),
      {}, lambda i: np.array([2**40 + 1, -5, 7], np.int64), "fp32")
check("assign_value int32", dict(op="assign_value", inputs=[], outputs=[("Out", "o")],
                                 attrs={"shape": [2, 2], "dtype": 2, "int32_values": [1, -2, 3, 4]}),
      {}, lambda i: np.array([[1, -2], [3, 4]], np.int32), "fp32")
check("equal int64 shapes", dict(op="equal", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs={}),
      {"x": np.array([2**53 + 1, 4, 5], np.int64), "y": np.array([2**53, 4, 6], np.int64)},
      lambda i: i["x"] == i["y"], "fp32")
check("reduce_min int64", one("reduce_min", {"dim": [1]}), {"x": ii}, lambda i: i["x"].min(axis=1), "fp32")
check("tile int64", one("tile", {"repeat_times": [1, 2]}), {"x": ii}, lambda i: np.tile(i["x"], (1, 2)), "fp32")
# errors are reported, not guessed
check("gather index out of range", dict(op="gather", inputs=[("X", "x"), ("Index", "i")], outputs=[("Out", "o")],
                                        attrs={}),
      {"x": u(3, 2), "i": np.array([0, 3], np.int64)}, None, "fp32", expect_error=(3, "out of range"))
check("expand_v2 mismatch", one("expand_v2", {"shape": [4, 5]}), {"x": u(2, 5)}, None, "fp32",
      expect_error=(3, "does not match"))
check("pixel_shuffle channels", one("pixel_shuffle", {"upscale_factor": 2}), {"x": u(1, 6, 2, 2)}, None, "fp32",
      expect_error=(3, "not divisible"))
check("expand_times overflow", one("expand", {"expand_times": [2**62, 4]}), {"x": u(3, 2)}, None, "fp32",
      expect_error=(3, "overflows"))
check("tile repeat overflow", one("tile", {"repeat_times": [2**62]}), {"x": u(5)}, None, "fp32",
      expect_error=(3, "overflows"))
check("pixel_shuffle huge factor", one("pixel_shuffle", {"upscale_factor": 2**40}), {"x": u(1, 4, 2, 2)}, None, "fp32",
      expect_error=(3, "upscale_factor"))
check("expand_v2 of an empty tensor", one("expand_v2", {"shape": [3, -1, 2]}), {"x": u(0, 2)},
      lambda i: np.zeros((3, 0, 2), np.float32), "fp32")
check("top_k k too large", dict(op="top_k_v2", inputs=[("X", "x")], outputs=[("Out", "v"), ("Indices", "i")],
                                attrs={"k": 9}), {"x": u(2, 8)}, None, "fp32", expect_error=(3, "k = 9"))
check("unbind output count", dict(op="unbind", inputs=[("X", "x")], outputs=[("Out", "a"), ("Out", "b")],
                                  attrs={"axis": 0}), {"x": u(3, 2)}, None, "fp32", expect_error=(3, "needs that many"))
check("gather_nd index out of range", dict(op="gather_nd", inputs=[("X", "x"), ("Index", "i")], outputs=[("Out", "o")],
                                           attrs={}),
      {"x": u(3, 2), "i": np.array([[0, 1], [3, 0]], np.int64)}, None, "fp32", expect_error=(3, "out of range"))
check("assign_value count", dict(op="assign_value", inputs=[], outputs=[("Out", "o")],
                                 attrs={"shape": [2, 2], "dtype": 5, "fp32_values": ("floats", [1.0])}),
      {}, None, "fp32", expect_error=(3, "holds 1 values"))
finish()
