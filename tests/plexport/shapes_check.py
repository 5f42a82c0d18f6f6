#!/usr/bin/env python3
"""cldiff export declares activations with inferred shapes, not the .nb's stale per-name shapes
(docs/paddle-lite-findings.md). Two Paddle-Lite OpenCL findings came from those stale shapes:

- ppocr_v4_mobile_cls: the reshape2 feeding fc_0 (out [1,200]) was declared [-1,8,-1,-1]; Opt's
  type_layout_cast_pass skips the ImageDefault->ImageFolder layout op for tensors of rank > 2, so
  the OpenCL fc read an ImageDefault image as ImageFolder (output 0.0040 instead of 0.1493).
- ppocr_v2.0_cls: reshape2 of a conv bias (out [1,2,1,1]) was declared [-1,16,-1,-1]; Opt's
  ssd_boxes_calc_offline_pass folds it into a parameter with those dims, and the OpenCL
  elementwise kernel aborts on malloc(-64).

    shapes_check.py CLDIFF SRC_DIR MODELS_DIR WORK

Stage 1 (always): decodes the exported programs and checks the declared dims.
Stage 2 (when a Python with the paddlelite wheel exists, as roundtrip.py finds it): Opt for
`opencl,x86`, then checks Opt's .nb with `cldiff inspect`: a layout op before fc_0, and no
parameter with a negative dim. Exit 77 (skip) only when the shared models are absent.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_check import LOD_TENSOR, fields, get, s64, tensor_desc  # noqa: E402

V4 = "ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb"
V2 = "ppocr_v2.0_cls_fp32_arm_v2.14rc.nb"


def export(cldiff, model, out, *extra):
    r = subprocess.run([cldiff, "export", model, "-o", out] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise SystemExit("FAIL: cldiff export %s %s: exit %d\n%s" % (model, " ".join(extra), r.returncode, r.stdout))
    return r.stdout


def program(out):
    """(vars: name -> (persistable, dims), ops: [(type, {slot: [args]}, {slot: [args]}, {attr: ints})])"""
    blk = fields(get(fields(open(os.path.join(out, "model.pdmodel"), "rb").read()), 1)[0])
    vars_ = {}
    for vb in get(blk, 3):
        vf = fields(vb)
        vt = fields(get(vf, 2)[0])
        dims = None
        if get(vt, 1)[0] == LOD_TENSOR:
            dims = tensor_desc(get(fields(get(vt, 3)[0]), 1)[0])[1]
        vars_[get(vf, 1)[0].decode()] = (bool((get(vf, 3) or [0])[0]), dims)
    ops = []
    for ob in get(blk, 4):
        of = fields(ob)
        slots = []
        for fld in (1, 2):
            d = {}
            for vb in get(of, fld):
                vf = fields(vb)
                d[get(vf, 1)[0].decode()] = [a.decode() for a in get(vf, 2)]
            slots.append(d)
        attrs = {}
        for ab in get(of, 4):
            af = fields(ab)
            attrs[get(af, 1)[0].decode()] = [s64(x) for x in get(af, 6)]
        ops.append((get(of, 3)[0].decode(), slots[0], slots[1], attrs))
    return vars_, ops


def numel(d):
    n = 1
    for x in d:
        n *= x
    return n


def stage1(cldiff, models, work):
    errs = []
    # v4: the reshape2 feeding fc (attr shape [-1,200])
    for mode, extra in (("inferred", []), ("declared", ["--declared-shapes"])):
        out = os.path.join(work, "v4." + mode)
        export(cldiff, os.path.join(models, V4), out, *extra)
        vars_, ops = program(out)
        rs = [o for o in ops if o[0] == "reshape2" and o[3].get("shape") == [-1, 200]]
        if len(rs) != 1:
            errs.append("v4 %s: %d reshape2 ops with shape [-1,200], expected 1" % (mode, len(rs)))
            continue
        dims = vars_[rs[0][2]["Out"][0]][1]
        want = [-1, 200] if mode == "inferred" else [-1, 8, -1, -1]
        print("v4 %s: reshape2 -> fc: %s declared %s" % (mode, rs[0][2]["Out"][0], dims))
        if dims != want:
            errs.append("v4 %s: reshape2 output declared %s, expected %s" % (mode, dims, want))
        if mode == "inferred":
            if vars_["x"][1] != [-1, 3, -1, -1]:
                errs.append("v4: input x declared %s, expected [-1,3,-1,-1]" % vars_["x"][1])
            conv0 = [o for o in ops if o[0] == "conv2d"][0]
            d = vars_[conv0[2]["Output"][0]][1]
            if d != [-1, 8, -1, -1]:
                errs.append("v4: first conv output declared %s, expected [-1,8,-1,-1]" % d)
    # v2: reshape2 of parameters (conv biases) declared with their real shape
    for mode, extra in (("inferred", []), ("declared", ["--declared-shapes"])):
        out = os.path.join(work, "v2." + mode)
        export(cldiff, os.path.join(models, V2), out, *extra)
        vars_, ops = program(out)
        rs = [o for o in ops if o[0] == "reshape2" and vars_[o[1]["X"][0]][0]]
        bad = []
        for o in rs:
            xd = vars_[o[1]["X"][0]][1]
            od = vars_[o[2]["Out"][0]][1]
            if od != o[3]["shape"] or numel(od) != numel(xd):
                bad.append("%s %s -> %s (attr %s)" % (o[2]["Out"][0], xd, od, o[3]["shape"]))
        print("v2 %s: %d reshape2 of parameters, %d declared unlike their shape attr%s" %
              (mode, len(rs), len(bad), (": first " + bad[0]) if bad else ""))
        if len(rs) != 18:
            errs.append("v2 %s: %d reshape2 ops of parameters, expected 18" % (mode, len(rs)))
        if mode == "inferred" and bad:
            errs.append("v2: reshape2 outputs declared unlike their shape: %s" % "; ".join(bad[:3]))
        if mode == "declared" and not any("[-1, 16, -1, -1]" in b for b in bad):
            errs.append("v2 --declared-shapes: expected the stale [-1,16,-1,-1] (the finding's premise)")
    # v2 --fetch-all: constants (reshape2 of a bias) are not fetched
    out = os.path.join(work, "v2.fetchall")
    export(cldiff, os.path.join(models, V2), out, "--fetch-all")
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "fetch.tsv"))][1:]
    # 19 reshape2 ops: 18 of conv biases (constants) and the one before fc_0
    rs = [r[2] for r in rows if r[3] == "reshape2"]
    print("v2 --fetch-all: %d fetched; reshape2 among them: %s" % (len(rows), rs))
    # (117: fill_constant_0, the INT32 200 of the reshape's shape, is no float tensor to fetch: its
    # dtype attribute says so, though its reused name was declared float; 118 before)
    if len(rows) != 117 or len(rs) != 1:
        errs.append("v2 --fetch-all: %d fetches (expected 117), reshape2 outputs fetched %s (expected only the "
                    "one before fc_0; the others are constants)" % (len(rows), rs))
    return errs


def opt_python(src):
    for c in (os.environ.get("CLDIFF_PL_PYTHON", ""), os.path.join(src, ".venv-pl-ocl", "bin", "python"),
              os.path.join(src, ".venv-pl", "bin", "python")):
        if c and os.path.exists(c) and subprocess.run([c, "-c", "import paddlelite.lite"],
                                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return c
    return None


def stage2(cldiff, src, work):
    py = opt_python(src)
    if not py:
        print("stage 2 skipped: no Python with the paddlelite wheel (.venv-pl, .venv-pl-ocl, $CLDIFF_PL_PYTHON)")
        return []
    errs = []
    for k in ("v4", "v2"):
        nb = os.path.join(work, k + ".ocl.nb")
        r = subprocess.run([py, os.path.join(src, "scripts", "pl_ocl.py"), "opt", os.path.join(work, k + ".inferred"), nb,
                            "--places", "opencl,x86"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            errs.append("%s: Opt failed (exit %d): %s" % (k, r.returncode, r.stdout[-600:]))
            continue
        r = subprocess.run([cldiff, "inspect", nb], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            errs.append("%s: cldiff inspect of Opt's OpenCL model: exit %d: %s" % (k, r.returncode, r.stdout[-400:]))
            continue
        if k == "v4":
            lines = [l for l in r.stdout.splitlines() if re.match(r"\s+\d+ \S+\s+\S+\s+\[", l)]
            fc = [i for i, l in enumerate(lines) if " fc " in l]
            prev = lines[fc[0] - 1] if fc else ""
            print("v4 Opt opencl,x86: op before fc_0: %s" % prev.strip())
            if "ImageDefault_to_ImageFolder" not in prev:
                errs.append("v4: no ImageDefault_to_ImageFolder layout op before fc_0 (got %r)" % prev.strip())
        else:
            print("v2 Opt opencl,x86: cldiff inspect reads it (no parameter with a negative dim)")
    return errs


def main():
    cldiff, src, models, work = sys.argv[1:5]
    if not all(os.path.exists(os.path.join(models, m)) for m in (V4, V2)):
        print("SKIP: %s or %s not in %s (the shared models folder)" % (V4, V2, models))
        return 77
    os.makedirs(work, exist_ok=True)
    errs = stage1(cldiff, models, work) + stage2(cldiff, src, work)
    for e in errs:
        print("FAIL: " + e)
    print("ok" if not errs else "%d failures" % len(errs))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
