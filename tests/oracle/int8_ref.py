"""Integer reference of Paddle-Lite's ARM int8 layers, in numpy (docs/int8.md has the sources).

Written from Paddle-Lite's aarch64 kernels at commit 3d329c95 (develop, 2024-03-28), not from
cldiff's C code:
  * float -> int8 (lite/backends/arm/math/type_trans.cc fp32_to_int8; the same write-back in
    gemm_prepacked_int8.cc GEMM_INT8_INT8_OUT and conv3x3s1_depthwise_int8.cc RESULT_INT8):
    v < -127 (or NaN) -> -127 (fcmge/bif), fcvtas (nearest, ties away from zero), sqxtn twice
    (saturate to int16, then int8: the top is 127). The multiplier is 1/scale computed in float.
  * int8 conv / depthwise / fc: int32 sum of int8 products; scvtf (int32 -> float, nearest even);
    fmla onto the bias (one fused multiply-add, one rounding) with the per-channel multiplier
    w_scale * in_scale (fp32 out) or w_scale * in_scale / out_scale and bias / out_scale (int8
    out) folded in float32 (conv_gemmlike.cc, fc_compute.cc PrepareForRun); activation in float
    (relu: max 0; relu6: min(max(y, 0), clip), clip / out_scale for int8 out; hard_swish:
    (y * (1/scale)) * min(max(y + offset, 0), threshold), the three constants / out_scale for int8
    out: gemm_prepacked_int8.cc GEMM_INT8_HARD_SWISH and gemm_prepack_int8 alpha[]); int8 out
    converted as above.
  * the scale folding as the released armv8 library computes it, per kernel (pl_kernel, pl_fold):
    the library is built with -ffast-math (cmake/postproject.cmake:148, tiny publish), so GCC
    reassociates the source's `ws * in_scale / out_scale` and multiplies by 1/out_scale; the forms
    below were read from the library's machine code (docs/int8.md "Against Paddle-Lite's ARM
    kernels"), and Winograd 3x3s1 convs (cores without dot-product) sum 4*S or 576*S.
cldiff carries an int8 activation as float32(q) * float32(scale); `carried` gives that value.
"""
from fractions import Fraction

import numpy as np

F32 = np.float32


def q8(v):
    """float32 array -> int8 as Paddle-Lite's aarch64 conversion."""
    v = np.asarray(v, F32)
    v = np.where(v >= F32(-127), v, F32(-127))  # NaN compares false: -127
    a = np.abs(v.astype(np.float64))
    r = np.sign(v.astype(np.float64)) * np.floor(a + 0.5)  # ties away from zero, exact for float32 inputs
    return np.clip(r, -127, 127).astype(np.int8)


def quantize(x, scale):
    """calib fp32_to_int8 with scale: q8(x * (1/scale)), the inverse computed in float32."""
    inv = F32(1) / F32(scale)
    return q8(np.asarray(x, F32) * inv)


def carried(q, scale):
    return q.astype(F32) * F32(scale)


def fma32(a, m, b):
    """Exactly rounded float32 fused multiply-add a*m + b of float32 arrays (broadcasting)."""
    a, m, b = (np.asarray(t, F32) for t in (a, m, b))
    a, m, b = np.broadcast_arrays(a, m, b)
    prod = a.astype(np.longdouble) * m.astype(np.longdouble)  # 24 + 24 bits: exact in 64
    s = prod + b.astype(np.longdouble)
    r = s.astype(F32)
    # Double rounding can only go wrong where s sits exactly on a float32 midpoint: redo those exactly.
    nb = np.nextafter(r, np.where(s > r.astype(np.longdouble), F32(np.inf), F32(-np.inf)))
    mid = (r.astype(np.longdouble) + nb.astype(np.longdouble)) / 2
    bad = np.nonzero((s == mid) & np.isfinite(r))
    for idx in zip(*bad):
        exact = Fraction(float(a[idx])) * Fraction(float(m[idx])) + Fraction(float(b[idx]))
        lo, hi = float(r[idx]), float(nb[idx])
        dlo, dhi = abs(exact - Fraction(lo)), abs(exact - Fraction(hi))
        if dlo < dhi:
            r[idx] = F32(lo)
        elif dhi < dlo:
            r[idx] = F32(hi)
        else:  # a true tie: nearest even mantissa
            r[idx] = F32(lo) if (np.float32(lo).view(np.uint32) & 1) == 0 else F32(hi)
    return r


