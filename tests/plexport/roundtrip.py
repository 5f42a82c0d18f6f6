#!/usr/bin/env python3
"""ctest pl_export_roundtrip: cldiff export -> Paddle-Lite Opt (x86) -> Paddle-Lite runs the
model -> its outputs match cldiff's CPU run of the original .nb within fp32 tolerance.
Models: ppocr_v3_det (x86 kernels, no name reuse), mask_detector and PP-OCRv4 cls (arm
kernels, reused names, a float activation under a shape tensor's name: exercise the SSA
renaming and the type repair of pd_export.c). Outputs, then every layer (export --fetch-all).
Needs the paddlelite wheel, numpy<2 and h5py (docs/paddle-lite-opencl.md); exits 77 (skip,
with the reason on stdout) when they are missing.

usage: roundtrip.py CLDIFF SOURCE_DIR MODELS_DIR WORK_DIR"""
import json
import os
import subprocess
import sys

cldiff, src, models, work = sys.argv[1:5]
cands = [os.environ.get("CLDIFF_PL_PYTHON", ""), os.path.join(src, ".venv-pl-ocl", "bin", "python"),
         os.path.join(src, ".venv-pl", "bin", "python")]
py = None
for c in cands:
    if c and os.path.exists(c):
        r = subprocess.run([c, "-c", "import paddlelite.lite, numpy, h5py; print(numpy.__version__)"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if r.returncode == 0 and int(r.stdout.strip().split(".")[0]) < 2:
            py = c
            break
if not py:
    print("SKIP: no Python with paddlelite, numpy<2 and h5py (tried %s); make one with: "
          "/root/.pyenv/versions/3.10.13/bin/python -m venv .venv-pl-ocl && "
          ".venv-pl-ocl/bin/pip install paddlelite==2.13rc0 'numpy<2' h5py" % ", ".join(c for c in cands if c))
    sys.exit(77)
cases = [("ppocr_v3_det_fp32_x86_v2.12.nb", ["--shape", "x=1,3,64,96"]),
         ("mask_detector_fp32_arm_v2.10rc.nb", []),
         ("ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb", ["--shape", "x=1,3,48,192"])]
failed = 0
for name, extra in cases:
    model = os.path.join(models, name)
    if not os.path.exists(model):
        print("SKIP: %s not found (shared models)" % model)
        sys.exit(77)
    out = os.path.join(work, name + ".json")
    r = subprocess.run([py, os.path.join(src, "scripts", "pl_ocl.py"), "check", model, "--cldiff", cldiff, "--work",
                        work, "--no-cldiff-opencl", "--opencl-places", "x86", "--json", out] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        print(r.stdout[-3000:])
        print("FAIL %s: pl_ocl.py check exit %d" % (name, r.returncode))
        failed += 1
        continue
    res = json.load(open(out))
    steps = res["steps"]
    for k in ("export", "opt_x86", "cldiff_cpu", "pl_x86_run"):
        if not steps.get(k, "").startswith("ok"):
            print("FAIL %s: step %s: %s" % (name, k, steps.get(k)))
            failed += 1
    w = res.get("compare", {}).get("pl_x86_vs_cldiff_cpu", {}).get("worst")
    if not w:
        print("FAIL %s: no comparison (%s)" % (name, json.dumps(steps)))
        failed += 1
        continue
    tol = 1e-4 * w["max_ref"] + 1e-6
    ok = w["max_abs"] <= tol and w["cos"] >= 0.99999 and w["nonfinite"] == 0
    print("%s %s: Paddle-Lite x86 (Opt on cldiff export) vs cldiff CPU: max_abs %.3g (tolerance %.3g), cos %.9f"
          % ("ok  " if ok else "FAIL", name, w["max_abs"], tol, w["cos"]))
    failed += not ok
    # layer by layer (export --fetch-all): every op's output within max|d| <= 1e-4 max|ref|
    r = subprocess.run([py, os.path.join(src, "scripts", "pl_ocl.py"), "layers", model, "--cldiff", cldiff, "--work",
                        work] + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = r.stdout.strip().splitlines()[-2:] if r.stdout.strip() else ["(no output)"]
    lok = r.returncode == 0 and "no divergence" in r.stdout
    print("%s %s: layer by layer: %s" % ("ok  " if lok else "FAIL", name, " | ".join(last)))
    failed += not lok
print("%d passed, %d failed" % (len(cases) - min(failed, len(cases)), min(failed, len(cases))))
sys.exit(1 if failed else 0)
