"""The benchmark's two halves (issue 29, docs/benchmarks.md "CPU reference vs Paddle-Lite x86"):

1. probes/paddle-lite/pl_probe_runner.cc against the Debian Paddle-Lite x86 SDK
   (.paddle-lite/sdk-x86_64-debian12): `--repeat N` writes run_ms = the median of N timed runs with
   runs/run_ms_min/run_ms_max (min <= median <= max), no --repeat keeps run.txt as it was (no
   run_ms_min), --repeat 0 is a usage error (exit 2), the outputs are those of a plain run bit for
   bit; `--op-times FILE` gives one line per top-level instruction, as many as the model's ops
   other than feed/fetch (`cldiff inspect`), every time >= 0 with min <= median <= max, each run's
   instructions summing to no more than its time, and the sum of the ops' minimums no more than the
   fastest run.
2. scripts/bench_cpu.sh on the same model, 1 round, 1 thread, 2 op-by-op passes, pinned to one CPU
   it may use: the summary has the
   spread columns, the op-by-op section a per-op-type table with Paddle-Lite columns, warm and first
   run (instructions mapped to ops), the rows outside the ops, op_types.tsv its columns and a
   conv2d row timed on both sides, warm and cold.

Model: the zoo's picodet (x86 .nb, CD_ZOO or .zoo), else the shared ppocr_v3_det x86 at 64x64.
Skips (77) with the reason without the SDK, g++, or either model."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import CLDIFF, SHARED, SRC, Checks, cldiff, need_cldiff, tmpdir  # noqa: E402

need_cldiff()
sdk = os.path.join(SRC, ".paddle-lite", "sdk-x86_64-debian12")
if not os.path.isfile(os.path.join(sdk, "lib", "libpaddle_light_api_shared.so")):
    print("SKIP: no Paddle-Lite x86 SDK at %s (scripts/setup.sh unpacks ../shared/paddle-lite/"
          "sdk-x86_64-debian12.tar.xz)" % sdk)
    sys.exit(77)
if not shutil.which("g++"):
    print("SKIP: no g++ (apt-get install g++)")
    sys.exit(77)
zoo = os.environ.get("CD_ZOO", os.path.join(SRC, ".zoo"))
model, shape = os.path.join(zoo, "picodet", "picodet_x86.nb"), None
if os.path.isfile(model):
    shape = json.load(open(os.path.join(zoo, "picodet", "info.json")))["input_shape"]
else:
    model, shape = os.path.join(SHARED, "ppocr_v3_det_fp32_x86_v2.12.nb"), [1, 3, 64, 64]
    if not os.path.isfile(model):
        print("SKIP: neither the zoo's picodet_x86.nb (%s) nor the shared ppocr_v3_det_fp32_x86_v2.12.nb (%s)"
              % (zoo, SHARED))
        sys.exit(77)
c = Checks("bench_cpu")
d = tmpdir("bench_cpu")
c.cleanup_later(d)
shp = ["--shape", "x=" + ",".join(str(v) for v in shape)]

# the op list: the ops the runner's instructions stand for
ins = cldiff("inspect", model, *shp)
c.rc(ins, 0, "cldiff inspect")
ops = re.findall(r"^\s+(\d+) (\S+)\s+(\S+)\s+\[", ins.out.split("\nops:\n", 1)[-1], re.M)
real = [o for o in ops if o[2] not in ("feed", "fetch")]
c.ok(len(real) > 10 and len(ops) > len(real), "inspect lists %d ops, %d of them other than feed/fetch" %
     (len(ops), len(real)))

exe = os.path.join(d, "pl_probe_runner")
p = subprocess.run(["g++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror", "-isystem", os.path.join(sdk, "include"),
                    os.path.join(SRC, "probes", "paddle-lite", "pl_probe_runner.cc"), "-o", exe, "-L" + os.path.join(sdk, "lib"),
                    "-lpaddle_light_api_shared", "-Wl,-rpath," + os.path.join(sdk, "lib"), "-ldl"],
                   capture_output=True, text=True)
c.ok(p.returncode == 0, "the runner compiles against the SDK (-Wall -Wextra -Werror)", p.stderr[-800:])
if p.returncode:
    c.done()
ind = os.path.join(d, "in")
os.makedirs(ind)
np.save(os.path.join(ind, "input_0.npy"), np.random.RandomState(7).uniform(-1, 1, shape).astype(np.float32))


def runner(out, *args):
    return subprocess.run([exe, model, ind, os.path.join(d, out)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300)


def kv(path):
    r = {}
    for ln in open(path):
        w = ln.split()
        if len(w) >= 2 and not w[0].startswith("#"):
            r.setdefault(w[0], []).append(w[1:])
    return r


plain = runner("plain", "--warmup", 1)
c.ok(plain.returncode == 0, "plain run (--warmup 1): exit 0", plain.stderr[-600:])
rp = kv(os.path.join(d, "plain", "run.txt")) if plain.returncode == 0 else {}
c.ok("run_ms" in rp and float(rp["run_ms"][0][0]) > 0 and "run_ms_min" not in rp and "runs" not in rp,
     "without --repeat run.txt is as before: run_ms > 0, no runs/run_ms_min", str(rp)[:400])
opsf = os.path.join(d, "ops.txt")
rep = runner("rep", "--warmup", 1, "--repeat", 5, "--op-times", opsf)
c.ok(rep.returncode == 0, "--repeat 5 --op-times: exit 0", rep.stderr[-600:])
if rep.returncode == 0:
    rr = kv(os.path.join(d, "rep", "run.txt"))
    med, lo, hi = (float(rr.get(k, [["nan"]])[0][0]) for k in ("run_ms", "run_ms_min", "run_ms_max"))
    c.ok(rr.get("runs") == [["5"]] and 0 < lo <= med <= hi, "run.txt: runs 5, 0 < run_ms_min <= run_ms <= run_ms_max",
         str(rr)[:400])
    same = all(open(a, "rb").read() == open(os.path.join(d, "rep", os.path.basename(a)), "rb").read()
               for a in glob.glob(os.path.join(d, "plain", "out_*.npy")))
    c.ok(same and glob.glob(os.path.join(d, "plain", "out_*.npy")), "outputs bit-identical to the plain run's")
    o = kv(opsf)
    n = int(o.get("instructions", [["-1"]])[0][0])
    c.ok(n == len(real), "op times: %d instructions = the model's %d ops other than feed/fetch" % (n, len(real)),
         str(o.get("instructions")))
    opl = sorted((int(v[0]), [float(x) for x in v[1:]]) for v in o.get("op", []))
    c.ok([k for k, _ in opl] == list(range(len(real))), "one op line per instruction 0..%d" % (len(real) - 1),
         "%d lines" % len(opl))
    c.ok(opl and all(0 <= v[1] <= v[0] <= v[2] for _, v in opl), "every op time >= 0 with min <= median <= max",
         str([v for _, v in opl if not 0 <= v[1] <= v[0] <= v[2]][:3]))
    runs = [(float(v[1]), float(v[2])) for v in o.get("run", [])]
    c.ok(len(runs) == 5 and all(0 < s <= t for t, s in runs), "5 runs, each one's instructions sum to <= its time",
         str(runs))
    smin = sum(v[1] for _, v in opl)
    c.ok(runs and smin <= min(t for t, _ in runs), "sum of the ops' minimums %.4f <= the fastest run %.4f ms" %
         (smin, min(t for t, _ in runs) if runs else -1))
bad = runner("bad", "--repeat", 0)
c.ok(bad.returncode == 2 and "--repeat" in bad.stderr, "--repeat 0: exit 2 naming the option", bad.stderr[-300:])

# bench_cpu.sh on the model, 1 round, 1 thread (pinned to CPU 0 where taskset is)
mdir = os.path.join(d, "models")
os.makedirs(mdir)
link = os.path.join(mdir, "bench_fp32_x86.nb")  # the name bench_cpu.sh's *fp32*.nb glob takes
os.symlink(model, link)
with open(os.path.join(mdir, "shapes.txt"), "w") as fh:
    fh.write("bench_fp32_x86.nb %s\n" % shp[1])
work = os.path.join(d, "work")
cpu = min(os.sched_getaffinity(0))  # a CPU this process may run on
pin = ["--pin", str(cpu)] if shutil.which("taskset") else []
if not pin:
    print("note: no taskset: bench_cpu.sh runs unpinned here")
env = dict(os.environ, CLDIFF=CLDIFF)
b = subprocess.run(["bash", os.path.join(SRC, "scripts", "bench_cpu.sh"), "--models", mdir, "--rounds", "1",
                    "--threads", "1", "--repeat", "3", "--op-passes", "2", "--sdk", sdk, "--work", work] + pin,
                   capture_output=True, text=True, timeout=600, env=env)
c.ok(b.returncode == 0, "bench_cpu.sh: exit 0", (b.stderr + b.stdout)[-800:])
out = b.stdout
row = [ln for ln in out.splitlines() if ln.startswith("| bench_fp32_x86.nb | 1 |")]
c.ok("| warm ratio spread |" in out and "| PL warm min-max |" in out and "| cold ratio spread |" in out,
     "summary has the spread columns", out[:800])
cells = row[0].split("|")[1:-1] if row else []
c.ok(len(cells) == 14 and all(re.match(r"^\s*[0-9.]+(-[0-9.]+)?( ~)?\s*$", x) for x in cells[2:]),
     "the model's summary row: 14 cells, every time and spread a number (PL ran)", row[0] if row else out[:600])
c.ok(not pin or "pinned: taskset -c %d" % cpu in out, "--pin %d: the header says both sides were pinned" % cpu,
     out[:300])
c.ok("| op type | ops | cldiff warm ms | PL warm ms | ratio | gap ms |" in out, "op-by-op: the per-op-type table",
     out[-1500:])
c.ok(re.search(r"^op-by-op passes: 2; nearest the rounds' medians: cldiff warm pass [12], cold pass [12]; PL warm pass "
               r"[12], first-run pass [12]$", out, re.M) and all(os.path.isfile(os.path.join(work, "m1", x)) for x in
                                                                 ("timing_t1.p2.txt", "plops_t1.p2.txt", "plops_first_t1.p2.txt")),
     "--op-passes 2: a second pass after the rounds, each side's nearest pass named", out[-2500:])
c.ok("1 of 1 model x thread rows with op times mapped" in out, "op-by-op: the instructions mapped to the ops",
     out[-600:])
tsv = os.path.join(work, "op_types.tsv")
lines = [ln.rstrip("\n").split("\t") for ln in open(tsv)] if os.path.isfile(tsv) else [[]]
c.ok(lines[0] == ["model", "threads", "op_type", "ops", "cldiff_warm_ms", "pl_warm_ms", "ratio", "gap_ms",
                  "cldiff_cold_ms", "pl_first_ms", "cold_ratio", "cold_gap_ms"], "op_types.tsv: its columns", str(lines[0]))
conv = [x for x in lines[1:] if len(x) == 12 and x[2] == "conv2d"]
c.ok(conv and all(float(conv[0][i]) > 0 for i in (4, 5, 8, 9)) and int(conv[0][3]) > 0,
     "op_types.tsv: conv2d timed on both sides, warm and cold", str(conv))
c.ok("| outside the ops |" in out and "| whole run (hooked) |" in out, "op-by-op: the rows outside the ops and the whole run",
     out[-1500:])
if pin:
    bp = subprocess.run(["bash", os.path.join(SRC, "scripts", "bench_cpu.sh"), "--models", mdir, "--pin", "99999",
                         "--work", os.path.join(d, "w2")], capture_output=True, text=True, timeout=60, env=env)
    c.ok(bp.returncode == 2 and "--pin 99999" in bp.stderr, "--pin on a CPU that does not exist: exit 2, named",
         bp.stderr[-300:])
pt, pf = ({} if not os.path.isfile(os.path.join(work, "m1", x)) else kv(os.path.join(work, "m1", x))
          for x in ("plops_t1.txt", "plops_first_t1.txt"))
c.ok(pt.get("runs") == [["3"]] and pf.get("runs") == [["1"]], "the op-times runs: --repeat 3 warm, 1 first run",
     "%s %s" % (pt.get("runs"), pf.get("runs")))
c.done()
