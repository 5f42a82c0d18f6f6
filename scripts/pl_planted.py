#!/usr/bin/env python3
"""Planted faults in Paddle-Lite's own OpenCL kernels (issue 19 point 5): does
`cldiff MODEL --backends paddle-lite-arm,paddle-lite-opencl` name the layer that runs the faulty kernel?

Paddle-Lite builds its OpenCL programs at run time from sources embedded in its library. The fault
injector (tests/faultinj/faultinj.c, an OpenCL loader layer) edits the program source handed to
clCreateProgramWithSource: CLFI_SRC_NEEDLE -> CLFI_SRC_REPLACE, first occurrence per program. Each
plant below is one such edit: a realistic kernel bug (off-by-one border check, dropped bias, wrong
constant, copy-paste lane, missing mask, ...) in one kernel function of Paddle-Lite's image kernels.

For each plant this script
  1. checks the needle against the kernel sources embedded in the SDK library (the exact text the
     runtime compiles: comment-stripped, unindented, cl_common.h prepended): the needle must occur
     in the program of the plant's .cl file and its first occurrence there must lie inside the
     plant's kernel function; other programs that also hold it are listed (they get edited too).
     A needle that no longer fits is exit 2 (the SDK's kernels changed: fix PLANTS);
  2. runs the model clean once (GLOG_v=1, paddle-lite-opencl:keep=1): Paddle-Lite's own log names
     the kernel function of every op (kernel_func_name_), aligned here with cldiff's layers: the
     layers that run the planted kernel;
  3. runs it planted (OPENCL_LAYERS=libfaultinj.so) and grades against the ground truth from the
     two dumps: the expected layer is the first layer, in execution order, that runs the planted
     kernel and whose OpenCL output differs from the clean run (a layout kernel has no layer of its
     own: there the first layer whose output changed, its consumer); its local error (OpenCL output
     vs cldiff's CPU on the OpenCL run's inputs) is reported planted and clean.

Grades: named (KERNEL FAULT at the expected layer), named-drift (the expected layer, but as output
drift), elsewhere (another layer named), survivor (exit 0: no effect, or under the bound: the
ratio at the expected layer says by how much), no-effect (the mutation changed no tensor on this
input: not a detection miss, the kernel's bug is invisible here), crash named (exit 5, the engine
died at the op the plant says it must: crash_at), crash (exit 5 elsewhere), tool error (exit 3/4, or
anything else); for control edits (not bugs: 1 ulp, a harmless mask) pass (control) or false alarm.

  scripts/pl_planted.sh [--cldiff PATH] [--faultinj PATH] [--out DIR] [--only ID,..] [--list]
                        [--check] [--ci] [--timeout SEC] [--keep]

Writes OUT/pl_planted.csv, OUT/pl_planted.md and prints the table. Exit 0 (a benchmark), 2 when a
needle does not fit or nothing can run, 77 (with --ci) when the engines are missing.
"""
import argparse
import csv
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CD_SHARED_MODELS") or os.path.join(os.path.dirname(SRC), "shared", "models")
BACKENDS = "paddle-lite-arm,paddle-lite-opencl"

MODELS = {
    "mask": ("mask_detector_fp32_arm_v2.10rc.nb", []),
    "tiny": ("@testdata/mobilenet_tiny.nb", []),
    "v4cls": ("ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb", ["--shape", "x=1,3,48,192"]),
    "blaze": ("blazeface_int8_arm_v2.12.nb", []),
}

