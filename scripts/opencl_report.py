#!/usr/bin/env python3
"""Summarises OpenCL runs from cldiff dumps: per-model wall time (median over the given
dumps of one model/precision), summed kernel time, conv GFLOP/s and the slowest layers.

usage: opencl_report.py [--title T] LABEL=DUMP[,DUMP...] ...
  LABEL is "model precision"; several dumps of one label are repeats (median wall time).
GFLOP/s = 2 * MACs / kernel time, over conv layers that ran on OpenCL; MACs come from the
dump's /model/macs table, kernel time from the per-layer kernel_us attribute (OpenCL
profiling events)."""
import os
import statistics
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cldiff_dump  # noqa: E402


def s(v):
    return v.decode() if isinstance(v, bytes) else v


def one(path):
    f = h5py.File(path, "r")
    run = f["runs/opencl"]
    macs = {int(r["op_index"]): float(r["macs"]) for r in f["model/macs"][:]} if "model/macs" in f else {}
    layers = []
    for a in cldiff_dump.tensors(run):
        layers.append(dict(op=a["op_index"], type=a["op_type"], layer=a["layer"], kus=a["kernel_us"],
                           eus=a["elapsed_us"], where=a["where"], macs=macs.get(a["op_index"], 0.0)))
    return dict(wall=float(run.attrs["wall_ms"]), device=s(run.attrs.get("device", "")),
                driver=s(run.attrs.get("driver", "")), layers=layers, complete=int(run.attrs.get("complete", 0)))


def main(argv):
    title = "OpenCL runs"
    if argv[:1] == ["--title"]:
        title, argv = argv[1], argv[2:]
    rows, dev = [], None
    details = []
    for arg in argv:
        label, paths = arg.split("=", 1)
        runs = [one(p) for p in paths.split(",")]
        last = runs[-1]
        dev = dev or (last["device"], last["driver"])
        conv = [l for l in last["layers"] if l["type"] in ("conv2d", "depthwise_conv2d", "conv2d_transpose")
                and l["where"] == "opencl" and l["kus"] > 0]
        cm = sum(l["macs"] for l in conv)
        ck = sum(l["kus"] for l in conv)
        big = [l for l in conv if l["type"] == "conv2d"]
        bm, bk = sum(l["macs"] for l in big), sum(l["kus"] for l in big)
        ktot = sum(l["kus"] for l in last["layers"] if l["kus"] > 0)
        fb = sum(1 for l in last["layers"] if l["where"] == "cpu-fallback")
        rows.append((label, statistics.median(r["wall"] for r in runs), ktot / 1e3, 2 * cm / ck / 1e3 if ck else 0,
                     2 * bm / bk / 1e3 if bk else 0, fb, len(runs), last["complete"]))
        top = sorted(last["layers"], key=lambda l: -l["kus"])[:5]
        details.append((label, top))
    print(f"### {title}\n")
    if dev:
        print(f"Device: {dev[0]}  \nDriver: {dev[1]}\n")
    print("| model / precision | wall ms (median) | sum kernel ms | conv GFLOP/s (all convs) | conv2d GFLOP/s | layers on CPU fallback | runs | complete |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.1f} | {r[2]:.2f} | {r[3]:.1f} | {r[4]:.1f} | {r[5]} | {r[6]} | {r[7]} |")
    print("\nSlowest layers (kernel time from OpenCL profiling events):\n")
    for label, top in details:
        print(f"- {label}: " + ", ".join(f"#{l['op']} {l['layer']} {l['kus']:.0f} us" + (
            f" ({2 * l['macs'] / l['kus'] / 1e3:.0f} GFLOP/s)" if l['macs'] and l['kus'] > 0 else "") for l in top))


if __name__ == "__main__":
    main(sys.argv[1:])
