#!/usr/bin/env python3
"""Checks cldiff on the zoo (docs/zoo.md) and writes its measurement table.

    .venv/bin/python scripts/zoo/check.py [--zoo .zoo] [--only a,b] [--out .zoo/check]
        [--pairs cpu,opencl] [--precisions fp32,fp16] [--inputs random,natural] [--shared]
        [--machine LABEL] [--write-doc docs/zoo.md] [--cldiff build/cldiff] [--jobs 2]

For every zoo model (manifest.jsonl of scripts/zoo/build.py):
  * cldiff's CPU vs Paddle: `cldiff run --backends cpu M_<target>.nb --layers outputs` for the
    arm and x86 .nb (where Opt made them), on the random input and on the natural image, each
    the .npy tensor Paddle was fed. Each model output is
    compared with Paddle's: float outputs by max|cldiff - paddle| / max|paddle|, integer outputs
    (argmax) by the fraction of elements that differ. Tolerances: TOL below.
  * each pair (`cldiff M_arm.nb --backends A,B --fp32|--fp16`) on both inputs: the verdict and
    the largest local ratio (error / bound over the layers checked locally). The natural input
    is the PNG itself (`--input x=IMG.png --mean --std`: cldiff's own preprocessing, recorded
    as the input's source); its /inputs tensor is compared with the numpy preprocessing Paddle
    was fed (png_input_diff).
  * --shared: the image models of ../shared/models on the natural image with their usual
    normalisation (no Paddle program there: verdicts only).
Results: OUT/check.json (one record per run) and, with --write-doc, the table between the
markers of docs/zoo.md. Exit 0 when every model matches Paddle and no pair says KERNEL FAULT.
"""
import argparse
import concurrent.futures as cf
import json
import os
import shlex
import subprocess
import sys
import time

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cldiff_dump  # noqa: E402

# cldiff CPU vs Paddle, per output: max|a-b| / max|b| for float outputs (fp32 models: float
# rounding of a different summation order, amplified through a few dozen layers; int8 models:
# Paddle simulates quantization in float (fake quant) while cldiff does Paddle-Lite ARM's
# integer arithmetic, so an activation on a rounding tie may land one int8 step away), and the
# fraction of differing elements for integer outputs (argmax over nearly equal logits).
TOL = {"fp32": 1e-4, "int8": 2e-2, "int_fraction": 1e-3}
KEEP_DUMPS = False  # --keep-dumps
PAIR_ARGS = []  # --pair-args: more cldiff options for every pair run (e.g. --backend-opt ...)

SHARED = [  # file, input, picture, mean, std, channel order, extra inputs
    ("ppocr_v2.0_cls_fp32_arm_v2.14rc.nb", "x", "natural_textline.png", "0.5,0.5,0.5", "0.5,0.5,0.5", "rgb",
     ["--shape", "x=1,3,48,192"]),
    ("ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb", "x", "natural_textline.png", "0.5,0.5,0.5", "0.5,0.5,0.5", "rgb",
     ["--shape", "x=1,3,48,192"]),
    ("ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb", "x", "natural_textline.png", "0.5,0.5,0.5", "0.5,0.5,0.5",
     "rgb", []),
    ("ppocr_v3_det_fp32_x86_v2.12.nb", "x", "natural_scene.png", "0.485,0.456,0.406", "0.229,0.224,0.225", "rgb",
     ["--shape", "x=1,3,320,320"]),
    ("ppocr_v2.0_det_slim_int8_arm_v2.10rc.nb", "x", "natural_scene.png", "0.485,0.456,0.406", "0.229,0.224,0.225",
     "rgb", []),
    ("mask_detector_fp32_arm_v2.10rc.nb", None, "natural_scene.png", "0.5,0.5,0.5", "0.5,0.5,0.5", "bgr", []),
    ("blazeface_int8_arm_v2.12.nb", "x", "natural_scene.png", "0.5,0.5,0.5", "0.5,0.5,0.5", "rgb", []),
    ("picodetv2_relu6_coco_int8_arm_f0b8344.nb", "image", "natural_scene.png", "0.485,0.456,0.406",
     "0.229,0.224,0.225", "rgb", ["--input", "scale_factor=const:1"]),
    ("pyramidbox_lite_fp32_arm_v2.10rc.nb", None, "natural_scene.png", "0.408,0.459,0.482", "0.5,0.5,0.5", "bgr",
     []),
]


