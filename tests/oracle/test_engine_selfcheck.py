"""Proves the oracle harness itself: correct references pass, deliberately wrong ones
FAIL (shape, value, NaN, a perturbation just above the bound), runner errors are
reported, and the bounds have the documented values."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import U16, U32, bound, check, compare, finish, ort_node  # noqa: E402

rng = np.random.default_rng(1234)
x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
relu = dict(op="relu", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={})
sig = dict(op="sigmoid", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={})
scale = dict(op="scale", inputs=[("X", "x")], outputs=[("Out", "y")],
             attrs={"scale": 0.5, "bias": 0.25, "bias_after_scale": True})

# --- correct references pass (onnxruntime and numpy), both precisions
for prec in ("fp32", "fp16"):
    check(f"relu vs ORT Relu", relu, {"x": x}, ort_node("Relu", ["x"], ["y"]), prec)
    check(f"sigmoid vs ORT Sigmoid", sig, {"x": x}, ort_node("Sigmoid", ["x"], ["y"]), prec)
    check(f"scale vs numpy", scale, {"x": x}, lambda i: i["x"] * np.float32(0.5) + np.float32(0.25), prec)

# --- wrong references must FAIL
check("relu vs abs (wrong op)", relu, {"x": x}, lambda i: np.abs(i["x"]), "fp32", expect_fail=True)
check("relu vs abs fp16 (wrong op)", relu, {"x": x}, lambda i: np.abs(i["x"]), "fp16", expect_fail=True)
check("relu vs wrong shape", relu, {"x": x}, lambda i: np.maximum(i["x"], 0).reshape(6, 35), "fp32", expect_fail=True)


def nan_one(i):
    r = np.maximum(i["x"], 0)
    r.flat[7] = np.nan
    return r


check("relu vs NaN in reference", relu, {"x": x}, nan_one, "fp32", expect_fail=True)


def perturbed(rel):
    def f(i):
        r = np.maximum(i["x"], 0).astype(np.float64)
        j = int(np.argmax(r))
        r.flat[j] *= 1 + rel
        return r.astype(np.float32)
    return f


# 3e-5 relative on one element is above the fp32 bound (1e-5 + u32): must fail;
# 2e-6 relative is inside it: must pass.
check("relu vs 3e-5 relative perturbation", relu, {"x": x}, perturbed(3e-5), "fp32", expect_fail=True)
check("relu vs 2e-6 relative perturbation", relu, {"x": x}, perturbed(2e-6), "fp32")
# fp16: a relative error of 8 u16 on one element is above the elementwise bound (2 u16 + u16)
check("relu fp16 vs 8 u16 perturbation", relu, {"x": x}, perturbed(8 * U16), "fp16", expect_fail=True)

# --- int8 weights are dequantized by the engine (docs/nb-format.md §6.4 weight-only scales)
wq = rng.integers(-127, 128, size=(6, 5), dtype=np.int8)           # fc W [K=6, N=5]
ws = (rng.random(5) * 0.05 + 0.01).astype(np.float32)               # one scale per N
xi = rng.standard_normal((3, 6)).astype(np.float32)
fc = dict(op="fc", inputs=[("Input", "x"), ("W", "fcw", "param")], outputs=[("Out", "y")],
          attrs={"in_num_col_dims": 1, "quantize_weight_bits": 8,
                 "quantization_type": "post_weight_channel_wise_abs_max",
                 "fcw_quant_scale": [float(v) for v in ws]})
wf = wq.astype(np.float32) * ws[None, :]
for prec in ("fp32", "fp16"):
    def fc_ref(i, wf=wf, prec=prec):
        w = wf.astype(np.float16).astype(np.float32) if prec == "fp16" else wf
        return i["x"] @ w
    check("fc int8 weight-only dequant", fc, {"x": xi, "fcw": wq}, fc_ref, prec, k=6,
          mag=np.abs(xi) @ np.abs(wf))
check("fc int8 without dequant scale is refused",
      dict(fc, attrs={"in_num_col_dims": 1}), {"x": xi, "fcw": wq}, None, "fp32",
      expect_error=(3, "no op that reads it carries a dequantization scale"))
cq = rng.integers(-127, 128, size=(4, 3, 3, 3), dtype=np.int8)      # conv Filter, scale per Cout
cs = (rng.random(4) * 0.02 + 0.005).astype(np.float32)
xc = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
conv = dict(op="conv2d", inputs=[("Input", "x"), ("Filter", "cw", "param")], outputs=[("Output", "y")],
            attrs={"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1,
                   "Filter0_scale": [float(v) for v in cs], "bit_length": 8})
cf = cq.astype(np.float32) * cs[:, None, None, None]
conv_mag = ort_node("Conv", ["ax", "aw"], ["m"], pads=[1, 1, 1, 1])({"ax": np.abs(xc), "aw": np.abs(cf)})["m"]
check("conv2d int8 Filter0_scale dequant", conv, {"x": xc, "cw": cq},
      lambda i: ort_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])({"x": i["x"], "w": cf})["y"], "fp32",
      k=27, mag=conv_mag)
check("conv2d int8 dequant vs undequantized (must differ)", conv, {"x": xc, "cw": cq},
      lambda i: ort_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])({"x": i["x"], "w": cq.astype(np.float32)})["y"],
      "fp32", k=27, mag=conv_mag, expect_fail=True)

# --- runner errors are reported with the exit code
check("unknown op is refused", dict(op="no_such_op", inputs=[("X", "x")], outputs=[("Out", "y")]),
      {"x": x}, None, "fp32", expect_error=(8, "#1 no_such_op_0 (no_such_op)"))


# --- bound arithmetic (pure, no runner)
def bound_case(name, ok):
    from harness import _results
    _results.append({"case": name, "prec": "-", "backend": "-", "ok": bool(ok), "detail": "bound arithmetic"})


r = np.array([1.0, -2.0, 0.0], dtype=np.float32)
bound_case("fp32 k=1 bound", np.allclose(bound(r, "fp32"), [1e-5 + U32 + 1e-30, 2e-5 + 2 * U32 + 1e-30, 1e-30]))
bound_case("fp16 k=1 bound", np.allclose(bound(r, "fp16"), [3 * U16 + 2**-24, 6 * U16 + 2**-24, 2**-24]))
bound_case("fp32 k=100 uses max|r|", np.allclose(bound(r, "fp32", k=100)[2], 100 * U32 * 2 + 1e-30))
bound_case("fp32 mag overrides", np.allclose(bound(r, "fp32", k=10, mag=np.array([4, 4, 4]))[2], 10 * U32 * 4 + 1e-30))
ok_int, _ = compare(np.array([1, 2], np.int64), np.array([1, 3], np.int64), "fp32")
bound_case("integer outputs must match exactly", not ok_int)
ok_inf, _ = compare(np.array([np.inf, -1], np.float32), np.array([np.inf, -1], np.float32), "fp32")
bound_case("equal infinities match", ok_inf)
ok_inf2, _ = compare(np.array([-np.inf], np.float32), np.array([np.inf], np.float32), "fp32")
bound_case("opposite infinities differ", not ok_inf2)
finish()
