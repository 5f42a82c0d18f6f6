"""`--backend-opt cpu:repeat=N` and `cpu:timing=1` (docs/cpu-backend.md "Timing"): the dump's run
gets cold_ms, warm_ms and warm_runs, the captured tensors are those of a plain run bit for bit
(the warm runs reuse the prepared backend and must not disturb run 1's capture), the timing
table names the model's op types, and bad values are usage errors (exit 2)."""
import os
import re
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import TINY, Checks, cldiff, need_cldiff, run_datasets, tmpdir  # noqa: E402

need_cldiff()
c = Checks("cpu_timing")
d = tmpdir("cpu_timing")
c.cleanup_later(d)
base = cldiff("run", "--backends", "cpu", TINY, "--layers", "all", "--out", os.path.join(d, "plain"))
c.rc(base, 0, "plain run")
r = cldiff("run", "--backends", "cpu", TINY, "--layers", "all", "--out", os.path.join(d, "rep"),
           "--backend-opt", "cpu:repeat=4", "--backend-opt", "cpu:timing=1")
c.rc(r, 0, "cpu:repeat=4 cpu:timing=1")
if r.rc == 0 and base.rc == 0:
    with h5py.File(os.path.join(d, "rep", "dump.h5"), "r") as f:
        a = f["runs/cpu"].attrs
        c.ok("cold_ms" in a and float(a["cold_ms"]) > 0, "cold_ms > 0", str(dict(a)))
        c.ok("warm_ms" in a and float(a["warm_ms"]) > 0, "warm_ms > 0", str(dict(a)))
        c.ok(int(a.get("warm_runs", -1)) == 3, "warm_runs = 3", str(a.get("warm_runs")))
        # the dump writes of the captured tensors are timed apart and left out of cold_ms
        c.ok("cold_probes_ms" in a and float(a["cold_probes_ms"]) > 0, "cold_probes_ms > 0", str(dict(a)))
    with h5py.File(os.path.join(d, "plain", "dump.h5"), "r") as fp, h5py.File(os.path.join(d, "rep", "dump.h5"), "r") as fq:
        dp, dq = run_datasets(fp, "cpu"), run_datasets(fq, "cpu")
        c.ok(len(dp) > 5 and [x[0] for x in dp] == [x[0] for x in dq], "same layers captured (%d)" % len(dp))
        diff = [n for (n, a, _), (_, b, _) in zip(dp, dq) if a[()].tobytes() != b[()].tobytes()]
    c.ok(not diff, "every captured layer bit-identical to the plain run", ", ".join(map(str, diff[:5])))
    c.ok("cpu timing" in r.err and "warm median" in r.err, "stderr has the run times", r.err[-400:])
    c.ok("conv2d" in r.err and "op type" in r.err and "op #" in r.err, "stderr has the op-type and op tables",
         r.err[-400:])
    c.ok("cold = open" in r.err and "page faults: open + prepare" in r.err and "dump writes" in r.err,
         "stderr has the cold run's parts and page faults", r.err[:600])
    # the activation pool is planned at prepare: one block of the plan's live peak (offsets from
    # the lifetimes; the free list's best-fit blocks held 1.1-1.7x it), and every activation of
    # run 1 takes its planned place
    m = re.search(r"pool [\d.]+ ms \((\d+) KB planned for a live peak of (\d+) KB; run 1: (\d+) outside it\)", r.err)
    c.ok(m is not None and 0 < int(m.group(1)) <= int(m.group(2)) * 1.25 + 4 and int(m.group(3)) == 0,
         "the planned pool holds the live peak (within 1.25x) and run 1 stays inside it",
         m.group(0) if m else r.err[:600])
# 2 threads: the prepare hooks run one by one (cpu:prepare_threads=2: on both threads); the
# captured layers are those of a plain 2-thread run bit for bit either way
p2 = cldiff("run", "--backends", "cpu", TINY, "--layers", "all", "--threads", "2", "--out", os.path.join(d, "p2"))
c.rc(p2, 0, "plain run, 2 threads")
for opt in ("cpu:repeat=2", "cpu:prepare_threads=2", "cpu:prepare_threads=1"):
    q = cldiff("run", "--backends", "cpu", TINY, "--layers", "all", "--threads", "2", "--out", os.path.join(d, "q2"),
               "--backend-opt", opt)
    c.rc(q, 0, "2 threads, " + opt)
    if q.rc == 0 and p2.rc == 0:
        with h5py.File(os.path.join(d, "p2", "dump.h5"), "r") as fp, h5py.File(os.path.join(d, "q2", "dump.h5"), "r") as fq:
            dp, dq = run_datasets(fp, "cpu"), run_datasets(fq, "cpu")
            same = len(dp) > 5 and [x[0] for x in dp] == [x[0] for x in dq]
            diff = [n for (n, a, _), (_, b, _) in zip(dp, dq) if a[()].tobytes() != b[()].tobytes()]
        c.ok(same and not diff, "2 threads, %s: every layer bit-identical to the plain run" % opt,
             ", ".join(map(str, diff[:5])))
plain_t = cldiff("run", "--backends", "cpu", TINY, "--layers", "outputs", "--out", os.path.join(d, "t1"),
                 "--backend-opt", "cpu:timing=1")
c.rc(plain_t, 0, "cpu:timing=1 alone")
c.ok("no warm runs" in plain_t.err, "timing without repeat says there are no warm runs", plain_t.err[-300:])
for bad in ("cpu:repeat=0", "cpu:repeat=x", "cpu:timing=2", "cpu:prepare_threads=0"):
    b = cldiff("run", "--backends", "cpu", TINY, "--out", os.path.join(d, "bad"), "--backend-opt", bad)
    c.rc(b, 2, bad)
    c.ok(bad.split("=")[0] in b.err, "%s: the message names the option" % bad, b.err[-300:])
c.done()
