"""Every int8 layer of testdata/int8_matmul.nb and of every int8 model in ../shared/models, recomputed by the numpy oracle
(int8_ref.py) from the inputs cldiff dumped, must equal cldiff's CPU int8 mode (`--int8 arm`)
exactly: int8 outputs (carried as q * scale) and float outputs to 0 ulp.

usage: int8_models_check.py CLDIFF [MODELS_DIR] [--keep DIR]
       int8_models_check.py --dump MODEL.nb DUMP.h5 MODELS_DIR [--run RUN]   (check an existing dump;
           --run paddle-lite-arm checks the oracle against Paddle-Lite's own ARM kernels in a dump of
           `cldiff MODEL --backends paddle-lite-arm,cpu`, each layer from Paddle-Lite's inputs)
Exit 0 pass, 1 a mismatch, 77 skipped (no int8 model in the models folder; without the folder only
the testdata model is checked, and the skip is printed)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import cldiff_dump  # noqa: E402
import int8_ref  # noqa: E402
import nb_read  # noqa: E402


def shapes_for(models_dir, fname):
    path = os.path.join(models_dir, "shapes.txt")
    out = []
    if os.path.isfile(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#") and line.split()[0] == fname:
                for s in line.split()[1:]:
                    out += ["--shape", s]
    return out


def is_int8_model(ops):
    return any(o.precision == 2 and o.type in ("conv2d", "depthwise_conv2d", "fc", "mul", "matmul", "matmul_v2")
               for o in ops)


def check_model(cldiff, models_dir, fname, work, dump=None, run_name="cpu"):
    """dump: an existing dump of this model (e.g. from another machine or ISA) instead of a run."""
    path = os.path.join(models_dir, fname)
    ops, params = nb_read.load(path)
    if not is_int8_model(ops):
        return None
    if dump is None:
        out = os.path.join(work, fname + ".out")
        cmd = [cldiff, "run", "--backends", "cpu", path, "--layers", "all", "--out", out, "--quiet", "--threads", "2"]
        cmd += shapes_for(models_dir, fname)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            print("FAIL %s: cldiff exited %d: %s" % (fname, p.returncode, p.stderr[-600:]))
            return False
        dump = os.path.join(out, "dump.h5")
    f = h5py.File(dump, "r")
    run = f["runs/" + run_name]
    if run.attrs.get("int8_mode", b"").decode() != "arm":
        print("FAIL %s: run attribute int8_mode is %r, want 'arm'" % (fname, run.attrs.get("int8_mode")))
        return False
    by_op = {}
    for t in cldiff_dump.tensors(run):
        k = t["kernel"]
        if "/int8_t/" in k:  # Paddle-Lite's kernel names (fp32_out/arm/int8_t/NCHW): as cldiff names them
            t["kernel"] = "%s:int8:%s" % (t["op_type"], k.split("/")[0])
        by_op.setdefault(int(t["op_index"]), {})[t["tensor"]] = t
    inputs = {k: f["inputs"][k] for k in f["inputs"]}
    input_names = {inputs[k].attrs["tensor"].decode() if isinstance(inputs[k].attrs["tensor"], bytes) else inputs[k].attrs["tensor"]: k for k in inputs}

    def value_before(op_index, name):
        for j in range(op_index - 1, -1, -1):
            if any(name in args for args in ops[j].outputs.values()):
                t = by_op.get(j, {}).get(name)
                if t is not None:
                    return run[t["dataset"]][()]
                break  # the feed op: its output is the model input
        if name in input_names:
            return inputs[input_names[name]][()]
        return None

    n_layers = n_exact = n_int8 = n_float = 0
    worst = []
    for op in ops:
        outs = by_op.get(op.index, {})
        rows = list(outs.values())
        if not rows or ":int8:" not in rows[0]["kernel"]:
            continue
        n_layers += 1
        kernel = rows[0]["kernel"]
        out8 = kernel.endswith("int8_out")
        if op.type == "calib":
            x = value_before(op.index, op.inp("Input"))
            want, _ = int8_ref.calib_layer(x, op.attrs.get("scale", 1.0))
            got = outs[op.out("Out")]
            out8 = kernel.endswith("fp32_to_int8")
        elif op.type in ("matmul", "matmul_v2"):
            x = value_before(op.index, op.inp("X"))
            y = params[op.inp("Y")] if op.inp("Y") in params else value_before(op.index, op.inp("Y"))
            want = int8_ref.matmul_layer(x, y, op.attrs, op.type == "matmul_v2")
            got = outs[op.out("Out")]
        else:
            fc = op.type == "fc"
            x = value_before(op.index, op.inp("Input"))
            w = params[op.inp("W" if fc else "Filter")]
            b = params.get(op.inp("Bias")) if op.inp("Bias") else None
            if fc:
                want, _ = int8_ref.fc_layer(x, w, b, op.attrs, out8)
            else:
                s2 = value_before(op.index, op.inp("SecondInput")) if op.inp("SecondInput") else None
                want, _ = int8_ref.conv_layer(x, w, b, op.attrs, out8, s2)
            got = outs[op.out("Out" if fc else "Output")]
        g = run[got["dataset"]][()].astype(np.float32)
        want = np.asarray(want, np.float32).reshape(g.shape)
        same = (g == want) | (np.isnan(g) & np.isnan(want))
        if same.all():
            n_exact += 1
            n_int8 += out8
            n_float += not out8
        else:
            bad = np.nonzero(~same.ravel())[0]
            ulps = np.abs(g.ravel()[bad].view(np.int32).astype(np.int64) - want.ravel()[bad].view(np.int32).astype(np.int64))
            worst.append("%s #%d (%s): %d of %d elements differ, max %d ulp (first at %d: cldiff %r oracle %r)" % (
                op.type, op.index, kernel, bad.size, g.size, ulps.max(), bad[0], g.ravel()[bad[0]], want.ravel()[bad[0]]))
    ok = n_exact == n_layers and n_layers > 0
    print("%s %s: %d int8-mode layers, %d bit-exact (%d with int8 output, %d with float output)" % (
        "PASS" if ok else "FAIL", fname, n_layers, n_exact, n_int8, n_float))
    for w in worst[:10]:
        print("   ", w)
    return ok


def check_cli(cldiff, models, work):
    """--int8 dequant: the run attribute says dequant and no layer ran an int8 kernel; a bad value exits 2."""
    path = os.path.join(models, "blazeface_int8_arm_v2.12.nb")
    if not os.path.isfile(path):
        return True
    out = os.path.join(work, "cli_dequant")
    p = subprocess.run([cldiff, "run", "--backends", "cpu", path, "--int8", "dequant", "--out", out, "--quiet"],
                       capture_output=True, text=True, timeout=300)
    ok = p.returncode == 0
    if ok:
        with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
            run = f["runs/cpu"]
            mode = run.attrs.get("int8_mode", b"").decode()
            n8 = sum(":int8:" in t["kernel"] for t in cldiff_dump.tensors(run))
            ok = mode == "dequant" and n8 == 0
            note = "int8_mode %r, %d int8 kernels" % (mode, n8)
    else:
        note = "exit %d: %s" % (p.returncode, p.stderr[-300:])
    q = subprocess.run([cldiff, "run", "--backends", "cpu", path, "--int8", "float", "--quiet"], capture_output=True,
                       text=True, timeout=60)
    ok2 = q.returncode == 2 and "--int8 expects arm or dequant" in q.stderr
    print("%s --int8 dequant (%s); --int8 float refused with exit %d" % ("PASS" if ok and ok2 else "FAIL", note,
                                                                          q.returncode))
    return ok and ok2


def main():
    if "--dump" in sys.argv:  # int8_models_check.py --dump MODEL.nb DUMP.h5 MODELS_DIR
        i = sys.argv.index("--dump")
        rn = sys.argv[sys.argv.index("--run") + 1] if "--run" in sys.argv else "cpu"
        r = check_model(None, sys.argv[i + 3], sys.argv[i + 1], None, sys.argv[i + 2], rn)
        return 0 if r else 1
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    keep = None
    if "--keep" in sys.argv:
        keep = sys.argv[sys.argv.index("--keep") + 1]
        args = [a for a in args if a != keep]
    cldiff = args[0]
    models = args[1] if len(args) > 1 else os.environ.get("CD_SHARED_MODELS", os.path.join(HERE, "..", "..", "..", "shared", "models"))
    work = keep or tempfile.mkdtemp(prefix="cd_int8_")
    # the writer-made int8 matmul model (testdata, scripts/gen_testdata.c): always
    results = [check_model(cldiff, os.path.join(HERE, "..", "..", "testdata"), "int8_matmul.nb", work)]
    if not os.path.isdir(models):
        print("SKIP: no models folder at %s (the shared int8 models were not checked)" % models)
        return 0 if all(results) else 1
    for fname in sorted(os.listdir(models)):
        if fname.endswith(".nb"):
            try:
                r = check_model(cldiff, models, fname, work)
            except nb_read.NotMeta2 as e:
                print("skip %s: %s" % (fname, e))
                r = None
            if r is not None:
                results.append(r)
    if len(results) == 1:
        print("SKIP: no int8 model in %s" % models)
        return 77 if all(results) else 1
    results.append(check_cli(cldiff, models, work))
    if not keep:
        subprocess.run(["rm", "-rf", work])
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