# id, model, .cl file (as Paddle-Lite names it), kernel function, what the bug is, needle, replacement.
PLANTS = [
    dict(id="conv1x1_bias", model="mask", file="image/conv2d_1x1_default_kernel.cl", kernel="conv2d_1x1_h1w4c1",
         what="bias dropped: the accumulators start at 0 instead of the bias (BIASE_CH read lost)",
         # the text up to the input-channel loop is unique to conv2d_1x1_h1w4c1 (conv2d_1x1_opt,
         # earlier in the same program, has the same bias block)
         needle="#ifdef BIASE_CH\nCL_DTYPE4 output0 =\nREAD_IMG_TYPE(CL_DTYPE_CHAR, bias, SAMPLER, (int2)(out_c, 0));"
                "\nCL_DTYPE4 output1 = output0;\nCL_DTYPE4 output2 = output0;\nCL_DTYPE4 output3 = output0;\n"
                "#else\nCL_DTYPE4 output0 = 0.0f;\nCL_DTYPE4 output1 = 0.0f;\nCL_DTYPE4 output2 = 0.0f;\n"
                "CL_DTYPE4 output3 = 0.0f;\n#endif\nfor (int i = 0; i < input_c; ++i) {",
         replace="#ifdef BIASE_CH\nCL_DTYPE4 output0 = 0.0f;"
                 "\nCL_DTYPE4 output1 = output0;\nCL_DTYPE4 output2 = output0;\nCL_DTYPE4 output3 = output0;\n"
                 "#else\nCL_DTYPE4 output0 = 0.0f;\nCL_DTYPE4 output1 = 0.0f;\nCL_DTYPE4 output2 = 0.0f;\n"
                 "CL_DTYPE4 output3 = 0.0f;\n#endif\nfor (int i = 0; i < input_c; ++i) {"),
    dict(id="conv1x1_cin_cap", model="mask", file="image/conv2d_1x1_default_kernel.cl", kernel="conv2d_1x1_h1w4c1",
         what="shape-dependent: the input-channel loop stops after 16 blocks (64 channels), as with a fixed-size tile: "
              "only layers with more than 64 input channels are wrong",
         needle="for (int i = 0; i < input_c; ++i) {",
         replace="for (int i = 0; i < min(input_c, 16); ++i) {"),
    dict(id="conv_nxn_pad", model="mask", file="image/conv2d_opt_adreno_kernel.cl", kernel="conv2d_nxn_opt_adreno",
         what="vertical padding off by one: in_h_id = out_h*stride - pad + 1 (rows shifted down by one)",
         needle="int in_h_id = mad24((item_nh_id % out_h), stride, (-pad));",
         replace="int in_h_id = mad24((item_nh_id % out_h), stride, (1 - pad));"),
    dict(id="dw3x3_left", model="mask", file="image/depthwise_conv2d_kernel.cl", kernel="depth_conv2d_3x3",
         what="left border check of tap 0 dropped: reads the previous channel block's last column",
         needle="((in_pos_in_one_block.x - dilation < 0 ||\nin_pos_in_one_block.y - dilation < 0 ||",
         replace="((in_pos_in_one_block.y - dilation < 0 ||"),
    dict(id="dw3x3s1_right", model="mask", file="image/depthwise_conv2d_kernel.cl", kernel="depth_conv2d_3x3s1",
         what="right border off by one: x3 valid while col_id + 3 == in_w (>= became >)",
         needle="int x3 = select(in_x + 3, -1, col_id + 3 < 0 || col_id + 3 >= in_w);",
         replace="int x3 = select(in_x + 3, -1, col_id + 3 < 0 || col_id + 3 > in_w);"),
    dict(id="eltwise_y_shift", model="mask", file="image/elementwise_kernel.cl", kernel="elementwise_compute",
         ops=("elementwise_add", "elementwise_mul", "elementwise_sub", "elementwise_div",
              "fusion_elementwise_add_activation"),
         what="second operand read one pixel to the right: (x + 1, y) instead of (x, y)",
         needle="CL_DTYPE4 in_y = READ_IMG_TYPE(CL_DTYPE_CHAR, bias, SAMPLER, coords);",
         replace="CL_DTYPE4 in_y = READ_IMG_TYPE(CL_DTYPE_CHAR, bias, SAMPLER, (int2)(x + 1, y));"),
    dict(id="concat_c_boundary", model="mask", file="image/concat_kernel.cl", kernel="Concat2InputAxis1",
         what="channel-block boundary off by one: block boundary0 still read from input 0 (<= instead of <)",
         needle="if (c_blk_idx < boundary0) {",
         replace="if (c_blk_idx <= boundary0) {"),
    dict(id="relu_lane", model="mask", file="image/activation_kernel.cl", kernel="relu",
         what="vector lane dropped: relu applied to .xyz only, lane w passes negatives",
         needle="in = max((CL_DTYPE4)(0.0f), in);\nWRITE_IMG_TYPE(CL_DTYPE_CHAR, output, (int2)(x, y), in);\n}\n"
                "__kernel void abs_act",
         replace="in.xyz = fmax(in.xyz, 0.0f);\nWRITE_IMG_TYPE(CL_DTYPE_CHAR, output, (int2)(x, y), in);\n}\n"
                 "__kernel void abs_act"),
    dict(id="scale_lane", model="mask", file="image/scale_kernel.cl", kernel="scale",
         what="copy-paste lane: in.w takes in_f32.z",
         needle="in.w = (CL_DTYPE)(in_f32.w);",
         replace="in.w = (CL_DTYPE)(in_f32.z);"),
    dict(id="fc_partial", model="mask", file="image/fc_kernel.cl", kernel="fc",
         what="reduction drops the 4th partial sum (s += temp[tid.x][3] missing)",
         needle="s += temp[tid.x][3];",
         replace=""),
    dict(id="softmax_mask", model="mask", file="image/softmax_kernel.cl", kernel="softmax_1x1",
         what="channel-tail mask dropped from the sum: padded lanes add exp(0 - max)",
         needle="sum += dot(mask_temp, exp(src));",
         replace="sum += dot((float4)(1.0f), exp(src));"),
    dict(id="layout_in_tail", model="mask", file="image/layout_kernel.cl", kernel="buffer_to_image2d",
         layout=True,
         what="channel tail off by one in NCHW buffer -> image2d: lane z read only when 4 channels remain "
              "(>= 3 became > 3): a 3-channel input loses channel 2",
         needle="if (out_C - 4 * out_c >= 3) {",
         replace="if (out_C - 4 * out_c > 3) {"),
    dict(id="bn_bias_copy", model="tiny", file="image/batch_norm_kernel.cl", kernel="batch_norm",
         what="copy-paste: the bias is read from the scale image",
         needle="READ_IMG_TYPE(CL_DTYPE_CHAR, bias, SAMPLER, (int2)(c_idx, 0));",
         replace="READ_IMG_TYPE(CL_DTYPE_CHAR, scale, SAMPLER, (int2)(c_idx, 0));"),
    dict(id="hswish_const", model="tiny", file="image/activation_kernel.cl", kernel="hard_swish",
         what="wrong constant: the upper clamp uses offset (3) instead of threshold (6)",
         needle="in = min((CL_DTYPE4)(threshold, threshold, threshold, threshold), in);",
         replace="in = min((CL_DTYPE4)(offset, offset, offset, offset), in);"),
    dict(id="maxpool_init", model="tiny", file="image/pool_kernel.cl", kernel="pool",
         what="max pool initialised with 0 instead of -FLT_MAX (negative windows clamp to 0)",
         needle="CL_DTYPE4 res = (CL_DTYPE4)(-FLT_MAX);",
         replace="CL_DTYPE4 res = (CL_DTYPE4)(0.0f);"),
    dict(id="avgpool_div", model="tiny", file="image/pool_kernel.cl", kernel="pool_local",
         what="average-pool window width off by one in the divisor (exclusive mode)",
         needle="(kernel_width_end - kernel_width_start));",
         replace="(kernel_width_end - kernel_width_start + 1));"),
    dict(id="reshape_tail", model="tiny", file="image/reshape_kernel.cl", kernel="reshape",
         what="index off by one: lane x reads input position out_w + 1",
         needle="output.x = compute_reshape_output(input_image,\nout_n,\nout_c0,\nout_h,\nout_w,",
         replace="output.x = compute_reshape_output(input_image,\nout_n,\nout_c0,\nout_h,\nout_w + 1,"),
    dict(id="hsigmoid_swap", model="v4cls", file="image/activation_kernel.cl", kernel="hard_sigmoid",
         what="swapped operands: in * offset + slope instead of in * slope + offset",
         needle="CL_DTYPE4 out = clamp(in * (CL_DTYPE4)(scale) + (CL_DTYPE4)(value_offset),",
         replace="CL_DTYPE4 out = clamp(in * (CL_DTYPE4)(value_offset) + (CL_DTYPE4)(scale),"),
    dict(id="dw_basic_right", model="v4cls", file="image/depthwise_conv2d_basic_kernel.cl", kernel="depth_conv2d",
         what="right border off by one in the generic (5x5) depthwise: x == input_width not masked",
         needle="in_pos_in_one_block.x + x_off >= input_width ||",
         replace="in_pos_in_one_block.x + x_off > input_width ||"),
    dict(id="concat_w_boundary", model="blaze", file="image/concat_kernel.cl", kernel="Concat2InputAxis3",
         what="width boundary off by one: the last column of input 0 is taken from input 1",
         needle="if (w_idx < boundary0) {",
         replace="if (w_idx < boundary0 - 1) {"),
    dict(id="slice_start", model="v4cls", file="buffer/slice_kernel.cl", kernel="slice", ops=("slice", "reshape2"),
         crash_at="reshape2_0",
         what="buffer kernel, start index off by one (cur_id + start + 1): the int32 shape slice feeding "
              "reshape2's ShapeTensor takes dim 1 (200) instead of the batch (1)",
         needle="src_id += (cur_id + real_starts[j]) * src_step[j];",
         replace="src_id += (cur_id + real_starts[j] + 1) * src_step[j];"),
    # subtler bugs: precision, a missing barrier, masks that only matter on padding, the fetch path
    dict(id="fc_half_weights", model="mask", file="image/fc_kernel.cl", kernel="fc",
         what="weights read at half precision: 13 low mantissa bits dropped (an fp16 weight buffer in an fp32 kernel)",
         needle="CL_COMPUTE_DTYPE16 w = weights[c * out_c_blks + out_c];",
         replace="CL_COMPUTE_DTYPE16 w = as_float16(as_uint16(weights[c * out_c_blks + out_c]) & "
                 "(uint16)(0xFFFFE000u));"),
    dict(id="fc_half_weights_se", model="v4cls", file="image/fc_kernel.cl", kernel="fc",
         what="fc_half_weights on ppocr_v4_mobile_cls, whose SE convs (1x1 on 1x1 inputs, short K) run the fc kernel",
         needle="CL_COMPUTE_DTYPE16 w = weights[c * out_c_blks + out_c];",
         replace="CL_COMPUTE_DTYPE16 w = as_float16(as_uint16(weights[c * out_c_blks + out_c]) & "
                 "(uint16)(0xFFFFE000u));"),
    dict(id="fc_bf16_weights", model="mask", file="image/fc_kernel.cl", kernel="fc",
         what="weights read with a bfloat16 mantissa: 16 low bits dropped (8x the error of fc_half_weights)",
         needle="CL_COMPUTE_DTYPE16 w = weights[c * out_c_blks + out_c];",
         replace="CL_COMPUTE_DTYPE16 w = as_float16(as_uint16(weights[c * out_c_blks + out_c]) & "
                 "(uint16)(0xFFFF0000u));"),
    dict(id="dw3x3_half_tap", model="mask", file="image/depthwise_conv2d_kernel.cl", kernel="depth_conv2d_3x3",
         what="centre tap of the filter read at half precision (13 low mantissa bits dropped)",
         needle="CL_DTYPE4 filters_4 = READ_IMG_TYPE(\nCL_DTYPE_CHAR, filter, SAMPLER, (int2)(filter_x + 1, filter_y + 1));",
         replace="CL_DTYPE4 filters_4 = as_float4(as_uint4(READ_IMG_TYPE(\nCL_DTYPE_CHAR, filter, SAMPLER, "
                 "(int2)(filter_x + 1, filter_y + 1))) & (uint4)(0xFFFFE000u));"),
    dict(id="fc_no_barrier", model="mask", file="image/fc_kernel.cl", kernel="fc",
         what="missing barrier between the partial-sum stores and their reduction",
         needle="temp[tid.x][tid.y] = s;\nbarrier(CLK_LOCAL_MEM_FENCE);",
         replace="temp[tid.x][tid.y] = s;"),
    dict(id="conv1x1_half_acc", model="mask", file="image/conv2d_1x1_default_kernel.cl", kernel="conv2d_1x1_h1w4c1",
         what="accumulator of the first output column rounded to half precision (10-bit mantissa) every 4 input channels",
         needle="for (int i = 0; i < input_c; ++i) {",
         replace="for (int i = 0; i < input_c; ++i) {\noutput0 = as_float4(as_uint4(output0) & (uint4)(0xFFFFE000u));"),
    dict(id="hswish_recip", model="tiny", file="image/activation_kernel.cl", kernel="hard_swish",
         what="division by 6 replaced by a short reciprocal constant (x 0.1667f: 2e-4 relative)",
         needle="in = in0 * in / (CL_DTYPE4)(scale, scale, scale, scale);",
         replace="in = in0 * in * (CL_DTYPE4)(0.1667f);"),
    dict(id="hswish_recip_ulp", model="tiny", file="image/activation_kernel.cl", kernel="hard_swish",
         control=True,
         what="division by 6 replaced by x 0.16666667f (the correctly rounded reciprocal: at most 1 ulp, not a bug)",
         needle="in = in0 * in / (CL_DTYPE4)(scale, scale, scale, scale);",
         replace="in = in0 * in * (CL_DTYPE4)(0.16666667f);"),
    dict(id="softmax_max_nomask", model="mask", file="image/softmax_kernel.cl", kernel="softmax_1x1",
         control=True,
         what="channel-tail mask dropped from the max: padded lanes (0) take part in the maximum (the shift "
              "cancels in exp(x - max) / sum: harmless unless every logit is far below 0)",
         needle="src = src * mask_a;\nmaxx4 = max(maxx4, src);",
         replace="maxx4 = max(maxx4, src);"),
    dict(id="maxpool_right", model="tiny", file="image/pool_kernel.cl", kernel="pool",
         what="right edge off by one: end_w = min(end_w, in_width - 1) (windows at the last column lose a column)",
         needle="end_w = min(end_w, in_width);\n}",
         replace="end_w = min(end_w, in_width - 1);\n}"),
    dict(id="eltwise_act_order", model="blaze", file="image/elementwise_kernel.cl", kernel="elementwise_compute",
         ops=("fusion_elementwise_add_activation",),
         what="fused relu applied to the first operand before the add instead of to the sum",
         needle="CL_DTYPE4 alpha;\noutput = activation_type4(output, alpha);",
         replace="CL_DTYPE4 alpha;\noutput = OPERATOR(activation_type4(in_x, alpha), in_y);"),
    dict(id="eltwise_bcast_copy", model="v4cls", file="image/elementwise_kernel.cl",
         kernel="broadcast_elementwise_basic", ops=("elementwise_mul", "elementwise_add"),
         what="copy-paste: the broadcast operand's index clamped with the other operand's shape",
         needle="flag_v = isless(convert_float4(id_shape), convert_float4(bias_nhwc4));",
         replace="flag_v = isless(convert_float4(id_shape), convert_float4(input_nhwc4));"),
    dict(id="fetch_lane", model="mask", file="image/layout_kernel.cl", kernel="image2d_to_buffer", layout=True,
         what="copy-paste lane in image2d -> NCHW buffer (the fetch path): channel 4k+3 written from lane z",
         needle="out[index + size_ch * 3] = CONVERT_TYPE_TO(in.w, MUTABLE_TYPE);",
         replace="out[index + size_ch * 3] = CONVERT_TYPE_TO(in.z, MUTABLE_TYPE);"),
]
CI_PLANTS = ("relu_lane", "fc_partial")

