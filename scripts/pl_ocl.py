#!/usr/bin/env python3
"""Paddle-Lite's own runtime (the PyPI wheel `paddlelite`) on models that cldiff exports.

    pl_ocl.py opt EXPORT_DIR OUT.nb --places x86|opencl,x86|...
        Paddle-Lite's Opt on DIR/model.pdmodel + DIR/model.pdiparams (`cldiff export`).
    pl_ocl.py run MODEL.nb --input IN.npy [--input ...] --out OUT.npz [--cl-precision fp32|fp16]
        MobileConfig + create_paddle_predictor; outputs in fetch order as out0, out1, ...
        A model with OpenCL kernels is refused when the wheel has no OpenCL runtime (--force runs it).
    pl_ocl.py has-opencl
        Exit 0 when the wheel's lite.so holds an OpenCL runtime, 1 when its OpenCL kernels are
        the placeholders that Paddle-Lite's build registers for opt (Run() does nothing).
    pl_ocl.py check MODEL.nb --cldiff BIN --work DIR [--shape NAME=dims ...] [--seed N] [--json F]
        The whole route for one model (docs/paddle-lite-opencl.md): export, Opt for x86 and for
        OpenCL, Paddle-Lite x86 run, cldiff CPU run of the original and OpenCL runs (fp32, fp16)
        of the original and of Opt's OpenCL model, and the comparisons (max abs, cosine).

Python 3.8/3.10 with `paddlelite` (2.13rc0 tested), numpy, and h5py for `check`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def lite():
    import paddlelite.lite as l  # noqa: E402  (imported late: `has-opencl` must not need it)
    return l


def lite_so_path():
    import importlib.util
    spec = importlib.util.find_spec("paddlelite")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "lite.so")


def wheel_has_opencl_runtime(path=None):
    """A Paddle-Lite build with LITE_WITH_OPENCL links its OpenCL wrapper (which dlopens
    libOpenCL.so and resolves clEnqueueNDRangeKernel by name) and embeds the kernel sources;
    the x86 wheel has neither: its OpenCL kernels are the faked ones that
    create_fake_kernel_registry.py generates for opt (empty PrepareForRun and Run)."""
    path = path or lite_so_path()
    if not path or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    return b"clEnqueueNDRangeKernel" in data and b"__kernel" in data


# ---------------------------------------------------------------- opt / run

def cmd_opt(export_dir, out_nb, places):
    l = lite()
    o = l.Opt()
    o.set_model_file(os.path.join(export_dir, "model.pdmodel"))
    o.set_param_file(os.path.join(export_dir, "model.pdiparams"))
    o.set_valid_places(places)
    prefix = out_nb[:-3] if out_nb.endswith(".nb") else out_nb
    o.set_optimize_out(prefix)
    o.run()
    if not os.path.exists(prefix + ".nb"):
        raise RuntimeError("Opt wrote no %s.nb" % prefix)
    return prefix + ".nb"


def nb_targets(path):
    """Kernel targets named in the .nb's __@kernel_type_attr@__ records (op/alias/T/P/L)."""
    with open(path, "rb") as f:
        data = f.read()
    names = {1: "host", 2: "x86", 4: "arm", 5: "opencl"}
    counts = {}
    for m in re.finditer(rb"([a-z0-9_]+)/([A-Za-z0-9_]+)/(\d+)/(\d+)/(\d+)", data):
        t = names.get(int(m.group(3)), m.group(3).decode())
        counts[t] = counts.get(t, 0) + 1
    return counts


