#!/usr/bin/env python3
"""Bad command lines, files and environments give the documented exit code (README.md, "Exit
codes") and a message that says what is wrong and where:
  2  --tolerance file with an error (message has FILE:LINE), bad --layers item (the nearest
     layer names and `cldiff inspect MODEL`), unknown option or command and a value outside
     a fixed set (one line naming the nearest valid one), missing model, bad option values
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

from e2e_lib import Checks, cldiff, need_cldiff, tmpdir, MULTI, SHARED, TINY


def no_crash(c, r, what):
    c.ok(0 <= r.rc < 128, "%s: no crash" % what, "rc=%d" % r.rc)
    c.ok("Segmentation" not in r.err and "Assertion" not in r.err and "AddressSanitizer" not in r.err,
         "%s: no abort message" % what, r.err[-300:])


def one_line(c, r, want, what):
    """exit 2 and exactly the line `want` on stderr"""
    c.rc(r, 2, what)
    c.ok(r.err == want + "\n", "%s: stderr is the one line %r" % (what, want), repr(r.err[:400]))


def unknown_options(c):
    """A mistyped option, value or command: one line with the nearest valid one (exit 2)."""
    one_line(c, cldiff(TINY, "--versoin"), "cldiff: unknown option '--versoin'; did you mean --version? "
             "(cldiff --help lists every option)", "--versoin")
    r = cldiff(TINY, "--version")
    c.ok(r.rc == 0 and r.out.startswith("cldiff "), "--version after the model file: the version, exit 0",
         r.tail())
    one_line(c, cldiff("run", TINY, "--thread", "2"), "cldiff run: unknown option '--thread'; did you mean "
             "--threads? (cldiff run --help lists every option)", "run --thread")
    one_line(c, cldiff("run", TINY, "--dump", "fulll"), "cldiff run: --dump expects full or stats, got 'fulll'; did "
             "you mean full? (cldiff run --help lists every option)", "--dump fulll")
    one_line(c, cldiff(TINY, "--int8", "dequnt"), "cldiff: --int8 expects arm or dequant, got 'dequnt'; did you "
             "mean dequant? (cldiff --help lists every option)", "--int8 dequnt")
    one_line(c, cldiff(TINY, "--channel-order", "xyz"), "cldiff: --channel-order expects rgb or bgr, got 'xyz' "
             "(cldiff --help lists every option)", "--channel-order xyz (nothing close)")
    one_line(c, cldiff(TINY, "--local", "nnoe"), "cldiff: --local expects all, none or first, got 'nnoe'; did you "
             "mean none? (cldiff --help lists every option)", "--local nnoe")
    one_line(c, cldiff("inspcet", TINY), "cldiff: unknown command 'inspcet'; did you mean inspect? "
             "(cldiff --help lists the commands)", "command inspcet")
    one_line(c, cldiff("inspect", TINY, "--shap=x=1,3,64,64"), "cldiff inspect: unknown option '--shap=x=1,3,64,64'; "
             "did you mean --shape? (cldiff inspect --help lists every option)", "inspect --shap=")
    one_line(c, cldiff("export", TINY, "-o", "/nonexistent-dir", "--dequnt"), "cldiff export: unknown option "
             "'--dequnt'; did you mean --dequant? (cldiff export --help lists every option)", "export --dequnt")
    one_line(c, cldiff("import", "/nonexistent-dir", "--manfest", "m.json"), "cldiff import: unknown option "
             "'--manfest'; did you mean --manifest? (cldiff import --help lists every option)", "import --manfest")
    one_line(c, cldiff("import", "/nonexistent-dir", "--manifest", "m.json", "--from", "profiller"),
             "cldiff import: --from expects npy or profiler, got 'profiller'; did you mean profiler? "
             "(cldiff import --help lists every option)", "import --from profiller")
    one_line(c, cldiff("instrument", TINY, "--retarget", "x68"), "cldiff instrument: --retarget expects x86, arm, "
             "host or opencl, got 'x68'; did you mean x86? (cldiff instrument --help lists every option)",
             "instrument --retarget x68")
    one_line(c, cldiff("instrument", TINY, "--keep-name"), "cldiff instrument: unknown option '--keep-name'; did you "
             "mean --keep-names? (cldiff instrument --help lists every option)", "instrument --keep-name")
    one_line(c, cldiff("doctor", "--cl-devce", "0"), "cldiff doctor: unknown option '--cl-devce'; did you mean "
             "--cl-device? (cldiff doctor --help lists every option)", "doctor --cl-devce")

    # every option `cldiff --help` documents is a candidate: its first two letters swapped
    # (one edit) come back as the option itself, under the command that takes it
    help_text = cldiff("--help").out
    sections = re.split(r"\n(?=\S[^\n]*:\n)", help_text)
    shared, pl = set(), set()
    for s in sections:
        if s.startswith("usage:") or s.startswith("exit codes"):
            continue
        (pl if s.startswith("instrument / import") else shared).update(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", s))
    c.ok(len(shared) > 40 and "--layers" in shared and "--version" in shared,
         "--help documents the shared options (%d found)" % len(shared), " ".join(sorted(shared)))
    import_opts = {"--manifest", "--from", "--run", "--model"}
    missed = []
    for opt in sorted(shared | pl):
        typo = opt[:2] + opt[3] + opt[2] + opt[4:]
        if opt in import_opts:
            r = cldiff("import", "/nonexistent-dir", typo)
        elif opt in pl:
            r = cldiff("instrument", TINY, typo)
        else:
            r = cldiff(TINY, typo)
        if r.rc != 2 or ("did you mean %s?" % opt) not in r.err or r.err.count("\n") != 1:
            missed.append("%s -> %s: rc %d %r" % (typo, opt, r.rc, r.err[:160]))
    c.ok(not missed, "each documented option, mistyped, is suggested back in one line (%d options)"
         % len(shared | pl), "; ".join(missed))


def unknown_layer(c, out):
    """--layers with a name the model lacks: the nearest names and the command that lists them."""
    r = cldiff("run", TINY, "--layers", "conv2d_99", "--out", out)
    c.rc(r, 2, "--layers conv2d_99")
    m = re.search(r"no layer or tensor 'conv2d_99' in (\S+); nearest names: ([^;]+); `cldiff inspect (\S+)` "
                  r"lists all (\d+) layers", r.err)
    c.ok(m is not None and m.group(1) == TINY and m.group(3) == TINY,
         "--layers: message names the model and `cldiff inspect MODEL`", r.err[-500:])
    c.ok("cldiff info" not in r.err, "--layers: no `cldiff info` (there is no such command)", r.err[-300:])
    if m:
        names = m.group(2).split(", ")
        ins = cldiff("inspect", TINY)
        listed = set(re.findall(r"^ +\d+ (\S+) +\S+ +\[", ins.out, re.M))  # "   4 conv2d_1   conv2d   [arm/..."
        c.ok(1 <= len(names) <= 5 and all(re.match(r"conv2d_\d+$", n) for n in names[:2]),
             "--layers: up to 5 nearest names, closest (conv2d_N) first", m.group(2))
        c.ok(int(m.group(4)) == len(listed) and names[0] in listed,
             "--layers: the count and the first name match `cldiff inspect` (%d ops)" % len(listed), m.group(0))


def shape_from_input_file(c, work):
    """A model with dynamic dims run with only --input x=FILE: the file's shape fills them."""
    model = os.path.join(SHARED, "ppocr_v2.0_cls_fp32_arm_v2.14rc.nb")  # x declared [-1,3,-1,-1]
    if not os.path.isfile(model):
        print("SKIP dynamic dims from the --input file: %s not found (set CD_SHARED_MODELS)" % model, flush=True)
        return
    import h5py
    out = os.path.join(work, "dyn")
    x = np.random.RandomState(3).uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32)
    npy = os.path.join(work, "x_48x192.npy")
    np.save(npy, x)
    r = cldiff("run", model, "--input", "x=" + npy, "--out", out, "--dump", "stats")
    c.rc(r, 0, "dynamic model, --input x=file.npy [1,3,48,192] and no --shape")
    c.ok("input 'x': shape [1,3,48,192] taken from %s (declared [-1,3,-1,-1])" % npy in r.err,
         "the note says which shape came from the file", r.err[-400:])
    if r.rc == 0:
        with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
            got = f["inputs/x"][()]
        c.ok(got.shape == x.shape and np.array_equal(got, x), "the dump's input is the file's array",
             str(got.shape))
    # instrument: the file's shape too, and the device input written beside probed.nb
    probed = os.path.join(work, "probed", "probed.nb")
    r = cldiff("instrument", model, "--input", "x=" + npy, "-o", probed)
    c.rc(r, 0, "instrument of the dynamic model with --input x=file.npy only")
    dev_in = os.path.join(work, "probed", "input_0.npy")
    c.ok(os.path.isfile(dev_in) and np.array_equal(np.load(dev_in), x),
         "instrument: input_0.npy is the file's [1,3,48,192] array", r.tail(300))
    # rank 3 (no batch dim) is taken with batch 1; an HDF5 dataset has a shape too
    np.save(npy, x[0, :, :, :96])
    r = cldiff("run", model, "--input", npy, "--out", out, "--dump", "stats")
    c.rc(r, 0, "dynamic model, --input file.npy [3,48,96]")
    c.ok("shape [1,3,48,96] taken from" in r.err, "rank-3 file: batch 1 added", r.err[-400:])
    h5 = os.path.join(work, "in.h5")
    with h5py.File(h5, "w") as f:
        f["img"] = x[:, :, :32, :64]
    r = cldiff("run", model, "--input", "x=%s:/img" % h5, "--out", out, "--dump", "stats")
    c.rc(r, 0, "dynamic model, --input x=file.h5:/img [1,3,32,64]")
    c.ok("shape [1,3,32,64] taken from %s:/img" % h5 in r.err, "HDF5 dataset: its shape taken", r.err[-400:])
    # a fixed dim that differs stays an error naming both shapes; --shape still wins
    np.save(npy, np.zeros((1, 4, 48, 192), np.float32))
    r = cldiff("run", model, "--input", "x=" + npy, "--out", out, "--dump", "stats")
    c.rc(r, 3, "file [1,4,48,192] for declared [-1,3,-1,-1]")
    c.ok("[-1,3,-1,-1]" in r.err and "[1,4,48,192]" in r.err, "mismatch: message names both shapes", r.err[-400:])
    r = cldiff("run", model, "--input", "x=" + npy, "--shape", "x=1,3,48,192", "--out", out, "--dump", "stats")
    c.rc(r, 3, "--shape given: the file is held to it as before")
    # no shape in the file (raw .bin, const:): as before, --shape is needed
    binf = os.path.join(work, "x.bin")
    x.tofile(binf)
    r = cldiff("run", model, "--input", "x=" + binf, "--out", out, "--dump", "stats")
    c.rc(r, 2, "dynamic model, --input x=file.bin and no --shape")
    c.ok("give --shape x=" in r.err, "raw .bin: message asks for --shape", r.err[-400:])


