#!/usr/bin/env python3
"""Compare the verdicts of two differential runs from their summary.json files.

    scripts/cmp_summaries.py BEFORE AFTER        (summary.json files or the --out folders holding them)

Checks that the two runs agree on the verdict (verdict, verdict_kind, first_fault,
first_divergence, nonfinite_origin, layers_failed/drifted/compared, the outputs) and, layer by
layer (matched by op index and layer name), on the local check's result (family, pass, error,
bound, ratio, exceed) and on every other per-layer field, timings aside. Prints each difference;
exit 0 when there is none, 1 otherwise, 2 on a usage error. Used to show that a change of how
cldiff runs (not what it checks) leaves every verdict as it was (docs/benchmarks.md, "fp16 cost").
"""
import json
import os
import sys

# timings and the environment differ between any two runs
VOLATILE = {"timings_ms", "environment", "elapsed_us", "us_a", "us_b", "kernel_us_b", "created", "wall_ms"}
TOP = ["verdict", "verdict_kind", "first_fault", "first_divergence", "nonfinite_origin", "layers_compared",
       "layers_failed", "layers_drifted", "local_check", "outputs", "fp16_hazards", "nonfinite", "crash"]


def load(p):
    if os.path.isdir(p):
        p = os.path.join(p, "summary.json")
    with open(p) as f:
        return json.load(f)


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def diff(path, a, b, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append("%s.%s only in %s" % (path, k, "before" if k in a else "after"))
            else:
                diff("%s.%s" % (path, k), a[k], b[k], out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff("%s[%d]" % (path, i), x, y, out)
    elif a != b:
        out.append("%s: %r -> %r" % (path, a, b))


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = strip(load(sys.argv[1])), strip(load(sys.argv[2]))
    out = []
    for k in TOP:
        diff(k, a.get(k), b.get(k), out)
    la = {(l.get("op_index"), l.get("layer")): l for l in a.get("layers", [])}
    lb = {(l.get("op_index"), l.get("layer")): l for l in b.get("layers", [])}
    for key in sorted(set(la) | set(lb), key=lambda k: (k[0] if k[0] is not None else -1, str(k[1]))):
        if key not in la or key not in lb:
            out.append("layer %s #%s only in %s" % (key[1], key[0], "before" if key in la else "after"))
            continue
        diff("layer %s #%s" % (key[1], key[0]), la[key], lb[key], out)
    n_local = sum(1 for l in la.values() if isinstance(l.get("local"), dict))
    for line in out:
        print(line)
    print("%s: %d layers (%d with a local result), verdict %s/%s: %s" % (
        os.path.basename(os.path.dirname(os.path.abspath(sys.argv[2]))) if not os.path.isdir(sys.argv[2])
        else os.path.basename(os.path.abspath(sys.argv[2])), len(la), n_local, a.get("verdict"), b.get("verdict"),
        "equal" if not out else "%d differences" % len(out)))
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
