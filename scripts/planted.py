#!/usr/bin/env python3
"""Planted-bug benchmark: plant known bugs into copies of kernels/*.cl, run cldiff on each
(`--kernel-dir`), and score whether it fails and names the layer the bug is in.

    scripts/planted.sh [--cldiff PATH] [--only ID,...] [--out DIR] [--models DIR]
                       [--no-repeat] [--keep-dumps] [--list] [--check]

Every mutation is a kernel file, one or more (needle, replacement) edits (each needle must
occur exactly once in the file: the run stops before anything runs when one does not, so a
changed kernel shows at once), a precision, a model (+ shape, input, environment), the layer
the bug first changes (by reasoning about the model, see docs/planted-bugs.md), a description
and a bug class. For each one:

    cldiff MODEL --layers all --fp32|--fp16 [--shape ..] [--input ..] --kernel-dir MUTDIR
           --out OUT/runs/ID --quiet --no-repro --cache-dir OUT/clcache

and, for races / uninitialised reads, the same with --repeat 3 (OUT/runs/ID-repeat). Every
(model, precision, shape, input, environment) is first run clean (OUT/clean/...).

Both summary.json schemas are read: new binaries (verdict_kind, first_fault) and old ones
(verdict, first_divergence{kind: local|inherited}). A mutation is *detected* when cldiff exits
1 (out of tolerance) or 5 (crash); *exact* when the named layer is the expected one and its
kind is kernel_fault (new) / local (old). Results: a table on stdout, OUT/planted.csv,
OUT/planted.md. Exit 0 (a benchmark, not a test) unless a needle is missing (2) or the
binary/models cannot be found (2).
"""
import argparse
import csv
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY = "@testdata/mobilenet_tiny.nb"
MULTI = "@testdata/multi_input.nb"
CLS = "ppocr_v2.0_cls_fp32_arm_v2.14rc.nb"
MASK = "mask_detector_fp32_arm_v2.10rc.nb"
PYR = "pyramidbox_lite_fp32_arm_v2.10rc.nb"
DET = "ppocr_v3_det_fp32_x86_v2.12.nb"
SHAPES = {CLS: ["x=1,3,48,192"], DET: ["x=1,3,320,320"], PYR: ["@HUB_pyramidbox_lite_mobile@image=1,3,256,256"]}
GPU = {"CLDIFF_CL_GPU_KERNELS": "1"}  # force conv2d_gemm_* (local memory, barriers) on a CPU device
U3 = "u3"  # input: uniform[-3,3) instead of cldiff's default uniform[-1,1) (see make_inputs)

# Store line of conv2d_cpu_* (the kernel PoCL runs for conv2d: CL_DEVICE_TYPE_CPU)
CPU_STORE = "cv_store(out, (n * Cout + oc) * npix + p0 + j, acc[i][j],"
HSWISH = "return (ACC)(f * (t < 0.0f ? 0.0f : (t > a ? a : t)) / b);"
RELU6 = "case A_RELU6: return f < 0.0f ? ACC_ZERO : (f > a ? (ACC)a : x);"
HALF_ROUND = ("{ ushort hb_; vstore_half_rte(%s, 0, (__private half *)&hb_); "
              "%s = vload_half(0, (__private const half *)&hb_); }")


def M(id, kind, file, edits, prec, model, expected, desc, env=None, inp=None, repeat=False):
    return dict(id=id, kind=kind, file=file, edits=edits, prec=prec, model=model, expected=expected, desc=desc,
                env=env or {}, input=inp, repeat=repeat)