def main():
    need_cldiff()
    c = Checks("e2e errors")
    work = tmpdir("errors")
    c.cleanup_later(work)
    out = os.path.join(work, "out")

    # an environment knob with a bad value: named on stderr, ignored, the run goes on
    r = cldiff(TINY, "--backends", "cpu,cpu", "--fp16", "--out", os.path.join(work, "ht"), env={"CLDIFF_HELPER_THREADS": "lots"})
    c.rc(r, 0, "CLDIFF_HELPER_THREADS=lots: the run still passes")
    c.ok("CLDIFF_HELPER_THREADS='lots' is not a thread count" in r.err, "CLDIFF_HELPER_THREADS=lots: named on stderr",
         r.err[-300:])

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
    c.ok(r.err == "cldiff: unknown option '--frobnicate' (cldiff --help lists every option)\n",
         "unknown option nothing is close to: one line, no guess, no usage text", r.err[:300])
    unknown_options(c)
    unknown_layer(c, out)
    shape_from_input_file(c, work)
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
    doctor_agrees_with_runs(c, work)
    first_contact(c, work)
    c.done()


def first_contact(c, work):
    """What a new user meets first (issue 27 point 4): `cldiff ops` (named by exit 8's hint)
    exists; the progress line shows while kernels build and layers run (stderr, on a terminal
    or with --progress, never with --quiet); a --shape that would write a huge dump or is too
    large for a kernel is refused before anything runs, naming --dump stats / --shape."""
    r = cldiff("ops")
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.out.splitlines()[1:] if ln.strip() and not ln[0].isdigit()}
    c.ok(r.rc == 0 and len(rows) > 100, "ops: exit 0 and the op table (%d rows)" % len(rows), r.tail(300))
    c.ok(rows.get("conv2d", [None])[1:] == ["kernel", "kernel"], "ops: conv2d has a CPU and an OpenCL kernel",
         str(rows.get("conv2d")))
    r = cldiff("ops", "--backend", "opencl", "conv2d", "yolo_box")
    c.ok(r.rc == 0 and "yolo_box" in r.out and "cpu-fallback" in r.out, "ops --backend opencl TYPE...: "
         "the rows asked for, yolo_box on the CPU fallback", r.tail(300))
    r = cldiff("ops", "--backend", "paddle-lite-arm")
    c.ok(r.rc == 0 and "whole-model engine" in r.out and "cldiff inspect MODEL --backends paddle-lite-arm" in r.out,
         "ops --backend paddle-lite-arm: says where to look instead", r.tail(300))

    out = os.path.join(work, "progress")
    r = cldiff(TINY, "--backends", "cpu,cpu", "--out", out, "--progress")
    c.rc(r, 0, "--progress")
    c.ok("] 16/16 layers" in r.err and "preparing ..." in r.err, "--progress: the start line and the bar on stderr",
         r.err[-400:])
    r = cldiff(TINY, "--backends", "cpu,cpu", "--out", out, "--progress", "--quiet")
    c.ok(r.rc == 0 and "layers" not in r.err, "--progress --quiet: no progress line", r.err[-300:])
    r = cldiff(TINY, "--backends", "cpu,cpu", "--out", out)
    c.ok(r.rc == 0 and "layers" not in r.err, "not a terminal, no --progress: no progress line", r.err[-300:])

    det = os.path.join(SHARED, "ppocr_v3_det_fp32_x86_v2.12.nb")
    if not os.path.exists(det):
        print("note: %s absent: the dump-size cases are skipped" % det)
        return
    r = cldiff(det, "--shape", "x=1,3,4096,4096", "--out", os.path.join(work, "huge"))
    c.rc(r, 6, "--shape x=1,3,4096,4096: the dump would be too large")
    c.ok("--dump stats" in r.err and "--max-dump" in r.err and "GiB" in r.err and r.secs < 30 and
         not os.path.exists(os.path.join(work, "huge")),
         "--shape 4096: refused before it ran (%.1f s), naming --dump stats and --max-dump" % r.secs, r.err[-400:])
    r = cldiff(det, "--shape", "x=1,3,100000,100000", "--out", os.path.join(work, "huge"))
    c.rc(r, 2, "--shape x=1,3,100000,100000: a usage error, not an unsupported op")
    c.ok("--shape x=1,3,100000,100000 is too large" in r.err, "--shape 100000: the message names --shape",
         r.err[-300:])