# Paddle-Lite's log line (kernel_func_name_) -> op family; cldiff op type -> op family.
LOG_FAMILY = {
    "conv_image_compute.cc": "conv", "pool_image_compute.cc": "pool", "concat_image_compute.cc": "concat",
    "activation_image_compute.cc": "act", "scale_image_compute.cc": "scale", "fc_image_compute.cc": "fc",
    "softmax_image_compute.cc": "softmax", "reshape_image_compute.cc": "reshape",
    "transpose_image_compute.cc": "transpose", "batch_norm_image_compute.cc": "bn",
    "slice_buffer_compute.cc": "slice", "slice_image_compute.cc": "slice",
}
OP_FAMILY = {
    "conv2d": "conv", "depthwise_conv2d": "conv", "pool2d": "pool", "concat": "concat", "relu": "act",
    "relu6": "act", "hard_swish": "act", "hard_sigmoid": "act", "sigmoid": "act", "leaky_relu": "act",
    "tanh": "act", "swish": "act", "scale": "scale", "fc": "fc", "softmax": "softmax", "reshape2": "reshape",
    "reshape": "reshape", "flatten": "reshape", "flatten2": "reshape", "transpose2": "transpose",
    "transpose": "transpose", "batch_norm": "bn", "slice": "slice",
}


