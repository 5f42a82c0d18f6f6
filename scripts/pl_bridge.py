#!/usr/bin/env python3
"""Runs a Paddle-Lite .nb model in Paddle-Lite's own runtime (the `paddlelite` wheel) for cldiff.

cldiff starts it as a subprocess with the Python of the venv that scripts/setup.sh made
(.venv-pl, or $CLDIFF_PL_PYTHON) and exchanges .npy files through a temporary folder:

    pl_bridge.py --probe
        prints one JSON line: {"ok": true, "paddlelite": "2.13-rc", "python": "3.10.13", ...}
    pl_bridge.py --kernels x86
        prints {"ops": {"conv2d": ["x86"], "hard_sigmoid": ["host"], ...}}: the targets this
        build registers a kernel for (Opt.print_supported_ops)
    pl_bridge.py --model probed.nb --inputs DIR --out DIR [--target x86] [--precision fp32]
                 [--threads N] [--opencl-precision auto|fp16|fp32]
        reads DIR/input_<k>.npy for model input k (feed col order), runs once, writes
        DIR/out_<i>.npy for every model output i (get_output(i), fetch col order) and
        DIR/run.json (runtime version, per-output names/shapes/dtypes, wall time).

Generic over the model and the place: any .nb the wheel's light runtime (MobileConfig +
create_paddle_predictor) can load, x86 here, OpenCL where the wheel was built with it.
Exit codes: 0 ok, 2 usage, 3 bad model or inputs, 4 paddlelite not importable. A crash of the
runtime (a kernel record the build lacks, e.g. ARM kernels in the x86 wheel) ends the process
with a signal; cldiff reports it.
"""
import argparse
import json
import os
import platform
import sys
import time


def fail(code, msg):
    sys.stderr.write("pl_bridge: %s\n" % msg)
    sys.exit(code)


def import_lite():
    try:
        import numpy as np  # noqa: F401
        import paddlelite
        import paddlelite.lite as lite
    except Exception as e:  # ImportError, or a shared library that does not load
        fail(4, "cannot import paddlelite (%s: %s); run scripts/setup.sh to make .venv-pl "
                "with paddlelite==2.13rc0" % (type(e).__name__, e))
    return lite, paddlelite


def version_of(lite):
    try:
        return lite.Opt().version()
    except Exception:
        pass
    try:
        from importlib import metadata
        return metadata.version("paddlelite")
    except Exception:
        return "unknown"


def probe():
    lite, _ = import_lite()
    import numpy as np
    info = {"ok": True, "paddlelite": version_of(lite), "python": platform.python_version(),
            "numpy": np.__version__, "machine": platform.machine(),
            "targets": [t for t in dir(lite.TargetType) if not t.startswith("_") and t != "name"]}
    print(json.dumps(info))


def kernels(place):
    """Which targets register a kernel for each op in this build (Opt.print_supported_ops for
    the given valid place; its table goes to the C++ stdout, so it runs in a child)."""
    import subprocess
    code = ("import paddlelite.lite as pl; o = pl.Opt(); o.set_valid_places(%r); o.print_supported_ops()" % place)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    lines = out.splitlines()
    hdr = next((l for l in lines if "OP_name" in l), None)
    if hdr is None:
        fail(4, "Opt.print_supported_ops printed no table")
    cols = [(name[1:].lower(), hdr.index(name) + len(name) - 1) for name in hdr.split()[1:]]
    ops = {}
    for l in lines[lines.index(hdr) + 1:]:
        f = l.split()
        if not f:
            continue
        ops[f[0]] = [name for name, end in cols if end < len(l) and l[end] == "Y"]
    print(json.dumps({"place": place, "ops": ops}))


def has_opencl_runtime(lite):
    """Whether this build of the runtime can run OpenCL kernels: a build with OpenCL links
    the wrapper that resolves clEnqueueNDRangeKernel and embeds the kernel sources; the x86
    wheel has neither (its OpenCL kernels are the placeholders opt needs, whose Run() does
    nothing: a model would 'run' and return garbage)."""
    with open(lite.__file__, "rb") as f:
        data = f.read()
    return b"clEnqueueNDRangeKernel" in data and b"__kernel" in data