def cmd_run(model, inputs, out, cl_precision="fp32", threads=1, force=False):
    l = lite()
    targets = nb_targets(model)
    if targets.get("opencl") and not force and not wheel_has_opencl_runtime():
        raise SystemExit("pl_ocl.py: %s has %d OpenCL kernels, but this paddlelite wheel has no OpenCL "
                         "runtime (its OpenCL kernels are opt's placeholders whose Run() does nothing: the "
                         "outputs would be uninitialised memory); --force runs it anyway" % (model, targets["opencl"]))
    c = l.MobileConfig()
    c.set_model_from_file(model)
    if hasattr(c, "set_opencl_precision"):
        p = {"fp32": l.CLPrecisionType.CL_PRECISION_FP32, "fp16": l.CLPrecisionType.CL_PRECISION_FP16}
        c.set_opencl_precision(p[cl_precision])
    if hasattr(c, "set_threads"):
        c.set_threads(threads)
    pred = l.create_paddle_predictor(c)
    for i, x in enumerate(inputs):
        x = np.ascontiguousarray(x)
        pred.get_input(i).from_numpy(x)
        # paddlelite 2.13rc0's from_numpy leaves the tensor zero-filled under numpy 2.x: check
        back = pred.get_input(i).numpy()
        if back.shape != x.shape or not np.array_equal(back, x):
            raise SystemExit("pl_ocl.py: input %d did not reach Paddle-Lite (read back %s, max |x| %.3g); with "
                             "numpy %s: install numpy<2 (pip install 'numpy<2')" %
                             (i, "zeros" if not np.any(back) else "different values", float(np.abs(x).max()),
                              np.__version__))
    t0 = time.time()
    pred.run()
    ms = (time.time() - t0) * 1e3
    outs = {}
    for i, _ in enumerate(pred.get_output_names()):
        outs["out%d" % i] = np.array(pred.get_output(i).numpy(), copy=True)
    np.savez(out, **outs)
    return outs, ms


# ---------------------------------------------------------------- check (the whole route)