def sh(cmd, timeout=900):
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return 124, "timed out", time.time() - t0
    except OSError as e:  # e.g. the binary being rebuilt
        return 127, "cannot run %s: %s" % (cmd[0], e), time.time() - t0


def natural_args(info):
    return ["--input", "x=%s" % os.path.join(ROOT, info["picture"]), "--mean", ",".join(map(str, info["mean"])),
            "--std", ",".join(map(str, info["std"]))]


def input_args(info, kind, mdir):
    if kind == "natural":
        return natural_args(info)
    return ["--input", "x=%s" % os.path.join(mdir, info["inputs"][kind]["file"])]


def outputs_of(dump, info):
    """cldiff's value for each model output, by the output's tensor name (the last dataset
    written under that name: names are reused)."""
    f = h5py.File(dump, "r")
    run = f["runs/cpu"]
    by_name = {}
    for t in cldiff_dump.tensors(run):
        by_name[t["tensor"]] = t["dataset"]
    outs = []
    for o in info["outputs"]:
        ds = by_name.get(o["name"])
        outs.append(None if ds is None else np.array(run[ds]))
    fed = np.array(f["inputs"][list(f["inputs"].keys())[0]])
    src = f["inputs"][list(f["inputs"].keys())[0]].attrs.get("source", b"")
    src = src.decode() if isinstance(src, bytes) else str(src)
    return outs, fed, src


def compare(a, b):
    if a is None:
        return {"err": float("inf"), "what": "output not in the dump"}
    if a.shape != b.shape and a.size == b.size:
        a = a.reshape(b.shape)
    if a.shape != b.shape:
        return {"err": float("inf"), "what": "shape %s vs Paddle %s" % (a.shape, b.shape)}
    if np.issubdtype(b.dtype, np.integer) or b.dtype == bool:
        d = float(np.mean(a.astype(np.int64) != b.astype(np.int64)))
        return {"err": d, "kind": "int"}
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if not np.all(np.isfinite(a64)) and np.all(np.isfinite(b64)):
        return {"err": float("inf"), "what": "non-finite values where Paddle is finite"}
    den = max(float(np.max(np.abs(b64))), 1e-30)
    return {"err": float(np.max(np.abs(a64 - b64))) / den, "kind": "float"}


def cpu_vs_paddle(cldiff, zoo, info, target, kind, out):
    mdir = os.path.join(zoo, info["name"])
    nb = os.path.join(mdir, info["opt"][target]["nb"])
    d = os.path.join(out, info["name"], "cpu_%s_%s" % (target, kind))
    # the exact tensor Paddle was fed (the PNG path is exercised by the pair runs, whose
    # /inputs are checked against it: png_input_diff)
    cmd = [cldiff, "run", "--backends", "cpu", nb, "--layers", "outputs", "--out", d, "--input",
           "x=%s" % os.path.join(mdir, info["inputs"][kind]["file"])]
    rc, log, secs = sh(cmd)
    rec = {"model": info["name"], "check": "cpu-vs-paddle", "target": target, "input": kind, "rc": rc,
           "seconds": round(secs, 2), "command": " ".join(shlex.quote(c) for c in cmd)}
    if rc != 0:
        rec.update(ok=False, why=log.strip().splitlines()[-1] if log.strip() else "exit %d" % rc)
        return rec
    outs, fed, src = outputs_of(os.path.join(d, "dump.h5"), info)
    rec["input_source"] = src
    want_in = np.load(os.path.join(mdir, "in_%s.npy" % kind))
    rec["input_diff"] = float(np.max(np.abs(fed.astype(np.float64) - want_in))) if fed.shape == want_in.shape else None
    int8 = info["precision"].startswith("int8")
    per = []
    ok = True
    for k, o in enumerate(info["outputs"]):
        ref = np.load(os.path.join(mdir, "paddle_%s_%d.npy" % (kind, k)))
        c = compare(outs[k], ref)
        tol = TOL["int_fraction"] if c.get("kind") == "int" else TOL["int8" if int8 else "fp32"]
        c.update(name=o["name"], tol=tol, ok=c["err"] <= tol)
        if int8 and not c["ok"]:
            # A rounding tie: Paddle's fake quantization computes x * (127 / s) and Paddle-Lite
            # ARM (so cldiff) x * (1 / (s / 127)); at x / s * 127 = k + 0.5 - 2e-7 the two round
            # apart, and a random-weight int8 network carries the one-step difference on. Such a
            # difference stays below the quantization error itself (Paddle int8 vs Paddle fp32
            # on the same input): held to that, and marked "tie".
            fp = os.path.join(zoo, info["name"][:-5], "paddle_%s_%d.npy" % (kind, k))
            if os.path.exists(fp):
                gap = compare(ref, np.load(fp))["err"]
                c["quant_gap"] = gap
                if c["err"] <= gap:
                    c.update(ok=True, tie=True)
        ok = ok and c["ok"]
        per.append(c)
    if rec["input_diff"] is None or rec["input_diff"] > 0:
        ok = False
        rec["why"] = "cldiff fed a different input than Paddle got (max diff %s)" % rec["input_diff"]
    rec.update(ok=ok, outputs=per, max_err=max(c["err"] for c in per) if per else 0.0)
    return rec


