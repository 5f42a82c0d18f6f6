#!/usr/bin/env python3
"""The two minimal Paddle models of docs/paddle-lite-findings.md §4 (upstream reports): each in a
"stale" form (a VarDesc declares a shape unlike the one the op computes) and a "right" form.

    pl_findings_mini.py OUT_DIR

  fc_layout_{stale,right}/     x[-1,200,1,1] -> reshape2(shape [-1,200]) -> fc(W[200,2], b[2]);
                               the reshape2 output declared [-1,8,-1,-1] (stale) or [-1,200]
  fc_in/input_0.npy            x; fc_expected.npy: x@W+b; fc_wrong_model.npy: what reading the
                               ImageDefault image of [1,200] as ImageFolder computes
  reshape_fold_{stale,right}/  x[-1,2,-1,-1] + reshape2(parameter bias[2], shape [1,2,1,1]);
                               the reshape2 output declared [-1,16,-1,-1] (stale) or [1,2,1,1]
  add_in/input_0.npy           x [1,2,3,4]; add_expected.npy: x + bias
  fetch_folded/                reshape_fold_right plus a second fetch of the reshape2 output

Written with a small protobuf encoder (framework.proto field numbers, as src/backends/paddlelite/pd_export.c
lists them); the params file as Paddle-Lite's LoadCombinedParamsPb reads it (names sorted).
"""
import os, struct, sys
import numpy as np

def varint(v):
    v &= (1 << 64) - 1; out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v: return bytes(out)
def key(f, wt): return varint((f << 3) | wt)
def vi(f, v): return key(f, 0) + varint(v)
def ln(f, b): return key(f, 2) + varint(len(b)) + b
def s(f, t): return ln(f, t.encode())
FP32, INT32, LOD, FEED, FETCH = 5, 2, 7, 9, 10

def tdesc(dt, dims): return vi(1, dt) + b"".join(vi(2, d) for d in dims)
def var(name, dims=None, dt=FP32, kind=LOD, persist=False):
    vt = vi(1, kind)
    if kind == LOD: vt += ln(3, ln(1, tdesc(dt, dims)) + vi(2, 0))
    return s(1, name) + ln(2, vt) + (vi(3, 1) if persist else b"")
def opvar(slot, args): return s(1, slot) + b"".join(s(2, a) for a in args)
def attr_i(n, v): return s(1, n) + vi(2, 0) + vi(3, v)
def attr_ints(n, vs): return s(1, n) + vi(2, 3) + b"".join(vi(6, v) for v in vs)
def attr_b(n, v): return s(1, n) + vi(2, 6) + vi(10, int(v))
def op(typ, ins, outs, attrs=()):
    return (b"".join(ln(1, opvar(k, v)) for k, v in ins.items()) + b"".join(ln(2, opvar(k, v)) for k, v in outs.items())
            + s(3, typ) + b"".join(ln(4, a) for a in attrs))
def param(arr):
    d = tdesc(FP32, list(arr.shape))
    return struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(d)) + d + arr.astype("<f4").tobytes()
def write(dirn, vars_, ops, params):
    os.makedirs(dirn, exist_ok=True)
    blk = vi(1, 0) + vi(2, -1) + b"".join(ln(3, v) for v in vars_) + b"".join(ln(4, o) for o in ops)
    open(os.path.join(dirn, "model.pdmodel"), "wb").write(ln(1, blk) + ln(4, vi(1, 0)))
    open(os.path.join(dirn, "model.pdiparams"), "wb").write(b"".join(param(params[k]) for k in sorted(params)))

out = sys.argv[1]; rng = np.random.default_rng(7)
# A: reshape2 [1,200,1,1] -> [-1,200] declared rank 4, then fc (ImageDefault output read as ImageFolder)
for tag, rdims in (("stale", [-1, 8, -1, -1]), ("right", [-1, 200])):
    w = rng.standard_normal((200, 2)).astype(np.float32) if tag == "stale" else w
    b = np.array([0.1, -0.2], np.float32)
    vars_ = [var("feed", kind=FEED), var("fetch", kind=FETCH), var("x", [-1, 200, 1, 1]), var("r", rdims),
             var("r_xshape", [0, -1, 200, 1, 1]), var("y", [-1, 2]), var("fc_w", [200, 2], persist=True),
             var("fc_b", [2], persist=True)]
    ops = [op("feed", {"X": ["feed"]}, {"Out": ["x"]}, [attr_i("col", 0)]),
           op("reshape2", {"X": ["x"]}, {"Out": ["r"], "XShape": ["r_xshape"]}, [attr_ints("shape", [-1, 200])]),
           op("fc", {"Input": ["r"], "W": ["fc_w"], "Bias": ["fc_b"]}, {"Out": ["y"]}, [attr_i("in_num_col_dims", 1)]),
           op("fetch", {"X": ["y"]}, {"Out": ["fetch"]}, [attr_i("col", 0)])]
    write(os.path.join(out, "fc_layout_" + tag), vars_, ops, {"fc_w": w, "fc_b": b})
x = rng.standard_normal((1, 200, 1, 1)).astype(np.float32)
os.makedirs(os.path.join(out, "fc_in"), exist_ok=True); np.save(os.path.join(out, "fc_in", "input_0.npy"), x)
np.save(os.path.join(out, "fc_expected.npy"), (x.reshape(1, 200).astype(np.float64) @ w + b).astype(np.float32))
np.save(os.path.join(out, "fc_wrong_model.npy"), (x.reshape(200)[:50].astype(np.float64) @ w[0::4] + b).astype(np.float32))
# B: reshape2 of a parameter [2] -> [1,2,1,1] declared [-1,16,-1,-1], then elementwise_add
for tag, rdims in (("stale", [-1, 16, -1, -1]), ("right", [1, 2, 1, 1])):
    bias = np.array([0.5, -1.5], np.float32)
    vars_ = [var("feed", kind=FEED), var("fetch", kind=FETCH), var("x", [-1, 2, -1, -1]), var("bias", [2], persist=True),
             var("c", rdims), var("c_xshape", [0, 2]), var("y", [-1, 2, -1, -1])]
    ops = [op("feed", {"X": ["feed"]}, {"Out": ["x"]}, [attr_i("col", 0)]),
           op("reshape2", {"X": ["bias"]}, {"Out": ["c"], "XShape": ["c_xshape"]}, [attr_ints("shape", [1, 2, 1, 1])]),
           op("elementwise_add", {"X": ["x"], "Y": ["c"]}, {"Out": ["y"]}, [attr_i("axis", -1)]),
           op("fetch", {"X": ["y"]}, {"Out": ["fetch"]}, [attr_i("col", 0)])]
    write(os.path.join(out, "reshape_fold_" + tag), vars_, ops, {"bias": bias})
    if tag == "right":  # the same, correct shapes, plus a fetch of the reshape2 output (folded by Opt)
        write(os.path.join(out, "fetch_folded"), vars_, ops + [op("fetch", {"X": ["c"]}, {"Out": ["fetch"]},
                                                                  [attr_i("col", 1)])], {"bias": bias})
x2 = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
os.makedirs(os.path.join(out, "add_in"), exist_ok=True); np.save(os.path.join(out, "add_in", "input_0.npy"), x2)
np.save(os.path.join(out, "add_expected.npy"), x2 + bias.reshape(1, 2, 1, 1))
print("minimal models in", out)
