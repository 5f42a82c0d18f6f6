"""--backends paddle-lite: the real runtime's layers become an ordinary dump run (engine
attributes), the differential command compares them with cldiff's CPU (local check on
Paddle-Lite's inputs), and a missing venv is exit 4 with what to install. The last check
runs without the wheel; the others skip (77) without it."""
import json
import os
import sys
import h5py
from pl_lib import X86, Checks, cldiff, tmpdir, need_cldiff, pl_python, need_model, BRIDGE
import subprocess


def astr(v):
    return v.decode() if isinstance(v, bytes) else str(v)

need_cldiff()
need_model(X86)
c = Checks("pl_backend")
d = tmpdir("pl_backend")
c.cleanup_later(d)

r = cldiff("run", "--backends", "paddle-lite", X86, "--shape", "x=1,3,64,64", "--out", os.path.join(d, "none"),
           env={"CLDIFF_PL_PYTHON": "/nonexistent/python"})
c.rc(r, 4, "no venv: backend unavailable")
c.ok("setup.sh" in r.err and "paddlelite" in r.err, "the message says what to install", r.err)

py = pl_python()
ok = py and subprocess.run([py, BRIDGE, "--probe"], capture_output=True).returncode == 0
if not ok:
    print("SKIP: no usable .venv-pl (scripts/setup.sh makes it): the runtime checks were skipped")
    if c.failed:
        c.done()
    sys.exit(77)

out = os.path.join(d, "run")
r = cldiff("run", "--backends", "paddle-lite,cpu", X86, "--shape", "x=1,3,64,64", "--out", out)
c.rc(r, 0, "run --backends paddle-lite,cpu")
with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
    c.ok("paddle-lite" in f["runs"] and "cpu" in f["runs"], "both runs in the dump")
    a = f["runs/paddle-lite"].attrs
    s = lambda k: a[k].decode() if isinstance(a[k], bytes) else str(a[k])
    c.ok(s("engine") == "paddle-lite" and s("engine_version").startswith("v2.") and s("target") == "x86"
         and s("engine_precision") == "fp32", "engine attributes", str(dict(a)))
    n_pl = len(f["tensors/paddle-lite"][()])
    n_cpu = len(f["tensors/cpu"][()])
    c.ok(n_pl == n_cpu and n_pl > 100, "every probed layer stored", "%d vs %d" % (n_pl, n_cpu))

out = os.path.join(d, "diff")
r = cldiff(X86, "--backends", "paddle-lite,cpu", "--shape", "x=1,3,64,64", "--out", out)
c.rc(r, 0, "differential paddle-lite vs cpu passes")
c.ok("checked locally" in r.out, "local check ran on Paddle-Lite's inputs", r.out[-600:])
r = cldiff("report", os.path.join(out, "dump.h5"), "--out", os.path.join(d, "rep"))
c.ok(r.rc == 0 and os.path.exists(os.path.join(d, "rep", "report.html")), "cldiff report on the dump", r.tail())
if r.rc == 0:
    sj = json.load(open(os.path.join(d, "rep", "summary.json")))
    env = json.dumps(sj.get("environment", {}))
    c.ok('"backend_a": "paddle-lite"' in env and '"backend_b": "cpu"' in env, "report compares paddle-lite with cpu "
         "(not cpu with its local run)", env[:300])
out = os.path.join(d, "diff_b")
r = cldiff(X86, "--backends", "cpu,paddle-lite-x86", "--shape", "x=1,3,64,64", "--out", out)
c.rc(r, 0, "paddle-lite as run B")
# an engine as B cannot run one layer on A's inputs: cldiff's CPU runs each layer on the
# engine's own inputs instead, and the engine's output is held to that (docs/verdicts.md)
c.ok("checked locally" in r.out, "local check of the engine's layers ran (CPU on its inputs)", r.out[-600:])
with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
    loc = [k for k in f["runs"] if k.endswith("_local")]
    c.ok(loc == ["paddle-lite-x86_local"], "one local run, of the engine's layers", str(loc))
    if loc:
        c.ok(astr(f["runs"][loc[0]].attrs.get("backend")) == "cpu"
             and astr(f["runs"][loc[0]].attrs.get("forced_from")) == "paddle-lite-x86",
             "the local run is cldiff's CPU forced from the engine's run",
             str(dict(f["runs"][loc[0]].attrs))[:300])
OCL = os.path.join(os.path.dirname(X86), "ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb")
if os.path.isfile(OCL):
    r = cldiff("run", "--backends", "paddle-lite", OCL, "--out", os.path.join(d, "ocl"))
    # the x86 wheel's OpenCL kernels are placeholders: refused, not run into garbage
    c.ok(r.rc in (0, 4), "OpenCL model: runs, or exit 4 where the build has no OpenCL runtime", r.tail())
    if r.rc == 4:
        c.ok("no OpenCL runtime" in r.err, "says the build has no OpenCL runtime", r.err)
MASK = os.path.join(os.path.dirname(X86), "mask_detector_fp32_arm_v2.10rc.nb")
if os.path.isfile(MASK):
    # the x86 wheel's ARM kernels are placeholders: refused, not "run" into garbage
    r = cldiff("run", "--backends", "paddle-lite", MASK, "--out", os.path.join(d, "arm"))
    c.rc(r, 4, "ARM model on the x86 wheel refused")
    c.ok("placeholders" in r.err and "paddle-lite-x86" in r.err, "says why and what to do", r.err)
    r = cldiff(MASK, "--backends", "paddle-lite-x86,cpu", "--out", os.path.join(d, "arm_x86"))
    c.rc(r, 0, "ARM model with kernel records rewritten to x86 passes against cldiff's CPU")
c.done()