def sh(cmd, env=None, timeout=600):
    t = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), time.time() - t
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        return 124, out, err + "\n(timed out after %d s)" % timeout, time.time() - t


def model_path(key):
    f, args = MODELS[key]
    if f.startswith("@"):
        return os.path.join(SRC, f[1:]), args
    return os.path.join(SHARED, f), args


def opencl_sdk_lib():
    """The library whose embedded kernels the OpenCL engine compiles (same lookup order as cldiff)."""
    cands = []
    if os.environ.get("CLDIFF_PL_OPENCL_SDK"):
        cands.append(os.environ["CLDIFF_PL_OPENCL_SDK"])
    libc = platform.libc_ver()[1] or "0"
    new_glibc = tuple(int(x) for x in libc.split(".")[:2] if x.isdigit()) >= (2, 38)
    cands += [os.path.join(SRC, ".paddle-lite", n)
              for n in (("sdk-x86_64-ubuntu24",) if new_glibc else ()) + ("sdk-x86_64-debian12",)]
    for d in cands:
        p = os.path.join(d, "lib", "libpaddle_light_api_shared.so")
        if os.path.isfile(p):
            return p
    return None


def embedded_programs(lib):
    """Every embedded .cl source of the library: NUL-delimited strings holding '__kernel'."""
    b = open(lib, "rb").read()
    progs, seen = [], set()
    for m in re.finditer(rb"__kernel\s+void", b):
        s = b.rfind(b"\0", 0, m.start()) + 1
        if s in seen:
            continue
        seen.add(s)
        e = b.find(b"\0", m.start())
        progs.append(b[s:e].decode("latin-1"))
    return progs


