#!/usr/bin/env python3
"""Repro of Paddle-Lite Opt giving an OpenCL model ARM kernels that an x86 OpenCL library lacks
(docs/paddle-lite-findings.md, report N): a 4-op program made by Paddle 2.6.2, a channel shuffle,

    feed x [1,24,4,4] -> elementwise_mul(x, w) -> reshape2 [1,2,12,4,4] -> transpose2 [0,2,1,3,4]
        -> reshape2 [1,24,4,4] -> fetch

The 5-D transpose2 cannot be an OpenCL image (OpenCLMemoryObjectConfigPass moves ops with a 5-D
tensor to the CPU), and for places `opencl,x86` Opt's CPU is ARM: the "opencl" places end with
an ARM fallback that comes before x86's. An x86 OpenCL library has no ARM kernels: its load
aborts (`program.cc:537 ... kernel for 'transpose2' is not supported`). With places `x86_opencl`
the transpose gets the x86 kernel and the model runs.
Writes into OUT (default /tmp/transpose5d_repro): model.pdmodel/.pdiparams, x.npy,
paddle_out.npy (Paddle's inference), and with the paddlelite wheel (.venv-pl) shuffle_arm.nb
(places arm, for cldiff), shuffle_opencl_x86.nb and shuffle_x86_opencl.nb (Opt's OpenCL models):

    build/cldiff inspect OUT/shuffle_opencl_x86.nb          # transpose2 [arm/any/NCHW alias=def]
    build/cldiff OUT/shuffle_arm.nb --backends cpu,paddle-lite-opencl --input x=OUT/x.npy \\
        --backend-opt paddle-lite-opencl:places=opencl,x86  # CRASH at the load, exit 5
    build/cldiff OUT/shuffle_arm.nb --backends cpu,paddle-lite-opencl --input x=OUT/x.npy   # PASS

Run with .venv-paddle/bin/python (paddlepaddle 2.6.2).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/transpose5d_repro"
    os.makedirs(out, exist_ok=True)
    import paddle

    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            # a parameter (Paddle's loader wants at least one): a per-channel gain
            self.w = self.create_parameter([24, 1, 1], default_initializer=paddle.nn.initializer.Constant(1.5))

        def forward(self, x):
            y = paddle.reshape(x * self.w, [1, 2, 12, 4, 4])
            y = paddle.transpose(y, [0, 2, 1, 3, 4])
            return paddle.reshape(y, [1, 24, 4, 4])

    paddle.disable_static()
    net = Net()
    net.eval()
    prefix = os.path.join(out, "model")
    paddle.jit.save(net, prefix, input_spec=[paddle.static.InputSpec([1, 24, 4, 4], "float32", "x")])
    x = np.random.default_rng(3).uniform(-1, 1, (1, 24, 4, 4)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    from paddle import inference
    cfg = inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    cfg.disable_gpu()
    cfg.switch_ir_optim(False)
    pred = inference.create_predictor(cfg)
    h = pred.get_input_handle(pred.get_input_names()[0])
    h.copy_from_cpu(x)
    pred.run()
    y = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    np.save(os.path.join(out, "paddle_out.npy"), y)
    want = (1.5 * x).reshape(1, 2, 12, 4, 4).transpose(0, 2, 1, 3, 4).reshape(1, 24, 4, 4)
    print("Paddle %s: channel shuffle, max |paddle - numpy| = %g" % (paddle.__version__, float(np.abs(y - want).max())))
    import build  # scripts/zoo/build.py: Opt of the paddlelite wheel in its own process
    rc = 0
    for place, name in (("arm", "shuffle_arm"), ("opencl,x86", "shuffle_opencl_x86"),
                        ("x86_opencl", "shuffle_x86_opencl")):
        r = build.run_opt(out, os.path.join(out, name), place)
        print("Opt %s: %s" % (place, "ok: %s/%s.nb" % (out, name) if r["ok"] else r.get("why")))
        rc |= 0 if r["ok"] else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
