#!/usr/bin/env python3
"""Bad command lines, files and environments give the documented exit code (README.md, "Exit
codes") and a message that says what is wrong and where:
  2  --tolerance file with an error (message has FILE:LINE), bad --layers item, unknown
     option (usage printed), missing model, bad option values
  3  corrupt (truncated) model, input of the wrong shape (.npy, .bin), a dump that crashes
     the HDF5 library (read in a checking child process first)
  4  --cl-lib that does not exist (message lists where it looked)
  6  --out that cannot be created (under /proc and /sys: tests run as root, so a chmod'ed
     folder would not stop them)
No case may crash (exit >= 128 or a signal) or print an abort message.
"""
import os
import re

import numpy as np

from e2e_lib import Checks, cldiff, need_cldiff, tmpdir, MULTI, TINY


def no_crash(c, r, what):
    c.ok(0 <= r.rc < 128, "%s: no crash" % what, "rc=%d" % r.rc)
    c.ok("Segmentation" not in r.err and "Assertion" not in r.err and "AddressSanitizer" not in r.err,
         "%s: no abort message" % what, r.err[-300:])


def main():
    need_cldiff()
    c = Checks("e2e errors")
    work = tmpdir("errors")
    c.cleanup_later(work)
    out = os.path.join(work, "out")

    # --- usage errors (2)
    tol = os.path.join(work, "tol.txt")
    with open(tol, "w") as f:
        f.write("# tolerances\ndefault atol=1e-4 rtol=1e-4\nop:softmax atol=1e-6\nlayer:conv2d_* rtol=banana\n")
    r = cldiff(TINY, "--backends", "cpu,cpu", "--tolerance", tol, "--out", out)
    c.rc(r, 2, "--tolerance with a bad value on line 4")
    c.ok("%s:4" % tol in r.err, "--tolerance: message has FILE:LINE (%s:4)" % os.path.basename(tol), r.err[-400:])
    no_crash(c, r, "--tolerance")
    with open(tol, "w") as f:
        f.write("default atol=1e-4\nfrobnicate:x atol=1\n")
    r = cldiff(TINY, "--backends", "cpu,cpu", "--tolerance", tol, "--out", out)
    c.rc(r, 2, "--tolerance with an unknown rule kind on line 2")
    c.ok("%s:2" % tol in r.err, "--tolerance: message has FILE:2", r.err[-400:])
    r = cldiff(TINY, "--backends", "cpu,cpu", "--tolerance", os.path.join(work, "nope.txt"), "--out", out)
    c.rc(r, 2, "--tolerance missing file")
    c.ok("nope.txt" in r.err, "--tolerance missing: message names the file", r.err[-300:])

    r = cldiff("run", TINY, "--layers", "conv2d_99", "--out", out)
    c.rc(r, 2, "--layers unknown layer name")
    c.ok("conv2d_99" in r.err, "--layers: message names the bad item", r.err[-300:])
    c.ok(re.search(r"conv2d_\d", r.err.replace("conv2d_99", "")) is not None, "--layers: message suggests close names",
         r.err[-300:])
    r = cldiff("run", TINY, "--layers", "#5-zz", "--out", out)
    c.rc(r, 2, "--layers bad index range")
    r = cldiff("run", TINY, "--layers", "op:no_such_op", "--out", out)
    c.rc(r, 2, "--layers op: type not in the model")

    r = cldiff(TINY, "--frobnicate")
    c.rc(r, 2, "unknown option")
    c.ok("--frobnicate" in r.err and "usage:" in r.err, "unknown option: message names it and prints usage",
         r.err[:300])
    r = cldiff("run", TINY, "--threads", "0")
    c.rc(r, 2, "--threads 0")
    r = cldiff("run", TINY, "--atol", "-1")
    c.rc(r, 2, "--atol -1")
    r = cldiff("run", TINY, "--out")
    c.rc(r, 2, "--out without a value")
    r = cldiff("run", TINY, "--backends", "vulkan")
    c.rc(r, 2, "--backends vulkan")
    r = cldiff("run", os.path.join(work, "missing.nb"), "--out", out)
    c.rc(r, 2, "missing model")
    c.ok("missing.nb" in r.err, "missing model: message names the file", r.err[-300:])
    r = cldiff("run", work, "--out", out)
    c.ok(r.rc in (2, 3), "model path is a folder: exit 2 or 3", "rc=%d %s" % (r.rc, r.err[-300:]))
    no_crash(c, r, "model is a folder")

    # --- memory budget (7): refused after planning, before anything big is allocated
    r = cldiff("run", TINY, "--max-memory", "100K", "--out", out)
    c.rc(r, 7, "--max-memory 100K")
    c.ok("memory budget" in r.err and "--max-memory" in r.err, "--max-memory: message says what to do", r.err[-300:])
    c.ok(not os.path.exists(os.path.join(out, "dump.h5")), "--max-memory: no dump written")
    r = cldiff("run", TINY, "--max-memory", "lots", "--out", out)
    c.rc(r, 2, "--max-memory with junk")
    r = cldiff("run", TINY, "--compress", "12", "--out", out)
    c.rc(r, 2, "--compress 12")
    c.ok("--compress" in r.err and "0..9" in r.err, "--compress: message names the valid range", r.err[-300:])

    # --- bad model or input (3)
    data = open(TINY, "rb").read()
    for cut in (len(data) // 2, 40, 10):
        bad = os.path.join(work, "trunc%d.nb" % cut)
        with open(bad, "wb") as f:
            f.write(data[:cut])
        r = cldiff("run", bad, "--out", out)
        c.rc(r, 3, "model truncated to %d of %d bytes" % (cut, len(data)))
        c.ok("trunc%d.nb" % cut in r.err or "offset" in r.err or "byte" in r.err,
             "truncated model: message says where", r.err[-300:])
        no_crash(c, r, "truncated model %d" % cut)
        r = cldiff("inspect", bad)
        c.rc(r, 3, "inspect of model truncated to %d bytes" % cut)
    npy = os.path.join(work, "wrong.npy")
    np.save(npy, np.zeros((1, 3, 32, 32), np.float32))
    r = cldiff("run", TINY, "--input", "x=" + npy, "--out", out)
    c.rc(r, 3, ".npy input of the wrong shape [1,3,32,32] for [1,3,64,64]")
    c.ok("wrong.npy" in r.err, "wrong shape: message names the file", r.err[-300:])
    binf = os.path.join(work, "short.bin")
    with open(binf, "wb") as f:
        f.write(b"\0" * (3 * 64 * 64 * 4 - 4))
    r = cldiff("run", TINY, "--input", "x=" + binf, "--out", out)
    c.rc(r, 3, ".bin input 4 bytes short")
    junk = os.path.join(work, "junk.npy")
    with open(junk, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\xff\xffgarbage")
    r = cldiff("run", TINY, "--input", "x=" + junk, "--out", out)
    c.rc(r, 3, "corrupt .npy header")
    no_crash(c, r, "corrupt .npy")
    r = cldiff("run", TINY, "--input", "nosuchinput=const:1", "--out", out)
    c.ok(r.rc in (2, 3), "--input for an input the model lacks: exit 2 or 3", "rc=%d %s" % (r.rc, r.err[-300:]))
    c.ok("nosuchinput" in r.err, "--input unknown name: message names it", r.err[-300:])

    # --- backend unavailable (4)
    r = cldiff(TINY, "--backends", "cpu,opencl", "--cl-lib", "/nonexistent.so", "--out", out)
    c.rc(r, 4, "--cl-lib /nonexistent.so")
    c.ok("/nonexistent.so" in r.err, "--cl-lib: message lists the path it tried", r.err[-500:])
    r = cldiff("run", "--backends", "opencl", TINY, "--cl-lib", "/nonexistent.so", "--out", out)
    c.rc(r, 4, "run --backends opencl --cl-lib /nonexistent.so")
    r = cldiff("doctor", "--cl-lib", "/nonexistent.so")
    c.rc(r, 4, "doctor --cl-lib /nonexistent.so")

    # --- cannot write output (6)
    for d in ("/proc/cldiff-e2e-out", "/sys/cldiff-e2e-out", "/proc/self/status/x"):
        r = cldiff("run", TINY, "--out", d)
        c.rc(r, 6, "--out %s" % d)
        c.ok(d.split("/")[1] in r.err and "--out" in r.err, "--out %s: message names the folder and --out" % d,
             r.err[-300:])
    r = cldiff(TINY, "--out", "/proc/cldiff-e2e-out")
    c.rc(r, 6, "differential run --out under /proc")
    r = cldiff("report", os.path.join(work, "none.h5"), "--out", out)
    c.ok(r.rc in (2, 3), "report of a missing dump: exit 2 or 3", "rc=%d %s" % (r.rc, r.err[-300:]))

    # a dump crafted so that HDF5 itself crashes while reading it (found by fuzz_dump): cldiff
    # reads user-given dumps in a checking child first and refuses the file with exit 3
    here = os.path.dirname(os.path.abspath(__file__))
    crafted = os.path.join(here, "..", "fuzz", "regressions", "dump", "hdf5-attr-exists-segv")
    for cmd in (["report", crafted, "--out", out], ["compare", crafted, crafted, "--out", out]):
        r = cldiff(*cmd)
        c.rc(r, 3, "%s of a dump that crashes HDF5" % cmd[0])
        c.ok("damaged" in r.err and "hdf5-attr-exists-segv" in r.err and "SIGSEGV" in r.err,
             "%s: message names the file and the crash" % cmd[0], r.err[-400:])
        no_crash(c, r, "%s of a dump that crashes HDF5" % cmd[0])

    # multi-input model: --input without a name is ambiguous
    if os.path.isfile(MULTI):
        r = cldiff("run", MULTI, "--input", "const:1", "--out", out)
        c.rc(r, 2, "multi_input.nb with one unnamed --input")
        c.ok("NAME=" in r.err and "a, b" in r.err, "unnamed --input: message lists the input names", r.err[-300:])
        r = cldiff("run", MULTI, "--input", "a=const:1", "--input", "b=const:2", "--out", out, "--quiet")
        c.rc(r, 0, "multi_input.nb with named --input a= b=")
    c.done()


if __name__ == "__main__":
    main()
