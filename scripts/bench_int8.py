#!/usr/bin/env python3
"""int8 section of scripts/bench.sh (docs/int8.md "Speed"): for every model with int8 layers,
the per-op median times of the CPU backend's int8 mode (cpu-all, the default --int8 arm) and of
the float path on the same layers (cpu-dequant, --int8 dequant), summed per kind of int8 layer.

usage: bench_int8.py --work DIR [--out FILE.md]   (appends its section to FILE.md)"""
import argparse
import os
import sys

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402  (per-op medians over the timed runs)
import cldiff_dump  # noqa: E402


def int8_ops(dump):
    """{op_index: kind} of the ops the int8 run computed in integer arithmetic."""
    out = {}
    with h5py.File(dump, "r") as f:
        for t in cldiff_dump.tensors(f["runs/cpu"]):
            k = t["kernel"]
            if ":int8:" in k:
                typ, _, tail = k.split(":", 2)
                out[int(t["op_index"])] = typ + ("" if typ == "calib" else " " + tail)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    lines = ["\n## int8 layers: CPU int8 mode vs the float path on the same layers (per-op medians)\n",
             "| model | int8 layers | kind | n | int8 ms | float ms | int8 / float |", "|---|---:|---|---:|---:|---:|---:|"]
    found = False
    for m in sorted(os.listdir(a.work)):
        d8, df = os.path.join(a.work, m, "cpu-all"), os.path.join(a.work, m, "cpu-dequant")
        if not os.path.isdir(df) or not os.path.isfile(os.path.join(d8, "dump.h5")):
            continue
        kinds = int8_ops(os.path.join(d8, "dump.h5"))
        if not kinds:
            continue
        ops8, _ = bench_report.dump_ops_median(d8, "cpu")
        opsf, _ = bench_report.dump_ops_median(df, "cpu")
        by = {}
        for oi, kind in kinds.items():
            if oi in ops8 and oi in opsf:
                e = by.setdefault(kind, [0, 0.0, 0.0])
                e[0] += 1
                e[1] += ops8[oi]["elapsed_us"]
                e[2] += opsf[oi]["elapsed_us"]
        tot = [sum(v[0] for v in by.values()), sum(v[1] for v in by.values()), sum(v[2] for v in by.values())]
        for kind, v in sorted(by.items()) + [("all", tot)]:
            lines.append("| %s | %d | %s | %d | %.2f | %.2f | %.2f |" % (m.replace(".nb", ""), len(kinds), kind, v[0],
                                                                      v[1] / 1e3, v[2] / 1e3, v[1] / v[2] if v[2] else 0))
        found = True
    if not found:
        return 0
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
