#!/usr/bin/env python3
"""Fault sweep: every op type of every model, fp32 and fp16, under injected output faults.

The injector (tests/faultinj, an OpenCL loader layer loaded through OPENCL_LAYERS) corrupts
the output of one op's kernels after they ran, with the shapes of real GPU bugs. Each run is
graded against ground truth this script knows independently of cldiff's verdict: which layer
was faulted, how (the injector's log: elements changed, largest change), and, for one-element
scalings, the fault's size relative to that element's bound. Grades:

  detected   exit 1, verdict kernel_fault, the named layer is the faulted one
  elsewhere  exit 1, but another layer named (or output drift only)
  survivor   exit 0 although the output was changed (with the fault/bound ratio)
  tool-error exit 3/4/5/other, a timeout, or a crash; also a failing `cldiff report` rebuild
  nf-ref     exit 0/1 without naming it, where every changed element was NaN/Inf before (the
             local check holds B to nothing where the reference is not finite)
  n/a        the fault changed nothing (e.g. rtz on fp32 storage, a row shift of a 1-row output)

    scripts/fault_sweep.sh [--cldiff PATH] [--faultinj LIB] [--out DIR] [--models DIR]
                           [--only-models a,b] [--prec fp32,fp16] [--shapes s,..] [--per-type N]
                           [--ladder] [--pins] [--ci] [--timeout SEC] [--cldiff-args '...']

Writes OUT/sweep.csv (one row per run) and OUT/sweep.md (op type x fault shape). Exit 0 as a
benchmark; with --ci exit 1 when any run is a tool error or a wrong layer, or a fault above its
bound survives. docs/planted-bugs.md, "Fault injection by op type".
"""
import argparse
import collections
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES_DEFAULT = ["scale", "nan", "inf", "row", "col", "channel", "stale", "rtz"]
# the CI slice: writer-made models, few shapes, one layer per op type: (model, precision, shapes)
CI_PLAN = [("mobilenet_tiny.nb", "fp32", ["scale", "nan", "row", "stale"]),
           ("multi_input.nb", "fp32", ["scale", "row"]),
           ("mobilenet_tiny.nb", "fp16", ["scale", "rtz"])]


def read_shapes(models_dir):
    out = {}
    p = os.path.join(models_dir, "shapes.txt")
    if os.path.isfile(p):
        for line in open(p):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            out[parts[0]] = parts[1:]
    return out


def load_json(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_log(p):
    rows = []
    if os.path.isfile(p):
        for line in open(p):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def fnum(v):
    if isinstance(v, str):
        return float(v)
    return float(v) if v is not None else None


class Runner:
    def __init__(self, a):
        self.a = a
        self.cache = os.path.join(a.out, "clcache")
        os.makedirs(self.cache, exist_ok=True)

    def run(self, model, prec, shapes, rdir, env_extra, extra=()):
        cmd = [self.a.cldiff, model, "--layers", "all", "--" + prec]
        for s in shapes:
            cmd += ["--shape", s]
        cmd += ["--out", rdir, "--quiet", "--cache-dir", self.cache, "--timeout", str(self.a.timeout)]
        cmd += self.a.cldiff_args.split()
        cmd += list(extra)
        env = dict(os.environ)
        env.pop("CLDIFF_CL_GPU_KERNELS", None)
        env["CLDIFF_NO_PROGRESS"] = "1"
        env["NO_COLOR"] = "1"
        env["OPENCL_LAYERS"] = self.a.faultinj
        env["CLFI_QUIET"] = "1"
        env.update(env_extra)
        if os.path.isdir(rdir):
            shutil.rmtree(rdir)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=self.a.timeout + 120)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", "timed out"
        dt = time.time() - t0
        os.makedirs(rdir, exist_ok=True)
        with open(os.path.join(rdir, "cmd.txt"), "w") as f:
            envs = " ".join("%s=%s" % kv for kv in sorted(env_extra.items()))
            f.write("OPENCL_LAYERS=%s %s %s\n# rc %d, %.1f s\n%s\n%s\n" % (self.a.faultinj, envs, " ".join(cmd), rc, dt,
                                                                         out[-3000:], err[-3000:]))
        return rc, dt, out, err


