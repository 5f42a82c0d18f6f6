"""OpenCL conformance cases of the op-coverage additions (kernels/math.cl, kernels/gather.cl,
sync_batch_norm on norm.cl): called by test_cl_conformance.py with its `case` runner, so the
same rules apply (CPU float32 reference, an NDRange launch must be seen, oclgrind variant).
SMALL: the oclgrind run, where every case must stay tiny."""
import numpy as np


def add_cases(case, rnd, small):
    rng = np.random.default_rng(9090)
    sh = (1, 2, 3, 3) if small else (2, 3, 5, 7)
    trig = [("sin", -6, 6), ("cos", -6, 6), ("tan", -1.4, 1.4), ("asin", -1, 1), ("acos", -1, 1), ("atan", -8, 8)]
    for op, lo, hi in (trig[:2] if small else trig):
        case(op, dict(op=op, inputs=[("X", "x")], outputs=[("Out", "o")], attrs={}), {"x": rnd(*sh, lo=lo, hi=hi)})
    case("pow factor 2.5", dict(op="pow", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"factor": 2.5}),
         {"x": rnd(*sh, lo=0.0, hi=3.0)})
    if not small:
        case("pow FactorTensor run-time", dict(op="pow", inputs=[("X", "x"), ("FactorTensor", "f")],
                                               outputs=[("Out", "o")], attrs={"factor": 1.0}),
             {"x": rnd(*sh, lo=0.1, hi=2.0), "f": np.array([1.5], np.float32)})
    case("greater_than axis 1", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                     attrs={"axis": 1}), {"x": rnd(*sh), "y": rnd(sh[1], sh[2])})
    if not small:
        case("greater_than same shape", dict(op="greater_than", inputs=[("X", "x"), ("Y", "y")],
                                             outputs=[("Out", "o")], attrs={}), {"x": rnd(*sh), "y": rnd(*sh)})
    qa = np.round(rnd(*sh) * 4) / 4
    qb = np.round(rnd(*sh) * 4) / 4
    for op in (("less_equal",) if small else ("greater_equal", "less_than", "less_equal", "equal", "not_equal")):
        case(f"{op} (ties)", dict(op=op, inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs={}),
             {"x": qa, "y": qb})
    for n in ((3,) if small else (5, 4)):
        case(f"lrn n{n}", dict(op="lrn", inputs=[("X", "x")], outputs=[("Out", "o")],
                               attrs={"n": n, "k": 1.0, "alpha": 0.3, "beta": 0.75}),
             {"x": rnd(sh[0], 7, sh[2], sh[3], lo=-2, hi=2)}, k=n + 2)
    red = [([1], False), ([0, 2], True)] if small else [([1], False), ([0, 2], True), ([-1], False), ([1, 3], True)]
    for dims, keep in red:
        x = rnd(*sh, lo=-3, hi=3)
        ax = tuple(d % 4 for d in dims)
        case(f"reduce_max dim {dims} keep {keep}", dict(op="reduce_max", inputs=[("X", "x")], outputs=[("Out", "o")],
                                                     attrs={"dim": dims, "keep_dim": keep}), {"x": x})
        kk = int(np.prod([sh[a] for a in ax]))
        case(f"reduce_mean dim {dims} keep {keep}", dict(op="reduce_mean", inputs=[("X", "x")], outputs=[("Out", "o")],
                                                      attrs={"dim": dims, "keep_dim": keep}), {"x": x}, k=kk,
             mag=lambda f, ax=ax, keep=keep: np.abs(f["x"]).mean(axis=ax, keepdims=keep))
    x = rnd(*sh, lo=-3, hi=3)
    case("reduce_sum dim [1, 2]", dict(op="reduce_sum", inputs=[("X", "x")], outputs=[("Out", "o")],
                                       attrs={"dim": [1, 2]}), {"x": x}, k=sh[1] * sh[2],
         mag=lambda f: np.abs(f["x"]).sum(axis=(1, 2)))
    case("reduce_min dim [-1] keep", dict(op="reduce_min", inputs=[("X", "x")], outputs=[("Out", "o")],
                                          attrs={"dim": [-1], "keep_dim": True}), {"x": x})
    if not small:
        case("reduce_mean reduce_all", dict(op="reduce_mean", inputs=[("X", "x")], outputs=[("Out", "o")],
                                            attrs={"dim": [0], "reduce_all": True}), {"x": rnd(*sh)},
             k=int(np.prod(sh)), mag=lambda f: np.abs(f["x"]).mean(keepdims=False).reshape(1))
    case("expand", dict(op="expand", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"expand_times": [2, 1, 3]}),
         {"x": rnd(2, 3, 2)})
    case("expand_v2", dict(op="expand_v2", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"shape": [3, 2, 4, 2]}),
         {"x": rnd(2, 1, 2)})
    case("tile", dict(op="tile", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"repeat_times": [2, 1, 2, 3]}),
         {"x": rnd(2, 3, 2)})
    case("assign_value", dict(op="assign_value", inputs=[], outputs=[("Out", "o")],
                              attrs={"shape": [2, 3], "dtype": 5,
                                     "fp32_values": ("floats", [0.5, -1.25, 3.0, 0.1, 2.0, -0.7])}), {})
    for axis, idx in ([(1, np.array([1, 0], np.int64))] if small else
                      [(0, np.array([1, 0, 1], np.int64)), (1, np.array([2, 0, 2, 1], np.int32)),
                       (3, np.array([6, 0, 3], np.int64))]):
        case(f"gather axis {axis} {idx.dtype}", dict(op="gather", inputs=[("X", "x"), ("Index", "i")],
                                                    outputs=[("Out", "o")], attrs={"axis": axis}),
             {"x": rnd(*sh), "i": idx})
    a, b = sh[0] - 1, sh[1] - 1
    gidx = np.array([[[a, b], [0, 0]], [[0, b], [a, 0]]], np.int64) if small else \
        np.array([[[a, b], [0, 1]], [[a, 1], [0, b]], [[a, 0], [0, 0]]], np.int32)
    case(f"gather_nd Index {list(gidx.shape)} {gidx.dtype}",
         dict(op="gather_nd", inputs=[("X", "x"), ("Index", "i")], outputs=[("Out", "o")], attrs={}),
         {"x": rnd(*sh), "i": gidx})
    case("pixel_shuffle r2", dict(op="pixel_shuffle", inputs=[("X", "x")], outputs=[("Out", "o")],
                                  attrs={"upscale_factor": 2}), {"x": rnd(1, 8, 2, 3) if small else rnd(2, 12, 4, 5)})
    gs = [("bilinear", "zeros", True), ("nearest", "reflection", False)] if small else \
        [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for a in (True, False)]
    for mode, pad, align in gs:
        x = rnd(1, 2, 4, 5) if small else rnd(2, 3, 6, 7, lo=-2, hi=2)
        g = (rng.uniform(-1.3, 1.3, size=(x.shape[0], 3 if small else 5, 4, 2))).astype(np.float32)
        case(f"grid_sampler {mode} {pad} align {int(align)}",
             dict(op="grid_sampler", inputs=[("X", "x"), ("Grid", "g")], outputs=[("Output", "o")],
                  attrs={"mode": mode, "padding_mode": pad, "align_corners": align}), {"x": x, "g": g}, k=4)
    tk = rnd(2, 3, 9) if small else rnd(2, 5, 37)
    for largest, axis, k in ([(True, -1, 3)] if small else [(True, -1, 5), (False, 1, 2), (True, 0, 1)]):
        case(f"top_k_v2 k{k} axis {axis} largest {largest}",
             dict(op="top_k_v2", inputs=[("X", "x")], outputs=[("Out", "v"), ("Indices", "i")],
                  attrs={"k": k, "axis": axis, "largest": largest}), {"x": tk})
    case("top_k ties", dict(op="top_k", inputs=[("X", "x")], outputs=[("Out", "v"), ("Indices", "i")], attrs={"k": 4}),
         {"x": np.round(rnd(3, 11) * 3) / 3})
    case("unbind axis 1", dict(op="unbind", inputs=[("X", "x")], outputs=[("Out", "a"), ("Out", "b"), ("Out", "c")],
                               attrs={"axis": 1}), {"x": rnd(2, 3, 4)})
    if not small:
        case("sync_batch_norm", dict(op="sync_batch_norm", inputs=[("X", "x"), ("Scale", "s", "param"),
                                                                   ("Bias", "b", "param"), ("Mean", "m", "param"),
                                                                   ("Variance", "v", "param")],
                                     outputs=[("Y", "y")], attrs={"epsilon": 1e-5, "is_test": True}),
             {"x": rnd(2, 5, 4, 3), "s": rnd(5), "b": rnd(5), "m": rnd(5), "v": rnd(5, lo=0.1, hi=2)}, k=4)