def metrics(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return {"error": "shape %s vs %s" % (a.shape, b.shape)}
    if not a.size:
        return {"max_abs": 0.0, "cos": 1.0, "n": 0}
    fin = np.isfinite(a) & np.isfinite(b)
    d = np.abs(a - b)
    na, nb = np.linalg.norm(a[fin]), np.linalg.norm(b[fin])
    cos = float(np.dot(a[fin], b[fin]) / (na * nb)) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    return {"max_abs": float(d[fin].max()) if fin.any() else float("nan"), "cos": cos,
            "max_ref": float(np.abs(b[fin]).max()) if fin.any() else float("nan"),
            "nonfinite": int((~fin).sum()), "n": int(a.size)}


def worst(ms):
    """Worst over a model's outputs: largest max_abs, smallest cosine."""
    ms = [m for m in ms if m and "max_abs" in m]
    if not ms:
        return None
    return {"max_abs": max(m["max_abs"] for m in ms), "cos": min(m["cos"] for m in ms),
            "max_ref": max(m["max_ref"] for m in ms), "nonfinite": sum(m["nonfinite"] for m in ms)}


def sh(cmd, log, timeout=1800):
    t0 = time.time()
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    return r.returncode, time.time() - t0


def tail(log, n=3):
    try:
        with open(log, errors="replace") as f:
            lines = [x.rstrip() for x in f if x.strip()]
        return " | ".join(lines[-n:])
    except OSError:
        return ""


def cldiff_outputs(dump, run, out_names):
    """Model outputs from a cldiff dump (run with --layers outputs), in fetch order."""
    import h5py
    sys.path.insert(0, HERE)
    import cldiff_dump
    with h5py.File(dump, "r") as f:
        g = f["runs"][run]
        by_name = {}
        for t in cldiff_dump.tensors(g):  # op order: the last op that writes a name wins
            x = np.array(g[t["dataset"]], dtype=np.float32)
            by_name[t["tensor"]] = x
            by_name.setdefault("@base:" + t["tensor"].split("/")[0], []).append(x)
    res = []
    for n in out_names:
        # Opt's OpenCL model fetches "<name>/target_trans" (io_copy/layout outputs)
        if n in by_name:
            res.append(by_name[n])
        else:
            c = by_name.get("@base:" + n.split("/")[0])
            res.append(c[-1] if c else None)
    return res


def export_info(text):
    ins, outs = [], []
    for line in text.splitlines():
        m = re.match(r"\s+input (\d+): (\S+) (\S+) \[([-0-9,]*)\]", line)
        if m:
            ins.append((m.group(2), m.group(3), [int(x) for x in m.group(4).split(",") if x]))
        m = re.match(r"\s+output (\d+): (\S+)", line)
        if m:
            outs.append(m.group(2))
    return ins, outs


def check(args):
    model = os.path.abspath(args.model)
    base = os.path.splitext(os.path.basename(model))[0]
    work = os.path.join(os.path.abspath(args.work), base)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    open(log, "w").close()
    res = {"model": os.path.basename(model), "steps": {}}
    st = res["steps"]

    # 1. export
    exp = os.path.join(work, "export")
    cmd = [args.cldiff, "export", model, "-o", exp] + (["--dequant"] if args.dequant else []) + \
        (["--int8-marker"] if args.int8_marker else [])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + r.stdout)
    st["export"] = "ok" if r.returncode == 0 else "fail (exit %d): %s" % (r.returncode, r.stdout.strip()[-300:])
    if r.returncode:
        return res
    ins, out_names = export_info(r.stdout)
    shapes = dict(s.split("=", 1) for s in args.shape)
    rs = np.random.RandomState(args.seed)
    inputs, in_files = [], []
    for name, dt, dims in ins:
        dims = [int(x) for x in shapes[name].split(",")] if name in shapes else [1 if d < 0 else d for d in dims]
        if any(d < 0 for d in dims):
            st["input"] = "dynamic dims of %s: give --shape" % name
            return res
        x = rs.randn(*dims).astype(np.float32)
        if re.search(r"scale_factor|im_shape", name):
            x = np.ones(dims, np.float32)
        fn = os.path.join(work, "in%d.npy" % len(inputs))
        np.save(fn, x)
        inputs.append(x)
        in_files.append((name, fn, dims))
    res["inputs"] = [[n, d] for n, _, d in in_files]
    res["outputs"] = out_names

    # 2. Opt: x86 and OpenCL
    py = sys.executable
    nbs = {}
    for tag, places in (("x86", "x86"), ("opencl", args.opencl_places)):
        out_nb = os.path.join(work, "pl_%s.nb" % tag)
        code, _ = sh([py, __file__, "opt", exp, out_nb, "--places", places], log, timeout=900)
        if code == 0 and os.path.exists(out_nb):
            nbs[tag] = out_nb
            st["opt_" + tag] = "ok " + json.dumps(nb_targets(out_nb), sort_keys=True)
        else:
            st["opt_" + tag] = "fail (exit %d): %s" % (code, tail(log))

    # 3. cldiff CPU reference on the original model, the same input
    in_args = []
    for name, fn, dims in in_files:
        in_args += ["--input", "%s=%s" % (name, fn), "--shape", "%s=%s" % (name, ",".join(map(str, dims)))]
    ref = None
    code, secs = sh([args.cldiff, "run", "--backends", "cpu", model, "--layers", "outputs", "--out",
                     os.path.join(work, "cd_cpu")] + in_args, log)
    if code == 0:
        ref = cldiff_outputs(os.path.join(work, "cd_cpu", "dump.h5"), "cpu", out_names)
        st["cldiff_cpu"] = "ok %.1f s" % secs
    else:
        st["cldiff_cpu"] = "fail (exit %d): %s" % (code, tail(log))

    # 4. Paddle-Lite x86
    plx = None
    if "x86" in nbs:
        npz = os.path.join(work, "pl_x86_out.npz")
        code, secs = sh([py, __file__, "run", nbs["x86"], "--out", npz] +
                        sum((["--input", fn] for _, fn, _ in in_files), []), log)
        if code == 0:
            z = np.load(npz)
            plx = [z["out%d" % i] if "out%d" % i in z else None for i in range(len(out_names))]
            st["pl_x86_run"] = "ok %.1f s" % secs
        else:
            st["pl_x86_run"] = "fail (exit %d): %s" % (code, tail(log))

    # 5. Paddle-Lite OpenCL (only with a wheel that has an OpenCL runtime)
    plcl = {}
    if "opencl" in nbs:
        has = wheel_has_opencl_runtime()
        if not has:
            st["pl_opencl_run"] = "not run: the wheel has no OpenCL runtime (placeholder kernels)"
        else:
            for prec in ("fp32", "fp16"):
                npz = os.path.join(work, "pl_opencl_%s_out.npz" % prec)
                code, secs = sh([py, __file__, "run", nbs["opencl"], "--out", npz, "--cl-precision", prec] +
                                sum((["--input", fn] for _, fn, _ in in_files), []), log)
                if code == 0:
                    z = np.load(npz)
                    plcl[prec] = [z["out%d" % i] if "out%d" % i in z else None for i in range(len(out_names))]
                    st["pl_opencl_%s_run" % prec] = "ok %.1f s" % secs
                else:
                    st["pl_opencl_%s_run" % prec] = "fail (exit %d): %s" % (code, tail(log))

    # 6. cldiff OpenCL (PoCL here): the original model and Opt's OpenCL model
    cdcl = {}
    for src, path in (("orig", model), ("plopt", nbs.get("opencl"))):
        if not path or args.no_cldiff_opencl:
            continue
        for prec in ("fp32", "fp16"):
            out = os.path.join(work, "cd_cl_%s_%s" % (src, prec))
            code, secs = sh([args.cldiff, "run", "--backends", "opencl", path, "--layers", "outputs", "--out", out,
                             "--" + prec] + in_args, log)
            key = "cldiff_opencl_%s_%s" % (src, prec)
            if code == 0:
                cdcl[(src, prec)] = cldiff_outputs(os.path.join(out, "dump.h5"), "opencl", out_names)
                st[key] = "ok %.1f s" % secs
            else:
                st[key] = "fail (exit %d): %s" % (code, tail(log))

    # 7. comparisons, worst over the outputs (only float outputs compared)
    cmp = {}

    def add(key, xs, ys):
        if xs is None or ys is None:
            return
        ms = []
        for x, y in zip(xs, ys):
            if x is None or y is None:
                ms.append(None)
                continue
            ms.append(metrics(x, y))
        cmp[key] = {"worst": worst(ms), "per_output": ms}

    add("pl_x86_vs_cldiff_cpu", plx, ref)
    for prec, v in plcl.items():
        add("pl_opencl_%s_vs_cldiff_cpu" % prec, v, ref)
        add("pl_opencl_%s_vs_pl_x86" % prec, v, plx)
        if ("orig", prec) in cdcl:
            add("pl_opencl_%s_vs_cldiff_opencl_%s" % (prec, prec), v, cdcl[("orig", prec)])
    for (src, prec), v in cdcl.items():
        add("cldiff_opencl_%s_%s_vs_cldiff_cpu" % (src, prec), v, ref)
        add("cldiff_opencl_%s_%s_vs_pl_x86" % (src, prec), v, plx)
    res["compare"] = cmp
    return res


