#!/usr/bin/env python3
"""Checks that a cldiff dump follows the documented layout (docs/dump-format.md), reading
it twice: with h5py, and with `h5dump -H` (the HDF5 command-line tools, independent of
cldiff and of h5py).

usage: check_dump.py DUMP [--expect-runs cpu,opencl] [--allow-incomplete] [--quiet]

Exit status: 0 layout ok, 1 layout problems (each printed), 2 cannot run (no h5py/h5dump,
missing file).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import cldiff_dump  # noqa: E402

ROOT_STR = ["cldiff_version", "created", "command_line", "model_path", "model_sha256", "model_format", "precision"]
RUN_STR = ["backend", "precision", "device", "platform", "driver", "library_path"]
TABLE_COLS = ["dataset", "op_index", "op_type", "layer", "tensor", "dtype", "shape", "elapsed_us", "kernel_us",
              "where", "kernel", "note", "stats_only", "count", "min", "max", "mean", "nan_count", "inf_count"]
OPS_FIELDS = ["index", "name", "type", "inputs", "outputs", "kernel_alias", "kernel_target", "kernel_precision",
              "kernel_layout"]
DTYPES = {"float32": "f4", "float16": "f2", "float64": "f8", "int8": "i1", "int16": "i2", "int32": "i4",
          "int64": "i8", "uint8": "u1", "bool": "u1"}


def escape(name):
    """cd_dump_escape: bytes outside 0x21..0x7E and '/', '%' become %XX."""
    out = []
    for b in name.encode("utf-8"):
        if 0x21 <= b <= 0x7E and b not in (ord("/"), ord("%")):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def as_str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
        if isinstance(v, bytes):
            return v.decode("utf-8")
    return v


class Checker:
    def __init__(self, quiet):
        self.problems = []
        self.quiet = quiet

    def bad(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    def need_str(self, obj, where, names):
        for n in names:
            if n not in obj.attrs:
                self.bad(where, "missing attribute '%s'" % n)
            elif not isinstance(as_str(obj.attrs[n]), str):
                self.bad(where, "attribute '%s' is not a string (%r)" % (n, obj.attrs[n]))

    def need_num(self, obj, where, names):
        import numpy as np
        for n in names:
            if n not in obj.attrs:
                self.bad(where, "missing attribute '%s'" % n)
            elif not np.issubdtype(np.asarray(obj.attrs[n]).dtype, np.number):
                self.bad(where, "attribute '%s' is not a number (%r)" % (n, obj.attrs[n]))


def check_h5py(path, args, c):
    import h5py
    import numpy as np
    f = h5py.File(path, "r")
    c.need_str(f, "/", ROOT_STR)
    c.need_num(f, "/", ["format_version", "seed", "complete"])
    if f.attrs.get("format_version") != 2:
        c.bad("/", "format_version is %r, expected 2" % f.attrs.get("format_version"))
    created = as_str(f.attrs.get("created", ""))
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(created)):
        c.bad("/", "created %r is not a UTC ISO-8601 time" % created)
    sha = as_str(f.attrs.get("model_sha256", ""))
    if sha and not re.fullmatch(r"[0-9a-f]{64}", sha):
        c.bad("/", "model_sha256 %r is not 64 lower-case hex digits" % sha)
    if not args.allow_incomplete and f.attrs.get("complete") != 1:
        c.bad("/", "dump is marked incomplete (complete=%r)" % f.attrs.get("complete"))
    if "model" in f and "ops" in f["model"]:
        ops = f["model/ops"]
        names = ops.dtype.names or ()
        for fld in OPS_FIELDS:
            if fld not in names:
                c.bad("/model/ops", "table lacks column '%s'" % fld)
        if "index" in names and len(ops) and list(ops["index"]) != list(range(len(ops))):
            c.bad("/model/ops", "index column is not 0..n-1")
    if "inputs" in f:
        for k, ds in f["inputs"].items():
            where = "/inputs/" + k
            c.need_str(ds, where, ["tensor", "dtype", "source"])
            if "tensor" in ds.attrs and escape(as_str(ds.attrs["tensor"])) != k:
                c.bad(where, "name is not the escaped tensor name %r" % as_str(ds.attrs["tensor"]))
            if "shape" in ds.attrs and tuple(np.atleast_1d(ds.attrs["shape"])) != ds.shape and ds.shape != ():
                c.bad(where, "shape attribute %r differs from dataset shape %r" % (ds.attrs["shape"], ds.shape))
    if "runs" not in f:
        c.bad("/", "no /runs group")
        return 0, 0
    runs = list(f["runs"].keys())
    for want in [r for r in (args.expect_runs or "").split(",") if r]:
        if want not in runs:
            c.bad("/runs", "expected run '%s' (have: %s)" % (want, ", ".join(runs) or "none"))
    ntens = 0
    for run in runs:
        g = f["runs"][run]
        where = "/runs/" + run
        c.need_str(g, where, RUN_STR)
        c.need_num(g, where, ["threads", "wall_ms", "complete"])
        if not args.allow_incomplete and g.attrs.get("complete") != 1:
            c.bad(where, "run is marked incomplete")
        tab = cldiff_dump.table(g)
        if tab is None:
            c.bad(where, "no tensors table (/tensors/%s)" % run)
            continue
        cols = tab.dtype.names or ()
        for fld in TABLE_COLS:
            if fld not in cols:
                c.bad("/tensors/" + run, "table lacks column '%s'" % fld)
        if any(fld not in cols for fld in TABLE_COLS):
            continue
        rows = cldiff_dump.tensors(g)
        listed = set()
        last = -1
        for t in rows:
            name = t["dataset"]
            w = where + "/" + name
            listed.add(name)
            ntens += 1
            if name not in g or not isinstance(g[name], h5py.Dataset):
                c.bad(w, "listed in the tensors table but not a dataset of the run")
                continue
            ds = g[name]
            # format 2: the metadata is in the tensors table; the one attribute is the checksum
            # (docs/dump-format.md "Checksums"), on every dataset that stores values
            extra = [k for k in ds.attrs if k != "digest"]
            if extra:
                c.bad(w, "tensor datasets carry only 'digest' in format 2 (has %s)" % ", ".join(extra))
            if ds.shape is not None and ds.size and not re.fullmatch(r"d64:[0-9a-f]{16}", as_str(ds.attrs.get("digest", ""))):
                c.bad(w, "no checksum attribute 'digest' (d64:<16 hex>): %r" % ds.attrs.get("digest"))
            m = re.fullmatch(r"(\d{4,})_(.*?)(~\d+)?", name)
            if not m:
                c.bad(w, "name does not match NNNN_<tensor>")
                continue
            if int(m.group(1)) != t["op_index"]:
                c.bad(w, "op_index %r differs from the name prefix" % t["op_index"])
            if escape(t["tensor"]) != m.group(2) and not escape(t["tensor"]).startswith(m.group(2)):
                c.bad(w, "name is not the escaped tensor name %r" % t["tensor"])
            stats_only = t["stats_only"] == 1
            if stats_only:
                if ds.shape is not None:
                    c.bad(w, "stats_only dataset holds values")
            elif ds.shape != t["shape"]:
                c.bad(w, "dataset shape %r differs from the table's shape %r" % (ds.shape, t["shape"]))
            dt = t["dtype"]
            if dt in DTYPES and not stats_only and ds.dtype.str[1:] != DTYPES[dt]:
                c.bad(w, "stored as %s but the table's dtype says %s" % (ds.dtype.str, dt))
            elif dt not in DTYPES:
                c.bad(w, "unknown dtype %r" % dt)
            if t["count"] >= 0 and not stats_only and ds.size and ds.dtype.kind == "f":
                if t["count"] != ds.size:
                    c.bad(w, "count %r but the dataset holds %d values" % (t["count"], ds.size))
                v = ds[()].astype(np.float64)
                nn = int(np.isnan(v).sum())
                if nn != t["nan_count"]:
                    c.bad(w, "nan_count %r but the data holds %d NaNs" % (t["nan_count"], nn))
                fin = v[np.isfinite(v)]
                if fin.size and (fin.min() != t["min"] or fin.max() != t["max"]):
                    c.bad(w, "min/max in the table disagree with the data")
            if t["op_index"] < last:
                c.bad(w, "rows are not in op order")
            last = t["op_index"]
        for name in g.keys():
            if name not in listed:
                c.bad(where + "/" + name, "dataset not listed in the run's tensors table")
    f.close()
    return len(runs), ntens


def check_h5dump(path, c, runs_expected):
    exe = shutil.which("h5dump")
    if not exe:
        print("check_dump: h5dump not found (apt install hdf5-tools)", file=sys.stderr)
        sys.exit(2)
    p = subprocess.run([exe, "-H", path], capture_output=True, text=True)
    if p.returncode != 0:
        c.bad("h5dump", "h5dump -H failed: %s" % (p.stderr.strip()[:500]))
        return
    out = p.stdout
    for needle in ['GROUP "/"', 'ATTRIBUTE "format_version"', 'ATTRIBUTE "complete"', 'GROUP "runs"', 'GROUP "tensors"']:
        if needle not in out:
            c.bad("h5dump", "output lacks %s" % needle)
    for run in runs_expected:
        if 'GROUP "%s"' % run not in out:
            c.bad("h5dump", "output lacks run group %s" % run)
    # every dataset h5dump lists must have a type h5py and MATLAB can read
    for m in re.finditer(r'DATASET "([^"]+)" \{\s*DATATYPE\s+([^\n]+)', out):
        t = m.group(2).strip()
        ok = t.startswith("H5T_IEEE_F") or t.startswith("H5T_STD_") or t.startswith("H5T_COMPOUND") or \
            "16-bit little-endian floating-point" in t
        if not ok:
            c.bad("h5dump", "dataset %s has an unexpected type %s" % (m.group(1), t))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--expect-runs", default="", help="comma-separated run names that must exist")
    ap.add_argument("--allow-incomplete", action="store_true", help="accept complete=0 (interrupted runs)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print("check_dump: %s (use the project venv: .venv/bin/python)" % e, file=sys.stderr)
        return 2
    if not os.path.isfile(args.dump):
        print("check_dump: no such file %s" % args.dump, file=sys.stderr)
        return 2
    c = Checker(args.quiet)
    try:
        nruns, ntens = check_h5py(args.dump, args, c)
    except OSError as e:
        c.bad(args.dump, "h5py cannot open it: %s" % e)
        nruns = ntens = 0
    check_h5dump(args.dump, c, [r for r in args.expect_runs.split(",") if r])
    if c.problems:
        for p in c.problems:
            print("check_dump: " + p)
        print("check_dump: %d problem(s) in %s" % (len(c.problems), args.dump))
        return 1
    if not args.quiet:
        print("check_dump: OK %s (%d runs, %d tensors)" % (args.dump, nruns, ntens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
