#!/usr/bin/env python3
"""Repro of Paddle-Lite OpenCL's image sigmoid returning NaN for inputs below -88.72
(docs/paddle-lite-findings.md, report J): a 4-op program made by Paddle 2.6.2,

    feed x [1,1,16,16] -> elementwise_mul(x, w = [200]) -> sigmoid -> fetch

x is a ramp over [-1, 1], so the product spans [-200, 200]; Paddle's own sigmoid is finite
everywhere (0 below about -88, 1 above about 17). Writes into OUT (default /tmp/sigmoid_repro):
model.pdmodel/.pdiparams, x.npy, paddle_out.npy (Paddle's inference), and, with the paddlelite
wheel (.venv-pl), sigmoid_arm.nb (Opt places arm). Then:

    build/cldiff OUT/sigmoid_arm.nb --backends paddle-lite-arm,paddle-lite-opencl --input x=OUT/x.npy

Run with .venv-paddle/bin/python (paddlepaddle 2.6.2).
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/sigmoid_repro"
    os.makedirs(out, exist_ok=True)
    import paddle

    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            # a parameter (Paddle's loader wants at least one): the gain 200 as a weight
            self.w = self.create_parameter([1], default_initializer=paddle.nn.initializer.Constant(200.0))

        def forward(self, x):
            return paddle.nn.functional.sigmoid(x * self.w)

    paddle.disable_static()
    net = Net()
    net.eval()
    prefix = os.path.join(out, "model")
    paddle.jit.save(net, prefix, input_spec=[paddle.static.InputSpec([1, 1, 16, 16], "float32", "x")])
    x = np.linspace(-1.0, 1.0, 256, dtype=np.float32).reshape(1, 1, 16, 16)
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
    print("Paddle %s: sigmoid(200 x) finite everywhere: %s, range [%g, %g]" % (
        paddle.__version__, bool(np.all(np.isfinite(y))), y.min(), y.max()))
    import build  # scripts/zoo/build.py: Opt of the paddlelite wheel in its own process
    r = build.run_opt(out, os.path.join(out, "sigmoid_arm"), "arm")
    print("Opt arm: %s" % ("ok: %s/sigmoid_arm.nb" % out if r["ok"] else r.get("why")))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