ENGINES = ("paddle-lite-arm", "paddle-lite-opencl", "paddle-lite-phone")


def is_engine_pair(pair):
    return any(e in pair.split(",") for e in ENGINES)


def pair_nb(info, pair):
    """The .nb a pair runs: the phone route runs the `opencl,arm` file as a phone would; every
    other pair the `arm` one (paddle-lite-opencl exports it and has Opt place it for OpenCL)."""
    t = "opencl" if "paddle-lite-phone" in pair.split(",") else "arm"
    o = info["opt"].get(t, {})
    return o.get("nb") if o.get("ok") else None


def runs_vs_paddle(dump, info, mdir, kind):
    """Each run's model outputs in the dump against Paddle's own (the tiebreaker of an engine
    pair): {run: {"err": max over outputs, "worst": output name, "missing": n}}."""
    int8 = info["precision"].startswith("int8")
    res = {}
    with h5py.File(dump, "r") as f:
        for rn in f["runs"]:
            if rn.endswith("_local") or rn == "float_ref":  # float_ref: an int8 model run in float
                continue
            run = f["runs"][rn]
            ts = list(cldiff_dump.tensors(run))
            by_name = {t["tensor"]: t["dataset"] for t in ts}
            worst, missing, used, by_shape = None, 0, set(), 0
            for k, o in enumerate(info["outputs"]):
                pp = os.path.join(mdir, "paddle_%s_%d.npy" % (kind, k))
                ds = by_name.get(o["name"])
                if ds is None and os.path.exists(pp):
                    # Opt for opencl,arm renames outputs (scale folded, layout/io_copy appended):
                    # the last tensor of the output's shape, each used once
                    want = tuple(np.load(pp, mmap_mode="r").shape)
                    cand = [t for t in ts if tuple(t["shape"]) == want and t["dataset"] not in used]
                    if cand:
                        ds = max(cand, key=lambda t: t["op_index"])["dataset"]
                        by_shape += 1
                used.add(ds)
                if ds is None or not os.path.exists(pp):
                    missing += 1
                    continue
                ref = np.load(pp)
                c = compare(np.array(run[ds]), ref)
                tol = TOL["int_fraction"] if c.get("kind") == "int" else TOL["int8" if int8 else "fp32"]
                tie = False
                fp = os.path.join(os.path.dirname(mdir), info["name"][:-5], "paddle_%s_%d.npy" % (kind, k))
                if int8 and c["err"] > tol and os.path.exists(fp):
                    tie = c["err"] <= compare(ref, np.load(fp))["err"]  # the rounding tie of cpu_vs_paddle
                if worst is None or c["err"] > worst[0]:
                    worst = (c["err"], o["name"], c["err"] <= tol or tie, tie)
            if worst is not None:
                res[rn] = {"err": worst[0], "worst": worst[1], "missing": missing, "ok": worst[2], "tie": worst[3],
                           "by_shape": by_shape}
    return res


