"""int8 models end to end (docs/int8.md, docs/verdicts.md): where the OpenCL run places int8
layers (on the ARM int8 kernels as Paddle-Lite does, or as float OpenCL kernels with
--int8-placement gpu), the unquantized float model that quantized outputs are held to, and a
clean verdict either way. Uses blazeface_int8_arm_v2.12 from the shared models (skips without).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import SHARED, SKIP, Checks, cldiff, load_json, tmpdir  # noqa: E402

MODEL = os.path.join(SHARED, "blazeface_int8_arm_v2.12.nb")
if not os.path.exists(MODEL):
    print("SKIP: %s is absent (the shared model folder)" % MODEL)
    sys.exit(SKIP)

c = Checks("e2e_int8_verdicts")
wheres = {}
for placement in ("arm", "gpu"):
    out = tmpdir("int8_" + placement)
    c.cleanup_later(out)
    r = cldiff(MODEL, "--layers", "all", "--fp32", "--no-repro", "--quiet", "--int8-placement", placement,
               "--out", out)
    c.rc(r, 0, "blazeface fp32, int8 layers on %s: clean verdict" % placement)
    s = load_json(os.path.join(out, "summary.json"))
    where = [l["where_b"] for l in s["layers"]]
    wheres[placement] = where
    c.ok(s.get("verdict_kind") == "pass", "%s: verdict_kind pass" % placement, str(s.get("verdict_kind")))
    outs = s.get("outputs") or []
    c.ok(len(outs) == 2 and all("quantization_error" in o for o in outs),
         "%s: every output carries the model's quantization error (run float_ref)" % placement, str(outs)[:300])
    if placement == "arm":
        n8 = where.count("arm-int8")
        c.ok(n8 > 50, "arm: int8 conv/depthwise/calib layers ran on the ARM int8 kernels (%d)" % n8)
        c.ok(all(o["range_err"] == 0 for o in outs),
             "arm: outputs equal (only float layers on OpenCL, and those exact here)", str(outs)[:300])
    else:
        c.ok("arm-int8" not in where and where.count("opencl") > 150, "gpu: int8 layers as float OpenCL kernels")
        c.ok(all(o["pass"] and o["rule"].startswith("quantized") for o in outs),
             "gpu: outputs differ by quantization error and pass by the quantization yardstick", str(outs)[:300])
bad = cldiff(MODEL, "--int8-placement", "npu")
c.rc(bad, 2, "--int8-placement npu: usage error")
c.ok("--int8-placement expects arm or gpu" in bad.err, "usage message names the values", bad.err[-200:])
c.done()
