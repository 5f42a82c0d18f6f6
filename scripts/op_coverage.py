#!/usr/bin/env python3
"""Writes the op coverage table of docs/op-coverage.md: for every op type Paddle-Lite's `opt`
knows, whether Paddle-Lite has an ARM / OpenCL kernel for it and whether cldiff runs it on its
CPU / OpenCL backend.

usage: op_coverage.py PRINT_ALL_OPS.txt [SOURCE_DIR] > table.md

PRINT_ALL_OPS.txt is the output of `paddle_lite_opt --print_all_ops=true` (the opt entry point
of the paddlelite wheel, e.g. paddlelite==2.13rc0). Its table has one column per target; a
`Y` under kARM / kOpenCL means a kernel for that target is registered, under kHost a host
kernel (which ARM and OpenCL models also run). cldiff's op types are read from the family
tables of its sources (src/backends/cpu/ops_*_table.c for the CPU backend, the dispatcher
tables of src/backends/opencl/cl_ops_*.c for the OpenCL one, and for both the ACT entries of
the op table src/engine/op_list.def).
"""
import glob
import os
import re
import sys


def lite_ops(path):
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    head = next(i for i, l in enumerate(lines) if "OP_name" in l)
    header = lines[head]
    cols = [(m.start(), m.group(0)) for m in re.finditer(r"\S+", header)][1:]
    ops = {}
    for l in lines[head + 1:]:
        if not l.strip():
            continue
        m = re.match(r"\s*(\S+)", l)
        name, end = m.group(1), m.end()
        targets = set()
        for pos in [i for i, ch in enumerate(l) if ch == "Y" and i >= end]:
            # a Y sits under the first characters of its column's name
            owner = None
            for start, col in cols:
                if start <= pos:
                    owner = col
            if owner:
                targets.add(owner)
        ops[name] = targets
    return ops


def cldiff_ops(src):
    """(cpu, cl): cpu maps each CPU op type to how the OpenCL backend runs it without a kernel
    of its own ("host": shape arithmetic or detection post-processing on the host by design,
    "pass": identity/placement op, "cpu": falls back to the CPU kernel); cl = OpenCL types."""
    cpu, cl = {}, set()
    for f in glob.glob(os.path.join(src, "src/backends/cpu/ops_*_table.c")):
        t = open(f).read()
        for macro, name in re.findall(r'\b([A-Z]+)\("([a-z0-9_]+)"', t):
            cpu[name] = {"IDENT": "pass", "S": "host", "CMP": "host"}.get(macro, "cpu")
        for name, flags in re.findall(r'\{"([a-z0-9_]+)",\s*cd_\w+,\s*cd_\w+,\s*([^,]+),', t):
            cpu[name] = "pass" if "IDENTITY" in flags else "host" if ("HOST" in flags or "SHAPE" in flags) else "cpu"
    for f in glob.glob(os.path.join(src, "src/backends/opencl/cl_ops_*.c")):
        cl |= set(re.findall(r'\{"([a-z0-9_]+)",\s*"[a-z0-9_]+",\s*op_', open(f).read()))
    # the op table's ACT entries: both backends register them from src/engine/op_list.def
    for name in re.findall(r'^CD_OP\(([a-z0-9_]+),\s*ACT,', open(os.path.join(src, "src/engine/op_list.def")).read(), re.M):
        cpu[name] = "cpu"
        cl.add(name)
    return cpu, cl


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lite = lite_ops(sys.argv[1])
    cpu, cl = cldiff_ops(src)

    def mark(targets, t):
        if t in targets:
            return "Y"
        return "host" if "kHost" in targets else ""

    rows = []
    for name in sorted(lite):
        if name.startswith("__xpu__"):
            continue  # Kunlun XPU fusions: never in an ARM or OpenCL model
        t = lite[name]
        rows.append((name, mark(t, "kARM"), mark(t, "kOpenCL"), "Y" if name in cpu else "",
                     "Y" if name in cl else cpu.get(name, "")))
    extra = sorted((set(cpu) | cl) - set(lite))
    print("| op type | Paddle-Lite ARM | Paddle-Lite OpenCL | cldiff CPU | cldiff OpenCL |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| `%s` | %s | %s | %s | %s |" % r)
    n_lite = len(rows)
    arm_or_cl = [r for r in rows if r[1] or r[2]]
    cov = [r for r in arm_or_cl if r[3]]
    cov_cl = [r for r in arm_or_cl if r[4] == "Y"]
    print()
    print("Summary: %d op types listed (XPU fusions left out); %d have an ARM, OpenCL or host kernel in "
          "Paddle-Lite; cldiff's CPU backend runs %d of those, its OpenCL backend %d with an OpenCL kernel "
          "of its own (the others run on the host by design, `host`, pass through, `pass`, or fall back to "
          "the CPU kernel, `cpu`)." % (n_lite, len(arm_or_cl), len(cov),
                                                                              len(cov_cl)))
    if extra:
        print()
        print("cldiff also runs these types, which 2.13's opt does not list: " +
              ", ".join("`%s`" % e for e in extra) + ".")


if __name__ == "__main__":
    main()