def doctor_agrees_with_runs(c, work):
    """`cldiff doctor` runs the check a run makes before it starts (issue 27): without the
    wheel and without a cache of Opt outputs, paddle-lite-opencl is NOT usable (doctor said
    `usable`, and the run then failed for lack of Opt), and every registered backend gets one
    line that says the same as a run would."""
    cache = os.path.join(work, "empty-cache")
    os.makedirs(cache, exist_ok=True)
    env = {"CLDIFF_PL_PYTHON": "/nonexistent/python", "CLDIFF_CACHE_DIR": cache}
    r = cldiff("doctor", env=env)
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^  (\S+) +(usable|NOT usable: .*)$", r.out, re.M)}
    for b in ("cpu", "opencl", "paddle-lite-arm", "paddle-lite-opencl", "paddle-lite", "paddle-lite-x86"):
        c.ok(b in lines, "doctor: a line for backend %s" % b, r.out[-1500:])
    c.ok(lines.get("cpu") == "usable", "doctor: cpu usable")
    c.ok(lines.get("paddle-lite", "").startswith("NOT usable") and "paddlelite wheel" in lines.get("paddle-lite", ""),
         "doctor: paddle-lite NOT usable without the wheel, saying so", str(lines.get("paddle-lite")))
    ocl = lines.get("paddle-lite-opencl", "")
    c.ok(ocl.startswith("NOT usable"), "doctor: paddle-lite-opencl NOT usable without Opt", ocl)
    c.ok("=> paddle-lite-opencl usable" not in r.out, "doctor: no `paddle-lite-opencl usable` line", r.out[-1500:])
    # doctor and a run agree on every backend
    for b, verdict in lines.items():
        if b == "cpu":
            continue
        rr = cldiff(TINY, "--backends", "cpu," + b, "--out", os.path.join(work, "agree"), "--quiet", env=env,
                    timeout=900)
        if verdict.startswith("NOT"):
            c.ok(rr.rc == 4, "doctor says %s NOT usable: a run exits 4 before it starts" % b, rr.tail(300))
        else:
            c.ok(rr.rc != 4, "doctor says %s usable: a run gets past the start" % b, rr.tail(300))


if __name__ == "__main__":
    main()