def kernel_spans(text):
    """[(name, start, end)] of each __kernel function in text (end = start of the next one)."""
    ms = list(re.finditer(r"__kernel\s+void\s+(\w+)\s*\(", text))
    return [(m.group(1), m.start(), ms[i + 1].start() if i + 1 < len(ms) else len(text)) for i, m in enumerate(ms)]


def check_needle(plant, progs):
    """Returns (ok, note). The plant's program is the one defining its kernel function."""
    macro_rx = re.compile(r"#define\s+DO" + re.escape(plant["kernel"]) + r"\b")
    home = [p for p in progs if any(n == plant["kernel"] for n, _, _ in kernel_spans(p)) or macro_rx.search(p)]
    if not home:
        return False, "no embedded program defines kernel %s" % plant["kernel"]
    notes, ok = [], False
    for p in home:
        i = p.find(plant["needle"])
        if i < 0:
            continue
        spans = kernel_spans(p)
        inside = [n for n, s, e in spans if s <= i < e]
        where = inside[0] if inside else "(before the first kernel: macros/cl_common.h)"
        # concat kernels are made by token pasting: a needle inside the body macro of the kernel
        # (#define DO<kernel>, up to the next #define) counts as inside it
        macro = macro_rx.search(p)
        nxt = p.find("#define", macro.end()) if macro else -1
        in_macro = bool(macro) and macro.start() <= i < (nxt if nxt >= 0 else len(p))
        if inside and inside[0] == plant["kernel"] or in_macro:
            ok = True
        else:
            notes.append("first occurrence is in %s, not %s" % (where, plant["kernel"]))
    if not ok and not notes:
        notes.append("needle not found in the program of %s" % plant["kernel"])
    others = []
    for p in progs:
        if p in home or plant["needle"] not in p:
            continue
        i = p.find(plant["needle"])
        inside = [n for n, s, e in kernel_spans(p) if s <= i < e]
        others.append(inside[0] if inside else "cl_common.h/macros")
    if others:
        notes.append("also edited in programs of: " + ", ".join(sorted(set(others))))
    return ok, "; ".join(notes)


# ---- ground truth ----

def read_kernel_log(run_dir):
    """[(family, kernel_func_name)] in the order Paddle-Lite prepared its ops (engine.log, GLOG_v=1)."""
    logs = sorted(glob.glob(os.path.join(run_dir, ".paddle-lite-opencl-*", "out", "engine.log")))
    if not logs:
        return None
    seq = []
    rx = re.compile(r"\s(\w+\.cc):\d+\] kernel_func_names?_(?:\[0\])?:(\w+)")
    for line in open(logs[-1], errors="replace"):
        m = rx.search(line)
        if m and m.group(1) in LOG_FAMILY:
            seq.append((LOG_FAMILY[m.group(1)], m.group(2)))
    return seq