def _pads(attrs, h, w, kh, kw, sh, sw):
    p = list(attrs.get("paddings", [0, 0]))
    if len(p) == 2:
        p = [p[0], p[0], p[1], p[1]]
    alg = attrs.get("padding_algorithm", "EXPLICIT")
    dl = list(attrs.get("dilations", [1, 1]))
    if alg == "VALID":
        p = [0, 0, 0, 0]
    elif alg == "SAME":
        dl = [1, 1]
        for i, (n, k, s) in enumerate(((h, kh, sh), (w, kw, sw))):
            out = (n + s - 1) // s
            tot = max((out - 1) * s + k - n, 0)
            p[2 * i], p[2 * i + 1] = tot // 2, tot - tot // 2
    return p, dl


def conv_acc(xq, wq, attrs):
    """int32 sums of an int8 conv2d/depthwise_conv2d (NCHW input xq, OIHW weights wq)."""
    n, c, h, w = xq.shape
    oc, cg, kh, kw = wq.shape
    g = int(attrs.get("groups", 1))
    st = list(attrs.get("strides", [1, 1]))
    (pt, pb, pl, pr), (dh, dw) = _pads(attrs, h, w, kh, kw, st[0], st[1])
    oh = (h + pt + pb - (dh * (kh - 1) + 1)) // st[0] + 1
    ow = (w + pl + pr - (dw * (kw - 1) + 1)) // st[1] + 1
    xp = np.zeros((n, c, h + pt + pb, w + pl + pr), np.float64)
    xp[:, :, pt:pt + h, pl:pl + w] = xq
    cols = np.empty((n, c, kh, kw, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh:i * dh + st[0] * (oh - 1) + 1:st[0], j * dw:j * dw + st[1] * (ow - 1) + 1:st[1]]
    og = oc // g
    out = np.empty((n, oc, oh, ow), np.float64)
    wf = wq.astype(np.float64)
    for gi in range(g):
        col = cols[:, gi * cg:(gi + 1) * cg].reshape(n, cg * kh * kw, oh * ow)
        wm = wf[gi * og:(gi + 1) * og].reshape(og, cg * kh * kw)
        # float64 products and sums of integers below 2^53 are exact
        out[:, gi * og:(gi + 1) * og] = np.einsum("ok,nkp->nop", wm, col).reshape(n, og, oh, ow)
    return out.astype(np.int64).astype(np.int32)


def act_params(attrs, out8, out_s, conv=True):
    """(kind, p0, p1, p2) of the fused activation as the int8 kernel applies it."""
    if conv:
        kind = attrs.get("act_type", "") if attrs.get("with_act", False) else ""
    else:
        kind = attrs.get("activation_type", "")
    d = F32(out_s) if (out8 and conv) else F32(1)
    if kind == "relu6":
        clip = F32(attrs.get("fuse_brelu_threshold", 6.0) if conv else attrs.get("alpha", 6.0))
        return ("relu6", clip / d if conv else clip, 0, 0)
    if kind == "hard_swish" and conv:
        t = F32(attrs.get("hard_swish_threshold", 6.0))
        s = F32(attrs.get("hard_swish_scale", 6.0))
        o = F32(attrs.get("hard_swish_offset", 3.0))
        return ("hard_swish", F32(1) / (s / d), o / d, t / d)
    if kind == "leaky_relu" and conv:
        return ("leaky_relu", F32(attrs.get("leaky_relu_alpha", 0.02)), 0, 0)
    if kind in ("", "relu"):
        return (kind, 0, 0, 0)
    if kind == "hard_sigmoid":
        # Not an activation of Paddle-Lite's int8 GEMM write-back (gemm_prepack_int8 knows relu,
        # relu6, leaky_relu, hard_swish): cldiff's documented choice (docs/int8.md) applies it on
        # the real-valued result, min(max(slope * y + offset, 0), 1) in float32, then requantizes.
        return ("hard_sigmoid", F32(attrs.get("slope", 0.2)), F32(attrs.get("offset", 0.5)), 0)
    raise NotImplementedError("activation %r on an int8 layer" % kind)


def apply_act(y, a):
    kind, p0, p1, p2 = a
    y = np.asarray(y, F32)
    if kind == "relu":
        return np.where(y > 0, y, F32(0))
    if kind == "relu6":
        y = np.where(y > 0, y, F32(0))
        return np.where(y < p0, y, F32(p0))
    if kind == "leaky_relu":
        return np.where(y >= 0, y, y * F32(p0))
    if kind == "hard_swish":
        g = y + F32(p1)
        g = np.where(g > 0, g, F32(0))
        g = np.where(g < p2, g, F32(p2))
        return (y * F32(p0)) * g
    if kind == "hard_sigmoid":
        t = y * F32(p0) + F32(p1)
        t = np.where(t < 0, F32(0), t)
        return np.where(t > 1, F32(1), t)
    return y


def pl_kernel(x_shape, w_shape, attrs, threads, dotprod=False):
    """Paddle-Lite's kernel for an int8 conv (lite/kernels/arm/conv_compute.cc PARAM_INIT and
    ConvCompute<kInt8, *>::PrepareForRun; has_dot() false on cores it does not list, as under
    qemu-user): 'dw', 'direct' (3x3 s2), 'wino2' / 'wino4' (3x3 s1, conv_winograd.cc:222:
    OH*OW / (8 * threads) < 16 takes 2x2 tiles), or 'gemm'."""
    n, c, h, w = x_shape
    oc, cg, kh, kw = w_shape
    g = int(attrs.get("groups", 1))
    st = list(attrs.get("strides", [1, 1]))
    (pt, pb, pl, pr), (dh, dw) = _pads(attrs, h, w, kh, kw, st[0], st[1])
    pads_equal = pt == pb and pl == pr
    ks_equal = st[0] == st[1] and kh == kw
    no_dil = dh == 1 and dw == 1
    kps_equal = pt == pl and ks_equal
    flag_dw = (kh, kw) in ((3, 3), (5, 5)) and st[1] in (1, 2)
    if g == c and c == oc and kps_equal and pads_equal and no_dil and flag_dw:
        return "dw"
    if g == 1 and kw == 3 and no_dil and pads_equal and ks_equal and not dotprod:
        if st[0] == 2 and st[1] == 2:
            return "direct"
        if st[1] == 1:
            oh = (h + pt + pb - (kh - 1) - 1) // st[0] + 1
            ow = (w + pl + pr - (kw - 1) - 1) // st[1] + 1
            return "wino2" if oh * ow // (8 * max(threads, 1)) < 16 else "wino4"
    return "gemm"


def pl_fold(kind, out8, ws, in_s, out_s, b):
    """(multiplier, bias) per channel as the armv8 library folds them (float32 arrays ws, b):
       kind    int8_out m                      int8_out b   fp32_out m
       gemm    ws * (in / out)                 b / out      ws * in      conv_gemmlike.cc:69,77
       dw      ws * (in * (1/out)); one scale: (ws * (1/out)) * in; b * (1/out)   conv_depthwise.cc:284,295
       direct  ws * (in / out)                 b * (1/out)  ws * in      conv_direct.h:147-175
       wino*   ((ws * in) * (1/out)) * c       b * (1/out)  (ws * in) * c  conv_winograd.cc:177-240
       src     (ws * in) / out                 b / out      ws * in      (fc: the source's order)
    c = 0.25 (2x2 tiles) or float32(1/576) (4x4 tiles)."""
    in_s, out_s = F32(in_s), F32(out_s)
    c = F32(0.25) if kind == "wino2" else F32(1) / F32(576)
    wino = kind in ("wino2", "wino4")
    if not out8:
        m = ws * in_s
        return (m * c if wino else m), b
    inv = F32(1) / out_s
    if kind == "dw":
        m = (ws * inv) * in_s if ws.size == 1 else ws * (in_s * inv)
        return m, b * inv
    if kind == "direct":
        return ws * (in_s / out_s), b * inv
    if wino:
        return ((ws * in_s) * inv) * c, b * inv
    if kind == "gemm":
        return ws * (in_s / out_s), b / out_s
    return (ws * in_s) / out_s, b / out_s


def epilogue(acc, ch_axis, ws, in_s, bias, out8, out_s, act, kind="src"):
    """acc: int32 array; per-channel multiplier along ch_axis; kind: pl_kernel's answer ('src' for
    fc). Returns (float32 result, int8 or None)."""
    nch = acc.shape[ch_axis]
    ws = np.asarray(ws, F32)
    one = ws.size == 1
    b = np.zeros(nch, F32) if bias is None else np.asarray(bias, F32).reshape(-1)
    if b.size == 1:
        b = np.full(nch, b[0], F32)
    real = act[0] == "hard_sigmoid"  # applied in the real domain, see act_params
    m, b = pl_fold(kind, out8 and not real, ws, in_s, out_s, b)
    m = np.full(nch, m[0], F32) if one else m
    shape = [1] * acc.ndim
    shape[ch_axis] = nch
    a = acc.astype(F32)
    if kind in ("wino2", "wino4"):  # the kernel's int32 is 4*S or 576*S; scvtf rounds it to nearest
        a = (acc.astype(np.int64) * (4 if kind == "wino2" else 576)).astype(F32)
    y = fma32(a, m.reshape(shape), b.reshape(shape))
    y = apply_act(y, act)
    if not out8:
        return y, None
    if real:
        y = y * (F32(1) / F32(out_s))
    q = q8(y)
    return carried(q, out_s), q


def conv_layer(x, wq, bias, attrs, out8, second=None, threads=2):
    """Float input x (cldiff's carried activation or a float tensor) -> (float32 out, int8 or None).
    second: the SecondInput of a conv+elementwise_add fusion (fuse_elementwise_op_type). Paddle-Lite's
    ARM kernels ignore it; cldiff's documented choice (docs/int8.md) adds it in float after the
    activation computed on the real value, relu for fusion_elementwise_add_activation, then requantizes.
    threads: cldiff's (and Paddle-Lite's) thread count, which picks the Winograd tile size."""
    in_s = attrs["Input0_scale"][0]
    out_s = attrs["Output0_scale"][0] if out8 else 1.0
    kind = pl_kernel(np.shape(x), wq.shape, attrs, threads)
    acc = conv_acc(quantize(x, in_s), wq, attrs)
    fe = attrs.get("fuse_elementwise_op_type", "")
    if fe and second is not None:
        y, _ = epilogue(acc, 1, attrs["Filter0_scale"], in_s, bias, False, 1.0, act_params(attrs, False, 1.0, True),
                        kind)
        y = y + np.asarray(second, F32).reshape(y.shape)
        if fe == "fusion_elementwise_add_activation":
            y = np.where(y > 0, y, F32(0))
        if not out8:
            return y, None
        q = q8(y * (F32(1) / F32(out_s)))
        return carried(q, out_s), q
    return epilogue(acc, 1, attrs["Filter0_scale"], in_s, bias, out8, out_s, act_params(attrs, out8, out_s, True),
                    kind)


def fc_layer(x, wq, bias, attrs, out8):
    in_s = attrs["Input0_scale"][0]
    out_s = attrs["Out0_scale"][0] if out8 else 1.0
    k, n = wq.shape
    xq = quantize(x, in_s).reshape(-1, k).astype(np.float64)
    acc = (xq @ wq.astype(np.float64)).astype(np.int64).astype(np.int32)
    return epilogue(acc, 1, attrs["W0_scale"], in_s, bias, out8, out_s, act_params(attrs, out8, out_s, False))


def mul_layer(x, wq, attrs):
    """int8 mul (lite/kernels/arm/mul_compute.cc): X flattened at x_num_col_dims, Y [K, N]; the GEMM
    writes float(S) (scale 1, no bias), then mul_add_n_scale_bias multiplies by Y0_scale[n] * X0_scale."""
    in_s = attrs["X0_scale"][0]
    xc = int(attrs.get("x_num_col_dims", 1))
    x = np.asarray(x, F32)
    m = int(np.prod(x.shape[:xc]))
    w2 = wq.reshape(int(np.prod(wq.shape[:int(attrs.get("y_num_col_dims", 1))])), -1)
    xq = quantize(x, in_s).reshape(m, -1).astype(np.float64)
    acc = (xq @ w2.astype(np.float64)).astype(np.int64).astype(np.int32)
    ws = np.asarray(attrs["Y0_scale"], F32)
    ws = np.full(w2.shape[1], ws[0], F32) if ws.size == 1 else ws
    return acc.astype(F32) * (ws * F32(in_s)), None


def matmul_layer(x, y, attrs, v2):
    """int8 matmul / matmul_v2 (lite/kernels/arm/matmul_compute.cc, matmul_v2_compute.cc, kernel
    Matmul_int8_f32): X quantized with X0_scale; Y an int8 weight as stored, or an activation
    quantized with Y0_scale[0]; the exact integer products summed, float(S) times the scale folded
    in float32 as (X0_scale * Y0_scale[n]) * alpha (ReInitWhenNeeded, matmul_add_n_scale_bias)."""
    in_s = F32(attrs["X0_scale"][0])
    ws = np.asarray(attrs["Y0_scale"], F32)
    xq = quantize(x, in_s).astype(np.int64)
    yq = (y if y.dtype == np.int8 else quantize(y, ws[0])).astype(np.int64)
    tx = bool(attrs.get("trans_x" if v2 else "transpose_X", False))
    ty = bool(attrs.get("trans_y" if v2 else "transpose_Y", False))
    alpha = F32(attrs.get("alpha", 1.0))
    if not v2 and xq.ndim == 1 and yq.ndim == 1 and tx and ty:
        acc = np.outer(xq, yq)
    else:
        if tx and xq.ndim >= 2:
            xq = np.swapaxes(xq, -1, -2)
        if ty and yq.ndim >= 2:
            yq = np.swapaxes(yq, -1, -2)
        acc = np.matmul(xq, yq)
    sc = (in_s * ws) * alpha
    return np.asarray(acc, np.int32).astype(F32) * sc


def calib_layer(x, scale):
    """calib fp32_to_int8 (and int8_to_fp32 on a carried value): the carried float and the int8."""
    q = quantize(x, scale)
    return carried(q, scale), q
