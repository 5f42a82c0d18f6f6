"""OpenCL kernel conformance on PoCL: every OpenCL kernel against the CPU float32 kernel.

Each case runs op_runner twice on the same inputs: `backend cpu` in fp32 (the reference)
and `backend opencl` in fp32 or fp16 (inputs rounded to half first for fp16, so both sides
see the same values). Bounds are harness.bound():
    fp32: |a - r| <= 1e-5 |r| + k 2^-24 m
    fp16: |a - r| <= 2 2^-11 |r| + k 2^-11 m + 2^-24
(k = terms summed per output, m = magnitude of the sum; docs/opencl-kernels.md explains the
fp16 bound: one rounding of the stored result plus one half-ulp per accumulated term).

A case also proves that the OpenCL kernel really ran: PoCL's debug log (POCL_DEBUG=all) of
the OpenCL run must show an NDRange launch, otherwise a silent CPU fallback would pass.

Options: --oclgrind  run a few small cases under oclgrind (fp32 and fp16 storage variants)
                     instead, failing on any error oclgrind reports (memory, API, races).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

RNG = np.random.default_rng(1234)
OCLGRIND = "--oclgrind" in sys.argv


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def launched(log):
    """Whether the OpenCL run enqueued its own work, from PoCL's debug log: the work-group
    sizing of an NDRange enqueue (logged by the enqueuing thread), or for the reshape-like
    ops the TIMING line of a device buffer copy. TIMING lines come from PoCL's worker thread
    and are now and then lost at process exit, so a run without evidence is retried once."""
    return "pocl_kernel_calc_wg_size" in log or "NDRange Kernel" in log or "Event Copy Buffer" in log


def run_cl(spec, feeds, prec, extra_env=None):
    """Runs the OpenCL side; returns (rc, stderr + stdout, outputs). oclgrind reports its
    findings (and instruction counts) on stdout, PoCL its debug log on stderr."""
    env = dict(os.environ)
    env.update(extra_env or {})
    if OCLGRIND:
        env.update(CLDIFF_OPENCL_LIB="/usr/lib/oclgrind/liboclgrind-rt.so", OCLGRIND_CHECK_API="1",
                   OCLGRIND_DATA_RACES="1", OCLGRIND_INST_COUNTS="1")  # counts prove a kernel ran
    else:
        env["POCL_DEBUG"] = "all"
    with tempfile.TemporaryDirectory(prefix="cd_clconf_") as td:
        files = {}
        for name, arr in feeds.items():
            files[name] = os.path.join(td, f"in_{len(files)}.npy")
            np.save(files[name], np.ascontiguousarray(arr))
        for _, name in spec["outputs"]:
            if name:
                files["out:" + name] = os.path.join(td, f"out_{name}.npy")
        text = harness.spec_text(spec, files, prec, "opencl", 1)
        p = subprocess.run([harness._runner_path()], input=text.encode(), capture_output=True, env=env, timeout=600)
        outs = {}
        if p.returncode == 0:
            for _, name in spec["outputs"]:
                if name:
                    outs[name] = np.load(files["out:" + name])
        return p.returncode, p.stderr.decode(errors="replace") + p.stdout.decode(errors="replace"), outs


def case(name, spec, inputs, k=1, precs=("fp32", "fp16"), mag=None, extra_env=None):
    for prec in precs:
        row = {"case": name, "prec": prec, "backend": "opencl", "ok": False, "detail": ""}
        try:
            feeds = {n: (harness._round_half(a) if prec == "fp16" else a) for n, a in inputs.items()}
            rc, err, ref = harness.run_op(spec, feeds, "fp32", "cpu")
            if rc != 0:
                row["detail"] = f"cpu reference failed ({rc}): {err.strip()[:300]}"
                harness._results.append(row)
                continue
            rc, err, got = run_cl(spec, feeds, prec, extra_env)
            if rc == 0 and not OCLGRIND and not launched(err):
                rc, err, got = run_cl(spec, feeds, prec, extra_env)
            if rc != 0:
                row["detail"] = f"opencl run failed ({rc}): {err.strip()[-400:]}"
            elif OCLGRIND:
                bad = [l for l in err.splitlines() if "error" in l.lower() or "invalid" in l.lower()
                       or "uninitialized" in l.lower() or "race" in l.lower()]
                ran = "Instructions executed for kernel" in err or "Event Copy Buffer" in err
                row["ok"] = not bad and ran
                row["detail"] = ("oclgrind: " + " | ".join(bad[:4]) if bad else
                                 "oclgrind clean" if ran else "no OpenCL kernel ran under oclgrind (CPU fallback)")
            elif not launched(err):
                row["detail"] = "no OpenCL kernel was launched (the op fell back to the CPU)"
            else:
                oks, parts = [], []
                for _, n in spec["outputs"]:
                    if not n:
                        continue
                    m = None if mag is None else mag(feeds)
                    ok, s = harness.compare(got[n], ref[n], prec, k, m)
                    oks.append(ok)
                    parts.append(f"{n}{list(s['shape'])} max|err| {s['max_abs']:.3g} err/tol {s['worst_ratio']:.3g}"
                                 + ("" if ok else f" FAIL: {s['why']}"))
                row["ok"] = all(oks)
                row["detail"] = "; ".join(parts)
        except Exception as e:  # a broken case is a failure, not a crash
            row["detail"] = f"exception: {e!r}"
        harness._results.append(row)


def conv_spec(op="conv2d", attrs=None, bias=True, extra=()):
    ins = [("Input", "x"), ("Filter", "w", "param")]
    if bias:
        ins.append(("Bias", "b", "param"))
    ins += list(extra)
    a = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1}
    a.update(attrs or {})
    return dict(op=op, inputs=ins, outputs=[("Output", "y")], attrs=a)


def conv_case(name, spec, inputs, **kw):
    """A convolution case twice: PoCL is a CPU device, where cldiff picks the barrier-free
    conv2d_cpu_* kernels; CLDIFF_CL_GPU_KERNELS=1 makes it run the local-memory
    conv2d_gemm_* kernels that GPUs get. (Depthwise and transposed convs have one kernel.)"""
    case(name, spec, inputs, **kw)
    case(name + " [gpu kernels]", spec, inputs, extra_env={"CLDIFF_CL_GPU_KERNELS": "1"}, **kw)


def conv_mag(cin_g, kh, kw):
    return lambda f: None  # max |r| over the tensor (harness default for k > 1)


SMALL = OCLGRIND  # oclgrind interprets every work-item: keep cases tiny there

# ---------------------------------------------------------------- conv
if not SMALL:
    for (n, cin, h, w, cout, kh, kw, st, pad, dil, g, act) in [
        (1, 8, 13, 11, 16, 3, 3, [2, 1], [1, 0, 2, 1], [1, 2], 1, "hard_swish"),
        (2, 3, 17, 19, 70, 3, 3, [1, 1], [1, 1], [1, 1], 1, "relu"),
        (1, 32, 9, 9, 40, 1, 1, [1, 1], [0, 0], [1, 1], 1, "relu6"),
        (1, 16, 10, 12, 16, 3, 3, [2, 2], [1, 1], [1, 1], 16, "leaky_relu"),
        (1, 12, 8, 8, 24, 3, 3, [1, 1], [1, 1], [1, 1], 3, "sigmoid"),
        (1, 8, 7, 9, 16, 5, 5, [1, 1], [2, 2], [1, 1], 8, ""),
        (1, 64, 20, 20, 96, 1, 1, [1, 1], [0, 0], [1, 1], 1, "hard_sigmoid"),
        (1, 24, 16, 16, 24, 3, 3, [1, 1], [1, 1], [1, 1], 24, "tanh"),
    ]:
        a = {"strides": st, "paddings": pad, "dilations": dil, "groups": g}
        if act:
            a.update({"with_act": True, "act_type": act})
        inputs = {"x": rnd(n, cin, h, w), "w": rnd(cout, cin // g, kh, kw), "b": rnd(cout)}
        conv_case(f"conv2d {n}x{cin}x{h}x{w} k{kh}x{kw} g{g} {act or 'none'}", conv_spec(attrs=a), inputs,
             k=cin // g * kh * kw)
    # SAME padding, prelu (channel) and the SecondInput residual with relu
    a = {"strides": [2, 2], "paddings": [0, 0], "padding_algorithm": "SAME", "groups": 1, "dilations": [2, 2]}
    conv_case("conv2d SAME stride 2", conv_spec(attrs=a), {"x": rnd(1, 4, 11, 10), "w": rnd(8, 4, 3, 3), "b": rnd(8)}, k=36)
    a = {"with_act": True, "act_type": "prelu", "prelu_mode": "channel"}
    conv_case("conv2d prelu channel", conv_spec(attrs=a, extra=[("Prelu_alpha", "al", "param")]),
         {"x": rnd(1, 6, 8, 8), "w": rnd(10, 6, 3, 3), "b": rnd(10), "al": rnd(10)}, k=54)
    a = {"fuse_elementwise_op_type": "fusion_elementwise_add_activation"}
    conv_case("conv2d 1x1 + residual relu", conv_spec(attrs=a, extra=[("SecondInput", "r")]),
         {"x": rnd(1, 16, 6, 6), "w": rnd(8, 16, 1, 1), "b": rnd(8), "r": rnd(1, 8, 6, 6)}, k=16)
    a = {"strides": [2, 2], "paddings": [1, 1], "dilations": [1, 1], "groups": 1, "with_act": True, "act_type": "relu"}
    # big enough for the 8-wide register blocks (Cout > 64, >= 16384 pixels) with partial tiles
    conv_case("conv2d 8x8 block", conv_spec(attrs={"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1],
                                              "groups": 1}),
         {"x": rnd(1, 5, 130, 129), "w": rnd(70, 5, 3, 3), "b": rnd(70)}, k=45, precs=("fp32",))
    conv_case("conv2d 1x1 4x8 block", conv_spec(), {"x": rnd(1, 20, 128, 130), "w": rnd(33, 20, 1, 1), "b": rnd(33)},
         k=20, precs=("fp32",))
    case("conv2d_transpose s2", conv_spec("conv2d_transpose", a), {"x": rnd(1, 8, 5, 6), "w": rnd(8, 4, 4, 4), "b": rnd(4)},
         k=8 * 16)
    a = {"strides": [2, 2], "paddings": [0, 0], "dilations": [1, 1], "groups": 2, "output_padding": [1, 1]}
    case("conv2d_transpose g2 outpad", conv_spec("conv2d_transpose", a, bias=False),
         {"x": rnd(2, 4, 4, 3), "w": rnd(4, 3, 3, 3)}, k=2 * 9)
else:
    a = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1, "with_act": True, "act_type": "relu"}
    conv_case("conv2d gemm", conv_spec(attrs=a), {"x": rnd(1, 3, 5, 5), "w": rnd(4, 3, 3, 3), "b": rnd(4)}, k=27)
    conv_case("conv2d 1x1", conv_spec(), {"x": rnd(1, 4, 3, 3), "w": rnd(5, 4, 1, 1), "b": rnd(5)}, k=4)
    a = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 4}
    case("conv2d depthwise", conv_spec(attrs=a), {"x": rnd(1, 4, 4, 4), "w": rnd(4, 1, 3, 3), "b": rnd(4)}, k=9)

# ---------------------------------------------------------------- elementwise & activations
sh = (2, 3, 4, 5) if not SMALL else (1, 2, 3, 3)
for op in (["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max",
            "elementwise_min"] if not SMALL else ["elementwise_add"]):
    y = rnd(sh[1], lo=0.5, hi=2.0) if op == "elementwise_div" else rnd(sh[1])
    case(f"{op} axis1", dict(op=op, inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")], attrs={"axis": 1}),
         {"x": rnd(*sh), "y": y})
if not SMALL:
    case("elementwise_add same", dict(op="elementwise_add", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                      attrs={"axis": -1}), {"x": rnd(*sh), "y": rnd(*sh)})
    case("elementwise_mul trailing", dict(op="elementwise_mul", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                          attrs={"axis": -1}), {"x": rnd(*sh), "y": rnd(sh[2], sh[3])})
    case("fusion_elementwise_add_activation relu",
         dict(op="fusion_elementwise_add_activation", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
              attrs={"axis": -1, "act_type": "relu"}), {"x": rnd(*sh), "y": rnd(*sh)})
    for op, attrs in [("relu", {}), ("relu6", {"threshold": 0.5}), ("leaky_relu", {"alpha": 0.1}), ("sigmoid", {}),
                      ("tanh", {}), ("swish", {"beta": 1.5}), ("hard_swish", {}), ("hard_sigmoid", {}),
                      ("abs", {}), ("gelu", {}), ("exp", {}), ("square", {}), ("elu", {"alpha": 0.7}),
                      ("softplus", {}), ("mish", {}), ("softsign", {})]:
        # gelu = 0.5 x (1 + erf(x/sqrt 2)): for x << 0 the sum cancels, so one ulp of erf near -1
        # (2^-24, OpenCL's erf vs glibc's erff) is an absolute error of up to 2^-24 |x| in the result
        # (k = 2 terms, magnitude |x|), far above 1e-5 of the tiny result.
        gm = (lambda f: np.abs(f["x"])) if op == "gelu" else None
        case(op, dict(op=op, inputs=[("X", "x")], outputs=[("Out", "o")], attrs=attrs), {"x": rnd(*sh, lo=-4, hi=4)},
             k=2 if op == "gelu" else 1, mag=gm)
    case("sqrt", dict(op="sqrt", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={}), {"x": rnd(*sh, lo=0, hi=4)})
    case("scale bias_before", dict(op="scale", inputs=[("X", "x")], outputs=[("Out", "o")],
                                   attrs={"scale": 1.5, "bias": -0.25, "bias_after_scale": False}), {"x": rnd(*sh)})
    case("prelu channel", dict(op="prelu", inputs=[("X", "x"), ("Alpha", "a", "param")], outputs=[("Out", "o")],
                               attrs={"mode": "channel"}), {"x": rnd(*sh), "a": rnd(sh[1])})
else:
    case("hard_swish", dict(op="hard_swish", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={}), {"x": rnd(*sh)})

# ---------------------------------------------------------------- pool, softmax, matmul, norm, interp, shape
if not SMALL:
    for pt, ks, st, pad, extra in [("max", [3, 3], [2, 2], [1, 1], {}), ("avg", [3, 3], [2, 2], [1, 1], {}),
                                   ("avg", [2, 2], [2, 2], [0, 1, 0, 1], {"exclusive": False}),
                                   ("max", [2, 2], [1, 1], [0, 0], {"global_pooling": True}),
                                   ("avg", [3, 2], [1, 1], [0, 0], {"adaptive": True})]:
        a = {"pooling_type": pt, "ksize": ks, "strides": st, "paddings": pad}
        a.update(extra)
        case(f"pool2d {pt} {ks} {extra}", dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "o")], attrs=a),
             {"x": rnd(1, 3, 9, 8)}, k=9)
    case("softmax axis -1", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"axis": -1}),
         {"x": rnd(3, 4, 37, lo=-5, hi=5)}, k=37)
    case("softmax axis 1", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"axis": 1}),
         {"x": rnd(2, 6, 5, lo=-5, hi=5)}, k=6)
    case("fc relu", dict(op="fc", inputs=[("Input", "x"), ("W", "w", "param"), ("Bias", "b", "param")],
                         outputs=[("Out", "o")], attrs={"in_num_col_dims": 1, "activation_type": "relu"}),
         {"x": rnd(3, 2, 5, 7), "w": rnd(70, 33), "b": rnd(33)}, k=70)
    case("matmul_v2 batched trans_y", dict(op="matmul_v2", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                            attrs={"trans_x": False, "trans_y": True}),
         {"x": rnd(2, 3, 17, 20), "y": rnd(2, 3, 19, 20)}, k=20)
    case("matmul_v2 broadcast", dict(op="matmul_v2", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                                      attrs={"trans_x": True, "trans_y": False}),
         {"x": rnd(4, 9, 6), "y": rnd(9, 5)}, k=9)
    case("batch_norm", dict(op="batch_norm", inputs=[("X", "x"), ("Scale", "s", "param"), ("Bias", "b", "param"),
                                                     ("Mean", "m", "param"), ("Variance", "v", "param")],
                            outputs=[("Y", "y")], attrs={"epsilon": 1e-5, "data_layout": "NCHW", "is_test": True}),
         {"x": rnd(2, 5, 4, 3), "s": rnd(5), "b": rnd(5), "m": rnd(5), "v": rnd(5, lo=0.1, hi=2)}, k=4)
    for op, a in [("nearest_interp_v2", {"align_corners": False, "scale": [2.0, 2.0], "interp_method": "nearest"}),
                  ("bilinear_interp_v2", {"align_corners": False, "align_mode": 0, "out_h": 13, "out_w": 7,
                                          "interp_method": "bilinear"}),
                  ("bilinear_interp", {"align_corners": True, "out_h": 11, "out_w": 9, "interp_method": "bilinear"})]:
        case(op, dict(op=op, inputs=[("X", "x")], outputs=[("Out", "o")], attrs=a), {"x": rnd(1, 3, 6, 5)}, k=4)
    case("transpose2", dict(op="transpose2", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"axis": [0, 2, 3, 1]}),
         {"x": rnd(2, 3, 4, 5)})
    case("concat axis1", dict(op="concat", inputs=[("X", "a"), ("X", "b")], outputs=[("Out", "o")], attrs={"axis": 1}),
         {"a": rnd(2, 3, 4), "b": rnd(2, 5, 4)})
    case("slice", dict(op="slice", inputs=[("Input", "x")], outputs=[("Out", "o")],
                       attrs={"axes": [1, 3], "starts": [1, -3], "ends": [3, 100]}), {"x": rnd(2, 4, 3, 6)})
    case("reshape2", dict(op="reshape2", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"shape": [0, -1]}),
         {"x": rnd(2, 3, 4)})
else:
    case("pool2d avg", dict(op="pool2d", inputs=[("X", "x")], outputs=[("Out", "o")],
                            attrs={"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "paddings": [1, 1]}),
         {"x": rnd(1, 2, 4, 4)}, k=4)
    case("softmax", dict(op="softmax", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"axis": -1}),
         {"x": rnd(2, 7)}, k=7)
    case("matmul_v2", dict(op="matmul_v2", inputs=[("X", "x"), ("Y", "y")], outputs=[("Out", "o")],
                           attrs={"trans_x": False, "trans_y": False}), {"x": rnd(3, 5), "y": rnd(5, 4)}, k=5)
    case("transpose2", dict(op="transpose2", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"axis": [1, 0]}),
         {"x": rnd(3, 4)})

# ---------------------------------------------------------------- pad, shuffle_channel, cast, clip tensors, fill, rnn
import test_rnn  # noqa: E402  (make_case builds the rnn op specs of the CPU oracle test)


def pad_spec(op, attrs, extra=()):
    return dict(op=op, inputs=[("X", "x")] + list(extra), outputs=[("Out", "o")], attrs=attrs)


if not SMALL:
    for mode, df in [("constant", "NCHW"), ("reflect", "NCHW"), ("edge", "NHWC")]:
        case(f"pad2d {mode} {df}", pad_spec("pad2d", {"paddings": [1, 2, 3, 0], "mode": mode, "pad_value": 0.75,
                                                      "data_format": df}), {"x": rnd(2, 3, 5, 6)})
    case("pad2d Paddings tensor", pad_spec("pad2d", {"mode": "constant", "pad_value": -1.5},
                                           [("Paddings", "p", "param")]),
         {"x": rnd(1, 2, 4, 3), "p": np.array([0, 2, 1, 1], np.int32)})
    for mode in ("circular", "replicate", "constant", "reflect"):
        case(f"pad3d {mode}", pad_spec("pad3d", {"paddings": [1, 2, 0, 1, 2, 1], "mode": mode, "value": 2.5,
                                                 "data_format": "NCDHW"}), {"x": rnd(1, 2, 3, 4, 5)})
    case("shuffle_channel g3", dict(op="shuffle_channel", inputs=[("X", "x")], outputs=[("Out", "o")],
                                    attrs={"group": 3}), {"x": rnd(2, 12, 3, 5)})
    case("cast int32 -> float", dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")],
                                     attrs={"in_dtype": 2, "out_dtype": 5}),
         {"x": RNG.integers(-2**31, 2**31 - 1, size=(3, 41)).astype(np.int32)}, precs=("fp32",))
    case("cast int32 -> half", dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")],
                                    attrs={"in_dtype": 2, "out_dtype": 5}),
         {"x": RNG.integers(-65504, 65504, size=(3, 41)).astype(np.int32)}, precs=("fp16",))
    big = np.array([0, 1, -1, 2**24 + 1, -(2**40) - 3, 2**53 + 1, 2**62 + 2**38 + 1, -(2**63), 2**63 - 1,
                    9007199791611905, -9007199791611905], np.int64)
    case("cast int64 -> float (double rounding of the CPU)",
         dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")], attrs={"in_dtype": 3, "out_dtype": 5}),
         {"x": big}, precs=("fp32",))
    case("cast int64 -> half", dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")],
                                    attrs={"in_dtype": 3, "out_dtype": 5}),
         {"x": RNG.integers(-60000, 60000, size=(50,)).astype(np.int64)}, precs=("fp16",))
    case("cast float -> float (copy)", dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")],
                                           attrs={"in_dtype": 5, "out_dtype": 5}), {"x": rnd(4, 7)})
    case("clip Min/Max run-time tensors", dict(op="clip", inputs=[("X", "x"), ("Min", "lo"), ("Max", "hi")],
                                               outputs=[("Out", "o")], attrs={"min": -5.0, "max": 5.0}),
         {"x": rnd(3, 4, 5), "lo": np.array([-0.3], np.float32), "hi": np.array([0.45], np.float32)})
    case("clip Max param, min attr", dict(op="clip", inputs=[("X", "x"), ("Max", "hi", "param")],
                                          outputs=[("Out", "o")], attrs={"min": -0.2, "max": 5.0}),
         {"x": rnd(3, 4, 5), "hi": np.array([0.6], np.float32)})
    case("fill_constant float", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                                     attrs={"shape": [2, 3, 5], "dtype": 5, "value": 0.3}), {})
    case("fill_constant str_value", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                                         attrs={"shape": [7], "dtype": 5, "value": 0.0, "str_value": "-1.25"}), {})
    rr = np.random.default_rng(77)
    for mode, layers, bidir, t, n, i, h, seq in [("LSTM", 1, False, 5, 3, 4, 6, None),
                                                   ("LSTM", 2, True, 5, 3, 3, 5, [5, 3, 1]),
                                                   ("GRU", 2, True, 5, 3, 4, 3, [2, 5, 4]),
                                                   ("GRU", 1, False, 6, 2, 17, 20, None)]:
        spec, inputs, k = test_rnn.make_case(rr, mode, layers, bidir, t, n, i, h, seq)
        case(f"rnn {mode} L{layers} {'bi' if bidir else 'fw'} T{t} N{n} I{i} H{h}" + (" seqlen" if seq else ""),
             spec, inputs, k=k)
else:
    case("pad2d reflect", pad_spec("pad2d", {"paddings": [1, 0, 0, 2], "mode": "reflect", "data_format": "NCHW"}),
         {"x": rnd(1, 1, 3, 3)})
    case("pad3d circular", pad_spec("pad3d", {"paddings": [1, 0, 0, 1, 1, 0], "mode": "circular", "value": 0.0,
                                              "data_format": "NCDHW"}), {"x": rnd(1, 1, 2, 2, 2)})
    case("shuffle_channel", dict(op="shuffle_channel", inputs=[("X", "x")], outputs=[("Out", "o")],
                                 attrs={"group": 2}), {"x": rnd(1, 4, 2, 2)})
    case("cast int64 -> float", dict(op="cast", inputs=[("X", "x")], outputs=[("Out", "o")],
                                     attrs={"in_dtype": 3, "out_dtype": 5}),
         {"x": np.array([1, -(2**40) - 3, 2**53 + 1], np.int64)})
    case("clip Min/Max tensors", dict(op="clip", inputs=[("X", "x"), ("Min", "lo"), ("Max", "hi")],
                                      outputs=[("Out", "o")], attrs={}),
         {"x": rnd(2, 3), "lo": np.array([-0.3], np.float32), "hi": np.array([0.45], np.float32)})
    case("fill_constant", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                               attrs={"shape": [5], "dtype": 5, "value": 0.3}), {})
    spec, inputs, k = test_rnn.make_case(np.random.default_rng(3), "LSTM", 1, False, 2, 2, 3, 4, [2, 1])
    case("rnn LSTM tiny seqlen", spec, inputs, k=k)
    spec, inputs, k = test_rnn.make_case(np.random.default_rng(4), "GRU", 1, True, 2, 1, 3, 2, None)
    case("rnn GRU tiny bi", spec, inputs, k=k)

# ---------------------------------------------------------------- op-coverage additions (math.cl, gather.cl)
import cl_conf_more  # noqa: E402

cl_conf_more.add_cases(case, rnd, SMALL)

harness.finish()