def layers(args):
    """Layer by layer: Paddle-Lite x86 (Opt on `cldiff export --fetch-all`) vs cldiff CPU."""
    import h5py
    sys.path.insert(0, HERE)
    import cldiff_dump
    model = os.path.abspath(args.model)
    work = os.path.join(os.path.abspath(args.work), os.path.splitext(os.path.basename(model))[0] + "_layers")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    exp = os.path.join(work, "export")
    r = subprocess.run([args.cldiff, "export", model, "-o", exp, "--fetch-all"] + (["--dequant"] if args.dequant else []) +
                       (["--int8-marker"] if args.int8_marker else []),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise SystemExit(r.stdout)
    ins, out_names = export_info(r.stdout)
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(exp, "fetch.tsv"))][1:]
    shapes = dict(s.split("=", 1) for s in args.shape)
    rs = np.random.RandomState(args.seed)
    in_files = []
    for name, dt, dims in ins:
        dims = [int(x) for x in shapes[name].split(",")] if name in shapes else [1 if d < 0 else d for d in dims]
        fn = os.path.join(work, "in%d.npy" % len(in_files))
        np.save(fn, np.ones(dims, np.float32) if re.search(r"scale_factor|im_shape", name)
                else rs.randn(*dims).astype(np.float32))
        in_files.append((name, fn, dims))
    nb = os.path.join(work, "pl_x86.nb")
    py = sys.executable
    code, _ = sh([py, __file__, "opt", exp, nb, "--places", args.places], log)
    if code:
        raise SystemExit("opt failed: " + tail(log))
    npz = os.path.join(work, "pl_out.npz")
    code, _ = sh([py, __file__, "run", nb, "--out", npz] + sum((["--input", fn] for _, fn, _ in in_files), []), log)
    if code:
        raise SystemExit("run failed: " + tail(log))
    z = np.load(npz)
    in_args = []
    for name, fn, dims in in_files:
        in_args += ["--input", "%s=%s" % (name, fn), "--shape", "%s=%s" % (name, ",".join(map(str, dims)))]
    code, _ = sh([args.cldiff, "run", "--backends", "cpu", model, "--out", os.path.join(work, "cd_cpu")] + in_args, log)
    if code:
        raise SystemExit("cldiff run failed: " + tail(log))
    f = h5py.File(os.path.join(work, "cd_cpu", "dump.h5"), "r")
    g = f["runs/cpu"]
    cd = {}
    for t in cldiff_dump.tensors(g):
        cd[(int(t["op_index"]), t["tensor"])] = t["dataset"]
    first = None
    out = []
    for col, oi, oname, otype, tname in rows:
        key = "out%s" % col
        ds = cd.get((int(oi), tname))
        if key not in z or ds is None:
            out.append((oi, oname, otype, tname, None))
            continue
        m = metrics(z[key], np.array(g[ds]))
        out.append((oi, oname, otype, tname, m))
        rel = m.get("max_abs", 0) / max(m.get("max_ref", 0), 1e-30)
        if first is None and "max_abs" in m and (rel > args.rel or m["cos"] < 0.99999):
            first = (oi, oname, otype, tname, m)
    with open(os.path.join(work, "layers.tsv"), "w") as fo:
        fo.write("op_index\top\ttype\ttensor\tmax_abs\tmax_ref\tcos\n")
        for oi, oname, otype, tname, m in out:
            if m and "max_abs" in m:
                fo.write("%s\t%s\t%s\t%s\t%.3g\t%.3g\t%.9f\n" % (oi, oname, otype, tname, m["max_abs"],
                                                                 m["max_ref"], m["cos"]))
            else:
                fo.write("%s\t%s\t%s\t%s\t-\t-\t-\n" % (oi, oname, otype, tname))
    print("layers: %s (%d compared)" % (os.path.join(work, "layers.tsv"), sum(1 for x in out if x[4])))
    if first:
        oi, oname, otype, tname, m = first
        print("first divergence (max_abs/max_ref > %g or cos < 0.99999): op #%s %s (%s) -> %s: max_abs %.3g "
              "(max |ref| %.3g), cos %.6f" % (args.rel, oi, oname, otype, tname, m["max_abs"], m["max_ref"], m["cos"]))
    else:
        print("no divergence above max_abs/max_ref %g" % args.rel)


