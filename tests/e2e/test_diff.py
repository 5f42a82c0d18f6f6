#!/usr/bin/env python3
"""The differential run (default command, CPU vs OpenCL on PoCL) on testdata/mobilenet_tiny.nb,
fp32 and fp16: exit 0 and every report file present and well-formed:
  summary.json  parses; verdict, first_divergence, environment
  junit.xml     parses; one testcase per compared layer
  report.html   self-contained (nothing fetched from outside: no http(s) URLs, every src=
                is a data: URI), holds an <svg> chart
  layers.csv    one row per compared layer
  summary.md    names the verdict
  dump.h5       passes check_dump.py with runs cpu,opencl (+golden for fp16) and holds
                /compare/cpu__opencl/table with one row per compared layer
"""
import csv
import os
import re
import xml.etree.ElementTree as ET

import h5py

from e2e_lib import Checks, check_dump, cldiff, load_json, need_cldiff, tmpdir, TINY

FILES = ["dump.h5", "layers.csv", "summary.json", "report.html", "junit.xml", "summary.md"]


def check_reports(c, out, tag, runs, n_expected=None):
    """Checks the report set in `out`; returns summary.json (or None)."""
    for fn in FILES:
        c.ok(os.path.isfile(os.path.join(out, fn)) and os.path.getsize(os.path.join(out, fn)) > 0,
             "%s: %s written" % (tag, fn))
    try:
        s = load_json(os.path.join(out, "summary.json"))
    except (OSError, ValueError) as e:
        c.ok(False, "%s: summary.json parses" % tag, str(e))
        return None
    c.ok(True, "%s: summary.json parses" % tag)
    for k in ("verdict", "first_divergence", "environment", "layers_compared", "layers"):
        c.ok(k in s, "%s: summary.json has '%s'" % (tag, k))
    n = s.get("layers_compared", -1)
    c.ok(n == len(s.get("layers", [])) and n > 0, "%s: layers_compared = len(layers) = %d" % (tag, n),
         "%d layers listed" % len(s.get("layers", [])))
    if n_expected is not None:
        c.ok(n == n_expected, "%s: %d layers compared" % (tag, n_expected), "got %d" % n)
    env = s.get("environment", {})
    for k in ("tool_version", "model_sha256", "precision", "device_a", "device_b", "command_line"):
        c.ok(k in env, "%s: environment.%s present" % (tag, k))
    # junit
    try:
        root = ET.parse(os.path.join(out, "junit.xml")).getroot()
        suite = root.find(".//testsuite")
        cases = suite.findall("testcase") if suite is not None else []
        c.ok(True, "%s: junit.xml parses" % tag)
        c.ok(len(cases) == n, "%s: junit.xml has one testcase per compared layer (%d)" % (tag, n),
             "has %d testcases" % len(cases))
        # a layer testcase fails only on its local check (kernel fault); outputs have their own suite
        fails = len(suite.findall("testcase/failure")) if suite is not None else -1
        local_fails = sum(1 for l in s.get("layers", []) if (l.get("local") or {}).get("pass") is False)
        c.ok(fails == local_fails, "%s: junit layer failures = layers over their local bound" % tag,
             "%d vs %s" % (fails, local_fails))
        suites = root.findall(".//testsuite")
        out_fails = sum(len(x.findall("testcase/failure")) for x in suites[1:])
        c.ok(out_fails == sum(1 for o in s.get("outputs") or [] if o.get("pass") is False),
             "%s: junit output failures = outputs beyond the output tolerance" % tag, str(out_fails))
        suite = root.find(".//testsuite")
        c.ok(suite is not None and suite.get("tests") == str(n), "%s: testsuite tests=%d" % (tag, n))
    except (OSError, ET.ParseError) as e:
        c.ok(False, "%s: junit.xml parses" % tag, str(e))
    # csv
    with open(os.path.join(out, "layers.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    c.ok(len(rows) == n, "%s: layers.csv has one row per compared layer (%d)" % (tag, n), "has %d" % len(rows))
    c.ok(rows and all(r["layer"] == l["layer"] for r, l in zip(rows, s.get("layers", []))),
         "%s: layers.csv rows in summary.json order" % tag)
    # html
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    # xmlns="http://www.w3.org/..." only names an XML namespace; nothing is fetched from it
    scrub = re.sub(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", html)
    urls = re.findall(r"https?://[^\s\"'<>)]*", scrub)
    c.ok(not urls, "%s: report.html references no http(s) URL" % tag, "found %s" % urls[:5])
    srcs = re.findall(r"""\bsrc\s*=\s*["']?([^"'\s>]{0,40})""", html, re.I)
    outside = [x for x in srcs if not x.startswith("data:")]
    c.ok(not outside, "%s: report.html src= attributes are data: URIs only (%d)" % (tag, len(srcs)),
         "found %s" % outside[:5])
    hrefs = [x for x in re.findall(r"""<link[^>]*href\s*=\s*["']?([^"'\s>]*)""", html, re.I)
             if not x.startswith("data:")]
    c.ok(not hrefs, "%s: report.html loads no external stylesheet" % tag, str(hrefs[:5]))
    c.ok(re.search(r"<svg\b", html) is not None, "%s: report.html contains an <svg>" % tag)
    c.ok("@import" not in html, "%s: report.html has no CSS @import" % tag)
    md = open(os.path.join(out, "summary.md"), encoding="utf-8").read()
    c.ok(s.get("verdict", "?").upper() in md.upper(), "%s: summary.md states the verdict" % tag)
    # dump
    dump = os.path.join(out, "dump.h5")
    ok, msg = check_dump(dump, runs)
    c.ok(ok, "%s: dump.h5 passes check_dump.py --expect-runs %s" % (tag, runs), msg[-1500:])
    with h5py.File(dump, "r") as f:
        has = "compare/cpu__opencl/table" in f
        c.ok(has, "%s: dump has /compare/cpu__opencl/table" % tag, "groups: %s" % list(f.get("compare", {}).keys()))
        if has:
            c.ok(len(f["compare/cpu__opencl/table"]) == n, "%s: compare table has %d rows" % (tag, n),
                 "has %d" % len(f["compare/cpu__opencl/table"]))
    return s


def main():
    need_cldiff()
    c = Checks("e2e diff")
    work = tmpdir("diff")
    c.cleanup_later(work)
    for prec, runs in (("fp32", "cpu,opencl"), ("fp16", "cpu,opencl,golden")):
        out = os.path.join(work, prec)
        r = cldiff(TINY, "--%s" % prec, "--out", out)
        c.rc(r, 0, "mobilenet_tiny --%s" % prec)
        if r.rc not in (0, 1):
            continue
        # a failing verdict still writes every report: check them either way
        c.ok("PASS" in r.out, "%s: terminal summary says PASS" % prec, r.out[-400:])
        s = check_reports(c, out, prec, runs)
        if s:
            c.ok(s["verdict"] == "pass" and s["first_divergence"] is None,
                 "%s: verdict pass, no first divergence" % prec, "%s %s" % (s["verdict"], s["first_divergence"]))
            c.ok(s["environment"].get("precision") == prec, "%s: environment.precision" % prec)
            if prec == "fp16":
                c.ok(all("b_vs_golden" in l for l in s["layers"]), "fp16: every layer has b_vs_golden metrics")
    c.done()


if __name__ == "__main__":
    main()
