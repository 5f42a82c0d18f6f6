#!/usr/bin/env python3
"""Determinism test (issue 5): the same command twice gives bit-identical dumps.

    test_determinism.py CLDIFF SOURCE_DIR

Runs `cldiff MODEL --out A` and the same into B (CPU vs OpenCL, full dump, comparison
stored) for the bundled model, and with --fp16 and a shared model when present. Then every
dataset of A must have the same dtype, shape and bytes in B (and B no extra dataset), and
every attribute must be equal, except the attributes that by design hold timestamps and
timings (VOLATILE below). The command_line attribute differs only by the --out folder,
which is normalised. Exit 1 on any difference (each is listed).
"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

CLDIFF, SRC = sys.argv[1], sys.argv[2]
MODELS = os.environ.get("CD_SHARED_MODELS", os.path.join(SRC, "..", "shared", "models"))
# Attributes and table columns that are timestamps or timings: allowed to differ between runs.
VOLATILE = {"created", "wall_ms", "elapsed_us", "kernel_us", "elapsed_s", "compile_ms", "time_ms"}
problems = []


def walk(f):
    """{path: object} for every group and dataset, root included."""
    objs = {"/": f}
    f.visititems(lambda name, obj: objs.__setitem__("/" + name, obj))
    return objs


def norm_attr(name, v, out_dir):
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    if isinstance(v, str):
        return v.replace(out_dir, "<OUT>")
    return v


def equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return a == b


def compare(label, pa, pb, da, db):
    n_data = n_attr = 0
    with h5py.File(pa, "r") as fa, h5py.File(pb, "r") as fb:
        oa, ob = walk(fa), walk(fb)
        for p in sorted(set(oa) ^ set(ob)):
            problems.append(f"{label}: {p} only in {'A' if p in oa else 'B'}")
        for p in sorted(set(oa) & set(ob)):
            a, b = oa[p], ob[p]
            if isinstance(a, h5py.Dataset):
                n_data += 1
                if not isinstance(b, h5py.Dataset):
                    problems.append(f"{label}: {p} is a dataset in A only")
                    continue
                if a.dtype != b.dtype or a.shape != b.shape:
                    problems.append(f"{label}: {p} dtype/shape {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
                elif a.dtype.names:
                    # a table (/tensors/<run>, /compare/...): every column but the timings
                    va, vb = a[()], b[()]
                    for col in a.dtype.names:
                        if col not in VOLATILE and va[col].tobytes() != vb[col].tobytes():
                            problems.append(f"{label}: {p} column {col} differs")
                elif a.shape is not None and a[()].tobytes() != b[()].tobytes():
                    problems.append(f"{label}: {p} bytes differ")
            ka, kb = set(a.attrs), set(b.attrs)
            for k in sorted(ka ^ kb):
                problems.append(f"{label}: {p} attribute {k} only in {'A' if k in ka else 'B'}")
            for k in sorted(ka & kb):
                if k in VOLATILE:
                    continue
                # a table's digest covers its timing columns too (docs/dump-format.md): its other
                # columns are compared above; a tensor's digest must be equal
                if k == "digest" and isinstance(a, h5py.Dataset) and a.dtype.names:
                    continue
                n_attr += 1
                va, vb = norm_attr(k, a.attrs[k], da), norm_attr(k, b.attrs[k], db)
                if not equal(va, vb):
                    problems.append(f"{label}: {p} attribute {k}: {va!r} vs {vb!r}")
    print(f"{label}: {n_data} datasets and {n_attr} attributes compared", flush=True)


def case(label, model, *extra):
    dirs = []
    for _ in range(2):
        d = tempfile.mkdtemp(prefix="cldiff_det_")
        r = subprocess.run([CLDIFF, model, *extra, "--out", d, "--quiet", "--no-cache"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, CLDIFF_NO_PROGRESS="1"), timeout=600)
        if r.returncode not in (0, 1):   # 1 = a layer out of tolerance: still a full dump
            problems.append(f"{label}: cldiff exit {r.returncode}: {r.stderr.decode()[-400:]}")
            return
        dirs.append(d)
    compare(label, os.path.join(dirs[0], "dump.h5"), os.path.join(dirs[1], "dump.h5"), dirs[0], dirs[1])
    for d in dirs:
        subprocess.run(["rm", "-rf", d])


def main():
    case("mobilenet_tiny fp32", os.path.join(SRC, "testdata", "mobilenet_tiny.nb"))
    case("multi_input fp16", os.path.join(SRC, "testdata", "multi_input.nb"), "--fp16")
    shared = os.path.join(MODELS, "mask_detector_fp32_arm_v2.10rc.nb")
    if os.path.exists(shared):
        case("mask_detector fp32, 2 threads", shared, "--threads", "2")
    else:
        print(f"note: {shared} absent, shared-model case not run")
    for p in problems:
        print("FAIL " + p)
    print(f"{len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
