"""cldiff instrument round trip through the real Paddle-Lite runtime (the paddlelite wheel):
the instrumented model's final outputs are bit-identical to the original's, every probed
tensor comes back, and the manifest describes them. Skips (exit 77, reason printed) without
the wheel's venv or the shared models."""
import json
import os
import numpy as np
from pl_lib import X86, MASK, Checks, cldiff, tmpdir, need_cldiff, need_wheel, need_model, bridge, kernel_lists

need_cldiff()
py = need_wheel()
need_model(X86)
c = Checks("pl_instrument")
d = tmpdir("pl_instr")
c.cleanup_later(d)

# 1. the x86 model (runs as it is): original vs instrumented with every layer probed
nb = os.path.join(d, "probed.nb")
r = cldiff("instrument", X86, "--layers", "all", "--shape", "x=1,3,96,96", "-o", nb)
c.rc(r, 0, "instrument ppocr_v3_det x86")
man = json.load(open(os.path.join(d, "probed.manifest.json")))
c.ok(man["format"] == "cldiff-probe-manifest" and man["n_model_outputs"] == 1, "manifest header")
fe = man["fetch"]
c.ok([e["col"] for e in fe] == list(range(len(fe))) and len(fe) == man["n_fetch"], "fetch cols 0..n-1",
     "%d entries" % len(fe))
c.ok(all(set(e) >= {"col", "op_index", "layer", "tensor", "shape", "dtype"} for e in fe), "every entry has its fields")
c.ok(fe[0]["model_output"] and fe[0]["tensor"] == "sigmoid_0.tmp_0", "col 0 is the model output")
ind = os.path.join(d, "in")
os.makedirs(ind)
np.save(os.path.join(ind, "input_0.npy"), np.random.RandomState(7).uniform(-1, 1, (1, 3, 96, 96)).astype("float32"))
oa, ob = os.path.join(d, "orig"), os.path.join(d, "inst")
os.makedirs(oa)
os.makedirs(ob)
pa, pb = bridge(py, X86, ind, oa), bridge(py, nb, ind, ob)
c.ok(pa.returncode == 0 and pb.returncode == 0, "both run in Paddle-Lite", pa.stderr[-300:] + pb.stderr[-300:])
if pa.returncode == 0 and pb.returncode == 0:
    a, b = np.load(os.path.join(oa, "out_0.npy")), np.load(os.path.join(ob, "out_0.npy"))
    c.ok(a.shape == b.shape and a.tobytes() == b.tobytes(), "final output bit-identical to the original's",
         "max |diff| %s" % (np.abs(a - b).max() if a.shape == b.shape else "shapes differ"))
    shapes_ok = all(list(np.load(os.path.join(ob, "out_%d.npy" % e["col"])).shape) == e["shape"] for e in fe)
    c.ok(shapes_ok, "every fetched tensor has the manifest's shape")

# 2. an ARM model with reused names, kernel records retargeted to x86 (experimental): probes
#    must not change the outputs, and the renaming must keep every probe intact
if os.path.isfile(MASK):
    info = cldiff("inspect", MASK)
    ops = sorted(set(l.split()[2] for l in info.out.splitlines() if l[:6].strip().isdigit() and len(l.split()) > 2))
    host, tgt = kernel_lists(py, ops)
    rt = ["--retarget", "x86"] + (["--host-ops", host] if host else []) + (["--target-ops", tgt] if tgt else [])
    plain, probed, noren = (os.path.join(d, n) for n in ("m_plain.nb", "m_probed.nb", "m_noren.nb"))
    c.rc(cldiff("instrument", MASK, "--layers", "outputs", "--keep-names", "-o", plain, *rt), 0, "retarget only")
    r = cldiff("instrument", MASK, "--layers", "all", "-o", probed, *rt)
    c.rc(r, 0, "retarget + every layer probed")
    c.ok("activations renamed" in r.out and " 0 activations renamed" not in r.out, "reused names were renamed", r.out)
    c.rc(cldiff("instrument", MASK, "--layers", "all", "--keep-names", "-o", noren, *rt), 0, "probed, names kept")
    ind2 = os.path.join(d, "in2")
    os.makedirs(ind2)
    np.save(os.path.join(ind2, "input_0.npy"), np.random.RandomState(3).uniform(-1, 1, (1, 3, 128, 128)).astype("float32"))
    outs = {}
    for n, m in (("plain", plain), ("probed", probed), ("noren", noren)):
        o = os.path.join(d, "o_" + n)
        os.makedirs(o)
        p = bridge(py, m, ind2, o)
        c.ok(p.returncode == 0, "mask_detector %s runs in Paddle-Lite x86" % n, p.stderr[-400:])
        outs[n] = o
    if all(os.path.exists(os.path.join(o, "out_0.npy")) for o in outs.values()):
        a = np.load(os.path.join(outs["plain"], "out_0.npy"))
        b = np.load(os.path.join(outs["probed"], "out_0.npy"))
        c.ok(a.tobytes() == b.tobytes(), "mask_detector: probed model's output bit-identical to the unprobed one")
        man2 = json.load(open(probed.replace(".nb", ".manifest.json")))
        # a probe of a renamed tensor holds its op's value: equal to the last write under the
        # kept names only when nothing overwrote it
        diff = 0
        for e in man2["fetch"][1:]:
            x = np.load(os.path.join(outs["probed"], "out_%d.npy" % e["col"]))
            y = np.load(os.path.join(outs["noren"], "out_%d.npy" % e["col"]))
            diff += x.shape != y.shape or x.tobytes() != y.tobytes()
        print("info: %d of %d probes differ when reused names are kept (values overwritten by later ops)"
              % (diff, len(man2["fetch"]) - 1))
else:
    print("info: %s not found: the ARM retarget round trip was skipped" % MASK)
c.done()