def table(paths):
    """Markdown table of `check` JSON files."""
    def w(r, key):
        c = r.get("compare", {}).get(key, {}).get("worst")
        return "%.2g / %.6f" % (c["max_abs"], c["cos"]) if c else "-"

    def stp(r, key):
        v = r["steps"].get(key, "-")
        return v.split(" ")[0] if v.startswith("ok") else v.split(":")[0]

    print("| model | export | Opt x86 | Opt OpenCL (kernels) | PL x86 vs cldiff CPU (max abs / cos) | "
          "PL OpenCL run | cldiff OpenCL fp32 vs CPU | cldiff OpenCL fp16 vs CPU | cldiff OpenCL fp32 on Opt's OpenCL "
          "model vs CPU | same, fp16 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        r = json.load(open(p))
        o = r["steps"].get("opt_opencl", "-")
        if o.startswith("ok"):
            o = "ok " + ", ".join("%s %d" % kv for kv in sorted(json.loads(o[3:]).items()))
        else:
            o = o[:60] + "..."
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], stp(r, "export"), stp(r, "opt_x86"), o, w(r, "pl_x86_vs_cldiff_cpu"),
            "not run (no OpenCL runtime in the wheel)" if "not run" in r["steps"].get("pl_opencl_run", "") else
            stp(r, "pl_opencl_fp32_run"),
            w(r, "cldiff_opencl_orig_fp32_vs_cldiff_cpu"), w(r, "cldiff_opencl_orig_fp16_vs_cldiff_cpu"),
            w(r, "cldiff_opencl_plopt_fp32_vs_cldiff_cpu"), w(r, "cldiff_opencl_plopt_fp16_vs_cldiff_cpu")))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("opt")
    a.add_argument("export_dir")
    a.add_argument("out_nb")
    a.add_argument("--places", default="x86")
    a = sub.add_parser("run")
    a.add_argument("model")
    a.add_argument("--input", action="append", default=[])
    a.add_argument("--out", required=True)
    a.add_argument("--cl-precision", default="fp32", choices=("fp32", "fp16"))
    a.add_argument("--threads", type=int, default=1)
    a.add_argument("--force", action="store_true")
    sub.add_parser("has-opencl")
    a = sub.add_parser("check")
    a.add_argument("model")
    a.add_argument("--cldiff", required=True)
    a.add_argument("--work", required=True)
    a.add_argument("--shape", action="append", default=[])
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--dequant", action="store_true")
    a.add_argument("--int8-marker", action="store_true", help="export int8 as int8 for Opt's int8 places")
    a.add_argument("--opencl-places", default="x86_opencl")
    a.add_argument("--no-cldiff-opencl", action="store_true")
    a.add_argument("--json")
    a = sub.add_parser("layers")
    a.add_argument("model")
    a.add_argument("--cldiff", required=True)
    a.add_argument("--work", required=True)
    a.add_argument("--shape", action="append", default=[])
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--dequant", action="store_true")
    a.add_argument("--int8-marker", action="store_true", help="export int8 as int8 for Opt's int8 places")
    a.add_argument("--places", default="x86")
    a.add_argument("--rel", type=float, default=1e-4)
    a = sub.add_parser("table")
    a.add_argument("json_files", nargs="+")
    args = ap.parse_args()
    if args.cmd == "opt":
        print(cmd_opt(args.export_dir, args.out_nb, args.places))
    elif args.cmd == "run":
        outs, ms = cmd_run(args.model, [np.load(p) for p in args.input], args.out, args.cl_precision, args.threads,
                           args.force)
        for k, v in outs.items():
            print("%s %s %s mean %.6g" % (k, v.shape, v.dtype, float(np.mean(v)) if v.size else 0.0))
        print("run %.1f ms" % ms)
    elif args.cmd == "has-opencl":
        h = wheel_has_opencl_runtime()
        print({None: "no paddlelite wheel found", True: "OpenCL runtime present",
               False: "no OpenCL runtime: OpenCL kernels are opt's placeholders"}[h], "(%s)" % lite_so_path())
        sys.exit(0 if h else 1)
    elif args.cmd == "layers":
        layers(args)
    elif args.cmd == "table":
        table(args.json_files)
    else:
        res = check(args)
        text = json.dumps(res, indent=1, sort_keys=True)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text + "\n")
        print(text)


if __name__ == "__main__":
    main()
