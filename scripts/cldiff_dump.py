"""Reads the per-tensor metadata of a cldiff dump with h5py, for format 2 (one table per run,
/tensors/<run>, beside the run's datasets in /runs/<run>) and format 1 (the same fields as attributes of each tensor dataset).
Used by the scripts and the tests; layout in docs/dump-format.md.

    import h5py, cldiff_dump
    f = h5py.File("dump.h5", "r")
    for t in cldiff_dump.tensors(f["runs/cpu"]):
        print(t["op_index"], t["layer"], t["shape"], f["runs/cpu"][t["dataset"]].shape)
"""

FIELDS_STR = ("dataset", "op_type", "layer", "tensor", "dtype", "where", "kernel", "note")
FIELDS_NUM = ("op_index", "elapsed_us", "kernel_us", "stats_only", "count", "min", "max", "mean",
              "nan_count", "inf_count")


def _s(v):
    if hasattr(v, "item") and not isinstance(v, (bytes, str)):
        v = v.item()
    return v.decode("utf-8") if isinstance(v, bytes) else v


def _shape(txt):
    txt = _s(txt)
    return tuple(int(x) for x in txt.split(",")) if txt else ()


def table(run_group):
    """The format-2 table of a run (/tensors/<run>), or None (format 1)."""
    run = run_group.name.rsplit("/", 1)[-1]
    f = run_group.file
    if "tensors" in f and run in f["tensors"] and f["tensors"][run].dtype.names is not None:
        return f["tensors"][run]
    return None


def tensors(run_group):
    """The run's stored tensors in op order, as dicts (FIELDS_STR, FIELDS_NUM and 'shape' as a
    tuple). Statistics are absent (count == -1, min/max/mean NaN) where none were stored."""
    out = []
    tab = table(run_group)
    if tab is not None:
        tab = tab[()]
        names = tab.dtype.names
        for row in tab:
            t = {k: _s(row[k]) for k in names if k != "shape"}
            t["shape"] = _shape(row["shape"])
            for k in ("op_index", "stats_only", "count", "nan_count", "inf_count"):
                t[k] = int(t[k])
            for k in ("elapsed_us", "kernel_us", "min", "max", "mean"):
                t[k] = float(t[k])
            out.append(t)
    else:
        import numpy as np
        import h5py
        for name, ds in run_group.items():
            a = ds.attrs
            t = {"dataset": name}
            for k in FIELDS_STR[1:]:
                t[k] = _s(a.get(k, ""))
            sh = a.get("shape", ())
            t["shape"] = () if isinstance(sh, h5py.Empty) else tuple(int(x) for x in np.atleast_1d(sh))
            t["op_index"] = int(a["op_index"])
            t["elapsed_us"] = float(a.get("elapsed_us", float("nan")))
            t["kernel_us"] = float(a.get("kernel_us", -1))
            t["stats_only"] = int(a.get("stats_only", 0))
            t["count"] = int(a.get("count", -1))
            for k in ("min", "max", "mean"):
                t[k] = float(a.get(k, float("nan")))
            for k in ("nan_count", "inf_count"):
                t[k] = int(a.get(k, 0))
            out.append(t)
    out.sort(key=lambda t: (t["op_index"], t["dataset"]))
    return out


def by_dataset(run_group):
    """{dataset name: metadata dict} of a run."""
    return {t["dataset"]: t for t in tensors(run_group)}