def run(a):
    lite, _ = import_lite()
    import numpy as np
    if not os.path.isfile(a.model):
        fail(2, "no model file %s" % a.model)
    if a.target == "arm" and platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
        # the x86 wheel registers ARM kernels only as opt's placeholders: an ARM .nb crashes
        # (ppocr cls: SIGSEGV) or "runs" computing nothing (mask_detector: softmax [[1. 1.]])
        fail(4, "this is an x86 build of Paddle-Lite: its ARM kernels are opt's placeholders and compute nothing; "
                "use --backends paddle-lite-x86 (ARM kernel records rewritten to x86, experimental) or run the model "
                "on an ARM device with the probes/paddle-lite runner and `cldiff import` its outputs")
    if a.target == "opencl" and not has_opencl_runtime(lite):
        fail(4, "this paddlelite build has no OpenCL runtime (its OpenCL kernels are opt's placeholders): run "
                "OpenCL models on the device with the probes/paddle-lite runner and `cldiff import` the outputs")
    cfg = lite.MobileConfig()
    cfg.set_model_from_file(a.model)
    threads_set = bool(a.threads and hasattr(cfg, "set_threads"))  # the 2.13rc0 wheel's MobileConfig has none
    if threads_set:
        cfg.set_threads(a.threads)
    if a.target == "opencl" and hasattr(cfg, "set_opencl_precision"):
        prec = {"auto": lite.CLPrecisionType.CL_PRECISION_AUTO, "fp16": lite.CLPrecisionType.CL_PRECISION_FP16,
                "fp32": lite.CLPrecisionType.CL_PRECISION_FP32}[a.opencl_precision]
        cfg.set_opencl_precision(prec)
    t0 = time.time()
    try:
        pred = lite.create_paddle_predictor(cfg)
    except Exception as e:
        fail(3, "Paddle-Lite could not load %s: %s" % (a.model, e))
    t1 = time.time()
    in_names = list(pred.get_input_names())
    for k, name in enumerate(in_names):
        path = os.path.join(a.inputs, "input_%d.npy" % k)
        if not os.path.isfile(path):
            fail(3, "missing input %d ('%s'): %s" % (k, name, path))
        x = np.load(path, allow_pickle=False)
        if not x.flags["C_CONTIGUOUS"]:
            x = np.ascontiguousarray(x)
        pred.get_input(k).from_numpy(x)
        # The 2.13rc0 wheel's from_numpy reads garbage under numpy 2.x (checked: the input
        # read back differs); numpy<2 works. Never run on an input the runtime did not get.
        back = np.asarray(pred.get_input(k).numpy())
        if back.shape != x.shape or back.tobytes() != x.tobytes():
            fail(4, "Paddle-Lite did not receive input %d ('%s') intact (numpy %s; the paddlelite wheel "
                    "needs numpy<2: run scripts/setup.sh, or pip install 'numpy<2' in its venv)"
                    % (k, name, np.__version__))
    t2 = time.time()
    pred.run()
    t3 = time.time()
    outs = []
    for i, name in enumerate(pred.get_output_names()):
        t = pred.get_output(i)
        y = np.array(t.numpy(), copy=True)
        np.save(os.path.join(a.out, "out_%d.npy" % i), y, allow_pickle=False)
        outs.append({"index": i, "name": name, "shape": list(y.shape), "dtype": str(y.dtype),
                     "precision": str(t.precision()), "target": str(t.target())})
    info = {"paddlelite": version_of(lite), "python": platform.python_version(), "numpy": np.__version__,
            "model": a.model,
            "target": a.target, "precision": a.precision, "threads": a.threads if threads_set else "runtime default",
            "load_ms": (t1 - t0) * 1e3, "run_ms": (t3 - t2) * 1e3, "inputs": in_names, "outputs": outs}
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(info, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--probe", action="store_true", help="print the runtime's version as JSON and exit")
    p.add_argument("--kernels", metavar="PLACE", help="print {op: [targets with a kernel]} as JSON for a valid place")
    p.add_argument("--model")
    p.add_argument("--inputs")
    p.add_argument("--out")
    p.add_argument("--target", default="x86", help="informational for .nb files: the kernels are in the file")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--opencl-precision", default="auto", choices=["auto", "fp16", "fp32"])
    a = p.parse_args()
    if a.probe:
        return probe()
    if a.kernels:
        return kernels(a.kernels)
    if not (a.model and a.inputs and a.out):
        fail(2, "--model, --inputs and --out are required (or --probe)")
    run(a)


if __name__ == "__main__":
    main()