MUTATIONS = [
    # ---- conv2d_cpu_* (conv.cl, the GEMM-free kernel PoCL runs for conv2d) ----
    M("conv_cpu_right_border", "border", "conv.cl",
      [("(j < np && iy >= 0 && iy < H && ix >= 0 && ix < W)", "(j < np && iy >= 0 && iy < H && ix >= 0 && ix < W - 1)")],
      "fp32", TINY, "conv2d_0", "im2col bound ix < W-1: the last input column reads as padding (3x3 pad 1 reads it)"),
    M("conv_cpu_top_border", "border", "conv.cl",
      [("(j < np && iy >= 0 &&", "(j < np && iy > 0 &&")],
      "fp32", MULTI, "conv2d_0", "im2col bound iy > 0: the first input row reads as padding"),
    M("conv_cpu_k_remainder", "partial-tile", "conv.cl",
      [("for (int k = 0; k < K; k++) {", "for (int k = 0; k < (K & ~3); k++) {")],
      "fp32", TINY, "conv2d_0", "K loop unrolled by 4 without its remainder: conv2d_0 (K = 27) drops 3 terms"),
    M("conv_cpu_pixel_tail", "partial-tile", "conv.cl",
      [("const int np = npix - p0 < CV_CPU_RN ? npix - p0 : CV_CPU_RN;",
        "const int np = npix - p0 <= CV_CPU_RN ? npix - p0 - 1 : CV_CPU_RN;")],
      "fp32", TINY, "conv2d_0", "last pixel tile (<= 8 pixels) leaves its last pixel unwritten"),
    M("conv_cpu_channel_tail", "partial-tile", "conv.cl",
      [("const int nm = cout_g - m0 < rm ? cout_g - m0 : rm;", "const int nm = cout_g - m0 < rm ? cout_g - m0 - 1 : rm;")],
      "fp32", CLS, "conv2d_2", "channel remainder (cout_g % rm != 0) drops its last channel; first at conv2d_2 (Cout 2, rm 4)"),
    M("conv_cpu_scale_1e-3", "scale-1e-3", "conv.cl",
      [(CPU_STORE, CPU_STORE.replace("acc[i][j],", "acc[i][j] * (ACC)1.001f,"))],
      "fp32", TINY, "conv2d_0", "conv output scaled by 1.001 (1e-3 relative) before bias/activation"),
    M("conv_cpu_scale_1e-3_fp16", "scale-1e-3", "conv.cl",
      [(CPU_STORE, CPU_STORE.replace("acc[i][j],", "acc[i][j] * (ACC)1.001f,"))],
      "fp16", TINY, "conv2d_0", "the same 1e-3 scale error in an fp16 run"),
    M("conv_cpu_scale_1e-3_fp16_deep", "scale-1e-3", "conv.cl",
      [(CPU_STORE, CPU_STORE.replace("acc[i][j],", "acc[i][j] * (ACC)1.001f,"))],
      "fp16", MASK, "conv2d_0", "1e-3 scale in every conv of a 22-conv fp16 network (compounds to ~2%)"),
    M("conv_bias_index", "bias-index", "conv.cl",
      [("if (bias) v += LOAD(bias, oc);", "if (bias) v += LOAD(bias, oc > 0 ? oc - 1 : 0);")],
      "fp32", TINY, "conv2d_0", "conv epilogue (cv_store) adds the bias of channel oc-1"),
    M("conv_relu6_5.9", "activation", "conv.cl",
      [(RELU6, RELU6.replace("(f > a ? (ACC)a : x)", "(f > a - 0.1f ? (ACC)(a - 0.1f) : x)"))],
      "fp32", TINY, "conv2d_0", "fused relu6 clamps at 5.9; default input: conv2d_0/conv2d_3 never exceed 5.9"),
    M("conv_relu6_5.9_u3", "activation", "conv.cl",
      [(RELU6, RELU6.replace("(f > a ? (ACC)a : x)", "(f > a - 0.1f ? (ACC)(a - 0.1f) : x)"))],
      "fp32", TINY, "conv2d_0", "the same with an input in [-3,3): conv2d_0 outputs pass 5.9", inp=U3),
    M("conv_hswish_threshold_offset", "activation", "conv.cl",
      [(HSWISH, HSWISH.replace("(t > a ? a : t)", "(t > c ? c : t)"))],
      "fp32", CLS, "conv2d_0", "fused hard_swish clamps x+offset at the offset (3) instead of the threshold (6)"),
    M("conv_cpu_nan_one", "nan", "conv.cl",
      [(CPU_STORE, CPU_STORE.replace("acc[i][j],", "(Cin == 16 && Cout == 32 && oc == 5 && p0 + j == 100) ? (ACC)NAN : acc[i][j],"))],
      "fp32", TINY, "conv2d_1", "one output element (channel 5, pixel 100) of the 16->32 conv is NaN"),
    M("conv_cpu_half_acc_fp16", "half-accumulation", "conv.cl",
      [("for (int j = 0; j < CV_CPU_RN; j++) acc[i][j] = mad(wv, xv[j], acc[i][j]);",
        "for (int j = 0; j < CV_CPU_RN; j++) " + HALF_ROUND % ("mad(wv, xv[j], acc[i][j])", "acc[i][j]"))],
      "fp16", MASK, "conv2d_0", "conv accumulator rounded to half after every term (fp16 run; float expected)"),
    # ---- conv2d_dw (depthwise) ----
    M("dw_right_border", "border", "conv.cl",
      [("if (ix < 0 || ix >= W) continue;", "if (ix < 0 || ix >= W - 1) continue;")],
      "fp32", TINY, "depthwise_conv2d_0", "depthwise skips the last input column"),
    M("dw_channel_offset", "channel-offset", "conv.cl",
      [("const int ch = nc % C;", "const int ch = (nc + 1) % C;")],
      "fp32", CLS, "depthwise_conv2d_0", "depthwise uses the filter and bias of the next channel"),
    M("dw_stride_swap", "index", "conv.cl",
      [("int iy = oy * sh - pt + ky * dh;", "int iy = oy * sw - pt + ky * dh;")],
      "fp32", CLS, "depthwise_conv2d_0", "depthwise row index uses the x stride (strides [2,1] in ppocr cls)"),
    # ---- conv2d_gemm_* (GPU kernels, forced with CLDIFF_CL_GPU_KERNELS=1) ----
    M("gpu_k_tail_skipped", "partial-tile", "conv.cl",
      [("for (int k0 = 0; k0 < K; k0 += TK) {", "for (int k0 = 0; k0 + TK <= K; k0 += TK) {")],
      "fp32", TINY, "conv2d_0", "GEMM K loop skips the last partial 16-deep slice (K = 27: 11 terms lost)", env=GPU),
    M("gpu_missing_barrier", "race", "conv.cl",
      [("CV_STASH(0)\n    barrier(CLK_LOCAL_MEM_FENCE);", "CV_STASH(0)")],
      "fp32", TINY, "conv2d_0", "no barrier between stashing the first tile and reading it (PoCL puts an "
      "implicit barrier at the entry of a loop that holds one: healed there)", env=GPU, repeat=True),
    M("gpu_war_double_buffer", "race", "conv.cl",
      [("if (more) { CV_STASH(1 - cur) }", "if (more) { CV_STASH(cur) }")],
      "fp32", TINY, "conv2d_0", "next slice stashed into the buffer others still read (write-after-read race)",
      env=GPU, repeat=True),
    M("gpu_no_barriers", "race", "conv.cl",
      [("CV_STASH(0)\n    barrier(CLK_LOCAL_MEM_FENCE);", "CV_STASH(0)"),
       ("/* the other buffer is complete and nobody reads this one any more */\n        barrier(CLK_LOCAL_MEM_FENCE);",
        "/* the other buffer is complete and nobody reads this one any more */")],
      "fp32", TINY, "conv2d_0", "GEMM without any barrier: work-items read tiles others have not stashed yet",
      env=GPU, repeat=True),
    M("gpu_pixel_tail_store", "race", "conv.cl",
      [("if (q >= npix) continue;", "if (q > npix) continue;")],
      "fp32", CLS, "conv2d_10", "last pixel tile stores one pixel past each channel, over pixel 0 of the next "
      "one. Visible where the owner of that pixel ran first: conv2d_10 (npix 1, Cout 32, rm 2: work-item (1,15) "
      "overwrites channel 16 after (0,0) wrote it); at conv2d_2/3/9 the owner writes later and heals it",
      env=GPU, repeat=True),
    # ---- gemm (matmul.cl: fc / matmul; runs with local memory on PoCL too) ----
    M("mm_missing_barrier", "race", "matmul.cl",
      [("barrier(CLK_LOCAL_MEM_FENCE);\n        for (int kk = 0; kk < T; kk++)", "for (int kk = 0; kk < T; kk++)")],
      "fp32", TINY, "fc_0", "no barrier between loading the A/B tiles and using them (the loop keeps its "
      "other barrier)", repeat=True),
    M("mm_no_barriers", "race", "matmul.cl",
      [("barrier(CLK_LOCAL_MEM_FENCE);\n        for (int kk = 0; kk < T; kk++)", "for (int kk = 0; kk < T; kk++)"),
       ("barrier(CLK_LOCAL_MEM_FENCE);\n    }\n    if (m >= M || n >= N) return;", "}\n    if (m >= M || n >= N) return;")],
      "fp32", TINY, "fc_0", "tiled GEMM without any barrier", repeat=True),
    M("mm_stale_local_k_tail", "uninit-local", "matmul.cl",
      [("As[ly][lx] = (am_row < M && ka < K) ?", "if (am_row < M && ka < K) As[ly][lx] ="),
       ("LOAD(A, aoff + (size_t)am_row * am + (size_t)ka * ak) : ACC_ZERO;", "LOAD(A, aoff + (size_t)am_row * am + (size_t)ka * ak);"),
       ("Bs[ly][lx] = (kb < K && bn_col < N) ?", "if (kb < K && bn_col < N) Bs[ly][lx] ="),
       ("LOAD(B, boff + (size_t)kb * bk + (size_t)bn_col * bn) : ACC_ZERO;", "LOAD(B, boff + (size_t)kb * bk + (size_t)bn_col * bn);")],
      "fp32", CLS, "fc_0", "out-of-range tile entries not zeroed: the K tail (K = 200) multiplies stale local memory",
      repeat=True),
    M("mm_bias_index", "bias-index", "matmul.cl",
      [("if (bias) acc += LOAD(bias, n);", "if (bias) acc += LOAD(bias, m);")],
      "fp32", TINY, "fc_0", "fc bias indexed by the row (always 0) instead of the column"),
    # ---- eltwise.cl ----
    M("ew_broadcast_dim_order", "broadcast", "eltwise.cl",
      [("for (int d = nd - 1; d >= 0; d--) {", "for (int d = 0; d < nd; d++) {")],
      "fp32", TINY, "elementwise_add_0", "binary op decodes the broadcast dims innermost-first (X [1,32,32,32] + Y [32])"),
    M("ew_broadcast_y_axis", "broadcast", "eltwise.cl",
      [("yo += q * ew_get(sy, d);", "yo += (q % ew_get(dims, nd - 1 - d)) * ew_get(sy, nd - 1 - d);")],
      "fp32", MULTI, "elementwise_mul_0", "broadcast Y indexed along the mirrored axis (Y [1,8], axis 0: pixel % 8 "
      "instead of the channel)"),
    M("ew_hswish_scale_const", "activation", "eltwise.cl",
      [(HSWISH, HSWISH.replace("/ b);", "* 0.1666f);"))],
      "fp32", TINY, "hard_swish_0", "hard_swish divides by scale as * 0.1666f (truncated 1/6)"),
    M("ew_hsigmoid_slope", "activation", "eltwise.cl",
      [("float t = a * f + b;", "float t = (1.0f / 6.0f) * f + b;")],
      "fp32", CLS, "hard_sigmoid_0", "hard_sigmoid slope 1/6 (PyTorch) instead of the model's 0.2"),
    M("ew_sigmoid_const", "activation", "eltwise.cl",
      [("case K_SIGMOID: return (ACC)(1.0f / (1.0f + exp(-f)));", "case K_SIGMOID: return (ACC)(1.0f / (1.0f + exp(-1.702f * f)));")],
      "fp32", PYR, "sigmoid_0", "sigmoid with the quick-gelu constant: 1/(1+exp(-1.702 x))"),
    M("ew_nan_one", "nan", "eltwise.cl",
      [("STORE(y, i, ew_act(kind, LOAD(x, i), a, b, c, al));", "STORE(y, i, i == 777 ? (ACC)NAN : ew_act(kind, LOAD(x, i), a, b, c, al));")],
      "fp32", TINY, "hard_swish_0", "standalone activation writes NaN at element 777"),
    # ---- pool.cl ----
    M("pool_max_right_border", "border", "pool.cl",
      [("x1 = min(x1, W);", "x1 = min(x1, W - 1);")],
      "fp32", TINY, "pool2d_0", "pool window clipped at W-1: the last column never pooled"),
    M("pool_avg_divisor_padding", "pool-divisor", "pool.cl",
      [("int cnt = (exclusive || adaptive) ?", "int cnt = adaptive ?")],
      "fp32", PYR, "pool2d_0", "exclusive avg pool divides by the padded window (3x3 pad 1: border pixels x 4/9, 6/9)"),
    M("pool_half_acc_fp16", "half-accumulation", "pool.cl",
      [("for (int x = x0; x < x1; x++) s += LOADF(ib, y * W + x);",
        "for (int x = x0; x < x1; x++) " + HALF_ROUND % ("s + LOADF(ib, y * W + x)", "s"))],
      "fp16", TINY, "pool2d_1", "avg pool sum rounded to half after every term (global 16x16 avg pool)"),
    # ---- softmax.cl ----
    M("softmax_no_max", "softmax", "softmax.cl",
      [("for (int j = 0; j < len; j++) m = fmax(m, LOADF(x, base + (size_t)j * inner));", "m = 0.0f;")],
      "fp32", TINY, "softmax_0", "softmax without the max subtraction (logits in [-5.4, 2.5]: no overflow)"),
    M("softmax_sum_drops_last", "softmax", "softmax.cl",
      [("for (int j = 0; j < len; j++) s += exp(", "for (int j = 0; j < len - 1; j++) s += exp(")],
      "fp32", TINY, "softmax_0", "softmax sum leaves out the last element"),
    # ---- shape.cl (strided copies) ----
    M("concat_offset", "concat", "shape.cl",
      [("int so = sbase, dof = dbase, r = i;", "int so = sbase, dof = dbase > 0 ? dbase - 1 : dbase, r = i;")],
      "fp32", TINY, "concat_0", "concat destination offset of every input after the first is one element early"),
    M("transpose_axis_order", "transpose", "shape.cl",
      [("dst[dof] = src[so];", "{ int r2 = i; so = sbase; for (int d2 = 0; d2 < nd; d2++) { int e2 = sh_get(dims, d2); "
        "so += (r2 % e2) * sh_get(sstr, d2); r2 /= e2; } } dst[dof] = src[so];")],
      "fp32", PYR, "transpose2_0", "copy decodes the source index with the axes in reverse order (a 2-d transpose "
      "becomes a plain copy); channel concats are 1-d copies and unaffected"),
    # ---- interp.cl ----
    M("interp_nearest_edge", "border", "interp.cl",
      [("i = clamp(i, 0, in - 1);", "i = clamp(i, 0, in - 2);")],
      "fp32", DET, "nearest_interp_v2_0", "nearest interp clamps the source index at in-2: last row/column repeat"),
    # ---- norm.cl ----
    M("bn_channel_index", "channel-offset", "norm.cl",
      [("int c = (i / inner) % C;", "int c = (i / inner + 1) % C;")],
      "fp32", TINY, "batch_norm_0", "batch_norm uses the statistics of the next channel"),
    M("bn_eps_dropped", "constant", "norm.cl",
      [("float inv = 1.0f / sqrt(LOADF(var, c) + eps);", "float inv = 1.0f / sqrt(LOADF(var, c));")],
      "fp32", TINY, "batch_norm_0", "batch_norm without epsilon (eps 1e-5)"),
    # ---- common.h.cl: the half store helper ----
    M("half_store_rtz", "half-rounding", "common.h.cl",
      [("#define STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))", "#define STORE(p, i, v) vstore_half_rtz((float)(v), (i), (p))")],
      "fp16", TINY, "conv2d_0", "half stores round toward zero instead of to nearest even (every fp16 kernel)"),
    M("half_store_rtz_deep", "half-rounding", "common.h.cl",
      [("#define STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))", "#define STORE(p, i, v) vstore_half_rtz((float)(v), (i), (p))")],
      "fp16", MASK, "conv2d_0", "the same in a 29-layer fp16 network (the bias compounds)"),
]


