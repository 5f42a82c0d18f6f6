#!/usr/bin/env python3
"""Turns the measurements of scripts/bench.sh into Markdown tables (method: docs/benchmarks.md).

usage: bench_report.py --work DIR [--out FILE.md] [--threads N] [--repeat N] [--cldiff PATH]

DIR holds runs.tsv (model, mode, rep, rc, wall_s, maxrss_kb) and, per model, inspect.txt
(`cldiff inspect` with the bench shapes) and the last dump of each mode
(<model>/<mode>/dump.h5). MACs of conv/fc layers come from the planned tensor shapes printed
by `cldiff inspect`:
  conv2d, depthwise_conv2d (Filter [Cout, Cin/groups, KH, KW]): numel(Output) * Cin/groups*KH*KW
  conv2d_transpose (Filter [Cin, Cout/groups, KH, KW]):          numel(Input)  * Cout/groups*KH*KW
  fc (W [K, N]), mul (Y [K, N]):                                numel(Out) * K
  matmul, matmul_v2 (X [..., M, K], or [..., K, M] transposed):  numel(Out) * K
Per-op times are the dump attributes elapsed_us (host wall time of the op) and, for OpenCL,
kernel_us (device time from profiling events).
"""
import argparse
import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cldiff_dump  # noqa: E402

CONV = {"conv2d", "depthwise_conv2d", "conv2d_transpose", "fc", "mul", "matmul", "matmul_v2"}
MODES = ["cpu-all", "cpu-outputs", "opencl-all"]


def parse_dims(s):
    s = s.strip()
    if not s:
        return None
    try:
        d = [int(x) for x in s.split(",")]
    except ValueError:
        return None
    return d if all(x >= 0 for x in d) else None


def numel(d):
    n = 1
    for x in d:
        n *= x
    return n


def parse_inspect(path):
    """{op_index: (name, type, {slot: [dims...]}, attrs_text)} from `cldiff inspect` output."""
    ops = {}
    if not os.path.isfile(path):
        return ops
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    head = re.compile(r"^\s{2,}(\d+) (\S+)\s+(\S+)\s+\[")
    slot = re.compile(r"(\w+)=((?:[^\s\[\],=]*\[[^\]]*\],?)+)")
    item = re.compile(r"([^\s\[\],]*)\[([^\]]*)\]")
    i = 0
    while i < len(lines):
        m = head.match(lines[i])
        if m and i + 1 < len(lines):
            idx, name, typ = int(m.group(1)), m.group(2), m.group(3)
            io = lines[i + 1]
            attrs = lines[i + 2] if i + 2 < len(lines) and not head.match(lines[i + 2]) else ""
            slots = {}
            for s in slot.finditer(io):
                slots[s.group(1)] = [parse_dims(it.group(2)) for it in item.finditer(s.group(2))]
            ops[idx] = (name, typ, slots, attrs)
            i += 2
        else:
            i += 1
    return ops


def macs_of(typ, slots, attrs):
    """Multiply-accumulates of one conv/fc/matmul op, or None when shapes are unknown."""
    def first(s):
        v = slots.get(s) or [None]
        return v[0]
    try:
        if typ in ("conv2d", "depthwise_conv2d"):
            f, o = first("Filter"), first("Output")
            return numel(o) * numel(f[1:]) if f and o else None
        if typ == "conv2d_transpose":
            f, x = first("Filter"), first("Input")
            return numel(x) * numel(f[1:]) if f and x else None
        if typ == "fc":
            w, o = first("W"), first("Out")
            return numel(o) * w[0] if w and o else None
        if typ == "mul":
            y, o = first("Y"), first("Out")
            return numel(o) * y[0] if y and o else None
        if typ in ("matmul", "matmul_v2"):
            x, o = first("X"), first("Out")
            if not x or not o:
                return None
            tx = re.search(r"\b(trans_x|transpose_X)=true", attrs) is not None
            k = x[-2] if tx and len(x) >= 2 else x[-1]
            return numel(o) * k
    except (TypeError, IndexError):
        return None
    return None