def trace_targets(runner, model, prec, shapes, rdir, per_type):
    """Clean run with the trace: (rc, [(op, type, layer, dtype)]) of ops that ran kernels."""
    tr = os.path.join(rdir, "trace.tsv")
    if os.path.exists(tr):
        os.remove(tr)
    rc, dt, out, err = runner.run(model, prec, shapes, os.path.join(rdir, "clean"), {"CLFI_TRACE": tr})
    ops, kern = {}, set()
    if os.path.isfile(tr):
        for line in open(tr):
            f = line.rstrip("\n").split("\t")
            if f[0] == "k" and len(f) >= 3:
                kern.add(int(f[1]))
            elif len(f) >= 5 and f[0].isdigit():
                ops.setdefault(int(f[0]), (f[1], f[2], int(f[3]), f[4]))
    by_type = collections.OrderedDict()
    for op in sorted(ops):
        if op not in kern:
            continue
        t, layer, dtype, dims = ops[op]
        by_type.setdefault(t, [])
        if len(by_type[t]) < per_type:
            by_type[t].append((op, t, layer, dtype, dims))
    return rc, dt, [x for v in by_type.values() for x in v], err


def grade(rc, s, log, layer, err):
    """(grade, named layer, kind, detail)."""
    applied = [r for r in log if r.get("changed", 0) > 0]
    named = kind = ""
    if s:
        kind = s.get("verdict_kind") or ""
        ff = s.get("first_fault") or {}
        named = ff.get("layer") or ""
        if not named and kind != "pass":
            named = (s.get("first_divergence") or {}).get("layer") or ""
    if rc not in (0, 1):
        tail = [l for l in err.strip().splitlines() if l.strip()][-1:] or [""]
        return "tool-error", named, kind, "exit %d: %s" % (rc, tail[0][:200])
    if not log:
        return "n/a", named, kind, "fault never applied (no kernel of the op ran)"
    if not applied:
        return "n/a", named, kind, "no element changed: " + (log[0].get("why") or "same values")
    if s is None:
        return "tool-error", named, kind, "exit %d without summary.json" % rc
    # the paths that run only when a layer fails must not break quietly either
    warn = [l.strip() for l in err.splitlines() if "warning" in l and ("repro" in l or "pin" in l or "magnitude" in l)]
    for t in ((s.get("pins") or {}).get("tried") or []):
        if t.get("error"):
            warn.append("pin trial %s: %s" % (t.get("layers"), t.get("error")))
    if kind == "kernel_fault" and not s.get("repro"):
        warn.append("no repro pack for the kernel fault")
    if warn:
        return "tool-error", named, kind, "; ".join(warn)[:300]
    if rc == 1 and kind == "kernel_fault" and named == layer:
        return "detected", named, kind, ""
    if all(r.get("changed_finite", 1) == 0 for r in applied):
        # every changed element was NaN/Inf: the local check holds B to nothing where the
        # reference is not finite (docs/planted-bugs.md), so no layer is expected to be named
        return "nf-ref", named, kind, "only elements whose value was NaN/Inf changed"
    if rc == 1:
        return "elsewhere", named, kind, ""
    return "survivor", named, kind, ""


