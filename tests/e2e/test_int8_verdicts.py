"""int8 models end to end (docs/int8.md, docs/verdicts.md): where the OpenCL run places int8
layers (on the ARM int8 kernels as Paddle-Lite does, or as float OpenCL kernels with
--int8-placement gpu), the unquantized float model that quantized outputs are held to, and a
clean verdict either way. The writer-made testdata/int8_matmul.nb (calib -> int8 matmul_v2 ->
relu) always; blazeface_int8_arm_v2.12 from the shared models (that part skips without them).
"""
import os
import sys

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from e2e_lib import SHARED, SRC, Checks, cldiff, load_json, tmpdir  # noqa: E402
import cldiff_dump  # noqa: E402

c = Checks("e2e_int8_verdicts")

# --- the writer-made int8 matmul_v2 (kernel Matmul_int8_f32): run A computes it in integer
# arithmetic (its numbers: the int8_models oracle test); run B places it as asked
MM = os.path.join(SRC, "testdata", "int8_matmul.nb")
for placement in ("arm", "gpu"):
    out = tmpdir("int8mm_" + placement)
    c.cleanup_later(out)
    r = cldiff(MM, "--layers", "all", "--fp32", "--no-repro", "--quiet", "--int8-placement", placement, "--out", out)
    c.rc(r, 0, "int8 matmul, int8 layers on %s: clean verdict" % placement)
    s = load_json(os.path.join(out, "summary.json"))
    where = {l["layer"]: l["where_b"] for l in s.get("layers", [])}
    c.ok(s.get("verdict_kind") == "pass", "int8 matmul %s: verdict_kind pass" % placement, str(s.get("verdict_kind")))
    want = "arm-int8" if placement == "arm" else "opencl"
    c.ok(where.get("matmul_v2_0") == want and where.get("calib_0") == want,
         "int8 matmul %s: calib and matmul_v2 ran %s in run B" % (placement, want), str(where))
    with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
        kernels = {t["op_index"]: t["kernel"] for t in cldiff_dump.tensors(f["runs/cpu"])}
        fmt = f.attrs.get("model_format", b"")
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
    c.ok(kernels.get(2) == "matmul_v2:int8:fp32_out", "run A's matmul kernel is matmul_v2:int8:fp32_out",
         str(kernels.get(2)))
    c.ok(("--int8-placement %s" % placement) in fmt, "the dump's model line names the placement", fmt)

# --- a real int8 model
MODEL = os.path.join(SHARED, "blazeface_int8_arm_v2.12.nb")
if not os.path.exists(MODEL):
    print("SKIP (part): %s is absent (the shared model folder); only the testdata model was checked" % MODEL)
    c.done()
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