def model_path(model, models_dir):
    if model.startswith("@"):
        return os.path.join(SRC, model[1:])
    return os.path.join(models_dir, model)


def model_label(model):
    return os.path.basename(model.lstrip("@")).replace(".nb", "")


def write_npy(path, shape, values):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape).rstrip(" ")
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode("ascii"))
        f.write(struct.pack("<%df" % len(values), *values))


def make_inputs(out, mutations):
    """Input files named by mutations (only U3 = uniform[-3,3) for mobilenet_tiny's x)."""
    args = {}
    for m in mutations:
        if m["input"] == U3 and m["model"] == TINY and U3 not in args:
            p = os.path.join(out, "inputs", "tiny_x_u3.npy")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            rng = random.Random(3)
            write_npy(p, (1, 3, 64, 64), [rng.uniform(-3.0, 3.0) for _ in range(3 * 64 * 64)])
            args[U3] = ["--input", "x=" + p]
    return args


def config_key(m):
    env = ",".join("%s=%s" % kv for kv in sorted(m["env"].items()))
    return (m["model"], m["prec"], m["input"] or "", env)


def config_name(key):
    model, prec, inp, env = key
    s = "%s-%s" % (model_label(model), prec)
    if inp:
        s += "-" + inp
    if env:
        s += "-gpukernels" if "CLDIFF_CL_GPU_KERNELS" in env else "-env"
    return s


