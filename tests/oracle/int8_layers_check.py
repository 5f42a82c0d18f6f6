"""Random int8 layers (conv2d, depthwise_conv2d, fc, mul, matmul, matmul_v2; fp32 and int8 outputs; relu, relu6,
hard_swish, leaky_relu; zero, negative and per-tensor weight scales) run by op_runner in the CPU
backend's int8 mode must equal the numpy oracle (int8_ref.py) exactly, element for element.

usage: int8_layers_check.py [--op-runner PATH] [--seed N] [--cases N]"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (op_runner lookup and attribute lines)
import int8_ref  # noqa: E402


def run(op, ins, outs, attrs, threads):
    """ins: [(slot, name, array, is_param)]; outs: [(slot, name)]. Returns (rc, stderr, {name: array})."""
    with tempfile.TemporaryDirectory(prefix="cd_int8_") as td:
        lines = ["op " + op, "prec fp32", "backend cpu", "threads %d" % threads, "int8 arm"]
        for slot, name, arr, param in ins:
            fn = os.path.join(td, name + ".npy")
            np.save(fn, np.ascontiguousarray(arr))
            lines.append("in %s %s%s as %s" % (slot, fn, " param" if param else "", name))
        files = {}
        for slot, name in outs:
            files[name] = os.path.join(td, "out_" + name + ".npy")
            lines.append("out %s %s as %s" % (slot, files[name], name))
        for k, v in attrs.items():
            lines.append(harness._attr_line(k, v))
        p = subprocess.run([harness._runner_path()], input="\n".join(lines).encode() + b"\n", capture_output=True,
                           timeout=300)
        got = {n: np.load(f) for n, f in files.items()} if p.returncode == 0 else {}
        return p.returncode, p.stderr.decode(errors="replace"), got


def scales(rng, n, kind):
    s = rng.uniform(0.001, 0.05, n)
    if kind == "zero":
        s[rng.integers(n)] = 0.0
    elif kind == "negative":
        s[rng.integers(n)] *= -1
    elif kind == "tensor":
        s = s[:1]
    return [float(v) for v in s]


def act_attrs(rng, kind, conv):
    if not conv:
        return {"activation_type": kind} if kind in ("relu", "relu6") else {}
    if not kind:
        return {}
    a = {"with_act": True, "act_type": kind}
    if kind == "relu6":
        a["fuse_brelu_threshold"] = 6.0
    if kind == "hard_swish":
        a.update(hard_swish_threshold=6.0, hard_swish_scale=6.0, hard_swish_offset=3.0)
    if kind == "leaky_relu":
        a["leaky_relu_alpha"] = 0.1
    return a


def conv_case(rng, i, big=None, pointwise=None):
    """pointwise: (channels, h, w): a 1x1 conv, stride 1, no padding (the integer-SIMD sums of
    gemm_int8_vnni.c where the CPU has AVX512-VNNI; channel counts off multiples of 4, pixel
    counts off multiples of 16, groups)."""
    dw = i % 3 == 1 and big is None and pointwise is None
    n = 1 + (i % 2)
    c = int(rng.integers(1, 9)) * (1 if not dw else 2)
    h, w = int(rng.integers(3, 20)), int(rng.integers(3, 20))
    k = int(rng.choice([1, 3, 5])) if not dw else int(rng.choice([3, 5]))
    if big is not None:  # long reductions: the GEMM path (K > 256), its exact pieces (K > 1040), and a
        # window of more than 1040 taps (33x33: the direct integer sums, dot4)
        c, k = big
    stride = int(rng.choice([1, 2]))
    pad = int(rng.integers(0, k // 2 + 2))
    dil = 1 if dw or i % 4 else 2
    if pointwise is not None:
        (c, h, w), k, stride, pad, dil = pointwise, 1, 1, 0, 1
    groups = c if dw else (2 if c % 2 == 0 and i % 5 == 0 else 1)
    oc = c if dw else int(rng.integers(1, 17)) * groups
    if (h + 2 * pad - dil * (k - 1) - 1) < 0 or (w + 2 * pad - dil * (k - 1) - 1) < 0:
        pad = k
    out8 = i % 2 == 0
    act = ["", "relu", "relu6", "hard_swish", "leaky_relu"][i % 5]
    in_s = float(rng.uniform(0.005, 0.05))
    x = rng.normal(0, 1.2, (n, c, h, w)).astype(np.float32)
    x.ravel()[:3] = np.array([0.5, -0.5, 1.5], np.float32) * np.float32(in_s)  # exact ties of x / in_s
    wq = rng.integers(-127, 128, (oc, c // groups, k, k)).astype(np.int8)
    bias = rng.normal(0, 0.5, oc).astype(np.float32)
    attrs = {"strides": [stride, stride], "paddings": [pad, pad], "dilations": [dil, dil], "groups": groups,
             "Input0_scale": [in_s], "Filter0_scale": scales(rng, oc, ["", "zero", "negative", "tensor"][i % 4]),
             "enable_int8": True,
             "__@kernel_type_attr@__": "%s/%s/4/2/1" % ("depthwise_conv2d" if dw else "conv2d",
                                                         "int8_out" if out8 else "fp32_out")}
    if out8:
        attrs["Output0_scale"] = [float(rng.uniform(0.02, 0.2))]
    attrs.update(act_attrs(rng, act, True))
    op = "depthwise_conv2d" if dw else "conv2d"
    rc, err, got = run(op, [("Input", "x", x, False), ("Filter", "w", wq, True), ("Bias", "b", bias, True)],
                       [("Output", "y")], attrs, 1 + i % 3)
    want, _ = int8_ref.conv_layer(x, wq, bias, attrs, out8, threads=1 + i % 3)
    desc = "%s n%d c%d %dx%d k%d s%d p%d d%d g%d oc%d %s %s" % (op, n, c, h, w, k, stride, pad, dil, groups, oc,
                                                            "int8_out" if out8 else "fp32_out", act or "no-act")
    return desc, rc, err, got.get("y"), want


def fc_case(rng, i):
    m, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 300)), int(rng.integers(1, 40))
    out8 = i % 2 == 1
    act = ["", "relu", "relu6"][i % 3]
    in_s = float(rng.uniform(0.005, 0.05))
    x = rng.normal(0, 1, (m, k)).astype(np.float32)
    wq = rng.integers(-127, 128, (k, n)).astype(np.int8)
    bias = rng.normal(0, 0.5, n).astype(np.float32)
    attrs = {"in_num_col_dims": 1, "Input0_scale": [in_s], "W0_scale": scales(rng, n, ["", "zero", "tensor"][i % 3]),
             "enable_int8": True, "__@kernel_type_attr@__": "fc/%s/4/2/1" % ("int8out" if out8 else "fp32out")}
    if out8:
        attrs["Out0_scale"] = [float(rng.uniform(0.05, 0.5))]
    attrs.update(act_attrs(rng, act, False))
    rc, err, got = run("fc", [("Input", "x", x, False), ("W", "w", wq, True), ("Bias", "b", bias, True)],
                       [("Out", "y")], attrs, 1 + i % 2)
    want, _ = int8_ref.fc_layer(x, wq, bias, attrs, out8)
    return "fc m%d k%d n%d %s %s" % (m, k, n, "int8_out" if out8 else "fp32_out", act or "no-act"), rc, err, got.get("y"), want


def mul_case(rng, i):
    m, k, n = int(rng.integers(1, 6)), int(rng.integers(1, 200)), int(rng.integers(1, 40))
    in_s = float(rng.uniform(0.005, 0.05))
    x = rng.normal(0, 1, (m, k)).astype(np.float32)
    wq = rng.integers(-127, 128, (k, n)).astype(np.int8)
    attrs = {"x_num_col_dims": 1, "y_num_col_dims": 1, "X0_scale": [in_s],
             "Y0_scale": scales(rng, n, ["", "zero", "tensor"][i % 3]), "enable_int8": True,
             "__@kernel_type_attr@__": "mul/def/4/2/1"}
    rc, err, got = run("mul", [("X", "x", x, False), ("Y", "w", wq, True)], [("Out", "y")], attrs, 1 + i % 2)
    want, _ = int8_ref.mul_layer(x, wq, attrs)
    return "mul m%d k%d n%d" % (m, k, n), rc, err, got.get("y"), want


def matmul_case(rng, i, big_k=None):
    """int8 matmul / matmul_v2: Y an INT8 weight (per-column or per-tensor Y0_scale) or an activation
    (one Y0_scale); batched, broadcast, transposed, 1-D Y, v1's outer product, alpha != 1; big_k: a
    reduction beyond CD_INT8_FLOAT_EXACT_K (the integer path)."""
    v2 = i % 2 == 0
    kind = i % 5
    b, m, k, n = int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 70)), int(rng.integers(1, 12))
    if big_k:
        k, kind = big_k, 0
    tx, ty = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    yparam = kind in (0, 1, 3)
    if kind == 0:    # x [m, k], y weight [k, n]
        xs, ys = (m, k), (k, n)
    elif kind == 1:  # x [b, m, k], y weight [k, n] (broadcast)
        xs, ys = (b, m, k), (k, n)
    elif kind == 2:  # x [b, m, k], y activation [b, k, n]
        xs, ys = (b, m, k), (b, k, n)
    elif kind == 3:  # x [b, m, k], y weight [k]
        xs, ys, ty = (b, m, k), (k,), False
    else:            # v1 outer product of two vectors, or v2 x [m, k] y activation [1, k, n]
        xs, ys = ((m,), (n,)) if not v2 else ((m, k), (1, k, n))
        if not v2:
            tx, ty, yparam = True, True, True
    if tx and len(xs) >= 2:
        xs = xs[:-2] + (xs[-1], xs[-2])
    if ty and len(ys) >= 2:
        ys = ys[:-2] + (ys[-1], ys[-2])
    in_s = float(rng.uniform(0.005, 0.05))
    x = rng.normal(0, 1, xs).astype(np.float32)
    ncol = 1 if len(ys) == 1 and not (not v2 and len(xs) == 1) else (ys[-1] if len(ys) == 1 or not ty else ys[-2])
    if not v2 and len(xs) == 1:
        ncol = ys[0]
    if yparam:
        y = rng.integers(-127, 128, ys).astype(np.int8)
        ysc = [float(v) for v in rng.uniform(0.001, 0.05, ncol)] if i % 3 else [float(rng.uniform(0.001, 0.05))]
    else:
        y = rng.normal(0, 1, ys).astype(np.float32)
        ysc = [float(rng.uniform(0.005, 0.05))]
    op = "matmul_v2" if v2 else "matmul"
    attrs = {"X0_scale": [in_s], "Y0_scale": ysc, "enable_int8": True, "alpha": [1.0, 0.5, 1.7][i % 3],
             ("trans_x" if v2 else "transpose_X"): tx, ("trans_y" if v2 else "transpose_Y"): ty,
             "__@kernel_type_attr@__": "%s/def/4/2/1" % op}
    rc, err, got = run(op, [("X", "x", x, False), ("Y", "y", y, yparam)], [("Out", "o")], attrs, 1 + i % 2)
    want = int8_ref.matmul_layer(x, y, attrs, v2)
    desc = "%s x%s y%s%s tx%d ty%d alpha %g" % (op, list(xs), list(ys), " (weight)" if yparam else " (activation)",
                                                tx, ty, attrs["alpha"])
    return desc, rc, err, got.get("o"), want


def main():
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 7
    cases = int(sys.argv[sys.argv.index("--cases") + 1]) if "--cases" in sys.argv else 60
    rng = np.random.default_rng(seed)
    fails = 0
    counts = {}
    jobs = [(lambda i=i: (fc_case if i % 4 == 3 else conv_case)(rng, i)) for i in range(cases)]
    jobs += [(lambda b=b, i=i: conv_case(rng, 2 * i, b)) for i, b in enumerate([(300, 1), (40, 3), (130, 3), (260, 5), (2, 33)])]
    jobs += [(lambda i=i, pw=pw: conv_case(rng, i, pointwise=pw))
             for i, pw in enumerate([(3, 4, 4), (8, 2, 8), (13, 3, 11), (16, 5, 7), (64, 1, 50), (88, 2, 50),
                                     (130, 4, 5), (300, 6, 6), (7, 1, 1), (2, 9, 9), (1100, 2, 9), (40, 16, 16)])]
    jobs += [(lambda i=i: mul_case(rng, i)) for i in range(max(3, cases // 20))]
    jobs += [(lambda i=i: matmul_case(rng, i)) for i in range(max(10, cases // 10))]
    jobs += [(lambda: matmul_case(rng, 0, 1100)), (lambda: matmul_case(rng, 3, 1300))]
    for job in jobs:
        desc, rc, err, got, want = job()
        kind = desc.split()[0]
        counts[kind] = counts.get(kind, 0) + 1
        if rc != 0:
            print("FAIL %s: op_runner exited %d: %s" % (desc, rc, err.strip()[-300:]))
            fails += 1
            continue
        got = got.astype(np.float32).reshape(want.shape)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        if not same.all():
            bad = np.nonzero(~same.ravel())[0]
            print("FAIL %s: %d of %d differ (first %d: cldiff %r oracle %r)" % (desc, bad.size, got.size, bad[0],
                                                                          got.ravel()[bad[0]], want.ravel()[bad[0]]))
            fails += 1
    print("%s: %d random int8 layers (%s), %d not bit-exact" % ("FAIL" if fails else "PASS", len(jobs),
                                                                ", ".join("%s %d" % kv for kv in sorted(counts.items())), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