def pair_run(cldiff, nb, pair, prec, extra, out, label, want_input=None, oracle=None):
    d = os.path.join(out, label)
    cmd = [cldiff, nb, "--backends", pair, "--" + prec, "--out", d, "--no-repro"] + extra + PAIR_ARGS
    rc, log, secs = sh(cmd)
    rec = {"pair": pair, "precision": prec, "rc": rc, "seconds": round(secs, 2),
           "command": " ".join(shlex.quote(c) for c in cmd)}
    sp = os.path.join(d, "summary.json")
    if not os.path.exists(sp) and "what it wrote is in " in log:
        # a run without a verdict (INCOMPLETE, interrupted) leaves --out alone and writes beside it
        d = log.split("what it wrote is in ", 1)[1].split()[0]
        sp = os.path.join(d, "summary.json")
    if not os.path.exists(sp):
        rec.update(verdict="error", why=log.strip().splitlines()[-1] if log.strip() else "exit %d" % rc)
        return rec
    s = json.load(open(sp))
    worst = None
    for L in s.get("layers") or []:
        loc = L.get("local") or {}
        r = loc.get("ratio")
        if r is not None and (worst is None or r > worst[0]):
            worst = (r, L["layer"], loc.get("error"), loc.get("bound"), loc.get("family"))
    env = s.get("environment") or {}
    dump = os.path.join(d, "dump.h5")
    if want_input is not None and os.path.exists(dump):
        with h5py.File(dump, "r") as f:
            fed = np.array(f["inputs"][list(f["inputs"].keys())[0]], np.float64)
        rec["png_input_diff"] = float(np.max(np.abs(fed - want_input))) if fed.shape == want_input.shape else None
    if oracle is not None and os.path.exists(dump):
        try:
            rec["vs_paddle"] = runs_vs_paddle(dump, *oracle)
        except (OSError, KeyError) as e:
            rec["vs_paddle_error"] = str(e)
    if os.path.exists(dump) and not KEEP_DUMPS:
        os.remove(dump)  # every layer of both runs: 4.5 GB over the zoo; the summary stays
    rec.update(verdict=s.get("verdict_kind") or s.get("verdict"), verdict_text=(s.get("verdict") or ""),
               device=env.get("device_b"), input_source=env.get("inputs"),
               largest_ratio=worst[0] if worst else None, largest_layer=worst[1] if worst else None,
               largest_error=worst[2] if worst else None, largest_bound=worst[3] if worst else None,
               largest_family=worst[4] if worst else None, first_fault=s.get("first_fault"),
               outputs_pass=all(o.get("pass") for o in s.get("outputs") or []),
               layers_drifted=s.get("layers_drifted"))
    return rec


def zoo_pairs(cldiff, zoo, info, pairs, precs, kinds, out):
    mdir = os.path.join(zoo, info["name"])
    recs = []
    for kind in kinds:
        if kind not in info["inputs"]:
            continue
        for pair in pairs:
            nbf = pair_nb(info, pair)
            if nbf is None:
                continue
            nb = os.path.join(mdir, nbf)
            # an engine pair gets the .npy Paddle was fed on both inputs, so that every run's
            # outputs can be held to Paddle's (the tiebreaker); an engine runs its own precision
            eng = is_engine_pair(pair)
            for prec in (precs[:1] if eng else precs):
                want = np.load(os.path.join(mdir, info["inputs"][kind]["file"])).astype(np.float64)
                args = (["--input", "x=%s" % os.path.join(mdir, info["inputs"][kind]["file"])] if eng
                        else input_args(info, kind, mdir))
                r = pair_run(cldiff, nb, pair, prec, args, os.path.join(out, info["name"]),
                             "%s_%s_%s" % (pair.replace(",", "-"), prec, kind),
                             want if kind == "natural" and not eng else None,
                             (info, mdir, kind) if eng else None)
                r.update(model=info["name"], check="pair", input=kind)
                recs.append(r)
    return recs


def shared_runs(cldiff, pairs, precs, out):
    recs = []
    mdir = os.path.join(ROOT, "..", "shared", "models")
    if not os.path.isdir(mdir):
        mdir = "/work/shared/models"
    for fn, name, pic, mean, std, order, extra in SHARED:
        nb = os.path.join(mdir, fn)
        if not os.path.exists(nb):
            continue
        spec = ("%s=" % name if name else "") + os.path.join(ROOT, "testdata", pic)
        args = ["--input", spec, "--mean", mean, "--std", std, "--channel-order", order] + extra
        for pair in pairs:
            for prec in precs:
                r = pair_run(cldiff, nb, pair, prec, args, os.path.join(out, "shared", fn[:-3]),
                             "%s_%s_natural" % (pair.replace(",", "-"), prec))
                r.update(model="shared/" + fn[:-3], check="pair", input="natural")
                recs.append(r)
    return recs