def check_needles(mutations):
    bad = []
    for m in mutations:
        path = os.path.join(SRC, "kernels", m["file"])
        try:
            src = open(path).read()
        except OSError as e:
            bad.append("%s: cannot read %s: %s" % (m["id"], path, e))
            continue
        for needle, _ in m["edits"]:
            n = src.count(needle)
            if n != 1:
                bad.append("%s: needle occurs %d times in kernels/%s (must be exactly once):\n      %r"
                           % (m["id"], n, m["file"], needle))
    return bad


def plant(m, kdir):
    src = open(os.path.join(SRC, "kernels", m["file"])).read()
    for needle, repl in m["edits"]:
        src = src.replace(needle, repl, 1)
    os.makedirs(kdir, exist_ok=True)
    with open(os.path.join(kdir, m["file"]), "w") as f:
        f.write(src)


def num(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v


def read_summary(rdir):
    p = os.path.join(rdir, "summary.json")
    if not os.path.isfile(p):
        return None
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def verdict_of(s):
    """(schema, verdict, named layer, op index, kind) for both summary schemas."""
    if s is None:
        return ("none", "", "", "", "")
    ff = s.get("first_fault") or {}
    fd = s.get("first_divergence") or {}
    new = "verdict_kind" in s or "first_fault" in s
    if new and s.get("verdict_kind") == "pass":
        ff, fd = {}, {}  # a passing run may still record where the largest (in-tolerance) difference was
    layer = ff.get("layer") or fd.get("layer") or ""
    opi = ff.get("op_index", fd.get("op_index", ""))
    if new:
        kind = s.get("verdict_kind") or ""
    else:
        kind = fd.get("kind") or ("crash" if s.get("verdict") == "crash" else "")
    return ("new" if new else "old", s.get("verdict_kind") or s.get("verdict") or "", layer, opi, kind)


def layer_err(s, layer):
    """max |error| of `layer` in the free run: summary layers[] metrics.max_abs (NaN stays NaN)."""
    if not s or not layer:
        return None
    for l in s.get("layers") or []:
        if l.get("layer") == layer:
            mt = l.get("metrics") or {}
            v = mt.get("max_abs")
            nan = mt.get("nan") or [0, 0]
            if v is None:
                return None
            if isinstance(nan, list) and len(nan) == 2 and nan[0] != nan[1]:
                return float("nan")
            return num(v)
    return None


def largest_growth(s, clean):
    """The layer whose max |error| grew most over the clean run: (mutated, clean, layer)."""
    if not s:
        return None, None, ""
    best = (None, None, "")
    for l in s.get("layers") or []:
        name = l.get("layer", "")
        v, c = layer_err(s, name), layer_err(clean, name)
        if v is None:
            continue
        if isinstance(v, float) and math.isnan(v):
            return v, c, name
        g = v - (c if c is not None and not math.isnan(c) else 0.0)
        if best[0] is None or g > best[0] - (best[1] or 0.0):
            best = (v, c, name)
    return best


def nondet(s):
    """(nondeterministic layer count, first such layer) from a --repeat run, both schemas."""
    if not s:
        return "", ""
    nd = s.get("nondeterminism") or {}
    layers = nd.get("layers") or []
    first = nd.get("first")
    if isinstance(first, dict):
        first = first.get("layer", "")
    if not first and layers:
        first = layers[0].get("layer", "") if isinstance(layers[0], dict) else str(layers[0])
    return len(layers), first or ""


def run_cldiff(cldiff, m, mpath, extra_inputs, kdir, rdir, cache, repeat, timeout):
    cmd = [cldiff, mpath, "--layers", "all", "--" + m["prec"]]
    for sh in SHAPES.get(m["model"], []):
        cmd += ["--shape", sh]
    if m["input"]:
        cmd += extra_inputs[m["input"]]
    if kdir:
        cmd += ["--kernel-dir", kdir]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    cmd += ["--out", rdir, "--quiet", "--no-repro", "--cache-dir", cache, "--timeout", str(timeout)]
    env = dict(os.environ)
    env.pop("CLDIFF_CL_GPU_KERNELS", None)
    env.update(m["env"])
    env["CLDIFF_NO_PROGRESS"] = "1"
    if os.path.isdir(rdir):
        shutil.rmtree(rdir)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout + 60)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = 124, "timed out"
    dt = time.time() - t0
    with open(os.path.join(os.path.dirname(rdir), os.path.basename(rdir) + ".cmd"), "w") as f:
        envs = " ".join("%s=%s" % kv for kv in m["env"].items())
        f.write((envs + " " if envs else "") + " ".join(cmd) + "\n# rc %d, %.1f s\n%s\n" % (rc, dt, err[-2000:]))
    return rc, dt, err


