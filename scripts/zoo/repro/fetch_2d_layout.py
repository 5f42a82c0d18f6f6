#!/usr/bin/env python3
"""Repro of Paddle-Lite Opt's OpenCL layout cast reusing one layout node for every consumer of a
tensor (docs/paddle-lite-findings.md, report M): a program made by Paddle 2.6.2,

    feed x [1,64] -> fc (Linear 64->32) -> hard_swish -> fc (Linear 32->10) -> fetch

Converted for OpenCL with an intermediate 2-D tensor fetched (cldiff's paddle-lite-opencl route
fetches every probed tensor), Opt links the fetch's io_copy (device to host, a buffer read) to
the ImageDefault image made for hard_swish; Paddle-Lite aborts with
`target_wrapper.cc:278 OpenCL error with code CL_INVALID_VALUE` (PoCL).
Writes into OUT (default /tmp/fetch2d_repro) the model, x.npy and fetch2d_arm.nb (places arm):

    build/cldiff OUT/fetch2d_arm.nb --backends cpu,paddle-lite-opencl --input x=OUT/x.npy

Run with .venv-paddle/bin/python (paddlepaddle 2.6.2).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/fetch2d_repro"
    os.makedirs(out, exist_ok=True)
    import paddle
    paddle.seed(5)
    paddle.disable_static()
    net = paddle.nn.Sequential(paddle.nn.Linear(64, 32), paddle.nn.Hardswish(), paddle.nn.Linear(32, 10))
    net.eval()
    paddle.jit.save(net, os.path.join(out, "model"), input_spec=[paddle.static.InputSpec([1, 64], "float32", "x")])
    np.save(os.path.join(out, "x.npy"), np.random.default_rng(1).uniform(-1, 1, (1, 64)).astype(np.float32))
    import build  # scripts/zoo/build.py: Opt of the paddlelite wheel in its own process
    r = build.run_opt(out, os.path.join(out, "fetch2d_arm"), "arm")
    print("Opt arm: %s" % ("ok: %s/fetch2d_arm.nb" % out if r["ok"] else r.get("why")))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
