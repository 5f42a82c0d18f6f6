#!/usr/bin/env python3
"""A deep int8 model for the engine-pair benchmarks (docs/benchmarks.md "First runs", issue 29:
any engine pair under 60 s cold for models up to 700 ops): the zoo's MobileNetV3 block
(scripts/zoo/models.py V3Block: 1x1 expand, 3x3 depthwise, squeeze-excitation, 1x1 project,
residual add, hard-swish; 16 channels at 32x32) repeated N times, with random weights, quantized
by Paddle's post-training quantization and optimized for ARM by the zoo's own build_one
(scripts/zoo/build.py), so it is made like every int8 model of the zoo. N = 35 gives 642 ops.

    .venv-paddle/bin/python scripts/make_deep_int8.py OUT [N]
    -> OUT/deep_v3_<N>_int8/deep_v3_<N>_int8_arm.nb (input x, 1x3x64x64)
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "zoo"))
import build  # noqa: E402
import models  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 35
    name = "deep_v3_%d" % n
    cfg = [(3, 16, 16, True, "hswish", 1)] * n
    models.ZOO[name] = ("classification", lambda: models.MobileNetV3(cfg), models.img([1, 3, 64, 64]), True)
    info, _ = build.build_one(name + "_int8", out, True, False)  # fast: the ARM .nb only
    print(os.path.join(out, name + "_int8", info["opt"]["arm"]["nb"]), info["opt"]["arm"])


if __name__ == "__main__":
    main()
