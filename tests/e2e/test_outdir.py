#!/usr/bin/env python3
"""--out always holds one consistent run (issue 27 point 3):
  - a run whose backend B cannot start (--cl-lib that does not exist, an engine without its SDK
    or its wheel) ends with exit 4 before anything runs: fast, nothing on stdout, and --out's
    files from the previous run byte-identical, no stray folder beside it;
  - a run interrupted by SIGINT (sent when the run has started: its header line, an event)
    leaves --out byte-identical and its partial output as OUT.partial-<time>/;
  - a good run replaces the previous run's files, removes its stale repro/ and keeps the
    user's own files in --out.
Before the fix the failed start ran the CPU side first and replaced dump.h5 with a one-run dump
beside the old PASS reports.
"""
import hashlib
import os
import signal
import subprocess

from e2e_lib import CLDIFF, Checks, SHARED, TINY, cldiff, need_cldiff, tmpdir


def digests(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, d)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def beside(work):
    return sorted(x for x in os.listdir(work) if x != "out")


def main():
    need_cldiff()
    c = Checks("e2e_outdir")
    work = tmpdir("outdir")
    c.cleanup_later(work)
    out = os.path.join(work, "out")
    r = cldiff(TINY, "--out", out, "--backends", "cpu,cpu")
    c.rc(r, 0, "first run into --out")
    before = digests(out)
    c.ok("dump.h5" in before and "summary.json" in before, "first run wrote the dump and reports", str(before))
    c.ok(beside(work) == [], "no staging folder left beside --out", str(beside(work)))

    empty_cache = os.path.join(work, "empty-cache")
    os.makedirs(empty_cache)
    fails = [
        ("--cl-lib /nonexistent", [TINY, "--out", out, "--cl-lib", "/nonexistent/libOpenCL.so"], {},
         "cannot use the OpenCL library /nonexistent/libOpenCL.so"),
        ("paddle-lite-arm without its SDK", [TINY, "--out", out, "--backends", "cpu,paddle-lite-arm",
                                             "--backend-opt", "paddle-lite-arm:sdk=/nonexistent-sdk"], {},
         "/nonexistent-sdk"),
        ("paddle-lite (wheel) without its Python", [TINY, "--out", out, "--backends", "cpu,paddle-lite"],
         {"CLDIFF_PL_PYTHON": "/nonexistent/python"}, "paddle-lite unavailable"),
    ]
    for what, args, env, msg in fails:
        r = cldiff(*args, env=env)
        c.rc(r, 4, what)
        c.ok(msg in r.err, "%s: message names what is missing" % what, r.err[-400:])
        c.ok(r.out == "", "%s: nothing ran (no header on stdout)" % what, r.out[:300])
        c.ok(r.secs < 20, "%s: refused before any run (%.1f s)" % (what, r.secs))
        c.ok(digests(out) == before, "%s: --out byte-identical" % what)
        c.ok(beside(work) == ["empty-cache"], "%s: nothing left beside --out" % what, str(beside(work)))

    # paddle-lite-opencl needs Opt: without the wheel and without a cache of Opt outputs it
    # cannot start (doctor said "usable" here before); only where its SDK is found
    r = cldiff(TINY, "--out", out, "--backends", "cpu,paddle-lite-opencl",
               env={"CLDIFF_PL_PYTHON": "/nonexistent/python", "CLDIFF_CACHE_DIR": empty_cache})
    if "SDK" in r.err and "Opt" not in r.err:
        print("note: no Paddle-Lite OpenCL SDK here: the Opt case is checked only for its exit code")
        c.rc(r, 4, "paddle-lite-opencl without an SDK")
    else:
        c.rc(r, 4, "paddle-lite-opencl without the wheel's Opt")
        c.ok("needs Paddle-Lite's Opt" in r.err and "Another machine" in r.err,
             "paddle-lite-opencl: the message names Opt and the cache alternative", r.err[-500:])
    c.ok(digests(out) == before, "paddle-lite-opencl: --out byte-identical")

    # interrupted: SIGINT once the run has started (its header line on stdout)
    det = os.path.join(SHARED, "ppocr_v3_det_fp32_x86_v2.12.nb")
    if os.path.exists(det):
        env = dict(os.environ, CLDIFF_NO_PROGRESS="1")
        p = subprocess.Popen([CLDIFF, det, "--shape", "x=1,3,320,320", "--out", out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        first = p.stdout.readline()
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=600)
        c.ok(first.startswith("cldiff "), "interrupted run: started (header line)", first)
        c.ok(p.returncode == 130, "interrupted run: exit 130", "rc=%d %s" % (p.returncode, err[-300:]))
        c.ok(digests(out) == before, "interrupted run: --out byte-identical")
        parts = [x for x in beside(work) if x.startswith("out.partial-")]
        c.ok(len(parts) == 1 and os.path.exists(os.path.join(work, parts[0], "dump.h5")),
             "interrupted run: its partial output is out.partial-<time>/ with its dump", str(beside(work)))
        c.ok(parts and parts[0] in err and "left as it was" in err, "interrupted run: stderr says where it went",
             err[-300:])
        c.ok(not [x for x in beside(work) if ".tmp-" in x], "interrupted run: no staging folder left")
    else:
        print("note: %s absent: the SIGINT case is skipped" % det)

    # a good run replaces the old run's files, drops its stale repro/, keeps the user's files
    os.makedirs(os.path.join(out, "repro"))
    with open(os.path.join(out, "repro", "old.txt"), "w") as f:
        f.write("a repro pack of an older run\n")
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("the user's own file\n")
    r = cldiff(TINY, "--out", out, "--backends", "cpu,cpu", "--seed", "7")
    c.rc(r, 0, "second good run")
    after = digests(out)
    c.ok(after.get("dump.h5") and after["dump.h5"] != before["dump.h5"], "second run: its own dump in --out")
    c.ok("repro/old.txt" not in after, "second run: the older run's repro/ is gone", str(sorted(after)))
    c.ok("notes.txt" in after, "second run: the user's file in --out is kept")
    c.ok(not [x for x in beside(work) if ".tmp-" in x or ".old-" in x], "second run: no staging folder left",
         str(beside(work)))
    c.done()


main()