def fmt(v, nd=3):
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v == 0:
            return "0"
        return "%.*g" % (nd, v)
    return str(v)


def git_short():
    try:
        return subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cldiff", default=os.environ.get("CLDIFF", os.path.join(SRC, "build", "cldiff")))
    ap.add_argument("--only", default="", help="comma-separated mutation ids")
    ap.add_argument("--out", default=os.path.join(SRC, "build-planted"))
    ap.add_argument("--models", default=os.environ.get("CD_SHARED_MODELS", os.path.join(SRC, "..", "shared", "models")))
    ap.add_argument("--no-repeat", action="store_true", help="skip the --repeat 3 runs of races")
    ap.add_argument("--keep-dumps", action="store_true", help="keep every run's dump.h5")
    ap.add_argument("--timeout", type=int, default=300, help="per cldiff run (seconds)")
    ap.add_argument("--binary-commit", default="", help="commit the binary was built from (default: the source "
                    "tree's HEAD now; say so when the binary is older)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--check", action="store_true", help="only check that every needle occurs exactly once")
    a = ap.parse_args()

    muts = MUTATIONS
    if a.only:
        want = [x.strip() for x in a.only.split(",") if x.strip()]
        unknown = [w for w in want if w not in {m["id"] for m in MUTATIONS}]
        if unknown:
            print("planted: unknown mutation id(s): %s (see --list)" % ", ".join(unknown), file=sys.stderr)
            return 2
        muts = [m for m in MUTATIONS if m["id"] in want]
    ids = [m["id"] for m in MUTATIONS]
    assert len(ids) == len(set(ids)), "duplicate mutation ids"

    if a.list:
        for m in muts:
            print("%-30s %-17s %-12s %-5s %-28s %-20s %s" % (m["id"], m["kind"], m["file"], m["prec"],
                  model_label(m["model"]) + (" " + m["input"] if m["input"] else "") + (" GPU" if m["env"] else ""),
                  m["expected"], m["desc"]))
        print("%d mutations" % len(muts))
        return 0

    bad = check_needles(muts)
    if bad:
        print("planted: FAILED: kernels changed, %d needle(s) not found exactly once; update MUTATIONS in %s\n  %s"
              % (len(bad), os.path.abspath(__file__), "\n  ".join(bad)), file=sys.stderr)
        return 2
    if a.check:
        print("planted: all %d mutations' needles occur exactly once" % len(muts))
        return 0

    cldiff = os.path.abspath(a.cldiff)
    if not os.access(cldiff, os.X_OK):
        print("planted: no cldiff binary at %s (build it, or pass --cldiff PATH)" % cldiff, file=sys.stderr)
        return 2
    missing = sorted({model_path(m["model"], a.models) for m in muts if not os.path.isfile(model_path(m["model"], a.models))})
    if missing:
        print("planted: missing model(s): %s (--models DIR)" % ", ".join(missing), file=sys.stderr)
        return 2

    out = os.path.abspath(a.out)
    for d in ("runs", "clean", "kernels"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    cache = os.path.join(out, "clcache")
    inputs = make_inputs(out, muts)
    t_all = time.time()
    ver = subprocess.run([cldiff, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout.strip()
    commit = a.binary_commit or git_short()
    print("planted: %d mutations, cldiff %s (%s), binary commit %s, out %s" % (len(muts), cldiff, ver, commit, out),
          flush=True)

    # clean run of every configuration
    clean = {}
    for m in muts:
        key = config_key(m)
        if key in clean:
            continue
        rdir = os.path.join(out, "clean", config_name(key))
        rc, dt, _ = run_cldiff(cldiff, m, model_path(m["model"], a.models), inputs, None, rdir, cache, 0, a.timeout)
        s = read_summary(rdir)
        schema, verdict, layer, opi, kind = verdict_of(s)
        clean[key] = dict(rc=rc, layer=layer, kind=kind, summary=s, seconds=dt)
        print("  clean %-40s rc %d %s%s (%.1f s)" % (config_name(key), rc, verdict, (" at %s (%s)" % (layer, kind)) if layer else "", dt),
              flush=True)
        if not a.keep_dumps:
            rm_dump(rdir)

    rows = []
    hdr = "%-30s %-17s %-5s %-20s %3s %-4s %-22s %-10s %-5s %s" % (
        "id", "kind", "prec", "expected", "rc", "det", "named", "found", "exact", "err@expected (clean)")
    print(hdr, flush=True)
    for m in muts:
        kdir = os.path.join(out, "kernels", m["id"])
        if os.path.isdir(kdir):
            shutil.rmtree(kdir)
        plant(m, kdir)
        rdir = os.path.join(out, "runs", m["id"])
        mpath = model_path(m["model"], a.models)
        rc, dt, err = run_cldiff(cldiff, m, mpath, inputs, kdir, rdir, cache, 0, a.timeout)
        s = read_summary(rdir)
        schema, verdict, layer, opi, kind = verdict_of(s)
        c = clean[config_key(m)]
        detected = rc in (1, 5)
        exact = detected and layer == m["expected"] and kind in ("kernel_fault", "local")
        e_exp = layer_err(s, m["expected"])
        e_clean = layer_err(c["summary"], m["expected"])
        g_mut, g_clean, g_where = largest_growth(s, c["summary"])
        row = dict(id=m["id"], kind=m["kind"], file=m["file"], model=model_label(m["model"]), prec=m["prec"],
                   shape=" ".join(SHAPES.get(m["model"], [])), input=m["input"] or "",
                   env=" ".join("%s=%s" % kv for kv in m["env"].items()), expected=m["expected"],
                   clean_rc=c["rc"], clean_layer=c["layer"], rc=rc, detected=int(detected), named=layer, named_op=opi,
                   found_kind=kind, verdict=verdict, schema=schema, exact=int(exact),
                   err_expected=fmt(e_exp, 4), err_expected_clean=fmt(e_clean, 4), grow_layer=g_where, grow_err=fmt(g_mut, 4), grow_err_clean=fmt(g_clean, 4), seconds="%.1f" % dt, repeat_rc="", nondet_layers="", nondet_first="",
                   desc=m["desc"], note=(err.strip().splitlines() or [""])[-1][:200] if rc not in (0, 1) else "")
        if m["repeat"] and not a.no_repeat:
            r2 = rdir + "-repeat"
            rc2, dt2, _ = run_cldiff(cldiff, m, mpath, inputs, kdir, r2, cache, 3, a.timeout)
            n, first = nondet(read_summary(r2))
            row.update(repeat_rc=rc2, nondet_layers=n, nondet_first=first)
            row["seconds"] = "%.1f" % (dt + dt2)
            if not a.keep_dumps:
                rm_dump(r2)
        if not a.keep_dumps:
            rm_dump(rdir)
        rows.append(row)
        print("%-30s %-17s %-5s %-20s %3d %-4s %-22s %-10s %-5s %s (%s)%s" % (
            m["id"], m["kind"], m["prec"], m["expected"], rc, "yes" if detected else "NO", layer or "-", kind or "-",
            "yes" if exact else "no", row["err_expected"] or "-", row["err_expected_clean"] or "-",
            ("  repeat: rc %s, %s nondeterministic layer(s)%s" % (row["repeat_rc"], row["nondet_layers"],
             " first " + row["nondet_first"] if row["nondet_first"] else "")) if row["repeat_rc"] != "" else ""),
            flush=True)
    total = time.time() - t_all

    fields = list(rows[0].keys()) if rows else []
    with open(os.path.join(out, "planted.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    md = markdown(rows, clean, total, cldiff, ver, commit, bool(a.binary_commit))
    with open(os.path.join(out, "planted.md"), "w") as f:
        f.write(md)
    print()
    print(md.split("\n## ", 2)[1].split("\n", 1)[1] if "\n## " in md else "")
    print("planted: wrote %s and %s (%.0f s)" % (os.path.join(out, "planted.csv"), os.path.join(out, "planted.md"), total))
    return 0


def rm_dump(rdir):
    p = os.path.join(rdir, "dump.h5")
    if os.path.isfile(p):
        os.remove(p)


def markdown(rows, clean, total, cldiff, ver, commit, given):
    n = len(rows)
    det = sum(r["detected"] for r in rows)
    exact = sum(r["exact"] for r in rows)
    schema = sorted({r["schema"] for r in rows})
    kinds = {}
    for r in rows:
        if r["detected"]:
            kinds[r["found_kind"] or "?"] = kinds.get(r["found_kind"] or "?", 0) + 1
    L = []
    L.append("# Planted-bug benchmark results\n")
    L.append("- date: %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    L.append("- binary: `%s` (%s), commit `%s`%s" % (cldiff, ver, commit, "" if given else " (source tree HEAD at run time)"))
    L.append("- summary schema: %s (%s)" % (", ".join(schema),
             "verdict_kind / first_fault" if "new" in schema else "verdict / first_divergence"))
    L.append("- machine: PoCL (OpenCL on the CPU), %s" % (os.uname().machine))
    L.append("- run time: %.0f s for %d mutations (+ %d clean runs)\n" % (total, n, len(clean)))
    L.append("## Score\n")
    L.append("| mutations | detected (exit 1/5) | exact layer + local kind | survivors |")
    L.append("| ---: | ---: | ---: | ---: |")
    L.append("| %d | %d | %d | %d |\n" % (n, det, exact, n - det))
    L.append("Kind of the named layer among detected: %s.\n" % (", ".join("%s %d" % kv for kv in sorted(kinds.items())) or "-"))
    cf = [(k, v) for k, v in clean.items() if v["rc"] != 0]
    if cf:
        L.append("Clean runs that do not pass (their mutations' *detected* is not meaningful; *exact* still is when "
                 "the expected layer comes before the clean failure):\n")
        for k, v in cf:
            L.append("- %s: rc %d, first %s (%s)" % (config_name(k), v["rc"], v["layer"] or "-", v["kind"] or "-"))
        L.append("")
    L.append("## Results\n")
    L.append("err@expected: max |CPU - OpenCL| at the expected layer in the mutated run (clean run in brackets).\n")
    L.append("| id | bug class | model | prec | expected | rc | detected | named layer | kind | exact | err@expected (clean) | repeat 3 |")
    L.append("| --- | --- | --- | --- | --- | ---: | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        rep = ""
        if r["repeat_rc"] != "":
            rep = "rc %s, %s nondet.%s" % (r["repeat_rc"], r["nondet_layers"], (" (" + r["nondet_first"] + ")") if r["nondet_first"] else "")
        model = r["model"] + (" " + r["input"] if r["input"] else "") + (" GPU-kernels" if r["env"] else "")
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s |" % (
            r["id"], r["kind"], model, r["prec"], r["expected"], r["rc"], "yes" if r["detected"] else "**no**",
            r["named"] or "-", r["found_kind"] or "-", "yes" if r["exact"] else "no", r["err_expected"] or "-",
            r["err_expected_clean"] or "-", rep))
    surv = [r for r in rows if not r["detected"]]
    L.append("\n## Survivors\n")
    if not surv:
        L.append("None.")
    else:
        L.append("Sizes are max |CPU - OpenCL|; the clean run's value is the noise floor the mutation must rise above. "
                 "'Largest growth' is the layer whose error grew most over the clean run.\n")
        L.append("| id | err@expected | clean | largest growth: layer, err (clean) | what it is |")
        L.append("| --- | --- | --- | --- | --- |")
        for r in surv:
            L.append("| %s | %s | %s | %s, %s (%s) | %s |" % (r["id"], r["err_expected"] or "-", r["err_expected_clean"] or "-",
                     r["grow_layer"] or "-", r["grow_err"] or "-", r["grow_err_clean"] or "-", r["desc"]))
    wrong = [r for r in rows if r["detected"] and not r["exact"]]
    if wrong:
        L.append("\n## Detected, not exact\n")
        L.append("| id | expected | named (kind) | err@expected (clean) |")
        L.append("| --- | --- | --- | --- |")
        for r in wrong:
            L.append("| %s | %s | %s (%s) | %s (%s) |" % (r["id"], r["expected"], r["named"] or "-", r["found_kind"] or "-",
                                                         r["err_expected"] or "-", r["err_expected_clean"] or "-"))
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
