#!/usr/bin/env python3
"""Bit-for-bit check of cldiff's CPU int8 layers against Paddle-Lite's real ARM int8 kernels.

Reads dumps of `cldiff MODEL.nb --backends paddle-lite-arm,cpu --out DIR` and compares, tensor by
tensor and exactly, run `paddle-lite-arm` (Paddle-Lite's armv8 kernels under qemu) with run
`cpu_local` (cldiff's CPU backend run on Paddle-Lite's own inputs to each layer). For every layer
that differs: the number of differing elements and the largest difference, in output quanta for a
layer with an int8 output (calib fp32_to_int8, an int8_out conv/fc: one quantum is the output
scale) and in float32 ulps otherwise. The summary line per model counts the int8 layers (those
whose cpu_local kernel is an int8 kernel, `...:int8:...`), how many are bit-exact, and the
elements that differ; float layers that differ are listed too (their order of float operations is
not part of the int8 claim).

usage: pl_int8_exact.py DUMP.h5|DIR [DUMP.h5|DIR ...] [--markdown] [--quiet] [--max-rows N]
       pl_int8_exact.py --run MODEL.nb [MODEL.nb ...] [--cldiff PATH] [--work DIR] [cldiff options after --]
Exit 0: every int8 layer bit-exact; 1: some int8 layer differs; 2: bad usage or unreadable dump.
Docs: docs/int8.md "Against Paddle-Lite's ARM kernels".
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))

REF, LOC = "paddle-lite-arm", "cpu_local"


def _s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def quanta_of(model_path):
    """{op_index: output scale} of the int8-output ops (calib fp32_to_int8 'scale', conv Output0_scale,
    fc Out0_scale), read from the model with the oracle's own reader; {} when it cannot be read."""
    try:
        import nb_read
        ops, _ = nb_read.load(model_path)
    except Exception:  # an .nb the small reader does not take: no quanta, ulps only
        return {}
    q = {}
    for op in ops:
        a = op.attrs
        if op.type == "calib":
            if a.get("scale") is not None:
                q[op.index] = float(a["scale"])
        else:
            for k in ("Output0_scale", "Out0_scale"):
                v = a.get(k)
                if v:
                    q[op.index] = float(v[0])
                    break
    return q


def ulps(a, b):
    ai = a.astype(np.float32).view(np.int32).astype(np.int64)
    bi = b.astype(np.float32).view(np.int32).astype(np.int64)
    ai = np.where(ai < 0, np.int64(-2**31) - ai, ai)
    bi = np.where(bi < 0, np.int64(-2**31) - bi, bi)
    return np.abs(ai - bi)