def layer_local(s, layer):
    for l in (s or {}).get("layers") or []:
        if l.get("layer") == layer:
            return l.get("local") or {}
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cldiff", default=os.environ.get("CLDIFF", os.path.join(SRC, "build", "cldiff")))
    ap.add_argument("--faultinj", default=os.environ.get("FAULTINJ", ""))
    ap.add_argument("--out", default=os.path.join(SRC, "build-fault-sweep"))
    ap.add_argument("--models", default=os.environ.get("CD_SHARED_MODELS", os.path.join(SRC, "..", "shared", "models")))
    ap.add_argument("--only-models", default="")
    ap.add_argument("--prec", default="fp32,fp16")
    ap.add_argument("--shapes", default=",".join(SHAPES_DEFAULT))
    ap.add_argument("--per-type", type=int, default=1)
    ap.add_argument("--ladder", action="store_true", help="one-element scalings at 16x, 2x, 0.5x the element's bound")
    ap.add_argument("--pins", action="store_true", help="add --suggest-pins to the scale runs")
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--cldiff-args", default="", help="extra cldiff options for every run, e.g. '--int8-placement gpu'")
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    if not a.faultinj:
        for cand in ("build", "build-faults"):
            p = os.path.join(SRC, cand, "tests", "libfaultinj.so")
            if os.path.isfile(p):
                a.faultinj = p
    if not os.path.isfile(a.faultinj) or not os.path.isfile(a.cldiff):
        print("fault_sweep: need --cldiff (%s) and --faultinj (%s): build the cldiff and faultinj targets" %
              (a.cldiff, a.faultinj), file=sys.stderr)
        return 2
    a.faultinj = os.path.abspath(a.faultinj)
    a.cldiff = os.path.abspath(a.cldiff)
    os.makedirs(a.out, exist_ok=True)
    shapes_txt = read_shapes(a.models)
    models = []
    if a.ci:
        plan = [(os.path.join(SRC, "testdata", m), p, sh) for m, p, sh in CI_PLAN]
    else:
        models = sorted(os.path.join(SRC, "testdata", m) for m in os.listdir(os.path.join(SRC, "testdata"))
                        if m.endswith(".nb"))
        if os.path.isdir(a.models):
            models += sorted(os.path.join(a.models, m) for m in os.listdir(a.models) if m.endswith(".nb"))
        shapes = a.shapes.split(",")
    if a.only_models:
        want = a.only_models.split(",")
        models = [m for m in models if any(w in os.path.basename(m) for w in want)]
    if not a.ci:
        plan = [(m, p, shapes) for m in models for p in a.prec.split(",")]
    runner = Runner(a)
    rows, clean_rows = [], []
    t_all = time.time()
    for model, prec, shapes in plan:
        mname = os.path.basename(model)[:-3]
        mshapes = shapes_txt.get(os.path.basename(model), [])
        if True:
            cdir = os.path.join(a.out, "runs", mname, prec)
            rc, dt, targets, err = trace_targets(runner, model, prec, mshapes, cdir, a.per_type)
            clean_rows.append({"model": mname, "prec": prec, "rc": rc, "secs": round(dt, 1), "targets": len(targets)})
            print("%s %s: clean rc %d (%.1f s), %d op types on kernels" % (mname, prec, rc, dt, len(targets)), flush=True)
            if rc not in (0, 1):
                continue
            for (op, otype, layer, dtype, dims) in targets:
                todo = [(sh, None, "") for sh in shapes]
                done = 0
                while done < len(todo):
                    sh, eps, tag = todo[done]
                    done += 1
                    rid = "%d_%s%s" % (op, sh, tag)
                    rdir = os.path.join(cdir, rid)
                    logp = os.path.join(cdir, rid + ".log.jsonl")
                    if os.path.exists(logp):
                        os.remove(logp)
                    env = {"CLFI_OP": str(op), "CLFI_SHAPE": sh, "CLFI_LOG": logp}
                    if eps is not None:
                        env["CLFI_EPS"] = repr(eps)
                    extra = ["--suggest-pins"] if a.pins and sh == "scale" and not tag else []
                    rc, dt, out, err = runner.run(model, prec, mshapes, rdir, env, extra)
                    s = load_json(os.path.join(rdir, "summary.json"))
                    log = read_log(logp)
                    g, named, kind, detail = grade(rc, s, log, layer, err)
                    # the rebuilt report of a failing run must work too
                    if g in ("detected", "elsewhere") and os.path.isfile(os.path.join(rdir, "dump.h5")):
                        p = subprocess.run([a.cldiff, "report", os.path.join(rdir, "dump.h5"), "--out",
                                            os.path.join(rdir, "rebuilt"), "--quiet"], stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True,
                                           env=dict(os.environ, CLDIFF_NO_PROGRESS="1"))
                        if p.returncode not in (0, 1):
                            g, detail = "tool-error", "cldiff report: exit %d: %s" % (
                                p.returncode, (p.stderr.strip().splitlines() or [""])[-1][:200])
                    ap_ = [r for r in log if r.get("changed", 0) > 0]
                    first = ap_[0] if ap_ else (log[0] if log else {})
                    ff = (s or {}).get("first_fault") or {}
                    loc = layer_local(s, layer)
                    # fault size relative to the bound at the faulted element (one-element shapes):
                    # exact where cldiff's worst element is the faulted one, else from the ladder
                    rel = None
                    if ff.get("layer") == layer and ff.get("worst_index") == first.get("at") and fnum(ff.get("bound")):
                        rel = fnum(first.get("max_delta")) / fnum(ff.get("bound")) if first.get("max_delta") is not None else None
                    if eps is not None and tag:
                        rel = float(tag.split("x")[-1]) if rel is None else rel
                    row = {"model": mname, "prec": prec, "op": op, "op_type": otype, "layer": layer, "dims": dims,
                           "shape": sh + tag, "eps": eps if eps is not None else "", "rc": rc, "grade": g,
                           "named": named, "kind": kind, "changed": first.get("changed", ""),
                           "max_delta": first.get("max_delta", ""), "old": first.get("old", ""),
                           "fault_over_bound": "" if rel is None else "%.3g" % rel,
                           "local_ratio": loc.get("ratio", ""), "local_note": (loc.get("note") or "")[:120],
                           "secs": round(dt, 1), "detail": detail}
                    rows.append(row)
                    print("  %-28s op %-4d %-12s rc %d %-10s %s %s" % (layer, op, sh + tag, rc, g, named, detail),
                          flush=True)
                    # the ladder: from the x2 run's bound at the faulted element, scalings of 16x,
                    # 2x and 0.5x that bound
                    if a.ladder and sh == "scale" and not tag and g == "detected" and ff.get("worst_index") == first.get("at"):
                        b, old = fnum(ff.get("bound")), fnum(first.get("old"))
                        if b and old and math.isfinite(b) and math.isfinite(old) and old != 0:
                            for c in (16.0, 2.0, 0.5):
                                todo.insert(done, ("scale", c * b / abs(old), "@bound_x%g" % c))
                    if g in ("detected", "elsewhere", "survivor", "n/a") and os.path.isfile(os.path.join(rdir, "dump.h5")):
                        os.remove(os.path.join(rdir, "dump.h5"))
    write_reports(a, rows, clean_rows, time.time() - t_all)
    bad = [r for r in rows if r["grade"] in ("tool-error", "elsewhere")]
    big_surv = [r for r in rows if r["grade"] == "survivor" and r["fault_over_bound"] and float(r["fault_over_bound"]) > 1.5]
    print("%d runs: %s" % (len(rows), dict(collections.Counter(r["grade"] for r in rows))))
    if a.ci and (bad or big_surv):
        for r in bad + big_surv:
            print("FAIL: %s %s %s %s: %s %s %s" % (r["model"], r["prec"], r["layer"], r["shape"], r["grade"], r["named"],
                                                   r["detail"]))
        return 1
    return 0


