#!/usr/bin/env python3
"""Run B's OpenCL child started before run A (issue 29 point 3; docs/opencl.md "The run child
started ahead"):
  - a differential run starts the OpenCL driver in one process (the run child, which also
    answers the availability check), not two (the old probe, then the run child): counted
    through tests/clshim's CLSHIM_LOAD_LOG on a warm program cache;
  - its dump holds the same tensors (every run, local records included) and the same verdict
    as the old way (CLDIFF_NO_PRESTART=1: probe, then the child forked after run A), in fp32
    and in fp16 (where B records its own activations);
  - no platform: the same message, exit code and nothing left in --out as the old way, also
    when the device was found on an earlier run (the answer memo: then run A ran meanwhile);
  - a program of the cache that fails to build while the child prepares (CLSHIM_FAIL_BUILD):
    its layers fall back to the CPU with the same note as when built at their op.
Usage: test_diff_prestart.py CLSHIM_LIB
"""
import os
import sys

import h5py
import numpy as np

from e2e_lib import SKIP, SRC, Checks, TINY, cldiff, need_cldiff, tmpdir, load_json

sys.path.insert(0, os.path.join(SRC, "scripts"))
import cldiff_dump  # noqa: E402


def datasets(h5):
    out = {}
    with h5py.File(h5, "r") as f:
        def visit(n, o):
            if isinstance(o, h5py.Dataset) and (n.startswith("runs/") or n.startswith("local/")):
                out[n] = np.asarray(o).tobytes()
        f.visititems(visit)
    return out


def pids(log):
    if not os.path.exists(log):
        return set()
    with open(log) as f:
        return {ln.strip() for ln in f if ln.strip()}


