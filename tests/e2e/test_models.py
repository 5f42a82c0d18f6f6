#!/usr/bin/env python3
"""Every real model of the shared folder loads (`cldiff inspect`) and runs on the CPU backend
(`cldiff run --backends cpu`, fp32, every layer probed); the dump passes check_dump.py and
holds at least one dataset for every probed op and none for the others.

usage: test_models.py [MODEL_FILE_NAME ...]   (default: every .nb in CD_SHARED_MODELS)
Input shapes come from shapes.txt in that folder. Exit 77 (skip) when the folder is absent.
"""
import re
import sys

import h5py

from e2e_lib import Checks, astr, check_dump, cldiff, cldiff_dump, need_cldiff, need_shared, tmpdir, SHARED
import os
import shutil


def check_model(c, name, shape_args):
    path = os.path.join(SHARED, name)
    ins = cldiff("inspect", path, *shape_args)
    c.rc(ins, 0, "%s: inspect" % name)
    out = tmpdir("model")
    before = len(c.failed)
    try:
        check_run(c, name, path, shape_args, out)
    finally:
        # dumps of big models are hundreds of MB: keep only a failing model's folder
        if len(c.failed) == before or os.environ.get("CD_E2E_CLEAN") == "1":
            shutil.rmtree(out, ignore_errors=True)
        else:
            print("kept %s for inspection" % out)


def check_run(c, name, path, shape_args, out):
    r = cldiff("run", "--backends", "cpu", path, *shape_args, "--out", out, "--layers", "all")
    if not c.rc(r, 0, "%s: run --backends cpu" % name):
        return
    m = re.search(r"(\d+) ops, (\d+) probed", r.out)
    if not c.ok(m, "%s: run prints 'N ops, M probed'" % name, r.out[:300]):
        return
    n_ops, n_probed = int(m.group(1)), int(m.group(2))
    dump = os.path.join(out, "dump.h5")
    ok, msg = check_dump(dump, "cpu")
    c.ok(ok, "%s: check_dump.py --expect-runs cpu" % name, msg[-1500:])
    with h5py.File(dump, "r") as f:
        ops = f["model/ops"][()]
        c.ok(len(ops) == n_ops, "%s: /model/ops has %d rows" % (name, n_ops), "has %d" % len(ops))
        # --layers all probes every op but feed and fetch
        want = {int(row["index"]) for row in ops if astr(row["type"]) not in ("feed", "fetch")}
        c.ok(len(want) == n_probed, "%s: %d probed ops = ops other than feed/fetch" % (name, n_probed),
             "%d ops are not feed/fetch" % len(want))
        have = {}
        meta = cldiff_dump.by_dataset(f["runs/cpu"])
        for k, t in meta.items():
            have.setdefault(t["op_index"], []).append(k)
        missing = sorted(want - set(have))
        extra = sorted(set(have) - want)
        c.ok(not missing, "%s: a dataset for every probed op" % name,
             "no dataset for ops %s" % ", ".join("#%d %s" % (i, astr(ops[i]["name"])) for i in missing[:10]))
        c.ok(not extra, "%s: no dataset for unprobed ops" % name, "datasets for ops %s" % extra[:10])
        # every op's dataset holds that op's output tensor (names are reused across ops)
        wrong = []
        for i, names in have.items():
            outs = set()
            for slot in astr(ops[i]["outputs"]).split(";"):
                if "=" in slot:
                    outs.update(x for x in slot.split("=", 1)[1].split(",") if x)
            for k in names:
                t = meta[k]["tensor"]
                if t not in outs:
                    wrong.append("%s (tensor %s, op outputs %s)" % (k, t, sorted(outs)))
        c.ok(not wrong, "%s: each dataset is an output of its op" % name, "; ".join(wrong[:5]))
        g = f["runs/cpu"]
        c.ok(int(g.attrs["complete"]) == 1 and int(f.attrs["complete"]) == 1, "%s: dump complete" % name)


def main():
    need_cldiff()
    models = need_shared()
    names = sys.argv[1:] or sorted(models)
    c = Checks("e2e models (%s)" % ", ".join(names) if len(names) < 3 else "e2e models (%d)" % len(names))
    for name in names:
        if name not in models:
            c.ok(False, "%s is in %s" % (name, SHARED))
            continue
        check_model(c, name, models[name])
    c.done()


if __name__ == "__main__":
    main()