def write_reports(a, rows, clean_rows, secs):
    fields = ["model", "prec", "op", "op_type", "layer", "dims", "shape", "eps", "rc", "grade", "named", "kind",
              "changed", "max_delta", "old", "fault_over_bound", "local_ratio", "local_note", "secs", "detail"]
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    shapes = []
    for r in rows:
        if r["shape"].split("@")[0] not in shapes:
            shapes.append(r["shape"].split("@")[0])
    ladder = any("@" in r["shape"] for r in rows)
    cols = shapes + (["scale@bound x16", "scale@bound x2", "scale@bound x0.5"] if ladder else [])
    cell = collections.defaultdict(collections.Counter)
    for r in rows:
        sh = r["shape"]
        key = sh if "@" not in sh else "scale@bound x" + sh.split("_x")[-1]
        cell[(r["op_type"], key)][r["grade"]] += 1
    abbrev = {"detected": "D", "elsewhere": "E", "survivor": "S", "tool-error": "T", "n/a": "-", "nf-ref": "N"}
    lines = ["# Fault sweep", "",
             "%d runs in %.0f s; %s" % (len(rows), secs, ", ".join("%s %d" % kv for kv in
                                                                   collections.Counter(r["grade"] for r in rows).items())),
             "", "Clean runs (the trace): " + "; ".join("%s %s rc %d (%d op types)" % (c["model"], c["prec"], c["rc"],
                                                                                     c["targets"]) for c in clean_rows),
             "", "Cells: D detected at the faulted layer, E named elsewhere, S survivor, T tool error, - no change, "
             "N only NaN/Inf elements changed (not named: no bound where the reference is not finite).", "",
             "| op type | " + " | ".join(cols) + " |", "| --- |" + " --- |" * len(cols)]
    for t in sorted({r["op_type"] for r in rows}):
        vals = []
        for c in cols:
            cn = cell.get((t, c))
            vals.append(" ".join("%s%d" % (abbrev[g], n) for g, n in sorted(cn.items())) if cn else "")
        lines.append("| %s | %s |" % (t, " | ".join(vals)))
    odd = [r for r in rows if r["grade"] in ("tool-error", "elsewhere", "survivor")]
    if odd:
        lines += ["", "| model | prec | layer | shape | grade | named (kind) | fault/bound | changed | detail |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in odd:
            lines.append("| %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s |" % (
                r["model"], r["prec"], r["layer"], r["shape"], r["grade"], r["named"] or "-", r["kind"] or "-",
                r["fault_over_bound"] or "-", r["changed"], (r["detail"] or r["local_note"]).replace("|", "/")))
    with open(os.path.join(a.out, "sweep.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