def fmt_ratio(r):
    return "-" if r is None else "%.2g" % r


def table(recs, machine):
    """Markdown: one row per model x pair x precision x input."""
    cpu = {}
    for r in recs:
        if r["check"] == "cpu-vs-paddle":
            k = (r["model"], r["input"])
            cpu.setdefault(k, []).append(r)
    lines = ["| model | pair | precision | input | machine | verdict | largest ratio (layer) | outputs vs Paddle (max rel err: cldiff CPU on the arm/x86 .nb; engine pairs: each run of the pair) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in recs:
        if r["check"] != "pair":
            continue
        c = cpu.get((r["model"], r["input"]), [])
        if r.get("vs_paddle"):
            # an int8 model on paddle-lite-opencl runs its float program (int8 weights dequantized:
            # Paddle-Lite has no OpenCL int8 kernels), which Paddle's int8 outputs do not judge
            fl = r["model"].endswith("_int8")
            # (still WRONG when it is not finite or off by more than the values: no dequantization does that)
            vs = "; ".join("%s %.1e%s" % (rn, v["err"], (" **WRONG** (float program; %s)" % v["worst"]
                                                          if not v["err"] <= 1 else " (float program)")
                                          if fl and rn == "paddle-lite-opencl" else
                                          (" (tie)" if v.get("tie") else "") if v["ok"] else
                                          " **WRONG** (%s)" % v["worst"])
                           for rn, v in sorted(r["vs_paddle"].items())
                           # a crashed run (B) holds only the tensors before the crash
                           if rn != "float_ref" and not (r["verdict"] == "crash" and rn == r["pair"].split(",")[1]))
        elif c:
            vs = "; ".join("%s %s%s%s" % (x["target"], "%.1e" % x["max_err"] if "max_err" in x else "error",
                                           " (tie; int8 vs fp32 %.2g)" % max(o.get("quant_gap", 0)
                                                                            for o in x["outputs"])
                                           if any(o.get("tie") for o in x.get("outputs", [])) else "",
                                           "" if x["ok"] else " **MISMATCH**") for x in c)
        else:
            vs = "n/a (no Paddle program)" if r["model"].startswith("shared/") else "-"
        v = r["verdict"]
        if v == "kernel_fault" or "fault" in (r.get("verdict_text") or "").lower() and v != "pass":
            v = "**%s**" % v
        lay = " (%s)" % r["largest_layer"] if r.get("largest_layer") else ""
        lines.append("| %s | %s | %s | %s | %s | %s | %s%s | %s |" % (
            r["model"], r["pair"], r["precision"], r["input"], machine, v, fmt_ratio(r.get("largest_ratio")), lay, vs))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=os.path.join(ROOT, ".zoo"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--cldiff", default=os.path.join(ROOT, "build", "cldiff"))
    ap.add_argument("--pairs", default="cpu,opencl", help="pairs separated by ';'")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--inputs", default="random,natural")
    ap.add_argument("--targets", default="arm,x86")
    ap.add_argument("--no-pairs", action="store_true")
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--machine", default="PoCL (x86 CPU)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--write-doc", default=None)
    ap.add_argument("--keep-dumps", action="store_true", help="keep each pair run's dump.h5")
    ap.add_argument("--pair-args", default="", help="more cldiff options for every pair run, one string "
                    "(e.g. '--backend-opt paddle-lite-opencl:vendors=DIR --backend-opt opencl:platform=NVIDIA')")
    ap.add_argument("--from-json", default="", help="check.json files (comma-separated) of earlier runs: "
                    "no run, their records go to the summary and --write-doc (with the --pairs given)")
    a = ap.parse_args()
    global KEEP_DUMPS, PAIR_ARGS
    KEEP_DUMPS = a.keep_dumps
    PAIR_ARGS = shlex.split(a.pair_args)
    out = a.out or os.path.join(a.zoo, "check")
    os.makedirs(out, exist_ok=True)
    man = os.path.join(a.zoo, "manifest.jsonl")
    if not os.path.exists(man):
        sys.exit("check.py: no %s: build the zoo first (scripts/zoo/build.py, or scripts/setup_zoo.sh)" % man)
    infos = [json.loads(l) for l in open(man) if l.strip()]
    if a.only:
        want = a.only.split(",")
        infos = [i for i in infos if i["name"] in want]
    pairs = [p for p in a.pairs.split(";") if p]
    precs = a.precisions.split(",")
    kinds = a.inputs.split(",")
    jobs = []
    if a.from_json:
        recs = []
        for fn in a.from_json.split(","):
            recs += json.load(open(fn))
        a.jobs, infos = 1, [i for i in infos if any(r["model"] == i["name"] for r in recs)]
        infos = infos or [{"name": ""}]
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for info in ([] if a.from_json else infos):
            for t in a.targets.split(","):
                if info["opt"].get(t, {}).get("ok"):
                    for k in kinds:
                        if k in info["inputs"]:
                            jobs.append(ex.submit(cpu_vs_paddle, a.cldiff, a.zoo, info, t, k, out))
            if not a.no_pairs:
                jobs.append(ex.submit(zoo_pairs, a.cldiff, a.zoo, info, pairs, precs, kinds, out))
        if a.shared and not a.no_pairs and not a.from_json:
            jobs.append(ex.submit(shared_runs, a.cldiff, pairs, precs, out))
        recs = recs if a.from_json else []
        for j in jobs:
            r = j.result()
            recs += r if isinstance(r, list) else [r]
    order = {i["name"]: n for n, i in enumerate(infos)}
    recs.sort(key=lambda r: (order.get(r["model"], 1e9), r["model"], r["check"], r.get("pair", ""),
                             r.get("precision", ""), r["input"], r.get("target", "")))
    for r in recs:
        r["machine"] = a.machine
    json.dump(recs, open(os.path.join(out, "check.json"), "w"), indent=1)
    bad_cpu = [r for r in recs if r["check"] == "cpu-vs-paddle" and not r["ok"]]
    faults = [r for r in recs if r["check"] == "pair" and r["verdict"] == "kernel_fault"]
    errors = [r for r in recs if r["check"] == "pair" and r["verdict"] == "error"]
    for r in recs:
        if r["check"] == "cpu-vs-paddle":
            print("%-24s cpu-vs-paddle %-4s %-8s %s max rel err %s%s" % (
                r["model"], r["target"], r["input"], "ok      " if r["ok"] else "MISMATCH",
                "%.2e" % r["max_err"] if "max_err" in r else "-", "" if r["ok"] else "  " + str(r.get("why", ""))))
        else:
            print("%-24s %-14s %s %-8s %-14s ratio %s %s" % (r["model"], r["pair"], r["precision"], r["input"],
                                                           r["verdict"], fmt_ratio(r.get("largest_ratio")),
                                                           r.get("largest_layer") or r.get("why", "")))
    print("\n%d CPU-vs-Paddle checks, %d mismatches; %d pair runs, %d kernel faults, %d errors" % (
        sum(r["check"] == "cpu-vs-paddle" for r in recs), len(bad_cpu), sum(r["check"] == "pair" for r in recs),
        len(faults), len(errors)))
    if a.write_doc:
        doc = open(a.write_doc).read()
        b, e = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"
        if b in doc and e in doc:
            head, rest = doc.split(b, 1)
            old, tail = rest.split(e, 1)
            # rows and stamps of other machines stay: one table, every machine's runs
            # a stamp goes when this machine re-ran the same pairs
            pk = "--pairs %s" % shlex.quote(a.pairs)
            stamps = [l for l in old.splitlines() if l.startswith("Written by ") and
                      ("(%s)." % a.machine not in l or (pk not in l and "--pairs" in l) or
                       ("--pairs" not in l and a.pairs != "cpu,opencl"))]
            # rows of this machine for pairs not run now stay too
            ran = {(r["pair"], r["model"]) for r in recs if r["check"] == "pair"}
            others = [l for l in old.splitlines()
                      if l.startswith("| ") and not l.startswith("| model ") and
                      (l.split("|")[5].strip() != a.machine or
                       (l.split("|")[2].strip(), l.split("|")[1].strip()) not in ran)]
            stamps.append("Written by `scripts/zoo/check.py %s` on %s (%s)." % (
                " ".join(shlex.quote(x) for x in sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                a.machine))
            mine = table(recs, a.machine).splitlines()
            body = "\n\n".join(stamps) + "\n\n" + "\n".join(mine[:2] + others + mine[2:])
            open(a.write_doc, "w").write(head + b + "\n" + body + "\n" + e + tail)
    return 1 if bad_cpu or faults else 0


if __name__ == "__main__":
    sys.exit(main())
