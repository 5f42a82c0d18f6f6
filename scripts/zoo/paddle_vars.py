#!/usr/bin/env python3
"""Every variable of a zoo model's Paddle program on one input, for a per-layer comparison
with a cldiff dump (tensor names survive Opt where the op that writes them does).

    .venv-paddle/bin/python scripts/zoo/paddle_vars.py .zoo/NAME in_natural.npy OUT.npz
"""
import os
import sys

import numpy as np
import paddle


def main():
    d, inp, out = sys.argv[1], sys.argv[2], sys.argv[3]
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    prog, feeds, fetches = paddle.static.load_inference_model(os.path.join(d, "model"), exe)
    x = np.load(os.path.join(d, inp) if not os.path.isabs(inp) else inp)
    names = [v.name for v in prog.list_vars()
             if not v.persistable and v.name not in ("feed", "fetch") and v.type == paddle.framework.core.VarDesc.VarType.LOD_TENSOR]
    res = exe.run(prog, feed={feeds[0]: x}, fetch_list=names, return_numpy=False)
    vals = {}
    for n, r in zip(names, res):
        try:
            vals[n] = np.array(r)
        except Exception:
            pass
    np.savez(out, **vals)
    print("%d variables -> %s" % (len(vals), out))


if __name__ == "__main__":
    main()