def check_dump(path, quiet=False, max_rows=40):
    import h5py
    import cldiff_dump
    if os.path.isdir(path):
        path = os.path.join(path, "dump.h5")
    f = h5py.File(path, "r")
    if REF not in f["runs"] or LOC not in f["runs"]:
        raise SystemExit("pl_int8_exact: %s has no runs '%s' and '%s' (make it with --backends paddle-lite-arm,cpu)"
                         % (path, REF, LOC))
    model = _s(f.attrs.get("model_path", b""))
    quanta = quanta_of(model) if model and os.path.isfile(model) else {}
    ra, rb = f["runs/" + REF], f["runs/" + LOC]
    ta = {t["dataset"]: t for t in cldiff_dump.tensors(ra)}
    rows = []
    n8 = n8_exact = n8_elems = nf = nf_exact = nf_elems = 0
    missing = 0
    for t in cldiff_dump.tensors(rb):
        ds = t["dataset"]
        if ds not in ta or t["stats_only"] or ta[ds]["stats_only"]:
            missing += 1
            continue
        a = ra[ds][()]
        b = rb[ds][()]
        kern = t["kernel"]
        is8 = ":int8:" in kern
        out8 = is8 and (kern.endswith("int8_out") or kern.endswith("fp32_to_int8"))
        if a.shape != b.shape:
            rows.append((t["op_index"], t["layer"], kern, -1, a.size, "shape %s vs %s" % (a.shape, b.shape)))
            n8 += is8
            nf += not is8
            continue
        if a.dtype.kind != "f" or b.dtype.kind != "f":
            same = a == b
        else:
            same = (a == b) | (np.isnan(a) & np.isnan(b))
        nd = int(same.size - np.count_nonzero(same))
        if is8:
            n8 += 1
            n8_exact += nd == 0
            n8_elems += nd
        else:
            nf += 1
            nf_exact += nd == 0
            nf_elems += nd
        if nd:
            bad = ~same
            d = np.abs(a[bad].astype(np.float64) - b[bad].astype(np.float64))
            q = quanta.get(t["op_index"]) if out8 else None
            if q:
                what = "max %.6g quanta (quantum %.6g)" % (d.max() / q, q)
            else:
                what = "max |d| %.3g, %d ulp" % (d.max(), ulps(a[bad], b[bad]).max()) if a.dtype.kind == "f" else \
                       "max |d| %.3g" % d.max()
            first = np.argwhere(bad)[0]
            what += "; first at %s: %s %r, %s %r" % (tuple(int(i) for i in first), REF, a[tuple(first)].item(),
                                                     LOC, b[tuple(first)].item())
            rows.append((t["op_index"], t["layer"], kern, nd, a.size, what))
    res = {"model": os.path.basename(model) or path, "int8_layers": n8, "int8_exact": n8_exact,
           "int8_elems": n8_elems, "float_layers": nf, "float_exact": nf_exact, "float_elems": nf_elems,
           "route": _s(ra.attrs.get("engine_route", b"")), "rows": rows, "not_compared": missing}
    if not quiet:
        print("%s: int8 layers %d, bit-exact %d, elements differing %d; float layers %d, bit-exact %d, elements "
              "differing %d%s" % (res["model"], n8, n8_exact, n8_elems, nf, nf_exact, nf_elems,
                                  "; %d tensors not compared (absent or statistics only)" % missing if missing else ""))
        if res["route"]:
            print("  engine route: %s" % res["route"])
        for r in rows[:max_rows]:
            print("  op #%d %s [%s]: %s of %d elements differ, %s" % (r[0], r[1], r[2], r[3], r[4], r[5]))
        if len(rows) > max_rows:
            print("  ... %d more" % (len(rows) - max_rows))
    return res


def run_models(models, cldiff, work, extra):
    dumps = []
    for m in models:
        out = os.path.join(work, os.path.splitext(os.path.basename(m))[0])
        cmd = [cldiff, m, "--backends", "paddle-lite-arm,cpu", "--out", out, "--quiet"] + extra
        p = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.isfile(os.path.join(out, "dump.h5")):
            print("pl_int8_exact: %s: no dump (cldiff exit %d): %s" % (m, p.returncode, p.stderr[-500:]))
            continue
        dumps.append(out)
    return dumps


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    opts = {"--cldiff": None, "--work": None, "--max-rows": "40"}
    flags = set()
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in opts:
            if i + 1 >= len(argv):
                print("pl_int8_exact: %s needs a value" % a, file=sys.stderr)
                return 2
            opts[a] = argv[i + 1]
            i += 2
            continue
        if a in ("--markdown", "--quiet", "--run"):
            flags.add(a)
        elif a.startswith("--"):
            print("pl_int8_exact: unknown option %s (see --help)" % a, file=sys.stderr)
            return 2
        else:
            pos.append(a)
        i += 1
    if not pos:
        print("pl_int8_exact: no dump or model given (see --help)", file=sys.stderr)
        return 2
    if "--run" in flags:
        cldiff = opts["--cldiff"] or os.path.join(HERE, "..", "build", "cldiff")
        work = opts["--work"] or "pl_int8_exact.out"
        os.makedirs(work, exist_ok=True)
        pos = run_models(pos, cldiff, work, extra)
    results = []
    for p in pos:
        if not os.path.exists(p):
            print("pl_int8_exact: %s: no such dump or folder" % p, file=sys.stderr)
            return 2
        results.append(check_dump(p, quiet="--quiet" in flags, max_rows=int(opts["--max-rows"])))
    if "--markdown" in flags:
        print("| model | int8 layers | bit-exact | elements differing | float layers differing (elements) |")
        print("|---|---:|---:|---:|---:|")
        for r in results:
            print("| %s | %d | %d | %d | %d (%d) |" % (r["model"].replace(".nb", ""), r["int8_layers"], r["int8_exact"],
                                                   r["int8_elems"], r["float_layers"] - r["float_exact"],
                                                   r["float_elems"]))
    ok = all(r["int8_layers"] == r["int8_exact"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
