#!/usr/bin/env python3
"""Repro of Paddle-Lite OpenCL's image fc computing only the first row of a 3-D input when Opt
made it from matmul_v2 (docs/paddle-lite-findings.md, report L): a program made by Paddle 2.6.2,

    feed x [1,25,48] -> matmul_v2(x, W [48,37]) -> elementwise_add(b) -> fetch

(`paddle.nn.Linear` on a 3-D input, as a CRNN head after its rnn). Opt fuses matmul_v2 + add
into an `fc` with in_num_col_dims=1 and op_type="matmul_v2". Writes into OUT (default
/tmp/fc3d_repro): model.pdmodel/.pdiparams, x.npy, paddle_out.npy (Paddle's inference) and,
with the paddlelite wheel (.venv-pl), fc3d_arm.nb (places arm) and fc3d_opencl.nb (opencl,arm).
Then:

    build/cldiff OUT/fc3d_arm.nb --backends cpu,paddle-lite-opencl --input x=OUT/x.npy
    build/cldiff OUT/fc3d_opencl.nb --backends cpu,paddle-lite-phone --input x=OUT/x.npy

Run with .venv-paddle/bin/python (paddlepaddle 2.6.2).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/fc3d_repro"
    os.makedirs(out, exist_ok=True)
    import paddle
    paddle.seed(7)
    paddle.disable_static()
    net = paddle.nn.Linear(48, 37)
    net.eval()
    prefix = os.path.join(out, "model")
    paddle.jit.save(net, prefix, input_spec=[paddle.static.InputSpec([1, 25, 48], "float32", "x")])
    x = np.random.default_rng(3).uniform(-1, 1, (1, 25, 48)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    from paddle import inference
    cfg = inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    cfg.disable_gpu()
    cfg.switch_ir_optim(False)
    pred = inference.create_predictor(cfg)
    pred.get_input_handle(pred.get_input_names()[0]).copy_from_cpu(x)
    pred.run()
    y = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    np.save(os.path.join(out, "paddle_out.npy"), y)
    print("Paddle %s: y %s, |y| max %.3g" % (paddle.__version__, y.shape, float(np.abs(y).max())))
    import build  # scripts/zoo/build.py: Opt of the paddlelite wheel in its own process
    ok = True
    for place, name in (("arm", "fc3d_arm"), ("opencl,arm", "fc3d_opencl")):
        r = build.run_opt(out, os.path.join(out, name), place)
        ok = ok and r["ok"]
        print("Opt %s: %s" % (place, "ok: %s/%s.nb" % (out, name) if r["ok"] else r.get("why")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