def dump_ops(path, run):
    """{op_index: dict(layer, type, elapsed_us, kernel_us, where)} and the run wall_ms."""
    import h5py
    res = {}
    wall = None
    if not os.path.isfile(path):
        return res, wall
    with h5py.File(path, "r") as f:
        if "runs" not in f or run not in f["runs"]:
            return res, wall
        g = f["runs"][run]
        wall = float(g.attrs.get("wall_ms", float("nan")))
        for a in cldiff_dump.tensors(g):
            oi = a["op_index"]
            e = res.setdefault(oi, {"layer": a["layer"], "type": a["op_type"], "elapsed_us": 0.0,
                                    "kernel_us": -1.0, "where": a["where"]})
            # an op with several outputs repeats its times on each dataset
            e["elapsed_us"] = max(e["elapsed_us"], a["elapsed_us"])
            e["kernel_us"] = max(e["kernel_us"], a["kernel_us"])
    return res, wall


def dump_ops_median(d, run):
    """dump_ops over the timed runs of one kind: per op the median elapsed_us and kernel_us,
    and the median wall_ms, from the rep*.json files bench.sh extracted after each run (the
    dumps themselves are replaced run by run); falls back to the last dump."""
    reps = sorted(x for x in os.listdir(d) if re.fullmatch(r"rep\d+\.json", x)) if os.path.isdir(d) else []
    if not reps:
        return dump_ops(os.path.join(d, "dump.h5"), run)
    import json
    got = [json.load(open(os.path.join(d, x))) for x in reps]
    got = [g for g in got if g.get("ops")]
    if not got:
        return {}, None
    res = {}
    for oi in got[-1]["ops"]:
        per = [g["ops"][oi] for g in got if oi in g["ops"]]
        e = dict(per[-1])
        e["elapsed_us"] = statistics.median(p["elapsed_us"] for p in per)
        e["kernel_us"] = statistics.median(p["kernel_us"] for p in per)
        res[int(oi)] = e
    walls = [g["wall_ms"] for g in got if g.get("wall_ms") is not None]
    return res, statistics.median(walls) if walls else None


def extract(path, run):
    """--extract: the per-op times of one dump as JSON on stdout (bench.sh, after each run)."""
    import json
    ops, wall = dump_ops(path, run)
    json.dump({"wall_ms": wall, "ops": {str(k): v for k, v in ops.items()}}, sys.stdout)
    return 0