def layer_list(dump, run):
    import h5py
    with h5py.File(dump, "r") as h:
        if "tensors/" + run not in h:
            return []
        rows = h["tensors/" + run][()]
        out = []
        for r in rows:
            d = lambda k: r[k].decode() if isinstance(r[k], bytes) else str(r[k])
            out.append(dict(op=int(r["op_index"]), layer=d("layer"), type=d("op_type"), dataset=d("dataset")))
        # the table is in write order (model outputs may come first): execution order is op order
        return sorted(out, key=lambda x: x["op"])


def op_table(dump):
    import h5py
    with h5py.File(dump, "r") as h:
        ops = h["model/ops"][()]
        return [(int(o["index"]), o["name"].decode(), o["type"].decode()) for o in ops]


def align_kernels(dump, seq):
    """{layer name: kernel function} by walking Paddle-Lite's log in op order, family by family."""
    kmap = {}
    if seq is None:
        return kmap
    j = 0
    for _, name, typ in op_table(dump):
        fam = OP_FAMILY.get(typ)
        if not fam:
            continue
        k = j
        while k < len(seq) and seq[k][0] != fam:
            k += 1
        if k < len(seq):
            kmap[name] = seq[k][1]
            j = k + 1
    return kmap


def tensor_effects(clean_dump, dump, run="paddle-lite-opencl"):
    """Per layer in order: (layer, type, changed?, max |planted - clean|, local err planted, local err clean)."""
    import h5py
    import numpy as np
    res = []
    with h5py.File(clean_dump, "r") as hc, h5py.File(dump, "r") as hp:
        if "runs/" + run not in hp or "runs/" + run not in hc:
            return res
        local = run + "_local"
        for row in layer_list(dump, run):
            ds = row["dataset"]
            a = hp["runs/%s/%s" % (run, ds)]
            if ds not in hc["runs/" + run] or a.shape is None:
                continue
            a = np.asarray(a[()], dtype=np.float64)
            c = np.asarray(hc["runs/%s/%s" % (run, ds)][()], dtype=np.float64)
            if a.shape != c.shape:
                res.append(dict(row, changed=True, delta=float("inf"), lp=None, lc=None))
                continue
            diff = np.abs(a - c)
            both_nan = np.isnan(a) & np.isnan(c)
            diff[both_nan] = 0
            changed = bool(np.any(diff > 0) or np.any(np.isnan(diff)))
            delta = float(np.nanmax(diff)) if diff.size else 0.0
            if np.any(np.isnan(diff)):
                delta = float("inf")

            def loc(h, x):
                if "runs/" + local not in h or ds not in h["runs/" + local]:
                    return None
                r = np.asarray(h["runs/%s/%s" % (local, ds)][()], dtype=np.float64)
                if r.shape != x.shape or not r.size:
                    return None
                scale = max(float(np.nanmax(np.abs(r))), 1e-30)
                return float(np.nanmax(np.abs(x - r))) / scale

            res.append(dict(row, changed=changed, delta=delta, lp=loc(hp, a), lc=loc(hc, c)))
    return res


def summary_named(out):
    p = os.path.join(out, "summary.json")
    if not os.path.isfile(p):
        return {}, None, None
    s = json.load(open(p))
    ff = s.get("first_fault") or {}
    fd = s.get("first_divergence") or {}
    layer = ff.get("layer") or fd.get("layer")
    kind = s.get("verdict_kind") or fd.get("kind")
    return s, layer, kind


def layers_csv(out):
    p = os.path.join(out, "layers.csv")
    if not os.path.isfile(p):
        return {}
    with open(p) as f:
        return {r["layer"]: r for r in csv.DictReader(f)}


