"""Checks a cldiff dump of the phone route (paddle-lite-phone) on the cls slim opencl,arm model
against what Paddle-Lite's ARM int8 kernels do, recomputed from the phone's own inputs by the
independent oracle of tests/oracle (nb_read.py, int8_ref.py):

  defect   every int8 conv fed a float32 tensor with no calib (the model input, io_copy
           device_to_host) equals the conv of the float32 buffer's BYTES read as int8, bit for bit
           (docs/paddle-lite-phone.md, the model defect; docs/paddle-lite-findings.md §12, report F);
  gemv     every 1x1-output int8 conv with fused hard_sigmoid equals x * min(max(x + 3, 0), 6) of
           its linear result, bit for bit (Paddle-Lite's int8 GEMV runs the hard_swish code with
           default parameters for any other activation: docs/paddle-lite-findings.md §12, report G);
  dw5x5    every 5x5 depthwise int8 conv (Paddle-Lite's 5x5 depthwise kernel: equal strides) with fp32 output and fused hard_swish equals
           (x * 6) * min(max(x + 3, 0), 6), bit for bit (its alpha is hard_swish_scale, not
           1 / hard_swish_scale: docs/paddle-lite-findings.md §12, report H);
  second   every int8 conv with a fused elementwise_add (SecondInput, a fusion Opt made for
           OpenCL) equals the conv WITHOUT the addition: the ARM kernel binds SecondInput and never
           reads it (docs/int8.md §2.5; docs/paddle-lite-findings.md §12, report I).

usage: phone_check.py MODEL.nb DUMP.h5 [RUN]   exit 0 when every check holds, 1 otherwise."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import int8_ref as R  # noqa: E402
import nb_read  # noqa: E402

F = np.float32


def main():
    model, dump = sys.argv[1], sys.argv[2]
    runname = sys.argv[3] if len(sys.argv) > 3 else "paddle-lite-phone"
    ops, params = nb_read.load(model)
    f = h5py.File(dump, "r")
    run = f["runs/" + runname]
    names = {int(k[:4]): k for k in run.keys()}
    xin = f["inputs/x"][...]
    counts = {"defect": 0, "gemv": 0, "dw5x5": 0, "second": 0}
    bad = []

    def producer(i, src):
        return max([j for j in range(i) if any(src in v for v in ops[j].outputs.values())], default=-1)

    for i, o in enumerate(ops):
        if o.type not in ("conv2d", "depthwise_conv2d") or i not in names:
            continue
        p = producer(i, o.inputs["Input"][0])
        x = xin if p <= 0 else run[names[p]][...]
        y = run[names[i]][...]
        w = params[o.inputs["Filter"][0]]
        b = params[o.inputs["Bias"][0]] if o.inputs.get("Bias") else None
        out8 = "Output0_scale" in o.attrs
        out_s = o.attrs["Output0_scale"][0] if out8 else 1.0
        in_s = o.attrs["Input0_scale"][0]
        ptype = ops[p].type if p >= 0 else "feed"
        if ptype in ("feed", "io_copy"):
            raw = np.frombuffer(np.ascontiguousarray(x, F).tobytes(), np.int8)[: x.size].reshape(x.shape)
            acc = R.conv_acc(raw.astype(np.int32), w, o.attrs)
            kind = R.pl_kernel(x.shape, w.shape, o.attrs, 1)
            want, _ = R.epilogue(acc, 1, o.attrs["Filter0_scale"], in_s, b, out8, out_s,
                                 R.act_params(o.attrs, out8, out_s, True), kind)
            check = "defect"
        elif o.attrs.get("act_type") == "hard_sigmoid" and o.attrs.get("with_act") and y.shape[2] * y.shape[3] == 1:
            a = dict(o.attrs)
            a["with_act"] = False
            lin, _ = R.conv_layer(x, w, b, a, False, threads=1)
            want = np.minimum(np.maximum(lin + F(3), F(0)), F(6)) * (lin * F(1))
            check = "gemv"
        elif (o.type == "depthwise_conv2d" and w.shape[2:] == (5, 5) and not out8
              and R.pl_kernel(x.shape, w.shape, o.attrs, 1) == "dw"
              and o.attrs.get("act_type") == "hard_swish" and o.attrs.get("with_act")):
            a = dict(o.attrs)
            a["with_act"] = False
            lin, _ = R.conv_layer(x, w, b, a, False, threads=1)
            want = (lin * F(6)) * np.minimum(np.maximum(lin + F(3), F(0)), F(6))
            check = "dw5x5"
        elif o.attrs.get("fuse_elementwise_op_type"):
            want, _ = R.conv_layer(x, w, b, o.attrs, out8, second=None, threads=1)
            check = "second"
        else:
            continue
        d = float(np.abs(np.asarray(want, F).reshape(y.shape) - y).max())
        counts[check] += 1
        if d != 0:
            bad.append("%s op #%d (%s): Paddle-Lite differs from the oracle by max |d| %.3g" % (check, i, o.type, d))
    print("phone_check: %s layers reproduced bit for bit: %d model-defect convs (float bytes read as int8), "
          "%d GEMV hard_sigmoid convs, %d 5x5 depthwise hard_swish convs, %d convs with a fused SecondInput "
          "(not added)" % (runname, counts["defect"], counts["gemv"], counts["dw5x5"], counts["second"]))
    for m in bad:
        print("phone_check: FAIL " + m)
    if bad or min(counts.values()) == 0:
        if min(counts.values()) == 0:
            print("phone_check: FAIL a check found no layer: %s" % counts)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
