"""The minimal repro of Paddle-Lite's int8 GEMV activation fall-through (docs/paddle-lite-findings.md
§12, report G): data/gemv_hard_sigmoid.nb is conv2d_3 of the cls slim model alone (cldiff's repro
pack: feed, one ARM int8 conv2d with fp32 output and fused hard_sigmoid, 1x1 filter on a 1x1 map,
fetch), fed the INT8 input [0, 127] (so nothing is misread). Paddle-Lite's output OUT_DIR/out_0.npy
(from probes/paddle-lite/pl_probe_runner under qemu-aarch64) must equal x * min(max(x + 3, 0), 6) of
the linear result x, bit for bit, and differ from hard_sigmoid(x) = min(max(0.2 x + 0.5, 0), 1).

usage: repro_gemv.py DATA_DIR OUT_DIR   exit 0 when Paddle-Lite shows the fall-through."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import int8_ref as R  # noqa: E402
import nb_read  # noqa: E402

F = np.float32
data, out = sys.argv[1], sys.argv[2]
ops, p = nb_read.load(os.path.join(data, "gemv_hard_sigmoid.nb"))
o = [o for o in ops if o.type == "conv2d"][0]
assert o.attrs["act_type"] == "hard_sigmoid" and "Output0_scale" not in o.attrs
in_s = F(o.attrs["Input0_scale"][0])
q = np.load(os.path.join(data, "gemv_hard_sigmoid_input_0.npy"))
x = q.astype(F) * in_s
a = dict(o.attrs)
a["with_act"] = False
lin, _ = R.conv_layer(x, p[o.inputs["Filter"][0]], p[o.inputs["Bias"][0]], a, False, threads=1)
lin = lin.ravel()
want = np.minimum(np.maximum(lin * F(o.attrs["slope"]) + F(o.attrs["offset"]), F(0)), F(1))
fall = np.minimum(np.maximum(lin + F(3), F(0)), F(6)) * (lin * F(1))
y = np.load(os.path.join(out, "out_0.npy")).ravel()
print("paddle-lite      ", y)
print("hard_sigmoid(x)  ", want)
print("x*clip(x+3,0,6)  ", fall)
ok = np.array_equal(y, fall) and np.abs(y - want).max() > 0.5
print("repro_gemv: Paddle-Lite %s the hard_swish fall-through (max |paddle-lite - hard_sigmoid| %.3g)" % (
    "shows" if ok else "does NOT show", float(np.abs(y - want).max())))
sys.exit(0 if ok else 1)