def fmt(x, f="%.3g"):
    return "-" if x is None else (f % x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cldiff", default=os.environ.get("CLDIFF"))
    ap.add_argument("--faultinj", default=os.environ.get("CLDIFF_FAULTINJ"))
    ap.add_argument("--out", default=os.path.join(SRC, "build-pl-planted"))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true", help="check the needles against the SDK's kernels only")
    ap.add_argument("--ci", action="store_true", help="the ctest slice: %s" % ", ".join(CI_PLANTS))
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the planted runs' dumps")
    a = ap.parse_args()
    skip = 77 if a.ci else 2

    plants = PLANTS
    if a.ci:
        plants = [p for p in PLANTS if p["id"] in CI_PLANTS]
    if a.only:
        want = a.only.split(",")
        bad = [w for w in want if w not in [p["id"] for p in PLANTS]]
        if bad:
            print("pl_planted: unknown plant(s) %s; --list shows them" % ", ".join(bad), file=sys.stderr)
            return 2
        plants = [p for p in PLANTS if p["id"] in want]
    if a.list:
        for p in plants:
            print("%-18s %-6s %-40s %s" % (p["id"], p["model"], p["file"] + ":" + p["kernel"], p["what"]))
        return 0

    lib = opencl_sdk_lib()
    if not lib:
        print("SKIP: no Paddle-Lite SDK with OpenCL (.paddle-lite/sdk-x86_64-*, or CLDIFF_PL_OPENCL_SDK)")
        return skip
    progs = embedded_programs(lib)
    bad = 0
    for p in plants:
        ok, note = check_needle(p, progs)
        p["needle_note"] = note
        if not ok:
            bad += 1
            print("pl_planted: needle of %s does not fit %s in %s: %s" % (p["id"], p["kernel"], lib, note),
                  file=sys.stderr)
        elif a.check:
            print("%-18s ok %s" % (p["id"], note))
    if bad:
        return 2
    if a.check:
        return 0

    cl = a.cldiff or os.path.join(SRC, "build", "cldiff")
    fi = a.faultinj or os.path.join(os.path.dirname(cl), "tests", "libfaultinj.so")
    why = []
    if not os.access(cl, os.X_OK):
        why.append("no cldiff at %s (--cldiff)" % cl)
    if not os.path.isfile(fi):
        why.append("no libfaultinj.so at %s (--faultinj; built by the faultinj target)" % fi)
    if platform.machine() != "aarch64" and not shutil.which("qemu-aarch64"):
        why.append("qemu-aarch64 (Debian qemu-user) is not installed")
    arm = os.environ.get("CLDIFF_PL_ARM_SDK") or os.path.join(SRC, ".paddle-lite", "sdk-armv8-armlinux")
    if not os.path.isfile(os.path.join(arm, "lib", "libpaddle_light_api_shared.so")):
        why.append("no armv8 Paddle-Lite SDK (%s, or CLDIFF_PL_ARM_SDK)" % arm)
    if not (os.path.isfile(os.path.join(SRC, ".venv-pl", "bin", "python")) or os.path.isdir(
            os.path.expanduser("~/.cache/cldiff/pl-opt"))):
        why.append("no .venv-pl with the paddlelite wheel (Opt) and no Opt cache")
    for key in sorted({p["model"] for p in plants}):
        m, _ = model_path(key)
        if not os.path.isfile(m):
            why.append("model %s missing" % m)
    if why:
        print("SKIP: " + "; ".join(why))
        return skip

    os.makedirs(a.out, exist_ok=True)
    base_env = dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
    for k in [k for k in base_env if k.startswith("CLFI_") or k == "OPENCL_LAYERS"]:
        del base_env[k]

    # clean runs, one per model, with Paddle-Lite's kernel log
    clean = {}
    for key in sorted({p["model"] for p in plants}):
        m, args = model_path(key)
        out = os.path.join(a.out, "clean", key)
        shutil.rmtree(out, ignore_errors=True)
        env = dict(base_env, GLOG_v="1")
        cmd = [cl, m, *args, "--backends", BACKENDS, "--out", out, "--backend-opt", "paddle-lite-opencl:keep=1"]
        rc, so, se, dt = sh(cmd, env, a.timeout)
        seq = read_kernel_log(out)
        dump = os.path.join(out, "dump.h5")
        kmap = align_kernels(dump, seq) if os.path.isfile(dump) else {}
        clean[key] = dict(rc=rc, out=out, dump=dump, kmap=kmap, secs=dt)
        print("clean %-6s exit %d (%.1f s), %d layers mapped to Paddle-Lite kernels" % (key, rc, dt, len(kmap)), flush=True)
        # of the kept work folder only Paddle-Lite's log is needed (the model and outputs are large)
        for kp in glob.glob(os.path.join(out, ".paddle-lite-opencl-*")):
            for f in glob.glob(os.path.join(kp, "*")) + glob.glob(os.path.join(kp, "out", "*")):
                if f.endswith(os.path.join("out", "engine.log")) or f.endswith("out"):
                    continue
                shutil.rmtree(f, ignore_errors=True) if os.path.isdir(f) else os.remove(f)
        if rc != 0:
            print("  clean run of %s is not a pass: its plants are graded but mean little\n  %s" %
                  (key, (so + se).strip().splitlines()[-1:] or ""))

    rows = []
    for p in plants:
        c = clean[p["model"]]
        m, args = model_path(p["model"])
        out = os.path.join(a.out, "runs", p["id"])
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        clfi_log = out + ".clfi.jsonl"
        if os.path.exists(clfi_log):
            os.remove(clfi_log)
        env = dict(base_env, OPENCL_LAYERS=fi, CLFI_SRC_NEEDLE=p["needle"], CLFI_SRC_REPLACE=p["replace"],
                   CLFI_LOG=clfi_log, CLFI_QUIET="1")
        cmd = [cl, m, *args, "--backends", BACKENDS, "--out", out]
        rc, so, se, dt = sh(cmd, env, a.timeout)
        with open(out + ".cmd", "w") as f:
            f.write("OPENCL_LAYERS=%s CLFI_SRC_NEEDLE=%s CLFI_SRC_REPLACE=%s \\\n  %s\nexit %d (%.1f s)\n%s\n" % (
                fi, json.dumps(p["needle"]), json.dumps(p["replace"]), " ".join(cmd), rc, dt,
                "\n".join((so + se).strip().splitlines()[-25:])))
        edits = sum(1 for _ in open(clfi_log)) if os.path.isfile(clfi_log) else 0
        s, named, kind = summary_named(out)
        dump = os.path.join(out, "dump.h5")
        eff = tensor_effects(c["dump"], dump) if os.path.isfile(dump) and os.path.isfile(c["dump"]) else []
        runs_k = [e for e in eff if c["kmap"].get(e["layer"]) == p["kernel"]]
        if not runs_k and p.get("ops"):
            runs_k = [e for e in eff if e["type"] in p["ops"]]
        first_changed = next((e for e in eff if e["changed"]), None)
        exp = next((e for e in runs_k if e["changed"]), None)
        note = ""
        if p.get("layout"):
            exp = first_changed
            note = "layout kernel (no layer of its own): expected = first layer whose output changed"
        elif exp is None and first_changed is not None:
            note = "first change at %s, which does not run %s" % (first_changed["layer"], p["kernel"])
        if exp is None and p.get("crash_at") and rc == 5:
            note = ("the wrong value is an int32 shape tensor, not fetched on the OpenCL route; the engine aborts at "
                    "its consumer %s" % p["crash_at"])
        lc = layers_csv(out)
        ratio_exp = lc.get(exp["layer"], {}).get("local_ratio") if exp else None
        crash = (s or {}).get("crash")
        if rc == 5 and isinstance(crash, str):
            m = re.search(r"at op #\d+ (\S+)", crash)
            named = m.group(1) if m else named
            kind = "crash"
        info = named if rc == 0 and named else ""
        if rc == 0:
            named = None
        ratio_named = lc.get(named, {}).get("local_ratio") if named else None
        if p.get("control") and rc == 0:
            grade = "pass (control)"
        elif p.get("control") and rc == 1:
            grade = "false alarm"
        elif rc in (1,) and exp and named == exp["layer"] and kind in ("kernel_fault", "local"):
            grade = "named"
        elif rc == 1 and exp and named == exp["layer"]:
            grade = "named-drift"
        elif rc == 1:
            grade = "elsewhere"
        elif rc == 0 and exp is None and first_changed is None:
            grade = "no-effect"
        elif rc == 0:
            grade = "survivor"
        elif rc == 5 and crash and p.get("crash_at") and named == p["crash_at"]:
            grade = "crash named"
        elif rc == 5 and crash:
            grade = "crash"
        else:
            grade = "tool error"
        row = dict(id=p["id"], model=p["model"], file=p["file"], kernel=p["kernel"], what=p["what"],
                   edits=edits, runs_kernel=",".join(e["layer"] for e in runs_k[:6]) + (
                       ",..." if len(runs_k) > 6 else ""),
                   first_changed=first_changed["layer"] if first_changed else "-",
                   expected=exp["layer"] if exp else (p.get("crash_at") or "-"), expected_delta=exp["delta"] if exp else None,
                   local_planted=exp["lp"] if exp else None, local_clean=exp["lc"] if exp else None,
                   rc=rc, verdict=(s or {}).get("verdict", "-"), kind=kind or "-", named=named or "-",
                   ratio_named=ratio_named or "-", divergence_info=info or "-", ratio_expected=ratio_exp or "-", grade=grade,
                   secs=round(dt, 1), note=note, needle_note=p.get("needle_note", ""))
        rows.append(row)
        row["ratio"] = (ratio_named or "-") if named else ("%s at %s" % (ratio_exp, exp["layer"]) if exp and ratio_exp else "-")
        print("%-18s %-6s exit %d  %-14s expected %-20s named %-20s %-12s ratio %s (%.1f s, %d programs edited)" % (
            p["id"], p["model"], rc, grade, row["expected"], row["named"], row["kind"], row["ratio"], dt,
            edits), flush=True)
        if not a.keep and os.path.isfile(dump) and grade == "named":
            os.remove(dump)

    fields = list(rows[0].keys()) if rows else []
    with open(os.path.join(a.out, "pl_planted.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    faults = [r for r in rows if not r["grade"].endswith("(control)") and r["grade"] != "false alarm"]
    n_named = sum(r["grade"] in ("named", "crash named") for r in faults)
    n_eff = sum(r["grade"] != "no-effect" for r in faults)
    n_ctl = len(rows) - len(faults)
    with open(os.path.join(a.out, "pl_planted.md"), "w") as f:
        f.write("# Planted faults in Paddle-Lite's OpenCL kernels\n\n")
        f.write("%d of %d planted faults named at the planted layer (as a KERNEL FAULT, or the crash of the engine there; %d changed a tensor); "
                "%d control edit(s), graded pass when cldiff passes.\n\n" % (n_named, len(faults), n_eff, n_ctl))
        f.write("| plant | kernel (file) | bug | model | expected layer | local err planted / clean | verdict | "
                "layer named | ratio | exit |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | `%s` (%s) | %s | %s | %s | %s / %s | %s | %s | %s | %d |\n" % (
                r["id"], r["kernel"], r["file"], r["what"], r["model"], r["expected"], fmt(r["local_planted"], "%.2g"),
                fmt(r["local_clean"], "%.2g"), r["grade"], r["named"], r["ratio"], r["rc"]))
    print("\n%d of %d planted faults named at the planted layer (%d controls); table: %s" % (
        n_named, len(faults), n_ctl, os.path.join(a.out, "pl_planted.md")))
    if a.ci:
        bad = [r for r in rows if r["grade"] != "named"]
        for r in bad:
            print("FAIL: %s graded %s (expected %s, named %s, exit %d)" % (r["id"], r["grade"], r["expected"],
                                                                           r["named"], r["rc"]))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
