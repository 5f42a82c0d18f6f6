#!/usr/bin/env python3
"""Bad input to the backend registry's options: each refused with its message and exit code.

  * --backends with a mistyped name: exit 2, one line naming the nearest backend;
  * --backend-opt for an unknown backend, an unknown key, a malformed entry, a bad 0|1 value: exit 2;
  * --backend-opt paddle-lite-arm:sdk=<missing folder>: exit 4 (backend unavailable), naming the path;
  * cldiff inspect --backends with an unknown backend: exit 2.
"""
import os

from e2e_lib import Checks, cldiff, need_cldiff, tmpdir, TINY


def main():
    need_cldiff()
    c = Checks("e2e backend options")
    work = tmpdir("bopts")
    c.cleanup_later(work)
    out = os.path.join(work, "o")
    r = cldiff(TINY, "--backends", "cpu,paddle-lite-oepncl", "--out", out)
    c.rc(r, 2, "mistyped backend")
    c.ok("did you mean paddle-lite-opencl?" in r.err, "names the nearest backend", r.tail())
    cases = [("nope:x=1", "unknown backend 'nope'"), ("opencl:platfrom=NV", "did you mean platform?"),
             ("opencl-platform", "expected NAME:key=value"), ("opencl:isolate=maybe", "expected 0 or 1")]
    for entry, want in cases:
        r = cldiff(TINY, "--backend-opt", entry, "--out", out)
        c.rc(r, 2, "--backend-opt %s" % entry)
        c.ok(want in r.err, "--backend-opt %s: says '%s'" % (entry, want), r.tail())
    missing = os.path.join(work, "no-such-sdk")
    r = cldiff(TINY, "--backends", "paddle-lite-arm,cpu", "--backend-opt", "paddle-lite-arm:sdk=" + missing,
               "--out", out)
    c.rc(r, 4, "missing SDK folder")
    c.ok(missing in r.err, "names the missing SDK folder", r.tail())
    r = cldiff("inspect", TINY, "--backends", "gpu")
    c.rc(r, 2, "inspect --backends gpu")
    c.ok("unknown backend 'gpu'" in r.err, "inspect names the unknown backend", r.tail())
    c.done()


if __name__ == "__main__":
    main()