def main():
    need_cldiff()
    shim = sys.argv[1] if len(sys.argv) > 1 else ""
    if not shim or not os.path.exists(shim):
        print("SKIP: the clshim library was not built")
        sys.exit(SKIP)
    c = Checks("e2e_diff_prestart")
    work = tmpdir("diff_prestart")
    c.cleanup_later(work)
    cache = os.path.join(work, "cache")
    env = {"XDG_CACHE_HOME": cache, "CLDIFF_CACHE_DIR": os.path.join(cache, "cldiff")}

    def diff(name, extra_env=None, *args):
        e = dict(env)
        log = os.path.join(work, name + ".log")
        e["CLSHIM_LOAD_LOG"] = log
        e.update(extra_env or {})
        out = os.path.join(work, name)
        r = cldiff(TINY, "--cl-lib", shim, "--out", out, *args, env=e)
        return r, out, pids(log)

    # a first run fills the program cache (its builds ahead start the driver too)
    r0, _, _ = diff("cold")
    if r0.rc == 4 and "OpenCL" in r0.err:
        print("SKIP: no usable OpenCL on this machine: " + r0.err.strip()[-300:])
        sys.exit(SKIP)
    c.rc(r0, 0, "cold run")

    # 1. one driver start per differential run, against two the old way
    r1, o1, p1 = diff("ahead")
    c.rc(r1, 0, "warm run, B started ahead")
    c.ok(len(p1) == 1, "the driver starts in one process (the run child answers the check)", str(p1))
    r2, o2, p2 = diff("old", {"CLDIFF_NO_PRESTART": "1"})
    c.rc(r2, 0, "warm run the old way (CLDIFF_NO_PRESTART=1)")
    c.ok(len(p2) == 2, "the old way: the probe and the run child", str(p2))

    # 2. the same tensors and verdict
    if r1.rc == 0 and r2.rc == 0:
        d1, d2 = datasets(os.path.join(o1, "dump.h5")), datasets(os.path.join(o2, "dump.h5"))
        diff_keys = [k for k in d1 if d2.get(k) != d1[k]] + [k for k in d2 if k not in d1]
        c.ok(len(d1) > 20 and not diff_keys, "every dataset of the dump bit-identical (%d)" % len(d1),
             str(diff_keys[:5]))
        s1, s2 = load_json(os.path.join(o1, "summary.json")), load_json(os.path.join(o2, "summary.json"))
        c.ok(s1.get("verdict_kind") == s2.get("verdict_kind") == "pass" and
             s1.get("layers_compared") == s2.get("layers_compared"), "the same verdict",
             "%s/%s vs %s/%s" % (s1.get("verdict_kind"), s1.get("layers_compared"), s2.get("verdict_kind"),
                                 s2.get("layers_compared")))

    # 2b. fp16 (B records its own activations): the same, one driver start
    diff("cold16", None, "--fp16")
    r7, o7, p7 = diff("ahead16", None, "--fp16")
    r8, o8, p8 = diff("old16", {"CLDIFF_NO_PRESTART": "1"}, "--fp16")
    c.rc(r7, 0, "fp16, B started ahead")
    c.rc(r8, 0, "fp16, the old way")
    c.ok(len(p7) == 1 and len(p8) == 2, "fp16: one driver start against two", "%s %s" % (p7, p8))
    if r7.rc == 0 and r8.rc == 0:
        d7, d8 = datasets(os.path.join(o7, "dump.h5")), datasets(os.path.join(o8, "dump.h5"))
        c.ok(len(d7) > 20 and d7 == d8, "fp16: every dataset bit-identical (%d)" % len(d7))

    # 3. no platform: what the probe said, exit 4, nothing in --out. The device was found
    # before (the answer memo): A runs while the driver loads, the answer fails the run before
    # B as the check would have (only the header line on stdout is new), and the memo goes
    memos = lambda: [x for x in os.listdir(os.path.join(cache, "cldiff")) if x.startswith("avail-")]  # noqa: E731
    c.ok(len(memos()) == 1, "the device choice noted as found (the answer memo)", str(memos()))
    r4, o4, _ = diff("noplat_old", {"CLSHIM_NO_PLATFORMS": "1", "CLDIFF_NO_PRESTART": "1"})
    for name, what in (("noplat_stale", "a device found before, gone now"), ("noplat", "no memo")):
        r3, o3, p3 = diff(name, {"CLSHIM_NO_PLATFORMS": "1"})
        c.rc(r3, 4, "no platform (%s): backend unavailable" % what)
        c.ok(r3.err == r4.err.replace(o4, o3), "no platform (%s): the old way's message, word for word" % what,
             "%r vs %r" % (r3.err[-300:], r4.err[-300:]))
        c.ok(r3.out == r4.out if name == "noplat" else r3.out.startswith("cldiff ") and r3.out.count("\n") == 1,
             "no platform (%s): stdout as the old way%s" % (what, "" if name == "noplat" else " but the header line"),
             r3.out[-300:])
        c.ok(not os.path.exists(o3) and not [x for x in os.listdir(work) if x.startswith(name + ".") and
                                             not x.endswith(".log")], "no platform (%s): nothing written" % what,
             str(os.listdir(work)))
        c.ok(len(p3) == 1, "no platform (%s): one process asked the driver" % what, str(p3))
        c.ok(not memos(), "no platform (%s): no answer memo left" % what, str(memos()))

    # 4. a cached program whose build fails while the child prepares: the same fallback notes
    r5, o5, _ = diff("fail", {"CLSHIM_FAIL_BUILD": "pool.cl"})
    r6, o6, _ = diff("fail_old", {"CLSHIM_FAIL_BUILD": "pool.cl", "CLDIFF_NO_PRESTART": "1"})
    c.rc(r5, 0, "failing pool.cl build, B started ahead")
    c.rc(r6, 0, "failing pool.cl build, the old way")
    if r5.rc == 0 and r6.rc == 0:
        notes = []
        for o in (o5, o6):
            with h5py.File(os.path.join(o, "dump.h5"), "r") as f:
                meta = cldiff_dump.by_dataset(f["runs/opencl"])
                notes.append({k: str(meta[k]["note"]) for k in meta if "_pool" in k or "_gap" in k})
        c.ok(notes[0] and notes[0] == notes[1] and
             all("kernel pool (fp32) failed to build: <clshim>:1:1: error: injected build failure" in x
                 for x in notes[0].values()), "pool layers on the CPU with the build's message, as the old way",
             str(notes))
        d5, d6 = datasets(os.path.join(o5, "dump.h5")), datasets(os.path.join(o6, "dump.h5"))
        c.ok(d5 == d6, "failing build: the same tensors as the old way")
    c.done()


if __name__ == "__main__":
    main()
