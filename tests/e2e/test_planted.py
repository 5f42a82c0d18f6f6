#!/usr/bin/env python3
"""A planted OpenCL bug, found and rebuilt from dumps.

`--kernel-dir` replaces embedded kernels/*.cl with files of the same name from a folder. The
copy of conv.cl used here adds 0.01 to every output of the GEMM convolution kernel when the
layer has 3 input channels, i.e. only to conv2d_0 of testdata/mobilenet_tiny.nb. Expected:
  * exit 1; summary.json names conv2d_0 as first divergence, kind "local";
  * with --isolate all, depthwise_conv2d_0 (right after it) is out of tolerance in the full
    run but within tolerance on the CPU's inputs: it only inherits error (layers.csv);
  * `cldiff report DUMP` rebuilds the same verdict and layers from the dump alone;
  * `cldiff compare CLEAN.h5 PLANTED.h5` finds conv2d_0; clean vs clean passes;
  * `--baseline CLEAN.h5`: a clean run passes the gate (exit 0), the planted one fails it
    (exit 1, conv2d_0 regressed).
"""
import csv
import os
import shutil

from e2e_lib import Checks, cldiff, load_json, need_cldiff, tmpdir, SRC, TINY

# the store line of the GPU GEMM kernel and of the CPU-device kernel (PoCL runs the latter)
PLANTS = [("cv_store(out, (n * Cout + oc) * npix + q, acc[i][j],",
           "cv_store(out, (n * Cout + oc) * npix + q, acc[i][j] + (Cin == 3 ? (ACC)0.01f : ACC_ZERO),"),
          ("cv_store(out, (n * Cout + oc) * npix + p0 + j, acc[i][j],",
           "cv_store(out, (n * Cout + oc) * npix + p0 + j, acc[i][j] + (Cin == 3 ? (ACC)0.01f : ACC_ZERO),")]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    need_cldiff()
    c = Checks("e2e planted")
    work = tmpdir("planted")
    c.cleanup_later(work)
    kdir = os.path.join(work, "kernels")
    os.makedirs(kdir)
    src = open(os.path.join(SRC, "kernels", "conv.cl")).read()
    if not c.ok(all(src.count(n) == 1 for n, _ in PLANTS),
                "kernels/conv.cl has the conv store lines to plant the bug in", "update PLANTS in %s" % __file__):
        c.done()
    for needle, plant in PLANTS:
        src = src.replace(needle, plant)
    with open(os.path.join(kdir, "conv.cl"), "w") as f:
        f.write(src)
    clean, bad = os.path.join(work, "clean"), os.path.join(work, "bad")

    r = cldiff(TINY, "--out", clean, "--quiet")
    c.rc(r, 0, "clean run")
    r = cldiff(TINY, "--kernel-dir", kdir, "--isolate", "all", "--out", bad)
    c.rc(r, 1, "planted bug run")
    s = load_json(os.path.join(bad, "summary.json")) if os.path.isfile(os.path.join(bad, "summary.json")) else {}
    fd = s.get("first_divergence") or {}
    c.ok(s.get("verdict") == "fail", "planted: verdict fail", str(s.get("verdict")))
    c.ok(fd.get("layer") == "conv2d_0" and fd.get("op_index") == 1, "planted: first divergence conv2d_0 (op #1)",
         str(fd)[:300])
    c.ok(fd.get("kind") == "local", "planted: first divergence kind local", "kind=%r; stderr: %s" % (fd.get("kind"), r.err[-500:]))
    c.ok("conv2d_0" in r.out, "planted: terminal names conv2d_0")
    csvp = os.path.join(bad, "layers.csv")
    if c.ok(os.path.isfile(csvp), "planted: layers.csv written"):
        rs = {x["layer"]: x for x in rows(csvp)}
        first = rs.get("conv2d_0", {})
        c.ok(first.get("pass") == "0" and first.get("isolated") == "1" and first.get("iso_pass") == "0",
             "planted: conv2d_0 out of tolerance also in isolation",
             str({k: first.get(k) for k in ("pass", "isolated", "iso_pass", "iso_max_abs")}))
        c.ok(abs(float(first.get("iso_max_abs") or 0) - 0.01) < 2e-3, "planted: isolated conv2d_0 error is the planted 0.01",
             "iso_max_abs=%s" % first.get("iso_max_abs"))
        dw = rs.get("depthwise_conv2d_0", {})
        c.ok(dw.get("pass") == "0", "planted: depthwise_conv2d_0 out of tolerance in the full run",
             str({k: dw.get(k) for k in ("pass", "max_abs")}))
        c.ok(dw.get("isolated") == "1" and dw.get("iso_pass") == "1",
             "planted: depthwise_conv2d_0 within tolerance in isolation (only inherits error)",
             str({k: dw.get(k) for k in ("isolated", "iso_pass", "iso_max_abs")}) + " " + r.err[-400:])

    # rebuild the reports from the dump alone
    rep = os.path.join(work, "rebuilt")
    r = cldiff("report", os.path.join(bad, "dump.h5"), "--out", rep, "--quiet")
    c.rc(r, 1, "cldiff report planted/dump.h5")
    if c.ok(os.path.isfile(os.path.join(rep, "summary.json")), "report: summary.json rebuilt"):
        s2 = load_json(os.path.join(rep, "summary.json"))
        c.ok(s2.get("verdict") == "fail" and (s2.get("first_divergence") or {}).get("layer") == "conv2d_0",
             "report: verdict fail, first divergence conv2d_0", str(s2.get("first_divergence"))[:300])
        c.ok([l["layer"] for l in s2.get("layers", [])] == [l["layer"] for l in s.get("layers", [])],
             "report: same compared layers as the run")
        for fn in ("layers.csv", "report.html", "junit.xml", "summary.md"):
            c.ok(os.path.isfile(os.path.join(rep, fn)), "report: %s rebuilt" % fn)
    r = cldiff("report", os.path.join(clean, "dump.h5"), "--out", os.path.join(work, "rebuilt_clean"), "--quiet")
    c.rc(r, 0, "cldiff report clean/dump.h5")

    # compare two dumps
    r = cldiff("compare", os.path.join(clean, "dump.h5"), os.path.join(bad, "dump.h5"), "--out",
               os.path.join(work, "cmp_bad"), "--quiet")
    c.rc(r, 1, "cldiff compare clean.h5 planted.h5")
    p = os.path.join(work, "cmp_bad", "summary.json")
    s3 = load_json(p) if os.path.isfile(p) else {}
    c.ok((s3.get("first_divergence") or {}).get("layer") == "conv2d_0", "compare: first divergence conv2d_0",
         str(s3.get("first_divergence"))[:300])
    clean2 = os.path.join(work, "clean2")
    r = cldiff(TINY, "--out", clean2, "--quiet")
    c.rc(r, 0, "second clean run")
    r = cldiff("compare", os.path.join(clean, "dump.h5"), os.path.join(clean2, "dump.h5"), "--out",
               os.path.join(work, "cmp_clean"), "--quiet")
    c.rc(r, 0, "cldiff compare clean.h5 clean2.h5")

    # regression gate
    base = os.path.join(work, "baseline.h5")
    shutil.copy(os.path.join(clean, "dump.h5"), base)
    r = cldiff(TINY, "--baseline", base, "--out", os.path.join(work, "gate_ok"))
    c.rc(r, 0, "--baseline: clean run vs clean baseline")
    c.ok("0 of" in r.out and "regressed" in r.out, "--baseline: clean run reports 0 regressed layers",
         r.out[-400:])
    r = cldiff(TINY, "--kernel-dir", kdir, "--baseline", base, "--out", os.path.join(work, "gate_bad"))
    c.rc(r, 1, "--baseline: planted run vs clean baseline")
    line = [x for x in r.out.splitlines() if x.startswith("baseline ")]
    c.ok(line and "regressed, first conv2d_0" in line[0] and not line[0].split("):", 1)[-1].strip().startswith("0 "),
         "--baseline: gate names conv2d_0 as first regression", (line or [r.out[-400:]])[0])
    c.done()


if __name__ == "__main__":
    main()