def fmt(x, nd=2, unit=""):
    if x is None or x != x:
        return "—"
    return ("%." + str(nd) + "f%s") % (x, unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    if len(sys.argv) == 4 and sys.argv[1] == "--extract":
        return extract(sys.argv[2], sys.argv[3])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cldiff", default="cldiff")
    a = ap.parse_args()
    runs_tsv = os.path.join(a.work, "runs.tsv")
    if not os.path.isfile(runs_tsv):
        print("bench_report: %s not found (run scripts/bench.sh)" % runs_tsv, file=sys.stderr)
        return 2
    runs = {}
    order = []
    with open(runs_tsv, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["model"] not in order:
                order.append(r["model"])
            runs.setdefault((r["model"], r["mode"]), []).append(r)

    def med(model, mode, key="wall_s"):
        rs = [float(r[key]) for r in runs.get((model, mode), []) if r["rc"] == "0"]
        return statistics.median(rs) if rs else None

    def failed(model, mode):
        bad = [r["rc"] for r in runs.get((model, mode), []) if r["rc"] != "0"]
        return "exit %s" % bad[0] if bad else None

    rows, per_layer, details = [], [], []
    for m in order:
        ins = parse_inspect(os.path.join(a.work, m, "inspect.txt"))
        cpu, cpu_wall = dump_ops_median(os.path.join(a.work, m, "cpu-all"), "cpu")
        cl, cl_wall = dump_ops_median(os.path.join(a.work, m, "opencl-all"), "opencl")
        macs_total, conv_us, conv_macs_timed, all_us, unknown = 0, 0.0, 0, 0.0, 0
        cl_conv_us, cl_conv_macs = 0.0, 0
        for oi, (name, typ, slots, attrs) in sorted(ins.items()):
            mac = macs_of(typ, slots, attrs) if typ in CONV else None
            if typ in CONV and mac is None:
                unknown += 1
            if mac:
                macs_total += mac
            c, o = cpu.get(oi), cl.get(oi)
            if c:
                all_us += c["elapsed_us"]
                if mac:
                    conv_us += c["elapsed_us"]
                    conv_macs_timed += mac
            if o and mac and o["kernel_us"] > 0:
                cl_conv_us += o["kernel_us"]
                cl_conv_macs += mac
            if c or o:
                per_layer.append([m, oi, name, typ, mac if mac else "", fmt(c["elapsed_us"], 1) if c else "",
                                  fmt(o["elapsed_us"], 1) if o else "",
                                  fmt(o["kernel_us"], 1) if o and o["kernel_us"] >= 0 else "", o["where"] if o else ""])
        gflops = 2 * conv_macs_timed / (conv_us * 1e3) if conv_us > 0 else None
        cl_gflops = 2 * cl_conv_macs / (cl_conv_us * 1e3) if cl_conv_us > 0 else None
        w_all, w_out, w_cl = med(m, "cpu-all"), med(m, "cpu-outputs"), med(m, "opencl-all")
        rss = med(m, "cpu-all", "maxrss_kb")
        rss_cl = med(m, "opencl-all", "maxrss_kb")
        cold = [float(r["wall_s"]) for r in runs.get((m, "opencl-all"), []) if r["rep"] == "1" and r["rc"] == "0"]
        k_sum = sum(o["kernel_us"] for o in cl.values() if o["kernel_us"] > 0) / 1e3 if cl else None
        fallback = sum(1 for o in cl.values() if o["where"] and o["where"] != "opencl") if cl else None
        rows.append({
            "model": m, "w_all": w_all, "w_out": w_out, "w_cl": w_cl, "cold": cold[0] if cold else None,
            "run_ms": cpu_wall, "cl_run_ms": cl_wall, "gmac": macs_total / 1e9 if macs_total else None,
            "gflops": gflops, "conv_share": conv_us / all_us if all_us > 0 else None,
            "rss": rss / 1024 if rss else None, "rss_cl": rss_cl / 1024 if rss_cl else None,
            "overhead": w_all / w_out if w_all and w_out else None, "ratio": w_cl / w_all if w_cl and w_all else None,
            "run_ratio": cl_wall / cpu_wall if cl_wall and cpu_wall else None, "k_sum": k_sum,
            "cl_gflops": cl_gflops, "fallback": fallback, "unknown": unknown,
            "fail": {md: failed(m, md) for md in MODES}})
        top = sorted(((o["kernel_us"], oi, o) for oi, o in cl.items() if o["kernel_us"] > 0), reverse=True)[:5]
        if top:
            details.append((m, top, k_sum))

    out = []
    out.append("## cldiff benchmark: CPU backend (%d threads) and OpenCL on PoCL, median of %d runs\n" % (a.threads, a.repeat))
    out.append("| model | CPU wall s | CPU run ms | conv/fc GMAC | conv/fc GFLOP/s | conv/fc share | peak RSS MiB "
               "| outputs-only s | full dump / outputs | OpenCL wall s (cold) | OpenCL/CPU wall | OpenCL/CPU run "
               "| CL kernel ms | CL conv GFLOP/s | CL fallback layers |")
    out.append("|---|" + "---:|" * 14)
    for r in rows:
        f = r["fail"]
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"].replace(".nb", ""),
            f["cpu-all"] or fmt(r["w_all"], 3), fmt(r["run_ms"], 1), fmt(r["gmac"], 3), fmt(r["gflops"], 1),
            fmt(100 * r["conv_share"], 0, "%") if r["conv_share"] is not None else "—",
            fmt(r["rss"], 0), f["cpu-outputs"] or fmt(r["w_out"], 3), fmt(r["overhead"], 2, "x"),
            f["opencl-all"] or ("%s (%s)" % (fmt(r["w_cl"], 3), fmt(r["cold"], 2))), fmt(r["ratio"], 2, "x"),
            fmt(r["run_ratio"], 2, "x"), fmt(r["k_sum"], 1), fmt(r["cl_gflops"], 1),
            "—" if r["fallback"] is None else str(r["fallback"])))
    out.append("")
    out.append("Columns: *CPU wall s* = `cldiff run --backends cpu --layers all` process time (load, run, full "
               "dump); *CPU run ms* = the run alone (`/runs/cpu` `wall_ms`); *conv/fc GFLOP/s* = 2 x MACs of "
               "conv/fc/matmul layers / their summed `elapsed_us`; *conv/fc share* = their share of op time; "
               "*full dump / outputs* = wall with `--layers all` / `--layers outputs`; *OpenCL wall s* = "
               "`--backends opencl --layers all` (first run, cold program cache, in parentheses); *OpenCL/CPU run* "
               "= ratio of the runs' `wall_ms`; *CL kernel ms* = summed `kernel_us`.")
    out.append("")
    tg = []
    for r in rows:
        name = r["model"].replace(".nb", "")
        if r["gflops"] is not None and r["conv_share"] is not None and r["conv_share"] >= 0.5:
            def verdict(v, bound):  # no measurement (e.g. --no-opencl) is not a miss
                return "(not measured)" if v is None else ("≤" if v <= bound else "> (MISS)")
            tg.append("- %s: conv/fc %.1f GFLOP/s %s 15; full dump %s %s 1.5x; OpenCL/CPU %s %s 3x" % (
                name, r["gflops"], "≥" if r["gflops"] >= 15 else "< (MISS)",
                fmt(r["overhead"], 2, "x"), verdict(r["overhead"], 1.5),
                fmt(r["ratio"], 2, "x"), verdict(r["ratio"], 3)))
        elif r["gflops"] is not None:
            tg.append("- %s: conv/fc %.1f GFLOP/s (not conv-heavy: %s of op time); full dump %s; OpenCL/CPU %s" % (
                name, r["gflops"], fmt(100 * (r["conv_share"] or 0), 0, "%"), fmt(r["overhead"], 2, "x"),
                fmt(r["ratio"], 2, "x")))
        else:
            tg.append("- %s: no CPU dump (%s)" % (name, r["fail"]["cpu-all"] or "no conv/fc layers timed"))
        if r["unknown"]:
            tg[-1] += "; %d conv/fc layers without planned shapes (not counted)" % r["unknown"]
    out.append("Targets (conv-heavy = conv/fc >= 50%% of op time): conv/fc >= 15 GFLOP/s on %d threads, full dump "
               "<= 1.5x outputs-only, OpenCL <= 3x CPU:\n" % a.threads)
    out += tg
    if details:
        out.append("\n### OpenCL: the five longest kernels per model (`kernel_us`)\n")
        out.append("| model | layer | type | kernel ms | share of kernel time | where |")
        out.append("|---|---|---|---:|---:|---|")
        for m, top, ks in details:
            for k, oi, o in top:
                out.append("| %s | %s (#%d) | %s | %.2f | %.0f%% | %s |" % (m.replace(".nb", ""), o["layer"], oi, o["type"],
                                                                         k / 1e3, 100 * k / 1e3 / ks if ks else 0,
                                                                         o["where"]))
    fails = [(r["model"], md, v) for r in rows for md, v in r["fail"].items() if v]
    if fails:
        out.append("\n### Failed runs\n")
        for m, md, v in fails:
            err = os.path.join(a.work, "%s.%s.err" % (m, md))
            msg = open(err, errors="replace").read().strip().splitlines() if os.path.isfile(err) else []
            out.append("- %s %s: %s — %s" % (m, md, v, " ".join(msg[-3:])[:400]))
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
        csv_path = os.path.splitext(a.out)[0] + ".layers.csv"
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "op_index", "layer", "op_type", "macs", "cpu_elapsed_us", "cl_elapsed_us",
                        "cl_kernel_us", "cl_where"])
            w.writerows(per_layer)
        print("bench_report: wrote %s and %s" % (a.out, csv_path), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
