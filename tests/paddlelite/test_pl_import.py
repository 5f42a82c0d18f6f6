"""cldiff import: outputs saved on a device (out_<col>.npy) or Paddle-Lite precision-profiler
tensor files become a dump run that cldiff compare takes; bad imports (missing tensor, wrong
shape, wrong count, unreadable file, bad profiler line) exit 3 naming the file and tensor.
Needs no Paddle-Lite: the 'device' outputs are made from cldiff's own CPU dump."""
import json
import os
import shutil
import h5py
import numpy as np
from pl_lib import Checks, cldiff, tmpdir, need_cldiff, SRC

need_cldiff()
c = Checks("pl_import")
d = tmpdir("pl_import")
c.cleanup_later(d)
MODEL = os.path.join(SRC, "testdata", "mobilenet_tiny.nb")

nb = os.path.join(d, "probed.nb")
c.rc(cldiff("instrument", MODEL, "-o", nb), 0, "instrument")
man_path = os.path.join(d, "probed.manifest.json")
man = json.load(open(man_path))
inp = os.path.join(d, "input_0.npy")
c.ok(os.path.exists(inp) and list(np.load(inp).shape) == man["inputs"][0]["shape"], "the input written beside probed.nb")
ref = os.path.join(d, "ref")
c.rc(cldiff("run", "--backends", "cpu", MODEL, "--out", ref), 0, "cpu reference run")

# the "device": every fetch column from the CPU dump, as the runner would save it
dev = os.path.join(d, "dev")
os.makedirs(dev)
with h5py.File(os.path.join(ref, "dump.h5"), "r") as f:
    rows = f["tensors/cpu"][()]
    by = {(int(r["op_index"]), r["tensor"].decode()): r["dataset"].decode() for r in rows}
    for e in man["fetch"]:
        x = f["runs/cpu"][by[(e["op_index"], e["tensor"])]][()]
        np.save(os.path.join(dev, "out_%d.npy" % e["col"]), x)
imp = os.path.join(d, "phone.h5")
r = cldiff("import", dev, "--manifest", man_path, "-o", imp)
c.rc(r, 0, "import npy outputs")
r = cldiff("compare", os.path.join(ref, "dump.h5"), imp, "--out", os.path.join(d, "cmp"))
c.rc(r, 0, "compare takes the imported run")
summ = json.load(open(os.path.join(d, "cmp", "summary.json")))
c.ok("0 tensors unmatched" not in r.out and "unmatched" not in r.out, "every tensor matched", r.out[-400:])
with h5py.File(imp, "r") as f:
    c.ok(f["runs/paddle-lite"].attrs["engine"] in (b"paddle-lite", "paddle-lite"), "engine attribute")
    c.ok(len(f["tensors/paddle-lite"][()]) == sum(e["probed"] for e in man["fetch"]), "one row per probed tensor")

# the precision profiler: "<name with / -> _>.txt", "[i] %f" lines
prof = os.path.join(d, "prof")
os.makedirs(prof)
for e in man["fetch"]:
    x = np.load(os.path.join(dev, "out_%d.npy" % e["col"])).ravel()
    with open(os.path.join(prof, e["fetch_name"].replace("/", "_") + ".txt"), "w") as f:
        f.writelines("[%d] %f \n" % (i, v) for i, v in enumerate(x))
open(os.path.join(prof, "precision_summary.log"), "w").write("header\n")
r = cldiff("import", prof, "--manifest", man_path, "-o", os.path.join(d, "prof.h5"))
c.rc(r, 0, "import precision-profiler text")
r = cldiff("compare", os.path.join(ref, "dump.h5"), os.path.join(d, "prof.h5"), "--out", os.path.join(d, "cmp2"),
           "--atol", "1e-6", "--rtol", "0")
c.ok(r.rc in (0, 1) and "unmatched" not in r.out, "compare takes the profiler run (values at %f precision)", r.tail())


def bad(tag, mutate, want, folder=dev):
    b = os.path.join(d, "bad_" + tag)
    shutil.copytree(folder, b)
    mutate(b)
    r = cldiff("import", b, "--manifest", man_path, "-o", os.path.join(d, tag + ".h5"))
    c.rc(r, 3, "bad import (%s)" % tag)
    c.ok(all(w in r.err for w in want), "%s: message names %s" % (tag, want), r.err)
    c.ok(not os.path.exists(os.path.join(d, tag + ".h5")), "%s: no dump written" % tag)


e3 = man["fetch"][3]
bad("missing", lambda b: os.remove(os.path.join(b, "out_3.npy")), ["out_3.npy", e3["tensor"], "missing"])
bad("shape", lambda b: np.save(os.path.join(b, "out_3.npy"), np.zeros((1, 2, 3), "float32")),
    ["out_3.npy", e3["tensor"], "wrong shape"])
bad("count", lambda b: np.save(os.path.join(b, "out_%d.npy" % len(man["fetch"])), np.zeros(1, "float32")),
    ["wrong output count"])
bad("unreadable", lambda b: open(os.path.join(b, "out_3.npy"), "wb").write(b"not an npy file at all"),
    ["out_3.npy", e3["tensor"]])
n3 = e3["fetch_name"].replace("/", "_") + ".txt"
bad("prof_missing", lambda b: os.remove(os.path.join(b, n3)), [n3, e3["tensor"], "missing"], prof)
bad("prof_line", lambda b: open(os.path.join(b, n3), "a").write("garbage\n"), [n3, e3["tensor"]], prof)
bad("prof_count", lambda b: open(os.path.join(b, n3), "w").write("[0] 1.0 \n"), [n3, "wrong element count"], prof)
r = cldiff("import", dev, "--manifest", os.path.join(d, "nope.json"), "-o", os.path.join(d, "x.h5"))
c.rc(r, 2, "missing manifest is a usage error")
open(os.path.join(d, "broken.json"), "w").write('{"format": "cldiff-probe-manifest", "fetch": [')
r = cldiff("import", dev, "--manifest", os.path.join(d, "broken.json"), "-o", os.path.join(d, "x.h5"))
c.rc(r, 3, "malformed manifest")
c.ok("broken.json" in r.err and "byte" in r.err, "names the manifest and the byte", r.err)
c.done()
