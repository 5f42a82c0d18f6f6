#!/usr/bin/env python3
"""The bad-input corpus (issue 27 point 5): every case of cases.txt runs cldiff once and must
end with the exit code and a stderr message matching the case's regex. Every case must also
  - not crash (exit < 128, or 130), nor print an abort or sanitizer message;
  - say something on stderr when it fails, in at most 8 lines (never the 70-line usage text);
  - leave nothing beside its --out (no OUT.tmp-<pid> staging folder).

    run_badinput.py CLDIFF SOURCE_DIR [NAME_REGEX]

cases.txt: one case a line, fields separated by ' | ':
    name | exit | stderr regex (Python, searched) | arguments (shell words) [| KEY=VALUE ...]
Arguments may name {TINY}, {MULTI}, {LSTM} (testdata models), {W} (this run's work folder, where
the fixtures below are made first) and {SRC}. A case whose exit field is `!0` expects any
failure (not 0, not a crash); a name starting with `judge:` belongs to the verdict pipeline's
refusals (issue 27 point 2) and is skipped when CD_BADINPUT_SKIP_JUDGE=1.

Fixtures in {W} (made from testdata by byte edits, numpy and h5py; cldiff's own CPU runs make
the dumps): see make_fixtures(). Exit 0: every case as expected; 1 otherwise.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np


def make_fixtures(w, cldiff, src):
    td = os.path.join(src, "testdata")
    tiny = open(os.path.join(td, "mobilenet_tiny.nb"), "rb").read()

    def put(name, data):
        with open(os.path.join(w, name), "wb") as f:
            f.write(data)

    # models: truncated at several points, byte edits, not a model at all
    put("empty.nb", b"")
    for n in (4, 16, 100, 1000, len(tiny) // 2, len(tiny) - 1):
        put("trunc_%d.nb" % n if n < len(tiny) // 2 else ("trunc_half.nb" if n == len(tiny) // 2 else "trunc_last.nb"),
            tiny[:n])
    b = bytearray(tiny)
    b[0:8] = b"\xff" * 8  # the meta version
    put("badmeta.nb", bytes(b))
    b = bytearray(tiny)
    for i in range(8, 64):
        b[i] ^= 0x5A  # the header after the version
    put("badhdr.nb", bytes(b))
    b = bytearray(tiny)
    for i in range(len(b) // 3, len(b) // 3 + 200):
        b[i] = 0xFF  # the program's flatbuffer
    put("badprog.nb", bytes(b))
    put("text.nb", b"this is not a model\n" * 20)
    os.makedirs(os.path.join(w, "dir.nb"), exist_ok=True)
    # inputs
    np.save(os.path.join(w, "x_small.npy"), np.zeros((1, 3, 32, 32), np.float32))
    np.save(os.path.join(w, "x_rank3.npy"), np.zeros((3, 64, 64, 2), np.float32))
    np.save(os.path.join(w, "x_ok.npy"), np.zeros((1, 3, 64, 64), np.float32))
    np.save(os.path.join(w, "x_str.npy"), np.array(["a", "b"]))
    good = open(os.path.join(w, "x_ok.npy"), "rb").read()
    put("x_trunc.npy", good[:len(good) // 2])
    put("x_badmagic.npy", b"NOTNUMPY" + good[8:])
    put("x_badhdr.npy", good[:10] + b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 64, ), }" + good[80:])
    put("x_wrong.bin", b"\0" * 1000)
    put("x_garbage.png", b"\x89PNG\r\n\x1a\n" + b"\0garbage" * 10)
    put("x_text.png", b"not an image at all\n")
    put("x_garbage.h5", b"not hdf5\n" * 10)
    with h5py.File(os.path.join(w, "x_data.h5"), "w") as f:
        f["x"] = np.zeros((1, 3, 64, 64), np.float32)
        f["small"] = np.zeros((1, 3, 8, 8), np.float32)
    os.makedirs(os.path.join(w, "emptydir"), exist_ok=True)
    put("a_file", b"a file, not a folder\n")
    # tolerance files
    put("tol_bad.txt", b"conv2d atol=0.1\nthis line is wrong\n")
    put("tol_badval.txt", b"op:conv2d atol=abc\n")
    put("manifest_bad.json", b"{ not json")
    # dumps: cldiff's own CPU runs, then damaged copies
    env = dict(os.environ, CLDIFF_NO_PROGRESS="1")
    for name, args in (("dump_tiny", [os.path.join(td, "mobilenet_tiny.nb")]),
                       ("dump_multi", [os.path.join(td, "multi_input.nb"), "--input", "a=const:1", "--input",
                                       "b=const:2"])):
        r = subprocess.run([cldiff] + args + ["--backends", "cpu,cpu", "--out", os.path.join(w, name), "-q"],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit("fixture %s: cldiff run failed (%d): %s" % (name, r.returncode, r.stderr[-500:]))
    d = os.path.join(w, "dump_tiny", "dump.h5")
    raw = open(d, "rb").read()
    put("dump_trunc.h5", raw[:len(raw) // 2])
    put("dump_head.h5", raw[:2048])
    shutil.copy(d, os.path.join(w, "dump_incomplete.h5"))
    with h5py.File(os.path.join(w, "dump_incomplete.h5"), "r+") as f:
        f.attrs["complete"] = 0
    # damaged data: bytes flipped inside the largest dataset's stored data
    shutil.copy(d, os.path.join(w, "dump_flipped.h5"))
    best = None
    with h5py.File(d, "r") as f:
        def visit(name, obj):
            nonlocal best
            if isinstance(obj, h5py.Dataset) and name.startswith("runs/") and obj.id.get_offset() is not None:
                size = obj.id.get_storage_size()
                if best is None or size > best[1]:
                    best = (obj.id.get_offset(), size, name)
        f.visititems(visit)
    if best:
        b = bytearray(open(os.path.join(w, "dump_flipped.h5"), "rb").read())
        rng = np.random.default_rng(1)
        for k in rng.integers(0, best[1], 300):
            b[best[0] + int(k)] ^= 0xFF
        put("dump_flipped.h5", bytes(b))
    with h5py.File(os.path.join(w, "not_a_dump.h5"), "w") as f:
        f["data"] = np.arange(10)


def main():
    if len(sys.argv) < 3:
        print("usage: run_badinput.py CLDIFF SOURCE_DIR [NAME_REGEX]")
        return 2
    cldiff, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = re.compile(sys.argv[3]) if len(sys.argv) > 3 else None
    skip_judge = os.environ.get("CD_BADINPUT_SKIP_JUDGE") == "1"
    here = os.path.dirname(os.path.abspath(__file__))
    w = tempfile.mkdtemp(prefix="cldiff_badinput_")
    t0 = time.monotonic()
    make_fixtures(w, cldiff, src)
    t_fix = time.monotonic() - t0
    subst = {"TINY": os.path.join(src, "testdata", "mobilenet_tiny.nb"),
             "MULTI": os.path.join(src, "testdata", "multi_input.nb"),
             "LSTM": os.path.join(src, "testdata", "lstm_rec.nb"), "W": w, "SRC": src}
    cases, names = [], set()
    with open(os.path.join(here, "cases.txt")) as f:
        for ln, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.rstrip("\n").split(" | ")]
            if len(parts) < 4:
                print("cases.txt:%d: expected name | exit | regex | args" % ln)
                return 1
            name = parts[0]
            if name in names:
                print("cases.txt:%d: case %s listed twice" % (ln, name))
                return 1
            names.add(name)
            cases.append((ln, name, parts[1], parts[2], parts[3], parts[4:]))
    failed, ran, skipped = [], 0, 0
    for ln, name, want, rx, args, envs in cases:
        if only and not only.search(name):
            continue
        if skip_judge and name.startswith("judge:"):
            skipped += 1
            continue
        argv = [cldiff] + [a.format(**subst) for a in shlex.split(args)]
        env = dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
        for kv in envs:
            k, v = kv.split("=", 1)
            env[k] = v.format(**subst)
        outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--out", "-o")]
        before = {o: set(os.listdir(os.path.dirname(o) or ".")) for o in outs if os.path.isdir(os.path.dirname(o) or ".")}
        t1 = time.monotonic()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, cwd=w)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = -999, "timed out after 120 s"
        secs = time.monotonic() - t1
        ran += 1
        problems = []
        if want == "!0":
            if rc == 0:
                problems.append("exit 0, expected a failure")
        elif rc != int(want):
            problems.append("exit %d, expected %s" % (rc, want))
        if not (0 <= rc < 128 or rc == 130):
            problems.append("crashed (rc %d)" % rc)
        if re.search(r"Segmentation|Assertion|AddressSanitizer|runtime error|Aborted", err):
            problems.append("abort or sanitizer message")
        if not re.search(rx, err, re.S):
            problems.append("stderr does not match /%s/" % rx)
        if rc != 0 and not err.strip():
            problems.append("failed without a word on stderr")
        if len(err.strip().splitlines()) > 8:
            problems.append("%d lines on stderr (a message is one line, not the usage text)" % len(err.strip().splitlines()))
        for o, was in before.items():
            stray = [x for x in set(os.listdir(os.path.dirname(o) or ".")) - was if ".tmp-" in x]
            if stray:
                problems.append("left %s beside --out" % stray)
        first = err.strip().splitlines()[0] if err.strip() else ""
        if problems:
            failed.append(name)
            print("FAIL %-34s %s\n     cases.txt:%d: %s\n     stderr: %s" % (name, "; ".join(problems), ln,
                                                                        " ".join(argv[1:])[:300], err.strip()[-600:]))
        else:
            print("ok   %-34s exit %-3d %.2fs  %s" % (name, rc, secs, first[:110]))
    total = time.monotonic() - t0
    print("badinput: %d cases, %d failed, %d skipped (judge), fixtures %.1f s, total %.1f s" % (
        ran, len(failed), skipped, t_fix, total))
    if not failed:
        shutil.rmtree(w, ignore_errors=True)
    else:
        print("kept %s for inspection; failed: %s" % (w, " ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
